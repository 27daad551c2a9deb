/*
 * db/batch: the write batch's encoding (db/batch.c), a narrow header: what
 * the WAL replay, the fuzz targets and the offline checker need to decode a
 * batch, without the database's private state (db/db_impl.h). Batches and
 * families are the public opaque types.
 */
#ifndef TDB_DB_BATCH_H
#define TDB_DB_BATCH_H

#include <stdint.h>

#include "tidesdb/tidesdb.h"
#include "util/coding.h"
#include "util/slice.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The batch format is the WAL record payload:
 *   fixed64 first sequence | fixed32 count | entries
 *   entry: type byte | varint32 cf id | lenprefixed key | [lenprefixed value]
 * Values of KT_PUT_TTL carry fixed64 expiry first. KT_RANGE_DELETE has a
 * value too: the end key (exclusive; key < value). */
typedef struct batch_entry {
    unsigned type;
    uint32_t cf_id;
    slice_t key;
    slice_t value;
} batch_entry_t;
/* A batch in memory ("rep"): fixed64 seq | fixed32 count | BATCH_WAL_SPARE
 * bytes | entries. Its WAL payload (batch_wal_payload) is a suffix of it:
 * the compact header varint64 zigzag(seq - expected) | varint32 count is
 * written right-aligned into the spare bytes, then the entries. `expected`
 * is the sequence after the previous record of the same log (seq + count),
 * 0 for a log's first record, so a record usually spends 2 bytes on its
 * header instead of 12. */
#define BATCH_WAL_SPARE (VARINT64_MAX + VARINT32_MAX)
#define BATCH_HEADER (12 + BATCH_WAL_SPARE)
typedef int (*batch_visit_fn)(void *ctx, uint64_t seq, const batch_entry_t *e);
/* Decode a batch rep, calling fn for each entry with its sequence. */
int batch_iterate(slice_t rep, batch_visit_fn fn, void *ctx);
/* The WAL payload of b (numbered already); *expected is the log's state
 * (0 for a new log), advanced past b. The log's writer lock is held. */
slice_t batch_wal_payload(tdb_batch_t *b, uint64_t *expected);
/* Turn a WAL payload (bytes from disk) back into a rep in out, advancing
 * *expected like the writer did. TDB_ERR_CORRUPTION for a malformed header
 * or impossible sequence numbers; the entries are checked by batch_iterate. */
int batch_from_wal(slice_t payload, uint64_t *expected, buf_t *out);
/* The same for a WAL written under manifest format <= 2, whose payloads
 * begin with the fixed 12-byte header. */
int batch_from_wal_fixed(slice_t payload, buf_t *out);
/* Transaction records (two-phase commit, docs/design/txn.md): a WAL payload
 * whose compact header is followed by BATCH_TXN_RECORD, a byte no entry
 * starts with, then a kind byte and the lenprefixed xid:
 *   PREPARE   header (0, 0) | .. | varint32 count | entries: logged, not
 *             numbered (the log's sequence state does not move)
 *   COMMIT    header (seq - expected, count) | ..: the prepared entries of
 *             xid are committed as sequences seq .. seq + count - 1
 *   ROLLBACK  header (0, 0) | ..: the prepare of xid is void
 * A prepare record is the same bytes in any log, so it can be rewritten
 * into a newer WAL as it is.
 * Relog records (a WAL rewritten from the memtables after its fsync ran out
 * of space, db/switch.c), header (0, 0), the "xid" an 8-byte fixed64 N:
 *   RELOG_HEAD  the log's first record: the log holds every unflushed write
 *               of every family; logs numbered below it are not replayed
 *   RELOG_GEN   the batches that follow belong to the memtable generation
 *               of log N: a family whose log_number is above N has them
 *               in its tables already (recovery skips them). */
#define BATCH_TXN_RECORD 0x3f
enum { BATCH_TXN_PREPARE = 1, BATCH_TXN_COMMIT = 2, BATCH_TXN_ROLLBACK = 3, BATCH_RELOG_HEAD = 4, BATCH_RELOG_GEN = 5 };
#define BATCH_MAX_XID 1024
typedef struct batch_txn_rec {
    int kind;
    slice_t xid;
    uint64_t seq;    /* COMMIT: first sequence */
    uint32_t count;  /* PREPARE, COMMIT: entries */
    slice_t entries; /* PREPARE: the entries (checked by batch_iterate) */
    uint64_t number; /* RELOG_HEAD, RELOG_GEN: N */
} batch_txn_rec_t;
/* 1 and *out if payload is a transaction record (COMMIT advances *expected
 * like a batch of count entries), 0 if it is a batch, TDB_ERR_CORRUPTION if
 * it is a malformed transaction record. */
int batch_txn_record(slice_t payload, uint64_t *expected, batch_txn_rec_t *out);
/* Build in out the record of `kind` for xid (PREPARE: with data's entries),
 * after BATCH_WAL_SPARE bytes for the header; set it as data's (or another
 * batch's) wal_marker to log it in place of the entries. */
int batch_txn_marker(buf_t *out, int kind, slice_t xid, tdb_batch_t *data);
/* The WAL payload of a relog record of `kind` for log `number` into out. */
int batch_relog_marker(buf_t *out, int kind, uint64_t number);
/* Append one entry (type, family, key, value as stored in a memtable) to
 * out, in the entry encoding above. */
int batch_put_entry(buf_t *out, unsigned type, uint32_t cf_id, slice_t key, slice_t value);
/* The WAL payload of count entries (encoded by batch_put_entry in
 * entries) numbered from seq, into out; *expected advanced as by
 * batch_wal_payload. */
int batch_wal_record(buf_t *out, uint64_t *expected, uint64_t seq, uint32_t count, slice_t entries);
slice_t batch_rep(tdb_batch_t *b);
void batch_set_seq(tdb_batch_t *b, uint64_t seq);
uint32_t batch_count_raw(slice_t rep);
uint64_t batch_user_bytes(const tdb_batch_t *b);
/* Append an entry whose value is already encoded (TTL prefix included). */
int batch_add_raw(tdb_batch_t *b, tdb_cf_t *cf, unsigned type, slice_t key, slice_t value);
/* Families referenced by the batch (distinct). */
int batch_cfs(const tdb_batch_t *b, tdb_cf_t ***cfs);

#ifdef __cplusplus
}
#endif
#endif
