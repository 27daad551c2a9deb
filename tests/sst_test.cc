// Tests for sst: builder, reader, iterator, separated values, corruption.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

extern "C" {
#include "cache/cache.h"
#include "env/env.h"
#include "sst/format.h"
#include "sst/sst.h"
#include "util/coding.h"
#include "util/error.h"
#include "util/ikey.h"
#include "util/iter.h"
}

#include "keys_testutil.h"
#include "sst_testutil.h"
#include "testutil.h"

namespace {

using namespace tdbsst;
using tdbtest::Key;
using tdbtest::TempDir;
using tdbtest::Value;

struct Config {
    int compression;
    uint32_t block_size;
};

std::string ConfigName(const ::testing::TestParamInfo<Config> &info) {
    static const char *names[] = {"none", "snappy", "lz4", "zstd"};
    return std::string(names[info.param.compression]) + "_" + std::to_string(info.param.block_size);
}

class SstTable : public ::testing::TestWithParam<Config> {};

TEST_P(SstTable, FullRoundTrip) {
    Config c = GetParam();
    TempDir dir;
    std::string path = dir.file("000001.sst");
    auto es = MakeEntries(100000, 42 + c.compression);
    sst_props_t props;
    BuildTable(path, es, Opts(c.compression, c.block_size), &props);

    uint64_t deletes = 0, kbytes = 0, vbytes = 0, minseq = UINT64_MAX, maxseq = 0;
    for (auto &e : es) {
        deletes += e.type == KT_DELETE;
        kbytes += e.user.size() + 8;
        vbytes += e.value.size();
        minseq = std::min(minseq, e.seq);
        maxseq = std::max(maxseq, e.seq);
    }
    EXPECT_EQ(es.size(), props.num_entries);
    EXPECT_EQ(deletes, props.num_deletes);
    EXPECT_EQ(kbytes, props.raw_key_bytes);
    EXPECT_EQ(vbytes, props.raw_value_bytes);
    EXPECT_EQ(minseq, props.min_seq);
    EXPECT_EQ(maxseq, props.max_seq);
    EXPECT_EQ(es.front().ikey(), Str(props.smallest));
    EXPECT_EQ(es.back().ikey(), Str(props.largest));
    EXPECT_EQ(std::filesystem::file_size(path), props.file_size);

    lru_cache_t *cache = NewCache(8 << 20);
    sst_reader_t *r = nullptr;
    ASSERT_EQ(TDB_OK, sst_reader_open(env_posix(), path.c_str(), 1, cache, &r)) << tdb_last_error();
    const sst_props_t *rp = sst_reader_props(r);
    EXPECT_EQ(props.num_entries, rp->num_entries);
    EXPECT_EQ(props.data_bytes, rp->data_bytes);
    EXPECT_EQ(props.file_size, rp->file_size);
    EXPECT_EQ(c.compression, rp->compression);
    EXPECT_EQ(Str(props.smallest), Str(rp->smallest));
    EXPECT_EQ(Str(props.largest), Str(rp->largest));
    if (c.compression == TDB_COMPRESS_ZSTD) {
        EXPECT_LT(props.data_bytes, vbytes);  // random letters: entropy coding saves ~40%
    }
    sst_props_free(&props);
    ASSERT_EQ(TDB_OK, sst_reader_verify(r)) << tdb_last_error();

    // Forward and backward iteration.
    iter_t *it = sst_reader_iter(r);
    ASSERT_NE(nullptr, it);
    size_t i = 0;
    for (iter_seek_to_first(it); iter_valid(it); iter_next(it), i++) {
        ASSERT_LT(i, es.size());
        ASSERT_EQ(es[i].ikey(), Str(iter_key(it)));
        ASSERT_EQ(es[i].value, Str(iter_value(it)));
    }
    ASSERT_EQ(TDB_OK, iter_status(it));
    ASSERT_EQ(es.size(), i);
    for (iter_seek_to_last(it); iter_valid(it); iter_prev(it)) {
        ASSERT_GT(i, 0u);
        i--;
        ASSERT_EQ(es[i].ikey(), Str(iter_key(it)));
        ASSERT_EQ(es[i].value, Str(iter_value(it)));
    }
    ASSERT_EQ(TDB_OK, iter_status(it));
    ASSERT_EQ(0u, i);

    // Seeks to random targets (present and absent user keys, random
    // snapshots) followed by a few steps either way.
    std::mt19937_64 rng(c.block_size);
    uint64_t nusers = es.size();
    for (int q = 0; q < 3000; q++) {
        Entry probe{Key(rng() % (nusers + 2)), rng() % (es.back().seq + 40), KT_SEEK, ""};
        if (q % 50 == 0) probe.user = "k";  // before everything
        if (q % 51 == 0) probe.user = "l";  // after everything
        std::string target = probe.ikey();
        long pos = std::lower_bound(es.begin(), es.end(), probe, Less) - es.begin();
        iter_seek(it, S(target));
        for (int step = 0; step < 8; step++) {
            if (pos < 0 || pos >= (long)es.size()) {
                ASSERT_FALSE(iter_valid(it));
                break;
            }
            ASSERT_TRUE(iter_valid(it));
            ASSERT_EQ(es[pos].ikey(), Str(iter_key(it)));
            ASSERT_EQ(es[pos].value, Str(iter_value(it)));
            if (rng() % 3 == 0) {
                iter_prev(it);
                pos--;
            } else {
                iter_next(it);
                pos++;
            }
        }
        ASSERT_EQ(TDB_OK, iter_status(it));
    }
    iter_destroy(it);

    // Every key at several snapshots, plus absent keys.
    buf_t val{};
    for (size_t j = 0; j < es.size(); j++) {
        const Entry &e = es[j];
        if (j > 0 && es[j - 1].user == e.user) continue;
        CheckGet(r, es, e.user, SEQ_MAX, &val);
        for (size_t v = j; v < es.size() && es[v].user == e.user; v++) {
            CheckGet(r, es, e.user, es[v].seq, &val);
            CheckGet(r, es, e.user, es[v].seq - 1, &val);  // between versions or before all
        }
    }
    for (uint64_t u = 0; u < nusers; u += 7) CheckGet(r, es, Key(u * 2 + 1), SEQ_MAX, &val);
    CheckGet(r, es, "", SEQ_MAX, &val);
    CheckGet(r, es, "zzz", SEQ_MAX, &val);
    buf_free(&val);
    sst_reader_unref(r);
    lru_cache_destroy(cache);
}

INSTANTIATE_TEST_SUITE_P(CodecsAndBlockSizes, SstTable,
                         ::testing::Values(Config{TDB_COMPRESS_NONE, 4096}, Config{TDB_COMPRESS_SNAPPY, 4096},
                                           Config{TDB_COMPRESS_LZ4, 4096}, Config{TDB_COMPRESS_ZSTD, 4096},
                                           Config{TDB_COMPRESS_NONE, 256}, Config{TDB_COMPRESS_LZ4, 256},
                                           Config{TDB_COMPRESS_ZSTD, 1024}, Config{TDB_COMPRESS_SNAPPY, 65536},
                                           Config{TDB_COMPRESS_LZ4, 65536}),
                         ConfigName);

TEST(Sst, SeparatedValues) {
    for (int codec : {TDB_COMPRESS_NONE, TDB_COMPRESS_LZ4}) {
        TempDir dir;
        std::string path = dir.file("000002.sst");
        auto es = MakeEntries(20000, 7, 100, 4096, 4);
        sst_props_t props;
        BuildTable(path, es, Opts(codec, 4096, 0.01, 512), &props);
        uint64_t nbig = 0, small_bytes = 0, key_bytes = 0;
        for (auto &e : es) {
            if (e.value.size() >= 512) nbig++;
            else small_bytes += e.value.size();
            key_bytes += e.user.size() + 8;
        }
        ASSERT_GT(nbig, 1000u);
        EXPECT_EQ(nbig, props.num_separated_values);
        // Data blocks hold keys, small values and ~14-byte references only.
        EXPECT_LT(props.data_bytes, (small_bytes + key_bytes + es.size() * 20) * 11 / 10);
        if (codec == TDB_COMPRESS_NONE) {
            EXPECT_GT(props.file_size, nbig * 4096);
        }
        sst_props_free(&props);

        sst_reader_t *r = nullptr;
        ASSERT_EQ(TDB_OK, sst_reader_open(env_posix(), path.c_str(), 2, nullptr, &r)) << tdb_last_error();
        ASSERT_EQ(TDB_OK, sst_reader_verify(r)) << tdb_last_error();
        iter_t *it = sst_reader_iter(r);
        size_t i = 0;
        for (iter_seek_to_first(it); iter_valid(it); iter_next(it), i++) {
            ASSERT_EQ(es[i].ikey(), Str(iter_key(it)));  // flag never leaks
            if (i % 3 == 0) {
                ASSERT_EQ(es[i].value, Str(iter_value(it)));  // lazily resolved
            }
        }
        ASSERT_EQ(TDB_OK, iter_status(it));
        ASSERT_EQ(es.size(), i);
        for (iter_seek_to_last(it); iter_valid(it); iter_prev(it)) {
            i--;
            ASSERT_EQ(es[i].ikey(), Str(iter_key(it)));
            ASSERT_EQ(es[i].value, Str(iter_value(it)));
        }
        ASSERT_EQ(0u, i);
        iter_destroy(it);
        buf_t val{};
        for (auto &e : es) CheckGet(r, es, e.user, e.seq, &val);
        buf_free(&val);
        sst_reader_unref(r);
    }
}

TEST(Sst, BloomAvoidsBlockReads) {
    TempDir dir;
    auto es = MakeEntries(20000, 9);
    uint64_t lookups[2];
    for (int with_bloom = 0; with_bloom < 2; with_bloom++) {
        std::string path = dir.file(std::to_string(with_bloom) + ".sst");
        sst_props_t props;
        BuildTable(path, es, Opts(TDB_COMPRESS_LZ4, 4096, with_bloom ? 0.01 : 0), &props);
        sst_props_free(&props);
        lru_cache_t *cache = NewCache(64 << 20);
        sst_reader_t *r = nullptr;
        ASSERT_EQ(TDB_OK, sst_reader_open(env_posix(), path.c_str(), 3, cache, &r));
        buf_t val{};
        unsigned type;
        uint64_t seq;
        for (uint64_t u = 0; u < 10000; u++) {  // odd keys: absent but inside the key range
            ASSERT_EQ(0, sst_reader_get(r, S(Key(u * 2 + 1)), SEQ_MAX, &type, &seq, &val));
        }
        lru_stats_t st;
        lru_cache_stats(cache, &st);
        lookups[with_bloom] = st.hits + st.misses;
        if (!with_bloom) {
            EXPECT_EQ(1, sst_reader_may_contain(r, S(std::string("nope"))));
        }
        EXPECT_EQ(1, sst_reader_may_contain(r, S(es[0].user)));
        buf_free(&val);
        sst_reader_unref(r);
        lru_cache_destroy(cache);
    }
    EXPECT_EQ(10000u, lookups[0]);
    EXPECT_LT(lookups[1], 300u);  // ~1% false positives
}

// Copy, then xor one byte.
std::string Damaged(const std::string &src, const std::string &dst, size_t off) {
    std::filesystem::copy_file(src, dst, std::filesystem::copy_options::overwrite_existing);
    std::fstream f(dst, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg((std::streamoff)off);
    char c;
    f.get(c);
    f.seekp((std::streamoff)off);
    f.put((char)(c ^ 0x41));
    return dst;
}

TEST(Sst, EveryFlippedByteIsDetected) {
    TempDir dir;
    std::string path = dir.file("good.sst");
    auto es = MakeEntries(3000, 13, 100, 2000, 10);
    sst_props_t props;
    BuildTable(path, es, Opts(TDB_COMPRESS_LZ4, 1024, 0.01, 512), &props);
    uint64_t size = props.file_size;
    sst_props_free(&props);
    int at_open = 0, at_read = 0;
    buf_t val{};
    std::vector<size_t> offsets;
    for (size_t off = 0; off < size; off += 997) offsets.push_back(off);
    for (size_t off = size - 64; off < size; off += 7) offsets.push_back(off);  // footer fields
    for (size_t off : offsets) {
        SCOPED_TRACE("offset " + std::to_string(off));
        std::string bad = Damaged(path, dir.file("bad.sst"), off);
        lru_cache_t *cache = NewCache(1 << 20);
        sst_reader_t *r = nullptr;
        int rc = sst_reader_open(env_posix(), bad.c_str(), 9, cache, &r);
        if (rc != TDB_OK) {
            EXPECT_EQ(TDB_ERR_CORRUPTION, rc);
            EXPECT_NE(std::string::npos, std::string(tdb_last_error()).find("bad.sst")) << tdb_last_error();
            at_open++;
            lru_cache_destroy(cache);
            continue;
        }
        // Gets: correct answer or corruption, nothing else.
        bool seen = false;
        for (auto &e : es) {
            unsigned type;
            uint64_t seq;
            int g = sst_reader_get(r, S(e.user), e.seq, &type, &seq, &val);
            if (g < 0) {
                EXPECT_EQ(TDB_ERR_CORRUPTION, g);
                seen = true;
            } else {
                ASSERT_EQ(1, g);
                ASSERT_EQ(e.type, type);
                ASSERT_EQ(e.value, Str(val));
            }
        }
        // A full scan with values must hit it.
        iter_t *it = sst_reader_iter(r);
        size_t n = 0;
        for (iter_seek_to_first(it); iter_valid(it); iter_next(it)) {
            iter_value(it);
            n++;
        }
        EXPECT_EQ(TDB_ERR_CORRUPTION, iter_status(it)) << "scanned " << n;
        EXPECT_NE(std::string::npos, std::string(tdb_last_error()).find("bad.sst"));
        iter_destroy(it);
        EXPECT_EQ(TDB_ERR_CORRUPTION, sst_reader_verify(r));
        at_read += seen;
        sst_reader_unref(r);
        lru_cache_destroy(cache);
    }
    buf_free(&val);
    EXPECT_GT(at_open, 0);
    EXPECT_GT(at_read, 0);
}

TEST(Sst, TruncatedFileIsCorruption) {
    TempDir dir;
    std::string path = dir.file("t.sst");
    auto es = MakeEntries(2000, 17);
    sst_props_t props;
    BuildTable(path, es, Opts(TDB_COMPRESS_ZSTD, 4096), &props);
    uint64_t size = props.file_size;
    sst_props_free(&props);
    for (uint64_t len : {(uint64_t)0, (uint64_t)10, (uint64_t)63, (uint64_t)64, size / 2, size - 64, size - 65,
                         size - 1}) {
        std::string t = dir.file("trunc.sst");
        std::filesystem::copy_file(path, t, std::filesystem::copy_options::overwrite_existing);
        std::filesystem::resize_file(t, len);
        sst_reader_t *r = nullptr;
        EXPECT_EQ(TDB_ERR_CORRUPTION, sst_reader_open(env_posix(), t.c_str(), 1, nullptr, &r)) << len;
        EXPECT_EQ(nullptr, r);
    }
    sst_reader_t *r = nullptr;
    EXPECT_EQ(TDB_ERR_NOT_FOUND, sst_reader_open(env_posix(), dir.file("missing.sst").c_str(), 1, nullptr, &r));
}

TEST(Sst, MisuseIsInvalidArg) {
    TempDir dir;
    sst_options_t o = Opts(TDB_COMPRESS_NONE, 4096);
    sst_builder_t *b = nullptr;
    // Wrong key order, duplicate key, bad type, short key.
    struct Case {
        std::string first, second;
    } cases[] = {
        {tdbtest::IK("b", 5, KT_PUT), tdbtest::IK("a", 5, KT_PUT)},
        {tdbtest::IK("a", 5, KT_PUT), tdbtest::IK("a", 6, KT_PUT)},  // newer after older
        {tdbtest::IK("a", 5, KT_PUT), tdbtest::IK("a", 5, KT_PUT)},
        {tdbtest::IK("a", 5, KT_PUT), tdbtest::IK("b", 5, KT_SEEK)},
        {tdbtest::IK("a", 5, KT_PUT), tdbtest::IK("b", 5, KT_PUT | 0x80)},
        {tdbtest::IK("a", 5, KT_PUT), std::string("short")},
    };
    for (auto &c : cases) {
        ASSERT_EQ(TDB_OK, sst_builder_open(env_posix(), dir.file("x.sst").c_str(), &o, &b));
        ASSERT_EQ(TDB_OK, sst_builder_add(b, S(c.first), S(std::string("v"))));
        EXPECT_EQ(TDB_ERR_INVALID_ARG, sst_builder_add(b, S(c.second), S(std::string("v"))));
        // The error is sticky.
        EXPECT_EQ(TDB_ERR_INVALID_ARG, sst_builder_add(b, S(tdbtest::IK("zz", 1, KT_PUT)), S(std::string("v"))));
        sst_builder_abandon(b);
    }
    o.compression = 77;
    EXPECT_EQ(TDB_ERR_INVALID_ARG, sst_builder_open(env_posix(), dir.file("y.sst").c_str(), &o, &b));
}

TEST(Sst, EmptyTable) {
    TempDir dir;
    std::string path = dir.file("e.sst");
    sst_props_t props;
    BuildTable(path, {}, Opts(TDB_COMPRESS_LZ4, 4096), &props);
    EXPECT_EQ(0u, props.num_entries);
    sst_props_free(&props);
    sst_reader_t *r = nullptr;
    ASSERT_EQ(TDB_OK, sst_reader_open(env_posix(), path.c_str(), 1, nullptr, &r)) << tdb_last_error();
    buf_t val{};
    unsigned type;
    uint64_t seq;
    EXPECT_EQ(0, sst_reader_get(r, S(std::string("a")), SEQ_MAX, &type, &seq, &val));
    iter_t *it = sst_reader_iter(r);
    iter_seek_to_first(it);
    EXPECT_FALSE(iter_valid(it));
    iter_seek_to_last(it);
    EXPECT_FALSE(iter_valid(it));
    iter_seek(it, S(tdbtest::IK("a", 1, KT_SEEK)));
    EXPECT_FALSE(iter_valid(it));
    EXPECT_EQ(TDB_OK, iter_status(it));
    iter_destroy(it);
    EXPECT_EQ(TDB_OK, sst_reader_verify(r));
    sst_reader_unref(r);
}

TEST(Sst, LargeKeysAndValuesWithoutSeparation) {
    TempDir dir;
    std::string path = dir.file("l.sst");
    std::vector<Entry> es;
    for (int i = 0; i < 200; i++) {
        std::string user = std::string(1000 + i * 10, 'u') + Key(i);
        es.push_back(Entry{user, 100, KT_PUT, Value(i, (size_t)(i % 20) * 3000)});
    }
    BuildTable(path, es, Opts(TDB_COMPRESS_ZSTD, 4096));
    sst_reader_t *r = nullptr;
    ASSERT_EQ(TDB_OK, sst_reader_open(env_posix(), path.c_str(), 1, nullptr, &r));
    buf_t val{};
    for (auto &e : es) {
        CheckGet(r, es, e.user, SEQ_MAX, &val);
        CheckGet(r, es, e.user, 99, &val);
        CheckGet(r, es, e.user + "a", SEQ_MAX, &val);
    }
    buf_free(&val);
    EXPECT_EQ(TDB_OK, sst_reader_verify(r));
    sst_reader_unref(r);
}

TEST(Sst, ConcurrentGets) {
    TempDir dir;
    std::string path = dir.file("c.sst");
    auto es = MakeEntries(50000, 21, 100, 3000, 8);
    BuildTable(path, es, Opts(TDB_COMPRESS_LZ4, 4096, 0.01, 1024));
    lru_cache_t *cache = NewCache(256 << 10);  // small: constant eviction
    sst_reader_t *r = nullptr;
    ASSERT_EQ(TDB_OK, sst_reader_open(env_posix(), path.c_str(), 5, cache, &r));
    std::vector<int> failures(4, 0);
    auto worker = [&](int id) {
        std::mt19937_64 rng(id);
        buf_t val{};
        iter_t *it = sst_reader_iter(r);
        for (int q = 0; q < 40000; q++) {
            const Entry &e = es[rng() % es.size()];
            unsigned type;
            uint64_t seq;
            int rc = sst_reader_get(r, S(e.user), e.seq, &type, &seq, &val);
            if (rc != 1 || type != e.type || seq != e.seq || Str(val) != e.value) failures[id]++;
            if (q % 16 == 0) {
                std::string k = e.ikey();
                iter_seek(it, S(k));
                if (!iter_valid(it) || Str(iter_key(it)) != k || Str(iter_value(it)) != e.value) failures[id]++;
            }
        }
        iter_destroy(it);
        buf_free(&val);
    };
    std::vector<std::thread> ts;
    for (int t = 0; t < 4; t++) ts.emplace_back(worker, t);
    for (auto &t : ts) t.join();
    for (int f : failures) EXPECT_EQ(0, f);
    sst_reader_unref(r);
    lru_cache_destroy(cache);
}

TEST(Sst, IteratorKeepsReaderAlive) {
    TempDir dir;
    std::string path = dir.file("a.sst");
    auto es = MakeEntries(1000, 23);
    BuildTable(path, es, Opts(TDB_COMPRESS_NONE, 4096));
    sst_reader_t *r = nullptr;
    ASSERT_EQ(TDB_OK, sst_reader_open(env_posix(), path.c_str(), 1, nullptr, &r));
    iter_t *it = sst_reader_iter(r);
    sst_reader_unref(r);  // the iterator's reference keeps it open
    size_t n = 0;
    for (iter_seek_to_first(it); iter_valid(it); iter_next(it)) n++;
    EXPECT_EQ(es.size(), n);
    iter_destroy(it);
}

TEST(Sst, CacheServesRepeatedReads) {
    TempDir dir;
    std::string path = dir.file("r.sst");
    auto es = MakeEntries(5000, 29, 100, 2000, 5);
    BuildTable(path, es, Opts(TDB_COMPRESS_SNAPPY, 4096, 0.01, 512));
    lru_cache_t *cache = NewCache(16 << 20);
    sst_reader_t *r = nullptr;
    ASSERT_EQ(TDB_OK, sst_reader_open(env_posix(), path.c_str(), 6, cache, &r));
    buf_t val{};
    unsigned type;
    uint64_t seq;
    for (auto &e : es) {
        ASSERT_EQ(1, sst_reader_get(r, S(e.user), e.seq, &type, &seq, &val));
    }
    uint64_t reads = sst_reader_disk_reads(r);
    EXPECT_GT(reads, 0u);
    for (auto &e : es) {
        ASSERT_EQ(1, sst_reader_get(r, S(e.user), e.seq, &type, &seq, &val));
        ASSERT_EQ(e.value, Str(val));
    }
    EXPECT_EQ(reads, sst_reader_disk_reads(r));  // everything came from the cache
    // verify reads from disk regardless of the cache.
    ASSERT_EQ(TDB_OK, sst_reader_verify(r));
    EXPECT_GT(sst_reader_disk_reads(r), reads);
    buf_free(&val);
    sst_reader_unref(r);
    lru_cache_destroy(cache);
}

// A scan iterator (compaction's inputs) uses the blocks the cache holds
// but does not insert the blocks and value records it reads.
TEST(Sst, ScanIteratorUsesTheCacheWithoutFillingIt) {
    TempDir dir;
    std::string path = dir.file("s.sst");
    auto es = MakeEntries(4000, 31, 100, 2000, 7);
    BuildTable(path, es, Opts(TDB_COMPRESS_LZ4, 1024, 0.01, 512));  // separated values too
    lru_cache_t *cache = NewCache(64 << 20);
    sst_reader_t *r = nullptr;
    ASSERT_EQ(TDB_OK, sst_reader_open(env_posix(), path.c_str(), 9, cache, &r)) << tdb_last_error();
    auto walk = [](iter_t *it) {
        size_t n = 0;
        for (iter_seek_to_first(it); iter_valid(it); iter_next(it)) {
            (void)iter_value(it);  // resolves a separated value
            n++;
        }
        EXPECT_EQ(TDB_OK, iter_status(it));
        iter_destroy(it);
        return n;
    };
    lru_stats_t st;
    EXPECT_EQ(es.size(), walk(sst_reader_scan_iter(r)));
    lru_cache_stats(cache, &st);
    EXPECT_EQ(0u, st.entries);
    uint64_t reads = sst_reader_disk_reads(r);
    EXPECT_GT(reads, 0u);

    EXPECT_EQ(es.size(), walk(sst_reader_iter(r)));  // fills the cache
    lru_cache_stats(cache, &st);
    uint64_t entries = st.entries;
    EXPECT_GT(entries, 0u);
    reads = sst_reader_disk_reads(r);
    EXPECT_EQ(es.size(), walk(sst_reader_scan_iter(r)));  // every block and value from the cache
    EXPECT_EQ(reads, sst_reader_disk_reads(r));
    lru_cache_stats(cache, &st);
    EXPECT_EQ(entries, st.entries);
    sst_reader_unref(r);
    lru_cache_destroy(cache);
}

TEST(Sst, PropertiesSkipUnknownFields) {
    sst_props_t p{};
    p.num_entries = 7;
    p.num_deletes = 2;
    p.max_seq = 99;
    p.compression = TDB_COMPRESS_ZSTD;
    std::string small = tdbtest::IK("a", 1, KT_PUT);
    buf_append(&p.smallest, small.data(), small.size());
    sst_props_ext_t x{3, 4096, 0, 1, {0, 0}};
    buf_t enc{};
    ASSERT_EQ(TDB_OK, sst_props_encode(&p, &x, &enc));
    // Fields from a future writer: field 40 varint, field 41 bytes.
    put_varint32(&enc, 40u << 1);
    put_varint64(&enc, 123456789);
    put_varint32(&enc, 41u << 1 | 1);
    put_lenprefixed(&enc, S(std::string("future")));
    sst_props_t q{};
    sst_props_ext_t y{};
    ASSERT_EQ(TDB_OK, sst_props_decode(buf_slice(&enc), &q, &y, "t"));
    EXPECT_EQ(7u, q.num_entries);
    EXPECT_EQ(2u, q.num_deletes);
    EXPECT_EQ(99u, q.max_seq);
    EXPECT_EQ(TDB_COMPRESS_ZSTD, q.compression);
    EXPECT_EQ(small, Str(q.smallest));
    EXPECT_EQ(3u, y.num_data_blocks);
    EXPECT_EQ(4096u, y.max_block_raw);
    EXPECT_EQ(1u, y.format_version);
    sst_props_free(&q);
    // Truncated field and wrong wire type are corruption.
    sst_props_t z{};
    EXPECT_EQ(TDB_ERR_CORRUPTION, sst_props_decode(slice_make(enc.data, enc.size - 1), &z, &y, "t"));
    sst_props_free(&z);
    std::string bad;
    bad.push_back((char)(1u << 1 | 1));  // num_entries as bytes
    bad.push_back(1);
    bad.push_back('x');
    EXPECT_EQ(TDB_ERR_CORRUPTION, sst_props_decode(S(bad), &z, &y, "t"));
    sst_props_free(&z);
    buf_free(&enc);
    sst_props_free(&p);
}

// Build and cached random-get rates for 1M entries of 16-byte keys and
// 100-byte values. Run with --gtest_also_run_disabled_tests.
TEST(Sst, DISABLED_Perf) {
    TempDir dir;
    std::string path = dir.file("p.sst");
    const size_t n = 1000000;
    std::vector<std::string> keys(n), vals(n);
    for (size_t i = 0; i < n; i++) {
        keys[i] = tdbtest::IK(Key(i), i + 1, KT_PUT);
        vals[i] = Value(i, 100);
    }
    sst_options_t o = Opts(TDB_COMPRESS_LZ4, 4096, 0.01, 512);
    auto cpu = [] {
        timespec ts;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return ts.tv_sec + ts.tv_nsec * 1e-9;
    };
    double c0 = cpu();
    auto t0 = std::chrono::steady_clock::now();
    sst_builder_t *b = nullptr;
    ASSERT_EQ(TDB_OK, sst_builder_open(env_posix(), path.c_str(), &o, &b));
    for (size_t i = 0; i < n; i++) ASSERT_EQ(TDB_OK, sst_builder_add(b, S(keys[i]), S(vals[i])));
    sst_props_t props;
    ASSERT_EQ(TDB_OK, sst_builder_finish(b, &props));
    double build_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double build_cpu = cpu() - c0;
    lru_cache_t *cache = NewCache(1ull << 30);
    sst_reader_t *r = nullptr;
    ASSERT_EQ(TDB_OK, sst_reader_open(env_posix(), path.c_str(), 1, cache, &r));
    buf_t val{};
    unsigned type;
    uint64_t seq;
    for (size_t i = 0; i < n; i++) ASSERT_EQ(1, sst_reader_get(r, S(Key(i)), SEQ_MAX, &type, &seq, &val));
    std::mt19937_64 rng(1);
    std::vector<uint32_t> order(n);
    for (auto &x : order) x = (uint32_t)(rng() % n);
    std::vector<std::string> qkeys(n);
    for (size_t i = 0; i < n; i++) qkeys[i] = Key(order[i]);
    c0 = cpu();
    t0 = std::chrono::steady_clock::now();
    for (size_t i = 0; i < n; i++) {
        if (sst_reader_get(r, S(qkeys[i]), SEQ_MAX, &type, &seq, &val) != 1) FAIL();
    }
    double get_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double get_cpu = cpu() - c0;
    printf("build: %.0f entries/s wall, %.0f entries/s cpu (%.1f MB/s of input), file %.1f MiB (data %.1f MiB)\n",
           n / build_s, n / build_cpu, n * 124.0 / build_s / 1e6, props.file_size / 1048576.0,
           props.data_bytes / 1048576.0);
    printf("cached random get: %.0f gets/s wall (%.0f ns/get), %.0f gets/s cpu (%.0f ns/get)\n", n / get_s,
           get_s * 1e9 / n, n / get_cpu, get_cpu * 1e9 / n);
    sst_props_free(&props);
    buf_free(&val);
    sst_reader_unref(r);
    lru_cache_destroy(cache);
}


// ---------------------------------------------------------------------------
// Range-deletion block.
// ---------------------------------------------------------------------------

struct Tomb {
    std::string start, end;
    uint64_t seq;
};

// Tombstones over the key space of MakeEntries, some ending in "\0" (exact
// largest bound), with sequences distinct from the entries' (odd * 8 + 1).
std::vector<Tomb> MakeTombs(size_t n, uint32_t seed, uint64_t keys) {
    std::mt19937_64 rng(seed);
    std::vector<Tomb> ts;
    for (size_t i = 0; i < n; i++) {
        uint64_t a = rng() % keys, w = 1 + rng() % 20;
        Tomb t{Key(a), Key(a + w), 8 * (rng() % 1000) + 1};
        if (rng() % 3 == 0) t.end = Key(a + w - 1) + std::string(1, '\0');
        if (t.end <= t.start) t.end = t.start + "z";
        bool dup = false;
        for (auto &o : ts) dup |= o.start == t.start && o.seq == t.seq;
        if (!dup) ts.push_back(t);
    }
    return ts;
}

void BuildWithTombs(const std::string &path, const std::vector<Entry> &es, const std::vector<Tomb> &ts,
                    sst_props_t *props) {
    sst_options_t o = Opts(TDB_COMPRESS_LZ4, 512, 0.01, 64);
    sst_builder_t *b = nullptr;
    ASSERT_EQ(TDB_OK, sst_builder_open(env_posix(), path.c_str(), &o, &b));
    size_t t = 0;
    for (size_t i = 0; i < es.size(); i++) {  // tombstones interleaved, in no particular order
        if (t < ts.size() && i % 7 == 0) {
            ASSERT_EQ(TDB_OK, sst_builder_add_range_del(b, S(ts[t].start), S(ts[t].end), ts[t].seq));
            t++;
        }
        std::string k = es[i].ikey();
        ASSERT_EQ(TDB_OK, sst_builder_add(b, S(k), S(es[i].value))) << tdb_last_error();
    }
    for (; t < ts.size(); t++) ASSERT_EQ(TDB_OK, sst_builder_add_range_del(b, S(ts[t].start), S(ts[t].end), ts[t].seq));
    ASSERT_EQ(TDB_OK, sst_builder_finish(b, props)) << tdb_last_error();
}

uint64_t BruteTomb(const std::vector<Tomb> &ts, const std::string &key, uint64_t snap) {
    uint64_t best = 0;
    for (auto &t : ts)
        if (t.seq <= snap && t.start <= key && key < t.end && t.seq > best) best = t.seq;
    return best;
}

TEST(Sst, RangeDeletionBlockRoundTrip) {
    TempDir dir;
    std::string path = dir.file("rd.sst");
    auto es = MakeEntries(600, 31, 50, 200, 5);
    auto ts = MakeTombs(60, 32, 600);
    sst_props_t props;
    BuildWithTombs(path, es, ts, &props);
    EXPECT_EQ(ts.size(), props.num_range_deletes);
    EXPECT_EQ(es.size(), props.num_entries);
    sst_props_free(&props);
    lru_cache_t *cache = NewCache(1 << 20);
    sst_reader_t *r = nullptr;
    ASSERT_EQ(TDB_OK, sst_reader_open(env_posix(), path.c_str(), 3, cache, &r)) << tdb_last_error();
    EXPECT_EQ(TDB_OK, sst_reader_verify(r)) << tdb_last_error();
    const sst_props_t *p = sst_reader_props(r);
    EXPECT_EQ(ts.size(), p->num_range_deletes);
    const range_del_t *rd;
    size_t n = sst_reader_range_dels(r, &rd);
    ASSERT_EQ(ts.size(), n);
    uint64_t min_seq = UINT64_MAX, max_seq = 0;
    for (auto &e : es) min_seq = std::min(min_seq, e.seq), max_seq = std::max(max_seq, e.seq);
    for (size_t i = 0; i < n; i++) {
        if (i > 0) {
            int c = slice_compare(rd[i - 1].start, rd[i].start);
            ASSERT_TRUE(c < 0 || (c == 0 && rd[i - 1].seq > rd[i].seq));
        }
        buf_t lo{}, hi{};
        ASSERT_EQ(TDB_OK, rd_bound_smallest(&lo, rd[i].start, rd[i].seq));
        ASSERT_EQ(TDB_OK, rd_bound_largest(&hi, rd[i].end));
        EXPECT_LE(ikey_compare(S(Str(p->smallest)), buf_slice(&lo)), 0);
        EXPECT_GE(ikey_compare(S(Str(p->largest)), buf_slice(&hi)), 0);
        buf_free(&lo);
        buf_free(&hi);
        min_seq = std::min(min_seq, rd[i].seq), max_seq = std::max(max_seq, rd[i].seq);
    }
    EXPECT_EQ(min_seq, p->min_seq);
    EXPECT_EQ(max_seq, p->max_seq);
    for (uint64_t k = 0; k < 640; k++) {
        for (std::string key : {Key(k), Key(k) + std::string(1, '\0'), Key(k) + "5"}) {
            for (uint64_t snap : {(uint64_t)0, (uint64_t)2000, (uint64_t)5000, (uint64_t)SEQ_MAX})
                ASSERT_EQ(BruteTomb(ts, key, snap), sst_reader_range_del_seq(r, S(key), snap)) << key << "@" << snap;
        }
    }
    // Points are unaffected (the table stores both; the caller combines them).
    buf_t val{};
    for (auto &e : es) CheckGet(r, es, e.user, e.seq, &val);
    buf_free(&val);
    sst_reader_unref(r);
    lru_cache_destroy(cache);
}

TEST(Sst, TombstoneOnlyTable) {
    TempDir dir;
    std::string path = dir.file("t.sst");
    std::vector<Tomb> ts = {{"m", "p", 9}, {"a", "c", 4}, {"b", std::string("b\0", 2), 7}};
    sst_props_t props;
    BuildWithTombs(path, {}, ts, &props);
    EXPECT_EQ(0u, props.num_entries);
    EXPECT_EQ(3u, props.num_range_deletes);
    EXPECT_EQ(4u, props.min_seq);
    EXPECT_EQ(9u, props.max_seq);
    EXPECT_EQ(tdbtest::IK("a", 4, KT_RANGE_DELETE), Str(props.smallest));
    EXPECT_EQ(tdbtest::IK("p", SEQ_MAX, KT_RANGE_DELETE), Str(props.largest));  // sentinel: nothing at p
    sst_props_free(&props);
    sst_reader_t *r = nullptr;
    ASSERT_EQ(TDB_OK, sst_reader_open(env_posix(), path.c_str(), 1, nullptr, &r)) << tdb_last_error();
    EXPECT_EQ(TDB_OK, sst_reader_verify(r)) << tdb_last_error();
    buf_t val{};
    unsigned type;
    uint64_t seq;
    EXPECT_EQ(0, sst_reader_get(r, S("a"), SEQ_MAX, &type, &seq, &val));
    EXPECT_EQ(7u, sst_reader_range_del_seq(r, S("b"), SEQ_MAX));
    EXPECT_EQ(4u, sst_reader_range_del_seq(r, S("b"), 6));
    EXPECT_EQ(4u, sst_reader_range_del_seq(r, S("b\x01"), SEQ_MAX));  // above b\0: only [a, c)
    EXPECT_EQ(0u, sst_reader_range_del_seq(r, S("c"), SEQ_MAX));
    EXPECT_EQ(9u, sst_reader_range_del_seq(r, S("o"), SEQ_MAX));
    EXPECT_EQ(0u, sst_reader_range_del_seq(r, S("p"), SEQ_MAX));
    iter_t *it = sst_reader_iter(r);
    iter_seek_to_first(it);
    EXPECT_FALSE(iter_valid(it));
    iter_destroy(it);
    buf_free(&val);
    sst_reader_unref(r);
    // Only the exact bound form: a tombstone ending in "\0" bounds the
    // table by its predecessor.
    BuildWithTombs(path, {}, {{"b", std::string("b\0", 2), 7}}, &props);
    EXPECT_EQ(tdbtest::IK("b", 0, KT_RANGE_DELETE), Str(props.largest));
    sst_props_free(&props);
}

TEST(Sst, RangeDelMisuse) {
    TempDir dir;
    sst_options_t o = Opts(TDB_COMPRESS_NONE, 4096);
    sst_builder_t *b = nullptr;
    ASSERT_EQ(TDB_OK, sst_builder_open(env_posix(), dir.file("x.sst").c_str(), &o, &b));
    EXPECT_EQ(TDB_ERR_INVALID_ARG, sst_builder_add(b, S(tdbtest::IK("a", 5, KT_RANGE_DELETE)), S(std::string("b"))));
    sst_builder_abandon(b);
    ASSERT_EQ(TDB_OK, sst_builder_open(env_posix(), dir.file("x.sst").c_str(), &o, &b));
    EXPECT_EQ(TDB_ERR_INVALID_ARG, sst_builder_add_range_del(b, S("b"), S("a"), 5));
    EXPECT_EQ(TDB_ERR_INVALID_ARG, sst_builder_add_range_del(b, S("a"), S("b"), 5));  // sticky
    sst_builder_abandon(b);
    ASSERT_EQ(TDB_OK, sst_builder_open(env_posix(), dir.file("x.sst").c_str(), &o, &b));
    EXPECT_EQ(TDB_ERR_INVALID_ARG, sst_builder_add_range_del(b, S(""), S("a"), 5));
    sst_builder_abandon(b);
    ASSERT_EQ(TDB_OK, sst_builder_open(env_posix(), dir.file("x.sst").c_str(), &o, &b));
    ASSERT_EQ(TDB_OK, sst_builder_add_range_del(b, S("a"), S("b"), 5));
    ASSERT_EQ(TDB_OK, sst_builder_add_range_del(b, S("a"), S("c"), 5));
    EXPECT_EQ(TDB_ERR_INVALID_ARG, sst_builder_finish(b, nullptr));
}

TEST(Sst, DamagedRangeDeletionBlockIsDetected) {
    TempDir dir;
    std::string path = dir.file("good.sst");
    auto es = MakeEntries(200, 41, 30);
    auto ts = MakeTombs(300, 42, 200);
    sst_props_t props;
    BuildWithTombs(path, es, ts, &props);
    uint64_t size = props.file_size;
    sst_props_free(&props);
    int detected = 0, total = 0;
    for (size_t off = 0; off < size; off += 9) {
        std::string bad = Damaged(path, dir.file("bad.sst"), off);
        sst_reader_t *r = nullptr;
        int rc = sst_reader_open(env_posix(), bad.c_str(), 9, nullptr, &r);
        total++;
        if (rc != TDB_OK) {
            ASSERT_EQ(TDB_ERR_CORRUPTION, rc) << off;
            detected++;
            continue;
        }
        EXPECT_EQ(TDB_ERR_CORRUPTION, sst_reader_verify(r)) << "offset " << off;
        detected++;
        sst_reader_unref(r);
    }
    EXPECT_EQ(total, detected);
}

}  // namespace

namespace {

// Three tables over interleaved keys of one entry list.
struct ThreeTables {
    std::vector<Entry> all;
    sst_reader_t *r[3] = {nullptr, nullptr, nullptr};
    void Open(const TempDir &dir, lru_cache_t *cache) {
        all = MakeEntries(6000, 41, 100);
        std::vector<Entry> part[3];
        for (size_t i = 0; i < all.size(); i++) part[(i / 3) % 3].push_back(all[i]);  // runs of 3 entries
        for (int t = 0; t < 3; t++) {
            std::string path = dir.file("t" + std::to_string(t) + ".sst");
            BuildTable(path, part[t], Opts(TDB_COMPRESS_LZ4, 1024, 0.01));
            ASSERT_EQ(TDB_OK, sst_reader_open(env_posix(), path.c_str(), (uint64_t)(10 + t), cache, &r[t]));
        }
    }
    iter_t *Merge() {
        iter_t *k[3] = {sst_reader_iter(r[0]), sst_reader_iter(r[1]), sst_reader_iter(r[2])};
        return iter_merge(k, 3, ikey_compare);
    }
    ~ThreeTables() {
        for (auto *x : r)
            if (x) sst_reader_unref(x);
    }
};

}  // namespace

// A merged seek over tables runs their seek_prepare stages first (index
// search, cache hints, block fetch); every seek still lands where a plain
// lower bound over all entries says, with and without a block cache, over
// cold and cached blocks, and the next entries follow in order.
TEST(Sst, MergedSeeksOverPreparedTablesMatchTheReference) {
    for (int with_cache = 0; with_cache < 2; with_cache++) {
        TempDir dir;
        lru_cache_t *cache = with_cache ? NewCache(1 << 20) : nullptr;
        {
            ThreeTables tt;
            tt.Open(dir, cache);
            iter_t *m = tt.Merge();
            ASSERT_NE(m, nullptr);
            std::mt19937 rng(5);
            for (int i = 0; i < 3000; i++) {
                uint64_t u = rng() % 4200;  // odd keys absent, some past the end
                uint64_t snap = rng() % 2 ? SEQ_MAX : 10 + rng() % 20000;
                std::string t = tdbtest::IK(Key(u), snap, KT_SEEK);
                Entry probe{Key(u), snap, KT_SEEK, ""};
                auto want = std::lower_bound(tt.all.begin(), tt.all.end(), probe, Less);
                iter_seek(m, S(t));
                for (int step = 0; step < 3; step++, ++want) {
                    if (want == tt.all.end()) {
                        ASSERT_FALSE(iter_valid(m)) << u;
                        break;
                    }
                    ASSERT_TRUE(iter_valid(m)) << u << " " << tdb_last_error();
                    ASSERT_EQ(want->ikey(), Str(iter_key(m)));
                    ASSERT_EQ(want->value, Str(iter_value(m)));
                    iter_next(m);
                }
                ASSERT_EQ(TDB_OK, iter_status(m));
            }
            iter_destroy(m);

            // Prepared for one target, sought to another: the seek ignores
            // the preparation.
            iter_t *it = sst_reader_iter(tt.r[0]);
            std::string t1 = tdbtest::IK(Key(100), SEQ_MAX, KT_SEEK), t2 = tdbtest::IK(Key(3000), SEQ_MAX, KT_SEEK);
            for (int stage = 0; it->ops->seek_prepare(it, S(t1), stage); stage++) {
            }
            iter_seek(it, S(t2));
            ASSERT_TRUE(iter_valid(it));
            EXPECT_GE(ikey_compare(iter_key(it), S(t2)), 0);
            iter_destroy(it);
        }
        if (cache) lru_cache_destroy(cache);
    }
}

// A block that fails its checksum while a seek is being prepared fails
// the seek: the merge is invalid with CORRUPTION, not positioned past it.
TEST(Sst, MergedSeekIntoADamagedBlockIsCorruption) {
    TempDir dir;
    ThreeTables tt;
    tt.Open(dir, nullptr);
    {
        std::fstream f(dir.file("t1.sst"), std::ios::in | std::ios::out | std::ios::binary);
        f.seekg(40);
        char c;
        f.get(c);
        f.seekp(40);
        f.put((char)(c ^ 0x41));
    }
    iter_t *m = tt.Merge();
    std::string t = tdbtest::IK(Key(0), SEQ_MAX, KT_SEEK);
    iter_seek(m, S(t));
    EXPECT_FALSE(iter_valid(m));
    EXPECT_EQ(TDB_ERR_CORRUPTION, iter_status(m));
    EXPECT_NE(std::string::npos, std::string(tdb_last_error()).find("t1.sst")) << tdb_last_error();
    iter_destroy(m);
}
