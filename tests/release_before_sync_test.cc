// release_before_sync (tdb_config_t; db_impl.h invariant 2b): a commit that
// syncs the WAL is made visible and gives back its row locks before the
// fsync, and still returns only once the fsync is done. The fault env holds
// the WAL's fsync (fault_env_set_sync_hook) so the tests can look at the
// database while a commit is between "visible" and "durable".
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "fault_testutil.h"

namespace {

// Holds every WAL fsync while armed, until Open() is called.
struct SyncGate {
    std::mutex mu;
    std::condition_variable cv;
    bool armed = false, held = false;
    static void Hook(void *arg, const char *path) {
        SyncGate *g = (SyncGate *)arg;
        if (!strstr(path, ".log")) return;
        std::unique_lock<std::mutex> l(g->mu);
        if (!g->armed) return;
        g->held = true;
        g->cv.notify_all();
        g->cv.wait(l, [g] { return !g->armed; });
    }
    void Arm() {
        std::lock_guard<std::mutex> l(mu);
        armed = true;
        held = false;
    }
    bool WaitHeld() {
        std::unique_lock<std::mutex> l(mu);
        return cv.wait_for(l, std::chrono::seconds(10), [this] { return held; });
    }
    void Open() {
        std::lock_guard<std::mutex> l(mu);
        armed = false;
        cv.notify_all();
    }
};

class ReleaseBeforeSyncTest : public FaultDbFixture {
  protected:
    void OpenWith(int release) {
        cfg_.release_before_sync = release;
        fault_env_set_sync_hook(fe_.fe, SyncGate::Hook, &gate_);
        Open();
    }
    void TearDown() override {
        gate_.Open();
        FaultDbFixture::TearDown();
    }
    tdb_txn_t *Begin(int64_t lock_timeout_ms) {
        tdb_txn_options_t o;
        tdb_txn_options_default(&o);
        o.pessimistic = 1;
        o.isolation = TDB_ISO_READ_COMMITTED;
        o.lock_timeout_ms = lock_timeout_ms;
        tdb_txn_t *t = nullptr;
        EXPECT_EQ(tdb_txn_begin(db_, &o, &t), TDB_OK) << tdb_last_error();
        return t;
    }
    int Write(tdb_txn_t *t, const std::string &k, const std::string &v) {
        return tdb_txn_put(t, cf_, k.data(), k.size(), v.data(), v.size(), 0);
    }
    // A locking read of k: its error, or TDB_OK and the value in *out.
    int ReadForUpdate(tdb_txn_t *t, const std::string &k, std::string *out) {
        void *v = nullptr;
        size_t n = 0;
        int rc = tdb_txn_get_for_update(t, cf_, k.data(), k.size(), 0, &v, &n);
        if (rc == TDB_OK) {
            out->assign((const char *)v, n);
            tdb_free(v);
        }
        return rc;
    }
    // A writes k, then commits in a thread until its commit is held at the
    // WAL fsync; the thread sets *rc and then *done.
    std::thread CommitHeldAtSync(tdb_txn_t *a, std::atomic<int> *rc, std::atomic<bool> *done) {
        EXPECT_EQ(Write(a, "k", "a"), TDB_OK);
        gate_.Arm();
        std::thread t([a, rc, done] {
            *rc = tdb_txn_commit(a);
            *done = true;
        });
        EXPECT_TRUE(gate_.WaitHeld()) << "A's commit never reached the WAL fsync";
        return t;
    }
    SyncGate gate_;
};

// While A's commit waits for its fsync, B's locking read of A's row gets
// the lock at once and sees A's value; A's commit returns only after the
// fsync. Without the option B waits for A's whole commit.
TEST_F(ReleaseBeforeSyncTest, LockWaiterGoesOnWhileTheCommitSyncs) {
    OpenWith(1);
    tdb_txn_t *a = Begin(5000), *b = Begin(5000);
    std::atomic<int> a_rc{1};
    std::atomic<bool> a_done{false};
    std::thread ta = CommitHeldAtSync(a, &a_rc, &a_done);
    std::string v;
    auto t0 = std::chrono::steady_clock::now();
    ASSERT_EQ(ReadForUpdate(b, "k", &v), TDB_OK) << tdb_last_error();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2)) << "B waited for A's lock";
    EXPECT_EQ(v, "a");
    EXPECT_FALSE(a_done.load()) << "A's commit returned before its fsync";
    gate_.Open();
    ta.join();
    EXPECT_EQ(a_rc.load(), TDB_OK) << tdb_last_error();
    ASSERT_EQ(Write(b, "k", "b"), TDB_OK);
    ASSERT_EQ(tdb_txn_commit(b), TDB_OK) << tdb_last_error();
    tdb_txn_free(a);
    tdb_txn_free(b);
}

TEST_F(ReleaseBeforeSyncTest, WithoutItTheLockIsHeldThroughTheSync) {
    OpenWith(0);
    tdb_txn_t *a = Begin(5000), *b = Begin(200);
    std::atomic<int> a_rc{1};
    std::atomic<bool> a_done{false};
    std::thread ta = CommitHeldAtSync(a, &a_rc, &a_done);
    std::string v;
    EXPECT_EQ(ReadForUpdate(b, "k", &v), TDB_ERR_TIMEOUT) << "the lock went before the fsync";
    EXPECT_FALSE(a_done.load()) << "A's commit returned before its fsync";
    gate_.Open();
    ta.join();
    EXPECT_EQ(a_rc.load(), TDB_OK) << tdb_last_error();
    ASSERT_EQ(ReadForUpdate(b, "k", &v), TDB_OK) << tdb_last_error();
    EXPECT_EQ(v, "a");
    tdb_txn_free(a);
    tdb_txn_free(b);
}

// The fsync after a visible group fails (here: out of space): the commit
// reports it, and the error is sticky, since the writes were already
// visible and cannot be cut off as without the option (NoSpaceTest).
TEST_F(ReleaseBeforeSyncTest, FailedSyncAfterVisibleIsSticky) {
    OpenWith(1);
    for (uint64_t i = 0; i < 10; i++) ASSERT_EQ(Put(i), TDB_OK);
    fe_.Rule(FAULT_SYNC, TDB_ERR_NO_SPACE, ".log", 1);
    tdb_txn_t *a = Begin(5000);
    ASSERT_EQ(Write(a, "k", "a"), TDB_OK);
    EXPECT_EQ(tdb_txn_commit(a), TDB_ERR_NO_SPACE) << tdb_last_error();
    EXPECT_EQ(tdb_bg_error(db_), TDB_ERR_NO_SPACE);
    EXPECT_NE(Put(10), TDB_OK) << "writes go on after a visible group's fsync failed";
    tdb_txn_free(a);
}

// Concurrent committers under the option, then a power loss that keeps
// only synced bytes: every acknowledged commit is back after reopening.
TEST_F(ReleaseBeforeSyncTest, AcknowledgedCommitsSurvivePowerLoss) {
    OpenWith(1);
    const int threads = 4, per = 50;
    std::vector<std::thread> ts;
    std::atomic<int> failed{0};
    for (int t = 0; t < threads; t++)
        ts.emplace_back([&, t] {
            for (int i = 0; i < per; i++) {
                tdb_txn_t *x = Begin(5000);
                // Every commit also writes the shared key "hot": they queue on its lock.
                std::string k = tdbtest::Key((uint64_t)(t * per + i)), v = tdbtest::Value((uint64_t)(t * per + i), 200);
                if (Write(x, k, v) != TDB_OK || Write(x, "hot", k) != TDB_OK || tdb_txn_commit(x) != TDB_OK) failed++;
                tdb_txn_free(x);
            }
        });
    for (auto &t : ts) t.join();
    ASSERT_EQ(failed.load(), 0) << tdb_last_error();
    fault_env_power_loss(fe_.fe);
    tdb_close(db_);
    db_ = nullptr;
    fault_env_revive(fe_.fe);
    Open();
    for (uint64_t i = 0; i < (uint64_t)(threads * per); i++) EXPECT_EQ(Get(i), TDB_OK) << i;
}

}  // namespace
