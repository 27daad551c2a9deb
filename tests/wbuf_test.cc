// Unit tests for the transaction write buffer: put/get/replace, ordering
// across column families, nested savepoints against a reference map,
// iterator (both directions, seek) against a reference, iterator safety
// under mutation, byte accounting, argument checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "testutil.h"

extern "C" {
#include "txn/wbuf.h"
#include "util/coding.h"
#include "util/error.h"
#include "util/ikey.h"
#include "util/iter.h"
}

namespace {

std::string Str(slice_t s) { return std::string(s.data, s.size); }
slice_t Sl(const std::string &s) { return slice_make(s.data(), s.size()); }

struct Entry {
    unsigned type;
    std::string value;
    bool operator==(const Entry &o) const { return type == o.type && value == o.value; }
};
using Ref = std::map<std::pair<uint32_t, std::string>, Entry>;

std::string IKey(const std::string &user, uint64_t seq, unsigned type) {
    buf_t b = {};
    EXPECT_EQ(ikey_append(&b, Sl(user), seq, type), TDB_OK);
    std::string r(b.data, b.size);
    buf_free(&b);
    return r;
}

int Collect(void *ctx, uint32_t cf, slice_t key, unsigned type, slice_t value) {
    (*static_cast<Ref *>(ctx))[{cf, Str(key)}] = Entry{type, Str(value)};
    return 0;
}

struct Seen {
    std::vector<std::pair<uint32_t, std::string>> order;
};
int CollectOrder(void *ctx, uint32_t cf, slice_t key, unsigned, slice_t) {
    static_cast<Seen *>(ctx)->order.push_back({cf, Str(key)});
    return 0;
}

Ref Dump(const wbuf_t *w) {
    Ref r;
    EXPECT_EQ(wbuf_foreach(w, Collect, &r), 0);
    return r;
}

// Check w equals ref exactly: foreach, count, get of every ref key.
void ExpectEqual(wbuf_t *w, const Ref &ref) {
    EXPECT_EQ(Dump(w), ref);
    EXPECT_EQ(wbuf_count(w), ref.size());
    for (const auto &kv : ref) {
        unsigned t = 99;
        slice_t v;
        ASSERT_EQ(wbuf_get(w, kv.first.first, Sl(kv.first.second), &t, &v), 1);
        EXPECT_EQ(t, kv.second.type);
        EXPECT_EQ(Str(v), kv.second.value);
    }
}

// All (internal key, value) of the family, forward.
std::vector<std::pair<std::string, std::string>> RefIKeys(const Ref &ref, uint32_t cf) {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto &kv : ref)
        if (kv.first.first == cf) out.push_back({IKey(kv.first.second, WBUF_SEQ, kv.second.type), kv.second.value});
    return out;
}

}  // namespace

TEST(Wbuf, PutGetReplace) {
    wbuf_t *w = wbuf_create();
    ASSERT_NE(w, nullptr);
    unsigned t;
    slice_t v;
    EXPECT_EQ(wbuf_get(w, 0, Sl("a"), &t, &v), 0);
    EXPECT_EQ(wbuf_count(w), 0u);
    ASSERT_EQ(wbuf_put(w, 0, Sl("a"), KT_PUT, Sl("1")), TDB_OK);
    ASSERT_EQ(wbuf_get(w, 0, Sl("a"), &t, &v), 1);
    EXPECT_EQ(t, (unsigned)KT_PUT);
    EXPECT_EQ(Str(v), "1");
    EXPECT_EQ(wbuf_get(w, 1, Sl("a"), &t, &v), 0);  // other cf
    EXPECT_EQ(wbuf_get(w, 0, Sl("ab"), &t, &v), 0);
    EXPECT_EQ(wbuf_get(w, 0, Sl(""), &t, &v), 0);

    ASSERT_EQ(wbuf_put(w, 0, Sl("a"), KT_DELETE, Sl("")), TDB_OK);
    ASSERT_EQ(wbuf_get(w, 0, Sl("a"), &t, &v), 1);
    EXPECT_EQ(t, (unsigned)KT_DELETE);
    EXPECT_EQ(v.size, 0u);
    EXPECT_EQ(wbuf_count(w), 1u);

    std::string ttl(8, '\0');
    enc_fixed64(&ttl[0], 12345);
    ttl += "val";
    ASSERT_EQ(wbuf_put(w, 0, Sl("a"), KT_PUT_TTL, Sl(ttl)), TDB_OK);
    ASSERT_EQ(wbuf_get(w, 0, Sl("a"), &t, &v), 1);
    EXPECT_EQ(t, (unsigned)KT_PUT_TTL);
    EXPECT_EQ(Str(v), ttl);
    ASSERT_EQ(wbuf_put(w, 0, Sl("a"), KT_SINGLE_DELETE, Sl("")), TDB_OK);
    ASSERT_EQ(wbuf_get(w, 0, Sl("a"), &t, &v), 1);
    EXPECT_EQ(t, (unsigned)KT_SINGLE_DELETE);

    // Empty key and binary keys are fine; the value is copied.
    std::string val = "temporary";
    ASSERT_EQ(wbuf_put(w, 0, Sl(""), KT_PUT, Sl(val)), TDB_OK);
    std::string bin("\0\xff\0", 3);
    ASSERT_EQ(wbuf_put(w, 0, Sl(bin), KT_PUT, Sl("b")), TDB_OK);
    val.assign("XXXXXXXXX");
    ASSERT_EQ(wbuf_get(w, 0, Sl(""), &t, &v), 1);
    EXPECT_EQ(Str(v), "temporary");
    ASSERT_EQ(wbuf_get(w, 0, Sl(bin), &t, &v), 1);
    EXPECT_EQ(Str(v), "b");
    EXPECT_EQ(wbuf_count(w), 3u);

    // A large value.
    std::string big = tdbtest::Value(7, 300000);
    ASSERT_EQ(wbuf_put(w, 3, Sl("big"), KT_PUT, Sl(big)), TDB_OK);
    ASSERT_EQ(wbuf_get(w, 3, Sl("big"), &t, &v), 1);
    EXPECT_EQ(Str(v), big);

    // get with NULL out-params.
    EXPECT_EQ(wbuf_get(w, 3, Sl("big"), nullptr, nullptr), 1);

    wbuf_clear(w);
    EXPECT_EQ(wbuf_count(w), 0u);
    EXPECT_EQ(wbuf_get(w, 0, Sl("a"), &t, &v), 0);
    EXPECT_EQ(wbuf_mark(w), 0u);
    ASSERT_EQ(wbuf_put(w, 0, Sl("a"), KT_PUT, Sl("again")), TDB_OK);
    ASSERT_EQ(wbuf_get(w, 0, Sl("a"), &t, &v), 1);
    EXPECT_EQ(Str(v), "again");
    wbuf_destroy(w);
    wbuf_destroy(nullptr);
}

TEST(Wbuf, BadArguments) {
    wbuf_t *w = wbuf_create();
    EXPECT_EQ(wbuf_put(w, 0, Sl("a"), KT_RANGE_DELETE, Sl("b")), TDB_ERR_INVALID_ARG);
    EXPECT_EQ(wbuf_put(w, 0, Sl("a"), KT_SEEK, Sl("")), TDB_ERR_INVALID_ARG);
    EXPECT_EQ(wbuf_put(w, 0, Sl("a"), 0x81, Sl("")), TDB_ERR_INVALID_ARG);
    EXPECT_EQ(wbuf_put(w, 0, Sl("a"), KT_PUT_TTL, Sl("1234567")), TDB_ERR_INVALID_ARG);  // < 8 bytes
    EXPECT_EQ(wbuf_count(w), 0u);
    EXPECT_EQ(wbuf_mark(w), 0u);
    EXPECT_EQ(wbuf_rollback_to(w, 1), TDB_ERR_INVALID_ARG);
    ASSERT_EQ(wbuf_put(w, 0, Sl("a"), KT_PUT, Sl("1")), TDB_OK);
    EXPECT_EQ(wbuf_rollback_to(w, 2), TDB_ERR_INVALID_ARG);
    EXPECT_EQ(wbuf_count(w), 1u);
    wbuf_destroy(w);
}

TEST(Wbuf, OrderingAcrossFamilies) {
    wbuf_t *w = wbuf_create();
    std::vector<std::pair<uint32_t, std::string>> in = {
        {2, "a"}, {0, "b"}, {1, "a"}, {0, "a"}, {UINT32_MAX, ""}, {0, ""}, {2, "\xff"}, {1, "aa"}, {0, "ab"}};
    for (auto &k : in) ASSERT_EQ(wbuf_put(w, k.first, Sl(k.second), KT_PUT, Sl("v")), TDB_OK);
    Seen s;
    EXPECT_EQ(wbuf_foreach(w, CollectOrder, &s), 0);
    auto sorted = in;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(s.order, sorted);

    // Early stop returns fn's value.
    int calls = 0;
    auto stop = [](void *ctx, uint32_t, slice_t, unsigned, slice_t) -> int { return ++*static_cast<int *>(ctx) == 3 ? 42 : 0; };
    EXPECT_EQ(wbuf_foreach(w, stop, &calls), 42);
    EXPECT_EQ(calls, 3);

    // Iterators see only their family, in order.
    for (uint32_t cf : {0u, 1u, 2u, 7u, UINT32_MAX}) {
        std::vector<std::string> got, want, back;
        for (auto &k : sorted)
            if (k.first == cf) want.push_back(k.second);
        iter_t *it = wbuf_iter(w, cf);
        for (iter_seek_to_first(it); iter_valid(it); iter_next(it)) {
            slice_t k = iter_key(it);
            ASSERT_TRUE(ikey_valid(k));
            EXPECT_EQ(ikey_seq(k), WBUF_SEQ);
            EXPECT_EQ(ikey_type(k), (unsigned)KT_PUT);
            got.push_back(Str(ikey_user(k)));
        }
        EXPECT_EQ(iter_status(it), TDB_OK);
        for (iter_seek_to_last(it); iter_valid(it); iter_prev(it)) back.insert(back.begin(), Str(ikey_user(iter_key(it))));
        EXPECT_EQ(got, want) << cf;
        EXPECT_EQ(back, want) << cf;
        iter_destroy(it);
    }
    wbuf_destroy(w);
}

TEST(Wbuf, SavepointsNested) {
    wbuf_t *w = wbuf_create();
    Ref ref;
    auto put = [&](uint32_t cf, const std::string &k, unsigned t, const std::string &v) {
        ASSERT_EQ(wbuf_put(w, cf, Sl(k), t, Sl(v)), TDB_OK);
        ref[{cf, k}] = Entry{t, v};
    };
    put(0, "a", KT_PUT, "a0");
    put(0, "b", KT_PUT, "b0");
    Ref s0 = ref;
    uint64_t m0 = wbuf_mark(w);

    put(0, "a", KT_PUT, "a1");      // replace
    put(0, "c", KT_PUT, "c1");      // create
    put(1, "a", KT_DELETE, "");     // create in another cf
    Ref s1 = ref;
    uint64_t m1 = wbuf_mark(w);

    put(0, "b", KT_DELETE, "");     // replace with tombstone
    put(0, "c", KT_PUT, "c2");      // replace a post-m0 entry
    put(0, "d", KT_PUT, "d2");      // create
    put(0, "d", KT_PUT, "d2b");     // replace it again
    Ref s2 = ref;
    uint64_t m2 = wbuf_mark(w);
    EXPECT_GE(m2, m1);
    EXPECT_GE(m1, m0);

    put(0, "e", KT_PUT, "e3");
    ExpectEqual(w, ref);

    ASSERT_EQ(wbuf_rollback_to(w, m2), TDB_OK);
    ExpectEqual(w, s2);
    unsigned t;
    slice_t v;
    EXPECT_EQ(wbuf_get(w, 0, Sl("e"), &t, &v), 0);

    ASSERT_EQ(wbuf_rollback_to(w, m1), TDB_OK);
    ExpectEqual(w, s1);
    EXPECT_EQ(wbuf_get(w, 0, Sl("d"), &t, &v), 0);

    // Write again after a rollback, re-using a rolled-back key, then nest.
    ref = s1;
    put(0, "d", KT_PUT, "d-new");
    uint64_t m1b = wbuf_mark(w);
    Ref s1b = ref;
    put(0, "a", KT_SINGLE_DELETE, "");
    ASSERT_EQ(wbuf_rollback_to(w, m1b), TDB_OK);
    ExpectEqual(w, s1b);
    ASSERT_EQ(wbuf_rollback_to(w, m1), TDB_OK);
    ExpectEqual(w, s1);

    // A mark past the current position (m2 after rolling back) is refused.
    EXPECT_EQ(wbuf_rollback_to(w, m2), TDB_ERR_INVALID_ARG);
    ExpectEqual(w, s1);

    ASSERT_EQ(wbuf_rollback_to(w, m0), TDB_OK);
    ExpectEqual(w, s0);
    ASSERT_EQ(wbuf_rollback_to(w, 0), TDB_OK);
    ExpectEqual(w, Ref());

    // Rolled-back entries are not visible to iterators either.
    iter_t *it = wbuf_iter(w, 0);
    iter_seek_to_first(it);
    EXPECT_FALSE(iter_valid(it));
    iter_seek_to_last(it);
    EXPECT_FALSE(iter_valid(it));
    iter_seek(it, Sl(IKey("a", SEQ_MAX, KT_SEEK)));
    EXPECT_FALSE(iter_valid(it));
    iter_destroy(it);
    wbuf_destroy(w);
}

// Random puts interleaved with nested marks and rollbacks, checked against
// reference snapshots taken at every mark.
TEST(Wbuf, SavepointsRandomized) {
    std::mt19937_64 rng(20240611);
    wbuf_t *w = wbuf_create();
    Ref ref;
    std::vector<std::pair<uint64_t, Ref>> marks;
    for (int step = 0; step < 20000; step++) {
        int op = (int)(rng() % 100);
        if (op < 80) {
            uint32_t cf = (uint32_t)(rng() % 3);
            std::string k = tdbtest::Key(rng() % 300, 4);
            unsigned types[] = {KT_PUT, KT_DELETE, KT_SINGLE_DELETE, KT_PUT_TTL};
            unsigned t = types[rng() % 4];
            std::string v = t == KT_DELETE || t == KT_SINGLE_DELETE ? "" : tdbtest::Value(rng(), 8 + rng() % 40);
            ASSERT_EQ(wbuf_put(w, cf, Sl(k), t, Sl(v)), TDB_OK);
            ref[{cf, k}] = Entry{t, v};
        } else if (op < 90 || marks.empty()) {
            marks.push_back({wbuf_mark(w), ref});
        } else {
            size_t i = rng() % marks.size();
            ASSERT_EQ(wbuf_rollback_to(w, marks[i].first), TDB_OK);
            ref = marks[i].second;
            marks.resize(i + 1);  // the rolled-to mark stays usable
            ASSERT_EQ(wbuf_count(w), ref.size());
        }
        if (step % 1000 == 0) ExpectEqual(w, ref);
    }
    ExpectEqual(w, ref);
    wbuf_destroy(w);
}

// Forward, backward and seek against a reference built from std::map.
TEST(Wbuf, IteratorMatchesReference) {
    std::mt19937_64 rng(7);
    wbuf_t *w = wbuf_create();
    Ref ref;
    for (int i = 0; i < 3000; i++) {
        uint32_t cf = (uint32_t)(rng() % 4);
        std::string k = tdbtest::Key(rng() % 1000, 5);
        if (rng() % 5 == 0) k.resize(rng() % k.size());  // prefixes, including ""
        unsigned t = rng() % 3 == 0 ? KT_DELETE : KT_PUT;
        std::string v = t == KT_PUT ? tdbtest::Value(i, rng() % 20) : "";
        ASSERT_EQ(wbuf_put(w, cf, Sl(k), t, Sl(v)), TDB_OK);
        ref[{cf, k}] = Entry{t, v};
        if (i == 2000) {
            // Roll some back so the list holds absent nodes.
            uint64_t m = wbuf_mark(w);
            Ref snap = ref;
            for (int j = 0; j < 300; j++)
                ASSERT_EQ(wbuf_put(w, (uint32_t)(rng() % 4), Sl(tdbtest::Key(rng() % 2000, 5)), KT_PUT, Sl("x")), TDB_OK);
            ASSERT_EQ(wbuf_rollback_to(w, m), TDB_OK);
            ref = snap;
        }
    }
    for (uint32_t cf = 0; cf < 5; cf++) {
        auto want = RefIKeys(ref, cf);
        iter_t *it = wbuf_iter(w, cf);
        // Forward.
        size_t i = 0;
        for (iter_seek_to_first(it); iter_valid(it); iter_next(it), i++) {
            ASSERT_LT(i, want.size());
            EXPECT_EQ(Str(iter_key(it)), want[i].first);
            EXPECT_EQ(Str(iter_value(it)), want[i].second);
        }
        EXPECT_EQ(i, want.size());
        // Backward.
        i = want.size();
        for (iter_seek_to_last(it); iter_valid(it); iter_prev(it)) {
            ASSERT_GT(i, 0u);
            i--;
            EXPECT_EQ(Str(iter_key(it)), want[i].first);
        }
        EXPECT_EQ(i, 0u);
        // Direction changes.
        if (want.size() > 3) {
            iter_seek_to_first(it);
            iter_next(it);
            iter_next(it);
            iter_prev(it);
            EXPECT_EQ(Str(iter_key(it)), want[1].first);
            iter_seek_to_first(it);
            iter_prev(it);
            EXPECT_FALSE(iter_valid(it));
            iter_seek_to_last(it);
            iter_next(it);
            EXPECT_FALSE(iter_valid(it));
        }
        // Seeks: random users with several trailers.
        auto lower = [&](const std::string &t) {
            size_t j = 0;
            while (j < want.size() && ikey_compare(Sl(want[j].first), Sl(t)) < 0) j++;
            return j;
        };
        for (int s = 0; s < 400; s++) {
            std::string user = tdbtest::Key(rng() % 1100, 5);
            if (s % 7 == 0) user.resize(rng() % user.size());
            uint64_t seqs[] = {SEQ_MAX, WBUF_SEQ, WBUF_SEQ - 1, 5};
            unsigned types[] = {KT_SEEK, KT_PUT, KT_DELETE};
            std::string target = IKey(user, seqs[rng() % 4], types[rng() % 3]);
            size_t j = lower(target);
            iter_seek(it, Sl(target));
            if (j == want.size()) {
                EXPECT_FALSE(iter_valid(it)) << s;
            } else {
                ASSERT_TRUE(iter_valid(it));
                EXPECT_EQ(Str(iter_key(it)), want[j].first);
                EXPECT_EQ(Str(iter_value(it)), want[j].second);
                // And step both ways from a seek.
                if (j + 1 < want.size()) {
                    iter_next(it);
                    ASSERT_TRUE(iter_valid(it));
                    EXPECT_EQ(Str(iter_key(it)), want[j + 1].first);
                    iter_prev(it);
                }
                if (j > 0) {
                    iter_prev(it);
                    ASSERT_TRUE(iter_valid(it));
                    EXPECT_EQ(Str(iter_key(it)), want[j - 1].first);
                }
            }
        }
        // Seek exactly to each entry's own internal key lands on it.
        for (size_t j = 0; j < want.size(); j += 17) {
            iter_seek(it, Sl(want[j].first));
            ASSERT_TRUE(iter_valid(it));
            EXPECT_EQ(Str(iter_key(it)), want[j].first);
        }
        // An invalid target.
        iter_seek(it, Sl("abc"));
        EXPECT_FALSE(iter_valid(it));
        EXPECT_EQ(iter_status(it), TDB_ERR_INVALID_ARG);
        iter_seek_to_first(it);
        EXPECT_EQ(iter_status(it), TDB_OK);
        iter_destroy(it);
    }
    wbuf_destroy(w);
}

// Keys written in order append past the last node without a search; mixed
// with writes in the middle, in other families, rollbacks and a clear, the
// list stays what a reference map says, at every level (gets search from
// the top) and both ways (back links).
TEST(Wbuf, AppendsInOrderMixedWithInserts) {
    std::mt19937_64 rng(11);
    wbuf_t *w = wbuf_create();
    Ref ref;
    auto put = [&](uint32_t cf, const std::string &k, const std::string &v) {
        ASSERT_EQ(wbuf_put(w, cf, Sl(k), KT_PUT, Sl(v)), TDB_OK);
        ref[{cf, k}] = Entry{KT_PUT, v};
    };
    auto check = [&] {
        ExpectEqual(w, ref);
        for (uint32_t cf = 0; cf < 4; cf++) {
            auto want = RefIKeys(ref, cf);
            iter_t *it = wbuf_iter(w, cf);
            size_t i = want.size();
            for (iter_seek_to_last(it); iter_valid(it); iter_prev(it)) {
                ASSERT_GT(i, 0u);
                EXPECT_EQ(Str(iter_key(it)), want[--i].first);
            }
            EXPECT_EQ(i, 0u);
            iter_destroy(it);
        }
        // Past the last node: absent.
        EXPECT_EQ(wbuf_get(w, 3, Sl("zzzz"), nullptr, nullptr), 0);
    };
    for (int i = 0; i < 2000; i++) put(1, tdbtest::Key((uint64_t)i * 2, 8), "a" + std::to_string(i));
    check();
    for (int i = 0; i < 500; i++) put(2, tdbtest::Key((uint64_t)i, 8), "b");  // a later family: still appends
    check();
    for (int i = 0; i < 300; i++) put(1, tdbtest::Key((rng() % 2000) * 2 + 1, 8), "m");  // in the middle
    for (int i = 0; i < 300; i++) put(0, tdbtest::Key(rng() % 5000, 8), "c");            // an earlier family
    check();
    uint64_t mark = wbuf_mark(w);
    Ref snap = ref;
    for (int i = 500; i < 800; i++) put(2, tdbtest::Key((uint64_t)i, 8), "rolled back");
    ASSERT_EQ(wbuf_rollback_to(w, mark), TDB_OK);
    ref = snap;
    check();
    // Appending past absent nodes, and overwriting one.
    for (int i = 700; i < 1200; i++) put(2, tdbtest::Key((uint64_t)i, 8), "d");
    put(2, tdbtest::Key(600, 8), "e");
    check();
    wbuf_clear(w);
    ref.clear();
    check();
    for (int i = 0; i < 100; i++) put(3, tdbtest::Key((uint64_t)i, 8), "f");
    put(3, tdbtest::Key(50, 8) + "x", "g");
    check();
    wbuf_destroy(w);
}

// The caller writes (and rolls back) during a scan: no crash (ASan), the
// scan stays ordered and terminates, and entries present throughout the
// scan are all seen.
TEST(Wbuf, IteratorSurvivesMutation) {
    std::mt19937_64 rng(99);
    wbuf_t *w = wbuf_create();
    for (int i = 0; i < 500; i += 2) ASSERT_EQ(wbuf_put(w, 1, Sl(tdbtest::Key(i, 6)), KT_PUT, Sl("base")), TDB_OK);
    uint64_t base_mark = wbuf_mark(w);
    for (int round = 0; round < 20; round++) {
        iter_t *it = wbuf_iter(w, 1);
        bool fwd = round % 2 == 0;
        std::string last;
        size_t base_seen = 0;
        if (fwd) iter_seek_to_first(it);
        else iter_seek_to_last(it);
        uint64_t mark = wbuf_mark(w);
        int steps = 0;
        while (iter_valid(it)) {
            std::string user = Str(ikey_user(iter_key(it)));
            std::string val = Str(iter_value(it));
            if (!last.empty()) {
                if (fwd) {
                    EXPECT_GT(user, last);
                } else {
                    EXPECT_LT(user, last);
                }
            }
            last = user;
            int n = atoi(user.c_str() + 1);
            if (n % 2 == 0 && n < 500) base_seen++;
            // Mutate: new keys around the cursor, replace the current one,
            // other families, and sometimes roll everything since the mark.
            for (int j = 0; j < 3; j++) {
                uint32_t cf = (uint32_t)(rng() % 3);
                std::string k = tdbtest::Key(rng() % 1000 * 2 + 1, 6);  // odd: not base
                ASSERT_EQ(wbuf_put(w, cf, Sl(k), KT_PUT, Sl(tdbtest::Value(rng(), 30))), TDB_OK);
            }
            ASSERT_EQ(wbuf_put(w, 1, Sl(user), KT_PUT, Sl("replaced-" + val)), TDB_OK);
            if (rng() % 10 == 0) {
                ASSERT_EQ(wbuf_rollback_to(w, mark), TDB_OK);
            }
            // The slices read before mutation are still readable.
            EXPECT_EQ(Str(iter_value(it)), val);
            if (fwd) iter_next(it);
            else iter_prev(it);
            ASSERT_LT(++steps, 100000);
        }
        EXPECT_EQ(iter_status(it), TDB_OK);
        EXPECT_EQ(base_seen, 250u) << round;
        iter_destroy(it);
        ASSERT_EQ(wbuf_rollback_to(w, base_mark), TDB_OK);
        ASSERT_EQ(wbuf_count(w), 250u);
    }
    // Rolling back the very node the iterator stands on.
    iter_t *it = wbuf_iter(w, 1);
    uint64_t m = wbuf_mark(w);
    ASSERT_EQ(wbuf_put(w, 1, Sl(tdbtest::Key(3, 6)), KT_PUT, Sl("odd")), TDB_OK);
    iter_seek(it, Sl(IKey(tdbtest::Key(3, 6), SEQ_MAX, KT_SEEK)));
    ASSERT_TRUE(iter_valid(it));
    EXPECT_EQ(Str(ikey_user(iter_key(it))), tdbtest::Key(3, 6));
    ASSERT_EQ(wbuf_rollback_to(w, m), TDB_OK);
    EXPECT_EQ(Str(iter_value(it)), "odd");  // cached; memory still valid
    iter_next(it);
    ASSERT_TRUE(iter_valid(it));
    EXPECT_EQ(Str(ikey_user(iter_key(it))), tdbtest::Key(4, 6));
    iter_prev(it);
    ASSERT_TRUE(iter_valid(it));
    EXPECT_EQ(Str(ikey_user(iter_key(it))), tdbtest::Key(2, 6));
    iter_destroy(it);
    wbuf_destroy(w);
}

TEST(Wbuf, BytesAccounting) {
    wbuf_t *w = wbuf_create();
    size_t base = wbuf_bytes(w);
    EXPECT_GT(base, 0u);
    size_t prev = base;
    size_t payload = 0;
    for (int i = 0; i < 1000; i++) {
        std::string k = tdbtest::Key(i), v = tdbtest::Value(i, 100);
        ASSERT_EQ(wbuf_put(w, 0, Sl(k), KT_PUT, Sl(v)), TDB_OK);
        size_t now = wbuf_bytes(w);
        EXPECT_GE(now, prev + k.size() + v.size());
        payload += k.size() + v.size();
        prev = now;
    }
    size_t after_puts = wbuf_bytes(w);
    EXPECT_GE(after_puts, base + payload);
    EXPECT_LE(after_puts, base + payload * 3);  // bounded overhead per entry
    // Replacing keeps the old value for rollback: bytes grow by the new value.
    uint64_t m = wbuf_mark(w);
    std::string big(10000, 'z');
    ASSERT_EQ(wbuf_put(w, 0, Sl(tdbtest::Key(5)), KT_PUT, Sl(big)), TDB_OK);
    EXPECT_GE(wbuf_bytes(w), after_puts + big.size());
    EXPECT_EQ(wbuf_count(w), 1000u);
    // Rollback cannot give arena memory back, only undo records.
    ASSERT_EQ(wbuf_rollback_to(w, m), TDB_OK);
    EXPECT_GE(wbuf_bytes(w), after_puts + big.size() - 64);
    wbuf_clear(w);
    EXPECT_EQ(wbuf_bytes(w), base);
    ASSERT_EQ(wbuf_put(w, 0, Sl("k"), KT_PUT, Sl("v")), TDB_OK);
    EXPECT_GT(wbuf_bytes(w), base);
    EXPECT_LT(wbuf_bytes(w), base + 512);
    wbuf_destroy(w);
}
