/*
 * key_codec_test: the byte order of encoded index keys (key_codec.h) against
 * the order MariaDB itself gives the same values.
 *
 * No server runs: the server's Field classes, type handlers and collations
 * come from MariaDB's embedded-server library (libmariadbd.a of the pinned
 * version), linked into this test. Each column is a real Field over a
 * record buffer of its own; values are written in the server's record
 * format. For every type the test lists values in their expected ascending
 * order, in groups of values that compare equal, and checks that
 *  - the encodings are equal inside a group and strictly increasing from
 *    group to group (the order the codec promises), and
 *  - for every pair, memcmp of the encodings has the sign of the server's
 *    own comparison, Field::cmp (with NULL first), so the expected order
 *    written here is MariaDB's order, not only the codec's.
 * Descending key parts must reverse the order exactly; multi-column keys
 * must order by the first column, then the next.
 *
 * The fake TABLE, THD and TABLE_SHARE are zeroed memory: the codec reads
 * only TABLE::record[0], Field_string reads the THD's sql_mode (0) and a
 * VARCHAR's constructor counts itself in the share.
 */
#include "key_codec.h"

#include "compat56.h"
#include "decimal.h"
#include "my_decimal.h"

#include <gtest/gtest.h>

#include <math.h>
#include <string.h>

#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace tidesql {
namespace {

/* Zeroed memory standing in for a server object the test does not need to
 * be real (see the file comment). */
struct ZeroBlock {
  std::vector<unsigned char> mem = std::vector<unsigned char>(1 << 20, 0);
  template <typename T>
  T *as() {
    return reinterpret_cast<T *>(mem.data());
  }
};

ZeroBlock &fake_thd() {
  static ZeroBlock b;
  return b;
}

/* A value writer: stores one value into the field's bytes of record[0]
 * (NULL: the null bit, set by the column). */
typedef std::function<void(Field *, uchar *)> Store;

/* One value of a group: a writer, or NULL. */
struct Val {
  bool is_null = false;
  Store store;
  std::string label;
};

Val null_val() {
  Val v;
  v.is_null = true;
  v.label = "NULL";
  return v;
}

/* A table of one or more columns: record[0] with one null byte per column
 * followed by each field's bytes, a fake TABLE and a KEY over the columns. */
class TestTable {
 public:
  TestTable() {
    m_table = m_table_mem.as<TABLE>();
    m_table->in_use = fake_thd().as<THD>();
    m_share = m_share_mem.as<TABLE_SHARE>();
    init_alloc_root(PSI_NOT_INSTRUMENTED, &m_root, 4096, 0, MYF(0));
  }
  ~TestTable() { free_root(&m_root, MYF(0)); }

  /* Fields are allocated here, as the server does for a TABLE. */
  MEM_ROOT *root() { return &m_root; }

  TABLE_SHARE *share() { return m_share; }
  LEX_CSTRING *name() { return &m_name; }

  /* Make room for a column of `bytes` bytes; returns its data pointer and
   * (when nullable) its null byte. Call before adding the Field. */
  uchar *reserve(uint32 bytes, bool nullable, uchar **null_ptr) {
    size_t off = m_used;
    *null_ptr = nullable ? &m_rec[off] : NULL;
    m_used += (nullable ? 1 : 0) + bytes;
    EXPECT_LE(m_used, sizeof m_rec);
    return &m_rec[off + (nullable ? 1 : 0)];
  }

  /* Register a field as the next key part (key part length: the field's
   * key length unless given). */
  void add(Field *f, bool reverse = false, uint32 kp_len = 0) {
    f->table = m_table;
    m_fields.push_back(f);
    KEY_PART_INFO kp;
    memset(&kp, 0, sizeof kp);
    kp.field = f;
    kp.length = kp_len ? kp_len : f->key_length();
    kp.key_part_flag = reverse ? HA_REVERSE_SORT : 0;
    m_parts.push_back(kp);
  }

  Field *field(size_t i) { return m_fields[i]; }

  /* Build the codec over the key parts added so far. */
  void build() {
    m_table->record[0] = m_rec;
    memset(&m_key, 0, sizeof m_key);
    m_key.key_part = m_parts.data();
    m_key.user_defined_key_parts = (uint)m_parts.size();
    m_codec.init(&m_key);
  }

  const IndexCodec &codec() const { return m_codec; }

  /* Write one row (a value per column) into record[0], then copy it into a
   * record of its own (so encode() works through a moved record, as the
   * handler's calls do). */
  std::vector<uchar> row(const std::vector<Val> &vals) {
    memset(m_rec, 0, sizeof m_rec);
    for (size_t i = 0; i < vals.size(); i++) {
      Field *f = field(i);
      if (vals[i].is_null) {
        EXPECT_TRUE(f->real_maybe_null());
        f->set_null();
      } else {
        if (f->real_maybe_null()) f->set_notnull();
        vals[i].store(f, f->ptr);
      }
    }
    return std::vector<uchar>(m_rec, m_rec + sizeof m_rec);
  }

  /* The encoded key of a record copy made by row(). */
  std::string encode(std::vector<uchar> &rec, uint nparts) {
    std::string out(m_codec.prefix_len(nparts), '\0');
    m_codec.encode(m_table, rec.data(), nparts, (uchar *)&out[0]);
    return out;
  }

  /* MariaDB's comparison of column i of two record copies (NULL first). */
  int server_cmp(size_t i, std::vector<uchar> &a, std::vector<uchar> &b) {
    Field *f = field(i);
    my_ptrdiff_t da = (my_ptrdiff_t)(a.data() - m_rec), db = (my_ptrdiff_t)(b.data() - m_rec);
    bool na = f->is_null(da), nb = f->is_null(db);
    if (na || nb) return na == nb ? 0 : (na ? -1 : 1);
    int c = f->cmp(f->ptr + da, f->ptr + db);
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }

 private:
  ZeroBlock m_table_mem, m_share_mem;
  TABLE *m_table;
  TABLE_SHARE *m_share;
  LEX_CSTRING m_name = {"c", 1};
  alignas(8) uchar m_rec[4096] = {0};
  size_t m_used = 0;
  MEM_ROOT m_root;
  std::vector<Field *> m_fields;
  std::vector<KEY_PART_INFO> m_parts;
  KEY m_key;
  IndexCodec m_codec;
};

int sign(int c) { return c < 0 ? -1 : (c > 0 ? 1 : 0); }

std::string hex(const std::string &s) {
  static const char *d = "0123456789abcdef";
  std::string h;
  for (unsigned char c : s) {
    h += d[c >> 4];
    h += d[c & 15];
  }
  return h;
}

/* Check a single-column key over t's first column: groups of equal values
 * in ascending order (descending when the part is reversed). */
void check_order(TestTable &t, const std::vector<std::vector<Val>> &groups, bool reverse = false) {
  struct Enc {
    std::vector<uchar> rec;
    std::string key;
    std::string label;
    size_t group;
  };
  std::vector<Enc> all;
  for (size_t g = 0; g < groups.size(); g++)
    for (const Val &v : groups[g]) {
      Enc e;
      e.rec = t.row({v});
      e.label = v.label;
      e.group = g;
      all.push_back(e);
    }
  for (Enc &e : all) {
    e.key = t.encode(e.rec, 1);
    ASSERT_EQ(e.key.size(), t.codec().full_len()) << e.label << ": fixed-length parts";
  }
  for (size_t i = 0; i < all.size(); i++)
    for (size_t j = 0; j < all.size(); j++) {
      Enc &a = all[i], &b = all[j];
      int want = a.group < b.group ? -1 : (a.group > b.group ? 1 : 0);
      if (reverse) want = -want;
      int got = sign(memcmp(a.key.data(), b.key.data(), a.key.size()));
      EXPECT_EQ(got, want) << "encoded " << a.label << " (" << hex(a.key) << ") vs " << b.label << " ("
                           << hex(b.key) << ")";
      /* The expected order is the server's (ascending, NULL first). */
      int server = t.server_cmp(0, a.rec, b.rec);
      EXPECT_EQ(server, reverse ? -want : want) << "Field::cmp of " << a.label << " and " << b.label
                                                << " disagrees with the expected order";
    }
}

/* ---- value writers in the server's record format ---- */

Val ival(longlong v, uint bytes) {
  Val x;
  x.label = std::to_string(v);
  x.store = [v, bytes](Field *, uchar *p) {
    switch (bytes) {
      case 1: p[0] = (uchar)v; break;
      case 2: int2store(p, (uint16)v); break;
      case 3: int3store(p, (uint32)v); break;
      case 4: int4store(p, (uint32)v); break;
      default: int8store(p, (ulonglong)v); break;
    }
  };
  return x;
}

Val uval(ulonglong v, uint bytes) {
  Val x = ival((longlong)v, bytes);
  x.label = std::to_string(v) + "u";
  return x;
}

Val fval(float v, const char *label) {
  Val x;
  x.label = label;
  x.store = [v](Field *, uchar *p) { float4store(p, v); };
  return x;
}

Val dval(double v, const char *label) {
  Val x;
  x.label = label;
  x.store = [v](Field *, uchar *p) { float8store(p, v); };
  return x;
}

/* DECIMAL(prec, scale) from its text. */
Val decval(const char *s, uint prec, uint scale) {
  Val x;
  x.label = s;
  x.store = [s, prec, scale](Field *, uchar *p) {
    decimal_digit_t buf[16];
    decimal_t d;
    d.buf = buf;
    d.len = 16;
    char *end = (char *)s + strlen(s);
    ASSERT_EQ(string2decimal(s, &d, &end), 0) << s;
    ASSERT_EQ(decimal_round(&d, &d, scale, HALF_UP), 0) << s;
    ASSERT_EQ(decimal2bin(&d, p, prec, scale), 0) << s;
  };
  return x;
}

MYSQL_TIME mtime(int y, int mo, int d, int h = 0, int mi = 0, int s = 0, ulong us = 0) {
  MYSQL_TIME t;
  memset(&t, 0, sizeof t);
  t.year = y;
  t.month = mo;
  t.day = d;
  t.hour = h;
  t.minute = mi;
  t.second = s;
  t.second_part = us;
  t.time_type = MYSQL_TIMESTAMP_DATETIME;
  return t;
}

Val dateval(int y, int m, int d) {
  Val x;
  x.label = std::to_string(y) + "-" + std::to_string(m) + "-" + std::to_string(d);
  x.store = [y, m, d](Field *, uchar *p) { int3store(p, (uint32)(d + m * 32 + y * 16 * 32)); };
  return x;
}

Val dtval(MYSQL_TIME t, uint dec, const char *label) {
  Val x;
  x.label = label;
  x.store = [t, dec](Field *, uchar *p) {
    my_datetime_packed_to_binary(TIME_to_longlong_datetime_packed(&t), p, dec);
  };
  return x;
}

Val tsval(long sec, long usec, uint dec, const char *label) {
  Val x;
  x.label = label;
  x.store = [sec, usec, dec](Field *, uchar *p) {
    struct timeval tv;
    tv.tv_sec = sec;
    tv.tv_usec = usec;
    my_timestamp_to_binary(&tv, p, dec);
  };
  return x;
}

/* VARCHAR value: length bytes, then the bytes. */
Val vcval(const std::string &s) {
  Val x;
  x.label = "'" + s + "'";
  x.store = [s](Field *f, uchar *p) {
    uint lb = ((Field_varstring *)f)->length_bytes;
    if (lb == 1)
      p[0] = (uchar)s.size();
    else
      int2store(p, (uint16)s.size());
    memcpy(p + lb, s.data(), s.size());
  };
  return x;
}

/* CHAR value: the bytes, space padded to the field's length. */
Val chval(const std::string &s) {
  Val x;
  x.label = "'" + s + "'";
  x.store = [s](Field *f, uchar *p) {
    memset(p, ' ', f->pack_length());
    memcpy(p, s.data(), s.size());
  };
  return x;
}

/* BINARY value: the bytes, zero padded. */
Val binval(const std::string &s) {
  Val x;
  x.label = "x'" + hex(s) + "'";
  x.store = [s](Field *f, uchar *p) {
    memset(p, 0, f->pack_length());
    memcpy(p, s.data(), s.size());
  };
  return x;
}

/* ---- columns ---- */

/* An integer column of `bytes` bytes. */
Field *int_field(TestTable &t, uint bytes, bool is_unsigned, bool nullable) {
  uchar *nptr;
  uchar *p = t.reserve(bytes, nullable, &nptr);
  static const uint32 width[9] = {0, 4, 6, 9, 11, 0, 0, 0, 20};
  switch (bytes) {
    case 1: return new (t.root()) Field_tiny(p, width[1], nptr, 1, Field::NONE, t.name(), false, is_unsigned);
    case 2: return new (t.root()) Field_short(p, width[2], nptr, 1, Field::NONE, t.name(), false, is_unsigned);
    case 3: return new (t.root()) Field_medium(p, width[3], nptr, 1, Field::NONE, t.name(), false, is_unsigned);
    case 4: return new (t.root()) Field_long(p, width[4], nptr, 1, Field::NONE, t.name(), false, is_unsigned);
    default: return new (t.root()) Field_longlong(p, width[8], nptr, 1, Field::NONE, t.name(), false, is_unsigned);
  }
}

Field *varchar_field(TestTable &t, uint chars, CHARSET_INFO *cs, bool nullable) {
  uint32 len = chars * cs->mbmaxlen;
  uint lb = len > 255 ? 2 : 1;
  uchar *nptr;
  uchar *p = t.reserve(len + lb, nullable, &nptr);
  return new (t.root()) Field_varstring(p, len, lb, nptr, 1, Field::NONE, t.name(), t.share(), DTCollation(cs));
}

Field *char_field(TestTable &t, uint chars, CHARSET_INFO *cs, bool nullable) {
  uint32 len = chars * cs->mbmaxlen;
  uchar *nptr;
  uchar *p = t.reserve(len, nullable, &nptr);
  return new (t.root()) Field_string(p, len, nptr, 1, Field::NONE, t.name(), DTCollation(cs));
}

/* ---- integers ---- */

/* Signed and unsigned integers of every width, nullable and not: the
 * extremes, around zero, and a byte carry (255/256). */
TEST(KeyCodecOrder, Integers) {
  for (uint bytes : {1u, 2u, 3u, 4u, 8u}) {
    for (bool nullable : {false, true}) {
      SCOPED_TRACE("width " + std::to_string(bytes) + (nullable ? " nullable" : ""));
      {
        TestTable t;
        t.add(int_field(t, bytes, false, nullable));
        t.build();
        int shift = bytes * 8 - 1;
        longlong lo = bytes == 8 ? LLONG_MIN : -(1LL << shift), hi = bytes == 8 ? LLONG_MAX : (1LL << shift) - 1;
        std::vector<std::vector<Val>> g;
        if (nullable) g.push_back({null_val(), null_val()});
        std::set<longlong> vals;
        for (longlong v : {lo, lo + 1, -256LL, -255LL, -2LL, -1LL, 0LL, 1LL, 2LL, 126LL, 127LL, 255LL, 256LL, hi - 1, hi})
          if (v >= lo && v <= hi) vals.insert(v);
        for (longlong v : vals) g.push_back({ival(v, bytes)});
        check_order(t, g);
      }
      {
        TestTable t;
        t.add(int_field(t, bytes, true, nullable));
        t.build();
        ulonglong hi = bytes == 8 ? ULLONG_MAX : (1ULL << (bytes * 8)) - 1;
        std::vector<std::vector<Val>> g;
        if (nullable) g.push_back({null_val()});
        std::set<ulonglong> vals;
        for (ulonglong v : {0ULL, 1ULL, 127ULL, 128ULL, 255ULL, 256ULL, 65535ULL, 65536ULL, hi - 1, hi})
          if (v <= hi) vals.insert(v);
        for (ulonglong v : vals) g.push_back({uval(v, bytes)});
        check_order(t, g);
      }
    }
  }
}

/* ---- floating point ---- */

/* The extremes of the range, the smallest subnormals, -0 (equal to 0). No
 * infinities or NaN: the server clamps values to the column's range before
 * storing them (and Field_float's sort image would put +inf first). */
TEST(KeyCodecOrder, FloatAndDouble) {
  {
    TestTable t;
    uchar *nptr;
    uchar *p = t.reserve(4, true, &nptr);
    t.add(new (t.root()) Field_float(p, 12, nptr, 1, Field::NONE, t.name(), NOT_FIXED_DEC, false, false));
    t.build();
    check_order(t, {{null_val()},
                    {fval(-3.4e38f, "-3.4e38")},
                    {fval(-1.5f, "-1.5")},
                    {fval(-1.0f, "-1")},
                    {fval(-1e-30f, "-1e-30")},
                    {fval(-1e-45f, "-1e-45")},
                    {fval(0.0f, "0"), fval(-0.0f, "-0")},
                    {fval(1e-45f, "1e-45")},
                    {fval(1e-30f, "1e-30")},
                    {fval(1.0f, "1")},
                    {fval(1.5f, "1.5")},
                    {fval(3.4e38f, "3.4e38")}});
  }
  {
    TestTable t;
    uchar *nptr;
    uchar *p = t.reserve(8, true, &nptr);
    t.add(new (t.root()) Field_double(p, 22, nptr, 1, Field::NONE, t.name(), NOT_FIXED_DEC, false, false));
    t.build();
    check_order(t, {{null_val()},
                    {dval(-1.7e308, "-1.7e308")},
                    {dval(-2.0, "-2")},
                    {dval(-1.0000000000000002, "-1.0000000000000002")},
                    {dval(-1.0, "-1")},
                    {dval(-5e-324, "-5e-324")},
                    {dval(0.0, "0"), dval(-0.0, "-0")},
                    {dval(5e-324, "5e-324")},
                    {dval(1.0, "1")},
                    {dval(1.0000000000000002, "1.0000000000000002")},
                    {dval(2.0, "2")},
                    {dval(1.7e308, "1.7e308")}});
  }
}

/* ---- DECIMAL ---- */

/* Signed and unsigned, with and without a scale, up to 30 digits (several
 * 9-digit words); trailing zeros of the fraction do not count. */
TEST(KeyCodecOrder, Decimal) {
  for (bool is_unsigned : {false, true}) {
    for (auto ps : {std::make_pair(10u, 2u), std::make_pair(30u, 10u), std::make_pair(5u, 0u)}) {
      uint prec = ps.first, scale = ps.second;
      SCOPED_TRACE("DECIMAL(" + std::to_string(prec) + "," + std::to_string(scale) + ")" +
                   (is_unsigned ? " unsigned" : ""));
      TestTable t;
      uint32 len = my_decimal_precision_to_length_no_truncation(prec, scale, is_unsigned);
      uchar *nptr;
      uchar *p = t.reserve(my_decimal_get_binary_size(prec, scale), true, &nptr);
      t.add(new (t.root()) Field_new_decimal(p, len, nptr, 1, Field::NONE, t.name(), scale, false, is_unsigned));
      t.build();
      std::vector<std::vector<Val>> g = {{null_val()}};
      if (!is_unsigned) {
        if (prec == 30) g.push_back({decval("-99999999999999999999.9999999999", prec, scale)});
        g.push_back({decval("-12345", prec, scale)});
        g.push_back({decval("-10", prec, scale)});
        if (scale) g.push_back({decval("-9.5", prec, scale)});
        g.push_back({decval("-1", prec, scale)});
        if (scale) g.push_back({decval("-0.01", prec, scale)});
      }
      g.push_back({decval("0", prec, scale), decval("0.000", prec, scale)});
      if (scale) g.push_back({decval("0.01", prec, scale)});
      if (scale) g.push_back({decval("0.1", prec, scale), decval("0.10", prec, scale)});
      g.push_back({decval("1", prec, scale), decval("1.0", prec, scale)});
      if (scale) g.push_back({decval("1.5", prec, scale)});
      g.push_back({decval("9", prec, scale)});
      g.push_back({decval("10", prec, scale)});
      g.push_back({decval("12345", prec, scale)});
      if (prec == 30) g.push_back({decval("99999999999999999999.9999999999", prec, scale)});
      check_order(t, g);
    }
  }
}

/* ---- DATE, DATETIME, TIMESTAMP ---- */

TEST(KeyCodecOrder, Date) {
  TestTable t;
  uchar *nptr;
  uchar *p = t.reserve(3, true, &nptr);
  t.add(new (t.root()) Field_newdate(p, nptr, 1, Field::NONE, t.name()));
  t.build();
  check_order(t, {{null_val()},
                  {dateval(0, 0, 0)},
                  {dateval(1000, 1, 1)},
                  {dateval(1999, 12, 31)},
                  {dateval(2000, 1, 1)},
                  {dateval(2000, 1, 31)},
                  {dateval(2000, 2, 1)},
                  {dateval(2026, 11, 27)},
                  {dateval(9999, 12, 31)}});
}

TEST(KeyCodecOrder, Datetime) {
  for (uint dec : {0u, 3u, 6u}) {
    SCOPED_TRACE("DATETIME(" + std::to_string(dec) + ")");
    TestTable t;
    uchar *nptr;
    uchar *p = t.reserve(my_datetime_binary_length(dec), true, &nptr);
    t.add(new (t.root()) Field_datetimef(p, nptr, 1, Field::NONE, t.name(), dec));
    t.build();
    std::vector<std::vector<Val>> g = {{null_val()},
                                       {dtval(mtime(0, 0, 0), dec, "zero")},
                                       {dtval(mtime(1000, 1, 1), dec, "1000-01-01")},
                                       {dtval(mtime(1999, 12, 31, 23, 59, 59), dec, "1999-12-31 23:59:59")}};
    if (dec) g.push_back({dtval(mtime(1999, 12, 31, 23, 59, 59, 999000), dec, "1999-12-31 23:59:59.999")});
    g.push_back({dtval(mtime(2000, 1, 1), dec, "2000-01-01")});
    if (dec) g.push_back({dtval(mtime(2000, 1, 1, 0, 0, 0, 1000), dec, "2000-01-01 00:00:00.001")});
    g.push_back({dtval(mtime(2000, 1, 1, 0, 0, 1), dec, "2000-01-01 00:00:01")});
    g.push_back({dtval(mtime(2000, 1, 1, 12, 0, 0), dec, "2000-01-01 12:00")});
    g.push_back({dtval(mtime(9999, 12, 31, 23, 59, 59), dec, "9999-12-31 23:59:59")});
    check_order(t, g);
  }
}

TEST(KeyCodecOrder, Timestamp) {
  for (uint dec : {0u, 6u}) {
    SCOPED_TRACE("TIMESTAMP(" + std::to_string(dec) + ")");
    TestTable t;
    uchar *nptr;
    uchar *p = t.reserve(my_timestamp_binary_length(dec), true, &nptr);
    t.add(new (t.root()) Field_timestampf(p, nptr, 1, Field::NONE, t.name(), t.share(), dec));
    t.build();
    std::vector<std::vector<Val>> g = {{null_val()}, {tsval(0, 0, dec, "0")}, {tsval(1, 0, dec, "1")}};
    if (dec) g.push_back({tsval(1, 1, dec, "1.000001")});
    g.push_back({tsval(255, 0, dec, "255")});
    g.push_back({tsval(256, 0, dec, "256")});
    g.push_back({tsval(1700000000, 0, dec, "1700000000")});
    if (dec) g.push_back({tsval(1700000000, 999999, dec, "1700000000.999999")});
    g.push_back({tsval(2147483647, 0, dec, "2147483647")});
    check_order(t, g);
  }
}

/* TIME(dec), negative times included. */
Val timeval(bool neg, int h, int mi, int sec, ulong us, uint dec, const char *label) {
  Val x;
  x.label = label;
  x.store = [=](Field *, uchar *p) {
    MYSQL_TIME t;
    memset(&t, 0, sizeof t);
    t.neg = neg;
    t.hour = h;
    t.minute = mi;
    t.second = sec;
    t.second_part = us;
    t.time_type = MYSQL_TIMESTAMP_TIME;
    my_time_packed_to_binary(TIME_to_longlong_time_packed(&t), p, dec);
  };
  return x;
}

TEST(KeyCodecOrder, Time) {
  for (uint dec : {0u, 6u}) {
    SCOPED_TRACE("TIME(" + std::to_string(dec) + ")");
    TestTable t;
    uchar *nptr;
    uchar *p = t.reserve(my_time_binary_length(dec), true, &nptr);
    t.add(new (t.root()) Field_timef(p, nptr, 1, Field::NONE, t.name(), dec));
    t.build();
    std::vector<std::vector<Val>> g = {{null_val()},
                                       {timeval(true, 838, 59, 59, 0, dec, "-838:59:59")},
                                       {timeval(true, 1, 0, 0, 0, dec, "-01:00:00")}};
    if (dec) g.push_back({timeval(true, 0, 0, 0, 500000, dec, "-00:00:00.5")});
    g.push_back({timeval(false, 0, 0, 0, 0, dec, "00:00:00")});
    if (dec) g.push_back({timeval(false, 0, 0, 0, 1, dec, "00:00:00.000001")});
    g.push_back({timeval(false, 0, 0, 1, 0, dec, "00:00:01")});
    g.push_back({timeval(false, 23, 59, 59, 0, dec, "23:59:59")});
    g.push_back({timeval(false, 838, 59, 59, 0, dec, "838:59:59")});
    check_order(t, g);
  }
}

/* YEAR: one byte, 0000 first. */
TEST(KeyCodecOrder, Year) {
  TestTable t;
  uchar *nptr;
  uchar *p = t.reserve(1, true, &nptr);
  t.add(new (t.root()) Field_year(p, 4, nptr, 1, Field::NONE, t.name()));
  t.build();
  check_order(t, {{null_val()}, {uval(0, 1)}, {uval(1, 1)}, {uval(100, 1)}, {uval(126, 1)}, {uval(255, 1)}});
}

/* ---- strings ---- */

/* A case- and accent-insensitive PAD SPACE collation: values it calls equal
 * ('a', 'A', 'a  ', 'á') encode to the same bytes; trailing spaces do not
 * count; shorter sorts first otherwise. */
TEST(KeyCodecOrder, VarcharCaseInsensitive) {
  for (CHARSET_INFO *cs : {&my_charset_utf8mb4_general_ci, &my_charset_latin1}) {
    SCOPED_TRACE(cs->coll_name.str);
    TestTable t;
    t.add(varchar_field(t, 10, cs, true));
    t.build();
    std::vector<std::vector<Val>> g = {{null_val()},
                                       {vcval(""), vcval(" "), vcval("   ")},
                                       {vcval("a"), vcval("A"), vcval("a  ")},
                                       {vcval("ab"), vcval("AB"), vcval("aB ")},
                                       {vcval("abc")},
                                       {vcval("b")},
                                       {vcval("zz")}};
    if (cs == &my_charset_utf8mb4_general_ci) g[2].push_back(vcval("\xc3\xa1")); /* a-acute */
    check_order(t, g);
  }
}

/* A binary collation: case matters, trailing spaces still do not (PAD SPACE). */
TEST(KeyCodecOrder, VarcharBinaryCollation) {
  TestTable t;
  t.add(varchar_field(t, 8, &my_charset_utf8mb4_bin, false));
  t.build();
  check_order(t, {{vcval(""), vcval("  ")},
                  {vcval("A"), vcval("A ")},
                  {vcval("B")},
                  {vcval("a")},
                  {vcval("ab")},
                  {vcval("b")}});
}

/* A NO PAD collation: trailing spaces count ('a' < 'a '), case does not. */
TEST(KeyCodecOrder, VarcharNoPad) {
  TestTable t;
  t.add(varchar_field(t, 6, &my_charset_utf8mb4_general_nopad_ci, true));
  t.build();
  check_order(t, {{null_val()},
                  {vcval("")},
                  {vcval(" ")},
                  {vcval("a"), vcval("A")},
                  {vcval("a ")},
                  {vcval("ab")},
                  {vcval("b")}});
}

/* CHAR: stored space padded; the same collation rules. */
TEST(KeyCodecOrder, Char) {
  TestTable t;
  t.add(char_field(t, 6, &my_charset_utf8mb4_general_ci, true));
  t.build();
  check_order(t, {{null_val()},
                  {chval("")},
                  {chval("a"), chval("A")},
                  {chval("aa"), chval("Aa")},
                  {chval("ab")},
                  {chval("b")},
                  {chval("zzzzzz")}});
}

/* VARBINARY: bytes, then length, so a trailing zero byte or space counts. */
TEST(KeyCodecOrder, Varbinary) {
  TestTable t;
  t.add(varchar_field(t, 6, &my_charset_bin, true));
  t.build();
  check_order(t, {{null_val()},
                  {vcval("")},
                  {vcval(std::string(1, '\0'))},
                  {vcval(std::string(2, '\0'))},
                  {vcval(" ")},
                  {vcval("A")},
                  {vcval("a")},
                  {vcval(std::string("a\0", 2))},
                  {vcval("a ")},
                  {vcval("ab")},
                  {vcval("\xff")},
                  {vcval("\xff\xff\xff\xff\xff\xff")}});
}

/* BINARY(n): the stored bytes, zero padded: 'a' = 'a\0'. */
TEST(KeyCodecOrder, Binary) {
  TestTable t;
  uchar *nptr;
  uchar *p = t.reserve(4, false, &nptr);
  t.add(new (t.root()) Field_string(p, 4, nptr, 1, Field::NONE, t.name(), DTCollation(&my_charset_bin)));
  t.build();
  check_order(t, {{binval("")},
                  {binval(std::string(1, '\x01'))},
                  {binval("A")},
                  {binval("a"), binval(std::string("a\0", 2))},
                  {binval("a\x01")},
                  {binval("b")},
                  {binval("\xff\xff\xff\xff")}});
}

/* A prefix key part (KEY(c(3))) keeps the first 3 characters, as the
 * server's key image: values that agree on them encode equal. */
TEST(KeyCodecOrder, PrefixKeyPart) {
  TestTable t;
  CHARSET_INFO *cs = &my_charset_utf8mb4_general_ci;
  t.add(varchar_field(t, 10, cs, false), false, 3 * cs->mbmaxlen);
  t.build();
  std::vector<uchar> a = t.row({vcval("abcdef")}), b = t.row({vcval("ABCxyz")}), c = t.row({vcval("abd")});
  std::string ka = t.encode(a, 1), kb = t.encode(b, 1), kc = t.encode(c, 1);
  EXPECT_EQ(ka, kb);
  EXPECT_LT(memcmp(ka.data(), kc.data(), ka.size()), 0);
}

/* TEXT / BLOB value: the record holds the length and a pointer to the
 * bytes (kept alive by the value). */
Val blobval(const std::string &s) {
  Val x;
  x.label = "'" + s + "'";
  auto bytes = std::make_shared<std::string>(s);
  x.store = [bytes](Field *f, uchar *) { ((Field_blob *)f)->set_ptr((uint32)bytes->size(), (uchar *)&(*bytes)[0]); };
  return x;
}

/* TEXT with a prefix key KEY(t(8)) (values within the prefix, so the
 * server's full comparison is the order too): the collation's rules. BLOB
 * KEY(b(8)): bytes, then length. */
TEST(KeyCodecOrder, TextAndBlobPrefix) {
  {
    TestTable t;
    CHARSET_INFO *cs = &my_charset_utf8mb4_general_ci;
    uchar *nptr;
    uchar *p = t.reserve(2 + sizeof(uchar *), true, &nptr);
    t.add(new (t.root()) Field_blob(p, nptr, 1, Field::NONE, t.name(), t.share(), 2, DTCollation(cs)), false,
          8 * cs->mbmaxlen);
    t.build();
    check_order(t, {{null_val()},
                    {blobval(""), blobval("  ")},
                    {blobval("a"), blobval("A"), blobval("a ")},
                    {blobval("ab")},
                    {blobval("b")},
                    {blobval("zzzzzzzz")}});
  }
  {
    TestTable t;
    uchar *nptr;
    uchar *p = t.reserve(2 + sizeof(uchar *), true, &nptr);
    t.add(new (t.root()) Field_blob(p, nptr, 1, Field::NONE, t.name(), t.share(), 2, DTCollation(&my_charset_bin)),
          false, 8);
    t.build();
    check_order(t, {{null_val()},
                    {blobval("")},
                    {blobval(std::string(1, '\0'))},
                    {blobval(" ")},
                    {blobval("A")},
                    {blobval("a")},
                    {blobval("a ")},
                    {blobval("ab")},
                    {blobval("\xff\xff")}});
  }
}

/* ---- descending parts and multi-column keys ---- */

/* A DESC part reverses the order exactly, NULL included (NULL last). */
TEST(KeyCodecOrder, DescendingParts) {
  {
    TestTable t;
    t.add(int_field(t, 4, false, true), true);
    t.build();
    check_order(t, {{null_val()}, {ival(INT32_MIN, 4)}, {ival(-1, 4)}, {ival(0, 4)}, {ival(1, 4)}, {ival(INT32_MAX, 4)}},
                true);
  }
  {
    TestTable t;
    t.add(varchar_field(t, 5, &my_charset_utf8mb4_general_ci, true), true);
    t.build();
    check_order(t, {{null_val()}, {vcval("")}, {vcval("a"), vcval("A ")}, {vcval("ab")}, {vcval("b")}}, true);
  }
}

/* (INT NULL, VARCHAR, BIGINT UNSIGNED DESC): rows order by the first
 * column, then the second, then the third descending; the first n parts
 * of a key are its prefix_len(n) leading bytes. */
TEST(KeyCodecOrder, MultiColumn) {
  TestTable t;
  t.add(int_field(t, 4, false, true));
  t.add(varchar_field(t, 4, &my_charset_utf8mb4_general_ci, false));
  t.add(int_field(t, 8, true, false), true);
  t.build();
  ASSERT_EQ(t.codec().parts(), 3u);
  /* Rows in ascending key order; each inner list is a group of equal keys. */
  std::vector<std::vector<std::vector<Val>>> rows = {
      {{null_val(), vcval("z"), uval(5, 8)}},
      {{null_val(), vcval("z"), uval(1, 8)}},
      {{ival(-5, 4), vcval(""), uval(0, 8)}},
      {{ival(-5, 4), vcval("a"), uval(ULLONG_MAX, 8)}, {ival(-5, 4), vcval("A "), uval(ULLONG_MAX, 8)}},
      {{ival(-5, 4), vcval("a"), uval(0, 8)}},
      {{ival(-5, 4), vcval("b"), uval(7, 8)}},
      {{ival(0, 4), vcval("a"), uval(3, 8)}},
      {{ival(7, 4), vcval(""), uval(9, 8)}},
  };
  struct R {
    std::vector<uchar> rec;
    std::string key;
    size_t group;
  };
  std::vector<R> all;
  for (size_t g = 0; g < rows.size(); g++)
    for (auto &vals : rows[g]) {
      R r;
      r.rec = t.row(vals);
      r.key = t.encode(r.rec, 3);
      r.group = g;
      for (uint n = 1; n <= 3; n++) EXPECT_EQ(t.encode(r.rec, n), r.key.substr(0, t.codec().prefix_len(n)));
      all.push_back(r);
    }
  for (R &a : all)
    for (R &b : all) {
      int want = a.group < b.group ? -1 : (a.group > b.group ? 1 : 0);
      EXPECT_EQ(sign(memcmp(a.key.data(), b.key.data(), a.key.size())), want)
          << "rows of groups " << a.group << " and " << b.group;
      /* The server's column-by-column comparison gives the same order. */
      int server = 0;
      for (size_t c = 0; c < 3 && server == 0; c++) server = (c == 2 ? -1 : 1) * t.server_cmp(c, a.rec, b.rec);
      EXPECT_EQ(server, want) << "rows of groups " << a.group << " and " << b.group;
    }
}

/* ---- helpers of key_codec.h ---- */

TEST(KeyCodec, Successor) {
  std::string k("ab");
  ASSERT_TRUE(key_successor(k));
  EXPECT_EQ(k, "ac");
  k = std::string("a\xff\xff", 3);
  ASSERT_TRUE(key_successor(k));
  EXPECT_EQ(k, "b");
  k = std::string("\xff\xff", 2);
  EXPECT_FALSE(key_successor(k));
  k = "";
  EXPECT_FALSE(key_successor(k));
}

}  // namespace
}  // namespace tidesql
