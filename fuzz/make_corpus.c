/*
 * make_corpus: writes the seed corpora of the fuzz targets from real files.
 * It builds a small database (two column families, small and separated
 * values, deletes, TTL puts, batches, lz4 and uncompressed tables, data left
 * in the WAL), then cuts from its files:
 *   wal/       WAL files (mode 0) and their records re-framed (mode 1)
 *   batch/     WAL record payloads
 *   sst/       whole tables (modes 0 and 3)
 *   footer/    table footers and properties blocks
 *   block/     index and data blocks (uncompressed payloads)
 *   bloom/     filters with a key that is in them
 *   manifest/  the MANIFEST (mode 0) and its body (mode 7: framed as format 4)
 *   decompress/ values compressed by every codec
 * usage: make_corpus OUTDIR   (scripts/fuzz.sh --regen-corpus)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "env/env.h"
#include "sst/block.h"
#include "sst/compress.h"
#include "sst/format.h"
#include "tidesdb/tidesdb.h"
#include "util/coding.h"
#include "wal/wal.h"

static const char *g_out;
static int g_count[16];

/* Write one seed: mode byte (or -1 for none) + data. */
static void seed(int target, const char *dir, int mode, const void *d, size_t n) {
    if (n > 48 * 1024 || g_count[target] >= 24) return;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", g_out, dir);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/%s/seed-%02d", g_out, dir, g_count[target]++);
    FILE *f = fopen(path, "wb");
    if (!f) return;
    if (mode >= 0) fputc(mode, f);
    fwrite(d, 1, n, f);
    fclose(f);
}

/* Whole file into memory. */
static char *slurp(const char *path, size_t *n) {
    char *d = NULL;
    if (env_read_file(env_posix(), path, &d, n) != TDB_OK) return NULL;
    return d;
}

/* Exit on an engine error. */
static void check(int rc, const char *what) {
    if (rc != TDB_OK) {
        fprintf(stderr, "make_corpus: %s: %s: %s\n", what, tdb_strerror(rc), tdb_last_error());
        exit(1);
    }
}

/* Cut footer, properties, index, data and filter blocks out of a table. */
static void cut_table(const char *d, size_t n) {
    if (n < SST_FOOTER_SIZE) return;
    seed(0, "sst", 0, d, n);
    seed(0, "sst", 3, d, n);
    seed(1, "footer", -1, d + n - SST_FOOTER_SIZE, SST_FOOTER_SIZE);
    sst_footer_t ft;
    if (sst_footer_decode(d + n - SST_FOOTER_SIZE, &ft, "seed") != TDB_OK) return;
    if (ft.props.offset + ft.props.size <= n) seed(1, "footer", -1, d + ft.props.offset, ft.props.size);
    if (ft.index.offset + ft.index.size <= n) seed(2, "block", 1, d + ft.index.offset, ft.index.size);
    if (ft.filter.size && ft.filter.offset + ft.filter.size <= n) {
        /* bloom seed: key length, a key likely in the table ("k0000..."), filter */
        char buf[64 * 1024];
        const char *key = "key000010";
        size_t kl = strlen(key);
        if (1 + kl + ft.filter.size <= sizeof buf) {
            buf[0] = (char)kl;
            memcpy(buf + 1, key, kl);
            memcpy(buf + 1 + kl, d + ft.filter.offset, ft.filter.size);
            seed(3, "bloom", -1, buf, 1 + kl + ft.filter.size);
        }
    }
    /* Data blocks: walk the index (a raw block of handles). */
    if (ft.index.offset + ft.index.size > n) return;
    block_iter_t it;
    block_iter_init(&it, sst_key_cmp);
    if (block_iter_set(&it, slice_make(d + ft.index.offset, ft.index.size)) == TDB_OK) {
        int k = 0;
        for (block_iter_seek_to_first(&it); block_iter_valid(&it) && k < 4; block_iter_next(&it), k++) {
            slice_t hv = block_iter_value(&it);
            uint64_t off, sz;
            const char *q = dec_varint64(hv.data, hv.data + hv.size, &off);
            if (!q || !dec_varint64(q, hv.data + hv.size, &sz) || off + sz + SST_TRAILER_SIZE > n) continue;
            unsigned type;
            if (sst_check_record(d + off, sz, &type, "seed", "block", off) != TDB_OK) continue;
            buf_t out = {0};
            if (tdb_decompress((int)type, slice_make(d + off, sz), 1 << 20, &out) == TDB_OK)
                seed(2, "block", 1, out.data, out.size);
            buf_free(&out);
        }
    }
    block_iter_free(&it);
}

/* Seed one WAL file: whole (mode 0), its payloads, re-framed (mode 1). */
static void seed_wal(const char *path, const char *d, size_t n) {
    seed(4, "wal", 0, d, n < 32768 ? n : 32768); /* a prefix is a torn log */
    wal_reader_t *r;
    if (wal_reader_open(env_posix(), path, &r) != TDB_OK) return;
    buf_t framed = {0};
    slice_t rec;
    while (wal_reader_next(r, &rec) == TDB_OK) {
        seed(5, "batch", -1, rec.data, rec.size);
        if (rec.size < 65536 && framed.size < 32768) {
            char hdr[2] = {(char)(rec.size & 0xff), (char)(rec.size >> 8)};
            buf_append(&framed, hdr, 2);
            buf_append(&framed, rec.data, rec.size);
        }
    }
    seed(4, "wal", 1, framed.data, framed.size);
    buf_free(&framed);
    wal_reader_close(r);
}

/* Seed every non-empty WAL in dir. */
static void seed_wals(const char *dir) {
    char **names;
    size_t nn;
    if (env_posix()->list_dir(env_posix(), dir, &names, &nn) != TDB_OK) return;
    for (size_t i = 0; i < nn; i++) {
        size_t len = strlen(names[i]);
        if (len < 5 || strcmp(names[i] + len - 4, ".log")) continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        size_t n;
        char *d = slurp(path, &n);
        if (d && n) seed_wal(path, d, n);
        free(d);
    }
    env_free_list(names, nn);
}

/* Build the database, then cut the seeds out of its files. */
int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: make_corpus OUTDIR\n");
        return 2;
    }
    g_out = argv[1];
    mkdir(g_out, 0755);
    char dbdir[] = "/tmp/tdb-corpus-XXXXXX";
    if (!mkdtemp(dbdir)) return 1;

    tdb_config_t c;
    tdb_config_default(&c);
    c.log_level = TDB_LOG_NONE;
    c.default_cf.sync_mode = TDB_SYNC_NONE;
    c.default_cf.compression = TDB_COMPRESS_NONE;
    c.default_cf.write_buffer_size = 64 << 10;
    tdb_t *db;
    check(tdb_open(dbdir, &c, &db), "open");
    tdb_cf_t *def, *other;
    check(tdb_get_cf(db, TDB_DEFAULT_CF, &def), "cf");
    tdb_cf_config_t oc = c.default_cf;
    oc.compression = TDB_COMPRESS_LZ4;
    oc.value_threshold = 64;
    check(tdb_create_cf(db, "other", &oc, &other), "create cf");
    char k[32], v[2048];
    for (int i = 0; i < 300; i++) {
        snprintf(k, sizeof k, "key%06d", i * 10);
        size_t vl = (size_t)(i % 7) * 90 + 5;
        for (size_t j = 0; j < vl; j++) v[j] = (char)('a' + (i + j) % 13);
        check(tdb_put(db, i % 2 ? def : other, k, strlen(k), v, vl, i % 11 == 0 ? 3600 : 0), "put");
        if (i % 13 == 0) check(tdb_delete(db, def, k, strlen(k)), "delete");
    }
    seed_wals(dbdir); /* the WAL before the flush retires it */
    check(tdb_flush(db, NULL), "flush");
    tdb_batch_t *b;
    check(tdb_batch_create(&b), "batch");
    for (int i = 0; i < 20; i++) {
        snprintf(k, sizeof k, "bkey%03d", i);
        tdb_batch_put(b, i % 2 ? def : other, k, strlen(k), "value", 5, i == 3 ? 60 : 0);
        if (i % 5 == 0) tdb_batch_delete(b, def, "key000010", 9);
        if (i % 4 == 3) {
            check(tdb_write(db, b), "write");
            tdb_batch_clear(b);
        }
    }
    tdb_batch_destroy(b);
    check(tdb_put(db, def, "x", 1, "", 0, 0), "put empty");
    check(tdb_close(db), "close");

    char **names;
    size_t nn;
    check(env_posix()->list_dir(env_posix(), dbdir, &names, &nn), "list");
    for (size_t i = 0; i < nn; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dbdir, names[i]);
        size_t n;
        char *d = slurp(path, &n);
        if (!d) continue;
        size_t len = strlen(names[i]);
        if (len > 4 && !strcmp(names[i] + len - 4, ".sst")) {
            cut_table(d, n);
        } else if (len > 4 && !strcmp(names[i] + len - 4, ".log") && n > 0) {
            seed_wal(path, d, n);
        } else if (!strcmp(names[i], "MANIFEST")) {
            seed(6, "manifest", 0, d, n);
            if (n > 16) seed(6, "manifest", 7, d + 12, n - 16);
        }
        free(d);
        unlink(path);
    }
    env_free_list(names, nn);
    rmdir(dbdir);

    /* decompress/: codec byte, log2(max_out), compressed bytes */
    char sample[4096];
    for (size_t j = 0; j < sizeof sample; j++) sample[j] = (char)("tidesdb fuzz "[j % 13] + (j / 512));
    for (int type = 0; type <= TDB_COMPRESS_ZSTD; type++) {
        buf_t out = {0};
        char hdr[2] = {(char)type, 16};
        buf_append(&out, hdr, 2);
        if (tdb_compress(type, slice_make(sample, sizeof sample), &out) == TDB_OK) seed(7, "decompress", -1, out.data, out.size);
        buf_free(&out);
    }
    printf("seeds:");
    const char *names_t[] = {"sst", "footer", "block", "bloom", "wal", "batch", "manifest", "decompress"};
    for (int t = 0; t < 8; t++) printf(" %s=%d", names_t[t], g_count[t]);
    printf("\n");
    return 0;
}
