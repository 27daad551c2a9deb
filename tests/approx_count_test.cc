// tdb_approximate_count: the range estimate behind the MariaDB engine's
// records_in_range. Exact for a handful of memtable entries; within 2x of
// the true count for ranges of 10 entries and more, whether the range
// lies in the memtable, in level-1 tables or in sorted deeper levels, for
// decimal string keys, big-endian integer keys and random keys.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "db_fixture.h"
#include "testutil.h"
#include "tidesdb/tidesdb.h"

using tdbtest::Key;
using tdbtest::Value;

namespace {

class ApproxCountBase : public tdbtest::DbFixture {
  protected:
    explicit ApproxCountBase(size_t write_buffer) : tdbtest::DbFixture(write_buffer) {}

    uint64_t Count(const std::string *lo, const std::string *hi) {
        uint64_t n = ~0ull;
        EXPECT_EQ(tdb_approximate_count(db_, cf_, lo ? lo->data() : nullptr, lo ? lo->size() : 0,
                                        hi ? hi->data() : nullptr, hi ? hi->size() : 0, &n),
                  TDB_OK)
            << tdb_last_error();
        return n;
    }

    // Random ranges over the sorted keys: the estimate is within 2x.
    void ExpectWithin2x(const std::vector<std::string> &sorted, size_t width, int rounds, const char *where) {
        std::mt19937_64 rng(width * 7919 + rounds);
        for (int r = 0; r < rounds; r++) {
            size_t a = rng() % (sorted.size() - width);
            const std::string &lo = sorted[a], &hi = sorted[a + width];
            uint64_t n = Count(&lo, &hi);
            EXPECT_GE(n * 2, width) << where << ": range of " << width << " from entry " << a << " estimated " << n;
            EXPECT_LE(n, width * 2) << where << ": range of " << width << " from entry " << a << " estimated " << n;
        }
    }

    void ExpectAllWidths(const std::vector<std::string> &sorted, const char *where) {
        for (size_t w : {10, 100, 1000, 10000}) ExpectWithin2x(sorted, w, 20, where);
        uint64_t all = Count(nullptr, nullptr);
        EXPECT_GE(all * 2, sorted.size()) << where;
        EXPECT_LE(all, sorted.size() * 2) << where;
    }
};

// One memtable holds a whole data set.
class ApproxCountTest : public ApproxCountBase {
  protected:
    ApproxCountTest() : ApproxCountBase(8 << 20) {}
};

// 256 KiB memtables: writes spread over many tables, compaction output over
// several files of a sorted level.
class ApproxCountManyFilesTest : public ApproxCountBase {
  protected:
    ApproxCountManyFilesTest() : ApproxCountBase(256 << 10) {}
};

std::string BigEndian(uint64_t v) {
    std::string s(8, '\0');
    for (int i = 7; i >= 0; i--, v >>= 8) s[i] = (char)(v & 0xff);
    return s;
}

TEST_F(ApproxCountTest, SmallMemtableRangesAreExact) {
    for (int i = 0; i < 10; i++) ASSERT_EQ(Put(Key(i), "v"), TDB_OK);
    std::string k2 = Key(2), k5 = Key(5), k9 = Key(9), past = Key(100);
    EXPECT_EQ(Count(nullptr, nullptr), 10u);
    EXPECT_EQ(Count(&k2, &k5), 3u) << "[lo, hi): lo counted, hi not";
    EXPECT_EQ(Count(&k9, nullptr), 1u);
    EXPECT_EQ(Count(nullptr, &k2), 2u);
    EXPECT_EQ(Count(&past, nullptr), 0u);
    EXPECT_EQ(Count(&k5, &k2), 0u) << "an inverted range is empty";
    EXPECT_EQ(Count(&k5, &k5), 0u);
}

// A range within one or two of a table's blocks is counted in them: exact,
// whether its bounds are keys of the table or fall between them, at a
// block's first entry or inside it.
TEST_F(ApproxCountTest, SmallTableRangesAreExact) {
    std::vector<std::string> keys;
    for (int i = 0; i < 20000; i++) keys.push_back(Key((uint64_t)i * 3));
    for (const auto &k : keys) ASSERT_EQ(Put(k, Value(1, 100)), TDB_OK);
    ASSERT_EQ(tdb_flush(db_, cf_), TDB_OK);
    ASSERT_EQ(tdb_wait_idle(db_), TDB_OK);
    std::mt19937_64 rng(7);
    for (int r = 0; r < 1500; r++) {
        size_t a = rng() % (keys.size() - 20), w = rng() % 21;
        // Key(3i + 1) lies between keys 3i and 3i + 3: it counts from the next key.
        bool between = rng() & 1;
        std::string lo = between ? Key((uint64_t)a * 3 + 1) : keys[a];
        const std::string &hi = keys[a + w];
        uint64_t want = between ? (w ? w - 1 : 0) : w;
        EXPECT_EQ(Count(&lo, &hi), want) << "from entry " << a << (between ? " (lo between keys)" : "") << ", " << w
                                         << " entries wide";
    }
}

TEST_F(ApproxCountTest, DecimalKeysInMemtableAndTable) {
    std::vector<std::string> keys;
    for (int i = 0; i < 60000; i++) keys.push_back(Key((uint64_t)i * 3));
    for (const auto &k : keys) ASSERT_EQ(Put(k, Value(1, 100)), TDB_OK);
    ExpectAllWidths(keys, "memtable");
    ASSERT_EQ(tdb_flush(db_, cf_), TDB_OK);
    ASSERT_EQ(tdb_wait_idle(db_), TDB_OK);
    ExpectAllWidths(keys, "one level-1 table");
}

TEST_F(ApproxCountManyFilesTest, DecimalKeysOverManyTablesAndASortedLevel) {
    std::vector<std::string> keys;
    for (int i = 0; i < 60000; i++) keys.push_back(Key((uint64_t)i * 3));
    std::sort(keys.begin(), keys.end());
    for (const auto &k : keys) ASSERT_EQ(Put(k, Value(1, 100)), TDB_OK);
    ASSERT_EQ(tdb_wait_idle(db_), TDB_OK);
    ExpectAllWidths(keys, "memtables and level-1 tables");
    ASSERT_EQ(tdb_compact(db_, cf_), TDB_OK);
    tdb_stats_t st;
    ASSERT_EQ(tdb_get_stats(db_, cf_, &st), TDB_OK);
    uint64_t deep = 0;
    for (int l = 2; l < TDB_MAX_LEVELS; l++) deep += st.levels[l].files;
    ASSERT_GT(deep, 1u) << "the data should sit in several files of a sorted level";
    ExpectAllWidths(keys, "sorted level");
}

// MariaDB's index keys: big-endian integers, here behind a 4-byte index id.
TEST_F(ApproxCountTest, BigEndianKeysAcrossMemtableAndTables) {
    std::vector<std::string> keys;
    for (uint64_t i = 1; i <= 50000; i++) keys.push_back(std::string("\x00\x00\x00\x07", 4) + BigEndian(i));
    for (size_t i = 0; i < keys.size() / 2; i++) ASSERT_EQ(Put(keys[i], Value(i, 120)), TDB_OK);
    ASSERT_EQ(tdb_flush(db_, cf_), TDB_OK);
    ASSERT_EQ(tdb_wait_idle(db_), TDB_OK);
    for (size_t i = keys.size() / 2; i < keys.size(); i++) ASSERT_EQ(Put(keys[i], Value(i, 120)), TDB_OK);
    ExpectAllWidths(keys, "half in a table, half in the memtable");
}

TEST_F(ApproxCountTest, RandomKeys) {
    std::mt19937_64 rng(42);
    std::vector<std::string> keys;
    for (int i = 0; i < 40000; i++) keys.push_back(BigEndian(rng()) + BigEndian(rng()));
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    std::vector<std::string> shuffled = keys;
    std::shuffle(shuffled.begin(), shuffled.end(), rng);
    for (const auto &k : shuffled) ASSERT_EQ(Put(k, Value(3, 80)), TDB_OK);
    ExpectAllWidths(keys, "memtable");
    ASSERT_EQ(tdb_flush(db_, cf_), TDB_OK);
    ASSERT_EQ(tdb_wait_idle(db_), TDB_OK);
    ExpectAllWidths(keys, "table");
}

// With a bound: never above it; the tables reaching it answer alone (the
// memtable's newer versions of the same keys are then not counted); below
// it the memtable counts as without one.
TEST_F(ApproxCountTest, BoundedCount) {
    for (int i = 0; i < 1000; i++) ASSERT_EQ(Put(Key(i), Value(i, 100)), TDB_OK);
    ASSERT_EQ(tdb_flush(db_, cf_), TDB_OK);
    ASSERT_EQ(tdb_wait_idle(db_), TDB_OK);
    for (int i = 100; i < 120; i++) ASSERT_EQ(Put(Key(i), Value(i + 1, 100)), TDB_OK);
    std::string lo = Key(100), hi = Key(110);
    auto bounded = [&](uint64_t max) {
        uint64_t n = ~0ull;
        EXPECT_EQ(tdb_approximate_count_max(db_, cf_, lo.data(), lo.size(), hi.data(), hi.size(), max, &n), TDB_OK)
            << tdb_last_error();
        return n;
    };
    EXPECT_EQ(Count(&lo, &hi), 20u) << "10 keys, a version of each in the table and in the memtable";
    EXPECT_EQ(bounded(10), 10u) << "the table's 10 entries reach the bound: the memtable is not counted";
    EXPECT_EQ(bounded(15), 15u) << "the sum is capped";
    EXPECT_EQ(bounded(100), 20u) << "below the bound: as without one";
    EXPECT_EQ(bounded(UINT64_MAX), 20u);
    EXPECT_EQ(bounded(0), 0u);
    uint64_t n;
    EXPECT_EQ(tdb_approximate_count_max(db_, cf_, nullptr, 0, nullptr, 0, 5, nullptr), TDB_ERR_INVALID_ARG);
    EXPECT_EQ(tdb_approximate_count_max(db_, cf_, nullptr, 0, nullptr, 0, 5, &n), TDB_OK);
    EXPECT_EQ(n, 5u);
}

TEST_F(ApproxCountTest, BadArguments) {
    uint64_t n;
    EXPECT_EQ(tdb_approximate_count(db_, cf_, nullptr, 0, nullptr, 0, nullptr), TDB_ERR_INVALID_ARG);
    EXPECT_EQ(tdb_approximate_count(db_, cf_, nullptr, 3, nullptr, 0, &n), TDB_ERR_INVALID_ARG);
    EXPECT_EQ(tdb_approximate_count(nullptr, cf_, nullptr, 0, nullptr, 0, &n), TDB_ERR_INVALID_ARG);
    EXPECT_EQ(tdb_approximate_count(db_, cf_, nullptr, 0, nullptr, 0, &n), TDB_OK);
    EXPECT_EQ(n, 0u) << "an empty family";
}

} // namespace
