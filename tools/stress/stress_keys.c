/*
 * stress_keys: the keys and values tdb_stress writes. A key is "k" + the
 * 10-digit key index + a 0..15 byte suffix derived from the index (so keys
 * have several lengths and still sort by index). A value is
 *   fixed32 gen | fixed32 key index | u8 family | filler
 * whose length and filler are pure functions of (family, key, gen): a value
 * read back identifies exactly the write that produced it, and any damaged
 * byte is detected.
 */
#include <stdio.h>
#include <string.h>

#include "stress.h"

#define VALUE_HEADER 9u

/* A 64-bit mix of two words (splitmix64 finalizer). */
uint64_t stress_mix(uint64_t a, uint64_t b) {
    uint64_t z = a * 0x9E3779B97F4A7C15ull + b + 0x632BE59BD9B4E019ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Key bytes of index k (see the file comment). */
size_t stress_key(uint32_t k, char *buf) {
    int n = snprintf(buf, STRESS_KEY_MAX, "k%010u", k);
    uint64_t h = stress_mix(k, 0x6b6579);
    size_t suffix = (size_t)(h % 16);
    for (size_t i = 0; i < suffix; i++) {
        h = stress_mix(h, i);
        buf[n + (int)i] = (char)('a' + h % 26);
    }
    return (size_t)n + suffix;
}

/* Index of a key this tool writes, or -1. */
int64_t stress_key_parse(const char *p, size_t n, uint32_t nkeys) {
    if (n < 11 || p[0] != 'k') return -1;
    uint64_t k = 0;
    for (int i = 1; i <= 10; i++) {
        if (p[i] < '0' || p[i] > '9') return -1;
        k = k * 10 + (uint64_t)(p[i] - '0');
    }
    if (k >= nkeys) return -1;
    char buf[STRESS_KEY_MAX];
    size_t len = stress_key((uint32_t)k, buf);
    if (len != n || memcmp(buf, p, n) != 0) return -1;
    return (int64_t)k;
}

/* Value length of (cf, key, gen): mostly small, some around the separation threshold, a few large. */
size_t stress_value_len(uint32_t cf, uint32_t key, uint32_t gen, uint32_t max_value) {
    uint64_t h = stress_mix(stress_mix(cf, key), gen);
    uint64_t r = h % 1000, len;
    if (r < 800) len = 16 + (h >> 10) % 200;        /* small: inline in blocks */
    else if (r < 990) len = 300 + (h >> 10) % 1700; /* around the separation threshold */
    else len = 4000 + (h >> 10) % 28000;            /* large */
    if (max_value < VALUE_HEADER) max_value = VALUE_HEADER;
    if (len > max_value) len = max_value;
    if (len < VALUE_HEADER) len = VALUE_HEADER;
    return (size_t)len;
}

/* The value bytes of (cf, key, gen). */
void stress_value(uint32_t cf, uint32_t key, uint32_t gen, uint32_t max_value, char *buf, size_t len) {
    (void)max_value;
    memcpy(buf, &gen, 4);
    memcpy(buf + 4, &key, 4);
    buf[8] = (char)cf;
    rng_t r = {stress_mix(stress_mix(cf + 1, key), gen) | 1};
    uint64_t x = 0;
    for (size_t i = VALUE_HEADER; i < len; i++) {
        if ((i & 7) == 1 || i == VALUE_HEADER) x = rng_next(&r);
        /* 16-letter alphabet in runs: compressible, but not trivially */
        buf[i] = (char)('a' + ((x >> ((i & 7) * 4)) & 15) / (1 + (i & 1)));
    }
}

/* Is v exactly a value written for (cf, key)? Sets its generation. */
int stress_value_check(uint32_t cf, uint32_t key, const void *v, size_t n, uint32_t max_value, uint32_t *gen,
                       const char **why) {
    static __thread char scratch[64 * 1024];
    const char *p = (const char *)v;
    if (n < VALUE_HEADER) {
        *why = "value shorter than its header";
        return -1;
    }
    uint32_t g, k;
    memcpy(&g, p, 4);
    memcpy(&k, p + 4, 4);
    if (k != key || (unsigned char)p[8] != (cf & 0xff)) {
        *why = "value belongs to another key or family";
        return -1;
    }
    if (g > ST_GEN_MASK || stress_value_len(cf, key, g, max_value) != n) {
        *why = "value length does not match its generation";
        return -1;
    }
    if (n > sizeof scratch) {
        *why = "value longer than any written";
        return -1;
    }
    stress_value(cf, key, g, max_value, scratch, n);
    if (memcmp(scratch, p, n) != 0) {
        *why = "value bytes differ from what was written";
        return -1;
    }
    *gen = g;
    return 0;
}
