// Unit tests for version/compaction's planning: picking (file count, size
// ratio with the least overlap, tombstone density, bottommost, busy inputs,
// manual), dynamic level targets and the base level, trivial moves, and the
// registry of concurrent compactions. The writing side (table_write_from_iter
// and compaction_run on real tables) is in table_write_test.cc.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "compaction_testutil.h"
#include "keys_testutil.h"
#include "testutil.h"

extern "C" {
#include "util/error.h"
#include "version/compaction.h"
#include "version/version.h"
}

namespace {

using namespace tdbtest;

// ---------------------------------------------------------------------------
// Picking (synthetic file metas: no tables needed)
// ---------------------------------------------------------------------------

TEST(CompactionPick, Level1FileCountTrigger) {
    compaction_opts_t o = Opts();
    Shape s;
    s.files = {{1, Meta(1, "a", "c", 10, 10, 0, 5)}, {1, Meta(2, "b", "e", 10, 10, 0, 6)},
               {1, Meta(3, "a", "b", 10, 10, 0, 7)}, {2, Meta(10, "a", "c", 100)},
               {2, Meta(11, "d", "f", 100)},         {2, Meta(12, "x", "z", 100)},
               {3, Meta(20, "m", "n", 100)}};
    version_t *v = s.Build();
    EXPECT_EQ(nullptr, compaction_pick(v, &o, nullptr));  // 3 < 4 files
    version_unref(v);

    s.files = {{1, Meta(1, "a", "c", 10, 10, 0, 5)}, {1, Meta(2, "b", "e", 10, 10, 0, 6)},
               {1, Meta(3, "a", "b", 10, 10, 0, 7)}, {1, Meta(4, "e", "e", 10, 10, 0, 8)},
               {2, Meta(10, "a", "c", 100)},         {2, Meta(11, "d", "f", 100)},
               {2, Meta(12, "x", "z", 100)},         {3, Meta(20, "m", "n", 100)}};
    v = s.Build();
    compaction_t *c = compaction_pick(v, &o, nullptr);
    ASSERT_NE(nullptr, c);
    EXPECT_EQ(1, c->level);
    EXPECT_EQ(2, c->output_level);
    EXPECT_DOUBLE_EQ(1.0, c->score);
    EXPECT_EQ((std::vector<uint64_t>{1, 2, 3, 4}), Inputs(c, 0));
    EXPECT_EQ((std::vector<uint64_t>{10, 11}), Inputs(c, 1));
    EXPECT_EQ(1, c->bottommost);  // level 3's file is outside [a, f]
    for (int i = 0; i < 4; i++) EXPECT_EQ(1, version_file(v, 1, i)->being_compacted);
    EXPECT_EQ(0, version_file(v, 2, 2)->being_compacted);
    // Level 1 is busy: nothing else is due.
    EXPECT_EQ(nullptr, compaction_pick(v, &o, nullptr));
    compaction_release(nullptr, c);
    for (int i = 0; i < 4; i++) EXPECT_EQ(0, version_file(v, 1, i)->being_compacted);
    EXPECT_EQ(0, version_file(v, 2, 0)->being_compacted);
    // Busy overlapping level-2 file blocks the level-1 compaction.
    version_file(v, 2, 1)->being_compacted = 1;
    EXPECT_EQ(nullptr, compaction_pick(v, &o, nullptr));
    version_file(v, 2, 1)->being_compacted = 0;
    version_unref(v);

    // A deeper overlapping file makes it not bottommost.
    s.files = {{1, Meta(1, "a", "c", 10, 10, 0, 5)}, {1, Meta(2, "b", "e", 10, 10, 0, 6)},
               {1, Meta(3, "a", "b", 10, 10, 0, 7)}, {1, Meta(4, "e", "e", 10, 10, 0, 8)},
               {6, Meta(30, "f", "g", 100)}};
    s.files.push_back({5, Meta(31, "e", "e", 100)});
    v = s.Build();
    c = compaction_pick(v, &o, nullptr);
    ASSERT_NE(nullptr, c);
    EXPECT_EQ(0, c->nin[1]);
    EXPECT_EQ(0, c->bottommost);
    compaction_release(nullptr, c);
    version_unref(v);
}

TEST(CompactionPick, SizeRatioPicksTheFileWithTheLeastOverlap) {
    compaction_opts_t o = Opts();
    // Level 2: 4 x 4000 = 16000 > 10000 (score 1.6). Level 3 target 100000.
    // Overlap in level 3 per byte of the file: file 1 ("a".."b") 2500/4000,
    // file 2 ("c".."d") 2000+900/4000, file 3 ("e".."f") 0, file 4
    // ("g".."h") 100/4000.
    Shape s;
    s.files = {{2, Meta(1, "a", "b", 4000)},  {2, Meta(2, "c", "d", 4000)},  {2, Meta(3, "e", "f", 4000)},
               {2, Meta(4, "g", "h", 4000)},  {3, Meta(10, "a", "a", 2500)}, {3, Meta(11, "c", "c", 2000)},
               {3, Meta(12, "d", "d", 900)},  {3, Meta(13, "h", "h", 100)},  {3, Meta(14, "z", "z", 500)},
               {4, Meta(20, "h", "i", 10)}};
    version_t *v = s.Build();
    // Successive picks, each left running: least overlap first.
    std::vector<compaction_t *> running;
    std::vector<uint64_t> order;
    for (;;) {
        compaction_t *c = compaction_pick(v, &o, nullptr);
        if (!c) break;
        EXPECT_EQ(2, c->level);
        EXPECT_EQ(3, c->output_level);
        ASSERT_EQ(1, c->nin[0]);
        order.push_back(c->in[0][0]->number);
        running.push_back(c);
    }
    // After file 3 and file 4 run, 8000 unmarked bytes are left: below target.
    EXPECT_EQ((std::vector<uint64_t>{3, 4}), order);
    ASSERT_EQ(2u, running.size());
    EXPECT_EQ(0, running[0]->nin[1]);
    EXPECT_EQ(1, running[0]->bottommost);
    EXPECT_EQ((std::vector<uint64_t>{13}), Inputs(running[1], 1));
    EXPECT_EQ(0, running[1]->bottommost);  // level 4 covers "h"
    for (auto *c : running) compaction_release(nullptr, c);

    // A busy overlap rules a file out; the next best is taken.
    version_file(v, 3, 3)->being_compacted = 1;  // file 13, under file 4
    version_file(v, 2, 2)->being_compacted = 1;  // file 3 itself
    compaction_t *c = compaction_pick(v, &o, nullptr);
    ASSERT_NE(nullptr, c);
    EXPECT_EQ(1u, c->in[0][0]->number);  // 2500/4000 < 2900/4000
    EXPECT_EQ((std::vector<uint64_t>{10}), Inputs(c, 1));
    compaction_release(nullptr, c);
    c = compaction_pick(v, &o, nullptr);  // released: file 1 again, not file 2
    ASSERT_NE(nullptr, c);
    EXPECT_EQ(1u, c->in[0][0]->number);
    compaction_release(nullptr, c);
    version_unref(v);
}

TEST(CompactionPick, HighestScoreWinsAndDeepLevels) {
    compaction_opts_t o = Opts();
    Shape s;
    // Level 1 at 5/4 = 1.25; level 3 at 250000/100000 = 2.5.
    for (int i = 0; i < 5; i++) s.files.push_back({1, Meta((uint64_t)(1 + i), "a", "b", 10, 10, 0, (uint64_t)(10 + i))});
    s.files.push_back({3, Meta(10, "c", "d", 250000)});
    version_t *v = s.Build();
    compaction_t *c = compaction_pick(v, &o, nullptr);
    ASSERT_NE(nullptr, c);
    EXPECT_EQ(3, c->level);
    EXPECT_EQ(4, c->output_level);
    EXPECT_NEAR(2.5, c->score, 1e-9);
    compaction_t *d = compaction_pick(v, &o, nullptr);  // then level 1
    ASSERT_NE(nullptr, d);
    EXPECT_EQ(1, d->level);
    EXPECT_EQ(nullptr, compaction_pick(v, &o, nullptr));
    compaction_release(nullptr, c);
    compaction_release(nullptr, d);
    version_unref(v);

    // The last level never pushes down by size; base_level_bytes 0 disables
    // size triggers.
    Shape t;
    t.files = {{TDB_MAX_LEVELS - 1, Meta(1, "a", "b", (uint64_t)1 << 60)}};
    v = t.Build();
    EXPECT_EQ(nullptr, compaction_pick(v, &o, nullptr));
    version_unref(v);
    Shape u;
    u.files = {{2, Meta(1, "a", "b", (uint64_t)1 << 40)}};
    v = u.Build();
    o.base_level_bytes = 0;
    EXPECT_EQ(nullptr, compaction_pick(v, &o, nullptr));
    version_unref(v);
}

TEST(CompactionPick, TombstoneDensity) {
    compaction_opts_t o = Opts();
    Shape s;
    s.files = {{3, Meta(1, "a", "c", 100, 200, 90)},    // 45%: below trigger
               {3, Meta(2, "d", "f", 100, 200, 150)},   // 75%
               {3, Meta(3, "g", "h", 100, 50, 50)},     // 100% but too few entries
               {3, Meta(4, "i", "j", 100, 1000, 600)},  // 60%
               {4, Meta(10, "e", "e", 100)},
               {TDB_MAX_LEVELS - 1, Meta(20, "x", "y", 100, 1000, 1000)}};  // last level: no next
    version_t *v = s.Build();
    compaction_t *c = compaction_pick(v, &o, nullptr);
    ASSERT_NE(nullptr, c);
    EXPECT_EQ(3, c->level);
    EXPECT_EQ(4, c->output_level);
    EXPECT_EQ((std::vector<uint64_t>{2}), Inputs(c, 0));
    EXPECT_EQ((std::vector<uint64_t>{10}), Inputs(c, 1));
    EXPECT_NEAR(0.75, c->score, 1e-9);
    EXPECT_EQ(1, c->bottommost);
    compaction_t *d = compaction_pick(v, &o, nullptr);  // next densest
    ASSERT_NE(nullptr, d);
    EXPECT_EQ((std::vector<uint64_t>{4}), Inputs(d, 0));
    EXPECT_EQ(nullptr, compaction_pick(v, &o, nullptr));
    compaction_release(nullptr, c);
    compaction_release(nullptr, d);
    o.tombstone_density_trigger = 0;  // disabled
    EXPECT_EQ(nullptr, compaction_pick(v, &o, nullptr));
    o.tombstone_density_trigger = 0.5;
    o.tombstone_density_min_entries = 10;  // file 3 now qualifies and is densest
    c = compaction_pick(v, &o, nullptr);
    ASSERT_NE(nullptr, c);
    EXPECT_EQ((std::vector<uint64_t>{3}), Inputs(c, 0));
    compaction_release(nullptr, c);
    version_unref(v);

    // Level 1 is left to its file-count trigger, however dense: under a
    // steady stream of deletes every flush is all tombstones, and merging
    // each one into the base level alone multiplied compaction writes ten
    // times (10M random deletes over 10M keys: 11.8 vs 3.5 bytes per
    // deleted key byte).
    Shape t;
    t.files = {{1, Meta(1, "a", "c", 10, 10, 0, 5)}, {1, Meta(2, "b", "d", 10, 200, 190, 6)}};
    v = t.Build();
    EXPECT_EQ(nullptr, compaction_pick(v, &o, nullptr));
    version_unref(v);
}

TEST(CompactionPick, ManualLevel) {
    compaction_opts_t o = Opts();
    Shape s;
    s.files = {{2, Meta(1, "a", "b", 10)}, {2, Meta(2, "c", "d", 10)}, {3, Meta(10, "b", "c", 10)},
               {3, Meta(11, "x", "y", 10)}, {TDB_MAX_LEVELS - 1, Meta(20, "a", "z", 10)}};
    version_t *v = s.Build();
    EXPECT_EQ(nullptr, compaction_pick_level(v, 1, &o, nullptr));  // empty
    EXPECT_EQ(nullptr, compaction_pick_level(v, 0, &o, nullptr));
    EXPECT_EQ(nullptr, compaction_pick_level(v, TDB_MAX_LEVELS, &o, nullptr));
    compaction_t *c = compaction_pick_level(v, 2, &o, nullptr);
    ASSERT_NE(nullptr, c);
    EXPECT_EQ(2, c->level);
    EXPECT_EQ(3, c->output_level);
    EXPECT_EQ((std::vector<uint64_t>{1, 2}), Inputs(c, 0));
    EXPECT_EQ((std::vector<uint64_t>{10}), Inputs(c, 1));
    EXPECT_EQ(0, c->bottommost);                           // file 20 below
    EXPECT_EQ(nullptr, compaction_pick_level(v, 3, &o, nullptr));   // file 10 busy
    EXPECT_EQ(nullptr, compaction_pick_level(v, 2, &o, nullptr));   // busy
    compaction_release(nullptr, c);
    c = compaction_pick_level(v, 3, &o, nullptr);
    ASSERT_NE(nullptr, c);
    EXPECT_EQ((std::vector<uint64_t>{10, 11}), Inputs(c, 0));
    EXPECT_EQ(0, c->nin[1]);
    compaction_release(nullptr, c);
    // The last level is rewritten in place.
    c = compaction_pick_level(v, TDB_MAX_LEVELS - 1, &o, nullptr);
    ASSERT_NE(nullptr, c);
    EXPECT_EQ(TDB_MAX_LEVELS - 1, c->output_level);
    EXPECT_EQ(1, c->bottommost);
    compaction_release(nullptr, c);
    version_unref(v);
}

// ---------------------------------------------------------------------------
// Dynamic level targets, trivial moves, the registry of running compactions
// ---------------------------------------------------------------------------


struct Targets {
    int base;
    std::vector<uint64_t> t;
};

Targets TargetsOf(version_t *v, const compaction_opts_t &o) {
    uint64_t t[TDB_MAX_LEVELS];
    Targets r;
    r.base = compaction_level_targets(v, &o, t);
    r.t.assign(t, t + TDB_MAX_LEVELS);
    return r;
}

// A version with one file of `bytes` at each given level (disjoint keys).
version_t *Sized(std::vector<std::pair<int, uint64_t>> levels) {
    Shape s;
    uint64_t n = 100;
    for (auto &p : levels) s.files.push_back({p.first, Meta(n++, "k", "m", p.second)});
    return s.Build();
}

TEST(CompactionTargets, StaticTargets) {
    compaction_opts_t o = Opts();  // static: base 10000, ratio 10
    version_t *v = Sized({{kLast, 123456789}});
    Targets r = TargetsOf(v, o);
    EXPECT_EQ(2, r.base);
    EXPECT_EQ(0u, r.t[0]);
    EXPECT_EQ(0u, r.t[1]);
    uint64_t t = 10000;
    for (int l = 2; l < TDB_MAX_LEVELS; l++, t *= 10) EXPECT_EQ(t, r.t[l]) << l;
    o.base_level_bytes = 0;
    r = TargetsOf(v, o);
    for (int l = 0; l < TDB_MAX_LEVELS; l++) EXPECT_EQ(0u, r.t[l]) << l;
    version_unref(v);
}

TEST(CompactionTargets, DynamicFollowsBottomSize) {
    compaction_opts_t o = DynOpts();  // base_level_bytes 10000, ratio 10: cut-off 1000
    struct Case {
        uint64_t bottom;
        int base;
        std::vector<uint64_t> t;  // levels 2..kLast
    };
    static_assert(TDB_MAX_LEVELS == 8, "cases assume levels 1..7");
    const std::vector<Case> cases = {
        {0, kLast, {0, 0, 0, 0, 0, 0}},                // empty: level 1 goes to the bottom
        {5000, kLast, {0, 0, 0, 0, 0, 5000}},          // smaller than the base size
        {10000, kLast, {0, 0, 0, 0, 0, 10000}},        // level 6 would get 1000: stays empty
        {10010, 6, {0, 0, 0, 0, 10000, 10010}},        // level 6 (1001) opens, raised to 10000
        {150000, 5, {0, 0, 0, 10000, 15000, 150000}},  // 1500 > 1000: level 5 is the base
        {100000000, 3, {0, 10000, 100000, 1000000, 10000000, 100000000}},
        {1000000000, 2, {10000, 100000, 1000000, 10000000, 100000000, 1000000000}},
        {1000000000000, 2, {10000000, 100000000, 1000000000, 10000000000, 100000000000, 1000000000000}},
    };
    for (const Case &c : cases) {
        version_t *v = c.bottom ? Sized({{kLast, c.bottom}}) : Shape().Build();
        Targets r = TargetsOf(v, o);
        EXPECT_EQ(c.base, r.base) << c.bottom;
        EXPECT_EQ(0u, r.t[1]);
        EXPECT_EQ(c.t, std::vector<uint64_t>(r.t.begin() + 2, r.t.end())) << c.bottom;
        // Each level below the base is ratio times the one above (or the floor).
        for (int l = r.base; l < kLast; l++) EXPECT_GE(r.t[l], o.base_level_bytes);
        version_unref(v);
    }
}

TEST(CompactionTargets, BaseNeverJumpsOverData) {
    compaction_opts_t o = DynOpts();
    // Data above the natural base (a legacy or shrinking tree): the first
    // non-empty level is the base, clamped targets make it drain down.
    version_t *v = Sized({{3, 500}, {kLast, 150000}});
    Targets r = TargetsOf(v, o);
    EXPECT_EQ(3, r.base);
    EXPECT_EQ((std::vector<uint64_t>{0, 10000, 10000, 10000, 15000, 150000}),
              std::vector<uint64_t>(r.t.begin() + 2, r.t.end()));
    version_unref(v);
    // The reference size is the largest level even if the bottom is smaller.
    v = Sized({{5, 200000}, {kLast, 50000}});
    r = TargetsOf(v, o);
    EXPECT_EQ(5, r.base);
    EXPECT_EQ(200000u, r.t[kLast]);
    EXPECT_EQ(20000u, r.t[6]);
    EXPECT_EQ(10000u, r.t[5]);
    version_unref(v);
    // base_level_bytes 0: no size targets, level 1 still goes to the first
    // non-empty level.
    o.base_level_bytes = 0;
    v = Sized({{4, 500}, {kLast, 150000}});
    r = TargetsOf(v, o);
    EXPECT_EQ(4, r.base);
    for (int l = 2; l < kLast; l++) EXPECT_EQ(0u, r.t[l]);
    version_unref(v);
}

TEST(CompactionPick, DynamicLevel1IntoBaseAndScores) {
    compaction_opts_t o = DynOpts();
    o.allow_trivial_move = 0;
    Shape s;
    // Bottom 150000 -> base 5 (target 10000), level 6 target 15000.
    for (int i = 0; i < 4; i++) s.files.push_back({1, Meta((uint64_t)(1 + i), "c", "f", 10, 10, 0, (uint64_t)(10 + i))});
    s.files.push_back({6, Meta(20, "a", "b", 9000)});
    s.files.push_back({6, Meta(21, "x", "y", 9000)});  // level 6: 18000 / 15000 = 1.2
    s.files.push_back({kLast, Meta(30, "a", "z", 150000)});
    version_t *v = s.Build();
    // Level 6 (1.2) beats level 1 (4/4 = 1.0).
    compaction_t *c = compaction_pick(v, &o, nullptr);
    ASSERT_NE(nullptr, c);
    EXPECT_EQ(6, c->level);
    EXPECT_EQ(kLast, c->output_level);
    EXPECT_NEAR(1.2, c->score, 1e-9);
    // Then level 1 straight into level 5, skipping empty levels 2..4.
    compaction_t *d = compaction_pick(v, &o, nullptr);
    ASSERT_NE(nullptr, d);
    EXPECT_EQ(1, d->level);
    EXPECT_EQ(5, d->output_level);
    EXPECT_EQ(4, d->nin[0]);
    EXPECT_EQ(0, d->nin[1]);
    EXPECT_EQ(0, d->bottommost);  // the bottom covers c..f
    // Level 6 is no longer over target once its picked file is counted out.
    EXPECT_EQ(nullptr, compaction_pick(v, &o, nullptr));
    compaction_release(nullptr, c);
    compaction_release(nullptr, d);
    // Manual level-1 compaction also goes into the base level.
    c = compaction_pick_level(v, 1, &o, nullptr);
    ASSERT_NE(nullptr, c);
    EXPECT_EQ(5, c->output_level);
    compaction_release(nullptr, c);
    version_unref(v);

    // A fresh tree: level 1 goes straight to the bottom.
    Shape t;
    for (int i = 0; i < 4; i++) t.files.push_back({1, Meta((uint64_t)(1 + i), "c", "f", 10, 10, 0, (uint64_t)(10 + i))});
    v = t.Build();
    c = compaction_pick(v, &o, nullptr);
    ASSERT_NE(nullptr, c);
    EXPECT_EQ(kLast, c->output_level);
    EXPECT_EQ(1, c->bottommost);
    compaction_release(nullptr, c);
    version_unref(v);
}

// Level-1 batching: while writes are pending and the base bytes a level-1
// compaction would rewrite exceed level 1's own, level 1 waits for twice
// its trigger; with a small base the plain trigger holds, and with the
// memtables empty (idle) two files are due.
TEST(CompactionPick, Level1BatchesWhileWritesArePending) {
    compaction_opts_t o = DynOpts();
    o.allow_trivial_move = 0;
    o.l1_idle_trigger = 2;
    auto build = [](int nl1, uint64_t base_bytes) {
        Shape s;
        for (int i = 0; i < nl1; i++)
            s.files.push_back({1, Meta((uint64_t)(1 + i), "c", "f", 1000, 10, 0, (uint64_t)(10 + i))});
        // Bottom 50000 -> base level 6 (target 10000, not reached).
        s.files.push_back({6, Meta(20, "a", "z", base_bytes)});
        s.files.push_back({kLast, Meta(30, "a", "z", 50000)});
        return s.Build();
    };
    struct Case {
        int nl1;
        uint64_t base_bytes;
        int writes_pending;
        int trigger;  // expected compaction_l1_trigger
    } cases[] = {
        {4, 9000, 0, 2},  // writes stopped: idle, due at two files
        {2, 9000, 0, 2},
        {1, 9000, 0, 2},  // one level-1 file stays when idle
        {4, 9000, 1, 8},  // base 9000 > level 1's 4000: batch
        {7, 9000, 1, 8},
        {8, 9000, 1, 4},  // twice the trigger reached: due at once
        {4, 3000, 1, 4},  // base 3000 < 4000: merging now is cheap
        {3, 9000, 1, 4},  // below the trigger: nothing to decide
    };
    for (const Case &k : cases) {
        SCOPED_TRACE(testing::Message() << k.nl1 << " level-1 files, base " << k.base_bytes << ", writes pending "
                                        << k.writes_pending);
        version_t *v = build(k.nl1, k.base_bytes);
        o.writes_pending = k.writes_pending;
        uint64_t target[TDB_MAX_LEVELS];
        EXPECT_EQ(k.trigger, compaction_l1_trigger(v, &o, compaction_level_targets(v, &o, target)));
        compaction_t *c = compaction_pick(v, &o, nullptr);
        if (k.nl1 >= k.trigger) {
            ASSERT_NE(nullptr, c);
            EXPECT_EQ(1, c->level);
            EXPECT_EQ(6, c->output_level);
            EXPECT_EQ(k.nl1, c->nin[0]);
            EXPECT_DOUBLE_EQ((double)k.nl1 / k.trigger, c->score);
            compaction_release(nullptr, c);
        } else {
            EXPECT_EQ(nullptr, c);
        }
        version_unref(v);
    }
}

TEST(CompactionPick, TrivialMoveRules) {
    compaction_opts_t o = DynOpts();
    auto pick = [&](Shape s, std::function<void(compaction_t *)> check) {
        version_t *v = s.Build();
        compaction_t *c = compaction_pick(v, &o, nullptr);
        ASSERT_NE(nullptr, c);
        check(c);
        compaction_release(nullptr, c);
        version_unref(v);
    };
    // Level 6 over target (bottom 100000 -> target 10000); the picked file
    // has no overlap in the bottom.
    auto shape = [](uint64_t deletes, bool covered_below) {
        Shape s;
        s.files = {{6, Meta(1, "a", "b", 12000, 10, deletes)},
                   {kLast, covered_below ? Meta(2, "a", "d", 100000) : Meta(2, "c", "d", 100000)}};
        return s;
    };
    pick(shape(0, false), [](compaction_t *c) {  // bottommost, no deletions: move
        EXPECT_EQ(1, c->bottommost);
        EXPECT_EQ(0, c->nin[1]);
        EXPECT_EQ(1, c->trivial_move);
    });
    pick(shape(5, false), [](compaction_t *c) {  // bottommost with deletions: rewrite drops them
        EXPECT_EQ(1, c->bottommost);
        EXPECT_EQ(0, c->trivial_move);
    });
    Shape rd = shape(0, false);  // bottommost with range tombstones: rewrite
    rd.files[0].second->num_range_deletes = 1;
    pick(rd, [](compaction_t *c) { EXPECT_EQ(0, c->trivial_move); });
    pick(shape(5, true), [](compaction_t *c) {  // overlap in the output level: rewrite
        EXPECT_EQ(1, c->nin[1]);
        EXPECT_EQ(0, c->trivial_move);
    });
    // Not bottommost: deletions do not matter (a rewrite would keep them).
    Shape nb;
    nb.files = {{5, Meta(1, "a", "b", 20000, 10, 5)}, {6, Meta(2, "c", "d", 100)}, {kLast, Meta(3, "a", "z", 150000)}};
    pick(nb, [](compaction_t *c) {
        EXPECT_EQ(5, c->level);
        EXPECT_EQ(0, c->bottommost);
        EXPECT_EQ(1, c->trivial_move);
    });
    // Level 1: all files must be pairwise disjoint.
    Shape l1;
    for (int i = 0; i < 4; i++) {
        std::string k(1, (char)('a' + 2 * i));
        l1.files.push_back({1, Meta((uint64_t)(1 + i), k, k + "z", 10, 10, 0, (uint64_t)(10 + i))});
    }
    pick(l1, [](compaction_t *c) {
        EXPECT_EQ(1, c->level);
        EXPECT_EQ(4, c->nin[0]);
        EXPECT_EQ(1, c->trivial_move);
    });
    l1.files.clear();
    for (int i = 0; i < 4; i++) {
        std::string k(1, (char)('a' + 2 * i));
        l1.files.push_back({1, Meta((uint64_t)(1 + i), k, i == 2 ? "z" : k + "z", 10, 10, 0, (uint64_t)(10 + i))});
    }
    pick(l1, [](compaction_t *c) {  // file 3 spans file 4: those two wait, the others move alone
        EXPECT_EQ(1, c->trivial_move);
        EXPECT_EQ((std::vector<uint64_t>{1, 2}), Inputs(c, 0));
    });
    // Disabled by the option; never for an in-place rewrite.
    o.allow_trivial_move = 0;
    pick(shape(0, false), [](compaction_t *c) { EXPECT_EQ(0, c->trivial_move); });
    o.allow_trivial_move = 1;
    Shape last;
    last.files = {{kLast, Meta(1, "a", "b", 10)}};
    version_t *v = last.Build();
    compaction_t *c = compaction_pick_level(v, kLast, &o, nullptr);
    ASSERT_NE(nullptr, c);
    EXPECT_EQ(0, c->trivial_move);
    version_edit_t e;
    memset(&e, 0, sizeof e);
    EXPECT_EQ(TDB_ERR_INVALID_ARG, compaction_move(c, &e));  // in place: not a move
    EXPECT_EQ(0, e.n_add);
    EXPECT_EQ(0, e.n_del);
    compaction_release(nullptr, c);
    version_unref(v);
}

// A compaction's cut keys are the starts of the files of the first
// non-empty level below its output that begin inside its range.
TEST(CompactionPick, CutKeysComeFromTheFirstLevelBelowTheOutput) {
    compaction_opts_t o = DynOpts();
    Shape s;
    s.files.push_back({5, Meta(1, "c", "m", 100)});
    // Level 6 is empty; the bottom's files start at a, d, g, k, n.
    const char *starts[] = {"a", "d", "g", "k", "n"};
    for (int i = 0; i < 5; i++) {
        std::string lo = starts[i], hi = lo + "z";
        s.files.push_back({kLast, Meta((uint64_t)(10 + i), lo, hi, 100)});
    }
    version_t *v = s.Build();
    compaction_t *c = compaction_pick_level(v, 5, &o, nullptr);
    ASSERT_NE(nullptr, c);
    ASSERT_EQ(6, c->output_level);
    ASSERT_EQ(0, c->bottommost);
    slice_t *keys = nullptr;
    int n = -1;
    ASSERT_EQ(TDB_OK, compaction_cut_keys(c, v, &keys, &n));
    std::vector<std::string> got;
    for (int i = 0; i < n; i++) got.push_back(std::string(keys[i].data, keys[i].size));
    // "a" starts before the range [c, m] and "n" after it.
    EXPECT_EQ((std::vector<std::string>{"d", "g", "k"}), got);
    free(keys);
    compaction_release(nullptr, c);
    version_unref(v);

    // Bottommost: nothing below to line up with.
    Shape b;
    b.files.push_back({5, Meta(1, "c", "m", 100)});
    b.files.push_back({kLast, Meta(2, "x", "y", 100)});
    v = b.Build();
    c = compaction_pick_level(v, 5, &o, nullptr);
    ASSERT_NE(nullptr, c);
    ASSERT_EQ(1, c->bottommost);
    ASSERT_EQ(TDB_OK, compaction_cut_keys(c, v, &keys, &n));
    EXPECT_EQ(0, n);
    free(keys);
    compaction_release(nullptr, c);
    version_unref(v);
}

// A trivial move sinks past every lower level where nothing overlaps it (no
// file, no running compaction's output), so a sequential load lands at the
// bottom instead of waiting in the base level to be rewritten.
TEST(CompactionPick, TrivialMoveSinksToTheDeepestFreeLevel) {
    compaction_opts_t o = DynOpts();
    // Level 1: four disjoint files spanning [a, gz]; the base is level 6
    // (bottom 100000 -> target 10000).
    auto shape = [](const std::string &l6lo, const std::string &l6hi, const std::string &l7lo) {
        Shape s;
        for (int i = 0; i < 4; i++) {
            std::string k(1, (char)('a' + 2 * i));
            s.files.push_back({1, Meta((uint64_t)(1 + i), k, k + "z", 10, 10, 0, (uint64_t)(10 + i))});
        }
        s.files.push_back({6, Meta(20, l6lo, l6hi, 100)});
        s.files.push_back({kLast, Meta(30, l7lo, "z", 100000)});
        return s;
    };
    auto pick_in = [&](version_t *v, compaction_state_t *st, int want_out) {
        ASSERT_EQ(6, TargetsOf(v, o).base);
        compaction_t *c = compaction_pick(v, &o, st);
        ASSERT_NE(nullptr, c);
        EXPECT_EQ(1, c->level);
        EXPECT_EQ(1, c->trivial_move);
        EXPECT_EQ(want_out, c->output_level);
        version_edit_t e;
        memset(&e, 0, sizeof e);
        ASSERT_EQ(TDB_OK, compaction_move(c, &e));
        ASSERT_EQ(4, e.n_add);
        for (int i = 0; i < e.n_add; i++) EXPECT_EQ(want_out, e.add[i].level);
        version_edit_free(&e);
        compaction_release(st, c);
    };
    auto pick = [&](Shape sh, int want_out) {
        version_t *v = sh.Build();
        pick_in(v, nullptr, want_out);
        version_unref(v);
    };
    pick(shape("m", "n", "p"), kLast);  // nothing below overlaps: the bottom
    pick(shape("m", "n", "b"), 6);      // the bottom covers [b, z]: stays in the base
    // Nothing in the bottom overlaps, but a running compaction writes
    // [0, y] into it (all of level 6: "0"-"1" and "x"-"y").
    Shape sh = shape("0", "1", "za");
    sh.files.push_back({6, Meta(21, "x", "y", 100)});
    version_t *v = sh.Build();
    compaction_state_t *st = compaction_state_create();
    compaction_t *run = compaction_pick_level(v, 6, &o, st);
    ASSERT_NE(nullptr, run);
    ASSERT_EQ(kLast, run->output_level);
    pick_in(v, st, 6);
    compaction_release(st, run);
    pick_in(v, st, kLast);  // once it finished, the way down is free
    compaction_state_free(st);
    version_unref(v);
}

TEST(CompactionPick, TrivialMoveKeepsTheFile) {
    compaction_opts_t o = DynOpts();
    Obsolete obs;
    Shape s;
    s.files = {{6, Meta(7, "a", "b", 12000, 33)}, {6, Meta(8, "x", "y", 10)}, {kLast, Meta(9, "c", "d", 100000)}};
    version_t *v1 = s.Build(OnObsolete, &obs);
    file_meta_t *f7 = version_file(v1, 6, 0);
    compaction_t *c = compaction_pick(v1, &o, nullptr);
    ASSERT_NE(nullptr, c);
    ASSERT_EQ(1, c->trivial_move);
    ASSERT_EQ(f7, c->in[0][0]);
    version_edit_t e;
    memset(&e, 0, sizeof e);
    ASSERT_EQ(TDB_OK, compaction_move(c, &e));
    ASSERT_EQ(1, e.n_del);
    ASSERT_EQ(1, e.n_add);
    EXPECT_EQ(6, e.del[0].level);
    EXPECT_EQ(7u, e.del[0].number);
    EXPECT_EQ(kLast, e.add[0].level);
    EXPECT_EQ(f7, e.add[0].f);  // the same meta: same number, size, keys, counts
    version_t *v2 = nullptr;
    ASSERT_EQ(TDB_OK, version_apply(v1, &e, &v2)) << tdb_last_error();
    version_edit_free(&e);
    compaction_release(nullptr, c);
    EXPECT_EQ(1, version_num_files(v2, 6));
    ASSERT_EQ(2, version_num_files(v2, kLast));
    EXPECT_EQ(f7, version_file(v2, kLast, 0));
    EXPECT_EQ(7u, version_file(v2, kLast, 0)->number);
    EXPECT_EQ(12000u, version_file(v2, kLast, 0)->file_size);
    EXPECT_EQ(33u, version_file(v2, kLast, 0)->num_entries);
    EXPECT_EQ(0, version_file(v2, kLast, 0)->being_compacted);
    // The old version goes: nothing became obsolete (file 7 lives on).
    version_unref(v1);
    EXPECT_TRUE(obs.count.empty());
    version_unref(v2);
    EXPECT_EQ((std::map<uint64_t, int>{{7, 1}, {8, 1}, {9, 1}}), obs.count);
}

TEST(CompactionState, ParallelDisjointPicks) {
    compaction_opts_t o = Opts();  // static: level 2 target 10000
    o.allow_trivial_move = 1;
    compaction_state_t *st = compaction_state_create();
    ASSERT_NE(nullptr, st);
    Shape s;
    const char *keys[] = {"a", "c", "e", "g", "i", "k"};
    for (int i = 0; i < 6; i++) {  // 6 x 3000 = 18000 at level 2, each over its own level-3 file
        std::string k = keys[i];
        s.files.push_back({2, Meta((uint64_t)(1 + i), k, k + "m", 3000)});
        s.files.push_back({3, Meta((uint64_t)(11 + i), k + "a", k + "b", 100)});
    }
    version_t *v = s.Build();
    std::vector<compaction_t *> cs;
    while (compaction_t *c = compaction_pick(v, &o, st)) cs.push_back(c);
    // Three run at once: then only 9000 unmarked bytes remain (< 10000).
    ASSERT_EQ(3u, cs.size());
    EXPECT_EQ(3, compaction_state_running(st));
    for (size_t i = 0; i < cs.size(); i++) {
        EXPECT_EQ(2, cs[i]->level);
        EXPECT_EQ(1, cs[i]->nin[1]);
        EXPECT_EQ(0, cs[i]->trivial_move);
        for (size_t j = 0; j < i; j++) {  // disjoint output ranges
            bool disjoint = slice_compare(cs[i]->largest, cs[j]->smallest) < 0 ||
                            slice_compare(cs[j]->largest, cs[i]->smallest) < 0;
            EXPECT_TRUE(disjoint) << i << " " << j;
        }
    }
    file_meta_t *f1 = cs[1]->in[0][0];  // borrowed from v
    compaction_release(st, cs[1]);
    EXPECT_EQ(2, compaction_state_running(st));
    EXPECT_EQ(0, f1->being_compacted);
    EXPECT_EQ(1, cs[0]->in[0][0]->being_compacted);  // cs[0] still holds its marks
    compaction_release(st, cs[0]);
    compaction_release(st, cs[2]);
    EXPECT_EQ(0, compaction_state_running(st));
    for (int i = 0; i < version_num_files(v, 2); i++) EXPECT_EQ(0, version_file(v, 2, i)->being_compacted);
    version_unref(v);
    compaction_state_free(st);
}

TEST(CompactionState, OverlappingOutputsRefused) {
    compaction_opts_t o = DynOpts();
    compaction_state_t *st = compaction_state_create();
    // Level 6 file [c, d] moves into a gap of the bottom between [a, b] and
    // [e, f]: no input is shared with a manual rewrite of the bottom, but
    // both would write [c, d] into it.
    Shape s;
    s.files = {{6, Meta(1, "c", "d", 50000)}, {kLast, Meta(2, "a", "b", 50000)}, {kLast, Meta(3, "e", "f", 50000)}};
    version_t *v = s.Build();
    compaction_t *c = compaction_pick(v, &o, st);
    ASSERT_NE(nullptr, c);
    EXPECT_EQ(6, c->level);
    EXPECT_EQ(kLast, c->output_level);
    EXPECT_EQ(0, c->nin[1]);
    EXPECT_EQ(nullptr, compaction_pick_level(v, kLast, &o, st));  // refused: overlapping output
    compaction_t *u = compaction_pick_level(v, kLast, &o, nullptr);  // marks alone would allow it
    ASSERT_NE(nullptr, u);
    compaction_release(nullptr, u);
    EXPECT_EQ(1, compaction_state_running(st));
    compaction_release(st, c);  // release frees the range
    EXPECT_EQ(0, compaction_state_running(st));
    compaction_t *m = compaction_pick_level(v, kLast, &o, st);
    ASSERT_NE(nullptr, m);
    EXPECT_EQ(2, m->nin[0]);
    compaction_release(st, m);
    version_unref(v);
    compaction_state_free(st);
}

TEST(CompactionState, Level1ExcludesLevel1ButNotDeeperWork) {
    compaction_opts_t o = DynOpts();
    compaction_state_t *st = compaction_state_create();
    Shape s;
    // Bottom 150000 -> base 5. Level 1 at its trigger; level 6 over target
    // in a range level 1 does not touch.
    for (int i = 0; i < 4; i++) s.files.push_back({1, Meta((uint64_t)(1 + i), "c", "f", 10, 10, 0, (uint64_t)(10 + i))});
    s.files.push_back({6, Meta(20, "p", "q", 20000)});
    s.files.push_back({kLast, Meta(30, "a", "z", 150000)});
    version_t *v = s.Build();
    compaction_t *a = compaction_pick(v, &o, st);  // level 6 first (1.33)
    compaction_t *b = compaction_pick(v, &o, st);  // level 1 alongside
    ASSERT_NE(nullptr, a);
    ASSERT_NE(nullptr, b);
    EXPECT_EQ(6, a->level);
    EXPECT_EQ(1, b->level);
    EXPECT_EQ(5, b->output_level);
    EXPECT_EQ(2, compaction_state_running(st));
    // A flush lands a new level-1 file meanwhile: it must wait for the
    // running level-1 compaction (it would otherwise move a newer file
    // down next to older ones still in flight).
    version_edit_t e;
    memset(&e, 0, sizeof e);
    for (int i = 0; i < 4; i++) {
        file_meta_t *f = Meta((uint64_t)(40 + i), "c", "d", 10, 10, 0, (uint64_t)(50 + i));
        version_edit_add(&e, 1, f);
        file_meta_unref(f);
    }
    version_t *v2 = nullptr;
    ASSERT_EQ(TDB_OK, version_apply(v, &e, &v2));
    version_edit_free(&e);
    EXPECT_EQ(nullptr, compaction_pick(v2, &o, st));
    EXPECT_EQ(nullptr, compaction_pick_level(v2, 1, &o, st));
    // The registry alone enforces it: without the marked files in view
    // (a version holding only the new ones), level 1 is still excluded.
    memset(&e, 0, sizeof e);
    for (uint64_t n = 1; n <= 4; n++) version_edit_del(&e, 1, n);
    version_t *v3 = nullptr;
    ASSERT_EQ(TDB_OK, version_apply(v2, &e, &v3));
    version_edit_free(&e);
    EXPECT_EQ(nullptr, compaction_pick(v3, &o, st));
    EXPECT_EQ(nullptr, compaction_pick_level(v3, 1, &o, st));
    compaction_t *x = compaction_pick_level(v3, 1, &o, nullptr);
    ASSERT_NE(nullptr, x);
    compaction_release(nullptr, x);
    version_unref(v3);
    compaction_release(st, b);
    compaction_t *c = compaction_pick(v2, &o, st);
    ASSERT_NE(nullptr, c);
    EXPECT_EQ(1, c->level);
    EXPECT_EQ(8, c->nin[0]);
    compaction_release(st, c);
    compaction_release(st, a);
    EXPECT_EQ(0, compaction_state_running(st));
    version_unref(v2);
    version_unref(v);
    compaction_state_free(st);
}

}  // namespace
