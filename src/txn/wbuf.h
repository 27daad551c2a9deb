/*
 * txn/wbuf: a transaction's private write buffer: an ordered map
 * (cf_id, user key) -> (type, value) with savepoint undo, and an internal
 * iterator per column family.
 *
 * Invariants
 *  - Entries live in a skip list (doubly linked at level 0) ordered by
 *    cf_id ascending, then user key bytewise. Nodes, keys and values are
 *    allocated from an arena and are never freed or moved until
 *    wbuf_clear/wbuf_destroy: a node removed by rollback stays linked and is
 *    only marked absent; a replaced value stays in the arena (rollback may
 *    bring it back).
 *  - Every wbuf_put appends one undo record (node, previous present/type/
 *    value). wbuf_mark() is the undo log length; wbuf_rollback_to(mark)
 *    pops records newest first, restoring each node's previous state, so
 *    the map is exactly as it was at the mark.
 *  - count = number of present nodes. bytes = bytes carved from the arena
 *    for nodes, keys and values (superseded values included; rollback does
 *    not give them back) + undo records in use + the fixed struct. It grows
 *    with every put and only wbuf_clear resets it.
 *  - Iterators hold a node pointer and copies of the current key/value
 *    slices; since nodes never go away before clear, a mutation (put,
 *    rollback) during iteration cannot make them dangle. They may or may
 *    not observe it. Destroy iterators before wbuf_clear/wbuf_destroy.
 *  - Not thread-safe: one thread at a time (the transaction's).
 */
#ifndef TDB_TXN_WBUF_H
#define TDB_TXN_WBUF_H

#include <stddef.h>
#include <stdint.h>

#include "util/ikey.h"
#include "util/iter.h"
#include "util/slice.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Sequence number carried by every key wbuf_iter produces: above any
 * committed sequence, so buffered writes shadow the database. */
#define WBUF_SEQ (SEQ_MAX - 1)

typedef struct wbuf wbuf_t;

/* An empty buffer; NULL on OOM. */
wbuf_t *wbuf_create(void);
/* Free everything (iterators must be destroyed first). */
void wbuf_destroy(wbuf_t *w);
/* Drop every entry and the undo log; frees the arena (marks reset to 0). */
void wbuf_clear(wbuf_t *w);

/* Set the entry of (cf_id, key): type KT_PUT, KT_PUT_TTL (value starts with
 * fixed64 expiry: TDB_ERR_INVALID_ARG if shorter than 8 bytes), KT_DELETE
 * or KT_SINGLE_DELETE (others: TDB_ERR_INVALID_ARG); replaces an existing
 * entry. Copies key and value. TDB_ERR_NOMEM (the buffer is unchanged). */
int wbuf_put(wbuf_t *w, uint32_t cf_id, slice_t key, unsigned type, slice_t value);
/* 1 and the entry if (cf_id, key) has one (value valid until
 * wbuf_clear/destroy), else 0. */
int wbuf_get(const wbuf_t *w, uint32_t cf_id, slice_t key, unsigned *type, slice_t *value);
/* Live entries. */
size_t wbuf_count(const wbuf_t *w);
/* Memory used (see invariants), for the transaction size limit. */
size_t wbuf_bytes(const wbuf_t *w);
/* Savepoint position (the undo log length). */
uint64_t wbuf_mark(const wbuf_t *w);
/* Restore exactly the state at mark: entries created after it disappear,
 * replaced ones come back. Marks taken after `mark` are invalidated (the
 * caller drops those savepoints: once new puts move the position past them
 * again they would name a different state). TDB_ERR_INVALID_ARG if mark is
 * past the current position. */
int wbuf_rollback_to(wbuf_t *w, uint64_t mark);
/* Visit live entries in (cf_id, key bytewise) order; stops early and
 * returns fn's value if it is non-zero, else 0. fn may put or roll back
 * (memory-safe; later entries may or may not reflect it) but must not
 * clear or destroy w. */
int wbuf_foreach(const wbuf_t *w, int (*fn)(void *ctx, uint32_t cf_id, slice_t key, unsigned type, slice_t value),
                 void *ctx);

/* Iterator over one family's live entries as internal keys
 * user_key || fixed64((WBUF_SEQ << 8) | type), values raw. Both directions
 * and seek (target: an internal key, compared with ikey_compare; a target
 * shorter than 8 bytes makes the iterator invalid with status
 * TDB_ERR_INVALID_ARG until the next positioning). Memory-safe while the
 * buffer is mutated (see invariants); holds no lock. On OOM returns
 * iter_empty(TDB_ERR_NOMEM). Destroy before wbuf_destroy/wbuf_clear. */
iter_t *wbuf_iter(wbuf_t *w, uint32_t cf_id);

#ifdef __cplusplus
}
#endif
#endif
