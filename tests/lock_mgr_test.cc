// Unit tests for the row lock manager: modes, re-entrancy, upgrades,
// deadlock detection (two-way, three-way, through queue order, upgrade vs
// upgrade, concurrent closers: exactly one victim), column families,
// savepoint release, cancellation, FIFO order, timeouts, stats, and a
// randomized multi-threaded stress with an exclusion check.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "lock_mgr_testutil.h"
#include "testutil.h"

namespace {

// Acquire in another thread; the future holds the result.
std::future<int> AcqAsync(lock_owner_t *o, const std::string &k, int excl, int64_t t = kLong, uint32_t cf = 0) {
    return std::async(std::launch::async, [=] { return Acq(o, k, excl, t, cf); });
}

using Fixture = LockMgrFixture;

}  // namespace

using LockMgr = Fixture;

TEST_F(LockMgr, SharedSharedCompatible) {
    lock_owner_t *a = Owner(), *b = Owner(), *c = Owner();
    EXPECT_EQ(Acq(a, "k", 0), TDB_OK);
    EXPECT_EQ(Acq(b, "k", 0), TDB_OK);
    EXPECT_EQ(Acq(c, "k", 0), TDB_OK);
    EXPECT_EQ(Stats(m).held, 3u);
    EXPECT_EQ(lock_owner_held(a), 1u);
    EXPECT_EQ(lock_owner_txn_id(b), 2u);
    // Keys that do not exist anywhere are lockable; the empty key too.
    EXPECT_EQ(Acq(a, "", 1), TDB_OK);
}

TEST_F(LockMgr, SharedExclusiveConflictTimesOut) {
    lock_owner_t *a = Owner(), *b = Owner();
    ASSERT_EQ(Acq(a, "k", 0), TDB_OK);
    EXPECT_EQ(Acq(b, "k", 1, 0), TDB_ERR_TIMEOUT);  // try once
    auto t0 = Clock::now();
    EXPECT_EQ(Acq(b, "k", 1, 50000), TDB_ERR_TIMEOUT);
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
    EXPECT_GE(ms, 49);
    EXPECT_LT(ms, 5000);
    EXPECT_EQ(Stats(m).timeouts, 2u);
    // And the other way round: exclusive held, shared asked.
    ASSERT_EQ(Acq(b, "x", 1), TDB_OK);
    EXPECT_EQ(Acq(a, "x", 0, 10000), TDB_ERR_TIMEOUT);
    // The timed-out waiter left no trace: release and the other gets it.
    lock_release_all(a);
    EXPECT_EQ(Acq(b, "k", 1, 0), TDB_OK);
    EXPECT_EQ(Acq(a, "x", 0, 0), TDB_ERR_TIMEOUT);
    lock_release_all(b);
    EXPECT_EQ(Acq(a, "x", 0, 0), TDB_OK);
}

TEST_F(LockMgr, ExclusiveReentrant) {
    lock_owner_t *a = Owner(), *b = Owner();
    ASSERT_EQ(Acq(a, "k", 1), TDB_OK);
    EXPECT_EQ(lock_owner_count(a), 1u);
    EXPECT_EQ(Acq(a, "k", 1), TDB_OK);
    EXPECT_EQ(Acq(a, "k", 0), TDB_OK);  // shared is covered by exclusive
    EXPECT_EQ(lock_owner_count(a), 1u);  // no-ops are not recorded
    EXPECT_EQ(lock_owner_held(a), 1u);
    EXPECT_EQ(Stats(m).held, 1u);
    EXPECT_EQ(Acq(b, "k", 0, 0), TDB_ERR_TIMEOUT);
    lock_release_all(a);
    EXPECT_EQ(lock_owner_count(a), 0u);
    EXPECT_EQ(Acq(b, "k", 0, 0), TDB_OK);
    // Shared re-entrant.
    EXPECT_EQ(Acq(b, "k", 0), TDB_OK);
    EXPECT_EQ(lock_owner_count(b), 1u);
}

TEST_F(LockMgr, UpgradeWaitsForOtherSharer) {
    lock_owner_t *a = Owner(), *b = Owner(), *c = Owner();
    ASSERT_EQ(Acq(a, "k", 0), TDB_OK);
    // Sole sharer upgrades at once.
    ASSERT_EQ(Acq(a, "solo", 0), TDB_OK);
    EXPECT_EQ(Acq(a, "solo", 1, 0), TDB_OK);
    EXPECT_EQ(Acq(b, "solo", 0, 0), TDB_ERR_TIMEOUT);

    ASSERT_EQ(Acq(b, "k", 0), TDB_OK);
    EXPECT_EQ(Acq(a, "k", 1, 0), TDB_ERR_TIMEOUT);  // try once fails, still shared
    EXPECT_EQ(Acq(c, "k", 0, 0), TDB_OK);           // so others can share
    lock_release_all(c);
    size_t count = lock_owner_count(a);
    auto f = AcqAsync(a, "k", 1);
    WaitForWaits(m, 1);
    EXPECT_FALSE(Ready(f));
    // A new sharer queues behind the upgrade.
    EXPECT_EQ(Acq(c, "k", 0, 0), TDB_ERR_TIMEOUT);
    lock_release_all(b);
    ASSERT_TRUE(Ready(f, 20000));
    EXPECT_EQ(f.get(), TDB_OK);
    EXPECT_EQ(lock_owner_count(a), count + 1);  // the upgrade is recorded
    EXPECT_EQ(lock_owner_held(a), 2u);
    EXPECT_EQ(Acq(b, "k", 0, 0), TDB_ERR_TIMEOUT);
}

TEST_F(LockMgr, UpgradeUpgradeDeadlock) {
    lock_owner_t *a = Owner(), *b = Owner();
    ASSERT_EQ(Acq(a, "k", 0), TDB_OK);
    ASSERT_EQ(Acq(b, "k", 0), TDB_OK);
    auto f = AcqAsync(a, "k", 1);
    WaitForWaits(m, 1);
    EXPECT_EQ(Acq(b, "k", 1, kLong), TDB_ERR_DEADLOCK);  // immediately, b is the victim
    EXPECT_EQ(Stats(m).deadlocks, 1u);
    EXPECT_FALSE(Ready(f, 20));
    // The victim still holds its shared lock until it rolls back.
    EXPECT_EQ(lock_owner_held(b), 1u);
    lock_release_all(b);
    ASSERT_TRUE(Ready(f, 20000));
    EXPECT_EQ(f.get(), TDB_OK);
}

TEST_F(LockMgr, TwoWayDeadlock) {
    lock_owner_t *a = Owner(), *b = Owner();
    ASSERT_EQ(Acq(a, "x", 1), TDB_OK);
    ASSERT_EQ(Acq(b, "y", 1), TDB_OK);
    auto f = AcqAsync(a, "y", 1);
    WaitForWaits(m, 1);
    auto t0 = Clock::now();
    EXPECT_EQ(Acq(b, "x", 1, kLong), TDB_ERR_DEADLOCK);
    EXPECT_LT(Clock::now() - t0, std::chrono::seconds(5));
    EXPECT_EQ(Stats(m).deadlocks, 1u);
    EXPECT_FALSE(Ready(f, 20));
    EXPECT_EQ(lock_owner_held(b), 1u);
    lock_release_all(b);
    ASSERT_TRUE(Ready(f, 20000));
    EXPECT_EQ(f.get(), TDB_OK);
    EXPECT_EQ(lock_owner_held(a), 2u);
    // Shared on one side is a deadlock too.
    lock_release_all(a);
    ASSERT_EQ(Acq(a, "x", 0), TDB_OK);
    ASSERT_EQ(Acq(b, "y", 0), TDB_OK);
    auto g = AcqAsync(a, "y", 1);
    WaitForWaits(m, 2);
    EXPECT_EQ(Acq(b, "x", 1, kLong), TDB_ERR_DEADLOCK);
    lock_release_all(b);
    EXPECT_EQ(g.get(), TDB_OK);
}

TEST_F(LockMgr, ThreeWayDeadlock) {
    lock_owner_t *a = Owner(), *b = Owner(), *c = Owner();
    ASSERT_EQ(Acq(a, "a", 1), TDB_OK);
    ASSERT_EQ(Acq(b, "b", 1), TDB_OK);
    ASSERT_EQ(Acq(c, "c", 1), TDB_OK);
    auto fa = AcqAsync(a, "b", 1);
    WaitForWaits(m, 1);
    auto fb = AcqAsync(b, "c", 0);
    WaitForWaits(m, 2);
    EXPECT_EQ(Acq(c, "a", 0, kLong), TDB_ERR_DEADLOCK);
    EXPECT_EQ(Stats(m).deadlocks, 1u);
    EXPECT_FALSE(Ready(fa, 10));
    EXPECT_FALSE(Ready(fb, 10));
    lock_release_all(c);
    ASSERT_TRUE(Ready(fb, 20000));
    EXPECT_EQ(fb.get(), TDB_OK);
    EXPECT_FALSE(Ready(fa, 10));
    lock_release_all(b);
    ASSERT_TRUE(Ready(fa, 20000));
    EXPECT_EQ(fa.get(), TDB_OK);
    EXPECT_EQ(Stats(m).deadlocks, 1u);
}

// A chain of waits without a cycle is not a deadlock.
TEST_F(LockMgr, ChainIsNotDeadlock) {
    lock_owner_t *a = Owner(), *b = Owner(), *c = Owner(), *d = Owner();
    ASSERT_EQ(Acq(a, "a", 0), TDB_OK);
    ASSERT_EQ(Acq(b, "a", 0), TDB_OK);
    ASSERT_EQ(Acq(b, "b", 1), TDB_OK);
    ASSERT_EQ(Acq(c, "c", 1), TDB_OK);
    auto fc = AcqAsync(c, "a", 1);  // c waits for a and b (sharers of "a")
    WaitForWaits(m, 1);
    auto fd = AcqAsync(d, "c", 0);  // d waits for c
    WaitForWaits(m, 2);
    auto fa = AcqAsync(a, "b", 0);  // a waits for b: a->b, no cycle
    WaitForWaits(m, 3);
    EXPECT_EQ(Stats(m).deadlocks, 0u);
    lock_release_all(b);
    EXPECT_EQ(fa.get(), TDB_OK);
    lock_release_all(a);
    EXPECT_EQ(fc.get(), TDB_OK);
    lock_release_all(c);
    EXPECT_EQ(fd.get(), TDB_OK);
    EXPECT_EQ(Stats(m).deadlocks, 0u);
}

// A cycle that passes through FIFO queue order: c queues behind b's
// exclusive request even though its shared request is compatible with a.
TEST_F(LockMgr, DeadlockThroughQueueOrder) {
    lock_owner_t *a = Owner(), *b = Owner(), *c = Owner();
    ASSERT_EQ(Acq(a, "r", 0), TDB_OK);
    ASSERT_EQ(Acq(c, "s", 1), TDB_OK);
    auto fb = AcqAsync(b, "r", 1);  // b waits for a
    WaitForWaits(m, 1);
    auto fc = AcqAsync(c, "r", 0);  // c waits behind b
    WaitForWaits(m, 2);
    EXPECT_EQ(Acq(a, "s", 0, kLong), TDB_ERR_DEADLOCK);  // a -> c -> b -> a
    lock_release_all(a);
    EXPECT_EQ(fb.get(), TDB_OK);
    EXPECT_FALSE(Ready(fc, 10));
    lock_release_all(b);
    EXPECT_EQ(fc.get(), TDB_OK);
}

// Several threads close a cycle at about the same time: exactly one
// victim, and everyone else gets its lock once the victim rolls back.
TEST_F(LockMgr, ConcurrentCycleExactlyOneVictim) {
    const int kRounds = 30;
    for (int n = 2; n <= 4; n++) {
        for (int round = 0; round < kRounds; round++) {
            std::vector<lock_owner_t *> os;
            for (int i = 0; i < n; i++) os.push_back(lock_owner_create(m, 100 + i));
            for (int i = 0; i < n; i++) ASSERT_EQ(Acq(os[i], "k" + std::to_string(i), 1), TDB_OK);
            std::atomic<int> ready{0};
            std::vector<int> rc(n, 1);
            std::vector<std::thread> ts;
            for (int i = 0; i < n; i++) {
                ts.emplace_back([&, i] {
                    ready++;
                    while (ready.load() < n) std::this_thread::yield();
                    rc[i] = Acq(os[i], "k" + std::to_string((i + 1) % n), round % 2, kLong);
                    lock_release_all(os[i]);  // the victim rolls back, the others commit
                });
            }
            for (auto &t : ts) t.join();
            int victims = 0, ok = 0;
            for (int i = 0; i < n; i++) {
                if (rc[i] == TDB_ERR_DEADLOCK) victims++;
                else if (rc[i] == TDB_OK) ok++;
            }
            EXPECT_EQ(victims, 1) << "n=" << n << " round=" << round;
            EXPECT_EQ(ok, n - 1);
            for (auto *o : os) lock_owner_destroy(o);
        }
    }
    EXPECT_EQ(Stats(m).deadlocks, 3u * kRounds);
}

TEST_F(LockMgr, FamiliesAreIndependent) {
    lock_owner_t *a = Owner(), *b = Owner();
    ASSERT_EQ(Acq(a, "k", 1, 0, 1), TDB_OK);
    EXPECT_EQ(Acq(b, "k", 1, 0, 2), TDB_OK);
    EXPECT_EQ(Acq(b, "k", 1, 0, 0), TDB_OK);
    EXPECT_EQ(Acq(b, "k", 0, 0, 1), TDB_ERR_TIMEOUT);
    EXPECT_EQ(Acq(a, "k", 0, 0, 2), TDB_ERR_TIMEOUT);
    EXPECT_EQ(Acq(a, "k", 1, 0, UINT32_MAX), TDB_OK);
    EXPECT_EQ(lock_owner_held(a), 2u);
    EXPECT_EQ(lock_owner_held(b), 2u);
}

TEST_F(LockMgr, ReleaseSinceSavepoint) {
    lock_owner_t *a = Owner(), *b = Owner(), *c = Owner();
    ASSERT_EQ(Acq(a, "early-s", 0), TDB_OK);
    ASSERT_EQ(Acq(a, "early-x", 1), TDB_OK);
    ASSERT_EQ(Acq(a, "up", 0), TDB_OK);
    size_t mark = lock_owner_count(a);
    EXPECT_EQ(mark, 3u);
    ASSERT_EQ(Acq(a, "late-x", 1), TDB_OK);
    ASSERT_EQ(Acq(a, "late-s", 0), TDB_OK);
    ASSERT_EQ(Acq(a, "up", 1), TDB_OK);        // upgrade after the mark
    ASSERT_EQ(Acq(a, "early-s", 0), TDB_OK);   // re-entrant: not recorded
    size_t mark2 = lock_owner_count(a);
    EXPECT_EQ(mark2, 6u);
    ASSERT_EQ(Acq(a, "later", 1), TDB_OK);
    ASSERT_EQ(Acq(a, "early-s", 1), TDB_OK);   // upgrade of an early lock
    // Someone waits for a lock taken after the mark: woken by the rollback.
    auto f = AcqAsync(c, "late-x", 1);  // c: an owner is used by one thread at a time
    WaitForWaits(m, 1);

    lock_release_since(a, mark2);  // inner savepoint first
    EXPECT_EQ(lock_owner_count(a), mark2);
    EXPECT_EQ(Acq(b, "later", 1, 0), TDB_OK);
    EXPECT_EQ(Acq(b, "early-s", 0, 0), TDB_OK);  // downgraded back to shared
    EXPECT_FALSE(Ready(f, 10));

    lock_release_since(a, mark);
    EXPECT_EQ(lock_owner_count(a), mark);
    EXPECT_EQ(lock_owner_held(a), 3u);
    ASSERT_TRUE(Ready(f, 20000));
    EXPECT_EQ(f.get(), TDB_OK);
    EXPECT_EQ(Acq(b, "late-s", 1, 0), TDB_OK);  // released
    EXPECT_EQ(Acq(b, "late-x", 0, 0), TDB_ERR_TIMEOUT);  // now c's
    EXPECT_EQ(Acq(b, "up", 0, 0), TDB_OK);      // downgraded: shared again
    EXPECT_EQ(Acq(b, "up", 1, 0), TDB_ERR_TIMEOUT);
    EXPECT_EQ(Acq(b, "early-x", 0, 0), TDB_ERR_TIMEOUT);  // kept
    // A mark at or past the count does nothing.
    lock_release_since(a, 100);
    EXPECT_EQ(lock_owner_held(a), 3u);
    // The downgraded lock can be upgraded again once b lets go.
    lock_release_all(b);
    EXPECT_EQ(Acq(a, "up", 1, 0), TDB_OK);
    EXPECT_EQ(lock_owner_count(a), mark + 1);
}

// A rollback to savepoint downgrades an upgrade and wakes a waiting sharer.
TEST_F(LockMgr, ReleaseSinceDowngradeWakesSharer) {
    lock_owner_t *a = Owner(), *b = Owner();
    ASSERT_EQ(Acq(a, "k", 0), TDB_OK);
    size_t mark = lock_owner_count(a);
    ASSERT_EQ(Acq(a, "k", 1), TDB_OK);
    auto f = AcqAsync(b, "k", 0);
    WaitForWaits(m, 1);
    EXPECT_FALSE(Ready(f));
    lock_release_since(a, mark);
    ASSERT_TRUE(Ready(f, 20000));
    EXPECT_EQ(f.get(), TDB_OK);
    EXPECT_EQ(lock_owner_held(a), 1u);
}

TEST_F(LockMgr, CancelWakesWaiter) {
    lock_owner_t *a = Owner(), *b = Owner();
    ASSERT_EQ(Acq(a, "k", 1), TDB_OK);
    auto f = AcqAsync(b, "k", 1);
    WaitForWaits(m, 1);
    EXPECT_FALSE(Ready(f));
    lock_cancel_wait(b);
    ASSERT_TRUE(Ready(f, 20000));
    EXPECT_EQ(f.get(), TDB_ERR_ABORTED);
    EXPECT_EQ(Stats(m).cancelled, 1u);
    // Once only: the next wait times out normally.
    EXPECT_EQ(Acq(b, "k", 1, 20000), TDB_ERR_TIMEOUT);

    // A cancel while not waiting aborts the next wait at once...
    lock_cancel_wait(b);
    EXPECT_EQ(Acq(b, "free", 1, kLong), TDB_OK);  // no wait: not consumed
    EXPECT_EQ(Acq(b, "k", 0, 0), TDB_ERR_TIMEOUT);  // try-once: not a wait
    auto t0 = Clock::now();
    EXPECT_EQ(Acq(b, "k", 0, kLong), TDB_ERR_ABORTED);
    EXPECT_LT(Clock::now() - t0, std::chrono::seconds(5));
    EXPECT_EQ(Acq(b, "k", 0, 10000), TDB_ERR_TIMEOUT);
    EXPECT_EQ(Stats(m).cancelled, 2u);

    // The cancelled waiter left the queue: others are served normally.
    lock_release_all(a);
    EXPECT_EQ(Acq(b, "k", 1, 0), TDB_OK);
    // Cancel of an upgrade wait.
    lock_release_all(b);
    ASSERT_EQ(Acq(a, "u", 0), TDB_OK);
    ASSERT_EQ(Acq(b, "u", 0), TDB_OK);
    auto g = AcqAsync(a, "u", 1);
    WaitForWaits(m, 3);
    lock_cancel_wait(a);
    EXPECT_EQ(g.get(), TDB_ERR_ABORTED);
    EXPECT_EQ(Acq(b, "u", 0), TDB_OK);
    EXPECT_EQ(Acq(a, "u", 1, 0), TDB_ERR_TIMEOUT);  // still shared only
}

// Waiters are granted in arrival order, and a queued writer is not
// overtaken by later readers.
TEST_F(LockMgr, FifoFairness) {
    lock_owner_t *h = Owner();
    ASSERT_EQ(Acq(h, "k", 1), TDB_OK);
    const int kN = 5;
    std::vector<lock_owner_t *> ws;
    for (int i = 0; i < kN; i++) ws.push_back(Owner());
    std::mutex mu;
    std::vector<int> order;
    std::vector<std::thread> ts;
    for (int i = 0; i < kN; i++) {
        ts.emplace_back([&, i] {
            ASSERT_EQ(Acq(ws[i], "k", 1, kLong), TDB_OK);
            {
                std::lock_guard<std::mutex> g(mu);
                order.push_back(i);
            }
            lock_release_all(ws[i]);
        });
        WaitForWaits(m, i + 1);
    }
    lock_release_all(h);
    for (auto &t : ts) t.join();
    std::vector<int> want;
    for (int i = 0; i < kN; i++) want.push_back(i);
    EXPECT_EQ(order, want);

    // Reader holds; a writer queues; later readers queue behind it.
    lock_owner_t *r1 = ws[0], *w = ws[1], *r2 = ws[2], *r3 = ws[3];
    ASSERT_EQ(Acq(r1, "q", 0), TDB_OK);
    uint64_t waits = Stats(m).waits;
    auto fw = AcqAsync(w, "q", 1);
    WaitForWaits(m, waits + 1);
    EXPECT_EQ(Acq(r2, "q", 0, 0), TDB_ERR_TIMEOUT);
    auto fr = AcqAsync(r3, "q", 0);
    WaitForWaits(m, waits + 2);
    lock_release_all(r1);
    EXPECT_EQ(fw.get(), TDB_OK);
    EXPECT_FALSE(Ready(fr, 20));
    lock_release_all(w);
    EXPECT_EQ(fr.get(), TDB_OK);

    // Consecutive readers at the front are granted together.
    lock_release_all(r3);
    ASSERT_EQ(Acq(w, "z", 1), TDB_OK);
    waits = Stats(m).waits;
    auto a1 = AcqAsync(r1, "z", 0);
    WaitForWaits(m, waits + 1);
    auto a2 = AcqAsync(r2, "z", 0);
    WaitForWaits(m, waits + 2);
    lock_release_all(w);
    EXPECT_EQ(a1.get(), TDB_OK);
    EXPECT_EQ(a2.get(), TDB_OK);
}

TEST_F(LockMgr, Stats) {
    lock_owner_t *a = Owner(), *b = Owner();
    lock_stats_t s = Stats(m);
    EXPECT_EQ(s.acquired + s.waits + s.deadlocks + s.timeouts + s.cancelled + s.held, 0u);
    ASSERT_EQ(Acq(a, "1", 1), TDB_OK);
    ASSERT_EQ(Acq(a, "2", 0), TDB_OK);
    ASSERT_EQ(Acq(a, "2", 0), TDB_OK);
    EXPECT_EQ(Acq(b, "1", 0, 0), TDB_ERR_TIMEOUT);
    ASSERT_EQ(Acq(b, "2", 0), TDB_OK);
    auto f = AcqAsync(b, "1", 0);
    WaitForWaits(m, 1);
    lock_release_all(a);
    EXPECT_EQ(f.get(), TDB_OK);
    s = Stats(m);
    EXPECT_EQ(s.acquired, 5u);
    EXPECT_EQ(s.waits, 1u);
    EXPECT_EQ(s.timeouts, 1u);
    EXPECT_EQ(s.deadlocks, 0u);
    EXPECT_EQ(s.cancelled, 0u);
    EXPECT_EQ(s.held, 2u);
    lock_owner_destroy(b);  // destroy releases
    owners.pop_back();
    EXPECT_EQ(Stats(m).held, 0u);
}

TEST_F(LockMgr, ManyKeysAndOwners) {
    // Enough heads to grow stripe tables; all released at the end.
    std::vector<lock_owner_t *> os;
    for (int i = 0; i < 8; i++) os.push_back(Owner());
    for (int i = 0; i < 20000; i++) {
        ASSERT_EQ(Acq(os[i % 8], tdbtest::Key(i), i % 3 == 0), TDB_OK);
        ASSERT_EQ(Acq(os[(i + 1) % 8], tdbtest::Key(i), 0, 0), i % 3 == 0 ? TDB_ERR_TIMEOUT : TDB_OK);
    }
    for (auto *o : os) lock_release_all(o);
    EXPECT_EQ(Stats(m).held, 0u);
    for (int i = 0; i < 20000; i++) ASSERT_EQ(Acq(os[0], tdbtest::Key(i), 1, 0), TDB_OK);
}

namespace {

// Randomized stress: kThreads transactions lock random keys in random
// order and modes, checking exclusion with per-key counters.
struct StressResult {
    uint64_t ok = 0, deadlock = 0, timeout = 0, aborted = 0, other = 0;
};

void RunStress(lock_mgr_t *m, int threads, int txns, int nkeys, int64_t timeout_us, bool cancels, StressResult *res) {
    std::vector<std::atomic<int>> readers(nkeys), writers(nkeys);
    for (int i = 0; i < nkeys; i++) readers[i] = writers[i] = 0;
    std::vector<lock_owner_t *> os;
    for (int i = 0; i < threads; i++) os.push_back(lock_owner_create(m, 1000 + i));
    std::vector<StressResult> r(threads);
    std::atomic<bool> stop{false};
    std::thread canceller;
    if (cancels) {
        canceller = std::thread([&] {
            std::mt19937 rng(5);
            while (!stop.load()) {
                lock_cancel_wait(os[rng() % threads]);
                std::this_thread::sleep_for(std::chrono::microseconds(200));
            }
        });
    }
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; t++) {
        ts.emplace_back([&, t] {
            std::mt19937_64 rng(1234 + t);
            lock_owner_t *o = os[t];
            for (int x = 0; x < txns; x++) {
                std::vector<int> held(nkeys, 0);  // 0 none, 1 shared, 2 exclusive
                int n = 2 + (int)(rng() % 4);
                bool failed = false;
                for (int j = 0; j < n && !failed; j++) {
                    int k = (int)(rng() % nkeys);
                    int excl = rng() % 3 != 0;
                    size_t mark = lock_owner_count(o);
                    int rc = lock_acquire(o, 0, Sl(tdbtest::Key(k, 4)), excl, timeout_us);
                    if (rc == TDB_OK) {
                        r[t].ok++;
                        int want = excl ? 2 : 1, prev = held[k];
                        if (prev >= want) continue;  // re-entrant no-op
                        if (prev == 1) readers[k]--;
                        if (want == 2) {
                            EXPECT_EQ(++writers[k], 1) << "two writers on key " << k;
                            EXPECT_EQ(readers[k].load(), 0) << "reader and writer on key " << k;
                        } else {
                            readers[k]++;
                            EXPECT_EQ(writers[k].load(), 0) << "writer and reader on key " << k;
                        }
                        held[k] = want;
                        // Sometimes undo the step like a rollback to savepoint:
                        // a new lock goes away, an upgrade becomes shared again.
                        if (rng() % 8 == 0) {
                            EXPECT_EQ(lock_owner_count(o), mark + 1);
                            if (want == 2) writers[k]--;
                            else readers[k]--;
                            lock_release_since(o, mark);
                            held[k] = prev;
                            if (prev == 1) {
                                readers[k]++;
                                EXPECT_EQ(writers[k].load(), 0);
                            }
                        }
                    } else {
                        if (rc == TDB_ERR_DEADLOCK) r[t].deadlock++;
                        else if (rc == TDB_ERR_TIMEOUT) r[t].timeout++;
                        else if (rc == TDB_ERR_ABORTED) r[t].aborted++;
                        else r[t].other++;
                        failed = true;
                    }
                }
                if (rng() % 4 == 0) std::this_thread::yield();
                for (int k = 0; k < nkeys; k++) {
                    if (held[k] == 2) writers[k]--;
                    else if (held[k] == 1) readers[k]--;
                }
                lock_release_all(o);
                EXPECT_EQ(lock_owner_held(o), 0u);
            }
        });
    }
    for (auto &t : ts) t.join();
    stop = true;
    if (canceller.joinable()) canceller.join();
    for (auto *o : os) lock_owner_destroy(o);
    for (auto &x : r) {
        res->ok += x.ok;
        res->deadlock += x.deadlock;
        res->timeout += x.timeout;
        res->aborted += x.aborted;
        res->other += x.other;
    }
}

}  // namespace

// 8 threads, random lock orders: every acquisition ends in OK / DEADLOCK /
// TIMEOUT, exclusion holds, and no thread hangs. With a long timeout and
// short critical sections every wait-for cycle must be found by detection,
// so no wait times out.
TEST_F(LockMgr, RandomizedStress) {
    auto t0 = Clock::now();
    StressResult res;
    RunStress(m, 8, 2000, 12, 10 * 1000 * 1000, false, &res);
    auto secs = std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - t0).count();
    EXPECT_LT(secs, 120);
    EXPECT_EQ(res.other, 0u);
    EXPECT_EQ(res.aborted, 0u);
    EXPECT_EQ(res.timeout, 0u);
    EXPECT_GT(res.ok, 0u);
    lock_stats_t s = Stats(m);
    EXPECT_EQ(s.deadlocks, res.deadlock);
    EXPECT_EQ(s.held, 0u);
    printf("stress: ok=%llu deadlocks=%llu timeouts=%llu waits=%llu in %llds\n", (unsigned long long)res.ok,
           (unsigned long long)res.deadlock, (unsigned long long)res.timeout, (unsigned long long)s.waits,
           (long long)secs);
}

// Short timeouts and a thread cancelling random waits: results are only
// OK / DEADLOCK / TIMEOUT / ABORTED, and nothing hangs or leaks.
TEST_F(LockMgr, RandomizedStressTimeoutsAndCancels) {
    auto t0 = Clock::now();
    StressResult res;
    RunStress(m, 8, 1000, 8, 300, true, &res);
    EXPECT_LT(Clock::now() - t0, std::chrono::seconds(120));
    printf("stress: ok=%llu deadlocks=%llu timeouts=%llu aborted=%llu\n", (unsigned long long)res.ok,
           (unsigned long long)res.deadlock, (unsigned long long)res.timeout, (unsigned long long)res.aborted);
    EXPECT_EQ(res.other, 0u);
    lock_stats_t s = Stats(m);
    EXPECT_EQ(s.deadlocks, res.deadlock);
    EXPECT_EQ(s.timeouts, res.timeout);
    EXPECT_EQ(s.cancelled, res.aborted);
    EXPECT_EQ(s.held, 0u);
}
