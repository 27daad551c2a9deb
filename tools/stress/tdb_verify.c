/*
 * tdb_verify: check every data file of a (closed) database and report the
 * damaged ones by name. What is checked: tools/stress/dbcheck.h.
 *
 *   tdb_verify [--allow_torn_tail] [--quiet] DIR
 *
 * Exit status: 0 no damage, 1 damage found, 2 the directory cannot be read,
 * 3 usage.
 */
#include <stdio.h>
#include <string.h>

#include "dbcheck.h"
#include "tidesdb/tidesdb.h"

/* Parse flags, check DIR, exit with the verdict. */
int main(int argc, char **argv) {
    dbcheck_opts_t o = {0, 1, stdout};
    const char *dir = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--allow_torn_tail")) o.allow_torn_tail = 1;
        else if (!strcmp(argv[i], "--quiet")) o.verbose = 0;
        else if (argv[i][0] != '-' && !dir) dir = argv[i];
        else {
            fprintf(stderr,
                    "usage: tdb_verify [--allow_torn_tail] [--quiet] DIR\n"
                    "  Verifies the MANIFEST, every table (all blocks and value records) and\n"
                    "  every WAL record of the database in DIR; names damaged files.\n"
                    "  --allow_torn_tail  a torn final record of the newest WAL (what a crash\n"
                    "                     leaves) is not damage\n");
            return 3;
        }
    }
    if (!dir) {
        fprintf(stderr, "usage: tdb_verify [--allow_torn_tail] [--quiet] DIR\n");
        return 3;
    }
    dbcheck_result_t r;
    int rc = dbcheck_run(env_posix(), dir, &o, &r);
    if (rc < 0) {
        fprintf(stderr, "tdb_verify: %s: %s\n", tdb_strerror(rc), tdb_last_error());
        return 2;
    }
    return rc ? 1 : 0;
}
