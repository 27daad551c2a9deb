/*
 * tidesdb: the admin command-line tool (docs/design/cli.md).
 *
 *   tidesdb COMMAND [options] [args]      tidesdb COMMAND --help
 *
 * main dispatches to the subcommand table below; every subcommand parses
 * its options through cli_parse (tools/cli/cli_args.c), so --help and
 * --json mean the same everywhere.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const cli_cmd_t CMDS[] = {
    {"stats", "levels, files, sizes, amplification and cache figures",
     "tidesdb stats --db DIR [--cf NAME] [--json]\n"
     "  Opens the database (exclusively) and prints, per column family (or only\n"
     "  --cf NAME), the files and bytes of each level, memtable bytes, the entry\n"
     "  estimate and space amplification (bytes of all levels / bytes of the\n"
     "  deepest non-empty level), then the database counters: write\n"
     "  amplification, block cache hits, misses and bytes, flushes, compactions,\n"
     "  stalls. Counters count since this open, so they mostly show what opening\n"
     "  (WAL recovery) did.\n",
     OPT_DB | OPT_CF, 0, 0, cli_stats},
    {"verify", "check every checksum and the MANIFEST against the files",
     "tidesdb verify --db DIR [--allow-torn-tail] [--verbose] [--json]\n"
     "  Reads every file without opening the database (it takes DIR/LOCK, so\n"
     "  a database open in another process is refused): the MANIFEST, every\n"
     "  table it lists (present, recorded size, every block and value checksum,\n"
     "  key order, entry count and key range as recorded), tables it does not\n"
     "  list (reported, not damage), every WAL record. Damaged files are named.\n"
     "  --allow-torn-tail  a torn last record of the newest WAL (what a crash\n"
     "                     leaves; dropped at open) is not damage\n"
     "  --verbose          a line per healthy file too\n"
     "  Exit status: 0 no damage, 1 damage found, 2 cannot check.\n",
     OPT_DB | OPT_TORN | OPT_VERBOSE, 0, 0, cli_verify},
    {"scan", "list keys and values in order",
     "tidesdb scan --db DIR [--cf NAME] [--from KEY] [--to KEY] [--prefix P]\n"
     "             [--limit N] [--reverse] [--keys-only] [--format F]\n"
     "             [--key-format F] [--value-format F] [--json]\n"
     "  Keys in [--from, --to) that start with --prefix, ascending (--reverse:\n"
     "  descending), at most --limit of them. F is text (default: printable\n"
     "  ASCII as is, other bytes as \\xNN, a backslash as \\\\; the same escapes\n"
     "  are read in arguments), hex or base64.\n",
     OPT_DB | OPT_CF | OPT_FORMAT | OPT_RANGE | OPT_LIMIT | OPT_REVERSE | OPT_KEYS_ONLY, 0, 0, cli_scan},
    {"get", "print the value of a key",
     "tidesdb get --db DIR [--cf NAME] [--format F] [--key-format F]\n"
     "            [--value-format F] [--json] KEY\n"
     "  Exit status 1 if the key is absent.\n",
     OPT_DB | OPT_CF | OPT_FORMAT, 1, 1, cli_get},
    {"put", "write a key",
     "tidesdb put --db DIR [--cf NAME] [--create] [--sync] [--format F]\n"
     "            [--key-format F] [--value-format F] KEY VALUE\n"
     "  --create  create the database if DIR holds none\n"
     "  --sync    sync the write-ahead log before returning (the family's sync\n"
     "            mode applies otherwise)\n",
     OPT_DB | OPT_CF | OPT_FORMAT | OPT_CREATE | OPT_SYNC, 2, 2, cli_put},
    {"delete", "delete a key",
     "tidesdb delete --db DIR [--cf NAME] [--sync] [--format F] [--key-format F] KEY\n",
     OPT_DB | OPT_CF | OPT_FORMAT | OPT_SYNC, 1, 1, cli_delete},
    {"dump-sst", "print a table file's properties and entries",
     "tidesdb dump-sst [--limit N] [--keys-only] [--format F] [--key-format F]\n"
     "                 [--value-format F] [--json] FILE\n"
     "  Reads one table file (NNNNNN.sst): its properties, range tombstones and\n"
     "  every entry with sequence number and type, after checking its footer,\n"
     "  index and properties checksums. Tables are immutable once written, so\n"
     "  this is safe on a database that is open.\n",
     OPT_LIMIT | OPT_KEYS_ONLY | OPT_FORMAT, 1, 1, cli_dump_sst},
    {"dump-wal", "print a write-ahead log's records",
     "tidesdb dump-wal [--limit N] [--keys-only] [--format F] [--key-format F]\n"
     "                 [--value-format F] [--json] FILE\n"
     "  Reads one log (NNNNNN.log): every record with its offset, first sequence\n"
     "  number and entries (sequence, family, type, key, value), transaction\n"
     "  records (prepare, commit, rollback), and how it ends (clean, torn tail,\n"
     "  damage). Family names come from the MANIFEST beside the file if it can\n"
     "  be read. On a log being written the last record may read as torn.\n",
     OPT_LIMIT | OPT_KEYS_ONLY | OPT_FORMAT, 1, 1, cli_dump_wal},
    {"compact", "compact one column family or all of them",
     "tidesdb compact --db DIR [--cf NAME] [--from K] [--to K] [--prefix P] [--key-format F] [--json]\n"
     "  Flushes the memtables and compacts the family (all families without\n"
     "  --cf) fully down its levels (tdb_compact). With --from/--to (inclusive)\n"
     "  or --prefix only the table files holding keys of that range are pushed\n"
     "  down to the last level (tdb_compact_range; a file straddling a bound\n"
     "  moves whole).\n",
     OPT_DB | OPT_CF | OPT_RANGE | OPT_FORMAT, 0, 0, cli_compact},
    {"checkpoint", "write a consistent copy of the database",
     "tidesdb checkpoint --db DIR [--json] DEST\n"
     "  A consistent copy in DEST (which must not exist, or be empty) through\n"
     "  tdb_checkpoint: tables hard-linked where possible, the WAL copied up to\n"
     "  the checkpoint's sequence number, which is printed. Open DEST like any\n"
     "  database.\n",
     OPT_DB, 1, 1, cli_checkpoint},
    {"cf", "list, create or drop column families",
     "tidesdb cf list   --db DIR [--json]\n"
     "tidesdb cf create --db DIR NAME\n"
     "tidesdb cf drop   --db DIR NAME\n"
     "  create uses the default family settings; drop deletes the family's data\n"
     "  (\"default\" cannot be dropped).\n",
     OPT_DB, 1, 2, cli_cf_cmd},
    {"repair", "not available: the library has no repair",
     "tidesdb repair --db DIR\n"
     "  The library offers no repair (rebuilding a MANIFEST from the tables, or\n"
     "  salvaging a damaged table), so this command only says so and exits 2.\n"
     "  Use `tidesdb verify` to name damaged files and restore from a checkpoint.\n",
     OPT_DB, 0, 0, cli_repair},
};
#define NCMDS (sizeof CMDS / sizeof CMDS[0])

/* The overall usage: every subcommand with its summary. */
static void usage(FILE *out) {
    fprintf(out, "usage: tidesdb COMMAND [options] [args]\n"
                 "       tidesdb COMMAND --help\n\ncommands:\n");
    for (size_t i = 0; i < NCMDS; i++) fprintf(out, "  %-11s %s\n", CMDS[i].name, CMDS[i].summary);
    fprintf(out, "\nEvery command takes --json (output as one JSON document) and --help.\n"
                 "Exit status: 0 ok, 1 nothing found (get) or damage found (verify),\n"
                 "2 the operation failed, 3 bad command line.\n");
}

/* Find the subcommand, parse its options, run it. */
int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return CLI_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return CLI_OK;
    }
    for (size_t i = 0; i < NCMDS; i++) {
        if (strcmp(argv[1], CMDS[i].name) != 0) continue;
        cli_opts_t o;
        int rc = cli_parse(&CMDS[i], argc - 2, argv + 2, &o);
        if (rc == CLI_OK && o.help) fputs(CMDS[i].usage, stdout);
        else if (rc == CLI_OK) rc = CMDS[i].run(&o);
        free(o.args);
        return rc;
    }
    fprintf(stderr, "tidesdb: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return CLI_USAGE;
}
