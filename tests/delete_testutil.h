// Shared by range_delete_test.cc and single_delete_test.cc: an in-memory
// internal iterator and a fixture around table_write_from_iter /
// compaction_run that reads back points and range tombstones.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "table_testutil.h"
#include "testutil.h"

extern "C" {
#include "cache/cache.h"
#include "env/env.h"
#include "sst/range_del.h"
#include "sst/sst.h"
#include "util/coding.h"
#include "util/error.h"
#include "util/ikey.h"
#include "version/compaction.h"
#include "version/table_cache.h"
#include "version/version.h"
}

namespace deltest {

inline std::string IK(const std::string &uk, uint64_t seq, unsigned type = KT_PUT) {
    std::string s = uk;
    char t[8];
    enc_fixed64(t, ikey_pack(seq, type));
    s.append(t, 8);
    return s;
}

inline slice_t S(const std::string &s) { return slice_make(s.data(), s.size()); }
inline std::string Str(slice_t s) { return std::string(s.data, s.size); }

struct Entry {
    std::string ik, value;
    bool operator==(const Entry &o) const { return ik == o.ik && value == o.value; }
};

// "user@seq/type" of each entry.
inline std::string Show(const std::vector<Entry> &es) {
    std::string r;
    for (auto &e : es) {
        slice_t k = S(e.ik);
        r += Str(ikey_user(k)) + "@" + std::to_string(ikey_seq(k)) + "/" + std::to_string(ikey_type(k)) + " ";
    }
    return r;
}

// A sorted vector as an internal iterator (forward only is enough here).
struct VecIter {
    iter_t base;
    std::vector<Entry> es;
    int pos = -1;
    static VecIter *Of(const iter_t *it) { return (VecIter *)it; }
    static int Valid(const iter_t *it) { return Of(it)->pos >= 0 && Of(it)->pos < (int)Of(it)->es.size(); }
    static void First(iter_t *it) { Of(it)->pos = 0; }
    static void Last(iter_t *it) { Of(it)->pos = (int)Of(it)->es.size() - 1; }
    static void Seek(iter_t *it, slice_t t) {
        auto *v = Of(it);
        v->pos = 0;
        while (v->pos < (int)v->es.size() && ikey_compare(S(v->es[v->pos].ik), t) < 0) v->pos++;
    }
    static void Next(iter_t *it) { Of(it)->pos++; }
    static void Prev(iter_t *it) { Of(it)->pos--; }
    static slice_t Key(const iter_t *it) { return S(Of(it)->es[Of(it)->pos].ik); }
    static slice_t Value(const iter_t *it) { return S(Of(it)->es[Of(it)->pos].value); }
    static int Status(const iter_t *) { return TDB_OK; }
    static void Destroy(iter_t *it) { delete Of(it); }
};

inline iter_t *NewVecIter(std::vector<Entry> es) {
    static const iter_ops_t ops = {VecIter::Valid, VecIter::First, VecIter::Last,  VecIter::Seek,   VecIter::Next,
                                   VecIter::Prev,  VecIter::Key,   VecIter::Value, VecIter::Status, VecIter::Destroy, nullptr, nullptr, nullptr, nullptr};
    VecIter *v = new VecIter();
    v->base.ops = &ops;
    std::sort(es.begin(), es.end(), [](const Entry &a, const Entry &b) { return ikey_compare(S(a.ik), S(b.ik)) < 0; });
    v->es = std::move(es);
    return &v->base;
}

inline uint64_t NextNumber(void *ctx) { return ++*(uint64_t *)ctx; }

struct Tomb {
    std::string start, end;
    uint64_t seq;
    bool operator==(const Tomb &o) const { return start == o.start && end == o.end && seq == o.seq; }
};

// A table written by the fixture, read back.
struct Table {
    std::vector<Entry> points;
    std::vector<Tomb> tombs;
    std::string smallest, largest; // internal keys from the file meta
};

class TableWriteFixture : public ::testing::Test {
  protected:
    tdbtest::TempDir dir;
    env_t *env = env_posix();
    uint64_t next_number = 100;
    std::vector<uint64_t> snaps;
    table_write_ctx_t ctx;
    version_edit_t edit;
    lru_cache_t *blocks = nullptr;
    table_cache_t *tc = nullptr;

    void SetUp() override {
        memset(&ctx, 0, sizeof ctx);
        memset(&edit, 0, sizeof edit);
        ctx.env = env;
        ctx.dbdir = dir.path().c_str();
        ctx.sst = {TDB_COMPRESS_NONE, 256, 0.01, 0};
        ctx.new_file_number = NextNumber;
        ctx.ctx = &next_number;
        ctx.now_unix = 1000;
        blocks = lru_cache_create(1 << 20, 0, sst_block_cache_deleter, nullptr);
        tc = table_cache_create(env, dir.path().c_str(), 16, blocks);
    }
    void TearDown() override {
        version_edit_free(&edit);
        table_cache_destroy(tc);
        lru_cache_destroy(blocks);
    }

    // Stream es (range tombstones in-band as KT_RANGE_DELETE, value = end).
    int Write(std::vector<Entry> es, int bottommost, int level = 2) {
        ctx.snapshots = snaps.data();
        ctx.nsnapshots = (int)snaps.size();
        ctx.bottommost = bottommost;
        iter_t *it = NewVecIter(std::move(es));
        int rc = table_write_from_iter(it, &ctx, level, &edit);
        iter_destroy(it);
        return rc;
    }

    Table Read(const file_meta_t *f) {
        Table t;
        t.smallest = std::string(f->smallest.data, f->smallest.size);
        t.largest = std::string(f->largest.data, f->largest.size);
        sst_reader_t *r = nullptr;
        EXPECT_EQ(TDB_OK, table_cache_get(tc, f->number, &r)) << tdb_last_error();
        if (!r) return t;
        EXPECT_EQ(TDB_OK, sst_reader_verify(r)) << tdb_last_error();
        iter_t *it = sst_reader_iter(r);
        for (iter_seek_to_first(it); iter_valid(it); iter_next(it))
            t.points.push_back({Str(iter_key(it)), Str(iter_value(it))});
        EXPECT_EQ(TDB_OK, iter_status(it));
        iter_destroy(it);
        const range_del_t *rd;
        size_t n = sst_reader_range_dels(r, &rd);
        for (size_t i = 0; i < n; i++) t.tombs.push_back({Str(rd[i].start), Str(rd[i].end), rd[i].seq});
        EXPECT_EQ(n, f->num_range_deletes);
        sst_reader_unref(r);
        return t;
    }

    std::vector<Table> ReadOutputs() {
        std::vector<Table> out;
        for (int i = 0; i < edit.n_add; i++) out.push_back(Read(edit.add[i].f));
        return out;
    }

    std::vector<Entry> AllPoints() {
        std::vector<Entry> out;
        for (auto &t : ReadOutputs()) out.insert(out.end(), t.points.begin(), t.points.end());
        return out;
    }

    // A table file holding es and tombstones ts; returns its meta (1 ref).
    file_meta_t *MakeTable(uint64_t number, std::vector<Entry> es, const std::vector<Tomb> &ts) {
        return tdbtest::WriteTable(env, dir.path(), number, std::move(es), sst_options_t{TDB_COMPRESS_LZ4, 256, 0.01, 64}, ts);
    }
};

}  // namespace deltest
