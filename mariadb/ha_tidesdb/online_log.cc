/* online_log: the change log of an ADD INDEX with LOCK=NONE (online_log.h). */
#include "online_log.h"

namespace tidesql {

/* Bytes an entry holds, with the vector slot and string headers. */
static size_t entry_bytes(const OnlineLogEntry &e) { return sizeof(e) + e.pk.size() + e.before.size(); }

std::shared_ptr<OnlineLog> online_log_start(TableDef *def, size_t limit) {
  std::shared_ptr<OnlineLog> log = std::make_shared<OnlineLog>();
  log->limit = limit;
  std::lock_guard<std::mutex> g(def->online_mu);
  def->online_log = log;
  def->online_on.store(true, std::memory_order_release);
  return log;
}

void online_log_stop(TableDef *def) {
  std::lock_guard<std::mutex> g(def->online_mu);
  def->online_on.store(false, std::memory_order_release);
  def->online_log.reset();
}

void online_log_append(OnlineLog *log, uint64_t txn, const std::string &pk, const std::string *before) {
  OnlineLogEntry e;
  e.txn = txn;
  e.pk = pk;
  if (before) {
    e.has_before = true;
    e.before = *before;
  }
  size_t n = entry_bytes(e);
  std::lock_guard<std::mutex> g(log->mu);
  if (log->overflow) return;
  if (log->bytes + n > log->limit) {
    /* Invariant 3: the ALTER fails; the log stops growing. */
    log->overflow = true;
    log->entries.clear();
    log->entries.shrink_to_fit();
    log->bytes = 0;
    return;
  }
  log->bytes += n;
  log->entries.push_back(std::move(e));
}

}  // namespace tidesql
