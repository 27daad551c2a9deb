/*
 * bench.h: tdb_bench's options and the result of one workload step.
 *
 * One step = one workload run on one engine. Results travel from the
 * engine's child process to the parent through a pipe as a fixed-size
 * step_result_t, so it holds no pointers.
 */
#ifndef TDB_BENCH_BENCH_H
#define TDB_BENCH_BENCH_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"

#define BENCH_MAX_STEPS   64
#define BENCH_MAX_ENGINES 8
#define BENCH_MAX_THREADS 64

typedef struct bench_opts {
    uint64_t num;             /* key space [0, num) and keys per fill     */
    uint64_t reads;           /* point reads / seeks per read step        */
    size_t   key_size;
    size_t   value_size;
    int      threads;
    int      batch_size;      /* entries per write in fillrandom et al.   */
    double   duration;        /* per-step cap in seconds; 0 = none        */
    uint64_t seed;
    int      keep_db;         /* leave the engine directories behind      */
    int      repeat;          /* runs of the whole list; each row reports
                               * the run with the median ops/s           */
    engine_settings_t es;     /* the settings every engine is matched on  */
    char     workloads[1024]; /* comma list                               */
    char     engines[256];    /* comma list                               */
    char     db[PATH_MAX];    /* parent directory of the engine dirs      */
    char     csv[PATH_MAX];   /* CSV output path; "" = none               */
} bench_opts_t;

typedef struct step_result {
    char     engine[16];
    char     workload[48];
    int      ok;              /* 0: the step failed or was skipped        */
    int      capped;          /* 1: stopped early by --duration           */
    uint64_t ops;             /* entries written or operations read       */
    double   secs;
    double   ops_per_sec;
    double   mb_per_sec;      /* user key+value bytes moved, MiB/s        */
    double   p50_us, p99_us, p999_us;
    double   write_amp;       /* < 0: not a write step                    */
    double   space_amp;       /* < 0: nothing live                        */
    double   peak_rss_mb;
    double   stall_ms;        /* < 0: the engine does not report it       */
    double   settle_ms;       /* wait for flush/compaction after writes   */
    double   cpu_us_per_op;   /* process user+sys CPU over the step and its
                               * settle (all threads, background included)
                               * per operation; < 0: unavailable           */
    char     note[160];
} step_result_t;

#endif /* TDB_BENCH_BENCH_H */
