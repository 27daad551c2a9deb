// Tests for sst's mapped reads: repeated blocks through the mapping, and
// the pause while mapped reads fault to the disk.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

extern "C" {
#include "env/env.h"
#include "sst/sst.h"
#include "util/error.h"
#include "util/iter.h"
}

#include "sst_testutil.h"
#include "testutil.h"

namespace {

using namespace tdbsst;
using tdbtest::TempDir;

// The posix env with a clock of the test's: each reading advances it by
// g_clock_step microseconds (0: it stands still, so every mapped read looks
// like a read from memory however loaded the machine is).
std::atomic<uint64_t> g_clock{0}, g_clock_step{0};
uint64_t TestClock(env_t *) { return g_clock.fetch_add(g_clock_step.load()) + g_clock_step.load(); }
env_t ClockedEnv(uint64_t step) {
    g_clock_step = step;
    env_t e = *env_posix();
    e.now_micros = TestClock;
    return e;
}

// With the file mapped, a data block's first read is a pread and every
// later one goes through the mapping; answers stay the same, and a block
// changed on disk afterwards is still caught by its checksum.
TEST(Sst, MappedReadsServeRepeatedBlocksAndStillVerify) {
    TempDir dir;
    std::string path = dir.file("m.sst");
    auto es = MakeEntries(4000, 31, 100, 2000, 7);
    BuildTable(path, es, Opts(TDB_COMPRESS_LZ4, 1024, 0.01, 512));
    sst_reader_t *r = nullptr;
    env_t still = ClockedEnv(0);
    ASSERT_EQ(TDB_OK, sst_reader_open(&still, path.c_str(), 6, nullptr, &r));  // no cache
    ASSERT_EQ(TDB_OK, sst_reader_map(r)) << tdb_last_error();
    ASSERT_EQ(TDB_OK, sst_reader_map(r));  // a second call changes nothing

    // One pass over every block: first reads only.
    iter_t *it = sst_reader_iter(r);
    size_t n = 0;
    for (iter_seek_to_first(it); iter_valid(it); iter_next(it)) n++;
    ASSERT_EQ(TDB_OK, iter_status(it));
    iter_destroy(it);
    ASSERT_EQ(es.size(), n);
    EXPECT_EQ(0u, sst_reader_map_reads(r));
    uint64_t reads = sst_reader_disk_reads(r);

    buf_t val{};
    for (auto &e : es) CheckGet(r, es, e.user, e.seq, &val);
    uint64_t mapped = sst_reader_map_reads(r);
    EXPECT_GT(mapped, 0u);
    EXPECT_GT(sst_reader_disk_reads(r) - reads, mapped);  // value records are still pread

    // Damage the first block in place (the page cache, hence the mapping,
    // sees the new byte).
    {
        std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
        f.seekg(40);
        char c;
        f.get(c);
        f.seekp(40);
        f.put((char)(c ^ 0x41));
    }
    unsigned type;
    uint64_t seq;
    EXPECT_EQ(TDB_ERR_CORRUPTION, sst_reader_get(r, S(es[0].user), es[0].seq, &type, &seq, &val));
    EXPECT_GT(sst_reader_map_reads(r), mapped);
    EXPECT_NE(std::string::npos, std::string(tdb_last_error()).find("m.sst")) << tdb_last_error();
    buf_free(&val);
    sst_reader_unref(r);

    // An env that cannot map: sst_reader_map is a no-op, reads use pread.
    env_t nomap = *env_posix();
    nomap.map_readable = nullptr;
    BuildTable(path, es, Opts(TDB_COMPRESS_LZ4, 1024, 0.01, 512));
    ASSERT_EQ(TDB_OK, sst_reader_open(&nomap, path.c_str(), 7, nullptr, &r));
    ASSERT_EQ(TDB_OK, sst_reader_map(r));
    for (int pass = 0; pass < 2; pass++)
        for (auto &e : es) CheckGet(r, es, e.user, e.seq, &val);
    EXPECT_EQ(0u, sst_reader_map_reads(r));
    buf_free(&val);
    sst_reader_unref(r);
}

// A mapped read that takes as long as a disk read (the clock says so here)
// pauses the file's mapping: the following misses are preads, the pause
// doubling at each slow probe; once a probe is fast again the mapping
// resumes. Answers are the same on both paths.
TEST(Sst, MappedReadsPauseWhileTheyFaultToDisk) {
    TempDir dir;
    std::string path = dir.file("p.sst");
    auto es = MakeEntries(4000, 31, 100, 2000, 7);
    BuildTable(path, es, Opts(TDB_COMPRESS_LZ4, 1024, 0.01, 512));
    env_t slow = ClockedEnv(1000);  // every timed read takes 1 ms
    sst_reader_t *r = nullptr;
    ASSERT_EQ(TDB_OK, sst_reader_open(&slow, path.c_str(), 8, nullptr, &r));  // no cache: every get misses
    ASSERT_EQ(TDB_OK, sst_reader_map(r)) << tdb_last_error();
    iter_t *it = sst_reader_iter(r);
    for (iter_seek_to_first(it); iter_valid(it); iter_next(it)) {
    }
    ASSERT_EQ(TDB_OK, iter_status(it));
    iter_destroy(it);
    ASSERT_EQ(0u, sst_reader_map_reads(r));  // every block seen once, by pread

    // At least 4,000 misses of seen blocks (a get may read two): probes
    // after pauses of 16, 32, ..., 1024, 1024, ... misses, so the 1st,
    // 18th, 51st, 116th, 245th, 502nd, 1015th, 2040th, 3065th, 4090th, ...
    // go through the mapping (9 of the first 4,000, 13 of 8,000).
    buf_t val{};
    for (auto &e : es) CheckGet(r, es, e.user, e.seq, &val);
    uint64_t probes = sst_reader_map_reads(r);
    EXPECT_EQ(probes, sst_reader_map_slow(r));
    EXPECT_GE(probes, 9u);
    EXPECT_LE(probes, 13u);

    // Reads from memory again: the probe after the current pause (at most
    // 1,024 misses) is fast and every miss after it is mapped.
    g_clock_step = 0;
    for (int pass = 0; pass < 2; pass++)
        for (auto &e : es) CheckGet(r, es, e.user, e.seq, &val);
    EXPECT_EQ(probes, sst_reader_map_slow(r));
    EXPECT_GE(sst_reader_map_reads(r) - probes, 2 * es.size() - 1024);
    buf_free(&val);
    sst_reader_unref(r);
}

}  // namespace
