// White-box helpers shared by the tests of sst: entries over user keys
// with versions, deletes and TTL puts, building a table of them, and the
// reference lookup the reader's answers are checked against.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

extern "C" {
#include "cache/cache.h"
#include "env/env.h"
#include "sst/sst.h"
#include "util/coding.h"
#include "util/error.h"
#include "util/ikey.h"
}

#include "keys_testutil.h"
#include "testutil.h"

namespace tdbsst {

using tdbtest::Key;
using tdbtest::Value;

struct Entry {
    std::string user;
    uint64_t seq;
    unsigned type;
    std::string value;
    std::string ikey() const {
        std::string k = user;
        char t[8];
        enc_fixed64(t, ikey_pack(seq, type));
        k.append(t, 8);
        return k;
    }
};

using tdbtest::S;
inline std::string Str(slice_t s) { return std::string(s.data, s.size); }
inline std::string Str(const buf_t &b) { return std::string(b.data, b.size); }

inline bool Less(const Entry &a, const Entry &b) {
    std::string ka = a.ikey(), kb = b.ikey();
    return ikey_compare(S(ka), S(kb)) < 0;
}

// n entries over n/2 user keys: 1..3 versions each (newest first), mixing
// puts, deletes and TTL puts, with distinct sequence numbers.
inline std::vector<Entry> MakeEntries(size_t n, uint32_t seed, size_t small = 100, size_t big = 0, uint32_t big_every = 0) {
    std::mt19937_64 rng(seed);
    std::vector<Entry> out;
    out.reserve(n);
    uint64_t u = 0;
    while (out.size() < n) {
        std::string user = Key(u * 2);  // odd numbers stay absent
        int versions = 1 + (int)(rng() % 3);
        uint64_t seq = 10 + u * 8 + 7;
        for (int v = 0; v < versions && out.size() < n; v++) {
            Entry e;
            e.user = user;
            e.seq = seq - (uint64_t)v * 2;
            unsigned r = (unsigned)(rng() % 10);
            e.type = r == 0 ? KT_DELETE : r == 1 ? KT_PUT_TTL : KT_PUT;
            if (e.type != KT_DELETE) {
                size_t vs = (big_every && rng() % big_every == 0) ? big : small;
                e.value = Value(rng(), vs);
            }
            out.push_back(std::move(e));
        }
        u++;
    }
    return out;
}

inline sst_options_t Opts(int compression, uint32_t block_size, double fpr = 0.01, uint32_t threshold = 0) {
    sst_options_t o;
    o.compression = compression;
    o.block_size = block_size;
    o.bloom_fpr = fpr;
    o.value_threshold = threshold;
    return o;
}

inline void BuildTable(const std::string &path, const std::vector<Entry> &es, const sst_options_t &o,
                sst_props_t *props) {
    sst_builder_t *b = nullptr;
    ASSERT_EQ(TDB_OK, sst_builder_open(env_posix(), path.c_str(), &o, &b)) << tdb_last_error();
    for (auto &e : es) {
        std::string k = e.ikey();
        ASSERT_EQ(TDB_OK, sst_builder_add(b, S(k), S(e.value))) << tdb_last_error();
    }
    EXPECT_EQ(es.size(), sst_builder_num_entries(b));
    ASSERT_EQ(TDB_OK, sst_builder_finish(b, props)) << tdb_last_error();
}

// The same, when the test needs no properties.
inline void BuildTable(const std::string &path, const std::vector<Entry> &es, const sst_options_t &o) {
    sst_props_t props;
    BuildTable(path, es, o, &props);
    sst_props_free(&props);
}

// Reference lookup: newest version of user with seq <= snap.
inline const Entry *RefGet(const std::vector<Entry> &es, const std::string &user, uint64_t snap) {
    Entry probe{user, snap > SEQ_MAX ? SEQ_MAX : snap, KT_SEEK, ""};
    auto it = std::lower_bound(es.begin(), es.end(), probe, Less);
    if (it == es.end() || it->user != user) return nullptr;
    return &*it;
}

inline void CheckGet(sst_reader_t *r, const std::vector<Entry> &es, const std::string &user, uint64_t snap, buf_t *val) {
    unsigned type = 99;
    uint64_t seq = 0;
    int rc = sst_reader_get(r, S(user), snap, &type, &seq, val);
    const Entry *want = RefGet(es, user, snap);
    ASSERT_GE(rc, 0) << tdb_last_error();
    if (!want) {
        ASSERT_EQ(0, rc) << user << " @" << snap;
        return;
    }
    ASSERT_EQ(1, rc) << user << " @" << snap;
    ASSERT_EQ(want->type, type);
    ASSERT_EQ(want->seq, seq);
    ASSERT_EQ(want->value, Str(*val));
}

inline lru_cache_t *NewCache(size_t cap) { return lru_cache_create(cap, 4, sst_block_cache_deleter, nullptr); }

}  // namespace tdbsst
