/*
 * report.c: results table and CSV (see report.h for the columns).
 */
#include "report.h"

#include <string.h>

/* tidesdb / rocksdb ops/s for row i's workload, or -1 when not a tidesdb
 * row or either figure is missing. */
static double report_ratio(const report_t *rep, int step, int engine)
{
    const step_result_t *me = &rep->rows[step * rep->engines + engine];
    if (strcmp(me->engine, "tidesdb") != 0 || !me->ok)
        return -1;
    for (int e = 0; e < rep->engines; e++) {
        const step_result_t *peer = &rep->rows[step * rep->engines + e];
        if (strcmp(peer->engine, "rocksdb") == 0 && peer->ok &&
            peer->ops_per_sec > 0)
            return me->ops_per_sec / peer->ops_per_sec;
    }
    return -1;
}

/* Format v with a precision into buf, or "-" when v < 0. */
static const char *fmt_opt(char *buf, size_t n, double v, int prec)
{
    if (v < 0)
        snprintf(buf, n, "-");
    else
        snprintf(buf, n, "%.*f", prec, v);
    return buf;
}

/* Print the aligned table. */
void report_table(FILE *f, const report_t *rep)
{
    fprintf(f, "%-22s %-8s %10s %11s %8s %9s %9s %9s %10s %6s %6s %7s %9s %7s  %s\n",
            "workload", "engine", "ops", "ops/s", "MB/s", "p50(us)", "p99(us)",
            "p99.9(us)", "cpu-us/op", "W-amp", "S-amp", "RSS-MB", "stall-ms",
            "vs-rdb", "note");
    for (int s = 0; s < rep->steps; s++) {
        for (int e = 0; e < rep->engines; e++) {
            const step_result_t *r = &rep->rows[s * rep->engines + e];
            char wa[16], sa[16], st[16], ra[16], cpu[16];
            if (!r->ok && r->ops == 0) {
                fprintf(f, "%-22s %-8s %10s  FAILED: %s\n", r->workload,
                        r->engine, "-", r->note);
                continue;
            }
            double ratio = report_ratio(rep, s, e);
            fprintf(f,
                    "%-22s %-8s %10llu %11.0f %8.1f %9.2f %9.2f %9.2f %10s %6s "
                    "%6s %7.0f %9s %7s  %s%s\n",
                    r->workload, r->engine, (unsigned long long)r->ops,
                    r->ops_per_sec, r->mb_per_sec, r->p50_us, r->p99_us,
                    r->p999_us, fmt_opt(cpu, sizeof(cpu), r->cpu_us_per_op, 2),
                    fmt_opt(wa, sizeof(wa), r->write_amp, 2),
                    fmt_opt(sa, sizeof(sa), r->space_amp, 2), r->peak_rss_mb,
                    fmt_opt(st, sizeof(st), r->stall_ms, 0),
                    ratio < 0 ? "" : (snprintf(ra, sizeof(ra), "%.2fx", ratio), ra),
                    r->ok ? "" : "FAILED ", r->note);
        }
    }
}

/* Write a CSV field holding free text, quoted. */
static void csv_text(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

/* Write a numeric CSV field, empty when v < 0. */
static void csv_num(FILE *f, double v, int prec)
{
    if (v >= 0)
        fprintf(f, "%.*f", prec, v);
    fputc(',', f);
}

/* Write the CSV file. */
int report_csv(const char *path, const report_t *rep)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "engine,workload,ops,ops_per_sec,mb_per_sec,p50_us,p99_us,"
               "p999_us,cpu_us_per_op,write_amp,space_amp,peak_rss_mb,stall_ms,"
               "ratio_vs_rocksdb,seconds,settle_ms,ok,note\n");
    for (int s = 0; s < rep->steps; s++) {
        for (int e = 0; e < rep->engines; e++) {
            const step_result_t *r = &rep->rows[s * rep->engines + e];
            fprintf(f, "%s,%s,%llu,", r->engine, r->workload,
                    (unsigned long long)r->ops);
            csv_num(f, r->ops_per_sec, 1);
            csv_num(f, r->mb_per_sec, 2);
            csv_num(f, r->p50_us, 3);
            csv_num(f, r->p99_us, 3);
            csv_num(f, r->p999_us, 3);
            csv_num(f, r->cpu_us_per_op, 3);
            csv_num(f, r->write_amp, 3);
            csv_num(f, r->space_amp, 3);
            csv_num(f, r->peak_rss_mb, 1);
            csv_num(f, r->stall_ms, 1);
            csv_num(f, report_ratio(rep, s, e), 3);
            csv_num(f, r->secs, 3);
            csv_num(f, r->settle_ms, 1);
            fprintf(f, "%d,", r->ok);
            csv_text(f, r->note);
            fputc('\n', f);
        }
    }
    return fclose(f) == 0 ? 0 : -1;
}
