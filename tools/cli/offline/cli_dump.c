/*
 * cli_dump: tidesdb dump-sst FILE and dump-wal FILE, one data file decoded
 * with the library's own readers (sst/sst.h, wal/wal.h, db/batch.h), so the
 * tool reads exactly what the database would. Neither needs the database's
 * lock: a table is immutable once written, and a log is read up to its size
 * at open (a record being appended reads as a torn tail).
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "db/batch.h"
#include "db/filename.h"
#include "sst/sst.h"
#include "util/error.h"
#include "util/ikey.h"
#include "version/manifest.h"
#include "wal/wal.h"

/* Name of an entry type. */
static const char *type_name(unsigned t) {
    switch (t) {
    case KT_DELETE: return "delete";
    case KT_PUT: return "put";
    case KT_SINGLE_DELETE: return "single-delete";
    case KT_RANGE_DELETE: return "range-delete";
    case KT_PUT_TTL: return "put-ttl";
    default: return "unknown";
    }
}

/* The file number in a path ".../000012.sst" (0 if it has none). */
static uint64_t file_number(const char *path, const char *ext) {
    const char *base = strrchr(path, '/');
    uint64_t n = 0;
    return db_parse_file_name(base ? base + 1 : path, ext, &n) ? n : 0;
}

/* Print one entry: sequence (already formatted), type, family, key and
 * value (a range tombstone's end); a TTL value shows its expiry apart. cf
 * NULL: no family column (tables hold one family). */
static void print_entry(const cli_opts_t *o, int first, const char *seq, unsigned type, const char *cf,
                        slice_t key, slice_t value) {
    uint64_t expiry = 0;
    int has_value = kt_is_value(type) || type == KT_RANGE_DELETE;
    if (type == KT_PUT_TTL && value.size >= 8) {
        expiry = dec_fixed64(value.data);
        value = slice_make(value.data + 8, value.size - 8);
    }
    if (o->json) {
        printf("%s{\"seq\": %s, \"type\": \"%s\"", first ? "\n    " : ",\n    ", seq, type_name(type));
        if (cf) {
            fputs(", \"cf\": ", stdout);
            cli_json_str(stdout, cf);
        }
        fputs(", \"key\": ", stdout);
        cli_encode_json(stdout, key.data, key.size, o->key_fmt);
        if (type == KT_RANGE_DELETE) {
            fputs(", \"end\": ", stdout);
            cli_encode_json(stdout, value.data, value.size, o->key_fmt);
        } else if (has_value && !o->keys_only) {
            fputs(", \"value\": ", stdout);
            cli_encode_json(stdout, value.data, value.size, o->val_fmt);
        }
        if (type == KT_PUT_TTL) printf(", \"expiry\": %llu", (unsigned long long)expiry);
        fputc('}', stdout);
        return;
    }
    printf("  %s\t%s\t", seq, type_name(type));
    if (cf) printf("%s\t", cf);
    cli_encode(stdout, key.data, key.size, o->key_fmt);
    if (type == KT_RANGE_DELETE) {
        fputs("\tend=", stdout);
        cli_encode(stdout, value.data, value.size, o->key_fmt);
    } else if (has_value && !o->keys_only) {
        fputc('\t', stdout);
        cli_encode(stdout, value.data, value.size, o->val_fmt);
    }
    if (type == KT_PUT_TTL) printf("\texpiry=%llu", (unsigned long long)expiry);
    fputc('\n', stdout);
}

/* Print an internal key (user key, sequence, type) as a property. */
static void print_ikey(const cli_opts_t *o, const char *name, const buf_t *k) {
    slice_t ik = buf_slice(k);
    if (!ikey_valid(ik)) {
        printf(o->json ? ", \"%s\": null" : "%-18s (none)\n", name);
        return;
    }
    slice_t u = ikey_user(ik);
    if (o->json) {
        printf(", \"%s\": {\"key\": ", name);
        cli_encode_json(stdout, u.data, u.size, o->key_fmt);
        printf(", \"seq\": %llu, \"type\": \"%s\"}", (unsigned long long)ikey_seq(ik), type_name(ikey_type(ik)));
    } else {
        printf("%-18s ", name);
        cli_encode(stdout, u.data, u.size, o->key_fmt);
        printf(" @ %llu %s\n", (unsigned long long)ikey_seq(ik), type_name(ikey_type(ik)));
    }
}

/* Print a table's properties. */
static void print_props(const cli_opts_t *o, const char *path, const sst_props_t *p) {
    static const char *codecs[] = {"none", "snappy", "lz4", "zstd"};
    const char *codec = p->compression >= 0 && p->compression < 4 ? codecs[p->compression] : "unknown";
    struct {
        const char *name;
        uint64_t v;
    } f[] = {{"file_size", p->file_size},         {"num_entries", p->num_entries},
             {"num_deletes", p->num_deletes},      {"num_range_deletes", p->num_range_deletes},
             {"raw_key_bytes", p->raw_key_bytes},  {"raw_value_bytes", p->raw_value_bytes},
             {"separated_values", p->num_separated_values}, {"data_bytes", p->data_bytes},
             {"min_seq", p->min_seq},              {"max_seq", p->max_seq}};
    if (o->json) {
        fputs("{\"file\": ", stdout);
        cli_json_str(stdout, path);
        printf(", \"compression\": \"%s\"", codec);
        for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) printf(", \"%s\": %llu", f[i].name, (unsigned long long)f[i].v);
    } else {
        printf("%-18s %s\n%-18s %s\n", "file", path, "compression", codec);
        for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) printf("%-18s %llu\n", f[i].name, (unsigned long long)f[i].v);
    }
    print_ikey(o, "smallest", &p->smallest);
    print_ikey(o, "largest", &p->largest);
}

/* tidesdb dump-sst FILE. */
int cli_dump_sst(const cli_opts_t *o) {
    const char *path = o->args[0];
    sst_reader_t *r = NULL;
    int rc = sst_reader_open(env_posix(), path, file_number(path, "sst"), NULL, &r);
    if (rc != TDB_OK) return cli_fail_tdb(rc, path);
    print_props(o, path, sst_reader_props(r));
    const range_del_t *rd = NULL;
    size_t nrd = sst_reader_range_dels(r, &rd);
    char seq[32];
    fputs(o->json ? ", \"range_tombstones\": [" : "range tombstones:\n", stdout);
    for (size_t i = 0; i < nrd; i++) {
        snprintf(seq, sizeof seq, "%llu", (unsigned long long)rd[i].seq);
        print_entry(o, i == 0, seq, KT_RANGE_DELETE, NULL, rd[i].start, rd[i].end);
    }
    fputs(o->json ? (nrd ? "\n  ], \"entries\": [" : "], \"entries\": [") : "entries (seq, type, key, value):\n",
          stdout);
    iter_t *it = sst_reader_iter(r);
    long long n = 0;
    if (!it) {
        rc = TDB_ERR_NOMEM;
    } else {
        for (iter_seek_to_first(it); iter_valid(it) && n != o->limit; iter_next(it), n++) {
            slice_t k = iter_key(it);
            snprintf(seq, sizeof seq, "%llu", (unsigned long long)ikey_seq(k));
            slice_t v = o->keys_only ? slice_make(NULL, 0) : iter_value(it);
            print_entry(o, n == 0, seq, ikey_type(k), NULL, ikey_user(k), v);
        }
        rc = iter_status(it);
        iter_destroy(it);
    }
    if (o->json) printf("%s], \"shown\": %lld, \"error\": %s}\n", n ? "\n  " : "", n, rc == TDB_OK ? "null" : "true");
    fflush(stdout);
    sst_reader_unref(r);
    return rc == TDB_OK ? CLI_OK : cli_fail_tdb(rc, path);
}

typedef struct wal_dump {
    const cli_opts_t *o;
    const manifest_t *m; /* family names, or NULL */
    int first, numbered;
} wal_dump_t;

/* Print one entry of a decoded record. */
static int wal_entry(void *ctx, uint64_t seq, const batch_entry_t *e) {
    wal_dump_t *d = (wal_dump_t *)ctx;
    char s[32], cf[32];
    const char *name = NULL;
    for (int i = 0; d->m && i < d->m->ncf; i++)
        if (d->m->cfs[i].id == e->cf_id) name = d->m->cfs[i].name;
    if (!name) {
        snprintf(cf, sizeof cf, "#%u", e->cf_id);
        name = cf;
    }
    if (d->numbered) snprintf(s, sizeof s, "%llu", (unsigned long long)seq);
    else snprintf(s, sizeof s, d->o->json ? "null" : "-");
    print_entry(d->o, d->first, s, e->type, name, e->key, e->value);
    d->first = 0;
    return TDB_OK;
}

/* Files never go away while the dump holds the manifest's versions. */
static void ignore_obsolete(void *ctx, uint64_t number) {
    (void)ctx;
    (void)number;
}

/* Print one record's head and its entries; a transaction record's kind. */
static int wal_record(const cli_opts_t *o, const manifest_t *m, int fixed, slice_t rec, uint64_t offset,
                      uint64_t *expected, buf_t *rep, int first) {
    wal_dump_t d = {o, m, 1, 1};
    batch_txn_rec_t tr;
    int kind = fixed ? 0 : batch_txn_record(rec, expected, &tr);
    if (kind < 0) return kind;
    if (kind == 1) {
        char kind_buf[24];
        const char *kname = tr.kind == BATCH_TXN_PREPARE ? "prepare"
                            : tr.kind == BATCH_TXN_COMMIT ? "commit"
                            : tr.kind == BATCH_TXN_ROLLBACK ? "rollback"
                            : tr.kind == BATCH_RELOG_HEAD ? "relog-head"
                            : tr.kind == BATCH_RELOG_GEN ? "relog-gen" : kind_buf;
        snprintf(kind_buf, sizeof kind_buf, "kind-%d", tr.kind);
        if (o->json) {
            printf("%s{\"offset\": %llu, \"bytes\": %zu, \"txn\": \"%s\", \"xid\": ", first ? "\n  " : ",\n  ",
                   (unsigned long long)offset, rec.size, kname);
            cli_encode_json(stdout, tr.xid.data, tr.xid.size, o->key_fmt);
            if (tr.kind == BATCH_TXN_COMMIT) printf(", \"seq\": %llu", (unsigned long long)tr.seq);
            if (tr.kind >= BATCH_RELOG_HEAD) printf(", \"log\": %llu", (unsigned long long)tr.number);
            printf(", \"count\": %u, \"entries\": [", tr.count);
        } else {
            printf("record @%llu (%zu bytes): %s xid=", (unsigned long long)offset, rec.size, kname);
            cli_encode(stdout, tr.xid.data, tr.xid.size, o->key_fmt);
            if (tr.kind == BATCH_TXN_COMMIT) printf(" seq=%llu", (unsigned long long)tr.seq);
            if (tr.kind >= BATCH_RELOG_HEAD) printf(" log=%llu", (unsigned long long)tr.number);
            printf(" count=%u\n", tr.count);
        }
        int rc = TDB_OK;
        if (tr.kind == BATCH_TXN_PREPARE) { /* entries logged unnumbered: a rep around them */
            char hdr[BATCH_HEADER] = {0};
            enc_fixed32(hdr + 8, tr.count);
            buf_clear(rep);
            d.numbered = 0;
            if ((rc = buf_append(rep, hdr, sizeof hdr)) == TDB_OK &&
                (rc = buf_append(rep, tr.entries.data, tr.entries.size)) == TDB_OK)
                rc = batch_iterate(buf_slice(rep), wal_entry, &d);
        }
        if (o->json) fputs(d.first ? "]}" : "\n  ]}", stdout);
        return rc;
    }
    int rc = fixed ? batch_from_wal_fixed(rec, rep) : batch_from_wal(rec, expected, rep);
    if (rc != TDB_OK) return rc;
    uint64_t seq = dec_fixed64(rep->data);
    uint32_t count = batch_count_raw(buf_slice(rep));
    if (o->json)
        printf("%s{\"offset\": %llu, \"bytes\": %zu, \"seq\": %llu, \"count\": %u, \"entries\": [", first ? "\n  " : ",\n  ",
               (unsigned long long)offset, rec.size, (unsigned long long)seq, count);
    else
        printf("record @%llu (%zu bytes): seq=%llu count=%u\n", (unsigned long long)offset, rec.size,
               (unsigned long long)seq, count);
    rc = batch_iterate(buf_slice(rep), wal_entry, &d);
    if (o->json) fputs(d.first ? "]}" : "\n  ]}", stdout);
    return rc;
}

/* tidesdb dump-wal FILE. */
int cli_dump_wal(const cli_opts_t *o) {
    const char *path = o->args[0];
    env_t *env = env_posix();
    wal_reader_t *r = NULL;
    int rc = wal_reader_open(env, path, &r);
    if (rc != TDB_OK) return cli_fail_tdb(rc, path);
    /* The MANIFEST beside the log names the families and says whether the
     * log's records have the fixed 12-byte header (format <= 2). */
    char dir[4096];
    const char *slash = strrchr(path, '/');
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == path) snprintf(dir, sizeof dir, "/");
    else snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    manifest_t m;
    memset(&m, 0, sizeof m);
    int have_m = manifest_read(env, dir, &m, ignore_obsolete, NULL) == TDB_OK;
    int fixed = have_m && m.format < 3;
    if (o->json) {
        fputs("{\"file\": ", stdout);
        cli_json_str(stdout, path);
        printf(", \"families_named\": %s, \"records\": [", have_m ? "true" : "false");
    } else {
        printf("file %s%s\n", path, have_m ? "" : " (no readable MANIFEST beside it: families shown by id)");
    }
    uint64_t expected = 0, offset = 0;
    long long n = 0;
    buf_t rep = {0};
    const char *end = "clean";
    char detail[1024] = "";
    for (; n != o->limit; n++) {
        slice_t rec;
        rc = wal_reader_next(r, &rec);
        if (rc == TDB_ERR_NOT_FOUND) {
            rc = TDB_OK;
            if (wal_reader_torn_tail(r)) end = "torn tail";
            break;
        }
        if (rc == TDB_OK) rc = wal_record(o, have_m ? &m : NULL, fixed, rec, offset, &expected, &rep, n == 0);
        if (rc != TDB_OK) {
            end = "damaged";
            snprintf(detail, sizeof detail, "%s", tdb_last_error());
            break;
        }
        offset = wal_reader_valid_end(r);
    }
    if (n == o->limit) end = "limit reached";
    if (o->json) {
        printf("%s], \"shown\": %lld, \"end\": \"%s\", \"valid_end\": %llu, \"detail\": ", n ? "\n  " : "", n, end,
               (unsigned long long)wal_reader_valid_end(r));
        cli_json_str(stdout, detail);
        fputs("}\n", stdout);
    } else {
        printf("%lld records, end: %s at offset %llu%s%s\n", n, end, (unsigned long long)wal_reader_valid_end(r),
               *detail ? ": " : "", detail);
    }
    fflush(stdout);
    buf_free(&rep);
    if (have_m) manifest_free(&m);
    wal_reader_close(r);
    return rc == TDB_OK ? CLI_OK : cli_fail_tdb(rc, path);
}
