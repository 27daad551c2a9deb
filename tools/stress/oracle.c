/*
 * oracle: the expected state of the database, in a file mapped MAP_SHARED
 * outside the database directory. Layout: oracle_hdr_t, then ncf * nkeys
 * 64-bit state words (stress.h). Stores into the mapping reach the page
 * cache at once, so they survive kill -9 of the process; oracle_sync makes
 * them durable against a machine crash as well.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stress.h"

#define ORACLE_MAGIC "TDBORCL1"
#define ORACLE_VERSION 1u

/* Bytes of an oracle of this shape. */
static size_t oracle_bytes(uint32_t ncf, uint32_t nkeys) {
    return sizeof(oracle_hdr_t) + (size_t)ncf * nkeys * sizeof(uint64_t);
}

/* Create a fresh oracle atomically: a temp file gets the header and the
 * all-absent state, is synced, then renamed over path (a crash while
 * creating leaves either no oracle or a whole one). */
static int oracle_create(const char *path, uint32_t ncf, uint32_t nkeys) {
    char tmp[4200];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", path) >= sizeof tmp) return -1;
    int fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 || ftruncate(fd, (off_t)oracle_bytes(ncf, nkeys)) != 0) {
        fprintf(stderr, "oracle %s: cannot create: %s\n", tmp, strerror(errno));
        if (fd >= 0) close(fd);
        return -1;
    }
    oracle_hdr_t h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, ORACLE_MAGIC, 8);
    h.version = ORACLE_VERSION;
    h.ncf = ncf;
    h.nkeys = nkeys;
    h.clean = 1;
    int ok = pwrite(fd, &h, sizeof h, 0) == (ssize_t)sizeof h && fsync(fd) == 0;
    close(fd);
    if (!ok || rename(tmp, path) != 0) {
        fprintf(stderr, "oracle %s: cannot create: %s\n", path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}

/* Map the oracle at path, creating an all-absent one if missing. */
int oracle_open(const char *path, uint32_t ncf, uint32_t nkeys, oracle_t *o, int *created) {
    memset(o, 0, sizeof *o);
    o->fd = -1;
    *created = 0;
    size_t want = oracle_bytes(ncf, nkeys);
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) {
        if (oracle_create(path, ncf, nkeys) != 0) return -1;
        *created = 1;
        fd = open(path, O_RDWR | O_CLOEXEC);
    }
    if (fd < 0) {
        fprintf(stderr, "oracle %s: cannot open: %s\n", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || (size_t)st.st_size != want) {
        fprintf(stderr, "oracle %s: size %lld does not match --cfs/--keys (%zu expected)\n", path,
                (long long)st.st_size, want);
        close(fd);
        return -1;
    }
    void *p = mmap(NULL, want, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        fprintf(stderr, "oracle %s: mmap: %s\n", path, strerror(errno));
        close(fd);
        return -1;
    }
    o->fd = fd;
    o->size = want;
    o->h = (oracle_hdr_t *)p;
    o->slots = (uint64_t *)((char *)p + sizeof(oracle_hdr_t));
    if (memcmp(o->h->magic, ORACLE_MAGIC, 8) != 0 || o->h->version != ORACLE_VERSION || o->h->ncf != ncf ||
        o->h->nkeys != nkeys) {
        fprintf(stderr, "oracle %s: header does not match --cfs=%u --keys=%u\n", path, ncf, nkeys);
        oracle_close(o);
        return -1;
    }
    return 0;
}

/* Sync and unmap. */
void oracle_close(oracle_t *o) {
    if (o->h) {
        oracle_sync(o);
        munmap(o->h, o->size);
    }
    if (o->fd >= 0) close(o->fd);
    memset(o, 0, sizeof *o);
    o->fd = -1;
}

/* msync the whole mapping. */
void oracle_sync(oracle_t *o) {
    if (o->h) msync(o->h, o->size, MS_SYNC);
}
