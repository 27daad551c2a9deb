// The fault env itself (env/env_fault.h): power loss keeps only synced
// bytes and directory entries, failed syncs never become durable, rules by
// call number, count, path and probability, partial and torn appends, the
// space budget, and crashes after the Nth mutation. The database over it is
// tested in fault_test.cc.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "fault_testutil.h"
#include "testutil.h"

extern "C" {
#include "testing/env_fault.h"
}

using tdbtest::TempDir;

namespace {

namespace fs = std::filesystem;

using tdbtest::Slurp;

bool Exists(const std::string &p) { return fs::exists(p); }

// Write a whole file through an env: create, append, optionally sync.
void WriteFile(env_t *e, const std::string &path, const std::string &data, bool sync) {
    env_file_t *f = nullptr;
    ASSERT_EQ(e->open_writable(e, path.c_str(), &f), TDB_OK) << tdb_last_error();
    ASSERT_EQ(env_append(f, data.data(), data.size()), TDB_OK);
    if (sync) {
        ASSERT_EQ(env_sync(f), TDB_OK);
    }
    ASSERT_EQ(env_close(f), TDB_OK);
}

// ---------------------------------------------------------------------------
// The fault env on its own.
// ---------------------------------------------------------------------------

TEST(FaultEnv, PowerLossKeepsOnlySyncedBytes) {
    TempDir d;
    FaultEnv fe;
    env_t *e = fe.env();
    ASSERT_EQ(e->sync_dir(e, d.path().c_str()), TDB_OK);
    env_file_t *f = nullptr;
    std::string p = d.file("a");
    ASSERT_EQ(e->open_writable(e, p.c_str(), &f), TDB_OK);
    ASSERT_EQ(e->sync_dir(e, d.path().c_str()), TDB_OK);  // entry durable
    ASSERT_EQ(env_append(f, "hello ", 6), TDB_OK);
    ASSERT_EQ(env_sync(f), TDB_OK);
    ASSERT_EQ(env_append(f, "world", 5), TDB_OK);
    EXPECT_EQ(Slurp(p), "hello world");  // visible before the crash
    ASSERT_EQ(fault_env_power_loss(fe.fe), TDB_OK);
    EXPECT_TRUE(fault_env_is_down(fe.fe));
    EXPECT_EQ(env_append(f, "x", 1), TDB_ERR_IO);  // a dead process writes nothing
    EXPECT_EQ(env_close(f), TDB_OK);
    EXPECT_EQ(Slurp(p), "hello ");
    fault_stats_t s = fe.Stats();
    EXPECT_EQ(s.power_losses, 1u);
    EXPECT_EQ(s.bytes_dropped, 5u);
    fault_env_revive(fe.fe);
    EXPECT_FALSE(fault_env_is_down(fe.fe));
    EXPECT_TRUE(e->exists(e, p.c_str()));
}

TEST(FaultEnv, UnsyncedDirectoryEntriesAreUndone) {
    TempDir d;
    FaultEnv fe;
    env_t *e = fe.env();
    const char *dir = d.path().c_str();
    WriteFile(e, d.file("old"), "durable", true);
    WriteFile(e, d.file("gone"), "to be removed", true);
    WriteFile(e, d.file("M"), "manifest v1", true);
    ASSERT_EQ(e->sync_dir(e, dir), TDB_OK);
    // Unsynced: a new file (even with synced data), a remove, a rename over
    // an existing file, a new directory.
    WriteFile(e, d.file("new"), "synced data, unsynced entry", true);
    ASSERT_EQ(e->remove(e, d.file("gone").c_str()), TDB_OK);
    EXPECT_FALSE(Exists(d.file("gone")));
    WriteFile(e, d.file("M.tmp"), "manifest v2", true);
    ASSERT_EQ(e->rename(e, d.file("M.tmp").c_str(), d.file("M").c_str()), TDB_OK);
    EXPECT_EQ(Slurp(d.file("M")), "manifest v2");
    ASSERT_EQ(e->mkdir(e, d.file("sub").c_str()), TDB_OK);
    WriteFile(e, d.file("sub/x"), "x", true);
    // Trash files never show in listings.
    char **names;
    size_t n;
    ASSERT_EQ(e->list_dir(e, dir, &names, &n), TDB_OK);
    std::set<std::string> seen(names, names + n);
    env_free_list(names, n);
    EXPECT_EQ(seen, (std::set<std::string>{"old", "new", "M", "sub"}));

    ASSERT_EQ(fault_env_power_loss(fe.fe), TDB_OK);
    fault_env_revive(fe.fe);
    EXPECT_EQ(Slurp(d.file("old")), "durable");
    EXPECT_FALSE(Exists(d.file("new")));
    EXPECT_EQ(Slurp(d.file("gone")), "to be removed");
    EXPECT_EQ(Slurp(d.file("M")), "manifest v1");
    EXPECT_FALSE(Exists(d.file("M.tmp")));
    EXPECT_FALSE(Exists(d.file("sub")));
    std::set<std::string> left;
    for (auto &de : fs::directory_iterator(d.path())) left.insert(de.path().filename().string());
    EXPECT_EQ(left, (std::set<std::string>{"old", "gone", "M"}));
    EXPECT_GE(fe.Stats().entries_reverted, 4u);
}

TEST(FaultEnv, SyncDirMakesEntriesDurableAndDropsTrash) {
    TempDir d;
    FaultEnv fe;
    env_t *e = fe.env();
    WriteFile(e, d.file("M"), "v1", true);
    ASSERT_EQ(e->sync_dir(e, d.path().c_str()), TDB_OK);
    WriteFile(e, d.file("M.tmp"), "v2", true);
    ASSERT_EQ(e->rename(e, d.file("M.tmp").c_str(), d.file("M").c_str()), TDB_OK);
    WriteFile(e, d.file("b"), "b", true);
    ASSERT_EQ(e->remove(e, d.file("b").c_str()), TDB_OK);  // created and removed: gone either way
    ASSERT_EQ(e->sync_dir(e, d.path().c_str()), TDB_OK);
    size_t files = 0;
    for (auto &de : fs::directory_iterator(d.path())) files++, (void)de;
    EXPECT_EQ(files, 1u);  // no trash left behind
    ASSERT_EQ(fault_env_power_loss(fe.fe), TDB_OK);
    fault_env_revive(fe.fe);
    EXPECT_EQ(Slurp(d.file("M")), "v2");
    EXPECT_FALSE(Exists(d.file("b")));
}

TEST(FaultEnv, FailedSyncNeverBecomesDurable) {
    TempDir d;
    FaultEnv fe;
    env_t *e = fe.env();
    fe.Rule(FAULT_SYNC, TDB_ERR_IO, "f", 2);  // the second sync fails
    env_file_t *f;
    ASSERT_EQ(e->open_writable(e, d.file("f").c_str(), &f), TDB_OK);
    ASSERT_EQ(e->sync_dir(e, d.path().c_str()), TDB_OK);
    ASSERT_EQ(env_append(f, "aaa", 3), TDB_OK);
    ASSERT_EQ(env_sync(f), TDB_OK);
    ASSERT_EQ(env_append(f, "bbb", 3), TDB_OK);
    EXPECT_EQ(env_sync(f), TDB_ERR_IO);
    ASSERT_EQ(env_append(f, "ccc", 3), TDB_OK);
    EXPECT_EQ(env_sync(f), TDB_OK);  // "succeeds", like Linux after a lost writeback
    env_close(f);
    ASSERT_EQ(fault_env_power_loss(fe.fe), TDB_OK);
    EXPECT_EQ(Slurp(d.file("f")), "aaa");
    EXPECT_EQ(fe.Stats().injected[FAULT_SYNC], 1u);
}

TEST(FaultEnv, RulesByCallNumberCountAndPath) {
    TempDir d;
    FaultEnv fe;
    env_t *e = fe.env();
    fe.Rule(FAULT_APPEND, TDB_ERR_NO_SPACE, ".log", 3, 2);  // 3rd and 4th append to *.log
    env_file_t *lg, *other;
    ASSERT_EQ(e->open_writable(e, d.file("1.log").c_str(), &lg), TDB_OK);
    ASSERT_EQ(e->open_writable(e, d.file("1.sst").c_str(), &other), TDB_OK);
    std::vector<int> got;
    for (int i = 0; i < 6; i++) {
        got.push_back(env_append(lg, "r", 1));
        EXPECT_EQ(env_append(other, "s", 1), TDB_OK);
    }
    EXPECT_EQ(got, (std::vector<int>{0, 0, TDB_ERR_NO_SPACE, TDB_ERR_NO_SPACE, 0, 0}));
    EXPECT_NE(std::string(tdb_last_error()).find("injected"), std::string::npos);
    env_close(lg);
    env_close(other);
    EXPECT_EQ(Slurp(d.file("1.log")), "rrrr");  // failed appends wrote nothing
    fault_stats_t s = fe.Stats();
    EXPECT_EQ(s.calls[FAULT_APPEND], 12u);
    EXPECT_EQ(s.injected[FAULT_APPEND], 2u);
    EXPECT_EQ(s.injected_total, 2u);
}

TEST(FaultEnv, ProbabilityIsSeededAndPartialAppendsWriteAPrefix) {
    auto run = [](uint64_t seed) {
        TempDir d;
        FaultEnv fe(seed);
        env_t *e = fe.env();
        fe.Rule(FAULT_APPEND, TDB_ERR_IO, nullptr, 0, 0, 0.3, 1);
        env_file_t *f;
        EXPECT_EQ(e->open_writable(e, d.file("f").c_str(), &f), TDB_OK);
        std::string pattern;
        size_t expect_len = 0;
        for (int i = 0; i < 200; i++) {
            int rc = env_append(f, "0123456789", 10);
            pattern += rc == TDB_OK ? 'o' : 'x';
            uint64_t sz;
            env_fsize(f, &sz);
            if (rc == TDB_OK) expect_len += 10;
            else EXPECT_LT(sz - expect_len, 10u);  // a strict prefix was written
            expect_len = sz;
        }
        env_close(f);
        return pattern;
    };
    std::string a = run(7), b = run(7), c = run(8);
    EXPECT_EQ(a, b);
    EXPECT_NE(a, c);
    size_t fails = std::count(a.begin(), a.end(), 'x');
    EXPECT_GT(fails, 30u);
    EXPECT_LT(fails, 100u);
}

TEST(FaultEnv, SpaceBudgetFailsAppendsUntilSpaceReturns) {
    TempDir d;
    FaultEnv fe;
    env_t *e = fe.env();
    fault_env_set_space(fe.fe, 25);
    env_file_t *f;
    ASSERT_EQ(e->open_writable(e, d.file("f").c_str(), &f), TDB_OK);
    EXPECT_EQ(env_append(f, "0123456789", 10), TDB_OK);
    EXPECT_EQ(env_append(f, "0123456789", 10), TDB_OK);
    EXPECT_EQ(env_append(f, "0123456789", 10), TDB_ERR_NO_SPACE);  // 5 bytes fit
    EXPECT_EQ(env_append(f, "x", 1), TDB_ERR_NO_SPACE);
    fault_env_set_space(fe.fe, UINT64_MAX);
    EXPECT_EQ(env_append(f, "y", 1), TDB_OK);
    env_close(f);
    EXPECT_EQ(Slurp(d.file("f")), "01234567890123456789" "01234" "y");
    EXPECT_EQ(fe.Stats().injected[FAULT_APPEND], 2u);
}

TEST(FaultEnv, CrashAfterNthMutationAndTornLoss) {
    TempDir d;
    FaultEnv fe(3);
    env_t *e = fe.env();
    fault_env_set_loss_mode(fe.fe, FAULT_LOSS_TORN);
    env_file_t *f;
    ASSERT_EQ(e->open_writable(e, d.file("f").c_str(), &f), TDB_OK);  // mutation 1
    ASSERT_EQ(e->sync_dir(e, d.path().c_str()), TDB_OK);             // 2
    std::string all;
    for (int i = 0; i < 10; i++) all += tdbtest::Value(i, 100);
    ASSERT_EQ(env_append(f, all.data(), 500), TDB_OK);  // 3
    ASSERT_EQ(env_sync(f), TDB_OK);                      // 4
    ASSERT_EQ(env_append(f, all.data() + 500, 500), TDB_OK);
    fault_env_crash_after(fe.fe, 2);  // the 2nd mutation from now
    EXPECT_EQ(env_append(f, "zz", 2), TDB_OK);
    EXPECT_EQ(env_append(f, "zz", 2), TDB_ERR_IO);
    EXPECT_TRUE(fault_env_is_down(fe.fe));
    env_close(f);
    std::string left = Slurp(d.file("f"));
    EXPECT_GE(left.size(), 500u);
    EXPECT_LE(left.size(), 1002u);
    EXPECT_EQ(left, (all + "zz").substr(0, left.size()));  // a prefix, never garbage
}

}  // namespace
