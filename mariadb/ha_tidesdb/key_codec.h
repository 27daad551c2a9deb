/*
 * key_codec: encode index tuples so that memcmp order == MariaDB order.
 *
 * Invariants
 *  1. Every key part encodes to a FIXED number of bytes for a given index
 *     definition: [1 null byte if the column is nullable] + data bytes.
 *     Hence the first n parts of any key of an index always occupy
 *     prefix_len(n) bytes, an index's keys can be split without parsing,
 *     and a "prefix" search is a byte-prefix search.
 *  2. NULL sorts first: its null byte is 0x00 (and the data bytes are
 *     zero), a non-NULL value has 0x01.
 *  3. Data bytes:
 *     - numbers, temporals, DECIMAL, ENUM/SET, BIT, YEAR and non-string
 *       plugin types (UUID, INET6): the field's own sort image
 *       (Field::sort_string, the make_sort_key form filesort uses);
 *     - CHAR/VARCHAR/TEXT with a collation: the collation's strnxfrm
 *       weights of the (prefix of the) value, padded to the maximal length
 *       (MY_STRXFRM_PAD_TO_MAXLEN | PAD_WITH_SPACE), so values the
 *       collation calls equal ('a' = 'A ' in a _ci PAD SPACE collation)
 *       encode to identical bytes;
 *     - BINARY: the bytes, zero padded;
 *     - VARBINARY/BLOB: the (prefix) bytes zero padded, then the value
 *       length as 2 bytes big-endian, so 'a' < 'a\0'.
 *  4. Prefix key parts (KEY(c(10))) use only the first N characters, the
 *     same characters MariaDB's own key image keeps.
 *  5. A descending key part (KEY (c DESC)) stores the bitwise complement of
 *     its bytes (null byte included), which exactly reverses its order
 *     because every part has a fixed length.
 * Encodings are not decoded: readers that need column values from an
 * index use the key images stored in the index entry's value
 * (row_format.h).
 *
 * Thread-safety: an IndexCodec belongs to one handler (it points at that
 * handler's TABLE fields); encode() temporarily moves field pointers.
 */
#ifndef TIDESQL_KEY_CODEC_H
#define TIDESQL_KEY_CODEC_H

#include "tdb_common.h"

#include <vector>

namespace tidesql {

enum class PartKind : uint8_t {
  SORT_IMAGE,   /* Field::sort_string */
  COLLATED,     /* strnxfrm weights   */
  BINARY_FIXED, /* BINARY(n)          */
  BINARY_VAR,   /* VARBINARY, BLOB    */
};

struct KeyPartCodec {
  Field *field;
  PartKind kind;
  bool nullable;
  bool reverse;    /* descending key part */
  uint32 data_len; /* encoded bytes after the null byte */
  uint32 nchars;   /* COLLATED: characters of the prefix */
  uint32 nbytes;   /* BINARY_*: bytes of the prefix */
};

class IndexCodec {
 public:
  /* Describe the user-defined parts of `key` (fields of its TABLE). */
  void init(const KEY *key);
  uint parts() const { return (uint)m_parts.size(); }
  /* Encoded length of the first n parts. */
  uint32 prefix_len(uint n) const { return m_prefix[n]; }
  uint32 full_len() const { return m_prefix.back(); }
  /* Whether the index can be stored at all (encoded key within limits). */
  bool fits() const { return full_len() <= 16384; }
  /* Encode the first nparts parts of the row in `rec` (laid out like
   * table->record[0]) into out (prefix_len(nparts) bytes). Returns true
   * if any encoded part was NULL. */
  bool encode(TABLE *table, const uchar *rec, uint nparts, uchar *out) const;

 private:
  std::vector<KeyPartCodec> m_parts;
  std::vector<uint32> m_prefix; /* m_prefix[i] = bytes of first i parts */
};

/* Smallest byte string greater than every string that starts with k
 * (increment as a big-endian number, dropping trailing 0xff bytes).
 * Returns false when k is all 0xff (no such string: "end of index"). */
bool key_successor(std::string &k);

/* Number of leading key parts named by a keypart_map (a prefix mask). */
uint keypart_count(const KEY *key, key_part_map map);

}  // namespace tidesql

#endif
