// Database-level tests through the public API only: writes, reads, deletes,
// batches across column families, iterators against a reference map,
// snapshots, TTL, flush/compaction, reopen, and misuse.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <unistd.h>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "db_fixture.h"
#include "manifest_testutil.h"
#include "testutil.h"
#include "tidesdb/tidesdb.h"

extern "C" {
#include "env/env.h"
#include "util/checksum.h"
#include "util/coding.h"
#include "util/ikey.h"
#include "wal/wal.h"
}

using tdbtest::Key;
using tdbtest::TempDir;
using tdbtest::Value;

namespace {

using tdbtest::SmallDbConfig;

class DbTest : public tdbtest::DbFixture {
  protected:
    // All (key, value) pairs via a forward scan.
    std::vector<std::pair<std::string, std::string>> Scan(tdb_cf_t *cf = nullptr, const tdb_snapshot_t *snap = nullptr) {
        tdb_iter_t *it;
        EXPECT_EQ(tdb_iter_create(db_, cf ? cf : cf_, snap, &it), TDB_OK);
        std::vector<std::pair<std::string, std::string>> out;
        for (tdb_iter_seek_to_first(it); tdb_iter_valid(it); tdb_iter_next(it)) {
            size_t kl, vl;
            const char *k = (const char *)tdb_iter_key(it, &kl);
            const char *v = (const char *)tdb_iter_value(it, &vl);
            out.emplace_back(std::string(k, kl), std::string(v, vl));
        }
        EXPECT_EQ(tdb_iter_status(it), TDB_OK);
        tdb_iter_destroy(it);
        return out;
    }
};

TEST_F(DbTest, PutGetDeleteOverwrite) {
    EXPECT_EQ(Get("a"), "NOT_FOUND");
    ASSERT_EQ(Put("a", "1"), TDB_OK);
    ASSERT_EQ(Put("b", "2"), TDB_OK);
    EXPECT_EQ(Get("a"), "1");
    ASSERT_EQ(Put("a", "3"), TDB_OK);
    EXPECT_EQ(Get("a"), "3");
    ASSERT_EQ(Del("a"), TDB_OK);
    EXPECT_EQ(Get("a"), "NOT_FOUND");
    EXPECT_EQ(Get("b"), "2");
    ASSERT_EQ(Put("empty", ""), TDB_OK);
    EXPECT_EQ(Get("empty"), "");
}

TEST_F(DbTest, BadInputGetsClearErrors) {
    EXPECT_EQ(tdb_put(db_, cf_, "", 0, "v", 1, 0), TDB_ERR_INVALID_ARG);
    EXPECT_EQ(tdb_put(db_, cf_, nullptr, 3, "v", 1, 0), TDB_ERR_INVALID_ARG);
    std::string big(TDB_MAX_KEY_SIZE + 1, 'k');
    EXPECT_EQ(tdb_put(db_, cf_, big.data(), big.size(), "v", 1, 0), TDB_ERR_TOO_LARGE);
    EXPECT_EQ(tdb_put(db_, nullptr, "k", 1, "v", 1, 0), TDB_ERR_INVALID_ARG);
    EXPECT_EQ(tdb_put(db_, cf_, "k", 1, "v", 1, -5), TDB_ERR_INVALID_ARG);
    void *v = &v;  // a failed get leaves nothing to free: NULL and 0
    size_t n = 7;
    EXPECT_EQ(tdb_get(db_, cf_, nullptr, "", 0, &v, &n), TDB_ERR_INVALID_ARG);
    EXPECT_EQ(v, nullptr);
    EXPECT_EQ(n, 0u);
    v = &v, n = 7;
    EXPECT_EQ(tdb_get(db_, cf_, nullptr, "absent", 6, &v, &n), TDB_ERR_NOT_FOUND);
    EXPECT_EQ(v, nullptr);
    EXPECT_EQ(n, 0u);
    EXPECT_EQ(tdb_get(db_, cf_, nullptr, "k", 1, nullptr, &n), TDB_ERR_INVALID_ARG);
    tdb_cf_t *missing;
    EXPECT_EQ(tdb_get_cf(db_, "nope", &missing), TDB_ERR_NOT_FOUND);
    EXPECT_EQ(tdb_drop_cf(db_, TDB_DEFAULT_CF), TDB_ERR_INVALID_ARG);
    EXPECT_EQ(tdb_drop_cf(db_, "nope"), TDB_ERR_NOT_FOUND);
    tdb_cf_config_t bad;
    tdb_cf_config_default(&bad);
    bad.compression = 42;
    EXPECT_EQ(tdb_create_cf(db_, "x", &bad, nullptr), TDB_ERR_INVALID_ARG);
    tdb_cf_config_default(&bad);
    bad.bloom_fpr = 1.5;
    EXPECT_EQ(tdb_create_cf(db_, "x", &bad, nullptr), TDB_ERR_INVALID_ARG);
    EXPECT_EQ(tdb_create_cf(db_, "", nullptr, nullptr), TDB_ERR_INVALID_ARG);
    EXPECT_STRNE(tdb_last_error(), "");
}

// The background threads carry names (for top, perf and gdb): as many
// flush and compaction workers as configured, and the WAL's sync thread.
TEST_F(DbTest, BackgroundThreadsAreNamed) {
    std::map<std::string, int> names;
    for (auto &t : std::filesystem::directory_iterator("/proc/self/task")) {
        std::ifstream f(t.path() / "comm");
        std::string n;
        std::getline(f, n);
        names[n]++;
    }
    EXPECT_GE(names["tdb-flush"], cfg_.flush_threads);
    EXPECT_GE(names["tdb-compact"], cfg_.compaction_threads);
    EXPECT_GE(names["tdb-wal-sync"], 1);
}

TEST_F(DbTest, SecondOpenIsLocked) {
    tdb_t *other = nullptr;
    EXPECT_EQ(tdb_open(dir_.path().c_str(), &cfg_, &other), TDB_ERR_LOCKED);
    EXPECT_EQ(other, nullptr);
}

TEST_F(DbTest, OpenMissingWithoutCreateFails) {
    TempDir d;
    tdb_config_t c = SmallDbConfig();
    c.create_if_missing = 0;
    tdb_t *x = nullptr;
    EXPECT_EQ(tdb_open((d.path() + "/sub").c_str(), &c, &x), TDB_ERR_NOT_FOUND);
    c.create_if_missing = 1;
    c.error_if_exists = 1;
    EXPECT_EQ(tdb_open(dir_.path().c_str(), &c, &x), TDB_ERR_LOCKED);
}

TEST_F(DbTest, ColumnFamiliesAreIsolatedAndPersist) {
    tdb_cf_t *users, *orders;
    ASSERT_EQ(tdb_create_cf(db_, "users", nullptr, &users), TDB_OK);
    ASSERT_EQ(tdb_create_cf(db_, "orders", nullptr, &orders), TDB_OK);
    EXPECT_EQ(tdb_create_cf(db_, "users", nullptr, nullptr), TDB_ERR_EXISTS);
    ASSERT_EQ(Put("k", "u", users), TDB_OK);
    ASSERT_EQ(Put("k", "o", orders), TDB_OK);
    EXPECT_EQ(Get("k"), "NOT_FOUND");
    EXPECT_EQ(Get("k", users), "u");
    EXPECT_EQ(Get("k", orders), "o");
    char **names;
    size_t n;
    ASSERT_EQ(tdb_list_cfs(db_, &names, &n), TDB_OK);
    EXPECT_EQ(n, 3u);
    for (size_t i = 0; i < n; i++) tdb_free(names[i]);
    tdb_free(names);
    ASSERT_EQ(tdb_drop_cf(db_, "orders"), TDB_OK);
    EXPECT_EQ(tdb_put(db_, orders, "k", 1, "v", 1, 0), TDB_ERR_CLOSED);
    void *v;
    size_t vl;
    EXPECT_EQ(tdb_get(db_, orders, nullptr, "k", 1, &v, &vl), TDB_ERR_CLOSED);
    Reopen();
    ASSERT_EQ(tdb_get_cf(db_, "users", &users), TDB_OK);
    EXPECT_EQ(Get("k", users), "u");
    EXPECT_EQ(tdb_get_cf(db_, "orders", &orders), TDB_ERR_NOT_FOUND);
    // A new family with the dropped name starts empty.
    ASSERT_EQ(tdb_create_cf(db_, "orders", nullptr, &orders), TDB_OK);
    EXPECT_EQ(Get("k", orders), "NOT_FOUND");
}

// Regression: tdb_drop_cf waited for a running flush of the family while
// holding manifest_mu, which that flush takes to discard its output: both
// waited forever (seen as a hung DROP TABLE in TideSQL, where the unified
// memtable flushes every family at once). Each round drops a family while
// its queued memtables are being flushed; a hang fails the test.
TEST_F(DbTest, DropFamilyWhileItsFlushRunsDoesNotHang) {
    tdb_cf_config_t small;
    tdb_cf_config_default(&small);
    small.write_buffer_size = 64 << 10;
    small.sync_mode = TDB_SYNC_NONE;
    small.l0_queue_stall_threshold = 64;
    const std::string val(200, 'v');
    for (int round = 0; round < 40; round++) {
        std::string name = "f" + std::to_string(round);
        tdb_cf_t *f;
        ASSERT_EQ(tdb_create_cf(db_, name.c_str(), &small, &f), TDB_OK);
        for (int i = 0; i < 2000; i++) ASSERT_EQ(Put(Key(i), val, f), TDB_OK);
        auto done = std::make_shared<std::atomic<int>>(1);
        std::thread t([this, name, done] { done->store(tdb_drop_cf(db_, name.c_str())); });
        auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        while (done->load() == 1 && std::chrono::steady_clock::now() < until)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        if (done->load() == 1) {
            ADD_FAILURE() << "tdb_drop_cf of '" << name << "' still blocked after 60 s (deadlock with its flush)";
            fflush(stdout);
            _exit(1); /* the blocked threads cannot be joined */
        }
        t.join();
        ASSERT_EQ(done->load(), TDB_OK) << tdb_last_error();
    }
    ASSERT_EQ(tdb_wait_idle(db_), TDB_OK);
}

TEST_F(DbTest, BatchIsAtomicAcrossFamilies) {
    tdb_cf_t *a;
    ASSERT_EQ(tdb_create_cf(db_, "a", nullptr, &a), TDB_OK);
    tdb_batch_t *b;
    ASSERT_EQ(tdb_batch_create(&b), TDB_OK);
    ASSERT_EQ(tdb_batch_put(b, cf_, "x", 1, "1", 1, 0), TDB_OK);
    ASSERT_EQ(tdb_batch_put(b, a, "y", 1, "2", 1, 0), TDB_OK);
    ASSERT_EQ(tdb_batch_delete(b, cf_, "x", 1), TDB_OK);
    ASSERT_EQ(tdb_batch_put(b, cf_, "z", 1, "3", 1, 0), TDB_OK);
    EXPECT_EQ(tdb_batch_count(b), 4u);
    // An invalid entry is rejected without changing the batch.
    EXPECT_EQ(tdb_batch_put(b, cf_, "", 0, "3", 1, 0), TDB_ERR_INVALID_ARG);
    EXPECT_EQ(tdb_batch_count(b), 4u);
    ASSERT_EQ(tdb_write(db_, b), TDB_OK);
    tdb_batch_destroy(b);
    EXPECT_EQ(Get("x"), "NOT_FOUND"); // later op in the batch wins
    EXPECT_EQ(Get("y", a), "2");
    EXPECT_EQ(Get("z"), "3");
}

TEST_F(DbTest, TtlExpires) {
    ASSERT_EQ(tdb_put(db_, cf_, "t", 1, "v", 1, 1), TDB_OK);
    ASSERT_EQ(Put("keep", "v"), TDB_OK);
    EXPECT_EQ(Get("t"), "v");
    std::this_thread::sleep_for(std::chrono::milliseconds(2100));
    EXPECT_EQ(Get("t"), "NOT_FOUND");
    auto all = Scan();
    ASSERT_EQ(all.size(), 1u);
    EXPECT_EQ(all[0].first, "keep");
    ASSERT_EQ(tdb_compact(db_, cf_), TDB_OK);
    EXPECT_EQ(Get("t"), "NOT_FOUND");
    EXPECT_EQ(Get("keep"), "v");
}

TEST_F(DbTest, SnapshotsPinVersionsThroughCompaction) {
    ASSERT_EQ(Put("k", "old"), TDB_OK);
    ASSERT_EQ(Put("gone", "x"), TDB_OK);
    tdb_snapshot_t *s = tdb_snapshot_create(db_);
    ASSERT_NE(s, nullptr);
    ASSERT_EQ(Put("k", "new"), TDB_OK);
    ASSERT_EQ(Del("gone"), TDB_OK);
    ASSERT_EQ(Put("later", "y"), TDB_OK);
    ASSERT_EQ(tdb_compact(db_, cf_), TDB_OK);
    EXPECT_EQ(Get("k"), "new");
    EXPECT_EQ(Get("k", nullptr, s), "old");
    EXPECT_EQ(Get("gone", nullptr, s), "x");
    EXPECT_EQ(Get("gone"), "NOT_FOUND");
    EXPECT_EQ(Get("later", nullptr, s), "NOT_FOUND");
    auto snap_view = Scan(nullptr, s);
    ASSERT_EQ(snap_view.size(), 2u);
    EXPECT_EQ(snap_view[0], std::make_pair(std::string("gone"), std::string("x")));
    EXPECT_EQ(snap_view[1], std::make_pair(std::string("k"), std::string("old")));
    tdb_snapshot_release(db_, s);
    ASSERT_EQ(tdb_compact(db_, cf_), TDB_OK);
    EXPECT_EQ(Get("k"), "new");
}

TEST_F(DbTest, IteratorIsPointInTime) {
    for (int i = 0; i < 100; i++) ASSERT_EQ(Put(Key(i), Value(i, 20)), TDB_OK);
    tdb_iter_t *it;
    ASSERT_EQ(tdb_iter_create(db_, cf_, nullptr, &it), TDB_OK);
    for (int i = 0; i < 100; i += 2) ASSERT_EQ(Del(Key(i)), TDB_OK);
    ASSERT_EQ(Put(Key(1000), "new"), TDB_OK);
    ASSERT_EQ(tdb_flush(db_, cf_), TDB_OK);
    int n = 0;
    for (tdb_iter_seek_to_first(it); tdb_iter_valid(it); tdb_iter_next(it)) n++;
    EXPECT_EQ(n, 100);
    tdb_iter_destroy(it);
    EXPECT_EQ(Scan().size(), 51u);
}

// Hot keys with many versions: a forward scan steps over a few versions of
// a key, then seeks past the rest (older ones) or to the newest it may see
// (versions newer than its snapshot). Every visible value must still be the
// right one, in the memtable and in tables, deleted keys stay hidden.
TEST_F(DbTest, ScanOverManyVersionsSeesTheRightVersion) {
    const int keys = 20, versions = 60;
    tdb_snapshot_t *snap = nullptr;
    for (int v = 0; v < versions; v++) {
        for (int k = 0; k < keys; k++) ASSERT_EQ(Put(Key(k), "v" + std::to_string(v) + "k" + std::to_string(k)), TDB_OK);
        if (v == 24) snap = tdb_snapshot_create(db_); // sees version 24 of every key
    }
    for (int k = 0; k < keys; k += 5) ASSERT_EQ(Del(Key(k)), TDB_OK); // deleted after the snapshot
    for (int round = 0; round < 2; round++) {
        auto latest = Scan();
        ASSERT_EQ(latest.size(), (size_t)(keys - keys / 5)) << "round " << round;
        size_t at = 0;
        for (int k = 0; k < keys && at < latest.size(); k++) {
            if (k % 5 == 0) continue; // deleted
            EXPECT_EQ(latest[at].first, Key(k));
            EXPECT_EQ(latest[at].second, "v" + std::to_string(versions - 1) + "k" + std::to_string(k));
            at++;
        }
        auto old = Scan(nullptr, snap);
        ASSERT_EQ(old.size(), (size_t)keys) << "round " << round;
        for (int k = 0; k < keys; k++) {
            EXPECT_EQ(old[k].first, Key(k));
            EXPECT_EQ(old[k].second, "v24k" + std::to_string(k)) << "snapshot read of " << Key(k);
        }
        // Seeking into the middle of a hot key's versions lands on the key.
        tdb_iter_t *it;
        ASSERT_EQ(tdb_iter_create(db_, cf_, snap, &it), TDB_OK);
        std::string k7 = Key(7);
        tdb_iter_seek(it, k7.data(), k7.size());
        ASSERT_TRUE(tdb_iter_valid(it));
        size_t vl;
        const char *v = (const char *)tdb_iter_value(it, &vl);
        EXPECT_EQ(std::string(v, vl), "v24k7");
        tdb_iter_next(it);
        ASSERT_TRUE(tdb_iter_valid(it));
        size_t kl;
        const char *k = (const char *)tdb_iter_key(it, &kl);
        EXPECT_EQ(std::string(k, kl), Key(8));
        tdb_iter_destroy(it);
        ASSERT_EQ(tdb_flush(db_, cf_), TDB_OK); // round 2: the same from a table
        ASSERT_EQ(tdb_wait_idle(db_), TDB_OK);
    }
    tdb_snapshot_release(db_, snap);
}

// Random operations with flushes and compactions, checked against std::map
// with forward, backward, seek and seek_for_prev.
TEST_F(DbTest, RandomOpsMatchReferenceModel) {
    std::mt19937_64 rng(42);
    std::map<std::string, std::string> ref;
    for (int round = 0; round < 6; round++) {
        for (int i = 0; i < 8000; i++) {
            uint64_t k = rng() % 5000;
            int op = (int)(rng() % 10);
            std::string key = Key(k);
            if (op < 7) {
                std::string v = Value(rng(), 10 + rng() % 200 + (rng() % 50 == 0 ? 3000 : 0));
                ASSERT_EQ(Put(key, v), TDB_OK);
                ref[key] = v;
            } else {
                ASSERT_EQ(Del(key), TDB_OK);
                ref.erase(key);
            }
        }
        if (round == 2) {
            ASSERT_EQ(tdb_flush(db_, cf_), TDB_OK);
        }
        if (round == 4) {
            ASSERT_EQ(tdb_compact(db_, cf_), TDB_OK);
        }
        if (round == 3) Reopen();
        auto all = Scan();
        ASSERT_EQ(all.size(), ref.size()) << "round " << round;
        auto rit = ref.begin();
        for (auto &kv : all) {
            ASSERT_EQ(kv.first, rit->first);
            ASSERT_EQ(kv.second, rit->second);
            ++rit;
        }
        // Backward.
        tdb_iter_t *it;
        ASSERT_EQ(tdb_iter_create(db_, cf_, nullptr, &it), TDB_OK);
        auto back = ref.rbegin();
        for (tdb_iter_seek_to_last(it); tdb_iter_valid(it); tdb_iter_prev(it), ++back) {
            size_t kl;
            const char *k = (const char *)tdb_iter_key(it, &kl);
            ASSERT_NE(back, ref.rend());
            ASSERT_EQ(std::string(k, kl), back->first);
        }
        EXPECT_EQ(back, ref.rend());
        // Seeks with direction changes.
        for (int s = 0; s < 300; s++) {
            std::string target = Key(rng() % 5100);
            bool for_prev = rng() % 2;
            if (for_prev) tdb_iter_seek_for_prev(it, target.data(), target.size());
            else tdb_iter_seek(it, target.data(), target.size());
            auto expect = ref.lower_bound(target);
            if (for_prev) {
                expect = ref.upper_bound(target);
                expect = expect == ref.begin() ? ref.end() : std::prev(expect);
            }
            for (int step = 0; step < 5; step++) {
                if (expect == ref.end()) {
                    ASSERT_FALSE(tdb_iter_valid(it));
                    break;
                }
                ASSERT_TRUE(tdb_iter_valid(it));
                size_t kl, vl;
                const char *k = (const char *)tdb_iter_key(it, &kl);
                const char *v = (const char *)tdb_iter_value(it, &vl);
                ASSERT_EQ(std::string(k, kl), expect->first);
                ASSERT_EQ(std::string(v, vl), expect->second);
                if (rng() % 2) {
                    tdb_iter_next(it);
                    ++expect;
                } else {
                    tdb_iter_prev(it);
                    expect = expect == ref.begin() ? ref.end() : std::prev(expect);
                }
            }
        }
        tdb_iter_destroy(it);
        for (int i = 0; i < 500; i++) {
            std::string key = Key(rng() % 5000);
            auto f = ref.find(key);
            ASSERT_EQ(Get(key), f == ref.end() ? "NOT_FOUND" : f->second);
        }
    }
}

TEST_F(DbTest, ConcurrentWritersAndReaders) {
    const int kThreads = 4, kPer = 20000;
    std::vector<std::thread> ts;
    for (int t = 0; t < kThreads; t++) {
        ts.emplace_back([&, t] {
            for (int i = 0; i < kPer; i++) {
                std::string k = Key((uint64_t)t * kPer + i);
                ASSERT_EQ(Put(k, Value(i, 50)), TDB_OK);
                if (i % 7 == 0) {
                    std::string got = Get(k);
                    ASSERT_EQ(got, Value(i, 50));
                }
            }
        });
    }
    for (auto &t : ts) t.join();
    ASSERT_EQ(tdb_wait_idle(db_), TDB_OK);
    EXPECT_EQ(Scan().size(), (size_t)(kThreads * kPer));
    tdb_stats_t st;
    ASSERT_EQ(tdb_get_stats(db_, nullptr, &st), TDB_OK);
    EXPECT_GT(st.flushes, 0u);
    EXPECT_GT(st.wal_bytes_written, 0u);
    EXPECT_GT(st.flush_bytes_written, 0u);
    EXPECT_EQ(st.last_sequence, (uint64_t)(kThreads * kPer));
}

TEST_F(DbTest, CompactionKeepsTreeBoundedAndDropsTombstones) {
    for (int round = 0; round < 5; round++)
        for (int i = 0; i < 10000; i++) ASSERT_EQ(Put(Key(i), Value(i + round, 100)), TDB_OK);
    for (int i = 0; i < 10000; i++) ASSERT_EQ(Del(Key(i)), TDB_OK);
    ASSERT_EQ(tdb_wait_idle(db_), TDB_OK);
    tdb_stats_t st;
    ASSERT_EQ(tdb_get_stats(db_, cf_, &st), TDB_OK);
    EXPECT_LT(st.levels[1].files, (uint64_t)cfg_.default_cf.l1_file_count_trigger * 2);
    ASSERT_EQ(tdb_compact(db_, cf_), TDB_OK);
    ASSERT_EQ(tdb_get_stats(db_, cf_, &st), TDB_OK);
    uint64_t files = 0;
    for (int l = 1; l < TDB_MAX_LEVELS; l++) files += st.levels[l].files;
    EXPECT_EQ(files, 0u) << "all data deleted: bottom-level compaction drops every tombstone";
    EXPECT_EQ(Scan().size(), 0u);
    EXPECT_GT(st.compactions, 0u);
}

TEST_F(DbTest, LargeValuesRoundTrip) {
    std::map<std::string, std::string> ref;
    for (int i = 0; i < 300; i++) {
        std::string v = Value(i, (size_t)(i % 3 == 0 ? 64 << 10 : 4096));
        ASSERT_EQ(Put(Key(i), v), TDB_OK);
        ref[Key(i)] = v;
    }
    ASSERT_EQ(tdb_compact(db_, cf_), TDB_OK);
    Reopen();
    for (auto &kv : ref) ASSERT_EQ(Get(kv.first), kv.second);
    EXPECT_EQ(Scan().size(), ref.size());
}

TEST_F(DbTest, ReopenReplaysWalWithoutFlush) {
    cfg_.default_cf.write_buffer_size = 64 << 20;
    Reopen();
    for (int i = 0; i < 5000; i++) ASSERT_EQ(Put(Key(i), Value(i)), TDB_OK);
    for (int i = 0; i < 5000; i += 3) ASSERT_EQ(Del(Key(i)), TDB_OK);
    Reopen();
    for (int i = 0; i < 5000; i++) ASSERT_EQ(Get(Key(i)), i % 3 == 0 ? "NOT_FOUND" : Value(i));
    Reopen();  // second reopen: recovered data now lives in tables
    for (int i = 0; i < 5000; i++) ASSERT_EQ(Get(Key(i)), i % 3 == 0 ? "NOT_FOUND" : Value(i));
    tdb_stats_t st;
    ASSERT_EQ(tdb_get_stats(db_, cf_, &st), TDB_OK);
    EXPECT_EQ(st.last_sequence, 5000u + 1667u);
}

// A WAL record spends 8 bytes on its frame and, for a batch numbered right
// after the log's previous one, 2 on the batch header (sequence delta and
// count), so a 16-byte key / 100-byte value put costs 8 + 2 + 3 + 116 bytes
// (type, key and value lengths; the default family needs no id byte).
// Records from concurrent writers (direct lane and groups, in any sequence
// order) all replay with their own sequence numbers.
TEST_F(DbTest, WalRecordsCarryACompactHeaderAndReplay) {
    cfg_.default_cf.write_buffer_size = 64 << 20;
    Reopen();
    auto key = [](int t, int i) {
        char k[32];
        snprintf(k, sizeof k, "t%02dk%012d", t, i);
        return std::string(k);  // 16 bytes
    };
    auto val = [](int t, int i) { return std::string(100, (char)('a' + (t * 7 + i) % 26)); };
    tdb_stats_t before, after;
    ASSERT_EQ(tdb_get_stats(db_, cf_, &before), TDB_OK);
    const int n = 2000;
    for (int i = 0; i < n; i++) ASSERT_EQ(Put(key(0, i), val(0, i)), TDB_OK);
    ASSERT_EQ(tdb_get_stats(db_, cf_, &after), TDB_OK);
    double per_put = (double)(after.wal_bytes_written - before.wal_bytes_written) / n;
    EXPECT_LE(per_put, 129.0 + 16.0 / n);  // + the first record's full sequence
    EXPECT_GE(per_put, 129.0);

    std::vector<std::thread> ts;
    for (int t = 1; t <= 3; t++)
        ts.emplace_back([&, t] {
            for (int i = 0; i < n; i++) {
                if (i % 50 == 0) {  // a batch of 20 as well
                    tdb_batch_t *b = nullptr;
                    ASSERT_EQ(tdb_batch_create(&b), TDB_OK);
                    for (int j = 0; j < 20; j++) {
                        std::string k = key(t + 10, i + j), v = val(t + 10, i + j);
                        ASSERT_EQ(tdb_batch_put(b, cf_, k.data(), k.size(), v.data(), v.size(), 0), TDB_OK);
                    }
                    ASSERT_EQ(tdb_write(db_, b), TDB_OK);
                    tdb_batch_destroy(b);
                }
                ASSERT_EQ(Put(key(t, i), val(t, i)), TDB_OK);
            }
        });
    for (auto &th : ts) th.join();
    ASSERT_EQ(tdb_get_stats(db_, cf_, &before), TDB_OK);
    Reopen();
    for (int t = 0; t <= 3; t++)
        for (int i = 0; i < n; i++) ASSERT_EQ(Get(key(t, i)), val(t, i)) << t << " " << i;
    for (int t = 11; t <= 13; t++)
        for (int i = 0; i < n; i += 50)
            for (int j = 0; j < 20; j++) ASSERT_EQ(Get(key(t, i + j)), val(t, i + j));
    ASSERT_EQ(tdb_get_stats(db_, cf_, &after), TDB_OK);
    EXPECT_EQ(after.last_sequence, before.last_sequence);
    EXPECT_EQ(after.last_sequence, (uint64_t)n * 4 + 3 * (n / 50) * 20);
}

// A database last written before the compact batch header (MANIFEST format
// 2, WAL payloads beginning with fixed64 seq | fixed32 count) still opens
// with every acknowledged write, and is then rewritten in the new format.
TEST_F(DbTest, WalOfTheFixedHeaderFormatReplays) {
    ASSERT_EQ(tdb_close(db_), TDB_OK);
    db_ = nullptr;
    namespace fs = std::filesystem;
    std::string log;
    for (auto &e : fs::directory_iterator(dir_.path()))
        if (e.path().extension() == ".log" && (log.empty() || e.path().string() > log)) log = e.path().string();
    ASSERT_FALSE(log.empty());
    // The old WAL: two records, the second with an entry of family 0 given
    // by an explicit id byte (the old entry layout).
    auto entry = [](const std::string &k, const std::string &v) {
        std::string e(1, (char)KT_PUT);
        char t[16];
        e.append(t, (size_t)(enc_varint32(t, 0) - t));
        e.append(t, (size_t)(enc_varint32(t, (uint32_t)k.size()) - t));
        e += k;
        e.append(t, (size_t)(enc_varint32(t, (uint32_t)v.size()) - t));
        return e + v;
    };
    auto record = [](uint64_t seq, uint32_t count, const std::string &entries) {
        char h[12];
        enc_fixed64(h, seq);
        enc_fixed32(h + 8, count);
        return std::string(h, 12) + entries;
    };
    std::string r1 = record(1, 2, entry("old-a", "1") + entry("old-b", "2"));
    std::string r2 = record(3, 1, entry("old-c", "3"));
    wal_writer_t *w = nullptr;
    ASSERT_EQ(wal_writer_open(env_posix(), log.c_str(), &w), TDB_OK) << tdb_last_error();
    slice_t recs[2] = {slice_make(r1.data(), r1.size()), slice_make(r2.data(), r2.size())};
    ASSERT_EQ(wal_writer_add(w, recs, 2), TDB_OK);
    ASSERT_EQ(wal_writer_close(w, 1), TDB_OK);
    // The MANIFEST as format 2 wrote it (positional options), from the
    // test-side encoder of the old formats.
    std::string man_path = dir_.path() + "/MANIFEST";
    std::string man;
    {
        std::ifstream in(man_path, std::ios::binary);
        man.assign(std::istreambuf_iterator<char>(in), {});
    }
    ASSERT_GT(man.size(), 16u);
    ASSERT_EQ(4u, dec_fixed32(man.data() + 8));
    manifest_t m;
    ASSERT_EQ(manifest_read(env_posix(), dir_.path().c_str(), &m, nullptr, nullptr), TDB_OK) << tdb_last_error();
    man = tdbtest::EncodeOldManifest(&m, 2);
    manifest_free(&m);
    {
        std::ofstream out(man_path, std::ios::binary | std::ios::trunc);
        out.write(man.data(), (std::streamsize)man.size());
    }
    Open();
    EXPECT_EQ(Get("old-a"), "1");
    EXPECT_EQ(Get("old-b"), "2");
    EXPECT_EQ(Get("old-c"), "3");
    tdb_stats_t st;
    ASSERT_EQ(tdb_get_stats(db_, cf_, &st), TDB_OK);
    EXPECT_EQ(st.last_sequence, 3u);
    ASSERT_EQ(Put("new-d", "4"), TDB_OK);
    Reopen();  // now the current format with a compact-header WAL
    {
        std::ifstream in(man_path, std::ios::binary);
        man.assign(std::istreambuf_iterator<char>(in), {});
    }
    EXPECT_EQ(4u, dec_fixed32(man.data() + 8));
    EXPECT_EQ(Get("old-a"), "1");
    EXPECT_EQ(Get("old-c"), "3");
    EXPECT_EQ(Get("new-d"), "4");
}

TEST_F(DbTest, StatsCountCacheAndLevels) {
    for (int i = 0; i < 20000; i++) ASSERT_EQ(Put(Key(i), Value(i)), TDB_OK);
    ASSERT_EQ(tdb_flush(db_, nullptr), TDB_OK);
    for (int i = 0; i < 2000; i++) ASSERT_EQ(Get(Key(i * 7 % 20000)), Value(i * 7 % 20000));
    tdb_stats_t st;
    ASSERT_EQ(tdb_get_stats(db_, nullptr, &st), TDB_OK);
    uint64_t files = 0;
    for (int l = 1; l < TDB_MAX_LEVELS; l++) files += st.levels[l].files;
    EXPECT_GT(files, 0u);
    EXPECT_GT(st.block_cache_hits + st.block_cache_misses, 0u);
    EXPECT_GE(st.user_bytes_written, 20000u * (16 + 100));
}

}  // namespace

namespace {

// Flip one byte of a file in place.
void FlipByte(const std::string &path, long offset) {
    FILE *f = fopen(path.c_str(), "r+b");
    ASSERT_NE(f, nullptr) << path;
    fseek(f, offset, offset < 0 ? SEEK_END : SEEK_SET);
    int c = fgetc(f);
    fseek(f, -1, SEEK_CUR);
    fputc(c ^ 0x5a, f);
    fclose(f);
}

// Bytes of a live log file up to its last non-zero byte: an open WAL is
// preallocated, so a copy of it (a crash image) ends in zeros.
uintmax_t WrittenSize(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    size_t n = data.size();
    while (n > 0 && data[n - 1] == 0) n--;
    return n;
}

std::vector<std::string> FilesWithSuffix(const std::string &dir, const std::string &suffix) {
    std::vector<std::string> out;
    for (auto &e : std::filesystem::directory_iterator(dir)) {
        std::string n = e.path().filename().string();
        if (n.size() > suffix.size() && n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0)
            out.push_back(e.path().string());
    }
    std::sort(out.begin(), out.end());
    return out;
}

class CorruptionTest : public DbTest {};

TEST_F(CorruptionTest, DamagedTableBlockIsReportedNotServed) {
    cfg_.block_cache_size = 0;  // every read goes to disk
    cfg_.default_cf.compression = TDB_COMPRESS_NONE;
    Reopen();
    for (int i = 0; i < 20000; i++) ASSERT_EQ(Put(Key(i), Value(i)), TDB_OK);
    ASSERT_EQ(tdb_compact(db_, cf_), TDB_OK);
    ASSERT_EQ(tdb_close(db_), TDB_OK);
    db_ = nullptr;
    auto ssts = FilesWithSuffix(dir_.path(), ".sst");
    ASSERT_FALSE(ssts.empty());
    FlipByte(ssts[0], 100);  // inside the first data block
    Open();
    int corrupt = 0, ok = 0;
    for (int i = 0; i < 20000; i++) {
        void *v;
        size_t n;
        std::string k = Key(i);
        int rc = tdb_get(db_, cf_, nullptr, k.data(), k.size(), &v, &n);
        if (rc == TDB_OK) {
            ASSERT_EQ(std::string((char *)v, n), Value(i)) << "silently wrong answer";
            tdb_free(v);
            ok++;
        } else {
            ASSERT_EQ(rc, TDB_ERR_CORRUPTION) << tdb_strerror(rc);
            EXPECT_NE(std::string(tdb_last_error()).find(".sst"), std::string::npos) << tdb_last_error();
            corrupt++;
        }
    }
    EXPECT_GT(corrupt, 0);
    EXPECT_GT(ok, 10000) << "data elsewhere stays readable";
    tdb_iter_t *it;
    ASSERT_EQ(tdb_iter_create(db_, cf_, nullptr, &it), TDB_OK);
    for (tdb_iter_seek_to_first(it); tdb_iter_valid(it); tdb_iter_next(it)) {
    }
    EXPECT_EQ(tdb_iter_status(it), TDB_ERR_CORRUPTION);
    tdb_iter_destroy(it);
}

TEST_F(CorruptionTest, DamagedManifestFailsOpen) {
    ASSERT_EQ(Put("a", "1"), TDB_OK);
    ASSERT_EQ(tdb_flush(db_, cf_), TDB_OK);
    ASSERT_EQ(tdb_close(db_), TDB_OK);
    db_ = nullptr;
    FlipByte(dir_.file("MANIFEST"), 20);
    tdb_t *x = nullptr;
    EXPECT_EQ(tdb_open(dir_.path().c_str(), &cfg_, &x), TDB_ERR_CORRUPTION);
    EXPECT_EQ(x, nullptr);
    FlipByte(dir_.file("MANIFEST"), 20);  // repair: opens again
    Open();
    EXPECT_EQ(Get("a"), "1");
}

TEST_F(CorruptionTest, MissingManifestWithDataFailsOpen) {
    ASSERT_EQ(Put("a", "1"), TDB_OK);
    ASSERT_EQ(tdb_close(db_), TDB_OK);
    db_ = nullptr;
    std::filesystem::remove(dir_.file("MANIFEST"));
    tdb_t *x = nullptr;
    EXPECT_EQ(tdb_open(dir_.path().c_str(), &cfg_, &x), TDB_ERR_CORRUPTION);
}

TEST_F(CorruptionTest, WalMiddleCorruptionFailsOpenTornTailDoesNot) {
    cfg_.default_cf.write_buffer_size = 64 << 20;
    Reopen();
    for (int i = 0; i < 1000; i++) ASSERT_EQ(Put(Key(i), Value(i)), TDB_OK);
    // Simulate a crash: copy the directory while the db is open (WAL unflushed).
    TempDir crashed;
    for (auto &e : std::filesystem::directory_iterator(dir_.path()))
        if (e.path().filename() != "LOCK") std::filesystem::copy(e.path(), crashed.path() + "/" + e.path().filename().string());
    auto wals = FilesWithSuffix(crashed.path(), ".log");
    ASSERT_EQ(wals.size(), 1u);
    // The copy ends in the log's preallocated zeros; opening it as is
    // recovers everything (zeros are a torn tail, not damage).
    uintmax_t written = WrittenSize(wals[0]);
    EXPECT_GE(std::filesystem::file_size(wals[0]), written);
    {
        TempDir zeros;
        for (auto &e : std::filesystem::directory_iterator(crashed.path()))
            std::filesystem::copy(e.path(), zeros.path() + "/" + e.path().filename().string());
        tdb_t *z = nullptr;
        ASSERT_EQ(tdb_open(zeros.path().c_str(), &cfg_, &z), TDB_OK) << tdb_last_error();
        tdb_cf_t *zc;
        ASSERT_EQ(tdb_get_cf(z, TDB_DEFAULT_CF, &zc), TDB_OK);
        std::string kl = Key(999);
        void *zv;
        size_t zn;
        EXPECT_EQ(tdb_get(z, zc, nullptr, kl.data(), kl.size(), &zv, &zn), TDB_OK);
        tdb_free(zv);
        ASSERT_EQ(tdb_close(z), TDB_OK);
    }
    // Torn tail: cut the last record in half.
    std::filesystem::resize_file(wals[0], written - 60);
    tdb_t *x = nullptr;
    ASSERT_EQ(tdb_open(crashed.path().c_str(), &cfg_, &x), TDB_OK) << tdb_last_error();
    tdb_cf_t *c;
    ASSERT_EQ(tdb_get_cf(x, TDB_DEFAULT_CF, &c), TDB_OK);
    void *v;
    size_t n;
    std::string k0 = Key(0), klast = Key(999);
    EXPECT_EQ(tdb_get(x, c, nullptr, k0.data(), k0.size(), &v, &n), TDB_OK);
    tdb_free(v);
    EXPECT_EQ(tdb_get(x, c, nullptr, klast.data(), klast.size(), &v, &n), TDB_ERR_NOT_FOUND);
    ASSERT_EQ(tdb_close(x), TDB_OK);
    // Middle corruption in a second crash image.
    TempDir crashed2;
    for (auto &e : std::filesystem::directory_iterator(dir_.path()))
        if (e.path().filename() != "LOCK") std::filesystem::copy(e.path(), crashed2.path() + "/" + e.path().filename().string());
    wals = FilesWithSuffix(crashed2.path(), ".log");
    FlipByte(wals[0], 5000);
    EXPECT_EQ(tdb_open(crashed2.path().c_str(), &cfg_, &x), TDB_ERR_CORRUPTION);
    EXPECT_NE(std::string(tdb_last_error()).find(".log"), std::string::npos) << tdb_last_error();
}

}  // namespace

namespace {

// Unified mode: one write buffer shared by every family, switched together.
TEST(Unified, FamiliesShareOneWriteBufferAndRecover) {
    tdbtest::TempDir dir;
    tdb_config_t c = SmallDbConfig();
    c.unified_memtable = 1;
    c.unified_memtable_write_buffer_size = 512 << 10;
    c.unified_memtable_sync_mode = TDB_SYNC_NONE;
    c.default_cf.write_buffer_size = 64 << 20;  // ignored in unified mode
    tdb_t *db;
    ASSERT_EQ(tdb_open(dir.path().c_str(), &c, &db), TDB_OK) << tdb_last_error();
    std::vector<tdb_cf_t *> cfs;
    for (int i = 0; i < 20; i++) {
        tdb_cf_t *cf;
        tdb_cf_config_t cc = c.default_cf;
        ASSERT_EQ(tdb_create_cf(db, ("t" + std::to_string(i)).c_str(), &cc, &cf), TDB_OK);
        cfs.push_back(cf);
    }
    tdb_batch_t *b;
    ASSERT_EQ(tdb_batch_create(&b), TDB_OK);
    for (int i = 0; i < 20000; i++) {
        std::string k = Key(i), v = Value(i, 60);
        // One batch row touches three families: atomic as one WAL record.
        for (int j = 0; j < 3; j++)
            ASSERT_EQ(tdb_batch_put(b, cfs[(i + j * 7) % 20], k.data(), k.size(), v.data(), v.size(), 0), TDB_OK);
        ASSERT_EQ(tdb_write(db, b), TDB_OK);
        tdb_batch_clear(b);
    }
    tdb_batch_destroy(b);
    tdb_stats_t st;
    ASSERT_EQ(tdb_wait_idle(db), TDB_OK);
    ASSERT_EQ(tdb_get_stats(db, nullptr, &st), TDB_OK);
    // ~7 MB written through a 512 KiB shared buffer: many flushes, and no
    // family's memtable grew toward its own (ignored) 64 MiB buffer.
    EXPECT_GT(st.flushes, 10u);
    EXPECT_LT(st.memtable_bytes, 4u << 20);
    ASSERT_EQ(tdb_close(db), TDB_OK);
    ASSERT_EQ(tdb_open(dir.path().c_str(), &c, &db), TDB_OK);
    for (int i = 0; i < 20000; i += 37) {
        std::string k = Key(i);
        for (int j = 0; j < 3; j++) {
            tdb_cf_t *cf;
            ASSERT_EQ(tdb_get_cf(db, ("t" + std::to_string((i + j * 7) % 20)).c_str(), &cf), TDB_OK);
            void *v;
            size_t n;
            ASSERT_EQ(tdb_get(db, cf, nullptr, k.data(), k.size(), &v, &n), TDB_OK);
            EXPECT_EQ(std::string((char *)v, n), Value(i, 60));
            tdb_free(v);
        }
    }
    ASSERT_EQ(tdb_close(db), TDB_OK);
}

// mmap_reads changes how table blocks are read, never what is read.
TEST(MmapReads, SameAnswersEitherWayAndBadValueRejected) {
    tdbtest::TempDir dir;
    tdb_config_t c = SmallDbConfig();
    c.block_cache_size = 64 << 10;  // far smaller than the data: blocks are reread
    c.mmap_reads = 2;
    tdb_t *db = nullptr;
    EXPECT_EQ(tdb_open(dir.path().c_str(), &c, &db), TDB_ERR_INVALID_ARG);
    for (int mode : {1, 0}) {
        SCOPED_TRACE("mmap_reads " + std::to_string(mode));
        c.mmap_reads = mode;
        ASSERT_EQ(tdb_open(dir.path().c_str(), &c, &db), TDB_OK) << tdb_last_error();
        tdb_cf_t *cf = nullptr;
        ASSERT_EQ(tdb_get_cf(db, TDB_DEFAULT_CF, &cf), TDB_OK);
        if (mode == 1) {
            for (uint64_t i = 0; i < 20000; i++) {
                std::string k = Key(i), v = Value(i, 60);
                ASSERT_EQ(tdb_put(db, cf, k.data(), k.size(), v.data(), v.size(), 0), TDB_OK);
            }
            ASSERT_EQ(tdb_flush(db, nullptr), TDB_OK);
            ASSERT_EQ(tdb_wait_idle(db), TDB_OK);
        }
        for (int pass = 0; pass < 2; pass++) {
            for (uint64_t i = 0; i < 20000; i += 7) {
                std::string k = Key(i);
                void *v = nullptr;
                size_t n = 0;
                ASSERT_EQ(tdb_get(db, cf, nullptr, k.data(), k.size(), &v, &n), TDB_OK) << i;
                EXPECT_EQ(std::string((char *)v, n), Value(i, 60));
                tdb_free(v);
            }
            tdb_iter_t *it = nullptr;
            ASSERT_EQ(tdb_iter_create(db, cf, nullptr, &it), TDB_OK);
            uint64_t i = 0;
            for (tdb_iter_seek_to_first(it); tdb_iter_valid(it); tdb_iter_next(it), i++) {
                size_t kl = 0;
                const void *k = tdb_iter_key(it, &kl);
                ASSERT_EQ(std::string((const char *)k, kl), Key(i));
            }
            EXPECT_EQ(tdb_iter_status(it), TDB_OK);
            tdb_iter_destroy(it);
            EXPECT_EQ(i, 20000u);
        }
        ASSERT_EQ(tdb_close(db), TDB_OK);
    }
}

TEST(Unified, BadUnifiedSettingsRejected) {
    tdbtest::TempDir dir;
    tdb_config_t c = SmallDbConfig();
    c.unified_memtable = 1;
    c.unified_memtable_write_buffer_size = 10;
    tdb_t *db = nullptr;
    EXPECT_EQ(tdb_open(dir.path().c_str(), &c, &db), TDB_ERR_INVALID_ARG);
    c.unified_memtable_write_buffer_size = 1 << 20;
    c.unified_memtable_sync_mode = 7;
    EXPECT_EQ(tdb_open(dir.path().c_str(), &c, &db), TDB_ERR_INVALID_ARG);
}

}  // namespace

namespace {

// tdb_sync fsyncs the WAL on demand (power-loss durability of it is
// exercised by the fault-injection suite).
TEST(Sync, ExplicitSyncSucceedsAndRejectsNull) {
    tdbtest::TempDir dir;
    tdb_config_t c = SmallDbConfig();
    c.default_cf.write_buffer_size = 64 << 20;
    tdb_t *db;
    tdb_cf_t *cf;
    ASSERT_EQ(tdb_open(dir.path().c_str(), &c, &db), TDB_OK);
    ASSERT_EQ(tdb_get_cf(db, TDB_DEFAULT_CF, &cf), TDB_OK);
    for (int i = 0; i < 100; i++) {
        std::string k = Key(i);
        ASSERT_EQ(tdb_put(db, cf, k.data(), k.size(), "v", 1, 0), TDB_OK);
    }
    ASSERT_EQ(tdb_sync(db), TDB_OK);
    EXPECT_EQ(tdb_sync(nullptr), TDB_ERR_INVALID_ARG);
    ASSERT_EQ(tdb_close(db), TDB_OK);
}

}  // namespace
