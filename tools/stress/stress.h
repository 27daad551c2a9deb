/*
 * tdb_stress: random operations on several threads against an expected-state
 * oracle kept outside the database (RocksDB db_stress style), checking every
 * read it makes. Design and the crash-verification rules:
 * docs/design/reliability.md.
 *
 * Invariants
 *  - The oracle (oracle.c) is a file mapped MAP_SHARED, so every store the
 *    process made survives kill -9. For each (family, key) it holds the state
 *    of the last acknowledged write and, while a write is in flight, the
 *    state that write will give the key ("pending"). Per thread it holds the
 *    keys of the thread's in-flight write and its phase (before issue, issued,
 *    acknowledged), so batch atomicity is checkable after a crash.
 *  - A key is written only while its stripe lock is held (locks taken in
 *    ascending stripe order), so a key has at most one write in flight and
 *    its generation numbers follow the acknowledgement order.
 *  - Every value encodes (family, key, generation) and its bytes are a pure
 *    function of them: a read tells exactly which write it sees.
 *  - Reads take no key lock: a read is checked against the oracle window
 *    [state loaded before the read, state loaded after] (see window_check).
 *  - Ops run under db_lock shared; reopen (and fault recovery) takes it
 *    exclusively, so no operation sees a half-reopened database.
 *  - All randomness comes from per-thread generators seeded from --seed, the
 *    run number and the thread index.
 */
#ifndef TDB_STRESS_H
#define TDB_STRESS_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#include "testing/env_fault.h"
#include "tidesdb/tidesdb.h"

#ifdef __cplusplus
extern "C" {
#endif

#define STRESS_MAX_THREADS 64
#define STRESS_MAX_CFS 16
#define STRESS_MAX_BATCH 32
#define STRESS_NSTRIPES 1024

/* ---- options ---- */
typedef struct stress_opts {
    char db[4096];
    char expected[4096];
    uint64_t ops;          /* total over all threads; 0 = until --duration */
    double duration;       /* seconds; 0 = until --ops */
    int threads;
    uint32_t keys;         /* per family */
    int cfs;
    int sync;              /* TDB_SYNC_* */
    uint64_t seed;
    int verify_only;
    int destroy;
    int unified;
    uint64_t write_buffer_size;
    uint32_t max_value;    /* upper bound of value sizes */
    int compression;
    double read_fault_prob; /* >0: env_fault injects read EIO with this p */
    double write_fault_prob;/* >0: env_fault injects append/sync EIO */
    int check_files;       /* run the file checker after recovery */
    double hang_timeout;   /* seconds without any finished op = hang */
    int verbose;
    char weights[1024];
} stress_opts_t;

int stress_parse_args(int argc, char **argv, stress_opts_t *o);

/* ---- random numbers ---- */
typedef struct rng {
    uint64_t s;
} rng_t;
static inline uint64_t rng_next(rng_t *r) {
    uint64_t x = r->s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    r->s = x;
    return x * 0x2545F4914F6CDD1Dull;
}
static inline uint64_t rng_uniform(rng_t *r, uint64_t n) { return n ? rng_next(r) % n : 0; }
static inline double rng_double(rng_t *r) { return (double)(rng_next(r) >> 11) * 0x1.0p-53; }
uint64_t stress_mix(uint64_t a, uint64_t b);

/* ---- oracle state word ----
 * bits 0..29 cur gen | bit 30 cur exists | bit 31 pending |
 * bits 32..61 pending gen | bit 62 pending exists */
#define ST_GEN_MASK 0x3fffffffull
static inline uint32_t st_gen(uint64_t w) { return (uint32_t)(w & ST_GEN_MASK); }
static inline int st_exists(uint64_t w) { return (int)((w >> 30) & 1); }
static inline int st_pending(uint64_t w) { return (int)((w >> 31) & 1); }
static inline uint32_t st_pgen(uint64_t w) { return (uint32_t)((w >> 32) & ST_GEN_MASK); }
static inline int st_pexists(uint64_t w) { return (int)((w >> 62) & 1); }
static inline uint64_t st_make(uint32_t gen, int exists) {
    return ((uint64_t)gen & ST_GEN_MASK) | ((uint64_t)(exists ? 1 : 0) << 30);
}
static inline uint64_t st_with_pending(uint64_t w, uint32_t pgen, int pexists) {
    return (w & 0x7fffffffull) | (1ull << 31) | (((uint64_t)pgen & ST_GEN_MASK) << 32) |
           ((uint64_t)(pexists ? 1 : 0) << 62);
}

/* ---- oracle file ---- */
enum { PHASE_NONE = 0, PHASE_PREPARE = 1, PHASE_ISSUED = 2, PHASE_ACKED = 3 };

typedef struct oracle_entry {
    uint32_t cf, key;
} oracle_entry_t;

typedef struct oracle_thread {
    uint64_t ops;            /* operations completed in the current run */
    uint64_t reads_verified; /* read results checked in the current run */
    uint64_t writes_acked;   /* write operations acknowledged in the run */
    uint32_t phase;          /* PHASE_* of the in-flight write */
    uint32_t nent;
    oracle_entry_t ent[STRESS_MAX_BATCH];
} oracle_thread_t;

typedef struct oracle_hdr {
    char magic[8];
    uint32_t version, ncf;
    uint64_t nkeys;
    uint64_t runs;           /* runs started on this oracle */
    uint64_t clean;          /* 1 when the last run ended normally */
    /* Lifetime totals (updated at each recovery and clean exit). */
    uint64_t total_ops, total_reads_verified, total_keys_verified, total_recoveries;
    uint64_t cfs_acked;      /* families whose creation was acknowledged */
    uint64_t total_faults;   /* kills (counted by the next run) + injected */
    uint64_t reserved[6];
    oracle_thread_t threads[STRESS_MAX_THREADS];
} oracle_hdr_t;

typedef struct oracle {
    int fd;
    size_t size;
    oracle_hdr_t *h;
    uint64_t *slots; /* ncf * nkeys state words */
} oracle_t;

/* Open path, creating a fresh (all absent) oracle if missing; *created is
 * set then. A size/shape mismatch is an error. */
int oracle_open(const char *path, uint32_t ncf, uint32_t nkeys, oracle_t *o, int *created);
void oracle_close(oracle_t *o);
/* msync the mapping (durable against a machine crash too). */
void oracle_sync(oracle_t *o);
static inline uint64_t *oracle_slot(oracle_t *o, uint32_t cf, uint32_t key) {
    return &o->slots[(uint64_t)cf * o->h->nkeys + key];
}
static inline uint64_t oracle_load(oracle_t *o, uint32_t cf, uint32_t key) {
    return __atomic_load_n(oracle_slot(o, cf, key), __ATOMIC_ACQUIRE);
}
static inline void oracle_store(oracle_t *o, uint32_t cf, uint32_t key, uint64_t w) {
    __atomic_store_n(oracle_slot(o, cf, key), w, __ATOMIC_RELEASE);
}

/* ---- keys and values ---- */
#define STRESS_KEY_MAX 40
/* Key bytes of index k into buf (returns length): fixed-width index, then a
 * suffix of 0..15 bytes, so keys sort by index. */
size_t stress_key(uint32_t k, char *buf);
/* Parse a key back to its index; -1 if it is not a stress key. */
int64_t stress_key_parse(const char *p, size_t n, uint32_t nkeys);
/* Length of the value of (cf, key, gen) (bounded by max_value). */
size_t stress_value_len(uint32_t cf, uint32_t key, uint32_t gen, uint32_t max_value);
/* Fill buf (stress_value_len bytes) with the value of (cf, key, gen). */
void stress_value(uint32_t cf, uint32_t key, uint32_t gen, uint32_t max_value, char *buf, size_t len);
/* Check a value read for (cf, key): 0 and *gen on success, -1 if the bytes
 * are not exactly a value this tool wrote for that key (*why says how). */
int stress_value_check(uint32_t cf, uint32_t key, const void *v, size_t n, uint32_t max_value, uint32_t *gen,
                       const char **why);

/* ---- shared state ---- */
typedef struct stress stress_t;

typedef struct thread_ctx {
    stress_t *s;
    int id;
    rng_t rng;
    oracle_thread_t *rec;
    char *vbuf; /* value scratch */
    uint64_t ops, reads_verified, writes, errors_tolerated;
    int cur_op; /* op kind running now, -1 between ops (read by the watchdog) */
} thread_ctx_t;

typedef int (*op_fn)(thread_ctx_t *t);

typedef struct op_kind {
    const char *name;
    double weight;   /* default weight; --weights overrides */
    op_fn run;
    int exclusive;   /* runs with db_lock held exclusively */
} op_kind_t;

struct stress {
    stress_opts_t o;
    oracle_t orc;
    tdb_t *db;
    tdb_cf_t *cf[STRESS_MAX_CFS];
    fault_env_t *fe;        /* NULL unless fault options are given */
    pthread_rwlock_t db_lock;
    pthread_mutex_t stripes[STRESS_NSTRIPES];
    uint64_t start_us;
    /* Weights of op_kinds[] after --weights. */
    double weight[32];
    double weight_sum;
    /* Set (atomically) to stop every thread: 1 done, 2 failure. */
    int stop;
    int need_recover;       /* a write failed under fault injection */
    uint64_t ops_issued;    /* atomic: ops handed out (for --ops) */
    uint64_t recoveries, faults_seen;
    /* Per family: range deletes started and ended. The engine's
     * commit-group validation treats a range delete in the group as touching
     * every key of its family (src/db/write.c group_keys_has), so a
     * transaction overlapping one may fail with a (safe) spurious conflict. */
    uint64_t range_started[STRESS_MAX_CFS], range_ended[STRESS_MAX_CFS];
    uint64_t spurious_conflicts;
};

extern const op_kind_t stress_op_kinds[];
extern const int stress_num_op_kinds;

/* Report a verification failure (prints, stops everything, exit code 1). */
void stress_fail(stress_t *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* An unexpected API error (exit code 2). */
void stress_die(stress_t *s, const char *what, int rc);
int stress_should_stop(stress_t *s);
uint64_t stress_now_us(void);

/* db.c: open / close / reopen and the recovery check. */
int stress_open_db(stress_t *s);
void stress_close_db(stress_t *s);
/* Check the whole database against the oracle, resolving writes that were
 * in flight at a crash (see verify.c). Returns keys verified. */
uint64_t stress_verify_all(stress_t *s, const char *when);
/* Install the fault rules of the flags (no-op without fault options). */
void stress_arm_faults(stress_t *s);
/* Reopen (db_lock held exclusively by the caller) and verify. */
void stress_reopen(stress_t *s, const char *why);

/* ops.c helpers shared with verify.c */
/* Is the observed value (present/gen) allowed by the oracle window
 * [w0, w1] (loads before and after the read)? */
int window_allows(uint64_t w0, uint64_t w1, int present, uint32_t gen);
void stress_lock_keys(stress_t *s, const uint32_t *keys, int n);
void stress_unlock_keys(stress_t *s, const uint32_t *keys, int n);

#ifdef __cplusplus
}
#endif
#endif
