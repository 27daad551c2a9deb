// The offline file checker (tools/stress/dbcheck.h, the tdb_verify command):
// a clean database has no damage; one flipped bit anywhere in any data file
// (MANIFEST, every table, every WAL) is reported, naming that file; a torn
// WAL tail is damage unless allowed; a missing table is reported.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "testutil.h"
#include "tidesdb/tidesdb.h"

extern "C" {
#include "db/testing.h"
#include "dbcheck.h"
#include "env/env.h"
#include "testing/env_fault.h"
}

using tdbtest::TempDir;
namespace fs = std::filesystem;

namespace {

// A closed database with tables of two families (lz4 and uncompressed,
// separated values, deletes), after a compaction, with data left in its WAL.
void BuildDb(const std::string &dir) {
    tdb_config_t c;
    tdb_config_default(&c);
    c.log_level = TDB_LOG_NONE;
    c.default_cf.write_buffer_size = 64 << 10;
    c.default_cf.sync_mode = TDB_SYNC_NONE;
    c.default_cf.compression = TDB_COMPRESS_NONE;
    tdb_t *db;
    ASSERT_EQ(tdb_open(dir.c_str(), &c, &db), TDB_OK);
    tdb_cf_t *def, *other;
    ASSERT_EQ(tdb_get_cf(db, TDB_DEFAULT_CF, &def), TDB_OK);
    tdb_cf_config_t oc = c.default_cf;
    oc.compression = TDB_COMPRESS_LZ4;
    ASSERT_EQ(tdb_create_cf(db, "other", &oc, &other), TDB_OK);
    for (uint64_t i = 0; i < 1500; i++) {
        std::string k = tdbtest::Key(i), v = tdbtest::Value(i, 50 + (i % 9) * 120);
        ASSERT_EQ(tdb_put(db, i % 3 ? def : other, k.data(), k.size(), v.data(), v.size(), 0), TDB_OK);
        if (i % 17 == 0) {
            ASSERT_EQ(tdb_delete(db, def, k.data(), k.size()), TDB_OK);
        }
    }
    ASSERT_EQ(tdb_compact(db, nullptr), TDB_OK);
    ASSERT_EQ(tdb_wait_idle(db), TDB_OK);
    for (uint64_t i = 0; i < 40; i++) {  // stays in the WAL
        std::string k = tdbtest::Key(100000 + i), v = tdbtest::Value(i, 80);
        ASSERT_EQ(tdb_put(db, def, k.data(), k.size(), v.data(), v.size(), 0), TDB_OK);
    }
    ASSERT_EQ(tdb_close(db), TDB_OK);
}

// Data files: MANIFEST, *.sst, non-empty *.log.
std::vector<std::string> DataFiles(const std::string &dir) {
    std::vector<std::string> out;
    for (auto &e : fs::directory_iterator(dir)) {
        std::string n = e.path().filename().string();
        bool data = n == "MANIFEST" || (n.size() > 4 && n.substr(n.size() - 4) == ".sst") ||
                    (n.size() > 4 && n.substr(n.size() - 4) == ".log" && fs::file_size(e.path()) > 0);
        if (data) out.push_back(n);
    }
    std::sort(out.begin(), out.end());
    return out;
}

void FlipBit(const std::string &path, uint64_t byte, int bit) {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg((std::streamoff)byte);
    char c;
    f.read(&c, 1);
    c ^= (char)(1 << bit);
    f.seekp((std::streamoff)byte);
    f.write(&c, 1);
}

dbcheck_result_t Check(const std::string &dir, int allow_torn = 0) {
    dbcheck_opts_t o = {allow_torn, 0, nullptr};
    dbcheck_result_t r;
    int rc = dbcheck_run(env_posix(), dir.c_str(), &o, &r);
    EXPECT_GE(rc, 0);
    return r;
}

class DbCheckTest : public ::testing::Test {
  protected:
    void SetUp() override { BuildDb(dir_.path()); }
    TempDir dir_;
};

TEST_F(DbCheckTest, CleanDatabaseHasNoDamage) {
    dbcheck_result_t r = Check(dir_.path());
    EXPECT_EQ(r.files_damaged, 0u) << r.damaged[0];
    EXPECT_GE(r.tables, 2u);
    EXPECT_GE(r.wals, 1u);
    EXPECT_GE(r.wal_records, 40u);
    EXPECT_EQ(r.orphans, 0u);
    EXPECT_GT(r.table_entries, 1000u);
}

// A WAL relogged from the memtables after its fsync ran out of space
// (db/switch.c) holds each family's entries in sequence order, family after
// family: the checker accepts it (sequences climb per family inside the
// relog, and from its end on as usual) and counts its records.
TEST(DbCheckRelog, RelogWalIsNotDamage) {
    TempDir dir;
    fault_env_t *fe = nullptr;
    ASSERT_EQ(fault_env_create(env_posix(), 7, &fe), TDB_OK);
    tdb_config_t c;
    tdb_config_default(&c);
    c.log_level = TDB_LOG_NONE;
    c.default_cf.sync_mode = TDB_SYNC_NONE;
    tdb_t *db = nullptr;
    tdb_cf_t *def = nullptr, *other = nullptr;
    ASSERT_EQ(tdb_open_env(dir.path().c_str(), &c, fault_env_env(fe), &db), TDB_OK);
    ASSERT_EQ(tdb_get_cf(db, TDB_DEFAULT_CF, &def), TDB_OK);
    ASSERT_EQ(tdb_create_cf(db, "other", nullptr, &other), TDB_OK);
    auto write = [&](uint64_t i) {  // key i in both families, one batch
        tdb_batch_t *b;
        EXPECT_EQ(tdb_batch_create(&b), TDB_OK);
        std::string k = tdbtest::Key(i), v = tdbtest::Value(i, 40);
        EXPECT_EQ(tdb_batch_put(b, def, k.data(), k.size(), v.data(), v.size(), 0), TDB_OK);
        EXPECT_EQ(tdb_batch_put(b, other, k.data(), k.size(), v.data(), v.size(), 0), TDB_OK);
        int rc = tdb_write(db, b);
        tdb_batch_destroy(b);
        return rc;
    };
    for (uint64_t i = 0; i < 100; i++) ASSERT_EQ(write(i), TDB_OK);
    fault_rule_t r;
    memset(&r, 0, sizeof r);
    r.op = FAULT_SYNC;
    r.code = TDB_ERR_NO_SPACE;
    r.path_contains = ".log";
    r.nth = 1;
    r.count = UINT64_MAX;
    ASSERT_EQ(fault_env_add_rule(fe, &r), TDB_OK);
    EXPECT_EQ(tdb_sync(db), TDB_ERR_NO_SPACE);
    fault_env_clear_rules(fe);
    for (uint64_t i = 100; i < 110; i++) ASSERT_EQ(write(i), TDB_OK);  // the first relogs
    ASSERT_EQ(tdb_close(db), TDB_OK);
    fault_env_destroy(fe);
    dbcheck_result_t res = Check(dir.path());
    EXPECT_EQ(res.files_damaged, 0u) << res.damaged[0];
    EXPECT_EQ(res.wals, 1u);                // the older logs were removed
    EXPECT_GE(res.wal_records, 200u + 10u); // one record per family entry, then the new writes
}

TEST_F(DbCheckTest, AFlippedBitInAnyDataFileIsDetected) {
    std::vector<std::string> files = DataFiles(dir_.path());
    bool saw_manifest = false, saw_sst = false, saw_log = false;
    std::mt19937_64 rng(42);
    uint64_t flips = 0;
    for (const auto &name : files) {
        std::string path = dir_.file(name);
        uint64_t size = fs::file_size(path);
        saw_manifest |= name == "MANIFEST";
        saw_sst |= name.find(".sst") != std::string::npos;
        saw_log |= name.find(".log") != std::string::npos;
        std::vector<uint64_t> at = {0, size - 1, size / 2, size > 64 ? size - 64 : 0};
        for (int i = 0; i < 24; i++) at.push_back(rng() % size);
        for (uint64_t pos : at) {
            int bit = (int)(rng() % 8);
            FlipBit(path, pos, bit);
            dbcheck_result_t r = Check(dir_.path());
            EXPECT_TRUE(dbcheck_is_damaged(&r, name.c_str()))
                << "flipped bit " << bit << " of byte " << pos << " in " << name << " (" << size
                << " bytes) was not detected; damaged: " << r.files_damaged;
            FlipBit(path, pos, bit);  // restore
            flips++;
        }
    }
    EXPECT_TRUE(saw_manifest && saw_sst && saw_log);
    EXPECT_EQ(Check(dir_.path()).files_damaged, 0u);  // restored exactly
    printf("[ dbcheck ] %llu single-bit flips over %zu files, all detected\n", (unsigned long long)flips,
           files.size());
}

TEST_F(DbCheckTest, TornWalTailIsDamageUnlessAllowed) {
    std::string wal;
    for (const auto &n : DataFiles(dir_.path()))
        if (n.find(".log") != std::string::npos) wal = n;
    ASSERT_FALSE(wal.empty());
    fs::resize_file(dir_.file(wal), fs::file_size(dir_.file(wal)) - 3);
    dbcheck_result_t strict = Check(dir_.path(), 0);
    EXPECT_TRUE(dbcheck_is_damaged(&strict, wal.c_str()));
    dbcheck_result_t r = Check(dir_.path(), 1);
    EXPECT_EQ(r.files_damaged, 0u) << r.damaged[0];
}

TEST_F(DbCheckTest, MissingOrResizedTableIsReported) {
    std::vector<std::string> ssts;
    for (const auto &n : DataFiles(dir_.path()))
        if (n.find(".sst") != std::string::npos) ssts.push_back(n);
    ASSERT_GE(ssts.size(), 2u);
    fs::remove(dir_.file(ssts[0]));
    {
        std::ofstream f(dir_.file(ssts[1]), std::ios::app | std::ios::binary);
        f << "x";
    }
    dbcheck_result_t r = Check(dir_.path());
    EXPECT_TRUE(dbcheck_is_damaged(&r, ssts[0].c_str()));
    EXPECT_TRUE(dbcheck_is_damaged(&r, ssts[1].c_str()));
    EXPECT_EQ(r.files_damaged, 2u);
}

// The command: exit 0 when clean, 1 naming the damaged file.
TEST_F(DbCheckTest, VerifyCommandReportsDamagedFilesByName) {
    auto run = [&](std::string *out) {
        std::string cmd = std::string(TDB_VERIFY_BIN) + " " + dir_.path() + " 2>&1";
        FILE *p = popen(cmd.c_str(), "r");
        char buf[4096];
        size_t n;
        while ((n = fread(buf, 1, sizeof buf, p)) > 0) out->append(buf, n);
        int st = pclose(p);
        return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    };
    std::string out;
    EXPECT_EQ(run(&out), 0) << out;
    std::string victim;
    for (const auto &n : DataFiles(dir_.path()))
        if (n.find(".sst") != std::string::npos) victim = n;
    FlipBit(dir_.file(victim), fs::file_size(dir_.file(victim)) / 3, 5);
    out.clear();
    EXPECT_EQ(run(&out), 1) << out;
    EXPECT_NE(out.find("DAMAGED  " + victim), std::string::npos) << out;
}

}  // namespace
