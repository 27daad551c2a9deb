/* row_format: packing rows into values and back (see row_format.h). */
#include "row_format.h"

#include <string.h>

namespace tidesql {

/* One column's Field::pack bytes at `to`. CHAR in a multi-byte character
 * set: Field_string::pack first walks the value's characters (charpos) to
 * bound it to the column's length in characters, then trims the padding.
 * When the trimmed value is no longer in bytes than the column is in
 * characters, the walk cannot cut it (every character is at least a byte),
 * so the trim alone gives the same bytes: one length byte (two past 255
 * octets, little-endian), then the value. The walk was a quarter of
 * write_row in the TPC-C schema build (utf8mb4 CHAR columns). */
static inline uchar *pack_column(Field *f, uchar *to, const uchar *from) {
  if (f->type_handler() != &type_handler_string) return f->pack(to, from);
  CHARSET_INFO *cs = f->charset();
  if (cs->mbmaxlen == 1 || cs->mbminlen != 1) return f->pack(to, from);
  uint32 octets = f->field_length;
  size_t len = cs->lengthsp((const char *)from, octets);
  if (len > octets / cs->mbmaxlen) return f->pack(to, from);
  uchar *end = to;
  *end++ = (uchar)len;
  if (octets > 255) *end++ = (uchar)(len >> 8);
  memcpy(end, from, len);
  end += len;
#ifndef DBUG_OFF
  uchar check[2 + 1024];
  DBUG_ASSERT(octets > 1024 ||
              (f->pack(check, from) - check == end - to && !memcmp(check, to, (size_t)(end - to))));
#endif
  return end;
}

/* Pack the stored, non-NULL columns of rec after the null bytes. */
void row_pack(TABLE *table, const uchar *rec, std::string &out, const RowVersions *fmt) {
  TABLE_SHARE *s = table->s;
  my_ptrdiff_t diff = (my_ptrdiff_t)(rec - table->record[0]);
  /* Upper bound: the record, 2 length bytes per column (CHAR packs with a
   * length prefix) and the blob data. */
  size_t cap = 4 + s->null_bytes + s->reclength + 2 * s->fields;
  for (uint i = 0; i < s->blob_fields; i++) {
    Field_blob *b = (Field_blob *)table->field[s->blob_field[i]];
    cap += b->get_length(rec + (b->ptr - table->record[0]));
  }
  out.resize(cap);
  uchar *start = (uchar *)&out[0];
  uchar *to = start;
  if (!fmt || fmt->plain()) {
    *to++ = ROW_FORMAT_V1;
  } else if (fmt->current) {
    *to++ = ROW_FORMAT_V3;
    *to++ = (uchar)(fmt->current >> 8);
    *to++ = (uchar)(fmt->current & 0xff);
  } else { /* legacy: counted rows */
    *to++ = ROW_FORMAT_V2;
    *to++ = (uchar)(s->stored_fields >> 8);
    *to++ = (uchar)(s->stored_fields & 0xff);
    *to++ = (uchar)s->null_bytes;
  }
  memcpy(to, rec, s->null_bytes);
  to += s->null_bytes;
  for (Field **fp = table->field; *fp; fp++) {
    Field *f = *fp;
    if (!f->stored_in_db() || f->is_null(diff)) continue;
    to = pack_column(f, to, f->ptr + diff);
  }
  out.resize((size_t)(to - start));
}

/* Unpack one column's packed bytes at *from into rec's image of f (diff:
 * rec - record[0]), with the field moved onto rec: Field_blob::unpack
 * ignores its target and sets the blob pointer at the field's own ptr, so
 * unpacking into record[1] (REPLACE's duplicate row) or a scratch buffer
 * would clobber record[0]'s blob and leave rec's unset. Advances *from;
 * false on damaged bytes. */
static inline bool unpack_field(Field *f, my_ptrdiff_t diff, const uchar **from, const uchar *end) {
  f->move_field_offset(diff);
  const uchar *p = f->unpack(f->ptr, *from, end);
  f->move_field_offset(-diff);
  if (!p || p > end) return false;
  *from = p;
  return true;
}

/* Past one column's packed bytes; NULL if the value is damaged. */
static const uchar *skip_packed(const RowColumn &c, const uchar *from, const uchar *end) {
  size_t n;
  if (c.skip == RowColumn::SKIP_FIXED) {
    n = c.skip_len;
  } else if (c.skip == RowColumn::SKIP_PREFIX && c.skip_len >= 1 && c.skip_len <= 4) {
    if ((size_t)(end - from) < c.skip_len) return NULL;
    size_t l = 0;
    for (uint b = c.skip_len; b-- > 0;) l = (l << 8) | from[b]; /* little-endian */
    n = c.skip_len + l;
  } else {
    return NULL;
  }
  return (size_t)(end - from) < n ? NULL : from + n;
}

/* A row holding every stored column of the current table; with cols,
 * only the columns it asks for are unpacked (row_format.h, RowColumns). */
static inline int unpack_current(TABLE *table, const uchar *from, const uchar *end, uchar *rec,
                                 const RowColumns *cols) {
  TABLE_SHARE *s = table->s;
  my_ptrdiff_t diff = (my_ptrdiff_t)(rec - table->record[0]);
  if ((size_t)(end - from) < s->null_bytes) return HA_ERR_CRASHED;
  memcpy(rec, from, s->null_bytes);
  from += s->null_bytes;
  for (Field **fp = table->field; *fp; fp++) {
    Field *f = *fp;
    if (!f->stored_in_db()) continue;
    if (f->is_null(diff)) {
      /* Keep NULL columns' bytes clean (Field_bit keeps bits in the
       * null bytes, which are already restored). */
      memset(f->ptr + diff, 0, f->pack_length_in_rec());
      continue;
    }
    if (cols && !bitmap_is_set(table->read_set, f->field_index)) {
      const RowColumn &c = cols->skip[f->field_index];
      if (c.skip != RowColumn::SKIP_UNKNOWN) {
        if (!(from = skip_packed(c, from, end))) return HA_ERR_CRASHED;
        continue;
      }
    }
    if (!unpack_field(f, diff, &from, end)) return HA_ERR_CRASHED;
  }
  return 0;
}

/* Legacy (no row versions): a row holding the first nf stored columns
 * and nnull null bytes of the current table. */
static int unpack_prefix(TABLE *table, const uchar *from, const uchar *end, uchar *rec, uint nf, uint nnull) {
  TABLE_SHARE *s = table->s;
  my_ptrdiff_t diff = (my_ptrdiff_t)(rec - table->record[0]);
  if ((size_t)(end - from) < nnull || nf > s->stored_fields || nnull > s->null_bytes) return HA_ERR_CRASHED;
  /* The columns it holds keep their null bits; the others take the
   * defaults' (appended columns only). */
  memcpy(rec, s->default_values, s->null_bytes);
  uint i = 0;
  for (Field **fp = table->field; *fp && i < nf; fp++) {
    Field *f = *fp;
    if (!f->stored_in_db()) continue;
    i++;
    if (!f->null_ptr) continue;
    size_t off = (size_t)(f->null_ptr - table->record[0]);
    if (off >= nnull) return HA_ERR_CRASHED;
    rec[off] = (uchar)((rec[off] & ~f->null_bit) | (from[off] & f->null_bit));
  }
  from += nnull;
  i = 0;
  for (Field **fp = table->field; *fp; fp++) {
    Field *f = *fp;
    if (!f->stored_in_db()) continue;
    if (i++ >= nf) { /* added after this row was written */
      memcpy(f->ptr + diff, s->default_values + (f->ptr - table->record[0]), f->pack_length_in_rec());
      continue;
    }
    if (f->is_null(diff)) {
      memset(f->ptr + diff, 0, f->pack_length_in_rec());
      continue;
    }
    if (!unpack_field(f, diff, &from, end)) return HA_ERR_CRASHED;
  }
  return 0;
}

/* A row of an older version v holding its first nf columns and nnull null
 * bytes: columns it does not hold read their instant default (or the
 * table default), dropped ones are skipped. */
static int unpack_version(TABLE *table, const RowVersions &fmt, const RowVersion &v, const uchar *from,
                          const uchar *end, uchar *rec, uint nf, uint nnull) {
  TABLE_SHARE *s = table->s;
  my_ptrdiff_t diff = (my_ptrdiff_t)(rec - table->record[0]);
  if (nf > v.cols.size() || nnull > v.null_bytes || (size_t)(end - from) < nnull) return HA_ERR_CRASHED;
  const uchar *nulls = from;
  from += nnull;
  memcpy(rec, s->default_values, s->reclength);
  for (const InstantDefault &d : fmt.defaults) {
    if (d.field >= s->fields) return HA_ERR_CRASHED;
    Field *f = table->field[d.field];
    if (d.null) {
      if (!f->null_ptr) return HA_ERR_CRASHED;
      f->set_null(diff);
      continue;
    }
    if (f->null_ptr) f->set_notnull(diff);
    const uchar *p = (const uchar *)d.packed.data();
    if (!unpack_field(f, diff, &p, p + d.packed.size())) return HA_ERR_CRASHED;
  }
  for (uint i = 0; i < nf; i++) {
    const RowColumn &c = v.cols[i];
    bool is_null = false;
    if (c.null_off != RowColumn::NOT_NULL) {
      if (c.null_off >= nnull) return HA_ERR_CRASHED;
      is_null = (nulls[c.null_off] & c.null_bit) != 0;
    }
    if (c.field == RowColumn::DROPPED) {
      if (!is_null && !(from = skip_packed(c, from, end))) return HA_ERR_CRASHED;
      continue;
    }
    if (c.field >= s->fields) return HA_ERR_CRASHED;
    Field *f = table->field[c.field];
    if (!f->stored_in_db() || !f->null_ptr != (c.null_off == RowColumn::NOT_NULL)) return HA_ERR_CRASHED;
    if (is_null) {
      f->set_null(diff);
      memset(f->ptr + diff, 0, f->pack_length_in_rec());
      continue;
    }
    if (f->null_ptr) f->set_notnull(diff);
    if (!unpack_field(f, diff, &from, end)) return HA_ERR_CRASHED;
  }
  return 0;
}

/* Rows not in the current version (the fast paths are in row_unpack). */
static int unpack_older(TABLE *table, const uchar *data, size_t len, uchar *rec, const RowVersions *fmt) {
  TABLE_SHARE *s = table->s;
  const uchar *end = data + len;
  if (len < 1) return HA_ERR_CRASHED;
  uint nf, nnull;
  const uchar *from;
  if (data[0] == ROW_FORMAT_V1) {
    if (!fmt) return HA_ERR_CRASHED; /* not reached: plain V1 is a fast path */
    nf = fmt->legacy.fields;
    nnull = fmt->legacy.null_bytes;
    from = data + 1;
  } else if (data[0] == ROW_FORMAT_V2 && len >= 4) {
    nf = ((uint)data[1] << 8) | data[2];
    nnull = data[3];
    from = data + 4;
  } else if (data[0] == ROW_FORMAT_V3 && len >= 3 && fmt) {
    uint k = ((uint)data[1] << 8) | data[2];
    if (k == 0 || k >= fmt->versions.size()) return HA_ERR_CRASHED;
    const RowVersion &v = fmt->versions[k];
    return unpack_version(table, *fmt, v, data + 3, end, rec, (uint)v.cols.size(), v.null_bytes);
  } else {
    return HA_ERR_CRASHED;
  }
  /* V1 or V2: a prefix of version 0 (legacy fields 0: all of it). */
  if (fmt && fmt->current) {
    const RowVersion &v = fmt->versions[0];
    if (!nf) {
      nf = (uint)v.cols.size();
      nnull = v.null_bytes;
    }
    return unpack_version(table, *fmt, v, from, end, rec, nf, nnull);
  }
  if (!nf) {
    nf = s->stored_fields;
    nnull = s->null_bytes;
  }
  return unpack_prefix(table, from, end, rec, nf, nnull);
}

int row_unpack(TABLE *table, const uchar *data, size_t len, uchar *rec, const RowVersions *fmt,
               const RowColumns *cols) {
  const uchar *end = data + len;
  if (len >= 1 && data[0] == ROW_FORMAT_V1 && (!fmt || fmt->plain()))
    return unpack_current(table, data + 1, end, rec, cols);
  if (fmt && fmt->current && len >= 3 && data[0] == ROW_FORMAT_V3 &&
      (((uint)data[1] << 8) | data[2]) == fmt->current)
    return unpack_current(table, data + 3, end, rec, cols);
  return unpack_older(table, data, len, rec, fmt);
}

void row_columns_init(TABLE *table, RowColumns *cols) {
  cols->skip.assign(table->s->fields, RowColumn());
  for (Field **fp = table->field; *fp; fp++) {
    Field *f = *fp;
    RowColumn &c = cols->skip[f->field_index];
    if (f->flags & (PART_KEY_FLAG | BLOB_FLAG)) continue; /* SKIP_UNKNOWN: always unpacked */
    row_skip_rule(f, &c.skip, &c.skip_len);
  }
}

void row_skip_rule(Field *f, uchar *skip, uint16 *skip_len) {
  *skip = RowColumn::SKIP_UNKNOWN;
  *skip_len = 0;
  enum_field_types t = f->real_type();
  if (f->flags & BLOB_FLAG) {
    if (t == MYSQL_TYPE_TINY_BLOB || t == MYSQL_TYPE_BLOB || t == MYSQL_TYPE_MEDIUM_BLOB ||
        t == MYSQL_TYPE_LONG_BLOB || t == MYSQL_TYPE_GEOMETRY) {
      *skip = RowColumn::SKIP_PREFIX; /* Field_blob::pack: packlength bytes, then the data */
      *skip_len = (uint16)((Field_blob *)f)->pack_length_no_ptr();
    }
    return;
  }
  /* Data types from plugins (UUID, INET6, ...) pack their own way. */
  const Type_handler *std_handler = Type_handler::get_handler_by_real_type(MYSQL_TYPE_LONG);
  if (!std_handler || f->type_handler()->type_collection() != std_handler->type_collection()) return;
  switch (t) {
    case MYSQL_TYPE_VARCHAR: /* Field_varstring::pack */
    case MYSQL_TYPE_STRING:  /* StringPack::pack */
      *skip = RowColumn::SKIP_PREFIX;
      *skip_len = f->field_length > 255 ? 2 : 1;
      return;
    case MYSQL_TYPE_TINY: case MYSQL_TYPE_SHORT: case MYSQL_TYPE_INT24: case MYSQL_TYPE_LONG:
    case MYSQL_TYPE_LONGLONG: case MYSQL_TYPE_FLOAT: case MYSQL_TYPE_DOUBLE: case MYSQL_TYPE_NEWDECIMAL:
    case MYSQL_TYPE_DATE: case MYSQL_TYPE_NEWDATE: case MYSQL_TYPE_TIME: case MYSQL_TYPE_TIME2:
    case MYSQL_TYPE_DATETIME: case MYSQL_TYPE_DATETIME2: case MYSQL_TYPE_TIMESTAMP:
    case MYSQL_TYPE_TIMESTAMP2: case MYSQL_TYPE_YEAR: case MYSQL_TYPE_ENUM: case MYSQL_TYPE_SET:
      *skip = RowColumn::SKIP_FIXED; /* Field::pack (Field_enum::pack): pack_length() bytes */
      *skip_len = (uint16)f->pack_length();
      return;
    default:
      return;
  }
}

}  // namespace tidesql
