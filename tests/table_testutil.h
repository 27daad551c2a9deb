// One table file written from internal-key entries, with its file meta:
// the tables the version, compaction and delete tests build their trees of.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "keys_testutil.h"

extern "C" {
#include "env/env.h"
#include "sst/sst.h"
#include "util/error.h"
#include "util/ikey.h"
#include "version/table_cache.h"
#include "version/version.h"
}

namespace tdbtest {

// No range tombstones (the default of WriteTable's last argument).
struct NoTomb {
    std::string start, end;
    uint64_t seq;
};

// Table file `number` in dir, holding es (any type with internal key `ik`
// and `value`; sorted here) and range tombstones ts (`start`, `end`,
// `seq`), written with options o. Returns its meta (one reference).
template <class E, class T = NoTomb>
file_meta_t *WriteTable(env_t *env, const std::string &dir, uint64_t number, std::vector<E> es,
                        const sst_options_t &o, const std::vector<T> &ts = {}) {
    std::sort(es.begin(), es.end(), [](const E &a, const E &b) { return ikey_compare(S(a.ik), S(b.ik)) < 0; });
    char path[4096];
    sst_file_name(path, sizeof path, dir.c_str(), number);
    sst_builder_t *b = nullptr;
    EXPECT_EQ(TDB_OK, sst_builder_open(env, path, &o, &b)) << tdb_last_error();
    for (auto &e : es) EXPECT_EQ(TDB_OK, sst_builder_add(b, S(e.ik), S(e.value)));
    for (auto &t : ts) EXPECT_EQ(TDB_OK, sst_builder_add_range_del(b, S(t.start), S(t.end), t.seq));
    sst_props_t p;
    memset(&p, 0, sizeof p);
    EXPECT_EQ(TDB_OK, sst_builder_finish(b, &p)) << tdb_last_error();
    file_meta_t *f = file_meta_from_props(number, &p);
    EXPECT_EQ(p.file_size, f->file_size);
    sst_props_free(&p);
    return f;
}

}  // namespace tdbtest
