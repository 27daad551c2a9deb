/*
 * db/db.h: internal entry points for tests and tools that need more than
 * the public API (a replaced filesystem environment). Includable from C++.
 */
#ifndef TDB_DB_DB_H
#define TDB_DB_DB_H

#include "env/env.h"
#include "tidesdb/tidesdb.h"

#ifdef __cplusplus
extern "C" {
#endif

/* tdb_open with every file operation going through `env` (which must
 * outlive the database). */
int tdb_open_env(const char *path, const tdb_config_t *cfg, env_t *env, tdb_t **out);

/* The sticky background error (TDB_OK if none): set when a WAL or manifest
 * sync, a flush or a compaction failed. */
int tdb_bg_error(tdb_t *db);

#ifdef __cplusplus
}
#endif
#endif
