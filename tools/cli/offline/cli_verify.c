/*
 * cli_verify: tidesdb verify, the offline check of every data file
 * (tools/stress/dbcheck.h says what is checked) under the database's own
 * lock: DIR/LOCK is taken as tdb_open takes it, so a database open in
 * another process is refused at once and none can open it while the check
 * runs. Nothing is written (the LOCK file is created if it is missing).
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "dbcheck.h"
#include "env/env.h"

/* Print the verdict as one JSON document. */
static void print_json(const dbcheck_result_t *r, int locked) {
    printf("{\"ok\": %s, \"locked\": %s, \"files_checked\": %llu, \"tables\": %llu, \"table_entries\": %llu, "
           "\"wals\": %llu, \"wal_records\": %llu, \"orphans\": %llu, \"files_damaged\": %llu, \"damaged\": [",
           r->files_damaged ? "false" : "true", locked ? "true" : "false", (unsigned long long)r->files_checked,
           (unsigned long long)r->tables, (unsigned long long)r->table_entries, (unsigned long long)r->wals,
           (unsigned long long)r->wal_records, (unsigned long long)r->orphans,
           (unsigned long long)r->files_damaged);
    uint64_t n = r->files_damaged < DBCHECK_MAX_DAMAGED ? r->files_damaged : DBCHECK_MAX_DAMAGED;
    for (uint64_t i = 0; i < n; i++) {
        if (i) fputs(", ", stdout);
        cli_json_str(stdout, r->damaged[i]);
    }
    fputs("]}\n", stdout);
}

/* tidesdb verify. */
int cli_verify(const cli_opts_t *o) {
    struct stat st;
    if (stat(o->db, &st) != 0) return cli_fail(CLI_ERR, "%s: %s", o->db, strerror(errno));
    if (!S_ISDIR(st.st_mode)) return cli_fail(CLI_ERR, "%s: not a directory", o->db);
    env_t *env = env_posix();
    env_lock_t *lock = NULL;
    char lockpath[4096], manifest[4096];
    snprintf(lockpath, sizeof lockpath, "%s/LOCK", o->db);
    snprintf(manifest, sizeof manifest, "%s/MANIFEST", o->db);
    /* No LOCK and no MANIFEST: no database was ever opened here; check what
     * is there (data files without a MANIFEST are damage) without creating
     * a LOCK file. */
    int is_db = env->exists(env, lockpath) || env->exists(env, manifest);
    int rc = is_db ? env->lock_file(env, lockpath, &lock) : TDB_OK;
    if (rc == TDB_ERR_LOCKED)
        return cli_fail(CLI_ERR,
                        "%s: database is open in another process (%s/LOCK is held). Stop that process, or "
                        "have it write a copy with tdb_checkpoint() and verify the copy.",
                        o->db, o->db);
    if (rc != TDB_OK) /* e.g. a read-only copy: no process can have it open for writing either */
        fprintf(stderr, "tidesdb: warning: %s: cannot take the lock (%s); checking without it\n", o->db,
                tdb_last_error());
    dbcheck_opts_t dopts = {o->allow_torn_tail, o->verbose, o->json ? stderr : stdout};
    dbcheck_result_t r;
    int v = dbcheck_run(env, o->db, &dopts, &r);
    if (lock) env->unlock_file(env, lock);
    if (v < 0) return cli_fail_tdb(v, o->db);
    if (!is_db && r.files_checked == 0) return cli_fail(CLI_ERR, "%s: not a TidesDB database (no MANIFEST)", o->db);
    if (o->json) {
        print_json(&r, lock != NULL);
    } else if (!r.files_damaged) {
        printf("verify: ok: %llu files checked (%llu tables with %llu entries, %llu WALs with %llu records)\n",
               (unsigned long long)r.files_checked, (unsigned long long)r.tables,
               (unsigned long long)r.table_entries, (unsigned long long)r.wals, (unsigned long long)r.wal_records);
    } else {
        printf("verify: %llu damaged file%s:", (unsigned long long)r.files_damaged, r.files_damaged == 1 ? "" : "s");
        uint64_t n = r.files_damaged < DBCHECK_MAX_DAMAGED ? r.files_damaged : DBCHECK_MAX_DAMAGED;
        for (uint64_t i = 0; i < n; i++) printf(" %s", r.damaged[i]);
        fputc('\n', stdout);
    }
    return v ? CLI_FOUND_NOTHING : CLI_OK;
}
