// Unit tests for sst/bloom: no false negatives, measured FPR, malformed filters.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <string>

#include "keys_testutil.h"
#include "testutil.h"

extern "C" {
#include "sst/bloom.h"
#include "util/coding.h"
#include "util/error.h"
}

namespace {

using tdbtest::S;

// Build a filter over Key(0..n-1) at the given fpr.
std::string Build(double fpr, uint64_t n, uint64_t base = 0) {
    bloom_builder_t *b = bloom_builder_create(fpr);
    EXPECT_NE(b, nullptr);
    for (uint64_t i = 0; i < n; i++) EXPECT_EQ(bloom_builder_add(b, S(tdbtest::Key(base + i))), TDB_OK);
    buf_t out = {};
    EXPECT_EQ(bloom_builder_finish(b, &out), TDB_OK);
    bloom_builder_destroy(b);
    std::string f(out.data, out.size);
    buf_free(&out);
    return f;
}

// Fraction of probes over keys never added that the filter accepts.
double MeasureFpr(const std::string &f, uint64_t probes) {
    uint64_t fp = 0;
    for (uint64_t i = 0; i < probes; i++) fp += bloom_may_contain(S(f), S(tdbtest::Key(1000000000ull + i)));
    return (double)fp / (double)probes;
}

}  // namespace

TEST(Bloom, CreateRejectsBadFpr) {
    EXPECT_EQ(bloom_builder_create(0.0), nullptr);
    EXPECT_EQ(bloom_builder_create(1.0), nullptr);
    EXPECT_EQ(bloom_builder_create(-0.5), nullptr);
    EXPECT_EQ(bloom_builder_create(NAN), nullptr);
}

TEST(Bloom, NoFalseNegatives) {
    for (double fpr : {0.5, 0.1, 0.01, 0.001, 1e-6}) {
        for (uint64_t n : {1ull, 7ull, 100ull, 5000ull, 100000ull}) {
            std::string f = Build(fpr, n);
            ASSERT_EQ(bloom_check(S(f)), TDB_OK);
            for (uint64_t i = 0; i < n; i++)
                ASSERT_EQ(bloom_may_contain(S(f), S(tdbtest::Key(i))), 1) << "fpr " << fpr << " n " << n << " i " << i;
        }
    }
}

TEST(Bloom, EmptyFilterContainsNothing) {
    std::string f = Build(0.01, 0);
    ASSERT_EQ(bloom_check(S(f)), TDB_OK);
    EXPECT_EQ(f.size(), 64u + 6u);
    for (int i = 0; i < 1000; i++) EXPECT_EQ(bloom_may_contain(S(f), S(tdbtest::Key(i))), 0);
}

TEST(Bloom, EmptyKeyWorks) {
    bloom_builder_t *b = bloom_builder_create(0.01);
    ASSERT_EQ(bloom_builder_add(b, slice_make("", 0)), TDB_OK);
    buf_t out = {};
    ASSERT_EQ(bloom_builder_finish(b, &out), TDB_OK);
    EXPECT_EQ(bloom_may_contain(buf_slice(&out), slice_make(nullptr, 0)), 1);
    bloom_builder_destroy(b);
    buf_free(&out);
}

TEST(Bloom, ConsecutiveDuplicatesDeduped) {
    // Adding each key 5 times in a row yields the same filter as adding it once.
    bloom_builder_t *b = bloom_builder_create(0.01);
    for (int i = 0; i < 1000; i++)
        for (int r = 0; r < 5; r++) ASSERT_EQ(bloom_builder_add(b, S(tdbtest::Key(i))), TDB_OK);
    buf_t out = {};
    ASSERT_EQ(bloom_builder_finish(b, &out), TDB_OK);
    bloom_builder_destroy(b);
    EXPECT_EQ(std::string(out.data, out.size), Build(0.01, 1000));
    buf_free(&out);
}

TEST(Bloom, FinishAppends) {
    bloom_builder_t *b = bloom_builder_create(0.01);
    for (int i = 0; i < 100; i++) ASSERT_EQ(bloom_builder_add(b, S(tdbtest::Key(i))), TDB_OK);
    buf_t out = {};
    ASSERT_EQ(buf_append(&out, "hdr", 3), TDB_OK);
    ASSERT_EQ(bloom_builder_finish(b, &out), TDB_OK);
    bloom_builder_destroy(b);
    EXPECT_EQ(std::string(out.data, 3), "hdr");
    slice_t f = slice_make(out.data + 3, out.size - 3);
    EXPECT_EQ(bloom_check(f), TDB_OK);
    for (int i = 0; i < 100; i++) EXPECT_EQ(bloom_may_contain(f, S(tdbtest::Key(i))), 1);
    buf_free(&out);
}

TEST(Bloom, FalsePositiveRateNearTarget) {
    const uint64_t n = 100000, probes = 1000000;
    for (double target : {0.01, 0.001}) {
        std::string f = Build(target, n);
        double fpr = MeasureFpr(f, probes);
        double bits_per_key = (double)(f.size() - 6) * 8 / (double)n;
        printf("[ bloom ] target %.4f%%: measured FPR %.4f%% over %llu probes (%.2f bits/key, %zu bytes)\n",
               target * 100, fpr * 100, (unsigned long long)probes, bits_per_key, f.size());
        EXPECT_LT(fpr, 2 * target) << "target " << target;
        EXPECT_GT(fpr, target / 4) << "suspiciously low: filter too big?";
    }
}

TEST(Bloom, SizeFollowsBitsPerKey) {
    // 1%: -ln(0.01)/ln(2)^2 = 9.585 bits/key.
    std::string f = Build(0.01, 10000);
    double bits = (double)(f.size() - 6) * 8;
    EXPECT_NEAR(bits / 10000, 9.585, 0.06);
    // Trailer: probes = round(9.585 * ln2) = 7, version 1.
    EXPECT_EQ((unsigned char)f[f.size() - 6], 7);
    EXPECT_EQ(dec_fixed32(&f[f.size() - 5]) * 64u, f.size() - 6);
    EXPECT_EQ((unsigned char)f[f.size() - 1], 1);
    // Very low fpr clamps probes to 30.
    std::string g = Build(1e-12, 10);
    EXPECT_EQ((unsigned char)g[g.size() - 6], 30);
}

TEST(Bloom, CheckRejectsMalformed) {
    std::string f = Build(0.01, 1000);
    ASSERT_EQ(bloom_check(S(f)), TDB_OK);
    EXPECT_EQ(bloom_check(slice_make(nullptr, 0)), TDB_ERR_CORRUPTION);
    EXPECT_EQ(bloom_check(slice_make(f.data(), 5)), TDB_ERR_CORRUPTION);
    EXPECT_EQ(bloom_check(slice_make(f.data(), f.size() - 1)), TDB_ERR_CORRUPTION);
    EXPECT_EQ(bloom_check(slice_make(f.data() + 1, f.size() - 1)), TDB_ERR_CORRUPTION);
    std::string g = f + "x";
    EXPECT_EQ(bloom_check(S(g)), TDB_ERR_CORRUPTION);
    std::string bad;
    bad = f; bad[bad.size() - 1] = 2;          // version
    EXPECT_EQ(bloom_check(S(bad)), TDB_ERR_CORRUPTION);
    bad = f; bad[bad.size() - 6] = 0;          // probes 0
    EXPECT_EQ(bloom_check(S(bad)), TDB_ERR_CORRUPTION);
    bad = f; bad[bad.size() - 6] = 31;         // probes > 30
    EXPECT_EQ(bloom_check(S(bad)), TDB_ERR_CORRUPTION);
    bad = f; enc_fixed32(&bad[bad.size() - 5], 0);           // no blocks
    EXPECT_EQ(bloom_check(S(bad)), TDB_ERR_CORRUPTION);
    bad = f; enc_fixed32(&bad[bad.size() - 5], 0xffffffffu); // blocks beyond the bytes
    EXPECT_EQ(bloom_check(S(bad)), TDB_ERR_CORRUPTION);
    // A 6-byte trailer claiming one block with no bit array.
    std::string t("\x07\x01\x00\x00\x00\x01", 6);
    EXPECT_EQ(bloom_check(S(t)), TDB_ERR_CORRUPTION);
}

// Malformed filters must answer "may contain" for every key, and random
// mutations must never crash nor read out of bounds (ASan build).
TEST(Bloom, MalformedNeverFalseNegative) {
    const int n = 2000;
    std::string f = Build(0.01, n);
    std::mt19937 rng(99);
    for (int iter = 0; iter < 3000; iter++) {
        std::string m = f;
        switch (iter % 4) {
        case 0: m.resize(rng() % m.size()); break;
        case 1: m[m.size() - 1 - rng() % 6] ^= (char)(1 + rng() % 255); break; // trailer
        case 2: m += std::string(1 + rng() % 100, (char)rng()); break;
        case 3: m.erase(0, 1 + rng() % 64); break;
        }
        slice_t ms = slice_make(m.data(), m.size());
        int structural_ok = bloom_check(ms) == TDB_OK;
        for (int i = 0; i < n; i += 97) {
            int r = bloom_may_contain(ms, S(tdbtest::Key(i)));
            if (!structural_ok) {
                ASSERT_EQ(r, 1) << "iter " << iter;
            }
            else ASSERT_TRUE(r == 0 || r == 1);
        }
    }
    // Arbitrary garbage of every small size.
    for (size_t sz = 0; sz < 300; sz++) {
        std::string g(sz, '\0');
        for (auto &c : g) c = (char)rng();
        if (bloom_check(S(g)) != TDB_OK) {
            for (int i = 0; i < 20; i++) ASSERT_EQ(bloom_may_contain(S(g), S(tdbtest::Key(i))), 1);
        }
    }
}

TEST(Bloom, BitFlipsInBitArrayStayInBounds) {
    // Bit-array damage is not structural: the filter may then false-negative
    // (table checksums catch that), but it must stay well-formed and safe.
    std::string f = Build(0.01, 500);
    std::mt19937 rng(5);
    for (int iter = 0; iter < 1000; iter++) {
        std::string m = f;
        m[rng() % (m.size() - 6)] ^= (char)(1u << (rng() % 8));
        ASSERT_EQ(bloom_check(S(m)), TDB_OK);
        for (int i = 0; i < 50; i++) {
            int r = bloom_may_contain(S(m), S(tdbtest::Key(i)));
            ASSERT_TRUE(r == 0 || r == 1);
        }
    }
}
