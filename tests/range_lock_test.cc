// Unit tests for the lock manager's range locks (lock_acquire_range): a
// writer inside another owner's range waits, outside or in its own range it
// does not; bounds (inclusive, exclusive, unbounded); ranges and shared key
// locks never conflict; a range waits for write locks already held inside;
// deadlocks between range and row locks (both directions); timeouts and
// try-once, cancel, savepoint release, lock-wait listing, and a threaded
// stress that checks no write lock is ever granted inside another owner's
// range.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "lock_mgr_testutil.h"

namespace {

// Range [lo, hi) (hi_incl: [lo, hi]); hi "" with inf: unbounded.
int Range(lock_owner_t *o, const std::string &lo, const std::string &hi, bool inf = false, bool incl = false,
          int64_t t = 0) {
    slice_t h = Sl(hi); // hi outlives the call
    return lock_acquire_range(o, 0, Sl(lo), inf ? nullptr : &h, incl, 1, t, nullptr);
}

struct RangeLock : LockMgrFixture {};

TEST_F(RangeLock, WriterInsideWaitsOutsideDoesNot) {
    auto *a = Owner(), *b = Owner();
    ASSERT_EQ(Range(a, "c", "f"), TDB_OK);  // [c, f)
    EXPECT_EQ(Acq(b, "d", 1), TDB_ERR_TIMEOUT);
    EXPECT_EQ(Acq(b, "c", 1), TDB_ERR_TIMEOUT);
    EXPECT_EQ(Acq(b, "e\xff", 1), TDB_ERR_TIMEOUT);
    EXPECT_EQ(Acq(b, "f", 1), TDB_OK);  // hi is exclusive
    EXPECT_EQ(Acq(b, "b\xff", 1), TDB_OK);
    EXPECT_EQ(Acq(b, "a", 1), TDB_OK);
    EXPECT_EQ(Acq(b, "d", 0), TDB_OK);  // shared key locks pass
    EXPECT_EQ(Acq(a, "d", 1, 0), TDB_ERR_TIMEOUT);  // b's shared lock, not the range
    // A failed range wait gives the key lock back: b holds f, b\xff, a, d.
    EXPECT_EQ(lock_owner_held(b), 4u);
    EXPECT_EQ(Acq(a, "e", 1), TDB_OK);  // own range never blocks
    EXPECT_GE(Stats(m).timeouts, 3u);
}

TEST_F(RangeLock, Bounds) {
    auto *a = Owner(), *b = Owner();
    ASSERT_EQ(Range(a, "k", "m", false, true), TDB_OK);  // [k, m]
    EXPECT_EQ(Acq(b, "m", 1), TDB_ERR_TIMEOUT);
    EXPECT_EQ(Acq(b, "m\x01", 1), TDB_OK);
    ASSERT_EQ(Range(a, "x", "", true), TDB_OK);  // [x, +inf)
    EXPECT_EQ(Acq(b, "zzzz", 1), TDB_ERR_TIMEOUT);
    EXPECT_EQ(Acq(b, "w", 1), TDB_OK);
    ASSERT_EQ(Range(a, "", "b"), TDB_OK);  // [first, b)
    EXPECT_EQ(Acq(b, "\x01", 1), TDB_ERR_TIMEOUT);
    EXPECT_EQ(Acq(b, "b", 1), TDB_OK);
    // Other families are not covered.
    EXPECT_EQ(lock_acquire(b, 7, Sl("l"), 1, 0), TDB_OK);
}

TEST_F(RangeLock, RangesDoNotConflict) {
    auto *a = Owner(), *b = Owner();
    ASSERT_EQ(Range(a, "a", "z"), TDB_OK);
    ASSERT_EQ(Range(b, "c", "f"), TDB_OK);
    ASSERT_EQ(Acq(b, "q", 0), TDB_OK);
    ASSERT_EQ(Range(a, "p", "r"), TDB_OK);  // b's shared lock inside: no wait
    EXPECT_EQ(Stats(m).ranges, 3u);
}

TEST_F(RangeLock, WriterProceedsWhenRangeReleased) {
    auto *a = Owner(), *b = Owner();
    ASSERT_EQ(Range(a, "c", "f"), TDB_OK);
    auto f = std::async(std::launch::async, [&] { return Acq(b, "d", 1, kLong); });
    WaitForWaits(m, 1);
    EXPECT_FALSE(Ready(f, 20));
    EXPECT_EQ(Stats(m).range_waits, 1u);
    lock_release_all(a);
    EXPECT_EQ(f.get(), TDB_OK);
    EXPECT_EQ(lock_owner_held(b), 1u);
}

TEST_F(RangeLock, RangeWaitsForWriteLockInside) {
    auto *a = Owner(), *b = Owner();
    ASSERT_EQ(Acq(b, "d", 1), TDB_OK);
    EXPECT_EQ(Range(a, "c", "f", false, false, 0), TDB_ERR_TIMEOUT);  // try once
    EXPECT_EQ(lock_owner_held(a), 0u);                                // nothing kept
    EXPECT_EQ(Stats(m).ranges, 0u);
    auto f = std::async(std::launch::async, [&] { return Range(a, "c", "f", false, false, kLong); });
    WaitForWaits(m, 1);
    EXPECT_FALSE(Ready(f, 20));
    lock_release_all(b);
    EXPECT_EQ(f.get(), TDB_OK);
    EXPECT_EQ(lock_owner_held(a), 2u);  // the range and a shared lock on d
    EXPECT_EQ(Acq(b, "e", 1), TDB_ERR_TIMEOUT);
}

// A writer held up by A's own range does not hold up A's next range over
// its key (A re-reading the range it locked): no wait, no deadlock. The
// writer then waits for the new range too until A ends.
TEST_F(RangeLock, WriterBlockedByMyRangeDoesNotBlockMyNextRange) {
    auto *a = Owner(), *b = Owner();
    ASSERT_EQ(Range(a, "c", "f"), TDB_OK);
    auto f = std::async(std::launch::async, [&] { return Acq(b, "d", 1, kLong); });
    WaitForWaits(m, 1);
    EXPECT_EQ(Range(a, "a", "z", false, false, 0), TDB_OK);  // try once: granted
    EXPECT_EQ(Stats(m).deadlocks, 0u);
    EXPECT_EQ(lock_owner_held(a), 2u);  // the two ranges, no lock on d
    EXPECT_FALSE(Ready(f, 20));
    lock_release_all(a);
    EXPECT_EQ(f.get(), TDB_OK);
}

// A holds a range, B a row lock; A waits for B's row, B's insert into A's
// range closes the cycle: B is the victim, A proceeds once B lets go.
TEST_F(RangeLock, DeadlockRangeThenRow) {
    auto *a = Owner(), *b = Owner();
    ASSERT_EQ(Range(a, "a", "m"), TDB_OK);
    ASSERT_EQ(Acq(b, "z", 1), TDB_OK);
    auto f = std::async(std::launch::async, [&] { return Acq(a, "z", 1, kLong); });
    WaitForWaits(m, 1);
    EXPECT_EQ(Acq(b, "c", 1, kLong), TDB_ERR_DEADLOCK);
    EXPECT_EQ(lock_owner_held(b), 1u);  // its key lock on c was given back
    EXPECT_FALSE(Ready(f, 20));
    lock_release_all(b);
    EXPECT_EQ(f.get(), TDB_OK);
    EXPECT_EQ(Stats(m).deadlocks, 1u);
}

// B write-locks d; A's range over d waits for it; B then writes e inside
// A's (published) range: B closes the cycle and is the victim.
TEST_F(RangeLock, DeadlockRowThenRange) {
    auto *a = Owner(), *b = Owner();
    ASSERT_EQ(Acq(b, "d", 1), TDB_OK);
    auto f = std::async(std::launch::async, [&] { return Range(a, "c", "f", false, false, kLong); });
    WaitForWaits(m, 1);
    EXPECT_EQ(Acq(b, "e", 1, kLong), TDB_ERR_DEADLOCK);
    lock_release_all(b);
    EXPECT_EQ(f.get(), TDB_OK);
}

// Two ranges over the same gap, each owner inserts into it: InnoDB's
// classic gap-lock deadlock, one victim.
TEST_F(RangeLock, DeadlockTwoRangesTwoInserts) {
    auto *a = Owner(), *b = Owner();
    ASSERT_EQ(Range(a, "c", "f"), TDB_OK);
    ASSERT_EQ(Range(b, "c", "f"), TDB_OK);
    auto f = std::async(std::launch::async, [&] { return Acq(a, "d", 1, kLong); });
    WaitForWaits(m, 1);
    EXPECT_EQ(Acq(b, "e", 1, kLong), TDB_ERR_DEADLOCK);
    lock_release_all(b);
    EXPECT_EQ(f.get(), TDB_OK);
}

TEST_F(RangeLock, TimeoutAndCancel) {
    auto *a = Owner(), *b = Owner();
    ASSERT_EQ(Range(a, "c", "f"), TDB_OK);
    auto t0 = Clock::now();
    EXPECT_EQ(Acq(b, "d", 1, 50 * 1000), TDB_ERR_TIMEOUT);
    EXPECT_GE(Clock::now() - t0, std::chrono::milliseconds(45));
    EXPECT_EQ(lock_owner_held(b), 0u);
    auto f = std::async(std::launch::async, [&] { return Acq(b, "d", 1, kLong); });
    WaitForWaits(m, 2);
    lock_cancel_wait(b);
    EXPECT_EQ(f.get(), TDB_ERR_ABORTED);
    EXPECT_EQ(lock_owner_held(b), 0u);
}

TEST_F(RangeLock, ReleaseSinceSavepoint) {
    auto *a = Owner(), *b = Owner();
    ASSERT_EQ(Acq(a, "x", 1), TDB_OK);
    size_t mark = lock_owner_count(a);
    ASSERT_EQ(Range(a, "c", "f"), TDB_OK);
    EXPECT_EQ(Acq(b, "d", 1), TDB_ERR_TIMEOUT);
    lock_release_since(a, mark);
    EXPECT_EQ(Stats(m).ranges, 0u);
    EXPECT_EQ(Acq(b, "d", 1), TDB_OK);
    EXPECT_EQ(lock_owner_held(a), 1u);
}

// A scan locked up to its bound and stopped early: narrowing lets the
// waiting writer beyond the last key read through, and keeps the rest.
TEST_F(RangeLock, NarrowWakesWritersOutside) {
    auto *a = Owner(), *b = Owner(), *c = Owner();
    uint64_t rid = 0, other = 0;
    const std::string qs = "q";
    slice_t q = Sl(qs);
    ASSERT_EQ(lock_acquire_range(a, 0, Sl("c"), nullptr, 0, 1, 0, &rid), TDB_OK);  // [c, +inf)
    ASSERT_EQ(lock_acquire_range(a, 0, Sl("a"), &q, 0, 1, 0, &other), TDB_OK);    // [a, q)
    EXPECT_NE(rid, other);
    auto f = std::async(std::launch::async, [&] { return Acq(b, "x", 1, kLong); });
    WaitForWaits(m, 1);
    auto g = std::async(std::launch::async, [&] { return Acq(c, "e", 1, kLong); });
    WaitForWaits(m, 2);
    const std::string es = "e", zs = "z", as = "a", ds = "d";
    slice_t hi = Sl(es);
    ASSERT_EQ(lock_narrow_range(a, rid, nullptr, &hi, 1), TDB_OK);  // [c, e]
    EXPECT_EQ(f.get(), TDB_OK);
    EXPECT_FALSE(Ready(g, 30));  // e is still inside
    slice_t wider = Sl(zs);
    ASSERT_EQ(lock_narrow_range(a, rid, nullptr, &wider, 1), TDB_OK);  // never widens
    EXPECT_EQ(Acq(b, "f", 1), TDB_ERR_TIMEOUT);  // [a, q) still covers f
    slice_t a1 = Sl(as);
    ASSERT_EQ(lock_narrow_range(a, other, nullptr, &a1, 1), TDB_OK);  // [a, a]
    EXPECT_EQ(Acq(b, "f", 1), TDB_OK);
    slice_t lo = Sl(ds);
    ASSERT_EQ(lock_narrow_range(a, rid, &lo, nullptr, 0), TDB_OK);  // [d, e]
    EXPECT_EQ(Acq(b, "c", 1), TDB_OK);
    lock_release_all(a);
    EXPECT_EQ(g.get(), TDB_OK);
    EXPECT_EQ(lock_narrow_range(a, rid, &lo, nullptr, 0), TDB_OK);  // none held: nothing
}

TEST_F(RangeLock, ListWaitsReportsRange) {
    auto *a = Owner(), *b = Owner();
    ASSERT_EQ(Range(a, "c", "f"), TDB_OK);
    auto f = std::async(std::launch::async, [&] { return Acq(b, "d", 1, kLong); });
    WaitForWaits(m, 1);
    lock_wait_info_t *w = nullptr;
    size_t n = 0;
    ASSERT_EQ(lock_mgr_list_waits(m, &w, &n), TDB_OK);
    ASSERT_EQ(n, 1u);
    EXPECT_EQ(w[0].waiter_txn_id, 2u);
    EXPECT_EQ(w[0].holder_txn_id, 1u);
    EXPECT_EQ(w[0].range, 1);
    EXPECT_EQ(std::string(w[0].key, w[0].klen), "c");
    ASSERT_NE(w[0].hi, nullptr);
    EXPECT_EQ(std::string(w[0].hi, w[0].hilen), "f");
    EXPECT_EQ(w[0].hi_inclusive, 0);
    lock_wait_info_free(w, n);
    lock_release_all(a);
    EXPECT_EQ(f.get(), TDB_OK);
}

// Threads take random ranges and write random keys (timeouts and deadlocks
// are normal outcomes). Each records what it holds in a shared model after
// its call returns OK and removes it before releasing; a write lock granted
// inside another's range, or a range granted over another's write lock, is
// a violation.
TEST_F(RangeLock, ThreadedStress) {
    constexpr int kThreads = 6, kRounds = 2000;
    struct Held {
        int owner;
        bool range;
        int lo, hi;  // range [lo, hi) or key lo
    };
    std::mutex mu;
    std::vector<Held> model;
    std::atomic<int> violations{0}, ok_ranges{0}, ok_writes{0}, deadlocks{0};
    std::vector<lock_owner_t *> os;
    for (int i = 0; i < kThreads; i++) os.push_back(Owner());
    auto key = [](int k) {
        char b[8];
        snprintf(b, sizeof b, "%04d", k);
        return std::string(b);
    };
    std::vector<std::thread> th;
    for (int t = 0; t < kThreads; t++) {
        th.emplace_back([&, t] {
            std::mt19937 rng(1234 + t);
            lock_owner_t *o = os[t];
            for (int r = 0; r < kRounds; r++) {
                int steps = 1 + rng() % 4;
                for (int s = 0; s < steps; s++) {
                    int k = rng() % 200;
                    int rc;
                    if (rng() % 3 == 0) {
                        int hi = k + 1 + rng() % 20;
                        const std::string ks = key(k), hs = key(hi);
                        slice_t h = Sl(hs);
                        rc = lock_acquire_range(o, 0, Sl(ks), &h, 0, 1, 20 * 1000, nullptr);
                        if (rc == TDB_OK) {
                            std::lock_guard<std::mutex> g(mu);
                            for (auto &e : model)
                                if (e.owner != t && !e.range && e.lo >= k && e.lo < hi) violations++;
                            model.push_back({t, true, k, hi});
                            ok_ranges++;
                        }
                    } else {
                        const std::string ks = key(k);
                        rc = lock_acquire(o, 0, Sl(ks), 1, 20 * 1000);
                        if (rc == TDB_OK) {
                            std::lock_guard<std::mutex> g(mu);
                            for (auto &e : model)
                                if (e.owner != t && e.range && k >= e.lo && k < e.hi) violations++;
                            model.push_back({t, false, k, k});
                            ok_writes++;
                        }
                    }
                    if (rc == TDB_ERR_DEADLOCK) deadlocks++;
                    if (rc != TDB_OK) break;
                    std::this_thread::yield();
                }
                {
                    std::lock_guard<std::mutex> g(mu);
                    for (size_t i = 0; i < model.size();)
                        if (model[i].owner == t) {
                            model[i] = model.back();
                            model.pop_back();
                        } else {
                            i++;
                        }
                }
                lock_release_all(o);
            }
        });
    }
    for (auto &x : th) x.join();
    EXPECT_EQ(violations.load(), 0);
    EXPECT_GT(ok_ranges.load(), 0);
    EXPECT_GT(ok_writes.load(), 0);
    EXPECT_EQ(Stats(m).ranges, 0u);
    printf("ranges %d writes %d deadlocks %d range waits %llu\n", ok_ranges.load(), ok_writes.load(),
           deadlocks.load(), (unsigned long long)Stats(m).range_waits);
}

}  // namespace
