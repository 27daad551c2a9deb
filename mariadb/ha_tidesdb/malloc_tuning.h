/*
 * malloc_tuning: fixed glibc malloc thresholds for the server process
 * (tidesdb_malloc_threshold).
 *
 * glibc adapts two thresholds as a process runs: a malloc'd block of at
 * least the mmap threshold (128 KiB at start) gets its own mapping, and
 * freeing such a block raises the threshold to its size (up to 32 MiB) and
 * the trim threshold (the free memory an arena keeps at its top) to twice
 * that. MariaDB's start-up frees one such block in every server (ha_recover's
 * XID list, about 19 MiB), so afterwards blocks of up to 19 MiB come from the
 * per-thread arenas (up to 8 per core) and each arena keeps up to 38 MiB it
 * no longer uses. Under a TPC-C load past the cache that was about 100 MiB of
 * the server's anonymous memory, enough for the kernel to kill it at a
 * container's limit.
 *
 * Fixing both thresholds at one value (mallopt) turns the adaptation off for
 * the whole process: blocks of at least the value are unmapped when freed,
 * and an arena gives back a free top larger than it. The default (4 MiB,
 * sysvars.cc) keeps what MariaDB allocates and frees per statement (2 MiB
 * sort buffers, 1 MiB blocks of in-memory temporary tables) in the arenas:
 * at 128 KiB each was a mapping of its own and oltp_read_write lost 15%.
 * Nothing here depends on the server, so the unit test links this file alone.
 */
#ifndef TIDESQL_MALLOC_TUNING_H
#define TIDESQL_MALLOC_TUNING_H

#include <stddef.h>

namespace tidesql {

enum class MallocTuning {
  applied,   /* both thresholds fixed at the value */
  off,       /* value 0: glibc keeps its adaptive thresholds */
  other,     /* malloc is not glibc's (another allocator is preloaded, or a
                sanitizer's): nothing to tune */
  refused,   /* glibc refused the value (above its 32 MiB maximum) */
};

/* Largest threshold glibc accepts on 64-bit builds (HEAP_MAX_SIZE / 2). */
constexpr size_t MALLOC_THRESHOLD_MAX = (size_t)32 << 20;

/* Fix glibc's mmap and trim thresholds at `threshold` bytes (0: leave them)
 * and give back what the arenas hold free now. Process-wide; call once at
 * start-up, before other threads allocate much. */
MallocTuning malloc_tuning_apply(size_t threshold);

/* Words for the server log. */
const char *malloc_tuning_name(MallocTuning t);

}  // namespace tidesql

#endif
