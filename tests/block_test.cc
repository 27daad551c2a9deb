// Tests for sst/block: prefix-compressed blocks with restart points.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <utility>
#include <vector>

extern "C" {
#include "sst/block.h"
#include "sst/format.h"
#include "util/coding.h"
#include "util/error.h"
#include "util/ikey.h"
}

#include "keys_testutil.h"
#include "testutil.h"

namespace {

using KV = std::pair<std::string, std::string>;


using tdbtest::S;
std::string Str(slice_t s) { return std::string(s.data, s.size); }

int Cmp(slice_t a, slice_t b) { return sst_key_cmp(a, b); }

// Sorted entries: user keys with 1..3 versions each.
std::vector<KV> MakeEntries(size_t n_users, uint32_t seed, size_t vsize = 20) {
    std::mt19937 rng(seed);
    std::vector<KV> out;
    for (size_t i = 0; i < n_users; i++) {
        std::string u = tdbtest::Key(i * 3, 12);
        int versions = 1 + (int)(rng() % 3);
        uint64_t seq = 1000000 - i * 10;
        for (int v = 0; v < versions; v++) {
            out.emplace_back(tdbtest::IK(u, seq - (uint64_t)v, KT_PUT), tdbtest::Value(rng(), rng() % (vsize + 1)));
        }
    }
    return out;
}

std::string Build(const std::vector<KV> &kvs, int interval) {
    block_builder_t b;
    block_builder_init(&b, interval);
    for (auto &kv : kvs) EXPECT_EQ(TDB_OK, block_builder_add(&b, S(kv.first), S(kv.second)));
    size_t est = block_builder_size(&b);
    slice_t out;
    EXPECT_EQ(TDB_OK, block_builder_finish(&b, &out));
    EXPECT_EQ(est, out.size);
    std::string s = Str(out);
    block_builder_free(&b);
    return s;
}

class BlockTest : public ::testing::TestWithParam<int> {};

TEST_P(BlockTest, RoundTripForwardBackward) {
    int interval = GetParam();
    auto kvs = MakeEntries(500, 1);
    std::string blk = Build(kvs, interval);
    block_iter_t it;
    block_iter_init(&it, Cmp);
    ASSERT_EQ(TDB_OK, block_iter_set(&it, S(blk)));
    EXPECT_EQ((kvs.size() + interval - 1) / interval, block_iter_num_restarts(&it));
    size_t i = 0;
    for (block_iter_seek_to_first(&it); block_iter_valid(&it); block_iter_next(&it), i++) {
        ASSERT_LT(i, kvs.size());
        ASSERT_EQ(kvs[i].first, Str(block_iter_key(&it)));
        ASSERT_EQ(kvs[i].second, Str(block_iter_value(&it)));
    }
    EXPECT_EQ(kvs.size(), i);
    EXPECT_EQ(TDB_OK, block_iter_status(&it));
    i = kvs.size();
    for (block_iter_seek_to_last(&it); block_iter_valid(&it); block_iter_prev(&it)) {
        ASSERT_GT(i, 0u);
        i--;
        ASSERT_EQ(kvs[i].first, Str(block_iter_key(&it)));
        ASSERT_EQ(kvs[i].second, Str(block_iter_value(&it)));
    }
    EXPECT_EQ(0u, i);
    EXPECT_EQ(TDB_OK, block_iter_status(&it));
    block_iter_free(&it);
}

TEST_P(BlockTest, SeekSemantics) {
    int interval = GetParam();
    auto kvs = MakeEntries(300, 2);
    std::string blk = Build(kvs, interval);
    block_iter_t it;
    block_iter_init(&it, Cmp);
    ASSERT_EQ(TDB_OK, block_iter_set(&it, S(blk)));
    // Exact keys.
    for (size_t i = 0; i < kvs.size(); i++) {
        block_iter_seek(&it, S(kvs[i].first));
        ASSERT_TRUE(block_iter_valid(&it));
        ASSERT_EQ(kvs[i].first, Str(block_iter_key(&it)));
    }
    // Lookup keys (seq, KT_SEEK) land on the newest version <= seq.
    for (size_t i = 0; i < kvs.size(); i++) {
        slice_t k = S(kvs[i].first);
        std::string u = Str(ikey_user(k));
        block_iter_seek(&it, S(tdbtest::IK(u, ikey_seq(k), KT_SEEK)));
        ASSERT_TRUE(block_iter_valid(&it));
        ASSERT_EQ(kvs[i].first, Str(block_iter_key(&it)));
        // A user key between two present ones lands on the next user key.
        std::string between = u + "x";
        block_iter_seek(&it, S(tdbtest::IK(between, SEQ_MAX, KT_SEEK)));
        size_t j = i;
        while (j < kvs.size() && Str(ikey_user(S(kvs[j].first))) == u) j++;
        if (j == kvs.size()) {
            ASSERT_FALSE(block_iter_valid(&it));
        } else {
            ASSERT_TRUE(block_iter_valid(&it));
            ASSERT_EQ(kvs[j].first, Str(block_iter_key(&it)));
        }
    }
    block_iter_seek(&it, S(tdbtest::IK("", SEQ_MAX, KT_SEEK)));
    ASSERT_TRUE(block_iter_valid(&it));
    EXPECT_EQ(kvs[0].first, Str(block_iter_key(&it)));
    block_iter_seek(&it, S(tdbtest::IK("z", SEQ_MAX, KT_SEEK)));
    EXPECT_FALSE(block_iter_valid(&it));
    EXPECT_EQ(TDB_OK, block_iter_status(&it));
    block_iter_free(&it);
}

TEST_P(BlockTest, MixedNextPrev) {
    int interval = GetParam();
    auto kvs = MakeEntries(200, 3);
    std::string blk = Build(kvs, interval);
    block_iter_t it;
    block_iter_init(&it, Cmp);
    ASSERT_EQ(TDB_OK, block_iter_set(&it, S(blk)));
    std::mt19937 rng(7);
    long pos = (long)(rng() % kvs.size());
    block_iter_seek(&it, S(kvs[pos].first));
    for (int step = 0; step < 5000; step++) {
        if (pos < 0 || pos >= (long)kvs.size()) {
            ASSERT_FALSE(block_iter_valid(&it));
            pos = (long)(rng() % kvs.size());
            block_iter_seek(&it, S(kvs[pos].first));
        }
        ASSERT_TRUE(block_iter_valid(&it));
        ASSERT_EQ(kvs[pos].first, Str(block_iter_key(&it)));
        ASSERT_EQ(kvs[pos].second, Str(block_iter_value(&it)));
        if (rng() % 2) {
            block_iter_next(&it);
            pos++;
        } else {
            block_iter_prev(&it);
            pos--;
        }
    }
    block_iter_free(&it);
}

INSTANTIATE_TEST_SUITE_P(Intervals, BlockTest, ::testing::Values(1, 2, 16, 1000));

TEST(Block, RestartsHaveNoSharedPrefix) {
    auto kvs = MakeEntries(100, 4);
    std::string blk = Build(kvs, 16);
    uint32_t n = dec_fixed32(blk.data() + blk.size() - 4);
    ASSERT_EQ((kvs.size() + 15) / 16, n);
    size_t restarts = blk.size() - 4 - 4 * (size_t)n;
    uint32_t prev = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t off = dec_fixed32(blk.data() + restarts + 4 * i);
        if (i == 0) {
            EXPECT_EQ(0u, off);
        } else {
            EXPECT_GT(off, prev);
        }
        prev = off;
        uint32_t shared;
        ASSERT_NE(nullptr, dec_varint32(blk.data() + off, blk.data() + restarts, &shared));
        EXPECT_EQ(0u, shared);
    }
    // Prefix compression actually shares bytes between neighbours.
    size_t raw = 0;
    for (auto &kv : kvs) raw += kv.first.size() + kv.second.size();
    EXPECT_LT(blk.size(), raw);
}

TEST(Block, EmptyBlock) {
    std::string blk = Build({}, 16);
    EXPECT_EQ(8u, blk.size());
    block_iter_t it;
    block_iter_init(&it, Cmp);
    ASSERT_EQ(TDB_OK, block_iter_set(&it, S(blk)));
    block_iter_seek_to_first(&it);
    EXPECT_FALSE(block_iter_valid(&it));
    block_iter_seek_to_last(&it);
    EXPECT_FALSE(block_iter_valid(&it));
    block_iter_seek(&it, S(tdbtest::IK("a", 1, KT_PUT)));
    EXPECT_FALSE(block_iter_valid(&it));
    EXPECT_EQ(TDB_OK, block_iter_status(&it));
    block_iter_free(&it);
}

TEST(Block, LongKeysUseHeapBuffer) {
    std::vector<KV> kvs;
    for (int i = 0; i < 50; i++) {
        std::string u(300 + i * 40, 'p');
        u += tdbtest::Key(i);
        kvs.emplace_back(tdbtest::IK(u, 5, KT_PUT), tdbtest::Value(i, 10));
    }
    std::sort(kvs.begin(), kvs.end(), [](const KV &a, const KV &b) { return Cmp(S(a.first), S(b.first)) < 0; });
    std::string blk = Build(kvs, 4);
    block_iter_t it;
    block_iter_init(&it, Cmp);
    ASSERT_EQ(TDB_OK, block_iter_set(&it, S(blk)));
    size_t i = kvs.size();
    for (block_iter_seek_to_last(&it); block_iter_valid(&it); block_iter_prev(&it)) {
        i--;
        ASSERT_EQ(kvs[i].first, Str(block_iter_key(&it)));
    }
    EXPECT_EQ(0u, i);
    for (auto &kv : kvs) {
        block_iter_seek(&it, S(kv.first));
        ASSERT_TRUE(block_iter_valid(&it));
        ASSERT_EQ(kv.first, Str(block_iter_key(&it)));
    }
    block_iter_free(&it);
}

TEST(Block, CorruptRestartArrayIsAnError) {
    auto kvs = MakeEntries(100, 5);
    std::string good = Build(kvs, 16);
    uint32_t n = dec_fixed32(good.data() + good.size() - 4);
    size_t restarts = good.size() - 4 - 4 * (size_t)n;
    block_iter_t it;
    block_iter_init(&it, Cmp);

    // Restart count larger than the block.
    std::string b = good;
    enc_fixed32(&b[b.size() - 4], 1u << 30);
    EXPECT_EQ(TDB_ERR_CORRUPTION, block_iter_set(&it, S(b)));
    block_iter_seek_to_first(&it);
    EXPECT_FALSE(block_iter_valid(&it));
    EXPECT_EQ(TDB_ERR_CORRUPTION, block_iter_status(&it));

    // Zero restarts.
    b = good;
    enc_fixed32(&b[b.size() - 4], 0);
    EXPECT_EQ(TDB_ERR_CORRUPTION, block_iter_set(&it, S(b)));

    // A restart offset pointing past the entries.
    b = good;
    enc_fixed32(&b[restarts + 4 * 3], 0xfffffff0u);
    ASSERT_EQ(TDB_OK, block_iter_set(&it, S(b)));
    int errors = 0;
    for (auto &kv : kvs) {  // each seek: the right entry or an error, never garbage
        block_iter_seek(&it, S(kv.first));
        if (block_iter_status(&it) != TDB_OK) {
            EXPECT_EQ(TDB_ERR_CORRUPTION, block_iter_status(&it));
            EXPECT_FALSE(block_iter_valid(&it));
            EXPECT_NE(std::string(""), std::string(tdb_last_error()));
            errors++;
            ASSERT_EQ(TDB_OK, block_iter_set(&it, S(b)));
        } else {
            ASSERT_TRUE(block_iter_valid(&it));
            EXPECT_EQ(kv.first, Str(block_iter_key(&it)));
        }
    }
    EXPECT_GT(errors, 0);

    // A restart offset pointing into the middle of an entry: never a crash.
    b = good;
    enc_fixed32(&b[restarts + 4 * 2], dec_fixed32(&b[restarts + 4 * 2]) + 3);
    ASSERT_EQ(TDB_OK, block_iter_set(&it, S(b)));
    for (auto &kv : kvs) block_iter_seek(&it, S(kv.first));
    block_iter_seek_to_last(&it);
    while (block_iter_valid(&it)) block_iter_prev(&it);

    // Too short to hold a restart array.
    EXPECT_EQ(TDB_ERR_CORRUPTION, block_iter_set(&it, slice_make(good.data(), 3)));
    block_iter_free(&it);
}

// Seek hints change nothing: after them a seek lands where it would have,
// and a damaged restart array is left for the seek to report.
TEST(Block, PrefetchHintsChangeNothing) {
    auto kvs = MakeEntries(200, 9);
    std::mt19937 rng(3);
    for (int interval : {1, 4, 16}) {
        std::string blk = Build(kvs, interval);
        block_iter_t a, b;
        block_iter_init(&a, Cmp);
        block_iter_init(&b, Cmp);
        ASSERT_EQ(TDB_OK, block_iter_set(&a, S(blk)));
        ASSERT_EQ(TDB_OK, block_iter_set(&b, S(blk)));
        for (int i = 0; i < 500; i++) {
            std::string u = tdbtest::Key(rng() % 650, 12);
            std::string t = tdbtest::IK(u, rng() % 2 ? SEQ_MAX : 1000000 - rng() % 2000, KT_SEEK);
            int stages = 0;
            while (block_iter_prefetch_seek(&a, S(t), stages)) stages++;
            EXPECT_EQ(1, stages);
            EXPECT_EQ(TDB_OK, block_iter_status(&a));
            block_iter_seek(&a, S(t));
            block_iter_seek(&b, S(t));
            ASSERT_EQ(block_iter_valid(&b), block_iter_valid(&a)) << u;
            if (block_iter_valid(&a)) {
                ASSERT_EQ(Str(block_iter_key(&b)), Str(block_iter_key(&a)));
            }
        }
        block_iter_free(&a);
        block_iter_free(&b);
    }
    std::string bad = Build(kvs, 4);
    uint32_t n = dec_fixed32(bad.data() + bad.size() - 4);
    size_t restarts = bad.size() - 4 - 4 * (size_t)n;
    enc_fixed32(&bad[restarts + 4 * (n / 2)], 0xfffffff0u);
    block_iter_t it;
    block_iter_init(&it, Cmp);
    ASSERT_EQ(TDB_OK, block_iter_set(&it, S(bad)));
    std::string t = kvs[kvs.size() / 2].first;
    EXPECT_EQ(1, block_iter_prefetch_seek(&it, S(t), 0));
    EXPECT_EQ(0, block_iter_prefetch_seek(&it, S(t), 1));
    EXPECT_EQ(TDB_OK, block_iter_status(&it));
    block_iter_seek(&it, S(t));
    EXPECT_EQ(TDB_ERR_CORRUPTION, block_iter_status(&it));
    block_iter_free(&it);
}

// What one scan of a (possibly damaged) block did.
struct ScanResult {
    size_t entries = 0;
    int status = TDB_OK;
    bool runaway = false;  // more steps than the block can hold entries
};

// Walk the block in one direction from seek_to_first / seek_to_last and
// check every step: the position moves strictly (so the scan ends), the key
// and value lie within the block's bytes, and the scan ends with a clean
// status or a corruption error. Every entry takes at least 3 bytes (its
// three varints), so a scan of more than size / 3 entries is endless.
ScanResult CheckedScan(block_iter_t *it, const std::vector<char> &blk, bool forward, const char *where) {
    ScanResult r;
    const size_t bound = blk.size() / 3;
    const char *lo = blk.data(), *hi = blk.data() + blk.size();
    if (forward) block_iter_seek_to_first(it);
    else block_iter_seek_to_last(it);
    uint32_t last = 0;
    for (; block_iter_valid(it); forward ? block_iter_next(it) : block_iter_prev(it)) {
        if (++r.entries > bound) {
            r.runaway = true;
            ADD_FAILURE() << where << ": " << (forward ? "forward" : "backward") << " scan of a " << blk.size()
                          << "-byte block did not end within " << bound << " entries";
            break;
        }
        if (r.entries > 1 && (forward ? it->cur <= last : it->cur >= last)) {
            ADD_FAILURE() << where << ": position did not move " << (forward ? "forward" : "backward") << " ("
                          << last << " -> " << it->cur << ")";
            break;
        }
        last = it->cur;
        slice_t v = block_iter_value(it);
        EXPECT_TRUE(v.size == 0 || (v.data >= lo && v.data + v.size <= hi)) << where << ": value outside the block";
        EXPECT_LE(block_iter_key(it).size, blk.size()) << where << ": key longer than the block";
    }
    r.status = block_iter_status(it);
    EXPECT_TRUE(r.status == TDB_OK || r.status == TDB_ERR_CORRUPTION)
        << where << ": scan ended with " << tdb_strerror(r.status);
    return r;
}

// Random damage anywhere in a block (flipped bytes, truncation) never
// crashes, reads out of bounds (run under ASan for the latter) or loops:
// every scan, both ways, ends within the entries the block can hold, with
// TDB_OK or TDB_ERR_CORRUPTION; a seek that finds an entry finds one >= its
// target. The undamaged block scans back exactly, and the damage is both
// detected (corruption) and survived (clean scans) in some rounds, so both
// outcomes are exercised.
TEST(Block, FuzzedBlocksNeverCrash) {
    auto kvs = MakeEntries(150, 6);
    std::string good = Build(kvs, 16);
    std::mt19937 rng(11);
    block_iter_t it;
    block_iter_init(&it, Cmp);
    {
        std::vector<char> heap(good.begin(), good.end());
        ASSERT_EQ(block_iter_set(&it, slice_make(heap.data(), heap.size())), TDB_OK);
        ScanResult f = CheckedScan(&it, heap, true, "undamaged"), b = CheckedScan(&it, heap, false, "undamaged");
        EXPECT_EQ(f.entries, kvs.size());
        EXPECT_EQ(b.entries, kvs.size());
        EXPECT_EQ(f.status, TDB_OK);
        EXPECT_EQ(b.status, TDB_OK);
    }
    int rejected = 0, corrupt_scans = 0, clean_scans = 0;
    for (int round = 0; round < 3000 && !HasFailure(); round++) {
        std::string b = good;
        int flips = 1 + (int)(rng() % 4);
        for (int f = 0; f < flips; f++) b[rng() % b.size()] ^= (char)(1 + rng() % 255);
        if (round % 10 == 0) b.resize(rng() % b.size());
        // Copy into an exactly sized heap buffer so ASan catches overreads.
        std::vector<char> heap(b.begin(), b.end());
        std::string where = "round " + std::to_string(round);
        int rc = block_iter_set(&it, slice_make(heap.data(), heap.size()));
        if (rc != TDB_OK) {
            EXPECT_EQ(rc, TDB_ERR_CORRUPTION) << where;
            EXPECT_FALSE(block_iter_valid(&it)) << where;
            block_iter_seek_to_first(&it);
            EXPECT_FALSE(block_iter_valid(&it)) << where << ": a rejected block yields entries";
            rejected++;
            continue;
        }
        for (bool forward : {true, false}) {
            ScanResult r = CheckedScan(&it, heap, forward, where.c_str());
            (r.status == TDB_OK ? clean_scans : corrupt_scans)++;
        }
        std::string t = kvs[rng() % kvs.size()].first;
        block_iter_set(&it, slice_make(heap.data(), heap.size()));
        for (int stage = 0; block_iter_prefetch_seek(&it, S(t), stage); stage++) {
            ASSERT_LT(stage, 4) << where << ": prefetch stages do not end";
        }
        block_iter_seek(&it, S(t));
        if (block_iter_valid(&it)) {
            EXPECT_GE(Cmp(block_iter_key(&it), S(t)), 0) << where << ": seek landed before its target";
            block_iter_prev(&it);
        }
        rc = block_iter_status(&it);
        EXPECT_TRUE(rc == TDB_OK || rc == TDB_ERR_CORRUPTION) << where << ": seek ended with " << tdb_strerror(rc);
    }
    block_iter_free(&it);
    printf("[ fuzzed blocks ] rejected %d, scans ending clean %d, scans ending in corruption %d\n", rejected,
           clean_scans, corrupt_scans);
    EXPECT_GT(rejected, 0);
    EXPECT_GT(clean_scans, 0);
    EXPECT_GT(corrupt_scans, 0);
}

}  // namespace
