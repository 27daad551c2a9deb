/* stress_flags: tdb_stress command-line flags (--name=value or --name value). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "stress.h"

/* Print the help text. */
static void usage(FILE *f) {
    fprintf(f,
            "usage: tdb_stress --db=DIR [flags]\n"
            "Random operations on several threads, every read checked against an\n"
            "expected-state file kept outside the database; after a crash (kill -9)\n"
            "the next run (or --verify_only) checks what was recovered.\n\n"
            "  --db=DIR              database directory (required)\n"
            "  --expected=FILE       oracle file (default DIR.expected)\n"
            "  --ops=N               operations over all threads (default 100000; 0 = no limit)\n"
            "  --duration=SEC        stop after SEC seconds (default 0 = no limit)\n"
            "  --threads=N           worker threads (4, max %d)\n"
            "  --keys=N              keys per column family (10000)\n"
            "  --cfs=N               column families incl. default (3, max %d)\n"
            "  --sync=MODE           none|interval|full (none)\n"
            "  --seed=N              random seed (1)\n"
            "  --verify_only         open, verify the whole database, close, exit\n"
            "  --destroy             delete the database and oracle first\n"
            "  --unified=0|1         unified memtable mode (0)\n"
            "  --write_buffer_size=B memtable bytes (262144: many flushes)\n"
            "  --max_value=N         largest value in bytes (32768)\n"
            "  --compression=NAME    none|snappy|lz4|zstd (lz4)\n"
            "  --read_fault_prob=P   inject read EIO with probability P (env_fault)\n"
            "  --write_fault_prob=P  inject append/sync EIO with probability P; the\n"
            "                        database goes read-only, the tool reopens and verifies\n"
            "  --check_files=0|1     check every file's checksums after recovery (1)\n"
"  --hang_timeout=SEC    no operation finishing for SEC seconds is a failure (120)\n"
            "  --weights=LIST        op weights, e.g. put=20,reopen=0 (ops: ",
            STRESS_MAX_THREADS, STRESS_MAX_CFS);
    for (int i = 0; i < stress_num_op_kinds; i++)
        fprintf(f, "%s%s=%g", i ? "," : "", stress_op_kinds[i].name, stress_op_kinds[i].weight);
    fprintf(f,
            ")\n"
            "  --verbose             progress lines\n\n"
            "Exit status: 0 ok, 1 verification failure, 2 unexpected error, 3 usage.\n");
}

/* Parse an unsigned integer flag value (with optional K/M/G suffix). */
static int parse_u64(const char *v, uint64_t *out) {
    char *end;
    unsigned long long x = strtoull(v, &end, 10);
    if (end == v) return -1;
    if (*end == 'K' || *end == 'k') x <<= 10, end++;
    else if (*end == 'M' || *end == 'm') x <<= 20, end++;
    else if (*end == 'G' || *end == 'g') x <<= 30, end++;
    if (*end) return -1;
    *out = x;
    return 0;
}

/* Parse the flags into o (defaults first); -1 after printing usage. */
int stress_parse_args(int argc, char **argv, stress_opts_t *o) {
    memset(o, 0, sizeof *o);
    o->ops = 100000;
    o->threads = 4;
    o->keys = 10000;
    o->cfs = 3;
    o->sync = TDB_SYNC_NONE;
    o->seed = 1;
    o->write_buffer_size = 256 << 10;
    o->max_value = 32768;
    o->compression = TDB_COMPRESS_LZ4;
    o->check_files = 1;
    o->hang_timeout = 120;
    for (int i = 1; i < argc; i++) {
        char *a = argv[i];
        if (strncmp(a, "--", 2) != 0) goto bad;
        a += 2;
        char name[64];
        const char *val = NULL;
        char *eq = strchr(a, '=');
        if (eq) {
            snprintf(name, sizeof name, "%.*s", (int)(eq - a), a);
            val = eq + 1;
        } else {
            snprintf(name, sizeof name, "%s", a);
        }
        int is_bool = !strcmp(name, "verify_only") || !strcmp(name, "destroy") || !strcmp(name, "verbose") ||
                      !strcmp(name, "help");
        if (!val && !is_bool) {
            if (i + 1 >= argc) goto bad;
            val = argv[++i];
        }
        uint64_t u = 0;
        if (!strcmp(name, "help")) {
            usage(stdout);
            exit(0);
        } else if (!strcmp(name, "db")) {
            snprintf(o->db, sizeof o->db, "%s", val);
        } else if (!strcmp(name, "expected")) {
            snprintf(o->expected, sizeof o->expected, "%s", val);
        } else if (!strcmp(name, "ops")) {
            if (parse_u64(val, &o->ops)) goto bad;
        } else if (!strcmp(name, "duration")) {
            o->duration = atof(val);
        } else if (!strcmp(name, "threads")) {
            if (parse_u64(val, &u) || u < 1 || u > STRESS_MAX_THREADS) goto bad;
            o->threads = (int)u;
        } else if (!strcmp(name, "keys")) {
            if (parse_u64(val, &u) || u < 1 || u > 100000000) goto bad;
            o->keys = (uint32_t)u;
        } else if (!strcmp(name, "cfs")) {
            if (parse_u64(val, &u) || u < 1 || u > STRESS_MAX_CFS) goto bad;
            o->cfs = (int)u;
        } else if (!strcmp(name, "sync")) {
            if (!strcasecmp(val, "none")) o->sync = TDB_SYNC_NONE;
            else if (!strcasecmp(val, "interval")) o->sync = TDB_SYNC_INTERVAL;
            else if (!strcasecmp(val, "full")) o->sync = TDB_SYNC_FULL;
            else goto bad;
        } else if (!strcmp(name, "seed")) {
            if (parse_u64(val, &o->seed)) goto bad;
        } else if (!strcmp(name, "verify_only")) {
            o->verify_only = !val || atoi(val);
        } else if (!strcmp(name, "destroy")) {
            o->destroy = !val || atoi(val);
        } else if (!strcmp(name, "verbose")) {
            o->verbose = !val || atoi(val);
        } else if (!strcmp(name, "unified")) {
            o->unified = atoi(val);
        } else if (!strcmp(name, "write_buffer_size")) {
            if (parse_u64(val, &o->write_buffer_size)) goto bad;
        } else if (!strcmp(name, "max_value")) {
            if (parse_u64(val, &u) || u < 16 || u > 32768) goto bad;
            o->max_value = (uint32_t)u;
        } else if (!strcmp(name, "compression")) {
            if (!strcasecmp(val, "none")) o->compression = TDB_COMPRESS_NONE;
            else if (!strcasecmp(val, "snappy")) o->compression = TDB_COMPRESS_SNAPPY;
            else if (!strcasecmp(val, "lz4")) o->compression = TDB_COMPRESS_LZ4;
            else if (!strcasecmp(val, "zstd")) o->compression = TDB_COMPRESS_ZSTD;
            else goto bad;
        } else if (!strcmp(name, "read_fault_prob")) {
            o->read_fault_prob = atof(val);
        } else if (!strcmp(name, "write_fault_prob")) {
            o->write_fault_prob = atof(val);
        } else if (!strcmp(name, "check_files")) {
            o->check_files = atoi(val);
        } else if (!strcmp(name, "hang_timeout")) {
            o->hang_timeout = atof(val);
        } else if (!strcmp(name, "weights")) {
            snprintf(o->weights, sizeof o->weights, "%s", val);
        } else {
            goto bad;
        }
        continue;
    bad:
        fprintf(stderr, "tdb_stress: bad flag '%s'\n\n", argv[i]);
        usage(stderr);
        return -1;
    }
    if (!o->db[0]) {
        fprintf(stderr, "tdb_stress: --db is required\n\n");
        usage(stderr);
        return -1;
    }
    if (!o->expected[0] && (size_t)snprintf(o->expected, sizeof o->expected, "%s.expected", o->db) >= sizeof o->expected) {
        fprintf(stderr, "tdb_stress: --db path too long\n");
        return -1;
    }
    return 0;
}
