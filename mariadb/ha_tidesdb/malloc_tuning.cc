/* malloc_tuning: fixed glibc malloc thresholds (see malloc_tuning.h). */
#include "malloc_tuning.h"

#include <dlfcn.h>
#include <limits.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace tidesql {

#if defined(__GLIBC__)
/* Whether the process's malloc is glibc's own: a preloaded allocator
 * (jemalloc, tcmalloc) or a sanitizer interposes its own symbol, and glibc's
 * thresholds then govern nothing. */
static bool malloc_is_glibc() {
  void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
  if (!libc) return false;
  void *own = dlsym(libc, "malloc");
  void *used = dlsym(RTLD_DEFAULT, "malloc");
  dlclose(libc);
  return own && own == used;
}
#endif

MallocTuning malloc_tuning_apply(size_t threshold) {
  if (threshold == 0) return MallocTuning::off;
#if defined(__GLIBC__)
  if (!malloc_is_glibc()) return MallocTuning::other;
  static_assert(MALLOC_THRESHOLD_MAX <= (size_t)INT_MAX, "mallopt takes an int");
  if (threshold > MALLOC_THRESHOLD_MAX) return MallocTuning::refused;
  if (mallopt(M_MMAP_THRESHOLD, (int)threshold) != 1) return MallocTuning::refused;
  if (mallopt(M_TRIM_THRESHOLD, (int)threshold) != 1) return MallocTuning::refused;
  malloc_trim(0);
  return MallocTuning::applied;
#else
  return MallocTuning::other;
#endif
}

const char *malloc_tuning_name(MallocTuning t) {
  switch (t) {
    case MallocTuning::applied:
      return "fixed";
    case MallocTuning::off:
      return "left adaptive (tidesdb_malloc_threshold = 0)";
    case MallocTuning::other:
      return "not tuned (malloc is not glibc's)";
    case MallocTuning::refused:
      return "refused by glibc";
  }
  return "unknown";
}

}  // namespace tidesql
