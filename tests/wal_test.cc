// Unit tests for the write-ahead log: round trips, group commit, and the
// torn-tail / corruption classification of damaged logs.
#include <gtest/gtest.h>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "testutil.h"

extern "C" {
#include "env/env.h"
#include "util/checksum.h"
#include "util/coding.h"
#include "util/error.h"
#include "wal/wal.h"
}

using tdbtest::TempDir;

namespace {

using tdbtest::Slurp;

void Spit(const std::string &path, const std::string &data) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(data.data(), (std::streamsize)data.size());
}

std::string RandBytes(std::mt19937_64 &rng, size_t n) {
    std::string s(n, '\0');
    for (size_t i = 0; i < n; i++) s[i] = (char)(rng() & 0xff);
    return s;
}

// Write groups of records; returns each record's start offset (plus the end
// of the log as the last element).
std::vector<uint64_t> WriteLog(const std::string &path, const std::vector<std::vector<std::string>> &groups) {
    std::vector<uint64_t> offs;
    wal_writer_t *w = nullptr;
    EXPECT_EQ(wal_writer_open(env_posix(), path.c_str(), &w), TDB_OK);
    uint64_t off = 0;
    for (const auto &g : groups) {
        std::vector<slice_t> s;
        for (const auto &p : g) {
            s.push_back(slice_make(p.data(), p.size()));
            offs.push_back(off);
            off += WAL_HEADER_SIZE + p.size();
        }
        EXPECT_EQ(wal_writer_add(w, s.data(), (int)s.size()), TDB_OK);
        EXPECT_EQ(wal_writer_size(w), off);
    }
    EXPECT_EQ(wal_writer_close(w, 1), TDB_OK);
    offs.push_back(off);
    return offs;
}

struct ReadResult {
    std::vector<std::string> recs;
    int rc = TDB_OK;        // the code that ended reading
    std::string detail;     // tdb_last_error() at that point
    uint64_t valid_end = 0;
    int torn = -1;
};

ReadResult ReadLog(const std::string &path) {
    ReadResult res;
    wal_reader_t *r = nullptr;
    res.rc = wal_reader_open(env_posix(), path.c_str(), &r);
    if (res.rc != TDB_OK) {
        res.detail = tdb_last_error();
        return res;
    }
    slice_t p;
    while ((res.rc = wal_reader_next(r, &p)) == TDB_OK) {
        res.recs.emplace_back(p.data ? p.data : "", p.size);
        EXPECT_EQ(wal_reader_valid_end(r) > 0, true);
    }
    res.detail = tdb_last_error();
    res.valid_end = wal_reader_valid_end(r);
    res.torn = wal_reader_torn_tail(r);
    // The final status is sticky.
    EXPECT_EQ(wal_reader_next(r, &p), res.rc);
    EXPECT_EQ(p.size, 0u);
    wal_reader_close(r);
    return res;
}

std::vector<std::string> Flatten(const std::vector<std::vector<std::string>> &groups) {
    std::vector<std::string> v;
    for (const auto &g : groups) v.insert(v.end(), g.begin(), g.end());
    return v;
}

// A small log with a known layout: five records of assorted sizes, then a
// last record of `last` random bytes.
std::vector<std::vector<std::string>> SmallLog(std::mt19937_64 &rng, size_t last) {
    return {{RandBytes(rng, 10), RandBytes(rng, 0)},
            {RandBytes(rng, 500)},
            {RandBytes(rng, 7000), RandBytes(rng, 33)},
            {RandBytes(rng, last)}};
}

}  // namespace

TEST(Wal, EmptyPayloadChecksumIsNotZero) {
    // Guarantees that eight zero bytes never parse as an intact record.
    char len0[4] = {0, 0, 0, 0};
    EXPECT_NE(tdb_checksum2(len0, 4, "", 0), 0u);
}

TEST(Wal, RoundTripRandomSizesAcrossGroups) {
    TempDir d;
    std::mt19937_64 rng(20240601);
    std::vector<std::vector<std::string>> groups;
    size_t total = 0;
    while (total < 200) {
        std::vector<std::string> g;
        int n = 1 + (int)(rng() % 8);
        for (int i = 0; i < n; i++) {
            size_t sz = rng() % 5 == 0 ? 0 : (size_t)(rng() % (100 * 1024 + 1));
            g.push_back(RandBytes(rng, sz));
        }
        total += g.size();
        groups.push_back(std::move(g));
    }
    std::string path = d.file("000001.log");
    auto offs = WriteLog(path, groups);
    EXPECT_EQ(Slurp(path).size(), offs.back());
    ReadResult res = ReadLog(path);
    EXPECT_EQ(res.rc, TDB_ERR_NOT_FOUND);
    EXPECT_EQ(res.torn, 0);
    EXPECT_EQ(res.valid_end, offs.back());
    EXPECT_EQ(res.recs, Flatten(groups));
}

TEST(Wal, ValidEndAdvancesPerRecord) {
    TempDir d;
    std::mt19937_64 rng(5);
    auto groups = SmallLog(rng, 300);
    std::string path = d.file("log");
    auto offs = WriteLog(path, groups);
    wal_reader_t *r = nullptr;
    ASSERT_EQ(wal_reader_open(env_posix(), path.c_str(), &r), TDB_OK);
    EXPECT_EQ(wal_reader_valid_end(r), 0u);
    slice_t p;
    for (size_t i = 0; i + 1 < offs.size(); i++) {
        ASSERT_EQ(wal_reader_next(r, &p), TDB_OK);
        EXPECT_EQ(wal_reader_valid_end(r), offs[i + 1]);
    }
    EXPECT_EQ(wal_reader_next(r, &p), TDB_ERR_NOT_FOUND);
    EXPECT_EQ(wal_reader_torn_tail(r), 0);
    wal_reader_close(r);
    wal_reader_close(nullptr);
}

TEST(Wal, EmptyFileIsCleanEnd) {
    TempDir d;
    std::string path = d.file("empty.log");
    wal_writer_t *w = nullptr;
    ASSERT_EQ(wal_writer_open(env_posix(), path.c_str(), &w), TDB_OK);
    EXPECT_EQ(wal_writer_add(w, nullptr, 0), TDB_OK);  // empty group: no-op
    EXPECT_EQ(wal_writer_size(w), 0u);
    ASSERT_EQ(wal_writer_close(w, 1), TDB_OK);
    EXPECT_EQ(Slurp(path).size(), 0u);
    ReadResult res = ReadLog(path);
    EXPECT_EQ(res.rc, TDB_ERR_NOT_FOUND);
    EXPECT_TRUE(res.recs.empty());
    EXPECT_EQ(res.torn, 0);
    EXPECT_EQ(res.valid_end, 0u);
}

TEST(Wal, EmptyPayloadsRoundTrip) {
    TempDir d;
    std::vector<std::vector<std::string>> groups = {std::vector<std::string>(100, ""), {"x", ""}, {""}};
    std::string path = d.file("log");
    auto offs = WriteLog(path, groups);
    EXPECT_EQ(offs.back(), 103u * WAL_HEADER_SIZE + 1);
    ReadResult res = ReadLog(path);
    EXPECT_EQ(res.rc, TDB_ERR_NOT_FOUND);
    EXPECT_EQ(res.torn, 0);
    EXPECT_EQ(res.recs, Flatten(groups));
}

TEST(Wal, RecordsLargerThanTheReadChunk) {
    TempDir d;
    std::mt19937_64 rng(77);
    std::vector<std::vector<std::string>> groups = {
        {RandBytes(rng, 100), RandBytes(rng, 3 * WAL_READ_CHUNK + 17)},
        {RandBytes(rng, WAL_READ_CHUNK - WAL_HEADER_SIZE), RandBytes(rng, WAL_READ_CHUNK)},
        {RandBytes(rng, 5)},
        {RandBytes(rng, 6 * WAL_READ_CHUNK)},
        {RandBytes(rng, 1)}};
    std::string path = d.file("log");
    auto offs = WriteLog(path, groups);
    ReadResult res = ReadLog(path);
    EXPECT_EQ(res.rc, TDB_ERR_NOT_FOUND);
    EXPECT_EQ(res.torn, 0);
    EXPECT_EQ(res.valid_end, offs.back());
    EXPECT_EQ(res.recs, Flatten(groups));
}

TEST(Wal, TruncationAtEveryOffsetOfLastRecordIsTornTail) {
    TempDir d;
    std::mt19937_64 rng(11);
    auto groups = SmallLog(rng, 1500);
    std::string path = d.file("log");
    auto offs = WriteLog(path, groups);
    auto all = Flatten(groups);
    std::vector<std::string> earlier(all.begin(), all.end() - 1);
    uint64_t last = offs[offs.size() - 2], end = offs.back();

    ReadResult full = ReadLog(path);
    EXPECT_EQ(full.recs, all);
    EXPECT_EQ(full.torn, 0);

    env_t *e = env_posix();
    for (uint64_t cut = end - 1; cut + 1 > last; cut--) {  // shrink one byte at a time
        ASSERT_EQ(e->truncate(e, path.c_str(), cut), TDB_OK);
        ReadResult res = ReadLog(path);
        ASSERT_EQ(res.rc, TDB_ERR_NOT_FOUND) << "cut " << cut << ": " << res.detail;
        ASSERT_EQ(res.recs, earlier) << "cut " << cut;
        ASSERT_EQ(res.valid_end, last) << "cut " << cut;
        ASSERT_EQ(res.torn, cut == last ? 0 : 1) << "cut " << cut;
    }
}

TEST(Wal, TruncatedLargeLastRecordIsTornTail) {
    TempDir d;
    std::mt19937_64 rng(12);
    auto groups = SmallLog(rng, 100 * 1024);
    std::string full_path = d.file("full"), path = d.file("cut");
    auto offs = WriteLog(full_path, groups);
    std::string bytes = Slurp(full_path);
    auto all = Flatten(groups);
    std::vector<std::string> earlier(all.begin(), all.end() - 1);
    uint64_t last = offs[offs.size() - 2], end = offs.back();
    std::vector<uint64_t> cuts = {last + 1, last + 4, last + 7, last + 8, last + 9, end - 1};
    for (uint64_t c = last + 10; c < end; c += 1009) cuts.push_back(c);
    for (uint64_t cut : cuts) {
        Spit(path, bytes.substr(0, cut));
        ReadResult res = ReadLog(path);
        ASSERT_EQ(res.rc, TDB_ERR_NOT_FOUND) << "cut " << cut << ": " << res.detail;
        ASSERT_EQ(res.recs, earlier) << "cut " << cut;
        ASSERT_EQ(res.valid_end, last);
        ASSERT_EQ(res.torn, 1);
        EXPECT_NE(res.detail.find(path), std::string::npos) << res.detail;
    }
}

TEST(Wal, FlippedBitInLastRecordIsTornTail) {
    TempDir d;
    std::mt19937_64 rng(13);
    auto groups = SmallLog(rng, 2000);
    std::string src = d.file("src"), path = d.file("log");
    auto offs = WriteLog(src, groups);
    std::string bytes = Slurp(src);
    auto all = Flatten(groups);
    std::vector<std::string> earlier(all.begin(), all.end() - 1);
    uint64_t last = offs[offs.size() - 2], end = offs.back();
    std::vector<std::pair<uint64_t, int>> flips;
    for (uint64_t b = last; b < last + WAL_HEADER_SIZE; b++)
        for (int bit = 0; bit < 8; bit++) flips.push_back({b, bit});
    for (int i = 0; i < 40; i++) flips.push_back({last + WAL_HEADER_SIZE + rng() % (end - last - WAL_HEADER_SIZE), (int)(rng() % 8)});
    flips.push_back({end - 1, 7});
    for (auto [byte, bit] : flips) {
        std::string damaged = bytes;
        damaged[byte] = (char)(damaged[byte] ^ (1 << bit));
        Spit(path, damaged);
        ReadResult res = ReadLog(path);
        ASSERT_EQ(res.rc, TDB_ERR_NOT_FOUND) << "byte " << byte << " bit " << bit << ": " << res.detail;
        ASSERT_EQ(res.recs, earlier);
        ASSERT_EQ(res.valid_end, last);
        ASSERT_EQ(res.torn, 1);
    }
}

TEST(Wal, FlippedBitInMiddleRecordIsCorruption) {
    TempDir d;
    std::mt19937_64 rng(14);
    auto groups = SmallLog(rng, 2000);
    std::string src = d.file("src"), path = d.file("log");
    auto offs = WriteLog(src, groups);
    std::string bytes = Slurp(src);
    auto all = Flatten(groups);
    const size_t victim = 2;  // the 500-byte record
    std::vector<std::string> before(all.begin(), all.begin() + victim);
    uint64_t start = offs[victim], stop = offs[victim + 1];
    std::vector<std::pair<uint64_t, int>> flips;
    for (uint64_t b = start; b < start + WAL_HEADER_SIZE; b++)
        for (int bit = 0; bit < 8; bit++) flips.push_back({b, bit});
    for (int i = 0; i < 40; i++) flips.push_back({start + WAL_HEADER_SIZE + rng() % (stop - start - WAL_HEADER_SIZE), (int)(rng() % 8)});
    for (auto [byte, bit] : flips) {
        std::string damaged = bytes;
        damaged[byte] = (char)(damaged[byte] ^ (1 << bit));
        Spit(path, damaged);
        ReadResult res = ReadLog(path);
        ASSERT_EQ(res.rc, TDB_ERR_CORRUPTION) << "byte " << byte << " bit " << bit << ": " << res.detail;
        ASSERT_EQ(res.recs, before);
        ASSERT_EQ(res.valid_end, start);
        ASSERT_EQ(res.torn, 0);
        EXPECT_NE(res.detail.find(path), std::string::npos) << res.detail;
        EXPECT_NE(res.detail.find(std::to_string(start)), std::string::npos) << res.detail;
    }
}

TEST(Wal, GarbageBetweenRecordsIsCorruption) {
    TempDir d;
    std::mt19937_64 rng(15);
    auto groups = SmallLog(rng, 64);
    std::string src = d.file("src"), path = d.file("log");
    auto offs = WriteLog(src, groups);
    std::string bytes = Slurp(src);
    auto all = Flatten(groups);
    // A zero-filled hole, then random junk, inserted before record 3.
    for (const std::string &junk : {std::string(100, '\0'), RandBytes(rng, 37), std::string(3, '\0')}) {
        std::string damaged = bytes.substr(0, offs[3]) + junk + bytes.substr(offs[3]);
        Spit(path, damaged);
        ReadResult res = ReadLog(path);
        ASSERT_EQ(res.rc, TDB_ERR_CORRUPTION) << res.detail;
        ASSERT_EQ(res.recs, std::vector<std::string>(all.begin(), all.begin() + 3));
        ASSERT_EQ(res.valid_end, offs[3]);
        ASSERT_EQ(res.torn, 0);
    }
}

TEST(Wal, ZeroFilledTailIsTornTail) {
    TempDir d;
    std::mt19937_64 rng(16);
    auto groups = SmallLog(rng, 123);
    std::string src = d.file("src"), path = d.file("log");
    auto offs = WriteLog(src, groups);
    std::string bytes = Slurp(src);
    for (size_t zeros : {(size_t)1, (size_t)7, (size_t)8, (size_t)9, (size_t)4096, (size_t)(2 * WAL_READ_CHUNK + 3)}) {
        Spit(path, bytes + std::string(zeros, '\0'));
        ReadResult res = ReadLog(path);
        ASSERT_EQ(res.rc, TDB_ERR_NOT_FOUND) << zeros << ": " << res.detail;
        ASSERT_EQ(res.recs, Flatten(groups));
        ASSERT_EQ(res.valid_end, offs.back());
        ASSERT_EQ(res.torn, 1);
    }
    // A log that is nothing but zeros.
    Spit(path, std::string(10000, '\0'));
    ReadResult res = ReadLog(path);
    EXPECT_EQ(res.rc, TDB_ERR_NOT_FOUND);
    EXPECT_TRUE(res.recs.empty());
    EXPECT_EQ(res.valid_end, 0u);
    EXPECT_EQ(res.torn, 1);
}

namespace {

// Reads `path` expecting `want` records then a torn tail at `valid_end`.
bool ReadsAsTornTail(const std::string &path, const std::vector<std::string> &want, uint64_t valid_end) {
    wal_reader_t *r = nullptr;
    if (wal_reader_open(env_posix(), path.c_str(), &r) != TDB_OK) return false;
    slice_t p;
    size_t i = 0;
    bool ok = true;
    int rc;
    while ((rc = wal_reader_next(r, &p)) == TDB_OK) {
        ok = ok && i < want.size() && std::string(p.data, p.size) == want[i];
        i++;
    }
    ok = ok && rc == TDB_ERR_NOT_FOUND && i == want.size() && wal_reader_torn_tail(r) == 1 &&
         wal_reader_valid_end(r) == valid_end;
    wal_reader_close(r);
    return ok;
}

bool UnderSanitizer() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
    return true;
#else
    return false;
#endif
#else
    return false;
#endif
}

// Current virtual memory size of this process in bytes (0 if unknown).
uint64_t VirtualMemoryBytes() {
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return 0;
    unsigned long long pages = 0;
    int n = fscanf(f, "%llu", &pages);
    fclose(f);
    return n == 1 ? pages * (uint64_t)sysconf(_SC_PAGESIZE) : 0;
}

}  // namespace

TEST(Wal, HugeBogusLengthAtTailNeedsNoHugeAllocation) {
    TempDir d;
    std::mt19937_64 rng(17);
    auto groups = SmallLog(rng, 50);
    std::string src = d.file("src"), path = d.file("log");
    auto offs = WriteLog(src, groups);
    std::string bytes = Slurp(src);
    auto all = Flatten(groups);
    for (uint32_t bogus : {0xffffffffu, 0x80000000u, WAL_MAX_PAYLOAD + 1, WAL_MAX_PAYLOAD, WAL_MAX_PAYLOAD - 1, 1u << 24}) {
        char hdr[WAL_HEADER_SIZE];
        enc_fixed32(hdr, 0x12345678u);
        enc_fixed32(hdr + 4, bogus);
        Spit(path, bytes + std::string(hdr, sizeof hdr) + RandBytes(rng, 200));
        // Run the reader in a child whose address space cannot hold a
        // record of the bogus length: trusting the length would fail with
        // out-of-memory instead of reporting a torn tail.
        fflush(nullptr);
        pid_t pid = fork();
        ASSERT_GE(pid, 0);
        if (pid == 0) {
            uint64_t vm = VirtualMemoryBytes();
            if (!UnderSanitizer() && vm > 0) {
                struct rlimit rl;
                rl.rlim_cur = rl.rlim_max = (rlim_t)(vm + (64u << 20));
                if (setrlimit(RLIMIT_AS, &rl) != 0) _exit(3);
            }
            _exit(ReadsAsTornTail(path, all, offs.back()) ? 0 : 1);
        }
        int status = 0;
        ASSERT_EQ(waitpid(pid, &status, 0), pid);
        ASSERT_TRUE(WIFEXITED(status)) << "bogus length " << bogus;
        EXPECT_EQ(WEXITSTATUS(status), 0) << "bogus length " << bogus;
        // And in this process, for the record.
        EXPECT_TRUE(ReadsAsTornTail(path, all, offs.back())) << "bogus length " << bogus;
    }
}

TEST(Wal, BogusLengthInMiddleIsCorruption) {
    TempDir d;
    std::mt19937_64 rng(18);
    auto groups = SmallLog(rng, 50);
    std::string path = d.file("log");
    auto offs = WriteLog(path, groups);
    std::string bytes = Slurp(path);
    enc_fixed32(&bytes[offs[1] + 4], 0xfffffff0u);
    Spit(path, bytes);
    ReadResult res = ReadLog(path);
    EXPECT_EQ(res.rc, TDB_ERR_CORRUPTION) << res.detail;
    EXPECT_EQ(res.recs.size(), 1u);
    EXPECT_EQ(res.valid_end, offs[1]);
    EXPECT_EQ(res.torn, 0);
}

TEST(Wal, MissingFileIsNotFound) {
    TempDir d;
    wal_reader_t *r = nullptr;
    EXPECT_EQ(wal_reader_open(env_posix(), d.file("nope.log").c_str(), &r), TDB_ERR_NOT_FOUND);
    EXPECT_EQ(r, nullptr);
    wal_writer_t *w = nullptr;
    EXPECT_EQ(wal_writer_open(env_posix(), d.file("no/dir.log").c_str(), &w), TDB_ERR_NOT_FOUND);
    EXPECT_EQ(w, nullptr);
}

TEST(Wal, WriterRejectsBadArguments) {
    TempDir d;
    std::string path = d.file("log");
    wal_writer_t *w = nullptr;
    ASSERT_EQ(wal_writer_open(env_posix(), path.c_str(), &w), TDB_OK);
    slice_t ok = slice_make("abc", 3);
    ASSERT_EQ(wal_writer_add(w, &ok, 1), TDB_OK);
    // Sizes are checked before any byte is touched.
    slice_t huge[2] = {slice_make("x", 1), slice_make("y", (size_t)WAL_MAX_PAYLOAD + 1)};
    EXPECT_EQ(wal_writer_add(w, huge, 2), TDB_ERR_TOO_LARGE);
    slice_t nul = slice_make(nullptr, 5);
    EXPECT_EQ(wal_writer_add(w, &nul, 1), TDB_ERR_INVALID_ARG);
    EXPECT_EQ(wal_writer_add(w, &ok, -1), TDB_ERR_INVALID_ARG);
    EXPECT_EQ(wal_writer_add(w, nullptr, 2), TDB_ERR_INVALID_ARG);
    EXPECT_EQ(wal_writer_add(nullptr, &ok, 1), TDB_ERR_INVALID_ARG);
    // Nothing was written by the refused calls and the writer still works.
    EXPECT_EQ(wal_writer_size(w), WAL_HEADER_SIZE + 3);
    ASSERT_EQ(wal_writer_add(w, &ok, 1), TDB_OK);
    ASSERT_EQ(wal_writer_sync(w), TDB_OK);
    ASSERT_EQ(wal_writer_close(w, 0), TDB_OK);
    EXPECT_EQ(wal_writer_close(nullptr, 1), TDB_OK);
    ReadResult res = ReadLog(path);
    EXPECT_EQ(res.recs, std::vector<std::string>({"abc", "abc"}));
    EXPECT_EQ(res.torn, 0);
}

namespace {

// An env that forwards to POSIX but counts appends and injects failures.
struct FaultEnv {
    env_t base;          // must be first: file handles point at it
    int appends = 0;
    int fail_appends = 0; // > 0: appends write half their bytes, then fail
    int fail_syncs = 0;   // > 0: syncs fail with sync_code
    int sync_code = TDB_ERR_IO;
};

int FaultAppend(env_file_t *f, const void *d, size_t n) {
    FaultEnv *fe = (FaultEnv *)f->env;
    fe->appends++;
    if (fe->fail_appends > 0) {
        fe->fail_appends--;
        env_posix()->append(f, d, n / 2);
        return tdb_err(TDB_ERR_NO_SPACE, "injected: disk full");
    }
    return env_posix()->append(f, d, n);
}

int FaultSync(env_file_t *f) {
    FaultEnv *fe = (FaultEnv *)f->env;
    if (fe->fail_syncs > 0) {
        fe->fail_syncs--;
        return tdb_err(fe->sync_code, "injected: fdatasync failed");
    }
    return env_posix()->sync(f);
}

FaultEnv MakeFaultEnv() {
    FaultEnv fe;
    fe.base = *env_posix();
    fe.base.append = FaultAppend;
    fe.base.sync = FaultSync;
    return fe;
}

}  // namespace

TEST(Wal, GroupIsOneAppendCall) {
    TempDir d;
    FaultEnv fe = MakeFaultEnv();
    std::string path = d.file("log");
    wal_writer_t *w = nullptr;
    ASSERT_EQ(wal_writer_open(&fe.base, path.c_str(), &w), TDB_OK);
    std::vector<std::string> payloads = {"a", "", std::string(70000, 'b'), "cc", "d"};
    std::vector<slice_t> s;
    for (auto &p : payloads) s.push_back(slice_make(p.data(), p.size()));
    ASSERT_EQ(wal_writer_add(w, s.data(), (int)s.size()), TDB_OK);
    EXPECT_EQ(fe.appends, 1);
    ASSERT_EQ(wal_writer_add(w, s.data(), 2), TDB_OK);
    EXPECT_EQ(fe.appends, 2);
    ASSERT_EQ(wal_writer_close(w, 1), TDB_OK);
    ReadResult res = ReadLog(path);
    EXPECT_EQ(res.recs.size(), 7u);
    EXPECT_EQ(res.torn, 0);
}

// An append that runs out of space leaves a torn tail and refuses further
// appends (not an I/O failure, wal.h): sync cuts the tail off and succeeds.
TEST(Wal, OutOfSpaceAppendTearsTheLogUntilSyncCutsIt) {
    TempDir d;
    FaultEnv fe = MakeFaultEnv();
    std::string path = d.file("log");
    wal_writer_t *w = nullptr;
    ASSERT_EQ(wal_writer_open(&fe.base, path.c_str(), &w), TDB_OK);
    std::string a(1000, 'a'), b(3000, 'b');
    slice_t sa = slice_make(a.data(), a.size()), sb[2] = {slice_make(b.data(), b.size()), sa};
    ASSERT_EQ(wal_writer_add(w, &sa, 1), TDB_OK);
    uint64_t good = wal_writer_size(w);
    fe.fail_appends = 1;
    EXPECT_EQ(wal_writer_add(w, sb, 2), TDB_ERR_NO_SPACE);
    EXPECT_EQ(wal_writer_size(w), good);
    // No further append reaches the file.
    EXPECT_EQ(wal_writer_add(w, &sa, 1), TDB_ERR_NO_SPACE);
    EXPECT_EQ(fe.appends, 2);
    ReadResult res = ReadLog(path);
    EXPECT_EQ(res.rc, TDB_ERR_NOT_FOUND);
    EXPECT_EQ(res.recs, std::vector<std::string>({a}));
    EXPECT_EQ(res.valid_end, good);
    EXPECT_EQ(res.torn, 1);
    // Sync truncates to the last complete record; appends stay refused.
    EXPECT_EQ(wal_writer_sync(w), TDB_OK) << tdb_last_error();
    EXPECT_EQ(wal_writer_add(w, &sa, 1), TDB_ERR_NO_SPACE);
    EXPECT_EQ(fe.appends, 2);
    EXPECT_EQ(wal_writer_close(w, 1), TDB_OK);
    res = ReadLog(path);
    EXPECT_EQ(res.rc, TDB_ERR_NOT_FOUND);
    EXPECT_EQ(res.recs, std::vector<std::string>({a}));
    EXPECT_EQ(res.valid_end, good);
    EXPECT_EQ(res.torn, 0);  // a clean end: the log can be closed as complete
}

// An fsync out of space right after a group appended to a fully synced log
// cuts that group off (only its pages may have been dropped) and seals the
// writer; with earlier records unsynced, or when the cut cannot be synced,
// it is a failed fsync like any other (wal.h).
TEST(Wal, OutOfSpaceSyncCutsOnlyAGroupOnASyncedLog) {
    TempDir d;
    FaultEnv fe = MakeFaultEnv();
    fe.sync_code = TDB_ERR_NO_SPACE;
    std::string a(1000, 'a'), b(3000, 'b');
    slice_t sa = slice_make(a.data(), a.size()), sb = slice_make(b.data(), b.size());
    // A log holding `a` synced, then `b` appended; *start is where b begins.
    auto open_synced_then_pending = [&](const std::string &path, wal_writer_t **w, uint64_t *start) {
        ASSERT_EQ(wal_writer_open(&fe.base, path.c_str(), w), TDB_OK);
        ASSERT_EQ(wal_writer_add(*w, &sa, 1), TDB_OK);
        ASSERT_EQ(wal_writer_sync(*w), TDB_OK);
        *start = wal_writer_size(*w);
        ASSERT_EQ(wal_writer_add(*w, &sb, 1), TDB_OK);
    };
    {  // synced log: the group is cut off, the writer sealed but not failed
        std::string path = d.file("cut");
        wal_writer_t *w = nullptr;
        uint64_t start = 0;
        ASSERT_NO_FATAL_FAILURE(open_synced_then_pending(path, &w, &start));
        fe.fail_syncs = 1;
        EXPECT_EQ(wal_writer_sync_group(w, start), TDB_ERR_NO_SPACE);
        EXPECT_EQ(wal_writer_size(w), start);
        EXPECT_EQ(wal_writer_add(w, &sa, 1), TDB_ERR_NO_SPACE);  // sealed
        ReadResult res = ReadLog(path);
        EXPECT_EQ(res.recs, std::vector<std::string>({a}));
        EXPECT_EQ(res.torn, 0);
        EXPECT_EQ(wal_writer_seal(w), TDB_OK);
        EXPECT_EQ(wal_writer_close(w, 1), TDB_OK);
        EXPECT_EQ(ReadLog(path).recs, std::vector<std::string>({a}));
    }
    {  // an earlier record was not synced: cutting would lose it, so failed
        std::string path = d.file("unsynced");
        wal_writer_t *w = nullptr;
        ASSERT_EQ(wal_writer_open(&fe.base, path.c_str(), &w), TDB_OK);
        ASSERT_EQ(wal_writer_add(w, &sa, 1), TDB_OK);
        uint64_t start = wal_writer_size(w);
        ASSERT_EQ(wal_writer_add(w, &sb, 1), TDB_OK);
        fe.fail_syncs = 1;
        EXPECT_EQ(wal_writer_sync_group(w, start), TDB_ERR_NO_SPACE);
        EXPECT_EQ(wal_writer_size(w), start + WAL_HEADER_SIZE + b.size());  // nothing cut
        EXPECT_NE(wal_writer_sync(w), TDB_OK);                              // failed for good
        EXPECT_NE(wal_writer_add(w, &sa, 1), TDB_OK);
        EXPECT_NE(wal_writer_close(w, 1), TDB_OK);
        EXPECT_EQ(ReadLog(path).recs, std::vector<std::string>({a, b}));
    }
    {  // the cut's own sync fails: failed for good
        std::string path = d.file("cutfails");
        wal_writer_t *w = nullptr;
        uint64_t start = 0;
        ASSERT_NO_FATAL_FAILURE(open_synced_then_pending(path, &w, &start));
        fe.fail_syncs = 2;
        EXPECT_EQ(wal_writer_sync_group(w, start), TDB_ERR_NO_SPACE);
        EXPECT_NE(wal_writer_sync(w), TDB_OK);
        EXPECT_NE(wal_writer_seal(w), TDB_OK);
        wal_writer_close(w, 0);
    }
}

TEST(Wal, FailedSyncIsSticky) {
    TempDir d;
    FaultEnv fe = MakeFaultEnv();
    std::string path = d.file("log");
    wal_writer_t *w = nullptr;
    ASSERT_EQ(wal_writer_open(&fe.base, path.c_str(), &w), TDB_OK);
    slice_t s = slice_make("x", 1);
    ASSERT_EQ(wal_writer_add(w, &s, 1), TDB_OK);
    fe.fail_syncs = 1;
    EXPECT_EQ(wal_writer_sync(w), TDB_ERR_IO);
    EXPECT_EQ(fe.fail_syncs, 0);
    EXPECT_EQ(wal_writer_sync(w), TDB_ERR_IO);  // a later sync must not claim durability
    EXPECT_EQ(wal_writer_add(w, &s, 1), TDB_ERR_IO);
    EXPECT_EQ(wal_writer_close(w, 0), TDB_OK);  // closing without sync is fine
}

TEST(Wal, MiddleDamageFollowedOnlyByLargeRecordsIsCorruption) {
    // Every record after the damage is over 64 KiB, so the intact ones are
    // found through their header chain ending at end of file.
    TempDir d;
    std::mt19937_64 rng(19);
    std::vector<std::vector<std::string>> groups = {
        {RandBytes(rng, 100), RandBytes(rng, 200 * 1024)},
        {RandBytes(rng, 300 * 1024), RandBytes(rng, 150 * 1024)},
        {RandBytes(rng, 70 * 1024)}};
    std::string src = d.file("src"), path = d.file("log");
    auto offs = WriteLog(src, groups);
    std::string bytes = Slurp(src);
    const size_t victim = 1;
    std::vector<uint64_t> flips = {offs[victim] * 8 + 3,                          // checksum
                                   (offs[victim] + 4) * 8 + 1,                    // length, smaller
                                   (offs[victim] + 6) * 8 + 4,                    // length, past end of file
                                   (offs[victim] + 7) * 8 + 7,                    // length, over 1 GiB
                                   (offs[victim] + 5000) * 8 + 2,                 // payload
                                   (offs[victim + 1] - 1) * 8};                   // last payload byte
    for (uint64_t bit : flips) {
        std::string damaged = bytes;
        damaged[bit / 8] = (char)(damaged[bit / 8] ^ (1 << (bit % 8)));
        Spit(path, damaged);
        ReadResult res = ReadLog(path);
        ASSERT_EQ(res.rc, TDB_ERR_CORRUPTION) << "bit " << bit << ": " << res.detail;
        ASSERT_EQ(res.recs.size(), victim);
        ASSERT_EQ(res.valid_end, offs[victim]);
        ASSERT_EQ(res.torn, 0);
        EXPECT_NE(res.detail.find("follows at offset " + std::to_string(offs[victim + 1])), std::string::npos)
            << res.detail;
    }
}

TEST(Wal, DamageThenOneLargeRecordThenTornTailIsCorruption) {
    // Mid-log damage, one intact large record, then a torn record: no
    // header chain reaches end of file, so only the budgeted pass finds it.
    TempDir d;
    std::mt19937_64 rng(20);
    std::vector<std::vector<std::string>> groups = {
        {RandBytes(rng, 10)}, {RandBytes(rng, 100 * 1024)}, {RandBytes(rng, 120 * 1024)}, {RandBytes(rng, 90 * 1024)}};
    std::string src = d.file("src"), path = d.file("log");
    auto offs = WriteLog(src, groups);
    std::string bytes = Slurp(src);
    bytes[offs[1] + 9] ^= 0x10;                       // damage record 1
    bytes.resize(offs[3] + 40 * 1024);                // tear record 3
    Spit(path, bytes);
    ReadResult res = ReadLog(path);
    EXPECT_EQ(res.rc, TDB_ERR_CORRUPTION) << res.detail;
    EXPECT_EQ(res.recs.size(), 1u);
    EXPECT_EQ(res.valid_end, offs[1]);
    EXPECT_NE(res.detail.find("follows at offset " + std::to_string(offs[2])), std::string::npos) << res.detail;
    // The same with the intact record small: found by the first pass.
    groups[2][0].resize(1000);
    offs = WriteLog(src, groups);
    bytes = Slurp(src);
    bytes[offs[1] + 9] ^= 0x10;
    bytes.resize(offs[3] + 40 * 1024);
    Spit(path, bytes);
    res = ReadLog(path);
    EXPECT_EQ(res.rc, TDB_ERR_CORRUPTION) << res.detail;
    EXPECT_EQ(res.valid_end, offs[1]);
}

TEST(Wal, LargeTornRandomRecordIsClassifiedQuickly) {
    // Trying every offset of a torn 8 MiB random record one by one would
    // checksum terabytes; the pass structure keeps it to about a second.
    TempDir d;
    std::mt19937_64 rng(21);
    std::vector<std::vector<std::string>> groups = {{RandBytes(rng, 100), RandBytes(rng, 5000)},
                                                    {RandBytes(rng, 8 << 20)}};
    std::string path = d.file("log");
    auto offs = WriteLog(path, groups);
    env_t *e = env_posix();
    ASSERT_EQ(e->truncate(e, path.c_str(), offs.back() - 100), TDB_OK);
    uint64_t t0 = e->now_micros(e);
    ReadResult res = ReadLog(path);
    uint64_t took = e->now_micros(e) - t0;
    EXPECT_EQ(res.rc, TDB_ERR_NOT_FOUND) << res.detail;
    EXPECT_EQ(res.recs.size(), 2u);
    EXPECT_EQ(res.valid_end, offs[2]);
    EXPECT_EQ(res.torn, 1);
    EXPECT_LT(took, 60u * 1000 * 1000) << "classification took " << took << " us";
}

// A process killed in the middle of an append leaves a torn tail, never a
// hole followed by intact records: the append is one group of small
// records copied into the mapped log, and a kill at any point of that copy
// must leave a prefix of it. (glibc's memcpy stores a copy's first bytes
// last for some sizes; a kill between left the group's later records
// intact behind a damaged first one, and the log failed to open.)
TEST(Wal, KilledMidAppendLeavesOnlyATornTail) {
    TempDir d;
    std::mt19937_64 rng(77);
    for (int round = 0; round < 60; round++) {
        std::string path = d.file("k" + std::to_string(round) + ".log");
        auto child = [&] {
            wal_writer_t *w = nullptr;
            if (wal_writer_open(env_posix(), path.c_str(), &w) != TDB_OK) _exit(2);
            std::mt19937_64 crng(round);
            std::vector<std::string> recs;
            for (int i = 0; i < 64; i++) recs.push_back(RandBytes(crng, 8 + crng() % 56));
            for (;;) {  // groups of 8-40 records, 0.1-3 KiB each group
                int n = 8 + (int)(crng() % 33);
                std::vector<slice_t> s;
                for (int i = 0; i < n; i++) {
                    const std::string &r = recs[crng() % recs.size()];
                    s.push_back(slice_make(r.data(), r.size()));
                }
                if (wal_writer_add(w, s.data(), n) != TDB_OK) _exit(3);
            }
        };
        int status = tdbtest::KillNine(child, [&] { usleep((useconds_t)(2000 + rng() % 20000)); });
        ASSERT_NE(status, -1) << "fork failed";
        ASSERT_TRUE(WIFSIGNALED(status)) << "writer exited with " << WEXITSTATUS(status);
        ReadResult res = ReadLog(path);
        ASSERT_EQ(TDB_ERR_NOT_FOUND, res.rc) << "round " << round << ": " << res.detail;
        std::remove(path.c_str());
    }
}
