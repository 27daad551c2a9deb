// util/sysmem: the memory limit read from cgroup v1 and v2 trees (faked in a
// temporary directory), and the default memory budget derived from it.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <sys/stat.h>

#include "testutil.h"
#include "tidesdb/tidesdb.h"

extern "C" {
#include "util/sysmem.h"
}

namespace {

void Write(const std::string &path, const std::string &text) {
    std::ofstream f(path);
    f << text;
}

void MkdirP(const std::string &path) {
    for (size_t i = 1; i <= path.size(); i++)
        if (i == path.size() || path[i] == '/') mkdir(path.substr(0, i).c_str(), 0755);
}

TEST(SysMem, CgroupV2TakesTheSmallestLimitOnThePath) {
    tdbtest::TempDir d;
    std::string v2 = d.file("v2");
    MkdirP(v2 + "/a/b");
    Write(v2 + "/a/b/memory.max", "max\n");
    Write(v2 + "/a/memory.max", "805306368\n");
    Write(d.file("cgroup"), "0::/a/b\n");
    EXPECT_EQ(sysmem_cgroup_limit(d.file("cgroup").c_str(), v2.c_str(), d.file("v1").c_str()), 805306368u);
    Write(v2 + "/a/b/memory.max", "268435456\n");  // tighter below
    EXPECT_EQ(sysmem_cgroup_limit(d.file("cgroup").c_str(), v2.c_str(), d.file("v1").c_str()), 268435456u);
}

TEST(SysMem, CgroupV1ReadsTheMemoryControllersPath) {
    tdbtest::TempDir d;
    std::string v1 = d.file("v1");
    MkdirP(v1 + "/srv/db");
    MkdirP(v1 + "/other");
    Write(v1 + "/memory.limit_in_bytes", "9223372036854771712\n");  // v1's "no limit"
    Write(v1 + "/srv/db/memory.limit_in_bytes", "536870912\n");
    Write(v1 + "/other/memory.limit_in_bytes", "1048576\n");  // not this process's cgroup
    Write(d.file("cgroup"), "12:cpu,cpuacct:/other\n11:blkio,memory:/srv/db\n1:name=systemd:/other\n");
    EXPECT_EQ(sysmem_cgroup_limit(d.file("cgroup").c_str(), d.file("v2").c_str(), v1.c_str()), 536870912u);
}

TEST(SysMem, NoLimitAnywhereIsUnlimited) {
    tdbtest::TempDir d;
    Write(d.file("cgroup"), "0::/\n");
    EXPECT_EQ(sysmem_cgroup_limit(d.file("cgroup").c_str(), d.file("v2").c_str(), d.file("v1").c_str()), UINT64_MAX);
    EXPECT_EQ(sysmem_cgroup_limit(d.file("missing").c_str(), d.file("v2").c_str(), d.file("v1").c_str()),
              UINT64_MAX);
    Write(d.file("cgroup"), "garbage without colons\n0::\n");
    EXPECT_EQ(sysmem_cgroup_limit(d.file("cgroup").c_str(), d.file("v2").c_str(), d.file("v1").c_str()), UINT64_MAX);
}

TEST(SysMem, TheDefaultBudgetIsHalfOfWhatTheProcessMayUse) {
    uint64_t lim = sysmem_limit();
    ASSERT_GT(lim, 0u);
    EXPECT_LE(lim, sysmem_physical());
    tdbtest::TempDir dir;
    tdb_config_t c;
    tdb_config_default(&c);
    c.max_memory_usage = 0;
    c.log_level = TDB_LOG_NONE;
    tdb_t *db;
    ASSERT_EQ(tdb_open(dir.path().c_str(), &c, &db), TDB_OK);
    tdb_stats_t st;
    ASSERT_EQ(tdb_get_stats(db, nullptr, &st), TDB_OK);
    EXPECT_EQ(st.memory_budget, lim / 2);
    tdb_close(db);
}

}  // namespace
