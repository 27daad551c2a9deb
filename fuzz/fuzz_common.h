/*
 * fuzz_common: helpers shared by the libFuzzer targets in fuzz/.
 *
 * memenv is a read-only env_t holding one file in memory (the fuzz input),
 * whatever its path: readers that take (env, path) are fuzzed without
 * touching the disk. Every other env operation fails.
 *
 * Every target must return an error for bad input, never crash, hang or
 * over-allocate; scripts/fuzz.sh runs them with -rss_limit_mb=2048
 * -timeout=10.
 */
#ifndef TDB_FUZZ_COMMON_H
#define TDB_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "env/env.h"

/* Point the in-memory env at data (not copied: it must outlive the use). */
env_t *memenv_set(const void *data, size_t size);

/* Abort with a message: a broken property (not an input error). */
void fuzz_fail(const char *what) __attribute__((noreturn));

/* Read every byte of a slice so ASan checks its bounds. */
uint64_t fuzz_touch(const void *p, size_t n);

#endif
