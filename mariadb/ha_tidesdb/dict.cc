/* dict: tables -> column families, DDL, persisted counters (see dict.h). */
#include "dict.h"

#include "sysvars.h"

#include <stdio.h>
#include <string.h>

#include <algorithm>
#include <map>
#include <set>

namespace tidesql {

static const char *DICT_CF = "tidesql_dict";
static const char *META_CF = "tidesql_meta";
static const uchar TABLE_RECORD_V1 = 1;
static const uchar TABLE_RECORD_V2 = 2; /* V1 + the .frm version */
static const uchar TABLE_RECORD_V3 = 3; /* V2 + row versions */

static tdb_t *s_db;
static tdb_cf_t *s_dict;
static tdb_cf_t *s_meta;
static std::mutex g_dict_mu;
static std::map<std::string, TableDefPtr> s_cache;
static uint64_t s_next_id = 1;

/* ---- encoding helpers ---- */

static std::string table_key(const std::string &name) { return "T" + name; }
static std::string meta_key(char kind, uint64_t id) {
  std::string k(1, kind);
  append_be64(k, id);
  return k;
}
static std::string cf_name(uint64_t id, uint n) {
  char buf[64];
  snprintf(buf, sizeof buf, "t%llu_%u", (unsigned long long)id, n);
  return buf;
}
/* Parse "t<id>_<n>"; false if the name is not a table family. */
static bool parse_cf_name(const char *name, uint64_t *id, uint *num = NULL) {
  unsigned long long v;
  unsigned n;
  char tail;
  if (name[0] != 't') return false;
  if (sscanf(name, "t%llu_%u%c", &v, &n, &tail) != 2) return false;
  *id = v;
  if (num) *num = n;
  return true;
}

struct TableRecord {
  uint64_t id = 0;
  bool hidden_pk = false;
  std::vector<std::string> cf_names;
  std::string version; /* the .frm's tabledef_version (empty in V1) */
  RowVersions fmt;     /* row versions (row_format.h) */
};

static void put_u16(std::string &s, uint v) {
  s.push_back((char)(v >> 8));
  s.push_back((char)(v & 0xff));
}
static uint get_u16(const uchar *p) { return ((uint)p[0] << 8) | p[1]; }

/* The row versions of a V3 record. */
static void versions_encode(std::string &s, const RowVersions &f) {
  put_u16(s, f.current);
  for (const RowVersion &v : f.versions) {
    s.push_back((char)v.null_bytes);
    put_u16(s, (uint)v.cols.size());
    for (const RowColumn &c : v.cols) {
      put_u16(s, c.field);
      put_u16(s, c.null_off);
      s.push_back((char)c.null_bit);
      s.push_back((char)c.skip);
      put_u16(s, c.skip_len);
    }
  }
  put_u16(s, (uint)f.defaults.size());
  for (const InstantDefault &d : f.defaults) {
    put_u16(s, d.field);
    s.push_back(d.null ? 1 : 0);
    uchar l[8];
    put_be64(l, d.packed.size());
    s.append((const char *)l + 4, 4);
    s += d.packed;
  }
}

static bool versions_decode(const uchar *&p, const uchar *end, RowVersions *f) {
  if (end - p < 2) return false;
  f->current = get_u16(p);
  p += 2;
  if (!f->current || f->current > MAX_ROW_VERSIONS) return false;
  f->versions.assign(f->current, RowVersion());
  for (RowVersion &v : f->versions) {
    if (end - p < 3) return false;
    v.null_bytes = p[0];
    uint n = get_u16(p + 1);
    p += 3;
    if ((size_t)(end - p) < (size_t)n * 8) return false;
    v.cols.resize(n);
    for (RowColumn &c : v.cols) {
      c.field = (uint16)get_u16(p);
      c.null_off = (uint16)get_u16(p + 2);
      c.null_bit = p[4];
      c.skip = p[5];
      c.skip_len = (uint16)get_u16(p + 6);
      p += 8;
    }
  }
  if (end - p < 2) return false;
  uint nd = get_u16(p);
  p += 2;
  f->defaults.assign(nd, InstantDefault());
  for (InstantDefault &d : f->defaults) {
    if (end - p < 7) return false;
    d.field = (uint16)get_u16(p);
    d.null = p[2] != 0;
    size_t l = ((size_t)p[3] << 24) | ((size_t)p[4] << 16) | ((size_t)p[5] << 8) | p[6];
    p += 7;
    if ((size_t)(end - p) < l) return false;
    d.packed.assign((const char *)p, l);
    p += l;
  }
  return true;
}

static std::string record_encode(const TableRecord &r) {
  std::string s(1, (char)(r.fmt.current ? TABLE_RECORD_V3 : TABLE_RECORD_V2));
  append_be64(s, r.id);
  s.push_back(r.hidden_pk ? 1 : 0);
  s.push_back((char)(r.cf_names.size() >> 8));
  s.push_back((char)(r.cf_names.size() & 0xff));
  for (const std::string &n : r.cf_names) {
    s.push_back((char)(n.size() >> 8));
    s.push_back((char)(n.size() & 0xff));
    s += n;
  }
  s.push_back((char)r.version.size());
  s += r.version;
  if (r.fmt.legacy.fields || r.fmt.current) {
    put_u16(s, r.fmt.legacy.fields);
    s.push_back((char)r.fmt.legacy.null_bytes);
  }
  if (r.fmt.current) versions_encode(s, r.fmt);
  return s;
}

/* Decode a table record; false if damaged (never trusted). */
static bool record_decode(const uchar *p, size_t len, TableRecord *r) {
  const uchar *end = p + len;
  if (len < 12 || p[0] < TABLE_RECORD_V1 || p[0] > TABLE_RECORD_V3) return false;
  bool v2 = p[0] >= TABLE_RECORD_V2, v3 = p[0] == TABLE_RECORD_V3;
  r->id = get_be64(p + 1);
  r->hidden_pk = p[9] != 0;
  uint n = ((uint)p[10] << 8) | p[11];
  p += 12;
  r->cf_names.clear();
  for (uint i = 0; i < n; i++) {
    if (end - p < 2) return false;
    uint l = ((uint)p[0] << 8) | p[1];
    p += 2;
    if ((size_t)(end - p) < l || l == 0 || l > TDB_MAX_CF_NAME) return false;
    r->cf_names.emplace_back((const char *)p, l);
    p += l;
  }
  r->version.clear();
  if (v2) {
    if (p == end || (size_t)(end - p - 1) < *p) return false;
    r->version.assign((const char *)p + 1, *p);
    p += 1 + *p;
    r->fmt = RowVersions();
    if (v3 && end - p < 3) return false;
    if (v3 || end - p == 3) {
      r->fmt.legacy.fields = get_u16(p);
      r->fmt.legacy.null_bytes = p[2];
      p += 3;
    }
    if (v3 && !versions_decode(p, end, &r->fmt)) return false;
  }
  return p == end;
}

/* Library write that waits out back-pressure (TDB_ERR_BUSY) for a bounded
 * time: DDL is not retried by clients. */
static int write_retry(tdb_batch_t *b) {
  int rc;
  for (int tries = 0; (rc = tdb_write(s_db, b)) == TDB_ERR_BUSY && tries < 3; tries++) {
  }
  return rc;
}

/* Synced write of a DDL batch (the dictionary family is FULL). In unified
 * memtable mode one sync mode governs every family: when it is weaker than
 * FULL, tdb_sync makes the batch durable. */
static int write_batch(tdb_batch_t *b) {
  int rc = write_retry(b);
  if (rc == TDB_OK && g_unified_active && sysvars_unified_sync_mode() != TDB_SYNC_FULL) rc = tdb_sync(s_db);
  return rc == TDB_OK ? 0 : map_tdb_error(rc);
}

/* ---- startup ---- */

/* Open the family, creating it with the given sync mode if absent. */
static int open_system_cf(const char *name, int sync_mode, tdb_cf_t **out) {
  int rc = tdb_get_cf(s_db, name, out);
  if (rc == TDB_OK) return 0;
  if (rc != TDB_ERR_NOT_FOUND) return map_tdb_error(rc);
  tdb_cf_config_t cfg;
  tdb_cf_config_default(&cfg);
  cfg.sync_mode = sync_mode;
  cfg.write_buffer_size = 4u << 20;
  rc = tdb_create_cf(s_db, name, &cfg, out);
  return rc == TDB_OK ? 0 : map_tdb_error(rc);
}

int dict_init(tdb_t *db) {
  s_db = db;
  int err;
  if ((err = open_system_cf(DICT_CF, TDB_SYNC_FULL, &s_dict))) return err;
  if ((err = open_system_cf(META_CF, TDB_SYNC_NONE, &s_meta))) return err;

  /* Live table ids, their families and the id counter. */
  std::set<uint64_t> live;
  std::set<std::string> live_cfs;
  tdb_iter_t *it;
  int rc = tdb_iter_create(s_db, s_dict, NULL, &it);
  if (rc != TDB_OK) return map_tdb_error(rc);
  for (tdb_iter_seek_to_first(it); tdb_iter_valid(it); tdb_iter_next(it)) {
    size_t kl, vl;
    const char *k = (const char *)tdb_iter_key(it, &kl);
    const uchar *v = (const uchar *)tdb_iter_value(it, &vl);
    if (kl > 1 && k[0] == 'T') {
      TableRecord r;
      if (!record_decode(v, vl, &r)) {
        log_warning("TidesDB: damaged dictionary record for table %.*s", (int)kl - 1, k + 1);
        continue;
      }
      live.insert(r.id);
      live_cfs.insert(r.cf_names.begin(), r.cf_names.end());
      if (r.id >= s_next_id) s_next_id = r.id + 1;
    } else if (kl == 8 && memcmp(k, "Snext_id", 8) == 0 && vl == 8) {
      uint64_t n = get_be64(v);
      if (n > s_next_id) s_next_id = n;
    }
  }
  rc = tdb_iter_status(it);
  tdb_iter_destroy(it);
  if (rc != TDB_OK) return map_tdb_error(rc);

  /* Invariant 1: drop families no table record lists. */
  char **names;
  size_t count;
  rc = tdb_list_cfs(s_db, &names, &count);
  if (rc != TDB_OK) return map_tdb_error(rc);
  for (size_t i = 0; i < count; i++) {
    uint64_t id;
    if (parse_cf_name(names[i], &id) && !live_cfs.count(names[i])) {
      log_info("TidesDB: dropping orphaned column family %s", names[i]);
      int drc = tdb_drop_cf(s_db, names[i]);
      if (drc != TDB_OK && drc != TDB_ERR_NOT_FOUND)
        log_warning("TidesDB: could not drop %s: %s", names[i], tdb_strerror(drc));
    }
    if (parse_cf_name(names[i], &id) && id >= s_next_id) s_next_id = id + 1;
    tdb_free(names[i]);
  }
  tdb_free(names);

  /* Meta keys of tables that no longer exist. */
  rc = tdb_iter_create(s_db, s_meta, NULL, &it);
  if (rc != TDB_OK) return map_tdb_error(rc);
  tdb_batch_t *b;
  if (tdb_batch_create(&b) != TDB_OK) {
    tdb_iter_destroy(it);
    return HA_ERR_OUT_OF_MEM;
  }
  for (tdb_iter_seek_to_first(it); tdb_iter_valid(it); tdb_iter_next(it)) {
    size_t kl;
    const uchar *k = (const uchar *)tdb_iter_key(it, &kl);
    if (kl == 9 && !live.count(get_be64(k + 1))) tdb_batch_delete(b, s_meta, k, kl);
  }
  tdb_iter_destroy(it);
  if (tdb_batch_count(b)) tdb_write(s_db, b);
  tdb_batch_destroy(b);
  return 0;
}

static int persist_counters(TableDef *def);

void dict_shutdown() {
  std::lock_guard<std::mutex> g(g_dict_mu);
  for (auto &kv : s_cache)
    if (!kv.second->obsolete) persist_counters(kv.second.get());
  s_cache.clear();
  s_dict = s_meta = NULL;
  s_db = NULL;
}

std::string dict_name_from_path(const char *path) {
  std::string s(path);
  if (s.compare(0, 2, "./") == 0) s.erase(0, 2);
  return s;
}

/* ---- lookups ---- */

/* Read a u64 meta value; false if absent. */
static bool meta_get_u64(char kind, uint64_t id, uint64_t *out) {
  std::string k = meta_key(kind, id);
  void *v;
  size_t vl;
  if (tdb_get(s_db, s_meta, NULL, k.data(), k.size(), &v, &vl) != TDB_OK) return false;
  bool ok = vl == 8;
  if (ok) *out = get_be64((const uchar *)v);
  tdb_free(v);
  return ok;
}

/* Load the persisted cardinalities into def->rec_per_key. */
static void load_cardinality(TableDef *def) {
  std::string k = meta_key('K', def->id);
  void *v;
  size_t vl;
  if (tdb_get(s_db, s_meta, NULL, k.data(), k.size(), &v, &vl) != TDB_OK) return;
  const uchar *p = (const uchar *)v, *end = p + vl;
  std::vector<std::vector<ulong>> rpk;
  bool ok = true;
  while (p < end && ok) {
    uint n = *p++;
    if ((size_t)(end - p) < (size_t)n * 8) {
      ok = false;
      break;
    }
    std::vector<ulong> parts;
    for (uint i = 0; i < n; i++, p += 8) parts.push_back((ulong)get_be64(p));
    rpk.push_back(parts);
  }
  tdb_free(v);
  if (ok && rpk.size() == def->nkeys) {
    def->rec_per_key = rpk;
    def->card_from_analyze = true;
  }
}

/* Build a definition from a table record: resolve the families. */
static int def_from_record(const std::string &name, const TableRecord &r, TableDefPtr *out) {
  TableDefPtr def = std::make_shared<TableDef>();
  def->name = name;
  def->id = r.id;
  def->hidden_pk = r.hidden_pk;
  def->rowfmt = r.fmt;
  def->nkeys = (uint)r.cf_names.size() - (r.hidden_pk ? 1 : 0);
  for (const std::string &n : r.cf_names) {
    tdb_cf_t *cf;
    int rc = tdb_get_cf(s_db, n.c_str(), &cf);
    if (rc != TDB_OK) {
      log_warning("TidesDB: table %s: column family %s missing (%s)", name.c_str(), n.c_str(),
                  tdb_strerror(rc));
      return HA_ERR_CRASHED;
    }
    def->cfs.push_back(cf);
  }
  uint64_t v;
  if (meta_get_u64('A', r.id, &v)) def->autoinc_next = v;
  if (meta_get_u64('R', r.id, &v)) {
    def->rows = (int64_t)v;
  } else {
    tdb_stats_t st;
    if (tdb_get_stats(s_db, def->data_cf(0), &st) == TDB_OK) def->rows = (int64_t)st.num_entries_estimate;
  }
  load_cardinality(def.get());
  *out = def;
  return 0;
}

/* Read a table record by name (dictionary family, latest). */
static int read_record(const std::string &name, TableRecord *r) {
  std::string k = table_key(name);
  void *v;
  size_t vl;
  int rc = tdb_get(s_db, s_dict, NULL, k.data(), k.size(), &v, &vl);
  if (rc == TDB_ERR_NOT_FOUND) return HA_ERR_NO_SUCH_TABLE;
  if (rc != TDB_OK) return map_tdb_error(rc);
  bool ok = record_decode((const uchar *)v, vl, r);
  tdb_free(v);
  return ok ? 0 : HA_ERR_CRASHED;
}

int dict_get(const std::string &name, TableDefPtr *out) {
  std::lock_guard<std::mutex> g(g_dict_mu);
  auto it = s_cache.find(name);
  if (it != s_cache.end()) {
    *out = it->second;
    return 0;
  }
  TableRecord r;
  int err = read_record(name, &r);
  if (err) return err;
  TableDefPtr def;
  if ((err = def_from_record(name, r, &def))) return err;
  s_cache[name] = def;
  *out = def;
  return 0;
}

/* ---- DDL ---- */

/* Create the families of a new table id; on failure drop what was made. */
static int create_families(uint64_t id, uint n, const tdb_cf_config_t &cfg, TableRecord *r) {
  r->id = id;
  r->cf_names.clear();
  for (uint i = 0; i < n; i++) {
    std::string cn = cf_name(id, i);
    tdb_cf_t *cf;
    int rc = tdb_create_cf(s_db, cn.c_str(), &cfg, &cf);
    if (rc == TDB_ERR_EXISTS) { /* leftover of a crash: not referenced */
      tdb_drop_cf(s_db, cn.c_str());
      rc = tdb_create_cf(s_db, cn.c_str(), &cfg, &cf);
    }
    if (rc != TDB_OK) {
      int err = map_tdb_error(rc);
      for (const std::string &made : r->cf_names) tdb_drop_cf(s_db, made.c_str());
      return err;
    }
    r->cf_names.push_back(cn);
  }
  return 0;
}

static void drop_families(const TableRecord &r) {
  for (const std::string &n : r.cf_names) {
    int rc = tdb_drop_cf(s_db, n.c_str());
    if (rc != TDB_OK && rc != TDB_ERR_NOT_FOUND)
      log_warning("TidesDB: could not drop column family %s: %s (dropped at next start)", n.c_str(),
                  tdb_strerror(rc));
  }
}

static void batch_next_id(tdb_batch_t *b) {
  uchar v[8];
  put_be64(v, s_next_id);
  tdb_batch_put(b, s_dict, "Snext_id", 8, v, 8, 0);
}

static void batch_meta_delete(tdb_batch_t *b, uint64_t id) {
  for (char kind : {'A', 'R', 'K'}) {
    std::string k = meta_key(kind, id);
    tdb_batch_delete(b, s_meta, k.data(), k.size());
  }
}

/* Retire a cached definition (handlers re-fetch at their next statement). */
static void cache_retire(const std::string &name) {
  auto it = s_cache.find(name);
  if (it == s_cache.end()) return;
  it->second->obsolete = true;
  s_cache.erase(it);
}

int dict_create(const std::string &name, uint nkeys, bool hidden_pk, const tdb_cf_config_t &cfg,
                uint64_t autoinc_start, const std::string &version) {
  std::lock_guard<std::mutex> g(g_dict_mu);
  /* A record under this name is stale (the server creates only names it
   * has no table for): replace it. */
  TableRecord old;
  bool had_old = read_record(name, &old) == 0;
  TableRecord r;
  r.hidden_pk = hidden_pk;
  r.version = version;
  uint64_t id = s_next_id++;
  int err = create_families(id, nkeys + (hidden_pk ? 1 : 0), cfg, &r);
  if (err) return err;
  sysvars_crash_point("create_after_families");
  tdb_batch_t *b;
  if (tdb_batch_create(&b) != TDB_OK) return HA_ERR_OUT_OF_MEM;
  std::string k = table_key(name), v = record_encode(r);
  tdb_batch_put(b, s_dict, k.data(), k.size(), v.data(), v.size(), 0);
  batch_next_id(b);
  uchar n8[8];
  put_be64(n8, autoinc_start ? autoinc_start : 1);
  std::string ak = meta_key('A', id), rk = meta_key('R', id);
  tdb_batch_put(b, s_meta, ak.data(), ak.size(), n8, 8, 0);
  put_be64(n8, 0);
  tdb_batch_put(b, s_meta, rk.data(), rk.size(), n8, 8, 0);
  if (had_old) batch_meta_delete(b, old.id);
  err = write_batch(b);
  tdb_batch_destroy(b);
  if (err) {
    drop_families(r);
    return err;
  }
  if (had_old) drop_families(old);
  cache_retire(name);
  return 0;
}

int dict_drop(const std::string &name) {
  std::lock_guard<std::mutex> g(g_dict_mu);
  TableRecord r;
  int err = read_record(name, &r);
  if (err) return err;
  tdb_batch_t *b;
  if (tdb_batch_create(&b) != TDB_OK) return HA_ERR_OUT_OF_MEM;
  std::string k = table_key(name);
  tdb_batch_delete(b, s_dict, k.data(), k.size());
  batch_meta_delete(b, r.id);
  err = write_batch(b);
  tdb_batch_destroy(b);
  if (err) return err;
  sysvars_crash_point("drop_after_record");
  cache_retire(name);
  drop_families(r);
  sysvars_crash_point("drop_after_families");
  return 0;
}

int dict_rename(const std::string &from, const std::string &to) {
  std::lock_guard<std::mutex> g(g_dict_mu);
  TableRecord r, stale;
  int err = read_record(from, &r);
  if (err) return err;
  bool had_stale = read_record(to, &stale) == 0;
  tdb_batch_t *b;
  if (tdb_batch_create(&b) != TDB_OK) return HA_ERR_OUT_OF_MEM;
  std::string kf = table_key(from), kt = table_key(to), v = record_encode(r);
  tdb_batch_delete(b, s_dict, kf.data(), kf.size());
  tdb_batch_put(b, s_dict, kt.data(), kt.size(), v.data(), v.size(), 0);
  if (had_stale) batch_meta_delete(b, stale.id);
  err = write_batch(b);
  tdb_batch_destroy(b);
  if (err) return err;
  sysvars_crash_point("rename_after_record");
  if (had_stale) drop_families(stale);
  cache_retire(to);
  /* The definition itself stays valid under its new name. */
  auto it = s_cache.find(from);
  if (it != s_cache.end()) {
    TableDefPtr def = it->second;
    s_cache.erase(it);
    def->name = to;
    s_cache[to] = def;
  }
  return 0;
}

int dict_truncate(const std::string &name, TableDefPtr *out) {
  {
    std::lock_guard<std::mutex> g(g_dict_mu);
    TableRecord old;
    int err = read_record(name, &old);
    if (err) return err;
    tdb_cf_t *cf0;
    tdb_cf_config_t cfg;
    if (tdb_get_cf(s_db, old.cf_names[0].c_str(), &cf0) != TDB_OK ||
        tdb_cf_get_config(cf0, &cfg) != TDB_OK)
      tdb_cf_config_default(&cfg);
    TableRecord r;
    r.hidden_pk = old.hidden_pk;
    r.version = old.version;
    uint64_t id = s_next_id++;
    if ((err = create_families(id, (uint)old.cf_names.size(), cfg, &r))) return err;
    sysvars_crash_point("truncate_after_families");
    tdb_batch_t *b;
    if (tdb_batch_create(&b) != TDB_OK) return HA_ERR_OUT_OF_MEM;
    std::string k = table_key(name), v = record_encode(r);
    tdb_batch_put(b, s_dict, k.data(), k.size(), v.data(), v.size(), 0);
    batch_next_id(b);
    batch_meta_delete(b, old.id);
    uchar n8[8];
    put_be64(n8, 0);
    std::string rk = meta_key('R', id);
    tdb_batch_put(b, s_meta, rk.data(), rk.size(), n8, 8, 0);
    err = write_batch(b);
    tdb_batch_destroy(b);
    if (err) {
      drop_families(r);
      return err;
    }
    sysvars_crash_point("truncate_after_record");
    cache_retire(name);
    drop_families(old);
  }
  return dict_get(name, out);
}

/* ---- in-place ALTER (ha_tidesdb_alter.cc) ---- */

int dict_families(const std::string &name, std::vector<std::string> *cf_names) {
  std::lock_guard<std::mutex> g(g_dict_mu);
  TableRecord r;
  int err = read_record(name, &r);
  if (!err) *cf_names = r.cf_names;
  return err;
}

int dict_alter_add_families(const std::string &name, uint n, std::vector<std::string> *names,
                            std::vector<tdb_cf_t *> *cfs) {
  std::lock_guard<std::mutex> g(g_dict_mu);
  TableRecord r;
  int err = read_record(name, &r);
  if (err) return err;
  uint next = 0;
  for (const std::string &cn : r.cf_names) {
    uint64_t id;
    uint num;
    if (parse_cf_name(cn.c_str(), &id, &num) && num >= next) next = num + 1;
  }
  tdb_cf_t *cf0;
  tdb_cf_config_t cfg;
  if (tdb_get_cf(s_db, r.cf_names[0].c_str(), &cf0) != TDB_OK || tdb_cf_get_config(cf0, &cfg) != TDB_OK)
    tdb_cf_config_default(&cfg);
  names->clear();
  cfs->clear();
  for (uint i = 0; i < n; i++) {
    std::string cn = cf_name(r.id, next + i);
    tdb_cf_t *cf;
    int rc = tdb_create_cf(s_db, cn.c_str(), &cfg, &cf);
    if (rc == TDB_ERR_EXISTS) { /* left by an ALTER cut short: listed by no record */
      tdb_drop_cf(s_db, cn.c_str());
      rc = tdb_create_cf(s_db, cn.c_str(), &cfg, &cf);
    }
    if (rc != TDB_OK) {
      err = map_tdb_error(rc);
      for (const std::string &made : *names) tdb_drop_cf(s_db, made.c_str());
      names->clear();
      cfs->clear();
      return err;
    }
    names->push_back(cn);
    cfs->push_back(cf);
  }
  return 0;
}

void dict_alter_drop_families(const std::vector<std::string> &names) {
  TableRecord r;
  r.cf_names = names;
  drop_families(r);
}

int dict_alter_commit(const std::string &name, const std::vector<std::string> &cf_names,
                      const std::string &version, bool keys_changed, const RowVersions *fmt) {
  std::lock_guard<std::mutex> g(g_dict_mu);
  TableRecord old;
  int err = read_record(name, &old);
  if (err) return err;
  TableRecord r = old;
  r.cf_names = cf_names;
  r.version = version;
  if (fmt) r.fmt = *fmt;
  sysvars_crash_point("alter_before_record");
  tdb_batch_t *b;
  if (tdb_batch_create(&b) != TDB_OK) return HA_ERR_OUT_OF_MEM;
  std::string k = table_key(name), v = record_encode(r);
  tdb_batch_put(b, s_dict, k.data(), k.size(), v.data(), v.size(), 0);
  /* The counters live in the cached definition, persisted lazily
   * (invariant 6): carry them over to the definition loaded next. */
  auto cached = s_cache.find(name);
  if (cached != s_cache.end() && (err = dict_put_counters(b, cached->second.get()))) {
    tdb_batch_destroy(b);
    return err;
  }
  if (keys_changed) { /* per-key statistics no longer line up */
    std::string kk = meta_key('K', r.id);
    tdb_batch_delete(b, s_meta, kk.data(), kk.size());
  }
  err = write_batch(b);
  tdb_batch_destroy(b);
  if (err) return err;
  sysvars_crash_point("alter_after_record");
  cache_retire(name);
  /* Families the new record no longer lists (dropped indexes). */
  TableRecord gone;
  for (const std::string &n : old.cf_names)
    if (std::find(cf_names.begin(), cf_names.end(), n) == cf_names.end()) gone.cf_names.push_back(n);
  drop_families(gone);
  return 0;
}

int dict_check_version(const std::string &name, const std::string &version) {
  std::lock_guard<std::mutex> g(g_dict_mu);
  TableRecord r;
  int err = read_record(name, &r);
  if (err) return err;
  return r.version == version ? 0 : 1;
}

/* ---- counters ---- */

int dict_put_counters(tdb_batch_t *b, TableDef *def) {
  uchar v[8];
  std::string k = meta_key('R', def->id);
  int64_t rows = def->rows.load();
  put_be64(v, (uint64_t)(rows < 0 ? 0 : rows));
  int rc = tdb_batch_put(b, s_meta, k.data(), k.size(), v, 8, 0);
  uint64_t ai = def->autoinc_next.load();
  if (rc == TDB_OK && ai) {
    k = meta_key('A', def->id);
    put_be64(v, ai);
    rc = tdb_batch_put(b, s_meta, k.data(), k.size(), v, 8, 0);
  }
  return rc == TDB_OK ? 0 : map_tdb_error(rc);
}

static int persist_counters(TableDef *def) {
  if (!s_db) return 0;
  tdb_batch_t *b;
  if (tdb_batch_create(&b) != TDB_OK) return HA_ERR_OUT_OF_MEM;
  int err = dict_put_counters(b, def);
  if (!err) {
    int rc = tdb_write(s_db, b);
    if (rc != TDB_OK) err = map_tdb_error(rc);
  }
  tdb_batch_destroy(b);
  return err;
}

void dict_counters_changed(TableDef *def) {
  ulonglong now = microsecond_interval_timer();
  ulonglong last = def->counters_saved.load();
  if (now - last < 1000000 || !def->counters_saved.compare_exchange_strong(last, now)) return;
  persist_counters(def);
}

int dict_save_cardinality(TableDef *def) {
  std::string v;
  {
    std::lock_guard<std::mutex> g(def->mu);
    for (const auto &parts : def->rec_per_key) {
      v.push_back((char)parts.size());
      for (ulong x : parts) append_be64(v, x);
    }
  }
  std::string k = meta_key('K', def->id);
  int rc = tdb_put(s_db, s_meta, k.data(), k.size(), v.data(), v.size(), 0);
  return rc == TDB_OK ? 0 : map_tdb_error(rc);
}

std::vector<std::string> dict_table_names() {
  std::vector<std::string> out;
  tdb_iter_t *it;
  if (!s_db || tdb_iter_create(s_db, s_dict, NULL, &it) != TDB_OK) return out;
  for (tdb_iter_seek(it, "T", 1); tdb_iter_valid(it); tdb_iter_next(it)) {
    size_t kl;
    const char *k = (const char *)tdb_iter_key(it, &kl);
    if (kl < 1 || k[0] != 'T') break;
    out.emplace_back(k + 1, kl - 1);
  }
  tdb_iter_destroy(it);
  return out;
}

}  // namespace tidesql
