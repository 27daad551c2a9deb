// Single writes (tdb_put, tdb_delete, tdb_single_delete, tdb_delete_range),
// which build their one-entry batch on the caller's stack (or in one
// allocation when the entry is larger), and point reads served by tables,
// whose value buffer is handed to the caller instead of being copied again.
// Reference: the same operations through a tdb_batch_t, and the bytes put.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "db_fixture.h"
#include "testutil.h"
#include "tidesdb/tidesdb.h"

using tdbtest::Key;

namespace {

class SingleWriteTest : public tdbtest::DbFixture {
  protected:
    uint64_t LastSeq() {
        tdb_stats_t st;
        EXPECT_EQ(tdb_get_stats(db_, nullptr, &st), TDB_OK);
        return st.last_sequence;
    }
    // Every key of cf with its value.
    std::vector<std::pair<std::string, std::string>> All(tdb_cf_t *cf) {
        std::vector<std::pair<std::string, std::string>> v;
        tdb_iter_t *it = nullptr;
        EXPECT_EQ(tdb_iter_create(db_, cf, nullptr, &it), TDB_OK);
        for (tdb_iter_seek_to_first(it); tdb_iter_valid(it); tdb_iter_next(it)) {
            size_t kl, vl;
            const char *k = (const char *)tdb_iter_key(it, &kl);
            const char *val = (const char *)tdb_iter_value(it, &vl);
            v.emplace_back(std::string(k, kl), std::string(val, vl));
        }
        EXPECT_EQ(tdb_iter_status(it), TDB_OK);
        tdb_iter_destroy(it);
        return v;
    }
    static std::string Bytes(size_t n, uint64_t seed) {
        std::string s(n, '\0');
        for (size_t i = 0; i < n; i++) s[i] = (char)((seed * 131 + i * 7) & 0xff);
        return s;
    }
};

// Key and value sizes around the stack buffer (512 bytes with the batch
// header) and far beyond it, through single calls into one family and the
// same operations through batches into another: both end up the same.
TEST_F(SingleWriteTest, SingleCallsMatchTheSameOperationsInBatches) {
    tdb_cf_t *ref;
    ASSERT_EQ(tdb_create_cf(db_, "ref", nullptr, &ref), TDB_OK);
    const size_t key_sizes[] = {1, 16, 300, 470, 520, TDB_MAX_KEY_SIZE};
    const size_t val_sizes[] = {0, 1, 100, 440, 480, 600, 70000};
    int n = 0;
    for (size_t ks : key_sizes) {
        for (size_t vs : val_sizes) {
            std::string k = Bytes(ks, n), v = Bytes(vs, n + 1000);
            k[0] = (char)('a' + n % 26);  // distinct keys
            if (ks > 1) k[1] = (char)n;
            int64_t ttl = n % 3 == 0 ? 3600 : 0;
            ASSERT_EQ(tdb_put(db_, cf_, k.data(), k.size(), v.data(), v.size(), ttl), TDB_OK) << ks << "/" << vs;
            tdb_batch_t *b;
            ASSERT_EQ(tdb_batch_create(&b), TDB_OK);
            ASSERT_EQ(tdb_batch_put(b, ref, k.data(), k.size(), v.data(), v.size(), ttl), TDB_OK);
            ASSERT_EQ(tdb_write(db_, b), TDB_OK);
            tdb_batch_destroy(b);
            EXPECT_EQ(Get(k), v);
            if (n % 4 == 1) {  // deletes of both kinds, also of large keys
                bool plain = n % 8 == 1;
                ASSERT_EQ(plain ? tdb_delete(db_, cf_, k.data(), k.size())
                                : tdb_single_delete(db_, cf_, k.data(), k.size()),
                          TDB_OK);
                ASSERT_EQ(tdb_batch_create(&b), TDB_OK);
                ASSERT_EQ(plain ? tdb_batch_delete(b, ref, k.data(), k.size())
                                : tdb_batch_single_delete(b, ref, k.data(), k.size()),
                          TDB_OK);
                ASSERT_EQ(tdb_write(db_, b), TDB_OK);
                tdb_batch_destroy(b);
                EXPECT_EQ(Get(k), "NOT_FOUND");
            }
            n++;
        }
    }
    // A range delete with a start and an end key beyond the stack buffer.
    std::string lo = "m" + std::string(600, 'a'), hi = "s" + std::string(600, 'z');
    ASSERT_EQ(tdb_delete_range(db_, cf_, lo.data(), lo.size(), hi.data(), hi.size()), TDB_OK);
    tdb_batch_t *b;
    ASSERT_EQ(tdb_batch_create(&b), TDB_OK);
    ASSERT_EQ(tdb_batch_delete_range(b, ref, lo.data(), lo.size(), hi.data(), hi.size()), TDB_OK);
    ASSERT_EQ(tdb_write(db_, b), TDB_OK);
    tdb_batch_destroy(b);
    auto mine = All(cf_);
    EXPECT_EQ(mine, All(ref));
    EXPECT_GT(mine.size(), 10u);
    ASSERT_EQ(tdb_flush(db_, cf_), TDB_OK);
    ASSERT_EQ(tdb_flush(db_, ref), TDB_OK);
    Reopen();
    ASSERT_EQ(tdb_get_cf(db_, "ref", &ref), TDB_OK);
    EXPECT_EQ(All(cf_), mine);
    EXPECT_EQ(All(ref), mine);
}

// A refused single write numbers nothing and writes nothing.
TEST_F(SingleWriteTest, RefusedSingleWritesLeaveNothing) {
    ASSERT_EQ(Put("a", "1"), TDB_OK);
    uint64_t seq = LastSeq();
    std::string big_key(TDB_MAX_KEY_SIZE + 1, 'k');
    char v = 'v';
    EXPECT_EQ(tdb_put(db_, cf_, nullptr, 1, "v", 1, 0), TDB_ERR_INVALID_ARG);
    EXPECT_EQ(tdb_put(db_, cf_, "k", 0, "v", 1, 0), TDB_ERR_INVALID_ARG);
    EXPECT_EQ(tdb_put(db_, cf_, big_key.data(), big_key.size(), "v", 1, 0), TDB_ERR_TOO_LARGE);
    EXPECT_EQ(tdb_put(db_, cf_, "k", 1, &v, (size_t)TDB_MAX_VALUE_SIZE + 1, 0), TDB_ERR_TOO_LARGE);
    EXPECT_EQ(tdb_put(db_, cf_, "k", 1, nullptr, 5, 0), TDB_ERR_INVALID_ARG);
    EXPECT_EQ(tdb_put(db_, cf_, "k", 1, "v", 1, -1), TDB_ERR_INVALID_ARG);
    EXPECT_EQ(tdb_delete(db_, cf_, big_key.data(), big_key.size()), TDB_ERR_TOO_LARGE);
    EXPECT_EQ(tdb_single_delete(db_, cf_, "", 0), TDB_ERR_INVALID_ARG);
    EXPECT_EQ(tdb_delete_range(db_, cf_, "b", 1, "a", 1), TDB_ERR_INVALID_ARG);
    EXPECT_EQ(tdb_delete_range(db_, cf_, "a", 1, big_key.data(), big_key.size()), TDB_ERR_TOO_LARGE);
    EXPECT_EQ(tdb_put(db_, nullptr, "k", 1, "v", 1, 0), TDB_ERR_INVALID_ARG);
    tdb_cf_t *gone;
    ASSERT_EQ(tdb_create_cf(db_, "gone", nullptr, &gone), TDB_OK);
    ASSERT_EQ(tdb_drop_cf(db_, "gone"), TDB_OK);
    EXPECT_EQ(tdb_put(db_, gone, "k", 1, "v", 1, 0), TDB_ERR_CLOSED);
    EXPECT_EQ(LastSeq(), seq);
    EXPECT_EQ(Get("k"), "NOT_FOUND");
    EXPECT_EQ(Get("a"), "1");
}

// Values read back from tables (the buffer of the table lookup is the
// caller's result): every size, with and without a TTL prefix, values kept
// apart from their keys (large), after a reopen, and an expired one.
TEST_F(SingleWriteTest, ValuesReadFromTablesComeBackWhole) {
    const size_t sizes[] = {0, 1, 7, 8, 9, 100, 4096, 5000, 300000};
    std::vector<std::pair<std::string, std::string>> want;
    int n = 0;
    for (size_t s : sizes) {
        for (int64_t ttl : {0, 3600}) {
            std::string k = Key(n), v = Bytes(s, n);
            ASSERT_EQ(tdb_put(db_, cf_, k.data(), k.size(), v.data(), v.size(), ttl), TDB_OK);
            want.emplace_back(k, v);
            n++;
        }
    }
    ASSERT_EQ(tdb_put(db_, cf_, "expiring", 8, "soon", 4, 1), TDB_OK);
    ASSERT_EQ(tdb_flush(db_, cf_), TDB_OK);
    tdb_stats_t st;
    ASSERT_EQ(tdb_get_stats(db_, cf_, &st), TDB_OK);
    uint64_t tables = 0;  // at level 1, or deeper once an idle level 1 compacted
    for (int l = 1; l < TDB_MAX_LEVELS; l++) tables += st.levels[l].files;
    ASSERT_GT(tables, 0u);  // served by a table, not a memtable
    ASSERT_EQ(st.immutable_memtables, 0u);
    for (auto &kv : want) EXPECT_EQ(Get(kv.first), kv.second) << kv.first;
    EXPECT_EQ(Get(Key(n + 5)), "NOT_FOUND");  // absent (bloom or index)
    // A newer version in the memtable shadows the table's.
    ASSERT_EQ(Put(want[3].first, "newer"), TDB_OK);
    EXPECT_EQ(Get(want[3].first), "newer");
    ASSERT_EQ(Del(want[4].first), TDB_OK);
    EXPECT_EQ(Get(want[4].first), "NOT_FOUND");
    Reopen();
    ASSERT_EQ(tdb_compact(db_, cf_), TDB_OK);
    for (size_t i = 5; i < want.size(); i++) EXPECT_EQ(Get(want[i].first), want[i].second) << want[i].first;
    // A TTL value read from a table after it expired is not found.
    std::this_thread::sleep_for(std::chrono::milliseconds(2100));
    EXPECT_EQ(Get("expiring"), "NOT_FOUND");
}

}  // namespace
