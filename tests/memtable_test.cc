// Unit tests for the memtable: arena, versioned get with snapshots, iterator
// order against a sorted reference, concurrent inserts and readers, memory
// accounting and reference-counted lifetime.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "memtable_testutil.h"
#include "testutil.h"

extern "C" {
#include "memtable/arena.h"
#include "memtable/memtable.h"
#include "memtable/skiplist.h"
#include "util/error.h"
#include "util/ikey.h"
}

namespace {

using memtable_testutil::Get;
using memtable_testutil::Got;
using memtable_testutil::Sl;
using memtable_testutil::ValueFor;

std::string Str(slice_t s) { return std::string(s.data, s.size); }

std::string IKey(const std::string &user, uint64_t seq, unsigned type) {
    buf_t b = {};
    EXPECT_EQ(ikey_append(&b, Sl(user), seq, type), TDB_OK);
    std::string r(b.data, b.size);
    buf_free(&b);
    return r;
}

bool IkeyLess(const std::string &a, const std::string &b) { return ikey_compare(Sl(a), Sl(b)) < 0; }

// Every thread's internal keys, in one list sorted by IkeyLess.
std::vector<std::string> SortedUnion(const std::vector<std::vector<std::string>> &refs) {
    std::vector<std::string> ref;
    for (auto &r : refs) ref.insert(ref.end(), r.begin(), r.end());
    std::sort(ref.begin(), ref.end(), IkeyLess);
    return ref;
}

// The memtable holds exactly the internal keys of ref (sorted by IkeyLess),
// forward and backward. With check_values, a put's value is
// ValueFor(user, seq) and a range tombstone's end is user + "~".
void ExpectListIs(memtable_t *m, const std::vector<std::string> &ref, bool check_values) {
    iter_t *it = memtable_iter(m);
    size_t i = 0;
    for (iter_seek_to_first(it); iter_valid(it); iter_next(it), i++) {
        ASSERT_LT(i, ref.size());
        ASSERT_EQ(Str(iter_key(it)), ref[i]);
        slice_t k = Sl(ref[i]);
        if (!check_values) continue;
        if (ikey_type(k) == KT_PUT) {
            ASSERT_EQ(Str(iter_value(it)), ValueFor(Str(ikey_user(k)), ikey_seq(k)));
        } else if (ikey_type(k) == KT_RANGE_DELETE) {
            ASSERT_EQ(Str(iter_value(it)), Str(ikey_user(k)) + "~");
        }
    }
    EXPECT_EQ(i, ref.size());
    i = ref.size();
    for (iter_seek_to_last(it); iter_valid(it); iter_prev(it)) ASSERT_EQ(Str(iter_key(it)), ref[--i]);
    EXPECT_EQ(i, 0u);
    iter_destroy(it);
}

}  // namespace

// ---------------------------------------------------------------------------
// Arena
// ---------------------------------------------------------------------------

TEST(Arena, AlignedDistinctAndAccounted) {
    arena_t *a = arena_create(64 * 1024);
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(arena_memory_usage(a), 0u);
    std::vector<std::pair<char *, size_t>> got;
    std::mt19937 rng(1);
    size_t total = 0;
    for (int i = 0; i < 5000; i++) {
        size_t n = rng() % 300;
        if (i % 500 == 0) n = 100000;  // larger than a block: dedicated
        char *p = (char *)arena_alloc(a, n);
        ASSERT_NE(p, nullptr);
        EXPECT_EQ((uintptr_t)p % 8, 0u);
        memset(p, i & 0xff, n);
        got.emplace_back(p, n);
        total += n;
    }
    for (size_t i = 0; i < got.size(); i++)
        for (size_t j = 0; j < got[i].second; j++)
            ASSERT_EQ((unsigned char)got[i].first[j], i & 0xff) << "allocation " << i << " overwritten";
    EXPECT_GE(arena_memory_usage(a), total);
    EXPECT_LT(arena_memory_usage(a), total + total / 4 + 64 * 1024);
    arena_destroy(a);
}

TEST(Arena, ConcurrentAllocationsAreDisjoint) {
    arena_t *a = arena_create(16 * 1024);
    const int kThreads = 4, kPer = 20000;
    std::vector<std::vector<std::pair<char *, size_t>>> got(kThreads);
    std::vector<std::thread> th;
    for (int t = 0; t < kThreads; t++) {
        th.emplace_back([&, t] {
            std::mt19937 rng(t);
            for (int i = 0; i < kPer; i++) {
                size_t n = 1 + rng() % 64;
                char *p = (char *)arena_alloc(a, n);
                if (!p) return;
                memset(p, t + 1, n);
                got[t].emplace_back(p, n);
            }
        });
    }
    for (auto &x : th) x.join();
    for (int t = 0; t < kThreads; t++) {
        ASSERT_EQ(got[t].size(), (size_t)kPer);
        for (auto &pn : got[t])
            for (size_t j = 0; j < pn.second; j++) ASSERT_EQ(pn.first[j], t + 1);
    }
    arena_destroy(a);
}

// ---------------------------------------------------------------------------
// Point lookups
// ---------------------------------------------------------------------------

TEST(Memtable, GetNewestVisibleVersion) {
    memtable_t *m = memtable_create();
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(Get(m, "a", SEQ_MAX).found, 0);

    ASSERT_EQ(memtable_add(m, 1, KT_PUT, Sl("a"), Sl("v1")), TDB_OK);
    ASSERT_EQ(memtable_add(m, 5, KT_PUT, Sl("a"), Sl("v5")), TDB_OK);
    ASSERT_EQ(memtable_add(m, 7, KT_DELETE, Sl("a"), Sl("")), TDB_OK);
    ASSERT_EQ(memtable_add(m, 9, KT_PUT, Sl("a"), Sl("v9")), TDB_OK);
    ASSERT_EQ(memtable_add(m, 3, KT_PUT, Sl("aa"), Sl("")), TDB_OK);  // empty value
    ASSERT_EQ(memtable_add(m, 4, KT_SINGLE_DELETE, Sl("b"), Sl("")), TDB_OK);
    ASSERT_EQ(memtable_add(m, 2, KT_PUT, Sl("b"), Sl("b2")), TDB_OK);
    ASSERT_EQ(memtable_add(m, 6, KT_PUT_TTL, Sl("c"), Sl("12345678ttl")), TDB_OK);

    struct {
        std::string key;
        uint64_t snap;
        int found;
        unsigned type;
        uint64_t seq;
        std::string value;
    } cases[] = {
        {"a", 0, 0, 0, 0, ""},        {"a", 1, 1, KT_PUT, 1, "v1"},
        {"a", 4, 1, KT_PUT, 1, "v1"}, {"a", 5, 1, KT_PUT, 5, "v5"},
        {"a", 6, 1, KT_PUT, 5, "v5"}, {"a", 7, 1, KT_DELETE, 7, ""},
        {"a", 8, 1, KT_DELETE, 7, ""}, {"a", 9, 1, KT_PUT, 9, "v9"},
        {"a", SEQ_MAX, 1, KT_PUT, 9, "v9"}, {"a", UINT64_MAX, 1, KT_PUT, 9, "v9"},
        {"aa", 2, 0, 0, 0, ""},       {"aa", 3, 1, KT_PUT, 3, ""},
        {"b", 1, 0, 0, 0, ""},        {"b", 3, 1, KT_PUT, 2, "b2"},
        {"b", 4, 1, KT_SINGLE_DELETE, 4, ""}, {"c", 100, 1, KT_PUT_TTL, 6, "12345678ttl"},
        {"", 100, 0, 0, 0, ""},       {"0", 100, 0, 0, 0, ""},
        {"ab", 100, 0, 0, 0, ""},     {"d", 100, 0, 0, 0, ""},
    };
    for (auto &c : cases) {
        Got g = Get(m, c.key, c.snap);
        ASSERT_EQ(g.found, c.found) << c.key << "@" << c.snap;
        if (!c.found) continue;
        EXPECT_EQ(g.type, c.type) << c.key << "@" << c.snap;
        EXPECT_EQ(g.seq, c.seq) << c.key << "@" << c.snap;
        EXPECT_EQ(g.value, c.value) << c.key << "@" << c.snap;
    }
    EXPECT_EQ(memtable_num_entries(m), 8u);
    EXPECT_EQ(memtable_num_deletes(m), 2u);
    memtable_unref(m);
}

TEST(Memtable, RejectsBadTypeAndSequence) {
    memtable_t *m = memtable_create();
    EXPECT_EQ(memtable_add(m, 1, 0x80, Sl("a"), Sl("v")), TDB_ERR_INVALID_ARG);
    EXPECT_EQ(memtable_add(m, SEQ_MAX + 1, KT_PUT, Sl("a"), Sl("v")), TDB_ERR_INVALID_ARG);
    EXPECT_EQ(memtable_num_entries(m), 0u);
    EXPECT_EQ(memtable_add(m, SEQ_MAX, KT_PUT, Sl("a"), Sl("v")), TDB_OK);
    EXPECT_EQ(Get(m, "a", SEQ_MAX).seq, SEQ_MAX);
    memtable_unref(m);
}

TEST(Memtable, LargeKeysAndValues) {
    memtable_t *m = memtable_create();
    std::string big_key(TDB_MAX_KEY_SIZE, 'k');
    std::string big_val = tdbtest::Value(3, 3 << 20);  // > block size: own block
    ASSERT_EQ(memtable_add(m, 10, KT_PUT, Sl(big_key), Sl(big_val)), TDB_OK);
    ASSERT_EQ(memtable_add(m, 11, KT_PUT, Sl("small"), Sl(big_val.substr(0, 200))), TDB_OK);
    Got g = Get(m, big_key, 10);
    ASSERT_EQ(g.found, 1);
    EXPECT_TRUE(g.value == big_val);
    EXPECT_EQ(Get(m, "small", 11).value, big_val.substr(0, 200));
    EXPECT_EQ(Get(m, big_key.substr(1), 11).found, 0);
    EXPECT_GE(memtable_memory_usage(m), big_key.size() + big_val.size());
    memtable_unref(m);
}

// ---------------------------------------------------------------------------
// Ordering against a reference
// ---------------------------------------------------------------------------

namespace {

// 100k entries over user keys drawn from a small alphabet (many versions per
// key), unique sequences, inserted in random order.
struct Populated {
    memtable_t *m;
    std::vector<std::string> ref;  // sorted internal keys
    std::vector<std::string> users;

    explicit Populated(int n, uint32_t seed) {
        m = memtable_create();
        std::mt19937 rng(seed);
        for (int i = 0; i < n / 4; i++) {
            std::string u(1 + rng() % 12, 'a');
            for (char &ch : u) ch = (char)('a' + rng() % 6);
            users.push_back(u);
        }
        std::vector<uint64_t> seqs(n);
        for (int i = 0; i < n; i++) seqs[i] = (uint64_t)i + 1;
        std::shuffle(seqs.begin(), seqs.end(), rng);
        const unsigned types[] = {KT_PUT, KT_PUT, KT_PUT, KT_DELETE, KT_SINGLE_DELETE, KT_PUT_TTL};
        for (int i = 0; i < n; i++) {
            const std::string &u = users[rng() % users.size()];
            unsigned t = types[rng() % 6];
            EXPECT_EQ(memtable_add(m, seqs[i], t, Sl(u), Sl(ValueFor(u, seqs[i]))), TDB_OK);
            ref.push_back(IKey(u, seqs[i], t));
        }
        std::sort(ref.begin(), ref.end(), IkeyLess);
    }
    ~Populated() { memtable_unref(m); }

    void ExpectAt(const iter_t *it, long idx, const char *what) const {
        bool in = idx >= 0 && idx < (long)ref.size();
        ASSERT_EQ(iter_valid(it) != 0, in) << what << " at " << idx;
        if (!in) return;
        std::string k = Str(iter_key(it));
        ASSERT_EQ(k, ref[idx]) << what;
        slice_t ik = Sl(k);
        ASSERT_EQ(Str(iter_value(it)), ValueFor(Str(ikey_user(ik)), ikey_seq(ik))) << what;
    }
};

}  // namespace

TEST(Memtable, IteratorMatchesSortedReference100k) {
    Populated p(100000, 11);
    EXPECT_EQ(memtable_num_entries(p.m), 100000u);
    iter_t *it = memtable_iter(p.m);

    long i = 0;
    for (iter_seek_to_first(it); iter_valid(it); iter_next(it), i++) {
        p.ExpectAt(it, i, "forward");
        if (HasFatalFailure()) break;
    }
    EXPECT_EQ(i, 100000);
    i = 99999;
    for (iter_seek_to_last(it); iter_valid(it); iter_prev(it), i--) {
        p.ExpectAt(it, i, "backward");
        if (HasFatalFailure()) break;
    }
    EXPECT_EQ(i, -1);

    // Seeks to random lookup keys, then a few random steps from there.
    std::mt19937 rng(5);
    for (int s = 0; s < 20000 && !HasFatalFailure(); s++) {
        std::string u = p.users[rng() % p.users.size()];
        if (rng() % 4 == 0) u += (char)('a' + rng() % 7);  // often absent
        std::string target = IKey(u, rng() % 110000, rng() % 2 ? KT_SEEK : KT_PUT);
        iter_seek(it, Sl(target));
        long idx = std::lower_bound(p.ref.begin(), p.ref.end(), target, IkeyLess) - p.ref.begin();
        p.ExpectAt(it, idx, "seek");
        for (int k = 0; k < 4 && iter_valid(it); k++) {
            if (rng() % 2) {
                iter_next(it);
                idx++;
            } else {
                iter_prev(it);
                idx--;
            }
            p.ExpectAt(it, idx, "step");
        }
    }
    EXPECT_EQ(iter_status(it), TDB_OK);
    iter_destroy(it);
}

TEST(Memtable, GetMatchesReferenceAtRandomSnapshots) {
    Populated p(30000, 23);
    std::mt19937 rng(9);
    for (int s = 0; s < 30000; s++) {
        std::string u = p.users[rng() % p.users.size()];
        if (rng() % 8 == 0) u.pop_back();
        uint64_t snap = rng() % 31000;
        std::string look = IKey(u, snap, KT_SEEK);
        auto lb = std::lower_bound(p.ref.begin(), p.ref.end(), look, IkeyLess);
        bool want = lb != p.ref.end() && Str(ikey_user(Sl(*lb))) == u;
        Got g = Get(p.m, u, snap);
        ASSERT_EQ(g.found, (int)want) << u << "@" << snap;
        if (!want) continue;
        EXPECT_EQ(g.seq, ikey_seq(Sl(*lb)));
        EXPECT_EQ(g.type, ikey_type(Sl(*lb)));
        EXPECT_EQ(g.value, ValueFor(u, g.seq));
    }
}

// ---------------------------------------------------------------------------
// Concurrency
// ---------------------------------------------------------------------------

TEST(Memtable, ConcurrentDisjointInserts) {
    memtable_t *m = memtable_create();
    const int kThreads = 4, kPer = 25000;
    std::vector<std::thread> th;
    std::atomic<int> failures{0};
    for (int t = 0; t < kThreads; t++) {
        th.emplace_back([&, t] {
            for (int i = 0; i < kPer; i++) {
                uint64_t id = (uint64_t)i * kThreads + t;
                std::string u = tdbtest::Key(id * 2654435761u % 1000003u);
                if (memtable_add(m, id + 1, KT_PUT, Sl(u), Sl(ValueFor(u, id + 1))) != TDB_OK) failures++;
            }
        });
    }
    for (auto &x : th) x.join();
    ASSERT_EQ(failures.load(), 0);
    ASSERT_EQ(memtable_num_entries(m), (uint64_t)kThreads * kPer);

    std::vector<std::string> ref;
    for (uint64_t id = 0; id < (uint64_t)kThreads * kPer; id++) {
        std::string u = tdbtest::Key(id * 2654435761u % 1000003u);
        Got g = Get(m, u, SEQ_MAX);
        ASSERT_EQ(g.found, 1) << u;
        ASSERT_EQ(g.seq, id + 1);
        ASSERT_EQ(g.value, ValueFor(u, id + 1));
        ref.push_back(IKey(u, id + 1, KT_PUT));
    }
    std::sort(ref.begin(), ref.end(), IkeyLess);
    ExpectListIs(m, ref, false);
    memtable_unref(m);
}

// Hinted inserts (memtable_add_hint, memtable_add_serial) must build the
// same list as plain ones whatever the key order: sorted runs, reverse runs,
// random keys, appends at the tail, several threads with their own hints and
// one serial inserter at once. Checked entry by entry, both directions.
TEST(Memtable, HintedInsertsInAnyOrderMatchReference) {
    memtable_t *m = memtable_create();
    const int kThreads = 3, kBatches = 40, kPer = 300, kSerial = 20000;
    std::vector<std::thread> th;
    std::atomic<int> failures{0};
    std::vector<std::vector<std::string>> refs(kThreads + 1);
    for (int t = 0; t < kThreads; t++) {
        th.emplace_back([&, t] {
            std::mt19937_64 rng(77 + t);
            for (int b = 0; b < kBatches; b++) {
                std::vector<uint64_t> ids;
                for (int i = 0; i < kPer; i++) ids.push_back(rng() % 100000);
                if (b % 3 == 0) std::sort(ids.begin(), ids.end());
                if (b % 3 == 1) std::sort(ids.rbegin(), ids.rend());
                memtable_hint_t h;
                memtable_hint_init(&h);
                for (int i = 0; i < kPer; i++) {
                    uint64_t seq = (uint64_t)((t * kBatches + b) * kPer + i) + 1;
                    std::string u = tdbtest::Key(ids[i]);
                    if (memtable_add_hint(m, &h, seq, KT_PUT, Sl(u), Sl(ValueFor(u, seq))) != TDB_OK) failures++;
                    refs[t].push_back(IKey(u, seq, KT_PUT));
                }
            }
        });
    }
    th.emplace_back([&] { /* serial: a run of appends, then random keys */
        std::mt19937_64 rng(5);
        for (int i = 0; i < kSerial; i++) {
            uint64_t seq = (uint64_t)kThreads * kBatches * kPer + i + 1;
            std::string u = tdbtest::Key(i < kSerial / 2 ? 200000 + i : rng() % 300000);
            if (memtable_add_serial(m, seq, KT_PUT, Sl(u), Sl(ValueFor(u, seq))) != TDB_OK) failures++;
            refs[kThreads].push_back(IKey(u, seq, KT_PUT));
        }
    });
    for (auto &x : th) x.join();
    ASSERT_EQ(failures.load(), 0);
    std::vector<std::string> ref = SortedUnion(refs);
    ASSERT_EQ(memtable_num_entries(m), (uint64_t)ref.size());
    ExpectListIs(m, ref, true);
    memtable_unref(m);
}

// memtable_add_sorted (the lanes of skiplist_insert_sorted) must build the
// same list as one add per entry: runs of every size around the lane
// thresholds, several versions of a key, deletes and range tombstones,
// several threads inserting sorted runs at once with one plain inserter.
TEST(Memtable, SortedRunsInLanesMatchReference) {
    memtable_t *m = memtable_create();
    const int kThreads = 3;
    const size_t kSizes[] = {1, 2, 31, 32, 33, 63, 64, 127, 128, 129, 130, 500, 1000, 4097};
    std::vector<std::thread> th;
    std::atomic<int> failures{0};
    std::atomic<uint64_t> deletes{0}, range_dels{0};
    std::vector<std::vector<std::string>> refs(kThreads + 1);
    std::atomic<uint64_t> next_seq{1};
    for (int t = 0; t < kThreads; t++) {
        th.emplace_back([&, t] {
            std::mt19937_64 rng(911 + t);
            for (int round = 0; round < 3; round++) {
                for (size_t n : kSizes) {
                    uint64_t seq0 = next_seq.fetch_add(n);
                    std::vector<std::pair<std::string, uint64_t>> keys;
                    for (size_t i = 0; i < n; i++) {
                        uint64_t id = rng() % 50000;
                        if (i > 0 && rng() % 8 == 0) id = std::stoull(keys.back().first.substr(1));  // same key again
                        keys.push_back({tdbtest::Key(id), seq0 + i});
                    }
                    std::sort(keys.begin(), keys.end(), [](const auto &a, const auto &b) {
                        return a.first != b.first ? a.first < b.first : a.second > b.second;  // newest first
                    });
                    std::vector<memtable_item_t> items(n);
                    std::vector<std::string> vals(n);
                    for (size_t i = 0; i < n; i++) {
                        unsigned type = keys[i].second % 17 == 0 ? KT_DELETE : keys[i].second % 101 == 0 ? KT_RANGE_DELETE : KT_PUT;
                        vals[i] = type == KT_PUT ? ValueFor(keys[i].first, keys[i].second) : type == KT_RANGE_DELETE ? keys[i].first + "~" : "";
                        items[i] = {keys[i].second, type, Sl(keys[i].first), Sl(vals[i])};
                        if (type == KT_DELETE) deletes++;
                        if (type == KT_RANGE_DELETE) range_dels++;
                        refs[t].push_back(IKey(keys[i].first, keys[i].second, type));  // tombstones are entries too
                    }
                    if (memtable_add_sorted(m, items.data(), n) != TDB_OK) failures++;
                }
            }
        });
    }
    th.emplace_back([&] { /* plain random puts meanwhile */
        std::mt19937_64 rng(3);
        for (int i = 0; i < 20000; i++) {
            uint64_t seq = next_seq.fetch_add(1);
            std::string u = tdbtest::Key(rng() % 50000);
            if (memtable_add(m, seq, KT_PUT, Sl(u), Sl(ValueFor(u, seq))) != TDB_OK) failures++;
            refs[kThreads].push_back(IKey(u, seq, KT_PUT));
        }
    });
    for (auto &x : th) x.join();
    ASSERT_EQ(failures.load(), 0);
    std::vector<std::string> ref = SortedUnion(refs);
    EXPECT_EQ(memtable_num_entries(m), (uint64_t)ref.size());
    EXPECT_EQ(memtable_num_deletes(m), deletes.load());
    EXPECT_EQ(memtable_num_range_deletes(m), range_dels.load());
    ASSERT_GT(range_dels.load(), 0u);
    ExpectListIs(m, ref, true);
    memtable_unref(m);
}

// A bad entry in a sorted run: the entries before it are in, the error is
// returned, nothing after it is added.
TEST(Memtable, SortedRunStopsAtABadEntry) {
    memtable_t *m = memtable_create();
    std::vector<std::string> keys;
    for (int i = 0; i < 100; i++) keys.push_back(tdbtest::Key((uint64_t)i));
    std::vector<memtable_item_t> items(100);
    for (int i = 0; i < 100; i++) items[i] = {(uint64_t)(i + 1), KT_PUT, Sl(keys[i]), Sl(keys[i])};
    items[70].type = 0x80;
    EXPECT_EQ(TDB_ERR_INVALID_ARG, memtable_add_sorted(m, items.data(), items.size()));
    EXPECT_EQ(70u, memtable_num_entries(m));
    for (int i = 0; i < 100; i++) EXPECT_EQ(i < 70 ? 1 : 0, Get(m, keys[i], SEQ_MAX).found) << i;
    EXPECT_EQ(TDB_OK, memtable_add_sorted(m, items.data(), 0));
    memtable_unref(m);
}

TEST(Memtable, ReadersStayConsistentWhileWritersInsert) {
    memtable_t *m = memtable_create();
    const int kWriters = 2, kPer = 40000;
    std::atomic<int> done[kWriters];
    for (auto &d : done) d.store(0);
    std::atomic<int> writers_left{kWriters}, readers_ready{0};
    std::atomic<long> partial_scans{0};  // scans that overlapped writes
    auto key_of = [](int w, int i) { return tdbtest::Key(((uint64_t)i * 7919 + w * 104729) % 10000019); };

    std::vector<std::thread> th;
    for (int w = 0; w < kWriters; w++) {
        th.emplace_back([&, w] {
            while (readers_ready.load() < 2) std::this_thread::yield();
            for (int i = 0; i < kPer; i++) {
                std::string u = key_of(w, i);
                uint64_t seq = (uint64_t)i * kWriters + w + 1;
                ASSERT_EQ(memtable_add(m, seq, KT_PUT, Sl(u), Sl(ValueFor(u, seq))), TDB_OK);
                done[w].store(i + 1, std::memory_order_release);
            }
            writers_left--;
        });
    }
    std::atomic<long> scans{0}, gets{0};
    for (int r = 0; r < 2; r++) {
        th.emplace_back([&, r] {
            std::mt19937 rng(100 + r);
            readers_ready++;
            while (writers_left.load() > 0) {
                // Every published key must be found, complete.
                for (int k = 0; k < 200; k++) {
                    int w = rng() % kWriters;
                    int n = done[w].load(std::memory_order_acquire);
                    if (n == 0) continue;
                    int i = rng() % n;
                    std::string u = key_of(w, i);
                    uint64_t seq = (uint64_t)i * kWriters + w + 1;
                    Got g = Get(m, u, SEQ_MAX);
                    ASSERT_EQ(g.found, 1) << u;
                    ASSERT_EQ(g.seq, seq);
                    ASSERT_EQ(g.value, ValueFor(u, seq));
                    gets++;
                }
                // An iterator is strictly ordered and sees at least what was
                // published before it was created.
                int before = done[0].load(std::memory_order_acquire) + done[1].load(std::memory_order_acquire);
                iter_t *it = memtable_iter(m);
                std::string prev;
                int count = 0;
                bool fwd = (scans.load() + r) % 2 == 0;
                for (fwd ? iter_seek_to_first(it) : iter_seek_to_last(it); iter_valid(it);
                     fwd ? iter_next(it) : iter_prev(it)) {
                    std::string k = Str(iter_key(it));
                    if (count > 0) {
                        int c = ikey_compare(Sl(prev), Sl(k));
                        ASSERT_TRUE(fwd ? c < 0 : c > 0) << "iterator out of order";
                    }
                    prev = k;
                    count++;
                }
                iter_destroy(it);
                ASSERT_GE(count, before);
                if (count < kWriters * kPer) partial_scans++;
                scans++;
            }
        });
    }
    for (auto &x : th) x.join();
    EXPECT_GT(scans.load(), 0);
    EXPECT_GT(gets.load(), 0);
    RecordProperty("scans", (int)scans.load());
    RecordProperty("partial_scans", (int)partial_scans.load());
    RecordProperty("gets", (int)gets.load());
    EXPECT_EQ(memtable_num_entries(m), (uint64_t)kWriters * kPer);
    memtable_unref(m);
}

// ---------------------------------------------------------------------------
// Accounting and lifetime
// ---------------------------------------------------------------------------

TEST(Memtable, MemoryUsageGrowsWithData) {
    memtable_t *m = memtable_create();
    size_t empty = memtable_memory_usage(m);
    EXPECT_GT(empty, 0u);
    EXPECT_LE(empty, 8192u) << "an empty memtable should stay small";
    size_t last = empty, raw = 0;
    std::string v(100, 'v');
    for (int i = 0; i < 20000; i++) {
        std::string u = tdbtest::Key(i);
        ASSERT_EQ(memtable_add(m, i + 1, KT_PUT, Sl(u), Sl(v)), TDB_OK);
        raw += u.size() + 8 + v.size();
        size_t now = memtable_memory_usage(m);
        ASSERT_GE(now, last);
        last = now;
    }
    EXPECT_GE(last, raw);
    EXPECT_LT(last, raw * 3 / 2 + 512 * 1024) << "overhead per entry too high";
    memtable_unref(m);
}

TEST(Memtable, IteratorKeepsMemtableAlive) {
    memtable_t *m = memtable_create();
    for (int i = 0; i < 1000; i++)
        ASSERT_EQ(memtable_add(m, i + 1, KT_PUT, Sl(tdbtest::Key(i)), Sl(tdbtest::Value(i, 50))), TDB_OK);
    memtable_ref(m);
    memtable_unref(m);  // back to one reference
    iter_t *it = memtable_iter(m);
    memtable_unref(m);  // the iterator's reference is now the last
    int n = 0;
    for (iter_seek_to_first(it); iter_valid(it); iter_next(it), n++) {
        slice_t k = iter_key(it);
        ASSERT_EQ(Str(ikey_user(k)), tdbtest::Key(n));
        ASSERT_EQ(Str(iter_value(it)), tdbtest::Value(n, 50));
    }
    EXPECT_EQ(n, 1000);
    iter_seek(it, Sl(IKey(tdbtest::Key(500), SEQ_MAX, KT_SEEK)));
    ASSERT_TRUE(iter_valid(it));
    EXPECT_EQ(Str(ikey_user(iter_key(it))), tdbtest::Key(500));
    iter_destroy(it);  // frees the memtable (ASan/LSan check)
}

TEST(Memtable, EmptyIteratorAndShortSeekTarget) {
    memtable_t *m = memtable_create();
    iter_t *it = memtable_iter(m);
    iter_seek_to_first(it);
    EXPECT_FALSE(iter_valid(it));
    iter_seek_to_last(it);
    EXPECT_FALSE(iter_valid(it));
    iter_seek(it, Sl(IKey("a", 1, KT_SEEK)));
    EXPECT_FALSE(iter_valid(it));
    ASSERT_EQ(memtable_add(m, 1, KT_PUT, Sl("abc"), Sl("1")), TDB_OK);
    ASSERT_EQ(memtable_add(m, 2, KT_PUT, Sl("b"), Sl("2")), TDB_OK);
    // A target shorter than a trailer is taken as a bare user key.
    iter_seek(it, Sl("ab"));
    ASSERT_TRUE(iter_valid(it));
    EXPECT_EQ(Str(ikey_user(iter_key(it))), "abc");
    iter_prev(it);
    EXPECT_FALSE(iter_valid(it));
    EXPECT_EQ(iter_status(it), TDB_OK);
    iter_destroy(it);
    memtable_unref(m);
}

TEST(Memtable, RangeTombstonesApartFromPoints) {
    memtable_t *m = memtable_create();
    ASSERT_EQ(memtable_add(m, 5, KT_PUT, Sl("a"), Sl("a5")), TDB_OK);
    ASSERT_EQ(memtable_add(m, 7, KT_RANGE_DELETE, Sl("a"), Sl("c")), TDB_OK);
    ASSERT_EQ(memtable_add(m, 8, KT_PUT, Sl("b"), Sl("b8")), TDB_OK);
    ASSERT_EQ(memtable_add(m, 9, KT_RANGE_DELETE, Sl("b"), Sl("e")), TDB_OK);
    ASSERT_EQ(memtable_add(m, 10, KT_PUT, Sl("e"), Sl("e10")), TDB_OK);
    EXPECT_EQ(5u, memtable_num_entries(m));
    EXPECT_EQ(2u, memtable_num_range_deletes(m));
    EXPECT_EQ(0u, memtable_num_deletes(m));
    // Point lookups step over tombstones starting at the key.
    unsigned type;
    uint64_t seq;
    slice_t v;
    ASSERT_EQ(1, memtable_get(m, Sl("a"), 100, &type, &seq, &v));
    EXPECT_EQ(5u, seq);
    EXPECT_EQ("a5", Str(v));
    ASSERT_EQ(1, memtable_get(m, Sl("b"), 100, &type, &seq, &v));
    EXPECT_EQ(8u, seq);
    EXPECT_EQ(0, memtable_get(m, Sl("c"), 100, &type, &seq, &v));
    // Covering tombstones, per snapshot; ends are exclusive.
    EXPECT_EQ(7u, memtable_range_del_seq(m, Sl("a"), 100));
    EXPECT_EQ(0u, memtable_range_del_seq(m, Sl("a"), 6));
    EXPECT_EQ(9u, memtable_range_del_seq(m, Sl("b"), 100));
    EXPECT_EQ(7u, memtable_range_del_seq(m, Sl("b"), 8));
    EXPECT_EQ(9u, memtable_range_del_seq(m, Sl("d\xff"), 100));
    EXPECT_EQ(0u, memtable_range_del_seq(m, Sl("e"), 100));
    EXPECT_EQ(0u, memtable_range_del_seq(m, Sl("0"), 100));
    // Enumeration.
    std::vector<std::string> seen;
    auto fn = [](void *ctx, slice_t s, slice_t e, uint64_t q) {
        ((std::vector<std::string> *)ctx)->push_back(Str(s) + ".." + Str(e) + "@" + std::to_string(q));
        return (int)TDB_OK;
    };
    ASSERT_EQ(TDB_OK, memtable_range_dels(m, fn, &seen));
    std::sort(seen.begin(), seen.end());
    EXPECT_EQ((std::vector<std::string>{"a..c@7", "b..e@9"}), seen);
    auto stop = [](void *, slice_t, slice_t, uint64_t) { return (int)TDB_ERR_ABORTED; };
    EXPECT_EQ(TDB_ERR_ABORTED, memtable_range_dels(m, stop, nullptr));
    // The iterator returns them in internal-key order with the points.
    std::vector<std::string> order;
    iter_t *it = memtable_iter(m);
    for (iter_seek_to_first(it); iter_valid(it); iter_next(it))
        order.push_back(Str(ikey_user(iter_key(it))) + "@" + std::to_string(ikey_seq(iter_key(it))) + "/" +
                        std::to_string(ikey_type(iter_key(it))));
    iter_destroy(it);
    EXPECT_EQ((std::vector<std::string>{"a@7/3", "a@5/1", "b@9/3", "b@8/1", "e@10/1"}), order);
    memtable_unref(m);
}

TEST(Memtable, ConcurrentRangeTombstonesAreSeenWhole) {
    memtable_t *m = memtable_create();
    const int kWriters = 3, kPer = 3000;
    std::atomic<bool> done{false};
    std::atomic<int> bad{0};
    std::thread reader([&] {
        while (!done.load()) {
            auto fn = [](void *ctx, slice_t s, slice_t e, uint64_t q) {
                // start = "s<seq>", end = start + "~": must be intact.
                std::string want = "s" + std::to_string(q);
                if (Str(s) != want || Str(e) != want + "~") ((std::atomic<int> *)ctx)->fetch_add(1);
                return (int)TDB_OK;
            };
            memtable_range_dels(m, fn, &bad);
            memtable_range_del_seq(m, Sl("s5"), SEQ_MAX);
        }
    });
    std::vector<std::thread> ws;
    for (int w = 0; w < kWriters; w++) {
        ws.emplace_back([&, w] {
            for (int i = 0; i < kPer; i++) {
                uint64_t q = (uint64_t)(w * kPer + i + 1);
                std::string s = "s" + std::to_string(q);
                ASSERT_EQ(TDB_OK, memtable_add(m, q, KT_RANGE_DELETE, Sl(s), Sl(s + "~")));
            }
        });
    }
    for (auto &t : ws) t.join();
    done = true;
    reader.join();
    EXPECT_EQ(0, bad.load());
    EXPECT_EQ((uint64_t)kWriters * kPer, memtable_num_range_deletes(m));
    EXPECT_EQ(7u, memtable_range_del_seq(m, Sl("s7"), SEQ_MAX));
    memtable_unref(m);
}

// A hot key's versions form a run; skiplist_run_end must stay inside the
// run at or after its node, also when writers insert versions of a key out
// of sequence order (concurrent writers, lower sequence inserted later).
// Then next_user_key and seek_forward from any position must land where a
// fresh seek does, for targets past a whole run (what a scan skipping older
// versions asks), inside a run (the newest version a snapshot may see) and
// far away.
TEST(Memtable, VersionRunsAndSeekForward) {
    memtable_t *m = memtable_create();
    const int kThreads = 4, kPer = 6000, kKeys = 150;
    std::vector<std::thread> th;
    std::atomic<int> failures{0};
    for (int t = 0; t < kThreads; t++) {
        th.emplace_back([&, t] {
            std::mt19937_64 rng(1000 + t);
            memtable_hint_t hint;
            memtable_hint_init(&hint);
            for (int i = 0; i < kPer; i++) {
                // Skewed: a few keys get most versions.
                uint64_t r = rng() % 1000;
                uint64_t k = r < 700 ? r % 5 : r % kKeys;
                uint64_t seq = (uint64_t)i * kThreads + t + 1;
                std::string u = tdbtest::Key(k * 7919);
                int rc = (i % 2) ? memtable_add(m, seq, KT_PUT, Sl(u), Sl(ValueFor(u, seq)))
                                 : memtable_add_hint(m, &hint, seq, KT_PUT, Sl(u), Sl(ValueFor(u, seq)));
                if (rc != TDB_OK) failures++;
            }
        });
    }
    for (auto &x : th) x.join();
    ASSERT_EQ(failures.load(), 0);

    // run_end invariant, node by node.
    const char *n = skiplist_first(memtable_skiplist(m));
    size_t nodes = 0, jumps = 0;
    for (; n; n = skiplist_next(n), nodes++) {
        slice_t user = ikey_user(skiplist_entry_key(n, NULL));
        const char *end = skiplist_run_end(n);
        if (end != n) jumps++;
        const char *x = n;
        while (x != end) {
            x = skiplist_next(x);
            ASSERT_NE(x, nullptr) << "run end not after its node";
            ASSERT_TRUE(slice_equal(ikey_user(skiplist_entry_key(x, NULL)), user)) << "run end outside the run";
        }
    }
    ASSERT_EQ(nodes, (size_t)kThreads * kPer);
    ASSERT_GT(jumps, nodes / 2);  // hot keys: most nodes know a later version of their key

    // seek_forward == seek from random positions to random later targets.
    std::vector<std::string> keys;
    iter_t *all = memtable_iter(m);
    for (iter_seek_to_first(all); iter_valid(all); iter_next(all)) keys.push_back(Str(iter_key(all)));
    iter_destroy(all);
    std::mt19937_64 rng(7);
    iter_t *a = memtable_iter(m), *b = memtable_iter(m);
    for (int round = 0; round < 20000; round++) {
        size_t from = rng() % keys.size();
        slice_t fk = Sl(keys[from]);
        std::string user = Str(ikey_user(fk)), target;
        switch (round % 4) {
            case 0: target = IKey(user, 0, 0); break;  // past the whole run
            case 1: target = IKey(user, ikey_seq(fk) > 3 ? ikey_seq(fk) - 3 : 0, KT_SEEK); break;  // inside it
            case 2: target = keys[std::min(keys.size() - 1, from + 1 + rng() % 40)]; break;
            default: target = IKey(tdbtest::Key(rng() % (kKeys * 7919 + 1)), rng() % 30000, KT_SEEK); break;
        }
        // next_user_key: past every version of the key, as a seek past them.
        iter_seek(a, fk);
        a->ops->next_user_key(a, ikey_user(fk));
        iter_seek(b, Sl(IKey(user, 0, 0)));
        ASSERT_EQ(iter_valid(a), iter_valid(b)) << round;
        if (iter_valid(b)) {
            ASSERT_EQ(Str(iter_key(a)), Str(iter_key(b))) << round;
        }
        if (ikey_compare(Sl(target), fk) <= 0) continue;  // seek_forward needs a target ahead
        iter_seek(a, fk);
        ASSERT_TRUE(iter_valid(a));
        iter_seek_forward(a, Sl(target));
        iter_seek(b, Sl(target));
        ASSERT_EQ(iter_valid(a), iter_valid(b)) << round;
        if (iter_valid(b)) {
            ASSERT_EQ(Str(iter_key(a)), Str(iter_key(b))) << round;
        }
    }
    iter_destroy(a);
    iter_destroy(b);
    memtable_unref(m);
}

namespace {

// A sorted vector of internal keys as an iterator without next_user_key, to
// merge with memtables (which have one).
struct IkeyVec {
    iter_t base;
    std::vector<std::string> keys;  // sorted by IkeyLess
    long pos;
};
IkeyVec *IV(const iter_t *it) { return (IkeyVec *)(uintptr_t)it; }
int IvValid(const iter_t *it) { return IV(it)->pos >= 0 && IV(it)->pos < (long)IV(it)->keys.size(); }
void IvFirst(iter_t *it) { IV(it)->pos = 0; }
void IvLast(iter_t *it) { IV(it)->pos = (long)IV(it)->keys.size() - 1; }
void IvSeek(iter_t *it, slice_t t) {
    auto &k = IV(it)->keys;
    IV(it)->pos = std::lower_bound(k.begin(), k.end(), Str(t), IkeyLess) - k.begin();
}
void IvNext(iter_t *it) { IV(it)->pos++; }
void IvPrev(iter_t *it) { IV(it)->pos--; }
slice_t IvKey(const iter_t *it) { return Sl(IV(it)->keys[IV(it)->pos]); }
slice_t IvValue(const iter_t *it) { return slice_make("", 0); }
int IvStatus(const iter_t *) { return TDB_OK; }
void IvDestroy(iter_t *it) { delete IV(it); }
const iter_ops_t kIvOps = {IvValid, IvFirst, IvLast, IvSeek, IvNext, IvPrev, IvKey, IvValue, IvStatus, IvDestroy,
                           nullptr, nullptr, nullptr, nullptr};

}  // namespace

// The merge's next_user_key (memtable children jump their runs, the others
// step) lands where stepping with next() until the user key changes does,
// after forward and backward moves alike.
TEST(Memtable, MergeNextUserKeyMatchesStepping) {
    std::mt19937_64 rng(5);
    std::vector<memtable_t *> mems;
    std::vector<std::vector<std::string>> vecs(2);
    uint64_t seq = 1;
    for (int i = 0; i < 3; i++) mems.push_back(memtable_create());
    for (int i = 0; i < 20000; i++) {
        uint64_t r = rng() % 100;
        std::string u = tdbtest::Key(r < 60 ? r % 4 : r);  // hot keys and cold ones
        size_t child = rng() % 5;
        if (child < 3) {
            ASSERT_EQ(memtable_add(mems[child], seq++, KT_PUT, Sl(u), Sl("v")), TDB_OK);
        } else {
            vecs[child - 3].push_back(IKey(u, seq++, KT_PUT));
        }
    }
    auto build = [&]() {
        std::vector<iter_t *> kids;
        for (auto *m : mems) kids.push_back(memtable_iter(m));
        for (auto &v : vecs) {
            IkeyVec *iv = new IkeyVec;
            iv->base.ops = &kIvOps;
            iv->keys = v;
            std::sort(iv->keys.begin(), iv->keys.end(), IkeyLess);
            iv->pos = 0;
            kids.push_back(&iv->base);
        }
        return iter_merge(kids.data(), (int)kids.size(), ikey_compare);
    };
    iter_t *a = build(), *b = build();
    int jumps = 0;
    iter_seek_to_first(a);
    iter_seek_to_first(b);
    for (int step = 0; step < 20000; step++) {
        if (!iter_valid(b)) {  // walked off an end: start over
            ASSERT_FALSE(iter_valid(a)) << step;
            iter_seek_to_first(a);
            iter_seek_to_first(b);
        }
        ASSERT_TRUE(iter_valid(a));
        ASSERT_EQ(Str(iter_key(a)), Str(iter_key(b))) << step;
        uint64_t op = rng() % 10;
        if (op < 5) {
            std::string user = Str(ikey_user(iter_key(b)));
            a->ops->next_user_key(a, Sl(user));
            do {
                iter_next(b);
            } while (iter_valid(b) && Str(ikey_user(iter_key(b))) == user);
            jumps++;
        } else if (op < 8) {
            iter_next(a);
            iter_next(b);
        } else {
            iter_prev(a);
            iter_prev(b);
        }
        ASSERT_EQ(iter_valid(a), iter_valid(b)) << step;
    }
    EXPECT_GT(jumps, 1000);
    iter_destroy(a);
    iter_destroy(b);
    for (auto *m : mems) memtable_unref(m);
}

// The range estimate: exact while a range holds fewer than 64 entries (the
// count then reaches level 0, walked in stretches between the level-1
// nodes), within 2x above, for every kind of bound.
TEST(Memtable, ApproxCountExactForSmallRangesWithin2xAbove) {
    Populated p(100000, 17);
    std::vector<std::string> users = p.users;
    std::sort(users.begin(), users.end());
    users.erase(std::unique(users.begin(), users.end()), users.end());
    auto entries_below = [&](const std::string &u) {  // entries with a user key < u
        return (uint64_t)(std::lower_bound(p.ref.begin(), p.ref.end(), IKey(u, SEQ_MAX, KT_SEEK), IkeyLess) -
                          p.ref.begin());
    };
    std::mt19937 rng(3);
    int exact_checked = 0, scaled_checked = 0;
    for (int r = 0; r < 4000; r++) {
        size_t a = rng() % users.size();
        size_t w = 1 + rng() % (r % 4 == 0 ? 3000 : 40);
        if (a + w >= users.size()) continue;
        slice_t lo = Sl(users[a]), hi = Sl(users[a + w]);
        uint64_t want = entries_below(users[a + w]) - entries_below(users[a]);
        uint64_t got = memtable_approx_entries(p.m, &lo, &hi);
        if (want < 64) {
            ASSERT_EQ(got, want) << "users [" << a << ", " << a + w << ")";
            exact_checked++;
        } else {
            ASSERT_LE(got, want * 2) << "users [" << a << ", " << a + w << ")";
            ASSERT_GE(got * 2, want) << "users [" << a << ", " << a + w << ")";
            scaled_checked++;
        }
    }
    EXPECT_GT(exact_checked, 1000);
    EXPECT_GT(scaled_checked, 300);
    // Open bounds.
    slice_t mid = Sl(users[users.size() / 2]);
    uint64_t below = entries_below(users[users.size() / 2]);
    uint64_t got_lo = memtable_approx_entries(p.m, nullptr, &mid), got_hi = memtable_approx_entries(p.m, &mid, nullptr);
    EXPECT_LE(got_lo, below * 2);
    EXPECT_GE(got_lo * 2, below);
    EXPECT_LE(got_hi, (p.ref.size() - below) * 2);
    EXPECT_GE(got_hi * 2, p.ref.size() - below);
}

// Counting while writers insert: a range that ends with 50 entries is
// counted exactly at every moment, so the count never falls and never
// exceeds what has been inserted; the stretches end at nodes that are
// already linked, whatever lands between them.
TEST(Memtable, ApproxCountWhileWritersInsert) {
    memtable_t *m = memtable_create();
    const int kWriters = 3, kPer = 20000;
    auto key = [](int i) {
        char b[16];
        snprintf(b, sizeof b, "k%07d", i);
        return std::string(b);
    };
    const std::string lo = key(30000), hi = key(30050);
    std::atomic<int> running{kWriters};
    std::vector<std::thread> th;
    for (int w = 0; w < kWriters; w++) {
        th.emplace_back([&, w] {
            for (int i = 0; i < kPer; i++) {
                int k = i * kWriters + w;  // the writers interleave over the key space
                std::string u = key(k);
                EXPECT_EQ(memtable_add(m, (uint64_t)k + 1, KT_PUT, Sl(u), Sl(u)), TDB_OK);
            }
            running--;
        });
    }
    uint64_t last = 0;
    long rounds = 0;
    slice_t l = Sl(lo), h = Sl(hi);
    while (running.load() > 0 || rounds == 0) {
        uint64_t n = memtable_approx_entries(m, &l, &h);
        ASSERT_GE(n, last) << "round " << rounds;
        ASSERT_LE(n, 50u) << "round " << rounds;
        last = n;
        rounds++;
    }
    for (auto &t : th) t.join();
    EXPECT_EQ(memtable_approx_entries(m, &l, &h), 50u);
    memtable_unref(m);
}
