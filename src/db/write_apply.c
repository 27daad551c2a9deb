/*
 * db/write_apply: inserting a numbered batch into the memtables, for the
 * write leader, a direct writer and recovery.
 */
#include <stdlib.h>
#include <string.h>

#include "db/db_impl.h"

/* A batch of fewer than SMALL_BATCH_ENTRIES entries (db_impl.h) is
 * inserted in batch order through the memtable's serial hint (sequential
 * keys skip the skip-list descent): only the write leader and recovery
 * apply such batches, one at a time. A larger batch is decoded whole,
 * sorted by (family, key, newest first) and each family's run inserted
 * whole (memtable_add_sorted: lanes of climbing splices whose cache misses
 * overlap); its own writer
 * thread may insert it in parallel with the leader (db/write_group.c). */
typedef struct sort_item {
    memtable_item_t it;
    uint32_t cf_id;
} sort_item_t;

typedef struct apply_ctx {
    tdb_t *db;
    uint64_t wal_number; /* recovery: skip families whose log_number is newer */
    sort_item_t *v;      /* sorted apply: the decoded entries */
    uint32_t n;
    bool serial;         /* small batch: may use the memtable's serial hint */
    bool direct;         /* small batch of a direct writer: its thread's hint */
} apply_ctx_t;

/* A direct writer's own insert hint, valid for the memtable numbered
 * mem_id only (memtable_id): sequential keys of one thread skip the
 * skip-list descent as with the leader's serial hint. */
typedef struct thread_hint {
    uint64_t mem_id;
    memtable_hint_t hint;
} thread_hint_t;
static _Thread_local thread_hint_t tl_hint;

/* The family an entry goes to, or NULL to skip it (dropped, or recovery
 * of a log older than the family's flushed state). */
static tdb_cf_t *apply_cf(const apply_ctx_t *c, uint32_t cf_id) {
    tdb_cf_t *cf = cf_by_id(c->db, cf_id);
    if (!cf || atomic_load(&cf->dropped)) return NULL;                /* family dropped */
    if (c->wal_number && c->wal_number < cf->log_number) return NULL; /* already flushed */
    return cf;
}

/* Insert one batch entry into its family's active memtable. */
static int apply_entry(void *arg, uint64_t seq, const batch_entry_t *e) {
    const apply_ctx_t *c = (const apply_ctx_t *)arg;
    tdb_cf_t *cf = apply_cf(c, e->cf_id);
    if (!cf) return TDB_OK;
    memtable_t *m = cf->mem.mem;
    if (c->serial) return memtable_add_serial(m, seq, e->type, e->key, e->value);
    if (c->direct) {
        if (tl_hint.mem_id != memtable_id(m)) {
            memset(&tl_hint.hint, 0, sizeof tl_hint.hint); /* climb 0, like the serial hint */
            tl_hint.mem_id = memtable_id(m);
        }
        return memtable_add_hint(m, &tl_hint.hint, seq, e->type, e->key, e->value);
    }
    return memtable_add(m, seq, e->type, e->key, e->value);
}

/* Sorted apply, pass 1: collect the decoded entries. */
static int collect_entry(void *arg, uint64_t seq, const batch_entry_t *e) {
    apply_ctx_t *c = (apply_ctx_t *)arg;
    sort_item_t *v = &c->v[c->n++];
    v->it.seq = seq;
    v->it.type = e->type;
    v->it.key = e->key;
    v->it.value = e->value;
    v->cf_id = e->cf_id;
    return TDB_OK;
}

/* Internal-key order of two collected entries, family first. */
static int sort_item_cmp(const void *a, const void *b) {
    const sort_item_t *x = (const sort_item_t *)a, *y = (const sort_item_t *)b;
    if (x->cf_id != y->cf_id) return x->cf_id < y->cf_id ? -1 : 1;
    int r = slice_compare(x->it.key, y->it.key);
    if (r) return r;
    return x->it.seq > y->it.seq ? -1 : (x->it.seq < y->it.seq); /* newest first */
}

/* Insert a large batch in key order (see above). */
static int apply_sorted(apply_ctx_t *c, slice_t rep, uint32_t n) {
    /* One allocation: the entries to sort, then room for a family's run. */
    c->v = (sort_item_t *)malloc((size_t)n * (sizeof *c->v + sizeof(memtable_item_t)));
    if (!c->v) return batch_iterate(rep, apply_entry, c); /* no memory to sort: batch order */
    memtable_item_t *items = (memtable_item_t *)(c->v + n);
    c->n = 0;
    int rc = batch_iterate(rep, collect_entry, c); /* validates the whole batch first */
    if (rc == TDB_OK) qsort(c->v, c->n, sizeof *c->v, sort_item_cmp);
    /* Each family's run goes in as one sorted insert. */
    for (uint32_t i = 0; i < c->n && rc == TDB_OK;) {
        uint32_t j = i + 1;
        while (j < c->n && c->v[j].cf_id == c->v[i].cf_id) j++;
        tdb_cf_t *cf = apply_cf(c, c->v[i].cf_id);
        if (cf) {
            for (uint32_t k = i; k < j; k++) items[k - i] = c->v[k].it;
            rc = memtable_add_sorted(cf->mem.mem, items, j - i);
        }
        i = j;
    }
    free(c->v);
    return rc;
}

/* Apply a batch; `direct`: by a direct writer, concurrently with others. */
static int apply_batch(tdb_t *db, slice_t rep, uint64_t wal_number, bool direct) {
    apply_ctx_t c = {db, wal_number, NULL, 0, false, false};
    uint32_t n = batch_count_raw(rep);
    /* Only small batches of the leader alone (or of recovery) use the
     * memtable's serial hint. */
    c.serial = !direct && n < SMALL_BATCH_ENTRIES;
    c.direct = direct;
    /* An entry takes at least 4 bytes: a larger count is corrupt, and
     * batch_iterate reports it without allocating for it. */
    if (n < SMALL_BATCH_ENTRIES || n > rep.size / 4) return batch_iterate(rep, apply_entry, &c);
    return apply_sorted(&c, rep, n);
}

int db_apply_batch(tdb_t *db, slice_t rep, uint64_t wal_number) { return apply_batch(db, rep, wal_number, false); }

int db_apply_batch_direct(tdb_t *db, slice_t rep) { return apply_batch(db, rep, 0, true); }
