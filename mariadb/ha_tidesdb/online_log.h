/*
 * online_log: the change log of an ADD INDEX run with LOCK=NONE
 * (ha_tidesdb_alter.cc builds the index; this is what writers fill
 * meanwhile).
 *
 * While an index is built, every write_row / update_row / delete_row of
 * the table appends one entry per primary key it touches: the key, the
 * writer's library transaction id, and for an update or delete the row
 * as it was stored before (the version the writer locked, which its own
 * index maintenance removes). The ALTER drains the entries and, for each
 * primary key, makes the new index agree with the latest committed row.
 *
 * Invariants
 *  1. TableDef::online_on is set (and the log installed) only under the
 *     ALTER's exclusive metadata lock, before the build's snapshot is
 *     taken: every write the snapshot lacks is logged.
 *  2. An entry is appended before the writer's transaction commits, so a
 *     change the log does not show was committed before the snapshot.
 *  3. The log holds at most `limit` bytes of entries not yet drained;
 *     past it the log stops growing and is marked overflowed, which fails
 *     the ALTER (never the writer).
 */
#ifndef TIDESQL_ONLINE_LOG_H
#define TIDESQL_ONLINE_LOG_H

#include "dict.h"

#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace tidesql {

struct OnlineLogEntry {
  uint64_t txn = 0;   /* tdb_txn_id of the writer */
  std::string pk;     /* encoded primary key (or hidden row id) */
  bool has_before = false;
  std::string before; /* packed row as stored before the write */
};

struct OnlineLog {
  std::mutex mu; /* guards what follows */
  std::vector<OnlineLogEntry> entries;
  size_t bytes = 0;
  size_t limit = 0;
  bool overflow = false;
};

/* Install a new log on the table (invariant 1); returns it. */
std::shared_ptr<OnlineLog> online_log_start(TableDef *def, size_t limit);
/* Remove the table's log (the ALTER ended); writers stop logging. */
void online_log_stop(TableDef *def);
/* Writer side: the table's log, or empty when no index is being built. */
inline std::shared_ptr<OnlineLog> online_log_of(TableDef *def) {
  if (!def->online_on.load(std::memory_order_acquire)) return std::shared_ptr<OnlineLog>();
  std::lock_guard<std::mutex> g(def->online_mu);
  return def->online_log;
}
/* Append an entry (invariant 3). */
void online_log_append(OnlineLog *log, uint64_t txn, const std::string &pk, const std::string *before);

}  // namespace tidesql

#endif
