// Tests of level-1 runs: a flush of writers filling separate key ranges
// at once is cut into one table per run (version/flush_runs.c, the table
// writer's cut_every), level 1 is due by runs rather than files, and
// level-1 files that each fall in a gap of the base level move there as
// they are (version/compaction.c).
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "compaction_testutil.h"

namespace {

using namespace tdbtest;

// Entries of `runs` writers, each filling its own key range ("w<r>k...") in
// order, `per` keys each. interleaved: the writers take turns (sequences
// alternate); otherwise each writes all its keys before the next starts.
std::vector<Entry> Runs(int runs, int per, bool interleaved, int versions = 1) {
    std::vector<Entry> es;
    uint64_t seq = 1;
    for (int v = 0; v < versions; v++)
        for (int i = 0; i < per; i++)
            for (int r = 0; r < runs; r++) {
                uint64_t s = interleaved ? seq++ : (uint64_t)(v * runs * per + r * per + i + 1);
                es.push_back({IK("w" + std::to_string(r) + tdbtest::Key((uint64_t)i, 8), s), "v"});
            }
    return es;
}

std::vector<std::string> RunCuts(std::vector<Entry> es) {
    iter_t *it = NewVecIter(std::move(es));
    slice_t cuts[FLUSH_MAX_RUNS - 1];
    int n = flush_run_cuts(it, cuts);
    std::vector<std::string> r;
    for (int i = 0; i < n; i++) r.push_back(std::string(cuts[i].data, cuts[i].size));
    iter_destroy(it);
    return r;
}

TEST(FlushRuns, WritersFillingSeparateRangesAreCutApart) {
    EXPECT_EQ((std::vector<std::string>{"w1" + tdbtest::Key(0, 8)}), RunCuts(Runs(2, 2000, true)));
    EXPECT_EQ((std::vector<std::string>{"w1" + tdbtest::Key(0, 8), "w2" + tdbtest::Key(0, 8),
                                        "w3" + tdbtest::Key(0, 8)}),
              RunCuts(Runs(4, 2000, true)));
    // Older versions of a key are not a border.
    EXPECT_EQ((std::vector<std::string>{"w1" + tdbtest::Key(0, 8)}), RunCuts(Runs(2, 2000, true, 3)));
    // Written one after the other: the first writer may come back.
    EXPECT_EQ((std::vector<std::string>{"w1" + tdbtest::Key(0, 8)}), RunCuts(Runs(2, 4000, false)));
}

TEST(FlushRuns, NoCutWhereRunsAreNotTold) {
    EXPECT_TRUE(RunCuts(Runs(5, 2000, true)).empty()) << "more runs than FLUSH_MAX_RUNS";
    EXPECT_TRUE(RunCuts(Runs(2, 1000, true)).empty()) << "runs under 1024 entries";
    EXPECT_TRUE(RunCuts({}).empty());
    // A small run beside large ones: its border is the only one with the
    // shortest prefix, and the run is too small for a table.
    std::vector<Entry> es = Runs(2, 40000, true);
    for (int i = 0; i < 1000; i++) es.push_back({IK("x" + tdbtest::Key((uint64_t)i, 8), (uint64_t)i * 80 + 1), "v"});
    EXPECT_TRUE(RunCuts(es).empty());
    // Random keys.
    es.clear();
    uint64_t x = 88172645463325252ull;
    for (int i = 0; i < 20000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        es.push_back({IK(tdbtest::Key(x % 1000000000000ull, 16), (uint64_t)i + 1), "v"});
    }
    EXPECT_TRUE(RunCuts(es).empty());
}

// With cut_every the writer cuts at each cut key whatever the size: a flush
// of two runs writes two key-disjoint tables.
TEST_F(TableWrite, CutEveryEndsAnOutputAtEachCutKey) {
    std::vector<Entry> in = Runs(2, 2000, true);
    std::string cut = "w1" + tdbtest::Key(0, 8);
    slice_t cuts[] = {S(cut)};
    ctx.target_file_size = UINT64_MAX;
    ctx.cut_keys = cuts;
    ctx.ncut = 1;
    ctx.cut_every = 1;
    ASSERT_EQ(TDB_OK, Write(in, 0, -1, 1)) << tdb_last_error();
    ASSERT_EQ(2, edit.n_add);
    slice_t hi0 = ikey_user(buf_slice(&edit.add[0].f->largest)), lo1 = ikey_user(buf_slice(&edit.add[1].f->smallest));
    EXPECT_EQ("w0" + tdbtest::Key(1999, 8), std::string(hi0.data, hi0.size));
    EXPECT_EQ(cut, std::string(lo1.data, lo1.size));
    SortEntries(&in);
    EXPECT_EQ(in, ReadAll());
}

// A level-1 file written by a flush, with its sequence range.
file_meta_t *Flushed(uint64_t number, const std::string &lo, const std::string &hi, uint64_t min_seq,
                     uint64_t max_seq, uint64_t deletes = 0) {
    std::string a = IK(lo, max_seq), b = IK(hi, min_seq);
    return file_meta_create(number, 1000, S(a), S(b), min_seq, max_seq, 10, deletes);
}

// Level 1 is due by runs (flushes), not files: the tables of a flush cut at
// key runs are key-disjoint and their sequence ranges interleave.
TEST(CompactionPick, Level1CountsRunsNotFiles) {
    compaction_opts_t o = Opts();
    auto three = [] {  // three flushes: cut in 3, cut in 2, whole
        Shape s;
        s.files = {{1, Flushed(1, "a", "b", 1, 30)},  {1, Flushed(2, "c", "d", 2, 29)},
                   {1, Flushed(3, "e", "f", 3, 28)},  {1, Flushed(4, "a", "c", 31, 60)},
                   {1, Flushed(5, "d", "f", 32, 59)}, {1, Flushed(6, "a", "f", 61, 90)},
                   {2, Meta(10, "a", "f", 100)}};
        return s;
    };
    Shape s = three();
    version_t *v = s.Build();
    EXPECT_EQ(3, version_l1_runs(v));
    EXPECT_EQ(nullptr, compaction_pick(v, &o, nullptr));  // 6 files, 3 runs < 4
    version_unref(v);

    s = three();
    s.files.push_back({1, Flushed(7, "b", "e", 91, 100)});
    v = s.Build();
    EXPECT_EQ(4, version_l1_runs(v));
    compaction_t *c = compaction_pick(v, &o, nullptr);
    ASSERT_NE(nullptr, c);
    EXPECT_EQ(1, c->level);
    EXPECT_DOUBLE_EQ(1.0, c->score);
    EXPECT_EQ((std::vector<uint64_t>{1, 2, 3, 4, 5, 6, 7}), Inputs(c, 0));
    compaction_release(nullptr, c);
    version_unref(v);

    // Sequence ranges that meet do not make one run of files whose keys
    // overlap, nor do key-disjoint files whose sequence ranges do not meet.
    s.files = {{1, Flushed(1, "a", "c", 1, 30)}, {1, Flushed(2, "b", "d", 2, 29)},
               {1, Flushed(3, "x", "y", 31, 40)}, {1, Flushed(4, "e", "f", 41, 50)}};
    v = s.Build();
    EXPECT_EQ(4, version_l1_runs(v));
    version_unref(v);
}

// Level-1 files that fall in the gaps of the base level each on their own,
// overlapping no other level-1 file, move there as they are, although their
// union overlaps base-level files; the others wait or merge.
TEST(CompactionPick, Level1MovesIntoTheBaseLevelsGaps) {
    compaction_opts_t o = DynOpts();  // bottom 3000 bytes: the base level is the bottom
    // Four flushes of two writers, one filling d..., one h...; `first_lo`
    // starts the first one, file 7 holds `deletes`; `spanning`: a fifth
    // flush of keys all over (file 9).
    auto shape = [](const std::string &first_lo, uint64_t deletes, bool spanning) {
        Shape s;
        s.files = {{kLast, Meta(20, "b", "c", 1000)}, {kLast, Meta(21, "f", "g", 1000)},
                   {kLast, Meta(22, "j", "k", 1000)}};
        for (int r = 0; r < 4; r++) {
            std::string d = "d" + std::to_string(r), h = "h" + std::to_string(r);
            uint64_t lo = 10 * (uint64_t)r + 1, hi = lo + 8;
            s.files.push_back({1, Flushed(1 + 2 * (uint64_t)r, r == 0 ? first_lo : d, d + "z", lo, hi, r == 3 ? deletes : 0)});
            s.files.push_back({1, Flushed(2 + 2 * (uint64_t)r, h, h + "z", lo + 1, hi - 1)});
        }
        if (spanning) s.files.push_back({1, Flushed(9, "a", "z", 41, 50)});
        return s;
    };
    auto pick = [&](Shape s, std::function<void(version_t *, compaction_t *)> check) {
        version_t *v = s.Build();
        compaction_t *c = compaction_pick(v, &o, nullptr);
        ASSERT_NE(nullptr, c);
        EXPECT_EQ(1, c->level);
        check(v, c);
        compaction_release(nullptr, c);
        version_unref(v);
    };
    const std::vector<uint64_t> all = {1, 2, 3, 4, 5, 6, 7, 8};
    pick(shape("d0", 0, false), [&](version_t *v, compaction_t *c) {
        EXPECT_EQ(4, version_l1_runs(v));
        EXPECT_EQ(kLast, c->output_level);
        EXPECT_EQ(all, Inputs(c, 0));
        EXPECT_EQ(0, c->nin[1]);  // f..g lies between d... and h... but overlaps neither
        EXPECT_EQ(1, c->trivial_move);
        version_edit_t e;
        memset(&e, 0, sizeof e);
        ASSERT_EQ(TDB_OK, compaction_move(c, &e));
        version_t *nv = nullptr;
        EXPECT_EQ(TDB_OK, version_apply(v, &e, &nv)) << tdb_last_error();  // the bottom stays disjoint
        EXPECT_EQ(11, version_num_files(nv, kLast));
        version_unref(nv);
        version_edit_free(&e);
    });
    // A file overlapping a base-level file stays; the others move.
    pick(shape("b5", 0, false), [](version_t *, compaction_t *c) {
        EXPECT_EQ(1, c->trivial_move);
        EXPECT_EQ((std::vector<uint64_t>{2, 3, 4, 5, 6, 7, 8}), Inputs(c, 0));
    });
    // A file with tombstones stays, to merge with what they delete.
    pick(shape("d0", 3, false), [](version_t *, compaction_t *c) {
        EXPECT_EQ(1, c->trivial_move);
        EXPECT_EQ((std::vector<uint64_t>{1, 2, 3, 4, 5, 6, 8}), Inputs(c, 0));
    });
    // A flush over every key: no file is free, so all of level 1 merges with
    // every base-level file in its union's range.
    pick(shape("d0", 0, true), [](version_t *, compaction_t *c) {
        EXPECT_EQ(0, c->trivial_move);
        EXPECT_EQ(9, c->nin[0]);
        EXPECT_EQ((std::vector<uint64_t>{20, 21, 22}), Inputs(c, 1));
    });
    o.allow_trivial_move = 0;
    pick(shape("d0", 0, false), [&](version_t *, compaction_t *c) {
        EXPECT_EQ(0, c->trivial_move);
        EXPECT_EQ(all, Inputs(c, 0));
        EXPECT_EQ((std::vector<uint64_t>{21}), Inputs(c, 1));
    });
}

}  // namespace
