/*
 * stat_counter: a statistics counter that concurrent statements bump
 * without sharing a cache line. A thread adds to one of kSlots
 * cache-line-sized slots, the one of the CPU it runs on; a read sums the
 * slots.
 *
 * Invariants
 *  - The value read is the sum of every add that happened before the read
 *    began; adds racing with it may or may not be in it (as with one
 *    relaxed atomic). Nothing orders other memory: for status output only.
 */
#ifndef TIDESQL_STAT_COUNTER_H
#define TIDESQL_STAT_COUNTER_H

#include <sched.h>

#include <atomic>

namespace tidesql {

class StatCounter {
 public:
  static constexpr unsigned kSlots = 16;

  void add(unsigned long long n) { m_slot[slot()].v.fetch_add(n, std::memory_order_relaxed); }
  void operator++(int) { add(1); }
  unsigned long long load() const {
    unsigned long long sum = 0;
    for (const Slot &s : m_slot) sum += s.v.load(std::memory_order_relaxed);
    return sum;
  }
  operator unsigned long long() const { return load(); }
  /* One slot's part of the sum (tests). */
  unsigned long long slot_load(unsigned s) const { return m_slot[s % kSlots].v.load(std::memory_order_relaxed); }

 private:
  struct alignas(64) Slot {
    std::atomic<unsigned long long> v{0};
  };
  /* The slot of the CPU the thread runs on (glibc reads it from the
   * thread's rseq area: no system call), the same for every counter. A
   * thread moved meanwhile adds to another CPU's slot, which only costs
   * that one add a shared line. */
  static unsigned slot() {
    int cpu = sched_getcpu();
    return cpu > 0 ? (unsigned)cpu % kSlots : 0;
  }
  Slot m_slot[kSlots];
};

}  // namespace tidesql

#endif
