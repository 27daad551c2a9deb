/*
 * db: opening, closing and reopening the database under test, and the
 * fault-injection env around it. A failed open is always a verification
 * failure: after any crash the database must open.
 */
#include <stdio.h>
#include <string.h>

#include "db/testing.h"
#include "dbcheck.h"
#include "stress.h"

/* The configuration every run uses (from the flags). */
static void stress_config(const stress_opts_t *o, tdb_config_t *c) {
    tdb_config_default(c);
    c->log_level = TDB_LOG_WARN;
    c->block_cache_size = 4 << 20; /* small: reads reach the files */
    c->max_open_sstables = 64;
    c->flush_threads = 1;
    c->compaction_threads = 1;
    c->unified_memtable = o->unified;
    c->unified_memtable_write_buffer_size = o->write_buffer_size;
    c->unified_memtable_sync_mode = o->sync;
    c->default_cf.write_buffer_size = o->write_buffer_size;
    c->default_cf.sync_mode = o->sync;
    c->default_cf.sync_interval_us = 20000;
    c->default_cf.compression = o->compression;
    c->default_cf.l1_file_count_trigger = 3;
}

/* Name of family i. */
static void cf_name(int i, char *buf, size_t n) {
    if (i == 0) snprintf(buf, n, "%s", TDB_DEFAULT_CF);
    else snprintf(buf, n, "cf%d", i);
}

/* Open the database and its families; a failed open or a lost family fails the run. */
int stress_open_db(stress_t *s) {
    tdb_config_t c;
    stress_config(&s->o, &c);
    env_t *env = s->fe ? fault_env_env(s->fe) : env_posix();
    int rc = tdb_open_env(s->o.db, &c, env, &s->db);
    if (rc != TDB_OK) {
        stress_fail(s, "open failed: %s: %s", tdb_strerror(rc), tdb_last_error());
        return rc;
    }
    for (int i = 0; i < s->o.cfs; i++) {
        char name[32];
        cf_name(i, name, sizeof name);
        rc = tdb_get_cf(s->db, name, &s->cf[i]);
        if (rc == TDB_OK) continue;
        if ((uint64_t)i < s->orc.h->cfs_acked) {
            stress_fail(s, "lost column family '%s' (its creation was acknowledged)", name);
            return TDB_ERR_NOT_FOUND;
        }
        tdb_cf_config_t cc = c.default_cf;
        rc = tdb_create_cf(s->db, name, &cc, &s->cf[i]);
        if (rc != TDB_OK) {
            stress_die(s, "tdb_create_cf", rc);
            return rc;
        }
        __atomic_store_n(&s->orc.h->cfs_acked, (uint64_t)i + 1, __ATOMIC_RELEASE);
    }
    if (s->orc.h->cfs_acked < (uint64_t)s->o.cfs) s->orc.h->cfs_acked = (uint64_t)s->o.cfs;
    return TDB_OK;
}

/* Close the database (an error is fatal unless faults are injected). */
void stress_close_db(stress_t *s) {
    if (!s->db) return;
    int rc = tdb_close(s->db);
    s->db = NULL;
    memset(s->cf, 0, sizeof s->cf);
    if (rc != TDB_OK && !s->fe) stress_die(s, "tdb_close", rc);
}

/* Install the fault rules the flags ask for (none without a fault env). */
void stress_arm_faults(stress_t *s) {
    if (!s->fe) return;
    fault_rule_t r;
    memset(&r, 0, sizeof r);
    r.code = TDB_ERR_IO;
    if (s->o.read_fault_prob > 0) {
        r.op = FAULT_READ;
        r.probability = s->o.read_fault_prob;
        fault_env_add_rule(s->fe, &r);
    }
    if (s->o.write_fault_prob > 0) {
        r.probability = s->o.write_fault_prob;
        r.op = FAULT_APPEND;
        r.partial = 1;
        fault_env_add_rule(s->fe, &r);
        r.partial = 0;
        r.op = FAULT_SYNC;
        fault_env_add_rule(s->fe, &r);
    }
}

/* Close, check every file, reopen, verify everything, re-arm faults. */
void stress_reopen(stress_t *s, const char *why) {
    if (s->o.verbose) printf("reopen (%s)\n", why);
    stress_close_db(s);
    if (s->fe) fault_env_clear_rules(s->fe);
    if (s->o.check_files) {
        dbcheck_opts_t co = {s->fe != NULL, 0, stderr};
        dbcheck_result_t r;
        int rc = dbcheck_run(env_posix(), s->o.db, &co, &r);
        if (rc != 0) stress_fail(s, "file check after a clean close (%s): %llu damaged file(s), first: %s", why,
                                 (unsigned long long)r.files_damaged, r.files_damaged ? r.damaged[0] : "-");
    }
    if (stress_open_db(s) != TDB_OK) return;
    stress_verify_all(s, why);
    stress_arm_faults(s);
}
