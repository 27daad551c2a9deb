/* db/cf: column families, their superversions, and the manifest of them all. */
#include <stdlib.h>
#include <string.h>

#include "db/db_impl.h"
#include "util/mutex.h"

/* Allocate a family with an empty active memtable. */
int cf_new(tdb_t *db, uint32_t id, const char *name, const tdb_cf_config_t *cfg, version_t *v,
           uint64_t log_number, tdb_cf_t **out) {
    tdb_cf_t *cf = (tdb_cf_t *)calloc(1, sizeof *cf);
    if (!cf) return tdb_err(TDB_ERR_NOMEM, "column family");
    cf->db = db;
    cf->id = id;
    cf->name = strdup(name);
    cf->cfg = *cfg;
    atomic_init(&cf->dead_stepped, 0);
    cf->mem.mem = memtable_create_sized(db_write_buffer_limit(db, cf));
    cf->mem.log_number = log_number;
    cf->log_number = log_number;
    cf->current = v;
    cf->compactions = compaction_state_create();
    /* Held for a few instructions by every reader: adaptive. */
    tdb_mutex_init_short(&cf->sv_mu);
    if (!cf->name || !cf->mem.mem || !cf->compactions) {
        compaction_state_free(cf->compactions);
        free(cf->name);
        if (cf->mem.mem) memtable_unref(cf->mem.mem);
        pthread_mutex_destroy(&cf->sv_mu);
        free(cf);
        return tdb_err(TDB_ERR_NOMEM, "column family");
    }
    version_ref(v);
    *out = cf;
    return TDB_OK;
}

/* Release everything a family holds (db close or drop cleanup). */
void cf_release_data(tdb_cf_t *cf) {
    if (cf->sv) sv_unref(cf->sv);
    cf->sv = NULL;
    if (cf->mem.mem) memtable_unref(cf->mem.mem);
    cf->mem.mem = NULL;
    for (int i = 0; i < cf->nimm; i++) memtable_unref(cf->imm[i].mem);
    cf->nimm = 0;
    if (cf->current) version_unref(cf->current);
    cf->current = NULL;
}

void cf_free(tdb_cf_t *cf) {
    if (!cf) return;
    cf_release_data(cf);
    compaction_state_free(cf->compactions);
    free(cf->imm);
    free(cf->name);
    pthread_mutex_destroy(&cf->sv_mu);
    free(cf);
}

tdb_cf_t *cf_by_id(tdb_t *db, uint32_t id) { return id < db->ncf_slots ? db->cfs[id] : NULL; }

int db_cf_name_of(tdb_t *db, uint32_t id, char *buf, size_t n) {
    int rc = TDB_ERR_NOT_FOUND;
    pthread_mutex_lock(&db->mu);
    tdb_cf_t *cf = cf_by_id(db, id);
    if (cf && !atomic_load(&cf->dropped) && n > 0) {
        snprintf(buf, n, "%s", cf->name);
        rc = TDB_OK;
    }
    pthread_mutex_unlock(&db->mu);
    return rc;
}

/* Drop a reference to a superversion, freeing it at zero. */
void sv_unref(superversion_t *sv) {
    if (!sv || atomic_fetch_sub(&sv->refs, 1) != 1) return;
    memtable_unref(sv->mem);
    for (int i = 0; i < sv->nimm; i++) memtable_unref(sv->imm[i]);
    free(sv->imm);
    version_unref(sv->version);
    free(sv);
}

/* Publish the family's current memtables and version to readers (under mu). */
int cf_install_sv(tdb_cf_t *cf) {
    superversion_t *sv = (superversion_t *)calloc(1, sizeof *sv);
    if (!sv) return tdb_err(TDB_ERR_NOMEM, "superversion");
    sv->imm = cf->nimm ? (memtable_t **)malloc((size_t)cf->nimm * sizeof *sv->imm) : NULL;
    if (cf->nimm && !sv->imm) {
        free(sv);
        return tdb_err(TDB_ERR_NOMEM, "superversion");
    }
    atomic_init(&sv->refs, 1);
    sv->mem = cf->mem.mem;
    memtable_ref(sv->mem);
    sv->nimm = cf->nimm;
    for (int i = 0; i < cf->nimm; i++) {
        sv->imm[i] = cf->imm[cf->nimm - 1 - i].mem;
        memtable_ref(sv->imm[i]);
    }
    sv->version = cf->current;
    version_ref(sv->version);
    for (int l = 1; l < TDB_MAX_LEVELS; l++)
        for (int i = 0; i < version_num_files(sv->version, l); i++) {
            uint64_t m = version_file(sv->version, l, i)->max_seq;
            if (m > sv->max_file_seq) sv->max_file_seq = m;
        }
    pthread_mutex_lock(&cf->sv_mu);
    superversion_t *old = cf->sv;
    cf->sv = sv;
    pthread_mutex_unlock(&cf->sv_mu);
    sv_unref(old);
    return TDB_OK;
}

/* Take a reference to the family's current superversion. */
superversion_t *cf_get_sv(tdb_cf_t *cf) {
    pthread_mutex_lock(&cf->sv_mu);
    superversion_t *sv = cf->sv;
    if (sv) atomic_fetch_add(&sv->refs, 1);
    pthread_mutex_unlock(&cf->sv_mu);
    return sv;
}

/* Describe every live family in a manifest (under mu). */
int db_build_manifest(tdb_t *db, manifest_t *m) {
    memset(m, 0, sizeof *m);
    m->next_file_number = db->next_file_number;
    m->last_sequence = atomic_load(&db->last_seq);
    m->next_cf_id = db->next_cf_id;
    m->cfs = (manifest_cf_t *)calloc(db->ncf_slots ? db->ncf_slots : 1, sizeof *m->cfs);
    if (!m->cfs) return tdb_err(TDB_ERR_NOMEM, "manifest");
    for (uint32_t i = 0; i < db->ncf_slots; i++) {
        tdb_cf_t *cf = db->cfs[i];
        if (!cf || atomic_load(&cf->dropped)) continue;
        manifest_cf_t *mc = &m->cfs[m->ncf];
        mc->name = strdup(cf->name);
        if (!mc->name) {
            manifest_free(m);
            return tdb_err(TDB_ERR_NOMEM, "manifest");
        }
        mc->id = cf->id;
        mc->config = cf->cfg;
        mc->log_number = cf->log_number;
        mc->version = cf->current;
        version_ref(mc->version);
        m->ncf++;
    }
    return TDB_OK;
}

/* Persist the current state as the manifest (manifest_mu and mu held).
 * TDB_ERR_NO_SPACE means the disk was full before the new MANIFEST replaced
 * the old one: the durable MANIFEST is unchanged, nothing is sticky, and the
 * caller must undo the in-memory change it was persisting (invariant 7).
 * Any other failure is sticky. */
int db_write_manifest_locked(tdb_t *db) {
    manifest_t m;
    int renamed = 0;
    TDB_RET(db_build_manifest(db, &m));
    int rc = manifest_replace(db->env, db->path, &m, &renamed);
    manifest_free(&m);
    if (rc == TDB_ERR_NO_SPACE && !renamed) {
        db_log(db, TDB_LOG_WARN, "manifest write out of space, the old MANIFEST stays: %s", tdb_last_error());
        return rc;
    }
    if (rc != TDB_OK) {
        db_log(db, TDB_LOG_ERROR, "manifest write failed: %s", tdb_last_error());
        /* The durable MANIFEST may still list tables the in-memory versions
         * dropped (a compaction's inputs): delete no table until reopen,
         * which removes whatever the MANIFEST it reads does not list. */
        atomic_store(&db->keep_files, true);
        db_set_bg_error_locked(db, rc);
        /* Out of space after the rename (syncing the directory): which
         * MANIFEST a crash leaves is unknown, so it is sticky like an I/O
         * error, and callers must not take it for the retryable case. */
        if (rc == TDB_ERR_NO_SPACE) {
            char detail[512];
            snprintf(detail, sizeof detail, "%s", tdb_last_error());
            rc = tdb_err(TDB_ERR_READ_ONLY, "manifest renamed in, then: %s", detail);
        }
    }
    return rc;
}

/* Check that a family handle belongs to db and is live. */
int db_check_cf(tdb_t *db, tdb_cf_t *cf) {
    if (!db || !cf) return tdb_err(TDB_ERR_INVALID_ARG, "database or column family handle is NULL");
    if (cf->db != db) return tdb_err(TDB_ERR_INVALID_ARG, "column family belongs to another database");
    if (atomic_load(&cf->dropped)) return tdb_err(TDB_ERR_CLOSED, "column family '%s' was dropped", cf->name);
    return TDB_OK;
}

/* Register a family in the id-indexed table (under mu). */
static int cf_register(tdb_t *db, tdb_cf_t *cf) {
    if (cf->id >= db->ncf_slots) {
        uint32_t n = db->ncf_slots ? db->ncf_slots : 8;
        while (n <= cf->id) n *= 2;
        tdb_cf_t **p = (tdb_cf_t **)realloc(db->cfs, n * sizeof *p);
        if (!p) return tdb_err(TDB_ERR_NOMEM, "column family table");
        memset(p + db->ncf_slots, 0, (n - db->ncf_slots) * sizeof *p);
        db->cfs = p;
        db->ncf_slots = n;
    }
    db->cfs[cf->id] = cf;
    return TDB_OK;
}

/* Add a family object to the database (open and create paths, under mu). */
int db_add_cf(tdb_t *db, uint32_t id, const char *name, const tdb_cf_config_t *cfg, version_t *v,
              uint64_t log_number, tdb_cf_t **out) {
    tdb_cf_t *cf = NULL;
    int rc = TDB_OK;
    TRY(cf_new(db, id, name, cfg, v, log_number, &cf));
    TRY(cf_register(db, cf));
    TRY(cf_install_sv(cf));
    if (out) *out = cf;
    return TDB_OK;
err:
    if (cf && id < db->ncf_slots && db->cfs[id] == cf) db->cfs[id] = NULL;
    cf_free(cf);
    return rc;
}

void tdb_free(void *p) { free(p); }

/* The family's id (what batches and the MANIFEST name it by). */
uint32_t db_cf_id(const tdb_cf_t *cf) { return cf->id; }

/* 1 once the family was dropped. */
int db_cf_dropped(const tdb_cf_t *cf) { return atomic_load(&cf->dropped) ? 1 : 0; }
