// Unit tests for version/manifest: round trip with several column families
// and files per level, every truncation and random byte flips rejected as
// corruption (never a crash), semantic inconsistencies behind a valid
// checksum, obsolete callbacks of decoded versions, and file I/O via env.
// The stored column-family options: the tagged encoding (any order, an
// unknown field skipped or refused by its tag), and the positional encoding
// of formats 1-3 still read, down to a database written by the code of
// format 3 opening and reading its data.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "keys_testutil.h"
#include "manifest_testutil.h"
#include "testutil.h"
#include "tidesdb/tidesdb.h"

extern "C" {
#include "env/env.h"
#include "util/checksum.h"
#include "util/coding.h"
#include "util/ikey.h"
#include "version/manifest.h"
#include "version/version.h"
}

namespace {

using tdbtest::IK;

using tdbtest::S;

file_meta_t *MakeFile(uint64_t number, const std::string &lo, const std::string &hi, uint64_t min_seq,
                      uint64_t max_seq, uint64_t size = 1000, uint64_t entries = 10, uint64_t deletes = 2) {
    std::string a = IK(lo, max_seq), b = IK(hi, min_seq);
    file_meta_t *f = file_meta_create(number, size, S(a), S(b), min_seq, max_seq, entries, deletes);
    f->num_range_deletes = number % 3;  // format 2 records it
    return f;
}

struct Obsolete {
    std::map<uint64_t, int> count;
};
void OnObsolete(void *ctx, uint64_t number) { ((Obsolete *)ctx)->count[number]++; }

// Build a version from (level, file) pairs; the files' creation refs are
// dropped so the version owns them.
version_t *BuildVersion(const std::vector<std::pair<int, file_meta_t *>> &files, file_obsolete_fn fn = nullptr,
                        void *ctx = nullptr) {
    version_t *base = version_create(fn, ctx);
    version_edit_t e;
    memset(&e, 0, sizeof e);
    for (auto &p : files) {
        EXPECT_EQ(TDB_OK, version_edit_add(&e, p.first, p.second));
        file_meta_unref(p.second);
    }
    version_t *v = nullptr;
    EXPECT_EQ(TDB_OK, version_apply(base, &e, &v));
    version_edit_free(&e);
    version_unref(base);
    return v;
}

tdb_cf_config_t Config(int seed) {
    tdb_cf_config_t c;
    memset(&c, 0, sizeof c);
    c.write_buffer_size = (size_t)64 << 20 | (size_t)seed;
    c.compression = seed % 4;
    c.bloom_fpr = 0.01 * (seed + 1);
    c.sync_mode = seed % 3;
    c.sync_interval_us = 128000 + (uint64_t)seed;
    c.block_size = 4096u + (uint32_t)seed;
    c.value_threshold = 512u + (uint32_t)seed;
    c.l0_queue_stall_threshold = 10 + seed;
    c.l1_file_count_trigger = 4 + seed;
    c.level_size_ratio = 10 + seed;
    c.tombstone_density_trigger = 0.5 + 0.125 * seed;
    c.tombstone_density_min_entries = 2048 + (uint64_t)seed;
    return c;
}

// A manifest with three families: files at several levels, an empty
// family, and a family with files only deep down.
void BuildManifest(manifest_t *m, file_obsolete_fn fn = nullptr, void *ctx = nullptr) {
    memset(m, 0, sizeof *m);
    m->next_file_number = 100;
    m->last_sequence = 5000;
    m->next_cf_id = 7;
    m->ncf = 3;
    m->cfs = (manifest_cf_t *)calloc(3, sizeof(manifest_cf_t));
    const char *names[3] = {"default", "users", "events"};
    uint32_t ids[3] = {0, 3, 6};
    for (int i = 0; i < 3; i++) {
        m->cfs[i].id = ids[i];
        m->cfs[i].name = strdup(names[i]);
        m->cfs[i].config = Config(i);
        m->cfs[i].log_number = 40 + (uint64_t)i;
    }
    m->cfs[0].version = BuildVersion({{1, MakeFile(10, "a", "m", 400, 500)},
                                      {1, MakeFile(11, "c", "z", 501, 700)},
                                      {1, MakeFile(12, "b", "d", 100, 399)},
                                      {2, MakeFile(20, "n", "p", 1, 90)},
                                      {2, MakeFile(21, "a", "f", 1, 90)},
                                      {2, MakeFile(22, "g", "k", 1, 90)},
                                      {4, MakeFile(30, "a", "zz", 1, 1)}},
                                     fn, ctx);
    m->cfs[1].version = BuildVersion({}, fn, ctx);
    m->cfs[2].version = BuildVersion({{7, MakeFile(40, "x", "y", 3, 4000, 123456789, 1000, 999)},
                                      {7, MakeFile(41, "aa", "ab", 5, 6, 7, 8, 0)}},
                                     fn, ctx);
}

void ExpectSameFile(const file_meta_t *a, const file_meta_t *b) {
    EXPECT_EQ(a->number, b->number);
    EXPECT_EQ(a->file_size, b->file_size);
    EXPECT_EQ(std::string(a->smallest.data, a->smallest.size), std::string(b->smallest.data, b->smallest.size));
    EXPECT_EQ(std::string(a->largest.data, a->largest.size), std::string(b->largest.data, b->largest.size));
    EXPECT_EQ(a->min_seq, b->min_seq);
    EXPECT_EQ(a->max_seq, b->max_seq);
    EXPECT_EQ(a->num_entries, b->num_entries);
    EXPECT_EQ(a->num_deletes, b->num_deletes);
    EXPECT_EQ(a->num_range_deletes, b->num_range_deletes);
}

void ExpectSameConfig(const tdb_cf_config_t &x, const tdb_cf_config_t &y) {
    EXPECT_EQ(x.write_buffer_size, y.write_buffer_size);
    EXPECT_EQ(x.compression, y.compression);
    EXPECT_EQ(x.bloom_fpr, y.bloom_fpr);
    EXPECT_EQ(x.sync_mode, y.sync_mode);
    EXPECT_EQ(x.sync_interval_us, y.sync_interval_us);
    EXPECT_EQ(x.block_size, y.block_size);
    EXPECT_EQ(x.value_threshold, y.value_threshold);
    EXPECT_EQ(x.l0_queue_stall_threshold, y.l0_queue_stall_threshold);
    EXPECT_EQ(x.l1_file_count_trigger, y.l1_file_count_trigger);
    EXPECT_EQ(x.level_size_ratio, y.level_size_ratio);
    EXPECT_EQ(x.tombstone_density_trigger, y.tombstone_density_trigger);
    EXPECT_EQ(x.tombstone_density_min_entries, y.tombstone_density_min_entries);
}

void ExpectSameManifest(const manifest_t *a, const manifest_t *b) {
    EXPECT_EQ(a->next_file_number, b->next_file_number);
    EXPECT_EQ(a->last_sequence, b->last_sequence);
    EXPECT_EQ(a->next_cf_id, b->next_cf_id);
    ASSERT_EQ(a->ncf, b->ncf);
    for (int i = 0; i < a->ncf; i++) {
        const manifest_cf_t &x = a->cfs[i], &y = b->cfs[i];
        EXPECT_EQ(x.id, y.id);
        EXPECT_STREQ(x.name, y.name);
        EXPECT_EQ(x.log_number, y.log_number);
        ExpectSameConfig(x.config, y.config);
        for (int l = 0; l < TDB_MAX_LEVELS; l++) {
            ASSERT_EQ(version_num_files(x.version, l), version_num_files(y.version, l)) << "cf " << i << " L" << l;
            EXPECT_EQ(version_level_bytes(x.version, l), version_level_bytes(y.version, l));
            for (int j = 0; j < version_num_files(x.version, l); j++)
                ExpectSameFile(version_file(x.version, l, j), version_file(y.version, l, j));
        }
    }
}

std::string Encode(const manifest_t *m) {
    buf_t b{};
    EXPECT_EQ(TDB_OK, manifest_encode(m, &b));
    std::string s(b.data, b.size);
    buf_free(&b);
    return s;
}

// Recompute the trailing checksum after patching body bytes.
void Reseal(std::string *s) {
    uint32_t c = tdb_checksum(s->data(), s->size() - 4);
    enc_fixed32(&(*s)[s->size() - 4], c);
}

// Test-side writer of the documented format, to craft inconsistent but
// well-sealed manifests.
struct Raw : tdbtest::OldEncoder {
    void header(uint64_t next_file, uint64_t last_seq, uint32_t next_cf, uint32_t ncf, uint32_t format = 1) {
        b = "TDBMANIF";
        char t[4];
        enc_fixed32(t, format);
        b.append(t, 4);
        v64(next_file);
        v64(last_seq);
        v32(next_cf);
        v32(ncf);
    }
    static std::string config(double fpr = 0.01, uint32_t comp = 2, uint32_t sync = 2) {
        Raw c;
        c.v64(1 << 20);
        c.v32(comp);
        c.f64(fpr);
        c.v32(sync);
        c.v64(1000);
        c.v32(4096);
        c.v32(512);
        c.v32(10);
        c.v32(4);
        c.v32(10);
        c.f64(0.5);
        c.v64(2048);
        return c.b;
    }
    void cf(uint32_t id, const std::string &name, uint32_t nfiles, const std::string &cfg = config()) {
        v32(id);
        str(name);
        str(cfg);
        v64(1);
        v32(nfiles);
    }
    void file(uint32_t level, uint64_t number, const std::string &lo, const std::string &hi, uint64_t min_seq = 1,
              uint64_t max_seq = 2, uint64_t entries = 5, uint64_t deletes = 1) {
        v32(level);
        v64(number);
        v64(100);
        str(IK(lo, max_seq));
        str(IK(hi, min_seq));
        v64(min_seq);
        v64(max_seq);
        v64(entries);
        v64(deletes);
    }
    std::string seal() {
        std::string s = b + "0000";
        Reseal(&s);
        return s;
    }
};

int Decode(const std::string &s, manifest_t *m, file_obsolete_fn fn = nullptr, void *ctx = nullptr) {
    return manifest_decode(S(s), m, fn, ctx);
}

TEST(Manifest, RoundTrip) {
    manifest_t m, d;
    BuildManifest(&m);
    std::string enc = Encode(&m);
    ASSERT_EQ(TDB_OK, Decode(enc, &d)) << tdb_last_error();
    ExpectSameManifest(&m, &d);
    EXPECT_EQ(4u, d.format);  // written: tagged options, the compact WAL header
    // Level order survives: level 1 newest first, level 2 sorted.
    EXPECT_EQ(11u, version_file(d.cfs[0].version, 1, 0)->number);
    EXPECT_EQ(10u, version_file(d.cfs[0].version, 1, 1)->number);
    EXPECT_EQ(12u, version_file(d.cfs[0].version, 1, 2)->number);
    EXPECT_EQ(21u, version_file(d.cfs[0].version, 2, 0)->number);
    EXPECT_EQ(22u, version_file(d.cfs[0].version, 2, 1)->number);
    EXPECT_EQ(20u, version_file(d.cfs[0].version, 2, 2)->number);
    // Re-encoding the decoded manifest gives the same bytes.
    EXPECT_EQ(enc, Encode(&d));
    manifest_free(&m);
    manifest_free(&d);
    EXPECT_EQ(0, d.ncf);
    EXPECT_EQ(nullptr, d.cfs);
}

TEST(Manifest, EmptyManifest) {
    manifest_t m, d;
    memset(&m, 0, sizeof m);
    m.next_file_number = 1;
    std::string enc = Encode(&m);
    ASSERT_EQ(TDB_OK, Decode(enc, &d)) << tdb_last_error();
    EXPECT_EQ(0, d.ncf);
    EXPECT_EQ(1u, d.next_file_number);
    manifest_free(&d);
}

TEST(Manifest, EveryTruncationIsCorruption) {
    manifest_t m, d;
    BuildManifest(&m);
    std::string enc = Encode(&m);
    for (size_t n = 0; n < enc.size(); n++) {
        std::string t = enc.substr(0, n);
        ASSERT_EQ(TDB_ERR_CORRUPTION, Decode(t, &d)) << "length " << n;
        EXPECT_EQ(0, d.ncf);
    }
    // Truncated but resealed (valid checksum over the shorter body): the
    // parser itself must catch it.
    for (size_t n = 12; n + 4 < enc.size(); n++) {
        std::string t = enc.substr(0, n) + "0000";
        Reseal(&t);
        ASSERT_EQ(TDB_ERR_CORRUPTION, Decode(t, &d)) << "resealed length " << n;
    }
    // Extra trailing bytes behind a valid checksum.
    std::string t = enc.substr(0, enc.size() - 4) + "x" + "0000";
    Reseal(&t);
    EXPECT_EQ(TDB_ERR_CORRUPTION, Decode(t, &d));
    manifest_free(&m);
}

TEST(Manifest, RandomByteFlipsAreCorruption) {
    manifest_t m, d;
    BuildManifest(&m);
    std::string enc = Encode(&m);
    std::mt19937_64 rng(12345);
    for (int trial = 0; trial < 3000; trial++) {
        std::string t = enc;
        int flips = 1 + (int)(rng() % 3);
        for (int k = 0; k < flips; k++) t[rng() % t.size()] ^= (char)(1 + rng() % 255);
        ASSERT_EQ(TDB_ERR_CORRUPTION, Decode(t, &d)) << "trial " << trial;
        EXPECT_EQ(0, d.ncf);
    }
    manifest_free(&m);
}

TEST(Manifest, RandomBodyFlipsResealedNeverCrash) {
    // Behind a valid checksum the parser sees arbitrary bodies: it must
    // either decode something self-consistent or report corruption.
    manifest_t m, d;
    BuildManifest(&m);
    std::string enc = Encode(&m);
    std::mt19937_64 rng(777);
    int ok = 0, corrupt = 0;
    for (int trial = 0; trial < 5000; trial++) {
        std::string t = enc;
        int flips = 1 + (int)(rng() % 4);
        for (int k = 0; k < flips; k++) {
            size_t pos = 12 + rng() % (t.size() - 16);
            t[pos] = (char)(rng() % 256);
        }
        Reseal(&t);
        int rc = Decode(t, &d);
        ASSERT_TRUE(rc == TDB_OK || rc == TDB_ERR_CORRUPTION) << rc;
        if (rc == TDB_OK) {
            ok++;
            // Whatever decoded re-encodes into something that decodes.
            manifest_t d2;
            EXPECT_EQ(TDB_OK, Decode(Encode(&d), &d2));
            manifest_free(&d2);
            manifest_free(&d);
        } else {
            corrupt++;
            EXPECT_GT(strlen(tdb_last_error()), 0u);
        }
    }
    EXPECT_GT(corrupt, 0);
    (void)ok;
    manifest_free(&m);
}

TEST(Manifest, GarbageNeverCrashes) {
    manifest_t d;
    std::mt19937_64 rng(99);
    for (int trial = 0; trial < 2000; trial++) {
        std::string t(rng() % 200, '\0');
        for (auto &c : t) c = (char)(rng() % 256);
        if (trial % 2 && t.size() >= 16) {
            memcpy(&t[0], "TDBMANIF", 8);
            enc_fixed32(&t[8], 1);
            Reseal(&t);
        }
        int rc = Decode(t, &d);
        ASSERT_TRUE(rc == TDB_OK || rc == TDB_ERR_CORRUPTION);
        manifest_free(&d);
    }
    // Huge declared counts must not allocate their way to a crash.
    Raw r;
    r.header(10, 10, 1, 0xffffffffu);
    EXPECT_EQ(TDB_ERR_CORRUPTION, Decode(r.seal(), &d));
    r.header(10, 10, 1, 1);
    r.cf(0, "default", 0xfffffff0u);
    EXPECT_EQ(TDB_ERR_CORRUPTION, Decode(r.seal(), &d));
}

TEST(Manifest, CraftedValidSealsAccepted) {
    // The test-side writer produces what the decoder reads.
    Raw r;
    r.header(10, 100, 2, 2);
    r.cf(0, "default", 2);
    r.file(1, 3, "a", "c");
    r.file(2, 4, "d", "f");
    r.cf(1, "other", 1);
    r.file(3, 5, "a", "z");
    manifest_t d;
    ASSERT_EQ(TDB_OK, Decode(r.seal(), &d)) << tdb_last_error();
    EXPECT_EQ(2, d.ncf);
    EXPECT_EQ(1, version_num_files(d.cfs[0].version, 1));
    EXPECT_EQ(1, version_num_files(d.cfs[0].version, 2));
    EXPECT_EQ(1, version_num_files(d.cfs[1].version, 3));
    EXPECT_EQ(0u, version_file(d.cfs[1].version, 3, 0)->num_range_deletes);  // format 1: none
    EXPECT_EQ(1u, d.format);
    EXPECT_EQ(0.01, d.cfs[0].config.bloom_fpr);
    manifest_free(&d);

    // A longer config blob (a future field) is accepted.
    Raw r2;
    r2.header(10, 100, 1, 1);
    r2.cf(0, "default", 0, Raw::config() + "future");
    ASSERT_EQ(TDB_OK, Decode(r2.seal(), &d)) << tdb_last_error();
    manifest_free(&d);
}

TEST(Manifest, InconsistenciesAreCorruption) {
    struct Case {
        const char *what;
        std::function<void(Raw &)> build;
    };
    std::vector<Case> cases = {
        {"bad magic", [](Raw &r) { r.header(10, 100, 1, 0); r.b[0] = 'X'; }},
        {"bad format", [](Raw &r) { r.header(10, 100, 1, 0); r.b[8] = 5; }},
        {"format 0", [](Raw &r) { r.header(10, 100, 1, 0); r.b[8] = 0; }},
        {"cf id >= next", [](Raw &r) { r.header(10, 100, 1, 1); r.cf(1, "a", 0); }},
        {"dup cf id", [](Raw &r) { r.header(10, 100, 5, 2); r.cf(1, "a", 0); r.cf(1, "b", 0); }},
        {"dup cf name", [](Raw &r) { r.header(10, 100, 5, 2); r.cf(1, "a", 0); r.cf(2, "a", 0); }},
        {"empty name", [](Raw &r) { r.header(10, 100, 5, 1); r.cf(1, "", 0); }},
        {"NUL in name", [](Raw &r) { r.header(10, 100, 5, 1); r.cf(1, std::string("a\0b", 3), 0); }},
        {"long name", [](Raw &r) { r.header(10, 100, 5, 1); r.cf(1, std::string(256, 'n'), 0); }},
        {"short config", [](Raw &r) { r.header(10, 100, 5, 1); r.cf(1, "a", 0, Raw::config().substr(0, 20)); }},
        {"bad compression", [](Raw &r) { r.header(10, 100, 5, 1); r.cf(1, "a", 0, Raw::config(0.01, 9)); }},
        {"bad sync mode", [](Raw &r) { r.header(10, 100, 5, 1); r.cf(1, "a", 0, Raw::config(0.01, 1, 7)); }},
        {"NaN fpr", [](Raw &r) { r.header(10, 100, 5, 1); r.cf(1, "a", 0, Raw::config(NAN)); }},
        {"fpr 1", [](Raw &r) { r.header(10, 100, 5, 1); r.cf(1, "a", 0, Raw::config(1.0)); }},
        {"level 0", [](Raw &r) { r.header(10, 100, 5, 1); r.cf(1, "a", 1); r.file(0, 3, "a", "b"); }},
        {"level too deep", [](Raw &r) { r.header(10, 100, 5, 1); r.cf(1, "a", 1); r.file(TDB_MAX_LEVELS, 3, "a", "b"); }},
        {"file number 0", [](Raw &r) { r.header(10, 100, 5, 1); r.cf(1, "a", 1); r.file(1, 0, "a", "b"); }},
        {"file number >= next", [](Raw &r) { r.header(10, 100, 5, 1); r.cf(1, "a", 1); r.file(1, 10, "a", "b"); }},
        {"smallest > largest", [](Raw &r) { r.header(10, 100, 5, 1); r.cf(1, "a", 1); r.file(1, 3, "b", "a"); }},
        {"min_seq > max_seq", [](Raw &r) { r.header(10, 100, 5, 1); r.cf(1, "a", 1); r.file(1, 3, "a", "b", 9, 8); }},
        {"max_seq > last", [](Raw &r) { r.header(10, 100, 5, 1); r.cf(1, "a", 1); r.file(1, 3, "a", "b", 1, 101); }},
        {"deletes > entries", [](Raw &r) { r.header(10, 100, 5, 1); r.cf(1, "a", 1); r.file(1, 3, "a", "b", 1, 2, 3, 4); }},
        {"dup file in cf", [](Raw &r) { r.header(10, 100, 5, 1); r.cf(1, "a", 2); r.file(1, 3, "a", "b"); r.file(3, 3, "c", "d"); }},
        {"dup file across cfs", [](Raw &r) {
             r.header(10, 100, 5, 2); r.cf(1, "a", 1); r.file(1, 3, "a", "b"); r.cf(2, "b", 1); r.file(1, 3, "a", "b"); }},
        {"overlap at level 2", [](Raw &r) { r.header(10, 100, 5, 1); r.cf(1, "a", 2); r.file(2, 3, "a", "m"); r.file(2, 4, "k", "z"); }},
        {"shared user key at level 3", [](Raw &r) { r.header(10, 100, 5, 1); r.cf(1, "a", 2); r.file(3, 3, "a", "m"); r.file(3, 4, "m", "z"); }},
        {"last seq beyond 56 bits", [](Raw &r) { r.header(10, SEQ_MAX + 1, 5, 0); }},
        {"trailing bytes", [](Raw &r) { r.header(10, 100, 5, 0); r.b += "zz"; }},
    };
    for (auto &c : cases) {
        Raw r;
        c.build(r);
        manifest_t d;
        Obsolete obs;
        EXPECT_EQ(TDB_ERR_CORRUPTION, Decode(r.seal(), &d, OnObsolete, &obs)) << c.what;
        EXPECT_GT(strlen(tdb_last_error()), 0u) << c.what;
        EXPECT_EQ(0, d.ncf) << c.what;
        // A failed decode reports no file obsolete (it would delete data).
        EXPECT_TRUE(obs.count.empty()) << c.what;
    }
}

TEST(Manifest, DecodedVersionsReportObsoleteFilesOnce) {
    manifest_t m, d;
    BuildManifest(&m);
    std::string enc = Encode(&m);
    manifest_free(&m);
    Obsolete obs;
    ASSERT_EQ(TDB_OK, Decode(enc, &d, OnObsolete, &obs));
    // A newer version built on the decoded one drops file 10.
    version_edit_t e;
    memset(&e, 0, sizeof e);
    ASSERT_EQ(TDB_OK, version_edit_del(&e, 1, 10));
    version_t *v2 = nullptr;
    ASSERT_EQ(TDB_OK, version_apply(d.cfs[0].version, &e, &v2));
    version_edit_free(&e);
    manifest_free(&d);
    // File 10 (no longer in v2) and the files of family "events" (its only
    // version is gone) are obsolete; the rest is still held by v2.
    EXPECT_EQ(3u, obs.count.size());
    EXPECT_EQ(1, obs.count[10]);
    EXPECT_EQ(1, obs.count[40]);
    EXPECT_EQ(1, obs.count[41]);
    version_unref(v2);
    std::vector<uint64_t> all = {10, 11, 12, 20, 21, 22, 30, 40, 41};
    EXPECT_EQ(all.size(), obs.count.size());
    for (uint64_t n : all) EXPECT_EQ(1, obs.count[n]) << n;
}

TEST(Manifest, WriteReadViaEnv) {
    tdbtest::TempDir dir;
    env_t *env = env_posix();
    manifest_t m, d;
    EXPECT_EQ(TDB_ERR_NOT_FOUND, manifest_read(env, dir.path().c_str(), &d, nullptr, nullptr));
    EXPECT_EQ(0, d.ncf);

    BuildManifest(&m);
    ASSERT_EQ(TDB_OK, manifest_write(env, dir.path().c_str(), &m)) << tdb_last_error();
    ASSERT_EQ(TDB_OK, manifest_read(env, dir.path().c_str(), &d, nullptr, nullptr)) << tdb_last_error();
    ExpectSameManifest(&m, &d);
    manifest_free(&d);

    // Rewriting replaces the whole snapshot; no temp file stays behind.
    m.last_sequence = 9999;
    m.next_file_number = 200;
    ASSERT_EQ(TDB_OK, manifest_write(env, dir.path().c_str(), &m));
    ASSERT_EQ(TDB_OK, manifest_read(env, dir.path().c_str(), &d, nullptr, nullptr));
    EXPECT_EQ(9999u, d.last_sequence);
    EXPECT_EQ(200u, d.next_file_number);
    manifest_free(&d);
    char **names = nullptr;
    size_t count = 0;
    ASSERT_EQ(TDB_OK, env->list_dir(env, dir.path().c_str(), &names, &count));
    ASSERT_EQ(1u, count);
    EXPECT_STREQ("MANIFEST", names[0]);
    env_free_list(names, count);

    // A damaged file on disk is corruption, naming the file.
    std::string path = dir.file("MANIFEST");
    FILE *f = fopen(path.c_str(), "r+b");
    ASSERT_NE(nullptr, f);
    fseek(f, 20, SEEK_SET);
    fputc('!', f);
    fclose(f);
    EXPECT_EQ(TDB_ERR_CORRUPTION, manifest_read(env, dir.path().c_str(), &d, nullptr, nullptr));
    EXPECT_NE(nullptr, strstr(tdb_last_error(), "MANIFEST")) << tdb_last_error();
    manifest_free(&m);
}

// ---------------------------------------------------------------------------
// Stored column-family options: tagged (format 4) and positional (1-3).
// ---------------------------------------------------------------------------

std::string V64(uint64_t v) {
    Raw r;
    r.v64(v);
    return r.b;
}

std::string F64(double d) {
    Raw r;
    r.f64(d);
    return r.b;
}

// The tagged fields of format 4 (tag = id << 1, ids 1..12), in table order.
std::vector<std::pair<uint32_t, std::string>> TaggedFields(const tdb_cf_config_t &c) {
    return {{1 << 1, V64(c.write_buffer_size)},
            {2 << 1, V64((uint32_t)c.compression)},
            {3 << 1, F64(c.bloom_fpr)},
            {4 << 1, V64((uint32_t)c.sync_mode)},
            {5 << 1, V64(c.sync_interval_us)},
            {6 << 1, V64(c.block_size)},
            {7 << 1, V64(c.value_threshold)},
            {8 << 1, V64((uint32_t)c.l0_queue_stall_threshold)},
            {9 << 1, V64((uint32_t)c.l1_file_count_trigger)},
            {10 << 1, V64((uint32_t)c.level_size_ratio)},
            {11 << 1, F64(c.tombstone_density_trigger)},
            {12 << 1, V64(c.tombstone_density_min_entries)}};
}

std::string Join(const std::vector<std::pair<uint32_t, std::string>> &fields) {
    Raw r;
    for (auto &f : fields) {
        r.v32(f.first);
        r.str(f.second);
    }
    return r.b;
}

// A format-4 manifest of one family "a" storing the options blob.
std::string Format4With(const std::string &options) {
    Raw r;
    r.header(10, 100, 5, 1, 4);
    r.cf(1, "a", 0, options);
    return r.seal();
}

TEST(ManifestOptions, CurrentEncodingIsTaggedInTableOrder) {
    manifest_t m;
    BuildManifest(&m);
    buf_t b{};
    ASSERT_EQ(TDB_OK, manifest_options_encode(&m.cfs[1].config, &b));
    EXPECT_EQ(Join(TaggedFields(m.cfs[1].config)), std::string(b.data, b.size));
    buf_free(&b);
    manifest_free(&m);
}

TEST(ManifestOptions, TaggedFieldsInAnyOrder) {
    tdb_cf_config_t want = Config(2);
    auto fields = TaggedFields(want);
    std::reverse(fields.begin(), fields.end());
    manifest_t d;
    ASSERT_EQ(TDB_OK, Decode(Format4With(Join(fields)), &d)) << tdb_last_error();
    ExpectSameConfig(want, d.cfs[0].config);
    manifest_free(&d);
}

// A field added by a newer version (an unknown tag whose must-understand
// bit is clear) does not break reading: it is skipped, the known fields
// read as written, and a rewrite by this version drops it.
TEST(ManifestOptions, AddedFieldIsSkipped) {
    tdb_cf_config_t want = Config(1);
    auto fields = TaggedFields(want);
    fields.insert(fields.begin() + 3, {13 << 1, V64(77)});
    fields.push_back({200 << 1, std::string("\x01\xff\x00 any bytes", 13)});
    fields.push_back({4000 << 1, ""});
    manifest_t d, d2;
    ASSERT_EQ(TDB_OK, Decode(Format4With(Join(fields)), &d)) << tdb_last_error();
    ExpectSameConfig(want, d.cfs[0].config);
    std::string again = Encode(&d);
    EXPECT_EQ(std::string::npos, again.find(std::string("\x01\xff\x00 any bytes", 13)));
    ASSERT_EQ(TDB_OK, Decode(again, &d2)) << tdb_last_error();
    ExpectSameConfig(want, d2.cfs[0].config);
    manifest_free(&d);
    manifest_free(&d2);
}

// A field that changes how data is read carries the must-understand bit:
// this version refuses it with a clear error instead of misreading.
TEST(ManifestOptions, UnknownMustUnderstandFieldRefused) {
    auto fields = TaggedFields(Config(0));
    fields.push_back({13 << 1 | 1, V64(1)});
    manifest_t d;
    EXPECT_EQ(TDB_ERR_CORRUPTION, Decode(Format4With(Join(fields)), &d));
    EXPECT_NE(nullptr, strstr(tdb_last_error(), "tag 27")) << tdb_last_error();
    EXPECT_NE(nullptr, strstr(tdb_last_error(), "must understand")) << tdb_last_error();
    EXPECT_EQ(0, d.ncf);
}

TEST(ManifestOptions, InvalidTaggedOptionsAreCorruption) {
    using Fields = std::vector<std::pair<uint32_t, std::string>>;
    struct Case {
        const char *what;
        std::function<void(Fields &)> edit;
    };
    std::vector<Case> cases = {
        {"missing field", [](Fields &f) { f.erase(f.begin() + 4); }},
        {"field twice", [](Fields &f) { f.push_back(f[5]); }},
        {"double of 4 bytes", [](Fields &f) { f[2].second.resize(4); }},
        {"varint with a trailing byte", [](Fields &f) { f[0].second += "x"; }},
        {"empty integer", [](Fields &f) { f[5].second.clear(); }},
        {"u32 beyond 32 bits", [](Fields &f) { f[5].second = V64(1ull << 32); }},
        {"int beyond 32 bits", [](Fields &f) { f[8].second = V64(1ull << 40); }},
        {"bad compression", [](Fields &f) { f[1].second = V64(9); }},
        {"bad sync mode", [](Fields &f) { f[3].second = V64(7); }},
        {"NaN fpr", [](Fields &f) { f[2].second = F64(NAN); }},
        {"negative tombstone trigger", [](Fields &f) { f[10].second = F64(-1); }},
    };
    for (auto &c : cases) {
        Fields f = TaggedFields(Config(0));
        c.edit(f);
        manifest_t d;
        EXPECT_EQ(TDB_ERR_CORRUPTION, Decode(Format4With(Join(f)), &d)) << c.what;
        EXPECT_GT(strlen(tdb_last_error()), 0u) << c.what;
        EXPECT_EQ(0, d.ncf) << c.what;
    }
    // A truncated field (the length runs past the blob).
    std::string blob = Join(TaggedFields(Config(0)));
    manifest_t d;
    EXPECT_EQ(TDB_ERR_CORRUPTION, Decode(Format4With(blob + std::string("\x30\x05" "ab", 4)), &d));
}

// Formats 1-3 stored the options positionally: every one of them still reads.
TEST(ManifestOptions, PositionalFormatsStillRead) {
    for (uint32_t format = 1; format <= 3; format++) {
        Raw r;
        r.header(10, 100, 5, 2, format);
        r.cf(1, "a", 0, tdbtest::PositionalOptions(Config(1)));
        r.cf(2, "b", 0, tdbtest::PositionalOptions(Config(3)) + "tail of a later field");
        manifest_t d;
        ASSERT_EQ(TDB_OK, Decode(r.seal(), &d)) << "format " << format << ": " << tdb_last_error();
        EXPECT_EQ(format, d.format);
        ExpectSameConfig(Config(1), d.cfs[0].config);
        ExpectSameConfig(Config(3), d.cfs[1].config);
        // Rewritten in the current format, the options stay the same.
        manifest_t d2;
        ASSERT_EQ(TDB_OK, Decode(Encode(&d), &d2));
        EXPECT_EQ(4u, d2.format);
        ExpectSameConfig(Config(1), d2.cfs[0].config);
        ExpectSameConfig(Config(3), d2.cfs[1].config);
        manifest_free(&d);
        manifest_free(&d2);
    }
}

// A whole manifest (files at several levels, range-delete counts) in the
// encodings of formats 1-3 decodes to what was encoded.
TEST(ManifestOptions, OldEncodingsOfAFullManifestRead) {
    manifest_t m;
    BuildManifest(&m);
    for (uint32_t format = 1; format <= 3; format++) {
        manifest_t d;
        ASSERT_EQ(TDB_OK, Decode(tdbtest::EncodeOldManifest(&m, format), &d)) << format << ": " << tdb_last_error();
        EXPECT_EQ(format, d.format);
        if (format == 1) {
            EXPECT_EQ(0u, version_file(d.cfs[0].version, 4, 0)->num_range_deletes);
        } else {
            ExpectSameManifest(&m, &d);
        }
        manifest_free(&d);
    }
    manifest_free(&m);
}

// A database written by the code of format 3 (commit 51537ab): a family
// "events" created with the options of EventsConfig(), "apple"="red" put in
// "default" and "e1", "e2" in "events", then closed; its MANIFEST and WAL.
const char *kFormat3Manifest =
    "5444424d414e49460300000002000202000764656661756c742280808020027b"
    "14ae47e17a843f0280e807802080040a040a666666666666e63f801001000106"
    "6576656e7473228080c001009a9999999999a93f0190a10f8040800807060800"
    "0000000000d03f802001004eb3d1d7";
const char *kFormat3Wal =
    "85389e470d000000020141056170706c650372656422f01f9313000000000101"
    "010265310b6669727374206576656e740addc8df14000000000101010265320c"
    "7365636f6e64206576656e74";

std::string Unhex(const char *h) {
    std::string s;
    for (size_t i = 0; h[i] && h[i + 1]; i += 2) s += (char)std::stoi(std::string(h + i, 2), nullptr, 16);
    return s;
}

tdb_cf_config_t EventsConfig() {
    tdb_cf_config_t k;
    tdb_cf_config_default(&k);
    k.write_buffer_size = 3u << 20;
    k.compression = TDB_COMPRESS_NONE;
    k.bloom_fpr = 0.05;
    k.sync_mode = TDB_SYNC_INTERVAL;
    k.sync_interval_us = 250000;
    k.block_size = 8192;
    k.value_threshold = 1024;
    k.l0_queue_stall_threshold = 7;
    k.l1_file_count_trigger = 6;
    k.level_size_ratio = 8;
    k.tombstone_density_trigger = 0.25;
    k.tombstone_density_min_entries = 4096;
    return k;
}

// The test-side positional encoder is the one the code of format 3 used:
// it rebuilds the fixture byte for byte.
TEST(ManifestCompat, TestEncoderRebuildsFormat3Fixture) {
    tdb_cf_config_t def;
    tdb_cf_config_default(&def);
    Raw r;
    r.header(2, 0, 2, 2, 3);
    r.cf(0, "default", 0, tdbtest::PositionalOptions(def));
    r.cf(1, "events", 0, tdbtest::PositionalOptions(EventsConfig()));
    EXPECT_EQ(Unhex(kFormat3Manifest), r.seal());
}

// The format-3 database opens, replays its WAL and keeps the stored options;
// its first open rewrites the MANIFEST as format 4, which opens the same.
TEST(ManifestCompat, Format3DatabaseOpens) {
    tdbtest::TempDir dir;
    for (auto &f : {std::make_pair("MANIFEST", kFormat3Manifest), std::make_pair("000001.log", kFormat3Wal)}) {
        std::string bytes = Unhex(f.second);
        FILE *out = fopen(dir.file(f.first).c_str(), "wb");
        ASSERT_NE(nullptr, out);
        ASSERT_EQ(bytes.size(), fwrite(bytes.data(), 1, bytes.size(), out));
        fclose(out);
    }
    for (int round = 0; round < 2; round++) {
        tdb_t *db = nullptr;
        ASSERT_EQ(TDB_OK, tdb_open(dir.path().c_str(), nullptr, &db)) << "round " << round << ": " << tdb_last_error();
        tdb_cf_t *def = nullptr, *ev = nullptr;
        ASSERT_EQ(TDB_OK, tdb_get_cf(db, TDB_DEFAULT_CF, &def));
        ASSERT_EQ(TDB_OK, tdb_get_cf(db, "events", &ev));
        tdb_cf_config_t got;
        ASSERT_EQ(TDB_OK, tdb_cf_get_config(ev, &got));
        ExpectSameConfig(EventsConfig(), got);
        struct {
            tdb_cf_t *cf;
            const char *key, *val;
        } want[] = {{def, "apple", "red"}, {ev, "e1", "first event"}, {ev, "e2", "second event"}};
        for (auto &w : want) {
            void *val = nullptr;
            size_t vlen = 0;
            ASSERT_EQ(TDB_OK, tdb_get(db, w.cf, nullptr, w.key, strlen(w.key), &val, &vlen))
                << w.key << ": " << tdb_last_error();
            EXPECT_EQ(std::string(w.val), std::string((const char *)val, vlen));
            tdb_free(val);
        }
        ASSERT_EQ(TDB_OK, tdb_close(db));
        manifest_t m;
        ASSERT_EQ(TDB_OK, manifest_read(env_posix(), dir.path().c_str(), &m, nullptr, nullptr));
        EXPECT_EQ(4u, m.format) << "round " << round;
        manifest_free(&m);
    }
}

}  // namespace
