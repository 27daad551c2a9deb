/*
 * util/prefetch: cache prefetch hints over byte ranges. A hint reads
 * nothing and cannot fault, so a range may run past the end of the memory
 * it is about (a guessed entry size): the extra lines are only loaded.
 */
#ifndef TDB_UTIL_PREFETCH_H
#define TDB_UTIL_PREFETCH_H

#include <stdint.h>

#define TDB_CACHE_LINE 64

/* The most of a scan's next entry, its size guessed from the current
 * one's, that the memtable and block iterators prefetch. */
#define TDB_PREFETCH_ENTRY_MAX 256

/* Start loading every cache line that holds a byte of [from, to). */
static inline void tdb_prefetch_range(const void *from, const void *to) {
    for (uintptr_t l = (uintptr_t)from & ~(uintptr_t)(TDB_CACHE_LINE - 1); l < (uintptr_t)to; l += TDB_CACHE_LINE)
        __builtin_prefetch((const void *)l);
}

#endif
