// White-box helpers shared by the tests of version/compaction: entries
// and an iterator over a vector of them, the table-writer fixture, synthetic
// file metas and level shapes for picking, the policy options.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "keys_testutil.h"
#include "testutil.h"

extern "C" {
#include "env/env.h"
#include "sst/sst.h"
#include "util/error.h"
#include "util/ikey.h"
#include "version/compaction.h"
#include "version/version.h"
}

namespace tdbtest {

struct Entry {
    std::string ik, value;
    bool operator==(const Entry &o) const { return ik == o.ik && value == o.value; }
};

inline std::string Show(const Entry &e) {
    slice_t k = S(e.ik);
    std::string u(ikey_user(k).data, ikey_user(k).size);
    return u + "@" + std::to_string(ikey_seq(k)) + "/" + std::to_string(ikey_type(k));
}

inline std::string Show(const std::vector<Entry> &es) {
    std::string r;
    for (auto &e : es) r += Show(e) + " ";
    return r;
}

inline void SortEntries(std::vector<Entry> *es) {
    std::sort(es->begin(), es->end(), [](const Entry &a, const Entry &b) { return ikey_compare(S(a.ik), S(b.ik)) < 0; });
}

// An iterator over a sorted vector; optionally fails (CORRUPTION) when it
// reaches index fail_at.
struct VecIter {
    iter_t base;
    std::vector<Entry> es;
    int pos = -1;
    int fail_at = -1;
    int status = TDB_OK;

    static VecIter *Of(const iter_t *it) { return (VecIter *)it; }
    void Check() {
        if (fail_at >= 0 && pos >= fail_at) {
            status = TDB_ERR_CORRUPTION;
            pos = -1;
        }
    }
    static int Valid(const iter_t *it) {
        auto *v = Of(it);
        return v->status == TDB_OK && v->pos >= 0 && v->pos < (int)v->es.size();
    }
    static void First(iter_t *it) { Of(it)->pos = 0; Of(it)->Check(); }
    static void Last(iter_t *it) { Of(it)->pos = (int)Of(it)->es.size() - 1; Of(it)->Check(); }
    static void Seek(iter_t *it, slice_t t) {
        auto *v = Of(it);
        v->pos = 0;
        while (v->pos < (int)v->es.size() && ikey_compare(S(v->es[v->pos].ik), t) < 0) v->pos++;
        v->Check();
    }
    static void Next(iter_t *it) { Of(it)->pos++; Of(it)->Check(); }
    static void Prev(iter_t *it) { Of(it)->pos--; }
    static slice_t Key(const iter_t *it) { return S(Of(it)->es[Of(it)->pos].ik); }
    static slice_t Value(const iter_t *it) { return S(Of(it)->es[Of(it)->pos].value); }
    static int Status(const iter_t *it) { return Of(it)->status; }
    static void Destroy(iter_t *it) { delete Of(it); }
};

inline const iter_ops_t kVecOps = {VecIter::Valid, VecIter::First, VecIter::Last, VecIter::Seek,   VecIter::Next,
                            VecIter::Prev,  VecIter::Key,   VecIter::Value, VecIter::Status, VecIter::Destroy, nullptr, nullptr, nullptr, nullptr};

inline iter_t *NewVecIter(std::vector<Entry> es, int fail_at = -1) {
    VecIter *v = new VecIter();
    v->base.ops = &kVecOps;
    SortEntries(&es);
    v->es = std::move(es);
    v->fail_at = fail_at;
    return &v->base;
}

inline uint64_t NextNumber(void *ctx) { return ++*(uint64_t *)ctx; }

struct Obsolete {
    std::map<uint64_t, int> count;
};
inline void OnObsolete(void *ctx, uint64_t number) { ((Obsolete *)ctx)->count[number]++; }

class TableWrite : public ::testing::Test {
  protected:
    tdbtest::TempDir dir;
    env_t *env = env_posix();
    uint64_t next_number = 100;
    std::vector<uint64_t> snaps;
    table_write_ctx_t ctx;
    version_edit_t edit;

    void SetUp() override {
        memset(&ctx, 0, sizeof ctx);
        memset(&edit, 0, sizeof edit);
        ctx.env = env;
        ctx.dbdir = dir.path().c_str();
        ctx.sst = {TDB_COMPRESS_NONE, 256, 0.01, 0};
        ctx.new_file_number = NextNumber;
        ctx.ctx = &next_number;
        ctx.now_unix = 1000;
    }
    void TearDown() override { version_edit_free(&edit); }

    int Write(std::vector<Entry> es, int bottommost, int fail_at = -1, int level = 2) {
        ctx.snapshots = snaps.data();
        ctx.nsnapshots = (int)snaps.size();
        ctx.bottommost = bottommost;
        iter_t *it = NewVecIter(std::move(es), fail_at);
        int rc = table_write_from_iter(it, &ctx, level, &edit);
        iter_destroy(it);
        return rc;
    }

    std::vector<Entry> ReadTable(uint64_t number) {
        char path[4096];
        sst_file_name(path, sizeof path, dir.path().c_str(), number);
        sst_reader_t *r = nullptr;
        EXPECT_EQ(TDB_OK, sst_reader_open(env, path, number, nullptr, &r)) << tdb_last_error();
        std::vector<Entry> out;
        if (!r) return out;
        iter_t *it = sst_reader_iter(r);
        for (iter_seek_to_first(it); iter_valid(it); iter_next(it))
            out.push_back({std::string(iter_key(it).data, iter_key(it).size),
                           std::string(iter_value(it).data, iter_value(it).size)});
        EXPECT_EQ(TDB_OK, iter_status(it));
        iter_destroy(it);
        sst_reader_unref(r);
        return out;
    }

    // Everything written, in output order.
    std::vector<Entry> ReadAll() {
        std::vector<Entry> out;
        for (int i = 0; i < edit.n_add; i++) {
            auto part = ReadTable(edit.add[i].f->number);
            out.insert(out.end(), part.begin(), part.end());
        }
        return out;
    }

    int CountSst() {
        char **names = nullptr;
        size_t n = 0;
        EXPECT_EQ(TDB_OK, env->list_dir(env, dir.path().c_str(), &names, &n));
        int c = 0;
        for (size_t i = 0; i < n; i++) c += strstr(names[i], ".sst") != nullptr;
        env_free_list(names, n);
        return c;
    }
};

// Picking (synthetic file metas: no tables needed).

inline file_meta_t *Meta(uint64_t number, const std::string &lo, const std::string &hi, uint64_t size,
                  uint64_t entries = 10, uint64_t deletes = 0, uint64_t seq = 1) {
    std::string a = IK(lo, seq), b = IK(hi, seq);
    return file_meta_create(number, size, S(a), S(b), seq, seq, entries, deletes);
}

struct Shape {
    std::vector<std::pair<int, file_meta_t *>> files;
    version_t *Build(file_obsolete_fn fn = nullptr, void *ctx = nullptr) {
        version_t *base = version_create(fn, ctx);
        version_edit_t e;
        memset(&e, 0, sizeof e);
        for (auto &p : files) {
            EXPECT_EQ(TDB_OK, version_edit_add(&e, p.first, p.second));
            file_meta_unref(p.second);
        }
        version_t *v = nullptr;
        EXPECT_EQ(TDB_OK, version_apply(base, &e, &v)) << tdb_last_error();
        version_edit_free(&e);
        version_unref(base);
        return v;
    }
};

// Static targets, no trivial moves (the zero-initialised extensions).
inline compaction_opts_t Opts() {
    compaction_opts_t o;
    memset(&o, 0, sizeof o);
    o.l1_file_count_trigger = 4;
    o.level_size_ratio = 10;
    o.base_level_bytes = 10000;
    o.target_file_size = 1000;
    o.tombstone_density_trigger = 0.5;
    o.tombstone_density_min_entries = 100;
    return o;
}

inline std::vector<uint64_t> Inputs(const compaction_t *c, int k) {
    std::vector<uint64_t> r;
    for (int i = 0; i < c->nin[k]; i++) r.push_back(c->in[k][i]->number);
    std::sort(r.begin(), r.end());
    return r;
}

inline constexpr int kLast = TDB_MAX_LEVELS - 1;

inline compaction_opts_t DynOpts() {
    compaction_opts_t o = Opts();
    o.dynamic_level_bytes = 1;
    o.allow_trivial_move = 1;
    return o;
}

}  // namespace tdbtest
