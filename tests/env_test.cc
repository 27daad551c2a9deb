// Unit tests for env: the POSIX environment and the helpers built on env_t.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "testutil.h"

extern "C" {
#include "env/env.h"
#include "util/error.h"
}

using tdbtest::TempDir;

namespace {

using tdbtest::Slurp;

void Spit(const std::string &path, const std::string &data) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(data.data(), (std::streamsize)data.size());
}

bool Contains(const std::string &hay, const std::string &needle) { return hay.find(needle) != std::string::npos; }

// image holds want, then only zeros (a log file's crash image).
void ExpectAppendedThenZeros(const std::string &image, const std::string &want) {
    ASSERT_GE(image.size(), want.size());
    EXPECT_EQ(image.substr(0, want.size()), want);
    EXPECT_EQ(image.find_first_not_of('\0', want.size()), std::string::npos);
}

// Runs body in a forked child, which then kills itself with SIGKILL
// (exits 2 if body returned false); returns once the child is gone.
void RunInKilledChild(const std::function<bool()> &body) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        if (!body()) _exit(2);
        kill(getpid(), SIGKILL);
        _exit(3);
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status)) << "child exit status " << WEXITSTATUS(status);
}

// Appends piece to w and to *want; the file's size is then want's.
void AppendCountingSize(env_file_t *w, const std::string &piece, std::string *want) {
    ASSERT_EQ(env_append(w, piece.data(), piece.size()), TDB_OK);
    *want += piece;
    uint64_t sz = 0;
    ASSERT_EQ(env_fsize(w, &sz), TDB_OK);
    EXPECT_EQ(sz, want->size());
}

// A child appends n records of `size` bytes to a new log at path, syncing
// after each of the first `synced`, and is killed before closing it: the
// file holds every record (the page cache outlives the process), then
// only zeros.
void CheckKilledLog(env_t *e, const std::string &path, int n, size_t size, int synced) {
    RunInKilledChild([&] {
        env_file_t *c = nullptr;
        if (env_open_log(e, path.c_str(), &c) != TDB_OK) return false;
        for (int i = 0; i < n; i++) {
            std::string piece = tdbtest::Value(i, size);
            if (env_append(c, piece.data(), piece.size()) != TDB_OK) return false;
            if (i < synced && env_sync(c) != TDB_OK) return false;
        }
        return true;
    });
    std::string expect;
    for (int i = 0; i < n; i++) expect += tdbtest::Value(i, size);
    ExpectAppendedThenZeros(Slurp(path), expect);
}

}  // namespace

TEST(Env, SingletonIsStable) {
    EXPECT_EQ(env_posix(), env_posix());
    EXPECT_NE(env_posix(), nullptr);
}

TEST(Env, WriteReadSyncSize) {
    TempDir d;
    env_t *e = env_posix();
    std::string path = d.file("f");
    env_file_t *w = nullptr;
    ASSERT_EQ(e->open_writable(e, path.c_str(), &w), TDB_OK);
    uint64_t sz = 99;
    ASSERT_EQ(env_fsize(w, &sz), TDB_OK);
    EXPECT_EQ(sz, 0u);
    std::string a = "hello ", b = tdbtest::Value(7, 300000);
    ASSERT_EQ(env_append(w, a.data(), a.size()), TDB_OK);
    ASSERT_EQ(env_append(w, b.data(), b.size()), TDB_OK);
    ASSERT_EQ(env_append(w, "", 0), TDB_OK);
    ASSERT_EQ(env_fsize(w, &sz), TDB_OK);
    EXPECT_EQ(sz, a.size() + b.size());
    ASSERT_EQ(env_sync(w), TDB_OK);
    ASSERT_EQ(env_close(w), TDB_OK);
    ASSERT_EQ(e->file_size(e, path.c_str(), &sz), TDB_OK);
    EXPECT_EQ(sz, a.size() + b.size());
    EXPECT_EQ(Slurp(path), a + b);

    env_file_t *r = nullptr;
    ASSERT_EQ(e->open_readable(e, path.c_str(), &r), TDB_OK);
    ASSERT_EQ(env_fsize(r, &sz), TDB_OK);
    EXPECT_EQ(sz, a.size() + b.size());
    std::string got(a.size() + b.size(), '\0');
    size_t nr = 0;
    ASSERT_EQ(env_pread(r, 0, got.data(), got.size(), &nr), TDB_OK);
    EXPECT_EQ(nr, got.size());
    EXPECT_EQ(got, a + b);
    // A read running past the end is short, not an error.
    char tail[32];
    ASSERT_EQ(env_pread(r, sz - 5, tail, sizeof tail, &nr), TDB_OK);
    EXPECT_EQ(nr, 5u);
    EXPECT_EQ(std::string(tail, 5), b.substr(b.size() - 5));
    ASSERT_EQ(env_pread(r, sz + 100, tail, sizeof tail, &nr), TDB_OK);
    EXPECT_EQ(nr, 0u);
    // The full-read helper.
    std::string mid(100, '\0');
    ASSERT_EQ(env_read_exact(r, 3, mid.data(), mid.size(), "f"), TDB_OK);
    EXPECT_EQ(mid, (a + b).substr(3, 100));
    // Appending to a read-only handle is misuse.
    EXPECT_EQ(env_append(r, "x", 1), TDB_ERR_INVALID_ARG);
    ASSERT_EQ(env_close(r), TDB_OK);
    EXPECT_EQ(env_close(nullptr), TDB_OK);
}

TEST(Env, OpenWritableTruncates) {
    TempDir d;
    env_t *e = env_posix();
    std::string path = d.file("f");
    Spit(path, "old contents");
    env_file_t *w = nullptr;
    ASSERT_EQ(e->open_writable(e, path.c_str(), &w), TDB_OK);
    ASSERT_EQ(env_append(w, "new", 3), TDB_OK);
    ASSERT_EQ(env_close(w), TDB_OK);
    EXPECT_EQ(Slurp(path), "new");
}

// A log file (open_log): appends land in mapped windows whose space is
// reserved ahead, across window boundaries and in one large append; while
// open the file may be longer than what was appended (zeros), a child
// killed before closing leaves exactly the appended bytes followed by
// zeros, and close cuts the file to the bytes appended.
TEST(Env, LogFileAppendsThroughWindowsAndClosesToSize) {
    TempDir d;
    env_t *e = env_posix();
    std::string path = d.file("000001.log");
    Spit(path, "old contents that must go");
    env_file_t *w = nullptr;
    ASSERT_EQ(env_open_log(e, path.c_str(), &w), TDB_OK);
    std::string want;
    std::mt19937 rng(5);
    while (want.size() < (3u << 20)) {  // small appends across three windows
        std::string piece = tdbtest::Value(want.size(), 1 + rng() % 700);
        ASSERT_EQ(env_append(w, piece.data(), piece.size()), TDB_OK);
        want += piece;
    }
    AppendCountingSize(w, tdbtest::Value(99, (5u << 20) + 123), &want);  // one append spanning windows
    ASSERT_EQ(env_sync(w), TDB_OK);
    ExpectAppendedThenZeros(Slurp(path), want);  // a crash image: reserved space reads as zeros
    ASSERT_EQ(env_close(w), TDB_OK);
    EXPECT_EQ(Slurp(path), want);

    // Killed without closing: what was appended is there (the page cache
    // outlives the process), then only zeros.
    CheckKilledLog(e, d.file("000002.log"), 5000, 100, 0);
}

// Bytes of the file at path in extents the filesystem reports as
// unwritten (reserved with fallocate, never written), after syncing it;
// -1 if the filesystem does not report extents (FIEMAP).
long long UnwrittenBytes(const std::string &path) {
    int fd = open(path.c_str(), O_RDONLY);
    if (fd < 0) return -1;
    const int kMax = 256;
    std::vector<char> buf(sizeof(struct fiemap) + kMax * sizeof(struct fiemap_extent));
    auto *fm = reinterpret_cast<struct fiemap *>(buf.data());
    fm->fm_start = 0;
    fm->fm_length = FIEMAP_MAX_OFFSET;
    fm->fm_flags = FIEMAP_FLAG_SYNC;
    fm->fm_extent_count = kMax;
    long long unwritten = -1;
    if (ioctl(fd, FS_IOC_FIEMAP, fm) == 0) {
        unwritten = 0;
        for (unsigned i = 0; i < fm->fm_mapped_extents; i++)
            if (fm->fm_extents[i].fe_flags & FIEMAP_EXTENT_UNWRITTEN) unwritten += (long long)fm->fm_extents[i].fe_length;
    }
    close(fd);
    return unwritten;
}

// A log file synced after every append (a database syncing each commit)
// leaves the mapping at its first window boundary: its appends then land
// in zeros written ahead of them, never in reserved (unwritten) space,
// whose conversion the filesystem would journal at every sync. A log
// synced rarely keeps its reserved window. Either way the file holds the
// appended bytes then zeros while open, a child killed before closing
// leaves exactly that, and close cuts the file to the bytes appended.
TEST(Env, SyncedLogAppendsIntoWrittenZeros) {
    TempDir d;
    env_t *e = env_posix();
    // Rarely synced: stays mapped, space ahead reserved. Skip where the
    // filesystem does not report reserved space as unwritten extents.
    std::string rare = d.file("000001.log");
    env_file_t *w = nullptr;
    ASSERT_EQ(env_open_log(e, rare.c_str(), &w), TDB_OK);
    for (int i = 0; i < 3000; i++) {
        std::string piece = tdbtest::Value(i, 1000);
        ASSERT_EQ(env_append(w, piece.data(), piece.size()), TDB_OK);
        if (i % 100 == 99) {
            ASSERT_EQ(env_sync(w), TDB_OK);
        }
    }
    ASSERT_EQ(env_sync(w), TDB_OK);
    long long rare_unwritten = UnwrittenBytes(rare);
    ASSERT_EQ(env_close(w), TDB_OK);
    if (rare_unwritten <= 0) GTEST_SKIP() << "the filesystem does not report reserved space as unwritten";

    std::string path = d.file("000002.log");
    ASSERT_EQ(env_open_log(e, path.c_str(), &w), TDB_OK);
    std::string want;
    for (int i = 0; want.size() < (3u << 20) + 777; i++) {
        std::string piece = tdbtest::Value(i, 1500 + i % 1000);
        ASSERT_EQ(env_append(w, piece.data(), piece.size()), TDB_OK);
        ASSERT_EQ(env_sync(w), TDB_OK);
        want += piece;
    }
    EXPECT_EQ(UnwrittenBytes(path), 0);
    std::string image = Slurp(path);
    ASSERT_GT(image.size(), want.size());  // zeros ahead of the appends
    ExpectAppendedThenZeros(image, want);
    AppendCountingSize(w, tdbtest::Value(7, (3u << 20) + 5), &want);  // past the zeros in one append
    ASSERT_EQ(env_sync(w), TDB_OK);
    EXPECT_EQ(UnwrittenBytes(path), 0);
    ASSERT_EQ(env_close(w), TDB_OK);
    EXPECT_EQ(Slurp(path), want);

    // Killed without closing, part-way through the synced phase: the
    // appended bytes, then only zeros.
    CheckKilledLog(e, d.file("000003.log"), 2000, 1200, 1500);
}

// Bytes this process has dirtied in the page cache (/proc/self/io
// write_bytes), or -1 without task I/O accounting.
long long DirtiedBytes() {
    std::ifstream in("/proc/self/io");
    std::string key;
    long long v;
    while (in >> key >> v)
        if (key == "write_bytes:") return v;
    return -1;
}

// A log window is faulted in, writable, ahead of the appends and 64 KiB at a
// time: a small append never faults a page in itself (that fault would be
// taken under the WAL lock), and at most 64 KiB past the last record is
// dirtied (pages dirtied past it count as written, though the log is cut
// before they reach the disk). Page-cache dirtying shows in write_bytes.
TEST(Env, LogWindowIsFaultedInAheadOfTheAppends) {
#ifdef MADV_POPULATE_WRITE
    void *probe = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(probe, MAP_FAILED);
    int probe_rc = madvise(probe, 4096, MADV_POPULATE_WRITE);
    munmap(probe, 4096);
    if (probe_rc != 0) GTEST_SKIP() << "MADV_POPULATE_WRITE not supported here";
    if (DirtiedBytes() < 0) GTEST_SKIP() << "no /proc/self/io";
    TempDir d;
    env_t *e = env_posix();
    std::string path = d.file("000001.log");
    env_file_t *w = nullptr;
    ASSERT_EQ(env_open_log(e, path.c_str(), &w), TDB_OK);
    std::string want, piece = tdbtest::Value(1, 128);
    auto append_to = [&](size_t size) {
        while (want.size() < size) {
            size_t k = std::min(piece.size(), size - want.size());
            ASSERT_EQ(env_append(w, piece.data(), k), TDB_OK);
            want.append(piece, 0, k);
        }
    };
    const long long kChunk = 64 << 10, base = DirtiedBytes();
    append_to(100);
    long long first = DirtiedBytes() - base;
    EXPECT_GE(first, kChunk) << "the first append faults a whole chunk in";
    EXPECT_LT(first, 2 * kChunk) << "only one chunk";
    append_to(kChunk);
    EXPECT_EQ(DirtiedBytes() - base, first) << "appends inside the chunk fault nothing in";
    append_to(kChunk + 1);
    EXPECT_EQ(DirtiedBytes() - base, first + kChunk) << "the next chunk, not the rest of the window";
    append_to(1 << 20);
    long long window = DirtiedBytes() - base;
    append_to((1 << 20) + 1);
    EXPECT_EQ(DirtiedBytes() - base, window + kChunk) << "a new window: one chunk of it";
    ASSERT_EQ(env_close(w), TDB_OK);
    EXPECT_EQ(Slurp(path), want);
#else
    GTEST_SKIP() << "MADV_POPULATE_WRITE not in this system's headers";
#endif
}

TEST(Env, ConcurrentReadersOnOneHandle) {
    TempDir d;
    env_t *e = env_posix();
    std::string path = d.file("f");
    std::string data = tdbtest::Value(1, 1 << 20);
    Spit(path, data);
    env_file_t *r = nullptr;
    ASSERT_EQ(e->open_readable(e, path.c_str(), &r), TDB_OK);
    std::vector<std::thread> ts;
    std::atomic<int> bad{0};
    for (int t = 0; t < 4; t++) {
        ts.emplace_back([&, t] {
            char buf[4096];
            for (size_t off = (size_t)t * 977; off + sizeof buf <= data.size(); off += 4 * 4099) {
                if (env_read_exact(r, off, buf, sizeof buf, "f") != TDB_OK || memcmp(buf, data.data() + off, sizeof buf) != 0)
                    bad++;
            }
        });
    }
    for (auto &t : ts) t.join();
    EXPECT_EQ(bad.load(), 0);
    ASSERT_EQ(env_close(r), TDB_OK);
}

TEST(Env, RenameRemoveExistsTruncate) {
    TempDir d;
    env_t *e = env_posix();
    std::string a = d.file("a"), b = d.file("b");
    Spit(a, "alpha");
    Spit(b, "beta-old");
    EXPECT_EQ(e->exists(e, a.c_str()), 1);
    ASSERT_EQ(e->rename(e, a.c_str(), b.c_str()), TDB_OK);  // replaces b
    EXPECT_EQ(e->exists(e, a.c_str()), 0);
    EXPECT_EQ(Slurp(b), "alpha");
    ASSERT_EQ(e->sync_dir(e, d.path().c_str()), TDB_OK);
    ASSERT_EQ(e->truncate(e, b.c_str(), 2), TDB_OK);
    EXPECT_EQ(Slurp(b), "al");
    ASSERT_EQ(e->remove(e, b.c_str()), TDB_OK);
    EXPECT_EQ(e->exists(e, b.c_str()), 0);
    EXPECT_EQ(e->rename(e, a.c_str(), b.c_str()), TDB_ERR_NOT_FOUND);
    EXPECT_TRUE(Contains(tdb_last_error(), a)) << tdb_last_error();
}

TEST(Env, MkdirListDirRmdir) {
    TempDir d;
    env_t *e = env_posix();
    std::string sub = d.file("sub");
    ASSERT_EQ(e->mkdir(e, sub.c_str()), TDB_OK);
    ASSERT_EQ(e->mkdir(e, sub.c_str()), TDB_OK);  // existing directory is fine
    Spit(d.file("plain"), "x");
    EXPECT_NE(e->mkdir(e, d.file("plain").c_str()), TDB_OK);  // a file is in the way

    char **names = nullptr;
    size_t n = 0;
    ASSERT_EQ(e->list_dir(e, sub.c_str(), &names, &n), TDB_OK);
    EXPECT_EQ(n, 0u);
    env_free_list(names, n);

    std::vector<std::string> want;
    for (int i = 0; i < 40; i++) {
        want.push_back("file" + std::to_string(i));
        Spit(sub + "/" + want.back(), "v");
    }
    ASSERT_EQ(e->mkdir(e, (sub + "/nested").c_str()), TDB_OK);
    want.push_back("nested");
    ASSERT_EQ(e->list_dir(e, sub.c_str(), &names, &n), TDB_OK);
    std::vector<std::string> got(names, names + n);
    env_free_list(names, n);
    std::sort(got.begin(), got.end());
    std::sort(want.begin(), want.end());
    EXPECT_EQ(got, want);

    EXPECT_NE(e->rmdir(e, sub.c_str()), TDB_OK);  // not empty
    ASSERT_EQ(e->rmdir(e, (sub + "/nested").c_str()), TDB_OK);
    EXPECT_EQ(e->list_dir(e, d.file("missing").c_str(), &names, &n), TDB_ERR_NOT_FOUND);
    env_free_list(nullptr, 0);
}

TEST(Env, WriteFileAtomicReplacesContent) {
    TempDir d;
    env_t *e = env_posix();
    std::string big = tdbtest::Value(3, 100000);
    ASSERT_EQ(env_write_file_atomic(e, d.path().c_str(), "CURRENT", "first", 5), TDB_OK);
    EXPECT_EQ(Slurp(d.file("CURRENT")), "first");
    ASSERT_EQ(env_write_file_atomic(e, d.path().c_str(), "CURRENT", big.data(), big.size()), TDB_OK);
    EXPECT_EQ(Slurp(d.file("CURRENT")), big);
    ASSERT_EQ(env_write_file_atomic(e, (d.path() + "/").c_str(), "CURRENT", "x", 1), TDB_OK);
    EXPECT_EQ(Slurp(d.file("CURRENT")), "x");
    EXPECT_EQ(e->exists(e, d.file("CURRENT.tmp").c_str()), 0);

    char *data = nullptr;
    size_t n = 0;
    ASSERT_EQ(env_read_file(e, d.file("CURRENT").c_str(), &data, &n), TDB_OK);
    EXPECT_EQ(std::string(data, n), "x");
    EXPECT_EQ(data[n], '\0');
    free(data);

    // Empty file and a directory that does not exist.
    ASSERT_EQ(env_write_file_atomic(e, d.path().c_str(), "EMPTY", "", 0), TDB_OK);
    ASSERT_EQ(env_read_file(e, d.file("EMPTY").c_str(), &data, &n), TDB_OK);
    EXPECT_EQ(n, 0u);
    free(data);
    EXPECT_EQ(env_write_file_atomic(e, d.file("nodir").c_str(), "X", "x", 1), TDB_ERR_NOT_FOUND);
}

TEST(Env, ReadExactShortFileIsCorruption) {
    TempDir d;
    env_t *e = env_posix();
    std::string path = d.file("short");
    Spit(path, "0123456789");
    env_file_t *r = nullptr;
    ASSERT_EQ(e->open_readable(e, path.c_str(), &r), TDB_OK);
    char buf[16];
    EXPECT_EQ(env_read_exact(r, 0, buf, 11, "footer of short"), TDB_ERR_CORRUPTION);
    EXPECT_TRUE(Contains(tdb_last_error(), "footer of short")) << tdb_last_error();
    EXPECT_EQ(env_read_exact(r, 8, buf, 4, "x"), TDB_ERR_CORRUPTION);
    EXPECT_EQ(env_read_exact(r, 100, buf, 1, "x"), TDB_ERR_CORRUPTION);
    EXPECT_EQ(env_read_exact(r, 6, buf, 4, "x"), TDB_OK);
    EXPECT_EQ(std::string(buf, 4), "6789");
    EXPECT_EQ(env_read_exact(r, 10, buf, 0, "x"), TDB_OK);
    ASSERT_EQ(env_close(r), TDB_OK);
}

TEST(Env, MissingFileIsNotFound) {
    TempDir d;
    env_t *e = env_posix();
    std::string path = d.file("nope");
    env_file_t *f = nullptr;
    EXPECT_EQ(e->open_readable(e, path.c_str(), &f), TDB_ERR_NOT_FOUND);
    EXPECT_EQ(f, nullptr);
    EXPECT_TRUE(Contains(tdb_last_error(), path)) << tdb_last_error();
    uint64_t sz;
    EXPECT_EQ(e->file_size(e, path.c_str(), &sz), TDB_ERR_NOT_FOUND);
    EXPECT_EQ(e->remove(e, path.c_str()), TDB_ERR_NOT_FOUND);
    EXPECT_EQ(e->truncate(e, path.c_str(), 0), TDB_ERR_NOT_FOUND);
    EXPECT_EQ(e->exists(e, path.c_str()), 0);
    char *data = nullptr;
    size_t n = 0;
    EXPECT_EQ(env_read_file(e, path.c_str(), &data, &n), TDB_ERR_NOT_FOUND);
    EXPECT_EQ(data, nullptr);
    EXPECT_EQ(e->open_writable(e, d.file("no/such/dir").c_str(), &f), TDB_ERR_NOT_FOUND);
    EXPECT_EQ(e->sync_dir(e, d.file("nodir").c_str()), TDB_ERR_NOT_FOUND);
}

TEST(Env, LockTwiceInSameProcessIsLocked) {
    TempDir d;
    env_t *e = env_posix();
    std::string path = d.file("LOCK");
    env_lock_t *l1 = nullptr, *l2 = nullptr;
    ASSERT_EQ(e->lock_file(e, path.c_str(), &l1), TDB_OK);
    ASSERT_NE(l1, nullptr);
    EXPECT_EQ(e->lock_file(e, path.c_str(), &l2), TDB_ERR_LOCKED);
    EXPECT_EQ(l2, nullptr);
    EXPECT_TRUE(Contains(tdb_last_error(), path)) << tdb_last_error();
    // The same file under another spelling of its path.
    std::string alias = d.path() + "/./LOCK";
    EXPECT_EQ(e->lock_file(e, alias.c_str(), &l2), TDB_ERR_LOCKED);
    // A refused attempt must not have released the holder's lock.
    EXPECT_EQ(e->lock_file(e, path.c_str(), &l2), TDB_ERR_LOCKED);
    // A different file is independent.
    env_lock_t *other = nullptr;
    ASSERT_EQ(e->lock_file(e, d.file("LOCK2").c_str(), &other), TDB_OK);
    ASSERT_EQ(e->unlock_file(e, other), TDB_OK);
    ASSERT_EQ(e->unlock_file(e, l1), TDB_OK);
    ASSERT_EQ(e->lock_file(e, path.c_str(), &l2), TDB_OK);
    ASSERT_EQ(e->unlock_file(e, l2), TDB_OK);
    EXPECT_EQ(e->lock_file(e, d.file("no/dir/LOCK").c_str(), &l2), TDB_ERR_NOT_FOUND);
}

// A held lock file renamed away is still locked under its new name, and a
// new file at the old path is a different file, locked independently (a
// checkpoint's staging directory renamed to its target while another
// checkpoint creates a new staging directory of the same name).
TEST(Env, LockFollowsTheFileNotItsOldPath) {
    TempDir d;
    env_t *e = env_posix();
    ASSERT_EQ(e->mkdir(e, d.file("staging").c_str()), TDB_OK);
    env_lock_t *held = nullptr, *fresh = nullptr, *again = nullptr;
    ASSERT_EQ(e->lock_file(e, d.file("staging/LOCK").c_str(), &held), TDB_OK);
    ASSERT_EQ(e->rename(e, d.file("staging").c_str(), d.file("target").c_str()), TDB_OK);
    EXPECT_EQ(e->lock_file(e, d.file("target/LOCK").c_str(), &again), TDB_ERR_LOCKED);
    ASSERT_EQ(e->mkdir(e, d.file("staging").c_str()), TDB_OK);
    ASSERT_EQ(e->lock_file(e, d.file("staging/LOCK").c_str(), &fresh), TDB_OK) << tdb_last_error();
    EXPECT_EQ(e->lock_file(e, d.file("staging/LOCK").c_str(), &again), TDB_ERR_LOCKED);
    ASSERT_EQ(e->unlock_file(e, fresh), TDB_OK);
    ASSERT_EQ(e->unlock_file(e, held), TDB_OK);
}

TEST(Env, LockHeldByForkedChildIsLocked) {
    TempDir d;
    env_t *e = env_posix();
    std::string path = d.file("LOCK");
    int up[2], down[2];  // child -> parent "locked", parent -> child "release"
    ASSERT_EQ(pipe(up), 0);
    ASSERT_EQ(pipe(down), 0);
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        close(up[0]);
        close(down[1]);
        env_lock_t *l = nullptr;
        char c = e->lock_file(e, path.c_str(), &l) == TDB_OK ? 'L' : 'E';
        if (write(up[1], &c, 1) != 1) _exit(2);
        if (read(down[0], &c, 1) != 1) _exit(3);
        _exit(c == 'L' || c == 'r' ? 0 : 4);
    }
    close(up[1]);
    close(down[0]);
    char c = 0;
    ASSERT_EQ(read(up[0], &c, 1), 1);
    ASSERT_EQ(c, 'L');
    env_lock_t *l = nullptr;
    EXPECT_EQ(e->lock_file(e, path.c_str(), &l), TDB_ERR_LOCKED);
    EXPECT_EQ(l, nullptr);
    EXPECT_TRUE(Contains(tdb_last_error(), path)) << tdb_last_error();
    c = 'r';
    ASSERT_EQ(write(down[1], &c, 1), 1);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    close(up[0]);
    close(down[1]);
    // The child's exit released its lock.
    ASSERT_EQ(e->lock_file(e, path.c_str(), &l), TDB_OK);
    ASSERT_EQ(e->unlock_file(e, l), TDB_OK);
}

TEST(Env, NowMicrosIsMonotonic) {
    env_t *e = env_posix();
    uint64_t a = e->now_micros(e);
    usleep(2000);
    uint64_t b = e->now_micros(e);
    EXPECT_GE(b, a + 1000);
    EXPECT_LT(b, a + 10000000);
}
