/* ha_tidesdb statistics: sizes, row counts and the optimizer's
 * rec_per_key (see ha_tidesdb.h).
 *
 * rec_per_key[j] of an index (rows per distinct value of its first j+1
 * parts) is estimated without reading the index through:
 *  - leading parts with few distinct values are counted exactly by a skip
 *    scan (seek to a prefix's successor, one seek per distinct prefix) and
 *    divided into the table's row count;
 *  - deeper parts, once a prefix has more distinct values than the skip
 *    scan may visit, come from runs of consecutive entries read at
 *    positions spread over the index (the starts of the deepest counted
 *    prefixes): rows per value = adjacent pairs / pairs whose prefix
 *    differs, and at most rows / (seeks allowed + 1).
 * The estimate is kept in the table's definition and recomputed, like
 * InnoDB's automatic statistics, when the row count has moved by more than
 * a tenth since it was made (checked at most every STATS_MIN_INTERVAL_US).
 * ANALYZE TABLE makes a larger estimate and persists it. */
#include "ha_tidesdb.h"

#include <string.h>

namespace tidesql {

static const ulonglong STATS_MIN_INTERVAL_US = 2000000;

/* Effort of one estimate. */
struct CardEffort {
  ulonglong max_distinct; /* skip-scan seeks per key part */
  size_t runs;            /* sample positions */
  size_t run_len;         /* entries read at each */
};
static const CardEffort AUTO_EFFORT = {1024, 64, 64};
static const CardEffort ANALYZE_EFFORT = {16384, 256, 256};

/* Bytes of the data family and of the index families (cached 2 s). */
void ha_tidesdb::refresh_sizes() {
  TableDef *def = m_def.get();
  ulonglong now = microsecond_interval_timer();
  if (def->size_time && now - def->size_time < 2000000) return;
  uint64_t data = 0, index = 0;
  tdb_cf_t *dcf = data_cf();
  for (tdb_cf_t *cf : def->cfs) {
    tdb_stats_t st;
    if (tdb_get_stats(g_db, cf, &st) != TDB_OK) continue;
    uint64_t b = st.memtable_bytes;
    for (int l = 1; l < TDB_MAX_LEVELS; l++) b += st.levels[l].bytes;
    (cf == dcf ? data : index) += b;
  }
  def->data_bytes = data;
  def->index_bytes = index;
  def->size_time = now;
}

/* Distinct byte prefixes of length pl in the family of `it`, counted by
 * seeking past each; starts receives each prefix. ~0 once more than limit. */
static ulonglong count_prefixes(tdb_iter_t *it, size_t pl, ulonglong limit, std::vector<std::string> *starts) {
  std::string p;
  ulonglong d = 0;
  starts->clear();
  tdb_iter_seek_to_first(it);
  while (tdb_iter_valid(it)) {
    if (++d > limit) return ~0ULL;
    size_t kl;
    const char *k = (const char *)tdb_iter_key(it, &kl);
    p.assign(k, kl < pl ? kl : pl);
    starts->push_back(p);
    if (!key_successor(p)) break;
    tdb_iter_seek(it, p.data(), p.size());
  }
  return d;
}

/* rec_per_key of index k (parts n) from rows table rows. */
static std::vector<ulong> estimate_index(tdb_cf_t *cf, const IndexCodec &c, bool unique, ulonglong rows,
                                         const CardEffort &e) {
  uint n = c.parts();
  std::vector<ulong> rpk(n, 1);
  if (!n || rows == 0) return rpk;
  tdb_iter_t *it;
  if (tdb_iter_create(g_db, cf, NULL, &it) != TDB_OK) return rpk;
  std::vector<double> est(n, 0);
  std::vector<std::string> starts, deepest;
  uint exact = 0; /* parts counted exactly */
  for (; exact < n; exact++) {
    ulonglong d = count_prefixes(it, c.prefix_len(exact + 1), e.max_distinct, &starts);
    if (d == ~0ULL) break;
    if (d == 0) { /* empty family */
      tdb_iter_destroy(it);
      return rpk;
    }
    est[exact] = (double)rows / (double)d;
    deepest.swap(starts);
  }
  if (exact < n) {
    /* Runs of consecutive entries from positions spread over the deepest
     * counted prefixes (or from the start). */
    std::vector<ulonglong> changes(n, 0);
    ulonglong pairs = 0;
    size_t nruns = deepest.empty() ? 1 : std::min(e.runs, deepest.size());
    std::string prev;
    for (size_t r = 0; r < nruns; r++) {
      if (deepest.empty()) tdb_iter_seek_to_first(it);
      else {
        const std::string &s = deepest[r * deepest.size() / nruns];
        tdb_iter_seek(it, s.data(), s.size());
      }
      size_t len = deepest.empty() ? e.runs * e.run_len : e.run_len;
      for (size_t i = 0; i < len && tdb_iter_valid(it); i++, tdb_iter_next(it)) {
        size_t kl;
        const char *k = (const char *)tdb_iter_key(it, &kl);
        if (i > 0) {
          pairs++;
          for (uint j = exact; j < n; j++) {
            size_t pl = c.prefix_len(j + 1);
            if (kl < pl || prev.size() < pl || memcmp(prev.data(), k, pl) != 0) {
              for (uint m = j; m < n; m++) changes[m]++; /* parts j.. all differ */
              break;
            }
          }
        }
        prev.assign(k, kl);
      }
    }
    /* More than max_distinct values: at most rows / (max_distinct + 1)
     * rows per value, which is also the estimate when no run saw a change. */
    double bound = (double)rows / (double)(e.max_distinct + 1);
    for (uint j = exact; j < n; j++) est[j] = changes[j] ? std::min((double)pairs / (double)changes[j], bound) : bound;
  }
  tdb_iter_destroy(it);
  double above = (double)rows; /* rows per value never grows with more parts */
  for (uint j = 0; j < n; j++) {
    double v = std::min(est[j], above);
    if (v < 1) v = 1;
    rpk[j] = (ulong)(v + 0.5);
    above = v;
  }
  if (unique) rpk[n - 1] = 1;
  return rpk;
}

void ha_tidesdb::compute_cardinality(bool thorough) {
  TABLE_SHARE *s = table->s;
  TableDef *def = m_def.get();
  int64_t rows = def->rows.load();
  std::vector<std::vector<ulong>> rpk(s->keys);
  for (uint k = 0; k < s->keys; k++)
    rpk[k] = estimate_index(index_cf(k), m_codecs[k], table->key_info[k].flags & HA_NOSAME,
                            rows > 0 ? (ulonglong)rows : 0, thorough ? ANALYZE_EFFORT : AUTO_EFFORT);
  std::lock_guard<std::mutex> g(def->mu);
  def->rec_per_key = rpk;
  def->card_rows = rows;
  def->card_time = microsecond_interval_timer();
  def->card_version++;
}

/* Recompute rec_per_key when it is missing or the row count moved by more
 * than a tenth since it was made; one handler at a time per table. Returns
 * whether it was recomputed. */
/* Whether the row count moved by more than a tenth (and 64 rows) from base. */
static bool rows_moved(int64_t rows, int64_t base) {
  int64_t moved = rows > base ? rows - base : base - rows;
  return moved > std::max<int64_t>(base / 10, 64);
}

bool ha_tidesdb::refresh_cardinality() {
  TableDef *def = m_def.get();
  /* Every statement asks: without a lock or a clock while the count holds. */
  int64_t base = def->card_rows.load(std::memory_order_relaxed);
  if (base >= 0 && !rows_moved(def->rows.load(std::memory_order_relaxed), base)) return false;
  ulonglong now = microsecond_interval_timer();
  {
    std::lock_guard<std::mutex> g(def->mu);
    if (def->rec_per_key.size() == table->s->keys) {
      int64_t rows = def->rows.load();
      base = def->card_rows;
      if (base < 0) { /* persisted by ANALYZE: compared from now on */
        def->card_rows = rows;
        def->card_time = now;
        return false;
      }
      if (!rows_moved(rows, base) || now - def->card_time < STATS_MIN_INTERVAL_US) return false;
    }
  }
  bool expected = false;
  if (!def->card_busy.compare_exchange_strong(expected, true)) return false;
  compute_cardinality(false);
  def->card_busy = false;
  return true;
}

int ha_tidesdb::info(uint flag) {
  if (!m_def) return 0;
  TableDef *def = m_def.get();
  if (flag & HA_STATUS_VARIABLE) {
    refresh_sizes();
    int64_t rows = def->rows.load();
    stats.records = rows > 0 ? (ha_rows)rows : 0;
    stats.deleted = 0;
    stats.data_file_length = def->data_bytes;
    stats.index_file_length = def->index_bytes;
    stats.block_size = 16384;
    stats.mean_rec_length = stats.records ? (ulong)(stats.data_file_length / stats.records) : 0;
  }
  /* The optimizer asks for VARIABLE before every statement and for CONST
   * when a table is opened: either picks up a new estimate. */
  if (flag & (HA_STATUS_CONST | HA_STATUS_VARIABLE)) refresh_cardinality();
  if ((flag & HA_STATUS_CONST) || m_card_version != def->card_version.load()) {
    std::lock_guard<std::mutex> g(def->mu);
    m_card_version = def->card_version.load();
    for (uint k = 0; k < table->s->keys && k < def->rec_per_key.size(); k++) {
      KEY *key = &table->key_info[k];
      for (uint j = 0; j < key->user_defined_key_parts && j < def->rec_per_key[k].size(); j++)
        key->rec_per_key[j] = def->rec_per_key[k][j];
    }
  }
  if (flag & HA_STATUS_CONST) stats.max_data_file_length = ~(ulonglong)0;
  if (flag & HA_STATUS_AUTO) {
    uint64_t v = def->autoinc_next.load();
    stats.auto_increment_value = v ? v : 1;
  }
  if (flag & HA_STATUS_ERRKEY) errkey = m_dup_key;
  return 0;
}

int ha_tidesdb::analyze(THD *thd, HA_CHECK_OPT *check_opt) {
  compute_cardinality(true);
  m_def->card_from_analyze = true;
  int err = dict_save_cardinality(m_def.get());
  info(HA_STATUS_CONST);
  return err ? HA_ADMIN_FAILED : HA_ADMIN_OK;
}

}  // namespace tidesql
