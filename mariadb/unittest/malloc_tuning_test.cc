/*
 * malloc_tuning_test: tidesdb_malloc_threshold keeps a thread's freed
 * memory from staying resident after a server-like start-up.
 *
 * Each case runs in a child process of its own (a death test), because the
 * thresholds are process-wide and glibc never makes a fixed threshold
 * adaptive again. The child frees a 19 MiB block first, as MariaDB's
 * ha_recover does at every start, then a new thread (its own arena)
 * allocates, touches and frees a working set; the child exits 0 when the
 * memory left resident is what the case expects, and says what it measured
 * otherwise.
 */
#include "malloc_tuning.h"

#include <gtest/gtest.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thread>
#include <vector>

using tidesql::MallocTuning;
using tidesql::malloc_tuning_apply;

namespace {

/* Anonymous resident memory of this process, in KiB. */
long rss_anon_kib() {
  FILE *f = fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  long kib = -1;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "RssAnon: %ld kB", &kib) == 1) break;
  fclose(f);
  return kib;
}

/* What MariaDB's start-up does to glibc: malloc and free a 19 MiB block
 * (a mapping of its own, so freeing it raises the thresholds if adaptive). */
void server_startup_free() {
  size_t n = (size_t)19 << 20;
  char *p = (char *)malloc(n);
  if (!p) exit(3);
  memset(p, 1, n);
  __asm__ __volatile__("" : : "r"(p) : "memory");
  free(p);
}

/* In a new thread: allocate `count` blocks of `size` bytes, touch them,
 * free them all; return the KiB still resident afterwards (measured after
 * the thread ended). */
long retained_after_thread(size_t size, size_t count) {
  long before = rss_anon_kib();
  std::thread t([&] {
    std::vector<char *> v;
    v.reserve(count);
    for (size_t i = 0; i < count; i++) {
      char *p = (char *)malloc(size);
      if (!p) exit(3);
      memset(p, 2, size);
      v.push_back(p);
    }
    for (char *p : v) free(p);
  });
  t.join();
  return rss_anon_kib() - before;
}

/* Child body: exit 0 when `ok(retained)`, else print and exit 1. */
template <class Ok>
void child(size_t threshold, size_t size, size_t count, Ok ok) {
  MallocTuning r = malloc_tuning_apply(threshold);
  if (threshold != 0 && r != MallocTuning::applied) {
    fprintf(stderr, "tuning: %s\n", tidesql::malloc_tuning_name(r));
    exit(2);
  }
  server_startup_free();
  long kept = retained_after_thread(size, count);
  if (ok(kept)) exit(0);
  fprintf(stderr, "retained %ld KiB after freeing %zu x %zu bytes (threshold %zu)\n", kept, count, size,
          threshold);
  exit(1);
}

/* Runs in a child, so probing glibc here tunes nothing in the parent. */
bool tunable() {
  pid_t pid = fork();
  if (pid == 0) _exit(malloc_tuning_apply((size_t)128 << 10) == MallocTuning::applied ? 0 : 1);
  int st = 0;
  if (pid < 0 || waitpid(pid, &st, 0) != pid) return false;
  return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

}  // namespace

class MallocTuningTest : public ::testing::Test {
 protected:
  void SetUp() override {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    if (!tunable()) GTEST_SKIP() << "malloc is not glibc's (sanitizer or preloaded allocator)";
  }
};

/* The problem, as glibc behaves without the setting: 24 MiB of 512 KiB
 * blocks freed by a thread stay resident in its arena. If this fails on
 * a future glibc, the setting may no longer be needed. */
TEST_F(MallocTuningTest, AdaptiveThresholdsKeepFreedBlocks) {
  EXPECT_EXIT(child(0, 512 << 10, 48, [](long kept) { return kept >= 16 << 10; }), ::testing::ExitedWithCode(0), "");
}

/* Fixed at 128 KiB: the same blocks are mappings of their own and go back
 * to the kernel when freed. */
TEST_F(MallocTuningTest, FixedThresholdReturnsLargeBlocks) {
  EXPECT_EXIT(child(128 << 10, 512 << 10, 48, [](long kept) { return kept < 4 << 10; }),
              ::testing::ExitedWithCode(0), "");
}

/* Fixed at 128 KiB: 24 MiB of small blocks freed by a thread join its
 * arena's top, which is trimmed past the threshold (adaptive, the top may
 * keep up to 38 MiB). */
TEST_F(MallocTuningTest, FixedThresholdTrimsArenaTop) {
  EXPECT_EXIT(child(128 << 10, 256, (size_t)24 << 12, [](long kept) { return kept < 4 << 10; }),
              ::testing::ExitedWithCode(0), "");
}

/* Values glibc cannot take are refused, not half applied. */
TEST_F(MallocTuningTest, AboveGlibcMaximumIsRefused) {
  EXPECT_EXIT(exit(malloc_tuning_apply(tidesql::MALLOC_THRESHOLD_MAX + 1) == MallocTuning::refused ? 0 : 1),
              ::testing::ExitedWithCode(0), "");
}
