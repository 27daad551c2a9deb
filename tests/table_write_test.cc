// Unit tests for version/compaction's writing side: the dropping rule of
// table_write_from_iter (snapshot stripes, tombstones, TTL, bottommost),
// output splitting that never splits a user key, error cleanup, and
// compaction_run end to end on real tables. Picking is in compaction_test.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "compaction_testutil.h"
#include "keys_testutil.h"
#include "table_testutil.h"
#include "testutil.h"

extern "C" {
#include "cache/cache.h"
#include "env/env.h"
#include "sst/sst.h"
#include "util/coding.h"
#include "util/error.h"
#include "util/ikey.h"
#include "version/compaction.h"
#include "version/table_cache.h"
#include "version/version.h"
}

namespace {

using namespace tdbtest;

std::string TTLValue(uint64_t expiry, const std::string &v) {
    char t[8];
    enc_fixed64(t, expiry);
    return std::string(t, 8) + v;
}

// The shared input of the dropping-rule tests.
std::vector<Entry> RuleInput() {
    return {
        {IK("a", 9), "a9"},          {IK("a", 7), "a7"},       {IK("a", 5, KT_DELETE), ""}, {IK("a", 3), "a3"},
        {IK("b", 8, KT_DELETE), ""}, {IK("b", 2), "b2"},       {IK("c", 6), "c6"},
        {IK("d", 4, KT_SINGLE_DELETE), ""},                    {IK("d", 1), "d1"},
        {IK("e", 10, KT_PUT_TTL), TTLValue(999, "e10")},       {IK("e", 1), "e1"},
        {IK("f", 11, KT_PUT_TTL), TTLValue(1001, "f11")},      {IK("g", 12, KT_PUT_TTL), "short"},
    };
}

std::vector<Entry> Pick(const std::vector<Entry> &in, const std::vector<std::string> &keep) {
    std::vector<Entry> out;
    for (auto &e : in)
        if (std::find(keep.begin(), keep.end(), Show(e)) != keep.end()) out.push_back(e);
    SortEntries(&out);
    EXPECT_EQ(keep.size(), out.size());
    return out;
}

// e with its sequence rewritten to 0 (same user key and type).
Entry Zeroed(const Entry &e) {
    slice_t k = S(e.ik);
    return {IK(std::string(ikey_user(k).data, ikey_user(k).size), 0, ikey_type(k)), e.value};
}

// Pick, then the entries shown in `zero` with sequence 0 (as a bottommost
// output writes the lowest stripe's versions).
std::vector<Entry> PickZeroed(const std::vector<Entry> &in, const std::vector<std::string> &keep,
                              const std::vector<std::string> &zero) {
    std::vector<Entry> out = Pick(in, keep);
    for (auto &e : out)
        if (std::find(zero.begin(), zero.end(), Show(e)) != zero.end()) e = Zeroed(e);
    SortEntries(&out);
    return out;
}

TEST_F(TableWrite, NoSnapshotsNotBottommostKeepsNewestAndTombstones) {
    auto in = RuleInput();
    ASSERT_EQ(TDB_OK, Write(in, 0)) << tdb_last_error();
    ASSERT_EQ(1, edit.n_add);
    EXPECT_EQ(2, edit.add[0].level);
    auto got = ReadAll();
    // d: the single delete meets its put in the same stripe: both go, even
    // though this is not the bottommost level.
    auto want = Pick(in, {"a@9/1", "b@8/0", "c@6/1", "e@10/4", "f@11/4", "g@12/4"});
    EXPECT_EQ(want, got) << Show(got);
    const file_meta_t *f = edit.add[0].f;
    EXPECT_EQ(6u, f->num_entries);
    EXPECT_EQ(12u, f->max_seq);
    EXPECT_EQ(6u, f->min_seq);
    EXPECT_EQ(f->file_size, ctx.bytes_written);
    EXPECT_GT(ctx.bytes_read, 0u);
}

TEST_F(TableWrite, NoSnapshotsBottommostDropsTombstonesAndExpired) {
    auto in = RuleInput();
    ASSERT_EQ(TDB_OK, Write(in, 1)) << tdb_last_error();
    auto got = ReadAll();
    // b, d deleted; e expired (and its older version shadowed); g's value is
    // too short to carry an expiry, so it is kept.
    // Nothing older exists and every reader sees them: sequence 0.
    auto want = PickZeroed(in, {"a@9/1", "c@6/1", "f@11/4", "g@12/4"}, {"a@9/1", "c@6/1", "f@11/4", "g@12/4"});
    EXPECT_EQ(want, got) << Show(got);
    EXPECT_EQ(0u, edit.add[0].f->max_seq);
}

TEST_F(TableWrite, SnapshotStripes) {
    snaps = {4, 7};  // stripes: <=4, 5..7, >7
    auto in = RuleInput();
    ASSERT_EQ(TDB_OK, Write(in, 0)) << tdb_last_error();
    auto got = ReadAll();
    // d@4 and d@1 share the lowest stripe: the single delete cancels the put.
    auto want = Pick(in, {"a@9/1", "a@7/1", "a@3/1", "b@8/0", "b@2/1", "c@6/1", "e@10/4", "e@1/1",
                          "f@11/4", "g@12/4"});
    EXPECT_EQ(want, got) << Show(got);
}

TEST_F(TableWrite, SnapshotStripesBottommost) {
    snaps = {4, 7};
    auto in = RuleInput();
    ASSERT_EQ(TDB_OK, Write(in, 1)) << tdb_last_error();
    auto got = ReadAll();
    // Only the lowest stripe loses tombstones (d@4); the tombstone b@8 and
    // the expired e@10 above snapshot 7 stay: snapshot 7 still sees b@2/e@1.
    // The lowest stripe's versions (seq <= 4) are written with sequence 0.
    auto want = PickZeroed(in, {"a@9/1", "a@7/1", "a@3/1", "b@8/0", "b@2/1", "c@6/1", "e@10/4", "e@1/1", "f@11/4",
                                "g@12/4"},
                           {"a@3/1", "b@2/1", "e@1/1"});
    EXPECT_EQ(want, got) << Show(got);
}

TEST_F(TableWrite, SequenceZeroOnlyAtBottommostLevelsBelowOne) {
    std::vector<Entry> in = {{IK("a", 5), "a5"}, {IK("b", 6), "b6"}};
    // Level 1 orders its overlapping files by sequence: never rewritten.
    ASSERT_EQ(TDB_OK, Write(in, 1, -1, 1)) << tdb_last_error();
    EXPECT_EQ(in, ReadAll()) << Show(ReadAll());
    version_edit_free(&edit);
    // Not bottommost: an older version below may still need the order.
    ASSERT_EQ(TDB_OK, Write(in, 0, -1, 3)) << tdb_last_error();
    EXPECT_EQ(in, ReadAll()) << Show(ReadAll());
    version_edit_free(&edit);
    ASSERT_EQ(TDB_OK, Write(in, 1, -1, 3)) << tdb_last_error();
    EXPECT_EQ((std::vector<Entry>{Zeroed(in[0]), Zeroed(in[1])}), ReadAll()) << Show(ReadAll());
    EXPECT_EQ(0u, edit.add[0].f->min_seq);
    EXPECT_EQ(0u, edit.add[0].f->max_seq);
}

TEST_F(TableWrite, SnapshotEqualToSequenceAndManySnapshots) {
    snaps = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};  // every version visible to some snapshot
    auto in = RuleInput();
    ASSERT_EQ(TDB_OK, Write(in, 0));
    EXPECT_EQ(in.size(), ReadAll().size());
    version_edit_free(&edit);
    // Bottommost: only the lowest stripe (seq <= 1) may lose entries; d@1 and
    // e@1 are puts, so everything stays.
    ASSERT_EQ(TDB_OK, Write(in, 1));
    EXPECT_EQ(in.size(), ReadAll().size());
}

TEST_F(TableWrite, TTLExpiryBoundary) {
    std::vector<Entry> in = {
        {IK("x1", 5, KT_PUT_TTL), TTLValue(999, "past")},
        {IK("x2", 5, KT_PUT_TTL), TTLValue(1000, "now")},  // expiry <= now: expired
        {IK("x3", 5, KT_PUT_TTL), TTLValue(1001, "future")},
        {IK("x4", 5, KT_PUT_TTL), TTLValue(0, "")},
    };
    ASSERT_EQ(TDB_OK, Write(in, 1));
    auto got = ReadAll();
    EXPECT_EQ(PickZeroed(in, {"x3@5/4"}, {"x3@5/4"}), got) << Show(got);
    version_edit_free(&edit);
    ASSERT_EQ(TDB_OK, Write(in, 0));  // not bottommost: kept (might shadow older data)
    EXPECT_EQ(in.size(), ReadAll().size());
}

TEST_F(TableWrite, NothingKeptWritesNoFile) {
    std::vector<Entry> in = {{IK("a", 3, KT_DELETE), ""}, {IK("a", 2), "x"}, {IK("b", 4, KT_SINGLE_DELETE), ""}};
    ASSERT_EQ(TDB_OK, Write(in, 1));
    EXPECT_EQ(0, edit.n_add);
    EXPECT_EQ(0, CountSst());
    EXPECT_EQ(0u, ctx.bytes_written);
    ASSERT_EQ(TDB_OK, Write({}, 0));
    EXPECT_EQ(0, edit.n_add);
}

TEST_F(TableWrite, SplitsBySizeNeverSplittingAUserKey) {
    snaps = {10, 20, 30};
    std::vector<Entry> in;
    for (int i = 0; i < 200; i++) {
        std::string k = tdbtest::Key((uint64_t)i, 8);
        for (uint64_t s : {35u, 25u, 15u, 5u}) in.push_back({IK(k, s), tdbtest::Value((uint64_t)i * 100 + s, 40)});
    }
    // One user key with many versions, larger than a whole target file.
    for (uint64_t s = 1; s <= 200; s++) in.push_back({IK("k0000100x", s), tdbtest::Value(s, 40)});
    snaps.clear();
    for (uint64_t s = 1; s <= 200; s++) snaps.push_back(s);  // keep every version
    ctx.target_file_size = 2048;
    ASSERT_EQ(TDB_OK, Write(in, 0)) << tdb_last_error();
    ASSERT_GT(edit.n_add, 5);
    auto want = in;
    SortEntries(&want);
    EXPECT_EQ(want, ReadAll());
    uint64_t total = 0;
    for (int i = 0; i < edit.n_add; i++) {
        const file_meta_t *f = edit.add[i].f;
        total += f->file_size;
        if (i + 1 < edit.n_add) {
            EXPECT_GE(f->file_size, ctx.target_file_size) << "file " << i;
            const file_meta_t *g = edit.add[i + 1].f;
            EXPECT_LT(slice_compare(ikey_user(buf_slice(&f->largest)), ikey_user(buf_slice(&g->smallest))), 0)
                << "files " << i << " and " << i + 1 << " share a user key";
        }
    }
    EXPECT_EQ(total, ctx.bytes_written);
    // The outputs form a valid level >= 2.
    version_t *base = version_create(nullptr, nullptr), *v = nullptr;
    ASSERT_EQ(TDB_OK, version_apply(base, &edit, &v)) << tdb_last_error();
    version_unref(v);
    version_unref(base);
}

// Cut keys end an output early once it holds half the target, at the first
// user key at or past a cut key, so the outputs line up with the level below.
TEST_F(TableWrite, CutKeysEndOutputsEarlyOnceHalfFull) {
    std::vector<Entry> in;
    for (int i = 0; i < 400; i++) in.push_back({IK(tdbtest::Key((uint64_t)i, 8), 5), tdbtest::Value((uint64_t)i, 40)});
    ctx.target_file_size = 4096;
    ASSERT_EQ(TDB_OK, Write(in, 0));
    const int plain = edit.n_add;
    version_edit_free(&edit);

    // "Next-level files" start every 23 keys, between two input keys.
    std::vector<std::string> cut_str;
    for (int i = 7; i < 400; i += 23) cut_str.push_back(tdbtest::Key((uint64_t)i, 8) + "-");
    std::vector<slice_t> cuts;
    for (auto &c : cut_str) cuts.push_back(S(c));
    ctx.cut_keys = cuts.data();
    ctx.ncut = (int)cuts.size();
    ASSERT_EQ(TDB_OK, Write(in, 0)) << tdb_last_error();
    EXPECT_EQ(in, ReadAll());
    ASSERT_GT(edit.n_add, plain);
    int early = 0;
    for (int i = 0; i + 1 < edit.n_add; i++) {
        const file_meta_t *f = edit.add[i].f, *g = edit.add[i + 1].f;
        std::string last(ikey_user(buf_slice(&f->largest)).data, ikey_user(buf_slice(&f->largest)).size);
        std::string next(ikey_user(buf_slice(&g->smallest)).data, ikey_user(buf_slice(&g->smallest)).size);
        if (f->file_size >= ctx.target_file_size) continue;
        early++;
        EXPECT_GE(f->file_size, ctx.target_file_size / 2) << "file " << i;
        bool between = false;
        for (auto &c : cut_str) between |= last < c && c <= next;
        EXPECT_TRUE(between) << "file " << i << " ends at " << last << " with no cut key before " << next;
    }
    EXPECT_GT(early, 0);
    version_edit_free(&edit);

    // A cut key in every gap: each output ends as soon as it is half full.
    cut_str.clear();
    for (int i = 0; i < 400; i++) cut_str.push_back(tdbtest::Key((uint64_t)i, 8) + "-");
    cuts.clear();
    for (auto &c : cut_str) cuts.push_back(S(c));
    ctx.cut_keys = cuts.data();
    ctx.ncut = (int)cuts.size();
    ASSERT_EQ(TDB_OK, Write(in, 0)) << tdb_last_error();
    EXPECT_EQ(in, ReadAll());
    ASSERT_GE(edit.n_add, 2 * plain - 1);
    for (int i = 0; i + 1 < edit.n_add; i++) {
        EXPECT_GE(edit.add[i].f->file_size, ctx.target_file_size / 2) << "file " << i;
        EXPECT_LT(edit.add[i].f->file_size, ctx.target_file_size) << "file " << i;
    }
}

TEST_F(TableWrite, InputErrorDeletesPartialOutputs) {
    std::vector<Entry> in;
    for (int i = 0; i < 300; i++) in.push_back({IK(tdbtest::Key((uint64_t)i), 5), tdbtest::Value((uint64_t)i, 50)});
    ctx.target_file_size = 1024;
    // An earlier, unrelated addition to the edit survives the failure.
    file_meta_t *keep = nullptr;
    {
        std::string a = IK("zz", 1), b = IK("zz", 1);
        keep = file_meta_create(7, 1, S(a), S(b), 1, 1, 1, 0);
        ASSERT_EQ(TDB_OK, version_edit_add(&edit, 3, keep));
        file_meta_unref(keep);
    }
    EXPECT_EQ(TDB_ERR_CORRUPTION, Write(in, 0, 250));
    EXPECT_EQ(1, edit.n_add);
    EXPECT_EQ(7u, edit.add[0].f->number);
    EXPECT_EQ(0, CountSst());
    EXPECT_GT(next_number, 102u);  // several outputs had been started
}

TEST_F(TableWrite, UnwritableDirectoryFails) {
    std::string bad = dir.file("missing/sub");
    ctx.dbdir = bad.c_str();
    EXPECT_NE(TDB_OK, Write({{IK("a", 1), "x"}}, 0));
    EXPECT_EQ(0, edit.n_add);
    EXPECT_EQ(TDB_ERR_INVALID_ARG, Write({{IK("a", 1), "x"}}, 0, -1, 0));
}

// ---------------------------------------------------------------------------
// compaction_run end to end
// ---------------------------------------------------------------------------

class CompactionRun : public TableWrite {
  protected:
    lru_cache_t *blocks = nullptr;
    table_cache_t *tc = nullptr;
    Obsolete obs;

    void SetUp() override {
        TableWrite::SetUp();
        blocks = lru_cache_create(1 << 20, 0, sst_block_cache_deleter, nullptr);
        tc = table_cache_create(env, dir.path().c_str(), 16, blocks);
    }
    void TearDown() override {
        TableWrite::TearDown();
        table_cache_destroy(tc);
        lru_cache_destroy(blocks);
    }

    file_meta_t *Table(uint64_t number, std::vector<Entry> es) {
        return tdbtest::WriteTable(env, dir.path(), number, std::move(es), sst_options_t{TDB_COMPRESS_LZ4, 256, 0.01, 64});
    }

    // Visible latest state through a version: user key -> value (live only).
    std::map<std::string, std::string> Latest(version_t *v) {
        iter_t **its = nullptr;
        int n = 0, cap = 0;
        EXPECT_EQ(TDB_OK, version_add_iters(v, tc, &its, &n, &cap));
        iter_t *m = iter_merge(its, n, ikey_compare);
        free(its);
        std::map<std::string, std::string> out;
        std::string last;
        bool have = false;
        for (iter_seek_to_first(m); iter_valid(m); iter_next(m)) {
            slice_t k = iter_key(m);
            std::string u(ikey_user(k).data, ikey_user(k).size);
            if (have && u == last) continue;
            have = true;
            last = u;
            if (kt_is_value(ikey_type(k))) {
                slice_t val = iter_value(m);
                bool expired = ikey_type(k) == KT_PUT_TTL && val.size >= 8 &&
                               (int64_t)dec_fixed64(val.data) <= ctx.now_unix;
                if (!expired) out[u] = std::string(val.data, val.size);
            }
        }
        EXPECT_EQ(TDB_OK, iter_status(m));
        iter_destroy(m);
        return out;
    }

    size_t CountEntries(version_t *v) {
        iter_t **its = nullptr;
        int n = 0, cap = 0;
        EXPECT_EQ(TDB_OK, version_add_iters(v, tc, &its, &n, &cap));
        size_t c = 0;
        for (int i = 0; i < n; i++) {
            for (iter_seek_to_first(its[i]); iter_valid(its[i]); iter_next(its[i])) c++;
            iter_destroy(its[i]);
        }
        free(its);
        return c;
    }
};

TEST_F(CompactionRun, Level1IntoLevel2Bottommost) {
    std::map<std::string, std::string> model;
    // Level 2 (oldest data): k100..k199 at seqs 1..100.
    std::vector<Entry> l2a, l2b;
    uint64_t seq = 0;
    for (int i = 100; i < 200; i++) {
        std::string k = tdbtest::Key((uint64_t)i, 5), v = "l2-" + std::to_string(i);
        (i < 150 ? l2a : l2b).push_back({IK(k, ++seq), v});
        model[k] = v;
    }
    // Level-1 file A (older): k000..k149 at seqs 101.., long values for some.
    std::vector<Entry> a, b;
    for (int i = 0; i < 150; i++) {
        std::string k = tdbtest::Key((uint64_t)i, 5), v = i % 10 == 0 ? tdbtest::Value((uint64_t)i, 300) : "a-" + std::to_string(i);
        a.push_back({IK(k, ++seq), v});
        model[k] = v;
    }
    // Level-1 file B (newer): deletes of every third key in k090..k179, TTLs.
    for (int i = 90; i < 180; i++) {
        std::string k = tdbtest::Key((uint64_t)i, 5);
        if (i % 3 == 0) {
            b.push_back({IK(k, ++seq, KT_DELETE), ""});
            model.erase(k);
        } else if (i % 3 == 1) {
            b.push_back({IK(k, ++seq, KT_PUT_TTL), TTLValue(500, "expired")});
            model.erase(k);
        } else {
            std::string v = "b-" + std::to_string(i);
            b.push_back({IK(k, ++seq, KT_PUT_TTL), TTLValue(5000, v)});
            model[k] = TTLValue(5000, v);
        }
    }
    version_t *base = version_create(OnObsolete, &obs), *v1 = nullptr;
    version_edit_t e;
    memset(&e, 0, sizeof e);
    file_meta_t *fs[4] = {Table(1, a), Table(2, b), Table(3, l2a), Table(4, l2b)};
    version_edit_add(&e, 1, fs[0]);
    version_edit_add(&e, 1, fs[1]);
    version_edit_add(&e, 2, fs[2]);
    version_edit_add(&e, 2, fs[3]);
    for (auto *f : fs) file_meta_unref(f);
    ASSERT_EQ(TDB_OK, version_apply(base, &e, &v1)) << tdb_last_error();
    version_edit_free(&e);
    version_unref(base);
    EXPECT_EQ(model, Latest(v1));

    compaction_opts_t o = Opts();
    o.l1_file_count_trigger = 2;
    compaction_t *c = compaction_pick(v1, &o, nullptr);
    ASSERT_NE(nullptr, c);
    EXPECT_EQ((std::vector<uint64_t>{1, 2}), Inputs(c, 0));
    EXPECT_EQ((std::vector<uint64_t>{3, 4}), Inputs(c, 1));
    EXPECT_EQ(1, c->bottommost);

    ctx.target_file_size = 2048;
    ctx.bottommost = 0;  // compaction_run sets it from c
    ASSERT_EQ(TDB_OK, compaction_run(c, tc, &ctx, &edit)) << tdb_last_error();
    EXPECT_GT(edit.n_add, 2);
    EXPECT_EQ(4, edit.n_del);
    for (int i = 0; i < edit.n_add; i++) EXPECT_EQ(2, edit.add[i].level);
    version_t *v2 = nullptr;
    ASSERT_EQ(TDB_OK, version_apply(v1, &edit, &v2)) << tdb_last_error();
    version_edit_free(&edit);
    compaction_release(nullptr, c);
    EXPECT_EQ(0, version_num_files(v2, 1));
    EXPECT_EQ(model, Latest(v2));
    // Bottommost: nothing but the live newest versions remain.
    EXPECT_EQ(model.size(), CountEntries(v2));
    EXPECT_GT(ctx.bytes_read, 0u);
    EXPECT_EQ(version_level_bytes(v2, 2), ctx.bytes_written);

    // Inputs become obsolete once the old version goes.
    EXPECT_TRUE(obs.count.empty());
    version_unref(v1);
    EXPECT_EQ(4u, obs.count.size());
    for (uint64_t n : {1u, 2u, 3u, 4u}) EXPECT_EQ(1, obs.count[n]);
    version_unref(v2);
}

TEST_F(CompactionRun, NotBottommostKeepsTombstonesAndSnapshots) {
    std::vector<Entry> a = {{IK("k1", 10), "new1"}, {IK("k2", 11, KT_DELETE), ""}, {IK("k3", 12), "new3"}};
    std::vector<Entry> l2 = {{IK("k1", 5), "old1"}, {IK("k2", 6), "old2"}};
    std::vector<Entry> l3 = {{IK("k2", 1), "ancient2"}, {IK("k3", 1), "ancient3"}};
    version_t *base = version_create(OnObsolete, &obs), *v1 = nullptr;
    version_edit_t e;
    memset(&e, 0, sizeof e);
    file_meta_t *fs[3] = {Table(1, a), Table(2, l2), Table(3, l3)};
    version_edit_add(&e, 1, fs[0]);
    version_edit_add(&e, 2, fs[1]);
    version_edit_add(&e, 3, fs[2]);
    for (auto *f : fs) file_meta_unref(f);
    ASSERT_EQ(TDB_OK, version_apply(base, &e, &v1));
    version_edit_free(&e);
    version_unref(base);

    compaction_opts_t o = Opts();
    compaction_t *c = compaction_pick_level(v1, 1, &o, nullptr);
    ASSERT_NE(nullptr, c);
    EXPECT_EQ(0, c->bottommost);  // level 3 overlaps
    snaps = {5};  // a snapshot sees k1@5 and k2@... (old1, old2)
    ctx.snapshots = snaps.data();
    ctx.nsnapshots = 1;
    ASSERT_EQ(TDB_OK, compaction_run(c, tc, &ctx, &edit)) << tdb_last_error();
    compaction_release(nullptr, c);
    version_t *v2 = nullptr;
    ASSERT_EQ(TDB_OK, version_apply(v1, &edit, &v2)) << tdb_last_error();
    version_edit_free(&edit);
    version_unref(v1);

    auto get = [&](const std::string &k, uint64_t snap) {
        buf_t val{};
        unsigned t = 0;
        uint64_t s = 0;
        int rc = version_get(v2, tc, S(k), snap, &t, &s, &val);
        std::string r = rc == 1 ? (t == KT_DELETE ? "<del>" : std::string(val.data, val.size)) : "<absent>";
        buf_free(&val);
        return r;
    };
    EXPECT_EQ("new1", get("k1", SEQ_MAX));
    EXPECT_EQ("old1", get("k1", 5));      // kept for the snapshot
    EXPECT_EQ("<del>", get("k2", SEQ_MAX));  // tombstone kept: ancient2 below
    // old2 (seq 6) shared the latest stripe with the tombstone: dropped; the
    // snapshot still sees the level-3 version under it.
    EXPECT_EQ("ancient2", get("k2", 5));
    EXPECT_EQ("new3", get("k3", SEQ_MAX));
    EXPECT_EQ("ancient3", get("k3", 5));
    version_unref(v2);
}

TEST_F(CompactionRun, MissingInputFailsCleanly) {
    version_t *base = version_create(nullptr, nullptr), *v1 = nullptr;
    version_edit_t e;
    memset(&e, 0, sizeof e);
    file_meta_t *f1 = Table(1, {{IK("a", 2), "x"}});
    file_meta_t *f2 = Table(2, {{IK("a", 1), "y"}});
    version_edit_add(&e, 1, f1);
    version_edit_add(&e, 1, f2);
    file_meta_unref(f1);
    file_meta_unref(f2);
    ASSERT_EQ(TDB_OK, version_apply(base, &e, &v1));
    version_edit_free(&e);
    version_unref(base);
    char path[4096];
    sst_file_name(path, sizeof path, dir.path().c_str(), 2);
    ASSERT_EQ(0, remove(path));
    compaction_opts_t o = Opts();
    compaction_t *c = compaction_pick_level(v1, 1, &o, nullptr);
    ASSERT_NE(nullptr, c);
    EXPECT_EQ(TDB_ERR_NOT_FOUND, compaction_run(c, tc, &ctx, &edit));
    EXPECT_EQ(0, edit.n_add);
    EXPECT_EQ(0, edit.n_del);
    EXPECT_EQ(1, CountSst());  // only the surviving input
    compaction_release(nullptr, c);
    version_unref(v1);
}

}  // namespace
