/*
 * bench_flags.c: tdb_bench's command-line flags (db_bench style: --name=value
 * or --name value), their defaults and help text.
 */
#include "bench_flags.h"

#include "workload.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define KIB 1024ull
#define MIB (1024ull * 1024ull)

/* Fill the defaults: a quick run (about 3-5 minutes for three engines on
 * two cores). */
void options_default(bench_opts_t *o)
{
    memset(o, 0, sizeof(*o));
    o->num = 1000000;
    o->reads = 0; /* = num */
    o->key_size = 16;
    o->value_size = 100;
    o->threads = 2;
    o->batch_size = 1;
    o->duration = 120;
    o->seed = 301;
    o->repeat = 1;
    o->es.write_buffer_size = 64 * MIB;
    o->es.cache_size = 256 * MIB;
    o->es.block_size = 4 * KIB;
    o->es.compression = BENCH_COMPRESS_LZ4;
    o->es.bloom_bits = 10;
    o->es.sync = 0;
    o->es.bg_threads = 2;
    snprintf(o->workloads, sizeof(o->workloads), "%s", workload_default_list);
    snprintf(o->db, sizeof(o->db), "/tmp/tdb_bench");
}

/* Print the help text. */
void options_usage(FILE *f)
{
    fprintf(f,
        "usage: tdb_bench [--flag=value ...]\n"
        "Runs the same workloads through several key-value engines in one run,\n"
        "each engine in its own child process, alternating engines per step.\n\n"
        "  --engines=LIST          comma list of tidesdb,rocksdb,leveldb (default:\n"
        "                          every engine compiled in)\n"
        "  --workloads=LIST        comma list (default: %s)\n"
        "  --num=N                 key space and keys per fill (1000000)\n"
        "  --reads=N               operations per read step (default: num)\n"
        "  --key_size=N            bytes, >= 8 (16)\n"
        "  --value_size=N          bytes (100)\n"
        "  --threads=N             client threads (2); fillseq and readseq use 1\n"
        "  --batch_size=N          entries per write for fillrandom/fillseq/overwrite (1)\n"
        "  --cache_size=BYTES      block cache (256M)\n"
        "  --write_buffer_size=BYTES memtable size (64M)\n"
        "  --compression=NAME      none|lz4|zstd|snappy (lz4)\n"
        "  --bloom_bits=N          bloom filter bits per key, 0 = none (10)\n"
        "  --bg_threads=N          background flush+compaction threads (2)\n"
        "  --sync=0|1              durable writes (0)\n"
        "  --duration=SECONDS      cap per step, 0 = none (120)\n"
        "  --seed=N                random seed (301)\n"
        "  --db=DIR                parent of the per-engine directories (/tmp/tdb_bench)\n"
        "  --keep_db=0|1           leave the engine directories behind (0)\n"
        "  --repeat=N              run the whole list N times (1..16; the list must\n"
        "                          start with a fill); each row is the run with the\n"
        "                          median ops/s of that engine and step (1)\n"
        "  --csv=PATH              also write results as CSV\n"
        "BYTES take a K, M or G suffix (powers of 1024); counts take k or m\n"
        "(powers of 1000).\n\nworkloads:\n%s\ncompiled engines:",
        workload_default_list, workload_help());
    for (size_t i = 0; i < bench_engine_count; i++)
        fprintf(f, " %s", bench_engines[i]->name);
    fprintf(f, "\n");
}

/* Parse an unsigned number with an optional K/M/G suffix of base `unit`. */
static int parse_u64(const char *s, uint64_t unit, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *s == '-')
        return -1;
    uint64_t mul = 1;
    switch (*end) {
    case 'k': case 'K': mul = unit; end++; break;
    case 'm': case 'M': mul = unit * unit; end++; break;
    case 'g': case 'G': mul = unit * unit * unit; end++; break;
    default: break;
    }
    if (*end == 'i' || *end == 'B' || *end == 'b')
        end += (end[0] == 'i' && (end[1] == 'B' || end[1] == 'b')) ? 2 : 1;
    if (*end != '\0')
        return -1;
    *out = (uint64_t)v * mul;
    return 0;
}

/* Parse a compression name. */
static int parse_compression(const char *s, int *out)
{
    static const char *const names[] = {"none", "lz4", "zstd", "snappy"};
    for (int i = 0; i < 4; i++) {
        if (strcasecmp(s, names[i]) == 0) {
            *out = i;
            return 0;
        }
    }
    return -1;
}

/* Name of a compression setting. */
const char *bench_compression_name(int c)
{
    switch (c) {
    case BENCH_COMPRESS_LZ4: return "lz4";
    case BENCH_COMPRESS_ZSTD: return "zstd";
    case BENCH_COMPRESS_SNAPPY: return "snappy";
    default: return "none";
    }
}

/* Apply one flag; 0 on success. */
static int options_set(bench_opts_t *o, const char *name, const char *val)
{
    uint64_t u = 0;
    int bad = 0;
#define COUNT(n, field)                                                     \
    if (strcmp(name, n) == 0) {                                             \
        bad = parse_u64(val, 1000, &u);                                     \
        o->field = u;                                                       \
    } else
#define BYTES(n, field)                                                     \
    if (strcmp(name, n) == 0) {                                             \
        bad = parse_u64(val, 1024, &u);                                     \
        o->field = (size_t)u;                                               \
    } else
#define STRING(n, field)                                                    \
    if (strcmp(name, n) == 0) {                                             \
        bad = snprintf(o->field, sizeof(o->field), "%s", val) >=            \
              (int)sizeof(o->field);                                        \
    } else
    COUNT("num", num)
    COUNT("reads", reads)
    BYTES("key_size", key_size)
    BYTES("value_size", value_size)
    COUNT("threads", threads)
    COUNT("batch_size", batch_size)
    COUNT("seed", seed)
    COUNT("keep_db", keep_db)
    COUNT("repeat", repeat)
    BYTES("cache_size", es.cache_size)
    BYTES("write_buffer_size", es.write_buffer_size)
    COUNT("bloom_bits", es.bloom_bits)
    COUNT("bg_threads", es.bg_threads)
    COUNT("sync", es.sync)
    STRING("engines", engines)
    STRING("workloads", workloads)
    STRING("db", db)
    STRING("csv", csv)
    if (strcmp(name, "compression") == 0) {
        bad = parse_compression(val, &o->es.compression);
    } else if (strcmp(name, "duration") == 0) {
        char *end;
        o->duration = strtod(val, &end);
        bad = end == val || *end != '\0' || o->duration < 0;
    } else {
        fprintf(stderr, "tdb_bench: unknown flag --%s (see --help)\n", name);
        return -1;
    }
#undef COUNT
#undef BYTES
#undef STRING
    if (bad)
        fprintf(stderr, "tdb_bench: bad value for --%s: '%s'\n", name, val);
    return bad ? -1 : 0;
}

/* Check that the values make sense together. */
static int options_check(bench_opts_t *o)
{
    if (o->reads == 0)
        o->reads = o->num;
    const char *why = NULL;
    if (o->num == 0)
        why = "--num must be > 0";
    else if (o->key_size < 8 || o->key_size > 4096)
        why = "--key_size must be 8..4096";
    else if (o->value_size > 64 * MIB)
        why = "--value_size must be <= 64M";
    else if (o->threads < 1 || o->threads > BENCH_MAX_THREADS)
        why = "--threads must be 1..64";
    else if (o->repeat < 1 || o->repeat > 16)
        why = "--repeat must be 1..16";
    else if (o->batch_size < 1)
        why = "--batch_size must be >= 1";
    else if (o->es.bg_threads < 1)
        why = "--bg_threads must be >= 1";
    else if (o->es.sync > 1)
        why = "--sync must be 0 or 1";
    else if (o->es.write_buffer_size < 64 * KIB)
        why = "--write_buffer_size must be >= 64K";
    if (why) {
        fprintf(stderr, "tdb_bench: %s\n", why);
        return -1;
    }
    return 0;
}

/* Parse argv into o (defaults first). 1 = help was printed, -1 = error. */
int options_parse(bench_opts_t *o, int argc, char **argv)
{
    options_default(o);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            options_usage(stdout);
            return 1;
        }
        if (strncmp(a, "--", 2) != 0) {
            fprintf(stderr, "tdb_bench: unexpected argument '%s'\n", a);
            return -1;
        }
        char name[64];
        const char *eq = strchr(a, '=');
        const char *val;
        size_t len = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
        if (len >= sizeof(name)) {
            fprintf(stderr, "tdb_bench: unknown flag %s\n", a);
            return -1;
        }
        memcpy(name, a + 2, len);
        name[len] = '\0';
        if (eq) {
            val = eq + 1;
        } else if (i + 1 < argc) {
            val = argv[++i];
        } else {
            fprintf(stderr, "tdb_bench: --%s needs a value\n", name);
            return -1;
        }
        if (options_set(o, name, val) != 0)
            return -1;
    }
    return options_check(o);
}
