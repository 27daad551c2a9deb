// The direct write lane's waiting scheme (db/direct.c): the adaptive spin
// policy, and the lane's guarantees with many more writers than cores under
// each extreme of the policy (never spin, always spin, adaptive), while
// leaders close the gate (memtable switches, writes to a FULL-sync family,
// flushes). What must hold: every acknowledged write is readable by its
// writer at once and in every later snapshot; visible sequence numbers only
// move forward; a snapshot at sequence S shows exactly the writes numbered
// up to S (no holes).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "db/direct.h"
#include "testutil.h"
#include "tidesdb/tidesdb.h"

namespace {

TEST(DirectSpinLearn, ShortWaitsRaiseTheBudgetLongOnesHalveIt) {
    // A wait that ended within the maximum: the budget covers twice it.
    EXPECT_EQ(direct_spin_learn(0, 1000), 2000u);
    EXPECT_EQ(direct_spin_learn(5000, 1000), 5000u);  // never lowered by a short wait
    EXPECT_EQ(direct_spin_learn(0, DIRECT_SPIN_MAX_NS), DIRECT_SPIN_MAX_NS);  // capped
    // A longer wait: the thread waited for was not running; halve.
    EXPECT_EQ(direct_spin_learn(DIRECT_SPIN_MAX_NS, DIRECT_SPIN_MAX_NS + 1), DIRECT_SPIN_MAX_NS / 2);
    uint64_t b = DIRECT_SPIN_MAX_NS;
    for (int i = 0; i < 64; i++) b = direct_spin_learn(b, 10 * DIRECT_SPIN_MAX_NS);
    EXPECT_EQ(b, 0u);  // oversubscribed for long: sleep at once
    EXPECT_EQ(direct_spin_learn(b, 3000), 6000u);  // and back as soon as waits are short
}

enum class Policy { Adaptive, NeverSpin, AlwaysSpin };

class DirectLaneTest : public ::testing::TestWithParam<Policy> {
  protected:
    void SetUp() override {
        tdb_config_t c;
        tdb_config_default(&c);
        c.default_cf.write_buffer_size = 96 << 10;  // many memtable switches (a leader closes the gate)
        c.default_cf.sync_mode = TDB_SYNC_NONE;
        c.block_cache_size = 1 << 20;
        c.log_level = TDB_LOG_WARN;
        ASSERT_EQ(tdb_open(dir_.path().c_str(), &c, &db_), TDB_OK) << tdb_last_error();
        ASSERT_EQ(tdb_get_cf(db_, TDB_DEFAULT_CF, &none_), TDB_OK);
        tdb_cf_config_t fc = c.default_cf;
        fc.sync_mode = TDB_SYNC_FULL;  // its writes take the queue: a leader per group
        ASSERT_EQ(tdb_create_cf(db_, "full", &fc, &full_), TDB_OK) << tdb_last_error();
        switch (GetParam()) {
        case Policy::Adaptive: direct_set_spin(db_, -1); break;
        case Policy::NeverSpin: direct_set_spin(db_, 0); break;
        case Policy::AlwaysSpin: direct_set_spin(db_, 200000); break;
        }
    }
    void TearDown() override {
        if (db_) {
            EXPECT_EQ(tdb_close(db_), TDB_OK);
        }
    }
    static std::string WKey(int w, uint64_t i) { return "w" + std::to_string(w) + "-" + tdbtest::Key(i, 8); }
    uint64_t LastSeq() {
        tdb_stats_t st;
        EXPECT_EQ(tdb_get_stats(db_, nullptr, &st), TDB_OK);
        return st.last_sequence;
    }
    bool Visible(tdb_cf_t *cf, const std::string &k, const tdb_snapshot_t *snap) {
        void *v = nullptr;
        size_t n = 0;
        int rc = tdb_get(db_, cf, snap, k.data(), k.size(), &v, &n);
        if (rc == TDB_OK) tdb_free(v);
        EXPECT_TRUE(rc == TDB_OK || rc == TDB_ERR_NOT_FOUND) << tdb_strerror(rc) << " " << tdb_last_error();
        return rc == TDB_OK;
    }
    uint64_t Count(tdb_cf_t *cf, const tdb_snapshot_t *snap) {
        tdb_iter_t *it = nullptr;
        EXPECT_EQ(tdb_iter_create(db_, cf, snap, &it), TDB_OK) << tdb_last_error();
        if (!it) return 0;
        uint64_t n = 0;
        for (tdb_iter_seek_to_first(it); tdb_iter_valid(it); tdb_iter_next(it)) n++;
        EXPECT_EQ(tdb_iter_status(it), TDB_OK);
        tdb_iter_destroy(it);
        return n;
    }

    tdbtest::TempDir dir_;
    tdb_t *db_ = nullptr;
    tdb_cf_t *none_ = nullptr, *full_ = nullptr;
};

// More direct writers than cores, two writers of a FULL family (each put a
// group commit that closes the gate), memtable switches and flushes. Every
// put writes a new key with one sequence number, so a snapshot at sequence
// S must show exactly S - S0 keys (S0: before the writers started).
TEST_P(DirectLaneTest, ManyWritersAcknowledgedVisibleInOrderWithoutHoles) {
    const int kDirect = 12, kFull = 2;
    const uint64_t kPerDirect = 3000, kPerFull = 300;
    const int kWriters = kDirect + kFull;
    const uint64_t seq0 = LastSeq();
    std::vector<std::atomic<uint64_t>> acked(kWriters);
    for (auto &a : acked) a.store(0);
    std::atomic<bool> stop{false};
    std::atomic<int> errors{0};
    std::vector<std::thread> ts;
    for (int w = 0; w < kWriters; w++) {
        ts.emplace_back([&, w] {
            tdb_cf_t *cf = w < kDirect ? none_ : full_;
            uint64_t n = w < kDirect ? kPerDirect : kPerFull;
            for (uint64_t i = 0; i < n; i++) {
                std::string k = WKey(w, i), v = tdbtest::Value(i, 40);
                int rc = tdb_put(db_, cf, k.data(), k.size(), v.data(), v.size(), 0);
                if (rc != TDB_OK) {
                    ADD_FAILURE() << "put " << k << ": " << tdb_strerror(rc) << " " << tdb_last_error();
                    errors++;
                    return;
                }
                acked[w].store(i + 1, std::memory_order_release);
                // Read-your-writes: an acknowledged put is visible to its writer.
                if (i % 8 == 0 && !Visible(cf, k, nullptr)) {
                    ADD_FAILURE() << k << " not visible to its own writer after the put returned";
                    errors++;
                }
            }
        });
    }
    std::thread flusher([&] {
        while (!stop.load()) {
            if (tdb_flush(db_, none_) != TDB_OK) errors++;
            std::this_thread::sleep_for(std::chrono::milliseconds(15));
        }
    });
    uint64_t checks = 0, last_seen = seq0, last_snap = seq0;
    std::thread observer([&] {
        while (!stop.load()) {
            std::vector<uint64_t> before(kWriters);
            for (int w = 0; w < kWriters; w++) before[w] = acked[w].load(std::memory_order_acquire);
            uint64_t s1 = LastSeq();
            tdb_snapshot_t *snap = tdb_snapshot_create(db_);
            uint64_t s = tdb_snapshot_sequence(snap);
            // Visible sequence numbers only move forward.
            if (s1 < last_seen || s < s1 || s < last_snap) {
                ADD_FAILURE() << "visible sequence went back: " << last_seen << " / " << last_snap << " then " << s1
                              << " / " << s;
                errors++;
            }
            last_seen = s1;
            last_snap = s;
            for (int w = 0; w < kWriters; w++) {
                tdb_cf_t *cf = w < kDirect ? none_ : full_;
                if (before[w] > 0 && !Visible(cf, WKey(w, before[w] - 1), snap)) {
                    ADD_FAILURE() << "acknowledged " << WKey(w, before[w] - 1) << " missing from a later snapshot";
                    errors++;
                }
            }
            // No holes: the snapshot shows exactly the writes numbered up to it.
            uint64_t n = Count(none_, snap) + Count(full_, snap);
            if (n != s - seq0) {
                ADD_FAILURE() << "snapshot at sequence " << s << " shows " << n << " writes, expected " << s - seq0;
                errors++;
            }
            tdb_snapshot_release(db_, snap);
            checks++;
        }
    });
    for (auto &t : ts) t.join();
    stop.store(true);
    flusher.join();
    observer.join();
    ASSERT_EQ(errors.load(), 0);
    EXPECT_GT(checks, 0u);
    const uint64_t total = kDirect * kPerDirect + kFull * kPerFull;
    EXPECT_EQ(LastSeq(), seq0 + total);
    EXPECT_EQ(Count(none_, nullptr) + Count(full_, nullptr), total);
    for (int w = 0; w < kWriters; w++) {
        for (uint64_t i = 0; i < (w < kDirect ? kPerDirect : kPerFull); i++) {
            ASSERT_TRUE(Visible(w < kDirect ? none_ : full_, WKey(w, i), nullptr)) << WKey(w, i);
        }
    }

    direct_stats_t st;
    direct_get_stats(db_, &st);
    EXPECT_GT(st.published, 0u);
    switch (GetParam()) {
    case Policy::NeverSpin:  // every wait slept
        EXPECT_EQ(st.spun, 0u);
        EXPECT_EQ(st.slept, st.waits);
        break;
    case Policy::AlwaysSpin:
        EXPECT_GT(st.spun, 0u);
        break;
    case Policy::Adaptive:
        EXPECT_EQ(st.spun + st.slept, st.waits);
        EXPECT_LE(st.spin_budget_ns, DIRECT_SPIN_MAX_NS);
        break;
    }
    EXPECT_GT(st.waits, 0u);  // the policy was exercised (more writers than cores wait)
}

// Writes survive a reopen under each policy (the lane numbers what it logs).
TEST_P(DirectLaneTest, WritesOfManyThreadsSurviveReopen) {
    const int kWriters = 10;
    const uint64_t kPer = 800;
    std::vector<std::thread> ts;
    std::atomic<int> errors{0};
    for (int w = 0; w < kWriters; w++)
        ts.emplace_back([&, w] {
            for (uint64_t i = 0; i < kPer; i++) {
                std::string k = WKey(w, i), v = tdbtest::Value(i, 30);
                if (tdb_put(db_, none_, k.data(), k.size(), v.data(), v.size(), 0) != TDB_OK) errors++;
            }
        });
    for (auto &t : ts) t.join();
    ASSERT_EQ(errors.load(), 0);
    ASSERT_EQ(tdb_close(db_), TDB_OK);
    db_ = nullptr;
    tdb_config_t c;
    tdb_config_default(&c);
    c.log_level = TDB_LOG_WARN;
    ASSERT_EQ(tdb_open(dir_.path().c_str(), &c, &db_), TDB_OK) << tdb_last_error();
    ASSERT_EQ(tdb_get_cf(db_, TDB_DEFAULT_CF, &none_), TDB_OK);
    for (int w = 0; w < kWriters; w++) {
        for (uint64_t i = 0; i < kPer; i++) {
            ASSERT_TRUE(Visible(none_, WKey(w, i), nullptr)) << WKey(w, i);
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Policies, DirectLaneTest,
                         ::testing::Values(Policy::Adaptive, Policy::NeverSpin, Policy::AlwaysSpin),
                         [](const ::testing::TestParamInfo<Policy> &p) {
                             switch (p.param) {
                             case Policy::Adaptive: return std::string("Adaptive");
                             case Policy::NeverSpin: return std::string("NeverSpin");
                             default: return std::string("AlwaysSpin");
                             }
                         });

}  // namespace
