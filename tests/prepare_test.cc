// Two-phase commit (docs/design/txn.md, "Two-phase commit"): prepare, then
// commit or rollback in the process, through a clean close and after kill -9;
// prepared transactions across flushes, compactions and WAL rotation; the
// keys a prepared transaction holds; misuse; a COMMIT marker left unsynced
// (tdb_commit_options_t.no_sync) across a simulated power loss.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "db/batch.h"
#include "db/filename.h"
#include "env/env.h"
#include "fault_testutil.h"
#include "testutil.h"
#include "tidesdb/tidesdb.h"
#include "wal/wal.h"

using tdbtest::TempDir;

namespace {

tdb_config_t Config(int sync, size_t write_buffer = 256 << 10) {
    tdb_config_t c;
    tdb_config_default(&c);
    c.default_cf.sync_mode = sync;
    c.default_cf.write_buffer_size = write_buffer;
    c.log_level = TDB_LOG_WARN;
    return c;
}

int CollectXid(void *ctx, const void *xid, size_t n) {
    static_cast<std::set<std::string> *>(ctx)->insert(std::string((const char *)xid, n));
    return 0;
}

class PrepareTest : public ::testing::Test {
  public:
    void SetUp() override { Open(); }
    void TearDown() override {
        if (db_) {
            EXPECT_EQ(tdb_close(db_), TDB_OK) << tdb_last_error();
        }
    }
    void Open(int sync = TDB_SYNC_NONE, size_t write_buffer = 256 << 10) {
        tdb_config_t c = Config(sync, write_buffer);
        ASSERT_EQ(tdb_open(dir_.path().c_str(), &c, &db_), TDB_OK) << tdb_last_error();
        ASSERT_EQ(tdb_get_cf(db_, TDB_DEFAULT_CF, &cf_), TDB_OK);
    }
    void Reopen(int sync = TDB_SYNC_NONE, size_t write_buffer = 256 << 10) {
        ASSERT_EQ(tdb_close(db_), TDB_OK) << tdb_last_error();
        db_ = nullptr;
        Open(sync, write_buffer);
    }
    tdb_txn_t *Begin(bool pessimistic = false, int iso = TDB_ISO_SNAPSHOT) {
        tdb_txn_options_t o;
        tdb_txn_options_default(&o);
        o.isolation = iso;
        o.pessimistic = pessimistic;
        o.lock_timeout_ms = 100;
        tdb_txn_t *t = nullptr;
        EXPECT_EQ(tdb_txn_begin(db_, &o, &t), TDB_OK);
        return t;
    }
    // A transaction that wrote kv pairs and is prepared as xid.
    tdb_txn_t *Prepared(const std::string &xid, const std::vector<std::pair<std::string, std::string>> &kv,
                        bool pessimistic = false) {
        tdb_txn_t *t = Begin(pessimistic);
        for (auto &p : kv)
            EXPECT_EQ(tdb_txn_put(t, cf_, p.first.data(), p.first.size(), p.second.data(), p.second.size(), 0), TDB_OK);
        EXPECT_EQ(tdb_txn_prepare(t, xid.data(), xid.size(), 1), TDB_OK) << tdb_last_error();
        return t;
    }
    int Get(const std::string &k, std::string *v = nullptr, const tdb_snapshot_t *s = nullptr) {
        void *p;
        size_t n;
        int rc = tdb_get(db_, cf_, s, k.data(), k.size(), &p, &n);
        if (rc == TDB_OK) {
            if (v) *v = std::string((char *)p, n);
            tdb_free(p);
        }
        return rc;
    }
    std::set<std::string> Listed() {
        std::set<std::string> xids;
        int n = tdb_recover_prepared(db_, CollectXid, &xids);
        EXPECT_EQ(n, (int)xids.size());
        return xids;
    }
    // Commit of a transaction writing k (optimistic, SNAPSHOT).
    int CommitOther(const std::string &k, bool pessimistic = false) {
        tdb_txn_t *t = Begin(pessimistic);
        int rc = tdb_txn_put(t, cf_, k.data(), k.size(), "o", 1, 0);
        if (rc == TDB_OK) rc = tdb_txn_commit(t);
        tdb_txn_free(t);
        return rc;
    }
    uint64_t LastSeq() {
        tdb_stats_t s;
        EXPECT_EQ(tdb_get_stats(db_, nullptr, &s), TDB_OK);
        return s.last_sequence;
    }
    uint64_t WalBytes() {
        tdb_stats_t s;
        EXPECT_EQ(tdb_get_stats(db_, nullptr, &s), TDB_OK);
        return s.wal_bytes_written;
    }
    std::set<std::string> Logs() {
        std::set<std::string> v;
        for (auto &e : std::filesystem::directory_iterator(dir_.path()))
            if (e.path().extension() == ".log") v.insert(e.path().filename().string());
        return v;
    }

    TempDir dir_;
    tdb_t *db_ = nullptr;
    tdb_cf_t *cf_ = nullptr;
};

TEST_F(PrepareTest, CommitInProcessMakesWritesVisibleOnlyThen) {
    ASSERT_EQ(tdb_put(db_, cf_, "a", 1, "old", 3, 0), TDB_OK);
    uint64_t seq0 = LastSeq();
    tdb_txn_t *t = Prepared("xid-1", {{"a", "new"}, {"b", "B"}});
    EXPECT_EQ(LastSeq(), seq0) << "a prepare takes no sequence numbers";
    std::string v;
    ASSERT_EQ(Get("a", &v), TDB_OK);
    EXPECT_EQ(v, "old");
    EXPECT_EQ(Get("b"), TDB_ERR_NOT_FOUND);
    EXPECT_EQ(Listed(), std::set<std::string>{"xid-1"});
    tdb_snapshot_t *before = tdb_snapshot_create(db_);
    // Owned by a live handle: not resolvable by xid.
    EXPECT_EQ(tdb_commit_prepared(db_, "xid-1", 5), TDB_ERR_BUSY);
    EXPECT_EQ(tdb_rollback_prepared(db_, "xid-1", 5), TDB_ERR_BUSY);
    ASSERT_EQ(tdb_txn_commit(t), TDB_OK) << tdb_last_error();
    EXPECT_EQ(LastSeq(), seq0 + 2) << "the commit numbers the prepared writes";
    ASSERT_EQ(Get("a", &v), TDB_OK);
    EXPECT_EQ(v, "new");
    ASSERT_EQ(Get("b", &v), TDB_OK);
    EXPECT_EQ(v, "B");
    ASSERT_EQ(Get("a", &v, before), TDB_OK);
    EXPECT_EQ(v, "old") << "a snapshot taken before the commit does not see it";
    EXPECT_EQ(Get("b", nullptr, before), TDB_ERR_NOT_FOUND);
    tdb_snapshot_release(db_, before);
    EXPECT_TRUE(Listed().empty());
    EXPECT_EQ(CommitOther("a"), TDB_OK) << "keys are free after the commit";
    EXPECT_EQ(tdb_txn_commit(t), TDB_ERR_INVALID_ARG);
    tdb_txn_free(t);
    Reopen();
    ASSERT_EQ(Get("b", &v), TDB_OK);
    EXPECT_EQ(v, "B");
    EXPECT_TRUE(Listed().empty());
}

TEST_F(PrepareTest, RollbackInProcessDropsWritesAndFreesKeys) {
    tdb_txn_t *t = Prepared("xid-r", {{"a", "A"}});
    EXPECT_EQ(CommitOther("a"), TDB_ERR_CONFLICT);
    ASSERT_EQ(tdb_txn_rollback(t), TDB_OK) << tdb_last_error();
    EXPECT_EQ(Get("a"), TDB_ERR_NOT_FOUND);
    EXPECT_TRUE(Listed().empty());
    EXPECT_EQ(CommitOther("a"), TDB_OK);
    ASSERT_EQ(tdb_txn_reset(t, nullptr), TDB_OK) << "a rolled-back prepared handle is reusable";
    tdb_txn_free(t);
    Reopen();
    std::string v;
    ASSERT_EQ(Get("a", &v), TDB_OK);
    EXPECT_EQ(v, "o");
    EXPECT_TRUE(Listed().empty());
}

TEST_F(PrepareTest, PreparedKeysConflictWithEveryKindOfWriter) {
    tdb_txn_t *p = Prepared("xid-k", {{"k", "P"}}, /*pessimistic=*/true);
    EXPECT_EQ(CommitOther("k"), TDB_ERR_CONFLICT) << "optimistic SNAPSHOT commit";
    EXPECT_EQ(CommitOther("k", true), TDB_ERR_TIMEOUT) << "pessimistic: the row lock is held";
    // Weaker optimistic levels check nothing at commit, except prepared keys.
    tdb_txn_t *rc = Begin(false, TDB_ISO_READ_COMMITTED);
    ASSERT_EQ(tdb_txn_put(rc, cf_, "k", 1, "x", 1, 0), TDB_OK);
    EXPECT_EQ(tdb_txn_commit(rc), TDB_ERR_CONFLICT);
    tdb_txn_free(rc);
    // SERIALIZABLE: reading a prepared key and scanning a range conflict.
    tdb_txn_t *s = Begin(false, TDB_ISO_SERIALIZABLE);
    void *v;
    size_t n;
    EXPECT_EQ(tdb_txn_get(s, cf_, "k", 1, &v, &n), TDB_ERR_NOT_FOUND);
    ASSERT_EQ(tdb_txn_put(s, cf_, "z", 1, "z", 1, 0), TDB_OK);
    EXPECT_EQ(tdb_txn_commit(s), TDB_ERR_CONFLICT);
    tdb_txn_free(s);
    EXPECT_EQ(CommitOther("other"), TDB_OK) << "other keys are free";
    // After the handle is freed the locks go, the prepared keys still conflict.
    tdb_txn_free(p);
    EXPECT_EQ(CommitOther("k", true), TDB_ERR_CONFLICT);
    EXPECT_EQ(CommitOther("k"), TDB_ERR_CONFLICT);
    ASSERT_EQ(tdb_commit_prepared(db_, "xid-k", 5), TDB_OK) << tdb_last_error();
    std::string got;
    ASSERT_EQ(Get("k", &got), TDB_OK);
    EXPECT_EQ(got, "P");
    EXPECT_EQ(CommitOther("k"), TDB_OK);
}

// A prepared pessimistic transaction keeps its range locks (as its row
// locks) until it is resolved: inserts into the range wait, others do not.
TEST_F(PrepareTest, PreparedKeepsRangeLocks) {
    tdb_txn_t *p = Begin(true);
    ASSERT_EQ(tdb_txn_lock_range(p, cf_, "c", 1, "f", 1, TDB_RANGE_EXCLUSIVE, nullptr), TDB_OK) << tdb_last_error();
    ASSERT_EQ(tdb_txn_put(p, cf_, "a", 1, "P", 1, 0), TDB_OK);
    ASSERT_EQ(tdb_txn_prepare(p, "xid-r", 5, 1), TDB_OK) << tdb_last_error();
    EXPECT_EQ(CommitOther("d", true), TDB_ERR_TIMEOUT) << "inside the prepared range";
    EXPECT_EQ(CommitOther("x", true), TDB_OK) << "outside it";
    ASSERT_EQ(tdb_txn_commit(p), TDB_OK) << tdb_last_error();
    EXPECT_EQ(CommitOther("d", true), TDB_OK) << "released by the commit";
    tdb_txn_free(p);
    // Range locks need a pessimistic transaction.
    tdb_txn_t *o = Begin(false);
    EXPECT_EQ(tdb_txn_lock_range(o, cf_, "c", 1, nullptr, 0, 0, nullptr), TDB_ERR_INVALID_ARG);
    tdb_txn_free(o);
}

TEST_F(PrepareTest, TwoPreparedTransactionsNeverShareAKey) {
    // READ_COMMITTED checks nothing at commit, but a prepare is always checked.
    tdb_txn_t *p = Begin(false, TDB_ISO_READ_COMMITTED);
    tdb_txn_t *q = Begin(false, TDB_ISO_READ_COMMITTED);
    ASSERT_EQ(tdb_txn_put(p, cf_, "k", 1, "p", 1, 0), TDB_OK);
    ASSERT_EQ(tdb_txn_put(q, cf_, "k", 1, "q", 1, 0), TDB_OK);
    ASSERT_EQ(tdb_txn_prepare(p, "p", 1, 0), TDB_OK);
    EXPECT_EQ(tdb_txn_prepare(q, "q", 1, 0), TDB_ERR_CONFLICT);
    EXPECT_EQ(Listed(), std::set<std::string>{"p"});
    ASSERT_EQ(tdb_txn_rollback(p), TDB_OK);
    tdb_txn_free(p);
    tdb_txn_free(q);
}

TEST_F(PrepareTest, Misuse) {
    tdb_txn_t *t = Prepared("dup", {{"a", "1"}});
    void *v;
    size_t n;
    EXPECT_EQ(tdb_txn_prepare(t, "again", 5, 0), TDB_ERR_INVALID_ARG) << "prepare twice";
    EXPECT_EQ(tdb_txn_put(t, cf_, "b", 1, "2", 1, 0), TDB_ERR_INVALID_ARG) << "put after prepare";
    EXPECT_EQ(tdb_txn_get(t, cf_, "a", 1, &v, &n), TDB_ERR_INVALID_ARG);
    EXPECT_EQ(tdb_txn_reset(t, nullptr), TDB_ERR_INVALID_ARG);
    // A duplicate xid is refused and leaves the other transaction active.
    tdb_txn_t *u = Begin();
    ASSERT_EQ(tdb_txn_put(u, cf_, "c", 1, "3", 1, 0), TDB_OK);
    EXPECT_EQ(tdb_txn_prepare(u, "dup", 3, 0), TDB_ERR_EXISTS);
    EXPECT_EQ(tdb_txn_prepare(u, nullptr, 0, 0), TDB_ERR_INVALID_ARG);
    std::string big(2000, 'x');
    EXPECT_EQ(tdb_txn_prepare(u, big.data(), big.size(), 0), TDB_ERR_INVALID_ARG);
    ASSERT_EQ(tdb_txn_prepare(u, "dup2", 4, 0), TDB_OK) << tdb_last_error();
    EXPECT_EQ(Listed(), (std::set<std::string>{"dup", "dup2"}));
    // Unknown xids.
    EXPECT_EQ(tdb_commit_prepared(db_, "nope", 4), TDB_ERR_NOT_FOUND);
    EXPECT_EQ(tdb_rollback_prepared(db_, "nope", 4), TDB_ERR_NOT_FOUND);
    EXPECT_EQ(tdb_commit_prepared(db_, nullptr, 0), TDB_ERR_INVALID_ARG);
    ASSERT_EQ(tdb_txn_commit(t), TDB_OK);
    ASSERT_EQ(tdb_txn_rollback(u), TDB_OK);
    EXPECT_EQ(tdb_txn_rollback(u), TDB_ERR_INVALID_ARG);
    EXPECT_EQ(tdb_commit_prepared(db_, "dup", 3), TDB_ERR_NOT_FOUND) << "resolved already";
    // A resolved xid may be used again.
    tdb_txn_free(t);
    t = Prepared("dup", {{"d", "4"}});
    ASSERT_EQ(tdb_txn_commit(t), TDB_OK);
    tdb_txn_free(t);
    tdb_txn_free(u);
    // The conflict check runs at prepare: a failed prepare finishes the txn.
    tdb_txn_t *w = Begin();
    ASSERT_EQ(tdb_txn_put(w, cf_, "a", 1, "w", 1, 0), TDB_OK);
    EXPECT_EQ(CommitOther("a"), TDB_OK);
    EXPECT_EQ(tdb_txn_prepare(w, "late", 4, 0), TDB_ERR_CONFLICT);
    EXPECT_EQ(tdb_txn_commit(w), TDB_ERR_INVALID_ARG);
    tdb_txn_free(w);
    EXPECT_TRUE(Listed().empty());
    // An empty transaction prepares and commits too.
    tdb_txn_t *e = Begin();
    ASSERT_EQ(tdb_txn_prepare(e, "empty", 5, 0), TDB_OK);
    EXPECT_EQ(Listed(), std::set<std::string>{"empty"});
    ASSERT_EQ(tdb_txn_commit(e), TDB_OK);
    tdb_txn_free(e);
    Reopen();
    EXPECT_TRUE(Listed().empty());
    std::string got;
    ASSERT_EQ(Get("d", &got), TDB_OK);
    EXPECT_EQ(Get("c"), TDB_ERR_NOT_FOUND);
}

TEST_F(PrepareTest, CommitMarkerIsSmallPrepareCarriesTheData) {
    std::string big(100000, 'v');
    uint64_t w0 = WalBytes();
    tdb_txn_t *t = Prepared("xid-big", {{"big", big}});
    uint64_t w1 = WalBytes();
    EXPECT_GE(w1 - w0, big.size());
    ASSERT_EQ(tdb_txn_commit(t), TDB_OK);
    uint64_t w2 = WalBytes();
    EXPECT_LT(w2 - w1, 64u) << "the commit logs a marker, not the data again";
    tdb_txn_free(t);
    Reopen();
    std::string v;
    ASSERT_EQ(Get("big", &v), TDB_OK);
    EXPECT_EQ(v, big);
}

TEST_F(PrepareTest, SurvivesCleanCloseAndResolvesByXid) {
    tdb_txn_t *c = Prepared("to-commit", {{"c1", "C1"}, {"c2", "C2"}});
    tdb_txn_t *r = Prepared("to-rollback", {{"r1", "R1"}});
    tdb_txn_free(c); // the handles go; the transactions stay prepared
    tdb_txn_free(r);
    for (int round = 0; round < 2; round++) {
        Reopen();
        EXPECT_EQ(Listed(), (std::set<std::string>{"to-commit", "to-rollback"})) << "round " << round;
        EXPECT_EQ(Get("c1"), TDB_ERR_NOT_FOUND);
        EXPECT_EQ(Get("r1"), TDB_ERR_NOT_FOUND);
        EXPECT_EQ(CommitOther("c1"), TDB_ERR_CONFLICT);
        EXPECT_EQ(CommitOther("r1", true), TDB_ERR_CONFLICT);
    }
    ASSERT_EQ(tdb_commit_prepared(db_, "to-commit", 9), TDB_OK) << tdb_last_error();
    ASSERT_EQ(tdb_rollback_prepared(db_, "to-rollback", 11), TDB_OK) << tdb_last_error();
    EXPECT_EQ(tdb_commit_prepared(db_, "to-commit", 9), TDB_ERR_NOT_FOUND);
    for (int round = 0; round < 2; round++) {
        std::string v;
        ASSERT_EQ(Get("c2", &v), TDB_OK) << "round " << round;
        EXPECT_EQ(v, "C2");
        EXPECT_EQ(Get("r1"), TDB_ERR_NOT_FOUND);
        EXPECT_TRUE(Listed().empty());
        Reopen();
    }
    EXPECT_EQ(CommitOther("r1"), TDB_OK);
}

TEST_F(PrepareTest, SurvivesFlushCompactionAndWalRotation) {
    Reopen(TDB_SYNC_NONE, 64 << 10);
    tdb_txn_t *a = Prepared("A", {{"pa", "A"}});
    tdb_txn_t *b = Prepared("B", {{"pb", "B"}});
    std::set<std::string> first_logs = Logs();
    for (int round = 0; round < 6; round++) {
        for (int i = 0; i < 1500; i++) {
            std::string k = tdbtest::Key((uint64_t)(round * 1500 + i)), v = tdbtest::Value((uint64_t)i, 100);
            ASSERT_EQ(tdb_put(db_, cf_, k.data(), k.size(), v.data(), v.size(), 0), TDB_OK);
        }
        ASSERT_EQ(tdb_flush(db_, nullptr), TDB_OK) << tdb_last_error();
    }
    ASSERT_EQ(tdb_compact(db_, nullptr), TDB_OK) << tdb_last_error();
    for (auto &l : first_logs) EXPECT_EQ(Logs().count(l), 0u) << l << ": the WAL of the prepare was deleted";
    EXPECT_EQ(Get("pa"), TDB_ERR_NOT_FOUND);
    EXPECT_EQ(Listed(), (std::set<std::string>{"A", "B"}));
    ASSERT_EQ(tdb_txn_commit(a), TDB_OK) << tdb_last_error();
    tdb_txn_free(a);
    tdb_txn_free(b);
    Reopen(TDB_SYNC_NONE, 64 << 10);
    std::string v;
    ASSERT_EQ(Get("pa", &v), TDB_OK) << "committed from a relogged copy";
    EXPECT_EQ(Get("pb"), TDB_ERR_NOT_FOUND);
    EXPECT_EQ(Listed(), std::set<std::string>{"B"});
    ASSERT_EQ(tdb_flush(db_, nullptr), TDB_OK);
    ASSERT_EQ(tdb_commit_prepared(db_, "B", 1), TDB_OK) << tdb_last_error();
    ASSERT_EQ(tdb_flush(db_, nullptr), TDB_OK);
    Reopen(TDB_SYNC_NONE, 64 << 10);
    ASSERT_EQ(Get("pb", &v), TDB_OK);
    EXPECT_EQ(v, "B");
    ASSERT_EQ(Get("pa", &v), TDB_OK);
    EXPECT_TRUE(Listed().empty());
}

// A checkpoint is the database at one sequence: an unresolved prepared
// transaction is in it (its record is in the current WAL, invariant 3 of
// db/prepared.c), listed after the copy opens, resolvable there alone.
TEST_F(PrepareTest, CheckpointCarriesUnresolvedPrepares) {
    Reopen(TDB_SYNC_NONE, 64 << 10);
    tdb_txn_t *t = Prepared("in-copy", {{"pc", "PC"}});
    for (int i = 0; i < 3000; i++) { // rotations: the prepare is relogged
        std::string k = tdbtest::Key((uint64_t)i), v = tdbtest::Value((uint64_t)i, 100);
        ASSERT_EQ(tdb_put(db_, cf_, k.data(), k.size(), v.data(), v.size(), 0), TDB_OK);
    }
    ASSERT_EQ(tdb_flush(db_, nullptr), TDB_OK);
    TempDir copy_parent;
    std::string copy = copy_parent.file("copy");
    ASSERT_EQ(tdb_checkpoint(db_, copy.c_str(), nullptr), TDB_OK) << tdb_last_error();
    ASSERT_EQ(tdb_txn_rollback(t), TDB_OK); // resolved in the source only
    tdb_txn_free(t);
    tdb_config_t c = Config(TDB_SYNC_NONE);
    tdb_t *db2;
    ASSERT_EQ(tdb_open(copy.c_str(), &c, &db2), TDB_OK) << tdb_last_error();
    std::set<std::string> xids;
    EXPECT_EQ(tdb_recover_prepared(db2, CollectXid, &xids), 1);
    EXPECT_EQ(xids, std::set<std::string>{"in-copy"});
    ASSERT_EQ(tdb_commit_prepared(db2, "in-copy", 7), TDB_OK) << tdb_last_error();
    tdb_cf_t *cf2;
    ASSERT_EQ(tdb_get_cf(db2, TDB_DEFAULT_CF, &cf2), TDB_OK);
    void *v;
    size_t n;
    ASSERT_EQ(tdb_get(db2, cf2, nullptr, "pc", 2, &v, &n), TDB_OK);
    EXPECT_EQ(std::string((char *)v, n), "PC");
    tdb_free(v);
    EXPECT_EQ(tdb_close(db2), TDB_OK);
    EXPECT_EQ(Get("pc"), TDB_ERR_NOT_FOUND);
    EXPECT_TRUE(Listed().empty());
}

TEST_F(PrepareTest, ConcurrentPreparedAndPlainCommitsShareTheWritePath) {
    Reopen(TDB_SYNC_FULL);
    const int kThreads = 4, kPer = 150;
    std::vector<std::thread> th;
    std::atomic<int> failures{0};
    for (int w = 0; w < kThreads; w++)
        th.emplace_back([&, w] {
            for (int i = 0; i < kPer; i++) {
                std::string k = "t" + std::to_string(w) + "-" + std::to_string(i);
                tdb_txn_t *t = Begin();
                int rc = tdb_txn_put(t, cf_, k.data(), k.size(), k.data(), k.size(), 0);
                if (rc == TDB_OK && (i + w) % 2) rc = tdb_txn_prepare(t, k.data(), k.size(), 1);
                if (rc == TDB_OK) rc = tdb_txn_commit(t);
                if (rc != TDB_OK) failures++;
                tdb_txn_free(t);
            }
        });
    for (auto &t : th) t.join();
    EXPECT_EQ(failures.load(), 0);
    Reopen();
    for (int w = 0; w < kThreads; w++)
        for (int i = 0; i < kPer; i++) {
            std::string k = "t" + std::to_string(w) + "-" + std::to_string(i), v;
            ASSERT_EQ(Get(k, &v), TDB_OK) << k;
            EXPECT_EQ(v, k);
        }
    EXPECT_TRUE(Listed().empty());
}

// Transaction records are bytes from disk: a malformed one, or a marker
// without its prepare, fails the open with CORRUPTION (nothing allocated
// from a declared count).
TEST_F(PrepareTest, MalformedTransactionRecordsAreCorruption) {
    struct Case {
        const char *name;
        std::string payload;
    };
    std::string huge = std::string("\0\0", 2) + (char)BATCH_TXN_RECORD + (char)BATCH_TXN_PREPARE + "\x01x" +
                       "\xff\xff\xff\xff\x0f" + "abc";
    std::string orphan_commit = std::string("\x02\x01", 2) + (char)BATCH_TXN_RECORD + (char)BATCH_TXN_COMMIT + "\x01y";
    std::string orphan_rollback = std::string("\0\0", 2) + (char)BATCH_TXN_RECORD + (char)BATCH_TXN_ROLLBACK + "\x01y";
    std::string bad_kind = std::string("\0\0", 2) + (char)BATCH_TXN_RECORD + "\x09\x01y";
    std::vector<Case> cases = {{"count beyond the record", huge},
                               {"commit without prepare", orphan_commit},
                               {"rollback without prepare", orphan_rollback},
                               {"unknown kind", bad_kind}};
    ASSERT_EQ(tdb_close(db_), TDB_OK);
    db_ = nullptr;
    for (auto &c : cases) {
        TempDir dir;
        tdb_config_t cfg = Config(TDB_SYNC_NONE);
        tdb_t *db;
        ASSERT_EQ(tdb_open(dir.path().c_str(), &cfg, &db), TDB_OK);
        ASSERT_EQ(tdb_close(db), TDB_OK);
        char path[4096];
        db_wal_name(path, sizeof path, dir.path().c_str(), 1000); // newer than any log there
        wal_writer_t *w;
        ASSERT_EQ(wal_writer_open(env_posix(), path, &w), TDB_OK);
        slice_t rec = slice_make(c.payload.data(), c.payload.size());
        ASSERT_EQ(wal_writer_add(w, &rec, 1), TDB_OK);
        ASSERT_EQ(wal_writer_close(w, 1), TDB_OK);
        EXPECT_EQ(tdb_open(dir.path().c_str(), &cfg, &db), TDB_ERR_CORRUPTION) << c.name;
    }
    Open();
}

// kill -9 with transactions prepared (durably) and never resolved, then
// reopen: listed, invisible, locked; commit makes one visible, rollback
// makes the other vanish, and both outcomes survive another reopen.
TEST_F(PrepareTest, KillNineAfterPrepare) {
    ASSERT_EQ(tdb_close(db_), TDB_OK);
    db_ = nullptr;
    auto *ready = (std::atomic<int> *)mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(ready, MAP_FAILED);
    ready->store(0);
    auto child = [&] {
        Open(TDB_SYNC_NONE);
        tdb_put(db_, cf_, "base", 4, "b", 1, 0);
        Prepared("kc", {{"k1", "V1"}, {"k2", "V2"}});
        Prepared("kr", {{"k3", "V3"}});
        ready->store(1);
        for (;;) pause();
    };
    auto wait = [&] {
        auto t0 = std::chrono::steady_clock::now();
        while (!ready->load() && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(30))
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
    };
    int status = tdbtest::KillNine(child, wait);
    ASSERT_TRUE(WIFSIGNALED(status));
    ASSERT_EQ(ready->load(), 1);
    munmap(ready, 4096);
    Open();
    EXPECT_EQ(Listed(), (std::set<std::string>{"kc", "kr"}));
    EXPECT_EQ(Get("k1"), TDB_ERR_NOT_FOUND);
    EXPECT_EQ(Get("k3"), TDB_ERR_NOT_FOUND);
    EXPECT_EQ(CommitOther("k1"), TDB_ERR_CONFLICT);
    EXPECT_EQ(CommitOther("k3", true), TDB_ERR_CONFLICT);
    ASSERT_EQ(tdb_commit_prepared(db_, "kc", 2), TDB_OK) << tdb_last_error();
    ASSERT_EQ(tdb_rollback_prepared(db_, "kr", 2), TDB_OK) << tdb_last_error();
    for (int round = 0; round < 2; round++) {
        std::string v;
        ASSERT_EQ(Get("k2", &v), TDB_OK);
        EXPECT_EQ(v, "V2");
        EXPECT_EQ(Get("k3"), TDB_ERR_NOT_FOUND);
        EXPECT_TRUE(Listed().empty());
        Reopen();
    }
}

// kill -9 while prepared transactions are being committed (FULL sync), so
// that kills land between the marker's write and the commit's return:
// after reopen every prepared transaction is either committed (its writes
// visible, not listed) or still prepared (listed, invisible), never both or
// half; one whose commit returned is committed.
TEST_F(PrepareTest, KillNineDuringCommits) {
    ASSERT_EQ(tdb_close(db_), TDB_OK);
    db_ = nullptr;
    struct Shared {
        std::atomic<int> prepared, committed;
    };
    auto *sh = (Shared *)mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(sh, MAP_FAILED);
    std::mt19937 rng(17);
    int start = 0;
    for (int cycle = 0; cycle < 3; cycle++) {
        sh->prepared.store(start);
        sh->committed.store(start);
        auto child = [&] {
            Open(TDB_SYNC_FULL, 64 << 10);
            for (int i = start;; i++) {
                std::string x = "x" + std::to_string(i), k1 = "a" + std::to_string(i), k2 = "b" + std::to_string(i);
                tdb_txn_t *t = Prepared(x, {{k1, x}, {k2, x}});
                sh->prepared.store(i + 1);
                if (tdb_txn_commit(t) != TDB_OK) _exit(3);
                sh->committed.store(i + 1);
                tdb_txn_free(t);
            }
        };
        auto wait = [&] {
            auto t0 = std::chrono::steady_clock::now();
            while (sh->committed.load() < start + 5 && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(30))
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
            std::this_thread::sleep_for(std::chrono::milliseconds(50 + rng() % 200));
        };
        int status = tdbtest::KillNine(child, wait);
        ASSERT_TRUE(WIFSIGNALED(status)) << "child exited with " << WEXITSTATUS(status);
        int prepared = sh->prepared.load(), committed = sh->committed.load();
        Open(TDB_SYNC_FULL, 64 << 10);
        std::set<std::string> listed = Listed();
        EXPECT_LE(listed.size(), 2u);
        int end = prepared + 1; // the next prepare may be logged before its counter moved
        for (int i = start; i <= end; i++) {
            std::string x = "x" + std::to_string(i), v1, v2;
            int r1 = Get("a" + std::to_string(i), &v1), r2 = Get("b" + std::to_string(i), &v2);
            ASSERT_EQ(r1, r2) << "half a transaction: " << i;
            bool visible = r1 == TDB_OK, is_listed = listed.count(x) > 0;
            EXPECT_FALSE(visible && is_listed) << i;
            if (i < committed) {
                EXPECT_TRUE(visible) << i << " was acknowledged";
            }
            if (i < prepared) {
                EXPECT_TRUE(visible || is_listed) << i << " was durably prepared";
            }
            if (visible) {
                EXPECT_EQ(v1, x);
            }
            if (is_listed) {
                ASSERT_EQ(tdb_commit_prepared(db_, x.data(), x.size()), TDB_OK) << tdb_last_error();
            }
        }
        EXPECT_TRUE(Listed().empty());
        ASSERT_EQ(tdb_close(db_), TDB_OK);
        db_ = nullptr;
        start = end + 1;
    }
    munmap(sh, 4096);
    Open();
}

// ---- no_sync commit of a prepared transaction, over the fault env ----

// A FULL-sync database over a fault env: every commit would be synced, so a
// marker lost at a power loss can only be one committed with no_sync.
class PrepareNoSyncTest : public FaultDbFixture {
  protected:
    void SetUp() override {
        FaultDbFixture::SetUp();
        Open();
    }
    // Prepare (durably) a transaction writing a<i> and b<i> = xid.
    tdb_txn_t *Prepare(const std::string &xid, int i) {
        tdb_txn_options_t o;
        tdb_txn_options_default(&o);
        tdb_txn_t *t = nullptr;
        EXPECT_EQ(tdb_txn_begin(db_, &o, &t), TDB_OK);
        for (const char *p : {"a", "b"}) {
            std::string k = p + std::to_string(i);
            EXPECT_EQ(tdb_txn_put(t, cf_, k.data(), k.size(), xid.data(), xid.size(), 0), TDB_OK);
        }
        EXPECT_EQ(tdb_txn_prepare(t, xid.data(), xid.size(), 1), TDB_OK) << tdb_last_error();
        return t;
    }
    int CommitNoSync(tdb_txn_t *t) {
        tdb_commit_options_t o;
        tdb_commit_options_default(&o);
        o.no_sync = 1;
        return tdb_txn_commit_opt(t, &o);
    }
    // How many of a<i>, b<i> are visible (0, 1 or 2), checking their value.
    int Visible(int i, const std::string &xid) {
        int n = 0;
        for (const char *p : {"a", "b"}) {
            std::string k = p + std::to_string(i);
            void *v = nullptr;
            size_t vl = 0;
            if (tdb_get(db_, cf_, nullptr, k.data(), k.size(), &v, &vl) == TDB_OK) {
                EXPECT_EQ(std::string((char *)v, vl), xid) << k;
                tdb_free(v);
                n++;
            }
        }
        return n;
    }
    std::set<std::string> Listed() {
        std::set<std::string> xids;
        int n = tdb_recover_prepared(db_, CollectXid, &xids);
        EXPECT_EQ(n, (int)xids.size());
        return xids;
    }
    uint64_t EnvSyncs() { /* sync() calls the fault env has seen, on any file */
        fault_stats_t st;
        fault_env_stats(fe_.fe, &st);
        return st.calls[FAULT_SYNC];
    }
    uint64_t WalSyncs() {
        tdb_stats_t s;
        EXPECT_EQ(tdb_get_stats(db_, nullptr, &s), TDB_OK);
        return s.wal_syncs;
    }
    // Power loss, then a reopen of what is left on "disk"; *env_syncs
    // (optional) gets EnvSyncs() at the moment of the loss.
    void PowerLossReopen(uint64_t *env_syncs = nullptr) {
        ASSERT_EQ(fault_env_power_loss(fe_.fe), TDB_OK);
        if (env_syncs) *env_syncs = EnvSyncs();
        tdb_close(db_); // fails: the "process" is dead
        db_ = nullptr;
        fault_env_revive(fe_.fe);
        Open();
    }
};

// The marker is written but not synced: visible at once, no fsync for it,
// and a power loss before any sync leaves the transaction prepared (both
// keys invisible, listed by xid), which its xid then commits.
//
// The interval-sync thread syncs a dirty WAL within 100 ms, so now and then
// it makes the marker durable between the commit and the power loss. Such
// an attempt proves nothing and is repeated with a new transaction; one
// undisturbed attempt is required. A commit that synced its marker itself
// disturbs every attempt, so the test still fails then.
TEST_F(PrepareNoSyncTest, PowerLossBeforeSyncLeavesItPrepared) {
    for (int i = 1;; i++) {
        ASSERT_LE(i, 20) << "a WAL sync came between the no_sync commit and the power loss in every attempt";
        std::string xid = "x" + std::to_string(i);
        tdb_txn_t *t = Prepare(xid, i);
        uint64_t syncs = WalSyncs(), env_syncs = EnvSyncs();
        ASSERT_EQ(CommitNoSync(t), TDB_OK) << tdb_last_error();
        tdb_txn_free(t);
        EXPECT_EQ(Visible(i, xid), 2);
        EXPECT_TRUE(Listed().empty());
        bool synced = WalSyncs() != syncs;
        uint64_t env_syncs_at_loss = 0;
        PowerLossReopen(&env_syncs_at_loss);
        synced |= env_syncs_at_loss != env_syncs; /* also one in the last instant */
        if (synced) { /* disturbed: the marker may or may not have survived */
            if (Listed().count(xid)) {
                ASSERT_EQ(tdb_commit_prepared(db_, xid.data(), xid.size()), TDB_OK);
            }
            continue;
        }
        EXPECT_EQ(Visible(i, xid), 0) << "the unsynced marker survived the power loss";
        EXPECT_EQ(Listed(), std::set<std::string>{xid});
        ASSERT_EQ(tdb_commit_prepared(db_, xid.data(), xid.size()), TDB_OK) << tdb_last_error();
        EXPECT_EQ(Visible(i, xid), 2);
        EXPECT_TRUE(Listed().empty());
        return;
    }
}

// tdb_sync makes the marker durable (one fsync).
// (The interval-sync thread may sync the WAL too, which shows as more than
// one sync: the attempt is then repeated, see above.)
TEST_F(PrepareNoSyncTest, TdbSyncMakesTheMarkerDurable) {
    for (int i = 1;; i++) {
        ASSERT_LE(i, 20) << "the interval-sync thread synced the marker first in every attempt";
        std::string xid = "x" + std::to_string(i);
        tdb_txn_t *t = Prepare(xid, i);
        ASSERT_EQ(CommitNoSync(t), TDB_OK) << tdb_last_error();
        tdb_txn_free(t);
        uint64_t syncs = WalSyncs();
        ASSERT_EQ(tdb_sync(db_), TDB_OK) << tdb_last_error();
        uint64_t after = WalSyncs();
        PowerLossReopen();
        EXPECT_EQ(Visible(i, xid), 2);
        EXPECT_TRUE(Listed().empty());
        if (after == syncs + 1) return; /* tdb_sync's own, undisturbed */
        ASSERT_GT(after, syncs + 1) << "tdb_sync did not sync";
    }
}

// So does any later synced write (the WAL is synced as a whole) and the
// synced prepare of the next transaction.
TEST_F(PrepareNoSyncTest, LaterSyncedWritesMakeTheMarkerDurable) {
    tdb_txn_t *t = Prepare("x1", 1);
    ASSERT_EQ(CommitNoSync(t), TDB_OK);
    tdb_txn_free(t);
    ASSERT_EQ(Put(7), TDB_OK); // FULL sync
    t = Prepare("x2", 2);
    ASSERT_EQ(CommitNoSync(t), TDB_OK);
    tdb_txn_free(t);
    t = Prepare("x3", 3); // its synced prepare covers x2's marker
    tdb_txn_free(t);      // stays prepared
    PowerLossReopen();
    EXPECT_EQ(Get(7), TDB_OK);
    EXPECT_EQ(Visible(1, "x1"), 2);
    EXPECT_EQ(Visible(2, "x2"), 2);
    EXPECT_EQ(Visible(3, "x3"), 0);
    EXPECT_EQ(Listed(), std::set<std::string>{"x3"});
    ASSERT_EQ(tdb_rollback_prepared(db_, "x3", 2), TDB_OK);
}

// A torn power loss keeps a random prefix of the unsynced bytes: each
// transaction is then committed whole or prepared, never half-applied.
TEST_F(PrepareNoSyncTest, TornPowerLossNeverHalfApplies) {
    const int n = 20;
    fault_env_set_loss_mode(fe_.fe, FAULT_LOSS_TORN);
    std::vector<tdb_txn_t *> txns;
    for (int i = 0; i < n; i++) txns.push_back(Prepare("x" + std::to_string(i), i)); // synced
    for (tdb_txn_t *t : txns) { // n markers, none synced
        ASSERT_EQ(CommitNoSync(t), TDB_OK);
        tdb_txn_free(t);
    }
    PowerLossReopen();
    std::set<std::string> listed = Listed();
    int committed = 0;
    for (int i = 0; i < n; i++) {
        std::string x = "x" + std::to_string(i);
        int v = Visible(i, x);
        ASSERT_TRUE(v == 0 || v == 2) << "half of " << x;
        EXPECT_NE(v == 2, listed.count(x) > 0) << x << ": committed and prepared, or neither";
        committed += v == 2;
    }
    // Markers are logged in order: the committed ones are a prefix.
    for (int i = 0; i < committed; i++) EXPECT_EQ(Visible(i, "x" + std::to_string(i)), 2) << i;
    for (const std::string &x : listed) ASSERT_EQ(tdb_commit_prepared(db_, x.data(), x.size()), TDB_OK);
    for (int i = 0; i < n; i++) EXPECT_EQ(Visible(i, "x" + std::to_string(i)), 2);
}

// no_sync is refused for a transaction that is not prepared (it would be
// lost, not left prepared); the transaction stays usable.
TEST_F(PrepareNoSyncTest, RefusedForAnUnpreparedTransaction) {
    tdb_txn_options_t o;
    tdb_txn_options_default(&o);
    tdb_txn_t *t = nullptr;
    ASSERT_EQ(tdb_txn_begin(db_, &o, &t), TDB_OK);
    ASSERT_EQ(tdb_txn_put(t, cf_, "k", 1, "v", 1, 0), TDB_OK);
    EXPECT_EQ(CommitNoSync(t), TDB_ERR_INVALID_ARG);
    EXPECT_EQ(tdb_txn_commit_opt(t, nullptr), TDB_OK) << tdb_last_error();
    tdb_txn_free(t);
}

} // namespace
