// The transaction tests' fixture: a database in a temporary directory
// (sync NONE, 256 KiB write buffers) with helpers to begin, read and write
// transactions. Used by txn_test.cc and txn_lockwait_test.cc.
#ifndef TDB_TESTS_TXN_FIXTURE_H
#define TDB_TESTS_TXN_FIXTURE_H

#include <gtest/gtest.h>

#include <string>

#include "testutil.h"
#include "tidesdb/tidesdb.h"

namespace {

using tdbtest::TempDir;

class TxnTest : public ::testing::Test {
  public:
    void SetUp() override { Open(); }
    void TearDown() override {
        if (db_) {
            EXPECT_EQ(tdb_close(db_), TDB_OK);
        }
    }
    void Open() {
        tdb_config_t c;
        tdb_config_default(&c);
        c.default_cf.sync_mode = TDB_SYNC_NONE;
        c.default_cf.write_buffer_size = 256 << 10;
        c.log_level = TDB_LOG_WARN;
        ASSERT_EQ(tdb_open(dir_.path().c_str(), &c, &db_), TDB_OK) << tdb_last_error();
        ASSERT_EQ(tdb_get_cf(db_, TDB_DEFAULT_CF, &cf_), TDB_OK);
    }
    tdb_txn_t *Begin(int iso, bool pessimistic = false, bool read_only = false) {
        tdb_txn_options_t o;
        tdb_txn_options_default(&o);
        o.isolation = iso;
        o.pessimistic = pessimistic;
        o.read_only = read_only;
        o.lock_timeout_ms = 300;
        tdb_txn_t *t = nullptr;
        EXPECT_EQ(tdb_txn_begin(db_, &o, &t), TDB_OK);
        return t;
    }
    void Set(const std::string &k, const std::string &v) {
        ASSERT_EQ(tdb_put(db_, cf_, k.data(), k.size(), v.data(), v.size(), 0), TDB_OK);
    }
    std::string Get(const std::string &k) {
        void *v;
        size_t n;
        int rc = tdb_get(db_, cf_, nullptr, k.data(), k.size(), &v, &n);
        if (rc != TDB_OK) return "-";
        std::string s((char *)v, n);
        tdb_free(v);
        return s;
    }
    static std::string R(tdb_txn_t *t, tdb_cf_t *cf, const std::string &k) {
        void *v;
        size_t n;
        int rc = tdb_txn_get(t, cf, k.data(), k.size(), &v, &n);
        if (rc == TDB_ERR_NOT_FOUND) return "-";
        if (rc != TDB_OK) return std::string("E") + std::to_string(rc);
        std::string s((char *)v, n);
        tdb_free(v);
        return s;
    }
    std::string R(tdb_txn_t *t, const std::string &k) { return R(t, cf_, k); }
    int W(tdb_txn_t *t, const std::string &k, const std::string &v) {
        return tdb_txn_put(t, cf_, k.data(), k.size(), v.data(), v.size(), 0);
    }
    // Count keys with a prefix through the transaction's iterator.
    int Count(tdb_txn_t *t, const std::string &prefix) {
        tdb_iter_t *it;
        EXPECT_EQ(tdb_txn_iter_create(t, cf_, &it), TDB_OK);
        int n = 0;
        for (tdb_iter_seek(it, prefix.data(), prefix.size()); tdb_iter_valid(it); tdb_iter_next(it)) {
            size_t kl;
            const char *k = (const char *)tdb_iter_key(it, &kl);
            if (std::string(k, kl).compare(0, prefix.size(), prefix) != 0) break;
            n++;
        }
        tdb_iter_destroy(it);
        return n;
    }

    TempDir dir_;
    tdb_t *db_ = nullptr;
    tdb_cf_t *cf_ = nullptr;
};

}  // namespace

#endif
