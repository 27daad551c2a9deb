// Back-pressure and the memory budget: under a write load far faster than
// flush can absorb, writers slow down and stop instead of letting memory
// grow, no single stop lasts long, and nothing is lost.
#include <gtest/gtest.h>

#include <atomic>
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
    tdb_stats_t st;
    auto t0 = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(8)) {
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

}  // namespace
