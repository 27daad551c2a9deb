// A value that cannot be read while an iterator walks the database (an I/O
// error or a checksum failure in a data block, an index block or a value
// stored apart from its key) is an iterator error: the iterator stops
// (valid() false, next/prev do not revive it) and tdb_iter_status() returns
// the error. It never ends silently as if the data were complete, never
// skips the unreadable version to show an older one, and never returns a
// key with a wrong or empty value.
//  - IterErrorTest.*InjectedReadErrors*: the fault env fails the n-th read of
//    a table file, for every n a scan makes, forward, backward and from a
//    seek;
//  - IterErrorTest.DamagedTableFiles*: one byte of a table file flipped at
//    offsets spread over the whole file (data blocks, values, index, filter,
//    footer).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "fault_testutil.h"
#include "testutil.h"

extern "C" {
#include "db/testing.h"
}

using tdbtest::Key;
using tdbtest::TempDir;
using tdbtest::Value;

namespace {

namespace fs = std::filesystem;

constexpr uint64_t kKeys = 300;

// Value of key i in version 1 (every key) and version 2 (even keys, written
// later into a newer table): every third key's value is stored apart.
std::string ValueOf(uint64_t i, int version) { return Value(i + (uint64_t)version * 100000, i % 3 == 0 ? 300 : 40); }

// What the database must hold: the newest version of every key.
std::map<std::string, std::string> Expected() {
    std::map<std::string, std::string> m;
    for (uint64_t i = 0; i < kKeys; i++) m[Key(i)] = ValueOf(i, i % 2 == 0 ? 2 : 1);
    return m;
}

tdb_config_t IterConfig() {
    tdb_config_t c = FaultConfig(TDB_SYNC_FULL);
    c.block_cache_size = 0;  // every block read goes to the file
    c.mmap_reads = 0;        // ... through the env, each time
    c.default_cf.compression = TDB_COMPRESS_NONE;
    c.default_cf.value_threshold = 128;
    c.default_cf.block_size = 1024;             // several data blocks per table
    c.default_cf.l1_file_count_trigger = 100;   // keep both tables: the newer one shadows the older
    c.l1_idle_file_trigger = 0;
    c.default_cf.write_buffer_size = 4 << 20;   // flushes only when asked
    return c;
}

// Two tables: version 1 of every key, then version 2 of the even keys.
void Fill(tdb_t *db) {
    tdb_cf_t *cf;
    ASSERT_EQ(tdb_get_cf(db, TDB_DEFAULT_CF, &cf), TDB_OK);
    for (int version = 1; version <= 2; version++) {
        for (uint64_t i = 0; i < kKeys; i++) {
            if (version == 2 && i % 2) continue;
            std::string k = Key(i), v = ValueOf(i, version);
            ASSERT_EQ(tdb_put(db, cf, k.data(), k.size(), v.data(), v.size(), 0), TDB_OK);
        }
        ASSERT_EQ(tdb_flush(db, nullptr), TDB_OK) << tdb_last_error();
    }
}

enum class Walk { kForward, kBackward, kSeek };

// What one walk saw.
struct WalkResult {
    uint64_t keys = 0;
    int status = TDB_OK;
    int bad_values = 0;  // a key with a value other than its newest version
};

// Walk the whole family one way; check every key/value against `want`, that
// keys come in order, and what the iterator does at its end: a clean end
// (status OK) must have seen every key; an error end must leave it invalid.
WalkResult DoWalk(tdb_t *db, Walk how, const std::map<std::string, std::string> &want, const std::string &where) {
    WalkResult r;
    tdb_cf_t *cf;
    EXPECT_EQ(tdb_get_cf(db, TDB_DEFAULT_CF, &cf), TDB_OK);
    tdb_iter_t *it;
    int rc = tdb_iter_create(db, cf, nullptr, &it);
    if (rc != TDB_OK) {  // opening a table failed: reported at creation
        r.status = rc;
        return r;
    }
    std::string first = Key(0);
    if (how == Walk::kForward) tdb_iter_seek_to_first(it);
    else if (how == Walk::kBackward) tdb_iter_seek_to_last(it);
    else tdb_iter_seek(it, first.data(), first.size());
    std::string prev;
    while (tdb_iter_valid(it)) {
        size_t kl, vl;
        const char *k = (const char *)tdb_iter_key(it, &kl);
        const char *v = (const char *)tdb_iter_value(it, &vl);
        std::string key(k, kl), val(v, vl);
        if (r.keys > 0) {
            EXPECT_TRUE(how == Walk::kBackward ? key < prev : key > prev) << where << ": out of order at " << key;
        }
        prev = key;
        auto w = want.find(key);
        if (w == want.end() || w->second != val) {
            r.bad_values++;
            ADD_FAILURE() << where << ": " << key << " returned with a wrong value (" << vl << " bytes)";
        }
        r.keys++;
        if (how == Walk::kBackward) tdb_iter_prev(it);
        else tdb_iter_next(it);
    }
    r.status = tdb_iter_status(it);
    if (r.status == TDB_OK) {
        EXPECT_EQ(r.keys, want.size()) << where << ": the scan ended early without an error";
    } else {
        // Stopped for good: moving again neither revives it nor clears the error.
        tdb_iter_next(it);
        tdb_iter_prev(it);
        EXPECT_FALSE(tdb_iter_valid(it)) << where;
        EXPECT_EQ(tdb_iter_status(it), r.status) << where;
    }
    tdb_iter_destroy(it);
    return r;
}

const char *WalkName(Walk w) { return w == Walk::kForward ? "forward" : w == Walk::kBackward ? "backward" : "seek"; }

// The n-th read of a table file fails with EIO, for every n up to the reads
// a clean scan makes (and a few beyond): each walk either sees every key
// with its newest value or stops with TDB_ERR_IO; the error is not sticky.
TEST(IterErrorTest, InjectedReadErrorsStopTheIteratorWithTheError) {
    const auto want = Expected();
    for (Walk how : {Walk::kForward, Walk::kBackward, Walk::kSeek}) {
        TempDir dir;
        FaultEnv fe;
        tdb_config_t c = IterConfig();
        tdb_t *db;
        ASSERT_EQ(tdb_open_env(dir.path().c_str(), &c, fe.env(), &db), TDB_OK) << tdb_last_error();
        Fill(db);
        ASSERT_EQ(tdb_close(db), TDB_OK);
        // Reads a clean walk makes, table opening included (cold readers).
        ASSERT_EQ(tdb_open_env(dir.path().c_str(), &c, fe.env(), &db), TDB_OK);
        uint64_t before = fe.Stats().calls[FAULT_READ];
        WalkResult clean = DoWalk(db, how, want, WalkName(how));
        ASSERT_EQ(clean.status, TDB_OK) << tdb_last_error();
        uint64_t reads = fe.Stats().calls[FAULT_READ] - before;
        ASSERT_GT(reads, 10u);
        ASSERT_EQ(tdb_close(db), TDB_OK);
        int errors = 0, complete = 0;
        for (uint64_t nth = 1; nth <= reads + 3; nth++) {
            std::string where = std::string(WalkName(how)) + ", read " + std::to_string(nth) + " fails";
            ASSERT_EQ(tdb_open_env(dir.path().c_str(), &c, fe.env(), &db), TDB_OK) << where;  // cold readers
            fe.Rule(FAULT_READ, TDB_ERR_IO, ".sst", nth);
            WalkResult r = DoWalk(db, how, want, where);
            fault_env_clear_rules(fe.fe);
            if (r.status == TDB_OK) {
                complete++;
            } else {
                EXPECT_EQ(r.status, TDB_ERR_IO) << where << ": " << tdb_last_error();
                errors++;
            }
            EXPECT_EQ(r.bad_values, 0) << where;
            // Not sticky: the same walk without the fault sees everything.
            WalkResult again = DoWalk(db, how, want, where + ", then without the fault");
            EXPECT_EQ(again.status, TDB_OK) << where;
            ASSERT_EQ(tdb_close(db), TDB_OK);
            if (HasFailure()) return;
        }
        // Every read of the clean walk fails once: the walk must notice each
        // (the reads past it are never made, so those walks complete).
        EXPECT_EQ(errors, (int)reads) << WalkName(how);
        EXPECT_EQ(complete, 3) << WalkName(how);
    }
}

using tdbtest::Slurp;

void Spit(const std::string &path, const std::string &data) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(data.data(), (std::streamsize)data.size());
}

// One byte flipped at offsets spread over each table file (values stored
// apart, data blocks, index, filter, properties, footer): opening may fail
// with TDB_ERR_CORRUPTION; otherwise every walk either sees every key with
// its newest value or stops with TDB_ERR_CORRUPTION.
TEST(IterErrorTest, DamagedTableFilesStopTheIteratorWithCorruption) {
    const auto want = Expected();
    TempDir golden;
    tdb_config_t c = IterConfig();
    c.mmap_reads = 1;  // the default read path: pread first, then the mapping
    tdb_t *db;
    ASSERT_EQ(tdb_open(golden.path().c_str(), &c, &db), TDB_OK) << tdb_last_error();
    Fill(db);
    ASSERT_EQ(tdb_close(db), TDB_OK);
    std::vector<std::string> tables;
    for (auto &e : fs::directory_iterator(golden.path()))
        if (e.path().extension() == ".sst") tables.push_back(e.path().filename().string());
    std::sort(tables.begin(), tables.end());
    ASSERT_EQ(tables.size(), 2u);
    int open_failed = 0, walk_errors = 0, walks_complete = 0;
    for (const std::string &t : tables) {
        const std::string pristine = Slurp(golden.file(t));
        ASSERT_GT(pristine.size(), 1000u);
        const size_t step = pristine.size() / 97 + 1;
        for (size_t off = 0; off < pristine.size(); off += step) {
            std::string where = t + " byte " + std::to_string(off) + " of " + std::to_string(pristine.size());
            TempDir dir;
            for (auto &e : fs::directory_iterator(golden.path()))
                fs::copy(e.path(), dir.file(e.path().filename().string()));
            std::string damaged = pristine;
            damaged[off] ^= 0x5a;
            Spit(dir.file(t), damaged);
            int rc = tdb_open(dir.path().c_str(), &c, &db);
            if (rc != TDB_OK) {
                EXPECT_EQ(rc, TDB_ERR_CORRUPTION) << where << ": " << tdb_last_error();
                open_failed++;
                continue;
            }
            for (Walk how : {Walk::kForward, Walk::kBackward, Walk::kSeek}) {
                WalkResult r = DoWalk(db, how, want, where + ", " + WalkName(how));
                if (r.status == TDB_OK) {
                    walks_complete++;
                } else {
                    EXPECT_EQ(r.status, TDB_ERR_CORRUPTION) << where << ": " << tdb_last_error();
                    walk_errors++;
                }
            }
            tdb_close(db);
            if (HasFailure()) return;
        }
    }
    printf("[ damaged tables ] open refused %d, walks stopped by corruption %d, walks complete %d\n", open_failed,
           walk_errors, walks_complete);
    EXPECT_GT(walk_errors, 0);
}

}  // namespace
