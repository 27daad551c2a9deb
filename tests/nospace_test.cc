// A full disk (ENOSPC) refuses writes with TDB_ERR_NO_SPACE; it never
// turns the database read-only, never loses an acknowledged write, and
// writes resume by themselves once space returns (docs/design/reliability.md,
// section 9). tests/fault_test.cc covers a WAL append and a flush that run
// out of space; here:
//  - an fsync of the WAL that reports ENOSPC fails that write only;
//  - an fsync of a flush's table that reports ENOSPC;
//  - a compaction out of space (append or fsync of its output), called
//    explicitly and in the background, where it retries with a backoff;
//  - the MANIFEST out of space (short write, fsync or rename of
//    MANIFEST.tmp) during a flush, a compaction or a family change: the
//    change is undone and retried, the old MANIFEST stays;
//  - a real small filesystem (tmpfs mounted with size=8m, skipped where
//    mounting is not permitted): fill it until writes are refused, free
//    space, writes resume; everything acknowledged survives a reopen.
// After each, a simulated power loss or a reopen must keep every
// acknowledged write.
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include "fault_testutil.h"
#include "testutil.h"

extern "C" {
#include "db/testing.h"
}

using tdbtest::TempDir;

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// A database over the fault env, with put/get helpers for numbered keys.
class NoSpaceTest : public FaultDbFixture {
  protected:
    // Close (whatever it reports), optionally lose power first, clear every
    // fault, reopen.
    void Reopen(bool power_loss) {
        if (power_loss) fault_env_power_loss(fe_.fe);
        if (db_) tdb_close(db_);
        db_ = nullptr;
        if (power_loss) fault_env_revive(fe_.fe);
        fault_env_clear_rules(fe_.fe);
        Open();
    }
    // Keys [from, to) all readable, by point reads and by a scan.
    void ExpectReadable(uint64_t from, uint64_t to) {
        for (uint64_t i = from; i < to; i++) ASSERT_EQ(Get(i), TDB_OK) << i << ": " << tdb_last_error();
        tdb_iter_t *it;
        ASSERT_EQ(tdb_iter_create(db_, cf_, nullptr, &it), TDB_OK);
        std::string lo = tdbtest::Key(from), hi = tdbtest::Key(to);
        uint64_t seen = 0;
        for (tdb_iter_seek(it, lo.data(), lo.size()); tdb_iter_valid(it); tdb_iter_next(it)) {
            size_t kl;
            const char *k = (const char *)tdb_iter_key(it, &kl);
            if (std::string(k, kl) >= hi) break;
            seen++;
        }
        EXPECT_EQ(tdb_iter_status(it), TDB_OK);
        EXPECT_EQ(seen, to - from);
        tdb_iter_destroy(it);
    }
    uint64_t Level1Files() {
        tdb_stats_t st;
        EXPECT_EQ(tdb_get_stats(db_, cf_, &st), TDB_OK);
        return st.levels[1].files;
    }
    // Space returns: the level-1 tables held back by the failures are
    // compacted by the retries alone (within 10 s), and after a reopen at
    // a power loss keys [0, 401) are still there.
    void ExpectCompactionAfterSpaceReturns() {
        fault_env_clear_rules(fe_.fe);
        auto t0 = Clock::now();
        while (Level1Files() >= 4 && Clock::now() - t0 < std::chrono::seconds(10))
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        EXPECT_LT(Level1Files(), 4u) << "no compaction after space returned";
        ASSERT_EQ(tdb_wait_idle(db_), TDB_OK) << tdb_last_error();
        Reopen(true);
        ExpectReadable(0, 401);
    }
    // Flush `rounds` memtables of `per` keys each, keys [first, first +
    // rounds * per) interleaved, so that the tables overlap and compacting
    // them must rewrite them (no trivial move).
    void FlushRounds(uint64_t first, int rounds, uint64_t per) {
        for (int r = 0; r < rounds; r++) {
            for (uint64_t i = 0; i < per; i++) ASSERT_EQ(Put(first + i * (uint64_t)rounds + (uint64_t)r), TDB_OK);
            ASSERT_EQ(tdb_flush(db_, nullptr), TDB_OK) << tdb_last_error();
        }
    }
};

// The WAL's fsync reports ENOSPC after a FULL-sync write's append: that
// write fails with NO_SPACE and is not applied (its record is cut off, so
// it does not come back after a power loss either); the database stays
// writable, the next write succeeds in a fresh log, and a power loss keeps
// every acknowledged write.
TEST_F(NoSpaceTest, WalSyncOutOfSpaceFailsThatWriteOnly) {
    Open();
    for (uint64_t i = 0; i < 50; i++) ASSERT_EQ(Put(i), TDB_OK);
    fe_.Rule(FAULT_SYNC, TDB_ERR_NO_SPACE, ".log", 1);
    EXPECT_EQ(Put(50), TDB_ERR_NO_SPACE) << tdb_last_error();
    EXPECT_EQ(fe_.Stats().injected[FAULT_SYNC], 1u);
    EXPECT_EQ(tdb_bg_error(db_), TDB_OK);
    EXPECT_EQ(Get(50), TDB_ERR_NOT_FOUND);
    for (uint64_t i = 51; i < 100; i++) ASSERT_EQ(Put(i), TDB_OK) << i << ": " << tdb_last_error();
    // Again on the fresh log, on its very first group.
    fe_.Rule(FAULT_SYNC, TDB_ERR_NO_SPACE, ".log", 1);
    EXPECT_EQ(Put(100), TDB_ERR_NO_SPACE);
    for (uint64_t i = 101; i < 150; i++) ASSERT_EQ(Put(i), TDB_OK) << i << ": " << tdb_last_error();
    Reopen(true);
    ExpectReadable(0, 50);
    ExpectReadable(51, 100);
    ExpectReadable(101, 150);
    EXPECT_EQ(Get(50), TDB_ERR_NOT_FOUND) << "a write refused with NO_SPACE came back";
    EXPECT_EQ(Get(100), TDB_ERR_NOT_FOUND) << "a write refused with NO_SPACE came back";
    EXPECT_EQ(Put(150), TDB_OK);
}

// An fsync out of space while NONE-mode writes are acknowledged but not yet
// synced cannot be undone by cutting the log (those writes would go): it
// stays a sticky error, like every other failed fsync.
TEST_F(NoSpaceTest, WalSyncOutOfSpaceWithUnsyncedAcknowledgedWritesIsSticky) {
    cfg_ = FaultConfig(TDB_SYNC_NONE);
    Open();
    for (uint64_t i = 0; i < 50; i++) ASSERT_EQ(Put(i), TDB_OK);
    fe_.Rule(FAULT_SYNC, TDB_ERR_NO_SPACE, ".log", 1);
    EXPECT_NE(tdb_sync(db_), TDB_OK);
    EXPECT_NE(tdb_bg_error(db_), TDB_OK);
    EXPECT_EQ(Put(50), TDB_ERR_READ_ONLY);
    ExpectReadable(0, 50);
    Reopen(false);
    ExpectReadable(0, 50);
}

// A flush whose table fsync reports ENOSPC: the flush reports NO_SPACE, the
// memtable stays queued and readable, nothing is sticky; once space is back
// the flush succeeds and a power loss keeps everything.
TEST_F(NoSpaceTest, FlushTableSyncOutOfSpaceIsRetried) {
    Open();
    for (uint64_t i = 0; i < 100; i++) ASSERT_EQ(Put(i), TDB_OK);
    fe_.Rule(FAULT_SYNC, TDB_ERR_NO_SPACE, ".sst", 1);
    EXPECT_EQ(tdb_flush(db_, nullptr), TDB_ERR_NO_SPACE) << tdb_last_error();
    EXPECT_EQ(tdb_bg_error(db_), TDB_OK);
    ExpectReadable(0, 100);
    EXPECT_EQ(Put(100), TDB_OK);  // the WAL still takes writes
    ASSERT_EQ(tdb_flush(db_, nullptr), TDB_OK) << tdb_last_error();
    tdb_stats_t st;
    ASSERT_EQ(tdb_get_stats(db_, nullptr, &st), TDB_OK);
    EXPECT_GE(st.flushes, 1u);
    EXPECT_EQ(st.immutable_memtables, 0u);
    Reopen(true);
    ExpectReadable(0, 101);
}

// tdb_compact out of space, on the output's appends or on its fsync: it
// returns NO_SPACE, the inputs stay (all data readable, writes accepted),
// and it succeeds once space is back; a power loss keeps everything.
TEST_F(NoSpaceTest, CompactionOutOfSpaceKeepsItsInputs) {
    for (fault_op_t op : {FAULT_APPEND, FAULT_SYNC}) {
        SCOPED_TRACE(fault_op_name(op));
        cfg_.default_cf.l1_file_count_trigger = 100;  // only tdb_compact compacts
        Reopen(false);
        uint64_t base = op == FAULT_APPEND ? 0 : 10000;
        FlushRounds(base, 4, 100);
        uint64_t files = Level1Files();
        ASSERT_GE(files, 4u);
        fe_.Rule(op, TDB_ERR_NO_SPACE, ".sst", 1, UINT64_MAX);
        EXPECT_EQ(tdb_compact(db_, cf_), TDB_ERR_NO_SPACE) << tdb_last_error();
        EXPECT_GT(fe_.Stats().injected[op], 0u);
        EXPECT_EQ(tdb_bg_error(db_), TDB_OK);
        EXPECT_EQ(Level1Files(), files);
        ExpectReadable(base, base + 400);
        EXPECT_EQ(Put(base + 400), TDB_OK);  // the WAL still takes writes
        fault_env_clear_rules(fe_.fe);
        ASSERT_EQ(tdb_compact(db_, cf_), TDB_OK) << tdb_last_error();
        EXPECT_EQ(Level1Files(), 0u);
        Reopen(true);
        ExpectReadable(base, base + 401);
    }
}

// Background compaction out of space retries by itself with a backoff
// (several attempts while the disk stays full, not one and not a busy
// loop), and completes once space returns, without any call from the
// application; writes are accepted meanwhile.
TEST_F(NoSpaceTest, BackgroundCompactionRetriesUntilSpaceReturns) {
    Open();
    ASSERT_EQ(tdb_pause_background(db_), TDB_OK);
    FlushRounds(0, 4, 100);  // flushed in this thread: level 1 over its trigger
    ASSERT_GE(Level1Files(), 4u);
    fe_.Rule(FAULT_APPEND, TDB_ERR_NO_SPACE, ".sst", 1, UINT64_MAX);
    auto start = Clock::now();
    ASSERT_EQ(tdb_continue_background(db_), TDB_OK);
    while (fe_.Stats().injected[FAULT_APPEND] < 3 && Clock::now() - start < std::chrono::seconds(10))
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    uint64_t failed = fe_.Stats().injected[FAULT_APPEND];
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
    EXPECT_GE(failed, 3u) << "retried by itself";
    EXPECT_LE(failed, (uint64_t)ms / 10 + 5) << "the retries back off (at least 10 ms apart) over " << ms << " ms";
    EXPECT_EQ(tdb_bg_error(db_), TDB_OK);
    EXPECT_GE(Level1Files(), 4u);
    ExpectReadable(0, 400);
    EXPECT_EQ(Put(400), TDB_OK);
    ExpectCompactionAfterSpaceReturns();
}

// ---------------------------------------------------------------------------
// The MANIFEST out of space. It is a snapshot rewritten through
// MANIFEST.tmp (write, fsync, rename, fsync dir): running out of space
// before the rename leaves the old MANIFEST as it was, so the change it
// was persisting is undone in memory and retried, and nothing is sticky.
// ---------------------------------------------------------------------------

// Number of files in the database directory whose name ends in `suffix`.
static int CountFiles(const std::string &dir, const std::string &suffix) {
    int n = 0;
    for (const auto &e : fs::directory_iterator(dir)) {
        std::string name = e.path().filename().string();
        if (name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
            n++;
    }
    return n;
}

// A flush whose MANIFEST write runs out of space (a short write of
// MANIFEST.tmp, its fsync, or the rename): tdb_flush reports NO_SPACE, the
// database stays writable (never READ_ONLY), the memtable stays queued and
// readable, the flush's table is deleted and MANIFEST.tmp with it; the
// retry, once space is back, flushes without a reopen; a power loss at any
// point keeps every acknowledged write.
TEST_F(NoSpaceTest, ManifestOutOfSpaceOnFlushIsRetried) {
    for (fault_op_t op : {FAULT_APPEND, FAULT_SYNC, FAULT_RENAME}) {
        SCOPED_TRACE(fault_op_name(op));
        Reopen(false);
        uint64_t base = 1000 * (uint64_t)op;
        for (uint64_t i = base; i < base + 100; i++) ASSERT_EQ(Put(i), TDB_OK);
        int tables = CountFiles(dir_.path(), ".sst");
        fe_.Rule(op, TDB_ERR_NO_SPACE, "MANIFEST", 1, UINT64_MAX, 0, op == FAULT_APPEND);
        EXPECT_EQ(tdb_flush(db_, nullptr), TDB_ERR_NO_SPACE) << tdb_last_error();
        EXPECT_GT(fe_.Stats().injected[op], 0u);
        EXPECT_EQ(tdb_bg_error(db_), TDB_OK);
        EXPECT_EQ(CountFiles(dir_.path(), ".sst"), tables) << "the unlisted table was not deleted";
        EXPECT_EQ(CountFiles(dir_.path(), ".tmp"), 0);
        ExpectReadable(base, base + 100);
        EXPECT_EQ(Put(base + 100), TDB_OK) << tdb_last_error();  // the WAL still takes writes
        // Power lost while the disk is full: the old MANIFEST and the WAL
        // hold everything.
        Reopen(true);
        ExpectReadable(base, base + 101);
        for (uint64_t i = base + 101; i < base + 200; i++) ASSERT_EQ(Put(i), TDB_OK);
        fe_.Rule(op, TDB_ERR_NO_SPACE, "MANIFEST", 1, UINT64_MAX, 0, op == FAULT_APPEND);
        EXPECT_EQ(tdb_flush(db_, nullptr), TDB_ERR_NO_SPACE) << tdb_last_error();
        fault_env_clear_rules(fe_.fe);
        ASSERT_EQ(tdb_flush(db_, nullptr), TDB_OK) << tdb_last_error();
        tdb_stats_t st;
        ASSERT_EQ(tdb_get_stats(db_, nullptr, &st), TDB_OK);
        EXPECT_EQ(st.immutable_memtables, 0u);
        EXPECT_EQ(tdb_bg_error(db_), TDB_OK);
        EXPECT_EQ(Put(base + 200), TDB_OK) << tdb_last_error();
        Reopen(true);
        ExpectReadable(base, base + 201);
    }
}

// tdb_compact whose MANIFEST write runs out of space: NO_SPACE, the inputs
// stay listed and on disk, the outputs go; a background compaction in the
// same state retries by itself and finishes once space is back.
TEST_F(NoSpaceTest, ManifestOutOfSpaceOnCompactionKeepsItsInputs) {
    cfg_.default_cf.l1_file_count_trigger = 100;  // only tdb_compact compacts
    Open();
    FlushRounds(0, 4, 100);
    uint64_t files = Level1Files();
    ASSERT_GE(files, 4u);
    int tables = CountFiles(dir_.path(), ".sst");
    fe_.Rule(FAULT_SYNC, TDB_ERR_NO_SPACE, "MANIFEST", 1, UINT64_MAX);
    EXPECT_EQ(tdb_compact(db_, cf_), TDB_ERR_NO_SPACE) << tdb_last_error();
    EXPECT_GT(fe_.Stats().injected[FAULT_SYNC], 0u);
    EXPECT_EQ(tdb_bg_error(db_), TDB_OK);
    EXPECT_EQ(Level1Files(), files);
    EXPECT_EQ(CountFiles(dir_.path(), ".sst"), tables) << "inputs deleted or outputs left behind";
    ExpectReadable(0, 400);
    EXPECT_EQ(Put(400), TDB_OK) << tdb_last_error();
    fault_env_clear_rules(fe_.fe);
    ASSERT_EQ(tdb_compact(db_, cf_), TDB_OK) << tdb_last_error();
    EXPECT_EQ(Level1Files(), 0u);
    Reopen(true);
    ExpectReadable(0, 401);

    // In the background: level 1 over its trigger while the MANIFEST
    // cannot be written; the compaction retries with the backoff.
    cfg_.default_cf.l1_file_count_trigger = 2;
    Reopen(false);
    ASSERT_EQ(tdb_pause_background(db_), TDB_OK);
    FlushRounds(1000, 4, 100);
    ASSERT_GE(Level1Files(), 4u);
    fe_.Rule(FAULT_SYNC, TDB_ERR_NO_SPACE, "MANIFEST", 1, UINT64_MAX);
    ASSERT_EQ(tdb_continue_background(db_), TDB_OK);
    auto start = Clock::now();
    while (fe_.Stats().injected[FAULT_SYNC] < 3 && Clock::now() - start < std::chrono::seconds(10))
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    EXPECT_GE(fe_.Stats().injected[FAULT_SYNC], 3u) << "retried by itself";
    EXPECT_EQ(tdb_bg_error(db_), TDB_OK);
    EXPECT_GE(Level1Files(), 4u);
    ExpectCompactionAfterSpaceReturns();
    ExpectReadable(1000, 1400);
}

// Creating or dropping a family whose MANIFEST write runs out of space
// fails with NO_SPACE and changes nothing (the family does not exist /
// still exists, also after a power loss); it succeeds once space is back.
TEST_F(NoSpaceTest, ManifestOutOfSpaceOnFamilyChangeChangesNothing) {
    Open();
    tdb_cf_t *cf = nullptr;
    fe_.Rule(FAULT_APPEND, TDB_ERR_NO_SPACE, "MANIFEST", 1, UINT64_MAX, 0, 1);
    EXPECT_EQ(tdb_create_cf(db_, "extra", nullptr, &cf), TDB_ERR_NO_SPACE) << tdb_last_error();
    EXPECT_EQ(tdb_get_cf(db_, "extra", &cf), TDB_ERR_NOT_FOUND);
    EXPECT_EQ(tdb_bg_error(db_), TDB_OK);
    EXPECT_EQ(Put(0), TDB_OK) << tdb_last_error();
    Reopen(true);
    EXPECT_EQ(tdb_get_cf(db_, "extra", &cf), TDB_ERR_NOT_FOUND);
    ASSERT_EQ(tdb_create_cf(db_, "extra", nullptr, &cf), TDB_OK) << tdb_last_error();
    fe_.Rule(FAULT_SYNC, TDB_ERR_NO_SPACE, "MANIFEST", 1, UINT64_MAX);
    EXPECT_EQ(tdb_drop_cf(db_, "extra"), TDB_ERR_NO_SPACE) << tdb_last_error();
    EXPECT_EQ(tdb_get_cf(db_, "extra", &cf), TDB_OK);
    EXPECT_EQ(tdb_bg_error(db_), TDB_OK);
    Reopen(true);
    ASSERT_EQ(tdb_get_cf(db_, "extra", &cf), TDB_OK);
    fe_.Rule(FAULT_SYNC, TDB_ERR_NO_SPACE, "MANIFEST", 1, UINT64_MAX);
    EXPECT_EQ(tdb_drop_cf(db_, "extra"), TDB_ERR_NO_SPACE);
    fault_env_clear_rules(fe_.fe);
    EXPECT_EQ(tdb_drop_cf(db_, "extra"), TDB_OK) << tdb_last_error();
    Reopen(true);
    EXPECT_EQ(tdb_get_cf(db_, "extra", &cf), TDB_ERR_NOT_FOUND);
    ExpectReadable(0, 1);
}

// A MANIFEST.tmp cut short (what a short write before ENOSPC, then a
// crash, leaves) is never read: open uses the complete MANIFEST and removes
// the torn temp file. (Every truncation of a MANIFEST itself fails its
// checksum: manifest_test.)
TEST_F(NoSpaceTest, TornManifestTempFileIsNeverRead) {
    Open();
    for (uint64_t i = 0; i < 100; i++) ASSERT_EQ(Put(i), TDB_OK);
    ASSERT_EQ(tdb_flush(db_, nullptr), TDB_OK);
    tdb_close(db_);
    db_ = nullptr;
    std::string good;
    {
        std::ifstream in(dir_.path() + "/MANIFEST", std::ios::binary);
        good.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    ASSERT_GT(good.size(), 16u);
    // A torn copy that lists no table (the header and a cut body).
    for (size_t len : {good.size() / 2, good.size() - 1}) {
        {
            std::ofstream out(dir_.path() + "/MANIFEST.tmp", std::ios::binary | std::ios::trunc);
            out.write(good.data(), (std::streamsize)len);
        }
        Open();
        ExpectReadable(0, 100);
        EXPECT_FALSE(fs::exists(dir_.path() + "/MANIFEST.tmp"));
        tdb_close(db_);
        db_ = nullptr;
    }
}

// ---------------------------------------------------------------------------
// A real full filesystem: a small tmpfs.
// ---------------------------------------------------------------------------

// A tmpfs of `size` mounted on a fresh directory, unmounted on destruction.
class SmallFs {
  public:
    explicit SmallFs(const char *size) {
        char tmpl[] = "/tmp/tdb-nospace-XXXXXX";
        if (!mkdtemp(tmpl)) {
            why_ = std::string("mkdtemp: ") + strerror(errno);
            return;
        }
        path_ = tmpl;
        std::string opts = std::string("size=") + size;
        if (mount("tmpfs", path_.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, opts.c_str()) != 0) {
            why_ = "mount tmpfs on " + path_ + ": " + strerror(errno);
            rmdir(path_.c_str());
            path_.clear();
            return;
        }
        mounted_ = true;
    }
    ~SmallFs() {
        if (mounted_) umount2(path_.c_str(), MNT_DETACH);
        if (!path_.empty()) rmdir(path_.c_str());
    }
    bool ok() const { return mounted_; }
    const std::string &why() const { return why_; }
    const std::string &path() const { return path_; }

  private:
    std::string path_, why_;
    bool mounted_ = false;
};

// Fill an 8 MiB tmpfs (1 KiB values, FULL sync, plain POSIX env) until a
// write is refused: it must be refused with NO_SPACE, again on retry, not
// READ_ONLY, while every acknowledged write stays readable. Deleting a
// 5 MiB ballast file frees space (room for the flush of what the WAL
// held): writes resume by themselves (background
// flushes retry), and everything acknowledged is there after a reopen.
TEST(NoSpaceRealFs, FullTmpfsRefusesWritesAndResumesWhenSpaceIsFreed) {
    SmallFs fs8("8m");
    if (!fs8.ok()) GTEST_SKIP() << "cannot mount a small tmpfs here: " << fs8.why();
    const std::string ballast = fs8.path() + "/ballast", db_path = fs8.path() + "/db";
    {
        std::ofstream b(ballast, std::ios::binary);
        std::string mb(1 << 20, 'b');
        for (int i = 0; i < 5; i++) b.write(mb.data(), (std::streamsize)mb.size());
        ASSERT_TRUE(b.good());
    }
    tdb_config_t c = FaultConfig(TDB_SYNC_FULL);
    c.default_cf.compression = TDB_COMPRESS_NONE;
    // Small memtables: flushes and compactions run, and write their
    // MANIFEST, while the disk fills, so the disk runs out under the WAL, a
    // table or the MANIFEST, wherever the fill happens to end. (With the
    // MANIFEST case sticky, as before, this failed about one run in 15.)
    c.default_cf.write_buffer_size = 256 << 10;
    tdb_t *db = nullptr;
    tdb_cf_t *cf = nullptr;
    ASSERT_EQ(tdb_open(db_path.c_str(), &c, &db), TDB_OK) << tdb_last_error();
    ASSERT_EQ(tdb_get_cf(db, TDB_DEFAULT_CF, &cf), TDB_OK);
    auto put = [&](uint64_t i) {
        std::string k = tdbtest::Key(i), v = tdbtest::Value(i, 1024);
        return tdb_put(db, cf, k.data(), k.size(), v.data(), v.size(), 0);
    };
    auto check = [&](uint64_t n, const char *when) {
        for (uint64_t i = 0; i < n; i++) {
            std::string k = tdbtest::Key(i);
            void *v = nullptr;
            size_t vl = 0;
            int rc = tdb_get(db, cf, nullptr, k.data(), k.size(), &v, &vl);
            ASSERT_EQ(rc, TDB_OK) << when << ": acknowledged key " << i << ": " << tdb_last_error();
            EXPECT_EQ(std::string((char *)v, vl), tdbtest::Value(i, 1024)) << when;
            tdb_free(v);
        }
    };
    uint64_t acked = 0;
    int rc = TDB_OK;
    for (; acked < 20000; acked++)
        if ((rc = put(acked)) != TDB_OK) break;
    ASSERT_EQ(rc, TDB_ERR_NO_SPACE) << "after " << acked << " writes: " << tdb_last_error();
    ASSERT_GT(acked, 100u);
    printf("[ tmpfs 8m ] %llu writes of 1 KiB acknowledged before the disk was full\n", (unsigned long long)acked);
    for (int attempt = 0; attempt < 3; attempt++) {
        // A flush or compaction may free space meanwhile (it deletes its
        // inputs): the write is then taken, and must be kept like the rest.
        int r = put(acked);
        EXPECT_TRUE(r == TDB_ERR_NO_SPACE || r == TDB_OK) << r << ": " << tdb_last_error();
        if (r == TDB_OK) acked++;
    }
    EXPECT_EQ(tdb_bg_error(db), TDB_OK);
    check(acked, "disk full");
    ASSERT_EQ(unlink(ballast.c_str()), 0);
    auto t0 = Clock::now();
    while ((rc = put(acked)) == TDB_ERR_NO_SPACE && Clock::now() - t0 < std::chrono::seconds(15))
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ASSERT_EQ(rc, TDB_OK) << "writes did not resume after space was freed: " << tdb_last_error();
    acked++;
    for (int i = 0; i < 100; i++, acked++) ASSERT_EQ(put(acked), TDB_OK) << tdb_last_error();
    EXPECT_EQ(tdb_flush(db, nullptr), TDB_OK) << tdb_last_error();
    check(acked, "space back");
    EXPECT_EQ(tdb_close(db), TDB_OK) << tdb_last_error();
    db = nullptr;
    ASSERT_EQ(tdb_open(db_path.c_str(), &c, &db), TDB_OK) << tdb_last_error();
    ASSERT_EQ(tdb_get_cf(db, TDB_DEFAULT_CF, &cf), TDB_OK);
    check(acked, "after reopen");
    EXPECT_EQ(tdb_close(db), TDB_OK);
}

}  // namespace
