// Unit tests for util/iter: the empty iterator and the merging iterator
// (both directions, direction switches, equal keys, errors), checked
// against a sorted reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <utility>
#include <vector>

extern "C" {
#include "util/error.h"
#include "util/ikey.h"
#include "util/iter.h"
}

namespace {

using Entries = std::vector<std::pair<std::string, std::string>>;

// Bytewise comparator for plain (non-internal) keys.
int Bytewise(slice_t a, slice_t b) { return slice_compare(a, b); }
// ikey_compare (static inline) as a function the children can be given.
int ikey_compare_fn_for_tests(slice_t a, slice_t b) { return ikey_compare(a, b); }

// A child iterator over a sorted vector. It can be told to fail (become
// invalid with an error) when it lands on a given index, and counts its
// destruction.
struct VecState {
    Entries data;
    long pos = -1;
    int status = TDB_OK;
    long fail_at = -1;
    int fail_code = TDB_ERR_IO;
    int *destroyed = nullptr;
    key_cmp_fn cmp = nullptr;  // key order; nullptr: bytewise (std::string <)
};

struct VecIter {
    iter_t base;
    VecState *s;
};

VecState *St(const iter_t *it) { return reinterpret_cast<const VecIter *>(it)->s; }

void VecSet(iter_t *it, long pos) {
    VecState *s = St(it);
    if (s->status != TDB_OK) return;  // a failed iterator stays failed
    if (pos < 0 || pos >= (long)s->data.size()) pos = -1;
    if (pos >= 0 && pos == s->fail_at) {
        s->status = s->fail_code;
        pos = -1;
    }
    s->pos = pos;
}

int VecValid(const iter_t *it) { return St(it)->pos >= 0 && St(it)->status == TDB_OK; }
void VecFirst(iter_t *it) { VecSet(it, 0); }
void VecLast(iter_t *it) { VecSet(it, (long)St(it)->data.size() - 1); }
void VecSeek(iter_t *it, slice_t t) {
    const Entries &d = St(it)->data;
    std::string target(t.data, t.size);
    key_cmp_fn cmp = St(it)->cmp;
    auto lb = std::lower_bound(d.begin(), d.end(), target,
                               [cmp](const std::pair<std::string, std::string> &e, const std::string &k) {
                                   if (!cmp) return e.first < k;
                                   return cmp(slice_make(e.first.data(), e.first.size()),
                                              slice_make(k.data(), k.size())) < 0;
                               });
    VecSet(it, (long)(lb - d.begin()));
}
void VecNext(iter_t *it) {
    EXPECT_TRUE(VecValid(it));
    VecSet(it, St(it)->pos + 1);
}
void VecPrev(iter_t *it) {
    EXPECT_TRUE(VecValid(it));
    VecSet(it, St(it)->pos - 1);
}
slice_t VecKey(const iter_t *it) {
    EXPECT_TRUE(VecValid(it));
    const std::string &k = St(it)->data[St(it)->pos].first;
    return slice_make(k.data(), k.size());
}
slice_t VecValue(const iter_t *it) {
    EXPECT_TRUE(VecValid(it));
    const std::string &v = St(it)->data[St(it)->pos].second;
    return slice_make(v.data(), v.size());
}
int VecStatus(const iter_t *it) { return St(it)->status; }
void VecDestroy(iter_t *it) {
    VecIter *v = reinterpret_cast<VecIter *>(it);
    if (v->s->destroyed) ++*v->s->destroyed;
    delete v->s;
    delete v;
}

const iter_ops_t kVecOps = {VecValid, VecFirst, VecLast,  VecSeek,   VecNext,
                            VecPrev,  VecKey,   VecValue, VecStatus, VecDestroy, nullptr, nullptr, nullptr, nullptr};

iter_t *NewVec(Entries data, int *destroyed = nullptr, key_cmp_fn cmp = nullptr) {
    if (cmp) {
        std::sort(data.begin(), data.end(), [cmp](const std::pair<std::string, std::string> &a,
                                                  const std::pair<std::string, std::string> &b) {
            return cmp(slice_make(a.first.data(), a.first.size()), slice_make(b.first.data(), b.first.size())) < 0;
        });
    } else {
        std::sort(data.begin(), data.end());
    }
    VecIter *v = new VecIter;
    v->base.ops = &kVecOps;
    v->s = new VecState;
    v->s->data = std::move(data);
    v->s->destroyed = destroyed;
    v->s->cmp = cmp;
    return &v->base;
}

std::string Str(slice_t s) { return std::string(s.data, s.size); }

// Reference entry: ordered by (key, child).
struct Ref {
    std::string key;
    int child;
    std::string value;
};

// Builds random children over a small key universe (so equal keys occur
// across children) and the sorted reference of everything.
struct Fixture {
    std::vector<iter_t *> children;
    std::vector<Ref> ref;
    std::vector<std::string> universe;

    Fixture(int n, std::mt19937 &rng) {
        for (int k = 0; k < 120; k++) {
            char b[16];
            snprintf(b, sizeof b, "k%03d", k * 2);  // odd numbers fall between
            universe.push_back(b);
        }
        for (int c = 0; c < n; c++) {
            Entries e;
            int mode = rng() % 4;  // 0: empty, 1: sparse, 2/3: dense
            double p = mode == 0 ? 0.0 : mode == 1 ? 0.05 : 0.4;
            std::bernoulli_distribution take(p);
            for (const std::string &k : universe) {
                if (!take(rng)) continue;
                std::string v = "c" + std::to_string(c) + ":" + k;
                e.emplace_back(k, v);
                ref.push_back({k, c, v});
            }
            children.push_back(NewVec(std::move(e)));
        }
        std::sort(ref.begin(), ref.end(), [](const Ref &a, const Ref &b) {
            return a.key != b.key ? a.key < b.key : a.child < b.child;
        });
    }

    // Index of the first reference entry with key >= t.
    long LowerBound(const std::string &t) const {
        return std::lower_bound(ref.begin(), ref.end(), t,
                                [](const Ref &r, const std::string &k) { return r.key < k; }) -
               ref.begin();
    }
};

// Asserts that the merge is at reference index idx (or invalid if outside).
void ExpectAt(const iter_t *m, const std::vector<Ref> &ref, long idx, const char *what) {
    bool in = idx >= 0 && idx < (long)ref.size();
    ASSERT_EQ(iter_valid(m) != 0, in) << what << " idx " << idx;
    if (!in) return;
    ASSERT_EQ(Str(iter_key(m)), ref[idx].key) << what;
    ASSERT_EQ(Str(iter_value(m)), ref[idx].value) << what;
}

}  // namespace

TEST(IterEmpty, AlwaysInvalidWithStatus) {
    for (int code : {(int)TDB_OK, (int)TDB_ERR_IO, (int)TDB_ERR_CORRUPTION, (int)TDB_ERR_ABORTED, -1000}) {
        iter_t *it = iter_empty(code);
        ASSERT_NE(it, nullptr);
        EXPECT_FALSE(iter_valid(it));
        iter_seek_to_first(it);
        EXPECT_FALSE(iter_valid(it));
        iter_seek_to_last(it);
        iter_seek(it, slice_make("x", 1));
        EXPECT_FALSE(iter_valid(it));
        EXPECT_EQ(iter_status(it), code);
        iter_destroy(it);  // heap instance for -1000: freed (ASan checks)
    }
    iter_destroy(nullptr);
}

TEST(IterMerge, ZeroAndOneChild) {
    iter_t *m = iter_merge(nullptr, 0, Bytewise);
    ASSERT_NE(m, nullptr);
    iter_seek_to_first(m);
    EXPECT_FALSE(iter_valid(m));
    EXPECT_EQ(iter_status(m), TDB_OK);
    iter_destroy(m);

    int destroyed = 0;
    iter_t *c[1] = {NewVec({{"a", "1"}, {"b", "2"}}, &destroyed)};
    m = iter_merge(c, 1, Bytewise);
    iter_seek_to_last(m);
    ASSERT_TRUE(iter_valid(m));
    EXPECT_EQ(Str(iter_key(m)), "b");
    iter_destroy(m);
    EXPECT_EQ(destroyed, 1);
}

TEST(IterMerge, EqualKeysInChildOrderBothDirections) {
    for (int pad : {0, 4}) {  // pad > 0: extra empty children force heap mode
        std::vector<iter_t *> c = {NewVec({{"a", "0a"}, {"b", "0b"}}), NewVec({{"a", "1a"}, {"c", "1c"}}),
                                   NewVec({{"a", "2a"}})};
        for (int i = 0; i < pad; i++) c.push_back(NewVec({}));
        iter_t *m = iter_merge(c.data(), (int)c.size(), Bytewise);
        std::vector<std::string> fwd, bwd;
        for (iter_seek_to_first(m); iter_valid(m); iter_next(m)) fwd.push_back(Str(iter_value(m)));
        for (iter_seek_to_last(m); iter_valid(m); iter_prev(m)) bwd.push_back(Str(iter_value(m)));
        EXPECT_EQ(fwd, (std::vector<std::string>{"0a", "1a", "2a", "0b", "1c"}));
        std::reverse(bwd.begin(), bwd.end());
        EXPECT_EQ(bwd, fwd);

        // Switch direction in the middle of the equal run.
        iter_seek(m, slice_make("a", 1));
        iter_next(m);
        EXPECT_EQ(Str(iter_value(m)), "1a");
        iter_prev(m);
        EXPECT_EQ(Str(iter_value(m)), "0a");
        iter_next(m);
        EXPECT_EQ(Str(iter_value(m)), "1a");
        iter_next(m);
        EXPECT_EQ(Str(iter_value(m)), "2a");
        iter_prev(m);
        EXPECT_EQ(Str(iter_value(m)), "1a");
        iter_prev(m);
        iter_prev(m);
        EXPECT_FALSE(iter_valid(m));
        EXPECT_EQ(iter_status(m), TDB_OK);
        iter_destroy(m);
    }
}

TEST(IterMerge, FullScansMatchReference) {
    std::mt19937 rng(42);
    for (int n : {2, 3, 4, 5, 8, 16, 33}) {
        Fixture f(n, rng);
        iter_t *m = iter_merge(f.children.data(), n, Bytewise);
        ASSERT_NE(m, nullptr);
        long i = 0;
        for (iter_seek_to_first(m); iter_valid(m); iter_next(m), i++) ExpectAt(m, f.ref, i, "fwd");
        EXPECT_EQ(i, (long)f.ref.size());
        i = (long)f.ref.size() - 1;
        for (iter_seek_to_last(m); iter_valid(m); iter_prev(m), i--) ExpectAt(m, f.ref, i, "bwd");
        EXPECT_EQ(i, -1);
        EXPECT_EQ(iter_status(m), TDB_OK);
        iter_destroy(m);
    }
}

TEST(IterMerge, RandomWalkWithDirectionSwitches) {
    std::mt19937 rng(7);
    for (int round = 0; round < 12; round++) {
        for (int n : {2, 3, 4, 5, 6, 9, 17}) {
            Fixture f(n, rng);
            iter_t *m;
            if (round % 2) {  // nested: a merge of the first half under the merge (its own seek_for_prev)
                int h = n / 2 + 1;
                std::vector<iter_t *> top{iter_merge(f.children.data(), h, Bytewise)};
                top.insert(top.end(), f.children.begin() + h, f.children.end());
                m = iter_merge(top.data(), (int)top.size(), Bytewise);
            } else {
                m = iter_merge(f.children.data(), n, Bytewise);
            }
            ASSERT_NE(m, nullptr);
            long idx = -1;
            for (int step = 0; step < 1500; step++) {
                int op = rng() % 14;
                if (op >= 12) {  // seek_for_prev: the last entry <= t (hits, misses, before the start)
                    char b[16];
                    snprintf(b, sizeof b, "k%03d", (int)(rng() % 250));
                    std::string t = (rng() % 20 == 0) ? std::string("a") : std::string(b);
                    iter_seek_for_prev(m, slice_make(t.data(), t.size()), Bytewise);
                    idx = std::upper_bound(f.ref.begin(), f.ref.end(), t,
                                           [](const std::string &k, const Ref &r) { return k < r.key; }) -
                          f.ref.begin() - 1;
                    ExpectAt(m, f.ref, idx, "seek_for_prev");
                    if (HasFatalFailure()) {
                        iter_destroy(m);
                        FAIL() << "n=" << n << " round " << round << " step " << step;
                    }
                    continue;
                }
                bool valid = idx >= 0 && idx < (long)f.ref.size();
                const char *what;
                if (op == 0) {
                    iter_seek_to_first(m);
                    idx = 0;
                    what = "seek_to_first";
                } else if (op == 1) {
                    iter_seek_to_last(m);
                    idx = (long)f.ref.size() - 1;
                    what = "seek_to_last";
                } else if (op <= 3) {
                    char b[16];
                    snprintf(b, sizeof b, "k%03d", (int)(rng() % 250));  // hits, misses, past end
                    std::string t = (rng() % 20 == 0) ? std::string() : std::string(b);
                    iter_seek(m, slice_make(t.data(), t.size()));
                    idx = f.LowerBound(t);
                    what = "seek";
                } else if (!valid) {
                    continue;
                } else if (op <= 7) {
                    iter_next(m);
                    idx++;
                    what = "next";
                } else {
                    iter_prev(m);
                    idx--;
                    what = "prev";
                }
                ExpectAt(m, f.ref, idx, what);
                if (HasFatalFailure()) {
                    iter_destroy(m);
                    FAIL() << "n=" << n << " round " << round << " step " << step;
                }
            }
            EXPECT_EQ(iter_status(m), TDB_OK);
            iter_destroy(m);
        }
    }
}

// seek_forward from any position (after next, prev or seek) to a target
// past the current key lands where a fresh seek would, and the walk goes
// on correctly in both directions from there.
TEST(IterMerge, SeekForwardMatchesSeek) {
    std::mt19937 rng(11);
    for (int round = 0; round < 8; round++) {
        for (int n : {2, 3, 5, 9, 17}) {
            Fixture f(n, rng);
            iter_t *m = iter_merge(f.children.data(), n, Bytewise);
            ASSERT_NE(m, nullptr);
            if (f.ref.size() < 20) { // too few entries to walk (children may all be empty)
                iter_destroy(m);
                continue;
            }
            iter_seek_to_first(m);
            long idx = 0;
            int forwards = 0;
            for (int step = 0; step < 1500; step++) {
                bool valid = idx >= 0 && idx < (long)f.ref.size();
                int op = rng() % 8;
                const char *what;
                if (!valid) {
                    iter_seek_to_first(m);
                    idx = 0;
                    what = "seek_to_first";
                } else if (op <= 2) {
                    // a target past the current key: the key itself plus a suffix, or a later key
                    const std::string &cur = f.ref[idx].key;
                    char b[16];
                    snprintf(b, sizeof b, "k%03d", atoi(cur.c_str() + 1) + (int)(rng() % 12));
                    std::string t = std::string(b) > cur ? std::string(b) : cur + "~";
                    iter_seek_forward(m, slice_make(t.data(), t.size()));
                    idx = f.LowerBound(t);
                    what = "seek_forward";
                    forwards++;
                } else if (op <= 5) {
                    iter_next(m);
                    idx++;
                    what = "next";
                } else {
                    iter_prev(m);
                    idx--;
                    what = "prev";
                }
                ExpectAt(m, f.ref, idx, what);
                if (HasFatalFailure()) {
                    iter_destroy(m);
                    FAIL() << "n=" << n << " round " << round << " step " << step;
                }
            }
            EXPECT_GT(forwards, 100);
            EXPECT_EQ(iter_status(m), TDB_OK);
            iter_destroy(m);
        }
    }
}

TEST(IterMerge, EmptyChildrenOnly) {
    for (int n : {2, 7}) {
        std::vector<iter_t *> c;
        for (int i = 0; i < n; i++) c.push_back(i % 2 ? iter_empty(TDB_OK) : NewVec({}));
        iter_t *m = iter_merge(c.data(), n, Bytewise);
        iter_seek_to_first(m);
        EXPECT_FALSE(iter_valid(m));
        iter_seek_to_last(m);
        EXPECT_FALSE(iter_valid(m));
        iter_seek(m, slice_make("a", 1));
        EXPECT_FALSE(iter_valid(m));
        EXPECT_EQ(iter_status(m), TDB_OK);
        iter_destroy(m);
    }
}

TEST(IterMerge, ErrorChildMakesMergeInvalid) {
    for (int pad : {0, 4}) {
        int destroyed = 0;
        std::vector<iter_t *> c = {NewVec({{"a", "1"}, {"c", "3"}}, &destroyed), iter_empty(TDB_ERR_IO),
                                   NewVec({{"b", "2"}}, &destroyed)};
        for (int i = 0; i < pad; i++) c.push_back(NewVec({}, &destroyed));
        iter_t *m = iter_merge(c.data(), (int)c.size(), Bytewise);
        iter_seek_to_first(m);
        EXPECT_FALSE(iter_valid(m));
        EXPECT_EQ(iter_status(m), TDB_ERR_IO);
        iter_seek_to_last(m);
        EXPECT_FALSE(iter_valid(m));
        iter_seek(m, slice_make("b", 1));
        EXPECT_FALSE(iter_valid(m));
        EXPECT_EQ(iter_status(m), TDB_ERR_IO);
        iter_destroy(m);
        EXPECT_EQ(destroyed, 2 + pad);  // every child destroyed
    }
}

TEST(IterMerge, StatusIsFirstChildErrorInChildOrder) {
    iter_t *c[3] = {NewVec({{"a", "1"}}), iter_empty(TDB_ERR_CORRUPTION), iter_empty(TDB_ERR_IO)};
    iter_t *m = iter_merge(c, 3, Bytewise);
    EXPECT_EQ(iter_status(m), TDB_ERR_CORRUPTION);
    iter_seek_to_first(m);
    EXPECT_FALSE(iter_valid(m));
    EXPECT_EQ(iter_status(m), TDB_ERR_CORRUPTION);
    iter_destroy(m);
}

TEST(IterMerge, ErrorMidScanStopsBothDirections) {
    for (int pad : {0, 5}) {
        for (bool backward : {false, true}) {
            Entries a, b;
            for (int i = 0; i < 20; i++) {
                char k[8];
                snprintf(k, sizeof k, "k%02d", i);
                (i % 2 ? a : b).emplace_back(k, k);
            }
            std::vector<iter_t *> c = {NewVec(a), NewVec(b)};
            reinterpret_cast<VecIter *>(c[1])->s->fail_at = backward ? 3 : 6;
            reinterpret_cast<VecIter *>(c[1])->s->fail_code = TDB_ERR_CORRUPTION;
            for (int i = 0; i < pad; i++) c.push_back(NewVec({}));
            iter_t *m = iter_merge(c.data(), (int)c.size(), Bytewise);
            int seen = 0;
            if (backward)
                for (iter_seek_to_last(m); iter_valid(m); iter_prev(m)) seen++;
            else
                for (iter_seek_to_first(m); iter_valid(m); iter_next(m)) seen++;
            EXPECT_GT(seen, 0);
            EXPECT_LT(seen, 20) << "scan must stop at the failure, not skip the child";
            EXPECT_EQ(iter_status(m), TDB_ERR_CORRUPTION);
            iter_destroy(m);
        }
    }
}

TEST(IterMerge, ErrorDuringDirectionSwitch) {
    // Child 1 fails when repositioned by a direction switch.
    iter_t *c[3] = {NewVec({{"a", "a"}, {"d", "d"}}), NewVec({{"b", "b"}, {"e", "e"}}),
                    NewVec({{"c", "c"}})};
    iter_t *m = iter_merge(c, 3, Bytewise);
    iter_seek(m, slice_make("c", 1));
    ASSERT_TRUE(iter_valid(m));
    EXPECT_EQ(Str(iter_key(m)), "c");
    reinterpret_cast<VecIter *>(c[1])->s->fail_at = 0;  // "b" is where prev() must put it
    iter_prev(m);
    EXPECT_FALSE(iter_valid(m));
    EXPECT_EQ(iter_status(m), TDB_ERR_IO);
    iter_destroy(m);
}

namespace {

// A child that records its seek_prepare stages and seeks in a shared log.
struct PrepIter {
    VecIter v;  // first: the ops below cast back to it
    int id;
    int stages;  // stages it asks for (stage 0 .. stages-1)
    std::vector<std::string> *log;
    const char *prepared_for;
};

int PrepStage(iter_t *it, slice_t t, int stage) {
    PrepIter *p = reinterpret_cast<PrepIter *>(it);
    p->log->push_back("p" + std::to_string(p->id) + "." + std::to_string(stage));
    if (stage == 0) p->prepared_for = t.data;
    return stage + 1 < p->stages;
}
void PrepSeek(iter_t *it, slice_t t) {
    PrepIter *p = reinterpret_cast<PrepIter *>(it);
    p->log->push_back(std::string("s") + std::to_string(p->id) + (p->prepared_for == t.data ? "=" : "!"));
    VecSeek(it, t);
}
void PrepDestroy(iter_t *it) {
    PrepIter *p = reinterpret_cast<PrepIter *>(it);
    delete p->v.s;
    delete p;
}

const iter_ops_t kPrepOps = {VecValid, VecFirst, VecLast,  PrepSeek,  VecNext,
                             VecPrev,  VecKey,   VecValue, VecStatus, PrepDestroy, PrepStage, nullptr, nullptr, nullptr};

iter_t *NewPrep(Entries data, int id, int stages, std::vector<std::string> *log) {
    std::sort(data.begin(), data.end());
    PrepIter *p = new PrepIter;
    p->v.base.ops = &kPrepOps;
    p->v.s = new VecState;
    p->v.s->data = std::move(data);
    p->id = id;
    p->stages = stages;
    p->log = log;
    p->prepared_for = nullptr;
    return &p->v.base;
}

}  // namespace

// A seek runs stage s of every preparing child before stage s + 1 of any,
// each child only as far as it asks, then seeks every child with the
// target it was prepared for; children without the op are just sought.
TEST(IterMerge, SeekPreparesChildrenBreadthFirst) {
    std::vector<std::string> log;
    iter_t *kids[4] = {NewPrep({{"a", "1"}, {"d", "1"}}, 0, 3, &log), NewVec({{"b", "2"}, {"e", "2"}}),
                       NewPrep({{"c", "3"}}, 2, 1, &log), NewPrep({{"c", "4"}, {"f", "4"}}, 3, 2, &log)};
    iter_t *m = iter_merge(kids, 4, Bytewise);
    ASSERT_NE(m, nullptr);
    std::string t = "c";
    iter_seek(m, slice_make(t.data(), t.size()));
    std::vector<std::string> want = {"p0.0", "p2.0", "p3.0", "p0.1", "p3.1", "p0.2", "s0=", "s2=", "s3="};
    EXPECT_EQ(want, log);
    ASSERT_TRUE(iter_valid(m));
    std::string got;
    for (; iter_valid(m); iter_next(m)) got += std::string(iter_key(m).data, iter_key(m).size);
    EXPECT_EQ("ccdef", got);
    iter_destroy(m);

    // One preparing child has nothing to overlap with: no stages run.
    log.clear();
    iter_t *two[2] = {NewPrep({{"a", "1"}}, 0, 3, &log), NewVec({{"b", "2"}})};
    m = iter_merge(two, 2, Bytewise);
    iter_seek(m, slice_make(t.data(), t.size()));
    EXPECT_EQ(std::vector<std::string>{"s0!"}, log);
    EXPECT_FALSE(iter_valid(m));
    EXPECT_EQ(TDB_OK, iter_status(m));
    iter_destroy(m);
}

// iter_merge_ikeys (the comparison inlined) orders internal keys as
// ikey_compare does: user key ascending, then newest sequence first, ties
// across children in child order; both directions and seeks. User keys
// share their first 8 bytes or not, so both compare paths are taken.
TEST(IterMerge, IkeysOrdersByInternalKey) {
    std::mt19937 rng(5);
    for (int n : {2, 3, 4, 5, 9}) {
        struct R {
            std::string key;
            int child;
            std::string value;
        };
        std::vector<R> ref;
        std::vector<iter_t *> kids;
        auto ikey = [](const std::string &user, uint64_t seq, unsigned type) {
            buf_t b = {};
            EXPECT_EQ(TDB_OK, ikey_append(&b, slice_make(user.data(), user.size()), seq, type));
            std::string k(b.data, b.size);
            buf_free(&b);
            return k;
        };
        for (int c = 0; c < n; c++) {
            Entries e;
            std::vector<std::string> seen;
            for (int j = 0; j < 60; j++) {
                int u = (int)(rng() % 40);
                // "prefix00" + u: same first 8 bytes; or u first: differ there
                std::string user = (u % 2) ? "prefix00" + std::to_string(u) : std::to_string(u) + "-suffix-x";
                std::string k = ikey(user, 1 + rng() % 6, (unsigned)(rng() % 2));
                if (std::find(seen.begin(), seen.end(), k) != seen.end()) continue;
                seen.push_back(k);
                std::string v = "c" + std::to_string(c) + "#" + std::to_string(j);
                e.emplace_back(k, v);
                ref.push_back({k, c, v});
            }
            kids.push_back(NewVec(std::move(e), nullptr, ikey_compare_fn_for_tests));
        }
        std::sort(ref.begin(), ref.end(), [](const R &a, const R &b) {
            int r = ikey_compare(slice_make(a.key.data(), a.key.size()), slice_make(b.key.data(), b.key.size()));
            return r != 0 ? r < 0 : a.child < b.child;
        });
        iter_t *m = iter_merge_ikeys(kids.data(), n);
        ASSERT_NE(m, nullptr);
        size_t i = 0;
        for (iter_seek_to_first(m); iter_valid(m); iter_next(m), i++) {
            ASSERT_LT(i, ref.size());
            ASSERT_EQ(ref[i].key, Str(iter_key(m))) << "fwd " << i;
            ASSERT_EQ(ref[i].value, Str(iter_value(m))) << "fwd " << i;
        }
        EXPECT_EQ(ref.size(), i);
        long j = (long)ref.size() - 1;
        for (iter_seek_to_last(m); iter_valid(m); iter_prev(m), j--) {
            ASSERT_GE(j, 0);
            ASSERT_EQ(ref[j].value, Str(iter_value(m))) << "bwd " << j;
        }
        EXPECT_EQ(-1, j);
        for (int s = 0; s < 50; s++) {  // seek to a lookup key: newest version visible at seq
            int u = (int)(rng() % 40);
            std::string user = (u % 2) ? "prefix00" + std::to_string(u) : std::to_string(u) + "-suffix-x";
            std::string t = ikey(user, 1 + rng() % 6, KT_SEEK);
            slice_t ts = slice_make(t.data(), t.size());
            iter_seek(m, ts);
            size_t lb = 0;
            while (lb < ref.size() &&
                   ikey_compare(slice_make(ref[lb].key.data(), ref[lb].key.size()), ts) < 0)
                lb++;
            ASSERT_EQ(lb < ref.size(), iter_valid(m) != 0);
            if (lb < ref.size()) {
                ASSERT_EQ(ref[lb].value, Str(iter_value(m))) << "seek " << s;
            }
        }
        EXPECT_EQ(TDB_OK, iter_status(m));
        iter_destroy(m);
    }
}
