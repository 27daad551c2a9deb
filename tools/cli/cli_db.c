/*
 * cli_db: opening the database for a subcommand. The rules (cli.h):
 * tdb_open takes DIR/LOCK exclusively and refuses at once if another
 * process holds it, which the tool turns into an error that says what to
 * do; a directory without a MANIFEST is not opened (tdb_open would create a
 * database in it) unless the command asked to create one.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

/* Open o->db (see cli.h). */
int cli_open(const cli_opts_t *o, int flags, tdb_t **db) {
    int create = (flags & CLI_OPEN_CREATE) != 0;
    struct stat st;
    char manifest[4096];
    *db = NULL;
    if (stat(o->db, &st) != 0) {
        if (errno != ENOENT) return cli_fail(CLI_ERR, "%s: %s", o->db, strerror(errno));
        if (!create) return cli_fail(CLI_ERR, "%s: no such database directory", o->db);
    } else if (!S_ISDIR(st.st_mode)) {
        return cli_fail(CLI_ERR, "%s: not a directory", o->db);
    } else {
        snprintf(manifest, sizeof manifest, "%s/MANIFEST", o->db);
        if (!create && stat(manifest, &st) != 0)
            return cli_fail(CLI_ERR, "%s: not a TidesDB database (no MANIFEST)", o->db);
    }
    tdb_config_t cfg;
    tdb_config_default(&cfg);
    cfg.create_if_missing = create;
    int rc = tdb_open(o->db, &cfg, db);
    if (rc == TDB_ERR_LOCKED)
        return cli_fail(CLI_ERR,
                        "%s: database is open in another process (%s/LOCK is held). Stop that process, or "
                        "have it write a copy with tdb_checkpoint() and point --db at the copy.",
                        o->db, o->db);
    if (rc != TDB_OK) {
        *db = NULL;
        return cli_fail_tdb(rc, o->db);
    }
    /* A reading command starts no flush or compaction of its own: after
     * the recovery that any open does, it leaves the files as they are. */
    if ((flags & CLI_OPEN_READ) && (rc = tdb_pause_background(*db)) != TDB_OK) {
        cli_fail_tdb(rc, "pause background work");
        tdb_close(*db);
        *db = NULL;
        return CLI_ERR;
    }
    return CLI_OK;
}

/* The family named o->cf, "default" if none was given. */
int cli_cf(tdb_t *db, const cli_opts_t *o, tdb_cf_t **cf) {
    const char *name = o->cf ? o->cf : TDB_DEFAULT_CF;
    int rc = tdb_get_cf(db, name, cf);
    if (rc == TDB_ERR_NOT_FOUND) return cli_fail(CLI_ERR, "no column family '%s' (see tidesdb cf list)", name);
    if (rc != TDB_OK) return cli_fail_tdb(rc, name);
    return CLI_OK;
}

/* Close db; an error at close turns rc into CLI_ERR. */
int cli_close(tdb_t *db, int rc) {
    if (!db) return rc;
    int crc = tdb_close(db);
    if (crc != TDB_OK) {
        cli_fail_tdb(crc, "close");
        return CLI_ERR;
    }
    return rc;
}
