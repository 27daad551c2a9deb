/* row_format: packing rows into values and back (see row_format.h). */
#include "row_format.h"

#include <string.h>

namespace tidesql {

/* Pack the stored, non-NULL columns of rec after the null bytes. */
void row_pack(TABLE *table, const uchar *rec, std::string &out, bool counted) {
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
  if (counted) {
    *to++ = ROW_FORMAT_V2;
    *to++ = (uchar)(s->stored_fields >> 8);
    *to++ = (uchar)(s->stored_fields & 0xff);
    *to++ = (uchar)s->null_bytes;
  } else {
    *to++ = ROW_FORMAT_V1;
  }
  memcpy(to, rec, s->null_bytes);
  to += s->null_bytes;
  for (Field **fp = table->field; *fp; fp++) {
    Field *f = *fp;
    if (!f->stored_in_db() || f->is_null(diff)) continue;
    to = f->pack(to, f->ptr + diff);
  }
  out.resize((size_t)(to - start));
}

/* Unpack a row value into rec; blobs keep pointing into data. */
int row_unpack(TABLE *table, const uchar *data, size_t len, uchar *rec, const RowLayout *v1) {
  TABLE_SHARE *s = table->s;
  my_ptrdiff_t diff = (my_ptrdiff_t)(rec - table->record[0]);
  const uchar *end = data + len;
  uint nf, nnull;
  const uchar *from;
  if (len >= 1 && data[0] == ROW_FORMAT_V1) {
    bool older = v1 && v1->fields;
    nf = older ? v1->fields : s->stored_fields;
    nnull = older ? v1->null_bytes : s->null_bytes;
    from = data + 1;
  } else if (len >= 4 && data[0] == ROW_FORMAT_V2) {
    nf = ((uint)data[1] << 8) | data[2];
    nnull = data[3];
    from = data + 4;
  } else {
    return HA_ERR_CRASHED;
  }
  if ((size_t)(end - from) < nnull || nf > s->stored_fields || nnull > s->null_bytes) return HA_ERR_CRASHED;
  if (nf == s->stored_fields && nnull == s->null_bytes) {
    memcpy(rec, from, s->null_bytes);
  } else {
    /* A row from before an instant ADD COLUMN: the columns it holds keep
     * their null bits; the others take the defaults' (row_format.h). */
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
  }
  from += nnull;
  uint i = 0;
  for (Field **fp = table->field; *fp; fp++) {
    Field *f = *fp;
    if (!f->stored_in_db()) continue;
    if (i++ >= nf) { /* added after this row was written */
      memcpy(f->ptr + diff, s->default_values + (f->ptr - table->record[0]), f->pack_length_in_rec());
      continue;
    }
    if (f->is_null(diff)) {
      /* Keep NULL columns' bytes clean (Field_bit keeps bits in the
       * null bytes, which are already restored). */
      memset(f->ptr + diff, 0, f->pack_length_in_rec());
      continue;
    }
    /* Unpack with the field moved onto rec: Field_blob::unpack ignores
     * its target and sets the blob pointer at the field's own ptr, so
     * unpacking into record[1] (REPLACE's duplicate row) or a scratch
     * buffer would clobber record[0]'s blob and leave rec's unset. */
    f->move_field_offset(diff);
    from = f->unpack(f->ptr, from, end);
    f->move_field_offset(-diff);
    if (!from || from > end) return HA_ERR_CRASHED;
  }
  return 0;
}

}  // namespace tidesql
