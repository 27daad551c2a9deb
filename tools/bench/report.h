/*
 * report.h: the results table (stdout) and the CSV file.
 *
 * CSV: one row per engine x workload, columns
 *   engine,workload,ops,ops_per_sec,mb_per_sec,p50_us,p99_us,p999_us,
 *   cpu_us_per_op,write_amp,space_amp,peak_rss_mb,stall_ms,ratio_vs_rocksdb,
 *   seconds,settle_ms,ok,note
 * An empty field means "not applicable" (write_amp of a read step, stall_ms
 * of an engine that does not report stalls, ratio of a non-tidesdb row).
 * cpu_us_per_op = user+sys CPU of the engine's process (every thread,
 * background flush/compaction included) from the step's start to the end
 * of its settle, per operation: insensitive to other load on the machine.
 * ratio_vs_rocksdb = tidesdb ops_per_sec / rocksdb ops_per_sec for the same
 * workload in the same run.
 */
#ifndef TDB_BENCH_REPORT_H
#define TDB_BENCH_REPORT_H

#include <stdio.h>

#include "bench.h"

/* Results of a run: rows[step * engines + engine]. */
typedef struct report {
    const step_result_t *rows;
    int steps;
    int engines;
} report_t;

/* Print the aligned table, grouped by workload. */
void report_table(FILE *f, const report_t *rep);
/* Write the CSV file; 0 on success. */
int report_csv(const char *path, const report_t *rep);

#endif /* TDB_BENCH_REPORT_H */
