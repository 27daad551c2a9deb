// Unit tests for version: applying edits (adds, deletes, moves, ordering,
// guards), refcounting and the obsolete callback, point lookups across
// levels on real tables, the lazy level iterator, and the table cache.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

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
#include "version/table_cache.h"
#include "version/version.h"
}

namespace {

using tdbtest::IK;

using tdbtest::S;

file_meta_t *MakeFile(uint64_t number, const std::string &lo, const std::string &hi, uint64_t min_seq,
                      uint64_t max_seq, uint64_t size = 1000) {
    std::string a = IK(lo, max_seq), b = IK(hi, min_seq);
    return file_meta_create(number, size, S(a), S(b), min_seq, max_seq, 10, 0);
}

struct Obsolete {
    std::map<uint64_t, int> count;
};
void OnObsolete(void *ctx, uint64_t number) { ((Obsolete *)ctx)->count[number]++; }

struct Edit {
    version_edit_t e;
    Edit() { memset(&e, 0, sizeof e); }
    ~Edit() { version_edit_free(&e); }
    // Add a fresh file (the edit keeps the only reference).
    void Add(int level, file_meta_t *f) {
        EXPECT_EQ(TDB_OK, version_edit_add(&e, level, f));
        file_meta_unref(f);
    }
    void Del(int level, uint64_t n) { EXPECT_EQ(TDB_OK, version_edit_del(&e, level, n)); }
};

std::vector<uint64_t> Numbers(const version_t *v, int level) {
    std::vector<uint64_t> r;
    for (int i = 0; i < version_num_files(v, level); i++) r.push_back(version_file(v, level, i)->number);
    return r;
}

TEST(Version, EmptyVersion) {
    version_t *v = version_create(nullptr, nullptr);
    for (int l = -1; l <= TDB_MAX_LEVELS; l++) {
        EXPECT_EQ(0, version_num_files(v, l));
        EXPECT_EQ(0u, version_level_bytes(v, l));
    }
    EXPECT_EQ(nullptr, version_file(v, 1, 0));
    version_unref(v);
}

TEST(Version, ApplyAddsDeletesAndOrders) {
    version_t *base = version_create(nullptr, nullptr);
    Edit e1;
    e1.Add(1, MakeFile(1, "a", "z", 1, 10, 100));
    e1.Add(1, MakeFile(2, "c", "d", 30, 40, 200));   // newest
    e1.Add(1, MakeFile(3, "b", "q", 11, 29, 300));
    e1.Add(2, MakeFile(4, "m", "p", 1, 5, 1000));
    e1.Add(2, MakeFile(5, "a", "c", 1, 5, 2000));
    e1.Add(2, MakeFile(6, "d", "f", 1, 5, 3000));
    e1.Add(5, MakeFile(7, "a", "b", 1, 1, 7));
    version_t *v1 = nullptr;
    ASSERT_EQ(TDB_OK, version_apply(base, &e1.e, &v1)) << tdb_last_error();
    EXPECT_EQ((std::vector<uint64_t>{2, 3, 1}), Numbers(v1, 1));  // max_seq descending
    EXPECT_EQ((std::vector<uint64_t>{5, 6, 4}), Numbers(v1, 2));  // smallest ascending
    EXPECT_EQ((std::vector<uint64_t>{7}), Numbers(v1, 5));
    EXPECT_EQ(600u, version_level_bytes(v1, 1));
    EXPECT_EQ(6000u, version_level_bytes(v1, 2));
    EXPECT_EQ(7u, version_level_bytes(v1, 5));
    EXPECT_EQ(7, version_total_files(v1));
    EXPECT_EQ(0, version_total_files(base));  // base unchanged

    // Delete one, move one down (delete + add of the same file), add one.
    Edit e2;
    e2.Del(1, 3);
    e2.Del(2, 6);
    file_meta_t *f6 = version_file(v1, 2, 1);
    ASSERT_EQ(6u, f6->number);
    ASSERT_EQ(TDB_OK, version_edit_add(&e2.e, 3, f6));
    e2.Add(1, MakeFile(8, "a", "a", 41, 50, 1));
    version_t *v2 = nullptr;
    ASSERT_EQ(TDB_OK, version_apply(v1, &e2.e, &v2)) << tdb_last_error();
    EXPECT_EQ((std::vector<uint64_t>{8, 2, 1}), Numbers(v2, 1));
    EXPECT_EQ((std::vector<uint64_t>{5, 4}), Numbers(v2, 2));
    EXPECT_EQ((std::vector<uint64_t>{6}), Numbers(v2, 3));
    EXPECT_EQ(3000u, version_level_bytes(v2, 3));
    EXPECT_EQ((std::vector<uint64_t>{2, 3, 1}), Numbers(v1, 1));  // v1 unchanged
    version_unref(v1);
    version_unref(v2);
    version_unref(base);
}

TEST(Version, Level1TiesBrokenByNumber) {
    version_t *base = version_create(nullptr, nullptr);
    Edit e;
    e.Add(1, MakeFile(3, "a", "b", 5, 5));
    e.Add(1, MakeFile(9, "a", "b", 5, 5));
    e.Add(1, MakeFile(4, "a", "b", 5, 5));
    version_t *v = nullptr;
    ASSERT_EQ(TDB_OK, version_apply(base, &e.e, &v));
    EXPECT_EQ((std::vector<uint64_t>{9, 4, 3}), Numbers(v, 1));
    version_unref(v);
    version_unref(base);
}

TEST(Version, ApplyGuards) {
    Obsolete obs;
    version_t *base = version_create(OnObsolete, &obs);
    {
        Edit e;
        e.Add(2, MakeFile(1, "a", "m", 1, 1));
        e.Add(3, MakeFile(2, "a", "m", 1, 1));
        version_t *v = nullptr;
        ASSERT_EQ(TDB_OK, version_apply(base, &e.e, &v));
        version_unref(base);
        base = v;
    }
    struct Case {
        const char *what;
        int code;
        std::function<void(Edit &)> build;
    };
    std::vector<Case> cases = {
        {"overlap at level 2", TDB_ERR_CORRUPTION, [](Edit &e) { e.Add(2, MakeFile(10, "k", "z", 1, 1)); }},
        {"overlap inside the edit", TDB_ERR_CORRUPTION,
         [](Edit &e) { e.Add(4, MakeFile(10, "a", "k", 1, 1)); e.Add(4, MakeFile(11, "j", "z", 1, 1)); }},
        {"same user key in two files", TDB_ERR_CORRUPTION, [](Edit &e) { e.Add(2, MakeFile(10, "m", "z", 1, 1)); }},
        {"delete missing file", TDB_ERR_CORRUPTION, [](Edit &e) { e.Del(2, 99); }},
        {"delete from wrong level", TDB_ERR_CORRUPTION, [](Edit &e) { e.Del(3, 1); }},
        {"delete twice", TDB_ERR_CORRUPTION, [](Edit &e) { e.Del(2, 1); e.Del(2, 1); }},
        {"duplicate number", TDB_ERR_CORRUPTION, [](Edit &e) { e.Add(1, MakeFile(2, "a", "b", 1, 1)); }},
        {"duplicate within edit", TDB_ERR_CORRUPTION,
         [](Edit &e) { e.Add(1, MakeFile(20, "a", "b", 1, 1)); e.Add(5, MakeFile(20, "a", "b", 1, 1)); }},
    };
    for (auto &c : cases) {
        Edit e;
        c.build(e);
        version_t *v = reinterpret_cast<version_t *>(1);
        EXPECT_EQ(c.code, version_apply(base, &e.e, &v)) << c.what;
        EXPECT_EQ(nullptr, v) << c.what;
        EXPECT_GT(strlen(tdb_last_error()), 0u);
    }
    // Files only ever in failed edits are never reported obsolete.
    EXPECT_TRUE(obs.count.empty());
    // Adjacent (not overlapping) ranges are fine.
    {
        Edit e;
        e.Add(2, MakeFile(10, "ma", "z", 1, 1));
        version_t *v = nullptr;
        EXPECT_EQ(TDB_OK, version_apply(base, &e.e, &v)) << tdb_last_error();
        version_unref(v);
    }
    // Bad levels are argument errors.
    version_edit_t e;
    memset(&e, 0, sizeof e);
    file_meta_t *f = MakeFile(50, "a", "b", 1, 1);
    EXPECT_EQ(TDB_ERR_INVALID_ARG, version_edit_add(&e, 0, f));
    EXPECT_EQ(TDB_ERR_INVALID_ARG, version_edit_add(&e, TDB_MAX_LEVELS, f));
    EXPECT_EQ(TDB_ERR_INVALID_ARG, version_edit_del(&e, 0, 1));
    EXPECT_EQ(0, e.n_add);
    // So are negative counts (an edit filled in by hand), before anything is read or allocated.
    version_t *v = nullptr;
    e.n_del = -1;
    EXPECT_EQ(TDB_ERR_INVALID_ARG, version_apply(base, &e, &v));
    EXPECT_EQ(nullptr, v);
    e.n_del = 0;
    e.n_add = -2;
    EXPECT_EQ(TDB_ERR_INVALID_ARG, version_apply(base, &e, &v));
    EXPECT_EQ(nullptr, v);
    e.n_add = 0;
    file_meta_unref(f);
    version_edit_free(&e);
    version_unref(base);
    EXPECT_EQ(1, obs.count[1]);
    EXPECT_EQ(1, obs.count[2]);
    EXPECT_EQ(1, obs.count[10]);
    EXPECT_EQ(3u, obs.count.size());
}

TEST(Version, ObsoleteCallbackExactlyOncePerFile) {
    Obsolete obs;
    version_t *v0 = version_create(OnObsolete, &obs);
    Edit e1;
    e1.Add(1, MakeFile(1, "a", "b", 1, 1));
    e1.Add(1, MakeFile(2, "a", "b", 2, 2));
    e1.Add(2, MakeFile(3, "a", "b", 1, 1));
    version_t *v1 = nullptr;
    ASSERT_EQ(TDB_OK, version_apply(v0, &e1.e, &v1));
    version_edit_free(&e1.e);  // the edit lets go: v1 alone holds the files
    EXPECT_TRUE(obs.count.empty());

    Edit e2;
    e2.Del(1, 1);
    e2.Add(3, MakeFile(4, "a", "b", 1, 1));
    version_t *v2 = nullptr;
    ASSERT_EQ(TDB_OK, version_apply(v1, &e2.e, &v2));
    version_ref(v1);  // a reader still holds v1
    version_unref(v1);
    EXPECT_TRUE(obs.count.empty());
    version_unref(v1);  // last holder of file 1
    EXPECT_EQ(1u, obs.count.size());
    EXPECT_EQ(1, obs.count[1]);

    // File 4 is in v2 and the edit: gone only when both let go.
    version_unref(v2);
    EXPECT_EQ(1, obs.count[2]);
    EXPECT_EQ(1, obs.count[3]);
    EXPECT_EQ(0, obs.count.count(4));
    version_edit_free(&e2.e);
    EXPECT_EQ(1, obs.count[4]);
    for (auto &p : obs.count) EXPECT_EQ(1, p.second) << p.first;
    version_unref(v0);
    EXPECT_EQ(4u, obs.count.size());
}

TEST(Version, ConcurrentRefsReportEachFileOnce) {
    // Readers take and drop references to successive versions while a
    // writer replaces them; every file is reported exactly once at the end.
    std::atomic<int> reports{0};
    static std::atomic<int> per_file[1000];
    for (auto &x : per_file) x = 0;
    auto fn = [](void *ctx, uint64_t number) {
        ((std::atomic<int> *)ctx)->fetch_add(1);
        per_file[number].fetch_add(1);
    };
    version_t *cur = version_create(fn, &reports);
    std::mutex mu;  // the "db mutex": guards handing out refs to `cur`
    std::atomic<bool> stop{false};
    std::vector<std::thread> readers;
    for (int t = 0; t < 4; t++) {
        readers.emplace_back([&] {
            while (!stop.load()) {
                version_t *v;
                {
                    std::lock_guard<std::mutex> g(mu);
                    v = cur;
                    version_ref(v);
                }
                for (int l = 1; l < TDB_MAX_LEVELS; l++)
                    for (int i = 0; i < version_num_files(v, l); i++) EXPECT_GT(version_file(v, l, i)->number, 0u);
                version_unref(v);
            }
        });
    }
    uint64_t next = 1;
    std::vector<uint64_t> live;
    for (int round = 0; round < 300; round++) {
        Edit e;
        e.Add(1, MakeFile(next, "a", "b", next, next));
        live.push_back(next++);
        if (live.size() > 3) {
            e.Del(1, live.front());
            live.erase(live.begin());
        }
        version_t *nv = nullptr;
        std::lock_guard<std::mutex> g(mu);
        ASSERT_EQ(TDB_OK, version_apply(cur, &e.e, &nv));
        version_unref(cur);
        cur = nv;
    }
    stop = true;
    for (auto &t : readers) t.join();
    version_unref(cur);
    EXPECT_EQ(300, reports.load());
    for (uint64_t n = 1; n <= 300; n++) EXPECT_EQ(1, per_file[n].load()) << n;
}

// ---------------------------------------------------------------------------
// Real tables
// ---------------------------------------------------------------------------

struct Entry {
    std::string ik, value;
};

class VersionTables : public ::testing::Test {
  protected:
    tdbtest::TempDir dir;
    env_t *env = env_posix();
    lru_cache_t *blocks = nullptr;
    table_cache_t *tc = nullptr;
    Obsolete obs;

    void SetUp() override {
        blocks = lru_cache_create(1 << 20, 2, sst_block_cache_deleter, nullptr);
        tc = table_cache_create(env, dir.path().c_str(), 2, blocks);  // tiny: forces reopening
        ASSERT_NE(nullptr, tc);
    }
    void TearDown() override {
        table_cache_destroy(tc);
        lru_cache_destroy(blocks);
    }

    // Write a table from entries (sorted here) and return its meta.
    file_meta_t *Table(uint64_t number, std::vector<Entry> es) {
        size_t n = es.size();
        file_meta_t *f = tdbtest::WriteTable(env, dir.path(), number, std::move(es), sst_options_t{TDB_COMPRESS_NONE, 128, 0.01, 0});
        EXPECT_EQ(n, f->num_entries);
        return f;
    }

    std::string Get(version_t *v, const std::string &k, uint64_t snap, unsigned *type = nullptr,
                    uint64_t *seq = nullptr, int *rc_out = nullptr) {
        buf_t val{};
        unsigned t = 0;
        uint64_t s = 0;
        int rc = version_get(v, tc, S(k), snap, &t, &s, &val);
        if (rc_out) *rc_out = rc;
        std::string r = rc == 1 ? std::string(val.data, val.size) : (rc == 0 ? "<absent>" : "<error>");
        if (rc == 1 && t == KT_DELETE) r = "<deleted>";
        if (type) *type = t;
        if (seq) *seq = s;
        buf_free(&val);
        return r;
    }
};

TEST_F(VersionTables, FileMetaFromProps) {
    file_meta_t *f = Table(7, {{IK("b", 5), "x"}, {IK("a", 9, KT_DELETE), ""}, {IK("c", 3), "y"}});
    EXPECT_EQ(7u, f->number);
    EXPECT_EQ(IK("a", 9, KT_DELETE), std::string(f->smallest.data, f->smallest.size));
    EXPECT_EQ(IK("c", 3), std::string(f->largest.data, f->largest.size));
    EXPECT_EQ(3u, f->min_seq);
    EXPECT_EQ(9u, f->max_seq);
    EXPECT_EQ(3u, f->num_entries);
    EXPECT_EQ(1u, f->num_deletes);
    EXPECT_EQ(1, f->refs);
    EXPECT_EQ(0, f->being_compacted);
    file_meta_unref(f);
}

TEST_F(VersionTables, GetAcrossLevels) {
    version_t *base = version_create(OnObsolete, &obs);
    Edit e;
    // Level 1: file 2 newer than file 1, overlapping on "k05".
    e.Add(1, Table(1, {{IK("k05", 10), "old5"}, {IK("k07", 11), "l1-7"}, {IK("k09", 12, KT_DELETE), ""}}));
    e.Add(1, Table(2, {{IK("k05", 20), "new5"}, {IK("k06", 21), "l1-6"}}));
    // Level 2: three disjoint files.
    std::vector<Entry> a, b, c;
    for (int i = 0; i < 30; i++) a.push_back({IK(tdbtest::Key(i, 4), 3), "l2a" + std::to_string(i)});
    b.push_back({IK("k05", 2), "l2-5"});
    b.push_back({IK("k07", 2), "l2-7"});
    b.push_back({IK("k09", 2), "l2-9"});
    b.push_back({IK("k10", 5), "l2-10new"});
    b.push_back({IK("k10", 4), "l2-10old"});
    for (int i = 0; i < 30; i++) c.push_back({IK("m" + std::to_string(100 + i), 3), "l2c"});
    e.Add(2, Table(3, a));  // k000..k029 (4-wide keys "k000")
    e.Add(2, Table(4, b));
    e.Add(2, Table(5, c));
    // Level 3: an old version of a level-1 key and a key nowhere else.
    e.Add(3, Table(6, {{IK("k06", 1), "l3-6"}, {IK("zzz", 1), "l3-z"}}));
    version_t *v = nullptr;
    ASSERT_EQ(TDB_OK, version_apply(base, &e.e, &v)) << tdb_last_error();
    version_edit_free(&e.e);  // v alone holds the files now

    uint64_t seq = 0;
    unsigned type = 0;
    EXPECT_EQ("new5", Get(v, "k05", SEQ_MAX, &type, &seq));
    EXPECT_EQ(20u, seq);
    EXPECT_EQ((unsigned)KT_PUT, type);
    EXPECT_EQ("old5", Get(v, "k05", 19));     // snapshot before the newer file
    EXPECT_EQ("l2-5", Get(v, "k05", 9));      // before both level-1 files
    EXPECT_EQ("<absent>", Get(v, "k05", 1));  // before everything
    EXPECT_EQ("l1-6", Get(v, "k06", SEQ_MAX));
    EXPECT_EQ("l3-6", Get(v, "k06", 20));     // level 3 under levels 1 and 2
    EXPECT_EQ("l1-7", Get(v, "k07", SEQ_MAX));
    EXPECT_EQ("<deleted>", Get(v, "k09", SEQ_MAX, &type));  // a tombstone is a hit
    EXPECT_EQ((unsigned)KT_DELETE, type);
    EXPECT_EQ("l2-9", Get(v, "k09", 11));
    EXPECT_EQ("l2-10new", Get(v, "k10", SEQ_MAX));
    EXPECT_EQ("l2-10old", Get(v, "k10", 4));
    EXPECT_EQ("l2a17", Get(v, "k017", SEQ_MAX));
    EXPECT_EQ("l2c", Get(v, "m115", SEQ_MAX));
    EXPECT_EQ("l3-z", Get(v, "zzz", SEQ_MAX));
    EXPECT_EQ("<absent>", Get(v, "k08", SEQ_MAX));   // inside ranges, in no file
    EXPECT_EQ("<absent>", Get(v, "a", SEQ_MAX));     // before every range
    EXPECT_EQ("<absent>", Get(v, "zzzz", SEQ_MAX));  // after every range
    EXPECT_EQ("<absent>", Get(v, "l", SEQ_MAX));     // between level-2 files

    // A missing table file is an error, not "absent" (a file no lookup
    // opened yet: an opened one stays readable through its pinned reader).
    Edit e2;
    e2.Add(4, Table(7, {{IK("zzzz", 1), "l4"}}));
    version_t *v2 = nullptr;
    ASSERT_EQ(TDB_OK, version_apply(v, &e2.e, &v2)) << tdb_last_error();
    version_edit_free(&e2.e);
    char path[4096];
    sst_file_name(path, sizeof path, dir.path().c_str(), 7);
    ASSERT_EQ(0, remove(path));
    int rc = 0;
    EXPECT_EQ("<error>", Get(v2, "zzzz", SEQ_MAX, nullptr, nullptr, &rc));
    EXPECT_EQ(TDB_ERR_NOT_FOUND, rc);
    EXPECT_EQ("new5", Get(v2, "k05", SEQ_MAX));  // found before reaching level 4

    version_unref(v2);
    version_unref(v);
    version_unref(base);
    EXPECT_EQ(7u, obs.count.size());
}

// Collect an iterator's keys (user key + seq) forward.
std::vector<std::string> Forward(iter_t *it) {
    std::vector<std::string> r;
    for (iter_seek_to_first(it); iter_valid(it); iter_next(it)) r.emplace_back(iter_key(it).data, iter_key(it).size);
    EXPECT_EQ(TDB_OK, iter_status(it));
    return r;
}

std::vector<std::string> Backward(iter_t *it) {
    std::vector<std::string> r;
    for (iter_seek_to_last(it); iter_valid(it); iter_prev(it)) r.emplace_back(iter_key(it).data, iter_key(it).size);
    EXPECT_EQ(TDB_OK, iter_status(it));
    return r;
}

TEST_F(VersionTables, LevelIteratorAcrossFiles) {
    version_t *base = version_create(nullptr, nullptr);
    Edit e;
    std::vector<std::string> all;
    // Three level-2 files of 20 keys each (several blocks each), plus a
    // user key with several versions at the end of the first file.
    for (int f = 0; f < 3; f++) {
        std::vector<Entry> es;
        for (int i = 0; i < 20; i++) {
            std::string k = tdbtest::Key((uint64_t)(f * 100 + i * 2), 8);
            es.push_back({IK(k, 5), tdbtest::Value((uint64_t)i, 20)});
            if (f == 0 && i == 19) {
                es.push_back({IK(k, 4), "v4"});
                es.push_back({IK(k, 3, KT_DELETE), ""});
            }
        }
        for (auto &x : es) all.push_back(x.ik);
        e.Add(2, Table((uint64_t)(10 + f), es));
    }
    std::sort(all.begin(), all.end(), [](const std::string &a, const std::string &b) { return ikey_compare(S(a), S(b)) < 0; });
    e.Add(1, Table(20, {{IK("a", 9), "l1"}}));
    e.Add(1, Table(21, {{IK("b", 10), "l1b"}}));
    version_t *v = nullptr;
    ASSERT_EQ(TDB_OK, version_apply(base, &e.e, &v)) << tdb_last_error();
    version_unref(base);

    // version_add_iters: one per level-1 file, one for level 2.
    iter_t **its = nullptr;
    int n = 0, cap = 0;
    ASSERT_EQ(TDB_OK, version_add_iters(v, tc, &its, &n, &cap));
    ASSERT_EQ(3, n);
    EXPECT_EQ((std::vector<std::string>{IK("b", 10)}), Forward(its[0]));  // newest first
    EXPECT_EQ((std::vector<std::string>{IK("a", 9)}), Forward(its[1]));
    iter_t *li = its[2];
    // The level iterator holds its own version reference.
    version_unref(v);

    EXPECT_EQ(all, Forward(li));
    std::vector<std::string> rev = all;
    std::reverse(rev.begin(), rev.end());
    EXPECT_EQ(rev, Backward(li));

    // Seek into the middle of the second file.
    std::string k102 = tdbtest::Key(102, 8), k104 = tdbtest::Key(104, 8);
    iter_seek(li, S(IK(k102, SEQ_MAX, KT_SEEK)));
    ASSERT_TRUE(iter_valid(li));
    EXPECT_EQ(IK(k102, 5), std::string(iter_key(li).data, iter_key(li).size));
    iter_next(li);
    EXPECT_EQ(IK(k104, 5), std::string(iter_key(li).data, iter_key(li).size));
    // Seek into the gap between files 1 and 2: lands on file 2's first key.
    std::string k050 = tdbtest::Key(50, 8), k100 = tdbtest::Key(100, 8), k038 = tdbtest::Key(38, 8);
    iter_seek(li, S(IK(k050, SEQ_MAX, KT_SEEK)));
    ASSERT_TRUE(iter_valid(li));
    EXPECT_EQ(IK(k100, 5), std::string(iter_key(li).data, iter_key(li).size));
    // ...and prev from there crosses back into file 1's last entry.
    iter_prev(li);
    ASSERT_TRUE(iter_valid(li));
    EXPECT_EQ(IK(k038, 3, KT_DELETE), std::string(iter_key(li).data, iter_key(li).size));
    iter_prev(li);
    EXPECT_EQ(IK(k038, 4), std::string(iter_key(li).data, iter_key(li).size));
    EXPECT_EQ("v4", std::string(iter_value(li).data, iter_value(li).size));
    // Seek between versions of one user key.
    iter_seek(li, S(IK(k038, 4, KT_SEEK)));
    ASSERT_TRUE(iter_valid(li));
    EXPECT_EQ(IK(k038, 4), std::string(iter_key(li).data, iter_key(li).size));
    // next from the last entry of file 1 crosses into file 2.
    iter_next(li);
    iter_next(li);
    ASSERT_TRUE(iter_valid(li));
    EXPECT_EQ(IK(k100, 5), std::string(iter_key(li).data, iter_key(li).size));
    // Seek past the end and before the start.
    iter_seek(li, S(IK("zz", SEQ_MAX, KT_SEEK)));
    EXPECT_FALSE(iter_valid(li));
    EXPECT_EQ(TDB_OK, iter_status(li));
    iter_seek(li, S(IK("a", SEQ_MAX, KT_SEEK)));
    ASSERT_TRUE(iter_valid(li));
    EXPECT_EQ(all[0], std::string(iter_key(li).data, iter_key(li).size));
    iter_prev(li);
    EXPECT_FALSE(iter_valid(li));
    // Walking backward from the first entry of the last file.
    std::string k200 = tdbtest::Key(200, 8);
    iter_seek(li, S(IK(k200, SEQ_MAX, KT_SEEK)));
    iter_prev(li);
    ASSERT_TRUE(iter_valid(li));
    EXPECT_EQ(IK(tdbtest::Key(138, 8), 5), std::string(iter_key(li).data, iter_key(li).size));

    for (int i = 0; i < n; i++) iter_destroy(its[i]);
    free(its);
}

TEST_F(VersionTables, LevelIteratorReportsMissingFile) {
    version_t *base = version_create(nullptr, nullptr);
    Edit e;
    e.Add(3, Table(1, {{IK("a", 1), "1"}, {IK("b", 1), "2"}}));
    e.Add(3, Table(2, {{IK("c", 1), "3"}}));
    e.Add(3, Table(3, {{IK("d", 1), "4"}}));
    version_t *v = nullptr;
    ASSERT_EQ(TDB_OK, version_apply(base, &e.e, &v));
    version_unref(base);
    char path[4096];
    sst_file_name(path, sizeof path, dir.path().c_str(), 2);
    ASSERT_EQ(0, remove(path));

    iter_t *li = version_level_iter(v, tc, 3);
    iter_seek_to_first(li);
    ASSERT_TRUE(iter_valid(li));
    iter_next(li);
    ASSERT_TRUE(iter_valid(li));
    iter_next(li);  // reaches the missing file
    EXPECT_FALSE(iter_valid(li));
    EXPECT_EQ(TDB_ERR_NOT_FOUND, iter_status(li));
    // A seek elsewhere recovers.
    iter_seek(li, S(IK("d", SEQ_MAX, KT_SEEK)));
    ASSERT_TRUE(iter_valid(li));
    EXPECT_EQ(TDB_OK, iter_status(li));
    iter_destroy(li);

    // version_add_iters fails cleanly on a missing level-1 file.
    Edit e2;
    e2.Add(1, Table(4, {{IK("x", 9), "x"}}));
    e2.Add(1, Table(5, {{IK("y", 10), "y"}}));
    version_t *v2 = nullptr;
    ASSERT_EQ(TDB_OK, version_apply(v, &e2.e, &v2));
    sst_file_name(path, sizeof path, dir.path().c_str(), 4);
    ASSERT_EQ(0, remove(path));
    iter_t **its = nullptr;
    int n = 0, cap = 0;
    EXPECT_EQ(TDB_ERR_NOT_FOUND, version_add_iters(v2, tc, &its, &n, &cap));
    EXPECT_EQ(0, n);
    free(its);
    version_unref(v2);
    version_unref(v);
}

// Lookups pin a file's reader in its metadata, within the table cache's
// budget (its capacity, 2 here); past it they read through the cache, and a
// freed file gives its pin back.
TEST_F(VersionTables, PinnedReaders) {
    version_t *base = version_create(OnObsolete, &obs);
    Edit e;
    for (int i = 0; i < 3; i++)
        e.Add(2, Table(10 + i, {{IK("k" + std::to_string(i), 1), "v" + std::to_string(i)}}));
    version_t *v = nullptr;
    ASSERT_EQ(TDB_OK, version_apply(base, &e.e, &v)) << tdb_last_error();
    version_edit_free(&e.e);
    for (int round = 0; round < 2; round++)
        for (int i = 0; i < 3; i++) EXPECT_EQ("v" + std::to_string(i), Get(v, "k" + std::to_string(i), SEQ_MAX));
    int pinned = 0;
    for (int i = 0; i < 3; i++) {
        file_meta_t *f = version_file(v, 2, i);
        if (f->reader) {
            pinned++;
            EXPECT_EQ(f->number, sst_reader_file_number(f->reader));
            EXPECT_EQ(tc, f->reader_tc);
        }
    }
    EXPECT_EQ(2, pinned);  // the budget
    EXPECT_EQ(nullptr, version_file(v, 2, 2)->reader);
    // The unpinned file is read through the cache; the pinned ones without it.
    table_cache_evict(tc, 10);
    table_cache_evict(tc, 12);
    int owned = -1;
    sst_reader_t *r = nullptr;
    ASSERT_EQ(TDB_OK, version_file_reader(tc, version_file(v, 2, 0), &r, &owned));
    EXPECT_EQ(0, owned);
    EXPECT_EQ(version_file(v, 2, 0)->reader, r);
    ASSERT_EQ(TDB_OK, version_file_reader(tc, version_file(v, 2, 2), &r, &owned));
    EXPECT_EQ(1, owned);
    EXPECT_EQ(12u, sst_reader_file_number(r));
    sst_reader_unref(r);
    // Freeing the files returns their pins: new files are pinned again.
    version_unref(v);
    version_unref(base);
    EXPECT_EQ(3u, obs.count.size());
    version_t *base2 = version_create(nullptr, nullptr);
    Edit e2;
    e2.Add(2, Table(20, {{IK("a", 1), "a"}}));
    e2.Add(2, Table(21, {{IK("b", 1), "b"}}));
    version_t *v2 = nullptr;
    ASSERT_EQ(TDB_OK, version_apply(base2, &e2.e, &v2));
    version_edit_free(&e2.e);
    EXPECT_EQ("a", Get(v2, "a", SEQ_MAX));
    EXPECT_EQ("b", Get(v2, "b", SEQ_MAX));
    EXPECT_NE(nullptr, version_file(v2, 2, 0)->reader);
    EXPECT_NE(nullptr, version_file(v2, 2, 1)->reader);
    version_unref(v2);
    version_unref(base2);
}

TEST_F(VersionTables, TableCache) {
    file_meta_t *f1 = Table(1, {{IK("a", 1), "1"}});
    file_meta_t *f2 = Table(2, {{IK("b", 1), "2"}});
    file_meta_t *f3 = Table(3, {{IK("c", 1), "3"}});
    sst_reader_t *r1 = nullptr, *r1b = nullptr;
    ASSERT_EQ(TDB_OK, table_cache_get(tc, 1, &r1));
    ASSERT_EQ(TDB_OK, table_cache_get(tc, 1, &r1b));
    EXPECT_EQ(r1, r1b);  // cached
    EXPECT_EQ(1u, sst_reader_file_number(r1));
    sst_reader_unref(r1b);
    // Capacity 2: opening two more evicts table 1, which stays usable.
    for (uint64_t n : {2u, 3u}) {
        sst_reader_t *r = nullptr;
        ASSERT_EQ(TDB_OK, table_cache_get(tc, n, &r));
        sst_reader_unref(r);
    }
    buf_t val{};
    unsigned t;
    uint64_t s;
    EXPECT_EQ(1, sst_reader_get(r1, S(std::string("a")), SEQ_MAX, &t, &s, &val));
    EXPECT_EQ("1", std::string(val.data, val.size));
    buf_free(&val);
    sst_reader_unref(r1);
    table_cache_evict(tc, 3);
    table_cache_evict(tc, 42);  // absent: no-op
    sst_reader_t *r = nullptr;
    EXPECT_EQ(TDB_ERR_NOT_FOUND, table_cache_get(tc, 42, &r));
    EXPECT_EQ(nullptr, r);
    char name[64];
    sst_file_name(name, sizeof name, "/d", 7);
    EXPECT_STREQ("/d/000007.sst", name);
    sst_file_name(name, sizeof name, "/d", 12345678);
    EXPECT_STREQ("/d/12345678.sst", name);
    file_meta_unref(f1);
    file_meta_unref(f2);
    file_meta_unref(f3);

    // A cache that caches nothing still serves readers.
    table_cache_t *none = table_cache_create(env, dir.path().c_str(), 0, nullptr);
    ASSERT_EQ(TDB_OK, table_cache_get(none, 2, &r));
    sst_reader_unref(r);
    table_cache_destroy(none);
}

}  // namespace
