// Helpers shared by the lock manager's unit tests (lock_mgr_test.cc,
// range_lock_test.cc): key locks by string, counters, waiting for a thread
// to queue, and a fixture that owns a manager and its owners and checks at
// the end that nothing is left held.
#ifndef TDB_TESTS_LOCK_MGR_TESTUTIL_H
#define TDB_TESTS_LOCK_MGR_TESTUTIL_H

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <future>
#include <string>
#include <thread>
#include <vector>

extern "C" {
#include "txn/lock_mgr.h"
#include "util/error.h"
}

namespace {

using Clock = std::chrono::steady_clock;
constexpr int64_t kLong = 20 * 1000 * 1000;  // 20 s: "forever" for a test

slice_t Sl(const std::string &s) { return slice_make(s.data(), s.size()); }

int Acq(lock_owner_t *o, const std::string &k, int excl, int64_t t = 0, uint32_t cf = 0) {
    return lock_acquire(o, cf, Sl(k), excl, t);
}

lock_stats_t Stats(lock_mgr_t *m) {
    lock_stats_t s;
    lock_mgr_stats(m, &s);
    return s;
}

// Wait until the manager has recorded at least n waits (a thread is queued).
void WaitForWaits(lock_mgr_t *m, uint64_t n) {
    auto end = Clock::now() + std::chrono::seconds(20);
    while (Stats(m).waits < n) {
        ASSERT_LT(Clock::now(), end) << "no thread started waiting";
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

bool Ready(std::future<int> &f, int ms = 0) {
    return f.wait_for(std::chrono::milliseconds(ms)) == std::future_status::ready;
}

// A manager and the owners a test creates; at the end no lock or range is
// held once every owner is gone.
struct LockMgrFixture : ::testing::Test {
    lock_mgr_t *m = nullptr;
    std::vector<lock_owner_t *> owners;
    void SetUp() override {
        m = lock_mgr_create();
        ASSERT_NE(m, nullptr);
    }
    lock_owner_t *Owner() {
        lock_owner_t *o = lock_owner_create(m, owners.size() + 1);
        EXPECT_NE(o, nullptr);
        owners.push_back(o);
        return o;
    }
    void TearDown() override {
        for (auto *o : owners) lock_owner_destroy(o);
        EXPECT_EQ(Stats(m).held, 0u);
        EXPECT_EQ(Stats(m).ranges, 0u);
        lock_mgr_destroy(m);
    }
};

}  // namespace

#endif
