/* plugin: the handlerton, opening/closing the database, error mapping and
 * the plugin declaration (see tdb_common.h for the file map). */
#include "ha_tidesdb.h"
#include "commit_sync.h"
#include "handlerton.h"
#include "info_schema.h"
#include "malloc_tuning.h"

#include <stdarg.h>
#include <stdio.h>

/* Server function (sql_show.cc, not in a header): hide a data-directory
 * entry from SHOW DATABASES. */
void ignore_db_dirs_append(const char *dirname_arg);

namespace tidesql {

tdb_t *g_db = NULL;
handlerton *g_hton = NULL;

/* The database lives in the server's data directory (the server's working
 * directory); '#' keeps it from being listed as a schema. */
static const char *DB_DIR = "./#tidesdb";

static thread_local std::string t_last_error;

const std::string &last_error_detail() { return t_last_error; }

void set_error_detail(const std::string &msg) { t_last_error = msg; }

int map_tdb_error(int rc) {
  const char *detail = tdb_last_error();
  t_last_error = std::string("TidesDB: ") + tdb_strerror(rc);
  if (detail && *detail) t_last_error += std::string(": ") + detail;
  switch (rc) {
    case TDB_OK:
      return 0;
    case TDB_ERR_NOT_FOUND:
      return HA_ERR_KEY_NOT_FOUND;
    case TDB_ERR_TIMEOUT:
      return HA_ERR_LOCK_WAIT_TIMEOUT;
    case TDB_ERR_CONFLICT:
    case TDB_ERR_DEADLOCK:
      return HA_ERR_LOCK_DEADLOCK;
    case TDB_ERR_NOMEM:
      return HA_ERR_OUT_OF_MEM;
    case TDB_ERR_NO_SPACE:
      return HA_ERR_DISK_FULL;
    case TDB_ERR_READ_ONLY:
      return HA_ERR_TABLE_READONLY;
    case TDB_ERR_TOO_LARGE:
      return HA_ERR_TO_BIG_ROW;
    case TDB_ERR_NOT_SUPPORTED:
      return HA_ERR_UNSUPPORTED;
    case TDB_ERR_BUSY:
      /* Back-pressure that outlasted the write's stall bound (or 30 s
       * without flush/compaction progress): the detail says so. Commits
       * retry it up to tidesdb_write_stall_timeout (Trx::commit_waiting). */
    default:
      /* I/O, corruption, invalid argument...: the engine-specific code
       * makes print_error() show t_last_error. */
      return HA_ERR_LAST + 1;
  }
}

void log_warning(const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  sql_print_warning("%s", buf);
}

void log_info(const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  sql_print_information("%s", buf);
}

static handler *create_handler(handlerton *hton, TABLE_SHARE *table, MEM_ROOT *mem_root) {
  return new (mem_root) ha_tidesdb(hton, table);
}

/* Open the database with the configured settings. A unified memtable the
 * library refuses falls back to one memtable per column family. */
static int open_database() {
  tdb_config_t cfg;
  sysvars_db_config(&cfg);
  int rc = tdb_open(DB_DIR, &cfg, &g_db);
  if (rc == TDB_ERR_NOT_SUPPORTED && cfg.unified_memtable) {
    log_warning("TidesDB: unified memtable not supported by the library (%s); using one memtable "
                "per column family",
                tdb_last_error());
    cfg.unified_memtable = 0;
    rc = tdb_open(DB_DIR, &cfg, &g_db);
  }
  if (rc != TDB_OK) {
    sql_print_error("TidesDB: cannot open %s: %s: %s", DB_DIR, tdb_strerror(rc), tdb_last_error());
    g_db = NULL;
    return 1;
  }
  g_unified_active = cfg.unified_memtable != 0;
  return 0;
}

static int tidesdb_init(void *p) {
  /* First, before the server's start-up frees the block that would raise
   * glibc's thresholds (malloc_tuning.h). */
  size_t mt = sysvars_malloc_threshold();
  MallocTuning tuned = malloc_tuning_apply(mt);
  if (tuned == MallocTuning::applied)
    log_info("TidesDB: glibc malloc thresholds fixed at %zu bytes", mt);
  else if (tuned == MallocTuning::refused)
    log_warning("TidesDB: glibc refused tidesdb_malloc_threshold = %zu; its thresholds stay adaptive", mt);
  else
    log_info("TidesDB: glibc malloc thresholds %s", malloc_tuning_name(tuned));
  handlerton *hton = (handlerton *)p;
  g_hton = hton;
  hton->create = create_handler;
  hton->flags = HTON_TEMPORARY_NOT_SUPPORTED | HTON_TRUNCATE_REQUIRES_EXCLUSIVE_USE |
                HTON_REQUIRES_CLOSE_AFTER_TRUNCATE;
  hton->savepoint_offset = sizeof(uint64_t);
  hton->savepoint_set = trx_hton_savepoint_set;
  hton->savepoint_rollback = trx_hton_savepoint_rollback;
  hton->savepoint_release = trx_hton_savepoint_release;
  hton->commit = trx_hton_commit;
  hton->commit_ordered = trx_hton_commit_ordered;
  hton->commit_checkpoint_request = commit_sync_request;
  hton->rollback = trx_hton_rollback;
  hton->close_connection = trx_hton_close_connection;
  hton->start_consistent_snapshot = trx_hton_start_consistent_snapshot;
  hton->kill_query = trx_hton_kill_query;
  hton->prepare = trx_hton_prepare;
  hton->recover = trx_hton_recover;
  hton->commit_by_xid = trx_hton_commit_by_xid;
  hton->rollback_by_xid = trx_hton_rollback_by_xid;
  hton->show_status = show_engine_status;
  hton->table_options = g_table_options;
  hton->check_version = alter_check_version;
  if (open_database()) return 1;
  tdb_set_lock_wait_hook(g_db, trx_lock_wait_hook, NULL); /* handlerton.cc, invariant 5 */
  ignore_db_dirs_append(DB_DIR + 2);
  int err = dict_init(g_db);
  if (err) {
    sql_print_error("TidesDB: cannot load the data dictionary (error %d: %s)", err, t_last_error.c_str());
    tdb_close(g_db);
    g_db = NULL;
    return 1;
  }
  commit_sync_start();
  log_info("TidesDB: opened %s (%s memtable)", DB_DIR, g_unified_active ? "unified" : "per-table");
  return 0;
}

static int tidesdb_deinit(void *p) {
  commit_sync_stop(); /* pending binlog checkpoints first: the server waits for them */
  dict_shutdown();
  if (g_db) {
    int rc = tdb_close(g_db);
    if (rc != TDB_OK) sql_print_error("TidesDB: close failed: %s", tdb_strerror(rc));
    g_db = NULL;
  }
  return 0;
}

}  // namespace tidesql

static struct st_mysql_storage_engine tidesdb_storage_engine = {MYSQL_HANDLERTON_INTERFACE_VERSION};

maria_declare_plugin(tidesdb){
    MYSQL_STORAGE_ENGINE_PLUGIN,
    &tidesdb_storage_engine,
    "TidesDB",
    "TidesDB authors",
    "TidesDB: transactional LSM-tree storage engine (TideSQL)",
    PLUGIN_LICENSE_GPL,
    tidesql::tidesdb_init,
    tidesql::tidesdb_deinit,
    0x0001,
    tidesql::g_status_vars,
    tidesql::g_sysvars,
    "0.1.0-" TIDESQL_BUILD_KIND,
    MariaDB_PLUGIN_MATURITY_GAMMA},
#define TIDESDB_IS_PLUGIN(name, descr, init)                                                              \
  {MYSQL_INFORMATION_SCHEMA_PLUGIN, &tidesql::is_plugin_descriptor, name, "TidesDB authors", descr,       \
   PLUGIN_LICENSE_GPL, init, NULL, 0x0001, NULL, NULL, "0.1.0-" TIDESQL_BUILD_KIND,                       \
   MariaDB_PLUGIN_MATURITY_GAMMA}
    TIDESDB_IS_PLUGIN("TIDESDB_INDEX_STATS", "TidesDB: storage of each index (column family)",
                      tidesql::is_index_stats_init),
    TIDESDB_IS_PLUGIN("TIDESDB_TRX", "TidesDB: running transactions", tidesql::is_trx_init),
    TIDESDB_IS_PLUGIN("TIDESDB_LOCK_WAITS", "TidesDB: row-lock waits (who waits for whom)",
                      tidesql::is_lock_waits_init),
    TIDESDB_IS_PLUGIN("TIDESDB_BACKGROUND", "TidesDB: flush and compaction work, stalls, cache",
                      tidesql::is_background_init) maria_declare_plugin_end;
