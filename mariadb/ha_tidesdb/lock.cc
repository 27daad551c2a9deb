/* lock: striped exclusive row-lock table with deadlock detection (see
 * lock.h). */
#include "lock.h"

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <unordered_map>

namespace tidesql {

std::atomic<ulonglong> g_lock_waits{0}, g_lock_deadlocks{0}, g_lock_timeouts{0};

namespace {

struct LockEntry {
  uint64_t owner;
  int waiters;
};

struct Stripe {
  std::mutex mu;
  std::condition_variable cv;
  std::unordered_map<std::string, LockEntry> locks;
};

const size_t N_STRIPES = 64;
Stripe g_stripes[N_STRIPES];

/* Wait-for graph: waiting transaction -> owner it waits for. */
std::mutex g_wait_mu;
std::unordered_map<uint64_t, uint64_t> g_waits;

Stripe &stripe_of(const std::string &name) { return g_stripes[std::hash<std::string>()(name) % N_STRIPES]; }

/* Record owner <- waiter; true if that closes a cycle (then not recorded). */
bool add_wait_edge(uint64_t waiter, uint64_t owner) {
  std::lock_guard<std::mutex> g(g_wait_mu);
  uint64_t o = owner;
  for (size_t steps = 0; steps < 100000; steps++) {
    if (o == waiter) return true;
    auto it = g_waits.find(o);
    if (it == g_waits.end()) break;
    o = it->second;
  }
  g_waits[waiter] = owner;
  return false;
}

void remove_wait_edge(uint64_t waiter) {
  std::lock_guard<std::mutex> g(g_wait_mu);
  g_waits.erase(waiter);
}

}  // namespace

std::string lock_name(tdb_cf_t *cf, const std::string &key) {
  std::string n((const char *)&cf, sizeof cf);
  n += key;
  return n;
}

int lock_acquire(uint64_t owner, const std::string &name, THD *thd, ulong timeout_sec, bool *acquired) {
  Stripe &s = stripe_of(name);
  std::unique_lock<std::mutex> g(s.mu);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_sec);
  bool waited = false;
  for (;;) {
    auto it = s.locks.find(name);
    if (it == s.locks.end()) {
      s.locks.emplace(name, LockEntry{owner, 0});
      *acquired = true;
      if (waited) remove_wait_edge(owner);
      return 0;
    }
    if (it->second.owner == owner) {
      *acquired = false;
      if (waited) remove_wait_edge(owner);
      return 0;
    }
    /* Held by another transaction: wait, unless that would deadlock. */
    if (add_wait_edge(owner, it->second.owner)) {
      if (waited) remove_wait_edge(owner);
      g_lock_deadlocks++;
      return HA_ERR_LOCK_DEADLOCK;
    }
    if (!waited) g_lock_waits++;
    waited = true;
    it->second.waiters++;
    s.cv.wait_for(g, std::chrono::milliseconds(100));
    it = s.locks.find(name);
    if (it != s.locks.end() && it->second.waiters > 0) it->second.waiters--;
    if (thd && thd_killed(thd)) {
      remove_wait_edge(owner);
      return HA_ERR_ABORTED_BY_USER;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      remove_wait_edge(owner);
      g_lock_timeouts++;
      return HA_ERR_LOCK_WAIT_TIMEOUT;
    }
  }
}

void lock_release(uint64_t owner, const std::string &name) {
  Stripe &s = stripe_of(name);
  std::lock_guard<std::mutex> g(s.mu);
  auto it = s.locks.find(name);
  if (it == s.locks.end() || it->second.owner != owner) return;
  bool waiters = it->second.waiters > 0;
  s.locks.erase(it);
  if (waiters) s.cv.notify_all();
}

}  // namespace tidesql
