// Back-pressure and the memory budget: under a write load far faster than
// flush can absorb, writers slow down and stop instead of letting memory
// grow, no single stop lasts long, and nothing is lost.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "testutil.h"
#include "tidesdb/tidesdb.h"

namespace {

TEST(BackPressure, MemoryStaysWithinBudgetUnderOverload) {
    tdbtest::TempDir dir;
    tdb_config_t c;
    tdb_config_default(&c);
    c.max_memory_usage = 48u << 20;
    c.block_cache_size = 8u << 20;
    c.flush_threads = 1;
    c.compaction_threads = 1;
    c.log_level = TDB_LOG_WARN;
    c.default_cf.sync_mode = TDB_SYNC_NONE;
    c.default_cf.write_buffer_size = 8u << 20;
    c.default_cf.compression = TDB_COMPRESS_ZSTD;  // slow flushes: overload
    tdb_t *db;
    ASSERT_EQ(tdb_open(dir.path().c_str(), &c, &db), TDB_OK);
    std::vector<tdb_cf_t *> cfs(3);
    ASSERT_EQ(tdb_get_cf(db, TDB_DEFAULT_CF, &cfs[0]), TDB_OK);
    ASSERT_EQ(tdb_create_cf(db, "b", &c.default_cf, &cfs[1]), TDB_OK);
    ASSERT_EQ(tdb_create_cf(db, "c", &c.default_cf, &cfs[2]), TDB_OK);
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> written{0}, worst_mem{0};
    std::vector<std::thread> ws;
    for (int t = 0; t < 3; t++) {
        ws.emplace_back([&, t] {
            tdb_batch_t *b;
            tdb_batch_create(&b);
            std::string v(400, 'x');
            for (uint64_t i = 0; !stop; i++) {
                tdb_batch_clear(b);
                for (int k = 0; k < 100; k++) {
                    std::string key = tdbtest::Key((i * 100 + k) * 7919 % 10000000 + t);
                    v[k % 400] = (char)('a' + (i + k) % 26);
                    tdb_batch_put(b, cfs[(i + k) % 3], key.data(), key.size(), v.data(), v.size(), 0);
                }
                int rc = tdb_write(db, b);
                ASSERT_TRUE(rc == TDB_OK || rc == TDB_ERR_BUSY) << tdb_strerror(rc);
                if (rc == TDB_OK) written += 100;
            }
            tdb_batch_destroy(b);
        });
    }
    tdb_stats_t st{};
    auto t0 = std::chrono::steady_clock::now();
    // At least 8 s, and on a slow or busy machine (sanitizers, parallel
    // tests) longer, up to 40 s, until the overload has engaged back-pressure.
    for (;;) {
        auto el = std::chrono::steady_clock::now() - t0;
        if (el >= std::chrono::seconds(40)) break;
        if (el >= std::chrono::seconds(8) && st.slowdowns + st.stalls > 0) break;
        ASSERT_EQ(tdb_get_stats(db, nullptr, &st), TDB_OK);
        uint64_t mem = st.memtable_bytes + st.block_cache_bytes;
        if (mem > worst_mem) worst_mem = mem;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    stop = true;
    for (auto &w : ws) w.join();
    ASSERT_EQ(tdb_get_stats(db, nullptr, &st), TDB_OK);
    // In-flight slack: one write group and one arena block per memtable.
    EXPECT_LE(worst_mem.load(), st.memory_budget + (4u << 20));
    EXPECT_GT(st.slowdowns + st.stalls, 0u) << "overload must engage back-pressure";
    EXPECT_LT(st.stall_max_micros, 5u * 1000 * 1000);
    EXPECT_GT(written.load(), 10000u);  // progress (sanitizer builds run ~10x slower)
    printf("wrote %llu entries, worst memory %.1f MiB of %.1f MiB, %llu slowdowns, %llu stops, longest stop %.1f ms\n",
           (unsigned long long)written.load(), worst_mem.load() / 1048576.0, st.memory_budget / 1048576.0,
           (unsigned long long)st.slowdowns, (unsigned long long)st.stalls, st.stall_max_micros / 1000.0);
    ASSERT_EQ(tdb_close(db), TDB_OK);
}

using Clock = std::chrono::steady_clock;

int64_t MsSince(Clock::time_point t0) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
}

// A database whose writers stop after two queued memtables of 64 KiB.
struct PausedDb {
    tdbtest::TempDir dir;
    tdb_t *db = nullptr;
    tdb_cf_t *cf = nullptr;
    explicit PausedDb(int64_t stall_timeout_ms, int l1_trigger = 4) {
        tdb_config_t c;
        tdb_config_default(&c);
        c.log_level = TDB_LOG_WARN;
        c.flush_threads = 1;
        c.compaction_threads = 1;
        c.write_stall_timeout_ms = stall_timeout_ms;
        c.default_cf.sync_mode = TDB_SYNC_NONE;
        c.default_cf.write_buffer_size = 64u << 10;
        c.default_cf.l0_queue_stall_threshold = 2;
        c.default_cf.l1_file_count_trigger = l1_trigger;
        EXPECT_EQ(tdb_open(dir.path().c_str(), &c, &db), TDB_OK) << tdb_last_error();
        EXPECT_EQ(tdb_get_cf(db, TDB_DEFAULT_CF, &cf), TDB_OK);
    }
    ~PausedDb() {
        if (db) {
            EXPECT_EQ(tdb_close(db), TDB_OK);
        }
    }
    int Put(uint64_t i, const tdb_write_options_t *o = nullptr) {
        tdb_batch_t *b;
        tdb_batch_create(&b);
        std::string k = tdbtest::Key(i), v = tdbtest::Value(i, 1000);
        tdb_batch_put(b, cf, k.data(), k.size(), v.data(), v.size(), 0);
        int rc = tdb_write_opt(db, b, o);
        tdb_batch_destroy(b);
        return rc;
    }
    bool Has(uint64_t i) {
        std::string k = tdbtest::Key(i);
        void *v;
        size_t n;
        int rc = tdb_get(db, cf, nullptr, k.data(), k.size(), &v, &n);
        if (rc == TDB_OK) tdb_free(v);
        return rc == TDB_OK;
    }
    // Write keys from *next on until a write fails; returns its code and
    // how long that one write took.
    int FillUntilRefused(uint64_t *next, int64_t *ms, const tdb_write_options_t *o = nullptr) {
        for (int n = 0; n < 100000; n++) {
            auto t0 = Clock::now();
            int rc = Put((*next)++, o);
            *ms = MsSince(t0);
            if (rc != TDB_OK) return rc;
        }
        return TDB_OK;
    }
};

// Slack for a busy 2-core machine: a stall timeout fires no earlier than its
// bound and at most this much later.
constexpr int64_t kSlackMs = 1000;

TEST(BackPressure, StalledWriteFailsBusyWithinItsBoundAndRecovers) {
    const int64_t bound = 300;
    PausedDb p(bound);
    ASSERT_EQ(tdb_pause_background(p.db), TDB_OK);
    uint64_t next = 0;
    int64_t ms = 0;
    int rc = p.FillUntilRefused(&next, &ms);
    ASSERT_EQ(rc, TDB_ERR_BUSY) << tdb_strerror(rc);
    EXPECT_GE(ms, bound);
    EXPECT_LE(ms, bound + kSlackMs);
    EXPECT_NE(std::string(tdb_last_error()).find("back-pressure"), std::string::npos) << tdb_last_error();
    uint64_t refused = next - 1;
    EXPECT_FALSE(p.Has(refused)) << "nothing of a refused write is applied";
    EXPECT_TRUE(p.Has(0));
    tdb_stats_t st;
    ASSERT_EQ(tdb_get_stats(p.db, nullptr, &st), TDB_OK);
    EXPECT_EQ(st.stall_timeouts, 1u);
    EXPECT_GE(st.flushes_pending, 2u);
    EXPECT_EQ(st.flushes, 0u);
    EXPECT_EQ(st.background_paused, 1);
    EXPECT_EQ(tdb_wait_idle(p.db), TDB_ERR_BUSY);

    // A per-write bound overrides the database's (shorter here).
    tdb_write_options_t wo;
    tdb_write_options_default(&wo);
    wo.stall_timeout_ms = 50;
    auto t0 = Clock::now();
    EXPECT_EQ(p.Put(refused, &wo), TDB_ERR_BUSY);
    ms = MsSince(t0);
    EXPECT_GE(ms, 50);
    EXPECT_LE(ms, 50 + kSlackMs);
    EXPECT_FALSE(p.Has(refused));

    // Pauses nest: one continue is not enough.
    ASSERT_EQ(tdb_pause_background(p.db), TDB_OK);
    ASSERT_EQ(tdb_continue_background(p.db), TDB_OK);
    ASSERT_EQ(tdb_get_stats(p.db, nullptr, &st), TDB_OK);
    EXPECT_EQ(st.background_paused, 1);
    EXPECT_EQ(p.Put(refused, &wo), TDB_ERR_BUSY);

    ASSERT_EQ(tdb_continue_background(p.db), TDB_OK);
    EXPECT_EQ(tdb_continue_background(p.db), TDB_ERR_INVALID_ARG);
    ASSERT_EQ(p.Put(refused), TDB_OK) << tdb_last_error();
    EXPECT_TRUE(p.Has(refused));
    for (int i = 0; i < 200; i++) ASSERT_EQ(p.Put(next++), TDB_OK) << tdb_last_error();
    ASSERT_EQ(tdb_wait_idle(p.db), TDB_OK);
    ASSERT_EQ(tdb_get_stats(p.db, nullptr, &st), TDB_OK);
    EXPECT_GT(st.flushes, 0u);
    EXPECT_EQ(st.flushes_pending, 0u);
    EXPECT_EQ(st.background_paused, 0);
    for (uint64_t i = 0; i < next; i++) ASSERT_TRUE(p.Has(i)) << i;
}

// Queued writers each leave at their own bound, whoever leads the group; a
// writer without a bound keeps waiting and succeeds once work resumes.
TEST(BackPressure, EachQueuedWriterHasItsOwnBound) {
    PausedDb p(0);  // no database default: only the per-write bounds
    ASSERT_EQ(tdb_pause_background(p.db), TDB_OK);
    tdb_write_options_t shortb, none, longer;
    tdb_write_options_default(&shortb);
    tdb_write_options_default(&none);
    tdb_write_options_default(&longer);
    shortb.stall_timeout_ms = 200;
    none.stall_timeout_ms = -1;
    longer.stall_timeout_ms = 1500;
    uint64_t next = 0;
    int64_t ms = 0;
    ASSERT_EQ(p.FillUntilRefused(&next, &ms, &shortb), TDB_ERR_BUSY);
    const uint64_t ka = next, kb = next + 1, kc = next + 2;
    std::atomic<int> rca{1}, rcb{1}, rcc{1};
    std::atomic<int64_t> msa{0}, msb{0};
    std::atomic<bool> c_done{false};
    // a leads and gives up first; c (no bound) takes over the queue with b
    // in its group; b leaves at its own bound.
    std::thread ta([&] {
        auto t0 = Clock::now();
        rca = p.Put(ka, &shortb);
        msa = MsSince(t0);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::thread tc([&] {
        rcc = p.Put(kc, &none);
        c_done = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::thread tb([&] {
        auto t0 = Clock::now();
        rcb = p.Put(kb, &longer);
        msb = MsSince(t0);
    });
    ta.join();
    tb.join();
    EXPECT_EQ(rca.load(), TDB_ERR_BUSY);
    EXPECT_GE(msa.load(), shortb.stall_timeout_ms);
    EXPECT_LE(msa.load(), shortb.stall_timeout_ms + kSlackMs);
    EXPECT_EQ(rcb.load(), TDB_ERR_BUSY);
    EXPECT_GE(msb.load(), longer.stall_timeout_ms);
    EXPECT_LE(msb.load(), longer.stall_timeout_ms + kSlackMs);
    EXPECT_FALSE(c_done.load()) << "a write without a bound waits for progress";
    ASSERT_EQ(tdb_continue_background(p.db), TDB_OK);
    tc.join();
    EXPECT_EQ(rcc.load(), TDB_OK);
    EXPECT_FALSE(p.Has(ka));
    EXPECT_FALSE(p.Has(kb));
    EXPECT_TRUE(p.Has(kc));
    tdb_stats_t st;
    ASSERT_EQ(tdb_get_stats(p.db, nullptr, &st), TDB_OK);
    EXPECT_EQ(st.stall_timeouts, 3u);
}

// Level 1 over its trigger while background work is paused is reported as
// a pending compaction (flushes still run in the caller's thread).
TEST(BackPressure, PendingCompactionsShowWhilePaused) {
    PausedDb p(0, 2);
    ASSERT_EQ(tdb_pause_background(p.db), TDB_OK);
    uint64_t next = 0;
    tdb_stats_t st;
    for (int f = 0; f < 2; f++) {
        for (int i = 0; i < 20; i++) ASSERT_EQ(p.Put(next++), TDB_OK);
        ASSERT_EQ(tdb_flush(p.db, nullptr), TDB_OK) << tdb_last_error();
        ASSERT_EQ(tdb_get_stats(p.db, nullptr, &st), TDB_OK);
        EXPECT_EQ(st.levels[1].files, (uint64_t)f + 1);
        EXPECT_EQ(st.compactions_pending, f == 0 ? 0u : 1u);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ASSERT_EQ(tdb_get_stats(p.db, nullptr, &st), TDB_OK);
    EXPECT_EQ(st.compactions_pending, 1u) << "no compaction starts while paused";
    EXPECT_EQ(st.levels[1].files, 2u);
    ASSERT_EQ(tdb_continue_background(p.db), TDB_OK);
    ASSERT_EQ(tdb_wait_idle(p.db), TDB_OK);
    ASSERT_EQ(tdb_get_stats(p.db, nullptr, &st), TDB_OK);
    EXPECT_EQ(st.levels[1].files, 0u) << "level 1 went down (compaction or trivial move)";
    EXPECT_EQ(st.compactions_pending, 0u);
    for (uint64_t i = 0; i < next; i++) ASSERT_TRUE(p.Has(i)) << i;
}

// Level-1 batching (version/compaction.h): with data in the memtable and a
// base level larger than level 1, level 1 waits for twice its trigger; a
// caller of tdb_wait_idle gets the idle shape all the same, and once the
// memtable is flushed empty the plain trigger applies on its own.
TEST(BackPressure, Level1BatchesWhileTheMemtableHoldsData) {
    PausedDb p(0, 2);
    tdb_stats_t st;
    // A base level: 2 flushes of 50 keys (about 100 KiB), merged by one
    // compaction into the bottom, which is the base while it stays under
    // 10x the base-level size of 2 x 64 KiB.
    ASSERT_EQ(tdb_pause_background(p.db), TDB_OK);
    for (uint64_t i = 0; i < 100; i++) {
        ASSERT_EQ(p.Put(i), TDB_OK);
        if (i % 50 == 49) {
            ASSERT_EQ(tdb_flush(p.db, nullptr), TDB_OK) << tdb_last_error();
        }
    }
    ASSERT_EQ(tdb_continue_background(p.db), TDB_OK);
    ASSERT_EQ(tdb_wait_idle(p.db), TDB_OK);
    ASSERT_EQ(tdb_get_stats(p.db, nullptr, &st), TDB_OK);
    ASSERT_EQ(st.levels[1].files, 0u);
    const uint64_t compactions = st.compactions;
    // Two small level-1 files over the base's range, then one more write.
    ASSERT_EQ(tdb_pause_background(p.db), TDB_OK);
    for (int f = 0; f < 2; f++) {
        for (uint64_t i = (uint64_t)f; i < 100; i += 20) ASSERT_EQ(p.Put(i), TDB_OK);
        ASSERT_EQ(tdb_flush(p.db, nullptr), TDB_OK) << tdb_last_error();
    }
    ASSERT_EQ(p.Put(7), TDB_OK);
    ASSERT_EQ(tdb_get_stats(p.db, nullptr, &st), TDB_OK);
    EXPECT_EQ(st.levels[1].files, 2u);
    EXPECT_EQ(st.compactions_pending, 0u) << "level 1 batches up to 4 files while the memtable holds data";
    ASSERT_EQ(tdb_continue_background(p.db), TDB_OK);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ASSERT_EQ(tdb_get_stats(p.db, nullptr, &st), TDB_OK);
    EXPECT_EQ(st.levels[1].files, 2u) << "no level-1 compaction while batching";
    EXPECT_EQ(st.compactions, compactions);
    // tdb_wait_idle asks for the idle shape: the plain trigger, although
    // the memtable still holds the last write.
    ASSERT_EQ(tdb_wait_idle(p.db), TDB_OK);
    ASSERT_EQ(tdb_get_stats(p.db, nullptr, &st), TDB_OK);
    EXPECT_EQ(st.levels[1].files, 0u);
    EXPECT_EQ(st.compactions, compactions + 1);
    EXPECT_EQ(st.compactions_pending, 0u);
    EXPECT_GT(st.memtable_bytes, 0u);
    // Batching again: two more level-1 files wait; flushed empty, the
    // three compact without a wait_idle.
    ASSERT_EQ(tdb_pause_background(p.db), TDB_OK);
    for (int f = 0; f < 2; f++) {
        for (uint64_t i = (uint64_t)f + 2; i < 100; i += 20) ASSERT_EQ(p.Put(i), TDB_OK);
        ASSERT_EQ(tdb_flush(p.db, nullptr), TDB_OK) << tdb_last_error();
    }
    ASSERT_EQ(p.Put(9), TDB_OK);
    ASSERT_EQ(tdb_continue_background(p.db), TDB_OK);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ASSERT_EQ(tdb_get_stats(p.db, nullptr, &st), TDB_OK);
    EXPECT_EQ(st.levels[1].files, 2u) << "batching while the memtable holds data";
    ASSERT_EQ(tdb_flush(p.db, nullptr), TDB_OK);
    for (int i = 0; i < 500 && st.levels[1].files != 0; i++) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        ASSERT_EQ(tdb_get_stats(p.db, nullptr, &st), TDB_OK);
    }
    EXPECT_EQ(st.levels[1].files, 0u) << "flushed empty: the plain trigger";
    EXPECT_EQ(st.compactions, compactions + 2);
    for (uint64_t i = 0; i < 100; i++) ASSERT_TRUE(p.Has(i)) << i;
}

// tdb_close works while paused; nothing acknowledged is lost.
TEST(BackPressure, CloseWhilePausedKeepsData) {
    uint64_t next = 0;
    {
        PausedDb p(100);
        ASSERT_EQ(tdb_pause_background(p.db), TDB_OK);
        int64_t ms;
        ASSERT_EQ(p.FillUntilRefused(&next, &ms), TDB_ERR_BUSY);
        next--;  // the refused one is not there
        ASSERT_EQ(tdb_close(p.db), TDB_OK);
        tdb_t *db;
        ASSERT_EQ(tdb_open(p.dir.path().c_str(), nullptr, &db), TDB_OK) << tdb_last_error();
        p.db = db;
        ASSERT_EQ(tdb_get_cf(db, TDB_DEFAULT_CF, &p.cf), TDB_OK);
        for (uint64_t i = 0; i < next; i++) ASSERT_TRUE(p.Has(i)) << i;
        EXPECT_FALSE(p.Has(next));
    }
}

}  // namespace
