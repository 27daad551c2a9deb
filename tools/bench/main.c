/*
 * main.c: tdb_bench, one program that runs the same workloads through
 * several key-value engines in one run.
 *
 * Process model
 *  - The parent forks one child per engine before it starts any thread.
 *    A child owns its engine for the whole run, so its peak anonymous RSS
 *    (sampled, see sysstat.h) and /proc/self/io are that engine's alone.
 *  - The parent runs the workload list step by step; for each step it asks
 *    every engine in turn (one at a time, the order rotated each step so no
 *    engine always goes first) and waits for its result on a pipe. Engines
 *    never run concurrently.
 *  - A child that crashes, or does not answer within the step timeout, is
 *    killed and reported; the other engines go on.
 *  - --repeat=N runs the whole list N times (it must start with a fill, so
 *    every run starts from an empty database; the order of engines rotates
 *    on between runs). Each row of the report is the run with the median
 *    ops/s of that engine and step, whole (its latencies, CPU and
 *    amplification belong to that run), and its note gives the spread. A
 *    single run on a shared machine can be a third off for one engine's
 *    step and not the other's; the median of 3 bounds one bad run.
 */
#include "bench.h"
#include "bench_flags.h"
#include "report.h"
#include "sysstat.h"
#include "workload.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef TDB_BENCH_HAVE_TIDESDB
extern const engine_vtable_t engine_tidesdb;
#endif
#ifdef TDB_BENCH_HAVE_ROCKSDB
extern const engine_vtable_t engine_rocksdb;
#endif
#ifdef TDB_BENCH_HAVE_LEVELDB
extern const engine_vtable_t engine_leveldb;
#endif

const engine_vtable_t *const bench_engines[] = {
#ifdef TDB_BENCH_HAVE_TIDESDB
    &engine_tidesdb,
#endif
#ifdef TDB_BENCH_HAVE_ROCKSDB
    &engine_rocksdb,
#endif
#ifdef TDB_BENCH_HAVE_LEVELDB
    &engine_leveldb,
#endif
    NULL,
};
const size_t bench_engine_count =
    sizeof(bench_engines) / sizeof(bench_engines[0]) - 1;

/* Adapter by name. */
const engine_vtable_t *engine_find(const char *name)
{
    for (size_t i = 0; i < bench_engine_count; i++)
        if (strcmp(bench_engines[i]->name, name) == 0)
            return bench_engines[i];
    return NULL;
}

typedef struct child {
    const engine_vtable_t *vt;
    pid_t pid;
    int   to;      /* parent -> child: step index, -1 = quit */
    int   from;    /* child -> parent: step_result_t         */
    int   dead;
    char  why[96];
} child_t;

/* Write all of buf. */
static int write_full(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Read all of buf, waiting at most timeout_ms in total (-1 = forever);
 * 0 ok, -1 EOF/error, -2 timeout. */
static int read_full(int fd, void *buf, size_t n, int timeout_ms)
{
    char *p = buf;
    uint64_t deadline = sys_now_ns() + (uint64_t)(timeout_ms < 0 ? 0 : timeout_ms) * 1000000u;
    while (n > 0) {
        int wait = -1;
        if (timeout_ms >= 0) {
            uint64_t now = sys_now_ns();
            if (now >= deadline)
                return -2;
            wait = (int)((deadline - now) / 1000000u) + 1;
        }
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int pr = poll(&pfd, 1, wait);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr < 0)
            return -1;
        if (pr == 0)
            continue;
        ssize_t r = read(fd, p, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

/* Child process: run steps on request until told to quit. */
static void child_main(const engine_vtable_t *vt, const bench_opts_t *o,
                       const workload_t *wl, int nsteps, int in, int out)
{
    if (sys_rss_sampler_start() != 0)
        fprintf(stderr, "%s: no RSS sampler thread; peak RSS is sampled per step only\n", vt->name);
    engine_run_t *r = engine_run_new(vt, o);
    int32_t cmd;
    while (read_full(in, &cmd, sizeof(cmd), -1) == 0 && cmd >= 0 && cmd < nsteps) {
        step_result_t res;
        if (r) {
            engine_run_step(r, &wl[cmd], cmd, &res);
        } else {
            memset(&res, 0, sizeof(res));
            snprintf(res.engine, sizeof(res.engine), "%s", vt->name);
            snprintf(res.workload, sizeof(res.workload), "%s", wl[cmd].name);
            snprintf(res.note, sizeof(res.note), "out of memory");
        }
        if (write_full(out, &res, sizeof(res)) != 0)
            break;
    }
    engine_run_free(r);
    _exit(0);
}

/* Fork the engine's child with its two pipes. */
static int child_start(child_t *c, const engine_vtable_t *vt,
                       const bench_opts_t *o, const workload_t *wl, int nsteps)
{
    int down[2], up[2];
    memset(c, 0, sizeof(*c));
    c->vt = vt;
    if (pipe(down) != 0)
        return -1;
    if (pipe(up) != 0) {
        close(down[0]);
        close(down[1]);
        return -1;
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        close(down[1]);
        close(up[0]);
        child_main(vt, o, wl, nsteps, down[0], up[1]);
    }
    close(down[0]);
    close(up[1]);
    c->pid = pid;
    c->to = down[1];
    c->from = up[0];
    return 0;
}

/* Reap a child that stopped answering and say why. */
static void child_bury(child_t *c, int killed_after_s)
{
    int status = 0;
    if (killed_after_s > 0)
        kill(c->pid, SIGKILL);
    waitpid(c->pid, &status, 0);
    if (killed_after_s > 0)
        snprintf(c->why, sizeof(c->why), "hung: killed after %d s", killed_after_s);
    else if (WIFSIGNALED(status))
        snprintf(c->why, sizeof(c->why), "crashed: %s", strsignal(WTERMSIG(status)));
    else
        snprintf(c->why, sizeof(c->why), "child exited with status %d",
                 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    c->dead = 1;
    close(c->to);
    close(c->from);
}

/* Run one step on one engine's child. */
static void child_step(child_t *c, const workload_t *w, int step,
                       int timeout_s, step_result_t *out)
{
    if (!c->dead) {
        int32_t cmd = step;
        int rc = write_full(c->to, &cmd, sizeof(cmd));
        if (rc == 0)
            rc = read_full(c->from, out, sizeof(*out), timeout_s * 1000);
        if (rc == 0)
            return;
        child_bury(c, rc == -2 ? timeout_s : 0);
        memset(out, 0, sizeof(*out));
        snprintf(out->note, sizeof(out->note), "%s", c->why);
    } else {
        memset(out, 0, sizeof(*out));
        snprintf(out->note, sizeof(out->note), "skipped (%s earlier)", c->why);
    }
    snprintf(out->engine, sizeof(out->engine), "%s", c->vt->name);
    snprintf(out->workload, sizeof(out->workload), "%s", w->name);
}

/* Row `cell` of the report from its `reps` runs (runs[rep * cells + cell]):
 * a failed run if any failed (so the run fails), else the run with the
 * median ops/s (the lower of the two middle ones for an even count), whole,
 * with the spread appended to its note. */
static void pick_median(const step_result_t *runs, size_t cells, size_t cell,
                        int reps, step_result_t *out)
{
    const step_result_t *v[16];
    for (int i = 0; i < reps; i++) {
        v[i] = &runs[(size_t)i * cells + cell];
        if (!v[i]->ok) {
            *out = *v[i];
            return;
        }
    }
    for (int i = 1; i < reps; i++) /* insertion sort by ops/s */
        for (int j = i; j > 0 && v[j]->ops_per_sec < v[j - 1]->ops_per_sec; j--) {
            const step_result_t *t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    *out = *v[(reps - 1) / 2];
    if (reps > 1) {
        size_t len = strlen(out->note);
        snprintf(out->note + len, sizeof(out->note) - len, "median of %d runs (%.0f-%.0f ops/s); ",
                 reps, v[0]->ops_per_sec, v[reps - 1]->ops_per_sec);
    }
}

/* Split a comma list in place into at most max items. */
static int split_list(char *s, char **items, int max)
{
    int n = 0;
    for (char *tok = strtok(s, ","); tok; tok = strtok(NULL, ",")) {
        while (*tok == ' ')
            tok++;
        if (*tok == '\0')
            continue;
        if (n == max)
            return -1;
        items[n++] = tok;
    }
    return n;
}

/* Print the settings and how each figure is measured. */
static void print_header(const bench_opts_t *o, child_t *kids, int nk)
{
    const engine_settings_t *s = &o->es;
    printf("tdb_bench: num=%llu reads=%llu key_size=%zu value_size=%zu threads=%d"
           " batch_size=%d seed=%llu duration_cap=%gs repeat=%d\n",
           (unsigned long long)o->num, (unsigned long long)o->reads, o->key_size,
           o->value_size, o->threads, o->batch_size, (unsigned long long)o->seed,
           o->duration, o->repeat);
    printf("matched settings: write_buffer_size=%.0f MiB cache_size=%.0f MiB "
           "block_size=%zu compression=%s bloom_bits=%d bg_threads=%d sync=%d\n",
           s->write_buffer_size / 1048576.0, s->cache_size / 1048576.0,
           s->block_size, bench_compression_name(s->compression), s->bloom_bits,
           s->bg_threads, s->sync);
    for (int i = 0; i < nk; i++) {
        char buf[512];
        kids[i].vt->describe(s, buf, sizeof(buf));
        printf("  %-8s %s\n", kids[i].vt->name, buf);
    }
    printf("method: each engine runs in its own child process (RSS and I/O are"
           " per engine); engines\n"
           "  take turns per step, order rotated. Write steps end by flushing the"
           " memtables and\n"
           "  waiting for flushes and compactions to finish (settle, not in"
           " ops/s). write_amp =\n"
           "  /proc/self/io write_bytes over the step and its settle / user"
           " key+value bytes\n"
           "  written, the same for every engine. space_amp = bytes of files in the engine's dir / (live keys"
           " x (key+value)).\n"
           "  Latency is per operation (per batch for batched writes); p99.9 etc."
           " in microseconds.\n"
           "  cpu-us/op = process user+sys CPU (all threads, settle included) per"
           " operation.\n"
           "  RSS-MB = peak anonymous resident memory (statm resident - shared,"
           " sampled every 10 ms):\n"
           "  file pages are page cache, counted in plain RSS only for engines"
           " that map their files.\n");
    if (o->repeat > 1)
        printf("  repeat: the whole list runs %d times (engine order rotated on); each row is\n"
               "  the run with the median ops/s for that engine and step, its spread in the note.\n",
               o->repeat);
    printf("\n");
    fflush(stdout);
}

/* Entry point. */
int main(int argc, char **argv)
{
    static bench_opts_t o;
    int prc = options_parse(&o, argc, argv);
    if (prc != 0)
        return prc > 0 ? 0 : 2;
    if (bench_engine_count == 0) {
        fprintf(stderr, "tdb_bench: no engine compiled in\n");
        return 2;
    }

    static workload_t wl[BENCH_MAX_STEPS];
    char *items[BENCH_MAX_STEPS];
    char wbuf[sizeof(o.workloads)];
    snprintf(wbuf, sizeof(wbuf), "%s", o.workloads);
    int nsteps = split_list(wbuf, items, BENCH_MAX_STEPS);
    if (nsteps <= 0) {
        fprintf(stderr, "tdb_bench: --workloads: 1..%d names\n", BENCH_MAX_STEPS);
        return 2;
    }
    for (int i = 0; i < nsteps; i++) {
        if (workload_parse(items[i], o.batch_size, &wl[i]) != 0) {
            fprintf(stderr, "tdb_bench: unknown workload '%s'\n%s", items[i],
                    workload_help());
            return 2;
        }
    }

    if (o.repeat > 1 && !wl[0].fresh) {
        fprintf(stderr, "tdb_bench: --repeat=%d needs a workload list that starts with a fill "
                        "(fillseq, fillrandom or fillrandom_batchN), so that every run starts "
                        "from an empty database; '%s' does not\n", o.repeat, wl[0].name);
        return 2;
    }

    const engine_vtable_t *vts[BENCH_MAX_ENGINES];
    int nk = 0;
    if (o.engines[0] == '\0') {
        for (size_t i = 0; i < bench_engine_count && nk < BENCH_MAX_ENGINES; i++)
            vts[nk++] = bench_engines[i];
    } else {
        char ebuf[sizeof(o.engines)];
        char *names[BENCH_MAX_ENGINES];
        snprintf(ebuf, sizeof(ebuf), "%s", o.engines);
        int n = split_list(ebuf, names, BENCH_MAX_ENGINES);
        for (int i = 0; i < n; i++) {
            vts[nk] = engine_find(names[i]);
            if (!vts[nk]) {
                fprintf(stderr, "tdb_bench: engine '%s' is not compiled in (have:",
                        names[i]);
                for (size_t j = 0; j < bench_engine_count; j++)
                    fprintf(stderr, " %s", bench_engines[j]->name);
                fprintf(stderr, ")\n");
                return 2;
            }
            nk++;
        }
        if (nk == 0) {
            fprintf(stderr, "tdb_bench: --engines is empty\n");
            return 2;
        }
    }
    if (sys_mkdir_p(o.db) != 0) {
        fprintf(stderr, "tdb_bench: cannot create --db %s\n", o.db);
        return 2;
    }

    /* Two runs sharing --db would delete each other's databases. */
    char lock_path[PATH_MAX + 32];
    snprintf(lock_path, sizeof(lock_path), "%s/.tdb_bench.lock", o.db);
    int lock_fd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (lock_fd < 0 || flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
        fprintf(stderr, "tdb_bench: %s is in use by another tdb_bench run "
                        "(pass a different --db)\n", o.db);
        return 2;
    }

    signal(SIGPIPE, SIG_IGN);
    child_t kids[BENCH_MAX_ENGINES];
    for (int i = 0; i < nk; i++) {
        if (child_start(&kids[i], vts[i], &o, wl, nsteps) != 0) {
            fprintf(stderr, "tdb_bench: cannot start the %s process\n", vts[i]->name);
            return 1;
        }
    }
    print_header(&o, kids, nk);

    size_t cells = (size_t)nsteps * (size_t)nk;
    step_result_t *rows = calloc(cells, sizeof(*rows));
    step_result_t *runs = calloc(cells * (size_t)o.repeat, sizeof(*runs));
    if (!rows || !runs)
        return 1;
    int timeout_s = o.duration > 0 ? (int)(o.duration * 4) + 600 : 3600;
    uint64_t t0 = sys_now_ns();
    for (int rep = 0; rep < o.repeat; rep++) {
        for (int s = 0; s < nsteps; s++) {
            for (int j = 0; j < nk; j++) {
                int e = (s + rep + j) % nk;
                step_result_t *r = &runs[(size_t)rep * cells + (size_t)(s * nk + e)];
                child_step(&kids[e], &wl[s], s, timeout_s, r);
                if (o.repeat > 1)
                    fprintf(stderr, "run %d/%d ", rep + 1, o.repeat);
                fprintf(stderr, "[%2d/%d] %-22s %-8s %12.0f ops/s %8.2f s  %s\n",
                        s + 1, nsteps, r->workload, r->engine, r->ops_per_sec,
                        r->secs, r->ok ? "" : r->note);
            }
        }
    }
    for (size_t c = 0; c < cells; c++)
        pick_median(runs, cells, c, o.repeat, &rows[c]);
    free(runs);
    for (int i = 0; i < nk; i++) {
        if (kids[i].dead)
            continue;
        int32_t quit = -1;
        write_full(kids[i].to, &quit, sizeof(quit));
        close(kids[i].to);
        close(kids[i].from);
        waitpid(kids[i].pid, NULL, 0);
    }
    double wall = (double)(sys_now_ns() - t0) / 1e9;

    report_t rep = {.rows = rows, .steps = nsteps, .engines = nk};
    report_table(stdout, &rep);
    printf("\nwall time %.1f s\n", wall);
    int rc = 0;
    if (o.csv[0]) {
        if (report_csv(o.csv, &rep) != 0) {
            fprintf(stderr, "tdb_bench: cannot write %s\n", o.csv);
            rc = 1;
        } else {
            printf("csv: %s\n", o.csv);
        }
    }
    for (int i = 0; i < nsteps * nk; i++)
        if (!rows[i].ok)
            rc = 1;
    free(rows);
    return rc;
}
