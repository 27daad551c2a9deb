/*
 * cli_args: the command line of a subcommand. Options are "--name VALUE" or
 * "--name=VALUE" (flags take no value) and may come before or after the
 * positional arguments; "--" ends the options (a key starting with "-").
 * An option the subcommand does not take is an error naming it.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

typedef struct opt_def {
    const char *name;
    unsigned group; /* OPT_* bit; 0: every command */
    int takes_value;
} opt_def_t;

static const opt_def_t OPTS[] = {
    {"--help", 0, 0},         {"--json", 0, 0},        {"--db", OPT_DB, 1},
    {"--cf", OPT_CF, 1},      {"--format", OPT_FORMAT, 1},
    {"--key-format", OPT_FORMAT, 1},                   {"--value-format", OPT_FORMAT, 1},
    {"--from", OPT_RANGE, 1}, {"--to", OPT_RANGE, 1},  {"--prefix", OPT_RANGE, 1},
    {"--limit", OPT_LIMIT, 1},                         {"--reverse", OPT_REVERSE, 0},
    {"--keys-only", OPT_KEYS_ONLY, 0},                 {"--create", OPT_CREATE, 0},
    {"--allow-torn-tail", OPT_TORN, 0},                {"--verbose", OPT_VERBOSE, 0},
    {"--sync", OPT_SYNC, 0},
};

/* Print an error to stderr and return code. */
int cli_fail(int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("tidesdb: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return code;
}

/* Report a library error (code name and detail) and return CLI_ERR. */
int cli_fail_tdb(int rc, const char *what) {
    const char *detail = tdb_last_error();
    return cli_fail(CLI_ERR, "%s: %s%s%s", what, tdb_strerror(rc), detail && *detail ? ": " : "",
                    detail ? detail : "");
}

/* Apply one option with its value (NULL for a flag). */
static int apply(const cli_cmd_t *cmd, const opt_def_t *d, const char *v, cli_opts_t *o) {
    const char *n = d->name;
    if (!strcmp(n, "--help")) o->help = 1;
    else if (!strcmp(n, "--json")) o->json = 1;
    else if (!strcmp(n, "--db")) o->db = v;
    else if (!strcmp(n, "--cf")) o->cf = v;
    else if (!strcmp(n, "--from")) o->from = v;
    else if (!strcmp(n, "--to")) o->to = v;
    else if (!strcmp(n, "--prefix")) o->prefix = v;
    else if (!strcmp(n, "--reverse")) o->reverse = 1;
    else if (!strcmp(n, "--keys-only")) o->keys_only = 1;
    else if (!strcmp(n, "--create")) o->create = 1;
    else if (!strcmp(n, "--allow-torn-tail")) o->allow_torn_tail = 1;
    else if (!strcmp(n, "--verbose")) o->verbose = 1;
    else if (!strcmp(n, "--sync")) o->sync = 1;
    else if (!strcmp(n, "--limit")) {
        char *end;
        errno = 0;
        long long l = strtoll(v, &end, 10);
        if (errno || end == v || *end || l < 0)
            return cli_fail(CLI_USAGE, "%s: --limit wants a count >= 0, not '%s'", cmd->name, v);
        o->limit = l;
    } else { /* the formats */
        int f = cli_fmt_parse(v);
        if (f < 0) return cli_fail(CLI_USAGE, "%s: %s wants text, hex or base64, not '%s'", cmd->name, n, v);
        if (strcmp(n, "--value-format") != 0) o->key_fmt = (cli_fmt_t)f;
        if (strcmp(n, "--key-format") != 0) o->val_fmt = (cli_fmt_t)f;
    }
    return CLI_OK;
}

/* Parse argv into o (see cli.h). */
int cli_parse(const cli_cmd_t *cmd, int argc, char **argv, cli_opts_t *o) {
    memset(o, 0, sizeof *o);
    o->limit = -1;
    o->args = (char **)calloc((size_t)argc + 1, sizeof *o->args);
    if (!o->args) return cli_fail(CLI_ERR, "out of memory");
    int only_args = 0;
    for (int i = 0; i < argc; i++) {
        char *a = argv[i];
        if (only_args || a[0] != '-' || a[1] == '\0') {
            o->args[o->nargs++] = a;
            continue;
        }
        if (!strcmp(a, "--")) {
            only_args = 1;
            continue;
        }
        if (!strcmp(a, "-h")) a = "--help";
        const char *eq = strchr(a, '=');
        size_t len = eq ? (size_t)(eq - a) : strlen(a);
        const opt_def_t *d = NULL;
        for (size_t k = 0; k < sizeof OPTS / sizeof OPTS[0]; k++)
            if (strlen(OPTS[k].name) == len && !strncmp(OPTS[k].name, a, len)) d = &OPTS[k];
        if (!d || (d->group && !(cmd->opts & d->group)))
            return cli_fail(CLI_USAGE, "%s: unknown option '%.*s' (see tidesdb %s --help)", cmd->name, (int)len, a,
                            cmd->name);
        const char *v = NULL;
        if (d->takes_value) {
            if (eq) v = eq + 1;
            else if (i + 1 < argc) v = argv[++i];
            else return cli_fail(CLI_USAGE, "%s: option %s needs a value", cmd->name, d->name);
        } else if (eq) {
            return cli_fail(CLI_USAGE, "%s: option %s takes no value", cmd->name, d->name);
        }
        int rc = apply(cmd, d, v, o);
        if (rc != CLI_OK) return rc;
    }
    if (o->help) return CLI_OK;
    if ((cmd->opts & OPT_DB) && !o->db)
        return cli_fail(CLI_USAGE, "%s: --db DIR is required (see tidesdb %s --help)", cmd->name, cmd->name);
    if (o->nargs < cmd->min_args || o->nargs > cmd->max_args) {
        fprintf(stderr, "tidesdb: %s: wrong number of arguments\nusage: %s", cmd->name, cmd->usage);
        return CLI_USAGE;
    }
    return CLI_OK;
}
