// A test fixture that opens a small database in a fresh directory, with
// helpers for the calls most tests make. Tests derive from DbFixture and add
// what is particular to them.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "testutil.h"
#include "tidesdb/tidesdb.h"

namespace tdbtest {

// Small buffers so tests exercise flushes and compactions quickly.
inline tdb_config_t SmallDbConfig(size_t write_buffer_size = 256 << 10) {
    tdb_config_t c;
    tdb_config_default(&c);
    c.default_cf.write_buffer_size = write_buffer_size;
    c.default_cf.sync_mode = TDB_SYNC_NONE;
    c.block_cache_size = 1 << 20;
    c.log_level = TDB_LOG_WARN;
    return c;
}

class DbFixture : public ::testing::Test {
  protected:
    explicit DbFixture(size_t write_buffer_size = 256 << 10) : cfg_(SmallDbConfig(write_buffer_size)) {}
    void SetUp() override { Open(); }
    void TearDown() override {
        if (db_) {
            EXPECT_EQ(tdb_close(db_), TDB_OK);
        }
    }
    void Open() {
        ASSERT_EQ(tdb_open(dir_.path().c_str(), &cfg_, &db_), TDB_OK) << tdb_last_error();
        ASSERT_EQ(tdb_get_cf(db_, TDB_DEFAULT_CF, &cf_), TDB_OK);
    }
    void Reopen() {
        ASSERT_EQ(tdb_close(db_), TDB_OK);
        db_ = nullptr;
        Open();
    }
    int Put(const std::string &k, const std::string &v, tdb_cf_t *cf = nullptr) {
        return tdb_put(db_, cf ? cf : cf_, k.data(), k.size(), v.data(), v.size(), 0);
    }
    int Del(const std::string &k, tdb_cf_t *cf = nullptr) { return tdb_delete(db_, cf ? cf : cf_, k.data(), k.size()); }
    // The value, "NOT_FOUND", or "ERROR:<code> <detail>".
    std::string Get(const std::string &k, tdb_cf_t *cf, const tdb_snapshot_t *snap = nullptr) {
        void *v = nullptr;
        size_t n = 0;
        int rc = tdb_get(db_, cf ? cf : cf_, snap, k.data(), k.size(), &v, &n);
        if (rc == TDB_ERR_NOT_FOUND) return "NOT_FOUND";
        if (rc != TDB_OK) return std::string("ERROR:") + tdb_strerror(rc) + " " + tdb_last_error();
        std::string s((char *)v, n);
        tdb_free(v);
        return s;
    }
    std::string Get(const std::string &k, const tdb_snapshot_t *snap = nullptr) { return Get(k, nullptr, snap); }

    TempDir dir_;
    tdb_config_t cfg_;
    tdb_t *db_ = nullptr;
    tdb_cf_t *cf_ = nullptr;
};

}  // namespace tdbtest
