/*
 * util/pinned: long-lived allocations outside malloc's arenas (invariants in
 * pinned.h).
 */
#include "util/pinned.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define HDR 16u

#if defined(__SANITIZE_ADDRESS__)
#define PINNED_MAP 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PINNED_MAP 0
#endif
#endif
#ifndef PINNED_MAP
#define PINNED_MAP 1
#endif

void *pinned_alloc(size_t n) {
    if (n > SIZE_MAX - HDR - 4096) return NULL;
    size_t total = n + HDR;
    char *p;
    if (PINNED_MAP && n >= PINNED_MMAP_MIN) {
        total = (total + 4095) & ~(size_t)4095;
        p = (char *)mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) return NULL;
    } else {
        if (!(p = (char *)malloc(total))) return NULL;
        total = 0; /* malloc's */
    }
    memcpy(p, &total, sizeof total);
    return p + HDR;
}

void *pinned_dup(const void *src, size_t n) {
    void *p = pinned_alloc(n);
    if (p && n) memcpy(p, src, n);
    return p;
}

void pinned_free(void *p) {
    if (!p) return;
    char *base = (char *)p - HDR;
    size_t maplen;
    memcpy(&maplen, base, sizeof maplen);
    if (maplen) munmap(base, maplen);
    else free(base);
}
