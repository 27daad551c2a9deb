/*
 * tdb_stress main: one run = open the oracle and the database, verify what
 * was recovered (the previous run may have been killed), run worker threads
 * until --ops/--duration, verify everything again, close cleanly.
 *
 * Output lines meant for scripts (scripts/crash_loop.sh):
 *   STRESS_START run=N seed=S previous=clean|crashed prev_ops=.. prev_reads=.. prev_writes=..
 *   STRESS_OPEN us=..   (tdb_open of what the previous run left: the recovery time)
 *   STRESS_VERIFY when=.. keys=.. pending=.. resolved_new=.. resolved_old=.. ms=..
 *   STRESS_DONE ops=.. reads_verified=.. writes=.. faults=.. recoveries=.. seconds=..
 *   STRESS_FAIL <what went wrong>            (exit status 1)
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dbcheck.h"
#include "stress.h"

static stress_t g_s;

/* Microseconds on the monotonic clock. */
uint64_t stress_now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* 1 once the run must stop. */
int stress_should_stop(stress_t *s) { return __atomic_load_n(&s->stop, __ATOMIC_ACQUIRE) != 0; }

/* Print STRESS_FAIL and exit 1, leaving database and oracle for inspection. */
void stress_fail(stress_t *s, const char *fmt, ...) {
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&mu);
    va_list ap;
    va_start(ap, fmt);
    printf("STRESS_FAIL ");
    vprintf(fmt, ap);
    printf(" (seed %llu, run %llu)\n", (unsigned long long)s->o.seed,
           s->orc.h ? (unsigned long long)s->orc.h->runs : 0ull);
    va_end(ap);
    fflush(stdout);
    /* Leave database and oracle as they are for inspection. */
    _exit(1);
}

/* Print STRESS_ERROR for an unexpected engine error and exit 2. */
void stress_die(stress_t *s, const char *what, int rc) {
    printf("STRESS_ERROR %s: %s: %s (seed %llu)\n", what, tdb_strerror(rc), tdb_last_error(),
           (unsigned long long)s->o.seed);
    fflush(stdout);
    _exit(2);
}

/* rm -rf of a database directory (only plain files inside). */
static void destroy_db(const char *dir) {
    char **names = NULL;
    size_t n = 0;
    env_t *e = env_posix();
    if (e->list_dir(e, dir, &names, &n) == TDB_OK) {
        for (size_t i = 0; i < n; i++) {
            char p[8192];
            if ((size_t)snprintf(p, sizeof p, "%s/%s", dir, names[i]) < sizeof p) e->remove(e, p);
        }
        env_free_list(names, n);
        e->rmdir(e, dir);
    }
}

/* 1 if dir exists and holds a MANIFEST or any numbered file. */
static int db_has_data(const char *dir) {
    char p[8192];
    struct stat st;
    if ((size_t)snprintf(p, sizeof p, "%s/MANIFEST", dir) >= sizeof p) return 0;
    return stat(p, &st) == 0;
}

/* Pick an op by weight. */
static int pick_op(thread_ctx_t *t) {
    double x = rng_double(&t->rng) * t->s->weight_sum;
    for (int i = 0; i < stress_num_op_kinds; i++) {
        if (x < t->s->weight[i]) return i;
        x -= t->s->weight[i];
    }
    return 0;
}

/* Worker: run ops until the budget, the deadline, a stop or a recovery. */
static void *worker(void *p) {
    thread_ctx_t *t = (thread_ctx_t *)p;
    stress_t *s = t->s;
    uint64_t deadline = s->o.duration > 0 ? s->start_us + (uint64_t)(s->o.duration * 1e6) : 0;
    while (!stress_should_stop(s) && !__atomic_load_n(&s->need_recover, __ATOMIC_ACQUIRE)) {
        if (s->o.ops && __atomic_fetch_add(&s->ops_issued, 1, __ATOMIC_RELAXED) >= s->o.ops) break;
        if (deadline && stress_now_us() >= deadline) break;
        int k = pick_op(t);
        __atomic_store_n(&t->cur_op, k, __ATOMIC_RELAXED);
        if (stress_op_kinds[k].exclusive) pthread_rwlock_wrlock(&s->db_lock);
        else pthread_rwlock_rdlock(&s->db_lock);
        if (!__atomic_load_n(&s->need_recover, __ATOMIC_ACQUIRE)) stress_op_kinds[k].run(t);
        pthread_rwlock_unlock(&s->db_lock);
        __atomic_store_n(&t->cur_op, -1, __ATOMIC_RELAXED);
        __atomic_store_n(&t->ops, t->ops + 1, __ATOMIC_RELAXED);
        __atomic_store_n(&t->rec->ops, t->ops, __ATOMIC_RELAXED);
        __atomic_store_n(&t->rec->reads_verified, t->reads_verified, __ATOMIC_RELAXED);
    }
    return NULL;
}

typedef struct watchdog {
    stress_t *s;
    thread_ctx_t *ctx;
    int running; /* cleared to stop the watchdog */
} watchdog_t;

/* Fail the run when no operation finishes for --hang_timeout seconds
 * (a deadlock or a lost wakeup in the engine), naming what each thread is
 * doing. */
static void *watchdog_main(void *p) {
    watchdog_t *w = (watchdog_t *)p;
    stress_t *s = w->s;
    uint64_t last = UINT64_MAX, since = stress_now_us();
    while (__atomic_load_n(&w->running, __ATOMIC_ACQUIRE)) {
        usleep(100000);
        uint64_t sum = 0;
        for (int i = 0; i < s->o.threads; i++) sum += __atomic_load_n(&w->ctx[i].ops, __ATOMIC_RELAXED);
        uint64_t now = stress_now_us();
        if (sum != last) {
            last = sum;
            since = now;
            continue;
        }
        if ((double)(now - since) / 1e6 < s->o.hang_timeout) continue;
        char busy[1024];
        size_t n = 0;
        busy[0] = '\0';
        for (int i = 0; i < s->o.threads && n < sizeof busy - 64; i++) {
            int k = __atomic_load_n(&w->ctx[i].cur_op, __ATOMIC_RELAXED);
            n += (size_t)snprintf(busy + n, sizeof busy - n, " t%d:%s", i, k >= 0 ? stress_op_kinds[k].name : "idle");
        }
        stress_fail(s, "hang: no operation finished for %.0f s; threads in:%s", s->o.hang_timeout, busy);
    }
    return NULL;
}

/* Apply --weights. */
static int set_weights(stress_t *s) {
    for (int i = 0; i < stress_num_op_kinds; i++) s->weight[i] = stress_op_kinds[i].weight;
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", s->o.weights);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        char *eq = strchr(tok, '=');
        if (!eq) eq = strchr(tok, ':');
        if (!eq) return -1;
        *eq = '\0';
        int found = 0;
        for (int i = 0; i < stress_num_op_kinds; i++) {
            if (!strcmp(tok, stress_op_kinds[i].name)) {
                s->weight[i] = atof(eq + 1);
                found = 1;
            }
        }
        if (!found) {
            fprintf(stderr, "tdb_stress: unknown op '%s' in --weights\n", tok);
            return -1;
        }
    }
    s->weight_sum = 0;
    for (int i = 0; i < stress_num_op_kinds; i++) s->weight_sum += s->weight[i] > 0 ? s->weight[i] : 0;
    return s->weight_sum > 0 ? 0 : -1;
}

/* One run: recover and verify, work, verify, close (see the file comment). */
int main(int argc, char **argv) {
    stress_t *s = &g_s;
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (stress_parse_args(argc, argv, &s->o) != 0) return 3;
    if (set_weights(s) != 0) return 3;
    if (s->o.destroy) {
        destroy_db(s->o.db);
        unlink(s->o.expected);
    }
    int created = 0;
    if (oracle_open(s->o.expected, (uint32_t)s->o.cfs, s->o.keys, &s->orc, &created) != 0) return 2;
    if (created && db_has_data(s->o.db)) {
        fprintf(stderr, "tdb_stress: %s has a database but %s did not exist (use --destroy)\n", s->o.db,
                s->o.expected);
        unlink(s->o.expected);
        return 3;
    }
    oracle_hdr_t *h = s->orc.h;
    pthread_rwlockattr_t ra;
    pthread_rwlockattr_init(&ra);
    pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&s->db_lock, &ra);
    for (int i = 0; i < STRESS_NSTRIPES; i++) pthread_mutex_init(&s->stripes[i], NULL);

    /* What the previous run left. */
    uint64_t prev_ops = 0, prev_reads = 0, prev_writes = 0;
    for (int t = 0; t < STRESS_MAX_THREADS; t++) {
        prev_ops += h->threads[t].ops;
        prev_reads += h->threads[t].reads_verified;
        prev_writes += h->threads[t].writes_acked;
    }
    int prev_clean = (int)h->clean;
    if (!prev_clean) {
        h->total_ops += prev_ops;
        h->total_reads_verified += prev_reads;
        h->total_recoveries++;
        h->total_faults++; /* the kill */
    }
    h->runs++;
    h->clean = 0;
    printf("STRESS_START run=%llu seed=%llu previous=%s prev_ops=%llu prev_reads=%llu prev_writes=%llu\n",
           (unsigned long long)h->runs, (unsigned long long)s->o.seed,
           created ? "none" : prev_clean ? "clean" : "crashed", (unsigned long long)(prev_clean ? 0 : prev_ops),
           (unsigned long long)(prev_clean ? 0 : prev_reads), (unsigned long long)(prev_clean ? 0 : prev_writes));

    /* Never a checksum error: check the files as the crash left them. */
    if (s->o.check_files && db_has_data(s->o.db)) {
        dbcheck_opts_t co = {1, 0, stderr};
        dbcheck_result_t r;
        int rc = dbcheck_run(env_posix(), s->o.db, &co, &r);
        if (rc != 0)
            stress_fail(s, "file check before recovery: %llu damaged file(s), first: %s",
                        (unsigned long long)r.files_damaged, r.files_damaged ? r.damaged[0] : "(unreadable dir)");
    }
    if (s->o.read_fault_prob > 0 || s->o.write_fault_prob > 0) {
        if (fault_env_create(env_posix(), s->o.seed ^ (h->runs << 20), &s->fe) != TDB_OK) return 2;
    }
    uint64_t open_us = stress_now_us();
    if (stress_open_db(s) != TDB_OK) return 1;
    printf("STRESS_OPEN us=%llu\n", (unsigned long long)(stress_now_us() - open_us));
    stress_verify_all(s, s->o.verify_only ? "verify_only" : "startup");
    for (int t = 0; t < STRESS_MAX_THREADS; t++) {
        h->threads[t].ops = h->threads[t].reads_verified = h->threads[t].writes_acked = 0;
    }
    oracle_sync(&s->orc);

    uint64_t ops = 0, reads = 0, writes = 0, tolerated = 0;
    if (!s->o.verify_only) {
        stress_arm_faults(s);
        thread_ctx_t *ctx = (thread_ctx_t *)calloc((size_t)s->o.threads, sizeof *ctx);
        pthread_t *th = (pthread_t *)calloc((size_t)s->o.threads, sizeof *th);
        if (!ctx || !th) return 2;
        for (int i = 0; i < s->o.threads; i++) {
            ctx[i].s = s;
            ctx[i].id = i;
            ctx[i].rng.s = stress_mix(stress_mix(s->o.seed, h->runs), (uint64_t)i) | 1;
            ctx[i].rec = &h->threads[i];
            ctx[i].cur_op = -1;
            ctx[i].vbuf = (char *)malloc(s->o.max_value + 64);
            if (!ctx[i].vbuf) return 2;
        }
        s->start_us = stress_now_us();
        uint64_t last_report = s->start_us;
        watchdog_t wd = {s, ctx, 1};
        pthread_t wd_thread;
        if (s->o.hang_timeout > 0) pthread_create(&wd_thread, NULL, watchdog_main, &wd);
        for (;;) {
            for (int i = 0; i < s->o.threads; i++) pthread_create(&th[i], NULL, worker, &ctx[i]);
            for (int i = 0; i < s->o.threads; i++) pthread_join(th[i], NULL);
            if (!__atomic_load_n(&s->need_recover, __ATOMIC_ACQUIRE)) break;
            /* A write failed under injected faults: restart and check that
             * nothing acknowledged was lost. */
            s->recoveries++;
            stress_reopen(s, "after fault");
            __atomic_store_n(&s->need_recover, 0, __ATOMIC_RELEASE);
            if (s->o.verbose && stress_now_us() - last_report > 5000000) {
                last_report = stress_now_us();
                printf("progress: %llu recoveries\n", (unsigned long long)s->recoveries);
            }
        }
        if (s->o.hang_timeout > 0) {
            __atomic_store_n(&wd.running, 0, __ATOMIC_RELEASE);
            pthread_join(wd_thread, NULL);
        }
        for (int i = 0; i < s->o.threads; i++) {
            ops += ctx[i].ops;
            reads += ctx[i].reads_verified;
            writes += ctx[i].writes;
            tolerated += ctx[i].errors_tolerated;
            free(ctx[i].vbuf);
        }
        free(ctx);
        free(th);
        if (s->fe) fault_env_clear_rules(s->fe);
        stress_verify_all(s, "final");
    }
    stress_close_db(s);
    uint64_t injected = 0;
    if (s->fe) {
        fault_stats_t fs;
        fault_env_stats(s->fe, &fs);
        injected = fs.injected_total;
        fault_env_destroy(s->fe);
        s->fe = NULL;
    }
    if (s->o.check_files && !s->o.verify_only) {
        dbcheck_opts_t co = {0, 0, stderr};
        dbcheck_result_t r;
        if (dbcheck_run(env_posix(), s->o.db, &co, &r) != 0)
            stress_fail(s, "file check after a clean close: %llu damaged file(s), first: %s",
                        (unsigned long long)r.files_damaged, r.files_damaged ? r.damaged[0] : "(unreadable dir)");
    }
    h->total_ops += ops;
    h->total_reads_verified += reads;
    h->total_faults += injected;
    h->clean = 1;
    oracle_sync(&s->orc);
    double secs = s->start_us ? (double)(stress_now_us() - s->start_us) / 1e6 : 0;
    printf("STRESS_DONE ops=%llu reads_verified=%llu writes=%llu faults_injected=%llu faults_seen=%llu "
           "recoveries=%llu spurious_conflicts=%llu seconds=%.1f\n",
           (unsigned long long)ops, (unsigned long long)reads, (unsigned long long)writes,
           (unsigned long long)injected, (unsigned long long)tolerated, (unsigned long long)s->recoveries,
           (unsigned long long)s->spurious_conflicts, secs);
    printf("STRESS_TOTALS runs=%llu ops=%llu reads_verified=%llu keys_verified=%llu recoveries=%llu faults=%llu\n",
           (unsigned long long)h->runs, (unsigned long long)h->total_ops,
           (unsigned long long)h->total_reads_verified, (unsigned long long)h->total_keys_verified,
           (unsigned long long)h->total_recoveries, (unsigned long long)h->total_faults);
    oracle_close(&s->orc);
    return 0;
}
