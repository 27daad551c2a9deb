// Database-level tests of the compaction policy through the public API:
// level targets that follow the bottom level's size (checked on the tree a
// random load leaves behind), write amplification from the statistics,
// trivial moves for sequential inserts, concurrent compactions of one
// family (compaction_threads = 2), manual compaction and reopen.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "testutil.h"
#include "tidesdb/tidesdb.h"

using tdbtest::Key;
using tdbtest::TempDir;
using tdbtest::Value;

namespace {

constexpr int kLast = TDB_MAX_LEVELS - 1;
constexpr uint64_t kKeys = 200000;

tdb_config_t LoadConfig() {
    tdb_config_t c;
    tdb_config_default(&c);
    c.default_cf.write_buffer_size = 256 << 10;  // base level target: 4 x 256 KiB
    c.default_cf.sync_mode = TDB_SYNC_NONE;
    c.block_cache_size = 4 << 20;
    c.compaction_threads = 2;
    c.log_level = TDB_LOG_DEBUG;  // the LOG records picks and trivial moves
    return c;
}

// Expected targets from the level sizes (the rule of version/compaction.h,
// restated): returns the base level.
int ExpectedTargets(const tdb_stats_t &st, uint64_t base_bytes, uint64_t ratio, uint64_t target[TDB_MAX_LEVELS]) {
    uint64_t size = 0;
    int first = 0;
    for (int l = 2; l < TDB_MAX_LEVELS; l++) {
        if (!first && st.levels[l].files) first = l;
        size = std::max(size, st.levels[l].bytes);
    }
    int base = kLast;
    for (uint64_t t = size; base > 2 && t / ratio > base_bytes / ratio; t /= ratio) base--;
    if (first && first < base) base = first;
    for (int l = 0; l < TDB_MAX_LEVELS; l++) target[l] = 0;
    target[kLast] = size;
    for (int l = base; l < kLast; l++) {
        uint64_t t = size;
        for (int k = l; k < kLast; k++) t /= ratio;
        target[l] = std::max(t, base_bytes);
    }
    return base;
}

struct LogCounts {
    int moves = 0, compactions = 0, max_running = 0;
};

// Count trivial moves, rewrites and the most compactions seen running at
// once in <dir>/LOG.
LogCounts ReadLog(const std::string &dir) {
    LogCounts c;
    std::ifstream in(dir + "/LOG");
    std::string line;
    while (std::getline(in, line)) {
        if (line.find("trivial move '") != std::string::npos) c.moves++;
        if (line.find("compacted '") != std::string::npos) c.compactions++;
        size_t p = line.find(" running");
        size_t q = line.rfind(", ", p);
        if (line.find("picked '") != std::string::npos && p != std::string::npos && q != std::string::npos)
            c.max_running = std::max(c.max_running, atoi(line.c_str() + q + 2));
    }
    return c;
}

class CompactionDb : public ::testing::Test {
  protected:
    TempDir dir_;
    tdb_config_t cfg_ = LoadConfig();
    tdb_t *db_ = nullptr;
    tdb_cf_t *cf_ = nullptr;

    void Open() {
        ASSERT_EQ(TDB_OK, tdb_open(dir_.path().c_str(), &cfg_, &db_)) << tdb_last_error();
        ASSERT_EQ(TDB_OK, tdb_get_cf(db_, TDB_DEFAULT_CF, &cf_));
    }
    void Close() {
        if (db_) {
            EXPECT_EQ(TDB_OK, tdb_close(db_));
        }
        db_ = nullptr;
    }
    void TearDown() override { Close(); }

    void Put(uint64_t i, uint64_t version = 0) {
        std::string k = Key(i), v = Value(i + version * 7919, 100);
        ASSERT_EQ(TDB_OK, tdb_put(db_, cf_, k.data(), k.size(), v.data(), v.size(), 0)) << tdb_last_error();
    }
    std::string Get(uint64_t i) {
        std::string k = Key(i);
        void *v = nullptr;
        size_t n = 0;
        int rc = tdb_get(db_, cf_, nullptr, k.data(), k.size(), &v, &n);
        if (rc != TDB_OK) return std::string("<") + tdb_strerror(rc) + ">";
        std::string s((const char *)v, n);
        tdb_free(v);
        return s;
    }
    tdb_stats_t Stats() {
        tdb_stats_t st;
        EXPECT_EQ(TDB_OK, tdb_get_stats(db_, cf_, &st));
        return st;
    }
    static double WriteAmp(const tdb_stats_t &st) {
        return (double)(st.wal_bytes_written + st.flush_bytes_written + st.compaction_bytes_written) /
               (double)st.user_bytes_written;
    }
    static std::string Shape(const tdb_stats_t &st) {
        std::string s;
        for (int l = 1; l < TDB_MAX_LEVELS; l++)
            s += "L" + std::to_string(l) + "=" + std::to_string(st.levels[l].files) + "/" +
                 std::to_string(st.levels[l].bytes) + " ";
        return s;
    }
    // Every key holds the value of its latest write (version[i]); a scan
    // sees exactly the keys in order.
    void Verify(const std::vector<uint64_t> &version) {
        for (uint64_t i = 0; i < version.size(); i += 97) ASSERT_EQ(Value(i + version[i] * 7919, 100), Get(i)) << i;
        tdb_iter_t *it = nullptr;
        ASSERT_EQ(TDB_OK, tdb_iter_create(db_, cf_, nullptr, &it));
        uint64_t n = 0;
        for (tdb_iter_seek_to_first(it); tdb_iter_valid(it); tdb_iter_next(it), n++) {
            size_t kl = 0, vl = 0;
            const char *k = (const char *)tdb_iter_key(it, &kl);
            const char *v = (const char *)tdb_iter_value(it, &vl);
            ASSERT_LT(n, version.size());
            ASSERT_EQ(Key(n), std::string(k, kl));
            ASSERT_EQ(Value(n + version[n] * 7919, 100), std::string(v, vl)) << n;
        }
        EXPECT_EQ(TDB_OK, tdb_iter_status(it));
        tdb_iter_destroy(it);
        EXPECT_EQ(version.size(), n);
    }
    // After tdb_wait_idle: the tree has the shape the dynamic targets ask
    // for. Returns the base level.
    int CheckShape(const tdb_stats_t &st) {
        const uint64_t base_bytes = (uint64_t)cfg_.default_cf.write_buffer_size * cfg_.default_cf.l1_file_count_trigger;
        uint64_t target[TDB_MAX_LEVELS];
        int base = ExpectedTargets(st, base_bytes, (uint64_t)cfg_.default_cf.level_size_ratio, target);
        uint64_t total = 0;
        for (int l = 1; l < TDB_MAX_LEVELS; l++) total += st.levels[l].bytes;
        EXPECT_LT(st.levels[1].files, (uint64_t)cfg_.l1_idle_file_trigger) << "idle: at most one level-1 file " << Shape(st);
        for (int l = 2; l < base; l++) EXPECT_EQ(0u, st.levels[l].files) << "above the base " << Shape(st);
        for (int l = base; l < kLast; l++)  // idle: no level is at or over its target
            EXPECT_LT(st.levels[l].bytes, target[l]) << "level " << l << " " << Shape(st);
        // The bottom is the last level and holds most of the data (the
        // levels above hold under S/(ratio-1) plus the base floor).
        EXPECT_EQ(target[kLast], st.levels[kLast].bytes) << Shape(st);
        double share = cfg_.default_cf.level_size_ratio >= 10 ? 0.75 : 0.5;
        EXPECT_GE((double)st.levels[kLast].bytes, share * (double)total) << Shape(st);
        return base;
    }
};

TEST_F(CompactionDb, FillRandomFollowsDynamicTargets) {
    Open();
    std::vector<uint64_t> version(kKeys, 0);
    std::vector<uint64_t> order(kKeys);
    for (uint64_t i = 0; i < kKeys; i++) order[i] = i;
    std::mt19937_64 rng(301);
    std::shuffle(order.begin(), order.end(), rng);
    for (uint64_t i : order) Put(i);
    // Overwrite a tenth so compactions also drop shadowed versions.
    for (uint64_t j = 0; j < kKeys / 10; j++) {
        uint64_t i = rng() % kKeys;
        Put(i, ++version[i]);
    }
    ASSERT_EQ(TDB_OK, tdb_wait_idle(db_)) << tdb_last_error();
    tdb_stats_t st = Stats();
    int base = CheckShape(st);
    EXPECT_GT(base, 2) << "a tree of this size needs few levels: " << Shape(st);
    double wa = WriteAmp(st);
    LogCounts lc = ReadLog(dir_.path());
    printf("fillrandom %llu keys: %s base=L%d write-amp=%.2f (wal %.2f flush %.2f compaction %.2f) "
           "compactions=%d moves=%d max-concurrent=%d\n",
           (unsigned long long)kKeys, Shape(st).c_str(), base, wa,
           (double)st.wal_bytes_written / st.user_bytes_written, (double)st.flush_bytes_written / st.user_bytes_written,
           (double)st.compaction_bytes_written / st.user_bytes_written, lc.compactions, lc.moves, lc.max_running);
    RecordProperty("write_amp", std::to_string(wa));
    EXPECT_GT(lc.compactions, 0);
    // WAL + flush + about (ratio+1) per level the data passes through.
    EXPECT_LT(wa, 12.0) << Shape(st);
    ASSERT_NO_FATAL_FAILURE(Verify(version));

    // Reopen: the manifest recorded the shape, data is intact.
    Close();
    Open();
    ASSERT_NO_FATAL_FAILURE(Verify(version));
    ASSERT_EQ(TDB_OK, tdb_wait_idle(db_));
    CheckShape(Stats());

    // Manual compaction: everything ends in the bottom level.
    ASSERT_EQ(TDB_OK, tdb_compact(db_, cf_)) << tdb_last_error();
    st = Stats();
    for (int l = 1; l < kLast; l++) EXPECT_EQ(0u, st.levels[l].files) << Shape(st);
    EXPECT_GT(st.levels[kLast].files, 0u);
    ASSERT_NO_FATAL_FAILURE(Verify(version));
}

TEST_F(CompactionDb, FillSeqMovesInsteadOfRewriting) {
    Open();
    std::vector<uint64_t> version(kKeys, 0);
    for (uint64_t i = 0; i < kKeys; i++) Put(i);
    ASSERT_EQ(TDB_OK, tdb_wait_idle(db_)) << tdb_last_error();
    tdb_stats_t st = Stats();
    CheckShape(st);
    LogCounts lc = ReadLog(dir_.path());
    double wa = WriteAmp(st);
    printf("fillseq %llu keys: %s write-amp=%.2f compaction bytes=%llu flush bytes=%llu compactions=%d moves=%d max-running=%d\n",
           (unsigned long long)kKeys, Shape(st).c_str(), wa, (unsigned long long)st.compaction_bytes_written,
           (unsigned long long)st.flush_bytes_written, lc.compactions, lc.moves, lc.max_running);
    // Disjoint, non-overlapping flush outputs go down by metadata only.
    EXPECT_GT(lc.moves, 5);
    EXPECT_LT(st.compaction_bytes_written, st.flush_bytes_written / 4);
    EXPECT_LT(wa, 3.0);
    ASSERT_NO_FATAL_FAILURE(Verify(version));
    // The moved files survive a reopen (they were never deleted).
    Close();
    Open();
    ASSERT_NO_FATAL_FAILURE(Verify(version));
}

// Two writers filling separate key ranges in order, each side of data
// already at the bottom (a bulk load with a loader per warehouse): every
// flush writes one table per writer, and level 1 moves into the bottom's
// gaps without a rewrite. Without the cut each flush spans the data between
// the writers and every level-1 compaction merges it.
TEST_F(CompactionDb, TwoWritersFlushOneTableEachAndMoveIntoTheGaps) {
    cfg_.default_cf.write_buffer_size = 1 << 20;  // runs of ~3,500 entries
    Open();
    auto put = [&](char prefix, uint64_t i) {
        std::string k = prefix + Key(i), v = Value(i, 100);
        ASSERT_EQ(TDB_OK, tdb_put(db_, cf_, k.data(), k.size(), v.data(), v.size(), 0)) << tdb_last_error();
    };
    const uint64_t mid = 20000, side = 40000;
    for (uint64_t i = 0; i < mid; i++) put('m', i);
    ASSERT_EQ(TDB_OK, tdb_compact(db_, cf_)) << tdb_last_error();
    tdb_stats_t st = Stats();
    ASSERT_EQ(0u, st.levels[1].files) << Shape(st);
    const uint64_t rewrites = st.compactions, rewritten = st.compaction_bytes_written;
    const int moves = ReadLog(dir_.path()).moves;
    int flushes_before = 0;
    {
        std::ifstream log(dir_.path() + "/LOG");
        for (std::string line; std::getline(log, line);) flushes_before += line.find("flushed memtable of") != std::string::npos;
    }

    for (uint64_t i = 0; i < side; i++) {
        put('a', i);
        put('z', i);
    }
    ASSERT_EQ(TDB_OK, tdb_wait_idle(db_)) << tdb_last_error();
    st = Stats();
    int two = 0, flushes = 0;
    std::ifstream in(dir_.path() + "/LOG");
    for (std::string line; std::getline(in, line);) {
        if (line.find("flushed memtable of") == std::string::npos) continue;
        if (++flushes <= flushes_before) continue;
        two += line.find(": 2 table(s)") != std::string::npos;
    }
    flushes -= flushes_before;
    printf("two writers: %s flushes=%d of two tables=%d compactions=%llu moves=%d\n", Shape(st).c_str(), flushes, two,
           (unsigned long long)(st.compactions - rewrites), ReadLog(dir_.path()).moves - moves);
    EXPECT_GT(flushes, 8);
    EXPECT_GE(two, flushes - 2) << "all but the ends of the load are cut in two";
    EXPECT_EQ(rewrites, st.compactions) << Shape(st);
    EXPECT_EQ(rewritten, st.compaction_bytes_written);
    EXPECT_GT(ReadLog(dir_.path()).moves, moves);
    EXPECT_LE(st.levels[1].files, 2u) << "idle: at most one run, one flush's two tables " << Shape(st);

    // Every key reads back, in order, after a reopen too.
    for (int round = 0; round < 2; round++) {
        tdb_iter_t *it = nullptr;
        ASSERT_EQ(TDB_OK, tdb_iter_create(db_, cf_, nullptr, &it));
        uint64_t n = 0;
        std::string prev;
        for (tdb_iter_seek_to_first(it); tdb_iter_valid(it); tdb_iter_next(it), n++) {
            size_t kn = 0, vn = 0;
            const char *k = (const char *)tdb_iter_key(it, &kn);
            const char *v = (const char *)tdb_iter_value(it, &vn);
            std::string key(k, kn);
            ASSERT_LT(prev, key);
            ASSERT_EQ(Value(strtoull(key.c_str() + 2, nullptr, 10), 100), std::string(v, vn)) << key;
            prev = key;
        }
        EXPECT_EQ(TDB_OK, tdb_iter_status(it));
        tdb_iter_destroy(it);
        EXPECT_EQ(mid + 2 * side, n);
        Close();
        Open();
    }
}

// A burst of random writes over a settled tree leaves a few level-1 files
// (below l1_file_count_trigger), each a sorted run that every seek and scan
// merges. Once the writes stop (memtables flushed), level 1 compacts on its
// own at l1_idle_file_trigger files and the tree settles with at most one;
// with the setting 0 the files stay, as below the plain trigger they did.
class IdleLevel1 : public CompactionDb {
  protected:
    // A load compacted to the bottom, then a burst of random overwrites
    // (two or three flushes, below the trigger of 4) and tdb_flush.
    // Returns the shape once the background work alone settled it (idle > 0:
    // polled up to 30 s, no tdb_wait_idle, which also counts writes as
    // stopped; idle 0: after tdb_wait_idle).
    tdb_stats_t Burst(int idle, std::vector<uint64_t> *version) {
        cfg_.l1_idle_file_trigger = idle;
        Open();
        version->assign(kKeys / 4, 0);
        for (uint64_t i = 0; i < version->size(); i++) Put(i);
        EXPECT_EQ(TDB_OK, tdb_compact(db_, cf_)) << tdb_last_error();
        EXPECT_EQ(0u, Stats().levels[1].files) << Shape(Stats());
        compactions_before_ = Stats().compactions;
        std::mt19937_64 rng(7);
        for (uint64_t j = 0; j < 3000; j++) {
            uint64_t i = rng() % version->size();
            Put(i, ++(*version)[i]);
        }
        EXPECT_EQ(TDB_OK, tdb_flush(db_, cf_)) << tdb_last_error();
        if (!idle) {
            EXPECT_EQ(TDB_OK, tdb_wait_idle(db_)) << tdb_last_error();
        }
        tdb_stats_t st = Stats();
        for (int t = 0; t < 300 && idle && (st.levels[1].files >= 2 || st.compactions_pending); t++) {
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            st = Stats();
        }
        return st;
    }
    uint64_t compactions_before_ = 0;
};

TEST_F(IdleLevel1, SettlesToOneFile) {
    std::vector<uint64_t> version;
    tdb_stats_t st = Burst(2, &version);
    EXPECT_LE(st.levels[1].files, 1u) << Shape(st);
    EXPECT_GT(st.compactions, compactions_before_) << Shape(st);
    EXPECT_EQ(0u, st.compactions_pending) << Shape(st);
    ASSERT_NO_FATAL_FAILURE(Verify(version));
    Close();
    Open();
    ASSERT_NO_FATAL_FAILURE(Verify(version));
}

// With the setting 0 the level-1 files stay, below the plain trigger.
TEST_F(IdleLevel1, ZeroKeepsThePlainTrigger) {
    std::vector<uint64_t> version;
    tdb_stats_t st = Burst(0, &version);
    EXPECT_GE(st.levels[1].files, 2u) << Shape(st);
    EXPECT_EQ(st.compactions, compactions_before_) << Shape(st);
    EXPECT_LT(st.levels[1].files, (uint64_t)cfg_.default_cf.l1_file_count_trigger) << Shape(st);
    ASSERT_NO_FATAL_FAILURE(Verify(version));
}

// Read-triggered level 1: a queue's deleted head, flushed as one level-1
// run (below the file-count trigger), stays there while nothing reads it;
// once scans have stepped over more dead keys than level 1 holds entries,
// the next flush finds level 1 due and its compaction into the bottom
// drops the tombstones. Without the scans the same tree keeps its runs.
class ReadTriggeredLevel1 : public CompactionDb {
  protected:
    static constexpr uint64_t kRows = 20000, kDeleted = 1200;
    // Rows 0..kRows-1 at the bottom; rows 0..kDeleted-1 deleted and
    // flushed: one level-1 run of kDeleted tombstones.
    void Load() {
        cfg_.l1_idle_file_trigger = 0;  // tdb_wait_idle keeps the plain trigger
        cfg_.default_cf.write_buffer_size = 4 << 20;  // the base level is the bottom (as for a small table)
        Open();
        for (uint64_t i = 0; i < kRows; i++) Put(i);
        ASSERT_EQ(TDB_OK, tdb_compact(db_, cf_)) << tdb_last_error();
        for (uint64_t i = 0; i < kDeleted; i++) {
            std::string k = Key(i);
            ASSERT_EQ(TDB_OK, tdb_delete(db_, cf_, k.data(), k.size()));
        }
        ASSERT_EQ(TDB_OK, tdb_flush(db_, cf_)) << tdb_last_error();
        ASSERT_EQ(TDB_OK, tdb_wait_idle(db_)) << tdb_last_error();
        l1_bytes_ = Stats().levels[1].bytes;
        bottom_bytes_ = Stats().levels[kLast].bytes;
        ASSERT_EQ(1u, Stats().levels[1].files) << "the deleted head within one bottom file " << Shape(Stats());
    }
    uint64_t l1_bytes_ = 0, bottom_bytes_ = 0;
    // The queue's head as a scan finds it: the first live key.
    void ReadHead(int times) {
        for (int t = 0; t < times; t++) {
            tdb_iter_t *it = nullptr;
            ASSERT_EQ(TDB_OK, tdb_iter_create(db_, cf_, nullptr, &it));
            tdb_iter_seek_to_first(it);
            ASSERT_TRUE(tdb_iter_valid(it));
            size_t kl = 0;
            const char *k = (const char *)tdb_iter_key(it, &kl);
            ASSERT_EQ(Key(kDeleted), std::string(k, kl));
            tdb_iter_destroy(it);
        }
    }
    // One more small flush, and the background work it leads to. The flush
    // lands before any pick (work paused): the first pick then moves the new
    // file alone, and the tombstones' run must still be due after it.
    tdb_stats_t FlushMore() {
        Put(kRows + 1);
        EXPECT_EQ(TDB_OK, tdb_pause_background(db_)) << tdb_last_error();
        EXPECT_EQ(TDB_OK, tdb_flush(db_, cf_)) << tdb_last_error();
        EXPECT_EQ(TDB_OK, tdb_continue_background(db_)) << tdb_last_error();
        EXPECT_EQ(TDB_OK, tdb_wait_idle(db_)) << tdb_last_error();
        return Stats();
    }
};

TEST_F(ReadTriggeredLevel1, ScansOverTheDeletedHeadMakeLevel1Due) {
    ASSERT_NO_FATAL_FAILURE(Load());
    const uint64_t compactions = Stats().compactions;
    ASSERT_NO_FATAL_FAILURE(ReadHead(2));  // 2,400 dead keys stepped over: more than level 1's 1,200 entries
    tdb_stats_t st = FlushMore();
    // The tombstones' run went down.
    EXPECT_LT(st.levels[1].bytes, l1_bytes_) << Shape(st);
    EXPECT_GT(st.compactions, compactions) << Shape(st);
    // Merged into the bottom: the deleted rows left with their tombstones.
    EXPECT_LT(st.levels[kLast].bytes, bottom_bytes_ - kDeleted * 100) << Shape(st);
    // The tombstones are gone with their rows: the head is found at once,
    // and the count of dead keys starts again (a scan now meets none).
    ASSERT_NO_FATAL_FAILURE(ReadHead(3));
    st = FlushMore();
    EXPECT_GE(st.levels[1].files, 1u) << "nothing to step over: level 1 waits for its trigger " << Shape(st);
    for (uint64_t i = 0; i < kDeleted; i += 499) EXPECT_EQ("<" + std::string(tdb_strerror(TDB_ERR_NOT_FOUND)) + ">", Get(i));
    EXPECT_EQ(Value(kDeleted, 100), Get(kDeleted));
}

TEST_F(ReadTriggeredLevel1, WithoutScansLevel1KeepsItsTrigger) {
    ASSERT_NO_FATAL_FAILURE(Load());
    ASSERT_NO_FATAL_FAILURE(ReadHead(0));
    tdb_stats_t st = FlushMore();
    EXPECT_EQ(2u, st.levels[1].files) << Shape(st);
    // One scan steps over 1,200 dead keys: not more than level 1 holds.
    ASSERT_NO_FATAL_FAILURE(ReadHead(1));
    st = FlushMore();
    EXPECT_EQ(3u, st.levels[1].files) << Shape(st);
}

// A negative l1_idle_file_trigger is refused at open.
TEST_F(CompactionDb, NegativeIdleTriggerIsRefused) {
    cfg_.l1_idle_file_trigger = -1;
    EXPECT_EQ(TDB_ERR_INVALID_ARG, tdb_open(dir_.path().c_str(), &cfg_, &db_));
    EXPECT_EQ(nullptr, db_);
    EXPECT_NE(nullptr, strstr(tdb_last_error(), "l1_idle_file_trigger")) << tdb_last_error();
}

TEST_F(CompactionDb, ConcurrentCompactionsWithWritersAndDrop) {
    cfg_.compaction_threads = 4;
    cfg_.default_cf.write_buffer_size = 64 << 10;
    cfg_.default_cf.level_size_ratio = 4;  // more levels, more deep work in parallel
    Open();
    tdb_cf_config_t cc = cfg_.default_cf;
    tdb_cf_t *other = nullptr;
    ASSERT_EQ(TDB_OK, tdb_create_cf(db_, "other", &cc, &other)) << tdb_last_error();
    const uint64_t n = 60000;
    std::vector<uint64_t> version(n, 0);
    std::mt19937_64 rng(7);
    for (uint64_t j = 0; j < 3 * n; j++) {
        uint64_t i = j < n ? j * 7919 % n : rng() % n;
        if (j >= n) version[i]++;
        Put(i, version[i]);
        if (j % 3 == 0) {
            std::string k = Key(j);
            ASSERT_EQ(TDB_OK, tdb_put(db_, other, k.data(), k.size(), "x", 1, 0));
        }
        if (j == 2 * n) {  // a manual compaction while background ones run
            ASSERT_EQ(TDB_OK, tdb_compact(db_, cf_)) << tdb_last_error();
        }
    }
    // Dropping a family waits out its compactions.
    ASSERT_EQ(TDB_OK, tdb_drop_cf(db_, "other")) << tdb_last_error();
    ASSERT_EQ(TDB_OK, tdb_wait_idle(db_)) << tdb_last_error();
    LogCounts lc = ReadLog(dir_.path());
    printf("concurrent: compactions=%d moves=%d max-concurrent=%d\n", lc.compactions, lc.moves, lc.max_running);
    EXPECT_GE(lc.max_running, 1);
    CheckShape(Stats());
    ASSERT_NO_FATAL_FAILURE(Verify(version));
    Close();
    Open();
    ASSERT_NO_FATAL_FAILURE(Verify(version));
}

}  // namespace

// tdb_compact_range: only the files meeting the range go down; at level 1
// a file overlapping a chosen one goes with it (else an older version
// would be left above a newer one); bounds are checked.
namespace {
std::string RangeKey(const char *p, int i) {
    char b[16];
    snprintf(b, sizeof b, "%s%03d", p, i);
    return b;
}
int FilesIn(tdb_t *db, tdb_cf_t *cf, int level) {
    tdb_stats_t st;
    EXPECT_EQ(tdb_get_stats(db, cf, &st), TDB_OK);
    return (int)st.levels[level].files;
}
int FilesBelow1(tdb_t *db, tdb_cf_t *cf) {
    int n = 0;
    for (int l = 2; l < TDB_MAX_LEVELS; l++) n += FilesIn(db, cf, l);
    return n;
}
std::string GetS(tdb_t *db, tdb_cf_t *cf, const std::string &k) {
    void *v;
    size_t n;
    if (tdb_get(db, cf, nullptr, k.data(), k.size(), &v, &n) != TDB_OK) return "-";
    std::string s((char *)v, n);
    tdb_free(v);
    return s;
}
}  // namespace

TEST(CompactRange, MovesOnlyTheRangeAndKeepsNewestVersions) {
    TempDir dir;
    tdb_config_t c;
    tdb_config_default(&c);
    c.default_cf.sync_mode = TDB_SYNC_NONE;
    tdb_t *db = nullptr;
    ASSERT_EQ(tdb_open(dir.path().c_str(), &c, &db), TDB_OK);
    tdb_cf_t *cf;
    ASSERT_EQ(tdb_get_cf(db, TDB_DEFAULT_CF, &cf), TDB_OK);
    ASSERT_EQ(tdb_pause_background(db), TDB_OK); // files stay where the test puts them
    auto fill = [&](const char *p, int from, int to, const std::string &tag) {
        for (int i = from; i <= to; i++) {
            std::string k = RangeKey(p, i), v = tag + k;
            ASSERT_EQ(tdb_put(db, cf, k.data(), k.size(), v.data(), v.size(), 0), TDB_OK);
        }
        ASSERT_EQ(tdb_flush(db, cf), TDB_OK);
    };
    fill("a", 0, 999, "old-");  // F1 a000..a999
    fill("m", 0, 999, "m-");    // F2
    fill("z", 0, 999, "z-");    // F3
    ASSERT_EQ(FilesIn(db, cf, 1), 3);
    // F4, newer, overlaps F1's tail and reaches b000..b010.
    for (int i = 990; i <= 999; i++) {
        std::string k = RangeKey("a", i), v = "new-" + k;
        ASSERT_EQ(tdb_put(db, cf, k.data(), k.size(), v.data(), v.size(), 0), TDB_OK);
    }
    fill("b", 0, 10, "new-");
    ASSERT_EQ(FilesIn(db, cf, 1), 4);
    ASSERT_EQ(FilesBelow1(db, cf), 0);

    EXPECT_EQ(tdb_compact_range(db, cf, "n", 1, "m", 1), TDB_ERR_INVALID_ARG);  // lo > hi
    EXPECT_EQ(tdb_compact_range(db, nullptr, nullptr, 0, nullptr, 0), TDB_ERR_INVALID_ARG);
    EXPECT_EQ(tdb_compact_range(db, cf, nullptr, 3, nullptr, 0), TDB_ERR_INVALID_ARG);

    // Only F2 meets [m100, m200].
    ASSERT_EQ(tdb_compact_range(db, cf, "m100", 4, "m200", 4), TDB_OK);
    EXPECT_EQ(FilesIn(db, cf, 1), 3);
    EXPECT_EQ(FilesBelow1(db, cf), 1);
    // A range nothing meets changes nothing.
    ASSERT_EQ(tdb_compact_range(db, cf, "q", 1, "r", 1), TDB_OK);
    EXPECT_EQ(FilesIn(db, cf, 1), 3);

    // Only F4 meets [b000, b005]; F1 overlaps F4 and must go with it.
    ASSERT_EQ(tdb_compact_range(db, cf, "b000", 4, "b005", 4), TDB_OK);
    EXPECT_EQ(FilesIn(db, cf, 1), 1);  // z's file stays
    EXPECT_EQ(GetS(db, cf, "a995"), "new-a995");
    EXPECT_EQ(GetS(db, cf, "a500"), "old-a500");
    EXPECT_EQ(GetS(db, cf, "b007"), "new-b007");
    EXPECT_EQ(GetS(db, cf, "m150"), "m-m150");

    // Open bounds: everything.
    ASSERT_EQ(tdb_compact_range(db, cf, nullptr, 0, nullptr, 0), TDB_OK);
    EXPECT_EQ(FilesIn(db, cf, 1), 0);
    ASSERT_EQ(tdb_continue_background(db), TDB_OK);
    ASSERT_EQ(tdb_close(db), TDB_OK);

    ASSERT_EQ(tdb_open(dir.path().c_str(), &c, &db), TDB_OK);
    ASSERT_EQ(tdb_get_cf(db, TDB_DEFAULT_CF, &cf), TDB_OK);
    EXPECT_EQ(GetS(db, cf, "a995"), "new-a995");
    EXPECT_EQ(GetS(db, cf, "a000"), "old-a000");
    EXPECT_EQ(GetS(db, cf, "z999"), "z-z999");
    EXPECT_EQ(GetS(db, cf, "b010"), "new-b010");
    ASSERT_EQ(tdb_close(db), TDB_OK);
}
