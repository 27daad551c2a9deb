// Helpers of the checkpoint tests (checkpoint_test.cc,
// checkpoint_fault_test.cc): files of a directory, opening a checkpoint,
// and the check that a database holds exactly the keys Key(0..n-1).
#pragma once

#include <gtest/gtest.h>
#include <dirent.h>
#include <sys/stat.h>

#include <string>
#include <vector>

#include "testutil.h"
#include "tidesdb/tidesdb.h"

namespace ckpt {

inline bool Exists(const std::string &p) {
    struct stat st;
    return stat(p.c_str(), &st) == 0;
}

// Inode of p (0 if absent).
inline uint64_t Inode(const std::string &p) {
    struct stat st;
    return stat(p.c_str(), &st) == 0 ? (uint64_t)st.st_ino : 0;
}

// Names in dir ending in ext (".sst", ".log").
inline std::vector<std::string> Files(const std::string &dir, const std::string &ext) {
    std::vector<std::string> v;
    DIR *d = opendir(dir.c_str());
    if (!d) return v;
    while (struct dirent *e = readdir(d)) {
        std::string n = e->d_name;
        if (n.size() > ext.size() && n.compare(n.size() - ext.size(), ext.size(), ext) == 0) v.push_back(n);
    }
    closedir(d);
    return v;
}

// Open an existing database (never creates one): TDB_OK or the error.
inline int OpenExisting(const std::string &dir, tdb_t **db, int log_level = TDB_LOG_NONE) {
    tdb_config_t c;
    tdb_config_default(&c);
    c.create_if_missing = 0;
    c.log_level = log_level;
    c.block_cache_size = 1 << 20;
    *db = nullptr;
    return tdb_open(dir.c_str(), &c, db);
}

// The database's last sequence (tdb_get_stats).
inline uint64_t LastSeq(tdb_t *db) {
    tdb_stats_t st;
    EXPECT_EQ(tdb_get_stats(db, nullptr, &st), TDB_OK);
    return st.last_sequence;
}

// The default family holds exactly Key(0..n-1) with Value(i, vlen) and
// nothing else (one scan in key order).
inline void ExpectExactlyKeys(tdb_t *db, uint64_t n, size_t vlen) {
    tdb_cf_t *cf = nullptr;
    ASSERT_EQ(tdb_get_cf(db, TDB_DEFAULT_CF, &cf), TDB_OK);
    tdb_iter_t *it = nullptr;
    ASSERT_EQ(tdb_iter_create(db, cf, nullptr, &it), TDB_OK);
    uint64_t i = 0;
    for (tdb_iter_seek_to_first(it); tdb_iter_valid(it); tdb_iter_next(it), i++) {
        size_t kl, vl;
        const char *k = (const char *)tdb_iter_key(it, &kl);
        const char *v = (const char *)tdb_iter_value(it, &vl);
        if (std::string(k, kl) != tdbtest::Key(i) || std::string(v, vl) != tdbtest::Value(i, vlen)) {
            ADD_FAILURE() << "entry " << i << " is " << std::string(k, kl) << ", expected " << tdbtest::Key(i)
                          << " with its value";
            break;
        }
    }
    EXPECT_EQ(tdb_iter_status(it), TDB_OK) << tdb_last_error();
    EXPECT_EQ(i, n) << "keys in the database";
    tdb_iter_destroy(it);
}

}  // namespace ckpt
