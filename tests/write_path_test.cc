// The write path's two lanes (db/write.c): direct writers (no fsync, no
// validation, no back-pressure) and the group commit, run together with
// memtable switches, flushes, transactions and more threads than cores.
// What must hold: an acknowledged write is visible to every later snapshot,
// each writer's keys are visible as a prefix, nothing is lost across
// reopen, and validated transactions keep their invariants.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "db_fixture.h"
#include "testutil.h"
#include "tidesdb/tidesdb.h"

using tdbtest::Key;
using tdbtest::Value;

namespace {

// Join the writers, then stop the threads that ran beside them and join those.
void JoinWritersThenStop(std::vector<std::thread> &writers, std::atomic<bool> &stop, std::thread &a, std::thread &b) {
    for (auto &t : writers) t.join();
    stop.store(true);
    a.join();
    b.join();
}

class WritePathTest : public tdbtest::DbFixture {
  protected:
    // A small buffer: many memtable switches (each closes the direct gate).
    WritePathTest() : DbFixture(128 << 10) {}

    static std::string WKey(int w, uint64_t i) { return "w" + std::to_string(w) + "-" + Key(i, 8); }

    bool Visible(const std::string &k, const tdb_snapshot_t *snap) {
        void *v = nullptr;
        size_t n = 0;
        int rc = tdb_get(db_, cf_, snap, k.data(), k.size(), &v, &n);
        if (rc == TDB_OK) tdb_free(v);
        EXPECT_TRUE(rc == TDB_OK || rc == TDB_ERR_NOT_FOUND) << tdb_strerror(rc) << " " << tdb_last_error();
        return rc == TDB_OK;
    }
};

// Writers (more than cores) put their own keys in order and publish how far
// they are acknowledged; a reader takes snapshots and checks that every
// write acknowledged before the snapshot is in it, that each writer's
// visible keys are a prefix (no write visible before an earlier one), and
// that what a snapshot shows does not change (no holes filled in later).
// Meanwhile a thread flushes now and then (an exclusive writer).
TEST_F(WritePathTest, AcknowledgedWritesAreInEveryLaterSnapshot) {
    const int kWriters = 12;
    const uint64_t kPerWriter = 3000;
    std::vector<std::atomic<uint64_t>> acked(kWriters);
    for (auto &a : acked) a.store(0);
    std::atomic<bool> stop{false};
    std::atomic<int> errors{0};
    std::vector<std::thread> ts;
    for (int w = 0; w < kWriters; w++) {
        ts.emplace_back([&, w] {
            for (uint64_t i = 0; i < kPerWriter; i++) {
                if (Put(WKey(w, i), Value(i, 40)) != TDB_OK) {
                    errors++;
                    return;
                }
                acked[w].store(i + 1, std::memory_order_release);
            }
        });
    }
    std::thread flusher([&] {
        while (!stop.load()) {
            if (tdb_flush(db_, cf_) != TDB_OK) errors++;
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
    });
    uint64_t checks = 0;
    std::thread reader([&] {
        std::mt19937_64 rng(7);
        while (!stop.load()) {
            std::vector<uint64_t> before(kWriters);
            for (int w = 0; w < kWriters; w++) before[w] = acked[w].load(std::memory_order_acquire);
            tdb_snapshot_t *s = tdb_snapshot_create(db_);
            for (int w = 0; w < kWriters; w++) {
                if (before[w] > 0 && !Visible(WKey(w, before[w] - 1), s)) {
                    ADD_FAILURE() << "acknowledged write " << WKey(w, before[w] - 1) << " missing from a later snapshot";
                    errors++;
                }
                // Prefix: a visible key implies its writer's earlier keys are visible.
                uint64_t probe = before[w] + rng() % 64;
                if (probe > 0 && probe < kPerWriter && Visible(WKey(w, probe), s)) {
                    uint64_t earlier = rng() % probe;
                    if (!Visible(WKey(w, earlier), s)) {
                        ADD_FAILURE() << WKey(w, probe) << " visible but " << WKey(w, earlier) << " not";
                        errors++;
                    }
                }
                checks++;
            }
            // A snapshot never changes: keys in flight at its creation read
            // the same a moment later (a write published out of sequence
            // order would be a hole that fills in under the snapshot).
            std::vector<std::pair<std::string, bool>> seen;
            for (int w = 0; w < kWriters; w++)
                for (uint64_t i = before[w]; i < before[w] + 4 && i < kPerWriter; i++)
                    seen.emplace_back(WKey(w, i), Visible(WKey(w, i), s));
            std::this_thread::yield();
            for (auto &p : seen)
                if (Visible(p.first, s) != p.second) {
                    ADD_FAILURE() << p.first << " changed under a snapshot";
                    errors++;
                }
            tdb_snapshot_release(db_, s);
        }
    });
    JoinWritersThenStop(ts, stop, flusher, reader);
    ASSERT_EQ(errors.load(), 0);
    EXPECT_GT(checks, 0u);
    for (int w = 0; w < kWriters; w++)
        for (uint64_t i = 0; i < kPerWriter; i++) ASSERT_TRUE(Visible(WKey(w, i), nullptr)) << WKey(w, i);
    tdb_stats_t st;
    ASSERT_EQ(tdb_get_stats(db_, nullptr, &st), TDB_OK);
    EXPECT_GT(st.flushes, 3u);  // the gate was closed and reopened many times
    Reopen();
    for (int w = 0; w < kWriters; w++)
        for (uint64_t i = 0; i < kPerWriter; i++) ASSERT_TRUE(Visible(WKey(w, i), nullptr)) << WKey(w, i);
}

// Plain puts (direct lane) and validated transactions (group commit, which
// closes the gate) interleave: transfers between accounts at SNAPSHOT
// isolation keep the total, and every put lands.
TEST_F(WritePathTest, TransactionsAndDirectPutsInterleave) {
    const int kAccounts = 8, kStart = 1000;
    for (int a = 0; a < kAccounts; a++) ASSERT_EQ(Put("acct" + std::to_string(a), std::to_string(kStart)), TDB_OK);
    std::atomic<bool> stop{false};
    std::atomic<int> errors{0}, commits{0};
    std::vector<std::thread> ts;
    for (int w = 0; w < 4; w++) {
        ts.emplace_back([&, w] {
            for (uint64_t i = 0; i < 4000; i++)
                if (Put(WKey(w, i), Value(i, 60)) != TDB_OK) errors++;
        });
    }
    for (int t = 0; t < 3; t++) {
        ts.emplace_back([&, t] {
            std::mt19937 rng(t);
            tdb_txn_options_t o;
            tdb_txn_options_default(&o);
            o.isolation = TDB_ISO_SNAPSHOT;
            while (!stop.load()) {
                int from = rng() % kAccounts, to = rng() % kAccounts;
                if (from == to) continue;
                tdb_txn_t *x;
                if (tdb_txn_begin(db_, &o, &x) != TDB_OK) {
                    errors++;
                    return;
                }
                auto get = [&](int a) {
                    std::string k = "acct" + std::to_string(a);
                    void *v;
                    size_t n;
                    if (tdb_txn_get(x, cf_, k.data(), k.size(), &v, &n) != TDB_OK) return -1000000;
                    int r = std::stoi(std::string((char *)v, n));
                    tdb_free(v);
                    return r;
                };
                auto set = [&](int a, int val) {
                    std::string k = "acct" + std::to_string(a), v = std::to_string(val);
                    return tdb_txn_put(x, cf_, k.data(), k.size(), v.data(), v.size(), 0);
                };
                int fb = get(from), tb = get(to);
                int rc = fb < 0 || tb < 0 ? TDB_ERR_IO : TDB_OK;
                if (rc == TDB_OK) rc = set(from, fb - 1);
                if (rc == TDB_OK) rc = set(to, tb + 1);
                if (rc == TDB_OK) rc = tdb_txn_commit(x);
                if (rc == TDB_OK) commits++;
                else if (rc != TDB_ERR_CONFLICT) errors++;
                tdb_txn_free(x);
            }
        });
    }
    for (int w = 0; w < 4; w++) ts[w].join();
    stop.store(true);
    for (size_t i = 4; i < ts.size(); i++) ts[i].join();
    ASSERT_EQ(errors.load(), 0);
    EXPECT_GT(commits.load(), 0);
    int total = 0;
    for (int a = 0; a < kAccounts; a++) total += std::stoi(Get("acct" + std::to_string(a)));
    EXPECT_EQ(total, kAccounts * kStart);
    for (int w = 0; w < 4; w++)
        for (uint64_t i = 0; i < 4000; i++) ASSERT_EQ(Get(WKey(w, i)), Value(i, 60));
}

}  // namespace

namespace {

// Every write synced (TDB_SYNC_FULL), so every writer takes the group
// commit queue: members sleep on their own word and are released by the
// leader without re-taking the database mutex (db/write_group.c).
class SyncedGroupTest : public tdbtest::DbFixture {
  protected:
    SyncedGroupTest() : DbFixture(128 << 10) { cfg_.default_cf.sync_mode = TDB_SYNC_FULL; }
};

// Writers of single puts and of 32-entry batches (which the leader hands
// back to their own thread to insert: SMALL_BATCH_ENTRIES) share groups,
// with flushes (exclusive writers) in between. Each write is acknowledged
// only once it is in every later snapshot, no member returns before its
// group is done, groups form (fewer WAL syncs than writes), and nothing is
// lost across reopen.
TEST_F(SyncedGroupTest, MembersOfSmallAndLargeBatchesAreReleasedDone) {
    const int kWriters = 8, kBatch = 32;
    const uint64_t kPerWriter = 150;
    auto key = [](int w, uint64_t i, int j) { return "g" + std::to_string(w) + "-" + Key(i * kBatch + j, 8); };
    std::vector<std::atomic<uint64_t>> acked(kWriters);
    for (auto &a : acked) a.store(0);
    std::atomic<bool> stop{false};
    std::atomic<int> errors{0};
    tdb_stats_t before;
    ASSERT_EQ(tdb_get_stats(db_, nullptr, &before), TDB_OK);
    std::vector<std::thread> ts;
    for (int w = 0; w < kWriters; w++) {
        ts.emplace_back([&, w] {
            int n = w % 2 ? kBatch : 1;
            tdb_batch_t *b = nullptr;
            if (tdb_batch_create(&b) != TDB_OK) {
                errors++;
                return;
            }
            for (uint64_t i = 0; i < kPerWriter; i++) {
                tdb_batch_clear(b);
                for (int j = 0; j < n; j++) {
                    std::string k = key(w, i, j), v = Value(i * kBatch + j, 40);
                    if (tdb_batch_put(b, cf_, k.data(), k.size(), v.data(), v.size(), 0) != TDB_OK) errors++;
                }
                if (tdb_write(db_, b) != TDB_OK) {
                    ADD_FAILURE() << "write " << w << "/" << i << ": " << tdb_last_error();
                    errors++;
                    break;
                }
                acked[w].store(i + 1, std::memory_order_release);
            }
            tdb_batch_destroy(b);
        });
    }
    std::thread flusher([&] {
        while (!stop.load()) {
            if (tdb_flush(db_, cf_) != TDB_OK) errors++;
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
    });
    uint64_t checks = 0;
    std::thread reader([&] {
        while (!stop.load()) {
            std::vector<uint64_t> seen(kWriters);
            for (int w = 0; w < kWriters; w++) seen[w] = acked[w].load(std::memory_order_acquire);
            tdb_snapshot_t *s = tdb_snapshot_create(db_);
            for (int w = 0; w < kWriters; w++) {
                if (!seen[w]) continue;
                int n = w % 2 ? kBatch : 1;
                for (int j = 0; j < n; j += n > 1 ? n - 1 : 1) {  // the batch's first and last entries
                    std::string k = key(w, seen[w] - 1, j);
                    void *v = nullptr;
                    size_t len = 0;
                    int rc = tdb_get(db_, cf_, s, k.data(), k.size(), &v, &len);
                    if (rc == TDB_OK) tdb_free(v);
                    else {
                        ADD_FAILURE() << "acknowledged " << k << " not in a later snapshot: " << tdb_strerror(rc);
                        errors++;
                    }
                    checks++;
                }
            }
            tdb_snapshot_release(db_, s);
        }
    });
    JoinWritersThenStop(ts, stop, flusher, reader);
    ASSERT_EQ(errors.load(), 0);
    EXPECT_GT(checks, 0u);
    tdb_stats_t after;
    ASSERT_EQ(tdb_get_stats(db_, nullptr, &after), TDB_OK);
    const uint64_t writes = kWriters * kPerWriter;
    EXPECT_LT(after.wal_syncs - before.wal_syncs, writes) << "no group had two members";
    EXPECT_GT(after.flushes, before.flushes);
    Reopen();
    for (int w = 0; w < kWriters; w++)
        for (uint64_t i = 0; i < kPerWriter; i++)
            for (int j = 0; j < (w % 2 ? kBatch : 1); j++)
                ASSERT_EQ(Get(key(w, i, j)), Value(i * kBatch + j, 40)) << key(w, i, j);
}

}  // namespace
