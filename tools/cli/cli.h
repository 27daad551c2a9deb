/*
 * tidesdb (tools/cli): the admin command-line tool. One file per group of
 * subcommands; this header is what they share: the parsed options, the byte
 * codecs (text, hex, base64), the output helpers (table or JSON) and the
 * database opening rules. Design and limits: docs/design/cli.md.
 *
 * Invariants
 *  - Files of tools/cli/ include only the public header (tidesdb/tidesdb.h)
 *    and this folder's headers. The offline readers (verify, dump-sst,
 *    dump-wal) live in tools/cli/offline/, a white-box folder of
 *    scripts/check_layers.sh: they decode data files with the library's
 *    subsystem readers, never a *_impl.h.
 *  - A database is opened only through tdb_open, which takes <dir>/LOCK
 *    exclusively and fails at once (TDB_ERR_LOCKED) if another process holds
 *    it: the tool never reads a database another process has open, and never
 *    waits for one. verify takes the same lock without opening.
 *  - Exit status: CLI_OK 0; CLI_FOUND_NOTHING 1 (get: key absent; verify:
 *    damage found); CLI_ERR 2 (the operation failed: locked, I/O, not a
 *    database); CLI_USAGE 3 (bad command line).
 */
#ifndef TDB_TOOLS_CLI_H
#define TDB_TOOLS_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tidesdb/tidesdb.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { CLI_OK = 0, CLI_FOUND_NOTHING = 1, CLI_ERR = 2, CLI_USAGE = 3 };

typedef enum { CLI_FMT_TEXT = 0, CLI_FMT_HEX = 1, CLI_FMT_BASE64 = 2 } cli_fmt_t;

/* Options a subcommand may accept (bit set passed to cli_parse). */
enum {
    OPT_DB = 1 << 0,       /* --db DIR */
    OPT_CF = 1 << 1,       /* --cf NAME */
    OPT_FORMAT = 1 << 2,   /* --format, --key-format, --value-format */
    OPT_RANGE = 1 << 3,    /* --from, --to, --prefix */
    OPT_LIMIT = 1 << 4,    /* --limit N */
    OPT_REVERSE = 1 << 5,  /* --reverse */
    OPT_KEYS_ONLY = 1 << 6,/* --keys-only */
    OPT_CREATE = 1 << 7,   /* --create */
    OPT_TORN = 1 << 8,     /* --allow-torn-tail */
    OPT_VERBOSE = 1 << 9,  /* --verbose */
    OPT_SYNC = 1 << 10,    /* --sync */
};

typedef struct cli_opts {
    const char *db, *cf;
    int json, help, reverse, keys_only, create, allow_torn_tail, verbose, sync;
    cli_fmt_t key_fmt, val_fmt;
    const char *from, *to, *prefix; /* as typed (decoded per key_fmt) */
    long long limit;                /* -1: none */
    int nargs;
    char **args; /* positional arguments after the subcommand */
} cli_opts_t;

/* A subcommand: its name, one-line summary, usage text and handler. */
typedef struct cli_cmd {
    const char *name, *summary, *usage;
    unsigned opts; /* OPT_* accepted besides --json and --help */
    int min_args, max_args;
    int (*run)(const cli_opts_t *o);
} cli_cmd_t;

/* ---- cli_args.c ---- */
/* Parse argv (after the subcommand name) into o; prints the error and
 * returns CLI_USAGE on a bad command line. */
int cli_parse(const cli_cmd_t *cmd, int argc, char **argv, cli_opts_t *o);
/* Print "tidesdb: " + message to stderr; returns code. */
int cli_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same with the library's code and detail appended. */
int cli_fail_tdb(int rc, const char *what);

/* ---- cli_codec.c ---- */
typedef struct cli_bytes {
    char *data;
    size_t size;
} cli_bytes_t;
/* Decode s in format f (text: \xNN and \\ escapes; hex; base64) into out
 * (malloc'd, caller frees out->data). CLI_OK or CLI_USAGE with a message. */
int cli_decode(const char *s, cli_fmt_t f, const char *what, cli_bytes_t *out);
/* Write bytes in format f (text: printable ASCII as is, other bytes \xNN,
 * backslash \\) to out. */
void cli_encode(FILE *out, const void *data, size_t n, cli_fmt_t f);
/* Write bytes in format f as a JSON string (quotes included). */
void cli_encode_json(FILE *out, const void *data, size_t n, cli_fmt_t f);
/* Write a NUL-terminated string as a JSON string. */
void cli_json_str(FILE *out, const char *s);
/* Parse a format name; -1 if unknown. */
int cli_fmt_parse(const char *name);

/* ---- cli_db.c ---- */
enum {
    CLI_OPEN_CREATE = 1, /* create the database if o->db holds none */
    CLI_OPEN_READ = 2,   /* a reading command: pause background work after
                            open, so the tool flushes and compacts nothing */
};
/* Open o->db (must hold a database unless CLI_OPEN_CREATE): a locked
 * database is a clear error. Returns CLI_OK with *db set, or an exit code
 * (message printed). */
int cli_open(const cli_opts_t *o, int flags, tdb_t **db);
/* The family named o->cf (default "default"); exit code on failure. */
int cli_cf(tdb_t *db, const cli_opts_t *o, tdb_cf_t **cf);
/* Close db; an error at close is reported and turns rc into CLI_ERR. */
int cli_close(tdb_t *db, int rc);

/* ---- subcommand handlers ---- */
int cli_stats(const cli_opts_t *o);     /* cli_stats.c */
int cli_scan(const cli_opts_t *o);      /* cli_data.c */
int cli_get(const cli_opts_t *o);
int cli_put(const cli_opts_t *o);
int cli_delete(const cli_opts_t *o);
int cli_compact(const cli_opts_t *o);   /* cli_admin.c */
int cli_checkpoint(const cli_opts_t *o);
int cli_cf_cmd(const cli_opts_t *o);
int cli_repair(const cli_opts_t *o);
int cli_verify(const cli_opts_t *o);    /* offline/cli_verify.c */
int cli_dump_sst(const cli_opts_t *o);  /* offline/cli_dump.c */
int cli_dump_wal(const cli_opts_t *o);

#ifdef __cplusplus
}
#endif
#endif
