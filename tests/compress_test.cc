// Unit tests for sst/compress: round trips, corruption, truncation, limits.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <random>
#include <thread>
#include <string>
#include <vector>

extern "C" {
#include "sst/compress.h"
#include "util/coding.h"
#include "util/error.h"
}

namespace {

const int kCodecs[] = {TDB_COMPRESS_NONE, TDB_COMPRESS_SNAPPY, TDB_COMPRESS_LZ4, TDB_COMPRESS_ZSTD};
const int kRealCodecs[] = {TDB_COMPRESS_SNAPPY, TDB_COMPRESS_LZ4, TDB_COMPRESS_ZSTD};

std::string RandomBytes(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::string s(n, '\0');
    for (auto &c : s) c = (char)(rng() & 0xff);
    return s;
}

std::string Compressible(size_t n) {
    std::string s;
    int i = 0;
    while (s.size() < n) s += "key" + std::to_string(i++ % 37) + "=value-value-value;";
    s.resize(n);
    return s;
}

std::string Compress(int type, const std::string &in) {
    buf_t b = {};
    EXPECT_EQ(tdb_compress(type, slice_make(in.data(), in.size()), &b), TDB_OK);
    std::string out(b.data ? b.data : "", b.size);
    buf_free(&b);
    return out;
}

int Decompress(int type, const std::string &in, size_t max_out, std::string *out) {
    buf_t b = {};
    int rc = tdb_decompress(type, slice_make(in.data(), in.size()), max_out, &b);
    if (out) out->assign(b.data ? b.data : "", b.size);
    buf_free(&b);
    return rc;
}

}  // namespace

TEST(Compress, ValidCodecs) {
    for (int t : kCodecs) EXPECT_EQ(tdb_compression_valid(t), 1) << t;
    EXPECT_EQ(tdb_compression_valid(-1), 0);
    EXPECT_EQ(tdb_compression_valid(4), 0);
    EXPECT_EQ(tdb_compression_valid(255), 0);
}

TEST(Compress, RoundTripAllCodecs) {
    std::vector<std::string> inputs = {"", "a", RandomBytes(1, 1), RandomBytes(100, 2), RandomBytes(4096, 3),
                                       RandomBytes(70000, 4), Compressible(16), Compressible(4096),
                                       Compressible(1 << 20)};
    for (int t : kCodecs) {
        for (const auto &in : inputs) {
            std::string c = Compress(t, in), d;
            ASSERT_EQ(Decompress(t, c, in.size(), &d), TDB_OK) << "codec " << t << " size " << in.size();
            EXPECT_EQ(d, in);
        }
    }
}

TEST(Compress, CompressibleInputShrinks) {
    std::string in = Compressible(64 * 1024);
    for (int t : kRealCodecs) EXPECT_LT(Compress(t, in).size(), in.size() / 4) << t;
    EXPECT_EQ(Compress(TDB_COMPRESS_NONE, in), in);
}

TEST(Compress, AppendsToExistingBuffer) {
    std::string in = Compressible(1000);
    for (int t : kCodecs) {
        buf_t b = {};
        ASSERT_EQ(buf_append(&b, "prefix", 6), TDB_OK);
        ASSERT_EQ(tdb_compress(t, slice_make(in.data(), in.size()), &b), TDB_OK);
        ASSERT_EQ(std::string(b.data, 6), "prefix");
        buf_t d = {};
        ASSERT_EQ(buf_append(&d, "xy", 2), TDB_OK);
        ASSERT_EQ(tdb_decompress(t, slice_make(b.data + 6, b.size - 6), in.size(), &d), TDB_OK);
        EXPECT_EQ(std::string(d.data, d.size), "xy" + in);
        buf_free(&b);
        buf_free(&d);
    }
}

TEST(Compress, UnknownTypeRejected) {
    buf_t b = {};
    EXPECT_EQ(tdb_compress(9, slice_make("abc", 3), &b), TDB_ERR_INVALID_ARG);
    EXPECT_EQ(b.size, 0u);
    EXPECT_EQ(tdb_decompress(9, slice_make("abc", 3), 100, &b), TDB_ERR_CORRUPTION);
    EXPECT_EQ(tdb_decompress(-1, slice_make("abc", 3), 100, &b), TDB_ERR_CORRUPTION);
    EXPECT_EQ(b.size, 0u);
    buf_free(&b);
}

TEST(Compress, DeclaredLengthOverMaxOutRejected) {
    std::string in = Compressible(10000);
    for (int t : kCodecs) {
        std::string c = Compress(t, in);
        EXPECT_EQ(Decompress(t, c, in.size() - 1, nullptr), TDB_ERR_CORRUPTION) << t;
        EXPECT_EQ(Decompress(t, c, 0, nullptr), TDB_ERR_CORRUPTION) << t;
        EXPECT_EQ(Decompress(t, c, in.size(), nullptr), TDB_OK) << t;
    }
    // A huge declared length with a tiny body must be rejected without allocating it.
    char hdr[VARINT32_MAX];
    char *e = enc_varint32(hdr, 0xfffffff0u);
    std::string bogus(hdr, e - hdr);
    bogus += "xx";
    for (int t : kRealCodecs) EXPECT_EQ(Decompress(t, bogus, 1 << 20, nullptr), TDB_ERR_CORRUPTION) << t;
}

TEST(Compress, DeclaredLengthMismatchRejected) {
    std::string in = Compressible(5000);
    for (int t : kRealCodecs) {
        std::string c = Compress(t, in);
        const char *limit = c.data() + c.size();
        uint32_t declared = 0;
        const char *body = dec_varint32(c.data(), limit, &declared);
        ASSERT_NE(body, nullptr);
        ASSERT_EQ(declared, in.size());
        for (uint32_t lie : {declared - 1, declared + 1, declared * 2, 0u}) {
            char hdr[VARINT32_MAX];
            char *e = enc_varint32(hdr, lie);
            std::string forged = std::string(hdr, e - hdr) + std::string(body, limit - body);
            EXPECT_EQ(Decompress(t, forged, 1 << 20, nullptr), TDB_ERR_CORRUPTION) << t << " lie " << lie;
        }
    }
}

TEST(Compress, TruncatedInputRejected) {
    std::string in = Compressible(8192) + RandomBytes(512, 7);
    for (int t : kRealCodecs) {
        std::string c = Compress(t, in);
        for (size_t n = 0; n < c.size(); n++) {
            EXPECT_EQ(Decompress(t, c.substr(0, n), in.size(), nullptr), TDB_ERR_CORRUPTION)
                << "codec " << t << " truncated to " << n << " of " << c.size();
        }
    }
    // Empty input for every real codec.
    for (int t : kRealCodecs) EXPECT_EQ(Decompress(t, "", 100, nullptr), TDB_ERR_CORRUPTION) << t;
}

TEST(Compress, GarbageRejected) {
    for (int t : kRealCodecs) {
        for (uint32_t seed = 0; seed < 200; seed++) {
            std::string g = RandomBytes(1 + seed % 300, seed);
            std::string d;
            int rc = Decompress(t, g, 4096, &d);
            EXPECT_TRUE(rc == TDB_OK || rc == TDB_ERR_CORRUPTION) << rc;
            if (rc == TDB_OK) {
                EXPECT_LE(d.size(), 4096u);
            }
        }
    }
}

// Fuzz-style: 10k random mutations of a valid block per codec. Every result
// is OK (a mutation the codec cannot detect; block checksums catch those) or
// CORRUPTION; the output never exceeds the declared limit; no crash (run the
// ASan build to check memory safety).
TEST(Compress, MutationFuzz) {
    std::string in = Compressible(3000) + RandomBytes(300, 11) + Compressible(700);
    for (int t : kRealCodecs) {
        std::string c = Compress(t, in);
        std::mt19937 rng(1234 + t);
        int corrupt = 0, ok = 0;
        for (int iter = 0; iter < 10000; iter++) {
            std::string m = c;
            int nmut = 1 + rng() % 4;
            for (int j = 0; j < nmut; j++) {
                switch (rng() % 4) {
                case 0: m[rng() % m.size()] ^= (char)(1u << (rng() % 8)); break;  // bit flip
                case 1: m[rng() % m.size()] = (char)rng(); break;                 // byte set
                case 2: m.resize(rng() % m.size()); if (m.empty()) m = "x"; break; // truncate
                case 3: m.insert(rng() % m.size(), 1, (char)rng()); break;         // insert
                }
            }
            std::string d;
            int rc = Decompress(t, m, in.size(), &d);
            ASSERT_TRUE(rc == TDB_OK || rc == TDB_ERR_CORRUPTION) << rc;
            if (rc == TDB_OK) {
                ok++;
                ASSERT_LE(d.size(), in.size());
            } else {
                corrupt++;
            }
        }
        printf("[ fuzz ] codec %d: %d corrupt, %d undetected-by-codec of 10000 mutations\n", t, corrupt, ok);
        EXPECT_GT(corrupt, 5000) << "codec " << t;
    }
}

TEST(Compress, NoneIsPlainCopy) {
    std::string in = RandomBytes(123, 5), d;
    EXPECT_EQ(Compress(TDB_COMPRESS_NONE, in), in);
    EXPECT_EQ(Decompress(TDB_COMPRESS_NONE, in, 123, &d), TDB_OK);
    EXPECT_EQ(d, in);
    EXPECT_EQ(Decompress(TDB_COMPRESS_NONE, in, 122, nullptr), TDB_ERR_CORRUPTION);
}

TEST(Compress, ThreadsCompressConcurrently) {
    std::vector<std::thread> ts;
    std::atomic<int> failures{0};
    for (int i = 0; i < 4; i++) {
        ts.emplace_back([i, &failures] {
            for (int r = 0; r < 200; r++) {
                std::string in = Compressible(1000 + 37 * r + i);
                for (int t : kRealCodecs) {
                    buf_t b = {}, d = {};
                    if (tdb_compress(t, slice_make(in.data(), in.size()), &b) != TDB_OK ||
                        tdb_decompress(t, buf_slice(&b), in.size(), &d) != TDB_OK ||
                        std::string(d.data, d.size) != in)
                        failures++;
                    buf_free(&b);
                    buf_free(&d);
                }
            }
        });
    }
    for (auto &t : ts) t.join();
    EXPECT_EQ(failures.load(), 0);
}
