// tdb_checkpoint (src/db/checkpoint.c): a copy of a live database that
//  - holds exactly the writes numbered up to the sequence it returns, taken
//    while writers, flushes and compactions run, in every family;
//  - hard-links the tables (same inodes) and copies the WAL tail, so writes
//    acknowledged but not flushed are in it, under every sync mode;
//  - is independent of the source afterwards (writes and compactions of
//    either never show in or break the other);
//  - keeps a prepared (two-phase) transaction prepared;
//  - is built by one checkpoint at a time per target directory;
//  - after a kill -9 during a checkpoint, is either absent or complete.
// Error cases and power loss at every step: checkpoint_fault_test.cc.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "checkpoint_testutil.h"
#include "testutil.h"
#include "tidesdb/tidesdb.h"

using tdbtest::TempDir;

namespace {

// Small buffers: flushes and compactions every few hundred writes.
tdb_config_t SmallConfig(int sync) {
    tdb_config_t c;
    tdb_config_default(&c);
    c.default_cf.write_buffer_size = 64 << 10;
    c.default_cf.sync_mode = sync;
    c.default_cf.sync_interval_us = 2000;
    c.default_cf.l1_file_count_trigger = 2;
    c.block_cache_size = 1 << 20;
    c.flush_threads = 1;
    c.compaction_threads = 1;
    c.log_level = TDB_LOG_NONE;
    return c;
}

constexpr int kThreads = 3;
constexpr uint64_t kSlots = 400;  // keys per writer: writes overwrite, compactions drop old versions

// Writer t's key for slot j, and the value of its i-th write ("i" then padding).
std::string WKey(int t, uint64_t j) {
    char b[32];
    snprintf(b, sizeof b, "w%d-%06llu", t, (unsigned long long)j);
    return b;
}
std::string WVal(uint64_t i) {
    char b[32];
    snprintf(b, sizeof b, "%012llu:", (unsigned long long)i);
    return std::string(b) + std::string(80, (char)('a' + i % 26));
}

// What writer t's writes 0..n-1 leave in one family of db: slot j holds the
// newest write i < n with i % kSlots == j (absent if none).
void ExpectWriterState(tdb_t *db, tdb_cf_t *cf, int t, uint64_t n) {
    for (uint64_t j = 0; j < kSlots; j++) {
        std::string k = WKey(t, j);
        void *v = nullptr;
        size_t vl = 0;
        int rc = tdb_get(db, cf, nullptr, k.data(), k.size(), &v, &vl);
        if (j >= n) {
            EXPECT_EQ(rc, TDB_ERR_NOT_FOUND) << k << " written after the checkpoint's sequence";
        } else {
            uint64_t i = j + (n - 1 - j) / kSlots * kSlots;  // newest write < n to slot j
            ASSERT_EQ(rc, TDB_OK) << k << ": " << tdb_last_error();
            EXPECT_EQ(std::string((char *)v, vl), WVal(i)) << k << " (" << tdb_cf_name(cf) << ")";
        }
        if (rc == TDB_OK) tdb_free(v);
    }
}

// Writes of writer t found in db: one more than the highest write index any
// of its slots holds (the default family).
uint64_t WritesIn(tdb_t *db, tdb_cf_t *cf, int t) {
    uint64_t n = 0;
    for (uint64_t j = 0; j < kSlots; j++) {
        std::string k = WKey(t, j);
        void *v = nullptr;
        size_t vl = 0;
        if (tdb_get(db, cf, nullptr, k.data(), k.size(), &v, &vl) != TDB_OK) continue;
        uint64_t i = strtoull(std::string((char *)v, vl).c_str(), nullptr, 10);
        tdb_free(v);
        if (i + 1 > n) n = i + 1;
    }
    return n;
}

// Three writers, each a stream of batches putting the same key and value
// into "default" and "other" (two sequence numbers per write), overwrite
// their slots while flushes and compactions run; a checkpoint is taken in
// the middle. The checkpoint must hold, per writer, a prefix of its writes
// (each slot exactly its newest write within the prefix, in both families)
// at least as long as what was acknowledged before the call and at most
// what was started before it returned, and the prefixes must add up to
// exactly the returned sequence: every write numbered up to it and none
// after. The source then keeps writing and compacting (deleting the files
// the checkpoint linked), and the checkpoint takes writes and compacts too:
// neither sees or breaks the other.
TEST(Checkpoint, ConcurrentWritersFlushesAndCompactions) {
    TempDir dir;
    std::string src = dir.file("src"), ck = dir.file("ck");
    tdb_config_t c = SmallConfig(TDB_SYNC_NONE);
    tdb_t *db = nullptr;
    ASSERT_EQ(tdb_open(src.c_str(), &c, &db), TDB_OK) << tdb_last_error();
    tdb_cf_t *def = nullptr, *other = nullptr;
    ASSERT_EQ(tdb_get_cf(db, TDB_DEFAULT_CF, &def), TDB_OK);
    tdb_cf_config_t oc = c.default_cf;
    ASSERT_EQ(tdb_create_cf(db, "other", &oc, &other), TDB_OK);
    uint64_t s0 = ckpt::LastSeq(db);

    std::atomic<uint64_t> started[kThreads], acked[kThreads];
    std::atomic<bool> stop{false};
    std::vector<std::thread> ts;
    for (int t = 0; t < kThreads; t++) {
        started[t] = acked[t] = 0;
        ts.emplace_back([&, t] {
            tdb_batch_t *b = nullptr;
            ASSERT_EQ(tdb_batch_create(&b), TDB_OK);
            for (uint64_t i = 0; !stop.load(); i++) {
                std::string k = WKey(t, i % kSlots), v = WVal(i);
                tdb_batch_clear(b);
                ASSERT_EQ(tdb_batch_put(b, def, k.data(), k.size(), v.data(), v.size(), 0), TDB_OK);
                ASSERT_EQ(tdb_batch_put(b, other, k.data(), k.size(), v.data(), v.size(), 0), TDB_OK);
                started[t].store(i + 1);
                ASSERT_EQ(tdb_write(db, b), TDB_OK) << tdb_last_error();
                acked[t].store(i + 1);
            }
            tdb_batch_destroy(b);
        });
    }
    // Until tables were flushed and compacted.
    auto t0 = std::chrono::steady_clock::now();
    tdb_stats_t st;
    do {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        ASSERT_EQ(tdb_get_stats(db, nullptr, &st), TDB_OK);
    } while ((st.flushes < 4 || st.compactions < 1) && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(20));
    ASSERT_GE(st.compactions, 1u);
    // Several checkpoints at different moments, each its own chance to
    // catch a write numbered after its sequence (or one missing).
    constexpr int kCkpts = 4;
    uint64_t before[kCkpts][kThreads], after[kCkpts][kThreads], seqs[kCkpts];
    for (int r = 0; r < kCkpts; r++) {
        for (int t = 0; t < kThreads; t++) before[r][t] = acked[t].load();
        ASSERT_EQ(tdb_checkpoint(db, (ck + std::to_string(r)).c_str(), &seqs[r]), TDB_OK) << tdb_last_error();
        for (int t = 0; t < kThreads; t++) after[r][t] = started[t].load();
        std::this_thread::sleep_for(std::chrono::milliseconds(30));  // the source moves on
    }
    stop = true;
    for (auto &th : ts) th.join();
    ASSERT_FALSE(::testing::Test::HasFatalFailure());

    auto check = [&](tdb_t *ckdb, int r, bool untouched) {
        SCOPED_TRACE("checkpoint " + std::to_string(r));
        if (untouched) {
            EXPECT_EQ(ckpt::LastSeq(ckdb), seqs[r]);
        }
        tdb_cf_t *cdef = nullptr, *cother = nullptr;
        ASSERT_EQ(tdb_get_cf(ckdb, TDB_DEFAULT_CF, &cdef), TDB_OK);
        ASSERT_EQ(tdb_get_cf(ckdb, "other", &cother), TDB_OK);
        uint64_t sum = 0;
        for (int t = 0; t < kThreads; t++) {
            uint64_t n = WritesIn(ckdb, cdef, t);
            EXPECT_GE(n, before[r][t]) << "writer " << t << ": a write acknowledged before the checkpoint is missing";
            EXPECT_LE(n, after[r][t]) << "writer " << t << ": a write started after the checkpoint is in it";
            ExpectWriterState(ckdb, cdef, t, n);
            ExpectWriterState(ckdb, cother, t, n);
            sum += 2 * n;
        }
        EXPECT_EQ(sum, seqs[r] - s0) << "the checkpoint must hold exactly the writes numbered up to " << seqs[r];
    };
    tdb_t *ckdb = nullptr;
    for (int r = kCkpts - 1; r >= 0; r--) {
        ASSERT_EQ(ckpt::OpenExisting(ck + std::to_string(r), &ckdb), TDB_OK) << tdb_last_error();
        check(ckdb, r, true);
        if (r > 0) {
            ASSERT_EQ(tdb_close(ckdb), TDB_OK);
        }
    }

    // Independent from here on: each takes writes the other never sees, and
    // compacts (the source deletes every table the checkpoint linked).
    std::string k = "only-in-checkpoint", v = "x";
    tdb_cf_t *cdef = nullptr;
    ASSERT_EQ(tdb_get_cf(ckdb, TDB_DEFAULT_CF, &cdef), TDB_OK);
    ASSERT_EQ(tdb_put(ckdb, cdef, k.data(), k.size(), v.data(), v.size(), 0), TDB_OK);
    std::string k2 = "only-in-source";
    ASSERT_EQ(tdb_put(db, def, k2.data(), k2.size(), v.data(), v.size(), 0), TDB_OK);
    ASSERT_EQ(tdb_compact(db, nullptr), TDB_OK) << tdb_last_error();
    ASSERT_EQ(tdb_compact(ckdb, nullptr), TDB_OK) << tdb_last_error();
    void *val = nullptr;
    size_t vl = 0;
    EXPECT_EQ(tdb_get(db, def, nullptr, k.data(), k.size(), &val, &vl), TDB_ERR_NOT_FOUND);
    for (int t = 0; t < kThreads; t++) EXPECT_EQ(WritesIn(db, def, t), acked[t].load()) << "source writer " << t;
    ASSERT_EQ(tdb_close(ckdb), TDB_OK);
    ASSERT_EQ(ckpt::OpenExisting(ck + "0", &ckdb), TDB_OK) << tdb_last_error();
    ASSERT_EQ(tdb_get_cf(ckdb, TDB_DEFAULT_CF, &cdef), TDB_OK);
    EXPECT_EQ(tdb_get(ckdb, cdef, nullptr, k2.data(), k2.size(), &val, &vl), TDB_ERR_NOT_FOUND);
    ASSERT_EQ(tdb_get(ckdb, cdef, nullptr, k.data(), k.size(), &val, &vl), TDB_OK);
    tdb_free(val);
    EXPECT_EQ(tdb_delete(ckdb, cdef, k.data(), k.size()), TDB_OK);  // the rest is the state at seq again
    check(ckdb, 0, false);
    ASSERT_EQ(tdb_close(ckdb), TDB_OK);
    ASSERT_EQ(tdb_close(db), TDB_OK);
}

// A quiet database: every table of the checkpoint is a hard link of the
// source's (same inode), every WAL a copy (another inode). When the source
// compacts those tables away, the checkpoint still reads them; when the
// checkpoint compacts, the source still reads its own.
TEST(Checkpoint, TablesAreHardLinksWalsAreCopies) {
    TempDir dir;
    std::string src = dir.file("src"), ck = dir.file("ck");
    tdb_config_t c = SmallConfig(TDB_SYNC_NONE);
    c.default_cf.l1_file_count_trigger = 100;  // only tdb_compact compacts
    c.l1_idle_file_trigger = 0;
    tdb_t *db = nullptr;
    ASSERT_EQ(tdb_open(src.c_str(), &c, &db), TDB_OK) << tdb_last_error();
    tdb_cf_t *cf = nullptr;
    ASSERT_EQ(tdb_get_cf(db, TDB_DEFAULT_CF, &cf), TDB_OK);
    const uint64_t n = 3000;
    for (uint64_t x = 0; x < n; x++) {
        uint64_t i = x * 1009 % n;  // every table spans the key range: compaction rewrites them all
        std::string k = tdbtest::Key(i), v = tdbtest::Value(i, 100);
        ASSERT_EQ(tdb_put(db, cf, k.data(), k.size(), v.data(), v.size(), 0), TDB_OK);
        if (x % 1000 == 999) {
            ASSERT_EQ(tdb_flush(db, cf), TDB_OK);
        }
    }
    uint64_t seq = 0;
    ASSERT_EQ(tdb_checkpoint(db, (ck + "/").c_str(), &seq), TDB_OK) << tdb_last_error();  // trailing '/' is fine
    EXPECT_EQ(seq, n);
    EXPECT_FALSE(ckpt::Exists(ck + ".checkpoint-tmp"));
    std::vector<std::string> ssts = ckpt::Files(ck, ".sst"), logs = ckpt::Files(ck, ".log");
    EXPECT_GE(ssts.size(), 3u);
    ASSERT_FALSE(logs.empty());
    for (auto &f : ssts) EXPECT_EQ(ckpt::Inode(ck + "/" + f), ckpt::Inode(src + "/" + f)) << f << " is not a link";
    for (auto &f : logs)
        if (ckpt::Exists(src + "/" + f)) {
            EXPECT_NE(ckpt::Inode(ck + "/" + f), ckpt::Inode(src + "/" + f)) << f;
        }

    ASSERT_EQ(tdb_compact(db, cf), TDB_OK);
    for (auto &f : ssts) EXPECT_FALSE(ckpt::Exists(src + "/" + f)) << f << " outlived the source's compaction";
    tdb_t *ckdb = nullptr;
    ASSERT_EQ(ckpt::OpenExisting(ck, &ckdb), TDB_OK) << tdb_last_error();
    EXPECT_EQ(ckpt::LastSeq(ckdb), n);
    ckpt::ExpectExactlyKeys(ckdb, n, 100);
    ASSERT_EQ(tdb_compact(ckdb, nullptr), TDB_OK);
    ASSERT_EQ(tdb_close(ckdb), TDB_OK);
    ckpt::ExpectExactlyKeys(db, n, 100);
    ASSERT_EQ(tdb_close(db), TDB_OK);
}

// Per sync mode: transactions committed into two families and never
// flushed live only in the WAL tail (the checkpoint has no table), yet the
// checkpoint holds each of them whole, and none committed after it.
TEST(Checkpoint, UnflushedTransactionsOfEverySyncMode) {
    for (int sync : {TDB_SYNC_NONE, TDB_SYNC_INTERVAL, TDB_SYNC_FULL}) {
        SCOPED_TRACE("sync mode " + std::to_string(sync));
        TempDir dir;
        std::string src = dir.file("src"), ck = dir.file("ck");
        tdb_config_t c = SmallConfig(sync);
        c.default_cf.write_buffer_size = 16 << 20;        // nothing is flushed
        c.default_cf.sync_interval_us = 60ull * 1000000;  // INTERVAL: nothing synced yet either
        tdb_t *db = nullptr;
        ASSERT_EQ(tdb_open(src.c_str(), &c, &db), TDB_OK) << tdb_last_error();
        tdb_cf_t *def = nullptr, *other = nullptr;
        ASSERT_EQ(tdb_get_cf(db, TDB_DEFAULT_CF, &def), TDB_OK);
        ASSERT_EQ(tdb_create_cf(db, "other", &c.default_cf, &other), TDB_OK);
        const int ntx = 50;
        auto commit = [&](int x) {
            tdb_txn_t *t = nullptr;
            ASSERT_EQ(tdb_txn_begin(db, nullptr, &t), TDB_OK);
            for (int j = 0; j < 4; j++) {
                std::string k = tdbtest::Key(x * 4 + j), v = tdbtest::Value(x * 4 + j, 50);
                ASSERT_EQ(tdb_txn_put(t, def, k.data(), k.size(), v.data(), v.size(), 0), TDB_OK);
                ASSERT_EQ(tdb_txn_put(t, other, k.data(), k.size(), v.data(), v.size(), 0), TDB_OK);
            }
            ASSERT_EQ(tdb_txn_commit(t), TDB_OK) << tdb_last_error();
            tdb_txn_free(t);
        };
        for (int x = 0; x < ntx; x++) commit(x);
        uint64_t seq = 0;
        ASSERT_EQ(tdb_checkpoint(db, ck.c_str(), &seq), TDB_OK) << tdb_last_error();
        EXPECT_EQ(seq, ckpt::LastSeq(db));
        commit(ntx);  // after the checkpoint
        EXPECT_TRUE(ckpt::Files(ck, ".sst").empty()) << "the data was meant to be in the WAL only";
        tdb_t *ckdb = nullptr;
        ASSERT_EQ(ckpt::OpenExisting(ck, &ckdb), TDB_OK) << tdb_last_error();
        EXPECT_EQ(ckpt::LastSeq(ckdb), seq);
        ckpt::ExpectExactlyKeys(ckdb, ntx * 4, 50);
        tdb_cf_t *cother = nullptr;
        ASSERT_EQ(tdb_get_cf(ckdb, "other", &cother), TDB_OK);
        for (int i = 0; i < ntx * 4 + 4; i++) {
            std::string k = tdbtest::Key(i);
            void *v = nullptr;
            size_t vl = 0;
            EXPECT_EQ(tdb_get(ckdb, cother, nullptr, k.data(), k.size(), &v, &vl), i < ntx * 4 ? TDB_OK : TDB_ERR_NOT_FOUND)
                << k;
            tdb_free(v);
        }
        ASSERT_EQ(tdb_close(ckdb), TDB_OK);
        ASSERT_EQ(tdb_close(db), TDB_OK);
    }
}

// Two threads checkpoint into the same directory at once, again and again:
// never both succeed and never share the staging directory; the other
// gets TDB_ERR_LOCKED (the first is running) or TDB_ERR_EXISTS (it is
// done), and the directory is always a complete checkpoint.
TEST(Checkpoint, OneCheckpointPerTargetAtATime) {
    TempDir dir;
    tdb_config_t c = SmallConfig(TDB_SYNC_NONE);
    tdb_t *db = nullptr;
    ASSERT_EQ(tdb_open(dir.file("src").c_str(), &c, &db), TDB_OK) << tdb_last_error();
    tdb_cf_t *cf = nullptr;
    ASSERT_EQ(tdb_get_cf(db, TDB_DEFAULT_CF, &cf), TDB_OK);
    for (uint64_t i = 0; i < 2000; i++) {
        std::string k = tdbtest::Key(i), v = tdbtest::Value(i, 60);
        ASSERT_EQ(tdb_put(db, cf, k.data(), k.size(), v.data(), v.size(), 0), TDB_OK);
    }
    int locked = 0;
    for (int r = 0; r < 20; r++) {
        std::string ck = dir.file("ck" + std::to_string(r));
        int rc[2];
        std::thread a([&] { rc[0] = tdb_checkpoint(db, ck.c_str(), nullptr); });
        rc[1] = tdb_checkpoint(db, ck.c_str(), nullptr);
        a.join();
        EXPECT_TRUE((rc[0] == TDB_OK) != (rc[1] == TDB_OK)) << rc[0] << " " << rc[1];
        for (int x : rc) {
            EXPECT_TRUE(x == TDB_OK || x == TDB_ERR_LOCKED || x == TDB_ERR_EXISTS) << x;
            locked += x == TDB_ERR_LOCKED;
        }
        EXPECT_FALSE(ckpt::Exists(ck + ".checkpoint-tmp"));
        tdb_t *ckdb = nullptr;
        ASSERT_EQ(ckpt::OpenExisting(ck, &ckdb), TDB_OK) << tdb_last_error();
        ckpt::ExpectExactlyKeys(ckdb, 2000, 60);
        ASSERT_EQ(tdb_close(ckdb), TDB_OK);
    }
    RecordProperty("locked", locked);
    ASSERT_EQ(tdb_close(db), TDB_OK);
}

// A transaction prepared (two-phase commit) before the checkpoint and not
// yet resolved is prepared in the copy too, also when a flush rotated the
// WAL in between (the prepare is relogged): the copy lists it, does not show
// its write, and commits it by xid; its commit in the source after the
// checkpoint does not show in the copy.
TEST(Checkpoint, PreparedTransactionStaysPreparedInTheCopy) {
    for (bool flush : {false, true}) {
        SCOPED_TRACE(flush ? "flushed after the prepare" : "prepare in the active WAL");
        TempDir dir;
        std::string src = dir.file("src"), ck = dir.file("ck");
        tdb_config_t c = SmallConfig(TDB_SYNC_FULL);
        tdb_t *db = nullptr;
        ASSERT_EQ(tdb_open(src.c_str(), &c, &db), TDB_OK) << tdb_last_error();
        tdb_cf_t *cf = nullptr;
        ASSERT_EQ(tdb_get_cf(db, TDB_DEFAULT_CF, &cf), TDB_OK);
        std::string k = "prepared-key", v = "v", other = "plain-key";
        ASSERT_EQ(tdb_put(db, cf, other.data(), other.size(), v.data(), v.size(), 0), TDB_OK);
        tdb_txn_t *t = nullptr;
        ASSERT_EQ(tdb_txn_begin(db, nullptr, &t), TDB_OK);
        ASSERT_EQ(tdb_txn_put(t, cf, k.data(), k.size(), v.data(), v.size(), 0), TDB_OK);
        ASSERT_EQ(tdb_txn_prepare(t, "xid-1", 5, 1), TDB_OK) << tdb_last_error();
        if (flush) {
            ASSERT_EQ(tdb_flush(db, nullptr), TDB_OK);
        }
        uint64_t seq = 0;
        ASSERT_EQ(tdb_checkpoint(db, ck.c_str(), &seq), TDB_OK) << tdb_last_error();
        ASSERT_EQ(tdb_txn_commit(t), TDB_OK) << tdb_last_error();  // in the source only
        tdb_txn_free(t);

        tdb_t *ckdb = nullptr;
        ASSERT_EQ(ckpt::OpenExisting(ck, &ckdb), TDB_OK) << tdb_last_error();
        tdb_cf_t *ccf = nullptr;
        ASSERT_EQ(tdb_get_cf(ckdb, TDB_DEFAULT_CF, &ccf), TDB_OK);
        std::vector<std::string> xids;
        auto collect = [](void *ctx, const void *x, size_t n) {
            ((std::vector<std::string> *)ctx)->emplace_back((const char *)x, n);
            return 0;
        };
        EXPECT_EQ(tdb_recover_prepared(ckdb, collect, &xids), 1);
        EXPECT_EQ(xids, std::vector<std::string>{"xid-1"});
        void *val = nullptr;
        size_t vl = 0;
        EXPECT_EQ(tdb_get(ckdb, ccf, nullptr, k.data(), k.size(), &val, &vl), TDB_ERR_NOT_FOUND);
        ASSERT_EQ(tdb_get(ckdb, ccf, nullptr, other.data(), other.size(), &val, &vl), TDB_OK);
        tdb_free(val);
        ASSERT_EQ(tdb_commit_prepared(ckdb, "xid-1", 5), TDB_OK) << tdb_last_error();
        ASSERT_EQ(tdb_get(ckdb, ccf, nullptr, k.data(), k.size(), &val, &vl), TDB_OK);
        tdb_free(val);
        ASSERT_EQ(tdb_close(ckdb), TDB_OK);
        ASSERT_EQ(tdb_close(db), TDB_OK);
    }
}

struct KillShared {
    std::atomic<int> done;         // checkpoints completed
    std::atomic<uint64_t> seq[256]; // their sequences
};

// A forked child writes Key(i) as the i+1-th write (one sequence each) in
// one thread and takes checkpoints ck0, ck1, ... back to back in another;
// the parent kills it with SIGKILL at a random moment. Every completed
// checkpoint opens and holds exactly Key(0..seq-1); the one in progress is
// absent or, if its rename happened, complete in the same way; its staging
// directory never opens as a database; a new checkpoint to the same name
// then succeeds.
TEST(Checkpoint, KillNineDuringCheckpointLeavesNoneOrAComplete) {
    TempDir dir;
    std::string src = dir.file("src");
    KillShared *sh = (KillShared *)mmap(nullptr, sizeof(KillShared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(sh, MAP_FAILED);
    std::mt19937 rng(17);
    int killed_mid = 0;
    for (int cycle = 0; cycle < 3; cycle++) {
        std::string base = dir.file("c" + std::to_string(cycle) + "-ck");
        sh->done.store(0);
        auto child = [&] {
            tdb_config_t c = SmallConfig(TDB_SYNC_NONE);
            tdb_t *db = nullptr;
            if (tdb_open(src.c_str(), &c, &db) != TDB_OK) _exit(2);
            tdb_cf_t *cf = nullptr;
            tdb_get_cf(db, TDB_DEFAULT_CF, &cf);
            uint64_t first = ckpt::LastSeq(db);
            std::thread w([&] {
                for (uint64_t i = first; i < first + 200000; i++) {
                    std::string k = tdbtest::Key(i), v = tdbtest::Value(i, 40);
                    if (tdb_put(db, cf, k.data(), k.size(), v.data(), v.size(), 0) != TDB_OK) _exit(3);
                }
            });
            for (int i = 0; i < 256; i++) {
                uint64_t s = 0;
                if (tdb_checkpoint(db, (base + std::to_string(i)).c_str(), &s) != TDB_OK) _exit(4);
                sh->seq[i].store(s);
                sh->done.store(i + 1);
            }
            w.join();
            _exit(0);
        };
        auto wait = [&] {
            auto t0 = std::chrono::steady_clock::now();
            while (sh->done.load() < 2 && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(20))
                std::this_thread::sleep_for(std::chrono::microseconds(200));
            std::this_thread::sleep_for(std::chrono::microseconds(rng() % 30000));
        };
        int status = tdbtest::KillNine(child, wait);
        ASSERT_NE(status, -1);
        ASSERT_TRUE(WIFSIGNALED(status)) << "child exited with " << WEXITSTATUS(status);
        int done = sh->done.load();
        ASSERT_GE(done, 2);
        ASSERT_LT(done, 256);
        for (int i = 0; i <= done; i++) {
            SCOPED_TRACE("checkpoint " + std::to_string(i) + " of cycle " + std::to_string(cycle));
            std::string ck = base + std::to_string(i);
            if (i == done && !ckpt::Exists(ck)) {  // interrupted before its rename
                killed_mid++;
                tdb_t *half = nullptr;
                if (ckpt::Exists(ck + ".checkpoint-tmp") &&
                    ckpt::OpenExisting(ck + ".checkpoint-tmp", &half) == TDB_OK) {
                    // Killed between its MANIFEST (written last) and the
                    // rename: the staging copy is complete, and must be
                    // exact. Before the MANIFEST it must not open at all.
                    ckpt::ExpectExactlyKeys(half, ckpt::LastSeq(half), 40);
                    ASSERT_EQ(tdb_close(half), TDB_OK);
                }
                continue;
            }
            tdb_t *ckdb = nullptr;
            ASSERT_EQ(ckpt::OpenExisting(ck, &ckdb), TDB_OK) << tdb_last_error();
            uint64_t seq = ckpt::LastSeq(ckdb);
            if (i < done) {
                EXPECT_EQ(seq, sh->seq[i].load());
            }
            ckpt::ExpectExactlyKeys(ckdb, seq, 40);  // Key(j) was write j+1
            ASSERT_EQ(tdb_close(ckdb), TDB_OK);
        }
        // The source recovers, and a checkpoint to the interrupted name works.
        tdb_config_t c = SmallConfig(TDB_SYNC_NONE);
        tdb_t *db = nullptr;
        ASSERT_EQ(tdb_open(src.c_str(), &c, &db), TDB_OK) << tdb_last_error();
        std::string ck = base + std::to_string(done);
        if (!ckpt::Exists(ck)) {
            uint64_t seq = 0;
            ASSERT_EQ(tdb_checkpoint(db, ck.c_str(), &seq), TDB_OK) << tdb_last_error();
            EXPECT_FALSE(ckpt::Exists(ck + ".checkpoint-tmp"));
            tdb_t *ckdb = nullptr;
            ASSERT_EQ(ckpt::OpenExisting(ck, &ckdb), TDB_OK) << tdb_last_error();
            ckpt::ExpectExactlyKeys(ckdb, seq, 40);
            ASSERT_EQ(tdb_close(ckdb), TDB_OK);
        }
        ASSERT_EQ(tdb_close(db), TDB_OK);
    }
    RecordProperty("killed_mid_checkpoint", killed_mid);
    munmap(sh, sizeof(KillShared));
}

}  // namespace
