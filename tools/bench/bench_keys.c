/*
 * bench_keys.c: key encoding, value pool, random numbers and the live-key set
 * (see bench_keys.h).
 */
#include "bench_keys.h"

#include <stdlib.h>
#include <string.h>

/* One splitmix64 step: seeds the generator state. */
static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Seed the generator. */
void rng_seed(rng_t *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&seed);
}

/* Rotate left. */
static inline uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

/* Next 64 random bits (xoshiro256**). */
uint64_t rng_next(rng_t *r)
{
    uint64_t *s = r->s;
    uint64_t out = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return out;
}

/* Uniform in [0, n). */
uint64_t rng_uniform(rng_t *r, uint64_t n)
{
    return (uint64_t)(((unsigned __int128)rng_next(r) * n) >> 64);
}

/* Key index i as 8 big-endian bytes, padded with '0'. */
void key_encode(char *buf, size_t key_size, uint64_t i)
{
    for (int b = 7; b >= 0; b--) {
        buf[b] = (char)(i & 0xff);
        i >>= 8;
    }
    if (key_size > 8)
        memset(buf + 8, '0', key_size - 8);
}

/* Key index of an encoded key. */
uint64_t key_decode(const char *buf)
{
    uint64_t i = 0;
    for (int b = 0; b < 8; b++)
        i = (i << 8) | (unsigned char)buf[b];
    return i;
}

/* Build the pool: 100-byte chunks of 50 random printable bytes, each
 * followed by a copy of itself. */
int value_pool_init(value_pool_t *p, size_t value_size, uint64_t seed)
{
    size_t size = 1u << 20;
    while (size < 4 * value_size)
        size *= 2;
    p->data = malloc(size);
    if (!p->data)
        return -1;
    p->size = size;
    rng_t r;
    rng_seed(&r, seed ^ 0x76616c7565ull);
    for (size_t off = 0; off < size; off += 100) {
        size_t chunk = size - off < 100 ? size - off : 100;
        size_t half = (chunk + 1) / 2;
        for (size_t i = 0; i < half; i++)
            p->data[off + i] = (char)(' ' + rng_uniform(&r, 95));
        memcpy(p->data + off + half, p->data + off, chunk - half);
    }
    return 0;
}

/* Release the pool. */
void value_pool_free(value_pool_t *p)
{
    free(p->data);
    p->data = NULL;
}

/* Place a cursor at a start offset derived from start. */
void value_cursor_init(value_cursor_t *c, const value_pool_t *p, uint64_t start)
{
    c->pool = p;
    c->pos = (size_t)(start % p->size);
}

/* Next value_size bytes, wrapping to the start of the pool. */
const char *value_next(value_cursor_t *c, size_t value_size)
{
    if (c->pos + value_size > c->pool->size)
        c->pos = 0;
    const char *v = c->pool->data + c->pos;
    c->pos += value_size;
    return v;
}

/* Allocate an empty set of num indexes. */
int live_init(live_set_t *l, uint64_t num)
{
    l->num = num;
    l->words = calloc((size_t)(num + 63) / 64 + 1, sizeof(uint64_t));
    return l->words ? 0 : -1;
}

/* Release the set. */
void live_free(live_set_t *l)
{
    free(l->words);
    l->words = NULL;
}

/* Mark every index absent. */
void live_clear_all(live_set_t *l)
{
    memset(l->words, 0, ((size_t)(l->num + 63) / 64 + 1) * sizeof(uint64_t));
}

/* Mark index i live (atomic). */
void live_set(live_set_t *l, uint64_t i)
{
    __atomic_fetch_or(&l->words[i / 64], 1ull << (i % 64), __ATOMIC_RELAXED);
}

/* Mark index i absent (atomic). */
void live_unset(live_set_t *l, uint64_t i)
{
    __atomic_fetch_and(&l->words[i / 64], ~(1ull << (i % 64)), __ATOMIC_RELAXED);
}

/* Number of live indexes. */
uint64_t live_count(const live_set_t *l)
{
    uint64_t n = 0;
    size_t words = (size_t)(l->num + 63) / 64 + 1;
    for (size_t i = 0; i < words; i++)
        n += (uint64_t)__builtin_popcountll(
            __atomic_load_n(&l->words[i], __ATOMIC_RELAXED));
    return n;
}
