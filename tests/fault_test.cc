// Fault injection: the database over the fault env (env/env_fault.h; the
// env itself is tested in fault_env_test.cc):
//  - simulated power loss at many points of a multi-threaded workload that
//    writes batches across column families, creates and drops families and
//    flushes: reopen always succeeds; FULL sync keeps every acknowledged
//    write; NONE/INTERVAL recover a prefix (checked per writer, across
//    families, and as a consistent cut across writers, see VerifyHistory);
//  - a failed fsync of the WAL or of the manifest puts the database into a
//    sticky read-only state: writes get TDB_ERR_READ_ONLY, reads still work,
//    and nothing is retried;
//  - ENOSPC: writes are refused with TDB_ERR_NO_SPACE, nothing acknowledged
//    is lost, and writing resumes when space returns (no reopen);
//  - read errors are reported and are not sticky; random faults of every
//    kind never cost an acknowledged write.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "fault_testutil.h"
#include "testutil.h"

extern "C" {
#include "db/testing.h"
#include "testing/env_fault.h"
#include "version/manifest.h"
#include "version/table_cache.h"
}

using tdbtest::TempDir;

namespace {

namespace fs = std::filesystem;

// ---------------------------------------------------------------------------
// Power loss under a database workload.
// ---------------------------------------------------------------------------

constexpr int kWriters = 3;

std::string WKey(int w, uint64_t i) {
    char b[32];
    snprintf(b, sizeof b, "w%d-%08llu", w, (unsigned long long)i);
    return b;
}
std::string WVal(int w, uint64_t i) { return tdbtest::Value(i * 8 + (uint64_t)w, 40 + (i % 7) * 150); }

// What the workload did, as the application saw it.
struct History {
    std::atomic<uint64_t> acked[kWriters];
    std::atomic<uint64_t> issued[kWriters];
    // deps[w][i]: acked counts of all writers when writer w issued write i.
    std::vector<std::array<uint64_t, kWriters>> deps[kWriters];
    std::mutex cf_mu;
    std::set<std::string> cfs_acked_created, cfs_acked_dropped, cfs_unknown;
    bool mirror_acked = false;
    History() {
        for (int w = 0; w < kWriters; w++) acked[w] = issued[w] = 0;
    }
};

// Writers put WKey(w, i) into "default" and "mirror" in one batch, in order;
// writer 0 also flushes now and then, writer 1 creates and drops families.
// The 64 KiB write buffer makes the writers switch memtables, so flushes
// and compactions run throughout. Every thread stops at its first error
// (after a power loss everything fails).
void RunWorkload(tdb_t *db, History *h, int ops_per_writer, bool do_ddl) {
    tdb_cf_t *def = nullptr, *mirror = nullptr;
    if (tdb_get_cf(db, TDB_DEFAULT_CF, &def) != TDB_OK) return;
    if (tdb_get_cf(db, "mirror", &mirror) != TDB_OK) {
        tdb_cf_config_t mc;
        tdb_cf_config_t dc;
        tdb_cf_get_config(def, &dc);
        mc = dc;
        if (tdb_create_cf(db, "mirror", &mc, &mirror) != TDB_OK) return;
    }
    h->mirror_acked = true;
    for (int w = 0; w < kWriters; w++) h->deps[w].resize((size_t)ops_per_writer);
    std::vector<std::thread> ts;
    for (int w = 0; w < kWriters; w++) {
        ts.emplace_back([=] {
            tdb_batch_t *b;
            if (tdb_batch_create(&b) != TDB_OK) return;
            int next_cf = 0;
            for (int i = 0; i < ops_per_writer; i++) {
                for (int u = 0; u < kWriters; u++) h->deps[w][(size_t)i][(size_t)u] = h->acked[u].load();
                std::string k = WKey(w, (uint64_t)i), v = WVal(w, (uint64_t)i);
                tdb_batch_clear(b);
                tdb_batch_put(b, def, k.data(), k.size(), v.data(), v.size(), 0);
                tdb_batch_put(b, mirror, k.data(), k.size(), v.data(), v.size(), 0);
                h->issued[w].store((uint64_t)i + 1);
                if (tdb_write(db, b) != TDB_OK) break;
                h->acked[w].store((uint64_t)i + 1);
                if (w == 0 && i % 97 == 96 && tdb_flush(db, nullptr) != TDB_OK) break;
                if (do_ddl && w == 1 && i % 61 == 60) {
                    std::string name = "extra" + std::to_string(next_cf++);
                    tdb_cf_t *x;
                    {
                        std::lock_guard<std::mutex> g(h->cf_mu);
                        h->cfs_unknown.insert(name);
                    }
                    int rc = tdb_create_cf(db, name.c_str(), nullptr, &x);
                    std::lock_guard<std::mutex> g(h->cf_mu);
                    if (rc != TDB_OK) break;
                    h->cfs_unknown.erase(name);
                    h->cfs_acked_created.insert(name);
                    if (next_cf >= 2) {  // drop the one before
                        std::string old = "extra" + std::to_string(next_cf - 2);
                        // In flight: a power loss before the drop is
                        // acknowledged may keep the family or not.
                        h->cfs_acked_created.erase(old);
                        h->cfs_unknown.insert(old);
                        if (tdb_drop_cf(db, old.c_str()) != TDB_OK) break;
                        h->cfs_unknown.erase(old);
                        h->cfs_acked_dropped.insert(old);
                    }
                }
            }
            tdb_batch_destroy(b);
        });
    }
    for (auto &t : ts) t.join();
}

// The recovered database against the history.
//  - per writer w: keys 0..n_w-1 present with the right value in both
//    families, no key >= n_w in either (a prefix, no holes, atomic across
//    families);
//  - n_w <= issued[w]; with must_keep_acked (FULL sync) n_w >= acked[w];
//  - consistent cut: the newest recovered write of w must bring every write
//    that was acknowledged before it was issued: n_u >= deps[w][n_w-1][u];
//  - every family whose creation was acknowledged exists, every dropped one
//    is gone.
// Returns the number of writes verified.
uint64_t VerifyHistory(tdb_t *db, History *h, bool must_keep_acked, const std::string &where) {
    uint64_t verified = 0;
    tdb_cf_t *def = nullptr, *mirror = nullptr;
    EXPECT_EQ(tdb_get_cf(db, TDB_DEFAULT_CF, &def), TDB_OK) << where;
    int mrc = tdb_get_cf(db, "mirror", &mirror);
    if (h->mirror_acked) {
        EXPECT_EQ(mrc, TDB_OK) << where << ": lost column family 'mirror'";
    }
    uint64_t n[kWriters];
    for (int w = 0; w < kWriters; w++) {
        uint64_t i = 0;
        for (;; i++) {
            std::string k = WKey(w, i);
            void *v = nullptr;
            size_t vl = 0;
            int rc = tdb_get(db, def, nullptr, k.data(), k.size(), &v, &vl);
            if (rc == TDB_ERR_NOT_FOUND) break;
            EXPECT_EQ(rc, TDB_OK) << where << ": " << k << ": " << tdb_last_error();
            if (rc != TDB_OK) break;
            EXPECT_EQ(std::string((char *)v, vl), WVal(w, i)) << where << ": " << k;
            tdb_free(v);
            if (mirror) {
                rc = tdb_get(db, mirror, nullptr, k.data(), k.size(), &v, &vl);
                EXPECT_EQ(rc, TDB_OK) << where << ": " << k << " in default but not in mirror";
                if (rc == TDB_OK) {
                    EXPECT_EQ(std::string((char *)v, vl), WVal(w, i)) << where << ": mirror " << k;
                    tdb_free(v);
                }
            }
        }
        n[w] = i;
        verified += i;
        // No holes: nothing of writer w at or after n_w, in either family.
        for (tdb_cf_t *cf : {def, mirror}) {
            if (!cf) continue;
            tdb_iter_t *it;
            EXPECT_EQ(tdb_iter_create(db, cf, nullptr, &it), TDB_OK);
            std::string from = WKey(w, i);
            tdb_iter_seek(it, from.data(), from.size());
            if (tdb_iter_valid(it)) {
                size_t kl;
                std::string k((const char *)tdb_iter_key(it, &kl), 0);
                k.assign((const char *)tdb_iter_key(it, &kl), kl);
                EXPECT_NE(k.compare(0, 3, WKey(w, 0).substr(0, 3)), 0)
                    << where << ": hole: " << k << " recovered but " << from << " is missing";
            }
            EXPECT_EQ(tdb_iter_status(it), TDB_OK) << where;
            tdb_iter_destroy(it);
        }
        EXPECT_LE(n[w], h->issued[w].load()) << where << ": writer " << w << " has writes it never issued";
        if (must_keep_acked) {
            EXPECT_GE(n[w], h->acked[w].load()) << where << ": writer " << w << " lost acknowledged writes";
        }
    }
    for (int w = 0; w < kWriters; w++) {
        if (n[w] == 0 || n[w] > h->deps[w].size()) continue;
        const auto &d = h->deps[w][n[w] - 1];
        for (int u = 0; u < kWriters; u++)
            EXPECT_GE(n[u], d[(size_t)u]) << where << ": not a prefix: writer " << w << " write " << n[w] - 1
                                          << " survived but writer " << u << " lost write " << n[u]
                                          << ", acknowledged before it was issued";
    }
    for (const auto &name : h->cfs_acked_created) {
        tdb_cf_t *x;
        EXPECT_EQ(tdb_get_cf(db, name.c_str(), &x), TDB_OK) << where << ": lost column family " << name;
    }
    for (const auto &name : h->cfs_acked_dropped) {
        tdb_cf_t *x;
        EXPECT_EQ(tdb_get_cf(db, name.c_str(), &x), TDB_ERR_NOT_FOUND) << where << ": dropped family " << name << " is back";
    }
    return verified;
}

struct LoopResult {
    uint64_t crashes = 0, verified = 0, mutations = 0, dropped = 0;
};

// Create an empty database (without faults).
void CreateDb(const std::string &path, const tdb_config_t &c) {
    tdb_t *db;
    ASSERT_EQ(tdb_open(path.c_str(), &c, &db), TDB_OK) << tdb_last_error();
    ASSERT_EQ(tdb_close(db), TDB_OK);
}

// Count the mutating env calls of one full workload run.
uint64_t CalibrateMutations(int sync, int ops) {
    TempDir dir;
    FaultEnv fe;
    tdb_config_t c = FaultConfig(sync);
    CreateDb(dir.path(), c);
    tdb_t *db;
    EXPECT_EQ(tdb_open_env(dir.path().c_str(), &c, fe.env(), &db), TDB_OK) << tdb_last_error();
    History h;
    RunWorkload(db, &h, ops, true);
    EXPECT_EQ(tdb_close(db), TDB_OK);
    for (int w = 0; w < kWriters; w++) EXPECT_EQ(h.acked[w].load(), (uint64_t)ops);
    return fe.Stats().mutations;
}

// Power loss at `points` spread over the calibrated run: each point is a
// fresh database whose env loses power at that mutating call (during open,
// a write, a flush, a compaction, a manifest write, ...).
// TDB_FAULT_SCALE (default 1) scales the number of crash points and rounds,
// e.g. 0.3 under the sanitizers (scripts/test_reliability.sh).
int Scaled(int n) {
    const char *e = getenv("TDB_FAULT_SCALE");
    double f = e ? atof(e) : 1.0;
    int m = (int)(n * (f > 0 ? f : 1.0) + 0.5);
    return m < 3 ? 3 : m;
}

LoopResult PowerLossLoop(int sync, fault_loss_mode_t mode, int points, int ops, uint64_t seed) {
    LoopResult r;
    points = Scaled(points);
    uint64_t total = CalibrateMutations(sync, ops);
    EXPECT_GT(total, 100u);
    std::mt19937_64 rng(seed);
    for (int p = 0; p < points && !::testing::Test::HasFailure(); p++) {
        uint64_t at = 1 + (total * (uint64_t)p) / (uint64_t)points + rng() % (total / (uint64_t)points + 1);
        std::string where = "crash point " + std::to_string(at) + "/" + std::to_string(total);
        TempDir dir;
        FaultEnv fe(seed + (uint64_t)p);
        CreateDb(dir.path(), FaultConfig(sync));
        fault_env_set_loss_mode(fe.fe, mode);
        fault_env_crash_after(fe.fe, at);
        tdb_config_t c = FaultConfig(sync);
        History h;
        tdb_t *db = nullptr;
        if (tdb_open_env(dir.path().c_str(), &c, fe.env(), &db) == TDB_OK) {
            RunWorkload(db, &h, ops, true);
            if (!fault_env_is_down(fe.fe)) fault_env_power_loss(fe.fe);
            tdb_close(db);  // fails: the "process" is dead
        } else {
            EXPECT_TRUE(fault_env_is_down(fe.fe)) << where << ": open failed without a fault: " << tdb_last_error();
        }
        fault_stats_t s = fe.Stats();
        r.dropped += s.bytes_dropped;
        fault_env_revive(fe.fe);
        db = nullptr;
        int rc = tdb_open_env(dir.path().c_str(), &c, fe.env(), &db);
        EXPECT_EQ(rc, TDB_OK) << where << ": reopen after power loss failed: " << tdb_last_error();
        if (rc != TDB_OK) break;
        r.verified += VerifyHistory(db, &h, sync == TDB_SYNC_FULL, where);
        EXPECT_EQ(tdb_close(db), TDB_OK) << where;
        r.crashes++;
        r.mutations = total;
    }
    return r;
}

// One power-loss loop: run it, print its figures, check every crash point ran.
void CheckPowerLoss(const char *name, int sync, fault_loss_mode_t mode, int points, int ops, uint64_t seed) {
    LoopResult r = PowerLossLoop(sync, mode, points, ops, seed);
    printf("[ %s ] power losses %llu, writes verified %llu, unsynced bytes dropped %llu (run of %llu mutating calls)\n",
           name, (unsigned long long)r.crashes, (unsigned long long)r.verified, (unsigned long long)r.dropped,
           (unsigned long long)r.mutations);
    EXPECT_EQ(r.crashes, (uint64_t)Scaled(points));
}

TEST(FaultPowerLoss, FullSyncKeepsEveryAcknowledgedWrite) {
    CheckPowerLoss("FULL", TDB_SYNC_FULL, FAULT_LOSS_ALL, 40, 250, 11);
}

TEST(FaultPowerLoss, FullSyncTornWritesKeepEveryAcknowledgedWrite) {
    CheckPowerLoss("FULL torn", TDB_SYNC_FULL, FAULT_LOSS_TORN, 30, 250, 12);
}

TEST(FaultPowerLoss, NoneSyncRecoversAPrefix) {
    CheckPowerLoss("NONE", TDB_SYNC_NONE, FAULT_LOSS_ALL, 40, 400, 13);
}

TEST(FaultPowerLoss, NoneSyncTornWritesRecoverAPrefix) {
    CheckPowerLoss("NONE torn", TDB_SYNC_NONE, FAULT_LOSS_TORN, 30, 400, 14);
}

TEST(FaultPowerLoss, IntervalSyncRecoversAPrefix) {
    CheckPowerLoss("INTERVAL torn", TDB_SYNC_INTERVAL, FAULT_LOSS_TORN, 30, 400, 15);
}

// Power loss right after a workload whose database directory was created
// by tdb_open itself: its entry in the parent directory must be durable
// before anything is acknowledged.
TEST(FaultPowerLoss, NewDatabaseDirectoryIsDurable) {
    TempDir parent;
    std::string path = parent.file("db");
    FaultEnv fe;
    tdb_config_t c = FaultConfig(TDB_SYNC_FULL);
    tdb_t *db;
    ASSERT_EQ(tdb_open_env(path.c_str(), &c, fe.env(), &db), TDB_OK) << tdb_last_error();
    tdb_cf_t *cf;
    ASSERT_EQ(tdb_get_cf(db, TDB_DEFAULT_CF, &cf), TDB_OK);
    ASSERT_EQ(tdb_put(db, cf, "k", 1, "v", 1, 0), TDB_OK);
    fault_env_power_loss(fe.fe);
    tdb_close(db);
    fault_env_revive(fe.fe);
    ASSERT_EQ(tdb_open_env(path.c_str(), &c, fe.env(), &db), TDB_OK) << tdb_last_error();
    ASSERT_EQ(tdb_get_cf(db, TDB_DEFAULT_CF, &cf), TDB_OK);
    void *v = nullptr;  // tdb_get sets it only on success
    size_t vl = 0;
    int rc = tdb_get(db, cf, nullptr, "k", 1, &v, &vl);
    EXPECT_EQ(rc, TDB_OK) << "acknowledged FULL-sync write lost: " << tdb_last_error();
    if (rc == TDB_OK) {
        EXPECT_EQ(std::string((char *)v, vl), "v");
        tdb_free(v);
    }
    EXPECT_EQ(tdb_close(db), TDB_OK);
}

// Power loss at each of the first mutating calls of creating a database:
// afterwards it must open (as the empty database or as a fresh one).
TEST(FaultPowerLoss, CrashWhileCreatingADatabaseLeavesItOpenable) {
    for (uint64_t at = 1; at <= 12; at++) {
        TempDir dir;
        FaultEnv fe;
        fault_env_crash_after(fe.fe, at);
        tdb_config_t c = FaultConfig(TDB_SYNC_FULL);
        tdb_t *db = nullptr;
        if (tdb_open_env(dir.path().c_str(), &c, fe.env(), &db) == TDB_OK) tdb_close(db);
        fault_env_revive(fe.fe);
        EXPECT_EQ(tdb_open_env(dir.path().c_str(), &c, fe.env(), &db), TDB_OK)
            << "crash at mutating call " << at << " of creation: " << tdb_last_error();
        if (db) tdb_close(db);
        db = nullptr;
    }
}

// ---------------------------------------------------------------------------
// Sticky read-only state after a failed sync; ENOSPC; read errors.
// ---------------------------------------------------------------------------

class FaultDbTest : public FaultDbFixture {
  protected:
    FaultDbTest() : FaultDbFixture(5) {}
    // Close (whatever it reports), clear every fault, reopen.
    void ReopenClean() {
        if (db_) tdb_close(db_);
        db_ = nullptr;
        fault_env_clear_rules(fe_.fe);
        fault_env_set_space(fe_.fe, UINT64_MAX);
        Open();
    }
    // Reads keep working in the error state: point reads and a full scan.
    void ExpectReadable(uint64_t n) {
        for (uint64_t i = 0; i < n; i++) ASSERT_EQ(Get(i), TDB_OK) << i << ": " << tdb_last_error();
        tdb_iter_t *it;
        ASSERT_EQ(tdb_iter_create(db_, cf_, nullptr, &it), TDB_OK);
        uint64_t seen = 0;
        for (tdb_iter_seek_to_first(it); tdb_iter_valid(it); tdb_iter_next(it)) seen++;
        EXPECT_EQ(tdb_iter_status(it), TDB_OK);
        EXPECT_GE(seen, n);
        tdb_iter_destroy(it);
    }
    // Every kind of write is refused with READ_ONLY, however often it is
    // retried, also after the fault is gone.
    void ExpectReadOnly(uint64_t probe) {
        EXPECT_NE(tdb_bg_error(db_), TDB_OK);
        for (int attempt = 0; attempt < 3; attempt++) {
            EXPECT_EQ(Put(probe), TDB_ERR_READ_ONLY);
            std::string k = tdbtest::Key(0);
            EXPECT_EQ(tdb_delete(db_, cf_, k.data(), k.size()), TDB_ERR_READ_ONLY);
            tdb_batch_t *b;
            ASSERT_EQ(tdb_batch_create(&b), TDB_OK);
            tdb_batch_put(b, cf_, "bk", 2, "bv", 2, 0);
            EXPECT_EQ(tdb_write(db_, b), TDB_ERR_READ_ONLY);
            tdb_batch_destroy(b);
            tdb_cf_t *x;
            EXPECT_EQ(tdb_create_cf(db_, "after_error", nullptr, &x), TDB_ERR_READ_ONLY);
            EXPECT_NE(tdb_flush(db_, nullptr), TDB_OK);
            fault_env_clear_rules(fe_.fe);  // the disk recovers; the db must not
        }
        EXPECT_EQ(Get(probe), TDB_ERR_NOT_FOUND);
    }
};

TEST_F(FaultDbTest, FailedWalSyncMakesTheDatabaseStickyReadOnly) {
    Open();
    for (uint64_t i = 0; i < 100; i++) ASSERT_EQ(Put(i), TDB_OK);
    fe_.Rule(FAULT_SYNC, TDB_ERR_IO, ".log", 1);
    EXPECT_EQ(Put(100), TDB_ERR_IO);  // this write's fate is unknown
    ExpectReadOnly(1000);
    ExpectReadable(100);
    EXPECT_NE(tdb_close(db_), TDB_OK);  // close reports the background error
    db_ = nullptr;
    // What was synced survives a power loss; nothing after the failed sync
    // can be trusted.
    fault_env_power_loss(fe_.fe);
    fault_env_revive(fe_.fe);
    ReopenClean();
    ExpectReadable(100);
    EXPECT_EQ(tdb_bg_error(db_), TDB_OK);
    EXPECT_EQ(Put(2000), TDB_OK);
}

TEST_F(FaultDbTest, FailedIntervalWalSyncMakesTheDatabaseStickyReadOnly) {
    cfg_ = FaultConfig(TDB_SYNC_INTERVAL);
    Open();
    for (uint64_t i = 0; i < 50; i++) ASSERT_EQ(Put(i), TDB_OK);
    // Nothing unsynced is left, so the 1 ms sync thread cannot hit the
    // fault before Put(50) is acknowledged.
    ASSERT_EQ(tdb_sync(db_), TDB_OK);
    fe_.Rule(FAULT_SYNC, TDB_ERR_IO, ".log", 1, UINT64_MAX);
    ASSERT_EQ(Put(50), TDB_OK);  // acknowledged before the background sync
    auto t0 = std::chrono::steady_clock::now();
    while (tdb_bg_error(db_) == TDB_OK && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5))
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    EXPECT_EQ(fe_.Stats().injected[FAULT_SYNC], 1u);  // tried once, never retried
    ExpectReadOnly(1000);
    ExpectReadable(51);
    ReopenClean();
    ExpectReadable(51);  // a process restart keeps the page cache
}

TEST_F(FaultDbTest, FailedManifestSyncMakesTheDatabaseStickyReadOnly) {
    Open();
    for (uint64_t i = 0; i < 100; i++) ASSERT_EQ(Put(i), TDB_OK);
    fe_.Rule(FAULT_SYNC, TDB_ERR_IO, "MANIFEST", 1);
    EXPECT_NE(tdb_flush(db_, nullptr), TDB_OK);  // the flush's manifest write fails
    ExpectReadOnly(1000);
    ExpectReadable(100);
    fault_env_power_loss(fe_.fe);
    tdb_close(db_);
    db_ = nullptr;
    fault_env_revive(fe_.fe);
    ReopenClean();
    ExpectReadable(100);
}

// A compaction installs its result in memory, then its manifest write
// fails: the durable MANIFEST still lists the inputs, so they must stay on
// disk (a clean close then a reopen finds every table the MANIFEST names).
TEST_F(FaultDbTest, FailedManifestWriteOfACompactionKeepsItsInputs) {
    Open();
    ASSERT_EQ(tdb_pause_background(db_), TDB_OK);
    for (uint64_t t = 0; t < 4; t++) {
        for (uint64_t i = t; i < 200; i += 4) ASSERT_EQ(Put(i), TDB_OK);  // overlapping tables: a real merge
        ASSERT_EQ(tdb_flush(db_, cf_), TDB_OK);
    }
    fe_.Rule(FAULT_SYNC, TDB_ERR_IO, "MANIFEST", 1);
    EXPECT_NE(tdb_compact(db_, cf_), TDB_OK);
    ExpectReadOnly(1000);
    ExpectReadable(200);
    EXPECT_NE(tdb_close(db_), TDB_OK);
    db_ = nullptr;
    // Every table the MANIFEST on disk lists is still there.
    manifest_t m;
    ASSERT_EQ(manifest_read(env_posix(), dir_.path().c_str(), &m, nullptr, nullptr), TDB_OK) << tdb_last_error();
    int listed = 0;
    for (int c = 0; c < m.ncf; c++)
        for (int l = 1; l < TDB_MAX_LEVELS; l++)
            for (int i = 0; i < version_num_files(m.cfs[c].version, l); i++) {
                char path[4096];
                sst_file_name(path, sizeof path, dir_.path().c_str(), version_file(m.cfs[c].version, l, i)->number);
                EXPECT_TRUE(fs::exists(path)) << path;
                listed++;
            }
    manifest_free(&m);
    EXPECT_GE(listed, 2);
    ReopenClean();
    ExpectReadable(200);
}

TEST_F(FaultDbTest, FailedManifestRenameOnCreateFamilyMakesTheDatabaseStickyReadOnly) {
    Open();
    for (uint64_t i = 0; i < 20; i++) ASSERT_EQ(Put(i), TDB_OK);
    fe_.Rule(FAULT_RENAME, TDB_ERR_IO, "MANIFEST", 1);
    tdb_cf_t *x;
    EXPECT_EQ(tdb_create_cf(db_, "newcf", nullptr, &x), TDB_ERR_IO);
    ExpectReadOnly(1000);
    ExpectReadable(20);
    ReopenClean();
    ExpectReadable(20);
    EXPECT_EQ(tdb_get_cf(db_, "newcf", &x), TDB_ERR_NOT_FOUND);  // its creation failed
}

TEST_F(FaultDbTest, FailedWalSyncAtRotationMakesTheDatabaseStickyReadOnly) {
    cfg_ = FaultConfig(TDB_SYNC_NONE);  // the only WAL syncs are at rotation
    Open();
    for (uint64_t i = 0; i < 100; i++) ASSERT_EQ(Put(i), TDB_OK);
    fe_.Rule(FAULT_SYNC, TDB_ERR_IO, ".log", 1);
    EXPECT_NE(tdb_flush(db_, nullptr), TDB_OK);  // rotation syncs the old WAL
    ExpectReadOnly(1000);
    ExpectReadable(100);
    ReopenClean();
    ExpectReadable(100);
}

TEST_F(FaultDbTest, FailedFlushWriteMakesTheDatabaseStickyReadOnly) {
    Open();
    for (uint64_t i = 0; i < 100; i++) ASSERT_EQ(Put(i), TDB_OK);
    fe_.Rule(FAULT_APPEND, TDB_ERR_IO, ".sst", 1, 1, 0, 1);
    EXPECT_NE(tdb_flush(db_, nullptr), TDB_OK);
    ExpectReadOnly(1000);
    ExpectReadable(100);  // the memtable is still served
    ReopenClean();
    ExpectReadable(100);
}

TEST_F(FaultDbTest, ReadErrorsAreReportedAndNotSticky) {
    cfg_.block_cache_size = 0;  // every read goes to the file
    Open();
    for (uint64_t i = 0; i < 200; i++) ASSERT_EQ(Put(i), TDB_OK);
    ASSERT_EQ(tdb_flush(db_, nullptr), TDB_OK);
    ReopenClean();  // table readers not yet open
    fe_.Rule(FAULT_READ, TDB_ERR_IO, ".sst", 1, 3);
    int errors = 0;
    for (uint64_t i = 0; i < 200; i++) {
        int rc = Get(i);
        if (rc != TDB_OK) {
            EXPECT_EQ(rc, TDB_ERR_IO) << tdb_last_error();
            errors++;
        }
    }
    EXPECT_GE(errors, 1);
    EXPECT_EQ(fe_.Stats().injected[FAULT_READ], 3u);
    EXPECT_EQ(tdb_bg_error(db_), TDB_OK);
    ExpectReadable(200);
    EXPECT_EQ(Put(500), TDB_OK);
}

TEST_F(FaultDbTest, NoSpaceRefusesWritesAndLosesNothingAcknowledged) {
    cfg_.default_cf.write_buffer_size = 4 << 20;  // the WAL, not a flush, meets the full disk
    Open();
    fault_env_set_space(fe_.fe, 64 << 10);
    uint64_t acked = 0;
    int first_error = TDB_OK;
    for (uint64_t i = 0; i < 5000; i++) {
        int rc = Put(i);
        if (rc != TDB_OK) {
            first_error = rc;
            break;
        }
        acked = i + 1;
    }
    EXPECT_EQ(first_error, TDB_ERR_NO_SPACE) << tdb_last_error();
    EXPECT_GT(acked, 0u);
    EXPECT_NE(Put(100000), TDB_OK);  // still refused
    ExpectReadable(acked);
    // Restart with space back: open works, every acknowledged write is there.
    ReopenClean();
    ExpectReadable(acked);
    EXPECT_EQ(Put(100000), TDB_OK);
}

// ENOSPC on a WAL append (tearing a record) is not sticky: writes get
// NO_SPACE while the disk is full, succeed once space returns, and the torn
// record never sits in the middle of a WAL.
TEST_F(FaultDbTest, NoSpaceOnWalIsRecoverableWhenSpaceReturns) {
    Open();
    for (uint64_t i = 0; i < 50; i++) ASSERT_EQ(Put(i), TDB_OK);
    fault_env_set_space(fe_.fe, 100);  // the next append tears a record
    EXPECT_EQ(Put(50), TDB_ERR_NO_SPACE);
    EXPECT_EQ(Put(51), TDB_ERR_NO_SPACE);  // not READ_ONLY: it is not sticky
    EXPECT_EQ(tdb_bg_error(db_), TDB_OK);
    ExpectReadable(50);
    fault_env_set_space(fe_.fe, UINT64_MAX);
    for (uint64_t i = 50; i < 150; i++) ASSERT_EQ(Put(i), TDB_OK) << tdb_last_error();
    ASSERT_EQ(tdb_flush(db_, nullptr), TDB_OK);
    for (uint64_t i = 150; i < 200; i++) ASSERT_EQ(Put(i), TDB_OK);
    ASSERT_EQ(tdb_close(db_), TDB_OK);
    db_ = nullptr;
    ReopenClean();  // no WAL with a torn record in its middle
    ExpectReadable(200);
}

// ENOSPC while flushing is not sticky: the flush reports NO_SPACE, the
// memtable stays queued and readable, and the flush succeeds once space
// returns.
TEST_F(FaultDbTest, NoSpaceOnFlushIsRecoverableWhenSpaceReturns) {
    Open();
    for (uint64_t i = 0; i < 100; i++) ASSERT_EQ(Put(i), TDB_OK);
    fe_.Rule(FAULT_APPEND, TDB_ERR_NO_SPACE, ".sst", 1, 1);
    EXPECT_EQ(tdb_flush(db_, nullptr), TDB_ERR_NO_SPACE);
    EXPECT_EQ(tdb_bg_error(db_), TDB_OK);
    ExpectReadable(100);
    fault_env_clear_rules(fe_.fe);
    ASSERT_EQ(tdb_flush(db_, nullptr), TDB_OK) << tdb_last_error();
    ASSERT_EQ(Put(100), TDB_OK);
    ReopenClean();
    ExpectReadable(101);
}

// Flushes that keep failing with ENOSPC: writers that would have to wait for
// them get NO_SPACE at once (not a stall ending in BUSY, not READ_ONLY);
// once space returns the queued memtables are flushed by the background
// retry and writes succeed again, without reopening.
TEST_F(FaultDbTest, NoSpaceOnFlushesRefusesWritesInsteadOfStalling) {
    cfg_.default_cf.l0_queue_stall_threshold = 2;
    Open();
    fe_.Rule(FAULT_APPEND, TDB_ERR_NO_SPACE, ".sst", 1, UINT64_MAX);
    uint64_t acked = 0;
    int rc = TDB_OK;
    auto t0 = std::chrono::steady_clock::now();
    for (uint64_t i = 0; i < 20000 && rc == TDB_OK; i++) {
        rc = Put(i);
        if (rc == TDB_OK) acked = i + 1;
    }
    EXPECT_EQ(rc, TDB_ERR_NO_SPACE) << tdb_last_error();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20));  // refused, not stalled
    EXPECT_GT(fe_.Stats().injected[FAULT_APPEND], 0u);
    EXPECT_EQ(Put(acked), TDB_ERR_NO_SPACE);  // still full
    EXPECT_EQ(tdb_bg_error(db_), TDB_OK);
    ExpectReadable(acked);
    fault_env_clear_rules(fe_.fe);
    // The background retry (backoff at most 1 s) drains the queue.
    t0 = std::chrono::steady_clock::now();
    while ((rc = Put(acked)) == TDB_ERR_NO_SPACE && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10))
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ASSERT_EQ(rc, TDB_OK) << tdb_last_error();
    acked++;
    ASSERT_EQ(tdb_flush(db_, nullptr), TDB_OK) << tdb_last_error();
    ASSERT_EQ(tdb_wait_idle(db_), TDB_OK);
    ReopenClean();
    ExpectReadable(acked);
}

// INTERVAL sync while the WAL is torn by ENOSPC: the background sync and
// tdb_sync cut the partial record off instead of failing, so nothing turns
// sticky; writes resume when space returns and reopen sees every write.
TEST_F(FaultDbTest, NoSpaceOnIntervalWalIsNotStickyAndSyncs) {
    cfg_ = FaultConfig(TDB_SYNC_INTERVAL);
    Open();
    for (uint64_t i = 0; i < 50; i++) ASSERT_EQ(Put(i), TDB_OK);
    fault_env_set_space(fe_.fe, 100);
    EXPECT_EQ(Put(50), TDB_ERR_NO_SPACE);
    EXPECT_EQ(tdb_sync(db_), TDB_OK) << tdb_last_error();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // interval syncs run meanwhile
    EXPECT_EQ(tdb_bg_error(db_), TDB_OK);
    EXPECT_EQ(Put(51), TDB_ERR_NO_SPACE);
    fault_env_set_space(fe_.fe, UINT64_MAX);
    for (uint64_t i = 50; i < 100; i++) ASSERT_EQ(Put(i), TDB_OK) << tdb_last_error();
    ASSERT_EQ(tdb_sync(db_), TDB_OK);
    // What was synced survives a power loss: the torn record is gone and the
    // writes after it are in a later WAL.
    fault_env_power_loss(fe_.fe);
    tdb_close(db_);
    db_ = nullptr;
    fault_env_revive(fe_.fe);
    ReopenClean();
    ExpectReadable(100);
}

// A write whose WAL append fails sets the sticky error while tdb_flush waits
// for a flush it has just queued: tdb_flush must return (READ_ONLY), not
// wait forever. Regression test: found by tdb_stress --write_fault_prob as a
// hang (tdb_flush in pthread_cond_wait(done_cv) with bg_error set, the
// family's memtable queued and no flush running, because bg_error was set
// outside the flush/compaction jobs without waking done_cv waiters); fixed
// by db_set_bg_error_locked (src/db/bg.c), which wakes every waiter. The
// race window is small; the test widens it with threads contending for the
// db mutex and runs in a child process with a watchdog.
TEST(FaultRace, FlushReturnsWhenAWalWriteFailsMeanwhile) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        for (int iter = 0; iter < 300; iter++) {
            TempDir dir;
            FaultEnv fe(1000 + (uint64_t)iter);
            tdb_config_t c = FaultConfig(TDB_SYNC_NONE);
            c.flush_threads = 1;
            tdb_t *db;
            if (tdb_open_env(dir.path().c_str(), &c, fe.env(), &db) != TDB_OK) _exit(3);
            tdb_cf_t *cf;
            tdb_get_cf(db, TDB_DEFAULT_CF, &cf);
            fe.Rule(FAULT_APPEND, TDB_ERR_IO, ".log", 5 + (uint64_t)(iter % 40));
            std::atomic<bool> done{false};
            std::atomic<int> finished{0};
            std::vector<std::thread> ts;
            ts.emplace_back([&] {  // writer until its WAL append fails
                for (uint64_t i = 0;; i++) {
                    std::string k = tdbtest::Key(i);
                    if (tdb_put(db, cf, k.data(), k.size(), "v", 1, 0) != TDB_OK) break;
                }
                finished++;
            });
            ts.emplace_back([&] {  // flusher until the error
                for (;;) {
                    if (tdb_flush(db, nullptr) != TDB_OK) break;
                }
                finished++;
            });
            for (int k = 0; k < 3; k++)
                ts.emplace_back([&] {  // mutex contention: widens the race
                    tdb_stats_t st;
                    while (!done) tdb_get_stats(db, nullptr, &st);
                });
            auto t0 = std::chrono::steady_clock::now();
            while (finished < 2) {
                if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(20)) _exit(7);  // hung
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
            }
            done = true;
            for (auto &t : ts) t.join();
            tdb_close(db);
        }
        _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_NE(WEXITSTATUS(status), 7) << "tdb_flush hung after a concurrent WAL write failure";
    EXPECT_EQ(WEXITSTATUS(status), 0);
}

// A read error while an iterator resolves a value stored apart from its key
// (values >= value_threshold) must make the iterator invalid with the error;
// it must never present the key with an empty value. Found by tdb_stress
// --read_fault_prob ("iterator: value shorter than its header (0 bytes)").
TEST_F(FaultDbTest, IteratorReportsValueReadErrors) {
    cfg_.block_cache_size = 0;
    cfg_.default_cf.value_threshold = 64;
    Open();
    for (uint64_t i = 0; i < 20; i++) ASSERT_EQ(Put(i), TDB_OK);  // 200-byte values: stored apart
    ASSERT_EQ(tdb_flush(db_, nullptr), TDB_OK);
    int empty_values = 0, errors = 0;
    for (uint64_t nth = 1; nth <= 12; nth++) {
        ReopenClean();  // cold readers
        fe_.Rule(FAULT_READ, TDB_ERR_IO, ".sst", nth);
        tdb_iter_t *it;
        if (tdb_iter_create(db_, cf_, nullptr, &it) != TDB_OK) {  // opening the table failed
            errors++;
            continue;
        }
        for (tdb_iter_seek_to_first(it); tdb_iter_valid(it); tdb_iter_next(it)) {
            size_t vl;
            tdb_iter_value(it, &vl);
            if (vl != 200) empty_values++;
        }
        if (tdb_iter_status(it) != TDB_OK) errors++;
        tdb_iter_destroy(it);
    }
    EXPECT_EQ(empty_values, 0) << "keys returned with a value that could not be read";
    EXPECT_GT(errors, 0);
}

// Random faults of every kind while writers run; then a power loss; then
// a clean restart: open works and every acknowledged write is there.
TEST(FaultRandom, RandomFaultsNeverLoseAcknowledgedWrites) {
    uint64_t injected = 0, verified = 0;
    for (int round = 0; round < Scaled(12); round++) {
        TempDir dir;
        FaultEnv fe(100 + (uint64_t)round);
        const fault_op_t kinds[] = {FAULT_APPEND, FAULT_SYNC, FAULT_READ, FAULT_RENAME,
                                    FAULT_SYNC_DIR, FAULT_CREATE, FAULT_OPEN, FAULT_REMOVE};
        tdb_config_t c = FaultConfig(TDB_SYNC_FULL);
        tdb_t *db = nullptr;
        ASSERT_EQ(tdb_open_env(dir.path().c_str(), &c, fe.env(), &db), TDB_OK);
        for (fault_op_t k : kinds)
            fe.Rule(k, round % 3 == 0 ? TDB_ERR_NO_SPACE : TDB_ERR_IO, nullptr, 0, 0, 0.004 + 0.002 * (round % 4),
                    round % 2);
        History h;
        RunWorkload(db, &h, 300, true);
        fault_env_clear_rules(fe.fe);
        fault_env_power_loss(fe.fe);
        tdb_close(db);
        injected += fe.Stats().injected_total;
        fault_env_revive(fe.fe);
        std::string where = "round " + std::to_string(round);
        ASSERT_EQ(tdb_open_env(dir.path().c_str(), &c, fe.env(), &db), TDB_OK) << where << ": " << tdb_last_error();
        verified += VerifyHistory(db, &h, true, where);
        EXPECT_EQ(tdb_close(db), TDB_OK);
    }
    printf("[ random faults ] injected %llu, writes verified %llu\n", (unsigned long long)injected,
           (unsigned long long)verified);
    EXPECT_GE(injected, (uint64_t)Scaled(12) / 2);  // most rounds hit a fault
}

}  // namespace
