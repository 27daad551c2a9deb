/*
 * dbcheck: offline verification of every data file of a database directory,
 * used by tdb_verify, by tdb_stress after a crash and by tests.
 *
 *  - MANIFEST: decoded (magic, version, checksum, every structural rule of
 *    version/manifest.h).
 *  - Every table the manifest lists: present, of the recorded size, every
 *    block and value record checksum and the key order verified
 *    (sst_reader_verify), and its properties (entries, smallest and largest
 *    key) equal to the manifest's record of it.
 *  - Tables the manifest does not list (orphans: outputs of a job that
 *    never committed, left by a crash) are verified too but only reported
 *    as information; if the manifest itself is unreadable every table is
 *    verified and damage in any of them counts.
 *  - Every WAL file: every record's checksum, every payload decoded as a
 *    write batch or a two-phase commit record (a prepare's entries decoded
 *    too), sequence numbers increasing (per family inside a relog,
 *    RELOG_HEAD .. RELOG_GEN, db/batch.h). A torn tail (an incomplete or
 *    damaged final record) counts as damage unless allow_torn_tail is
 *    set, and then only on the newest WAL: a crash can tear only the WAL
 *    being written, older ones were synced whole before the switch.
 *  - Other files (LOG, LOCK, *.tmp) are listed as information; LOG is a
 *    text log and LOCK is empty, neither carries data.
 *
 * The database must not be open while it is checked (files may vanish).
 */
#ifndef TDB_STRESS_DBCHECK_H
#define TDB_STRESS_DBCHECK_H

#include <stdint.h>
#include <stdio.h>

#include "env/env.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dbcheck_opts {
    int allow_torn_tail; /* a torn tail on the newest WAL is not damage */
    int verbose;         /* print a line per healthy file too */
    FILE *out;           /* report lines (NULL: silent) */
} dbcheck_opts_t;

#define DBCHECK_MAX_DAMAGED 64

typedef struct dbcheck_result {
    uint64_t files_checked;
    uint64_t tables, table_entries, wals, wal_records, orphans;
    uint64_t files_damaged;
    char damaged[DBCHECK_MAX_DAMAGED][256]; /* names of damaged files (first ones) */
} dbcheck_result_t;

/* Check every file of the database in dir. Returns 0 if no damage was
 * found, 1 if some file is damaged (named in r->damaged), negative
 * TDB_ERR_* if the directory cannot be read. */
int dbcheck_run(env_t *env, const char *dir, const dbcheck_opts_t *o, dbcheck_result_t *r);
/* 1 if name is among the damaged files of r. */
int dbcheck_is_damaged(const dbcheck_result_t *r, const char *name);

#ifdef __cplusplus
}
#endif
#endif
