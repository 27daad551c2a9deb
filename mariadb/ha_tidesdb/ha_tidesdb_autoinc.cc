/* ha_tidesdb counters: AUTO_INCREMENT and the hidden row id of a table
 * without a primary key (see ha_tidesdb.h).
 *
 * Invariants
 *  1. Both counters live in the table's definition (TableDef::autoinc_next,
 *     hidden_next), shared by every handler of the table. Once per
 *     definition, before first use, load_counters (under TableDef::mu)
 *     raises them to the largest stored key + 1.
 *  2. Reservations move autoinc_next forward by compare-and-swap: two
 *     inserts never reserve the same value, and a rollback does not hand
 *     its values back.
 *  3. A negative largest value counts as none (the series starts at 1);
 *     the counter saturates at ULLONG_MAX.
 */
#include "ha_tidesdb.h"

#include "row_format.h"

#include <string.h>

namespace tidesql {

/* Initialise the hidden row id and AUTO_INCREMENT counters of the
 * definition from the largest stored keys (once per definition). */
void ha_tidesdb::load_counters() {
  TableDef *def = m_def.get();
  std::lock_guard<std::mutex> g(def->mu);
  if (def->counters_loaded) return;
  tdb_iter_t *it;
  if (def->hidden_pk && tdb_iter_create(g_db, data_cf(), NULL, &it) == TDB_OK) {
    tdb_iter_seek_to_last(it);
    size_t kl;
    if (tdb_iter_valid(it)) {
      const uchar *k = (const uchar *)tdb_iter_key(it, &kl);
      if (kl == 8) def->hidden_next = get_be64(k) + 1;
    }
    tdb_iter_destroy(it);
  }
  Field *ai = table->found_next_number_field;
  uint idx = table->s->next_number_index;
  if (ai && idx < table->s->keys && table->s->next_number_keypart == 0 &&
      tdb_iter_create(g_db, index_cf(idx), NULL, &it) == TDB_OK) {
    tdb_iter_seek_to_last(it);
    if (tdb_iter_valid(it)) {
      size_t kl, vl;
      const uchar *k = (const uchar *)tdb_iter_key(it, &kl);
      const uchar *v = (const uchar *)tdb_iter_value(it, &vl);
      bool ok;
      if (is_pk_index(idx)) {
        ok = row_unpack(table, v, vl, m_scratch, &m_def->rowfmt) == 0;
      } else {
        KEY *ki = &table->key_info[idx];
        ok = vl >= m_pk_len + ki->key_length;
        if (ok) key_restore(m_scratch, v + m_pk_len, ki, ki->key_length);
      }
      (void)k;
      if (ok) {
        my_ptrdiff_t diff = (my_ptrdiff_t)(m_scratch - table->record[0]);
        ai->move_field_offset(diff);
        longlong raw = ai->val_int();
        bool neg = !ai->is_unsigned() && raw < 0;
        ai->move_field_offset(-diff);
        ulonglong next = neg ? 1 : (ulonglong)raw + 1;
        if (!neg && (ulonglong)raw == ULLONG_MAX) next = ULLONG_MAX;
        if (next > def->autoinc_next) def->autoinc_next = next;
      }
      memcpy(m_scratch, table->s->default_values, table->s->reclength);
    }
    tdb_iter_destroy(it);
  }
  if (def->autoinc_next == 0) def->autoinc_next = 1;
  def->counters_loaded = true;
}

/* Reserve nb_desired_values values of the series offset + k * increment
 * from the table's shared counter (lock-free: concurrent inserts never
 * get the same value). */
void ha_tidesdb::get_auto_increment(ulonglong offset, ulonglong increment, ulonglong nb_desired_values,
                                    ulonglong *first_value, ulonglong *nb_reserved_values) {
  TableDef *def = m_def.get();
  if (!def->counters_loaded) load_counters();
  if (increment == 0) increment = 1;
  if (nb_desired_values == 0) nb_desired_values = 1;
  uint64_t cur = def->autoinc_next.load();
  for (;;) {
    ulonglong first = cur ? cur : 1;
    if (increment > 1) {
      /* Smallest value >= first of the form offset + k * increment. */
      if (first <= offset) {
        first = offset;
      } else {
        ulonglong k = (first - offset + increment - 1) / increment;
        first = offset + k * increment;
        if (first < offset) first = ULLONG_MAX; /* overflow */
      }
    }
    ulonglong span = nb_desired_values * increment;
    ulonglong end = (span / increment != nb_desired_values || first + span < first) ? ULLONG_MAX : first + span;
    if (def->autoinc_next.compare_exchange_weak(cur, end)) {
      *first_value = first;
      *nb_reserved_values = nb_desired_values;
      break;
    }
  }
  trx()->touch_table(m_def);
}

}  // namespace tidesql
