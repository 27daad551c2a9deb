/*
 * histogram.h: a log-linear latency histogram in the manner of HdrHistogram.
 *
 * Values (nanoseconds) below 2^(SUB+1) are counted exactly; above, each
 * power-of-two range is split into 2^SUB equal buckets, so a reported
 * percentile is within 1/2^SUB (1.6%) of the true value. A histogram
 * belongs to one thread; merge() adds per-thread histograms together.
 */
#ifndef TDB_BENCH_HISTOGRAM_H
#define TDB_BENCH_HISTOGRAM_H

#include <stdint.h>

#define HIST_SUB_BITS 6
#define HIST_BUCKETS  ((64 - HIST_SUB_BITS + 1) << HIST_SUB_BITS)

typedef struct histogram {
    uint64_t count;
    uint64_t min;
    uint64_t max;
    double   sum;
    uint64_t buckets[HIST_BUCKETS];
} histogram_t;

void hist_init(histogram_t *h);
/* Record one value in nanoseconds. */
void hist_add(histogram_t *h, uint64_t ns);
/* Add every count of src into dst. */
void hist_merge(histogram_t *dst, const histogram_t *src);
/* Value (ns) at percentile p in [0,100]; 0 for an empty histogram. */
double hist_percentile(const histogram_t *h, double p);
/* Mean value in ns; 0 for an empty histogram. */
double hist_mean(const histogram_t *h);

/* Bucket index of a value and the value range of a bucket (for tests). */
unsigned hist_bucket_of(uint64_t v);
void hist_bucket_range(unsigned idx, uint64_t *lo, uint64_t *hi);

#endif /* TDB_BENCH_HISTOGRAM_H */
