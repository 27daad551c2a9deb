/*
 * row_format: the values stored in a table's column families.
 *
 * Primary (data) column family, key = encoded primary key (key_codec.h) or
 * the 8-byte big-endian hidden row id; value = a packed row:
 *     [ROW_FORMAT_V1][the record's null bytes][Field::pack() of every
 *      stored column that is not NULL, in column order]
 * or, in a table whose columns changed instantly (ha_tidesdb_alter.cc):
 *     [ROW_FORMAT_V3][row version u16 BE][null bytes][Field::pack() of
 *      every stored column that is not NULL, in column order]
 * The dictionary (dict.h) keeps a RowVersions per table: the version
 * rows are written with now (0: never changed, V1 rows), and for every
 * older version k a RowVersion: the null bytes and stored columns a row
 * of version k holds, each with its null bit, how to skip its packed
 * bytes and the current column it became (or none: dropped). Columns
 * added instantly keep the packed default they were added with; a row
 * that does not hold such a column reads that default, even after a
 * later SET DEFAULT. V1 rows of a changed table are version 0.
 * A row of the current version unpacks exactly as a V1 row of a table
 * never changed (one more header check); older rows go through their
 * version's columns (unpack_version in row_format.cc).
 * Before row versions (a still-read format): instant ADD COLUMN only
 * appended columns; such a table's V1 rows hold the stored columns and
 * null bytes of the legacy RowLayout and it wrote
 *     [ROW_FORMAT_V2][stored columns n, u16 BE][null bytes m, u8]
 *     [m null bytes][Field::pack() of the first n stored columns not NULL]
 * Both hold a prefix of version 0's columns once the table has versions.
 * Virtual (not stored) generated columns are not stored; the server
 * computes them after a read.
 *
 * Secondary-index column family, key = encoded index columns followed by
 * the encoded primary key (so entries are unique and ordered by primary
 * key within equal index values), except for a UNIQUE index whose columns
 * are all non-NULL: key = encoded index columns only, so a uniqueness check
 * is one point read. Value, in both cases:
 *     [encoded primary key][key image of the index][key image of the PK]
 * (key images as key_copy() makes them; the PK image is absent with a
 * hidden primary key). The images let index-only reads restore column
 * values that the memcmp encoding cannot give back (collation weights).
 *
 * Invariants
 *  1. A row value always starts with its format byte; unknown formats are
 *     reported as corruption, never guessed.
 *  2. unpack() never reads past the value and leaves blob columns pointing
 *     into the value buffer: the caller keeps that buffer until the next
 *     row is read.
 *  3. A table's row versions always describe its current .frm: the ALTER
 *     that makes a version remaps every older one onto the new columns and
 *     writes them in the one synced dictionary record that switches the
 *     .frm version (dict.h invariant 7), so every stored row's version
 *     resolves; a version a row names that the record lacks is corruption.
 */
#ifndef TIDESQL_ROW_FORMAT_H
#define TIDESQL_ROW_FORMAT_H

#include "tdb_common.h"

#include <vector>

namespace tidesql {

static const uchar ROW_FORMAT_V1 = 0x01;
static const uchar ROW_FORMAT_V2 = 0x02;
static const uchar ROW_FORMAT_V3 = 0x03;

/* What a V1 row holds under the legacy append-only scheme (fields 0:
 * the table's own columns). */
struct RowLayout {
  uint fields = 0;
  uint null_bytes = 0;
};

/* One stored column of an older row version. */
struct RowColumn {
  static const uint16 DROPPED = 0xffff; /* field: no current column */
  static const uint16 NOT_NULL = 0xffff; /* null_off: no null bit */
  enum : uchar { SKIP_FIXED = 0, SKIP_PREFIX = 1, SKIP_UNKNOWN = 2 };
  uint16 field = DROPPED;     /* index in table->field of the current table */
  uint16 null_off = NOT_NULL; /* null byte of the column in that version's rows */
  uchar null_bit = 0;
  uchar skip = SKIP_UNKNOWN;  /* how to pass over its packed bytes */
  uint16 skip_len = 0;        /* FIXED: bytes; PREFIX: length bytes (LE) */
};

/* The columns rows of one older version hold, in their order. */
struct RowVersion {
  uint null_bytes = 0;
  std::vector<RowColumn> cols;
};

/* A column added instantly: what rows written before it read. */
struct InstantDefault {
  uint16 field = 0; /* index in table->field */
  bool null = false;
  std::string packed; /* Field::pack() of the default */
};

/* A table's row versions (row_format.h comment; kept in the dictionary). */
struct RowVersions {
  RowLayout legacy;                 /* legacy V1 rows (fields 0: none) */
  uint current = 0;                 /* version new rows carry (0: V1) */
  std::vector<RowVersion> versions; /* [k] for every k < current */
  std::vector<InstantDefault> defaults;
  /* V1 rows are the table's current layout: the fast path. */
  bool plain() const { return current == 0 && legacy.fields == 0; }
};

/* A read of part of a row (row_unpack's cols): it fills the columns in
 * the table's read_set and every one skip cannot pass over
 * (RowColumn::SKIP_UNKNOWN, which row_columns_init gives key columns and
 * blobs); the others are passed over in the value and keep whatever rec
 * held. A statement that only reads a table needs its read_set, as InnoDB
 * and MyRocks read it. Rows of an older version are always read whole. */
struct RowColumns {
  std::vector<RowColumn> skip; /* by Field::field_index */
};

/* Most row versions a table keeps; an ALTER past it copies the table. */
static const uint MAX_ROW_VERSIONS = 64;

/* Pack the row in rec (laid out like table->record[0]) into out, in the
 * format new rows of fmt take (NULL: V1). */
void row_pack(TABLE *table, const uchar *rec, std::string &out, const RowVersions *fmt = NULL);

/* Unpack a row value into rec (fmt NULL: a table never changed; cols
 * NULL: every column, else table->read_set's). Returns 0 or HA_ERR_CRASHED on a damaged value.
 * Blob columns point into data (or into fmt's defaults) afterwards. */
int row_unpack(TABLE *table, const uchar *data, size_t len, uchar *rec, const RowVersions *fmt = NULL,
               const RowColumns *cols = NULL);

/* cols->skip for table's columns: key columns (position() and range ends
 * read them) and blobs (a stale pointer must not outlive its row) are
 * never passed over. */
void row_columns_init(TABLE *table, RowColumns *cols);

/* How to skip field's packed bytes (RowColumn::skip, skip_len). */
void row_skip_rule(Field *field, uchar *skip, uint16 *skip_len);

}  // namespace tidesql

#endif
