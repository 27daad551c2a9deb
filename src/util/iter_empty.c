/*
 * util/iter_empty: an iterator that is always invalid and reports a fixed
 * status.
 *
 * Invariants
 *  - iter_empty() never fails and never returns NULL: iterators for the
 *    codes TDB_OK..-(EMPTY_STATIC-1) are immutable static objects (no
 *    allocation at all); other codes are heap-allocated, falling back to the
 *    static TDB_ERR_NOMEM iterator if that allocation fails.
 *  - destroy() frees only heap-allocated instances; static ones are shared
 *    and never written after initialisation, so any thread may use them.
 */
#include <stdint.h>
#include <stdlib.h>

#include "util/error.h"
#include "util/iter.h"

typedef struct empty_iter {
    iter_t base;
    int status;
} empty_iter_t;

#define EMPTY_STATIC 32 /* static instances for codes 0, -1, ..., -31 */

/* Always invalid. */
static int empty_valid(const iter_t *it) { (void)it; return 0; }
/* Positioning does nothing. */
static void empty_noop(iter_t *it) { (void)it; }
/* Seeking does nothing. */
static void empty_seek(iter_t *it, slice_t t) { (void)it; (void)t; }
/* Never called on a valid iterator; returns an empty slice defensively. */
static slice_t empty_slice(const iter_t *it) { (void)it; return slice_make("", 0); }
/* The status this iterator was built with. */
static int empty_status(const iter_t *it) { return ((const empty_iter_t *)it)->status; }

static empty_iter_t g_static[EMPTY_STATIC];

/* Free heap instances; static instances are left alone. */
static void empty_destroy(iter_t *it) {
    uintptr_t p = (uintptr_t)it, lo = (uintptr_t)g_static;
    if (p >= lo && p < lo + sizeof g_static) return;
    free(it);
}

static const iter_ops_t g_empty_ops = {
    empty_valid, empty_noop, empty_noop, empty_seek, empty_noop,
    empty_noop,  empty_slice, empty_slice, empty_status, empty_destroy,
    NULL, /* seek_prepare */
    NULL, /* seek_forward */
    NULL, /* next_user_key */
    NULL, /* seek_for_prev: seek and step back */
};

static empty_iter_t g_static[EMPTY_STATIC] = {
#define E(i) {{&g_empty_ops}, -(i)}
    E(0),  E(1),  E(2),  E(3),  E(4),  E(5),  E(6),  E(7),  E(8),  E(9),  E(10),
    E(11), E(12), E(13), E(14), E(15), E(16), E(17), E(18), E(19), E(20), E(21),
    E(22), E(23), E(24), E(25), E(26), E(27), E(28), E(29), E(30), E(31),
#undef E
};

/* Return an always-invalid iterator whose status() is `status`. */
iter_t *iter_empty(int status) {
    if (status <= 0 && status > -EMPTY_STATIC) return &g_static[-status].base;
    empty_iter_t *e = (empty_iter_t *)malloc(sizeof *e);
    if (!e) return &g_static[-TDB_ERR_NOMEM].base;
    e->base.ops = &g_empty_ops;
    e->status = status;
    return &e->base;
}
