/*
 * db/testing.h: the db's entry points for tests and tools that need more
 * than the public API: opening over a replaced filesystem environment (the
 * fault-injecting env of src/testing) and reading the sticky background
 * error. Not part of the API a user links against (hidden in
 * libtidesdb.so). Includable from C++.
 */
#ifndef TDB_DB_TESTING_H
#define TDB_DB_TESTING_H

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
