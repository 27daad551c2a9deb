// The memtable's point index (memtable/memtable.h, "Point index"): the
// hash of user keys to their newest point entry that memtable_get probes
// instead of descending the skip list.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "memtable_testutil.h"

extern "C" {
#include "memtable/memtable.h"
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
