/*
 * row_format: the values stored in a table's column families.
 *
 * Primary (data) column family, key = encoded primary key (key_codec.h) or
 * the 8-byte big-endian hidden row id; value = a packed row:
 *     [ROW_FORMAT_V1][the record's null bytes][Field::pack() of every
 *      stored column that is not NULL, in column order]
 * or, in a table that had a column added instantly (ha_tidesdb_alter.cc):
 *     [ROW_FORMAT_V2][stored columns n, u16 BE][null bytes m, u8]
 *     [m null bytes][Field::pack() of the first n stored columns not NULL]
 * A V1 row of such a table holds the stored columns and null bytes the
 * table had before its first instant ADD COLUMN (the RowLayout kept in
 * the dictionary). Columns a row does not hold read as their defaults;
 * instant ADD COLUMN only appends columns, which keeps the null bits of
 * the existing ones where they were.
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
 */
#ifndef TIDESQL_ROW_FORMAT_H
#define TIDESQL_ROW_FORMAT_H

#include "tdb_common.h"

namespace tidesql {

static const uchar ROW_FORMAT_V1 = 0x01;
static const uchar ROW_FORMAT_V2 = 0x02;

/* What a V1 row holds: stored columns and null bytes (fields 0: the
 * table's own, i.e. no column was ever added instantly). */
struct RowLayout {
  uint fields = 0;
  uint null_bytes = 0;
};

/* Pack the row in rec (laid out like table->record[0]) into out; as V2
 * (with its column count) if counted. */
void row_pack(TABLE *table, const uchar *rec, std::string &out, bool counted = false);

/* Unpack a row value into rec; v1 says what a V1 value holds (NULL or
 * fields 0: all of the table's columns). Returns 0 or HA_ERR_CRASHED on a
 * damaged value. Blob columns point into data afterwards. */
int row_unpack(TABLE *table, const uchar *data, size_t len, uchar *rec, const RowLayout *v1 = NULL);

}  // namespace tidesql

#endif
