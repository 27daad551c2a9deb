/*
 * util/pinned: memory for long-lived metadata, kept out of malloc's arenas.
 *
 * A table's index and filter live as long as the table is open, and tables
 * are opened by whichever thread first reads them. Inside a server, malloc
 * puts such allocations in that thread's arena between the server's own
 * large temporary buffers (glibc's mmap threshold rises to the size of the
 * largest buffer freed, so after MariaDB frees a 16 MiB temporary table
 * even a 2 MiB index is carved from an arena): the long-lived block then
 * keeps the freed memory around it resident.
 *
 * Invariants
 *  - An allocation of at least PINNED_MMAP_MIN bytes is a mapping of its
 *    own, returned to the system by pinned_free; smaller ones are malloc's.
 *  - Every allocation is 16-byte aligned and carries a 16-byte header (its
 *    mapping's length, 0 for malloc), so pinned_free needs no size.
 *  - Under AddressSanitizer everything is malloc's (bounds still checked).
 */
#ifndef TDB_UTIL_PINNED_H
#define TDB_UTIL_PINNED_H

#include <stddef.h>

#define PINNED_MMAP_MIN ((size_t)64 << 10)

/* n bytes (n may be 0), or NULL when out of memory. */
void *pinned_alloc(size_t n);
/* A copy of n bytes of src, or NULL when out of memory. */
void *pinned_dup(const void *src, size_t n);
/* Free what pinned_alloc/pinned_dup returned (NULL: no-op). */
void pinned_free(void *p);

#endif
