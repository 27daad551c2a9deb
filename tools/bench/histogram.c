/*
 * histogram.c: log-linear latency histogram (see histogram.h).
 *
 * Layout: indexes [0, 2^(SUB+1)) hold values exactly. A larger value v with
 * highest set bit b has exponent e = b - SUB (>= 1) and lands in
 * (e + 1) * 2^SUB + ((v >> e) - 2^SUB): each exponent owns 2^SUB
 * consecutive buckets, each 2^e wide.
 */
#include "histogram.h"

#include <string.h>

#define HIST_SUB (1u << HIST_SUB_BITS)

/* Reset to empty. */
void hist_init(histogram_t *h)
{
    memset(h, 0, sizeof(*h));
    h->min = UINT64_MAX;
}

/* Bucket index of a value. */
unsigned hist_bucket_of(uint64_t v)
{
    if (v < 2u * HIST_SUB)
        return (unsigned)v;
    unsigned b = 63u - (unsigned)__builtin_clzll(v);
    unsigned e = b - HIST_SUB_BITS;
    return (e + 1u) * HIST_SUB + (unsigned)((v >> e) - HIST_SUB);
}

/* Smallest and largest value of a bucket. */
void hist_bucket_range(unsigned idx, uint64_t *lo, uint64_t *hi)
{
    if (idx < 2u * HIST_SUB) {
        *lo = *hi = idx;
        return;
    }
    unsigned e = idx / HIST_SUB - 1u;
    uint64_t sub = idx % HIST_SUB + HIST_SUB;
    *lo = sub << e;
    *hi = ((sub + 1u) << e) - 1u;
}

/* Record one value. */
void hist_add(histogram_t *h, uint64_t ns)
{
    h->buckets[hist_bucket_of(ns)]++;
    h->count++;
    h->sum += (double)ns;
    if (ns < h->min)
        h->min = ns;
    if (ns > h->max)
        h->max = ns;
}

/* Add src into dst. */
void hist_merge(histogram_t *dst, const histogram_t *src)
{
    if (src->count == 0)
        return;
    for (unsigned i = 0; i < HIST_BUCKETS; i++)
        dst->buckets[i] += src->buckets[i];
    dst->count += src->count;
    dst->sum += src->sum;
    if (src->min < dst->min)
        dst->min = src->min;
    if (src->max > dst->max)
        dst->max = src->max;
}

/* Value at percentile p: the midpoint of the bucket holding that rank,
 * clamped to the observed min and max. */
double hist_percentile(const histogram_t *h, double p)
{
    if (h->count == 0)
        return 0.0;
    double rank = p / 100.0 * (double)h->count;
    uint64_t want = (uint64_t)rank;
    if ((double)want < rank)
        want++;
    if (want < 1)
        want = 1;
    uint64_t seen = 0;
    for (unsigned i = 0; i < HIST_BUCKETS; i++) {
        seen += h->buckets[i];
        if (seen >= want) {
            uint64_t lo, hi;
            hist_bucket_range(i, &lo, &hi);
            double mid = ((double)lo + (double)hi) / 2.0;
            if (mid < (double)h->min)
                mid = (double)h->min;
            if (mid > (double)h->max)
                mid = (double)h->max;
            return mid;
        }
    }
    return (double)h->max;
}

/* Mean value. */
double hist_mean(const histogram_t *h)
{
    return h->count ? h->sum / (double)h->count : 0.0;
}
