/*
 * workload.c: workload parsing and the per-engine step driver (see
 * workload.h for the invariants).
 *
 * Threads: a step starts its worker threads behind a barrier and times
 * from the barrier to the last measured thread's end. Each worker keeps
 * its own histogram; they are merged afterwards. Latency of an operation
 * is the time since the same thread's previous operation ended, so it
 * includes generating the key (a few ns) and needs one clock read per op.
 */
#include "workload.h"

#include "histogram.h"
#include "bench_keys.h"
#include "sysstat.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MIB (1024.0 * 1024.0)

const char *const workload_default_list =
    "fillrandom,fillrandom_batch1000,fillseq,overwrite,readrandom,"
    "readrandom_cold,seekrandom,scan100,readseq,readwhilewriting,"
    "deleterandom";

/* Help text listing the workloads. */
const char *workload_help(void)
{
    return "  fillseq              keys 0..num-1 in order, one writer, fresh db\n"
           "  fillrandom           num random keys (--batch_size per write), fresh db\n"
           "  fillrandom_batchN    num random keys, N per atomic batch, fresh db\n"
           "  overwrite            num random keys over the existing data\n"
           "  readrandom           random point reads, block cache warmed first (hot)\n"
           "  readrandom_cold      random point reads after reopening with a block\n"
           "                       cache of at most data/4 and dropping the OS page\n"
           "                       cache of the db files\n"
           "  seekrandom           new iterator, seek to a random key, read one entry\n"
           "  scanN                seek to a random key, read it and N more (reads/(N/10) seeks)\n"
           "  readseq              one thread iterates from the first key (reads entries)\n"
           "  readwhilewriting     threads-1 readers (random reads) + 1 random writer;\n"
           "                       reports the readers\n"
           "  deleterandom         num deletes of random keys\n"
           "  txnput               overwrite where each put is its own transaction\n"
           "                       (engines with transactions; compare with overwrite)\n"
           "  snapshotget          readrandom through read-only snapshot transactions\n"
           "                       (compare with readrandom)\n";
}

/* Parse a workload name. */
int workload_parse(const char *name, int batch_size, workload_t *out)
{
    memset(out, 0, sizeof(*out));
    if (strlen(name) >= sizeof(out->name))
        return -1;
    snprintf(out->name, sizeof(out->name), "%s", name);
    out->batch = batch_size > 0 ? batch_size : 1;
    int n = 0;
    char tail = 0;
    if (strcmp(name, "fillseq") == 0) {
        out->kind = WL_FILLSEQ;
        out->fresh = out->writes = 1;
    } else if (strcmp(name, "fillrandom") == 0) {
        out->kind = WL_FILLRANDOM;
        out->fresh = out->writes = 1;
    } else if (sscanf(name, "fillrandom_batch%d%c", &n, &tail) == 1 && n > 0) {
        out->kind = WL_FILLRANDOM;
        out->batch = n;
        out->fresh = out->writes = 1;
    } else if (strcmp(name, "overwrite") == 0) {
        out->kind = WL_OVERWRITE;
        out->writes = 1;
    } else if (strcmp(name, "readrandom") == 0) {
        out->kind = WL_READRANDOM;
    } else if (strcmp(name, "readrandom_cold") == 0) {
        out->kind = WL_READRANDOM_COLD;
    } else if (strcmp(name, "seekrandom") == 0) {
        out->kind = WL_SEEKRANDOM;
    } else if (sscanf(name, "scan%d%c", &n, &tail) == 1 && n > 0) {
        out->kind = WL_SCAN;
        out->nexts = n;
    } else if (strcmp(name, "readseq") == 0) {
        out->kind = WL_READSEQ;
    } else if (strcmp(name, "deleterandom") == 0) {
        out->kind = WL_DELETERANDOM;
        out->batch = 1;
        out->writes = 1;
    } else if (strcmp(name, "txnput") == 0) {
        out->kind = WL_TXNPUT;
        out->batch = 1;
        out->writes = 1;
    } else if (strcmp(name, "snapshotget") == 0) {
        out->kind = WL_SNAPSHOTGET;
    } else if (strcmp(name, "readwhilewriting") == 0) {
        out->kind = WL_READWHILEWRITING;
        out->writes = 1;
    } else {
        return -1;
    }
    return 0;
}

struct engine_run {
    const engine_vtable_t *vt;
    const bench_opts_t    *o;
    void                  *db;
    char                   dir[PATH_MAX];
    live_set_t             live;
    value_pool_t           pool;
};

/* Per-engine state; the database opens on the first step. */
engine_run_t *engine_run_new(const engine_vtable_t *vt, const bench_opts_t *o)
{
    engine_run_t *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    r->vt = vt;
    r->o = o;
    int len = snprintf(r->dir, sizeof(r->dir), "%s/%s", o->db, vt->name);
    if (len < 0 || (size_t)len >= sizeof(r->dir) || live_init(&r->live, o->num) != 0 ||
        value_pool_init(&r->pool, o->value_size, o->seed) != 0) {
        live_free(&r->live);
        free(r);
        return NULL;
    }
    return r;
}

/* Open the database with a given block cache size. */
static int run_open(engine_run_t *r, size_t cache_size)
{
    engine_settings_t s = r->o->es;
    s.cache_size = cache_size;
    if (sys_mkdir_p(r->dir) != 0) {
        fprintf(stderr, "%s: cannot create %s\n", r->vt->name, r->dir);
        return -1;
    }
    return r->vt->open(&s, r->dir, &r->db);
}

/* Close the database if open. */
static void run_close(engine_run_t *r)
{
    if (r->db)
        r->vt->close(r->db);
    r->db = NULL;
}

/* Start from an empty directory. */
static int run_reset(engine_run_t *r)
{
    run_close(r);
    if (sys_rm_rf(r->dir) != 0) {
        fprintf(stderr, "%s: cannot remove %s\n", r->vt->name, r->dir);
        return -1;
    }
    live_clear_all(&r->live);
    return run_open(r, r->o->es.cache_size);
}

/* Close, remove the directory unless asked to keep it, free the state. */
void engine_run_free(engine_run_t *r)
{
    if (!r)
        return;
    run_close(r);
    if (!r->o->keep_db)
        sys_rm_rf(r->dir);
    live_free(&r->live);
    value_pool_free(&r->pool);
    free(r);
}

/* Read every entry once, untimed, so the block cache is warm. */
static int run_warm(engine_run_t *r)
{
    void *it = r->vt->iter_new(r->db);
    if (!it)
        return -1;
    r->vt->iter_seek_first(it);
    int v;
    while ((v = r->vt->iter_valid(it)) == 1) {
        size_t kl, vl;
        (void)r->vt->iter_key(it, &kl);
        (void)r->vt->iter_value(it, &vl);
        r->vt->iter_next(it);
    }
    r->vt->iter_free(it);
    return v < 0 ? -1 : 0;
}

typedef struct worker {
    engine_run_t      *r;
    const workload_t  *w;
    pthread_barrier_t *start;
    const int         *stop;      /* readwhilewriting: readers are done */
    int                writer;    /* the readwhilewriting writer        */
    uint64_t           target;    /* operations (entries for writes)    */
    uint64_t           seed;
    uint64_t           deadline;  /* ns; 0 = no cap                     */
    uint64_t           end_ns;
    uint64_t           ops;
    uint64_t           bytes;
    uint64_t           found;
    int                failed;
    int                capped;
    histogram_t        hist;
} worker_t;

/* Record one finished operation; 1 when the thread must stop (cap). */
static int worker_tick(worker_t *k, uint64_t *prev)
{
    uint64_t now = sys_now_ns();
    hist_add(&k->hist, now - *prev);
    *prev = now;
    if (k->deadline && now >= k->deadline) {
        k->capped = 1;
        return 1;
    }
    return 0;
}

/* Writes: fills, overwrite, deletes, and the readwhilewriting writer. */
static void do_writes(worker_t *k, char *key)
{
    engine_run_t *r = k->r;
    const engine_vtable_t *vt = r->vt;
    size_t ks = r->o->key_size, vs = r->o->value_size;
    int del = k->w->kind == WL_DELETERANDOM;
    int seq = k->w->kind == WL_FILLSEQ;
    uint64_t batch = k->writer ? 1 : (uint64_t)k->w->batch;
    rng_t rng;
    rng_seed(&rng, k->seed);
    value_cursor_t vc;
    value_cursor_init(&vc, &r->pool, rng_next(&rng));
    void *b = NULL, *tctx = NULL;
    uint64_t *ids = malloc(batch * sizeof(*ids));
    if (!ids || (batch > 1 && !(b = vt->batch_new(r->db)))) {
        k->failed = 1;
        free(ids);
        return;
    }
    uint64_t prev = sys_now_ns();
    for (uint64_t i = 0;;) {
        if (k->writer ? __atomic_load_n(k->stop, __ATOMIC_ACQUIRE) != 0
                      : i >= k->target)
            break;
        uint64_t n = k->writer || k->target - i >= batch ? batch : k->target - i;
        int rc = 0;
        for (uint64_t j = 0; j < n && rc == 0; j++) {
            ids[j] = seq ? i + j : rng_uniform(&rng, r->o->num);
            key_encode(key, ks, ids[j]);
            if (batch > 1)
                rc = vt->batch_put(b, key, ks, value_next(&vc, vs), vs);
            else if (k->w->kind == WL_TXNPUT)
                rc = vt->txn_put(r->db, &tctx, key, ks, value_next(&vc, vs), vs);
            else if (del)
                rc = vt->del(r->db, key, ks);
            else
                rc = vt->put(r->db, key, ks, value_next(&vc, vs), vs);
        }
        if (rc == 0 && batch > 1)
            rc = vt->batch_write(r->db, b);
        if (rc != 0) {
            k->failed = 1;
            break;
        }
        for (uint64_t j = 0; j < n; j++) {
            if (del)
                live_unset(&r->live, ids[j]);
            else
                live_set(&r->live, ids[j]);
        }
        i += n;
        k->ops += n;
        k->bytes += n * (del ? ks : ks + vs);
        if (worker_tick(k, &prev))
            break;
    }
    if (b)
        vt->batch_free(b);
    if (tctx)
        vt->txn_ctx_free(tctx);
    free(ids);
}

/* Random point reads. */
static void do_reads(worker_t *k, char *key)
{
    engine_run_t *r = k->r;
    size_t ks = r->o->key_size;
    rng_t rng;
    rng_seed(&rng, k->seed);
    void *tctx = NULL;
    uint64_t prev = sys_now_ns();
    for (uint64_t i = 0; i < k->target; i++) {
        key_encode(key, ks, rng_uniform(&rng, r->o->num));
        size_t vl = 0;
        int rc = k->w->kind == WL_SNAPSHOTGET ? r->vt->snapshot_get(r->db, &tctx, key, ks, &vl)
                                              : r->vt->get(r->db, key, ks, &vl);
        if (rc < 0) {
            k->failed = 1;
            break;
        }
        if (rc == 1) {
            k->found++;
            k->bytes += ks + vl;
        }
        k->ops++;
        if (worker_tick(k, &prev))
            break;
    }
    if (tctx)
        r->vt->txn_ctx_free(tctx);
}

/* Read the entry under an iterator and return its size. */
static size_t iter_entry_bytes(const engine_vtable_t *vt, void *it)
{
    size_t kl = 0, vl = 0;
    (void)vt->iter_key(it, &kl);
    (void)vt->iter_value(it, &vl);
    return kl + vl;
}

/* Seeks: a new iterator per operation (as db_bench does without a tailing
 * iterator), seek to a random key, read it and w->nexts more entries. */
static void do_seeks(worker_t *k, char *key)
{
    engine_run_t *r = k->r;
    const engine_vtable_t *vt = r->vt;
    size_t ks = r->o->key_size;
    rng_t rng;
    rng_seed(&rng, k->seed);
    uint64_t prev = sys_now_ns();
    for (uint64_t i = 0; i < k->target; i++) {
        key_encode(key, ks, rng_uniform(&rng, r->o->num));
        void *it = vt->iter_new(r->db);
        if (!it) {
            k->failed = 1;
            break;
        }
        vt->iter_seek(it, key, ks);
        int v = vt->iter_valid(it);
        if (v == 1)
            k->found++;
        for (int j = 0; v == 1; j++) {
            k->bytes += iter_entry_bytes(vt, it);
            if (j >= k->w->nexts)
                break;
            vt->iter_next(it);
            v = vt->iter_valid(it);
        }
        vt->iter_free(it);
        if (v < 0) {
            k->failed = 1;
            break;
        }
        k->ops++;
        if (worker_tick(k, &prev))
            break;
    }
}

/* One iterator from the first key; each entry is an operation. */
static void do_readseq(worker_t *k)
{
    const engine_vtable_t *vt = k->r->vt;
    void *it = vt->iter_new(k->r->db);
    if (!it) {
        k->failed = 1;
        return;
    }
    uint64_t prev = sys_now_ns();
    vt->iter_seek_first(it);
    int v = 0;
    while (k->ops < k->target && (v = vt->iter_valid(it)) == 1) {
        k->bytes += iter_entry_bytes(vt, it);
        k->found++;
        k->ops++;
        vt->iter_next(it);
        if (worker_tick(k, &prev))
            break;
    }
    if (v < 0)
        k->failed = 1;
    vt->iter_free(it);
}

/* Thread body: wait at the barrier, run this worker's part. */
static void *worker_main(void *arg)
{
    worker_t *k = arg;
    char *key = malloc(k->r->o->key_size);
    pthread_barrier_wait(k->start);
    if (!key) {
        k->failed = 1;
    } else if (k->writer) {
        do_writes(k, key);
    } else {
        switch (k->w->kind) {
        case WL_FILLSEQ:
        case WL_FILLRANDOM:
        case WL_OVERWRITE:
        case WL_DELETERANDOM:
        case WL_TXNPUT:
            do_writes(k, key);
            break;
        case WL_SNAPSHOTGET:
        case WL_READRANDOM:
        case WL_READRANDOM_COLD:
        case WL_READWHILEWRITING:
            do_reads(k, key);
            break;
        case WL_SEEKRANDOM:
        case WL_SCAN:
            do_seeks(k, key);
            break;
        case WL_READSEQ:
            do_readseq(k);
            break;
        }
    }
    k->end_ns = sys_now_ns();
    free(key);
    return NULL;
}

/* How many measured threads and operations a workload runs. */
static void step_shape(const engine_run_t *r, const workload_t *w,
                       int *threads, uint64_t *total)
{
    const bench_opts_t *o = r->o;
    int t = o->threads;
    uint64_t n = o->reads;
    switch (w->kind) {
    case WL_FILLSEQ: t = 1; n = o->num; break;
    case WL_FILLRANDOM:
    case WL_OVERWRITE:
    case WL_DELETERANDOM:
    case WL_TXNPUT: n = o->num; break;
    case WL_READSEQ: t = 1; break;
    case WL_SCAN: n = o->reads / (uint64_t)(w->nexts >= 20 ? w->nexts / 10 : 1); break;
    case WL_READWHILEWRITING: t = o->threads > 1 ? o->threads - 1 : 1; break;
    default: break;
    }
    *threads = t;
    *total = n > 0 ? n : 1;
}

/* Run the workers of one step; returns the measured seconds. */
static double step_threads(engine_run_t *r, const workload_t *w, int step,
                           worker_t *ws, int measured, uint64_t total)
{
    int writer = w->kind == WL_READWHILEWRITING;
    int n = measured + writer;
    int stop = 0;
    pthread_barrier_t bar;
    pthread_t tids[BENCH_MAX_THREADS + 1];
    pthread_barrier_init(&bar, NULL, (unsigned)n + 1);
    uint64_t deadline = r->o->duration > 0
                            ? sys_now_ns() + (uint64_t)(r->o->duration * 1e9)
                            : 0;
    for (int i = 0; i < n; i++) {
        worker_t *k = &ws[i];
        k->r = r;
        k->w = w;
        k->start = &bar;
        k->stop = &stop;
        k->writer = writer && i == measured;
        k->target = k->writer ? 0
                              : total / (uint64_t)measured +
                                    ((uint64_t)i < total % (uint64_t)measured);
        k->seed = r->o->seed * 1000003u + (uint64_t)step * 1009u + (uint64_t)i;
        k->deadline = deadline;
        hist_init(&k->hist);
        if (pthread_create(&tids[i], NULL, worker_main, k) != 0) {
            /* The barrier would never open: give up on this process; the
             * parent reports the engine as failed. */
            fprintf(stderr, "%s: cannot start a thread\n", r->vt->name);
            _exit(1);
        }
    }
    pthread_barrier_wait(&bar);
    uint64_t t0 = sys_now_ns();
    uint64_t t1 = t0;
    for (int i = 0; i < measured; i++) {
        pthread_join(tids[i], NULL);
        if (ws[i].end_ns > t1)
            t1 = ws[i].end_ns;
    }
    __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
    if (writer)
        pthread_join(tids[measured], NULL);
    pthread_barrier_destroy(&bar);
    return (double)(t1 - t0) / 1e9;
}

/* Append formatted text to a NUL-terminated note, truncating safely. */
static void note_add(char *note, size_t n, const char *fmt, ...)
{
    size_t len = strlen(note);
    if (len + 1 >= n)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(note + len, n - len, fmt, ap);
    va_end(ap);
}

/* Prepare the database for a step: reset, warm, or reopen cold. */
static int step_prepare(engine_run_t *r, const workload_t *w, char *note,
                        size_t nn)
{
    const bench_opts_t *o = r->o;
    if (w->fresh || !r->db)
        return run_reset(r);
    uint64_t logical = live_count(&r->live) * (o->key_size + o->value_size);
    if (w->kind == WL_READRANDOM) {
        if (logical > o->es.cache_size)
            snprintf(note, nn, "not hot: data %.0f MiB > cache %.0f MiB; ",
                     logical / MIB, o->es.cache_size / MIB);
        return run_warm(r);
    }
    if (w->kind == WL_READRANDOM_COLD) {
        size_t cold = o->es.cache_size;
        if (logical / 4 < cold)
            cold = (size_t)(logical / 4);
        run_close(r);
        sys_drop_file_cache(r->dir);
        snprintf(note, nn, "cache %.1f MiB for %.0f MiB data, page cache dropped; ",
                 cold / MIB, logical / MIB);
        return run_open(r, cold);
    }
    return 0;
}

/* Run one step on one engine. */
void engine_run_step(engine_run_t *r, const workload_t *w, int step,
                     step_result_t *out)
{
    const bench_opts_t *o = r->o;
    const engine_vtable_t *vt = r->vt;
    memset(out, 0, sizeof(*out));
    snprintf(out->engine, sizeof(out->engine), "%s", vt->name);
    snprintf(out->workload, sizeof(out->workload), "%s", w->name);
    out->write_amp = out->space_amp = out->stall_ms = -1;
    char note[sizeof(out->note)] = "";
    if ((w->kind == WL_TXNPUT && !vt->txn_put) || (w->kind == WL_SNAPSHOTGET && !vt->snapshot_get)) {
        snprintf(out->note, sizeof(out->note), "n/a: engine adapter has no transactions");
        return;
    }
    if (step_prepare(r, w, note, sizeof(note)) != 0 || !r->db) {
        snprintf(out->note, sizeof(out->note), "%sopen/prepare failed", note);
        return;
    }
    int measured;
    uint64_t total;
    step_shape(r, w, &measured, &total);
    if (measured > BENCH_MAX_THREADS)
        measured = BENCH_MAX_THREADS;
    worker_t *ws = calloc((size_t)measured + 1, sizeof(*ws));
    if (!ws) {
        snprintf(out->note, sizeof(out->note), "out of memory");
        return;
    }
    engine_stats_t s0, s1;
    vt->stats(r->db, &s0);
    int64_t io0 = sys_io_write_bytes();
    uint64_t cpu0 = sys_cpu_ns();

    double secs = step_threads(r, w, step, ws, measured, total);

    int failed = 0, writer = w->kind == WL_READWHILEWRITING;
    if (w->writes) {
        uint64_t t = sys_now_ns();
        if (vt->flush)
            failed |= vt->flush(r->db) != 0;
        failed |= vt->wait_idle(r->db) != 0;
        out->settle_ms = (double)(sys_now_ns() - t) / 1e6;
    }
    int64_t io1 = sys_io_write_bytes();
    uint64_t cpu1 = sys_cpu_ns();
    vt->stats(r->db, &s1);

    histogram_t h;
    hist_init(&h);
    uint64_t bytes = 0, found = 0, written = 0;
    for (int i = 0; i < measured + writer; i++) {
        failed |= ws[i].failed;
        out->capped |= ws[i].capped;
        if (ws[i].writer || (w->writes && !writer))
            written += ws[i].bytes;
        if (ws[i].writer)
            continue;
        hist_merge(&h, &ws[i].hist);
        out->ops += ws[i].ops;
        bytes += ws[i].bytes;
        found += ws[i].found;
    }
    out->secs = secs;
    out->ops_per_sec = secs > 0 ? (double)out->ops / secs : 0;
    out->mb_per_sec = secs > 0 ? (double)bytes / MIB / secs : 0;
    /* Every op of the step, writer of readwhilewriting included. */
    uint64_t all_ops = out->ops + (writer ? ws[measured].ops : 0);
    out->cpu_us_per_op = cpu0 && cpu1 >= cpu0 && all_ops > 0
                             ? (double)(cpu1 - cpu0) / 1e3 / (double)all_ops
                             : -1;
    out->p50_us = hist_percentile(&h, 50) / 1e3;
    out->p99_us = hist_percentile(&h, 99) / 1e3;
    out->p999_us = hist_percentile(&h, 99.9) / 1e3;
    if (written > 0 && io0 >= 0 && io1 >= io0)
        out->write_amp = (double)(io1 - io0) / (double)written;
    uint64_t logical = live_count(&r->live) * (o->key_size + o->value_size);
    if (logical > 0)
        out->space_amp = (double)sys_dir_bytes(r->dir) / (double)logical;
    out->peak_rss_mb = (double)sys_peak_rss_bytes() / MIB;
    if (s0.stall_micros >= 0 && s1.stall_micros >= s0.stall_micros)
        out->stall_ms = (double)(s1.stall_micros - s0.stall_micros) / 1e3;

    if (writer)
        note_add(note, sizeof(note), "writer %.0f ops/s; ",
                 secs > 0 ? (double)ws[measured].ops / secs : 0.0);
    else if (!w->writes && out->ops > 0)
        note_add(note, sizeof(note), "found %.1f%%; ",
                 100.0 * (double)found / (double)out->ops);
    if (w->batch > 1 && w->writes && !writer)
        note_add(note, sizeof(note), "latency per %d-entry batch; ", w->batch);
    if (out->capped)
        note_add(note, sizeof(note), "capped by --duration; ");
    if (failed)
        note_add(note, sizeof(note), "ENGINE ERROR (see stderr); ");
    snprintf(out->note, sizeof(out->note), "%s", note);
    out->ok = !failed;
    free(ws);

    if (w->kind == WL_READRANDOM_COLD) {
        run_close(r);
        if (run_open(r, o->es.cache_size) != 0 || run_warm(r) != 0) {
            out->ok = 0;
            note_add(out->note, sizeof(out->note), "reopen after the step failed; ");
        }
    }
}
