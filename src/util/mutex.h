/*
 * util/mutex: mutexes for short critical sections.
 *
 * glibc's default mutex sleeps in the kernel (futex) as soon as it finds
 * the lock taken. Where the holder keeps it for well under a microsecond
 * (a WAL append, a superversion reference, a cache probe), that sleep and
 * the wake-up cost tens of microseconds on a loaded machine: two writers
 * colliding on the WAL lock put a 2-thread fillrandom's p99 at 43 us
 * against 9 us for one thread. An adaptive mutex spins briefly first.
 * Elsewhere (no glibc) this is a plain mutex.
 */
#ifndef TDB_UTIL_MUTEX_H
#define TDB_UTIL_MUTEX_H

#include <pthread.h>

/* pthread_mutex_init with the adaptive type where available; 0 or an errno. */
int tdb_mutex_init_short(pthread_mutex_t *mu);

#endif
