/*
 * db/cf_api: the public column-family API (create, drop, look up, list).
 * Above the write path: a drop enters as an exclusive writer
 * (db/write_group.c) so no memtable insert runs while the family's
 * memtables go away. The family objects themselves are db/cf.c.
 */
#include <stdlib.h>
#include <string.h>

#include "db/db_impl.h"

/* Find a live family by name (under mu). */
static tdb_cf_t *cf_find(tdb_t *db, const char *name) {
    for (uint32_t i = 0; i < db->ncf_slots; i++) {
        tdb_cf_t *cf = db->cfs[i];
        if (cf && !atomic_load(&cf->dropped) && strcmp(cf->name, name) == 0) return cf;
    }
    return NULL;
}

/* Validate a family name. */
static int cf_check_name(const char *name) {
    if (!name || !*name) return tdb_err(TDB_ERR_INVALID_ARG, "empty column family name");
    if (strlen(name) > TDB_MAX_CF_NAME)
        return tdb_err(TDB_ERR_INVALID_ARG, "column family name longer than %d bytes", TDB_MAX_CF_NAME);
    return TDB_OK;
}

int tdb_create_cf(tdb_t *db, const char *name, const tdb_cf_config_t *cfg, tdb_cf_t **out) {
    int rc = TDB_OK;
    tdb_cf_config_t c;
    if (!db) return tdb_err(TDB_ERR_INVALID_ARG, "database handle is NULL");
    TRY(cf_check_name(name));
    if (cfg) c = *cfg;
    else tdb_cf_config_default(&c);
    TRY(db_validate_cf_config(&c));
    pthread_mutex_lock(&db->manifest_mu);
    pthread_mutex_lock(&db->mu);
    if (db->bg_error != TDB_OK) {
        rc = tdb_err(TDB_ERR_READ_ONLY, "database is in an error state: %s", tdb_strerror(db->bg_error));
    } else if (cf_find(db, name)) {
        rc = tdb_err(TDB_ERR_EXISTS, "column family '%s' exists", name);
    } else {
        version_t *v = version_create(db_file_obsolete, db);
        tdb_cf_t *cf = NULL;
        if (!v) rc = tdb_err(TDB_ERR_NOMEM, "version");
        else {
            uint32_t id = db->next_cf_id++;
            rc = db_add_cf(db, id, name, &c, v, db->wal_number, &cf);
            version_unref(v);
            if (rc == TDB_OK) {
                rc = db_write_manifest_locked(db);
                if (rc != TDB_OK) {
                    db->cfs[id] = NULL;
                    cf_free(cf);
                } else if (out) {
                    *out = cf;
                }
            }
        }
    }
    pthread_mutex_unlock(&db->mu);
    pthread_mutex_unlock(&db->manifest_mu);
err:
    return rc;
}

int tdb_drop_cf(tdb_t *db, const char *name) {
    int rc = TDB_OK;
    if (!db) return tdb_err(TDB_ERR_INVALID_ARG, "database handle is NULL");
    TRY(cf_check_name(name));
    if (strcmp(name, TDB_DEFAULT_CF) == 0)
        return tdb_err(TDB_ERR_INVALID_ARG, "the default column family cannot be dropped");
    /* No memtable insert may run while the family's memtables go away. */
    writer_t ex;
    pthread_mutex_lock(&db->mu);
    db_enter_exclusive(db, &ex);
    pthread_mutex_unlock(&db->mu);
    pthread_mutex_lock(&db->manifest_mu);
    pthread_mutex_lock(&db->mu);
    tdb_cf_t *cf = cf_find(db, name);
    if (!cf) {
        rc = tdb_err(TDB_ERR_NOT_FOUND, "column family '%s' does not exist", name);
    } else {
        atomic_store(&cf->dropped, true);
        rc = db_write_manifest_locked(db);
        if (rc != TDB_OK) {
            atomic_store(&cf->dropped, false);
        } else {
            /* Wait out a running flush or compaction of this family; they
             * check `dropped` and discard their output, under manifest_mu:
             * so wait without it, then retake both in lock order. */
            while (cf->flushing || cf->compacting) {
                pthread_mutex_unlock(&db->manifest_mu);
                while (cf->flushing || cf->compacting) pthread_cond_wait(&db->done_cv, &db->mu);
                pthread_mutex_unlock(&db->mu);
                pthread_mutex_lock(&db->manifest_mu);
                pthread_mutex_lock(&db->mu);
            }
            cf_release_data(cf);
            db_delete_obsolete_wals(db);
        }
    }
    db_exit_exclusive(db, &ex);
    pthread_mutex_unlock(&db->mu);
    pthread_mutex_unlock(&db->manifest_mu);
err:
    return rc;
}

int tdb_get_cf(tdb_t *db, const char *name, tdb_cf_t **out) {
    if (!db || !name || !out) return tdb_err(TDB_ERR_INVALID_ARG, "tdb_get_cf: NULL argument");
    pthread_mutex_lock(&db->mu);
    tdb_cf_t *cf = cf_find(db, name);
    pthread_mutex_unlock(&db->mu);
    if (!cf) return tdb_err(TDB_ERR_NOT_FOUND, "column family '%s' does not exist", name);
    *out = cf;
    return TDB_OK;
}

int tdb_list_cfs(tdb_t *db, char ***names, size_t *count) {
    if (!db || !names || !count) return tdb_err(TDB_ERR_INVALID_ARG, "tdb_list_cfs: NULL argument");
    int rc = TDB_OK;
    pthread_mutex_lock(&db->mu);
    size_t n = 0;
    char **v = (char **)calloc(db->ncf_slots + 1, sizeof *v);
    if (!v) rc = tdb_err(TDB_ERR_NOMEM, "list");
    for (uint32_t i = 0; v && i < db->ncf_slots; i++) {
        tdb_cf_t *cf = db->cfs[i];
        if (!cf || atomic_load(&cf->dropped)) continue;
        if (!(v[n] = strdup(cf->name))) {
            rc = tdb_err(TDB_ERR_NOMEM, "list");
            break;
        }
        n++;
    }
    pthread_mutex_unlock(&db->mu);
    if (rc != TDB_OK) {
        for (size_t i = 0; v && i < n; i++) free(v[i]);
        free(v);
        return rc;
    }
    *names = v;
    *count = n;
    return TDB_OK;
}

const char *tdb_cf_name(const tdb_cf_t *cf) { return cf ? cf->name : NULL; }

int tdb_cf_get_config(const tdb_cf_t *cf, tdb_cf_config_t *out) {
    if (!cf || !out) return tdb_err(TDB_ERR_INVALID_ARG, "tdb_cf_get_config: NULL argument");
    *out = cf->cfg;
    return TDB_OK;
}
