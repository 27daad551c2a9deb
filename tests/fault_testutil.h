// Shared helpers of the tests that run the database over the fault-injecting
// env (src/testing/env_fault.h): a FaultEnv owned by the test and the small
// configuration that makes flushes and compactions happen within a few
// hundred writes.
#pragma once

#include <gtest/gtest.h>

#include <cstring>

#include <string>

#include "testutil.h"

extern "C" {
#include "db/testing.h"
#include "testing/env_fault.h"
#include "tidesdb/tidesdb.h"
}

// A fault env over the POSIX env, destroyed with the test.
struct FaultEnv {
    explicit FaultEnv(uint64_t seed = 1) { EXPECT_EQ(fault_env_create(env_posix(), seed, &fe), TDB_OK); }
    ~FaultEnv() { fault_env_destroy(fe); }
    env_t *env() const { return fault_env_env(fe); }
    fault_stats_t Stats() const {
        fault_stats_t s;
        fault_env_stats(fe, &s);
        return s;
    }
    void Rule(fault_op_t op, int code, const char *path, uint64_t nth, uint64_t count = 1, double p = 0,
              int partial = 0) {
        fault_rule_t r;
        memset(&r, 0, sizeof r);
        r.op = op;
        r.code = code;
        r.path_contains = path;
        r.nth = nth;
        r.count = count;
        r.probability = p;
        r.partial = partial;
        ASSERT_EQ(fault_env_add_rule(fe, &r), TDB_OK);
    }
    fault_env_t *fe = nullptr;
};

// Small memtables and level-1 trigger, one flush and one compaction thread.
inline tdb_config_t FaultConfig(int sync) {
    tdb_config_t c;
    tdb_config_default(&c);
    c.default_cf.write_buffer_size = 64 << 10;  // the minimum: flushes and compactions within a few hundred writes
    c.default_cf.sync_mode = sync;
    c.default_cf.sync_interval_us = 1000;
    c.default_cf.l1_file_count_trigger = 2;
    c.block_cache_size = 256 << 10;
    c.log_level = TDB_LOG_NONE;
    c.flush_threads = 1;
    c.compaction_threads = 1;
    return c;
}

// A database over a FaultEnv (FULL sync, FaultConfig) in a temporary
// directory, with put/get helpers for numbered keys of 200-byte values.
// Fixtures add their own reopen and checks.
class FaultDbFixture : public ::testing::Test {
  protected:
    explicit FaultDbFixture(uint64_t seed = 1) : fe_(seed) {}
    void SetUp() override { cfg_ = FaultConfig(TDB_SYNC_FULL); }
    void TearDown() override {
        if (db_) tdb_close(db_);
    }
    void Open() {
        ASSERT_EQ(tdb_open_env(dir_.path().c_str(), &cfg_, fe_.env(), &db_), TDB_OK) << tdb_last_error();
        ASSERT_EQ(tdb_get_cf(db_, TDB_DEFAULT_CF, &cf_), TDB_OK);
    }
    int Put(uint64_t i) {
        std::string k = tdbtest::Key(i), v = tdbtest::Value(i, 200);
        return tdb_put(db_, cf_, k.data(), k.size(), v.data(), v.size(), 0);
    }
    // TDB_OK with the right value, or the get's error.
    int Get(uint64_t i) {
        std::string k = tdbtest::Key(i);
        void *v = nullptr;
        size_t vl = 0;
        int rc = tdb_get(db_, cf_, nullptr, k.data(), k.size(), &v, &vl);
        if (rc == TDB_OK) {
            EXPECT_EQ(std::string((char *)v, vl), tdbtest::Value(i, 200)) << k;
            tdb_free(v);
        }
        return rc;
    }
    tdbtest::TempDir dir_;
    FaultEnv fe_;
    tdb_config_t cfg_;
    tdb_t *db_ = nullptr;
    tdb_cf_t *cf_ = nullptr;
};
