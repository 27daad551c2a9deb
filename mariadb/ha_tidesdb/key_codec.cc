/* key_codec: memcmp-ordered encoding of index tuples (see key_codec.h). */
#include "key_codec.h"

#include <string.h>

namespace tidesql {

/* Whether a field is one of the classic character/binary string types
 * (as opposed to numbers, temporals or plugin types like UUID). */
static bool is_plain_string(Field *f) {
  if (!f->type_handler()->is_traditional_scalar_type()) return false;
  switch (f->real_type()) {
    case MYSQL_TYPE_STRING:
    case MYSQL_TYPE_VARCHAR:
    case MYSQL_TYPE_VAR_STRING:
    case MYSQL_TYPE_TINY_BLOB:
    case MYSQL_TYPE_MEDIUM_BLOB:
    case MYSQL_TYPE_LONG_BLOB:
    case MYSQL_TYPE_BLOB:
      return true;
    default:
      return false;
  }
}

/* Describe each user-defined part of key and the encoded prefix lengths. */
void IndexCodec::init(const KEY *key) {
  m_parts.clear();
  m_prefix.assign(1, 0);
  for (uint i = 0; i < key->user_defined_key_parts; i++) {
    const KEY_PART_INFO *kp = &key->key_part[i];
    KeyPartCodec c;
    c.field = kp->field;
    c.nullable = kp->field->real_maybe_null();
    c.reverse = (kp->key_part_flag & HA_REVERSE_SORT) != 0;
    c.nchars = 0;
    c.nbytes = 0;
    if (is_plain_string(c.field)) {
      CHARSET_INFO *cs = c.field->charset();
      if (cs == &my_charset_bin) {
        c.nbytes = kp->length;
        if (c.field->real_type() == MYSQL_TYPE_STRING) {
          c.kind = PartKind::BINARY_FIXED;
          c.data_len = c.nbytes;
        } else {
          c.kind = PartKind::BINARY_VAR;
          c.data_len = c.nbytes + 2;
        }
      } else {
        c.kind = PartKind::COLLATED;
        c.nchars = kp->length / cs->mbmaxlen;
        c.data_len = (uint32)cs->strnxfrmlen(c.nchars * cs->mbmaxlen);
      }
    } else {
      c.kind = PartKind::SORT_IMAGE;
      c.data_len = c.field->sort_length();
    }
    m_parts.push_back(c);
    m_prefix.push_back(m_prefix.back() + (c.nullable ? 1 : 0) + c.data_len);
  }
}

/* Invert bytes [b, e): reverses the memcmp order of a fixed-length part. */
static void complement(uchar *b, uchar *e) {
  for (; b < e; b++) *b = (uchar)~*b;
}

/* Encode the first nparts parts of rec into out; true if any was NULL. */
bool IndexCodec::encode(TABLE *table, const uchar *rec, uint nparts, uchar *out) const {
  my_ptrdiff_t diff = (my_ptrdiff_t)(rec - table->record[0]);
  bool any_null = false;
  for (uint i = 0; i < nparts; i++) {
    const KeyPartCodec &c = m_parts[i];
    Field *f = c.field;
    uchar *part = out;
    if (c.nullable) {
      if (f->is_null(diff)) {
        *out++ = 0;
        memset(out, 0, c.data_len);
        out += c.data_len;
        any_null = true;
        if (c.reverse) complement(part, out);
        continue;
      }
      *out++ = 1;
    }
    if (diff) f->move_field_offset(diff);
    switch (c.kind) {
      case PartKind::SORT_IMAGE:
        f->sort_string(out, c.data_len);
        break;
      case PartKind::COLLATED: {
        String buf;
        String *s = f->val_str(&buf, &buf);
        CHARSET_INFO *cs = f->charset();
        const char *p = s->ptr();
        size_t len = s->length();
        /* Keep the first nchars characters, as the server's key image. */
        size_t lim = cs->charpos(p, p + len, c.nchars);
        if (lim < len) len = lim;
        cs->strnxfrm(out, c.data_len, c.nchars * cs->strxfrm_multiply, (const uchar *)p, len,
                     MY_STRXFRM_PAD_WITH_SPACE | MY_STRXFRM_PAD_TO_MAXLEN);
        break;
      }
      case PartKind::BINARY_FIXED:
      case PartKind::BINARY_VAR: {
        String buf;
        String *s = f->val_str(&buf, &buf);
        size_t len = s->length();
        if (len > c.nbytes) len = c.nbytes;
        memcpy(out, s->ptr(), len);
        memset(out + len, 0, c.nbytes - len);
        if (c.kind == PartKind::BINARY_VAR) {
          out[c.nbytes] = (uchar)(len >> 8);
          out[c.nbytes + 1] = (uchar)len;
        }
        break;
      }
    }
    if (diff) f->move_field_offset(-diff);
    out += c.data_len;
    if (c.reverse) complement(part, out);
  }
  return any_null;
}

/* Increment k as a big-endian number after dropping trailing 0xff bytes. */
bool key_successor(std::string &k) {
  while (!k.empty() && (uchar)k.back() == 0xff) k.pop_back();
  if (k.empty()) return false;
  k.back() = (char)((uchar)k.back() + 1);
  return true;
}

/* Count the leading parts a keypart_map names (capped at the key's parts). */
uint keypart_count(const KEY *key, key_part_map map) {
  uint n = 0;
  while (n < key->user_defined_key_parts && (map & ((key_part_map)1 << n))) n++;
  return n;
}

}  // namespace tidesql
