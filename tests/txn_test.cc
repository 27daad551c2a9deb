// Transactions: Adya's anomalies as deterministic schedules at every
// isolation level (the expected table is the one in docs/design/txn.md),
// savepoints, misuse, pessimistic locks, and a concurrent bank-transfer
// invariant checked by readers and after kill -9 + reopen.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "testutil.h"
#include "txn_fixture.h"
#include "tidesdb/tidesdb.h"

namespace {

// Each schedule returns true when the anomaly happened (every transaction
// that was meant to commit did, and the observations break serializability).
using Schedule = bool (*)(TxnTest *, int iso);

struct Anomaly {
    const char *name;
    Schedule run;
    // Expected at RU, RC, RR, SI, SER: true = the anomaly can occur.
    bool allowed[5];
};

bool G0(TxnTest *f, int iso) {  // dirty write
    f->Set("x", "10"), f->Set("y", "20");
    tdb_txn_t *t1 = f->Begin(iso), *t2 = f->Begin(iso);
    f->W(t1, "x", "11"), f->W(t2, "x", "12"), f->W(t1, "y", "21");
    int c1 = tdb_txn_commit(t1);
    f->W(t2, "y", "22");
    int c2 = tdb_txn_commit(t2);
    tdb_txn_free(t1), tdb_txn_free(t2);
    std::string x = f->Get("x"), y = f->Get("y");
    bool consistent = (x == "11" && y == "21") || (x == "12" && y == "22");
    return !consistent && c1 == TDB_OK && c2 == TDB_OK;
}

bool G1a(TxnTest *f, int iso) {  // aborted read
    f->Set("x", "10");
    tdb_txn_t *t1 = f->Begin(iso), *t2 = f->Begin(iso);
    f->W(t1, "x", "101");
    std::string r1 = f->R(t2, "x");
    tdb_txn_rollback(t1);
    std::string r2 = f->R(t2, "x");
    tdb_txn_commit(t2);
    tdb_txn_free(t1), tdb_txn_free(t2);
    return r1 == "101" || r2 == "101";
}

bool G1b(TxnTest *f, int iso) {  // intermediate read
    f->Set("x", "10");
    tdb_txn_t *t1 = f->Begin(iso), *t2 = f->Begin(iso);
    f->W(t1, "x", "101");
    std::string r1 = f->R(t2, "x");
    f->W(t1, "x", "11");
    tdb_txn_commit(t1);
    std::string r2 = f->R(t2, "x");
    tdb_txn_commit(t2);
    tdb_txn_free(t1), tdb_txn_free(t2);
    return r1 == "101" || r2 == "101";
}

bool G1c(TxnTest *f, int iso) {  // circular information flow
    f->Set("x", "10"), f->Set("y", "20");
    tdb_txn_t *t1 = f->Begin(iso), *t2 = f->Begin(iso);
    f->W(t1, "x", "11"), f->W(t2, "y", "22");
    std::string r1 = f->R(t1, "y"), r2 = f->R(t2, "x");
    int c1 = tdb_txn_commit(t1), c2 = tdb_txn_commit(t2);
    tdb_txn_free(t1), tdb_txn_free(t2);
    return r1 == "22" && r2 == "11" && c1 == TDB_OK && c2 == TDB_OK;
}

bool OTV(TxnTest *f, int iso) {  // observed transaction vanishes
    f->Set("x", "10"), f->Set("y", "20");
    tdb_txn_t *t1 = f->Begin(iso), *t2 = f->Begin(iso), *t3 = f->Begin(iso);
    f->W(t1, "x", "11"), f->W(t1, "y", "19");
    f->W(t2, "x", "12"), f->W(t2, "y", "18");
    tdb_txn_commit(t1);
    int c2 = tdb_txn_commit(t2);
    std::string y = f->R(t3, "y"), x = f->R(t3, "x");
    tdb_txn_commit(t3);
    tdb_txn_free(t1), tdb_txn_free(t2), tdb_txn_free(t3);
    // Having seen T2's y, T3 must also see T2's x.
    return c2 == TDB_OK && y == "18" && x != "12";
}

bool PMP(TxnTest *f, int iso) {  // predicate-many-preceders
    f->Set("emp1", "a"), f->Set("emp2", "b");
    tdb_txn_t *t1 = f->Begin(iso), *t2 = f->Begin(iso);
    int n1 = f->Count(t1, "emp");
    f->W(t2, "emp3", "c");
    tdb_txn_commit(t2);
    int n2 = f->Count(t1, "emp");
    tdb_txn_commit(t1);
    tdb_txn_free(t1), tdb_txn_free(t2);
    return n1 != n2;
}

bool P4(TxnTest *f, int iso) {  // lost update
    f->Set("x", "10");
    tdb_txn_t *t1 = f->Begin(iso), *t2 = f->Begin(iso);
    int a = std::stoi(f->R(t1, "x")), b = std::stoi(f->R(t2, "x"));
    f->W(t1, "x", std::to_string(a + 1));
    f->W(t2, "x", std::to_string(b + 1));
    int c1 = tdb_txn_commit(t1), c2 = tdb_txn_commit(t2);
    tdb_txn_free(t1), tdb_txn_free(t2);
    return c1 == TDB_OK && c2 == TDB_OK && f->Get("x") == "11";
}

bool GSingle(TxnTest *f, int iso) {  // read skew
    f->Set("x", "10"), f->Set("y", "20");
    tdb_txn_t *t1 = f->Begin(iso), *t2 = f->Begin(iso);
    std::string x = f->R(t1, "x");
    f->W(t2, "x", "12"), f->W(t2, "y", "18");
    tdb_txn_commit(t2);
    std::string y = f->R(t1, "y");
    int c1 = tdb_txn_commit(t1);
    tdb_txn_free(t1), tdb_txn_free(t2);
    return c1 == TDB_OK && x == "10" && y == "18";
}

bool G2Item(TxnTest *f, int iso) {  // write skew: keep x + y >= 0
    f->Set("x", "50"), f->Set("y", "50");
    tdb_txn_t *t1 = f->Begin(iso), *t2 = f->Begin(iso);
    int s1 = std::stoi(f->R(t1, "x")) + std::stoi(f->R(t1, "y"));
    int s2 = std::stoi(f->R(t2, "x")) + std::stoi(f->R(t2, "y"));
    if (s1 >= 90) f->W(t1, "x", "-40");
    if (s2 >= 90) f->W(t2, "y", "-40");
    int c1 = tdb_txn_commit(t1), c2 = tdb_txn_commit(t2);
    tdb_txn_free(t1), tdb_txn_free(t2);
    return c1 == TDB_OK && c2 == TDB_OK;
}

bool G2(TxnTest *f, int iso) {  // anti-dependency cycle over a predicate
    f->Set("oncall-a", "1");
    tdb_txn_t *t1 = f->Begin(iso), *t2 = f->Begin(iso);
    // Each adds a row only if the predicate holds at most one row.
    if (f->Count(t1, "oncall-") <= 1) f->W(t1, "oncall-b", "1");
    if (f->Count(t2, "oncall-") <= 1) f->W(t2, "oncall-c", "1");
    int c1 = tdb_txn_commit(t1), c2 = tdb_txn_commit(t2);
    tdb_txn_free(t1), tdb_txn_free(t2);
    return c1 == TDB_OK && c2 == TDB_OK;
}

bool ReadOnlyAnomaly(TxnTest *f, int iso) {  // Fekete et al.: checking x, savings y
    f->Set("x", "0"), f->Set("y", "0");
    tdb_txn_t *t2 = f->Begin(iso);
    int x2 = std::stoi(f->R(t2, "x")), y2 = std::stoi(f->R(t2, "y"));
    tdb_txn_t *t1 = f->Begin(iso);
    int y1 = std::stoi(f->R(t1, "y"));
    f->W(t1, "y", std::to_string(y1 + 20));  // deposit
    int c1 = tdb_txn_commit(t1);
    tdb_txn_t *t3 = f->Begin(iso, false, true);
    std::string x3 = f->R(t3, "x"), y3 = f->R(t3, "y");
    int c3 = tdb_txn_commit(t3);
    // Withdraw 10 from x with a penalty of 1 if x + y would go negative.
    f->W(t2, "x", std::to_string(x2 + y2 - 10 < 0 ? x2 - 11 : x2 - 10));
    int c2 = tdb_txn_commit(t2);
    tdb_txn_free(t1), tdb_txn_free(t2), tdb_txn_free(t3);
    // T3 saw the deposit without the withdrawal, yet T2 (serialized before
    // T1 by its penalty) committed: no serial order explains T3's view.
    return c1 == TDB_OK && c2 == TDB_OK && c3 == TDB_OK && y3 == "20" && x3 == "0";
}

const Anomaly kAnomalies[] = {
    //                          RU     RC     RR     SI     SER
    {"G0", G0, {false, false, false, false, false}},
    {"G1a", G1a, {false, false, false, false, false}},
    {"G1b", G1b, {false, false, false, false, false}},
    {"G1c", G1c, {false, false, false, false, false}},
    {"OTV", OTV, {false, false, false, false, false}},
    {"PMP", PMP, {true, true, false, false, false}},
    {"P4", P4, {true, true, true, false, false}},
    {"G-single", GSingle, {true, true, false, false, false}},
    {"G2-item", G2Item, {true, true, true, true, false}},
    {"G2", G2, {true, true, true, true, false}},
    {"read-only", ReadOnlyAnomaly, {true, true, true, true, false}},
};

TEST_F(TxnTest, AnomalyTableHoldsAtEveryLevel) {
    const char *levels[] = {"READ_UNCOMMITTED", "READ_COMMITTED", "REPEATABLE_READ", "SNAPSHOT", "SERIALIZABLE"};
    for (const Anomaly &a : kAnomalies) {
        for (int iso = 0; iso < 5; iso++) {
            // A fresh database per schedule keeps them independent.
            ASSERT_EQ(tdb_close(db_), TDB_OK);
            db_ = nullptr;
            std::filesystem::remove_all(dir_.path());
            Open();
            bool happened = a.run(this, iso);
            EXPECT_EQ(happened, a.allowed[iso]) << a.name << " at " << levels[iso];
        }
    }
}

TEST_F(TxnTest, ReadsOwnWritesAndIteratorMergesThem) {
    Set("a", "1"), Set("c", "3"), Set("d", "4");
    tdb_txn_t *t = Begin(TDB_ISO_SNAPSHOT);
    W(t, "b", "2");
    ASSERT_EQ(tdb_txn_delete(t, cf_, "c", 1), TDB_OK);
    W(t, "d", "44");
    EXPECT_EQ(R(t, "b"), "2");
    EXPECT_EQ(R(t, "c"), "-");
    EXPECT_EQ(Get("b"), "-");  // invisible outside until commit
    tdb_iter_t *it;
    ASSERT_EQ(tdb_txn_iter_create(t, cf_, &it), TDB_OK);
    std::string seen;
    for (tdb_iter_seek_to_first(it); tdb_iter_valid(it); tdb_iter_next(it)) {
        size_t kl, vl;
        const char *k = (const char *)tdb_iter_key(it, &kl);
        const char *v = (const char *)tdb_iter_value(it, &vl);
        seen += std::string(k, kl) + "=" + std::string(v, vl) + ";";
    }
    EXPECT_EQ(seen, "a=1;b=2;d=44;");
    seen.clear();
    for (tdb_iter_seek_to_last(it); tdb_iter_valid(it); tdb_iter_prev(it)) {
        size_t kl;
        const char *k = (const char *)tdb_iter_key(it, &kl);
        seen += std::string(k, kl);
    }
    EXPECT_EQ(seen, "dba");
    EXPECT_EQ(tdb_txn_commit(t), TDB_ERR_INVALID_ARG) << "iterators must be destroyed first";
    tdb_iter_destroy(it);
    ASSERT_EQ(tdb_txn_commit(t), TDB_OK);
    tdb_txn_free(t);
    EXPECT_EQ(Get("b"), "2");
    EXPECT_EQ(Get("c"), "-");
    EXPECT_EQ(Get("d"), "44");
}

TEST_F(TxnTest, SavepointsNestAndUndoOnlyLaterWrites) {
    tdb_txn_t *t = Begin(TDB_ISO_SNAPSHOT);
    W(t, "a", "1");
    ASSERT_EQ(tdb_txn_savepoint(t, "s1"), TDB_OK);
    W(t, "b", "2");
    W(t, "a", "1b");
    ASSERT_EQ(tdb_txn_savepoint(t, "s2"), TDB_OK);
    W(t, "c", "3");
    ASSERT_EQ(tdb_txn_rollback_to_savepoint(t, "s2"), TDB_OK);
    EXPECT_EQ(R(t, "c"), "-");
    EXPECT_EQ(R(t, "a"), "1b");
    ASSERT_EQ(tdb_txn_rollback_to_savepoint(t, "s1"), TDB_OK);
    EXPECT_EQ(R(t, "a"), "1");
    EXPECT_EQ(R(t, "b"), "-");
    EXPECT_EQ(tdb_txn_rollback_to_savepoint(t, "s2"), TDB_ERR_NOT_FOUND) << "later savepoints are gone";
    W(t, "d", "4");
    ASSERT_EQ(tdb_txn_release_savepoint(t, "s1"), TDB_OK);
    EXPECT_EQ(tdb_txn_rollback_to_savepoint(t, "s1"), TDB_ERR_NOT_FOUND);
    ASSERT_EQ(tdb_txn_commit(t), TDB_OK);
    tdb_txn_free(t);
    EXPECT_EQ(Get("a"), "1");
    EXPECT_EQ(Get("b"), "-");
    EXPECT_EQ(Get("d"), "4");
}

/* A savepoint set again under its name moves to the latest writes, whether
 * it is the newest (a statement's savepoint, set in place) or an older one
 * (then it also becomes the newest). */
TEST_F(TxnTest, SavepointSetAgainMovesToLatestWrites) {
    tdb_txn_t *t = Begin(TDB_ISO_SNAPSHOT);
    W(t, "a", "1");
    ASSERT_EQ(tdb_txn_savepoint(t, "s1"), TDB_OK);
    W(t, "b", "2");
    ASSERT_EQ(tdb_txn_savepoint(t, "s1"), TDB_OK); /* the newest: set in place */
    W(t, "c", "3");
    ASSERT_EQ(tdb_txn_rollback_to_savepoint(t, "s1"), TDB_OK);
    EXPECT_EQ(R(t, "b"), "2") << "written before the savepoint was set again";
    EXPECT_EQ(R(t, "c"), "-");
    ASSERT_EQ(tdb_txn_savepoint(t, "s2"), TDB_OK);
    W(t, "d", "4");
    ASSERT_EQ(tdb_txn_savepoint(t, "s1"), TDB_OK); /* older than s2: moves after it */
    W(t, "e", "5");
    ASSERT_EQ(tdb_txn_rollback_to_savepoint(t, "s1"), TDB_OK);
    EXPECT_EQ(R(t, "d"), "4");
    EXPECT_EQ(R(t, "e"), "-");
    ASSERT_EQ(tdb_txn_rollback_to_savepoint(t, "s2"), TDB_OK) << "s2 is still there";
    EXPECT_EQ(R(t, "d"), "-");
    EXPECT_EQ(tdb_txn_rollback_to_savepoint(t, "s1"), TDB_ERR_NOT_FOUND) << "s1 now came after s2";
    ASSERT_EQ(tdb_txn_commit(t), TDB_OK);
    tdb_txn_free(t);
    EXPECT_EQ(Get("a"), "1");
    EXPECT_EQ(Get("b"), "2");
    EXPECT_EQ(Get("c"), "-");
    EXPECT_EQ(Get("d"), "-");
}

TEST_F(TxnTest, MisuseGetsClearErrors) {
    tdb_txn_t *t = Begin(TDB_ISO_SNAPSHOT);
    W(t, "a", "1");
    ASSERT_EQ(tdb_txn_commit(t), TDB_OK);
    EXPECT_EQ(tdb_txn_commit(t), TDB_ERR_INVALID_ARG);
    EXPECT_EQ(W(t, "a", "2"), TDB_ERR_INVALID_ARG);
    EXPECT_EQ(R(t, "a"), "E" + std::to_string(TDB_ERR_INVALID_ARG));
    EXPECT_EQ(tdb_txn_rollback(t), TDB_ERR_INVALID_ARG);
    ASSERT_EQ(tdb_txn_reset(t, nullptr), TDB_OK);  // reusable
    EXPECT_EQ(R(t, "a"), "1");
    tdb_txn_free(t);

    tdb_txn_t *ro = Begin(TDB_ISO_SNAPSHOT, false, true);
    EXPECT_EQ(W(ro, "a", "2"), TDB_ERR_INVALID_ARG);
    tdb_txn_free(ro);

    tdb_txn_options_t o;
    tdb_txn_options_default(&o);
    o.max_bytes = 1000;
    tdb_txn_t *small;
    ASSERT_EQ(tdb_txn_begin(db_, &o, &small), TDB_OK);
    std::string big(600, 'v');
    EXPECT_EQ(W(small, "k1", big), TDB_OK);
    EXPECT_EQ(W(small, "k2", big), TDB_ERR_TOO_LARGE);
    tdb_txn_free(small);
    o.isolation = 99;
    EXPECT_EQ(tdb_txn_begin(db_, &o, &small), TDB_ERR_INVALID_ARG);
}

TEST_F(TxnTest, ConflictIsRetryable) {
    Set("x", "0");
    tdb_txn_t *t1 = Begin(TDB_ISO_SNAPSHOT), *t2 = Begin(TDB_ISO_SNAPSHOT);
    W(t1, "x", "1");
    W(t2, "x", "2");
    ASSERT_EQ(tdb_txn_commit(t1), TDB_OK);
    EXPECT_EQ(tdb_txn_commit(t2), TDB_ERR_CONFLICT);
    ASSERT_EQ(tdb_txn_reset(t2, nullptr), TDB_OK);
    W(t2, "x", "2");
    EXPECT_EQ(tdb_txn_commit(t2), TDB_OK);
    tdb_txn_free(t1), tdb_txn_free(t2);
    EXPECT_EQ(Get("x"), "2");
}

TEST_F(TxnTest, SnapshotKeepsVersionsThroughCompaction) {
    for (int i = 0; i < 2000; i++) Set(tdbtest::Key(i), "old");
    tdb_txn_t *t = Begin(TDB_ISO_REPEATABLE_READ);
    EXPECT_EQ(R(t, tdbtest::Key(7)), "old");
    for (int i = 0; i < 2000; i++) Set(tdbtest::Key(i), "new");
    ASSERT_EQ(tdb_compact(db_, cf_), TDB_OK);
    EXPECT_EQ(R(t, tdbtest::Key(1999)), "old");
    EXPECT_EQ(Count(t, "k"), 2000);
    ASSERT_EQ(tdb_txn_commit(t), TDB_OK);
    tdb_txn_free(t);
}

// A compaction into the bottom level writes the versions no snapshot needs
// with sequence 0: conflict checks must still see a commit made after a
// transaction's snapshot, and must not see one made before it.
TEST_F(TxnTest, ConflictChecksHoldAfterCompactionToTheBottom) {
    for (int i = 0; i < 2000; i++) Set(tdbtest::Key(i), "old");
    ASSERT_EQ(tdb_compact(db_, cf_), TDB_OK);
    tdb_txn_t *late = Begin(TDB_ISO_SNAPSHOT), *clean = Begin(TDB_ISO_SNAPSHOT);
    Set(tdbtest::Key(7), "after");  // committed after both snapshots
    Set(tdbtest::Key(1000), "after");
    // The new table overlaps the old one: merged into the bottom level.
    ASSERT_EQ(tdb_compact(db_, cf_), TDB_OK);
    W(late, tdbtest::Key(7), "mine");
    EXPECT_EQ(tdb_txn_commit(late), TDB_ERR_CONFLICT);
    W(clean, tdbtest::Key(8), "mine");  // key 8 last changed before the snapshot
    EXPECT_EQ(tdb_txn_commit(clean), TDB_OK) << tdb_last_error();
    tdb_txn_free(late), tdb_txn_free(clean);
    // With no snapshot left, a second compaction rewrites everything at
    // sequence 0; a new transaction still commits cleanly and reads right.
    ASSERT_EQ(tdb_compact(db_, cf_), TDB_OK);
    tdb_txn_t *t = Begin(TDB_ISO_SERIALIZABLE);
    EXPECT_EQ(R(t, tdbtest::Key(7)), "after");
    EXPECT_EQ(R(t, tdbtest::Key(8)), "mine");
    W(t, tdbtest::Key(9), "new");
    EXPECT_EQ(tdb_txn_commit(t), TDB_OK) << tdb_last_error();
    tdb_txn_free(t);
    EXPECT_EQ(Get(tdbtest::Key(9)), "new");
    EXPECT_EQ(Get(tdbtest::Key(1999)), "old");
}

TEST_F(TxnTest, PessimisticLocksBlockTimeOutAndDetectDeadlock) {
    tdb_txn_t *t1 = Begin(TDB_ISO_READ_COMMITTED, true), *t2 = Begin(TDB_ISO_READ_COMMITTED, true);
    ASSERT_EQ(W(t1, "a", "1"), TDB_OK);
    auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(W(t2, "a", "2"), TDB_ERR_TIMEOUT);
    EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(250));
    ASSERT_EQ(W(t2, "b", "2"), TDB_OK);
    // t1 waits for b (held by t2) in a thread; t2 then asks for a: deadlock.
    std::atomic<int> rc1{1};
    std::thread th([&] { rc1 = W(t1, "b", "1"); });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    int rc2 = W(t2, "a", "2");
    EXPECT_EQ(rc2, TDB_ERR_DEADLOCK);
    ASSERT_EQ(tdb_txn_rollback(t2), TDB_OK);  // victim releases: t1 proceeds
    th.join();
    EXPECT_EQ(rc1.load(), TDB_OK);
    ASSERT_EQ(tdb_txn_commit(t1), TDB_OK);
    tdb_txn_free(t1), tdb_txn_free(t2);
    EXPECT_EQ(Get("a"), "1");
    EXPECT_EQ(Get("b"), "1");
}

TEST_F(TxnTest, PessimisticWaitCanBeCancelled) {
    tdb_txn_options_t o;
    tdb_txn_options_default(&o);
    o.pessimistic = 1;
    o.lock_timeout_ms = 10000;
    tdb_txn_t *t1, *t2;
    ASSERT_EQ(tdb_txn_begin(db_, &o, &t1), TDB_OK);
    ASSERT_EQ(tdb_txn_begin(db_, &o, &t2), TDB_OK);
    ASSERT_EQ(W(t1, "k", "1"), TDB_OK);
    std::atomic<int> rc{1};
    std::thread th([&] { rc = W(t2, "k", "2"); });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    tdb_txn_cancel_wait(t2);
    th.join();
    EXPECT_EQ(rc.load(), TDB_ERR_ABORTED);
    tdb_txn_free(t1), tdb_txn_free(t2);
}

TEST_F(TxnTest, PendingCancelIsDroppedWhenTheTransactionBeginsAgain) {
    tdb_txn_t *t1 = Begin(TDB_ISO_READ_COMMITTED, true), *t2 = Begin(TDB_ISO_READ_COMMITTED, true);
    ASSERT_EQ(W(t1, "k", "1"), TDB_OK);
    tdb_txn_cancel_wait(t2); /* not waiting: its next wait is cancelled */
    EXPECT_EQ(W(t2, "k", "2"), TDB_ERR_ABORTED);
    tdb_txn_cancel_wait(t2);
    ASSERT_EQ(tdb_txn_rollback(t2), TDB_OK);
    tdb_txn_options_t o;
    tdb_txn_options_default(&o);
    o.pessimistic = 1;
    o.isolation = TDB_ISO_READ_COMMITTED;
    o.lock_timeout_ms = 10000;
    ASSERT_EQ(tdb_txn_reset(t2, &o), TDB_OK); /* the cancel was for the last run */
    std::atomic<int> rc{1};
    std::thread th([&] { rc = W(t2, "k", "2"); });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ASSERT_EQ(tdb_txn_commit(t1), TDB_OK);
    th.join();
    EXPECT_EQ(rc.load(), TDB_OK);
    tdb_txn_free(t1), tdb_txn_free(t2);
}

TEST_F(TxnTest, LockTimeoutChangesPerRequest) {
    /* Begun with a 300 ms bound; 0 fails a held lock at once, a larger
     * bound waits for the holder, a negative one is refused. */
    tdb_txn_t *t1 = Begin(TDB_ISO_READ_COMMITTED, true), *t2 = Begin(TDB_ISO_READ_COMMITTED, true);
    ASSERT_EQ(W(t1, "k", "1"), TDB_OK);
    EXPECT_EQ(tdb_txn_set_lock_timeout(t2, -1), TDB_ERR_INVALID_ARG);
    EXPECT_EQ(tdb_txn_set_lock_timeout(nullptr, 0), TDB_ERR_INVALID_ARG);
    ASSERT_EQ(tdb_txn_set_lock_timeout(t2, 0), TDB_OK);
    auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(W(t2, "k", "2"), TDB_ERR_TIMEOUT);
    void *v;
    size_t n;
    EXPECT_EQ(tdb_txn_get_for_update(t2, cf_, "k", 1, 0, &v, &n), TDB_ERR_TIMEOUT);
    auto waited = std::chrono::steady_clock::now() - t0;
    EXPECT_LT(std::chrono::duration_cast<std::chrono::milliseconds>(waited).count(), 250);
    /* A free key is still granted with no wait. */
    EXPECT_EQ(W(t2, "other", "2"), TDB_OK);
    ASSERT_EQ(tdb_txn_set_lock_timeout(t2, 10000), TDB_OK);
    std::atomic<int> rc{1};
    std::thread th([&] { rc = W(t2, "k", "2"); });
    std::this_thread::sleep_for(std::chrono::milliseconds(400)); /* past the begin bound */
    ASSERT_EQ(tdb_txn_commit(t1), TDB_OK);
    th.join();
    EXPECT_EQ(rc.load(), TDB_OK);
    ASSERT_EQ(tdb_txn_commit(t2), TDB_OK);
    EXPECT_EQ(Get("k"), "2");
    tdb_txn_free(t1), tdb_txn_free(t2);
}

TEST_F(TxnTest, SavepointRollbackReleasesLaterLocks) {
    tdb_txn_t *t1 = Begin(TDB_ISO_READ_COMMITTED, true), *t2 = Begin(TDB_ISO_READ_COMMITTED, true);
    W(t1, "a", "1");
    ASSERT_EQ(tdb_txn_savepoint(t1, "sp"), TDB_OK);
    W(t1, "b", "1");
    EXPECT_EQ(W(t2, "b", "2"), TDB_ERR_TIMEOUT);
    ASSERT_EQ(tdb_txn_rollback_to_savepoint(t1, "sp"), TDB_OK);
    EXPECT_EQ(W(t2, "b", "2"), TDB_OK);
    EXPECT_EQ(W(t2, "a", "2"), TDB_ERR_TIMEOUT);
    tdb_txn_free(t1), tdb_txn_free(t2);
}

// Bank: money moves between accounts; the total never changes.
constexpr int kAccounts = 20;
constexpr int kStart = 1000;

std::string Acct(int i) { return "acct" + std::to_string(100 + i); }

int Total(tdb_t *db, tdb_cf_t *cf, int iso) {
    tdb_txn_options_t o;
    tdb_txn_options_default(&o);
    o.isolation = iso;
    o.read_only = 1;
    tdb_txn_t *t;
    if (tdb_txn_begin(db, &o, &t) != TDB_OK) return -1;
    int sum = 0;
    for (int i = 0; i < kAccounts; i++) {
        void *v;
        size_t n;
        std::string k = Acct(i);
        if (tdb_txn_get(t, cf, k.data(), k.size(), &v, &n) != TDB_OK) return -2;
        sum += std::stoi(std::string((char *)v, n));
        tdb_free(v);
    }
    tdb_txn_free(t);
    return sum;
}

// One transfer with retries; returns commits. With `gate` (the workers'
// first transfer) it moves money between accounts 0 and 1 and, before its
// first commit, waits until `parties` transfers have read them: those
// commits must collide whatever the scheduler does (a loaded machine may
// otherwise run the workers one after another).
int Transfer(tdb_t *db, tdb_cf_t *cf, int iso, std::mt19937 &rng, std::atomic<int> *conflicts,
             std::atomic<int> *gate = nullptr, int parties = 0) {
    tdb_txn_options_t o;
    tdb_txn_options_default(&o);
    o.isolation = iso;
    tdb_txn_t *t;
    if (tdb_txn_begin(db, &o, &t) != TDB_OK) return 0;
    for (;;) {
        int a = rng() % kAccounts, b = rng() % kAccounts, amt = 1 + rng() % 50;
        if (gate) a = 0, b = 1;
        if (a == b) continue;
        std::string ka = Acct(a), kb = Acct(b);
        void *va, *vb;
        size_t na, nb;
        if (tdb_txn_get(t, cf, ka.data(), ka.size(), &va, &na) != TDB_OK) abort();
        if (tdb_txn_get(t, cf, kb.data(), kb.size(), &vb, &nb) != TDB_OK) abort();
        int ba = std::stoi(std::string((char *)va, na)), bb = std::stoi(std::string((char *)vb, nb));
        tdb_free(va), tdb_free(vb);
        std::string na_s = std::to_string(ba - amt), nb_s = std::to_string(bb + amt);
        tdb_txn_put(t, cf, ka.data(), ka.size(), na_s.data(), na_s.size(), 0);
        tdb_txn_put(t, cf, kb.data(), kb.size(), nb_s.data(), nb_s.size(), 0);
        if (gate) {
            gate->fetch_add(1);
            while (gate->load() < parties) std::this_thread::yield();
            gate = nullptr; /* retries go on unsynchronised */
        }
        int rc = tdb_txn_commit(t);
        if (rc == TDB_OK) break;
        if (rc != TDB_ERR_CONFLICT) abort();
        conflicts->fetch_add(1);
        tdb_txn_reset(t, &o);
    }
    tdb_txn_free(t);
    return 1;
}

void BankRun(TxnTest *f, tdb_t *db, tdb_cf_t *cf, int iso) {
    for (int i = 0; i < kAccounts; i++) f->Set(Acct(i), std::to_string(kStart));
    std::atomic<bool> stop{false};
    std::atomic<int> conflicts{0}, bad{0}, checks{0}, gate{0};
    std::vector<std::thread> ts;
    const int kWorkers = 4;
    for (int w = 0; w < kWorkers; w++) {
        ts.emplace_back([&, w] {
            std::mt19937 rng(w + 7);
            Transfer(db, cf, iso, rng, &conflicts, &gate, kWorkers);
            for (int i = 1; i < 1500; i++) Transfer(db, cf, iso, rng, &conflicts);
        });
    }
    std::thread reader([&] {
        while (!stop) {
            int s = Total(db, cf, TDB_ISO_SNAPSHOT);
            if (s != kAccounts * kStart) bad++;
            checks++;
        }
    });
    for (auto &t : ts) t.join();
    stop = true;
    reader.join();
    EXPECT_EQ(bad.load(), 0);
    EXPECT_GT(checks.load(), 0);
    EXPECT_GE(conflicts.load(), kWorkers - 1) << "the gated first transfers must collide";
    EXPECT_EQ(Total(db, cf, iso), kAccounts * kStart);
}

TEST_F(TxnTest, BankTransfersKeepTotalAtSerializable) { BankRun(this, db_, cf_, TDB_ISO_SERIALIZABLE); }
TEST_F(TxnTest, BankTransfersKeepTotalAtSnapshot) { BankRun(this, db_, cf_, TDB_ISO_SNAPSHOT); }

TEST_F(TxnTest, LockWaitsAreCounted) {
    tdb_stats_t st;
    ASSERT_EQ(tdb_get_stats(db_, nullptr, &st), TDB_OK);
    const uint64_t waits0 = st.lock_waits, timeouts0 = st.lock_timeouts, micros0 = st.lock_wait_micros;
    tdb_txn_t *t1 = Begin(TDB_ISO_READ_COMMITTED, true), *t2 = Begin(TDB_ISO_READ_COMMITTED, true);
    ASSERT_EQ(W(t1, "w", "1"), TDB_OK);
    ASSERT_EQ(W(t2, "v", "2"), TDB_OK);  // uncontended: no wait
    ASSERT_EQ(tdb_get_stats(db_, nullptr, &st), TDB_OK);
    EXPECT_EQ(st.lock_waits, waits0);
    std::atomic<int> rc{1};
    auto t0 = std::chrono::steady_clock::now();
    std::thread th([&] { rc = W(t2, "w", "2"); });  // waits for t1
    while (true) {  // until t2 is queued behind t1
        ASSERT_EQ(tdb_get_stats(db_, nullptr, &st), TDB_OK);
        if (st.lock_waits > waits0) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ASSERT_EQ(tdb_txn_commit(t1), TDB_OK);
    th.join();
    const uint64_t waited = (uint64_t)std::chrono::duration_cast<std::chrono::microseconds>(
                                std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(rc.load(), TDB_OK);
    ASSERT_EQ(tdb_get_stats(db_, nullptr, &st), TDB_OK);
    EXPECT_EQ(st.lock_waits, waits0 + 1);
    EXPECT_EQ(st.lock_timeouts, timeouts0);
    // The wait lasted at least the 50 ms t1 kept the lock after t2 queued,
    // and at most until t2 was joined.
    EXPECT_GE(st.lock_wait_micros - micros0, 50000u);
    EXPECT_LE(st.lock_wait_micros - micros0, waited);
    EXPECT_GE(st.lock_wait_max_micros, st.lock_wait_micros - micros0);
    ASSERT_EQ(tdb_txn_commit(t2), TDB_OK);
    tdb_txn_free(t1), tdb_txn_free(t2);
}

// tdb_txn_unlock_since: a READ COMMITTED locking read that used no row
// gives its lock back; nothing else is released, and the cases where it
// would be unsafe are refused with the lock kept.
class UnlockSinceTest : public TxnTest {
  protected:
    // Can another transaction lock k right now (exclusive, or shared)?
    bool Free(const char *k, int exclusive = 1) {
        tdb_txn_t *o = Begin(TDB_ISO_READ_COMMITTED, true);
        EXPECT_EQ(tdb_txn_set_lock_timeout(o, 0), TDB_OK);
        void *v = nullptr;
        size_t n = 0;
        int rc = tdb_txn_get_for_update(o, cf_, k, strlen(k), exclusive, &v, &n);
        tdb_free(v);
        tdb_txn_rollback(o);
        tdb_txn_free(o);
        EXPECT_TRUE(rc == TDB_OK || rc == TDB_ERR_NOT_FOUND || rc == TDB_ERR_TIMEOUT) << rc;
        return rc != TDB_ERR_TIMEOUT;
    }
    int Lock(tdb_txn_t *t, const char *k, int exclusive = 1) {
        void *v = nullptr;
        size_t n = 0;
        int rc = tdb_txn_get_for_update(t, cf_, k, strlen(k), exclusive, &v, &n);
        tdb_free(v);
        return rc;
    }
    // Lock "b" after mark m, try to give it back (want: the result), check
    // whether it is still held, then end and free t.
    void LockThenUnlock(tdb_txn_t *t, tdb_lock_mark_t m, int want, bool held) {
        EXPECT_EQ(Lock(t, "b"), TDB_OK);
        EXPECT_EQ(tdb_txn_unlock_since(t, &m), want);
        EXPECT_EQ(Free("b"), !held);
        tdb_txn_rollback(t);
        tdb_txn_free(t);
    }
};

TEST_F(UnlockSinceTest, ReleasesOnlyTheLocksTakenAfterTheMark) {
    Set("a", "1"), Set("b", "2");
    tdb_txn_t *t = Begin(TDB_ISO_READ_COMMITTED, true);
    ASSERT_EQ(Lock(t, "a"), TDB_OK);
    tdb_lock_mark_t m = tdb_txn_lock_mark(t);
    ASSERT_EQ(Lock(t, "gone"), TDB_ERR_NOT_FOUND);  // a row deleted before its lock was granted
    ASSERT_EQ(Lock(t, "b"), TDB_OK);
    EXPECT_FALSE(Free("gone"));
    EXPECT_FALSE(Free("b"));
    ASSERT_EQ(tdb_txn_unlock_since(t, &m), TDB_OK);
    EXPECT_TRUE(Free("gone"));
    EXPECT_TRUE(Free("b"));
    EXPECT_FALSE(Free("a"));  // taken before the mark: kept
    // Twice is harmless; a lock taken again is held again.
    EXPECT_EQ(tdb_txn_unlock_since(t, &m), TDB_OK);
    ASSERT_EQ(Lock(t, "b"), TDB_OK);
    EXPECT_FALSE(Free("b"));
    ASSERT_EQ(tdb_txn_commit(t), TDB_OK);
    EXPECT_TRUE(Free("a"));
    tdb_txn_free(t);
}

TEST_F(UnlockSinceTest, AnUpgradeGoesBackToShared) {
    Set("a", "1");
    tdb_txn_t *t = Begin(TDB_ISO_READ_COMMITTED, true);
    ASSERT_EQ(Lock(t, "a", 0), TDB_OK);
    tdb_lock_mark_t m = tdb_txn_lock_mark(t);
    ASSERT_EQ(Lock(t, "a", 1), TDB_OK);
    EXPECT_FALSE(Free("a", 0));
    ASSERT_EQ(tdb_txn_unlock_since(t, &m), TDB_OK);
    EXPECT_TRUE(Free("a", 0));   // shared again: another reader may share it
    EXPECT_FALSE(Free("a", 1));  // but not write it
    ASSERT_EQ(tdb_txn_commit(t), TDB_OK);
    tdb_txn_free(t);
}

TEST_F(UnlockSinceTest, UnsafeReleasesAreRefusedAndKeepTheLock) {
    Set("a", "1"), Set("b", "2");
    // A write after the mark: its lock must stay until commit.
    tdb_txn_t *t = Begin(TDB_ISO_READ_COMMITTED, true);
    tdb_lock_mark_t m = tdb_txn_lock_mark(t);
    ASSERT_EQ(Lock(t, "a"), TDB_OK);
    ASSERT_EQ(W(t, "a", "9"), TDB_OK);
    EXPECT_EQ(tdb_txn_unlock_since(t, &m), TDB_ERR_INVALID_ARG);
    EXPECT_FALSE(Free("a"));
    // A savepoint after the mark.
    m = tdb_txn_lock_mark(t);
    ASSERT_EQ(tdb_txn_savepoint(t, "sp"), TDB_OK);
    ASSERT_EQ(Lock(t, "b"), TDB_OK);
    EXPECT_EQ(tdb_txn_unlock_since(t, &m), TDB_ERR_INVALID_ARG);
    EXPECT_FALSE(Free("b"));
    EXPECT_EQ(tdb_txn_unlock_since(t, nullptr), TDB_ERR_INVALID_ARG);
    ASSERT_EQ(tdb_txn_commit(t), TDB_OK);
    EXPECT_EQ(tdb_txn_unlock_since(t, &m), TDB_ERR_INVALID_ARG);  // not active
    tdb_txn_free(t);
    EXPECT_EQ(Get("a"), "9");
    // Above READ COMMITTED a read keeps its lock.
    t = Begin(TDB_ISO_SNAPSHOT, true);
    LockThenUnlock(t, tdb_txn_lock_mark(t), TDB_ERR_INVALID_ARG, true);
    // A mark of an earlier run of the same handle.
    t = Begin(TDB_ISO_READ_COMMITTED, true);
    m = tdb_txn_lock_mark(t);
    tdb_txn_options_t o;
    tdb_txn_options_default(&o);
    o.isolation = TDB_ISO_READ_COMMITTED;
    o.pessimistic = 1;
    ASSERT_EQ(tdb_txn_reset(t, &o), TDB_OK);
    LockThenUnlock(t, m, TDB_ERR_INVALID_ARG, true);
    // Optimistic transactions hold no locks: nothing to do.
    t = Begin(TDB_ISO_READ_COMMITTED, false);
    LockThenUnlock(t, tdb_txn_lock_mark(t), TDB_OK, false);
}

// Back-pressure at commit: small memtables, writers stop after two queued
// ones, background work paused.
class TxnBackPressureTest : public TxnTest {
  public:
    void SetUp() override {
        tdb_config_t c;
        tdb_config_default(&c);
        c.default_cf.sync_mode = TDB_SYNC_NONE;
        c.default_cf.write_buffer_size = 64 << 10;
        c.default_cf.l0_queue_stall_threshold = 2;
        c.flush_threads = 1;
        c.compaction_threads = 1;
        c.log_level = TDB_LOG_WARN;
        ASSERT_EQ(tdb_open(dir_.path().c_str(), &c, &db_), TDB_OK) << tdb_last_error();
        ASSERT_EQ(tdb_get_cf(db_, TDB_DEFAULT_CF, &cf_), TDB_OK);
    }
    // Pause background work and write until writers are refused.
    void Saturate() {
        ASSERT_EQ(tdb_pause_background(db_), TDB_OK);
        tdb_write_options_t wo;
        tdb_write_options_default(&wo);
        wo.stall_timeout_ms = 100;
        std::string v(1000, 'f');
        int rc = TDB_OK;
        for (int i = 0; i < 100000 && rc == TDB_OK; i++) {
            tdb_batch_t *b;
            ASSERT_EQ(tdb_batch_create(&b), TDB_OK);
            std::string k = "fill" + tdbtest::Key(i);
            tdb_batch_put(b, cf_, k.data(), k.size(), v.data(), v.size(), 0);
            rc = tdb_write_opt(db_, b, &wo);
            tdb_batch_destroy(b);
        }
        ASSERT_EQ(rc, TDB_ERR_BUSY);
    }
    tdb_txn_t *BeginBounded(int iso, bool pessimistic, int64_t stall_ms) {
        tdb_txn_options_t o;
        tdb_txn_options_default(&o);
        o.isolation = iso;
        o.pessimistic = pessimistic;
        o.lock_timeout_ms = 100;
        o.stall_timeout_ms = stall_ms;
        tdb_txn_t *t = nullptr;
        EXPECT_EQ(tdb_txn_begin(db_, &o, &t), TDB_OK);
        return t;
    }
};

TEST_F(TxnBackPressureTest, BusyCommitKeepsTransactionForRetry) {
    Saturate();
    const int64_t bound = 250;
    tdb_txn_t *t = BeginBounded(TDB_ISO_SNAPSHOT, true, bound);
    ASSERT_EQ(W(t, "k1", "v1"), TDB_OK);
    ASSERT_EQ(tdb_txn_savepoint(t, "sp"), TDB_OK);
    ASSERT_EQ(W(t, "k2", "v2"), TDB_OK);
    auto t0 = std::chrono::steady_clock::now();
    ASSERT_EQ(tdb_txn_commit(t), TDB_ERR_BUSY);
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_GE(ms, bound);
    EXPECT_LE(ms, bound + 1000);
    EXPECT_NE(std::string(tdb_last_error()).find("back-pressure"), std::string::npos) << tdb_last_error();
    // Still active: its writes, savepoint and locks are all there.
    EXPECT_EQ(Get("k1"), "-");
    EXPECT_EQ(R(t, "k1"), "v1");
    EXPECT_EQ(R(t, "k2"), "v2");
    tdb_txn_t *other = BeginBounded(TDB_ISO_READ_COMMITTED, true, 0);
    EXPECT_EQ(W(other, "k1", "x"), TDB_ERR_TIMEOUT) << "the busy commit kept its row lock";
    ASSERT_EQ(tdb_txn_rollback_to_savepoint(t, "sp"), TDB_OK);
    ASSERT_EQ(W(t, "k3", "v3"), TDB_OK);
    ASSERT_EQ(tdb_txn_commit(t), TDB_ERR_BUSY);  // still refused: nothing changed
    ASSERT_EQ(tdb_continue_background(db_), TDB_OK);
    ASSERT_EQ(tdb_txn_commit(t), TDB_OK) << tdb_last_error();
    EXPECT_EQ(Get("k1"), "v1");
    EXPECT_EQ(Get("k2"), "-");
    EXPECT_EQ(Get("k3"), "v3");
    EXPECT_EQ(W(other, "k1", "x"), TDB_OK) << "locks released by the commit";
    ASSERT_EQ(tdb_txn_commit(other), TDB_OK);
    EXPECT_EQ(Get("k1"), "x");
    tdb_txn_free(t);
    tdb_txn_free(other);
}

TEST_F(TxnBackPressureTest, BusyOptimisticCommitCanRollBack) {
    Saturate();
    tdb_txn_t *t = BeginBounded(TDB_ISO_SERIALIZABLE, false, 100);
    EXPECT_EQ(R(t, "r0"), "-");
    ASSERT_EQ(W(t, "r", "1"), TDB_OK);
    ASSERT_EQ(tdb_txn_commit(t), TDB_ERR_BUSY);
    EXPECT_EQ(R(t, "r"), "1");
    ASSERT_EQ(tdb_txn_rollback(t), TDB_OK);
    EXPECT_EQ(tdb_txn_commit(t), TDB_ERR_INVALID_ARG) << "finished after the rollback";
    ASSERT_EQ(tdb_continue_background(db_), TDB_OK);
    ASSERT_EQ(tdb_wait_idle(db_), TDB_OK);
    EXPECT_EQ(Get("r"), "-");
    tdb_txn_free(t);
}

TEST(TxnCrash, BankTotalSurvivesKillNine) {
    TempDir dir;
    for (int cycle = 0; cycle < 3; cycle++) {
        auto child = [&] {
            tdb_config_t c;
            tdb_config_default(&c);
            c.default_cf.write_buffer_size = 128 << 10;
            c.log_level = TDB_LOG_WARN;
            tdb_t *db;
            tdb_cf_t *cf;
            if (tdb_open(dir.path().c_str(), &c, &db) != TDB_OK) _exit(2);
            tdb_get_cf(db, TDB_DEFAULT_CF, &cf);
            void *v;
            size_t n;
            std::string k0 = Acct(0);
            if (tdb_get(db, cf, nullptr, k0.data(), k0.size(), &v, &n) == TDB_ERR_NOT_FOUND) {
                tdb_batch_t *b;  // all accounts appear atomically
                tdb_batch_create(&b);
                for (int i = 0; i < kAccounts; i++) {
                    std::string k = Acct(i), val = std::to_string(kStart);
                    tdb_batch_put(b, cf, k.data(), k.size(), val.data(), val.size(), 0);
                }
                if (tdb_write(db, b) != TDB_OK) _exit(3);
                tdb_batch_destroy(b);
            } else {
                tdb_free(v);
            }
            std::atomic<int> conflicts{0};
            std::vector<std::thread> ts;
            for (int w = 0; w < 3; w++)
                ts.emplace_back([&, w] {
                    std::mt19937 rng(w * 31 + getpid());
                    for (;;) Transfer(db, cf, TDB_ISO_SERIALIZABLE, rng, &conflicts);
                });
            for (auto &t : ts) t.join();
            _exit(0);
        };
        auto wait = [&] { std::this_thread::sleep_for(std::chrono::milliseconds(400 + cycle * 300)); };
        int st = tdbtest::KillNine(child, wait);
        ASSERT_NE(st, -1) << "fork failed";
        tdb_config_t c;
        tdb_config_default(&c);
        c.log_level = TDB_LOG_WARN;
        tdb_t *db;
        tdb_cf_t *cf;
        ASSERT_EQ(tdb_open(dir.path().c_str(), &c, &db), TDB_OK) << tdb_last_error();
        ASSERT_EQ(tdb_get_cf(db, TDB_DEFAULT_CF, &cf), TDB_OK);
        EXPECT_EQ(Total(db, cf, TDB_ISO_SERIALIZABLE), kAccounts * kStart) << "cycle " << cycle;
        ASSERT_EQ(tdb_close(db), TDB_OK);
    }
}

}  // namespace
