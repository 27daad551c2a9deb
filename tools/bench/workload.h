/*
 * workload.h: the workloads (as RocksDB's db_bench defines them) and the
 * driver that runs one of them on one engine.
 *
 * Invariants
 *  - A fill workload (fillseq, fillrandom, fillrandom_batchN) starts from
 *    an empty directory; every other workload runs on what the previous
 *    steps left, like db_bench without --use_existing_db.
 *  - Every engine is fed the same keys and values in the same order: each
 *    thread's generator is seeded from (--seed, step index, thread index).
 *  - A write step ends by flushing the engine's memtables (engines with a
 *    flush call) and waiting for it to quiesce (no flush or compaction
 *    queued or running); that settle is reported as settle time, not
 *    counted in ops/s, and its I/O and CPU are counted in the step's write
 *    amplification and cpu-us/op. So every step pays for writing out what
 *    it wrote, and none for what an earlier step left in a memtable.
 *  - An engine_run_t lives in the engine's own child process.
 */
#ifndef TDB_BENCH_WORKLOAD_H
#define TDB_BENCH_WORKLOAD_H

#include "bench.h"
#include "engine.h"

typedef enum {
    WL_FILLSEQ,
    WL_FILLRANDOM,
    WL_OVERWRITE,
    WL_READRANDOM,
    WL_READRANDOM_COLD,
    WL_SEEKRANDOM,
    WL_SCAN,
    WL_READSEQ,
    WL_DELETERANDOM,
    WL_READWHILEWRITING,
    WL_TXNPUT,       /* overwrite, each put its own transaction          */
    WL_SNAPSHOTGET,  /* readrandom through read-only snapshot transactions */
} wl_kind_t;

typedef struct workload {
    char      name[48];
    wl_kind_t kind;
    int       batch;  /* entries per write call (write workloads)     */
    int       nexts;  /* Next() calls after each seek (scanN)         */
    int       fresh;  /* starts from an empty database                */
    int       writes; /* measures write amplification and settles     */
} workload_t;

/* The default workload list, in run order. */
extern const char *const workload_default_list;

/* Parse a workload name ("fillrandom", "fillrandom_batch1000", "scan100",
 * ...); batch_size is the batch of the plain write workloads. 0 on
 * success, -1 for an unknown name. */
int workload_parse(const char *name, int batch_size, workload_t *out);

/* Help text listing the workloads. */
const char *workload_help(void);

typedef struct engine_run engine_run_t;

/* Per-engine state for a sequence of steps (opened lazily). */
engine_run_t *engine_run_new(const engine_vtable_t *vt, const bench_opts_t *o);
/* Run one step; fills *out (out->ok = 0 on failure). */
void engine_run_step(engine_run_t *r, const workload_t *w, int step,
                     step_result_t *out);
/* Close the engine and free the state (removing the directory unless
 * --keep_db). */
void engine_run_free(engine_run_t *r);

#endif /* TDB_BENCH_WORKLOAD_H */
