/*
 * bench_c.c: the C side of the Python binding's overhead benchmark
 * (bindings/python/bench/run.sh). One thread, fresh database in DIR:
 *   fillrandom  NUM tdb_put of 16-byte keys (8-byte big-endian index padded
 *               with '0') in the order i*1000003 mod NUM, 100-byte values
 *               from a pool of 1024 incompressible values (splitmix64);
 *   (tdb_flush + tdb_wait_idle, not timed)
 *   readrandom  NUM tdb_get in the order (i*7919 + 13) mod NUM.
 * bench_py.py does exactly the same through the binding. Prints one line
 * per workload: name, wall us/op, CPU us/op of the calling thread.
 * usage: bench_c DIR NUM [VALUE_SIZE]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tidesdb/tidesdb.h>

#define KEY_SIZE 16
#define POOL 1024

/* splitmix64 step. */
static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Key of index i. */
static void make_key(char *k, uint64_t i)
{
    for (int b = 7; b >= 0; b--, i >>= 8)
        k[b] = (char)(i & 0xff);
    memset(k + 8, '0', KEY_SIZE - 8);
}

/* Wall seconds and the calling thread's CPU seconds now (the binding's cost
 * is all on the calling thread; flushes and compactions run on others). */
static void now(double *wall, double *cpu)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    *wall = ts.tv_sec + ts.tv_nsec / 1e9;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    *cpu = ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Exit with the library's message. */
static void die(const char *what, int rc)
{
    fprintf(stderr, "bench_c: %s: %s (%s)\n", what, tdb_strerror(rc), tdb_last_error());
    exit(1);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s DIR NUM [VALUE_SIZE]\n", argv[0]);
        return 2;
    }
    const char *dir = argv[1];
    uint64_t num = strtoull(argv[2], NULL, 10);
    size_t vsize = argc > 3 ? strtoul(argv[3], NULL, 10) : 100;
    unsigned char *pool = malloc(POOL * vsize + 8);
    uint64_t seed = 301;
    for (size_t i = 0; i < POOL * vsize; i += 8) {
        uint64_t r = splitmix(&seed);
        memcpy(pool + i, &r, 8);
    }
    /* Keys are generated before the clock starts, as the Python side does. */
    char *fill = malloc(num * KEY_SIZE), *read = malloc(num * KEY_SIZE);
    for (uint64_t i = 0; i < num; i++) {
        make_key(fill + i * KEY_SIZE, (i * 1000003u) % num);
        make_key(read + i * KEY_SIZE, (i * 7919u + 13) % num);
    }
    tdb_config_t cfg;
    tdb_config_default(&cfg);
    cfg.log_level = TDB_LOG_WARN;
    cfg.default_cf.sync_mode = TDB_SYNC_NONE;
    tdb_t *db;
    tdb_cf_t *cf;
    int rc = tdb_open(dir, &cfg, &db);
    if (rc != TDB_OK)
        die("open", rc);
    if ((rc = tdb_get_cf(db, TDB_DEFAULT_CF, &cf)) != TDB_OK)
        die("get_cf", rc);

    double w0, c0, w1, c1;
    now(&w0, &c0);
    for (uint64_t i = 0; i < num; i++) {
        rc = tdb_put(db, cf, fill + i * KEY_SIZE, KEY_SIZE, pool + (i & (POOL - 1)) * vsize, vsize, 0);
        if (rc != TDB_OK)
            die("put", rc);
    }
    now(&w1, &c1);
    printf("fillrandom %.4f %.4f\n", (w1 - w0) * 1e6 / num, (c1 - c0) * 1e6 / num);
    if ((rc = tdb_flush(db, NULL)) != TDB_OK || (rc = tdb_wait_idle(db)) != TDB_OK)
        die("flush", rc);

    uint64_t found = 0;
    now(&w0, &c0);
    for (uint64_t i = 0; i < num; i++) {
        void *v;
        size_t vl;
        rc = tdb_get(db, cf, NULL, read + i * KEY_SIZE, KEY_SIZE, &v, &vl);
        if (rc == TDB_OK) {
            found++;
            tdb_free(v);
        } else if (rc != TDB_ERR_NOT_FOUND) {
            die("get", rc);
        }
    }
    now(&w1, &c1);
    printf("readrandom %.4f %.4f\n", (w1 - w0) * 1e6 / num, (c1 - c0) * 1e6 / num);
    if (found != num) {
        fprintf(stderr, "bench_c: found %llu of %llu keys\n", (unsigned long long)found,
                (unsigned long long)num);
        return 1;
    }
    if ((rc = tdb_close(db)) != TDB_OK)
        die("close", rc);
    free(pool);
    free(fill);
    free(read);
    return 0;
}
