// Unit tests for cache: hits/misses, LRU order, pinning, capacity, replace,
// erase, deleter accounting, and concurrency (run the TSan build too).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

extern "C" {
#include "cache/cache.h"
}

namespace {

// Values are heap ints; the deleter records each one it frees.
struct Tracker {
    std::mutex mu;
    std::map<int, int> deleted;  // value -> times deleted
    std::atomic<int> total{0};
};

void Deleter(void *value, void *ctx) {
    Tracker *t = (Tracker *)ctx;
    int *v = (int *)value;
    {
        std::lock_guard<std::mutex> g(t->mu);
        t->deleted[*v]++;
    }
    t->total++;
    delete v;
}

class CacheTest : public ::testing::Test {
  protected:
    Tracker t;
    lru_cache_t *c = nullptr;

    void Make(size_t cap, int bits = 0) {
        c = lru_cache_create(cap, bits, Deleter, &t);
        ASSERT_NE(c, nullptr);
    }
    void TearDown() override {
        if (c) lru_cache_destroy(c);
        for (auto &kv : t.deleted) EXPECT_EQ(kv.second, 1) << "value " << kv.first << " deleted twice";
    }
    // Insert and release immediately.
    void Put(uint64_t k1, uint64_t k2, int v, size_t charge = 1) {
        lru_handle_t *h = lru_cache_insert(c, k1, k2, new int(v), charge);
        ASSERT_NE(h, nullptr);
        lru_cache_release(c, h);
    }
    // Lookup: value, or -1 on miss.
    int Get(uint64_t k1, uint64_t k2) {
        lru_handle_t *h = lru_cache_lookup(c, k1, k2);
        if (!h) return -1;
        int v = *(int *)lru_handle_value(h);
        lru_cache_release(c, h);
        return v;
    }
    bool Deleted(int v) {
        std::lock_guard<std::mutex> g(t.mu);
        return t.deleted.count(v) > 0;
    }
    lru_stats_t Stats() {
        lru_stats_t s;
        lru_cache_stats(c, &s);
        return s;
    }
};

}  // namespace

TEST(CacheCreate, ShardBitsRange) {
    EXPECT_EQ(lru_cache_create(100, -1, nullptr, nullptr), nullptr);
    EXPECT_EQ(lru_cache_create(100, 9, nullptr, nullptr), nullptr);
    for (int b : {0, 1, 4, 8}) {
        lru_cache_t *c = lru_cache_create(100, b, nullptr, nullptr);
        ASSERT_NE(c, nullptr);
        lru_cache_destroy(c);
    }
}

TEST_F(CacheTest, HitAndMiss) {
    Make(100);
    EXPECT_EQ(Get(1, 0), -1);
    Put(1, 0, 10);
    Put(1, 4096, 11);
    Put(2, 0, 20);
    EXPECT_EQ(Get(1, 0), 10);
    EXPECT_EQ(Get(1, 4096), 11);
    EXPECT_EQ(Get(2, 0), 20);
    EXPECT_EQ(Get(2, 4096), -1);
    lru_stats_t s = Stats();
    EXPECT_EQ(s.hits, 3u);
    EXPECT_EQ(s.misses, 2u);
    EXPECT_EQ(s.entries, 3u);
    EXPECT_EQ(s.usage, 3u);
    EXPECT_EQ(s.capacity, 100u);
}

TEST_F(CacheTest, EvictionIsClockSecondChance) {
    Make(3);
    Put(1, 0, 1);
    Put(2, 0, 2);
    Put(3, 0, 3);
    EXPECT_EQ(Get(1, 0), 1);  // 1 is referenced
    Put(4, 0, 4);             // 1 gets a second chance (to the end); 2 goes
    EXPECT_TRUE(Deleted(2));
    EXPECT_FALSE(Deleted(1));
    Put(5, 0, 5);  // order 3,4,1: 3 is the oldest unreferenced
    EXPECT_TRUE(Deleted(3));
    Put(6, 0, 6);
    EXPECT_TRUE(Deleted(4));
    EXPECT_FALSE(Deleted(1));
    Put(7, 0, 7);  // 1 used its chance and was not looked up again
    EXPECT_TRUE(Deleted(1));
    EXPECT_EQ(Get(1, 0), -1);
    EXPECT_EQ(Get(5, 0), 5);
    EXPECT_EQ(Get(6, 0), 6);
    EXPECT_EQ(Get(7, 0), 7);
    EXPECT_EQ(Stats().usage, 3u);
    // All three referenced: one full pass clears the bits, then the oldest goes.
    Put(8, 0, 8);
    EXPECT_TRUE(Deleted(5));
    EXPECT_EQ(Stats().entries, 3u);
}

TEST_F(CacheTest, ChargesCount) {
    Make(100);
    Put(1, 0, 1, 40);
    Put(2, 0, 2, 40);
    Put(3, 0, 3, 40);  // 120 > 100: evict 1
    EXPECT_EQ(Get(1, 0), -1);
    EXPECT_EQ(Stats().usage, 80u);
    Put(4, 0, 4, 100);  // evicts everything else
    EXPECT_EQ(Get(2, 0), -1);
    EXPECT_EQ(Get(3, 0), -1);
    EXPECT_EQ(Get(4, 0), 4);
    EXPECT_EQ(Stats().usage, 100u);
}

TEST_F(CacheTest, PinnedEntriesNotEvicted) {
    Make(2);
    lru_handle_t *h1 = lru_cache_insert(c, 1, 0, new int(1), 1);
    lru_handle_t *h2 = lru_cache_insert(c, 2, 0, new int(2), 1);
    // Both pinned: inserting more exceeds capacity only by pinned entries.
    Put(3, 0, 3);  // unpinned after release and over capacity -> dropped at once
    EXPECT_EQ(Get(3, 0), -1);
    EXPECT_TRUE(Deleted(3));
    EXPECT_EQ(Get(1, 0), 1);
    EXPECT_EQ(Get(2, 0), 2);
    EXPECT_EQ(*(int *)lru_handle_value(h1), 1);
    lru_cache_release(c, h1);
    lru_cache_release(c, h2);
    EXPECT_FALSE(Deleted(1));
    EXPECT_FALSE(Deleted(2));
    EXPECT_LE(Stats().usage, 2u);

    // A pinned entry over capacity survives eviction, then is dropped on release.
    lru_handle_t *big = lru_cache_insert(c, 9, 0, new int(9), 10);
    EXPECT_EQ(Stats().usage, 10u);  // everything unpinned was evicted
    EXPECT_TRUE(Deleted(1));
    EXPECT_TRUE(Deleted(2));
    EXPECT_EQ(Get(9, 0), 9);
    lru_cache_release(c, big);
    EXPECT_TRUE(Deleted(9));
    EXPECT_EQ(Stats().usage, 0u);
    EXPECT_EQ(Stats().entries, 0u);
}

TEST_F(CacheTest, CapacityRespectedUnderChurn) {
    Make(1000, 4);
    std::mt19937 rng(7);
    for (int i = 0; i < 20000; i++) {
        Put(rng() % 50, rng() % 1000, i, 1 + rng() % 30);
        ASSERT_LE(Stats().usage, 1000u);
    }
    lru_stats_t s = Stats();
    EXPECT_GT(s.usage, 500u);  // it does cache
    EXPECT_EQ(t.total.load() + (int)s.entries, 20000);
}

TEST_F(CacheTest, ReplaceSemantics) {
    Make(10);
    Put(1, 0, 100);
    lru_handle_t *old = lru_cache_lookup(c, 1, 0);
    ASSERT_NE(old, nullptr);
    Put(1, 0, 200);  // replaces; old value still pinned
    EXPECT_FALSE(Deleted(100));
    EXPECT_EQ(*(int *)lru_handle_value(old), 100);
    EXPECT_EQ(Get(1, 0), 200);
    EXPECT_EQ(Stats().entries, 1u);
    EXPECT_EQ(Stats().usage, 1u);
    lru_cache_release(c, old);
    EXPECT_TRUE(Deleted(100));
    Put(1, 0, 300);  // replaces an unpinned entry: freed at once
    EXPECT_TRUE(Deleted(200));
    EXPECT_EQ(Get(1, 0), 300);
}

TEST_F(CacheTest, Erase) {
    Make(10);
    Put(1, 0, 1);
    Put(1, 8, 2);
    lru_cache_erase(c, 1, 0);
    EXPECT_TRUE(Deleted(1));
    EXPECT_EQ(Get(1, 0), -1);
    EXPECT_EQ(Get(1, 8), 2);
    lru_cache_erase(c, 7, 7);  // absent: no-op
    lru_handle_t *h = lru_cache_lookup(c, 1, 8);
    lru_cache_erase(c, 1, 8);  // pinned: gone from the cache, freed on release
    EXPECT_EQ(Get(1, 8), -1);
    EXPECT_FALSE(Deleted(2));
    lru_cache_release(c, h);
    EXPECT_TRUE(Deleted(2));
    EXPECT_EQ(Stats().usage, 0u);
}

TEST_F(CacheTest, EraseK1) {
    Make(1000, 3);
    for (int f = 1; f <= 3; f++)
        for (int off = 0; off < 50; off++) Put(f, off * 4096, f * 1000 + off);
    lru_handle_t *h = lru_cache_lookup(c, 2, 4096);
    lru_cache_erase_k1(c, 2);
    for (int off = 0; off < 50; off++) {
        EXPECT_EQ(Get(2, off * 4096), -1);
        EXPECT_EQ(Get(1, off * 4096), 1000 + off);
        EXPECT_EQ(Get(3, off * 4096), 3000 + off);
    }
    EXPECT_EQ(Stats().entries, 100u);
    EXPECT_FALSE(Deleted(2001));
    EXPECT_EQ(*(int *)lru_handle_value(h), 2001);
    lru_cache_release(c, h);
    EXPECT_TRUE(Deleted(2001));
    EXPECT_EQ(t.total.load(), 50);
}

TEST_F(CacheTest, ZeroCapacityCachesNothing) {
    Make(0, 2);
    lru_handle_t *h = lru_cache_insert(c, 1, 0, new int(1), 1);
    ASSERT_NE(h, nullptr);
    EXPECT_EQ(*(int *)lru_handle_value(h), 1);
    EXPECT_EQ(Stats().usage, 0u);
    lru_cache_release(c, h);
    EXPECT_TRUE(Deleted(1));
    EXPECT_EQ(Get(1, 0), -1);
    Put(2, 0, 2, 0);  // even zero charge
    EXPECT_TRUE(Deleted(2));
    EXPECT_EQ(Stats().entries, 0u);
}

TEST_F(CacheTest, SetCapacity) {
    Make(100);
    for (int i = 0; i < 100; i++) Put(i, 0, i);
    EXPECT_EQ(Stats().usage, 100u);
    lru_handle_t *h = lru_cache_lookup(c, 0, 0);  // oldest, pinned
    lru_cache_set_capacity(c, 10);
    lru_stats_t s = Stats();
    EXPECT_EQ(s.capacity, 10u);
    EXPECT_EQ(s.usage, 10u);  // 9 newest + the pinned one
    EXPECT_EQ(Get(0, 0), 0);
    EXPECT_EQ(Get(99, 0), 99);
    EXPECT_EQ(Get(50, 0), -1);
    lru_cache_release(c, h);
    lru_cache_set_capacity(c, 0);
    EXPECT_EQ(Stats().usage, 0u);
    EXPECT_EQ(t.total.load(), 100);
    lru_cache_set_capacity(c, 50);
    Put(5, 5, 555);
    EXPECT_EQ(Get(5, 5), 555);
}

TEST_F(CacheTest, DeleterExactlyOncePerValue) {
    {
        Make(64, 2);
        std::mt19937 rng(3);
        std::vector<lru_handle_t *> pinned;
        int next = 0;
        for (int i = 0; i < 5000; i++) {
            switch (rng() % 6) {
            case 0: case 1: case 2: {
                lru_handle_t *h = lru_cache_insert(c, rng() % 8, rng() % 32, new int(next++), 1 + rng() % 4);
                ASSERT_NE(h, nullptr);
                if (rng() % 4 == 0 && pinned.size() < 10) pinned.push_back(h);
                else lru_cache_release(c, h);
                break;
            }
            case 3: {
                lru_handle_t *h = lru_cache_lookup(c, rng() % 8, rng() % 32);
                if (h) lru_cache_release(c, h);
                break;
            }
            case 4: lru_cache_erase(c, rng() % 8, rng() % 32); break;
            case 5:
                if (rng() % 20 == 0) lru_cache_erase_k1(c, rng() % 8);
                else if (!pinned.empty()) { lru_cache_release(c, pinned.back()); pinned.pop_back(); }
                break;
            }
        }
        for (auto *h : pinned) lru_cache_release(c, h);
        lru_cache_destroy(c);
        c = nullptr;
        EXPECT_EQ(t.total.load(), next);
        EXPECT_EQ((int)t.deleted.size(), next);
        for (auto &kv : t.deleted) ASSERT_EQ(kv.second, 1) << kv.first;
    }
}

TEST_F(CacheTest, ManyEntriesGrowTable) {
    Make(1 << 20, 1);
    for (int i = 0; i < 100000; i++) Put(i % 7, (uint64_t)i * 4096, i);
    for (int i = 0; i < 100000; i += 13) ASSERT_EQ(Get(i % 7, (uint64_t)i * 4096), i);
    EXPECT_EQ(Stats().entries, 100000u);
}

// Random inserts, replaces, erases and per-file erases against a model,
// with room for everything (no eviction): every key present in the model
// is found with its latest value and every other key misses, so entries
// moved back when a slot is freed are never lost or duplicated.
TEST_F(CacheTest, RandomOperationsMatchAModel) {
    Make(1 << 20, 1);
    std::mt19937_64 rng(7);
    std::map<std::pair<uint64_t, uint64_t>, int> model;
    int next = 0;
    for (int step = 0; step < 200000; step++) {
        uint64_t k1 = rng() % 5, k2 = (rng() % 3000) * 4096;
        int op = (int)(rng() % 100);
        if (op < 60) {
            Put(k1, k2, next);
            model[{k1, k2}] = next++;
        } else if (op < 95) {
            lru_cache_erase(c, k1, k2);
            model.erase({k1, k2});
        } else if (op == 99 && rng() % 20 == 0) {
            lru_cache_erase_k1(c, k1);
            for (auto it = model.begin(); it != model.end();) it = it->first.first == k1 ? model.erase(it) : ++it;
        } else {
            auto it = model.find({k1, k2});
            ASSERT_EQ(Get(k1, k2), it == model.end() ? -1 : it->second) << step;
        }
    }
    for (auto &kv : model) ASSERT_EQ(Get(kv.first.first, kv.first.second), kv.second);
    EXPECT_EQ(Stats().entries, model.size());
    for (uint64_t k1 = 0; k1 < 5; k1++) {
        for (uint64_t k2 = 0; k2 < 3000; k2++) {
            if (!model.count({k1, k2 * 4096})) {
                ASSERT_EQ(Get(k1, k2 * 4096), -1);
            }
        }
    }
}

TEST_F(CacheTest, ConcurrentLookupsAndInserts) {
    Make(2000, 4);
    std::atomic<int> next{0};
    std::atomic<long> bad{0};
    std::vector<std::thread> ts;
    for (int th = 0; th < 4; th++) {
        ts.emplace_back([&, th] {
            std::mt19937 rng(100 + th);
            for (int i = 0; i < 50000; i++) {
                uint64_t k1 = rng() % 16, k2 = rng() % 512;
                int op = rng() % 10;
                if (op < 6) {
                    lru_handle_t *h = lru_cache_lookup(c, k1, k2);
                    if (h) {
                        int v = *(int *)lru_handle_value(h);
                        if (v < 0) bad++;
                        lru_cache_release(c, h);
                    }
                } else if (op < 9) {
                    lru_handle_t *h = lru_cache_insert(c, k1, k2, new int(next++), 1 + rng() % 8);
                    if (!h) { bad++; continue; }
                    if (*(int *)lru_handle_value(h) < 0) bad++;
                    lru_cache_release(c, h);
                } else if (rng() % 50 == 0) {
                    lru_cache_erase_k1(c, k1);
                } else {
                    lru_cache_erase(c, k1, k2);
                }
                if (i % 1000 == 0) {
                    lru_stats_t s;
                    lru_cache_stats(c, &s);
                    (void)s;
                }
            }
        });
    }
    for (auto &t : ts) t.join();
    EXPECT_EQ(bad.load(), 0);
    lru_stats_t s = Stats();
    EXPECT_LE(s.usage, 2000u);
    EXPECT_EQ(s.hits + s.misses, (uint64_t)(s.hits + s.misses));
    EXPECT_GT(s.hits, 0u);
    lru_cache_destroy(c);
    c = nullptr;
    EXPECT_EQ(t.total.load(), next.load());
}

// Prefetch hints take no lock and change nothing: not the contents, not the
// hit/miss counters, for present and absent keys, across table growth.
TEST_F(CacheTest, PrefetchHintsChangeNothing) {
    Make(1 << 20, 2);
    for (int i = 0; i < 3000; i++) {  // grows every shard's table several times
        Put(7, (uint64_t)i, i);
        for (int stage = 0; stage < 2; stage++) {
            lru_cache_prefetch(c, lru_cache_key_hash(7, (uint64_t)i), stage);
            lru_cache_prefetch(c, lru_cache_key_hash(8, (uint64_t)i), stage);  // absent
        }
    }
    lru_stats_t before = Stats();
    EXPECT_EQ(0u, before.hits + before.misses);
    EXPECT_EQ(3000u, before.entries);
    for (int i = 0; i < 3000; i++) EXPECT_EQ(i, Get(7, (uint64_t)i));
    EXPECT_EQ(-1, Get(8, 0));
    lru_stats_t after = Stats();
    EXPECT_EQ(3000u, after.hits);
    EXPECT_EQ(1u, after.misses);
}

// Hints race with inserts (which grow and retire slot arrays), evictions
// and erases: the ASan and TSan builds check that a hint never reads freed
// memory and never races with a slot write.
TEST_F(CacheTest, PrefetchHintsRaceWithWriters) {
    Make(3000, 1);
    std::atomic<bool> stop{false};
    std::atomic<int> next{0};
    std::thread writer([&] {
        std::mt19937 rng(7);
        for (int i = 0; i < 60000; i++) {
            uint64_t k2 = rng() % 8192;
            if (rng() % 8 == 0) {
                lru_cache_erase(c, 1, k2);
            } else {
                lru_handle_t *h = lru_cache_insert(c, 1, k2, new int(next++), 1);
                ASSERT_NE(h, nullptr);
                lru_cache_release(c, h);
            }
        }
        stop = true;
    });
    std::vector<std::thread> hinters;
    for (int t = 0; t < 2; t++) {
        hinters.emplace_back([&, t] {
            std::mt19937 rng(100 + t);
            while (!stop) {
                uint64_t h = lru_cache_key_hash(1, rng() % 8192);
                lru_cache_prefetch(c, h, 0);
                lru_cache_prefetch(c, h, 1);
            }
        });
    }
    writer.join();
    for (auto &t : hinters) t.join();
    EXPECT_LE(Stats().usage, 3000u);
    EXPECT_EQ(0u, Stats().hits + Stats().misses);
}
