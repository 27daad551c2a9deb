/* commit_sync: notifying the binary log's commit checkpoints (see
 * commit_sync.h; why in handlerton.cc, invariant 5).
 *
 * The binary log (or the server's mmap transaction log) asks, after each
 * rotation, that every commit whose commit_ordered returned be made
 * durable, then keeps the binlogs those XIDs are in until the engine
 * passes the cookie back (commit_checkpoint_notify_ha): only then may it
 * write a newer binlog checkpoint and purge older files. The COMMIT
 * markers commit_ordered wrote are not synced (Trx::commit_ordered); a
 * tdb_sync covers every marker written before it began.
 *
 * Invariants
 *  1. A cookie is notified only after a tdb_sync that began after the
 *     request was queued, and while no commit_ordered attempt was left
 *     failed (Trx::s_ordered_failed == 0: its commit() retries it synced):
 *     every transaction whose commit_ordered returned before the request
 *     is then durable in the engine.
 *  2. One thread, started at plugin init; it sleeps on g_cv while nothing
 *     is pending, so an idle server does no work for it. Requests are
 *     served in batches: one tdb_sync for all the cookies queued before it.
 *  3. commit_sync_stop (plugin deinit, which the server runs before it
 *     closes the binary log; closing waits for every pending checkpoint)
 *     serves what is queued, then joins the thread. A request after that
 *     is served on the caller's thread.
 *  4. A failed tdb_sync (a sticky I/O error of the library) notifies
 *     nothing: the binary log keeps its older files for recovery. It is
 *     retried every second; at stop it is given up with an error in the
 *     log (the binary log then waits for the checkpoint at shutdown: kill
 *     the server, recovery redoes the transactions from the binary log).
 */
#include "commit_sync.h"

#include "trx.h"

#include <pthread.h>

#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace tidesql {

static std::mutex g_mu;
static std::condition_variable g_cv;
static std::vector<void *> g_pending; /* under g_mu */
static bool g_stop = false;           /* under g_mu */
static bool g_running = false;        /* under g_mu */
static std::thread g_thread;
static std::atomic<ulonglong> g_notified{0};

ulonglong commit_sync_notified() { return g_notified; }

/* Wait until failed commit_ordered attempts were retried (invariant 1),
 * then sync; true when the cookies may be notified. */
static bool sync_for(size_t ncookies) {
  for (int i = 0; Trx::s_ordered_failed > 0; i++) {
    if (i % 1000 == 999)
      log_warning("TidesDB: a binlog checkpoint waits for %ld commit(s) to be retried", (long)Trx::s_ordered_failed);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  int rc = g_db ? tdb_sync(g_db) : TDB_ERR_CLOSED;
  if (rc == TDB_OK) return true;
  sql_print_error("TidesDB: WAL sync for a binlog checkpoint (%zu pending) failed: %s: %s", ncookies,
                  tdb_strerror(rc), tdb_last_error());
  return false;
}

static void notify(const std::vector<void *> &cookies) {
  for (void *c : cookies) {
    commit_checkpoint_notify_ha(c);
    g_notified++;
  }
}

static void run() {
  my_thread_init(); /* commit_checkpoint_notify_ha takes server mutexes */
  std::unique_lock<std::mutex> lk(g_mu);
  for (;;) {
    g_cv.wait(lk, [] { return g_stop || !g_pending.empty(); });
    if (g_pending.empty()) break; /* stopping, nothing left (invariant 3) */
    std::vector<void *> batch;
    batch.swap(g_pending);
    bool stopping = g_stop;
    lk.unlock();
    bool ok = sync_for(batch.size());
    if (ok) notify(batch);
    lk.lock();
    if (!ok) {
      if (stopping) {
        sql_print_error("TidesDB: %zu binlog checkpoint(s) not acknowledged: commits may not be durable; the "
                        "server may wait for them at shutdown (kill it: recovery redoes them from the binary log)",
                        batch.size());
        continue;
      }
      g_pending.insert(g_pending.begin(), batch.begin(), batch.end());
      g_cv.wait_for(lk, std::chrono::seconds(1), [] { return g_stop; }); /* invariant 4 */
    }
  }
  g_running = false;
  lk.unlock();
  my_thread_end();
}

void commit_sync_start() {
  std::lock_guard<std::mutex> g(g_mu);
  if (g_running) return;
  g_stop = false;
  g_running = true;
  g_thread = std::thread(run);
  /* Named by its starter, like the library's threads (db/bg.c), so the name
     is set once the plugin has started. */
  (void)pthread_setname_np(g_thread.native_handle(), "tdb-binlog-ckpt");
}

void commit_sync_stop() {
  {
    std::lock_guard<std::mutex> g(g_mu);
    if (!g_thread.joinable()) return;
    g_stop = true;
  }
  g_cv.notify_all();
  g_thread.join();
}

void commit_sync_request(void *cookie) {
  {
    std::lock_guard<std::mutex> g(g_mu);
    if (g_running && !g_stop) {
      g_pending.push_back(cookie);
      g_cv.notify_one();
      return;
    }
  }
  /* No thread (stopped, or init failed before it started): serve it here. */
  if (sync_for(1)) notify({cookie});
}

}  // namespace tidesql
