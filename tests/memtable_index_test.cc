// The memtable's point index (memtable/memtable.h, "Point index"): the
// hash of user keys to their newest point entry that memtable_get probes
// instead of descending the skip list.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "memtable_testutil.h"
#include "testutil.h"

extern "C" {
#include "memtable/memtable.h"
#include "util/coding.h"
#include "util/error.h"
#include "util/ikey.h"
}

using memtable_testutil::Get;
using memtable_testutil::Got;
using memtable_testutil::Sl;
using memtable_testutil::ValueFor;

// The point index (memtable.h): hot keys updated by racing writers keep
// their newest version indexed, and lookups at older snapshots (also past
// MT_INDEX_MAX_STEPS newer versions, where the lookup descends) match a
// reference.
TEST(Memtable, PointIndexHotKeysRacingWriters) {
    memtable_t *m = memtable_create();
    const int kWriters = 3, kKeys = 8, kRounds = 3000;
    std::atomic<uint64_t> published[kKeys];
    for (auto &p : published) p.store(0);
    std::atomic<int> writers_left{kWriters}, reader_ready{0};
    std::vector<std::thread> th;
    for (int w = 0; w < kWriters; w++) {
        th.emplace_back([&, w] {
            while (!reader_ready.load()) std::this_thread::yield();
            for (int r = 0; r < kRounds; r++) {
                if (r % 64 == 0) std::this_thread::yield();  // let the reader in on a busy machine
                int k = (r + w) % kKeys;
                std::string u = "hot" + std::to_string(k);
                uint64_t seq = ((uint64_t)r * kWriters + w) + 1;
                ASSERT_EQ(memtable_add(m, seq, r % 5 == 4 ? KT_DELETE : KT_PUT, Sl(u), Sl(ValueFor(u, seq))),
                          TDB_OK);
                uint64_t cur = published[k].load();
                while (cur < seq && !published[k].compare_exchange_weak(cur, seq)) {
                }
            }
            writers_left--;
        });
    }
    std::atomic<long> gets{0};
    th.emplace_back([&] {
        std::mt19937 rng(5);
        reader_ready = 1;
        while (writers_left.load() > 0) {
            int k = rng() % kKeys;
            uint64_t want = published[k].load();  // added before this get began
            Got g = Get(m, "hot" + std::to_string(k), SEQ_MAX);
            if (want == 0) continue;
            ASSERT_EQ(g.found, 1);
            ASSERT_GE(g.seq, want) << "an added version was not found";
            gets++;
        }
    });
    for (auto &x : th) x.join();
    EXPECT_GT(gets.load(), 0);
    // Reference: every (key, seq) added.
    std::vector<std::set<uint64_t>> seqs(kKeys);
    for (int w = 0; w < kWriters; w++)
        for (int r = 0; r < kRounds; r++) seqs[(r + w) % kKeys].insert((uint64_t)r * kWriters + w + 1);
    std::mt19937 rng(6);
    for (int s = 0; s < 20000; s++) {
        int k = rng() % kKeys;
        uint64_t snap = rng() % (kRounds * kWriters + 10);
        if (s % 4 == 0) snap = *seqs[k].rbegin() - rng() % 40;  // a few versions back
        auto it = seqs[k].upper_bound(snap);
        Got g = Get(m, "hot" + std::to_string(k), snap);
        if (it == seqs[k].begin()) {
            ASSERT_EQ(g.found, 0) << k << "@" << snap;
            continue;
        }
        uint64_t want = *std::prev(it);
        ASSERT_EQ(g.found, 1) << k << "@" << snap;
        ASSERT_EQ(g.seq, want) << k << "@" << snap;
        uint64_t r = (want - 1) / kWriters;
        ASSERT_EQ(g.type, (unsigned)(r % 5 == 4 ? KT_DELETE : KT_PUT));
    }
    EXPECT_EQ(Get(m, "hot", SEQ_MAX).found, 0);
    EXPECT_EQ(Get(m, "hot99", SEQ_MAX).found, 0);
    memtable_unref(m);
}

// The point index answers "no entry" from a bucket's filter: whether its
// buckets hold one key each or hundreds (a filter with every bit set), a
// key added is found at every version and a key never added is not, also
// when it shares a bucket, and versions added through the index's link
// (memtable_add of a newer version) as well as plain inserts.
TEST(Memtable, PointIndexFindsEveryKeyAtAnyLoad) {
    for (size_t capacity : {(size_t)1 << 30, (size_t)1 << 16}) {  // 128K buckets, 1K buckets
        memtable_t *m = memtable_create_sized(capacity);
        const uint64_t kKeys = 60000;
        auto key = [](uint64_t i) { return tdbtest::Key(i * 2); };  // odd numbers are never added
        uint64_t seq = 1;
        for (uint64_t i = 0; i < kKeys; i++) {
            std::string u = key(i);
            ASSERT_EQ(memtable_add(m, seq, KT_PUT, Sl(u), Sl(ValueFor(u, seq))), TDB_OK);
            seq++;
        }
        for (uint64_t i = 0; i < kKeys; i += 3) {  // a second version of every third key
            std::string u = key(i);
            ASSERT_EQ(memtable_add(m, seq, KT_PUT, Sl(u), Sl(ValueFor(u, seq))), TDB_OK);
            seq++;
        }
        for (uint64_t i = 0; i < kKeys; i++) {
            std::string u = key(i);
            uint64_t newest = i % 3 == 0 ? kKeys + 1 + i / 3 : i + 1;
            Got g = Get(m, u, SEQ_MAX);
            ASSERT_EQ(g.found, 1) << u << " capacity " << capacity;
            ASSERT_EQ(g.seq, newest) << u;
            ASSERT_EQ(g.value, ValueFor(u, newest)) << u;
            Got first = Get(m, u, i + 1);  // the first version, older than the second
            ASSERT_EQ(first.found, 1) << u;
            ASSERT_EQ(first.seq, i + 1) << u;
            std::string absent = tdbtest::Key(i * 2 + 1);
            ASSERT_EQ(Get(m, absent, SEQ_MAX).found, 0) << absent << " capacity " << capacity;
        }
        memtable_unref(m);
    }
}

// A key whose only entries are range tombstones (starting at it) has no
// point entry: not found, before and after a point entry of a neighbour.
// The smallest point index (1,024 buckets) holding 20 times as many keys:
// long bucket chains, keys with more versions than a lookup steps over
// (it descends instead), and absent keys that share buckets with present
// ones. Every get agrees with a reference at every snapshot tried.
TEST(Memtable, PointIndexLongChainsAgreeWithReference) {
    memtable_t *m = memtable_create_sized(0);
    ASSERT_NE(m, nullptr);
    std::map<std::string, std::map<uint64_t, unsigned>> ref;  // key -> seq -> type
    std::mt19937 rng(11);
    uint64_t seq = 0;
    for (int i = 0; i < 20000; i++) {
        std::string u = "key" + std::to_string(rng() % 12000);
        unsigned type = rng() % 7 == 0 ? KT_DELETE : KT_PUT;
        seq++;
        ASSERT_EQ(memtable_add(m, seq, type, Sl(u), Sl(ValueFor(u, seq))), TDB_OK);
        ref[u][seq] = type;
    }
    for (int v = 0; v < 40; v++) {  // a hot key: more versions than MT_INDEX_MAX_STEPS
        seq++;
        ASSERT_EQ(memtable_add(m, seq, KT_PUT, Sl("hot"), Sl(ValueFor("hot", seq))), TDB_OK);
        ref["hot"][seq] = KT_PUT;
    }
    auto check = [&](const std::string &u, uint64_t snap) {
        Got g = Get(m, u, snap);
        auto it = ref.find(u);
        const std::map<uint64_t, unsigned> *vs = it == ref.end() ? nullptr : &it->second;
        auto newest = vs ? vs->upper_bound(snap) : std::map<uint64_t, unsigned>::const_iterator();
        if (!vs || newest == vs->begin()) {
            ASSERT_EQ(g.found, 0) << u << " at " << snap;
            return;
        }
        --newest;
        ASSERT_EQ(g.found, 1) << u << " at " << snap;
        ASSERT_EQ(g.seq, newest->first) << u << " at " << snap;
        ASSERT_EQ(g.type, newest->second) << u << " at " << snap;
        if (g.type == KT_PUT) {
            ASSERT_EQ(g.value, ValueFor(u, g.seq));
        }
    };
    for (int k = 0; k < 13000; k++) {  // 12,000 written (most of them), 1,000 never
        std::string u = "key" + std::to_string(k);
        check(u, SEQ_MAX);
        check(u, 1 + rng() % seq);
    }
    for (uint64_t snap = seq - 45; snap <= seq; snap++) check("hot", snap);
    memtable_unref(m);
}

TEST(Memtable, PointIndexSkipsRangeTombstones) {
    memtable_t *m = memtable_create();
    ASSERT_EQ(memtable_add(m, 5, KT_RANGE_DELETE, Sl("k"), Sl("m")), TDB_OK);
    EXPECT_EQ(Get(m, "k", SEQ_MAX).found, 0);
    ASSERT_EQ(memtable_add(m, 3, KT_PUT, Sl("k"), Sl("v3")), TDB_OK);
    ASSERT_EQ(memtable_add(m, 7, KT_RANGE_DELETE, Sl("k"), Sl("n")), TDB_OK);
    ASSERT_EQ(memtable_add(m, 6, KT_PUT, Sl("kk"), Sl("v6")), TDB_OK);
    Got g = Get(m, "k", SEQ_MAX);
    ASSERT_EQ(g.found, 1);
    EXPECT_EQ(g.seq, 3u);
    EXPECT_EQ(g.value, "v3");
    EXPECT_EQ(Get(m, "k", 2).found, 0);
    EXPECT_EQ(Get(m, "kk", 5).found, 0);
    EXPECT_EQ(Get(m, "kk", 6).seq, 6u);
    memtable_unref(m);
}

// New versions of indexed keys link next to their key's newest entry, from
// its predecessor hint, without a descent (memtable_add, memtable_add_sorted).
// Racing writers update keys both ways and add new keys in between, while a
// reader walks the list backwards (skiplist_prev, from the same hints):
// every walk is in strictly descending order. At the end the list holds
// exactly the entries added, in order both ways, and gets agree.
TEST(Memtable, NewVersionsLinkBesideTheirKeyUnderRacingWriters) {
    memtable_t *m = memtable_create_sized(0);
    ASSERT_NE(m, nullptr);
    const int kKeys = 3000, kWriters = 3, kOps = 6000;
    std::atomic<uint64_t> next_seq{1};
    std::vector<std::vector<std::pair<std::string, uint64_t>>> added(kWriters + 1);
    for (int k = 0; k < kKeys; k += 2) {  // even keys exist before the race
        std::string u = "k" + std::to_string(100000 + k);
        uint64_t s = next_seq++;
        ASSERT_EQ(memtable_add(m, s, KT_PUT, Sl(u), Sl(ValueFor(u, s))), TDB_OK);
        added[kWriters].push_back({u, s});
    }
    std::atomic<int> writers_left{kWriters}, failures{0}, reader_ready{0};
    std::vector<std::thread> th;
    for (int w = 0; w < kWriters; w++) {
        th.emplace_back([&, w] {
            std::mt19937 rng(70 + w);
            while (!reader_ready.load()) std::this_thread::yield();
            for (int i = 0; i < kOps;) {
                if (i % 64 == 0) std::this_thread::yield();  // let the reader in on a busy machine
                if (w == 0 && i % 200 == 0) {  // a sorted batch of 40 (lanes and the hinted path)
                    std::set<std::string> ks;
                    while (ks.size() < 40) ks.insert("k" + std::to_string(100000 + rng() % kKeys));
                    uint64_t s0 = next_seq.fetch_add(40);
                    std::vector<memtable_item_t> items;
                    std::vector<std::string> keys(ks.begin(), ks.end()), vals;
                    for (size_t j = 0; j < keys.size(); j++) vals.push_back(ValueFor(keys[j], s0 + j));
                    for (size_t j = 0; j < keys.size(); j++) {
                        items.push_back({s0 + j, KT_PUT, Sl(keys[j]), Sl(vals[j])});
                        added[w].push_back({keys[j], s0 + j});
                    }
                    if (memtable_add_sorted(m, items.data(), items.size()) != TDB_OK) failures++;
                    i += 40;
                    continue;
                }
                std::string u = "k" + std::to_string(100000 + rng() % kKeys);
                uint64_t s = next_seq++;
                if (memtable_add(m, s, KT_PUT, Sl(u), Sl(ValueFor(u, s))) != TDB_OK) failures++;
                added[w].push_back({u, s});
                i++;
            }
            writers_left--;
        });
    }
    th.emplace_back([&] {
        reader_ready = 1;
        do {
            iter_t *it = memtable_iter(m);
            std::string after;
            for (iter_seek_to_last(it); iter_valid(it); iter_prev(it)) {
                std::string k(iter_key(it).data, iter_key(it).size);
                if (!after.empty() && ikey_compare(Sl(k), Sl(after)) >= 0) failures++;
                after = k;
            }
            iter_destroy(it);
        } while (writers_left.load() > 0);
    });
    for (auto &x : th) x.join();
    ASSERT_EQ(failures.load(), 0);
    // The reference: every (key, seq), in internal-key order.
    std::map<std::string, std::set<uint64_t>> ref;
    std::vector<std::string> order;
    for (auto &v : added)
        for (auto &[u, s] : v) ref[u].insert(s);
    for (auto &[u, ss] : ref)
        for (auto s = ss.rbegin(); s != ss.rend(); ++s) order.push_back(u + "@" + std::to_string(*s));
    auto name = [](slice_t k) { return std::string(ikey_user(k).data, ikey_user(k).size) + "@" + std::to_string(ikey_seq(k)); };
    iter_t *it = memtable_iter(m);
    size_t i = 0;
    for (iter_seek_to_first(it); iter_valid(it); iter_next(it), i++) {
        ASSERT_LT(i, order.size());
        ASSERT_EQ(name(iter_key(it)), order[i]);
    }
    ASSERT_EQ(i, order.size());
    for (iter_seek_to_last(it); iter_valid(it); iter_prev(it)) ASSERT_EQ(name(iter_key(it)), order[--i]);
    ASSERT_EQ(i, 0u);
    iter_destroy(it);
    for (auto &[u, ss] : ref) {
        Got g = Get(m, u, SEQ_MAX);
        ASSERT_EQ(g.found, 1);
        ASSERT_EQ(g.seq, *ss.rbegin()) << u;
        ASSERT_EQ(g.value, ValueFor(u, g.seq));
    }
    memtable_unref(m);
}

// Gets on an empty memtable (the active one right after a flush) return
// before the index probe; the first entry, point or range tombstone, is
// seen by the next get, also by a reader racing the writer.
TEST(Memtable, GetOnEmptyAndAfterTheFirstEntry) {
    unsigned type;
    uint64_t seq;
    slice_t v;
    memtable_t *m = memtable_create();
    EXPECT_EQ(0, memtable_get(m, Sl("k"), 100, &type, &seq, &v));
    EXPECT_EQ(0, memtable_get(m, Sl(""), 100, &type, &seq, &v));
    ASSERT_EQ(memtable_add(m, 1, KT_RANGE_DELETE, Sl("a"), Sl("z")), TDB_OK);
    EXPECT_EQ(0, memtable_get(m, Sl("k"), 100, &type, &seq, &v)); // a range tombstone is no point entry
    EXPECT_EQ(1u, memtable_range_del_seq(m, Sl("k"), 100));
    ASSERT_EQ(memtable_add(m, 2, KT_PUT, Sl("k"), Sl("v2")), TDB_OK);
    ASSERT_EQ(1, memtable_get(m, Sl("k"), 100, &type, &seq, &v));
    EXPECT_EQ(2u, seq);
    EXPECT_EQ("v2", std::string(v.data, v.size));
    memtable_unref(m);

    for (int round = 0; round < 200; round++) {
        memtable_t *r = memtable_create();
        std::atomic<bool> added{false};
        std::atomic<int> misses_after{0};
        std::thread reader([&] {
            unsigned t;
            uint64_t q;
            slice_t val;
            for (;;) {
                bool was_added = added.load(std::memory_order_acquire);
                int got = memtable_get(r, Sl("key"), 100, &t, &q, &val);
                if (got == 1) {
                    EXPECT_EQ("val", std::string(val.data, val.size));
                    break;
                }
                if (was_added) { // the put had returned before this get began
                    misses_after++;
                    break;
                }
            }
        });
        ASSERT_EQ(memtable_add(r, 1, KT_PUT, Sl("key"), Sl("val")), TDB_OK);
        added.store(true, std::memory_order_release);
        reader.join();
        EXPECT_EQ(0, misses_after.load()) << "round " << round;
        memtable_unref(r);
    }
}

namespace {

std::string IKey(const std::string &user, uint64_t seq, unsigned type) {
    char trailer[IKEY_TRAILER];
    enc_fixed64(trailer, ikey_pack(seq, type));
    return user + std::string(trailer, IKEY_TRAILER);
}

bool IkeyLess(const std::string &a, const std::string &b) { return ikey_compare(Sl(a), Sl(b)) < 0; }

std::string Str(slice_t s) { return std::string(s.data, s.size); }

}  // namespace

// An iterator's seek before every version of a key (SEQ_MAX, KT_SEEK)
// starts from the index's entry when the key has one: the same position as
// a descent, for present and absent keys, and a step from there in either
// direction.
TEST(Memtable, PointIndexSeekMatchesReference) {
    memtable_t *m = memtable_create();
    std::mt19937 rng(31);
    std::vector<std::string> users, ref;
    for (int i = 0; i < 20000; i++) users.push_back("u" + std::to_string(rng() % 1000000));
    const unsigned types[] = {KT_PUT, KT_PUT, KT_DELETE, KT_PUT_TTL};
    std::vector<uint64_t> seqs(80000);
    for (size_t i = 0; i < seqs.size(); i++) seqs[i] = i + 1;
    std::shuffle(seqs.begin(), seqs.end(), rng);  // versions arrive out of order too
    for (uint64_t seq : seqs) {
        const std::string &u = users[rng() % users.size()];
        unsigned t = types[rng() % 4];
        ASSERT_EQ(memtable_add(m, seq, t, Sl(u), Sl(ValueFor(u, seq))), TDB_OK);
        ref.push_back(IKey(u, seq, t));
    }
    std::sort(ref.begin(), ref.end(), IkeyLess);
    iter_t *it = memtable_iter(m);
    auto expect_at = [&](long idx, const char *what) {
        bool in = idx >= 0 && idx < (long)ref.size();
        ASSERT_EQ(iter_valid(it) != 0, in) << what << " at " << idx;
        if (in) {
            ASSERT_EQ(Str(iter_key(it)), ref[idx]) << what << " at " << idx;
        }
    };
    for (size_t s = 0; s < users.size() && !HasFatalFailure(); s++) {
        std::string u = users[s];
        if (s % 3 == 0) u += "x";  // absent
        std::string target = IKey(u, SEQ_MAX, KT_SEEK);
        iter_seek(it, Sl(target));
        long idx = std::lower_bound(ref.begin(), ref.end(), target, IkeyLess) - ref.begin();
        expect_at(idx, "seek");
        if (!iter_valid(it)) continue;
        iter_next(it);
        expect_at(idx + 1, "next from the seek");
        iter_seek(it, Sl(target));
        iter_prev(it);
        expect_at(idx - 1, "prev from the seek");
    }
    iter_destroy(it);
    memtable_unref(m);
}

// Racing writers add versions of hot keys: a seek to a key's first version,
// then forward over versions newer than a snapshot (as the database's
// iterator does), lands on the newest version added before the seek began.
TEST(Memtable, PointIndexSeekRacingWriters) {
    memtable_t *m = memtable_create();
    const int kWriters = 2, kKeys = 4, kRounds = 4000;
    std::atomic<uint64_t> published[kKeys];
    for (auto &p : published) p.store(0);
    std::atomic<int> writers_left{kWriters};
    std::vector<std::thread> th;
    for (int w = 0; w < kWriters; w++) {
        th.emplace_back([&, w] {
            for (int r = 0; r < kRounds; r++) {
                if (r % 64 == 0) std::this_thread::yield();
                int k = (r + w) % kKeys;
                std::string u = "hot" + std::to_string(k);
                uint64_t seq = ((uint64_t)r * kWriters + w) + 1;
                ASSERT_EQ(memtable_add(m, seq, KT_PUT, Sl(u), Sl(ValueFor(u, seq))), TDB_OK);
                uint64_t cur = published[k].load();
                while (cur < seq && !published[k].compare_exchange_weak(cur, seq)) {
                }
            }
            writers_left--;
        });
    }
    long seeks = 0;
    std::mt19937 rng(7);
    iter_t *it = memtable_iter(m);
    while (writers_left.load() > 0 && !HasFatalFailure()) {
        int k = rng() % kKeys;
        std::string u = "hot" + std::to_string(k);
        uint64_t want = published[k].load();  // added before this seek began
        if (want == 0) continue;
        iter_seek(it, Sl(IKey(u, SEQ_MAX, KT_SEEK)));
        while (iter_valid(it) && Str(ikey_user(iter_key(it))) == u && ikey_seq(iter_key(it)) > want)
            iter_next(it);
        bool ok = iter_valid(it) && Str(ikey_user(iter_key(it))) == u && ikey_seq(iter_key(it)) == want;
        EXPECT_TRUE(ok) << u << ": not on the newest version added before the seek (" << want << ")";
        if (!ok) break; /* the writers are joined below either way */
        seeks++;
    }
    iter_destroy(it);
    for (auto &x : th) x.join();
    EXPECT_GT(seeks, 0);
    memtable_unref(m);
}

// A range tombstone starting at a key sorts before the key's point
// entries: with one in the memtable the seek descends and lands on it.
TEST(Memtable, PointIndexSeekMeetsARangeTombstone) {
    memtable_t *m = memtable_create();
    ASSERT_EQ(memtable_add(m, 5, KT_PUT, Sl("b"), Sl("b5")), TDB_OK);
    iter_t *it = memtable_iter(m);
    iter_seek(it, Sl(IKey("b", SEQ_MAX, KT_SEEK)));
    ASSERT_TRUE(iter_valid(it));
    EXPECT_EQ(ikey_seq(iter_key(it)), 5u);
    ASSERT_EQ(memtable_add(m, 9, KT_RANGE_DELETE, Sl("b"), Sl("d")), TDB_OK);
    ASSERT_EQ(memtable_add(m, 7, KT_PUT, Sl("b"), Sl("b7")), TDB_OK);
    iter_seek(it, Sl(IKey("b", SEQ_MAX, KT_SEEK)));
    ASSERT_TRUE(iter_valid(it));
    EXPECT_EQ(ikey_type(iter_key(it)), (unsigned)KT_RANGE_DELETE);
    EXPECT_EQ(ikey_seq(iter_key(it)), 9u);
    iter_next(it);
    ASSERT_TRUE(iter_valid(it));
    EXPECT_EQ(ikey_seq(iter_key(it)), 7u);
    iter_destroy(it);
    memtable_unref(m);
}
