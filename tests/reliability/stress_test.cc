// The stress tool and its crash verification: a short run passes; kill -9 at
// random moments followed by --verify_only passes; and the verifier is not
// vacuous: a lost write, a wrong value and a partially recovered batch are
// each reported (exit status 1).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <thread>

#include "testutil.h"
#include "tidesdb/tidesdb.h"

extern "C" {
#include "stress.h"
}

using tdbtest::TempDir;

namespace {

struct Result {
    int status = -1;
    std::string out;
};

// Run tdb_stress with flags; collect output and exit status.
Result Stress(const std::string &flags) {
    Result r;
    std::string cmd = std::string(TDB_STRESS_BIN) + " " + flags + " 2>&1";
    FILE *p = popen(cmd.c_str(), "r");
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
    int st = pclose(p);
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return r;
}

class StressTest : public ::testing::Test {
  protected:
    std::string Flags(const std::string &more = "") const {
        return "--db=" + dir_.file("db") + " --keys=400 --cfs=3 --threads=3 --seed=5 " + more;
    }
    TempDir dir_;
};

TEST_F(StressTest, ShortRunPassesAndReopens) {
    Result r = Stress(Flags("--ops=4000 --weights=reopen=0.5,compact=0.5,flush=2"));
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find("STRESS_DONE ops=4000"), std::string::npos) << r.out;
    r = Stress(Flags("--verify_only"));
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find("previous=clean"), std::string::npos) << r.out;
}

TEST_F(StressTest, KillNineAtRandomMomentsThenVerify) {
    std::mt19937 rng(3);
    for (int cycle = 0; cycle < 6; cycle++) {
        std::string flags = Flags(cycle % 2 ? "--sync=full --ops=0 --duration=60" : "--ops=0 --duration=60");
        int st = tdbtest::KillNine(
            [&] {
                std::string cmd = std::string(TDB_STRESS_BIN) + " " + flags + " >/dev/null 2>&1";
                execl("/bin/sh", "sh", "-c", ("exec " + cmd).c_str(), (char *)nullptr);
                _exit(127);
            },
            [&] { std::this_thread::sleep_for(std::chrono::milliseconds(100 + rng() % 700)); });
        ASSERT_NE(st, -1) << "fork failed";
        ASSERT_TRUE(WIFSIGNALED(st)) << "tdb_stress ended by itself with " << WEXITSTATUS(st);
        Result r = Stress(Flags("--verify_only"));
        ASSERT_EQ(r.status, 0) << "cycle " << cycle << ":\n" << r.out;
        EXPECT_NE(r.out.find("STRESS_VERIFY when=verify_only keys=1200"), std::string::npos) << r.out;
    }
}

// Helpers that tamper with the database or the oracle behind the tool's back.
class TamperTest : public StressTest {
  protected:
    void SetUp() override {
        Result r = Stress(Flags("--ops=3000"));
        ASSERT_EQ(r.status, 0) << r.out;
        int created = 0;
        ASSERT_EQ(oracle_open(expected().c_str(), 3, 400, &orc_, &created), 0);
        ASSERT_EQ(created, 0);
    }
    void TearDown() override {
        if (orc_.h) oracle_close(&orc_);
    }
    std::string expected() const { return dir_.file("db") + ".expected"; }
    // First key of family cf the oracle says is present (UINT32_MAX if none).
    uint32_t PresentKey(uint32_t cf) {
        for (uint32_t k = 0; k < 400; k++)
            if (st_exists(oracle_load(&orc_, cf, k))) return k;
        return UINT32_MAX;
    }
    uint32_t AbsentKey(uint32_t cf) {
        for (uint32_t k = 0; k < 400; k++)
            if (!st_exists(oracle_load(&orc_, cf, k))) return k;
        return UINT32_MAX;
    }
    void OpenDb() {
        tdb_config_t c;
        tdb_config_default(&c);
        c.log_level = TDB_LOG_NONE;
        ASSERT_EQ(tdb_open(dir_.file("db").c_str(), &c, &db_), TDB_OK);
        ASSERT_EQ(tdb_get_cf(db_, TDB_DEFAULT_CF, &cf_[0]), TDB_OK);
        ASSERT_EQ(tdb_get_cf(db_, "cf1", &cf_[1]), TDB_OK);
        ASSERT_EQ(tdb_get_cf(db_, "cf2", &cf_[2]), TDB_OK);
    }
    void PutGen(uint32_t cf, uint32_t key, uint32_t gen) {
        char kb[STRESS_KEY_MAX];
        size_t kl = stress_key(key, kb);
        std::string v(stress_value_len(cf, key, gen, 32768), '\0');
        stress_value(cf, key, gen, 32768, v.data(), v.size());
        ASSERT_EQ(tdb_put(db_, cf_[cf], kb, kl, v.data(), v.size(), 0), TDB_OK);
    }
    void CloseDb() {
        ASSERT_EQ(tdb_close(db_), TDB_OK);
        db_ = nullptr;
    }
    oracle_t orc_{};
    tdb_t *db_ = nullptr;
    tdb_cf_t *cf_[3] = {};
};

TEST_F(TamperTest, LostWriteIsReported) {
    uint32_t k = PresentKey(1);
    ASSERT_NE(k, UINT32_MAX);
    oracle_close(&orc_);
    OpenDb();
    char kb[STRESS_KEY_MAX];
    size_t kl = stress_key(k, kb);
    ASSERT_EQ(tdb_delete(db_, cf_[1], kb, kl), TDB_OK);
    CloseDb();
    Result r = Stress(Flags("--verify_only"));
    EXPECT_EQ(r.status, 1) << r.out;
    EXPECT_NE(r.out.find("STRESS_FAIL"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("key " + std::to_string(k)), std::string::npos) << r.out;
}

TEST_F(TamperTest, ResurrectedOrUnknownValueIsReported) {
    uint32_t k = AbsentKey(2);
    ASSERT_NE(k, UINT32_MAX);
    uint32_t gen = st_gen(oracle_load(&orc_, 2, k));
    oracle_close(&orc_);
    OpenDb();
    PutGen(2, k, gen + 7);  // a well-formed value no acknowledged write produced
    CloseDb();
    Result r = Stress(Flags("--verify_only"));
    EXPECT_EQ(r.status, 1) << r.out;
    EXPECT_NE(r.out.find("cf2 key " + std::to_string(k)), std::string::npos) << r.out;
}

TEST_F(TamperTest, PartiallyRecoveredBatchIsReported) {
    // The oracle records an issued batch on (cf0, a) and (cf1, b); the
    // database gets only the first half: not atomic.
    uint32_t a = 10, b = 20;
    uint64_t wa = oracle_load(&orc_, 0, a), wb = oracle_load(&orc_, 1, b);
    uint32_t ga = std::max(st_gen(wa), st_pgen(wa)) + 1, gb = std::max(st_gen(wb), st_pgen(wb)) + 1;
    oracle_thread_t *rec = &orc_.h->threads[7];
    rec->nent = 2;
    rec->ent[0] = {0, a};
    rec->ent[1] = {1, b};
    rec->phase = PHASE_ISSUED;
    oracle_store(&orc_, 0, a, st_with_pending(wa, ga, 1));
    oracle_store(&orc_, 1, b, st_with_pending(wb, gb, 1));
    orc_.h->clean = 0;
    oracle_close(&orc_);
    OpenDb();
    PutGen(0, a, ga);
    CloseDb();
    Result r = Stress(Flags("--verify_only"));
    EXPECT_EQ(r.status, 1) << r.out;
    EXPECT_NE(r.out.find("not atomic"), std::string::npos) << r.out;
}

TEST_F(TamperTest, WholeBatchEitherWayIsAccepted) {
    uint32_t a = 30, b = 40;
    uint64_t wa = oracle_load(&orc_, 0, a), wb = oracle_load(&orc_, 2, b);
    uint32_t ga = std::max(st_gen(wa), st_pgen(wa)) + 1, gb = std::max(st_gen(wb), st_pgen(wb)) + 1;
    oracle_thread_t *rec = &orc_.h->threads[7];
    rec->nent = 2;
    rec->ent[0] = {0, a};
    rec->ent[1] = {2, b};
    rec->phase = PHASE_ISSUED;
    oracle_store(&orc_, 0, a, st_with_pending(wa, ga, 1));
    oracle_store(&orc_, 2, b, st_with_pending(wb, gb, 1));
    orc_.h->clean = 0;
    oracle_close(&orc_);
    OpenDb();
    PutGen(0, a, ga);
    PutGen(2, b, gb);
    CloseDb();
    Result r = Stress(Flags("--verify_only"));
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find("resolved_new=2"), std::string::npos) << r.out;
    // The resolution is persisted: a second check sees no pending writes.
    r = Stress(Flags("--verify_only"));
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find("pending=0"), std::string::npos) << r.out;
}

}  // namespace
