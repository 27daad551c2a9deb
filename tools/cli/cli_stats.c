/*
 * cli_stats: the shape of each column family and the database counters,
 * from tdb_get_stats (and the directory listing for WAL bytes on disk).
 *
 * Figures that are computed here, not read:
 *  - space amplification of a family = bytes of all its levels / bytes of
 *    its deepest non-empty level (RocksDB's estimate: the last level holds
 *    about the live data once the tree is compacted); none without tables;
 *  - write amplification = (WAL + flush + compaction bytes written) / user
 *    bytes written, the header's definition; the counters run from this
 *    open, so none unless this process wrote.
 */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

/* Files and bytes over all levels, and the deepest non-empty level's bytes. */
static void level_sums(const tdb_stats_t *s, uint64_t *files, uint64_t *bytes, uint64_t *last) {
    *files = *bytes = *last = 0;
    for (int l = 1; l < TDB_MAX_LEVELS; l++) {
        *files += s->levels[l].files;
        *bytes += s->levels[l].bytes;
        if (s->levels[l].files) *last = s->levels[l].bytes;
    }
}

/* Print a ratio, or "n/a" (JSON null) when the divisor is 0. */
static void ratio(const cli_opts_t *o, uint64_t num, uint64_t den) {
    if (den) printf("%.3f", (double)num / (double)den);
    else fputs(o->json ? "null" : "n/a", stdout);
}

/* Print one family's section. */
static void print_cf(const cli_opts_t *o, const char *name, const tdb_stats_t *s, int first) {
    uint64_t files, bytes, last;
    level_sums(s, &files, &bytes, &last);
    if (o->json) {
        fputs(first ? "\n    {\"name\": " : ",\n    {\"name\": ", stdout);
        cli_json_str(stdout, name);
        fputs(", \"levels\": [", stdout);
        int n = 0;
        for (int l = 1; l < TDB_MAX_LEVELS; l++)
            if (s->levels[l].files)
                printf("%s{\"level\": %d, \"files\": %llu, \"bytes\": %llu}", n++ ? ", " : "", l,
                       (unsigned long long)s->levels[l].files, (unsigned long long)s->levels[l].bytes);
        printf("], \"files\": %llu, \"bytes\": %llu, \"memtable_bytes\": %llu, \"immutable_memtables\": %llu, "
               "\"entries_estimate\": %llu, \"compactions_pending\": %llu, \"space_amplification\": ",
               (unsigned long long)files, (unsigned long long)bytes, (unsigned long long)s->memtable_bytes,
               (unsigned long long)s->immutable_memtables, (unsigned long long)s->num_entries_estimate,
               (unsigned long long)s->compactions_pending);
        ratio(o, bytes, last);
        fputc('}', stdout);
        return;
    }
    printf("column family '%s'\n  %-7s %8s %16s\n", name, "level", "files", "bytes");
    for (int l = 1; l < TDB_MAX_LEVELS; l++)
        if (s->levels[l].files)
            printf("  %-7d %8llu %16llu\n", l, (unsigned long long)s->levels[l].files,
                   (unsigned long long)s->levels[l].bytes);
    printf("  %-7s %8llu %16llu\n", "total", (unsigned long long)files, (unsigned long long)bytes);
    printf("  memtable bytes        %llu (%llu immutable memtables)\n", (unsigned long long)s->memtable_bytes,
           (unsigned long long)s->immutable_memtables);
    printf("  entries (estimate)    %llu\n", (unsigned long long)s->num_entries_estimate);
    printf("  compactions pending   %llu\n", (unsigned long long)s->compactions_pending);
    fputs("  space amplification   ", stdout);
    ratio(o, bytes, last);
    fputs("\n\n", stdout);
}

/* Bytes of the WAL files (NNNNNN.log) in dir. */
static uint64_t wal_bytes_on_disk(const char *dir) {
    DIR *d = opendir(dir);
    uint64_t total = 0;
    if (!d) return 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        size_t n = strlen(e->d_name);
        if (n < 5 || strcmp(e->d_name + n - 4, ".log") != 0 || strspn(e->d_name, "0123456789") != n - 4) continue;
        char path[4096];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (stat(path, &st) == 0) total += (uint64_t)st.st_size;
    }
    closedir(d);
    return total;
}

/* Print the database-wide counters. */
static void print_db(const cli_opts_t *o, const tdb_stats_t *s, uint64_t wal_disk) {
    uint64_t written = s->wal_bytes_written + s->flush_bytes_written + s->compaction_bytes_written;
    uint64_t lookups = s->block_cache_hits + s->block_cache_misses;
    if (o->json) {
        fputs("\"database\": {\"write_amplification\": ", stdout);
        ratio(o, written, s->user_bytes_written);
        fputs(", \"block_cache_hit_rate\": ", stdout);
        ratio(o, s->block_cache_hits, lookups);
        printf(", \"block_cache_hits\": %llu, \"block_cache_misses\": %llu, \"block_cache_bytes\": %llu, "
               "\"user_bytes_written\": %llu, \"wal_bytes_written\": %llu, \"flush_bytes_written\": %llu, "
               "\"compaction_bytes_read\": %llu, \"compaction_bytes_written\": %llu, \"flushes\": %llu, "
               "\"compactions\": %llu, \"stalls\": %llu, \"stall_micros\": %llu, \"wal_bytes_on_disk\": %llu, "
               "\"memory_budget\": %llu, \"last_sequence\": %llu}",
               (unsigned long long)s->block_cache_hits, (unsigned long long)s->block_cache_misses,
               (unsigned long long)s->block_cache_bytes, (unsigned long long)s->user_bytes_written,
               (unsigned long long)s->wal_bytes_written, (unsigned long long)s->flush_bytes_written,
               (unsigned long long)s->compaction_bytes_read, (unsigned long long)s->compaction_bytes_written,
               (unsigned long long)s->flushes, (unsigned long long)s->compactions, (unsigned long long)s->stalls,
               (unsigned long long)s->stall_micros, (unsigned long long)wal_disk,
               (unsigned long long)s->memory_budget, (unsigned long long)s->last_sequence);
        return;
    }
    printf("database (counters since this open)\n");
    printf("  last sequence         %llu\n", (unsigned long long)s->last_sequence);
    printf("  WAL bytes on disk     %llu\n", (unsigned long long)wal_disk);
    fputs("  write amplification   ", stdout);
    ratio(o, written, s->user_bytes_written);
    printf("\n  bytes written         user %llu, WAL %llu, flush %llu, compaction %llu (read %llu)\n",
           (unsigned long long)s->user_bytes_written, (unsigned long long)s->wal_bytes_written,
           (unsigned long long)s->flush_bytes_written, (unsigned long long)s->compaction_bytes_written,
           (unsigned long long)s->compaction_bytes_read);
    printf("  flushes, compactions  %llu, %llu\n", (unsigned long long)s->flushes, (unsigned long long)s->compactions);
    printf("  block cache           %llu hits, %llu misses, hit rate ", (unsigned long long)s->block_cache_hits,
           (unsigned long long)s->block_cache_misses);
    ratio(o, s->block_cache_hits, lookups);
    printf(", %llu bytes held\n", (unsigned long long)s->block_cache_bytes);
    printf("  write stalls          %llu (%llu us)\n", (unsigned long long)s->stalls,
           (unsigned long long)s->stall_micros);
    printf("  memory budget         %llu\n", (unsigned long long)s->memory_budget);
}

/* tidesdb stats. */
int cli_stats(const cli_opts_t *o) {
    tdb_t *db = NULL;
    char **names = NULL;
    size_t count = 0;
    tdb_stats_t s;
    int rc = cli_open(o, CLI_OPEN_READ, &db);
    if (rc == CLI_OK && (rc = tdb_list_cfs(db, &names, &count)) != TDB_OK) rc = cli_fail_tdb(rc, "list families");
    if (rc == CLI_OK && o->cf) { /* one family: check it exists first */
        tdb_cf_t *cf;
        rc = cli_cf(db, o, &cf);
    }
    if (rc == CLI_OK) {
        if (o->json) fputs("{\"families\": [", stdout);
        int shown = 0;
        for (size_t i = 0; i < count && rc == CLI_OK; i++) {
            tdb_cf_t *cf;
            if (o->cf && strcmp(o->cf, names[i]) != 0) continue;
            if ((rc = tdb_get_cf(db, names[i], &cf)) == TDB_OK && (rc = tdb_get_stats(db, cf, &s)) == TDB_OK)
                print_cf(o, names[i], &s, shown++ == 0);
            else rc = cli_fail_tdb(rc, names[i]);
        }
        if (rc == CLI_OK && (rc = tdb_get_stats(db, NULL, &s)) != TDB_OK) rc = cli_fail_tdb(rc, "stats");
        if (o->json) fputs(shown ? "\n  ],\n  " : "],\n  ", stdout);
        if (rc == CLI_OK) print_db(o, &s, wal_bytes_on_disk(o->db));
        if (o->json) fputs(rc == CLI_OK ? "}\n" : "\"error\": true}\n", stdout);
    }
    for (size_t i = 0; i < count; i++) tdb_free(names[i]);
    tdb_free(names);
    return cli_close(db, rc);
}
