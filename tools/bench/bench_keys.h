/*
 * bench_keys.h: the keys, values and random numbers every engine is fed.
 *
 * Keys: key index i in [0, num) is written as 8 big-endian bytes and padded
 * to key_size with '0' bytes, as RocksDB's db_bench does, so byte order
 * matches numeric order. Values: slices of a buffer built from 100-byte
 * chunks whose second half repeats the first (about 50% compressible, like
 * db_bench's generator). Same seed, same sequences, for every engine.
 */
#ifndef TDB_BENCH_KEYVAL_H
#define TDB_BENCH_KEYVAL_H

#include <stddef.h>
#include <stdint.h>

/* splitmix64-seeded xoshiro256** generator; one per thread. */
typedef struct rng {
    uint64_t s[4];
} rng_t;

void rng_seed(rng_t *r, uint64_t seed);
uint64_t rng_next(rng_t *r);
/* Uniform in [0, n) (n > 0), by multiply-shift. */
uint64_t rng_uniform(rng_t *r, uint64_t n);

/* Write key index i into buf (key_size >= 8 bytes). */
void key_encode(char *buf, size_t key_size, uint64_t i);
/* Key index of an encoded key (first 8 bytes). */
uint64_t key_decode(const char *buf);

/* Shared read-only pool of value bytes. */
typedef struct value_pool {
    char  *data;
    size_t size;
} value_pool_t;

int  value_pool_init(value_pool_t *p, size_t value_size, uint64_t seed);
void value_pool_free(value_pool_t *p);

/* A thread's cursor into the pool. */
typedef struct value_cursor {
    const value_pool_t *pool;
    size_t pos;
} value_cursor_t;

void value_cursor_init(value_cursor_t *c, const value_pool_t *p, uint64_t start);
/* Next value_size bytes of the pool. */
const char *value_next(value_cursor_t *c, size_t value_size);

/* Which key indexes are live (written and not deleted): a bitmap safe to
 * update from many threads. */
typedef struct live_set {
    uint64_t *words;
    uint64_t  num;
} live_set_t;

int  live_init(live_set_t *l, uint64_t num);
void live_free(live_set_t *l);
void live_clear_all(live_set_t *l);
void live_set(live_set_t *l, uint64_t i);
void live_unset(live_set_t *l, uint64_t i);
uint64_t live_count(const live_set_t *l);

#endif /* TDB_BENCH_KEYVAL_H */
