/*
 * TideSQL: the TidesDB storage engine for MariaDB. Shared declarations.
 *
 * Layout of the engine (one file per concern, see docs/design/tidesql.md):
 *   plugin.cc             plugin declaration, handlerton set-up, database
 *                         open/close, error mapping
 *   sysvars.{h,cc}        tidesdb_* system and status variables, SHOW ENGINE
 *   dict.{h,cc}           data dictionary: tables -> column families, DDL
 *   key_codec.{h,cc}      memcmp-ordered key encoding of index tuples
 *   row_format.{h,cc}     row values and secondary-index values
 *   trx.{h,cc}            per-connection library transaction (tdb_txn_t),
 *                         statement rollback, savepoints
 *   txn_iter.{h,cc}       ordered iterator in a transaction's view
 *   handlerton.{h,cc}     the server's transaction callbacks, THD <-> Trx
 *   commit_sync.{h,cc}    binlog commit checkpoints: sync thread, notify
 *   ha_tidesdb.{h,cc}     the handler: capabilities, open/close, errors
 *   ha_tidesdb_ddl.cc     CREATE/DROP/RENAME/TRUNCATE, OPTIMIZE
 *   ha_tidesdb_alter.cc   ALTER TABLE in place: INSTANT, index builds
 *   ha_tidesdb_lock.cc    table and row lock modes, statement boundaries
 *   ha_tidesdb_autoinc.cc AUTO_INCREMENT and hidden row id counters
 *   ha_tidesdb_stats.cc   info(), sizes, rec_per_key, ANALYZE
 *   ha_tidesdb_read.cc    index and table scans, range estimates
 *   ha_tidesdb_write.cc   write_row/update_row/delete_row
 *   ha_tidesdb_check.cc   CHECK TABLE: checksums, indexes against rows
 *   info_schema.{h,cc}    information_schema.TIDESDB_* tables
 *   hot_backup.{h,cc}     SET GLOBAL tidesdb_backup_dir: hot backup (checkpoint,
 *                         .frm files, binlog position) under BACKUP STAGE
 *   malloc_tuning.{h,cc}  tidesdb_malloc_threshold: glibc malloc thresholds
 *                         fixed for the server process
 *
 * Dependency direction: tidesdb.h <- key_codec, row_format <- dict <- trx
 * <- txn_iter, handlerton <- handler <- plugin. Only trx.cc, txn_iter.cc
 * and handlerton.cc call tdb_txn_*.
 */
#ifndef TIDESQL_COMMON_H
#define TIDESQL_COMMON_H

/* Engine plugins use server internals (THD, TABLE, Field). */
#ifndef MYSQL_SERVER
#define MYSQL_SERVER 1
#endif
#include <my_global.h>
#include <mysql/plugin.h>
#include "sql_class.h"
#include "handler.h"
#include "field.h"
#include "key.h"
#include "table.h"
#include "log.h"

#include <tidesdb/tidesdb.h>

#include <string>

/* Which build of the engine this is: plain, pgo, lto or pgo+lto, set by
 * scripts/mariadb/build_plugin.sh (status variable tidesdb_build and the
 * plugin's version string in information_schema.PLUGINS). */
#ifndef TIDESQL_BUILD_KIND
#define TIDESQL_BUILD_KIND "plain"
#endif

namespace tidesql {

/* The one open database and the engine's handlerton (plugin.cc). */
extern tdb_t *g_db;
extern handlerton *g_hton;

/* Map a library error code to a handler error (HA_ERR_*), remembering the
 * library's detail text for get_error_message(). */
int map_tdb_error(int rc);
/* Detail of the last library error mapped on this thread. */
const std::string &last_error_detail();
/* Replace that detail with the engine's own message. */
void set_error_detail(const std::string &msg);

/* Write a message to the server error log. */
void log_warning(const char *fmt, ...) ATTRIBUTE_FORMAT(printf, 1, 2);
void log_info(const char *fmt, ...) ATTRIBUTE_FORMAT(printf, 1, 2);

/* Big-endian helpers for the fixed-width integers in keys and metadata. */
inline void put_be64(uchar *p, uint64_t v) {
  for (int i = 7; i >= 0; i--) { p[i] = (uchar)(v & 0xff); v >>= 8; }
}
inline uint64_t get_be64(const uchar *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v = (v << 8) | p[i];
  return v;
}
inline void append_be64(std::string &s, uint64_t v) {
  uchar b[8];
  put_be64(b, v);
  s.append((const char *)b, 8);
}

}  // namespace tidesql

#endif
