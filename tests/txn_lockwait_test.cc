// Transactions: who waits for whom (tdb_list_lock_waits) and the lock-wait
// hook (tdb_set_lock_wait_hook), split from txn_test.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "testutil.h"
#include "txn_fixture.h"
#include "tidesdb/tidesdb.h"

namespace {
struct WaitRow {
    uint64_t waiter, holder;
    std::string cf, key;
    int wx, hx;
};
int collect_wait(void *ctx, const tdb_lock_wait_t *w) {
    ((std::vector<WaitRow> *)ctx)
        ->push_back({w->waiter_txn_id, w->holder_txn_id, w->cf_name, std::string((const char *)w->key, w->klen),
                     w->waiter_exclusive, w->holder_exclusive});
    return 0;
}
std::vector<WaitRow> ListWaits(tdb_t *db) {
    std::vector<WaitRow> v;
    int n = tdb_list_lock_waits(db, collect_wait, &v);
    EXPECT_EQ(n, (int)v.size());
    return v;
}
}  // namespace

TEST_F(TxnTest, LockWaitsAreListedWhoWaitsForWhom) {
    tdb_txn_options_t o;
    tdb_txn_options_default(&o);
    o.pessimistic = 1;
    o.isolation = TDB_ISO_READ_COMMITTED;
    o.lock_timeout_ms = 10000;
    tdb_txn_t *h1, *h2, *w1, *w2;
    ASSERT_EQ(tdb_txn_begin(db_, &o, &h1), TDB_OK);
    ASSERT_EQ(tdb_txn_begin(db_, &o, &h2), TDB_OK);
    ASSERT_EQ(tdb_txn_begin(db_, &o, &w1), TDB_OK);
    ASSERT_EQ(tdb_txn_begin(db_, &o, &w2), TDB_OK);
    EXPECT_NE(tdb_txn_id(h1), tdb_txn_id(h2));
    EXPECT_TRUE(ListWaits(db_).empty());
    /* h1 holds "x" exclusively; h1 and h2 share "s". */
    ASSERT_EQ(W(h1, "x", "1"), TDB_OK);
    void *v;
    size_t n;
    ASSERT_EQ(tdb_txn_get_for_update(h1, cf_, "s", 1, 0, &v, &n), TDB_ERR_NOT_FOUND);
    ASSERT_EQ(tdb_txn_get_for_update(h2, cf_, "s", 1, 0, &v, &n), TDB_ERR_NOT_FOUND);
    std::atomic<int> r1{1}, r2{1};
    std::thread t1([&] { r1 = W(w1, "x", "2"); });
    std::thread t2([&] { r2 = W(w2, "s", "2"); });
    std::vector<WaitRow> rows;
    for (int i = 0; i < 500 && rows.size() < 3; i++) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        rows = ListWaits(db_);
    }
    ASSERT_EQ(rows.size(), 3u);
    std::sort(rows.begin(), rows.end(), [](const WaitRow &a, const WaitRow &b) {
        return a.key != b.key ? a.key < b.key : a.holder < b.holder;
    });
    uint64_t lo = std::min(tdb_txn_id(h1), tdb_txn_id(h2)), hi = std::max(tdb_txn_id(h1), tdb_txn_id(h2));
    EXPECT_EQ(rows[0].key, "s");
    EXPECT_EQ(rows[0].waiter, tdb_txn_id(w2));
    EXPECT_EQ(rows[0].holder, lo);
    EXPECT_EQ(rows[1].key, "s");
    EXPECT_EQ(rows[1].holder, hi);
    EXPECT_EQ(rows[0].wx, 1);
    EXPECT_EQ(rows[0].hx, 0);
    EXPECT_EQ(rows[2].key, "x");
    EXPECT_EQ(rows[2].waiter, tdb_txn_id(w1));
    EXPECT_EQ(rows[2].holder, tdb_txn_id(h1));
    EXPECT_EQ(rows[2].wx, 1);
    EXPECT_EQ(rows[2].hx, 1);
    EXPECT_EQ(rows[2].cf, TDB_DEFAULT_CF);
    /* A callback returning non-zero stops the listing. */
    EXPECT_EQ(tdb_list_lock_waits(db_, [](void *, const tdb_lock_wait_t *) { return 1; }, nullptr), 1);
    ASSERT_EQ(tdb_txn_commit(h1), TDB_OK);
    t1.join();
    EXPECT_EQ(r1.load(), TDB_OK);
    rows = ListWaits(db_);
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0].holder, tdb_txn_id(h2));
    ASSERT_EQ(tdb_txn_rollback(h2), TDB_OK);
    t2.join();
    EXPECT_EQ(r2.load(), TDB_OK);
    EXPECT_TRUE(ListWaits(db_).empty());
    EXPECT_EQ(tdb_list_lock_waits(nullptr, collect_wait, nullptr), TDB_ERR_INVALID_ARG);
    for (tdb_txn_t *t : {h1, h2, w1, w2}) tdb_txn_free(t);
}

namespace {
struct HookLog {
    std::mutex mu;
    std::vector<tdb_lock_block_t> calls;
    static void Fn(void *ctx, const tdb_lock_block_t *b) {
        HookLog *l = (HookLog *)ctx;
        std::lock_guard<std::mutex> g(l->mu);
        l->calls.push_back(*b);
    }
    size_t Size() {
        std::lock_guard<std::mutex> g(mu);
        return calls.size();
    }
    std::vector<tdb_lock_block_t> Take() {
        std::lock_guard<std::mutex> g(mu);
        std::vector<tdb_lock_block_t> v;
        v.swap(calls);
        return v;
    }
};
void WaitForCalls(HookLog &l, size_t n) {
    for (int i = 0; i < 2000 && l.Size() < n; i++) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}
}  // namespace

TEST_F(TxnTest, LockWaitHookNamesEveryTransactionAheadBeforeWaiting) {
    HookLog log;
    ASSERT_EQ(tdb_set_lock_wait_hook(nullptr, HookLog::Fn, &log), TDB_ERR_INVALID_ARG);
    ASSERT_EQ(tdb_set_lock_wait_hook(db_, HookLog::Fn, &log), TDB_OK);
    tdb_txn_options_t o;
    tdb_txn_options_default(&o);
    o.pessimistic = 1;
    o.isolation = TDB_ISO_READ_COMMITTED;
    o.lock_timeout_ms = 10000;
    tdb_txn_t *h1, *h2, *q, *w;
    int u1, u2, uq, uw; /* their user pointers */
    ASSERT_EQ(tdb_txn_begin(db_, &o, &h1), TDB_OK);
    /* h1 runs a second time on the same handle: the hook (and the wait
     * listing) must name its new id, not the first run's. */
    ASSERT_EQ(W(h1, "first-run", "1"), TDB_OK);
    ASSERT_EQ(tdb_txn_commit(h1), TDB_OK);
    ASSERT_EQ(tdb_txn_reset(h1, &o), TDB_OK);
    ASSERT_EQ(tdb_txn_begin(db_, &o, &h2), TDB_OK);
    ASSERT_EQ(tdb_txn_begin(db_, &o, &q), TDB_OK);
    ASSERT_EQ(tdb_txn_begin(db_, &o, &w), TDB_OK);
    tdb_txn_set_user(h1, &u1);
    tdb_txn_set_user(h2, &u2);
    tdb_txn_set_user(q, &uq);
    tdb_txn_set_user(w, &uw);
    EXPECT_EQ(tdb_txn_user(q), &uq);
    EXPECT_EQ(tdb_txn_user(nullptr), nullptr);
    void *v;
    size_t n;
    /* Locks that need no wait (new, shared with sharers, re-entrant) never
     * call the hook. */
    ASSERT_EQ(tdb_txn_get_for_update(h1, cf_, "s", 1, 0, &v, &n), TDB_ERR_NOT_FOUND);
    ASSERT_EQ(tdb_txn_get_for_update(h2, cf_, "s", 1, 0, &v, &n), TDB_ERR_NOT_FOUND);
    ASSERT_EQ(tdb_txn_get_for_update(h2, cf_, "s", 1, 0, &v, &n), TDB_ERR_NOT_FOUND);
    ASSERT_EQ(W(q, "x", "q"), TDB_OK);
    EXPECT_EQ(log.Size(), 0u);
    /* q waits for the two sharers; w queues behind q. */
    std::atomic<int> rq{1}, rw{1};
    std::thread tq([&] { rq = W(q, "s", "q"); });
    WaitForCalls(log, 2);
    std::thread tw([&] { rw = W(w, "s", "w"); });
    WaitForCalls(log, 5);
    std::vector<tdb_lock_block_t> c = log.Take();
    ASSERT_EQ(c.size(), 5u);
    std::set<void *> qh = {c[0].blocker_user, c[1].blocker_user};
    EXPECT_EQ(qh, (std::set<void *>{&u1, &u2}));
    for (int i = 0; i < 2; i++) {
        EXPECT_EQ(c[i].waiter_user, &uq);
        EXPECT_EQ(c[i].waiter_txn_id, tdb_txn_id(q));
        EXPECT_EQ(c[i].blocker_holds, 1);
        EXPECT_EQ(c[i].blocker_txn_id, c[i].blocker_user == &u1 ? tdb_txn_id(h1) : tdb_txn_id(h2));
    }
    std::set<void *> wh = {c[2].blocker_user, c[3].blocker_user};
    EXPECT_EQ(wh, (std::set<void *>{&u1, &u2}));
    EXPECT_EQ(c[2].waiter_user, &uw);
    EXPECT_EQ(c[3].blocker_holds, 1);
    EXPECT_EQ(c[4].waiter_user, &uw); /* then the waiter ahead of it */
    EXPECT_EQ(c[4].blocker_user, &uq);
    EXPECT_EQ(c[4].blocker_txn_id, tdb_txn_id(q));
    EXPECT_EQ(c[4].blocker_holds, 0);
    std::vector<WaitRow> rows = ListWaits(db_);
    for (const WaitRow &r : rows)
        EXPECT_TRUE(r.holder == tdb_txn_id(h1) || r.holder == tdb_txn_id(h2)) << r.holder;
    /* A request that does not wait (timeout 0) or that would deadlock is
     * not reported: h1 asking "x" held by q would close h1 -> q -> h1. */
    ASSERT_EQ(tdb_txn_set_lock_timeout(h2, 0), TDB_OK);
    ASSERT_EQ(W(h2, "s", "2"), TDB_ERR_TIMEOUT);
    ASSERT_EQ(W(h1, "x", "1"), TDB_ERR_DEADLOCK);
    EXPECT_EQ(log.Size(), 0u);
    ASSERT_EQ(tdb_txn_commit(h1), TDB_OK);
    ASSERT_EQ(tdb_txn_commit(h2), TDB_OK);
    tq.join();
    EXPECT_EQ(rq.load(), TDB_OK);
    EXPECT_EQ(log.Size(), 0u); /* grants call nothing */
    /* Removed: waits go on unreported. */
    ASSERT_EQ(tdb_set_lock_wait_hook(db_, nullptr, &log), TDB_OK);
    ASSERT_EQ(tdb_txn_commit(q), TDB_OK);
    tw.join();
    EXPECT_EQ(rw.load(), TDB_OK);
    ASSERT_EQ(tdb_txn_reset(q, &o), TDB_OK);
    std::thread tq2([&] { rq = W(q, "s", "q2"); });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ASSERT_EQ(tdb_txn_commit(w), TDB_OK);
    tq2.join();
    EXPECT_EQ(rq.load(), TDB_OK);
    EXPECT_EQ(log.Size(), 0u);
    for (tdb_txn_t *t : {h1, h2, q, w}) tdb_txn_free(t);
}

namespace {
/* An embedder that orders transactions (as MariaDB's parallel replication
 * orders commits): a waiter that must commit first cancels the wait of a
 * later blocker, which then rolls back and retries. */
struct Ordered {
    int order;
    tdb_txn_t *txn;
};
std::atomic<int> g_kills{0};
void KillLater(void *, const tdb_lock_block_t *b) {
    Ordered *w = (Ordered *)b->waiter_user, *h = (Ordered *)b->blocker_user;
    if (w && h && w->order < h->order) {
        g_kills++;
        tdb_txn_cancel_wait(h->txn); /* the one library call the hook may make */
    }
}
}  // namespace

TEST_F(TxnTest, LockWaitHookLetsAnEarlierTransactionCancelALaterHolder) {
    ASSERT_EQ(tdb_set_lock_wait_hook(db_, KillLater, nullptr), TDB_OK);
    tdb_txn_options_t o;
    tdb_txn_options_default(&o);
    o.pessimistic = 1;
    o.isolation = TDB_ISO_READ_COMMITTED;
    o.lock_timeout_ms = 20000;
    Ordered early{1, nullptr}, late{2, nullptr}, other{0, nullptr}; /* other commits first */
    ASSERT_EQ(tdb_txn_begin(db_, &o, &early.txn), TDB_OK);
    ASSERT_EQ(tdb_txn_begin(db_, &o, &late.txn), TDB_OK);
    ASSERT_EQ(tdb_txn_begin(db_, &o, &other.txn), TDB_OK);
    for (Ordered *x : {&early, &late, &other}) tdb_txn_set_user(x->txn, x);
    g_kills = 0;
    /* late holds "k" and is stuck waiting for "m" (held by other, which
     * waits for nothing): without the hook, early's request for "k" would
     * wait out the 20 s timeout. */
    ASSERT_EQ(W(late.txn, "k", "late"), TDB_OK);
    ASSERT_EQ(W(other.txn, "m", "other"), TDB_OK);
    std::atomic<int> rl{1};
    std::thread tl([&] {
        int rc = W(late.txn, "m", "late");
        rl = rc;
        if (rc != TDB_OK) tdb_txn_rollback(late.txn); /* the retry path */
    });
    for (int i = 0; i < 2000 && ListWaits(db_).empty(); i++) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_EQ(g_kills.load(), 0); /* late waiting for other (earlier): no kill */
    auto t0 = std::chrono::steady_clock::now();
    ASSERT_EQ(W(early.txn, "k", "early"), TDB_OK);
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_LT(ms, 5000);
    tl.join();
    EXPECT_EQ(rl.load(), TDB_ERR_ABORTED);
    EXPECT_EQ(g_kills.load(), 1);
    ASSERT_EQ(tdb_txn_commit(early.txn), TDB_OK);
    ASSERT_EQ(tdb_txn_commit(other.txn), TDB_OK);
    /* The retry of late, after early committed, succeeds. */
    ASSERT_EQ(tdb_txn_reset(late.txn, &o), TDB_OK);
    ASSERT_EQ(W(late.txn, "k", "late"), TDB_OK);
    ASSERT_EQ(W(late.txn, "m", "late"), TDB_OK);
    ASSERT_EQ(tdb_txn_commit(late.txn), TDB_OK);
    EXPECT_EQ(Get("k"), "late");
    EXPECT_EQ(Get("m"), "late");
    for (Ordered *x : {&early, &late, &other}) tdb_txn_free(x->txn);
}

