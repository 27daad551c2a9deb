// Single deletes: the compaction rule (a single delete meeting the next
// older version of its key in the same snapshot stripe, a put, drops both at
// once even above the bottom; otherwise kept until bottommost), reads
// treating it as a delete, batches, transactions, WAL replay and reopen.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "db_fixture.h"
#include "delete_testutil.h"
#include "testutil.h"
#include "tidesdb/tidesdb.h"

using deltest::Entry;
using deltest::IK;
using deltest::Show;
using tdbtest::Key;
using tdbtest::TempDir;
using tdbtest::Value;

namespace {

// ---------------------------------------------------------------------------
// The compaction rule (table_write_from_iter).
// ---------------------------------------------------------------------------

class SdTableWrite : public deltest::TableWriteFixture {};

TEST_F(SdTableWrite, PairDroppedEvenAboveTheBottom) {
    std::vector<Entry> in = {{IK("a", 9, KT_SINGLE_DELETE), ""}, {IK("a", 4), "a4"}, {IK("b", 3), "b3"}};
    ASSERT_EQ(TDB_OK, Write(in, 0));
    EXPECT_EQ("b@3/1 ", Show(AllPoints()));
    version_edit_free(&edit);
    // TTL puts are puts too.
    in = {{IK("a", 9, KT_SINGLE_DELETE), ""}, {IK("a", 4, KT_PUT_TTL), std::string(8, '\xff') + "v"}};
    ASSERT_EQ(TDB_OK, Write(in, 0));
    EXPECT_EQ(0, edit.n_add);
}

TEST_F(SdTableWrite, SnapshotBetweenKeepsBoth) {
    snaps = {5};
    std::vector<Entry> in = {{IK("a", 9, KT_SINGLE_DELETE), ""}, {IK("a", 4), "a4"}};
    ASSERT_EQ(TDB_OK, Write(in, 0));
    EXPECT_EQ("a@9/2 a@4/1 ", Show(AllPoints()));
    version_edit_free(&edit);
    // Bottommost: the single delete is above the snapshot, so it stays (the
    // put below the snapshot is written with sequence 0).
    ASSERT_EQ(TDB_OK, Write(in, 1));
    EXPECT_EQ("a@9/2 a@0/1 ", Show(AllPoints()));
    version_edit_free(&edit);
    // Snapshot at the single delete itself: same stripe as the put below it
    // only if no snapshot lies in [4, 9): here snapshot 9 does not separate.
    snaps = {9};
    ASSERT_EQ(TDB_OK, Write(in, 0));
    EXPECT_EQ(0, edit.n_add);
}

TEST_F(SdTableWrite, MeetingNothingKeptUntilBottommost) {
    std::vector<Entry> in = {{IK("a", 9, KT_SINGLE_DELETE), ""}, {IK("b", 4), "b4"}};
    ASSERT_EQ(TDB_OK, Write(in, 0));
    EXPECT_EQ("a@9/2 b@4/1 ", Show(AllPoints()));  // the put may be in a deeper level
    version_edit_free(&edit);
    ASSERT_EQ(TDB_OK, Write(in, 1));
    EXPECT_EQ("b@0/1 ", Show(AllPoints()));
    version_edit_free(&edit);
    // Last entry of the stream.
    ASSERT_EQ(TDB_OK, Write({{IK("z", 9, KT_SINGLE_DELETE), ""}}, 0));
    EXPECT_EQ("z@9/2 ", Show(AllPoints()));
}

TEST_F(SdTableWrite, MeetingADeleteKeepsTheSingleDelete) {
    std::vector<Entry> in = {{IK("a", 9, KT_SINGLE_DELETE), ""}, {IK("a", 6, KT_DELETE), ""}, {IK("a", 2), "a2"}};
    ASSERT_EQ(TDB_OK, Write(in, 0));
    EXPECT_EQ("a@9/2 ", Show(AllPoints()));  // the rest is shadowed in its stripe
    version_edit_free(&edit);
    ASSERT_EQ(TDB_OK, Write(in, 1));
    EXPECT_EQ(0, edit.n_add);
}

TEST_F(SdTableWrite, OlderHistoryAfterTheCancelledPairStays) {
    // put@3, delete@5, put@8, single delete@9: the pair goes, the delete@5
    // must stay (above the bottom) to hide put@3 or anything deeper.
    std::vector<Entry> in = {{IK("a", 9, KT_SINGLE_DELETE), ""},
                             {IK("a", 8), "a8"},
                             {IK("a", 5, KT_DELETE), ""},
                             {IK("a", 3), "a3"}};
    ASSERT_EQ(TDB_OK, Write(in, 0));
    EXPECT_EQ("a@5/0 ", Show(AllPoints()));
    version_edit_free(&edit);
    ASSERT_EQ(TDB_OK, Write(in, 1));
    EXPECT_EQ(0, edit.n_add);
}

TEST_F(SdTableWrite, CoveredByRangeTombstone) {
    std::vector<Entry> in = {{IK("a", 12, KT_RANGE_DELETE), "c"},
                             {IK("a", 9, KT_SINGLE_DELETE), ""},
                             {IK("a", 4), "a4"},
                             {IK("b", 7, KT_SINGLE_DELETE), ""}};
    ASSERT_EQ(TDB_OK, Write(in, 0));
    auto outs = ReadOutputs();
    ASSERT_EQ(1u, outs.size());
    EXPECT_TRUE(outs[0].points.empty()) << Show(outs[0].points);
    EXPECT_EQ(1u, outs[0].tombs.size());
}

// ---------------------------------------------------------------------------
// Through the database.
// ---------------------------------------------------------------------------

class SingleDelTest : public tdbtest::DbFixture {
  protected:
    SingleDelTest() : DbFixture(64 << 10) {}
    int SDel(const std::string &k) { return tdb_single_delete(db_, cf_, k.data(), k.size()); }
    std::vector<std::string> Keys(const tdb_snapshot_t *snap = nullptr) {
        std::vector<std::string> out;
        tdb_iter_t *it;
        EXPECT_EQ(TDB_OK, tdb_iter_create(db_, cf_, snap, &it));
        for (tdb_iter_seek_to_first(it); tdb_iter_valid(it); tdb_iter_next(it)) {
            size_t kl = 0;
            const char *k = (const char *)tdb_iter_key(it, &kl);
            out.emplace_back(k, kl);
        }
        tdb_iter_destroy(it);
        return out;
    }
    uint64_t Entries() {
        tdb_stats_t st;
        EXPECT_EQ(TDB_OK, tdb_get_stats(db_, cf_, &st));
        return st.num_entries_estimate;
    }

};

TEST_F(SingleDelTest, ReadsTreatItAsADelete) {
    ASSERT_EQ(TDB_OK, Put("a", "1"));
    ASSERT_EQ(TDB_OK, Put("b", "2"));
    tdb_snapshot_t *s = tdb_snapshot_create(db_);
    ASSERT_EQ(TDB_OK, SDel("a"));
    EXPECT_EQ("NOT_FOUND", Get("a"));
    EXPECT_EQ("1", Get("a", s));
    EXPECT_EQ((std::vector<std::string>{"b"}), Keys());
    EXPECT_EQ((std::vector<std::string>{"a", "b"}), Keys(s));
    tdb_snapshot_release(db_, s);
    EXPECT_EQ(TDB_ERR_INVALID_ARG, tdb_single_delete(db_, cf_, "", 0));
    tdb_batch_t *b;
    ASSERT_EQ(TDB_OK, tdb_batch_create(&b));
    ASSERT_EQ(TDB_OK, tdb_batch_put(b, cf_, "c", 1, "3", 1, 0));
    ASSERT_EQ(TDB_OK, tdb_batch_single_delete(b, cf_, "c", 1));
    ASSERT_EQ(TDB_OK, tdb_batch_single_delete(b, cf_, "b", 1));
    ASSERT_EQ(TDB_OK, tdb_write(db_, b));
    tdb_batch_destroy(b);
    EXPECT_EQ("NOT_FOUND", Get("c"));
    EXPECT_EQ("NOT_FOUND", Get("b"));
    ASSERT_EQ(TDB_OK, Put("a", "again"));  // written once more after the delete: fine
    EXPECT_EQ("again", Get("a"));
    Reopen();  // WAL replay
    EXPECT_EQ("again", Get("a"));
    EXPECT_EQ("NOT_FOUND", Get("b"));
    ASSERT_EQ(TDB_OK, tdb_compact(db_, cf_));
    EXPECT_EQ("again", Get("a"));
    EXPECT_EQ("NOT_FOUND", Get("b"));
    EXPECT_EQ((std::vector<std::string>{"a"}), Keys());
}

// SingleDelTest with a memtable large enough that a test's writes stay in
// one memtable until it flushes them itself (the 64 KiB one switches at an
// arena block boundary that moves with the node layout).
class SingleDelOneMemtableTest : public SingleDelTest {
  protected:
    SingleDelOneMemtableTest() { cfg_.default_cf.write_buffer_size = 1 << 20; }
    uint64_t ImmutableMemtables() {
        tdb_stats_t st;
        EXPECT_EQ(TDB_OK, tdb_get_stats(db_, cf_, &st));
        return st.immutable_memtables;
    }
};

// Secondary-index style: each key written once, then single-deleted. The
// pairs vanish already when flushed (same memtable) or when the first
// compaction brings them together, not only at the last level.
TEST_F(SingleDelOneMemtableTest, PairsVanishBeforeTheBottom) {
    for (int i = 0; i < 2000; i++) ASSERT_EQ(TDB_OK, Put(Key(i, 6), Value(i, 40)));
    ASSERT_EQ(TDB_OK, tdb_flush(db_, cf_));
    // From here on no background compaction may cancel pairs behind the
    // counts below (the remaining writes fit one memtable; flush and compact
    // run in this thread).
    ASSERT_EQ(TDB_OK, tdb_pause_background(db_));
    for (int i = 0; i < 2000; i += 2) ASSERT_EQ(TDB_OK, SDel(Key(i, 6)));
    // Same memtable: put and single delete of new keys cancel at flush.
    for (int i = 5000; i < 5500; i++) ASSERT_EQ(TDB_OK, Put(Key(i, 6), "x"));
    for (int i = 5000; i < 5500; i++) ASSERT_EQ(TDB_OK, SDel(Key(i, 6)));
    ASSERT_EQ(0u, ImmutableMemtables()) << "the writes above must share one memtable";
    ASSERT_EQ(TDB_OK, tdb_flush(db_, cf_));
    EXPECT_EQ(2000u + 1000u, Entries());  // 2000 puts, 1000 single deletes; the 500 pairs are gone
    ASSERT_EQ(TDB_OK, tdb_compact(db_, cf_));
    EXPECT_EQ(1000u, Entries());
    for (int i = 0; i < 2000; i++) EXPECT_EQ(i % 2 ? Value(i, 40) : "NOT_FOUND", Get(Key(i, 6))) << i;
    EXPECT_EQ("NOT_FOUND", Get(Key(5100, 6)));
    ASSERT_EQ(TDB_OK, tdb_continue_background(db_));
}

// A put and its single delete flushed into different files cancel when a
// compaction brings them together (the non-bottommost case is covered by
// SdTableWrite above).
TEST_F(SingleDelTest, PairDroppedWhenCompactedTogether) {
    // Old data at the bottom.
    for (int i = 0; i < 3000; i++) ASSERT_EQ(TDB_OK, Put(Key(i, 6), Value(i, 40)));
    ASSERT_EQ(TDB_OK, tdb_compact(db_, cf_));
    uint64_t base = Entries();
    ASSERT_EQ(TDB_OK, tdb_pause_background(db_));  // the two files must stay apart until tdb_compact
    // An index entry written once (a new key), flushed, then single-deleted
    // and flushed: level 1 holds the put and the single delete in two files.
    ASSERT_EQ(TDB_OK, Put(Key(1500, 6) + "idx", "1"));
    ASSERT_EQ(TDB_OK, tdb_flush(db_, cf_));
    ASSERT_EQ(TDB_OK, SDel(Key(1500, 6) + "idx"));
    ASSERT_EQ(TDB_OK, tdb_flush(db_, cf_));
    EXPECT_EQ(base + 2, Entries());
    EXPECT_EQ("NOT_FOUND", Get(Key(1500, 6) + "idx"));
    ASSERT_EQ(TDB_OK, tdb_compact(db_, cf_));
    EXPECT_EQ(base, Entries());
    EXPECT_EQ(Value(1500, 40), Get(Key(1500, 6)));
    ASSERT_EQ(TDB_OK, tdb_continue_background(db_));
}

TEST_F(SingleDelTest, TransactionSingleDelete) {
    ASSERT_EQ(TDB_OK, Put("k", "v"));
    tdb_txn_options_t o;
    tdb_txn_options_default(&o);
    tdb_txn_t *t, *u;
    ASSERT_EQ(TDB_OK, tdb_txn_begin(db_, &o, &t));
    ASSERT_EQ(TDB_OK, tdb_txn_single_delete(t, cf_, "k", 1));
    void *v;
    size_t n;
    EXPECT_EQ(TDB_ERR_NOT_FOUND, tdb_txn_get(t, cf_, "k", 1, &v, &n));
    EXPECT_EQ("v", Get("k"));  // buffered until commit
    tdb_iter_t *it;
    ASSERT_EQ(TDB_OK, tdb_txn_iter_create(t, cf_, &it));
    tdb_iter_seek_to_first(it);
    EXPECT_FALSE(tdb_iter_valid(it));
    tdb_iter_destroy(it);
    ASSERT_EQ(TDB_OK, tdb_txn_commit(t));
    EXPECT_EQ("NOT_FOUND", Get("k"));
    // Conflict-checked like a delete (SNAPSHOT, first committer wins).
    ASSERT_EQ(TDB_OK, Put("j", "1"));
    ASSERT_EQ(TDB_OK, tdb_txn_reset(t, &o));
    ASSERT_EQ(TDB_OK, tdb_txn_begin(db_, &o, &u));
    ASSERT_EQ(TDB_OK, tdb_txn_single_delete(t, cf_, "j", 1));
    ASSERT_EQ(TDB_OK, tdb_txn_put(u, cf_, "j", 1, "2", 1, 0));
    ASSERT_EQ(TDB_OK, tdb_txn_commit(u));
    EXPECT_EQ(TDB_ERR_CONFLICT, tdb_txn_commit(t));
    EXPECT_EQ(TDB_ERR_INVALID_ARG, tdb_txn_single_delete(t, cf_, "j", 1));  // finished
    tdb_txn_free(t);
    tdb_txn_free(u);
    Reopen();
    EXPECT_EQ("NOT_FOUND", Get("k"));
    EXPECT_EQ("2", Get("j"));
}

// Keys written once and single-deleted, in random order with flushes and
// compactions, against a model.
TEST_F(SingleDelTest, RandomIndexWorkloadMatchesModel) {
    std::mt19937_64 rng(99);
    std::map<std::string, std::string> model;
    uint64_t next = 0;
    std::vector<std::string> live;
    for (int round = 0; round < 8; round++) {
        for (int i = 0; i < 3000; i++) {
            if (live.empty() || rng() % 3) {
                std::string k = Key(rng() % 1000000, 8) + "#" + std::to_string(next++);
                std::string v = Value(next, 30);
                ASSERT_EQ(TDB_OK, Put(k, v));
                model[k] = v;
                live.push_back(k);
            } else {
                size_t j = rng() % live.size();
                ASSERT_EQ(TDB_OK, SDel(live[j]));
                model.erase(live[j]);
                live[j] = live.back();
                live.pop_back();
            }
        }
        if (round % 3 == 0) {
            ASSERT_EQ(TDB_OK, tdb_flush(db_, cf_));
        }
        if (round % 3 == 1) {
            ASSERT_EQ(TDB_OK, tdb_compact(db_, cf_));
        }
        if (round == 5) Reopen();
        std::vector<std::string> want;
        for (auto &kv : model) want.push_back(kv.first);
        ASSERT_EQ(want, Keys()) << "round " << round;
        for (int i = 0; i < 200; i++) {
            const std::string &k = live.empty() ? "none" : live[rng() % live.size()];
            ASSERT_EQ(model.count(k) ? model[k] : "NOT_FOUND", Get(k));
        }
    }
    ASSERT_EQ(TDB_OK, tdb_compact(db_, cf_));
    EXPECT_EQ(model.size(), Entries());  // every cancelled pair and tombstone is gone
}

}  // namespace
