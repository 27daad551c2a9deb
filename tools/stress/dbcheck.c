/* dbcheck: verify every data file of a closed database (see dbcheck.h). */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "db/batch.h"
#include "db/filename.h"
#include "util/error.h"
#include "sst/sst.h"
#include "dbcheck.h"
#include "version/manifest.h"
#include "version/table_cache.h"
#include "wal/wal.h"

/* Print a report line. */
static void say(const dbcheck_opts_t *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Print one report line (if there is an output). */
static void say(const dbcheck_opts_t *o, const char *fmt, ...) {
    if (!o->out) return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(o->out, fmt, ap);
    va_end(ap);
    fputc('\n', o->out);
}

/* Record a damaged file. */
static void damaged(dbcheck_result_t *r, const dbcheck_opts_t *o, const char *name, const char *detail) {
    if (r->files_damaged < DBCHECK_MAX_DAMAGED)
        snprintf(r->damaged[r->files_damaged], sizeof r->damaged[0], "%s", name);
    r->files_damaged++;
    say(o, "DAMAGED  %s: %s", name, detail);
}

/* 1 if name is among the damaged files recorded. */
int dbcheck_is_damaged(const dbcheck_result_t *r, const char *name) {
    uint64_t n = r->files_damaged < DBCHECK_MAX_DAMAGED ? r->files_damaged : DBCHECK_MAX_DAMAGED;
    for (uint64_t i = 0; i < n; i++)
        if (strcmp(r->damaged[i], name) == 0) return 1;
    return 0;
}

/* Files never go away while we hold versions of a closed database. */
static void ignore_obsolete(void *ctx, uint64_t number) {
    (void)ctx;
    (void)number;
}

/* Verify one table; meta (may be NULL) is the manifest's record of it.
 * Returns 0 if healthy; detail filled otherwise. */
static int check_table(env_t *env, const char *dir, uint64_t number, const file_meta_t *meta, char *detail,
                       size_t cap, uint64_t *entries) {
    char path[4096];
    sst_file_name(path, sizeof path, dir, number);
    uint64_t size = 0;
    int rc = env->file_size(env, path, &size);
    if (rc != TDB_OK) {
        snprintf(detail, cap, "%s", rc == TDB_ERR_NOT_FOUND ? "missing (listed in MANIFEST)" : tdb_last_error());
        return -1;
    }
    if (meta && size != meta->file_size) {
        snprintf(detail, cap, "size %llu, MANIFEST records %llu", (unsigned long long)size,
                 (unsigned long long)meta->file_size);
        return -1;
    }
    sst_reader_t *r = NULL;
    rc = sst_reader_open(env, path, number, NULL, &r);
    if (rc == TDB_OK) rc = sst_reader_verify(r);
    if (rc != TDB_OK) {
        snprintf(detail, cap, "%s: %s", tdb_strerror(rc), tdb_last_error());
        sst_reader_unref(r);
        return -1;
    }
    const sst_props_t *p = sst_reader_props(r);
    *entries = p->num_entries;
    int bad = 0;
    if (meta) {
        if (p->num_entries != meta->num_entries) {
            snprintf(detail, cap, "%llu entries, MANIFEST records %llu", (unsigned long long)p->num_entries,
                     (unsigned long long)meta->num_entries);
            bad = 1;
        } else if (!slice_equal(buf_slice(&p->smallest), buf_slice(&meta->smallest)) ||
                   !slice_equal(buf_slice(&p->largest), buf_slice(&meta->largest))) {
            snprintf(detail, cap, "key range differs from the MANIFEST's record");
            bad = 1;
        }
    }
    sst_reader_unref(r);
    return bad ? -1 : 0;
}

typedef struct wal_ctx {
    uint64_t entries;
} wal_ctx_t;

/* Count a decoded batch entry. */
static int count_entry(void *ctx, uint64_t seq, const batch_entry_t *e) {
    (void)seq;
    (void)e;
    ((wal_ctx_t *)ctx)->entries++;
    return TDB_OK;
}

/* Verify one WAL. Returns 0 healthy, 1 torn tail (detail set), -1 damaged. */
static int check_wal(env_t *env, const char *path, char *detail, size_t cap, uint64_t *records) {
    wal_reader_t *r = NULL;
    int rc = wal_reader_open(env, path, &r);
    if (rc != TDB_OK) {
        snprintf(detail, cap, "%s", tdb_last_error());
        return -1;
    }
    uint64_t n = 0, last_seq = 0, expected = 0;
    /* Inside a relog (db/switch.c, RELOG_HEAD .. RELOG_GEN(its number)),
     * records go family by family, so sequences climb per family only. */
    uint64_t relog = 0, relog_max = 0;
    buf_t b = {0};
    int result = 0;
    for (;;) {
        slice_t rec;
        rc = wal_reader_next(r, &rec);
        if (rc == TDB_ERR_NOT_FOUND) break;
        if (rc != TDB_OK) {
            snprintf(detail, cap, "%s: %s", tdb_strerror(rc), tdb_last_error());
            result = -1;
            break;
        }
        wal_ctx_t c = {0};
        /* A two-phase commit record (db/batch.h): a prepare's entries are
         * decoded like a batch's, a commit numbers its count entries. */
        batch_txn_rec_t tr;
        int txn = batch_txn_record(rec, &expected, &tr);
        if (txn == 1 && tr.kind == BATCH_TXN_PREPARE) {
            char hdr[BATCH_HEADER] = {0};
            enc_fixed32(hdr + 8, tr.count);
            buf_clear(&b);
            if ((rc = buf_append(&b, hdr, sizeof hdr)) == TDB_OK && (rc = buf_append(&b, tr.entries.data, tr.entries.size)) == TDB_OK)
                rc = batch_iterate(buf_slice(&b), count_entry, &c);
            txn = rc == TDB_OK ? 1 : rc;
        }
        if (txn < 0) {
            snprintf(detail, cap, "record %llu: %s", (unsigned long long)n, tdb_last_error());
            result = -1;
            break;
        }
        if (txn == 1) {
            if (tr.kind == BATCH_RELOG_HEAD) {
                relog = tr.number;
                relog_max = last_seq;
            } else if (tr.kind == BATCH_RELOG_GEN && relog && tr.number == relog) {
                relog = 0;
                last_seq = relog_max;
            }
            if (tr.kind == BATCH_TXN_COMMIT && tr.count) {
                if (tr.seq <= last_seq) {
                    snprintf(detail, cap, "record %llu: sequence %llu after %llu", (unsigned long long)n,
                             (unsigned long long)tr.seq, (unsigned long long)last_seq);
                    result = -1;
                    break;
                }
                last_seq = tr.seq + tr.count - 1;
            }
            n++;
            continue;
        }
        rc = batch_from_wal(rec, &expected, &b);
        if (rc == TDB_OK) rc = batch_iterate(buf_slice(&b), count_entry, &c);
        if (rc != TDB_OK) {
            snprintf(detail, cap, "record %llu: %s", (unsigned long long)n, tdb_last_error());
            result = -1;
            break;
        }
        uint64_t seq = dec_fixed64(b.data);
        if (relog) {
            if (c.entries && seq + c.entries - 1 > relog_max) relog_max = seq + c.entries - 1;
            n++;
            continue;
        }
        if (c.entries && seq <= last_seq) {
            snprintf(detail, cap, "record %llu: sequence %llu after %llu", (unsigned long long)n,
                     (unsigned long long)seq, (unsigned long long)last_seq);
            result = -1;
            break;
        }
        if (c.entries) last_seq = seq + c.entries - 1;
        n++;
    }
    if (result == 0 && wal_reader_torn_tail(r)) {
        snprintf(detail, cap, "torn tail after offset %llu", (unsigned long long)wal_reader_valid_end(r));
        result = 1;
    }
    *records = n;
    buf_free(&b);
    wal_reader_close(r);
    return result;
}

/* qsort order of file numbers. */
static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Check every data file of dir (see dbcheck.h). */
int dbcheck_run(env_t *env, const char *dir, const dbcheck_opts_t *opts, dbcheck_result_t *r) {
    dbcheck_opts_t quiet = {0, 0, NULL};
    const dbcheck_opts_t *o = opts ? opts : &quiet;
    memset(r, 0, sizeof *r);
    char **names = NULL;
    size_t nnames = 0;
    int rc = env->list_dir(env, dir, &names, &nnames);
    if (rc != TDB_OK) return rc;
    uint64_t *wals = (uint64_t *)calloc(nnames + 1, sizeof *wals);
    uint64_t *tables = (uint64_t *)calloc(nnames + 1, sizeof *tables);
    size_t nwals = 0, ntables = 0;
    char detail[1024];
    if (!wals || !tables) {
        free(wals);
        free(tables);
        env_free_list(names, nnames);
        return tdb_err(TDB_ERR_NOMEM, "dbcheck");
    }
    int have_manifest = 0;
    for (size_t i = 0; i < nnames; i++) {
        uint64_t num;
        if (db_parse_file_name(names[i], "log", &num)) wals[nwals++] = num;
        else if (db_parse_file_name(names[i], "sst", &num)) tables[ntables++] = num;
        else if (strcmp(names[i], MANIFEST_NAME) == 0) have_manifest = 1;
        else if (o->verbose) say(o, "INFO     %s: not a data file (not checked)", names[i]);
    }
    qsort(wals, nwals, sizeof *wals, cmp_u64);
    qsort(tables, ntables, sizeof *tables, cmp_u64);

    /* MANIFEST and the tables it lists. */
    manifest_t m;
    memset(&m, 0, sizeof m);
    int manifest_ok = 0;
    char *listed = (char *)calloc(ntables + 1, 1);
    if (have_manifest) {
        r->files_checked++;
        rc = manifest_read(env, dir, &m, ignore_obsolete, NULL);
        if (rc != TDB_OK) {
            snprintf(detail, sizeof detail, "%s: %s", tdb_strerror(rc), tdb_last_error());
            damaged(r, o, MANIFEST_NAME, detail);
        } else {
            manifest_ok = 1;
            uint64_t nfiles = 0;
            for (int c = 0; c < m.ncf; c++)
                for (int l = 1; l < TDB_MAX_LEVELS; l++) nfiles += (uint64_t)version_num_files(m.cfs[c].version, l);
            if (o->verbose) say(o, "OK       %s: %d families, %llu tables", MANIFEST_NAME, m.ncf, (unsigned long long)nfiles);
        }
    } else if (nwals || ntables) {
        r->files_checked++;
        damaged(r, o, MANIFEST_NAME, "missing, but data files exist");
    }
    for (int c = 0; manifest_ok && c < m.ncf; c++) {
        for (int l = 1; l < TDB_MAX_LEVELS; l++) {
            for (int i = 0; i < version_num_files(m.cfs[c].version, l); i++) {
                const file_meta_t *f = version_file(m.cfs[c].version, l, i);
                char name[64];
                snprintf(name, sizeof name, "%06llu.sst", (unsigned long long)f->number);
                for (size_t t = 0; t < ntables; t++)
                    if (tables[t] == f->number) listed[t] = 1;
                uint64_t entries = 0;
                r->files_checked++;
                r->tables++;
                if (check_table(env, dir, f->number, f, detail, sizeof detail, &entries) != 0) {
                    damaged(r, o, name, detail);
                } else {
                    r->table_entries += entries;
                    if (o->verbose)
                        say(o, "OK       %s: family '%s' level %d, %llu entries", name, m.cfs[c].name, l,
                            (unsigned long long)entries);
                }
            }
        }
    }
    /* Tables the manifest does not list. */
    for (size_t t = 0; t < ntables; t++) {
        if (listed && listed[t]) continue;
        char name[64];
        snprintf(name, sizeof name, "%06llu.sst", (unsigned long long)tables[t]);
        uint64_t entries = 0;
        r->files_checked++;
        int bad = check_table(env, dir, tables[t], NULL, detail, sizeof detail, &entries) != 0;
        if (!manifest_ok) {
            r->tables++;
            if (bad) damaged(r, o, name, detail);
            else if (o->verbose) say(o, "OK       %s: %llu entries (MANIFEST unreadable: checked alone)", name,
                                     (unsigned long long)entries);
        } else {
            r->orphans++;
            if (o->verbose) say(o, "INFO     %s: not in MANIFEST (left by an unfinished flush or compaction; deleted at open)%s%s",
                name, bad ? ": " : "", bad ? detail : "");
        }
    }
    /* WALs, oldest first; only the newest may be torn. */
    for (size_t i = 0; i < nwals; i++) {
        char path[4096], name[64];
        snprintf(name, sizeof name, "%06llu.log", (unsigned long long)wals[i]);
        snprintf(path, sizeof path, "%s/%s", dir, name);
        uint64_t records = 0;
        r->files_checked++;
        r->wals++;
        int res = check_wal(env, path, detail, sizeof detail, &records);
        r->wal_records += records;
        if (res < 0) {
            damaged(r, o, name, detail);
        } else if (res > 0) {
            if (o->allow_torn_tail && i + 1 == nwals) {
                if (o->verbose) say(o, "TORN     %s: %s (expected after a crash; dropped at open)", name, detail);
            } else {
                damaged(r, o, name, detail);
            }
        } else if (o->verbose) {
            say(o, "OK       %s: %llu records", name, (unsigned long long)records);
        }
    }
    manifest_free(&m);
    free(listed);
    free(wals);
    free(tables);
    env_free_list(names, nnames);
    if (o->verbose || r->files_damaged) say(o, "%llu files checked (%llu tables with %llu entries, %llu WALs with %llu records, %llu orphans): %llu damaged",
        (unsigned long long)r->files_checked, (unsigned long long)r->tables, (unsigned long long)r->table_entries,
        (unsigned long long)r->wals, (unsigned long long)r->wal_records, (unsigned long long)r->orphans,
        (unsigned long long)r->files_damaged);
    return r->files_damaged ? 1 : 0;
}
