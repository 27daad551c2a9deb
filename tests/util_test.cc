// Unit tests for util: coding, internal keys, checksums, errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

extern "C" {
#include "util/checksum.h"
#include "util/coding.h"
#include "util/error.h"
#include "util/ikey.h"
#include "util/slice.h"
}

TEST(Coding, VarintRoundTrip) {
    const uint64_t vals[] = {0, 1, 127, 128, 300, 16383, 16384, (1ull << 32) - 1, 1ull << 35, UINT64_MAX};
    buf_t b = {};
    for (uint64_t v : vals) ASSERT_EQ(put_varint64(&b, v), TDB_OK);
    const char *p = b.data, *lim = b.data + b.size;
    for (uint64_t v : vals) {
        uint64_t got = 0;
        p = dec_varint64(p, lim, &got);
        ASSERT_NE(p, nullptr);
        EXPECT_EQ(got, v);
    }
    EXPECT_EQ(p, lim);
    buf_free(&b);
}

TEST(Coding, TruncatedVarintIsRejected) {
    char t[VARINT64_MAX];
    char *e = enc_varint64(t, 1ull << 40);
    uint64_t v;
    for (char *lim = t; lim < e; lim++) EXPECT_EQ(dec_varint64(t, lim, &v), nullptr);
    uint32_t v32;
    char over[5] = {(char)0xff, (char)0xff, (char)0xff, (char)0xff, 0x7f};
    EXPECT_EQ(dec_varint32(over, over + 5, &v32), nullptr);
}

TEST(Coding, LengthPrefixedBoundsChecked) {
    buf_t b = {};
    ASSERT_EQ(put_lenprefixed(&b, slice_make("hello", 5)), TDB_OK);
    slice_t s;
    EXPECT_NE(dec_lenprefixed(b.data, b.data + b.size, &s), nullptr);
    EXPECT_EQ(std::string(s.data, s.size), "hello");
    EXPECT_EQ(dec_lenprefixed(b.data, b.data + b.size - 1, &s), nullptr);
    buf_free(&b);
}

TEST(Ikey, OrderUserAscSeqDesc) {
    buf_t a = {}, b = {}, c = {};
    ikey_append(&a, slice_make("abc", 3), 10, KT_PUT);
    ikey_append(&b, slice_make("abc", 3), 5, KT_PUT);
    ikey_append(&c, slice_make("abd", 3), 100, KT_DELETE);
    EXPECT_LT(ikey_compare(buf_slice(&a), buf_slice(&b)), 0);
    EXPECT_LT(ikey_compare(buf_slice(&b), buf_slice(&c)), 0);
    EXPECT_EQ(ikey_seq(buf_slice(&a)), 10u);
    EXPECT_EQ(ikey_type(buf_slice(&c)), (unsigned)KT_DELETE);
    EXPECT_EQ(std::string(ikey_user(buf_slice(&c)).data, 3), "abd");
    buf_free(&a); buf_free(&b); buf_free(&c);
}

TEST(Ikey, SeekKeySortsBeforeSameSeqEntries) {
    buf_t seek = {}, put = {};
    ikey_append(&seek, slice_make("k", 1), 7, KT_SEEK);
    ikey_append(&put, slice_make("k", 1), 7, KT_PUT_TTL);
    EXPECT_LT(ikey_compare(buf_slice(&seek), buf_slice(&put)), 0);
    buf_free(&seek); buf_free(&put);
}

TEST(Ikey, SeparatorBetween) {
    buf_t out = {};
    slice_t a = slice_make("abcd", 4), b = slice_make("abzz", 4);
    ASSERT_EQ(ikey_user_separator(&out, a, &b), TDB_OK);
    EXPECT_GE(slice_compare(buf_slice(&out), a), 0);
    EXPECT_LT(slice_compare(buf_slice(&out), b), 0);
    EXPECT_EQ(std::string(out.data, out.size), "abd");
    slice_t c = slice_make("\xff\xff", 2);
    ASSERT_EQ(ikey_user_separator(&out, c, nullptr), TDB_OK);
    EXPECT_GE(slice_compare(buf_slice(&out), c), 0);
    buf_free(&out);
}

// slice_compare and slice_equal compare in words up to SLICE_INLINE_MAX
// bytes (the last word overlapping) and call memcmp beyond: against a plain
// bytewise reference, for every length either side of those bounds and a
// difference at every position, with bytes whose order differs signed and
// unsigned (0x80 and above).
TEST(Slice, CompareAndEqualMatchBytewiseOrder) {
    auto ref = [](const std::string &a, const std::string &b) {
        size_t n = std::min(a.size(), b.size());
        for (size_t i = 0; i < n; i++)
            if ((unsigned char)a[i] != (unsigned char)b[i]) return (unsigned char)a[i] < (unsigned char)b[i] ? -1 : 1;
        return a.size() < b.size() ? -1 : (a.size() > b.size() ? 1 : 0);
    };
    auto sign = [](int r) { return r < 0 ? -1 : (r > 0 ? 1 : 0); };
    uint64_t rng = 88172645463325252ull;
    auto next = [&]() {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        return rng;
    };
    size_t checked = 0;
    for (size_t len = 0; len <= SLICE_INLINE_MAX + 12; len++) {
        std::string base(len, '\0');
        for (auto &c : base) c = (char)(next() & 0xff);
        for (size_t pos = 0; pos <= len; pos++) {
            const unsigned char deltas[] = {1, 0x7f, 0x80, 0xff};
            for (unsigned char d : deltas) {
                std::string other = base;
                if (pos < len) other[pos] = (char)((unsigned char)other[pos] + d);
                // Equal contents, a byte changed, and prefixes of either.
                const std::string cases[][2] = {{base, other}, {other, base}, {base, other.substr(0, pos)},
                                                {other.substr(0, pos), base}, {base, base}};
                for (const auto &c : cases) {
                    slice_t a = slice_make(c[0].data(), c[0].size()), b = slice_make(c[1].data(), c[1].size());
                    ASSERT_EQ(sign(slice_compare(a, b)), ref(c[0], c[1])) << "len " << len << " pos " << pos;
                    ASSERT_EQ(slice_equal(a, b), ref(c[0], c[1]) == 0) << "len " << len << " pos " << pos;
                    checked++;
                }
            }
        }
    }
    EXPECT_GT(checked, 10000u);
}

TEST(Checksum, DetectsFlip) {
    std::string s(1000, 'x');
    uint32_t c = tdb_checksum(s.data(), s.size());
    s[500] ^= 1;
    EXPECT_NE(c, tdb_checksum(s.data(), s.size()));
    s[500] ^= 1;
    EXPECT_EQ(c, tdb_checksum2(s.data(), 300, s.data() + 300, 700));
}

TEST(Error, DetailAndNames) {
    EXPECT_EQ(tdb_err(TDB_ERR_CORRUPTION, "file %d bad", 7), TDB_ERR_CORRUPTION);
    EXPECT_STREQ(tdb_last_error(), "file 7 bad");
    EXPECT_STREQ(tdb_strerror(TDB_ERR_LOCKED), "locked");
    EXPECT_EQ(tdb_errno_code(ENOSPC), TDB_ERR_NO_SPACE);
}

extern "C" {
#include "util/pinned.h"
}

// util/pinned: small allocations are malloc's, large ones mappings of their
// own; both hold their bytes and free without a size.
TEST(Pinned, LargeAllocationsAreMappingsOfTheirOwn) {
    const size_t sizes[] = {0, 1, 100, PINNED_MMAP_MIN - 1, PINNED_MMAP_MIN, 3 * PINNED_MMAP_MIN + 5};
    for (size_t n : sizes) {
        std::string src(n, '\0');
        for (size_t i = 0; i < n; i++) src[i] = (char)(i * 31 + 7);
        char *p = (char *)pinned_dup(src.data(), n);
        ASSERT_NE(p, nullptr) << n;
        EXPECT_EQ(0u, (uintptr_t)p % 16) << n;
        EXPECT_EQ(0, memcmp(p, src.data(), n)) << n;
#if !defined(__SANITIZE_ADDRESS__)
        if (n >= PINNED_MMAP_MIN) {
            EXPECT_EQ(0u, ((uintptr_t)p - 16) % 4096) << "not page-mapped: " << n;
        }
#endif
        pinned_free(p);
    }
    pinned_free(nullptr);
}
