/*
 * txn/wbuf: a transaction's write buffer (invariants in wbuf.h).
 *
 * Skip list: single-threaded, max height WB_MAX_HEIGHT, branching 4. A node
 * is one arena allocation: the wb_node_t header, `height` forward links,
 * then the key bytes. Level 0 also has back links (`prev`, NULL for the
 * first node) so iterators step backwards in O(1). The head sentinel is
 * malloc'd once with every level and survives wbuf_clear. The arena is
 * created lazily by the first put after create/clear. Nodes are never
 * unlinked before wbuf_clear (a rollback only restores their state), so
 * the last node of each level (tail) changes only when a put links a node
 * at the end of that level; a put or get past the last node needs no
 * search (a transaction writing keys in order).
 */
#include "txn/wbuf.h"

#include <stdlib.h>
#include <string.h>

#include "memtable/arena.h"
#include "util/coding.h"
#include "util/error.h"

#define WB_MAX_HEIGHT 16
#define WB_BRANCHING 4
#define WB_ARENA_BLOCK (64u * 1024u)

typedef struct wb_node {
    const char *value;
    size_t vlen;
    size_t klen;
    uint32_t cf_id;
    uint8_t type;
    uint8_t present;
    uint8_t height;
    struct wb_node *prev;    /* level-0 back link; NULL for the first node */
    struct wb_node *next[];  /* `height` links, then klen key bytes */
} wb_node_t;

typedef struct wb_undo {
    wb_node_t *node;
    const char *value; /* previous state */
    size_t vlen;
    uint8_t type;
    uint8_t present;
} wb_undo_t;

struct wbuf {
    arena_t *arena; /* NULL while empty after create/clear */
    wb_node_t *head;
    wb_node_t *tail[WB_MAX_HEIGHT]; /* last node of each level, NULL: none */
    int height;     /* levels in use, 1..WB_MAX_HEIGHT */
    uint64_t rnd;
    wb_undo_t *undo;
    size_t nundo, capundo;
    size_t count;
    size_t arena_bytes; /* bytes carved from the arena */
};

/* The key bytes of a node. */
static inline const char *wb_key(const wb_node_t *n) { return (const char *)&n->next[n->height]; }

/* Three-way compare of node n with (cf_id, key). */
static inline int wb_cmp(const wb_node_t *n, uint32_t cf_id, slice_t key) {
    if (n->cf_id != cf_id) return n->cf_id < cf_id ? -1 : 1;
    return slice_compare(slice_make(wb_key(n), n->klen), key);
}

/* Create an empty buffer (arena made on the first put). */
wbuf_t *wbuf_create(void) {
    wbuf_t *w = (wbuf_t *)calloc(1, sizeof *w);
    if (!w) return NULL;
    w->head = (wb_node_t *)calloc(1, sizeof(wb_node_t) + WB_MAX_HEIGHT * sizeof(wb_node_t *));
    if (!w->head) {
        free(w);
        return NULL;
    }
    w->head->height = WB_MAX_HEIGHT;
    w->height = 1;
    w->rnd = 0x2545f4914f6cdd1dull;
    return w;
}

/* Drop all entries and the undo log. */
void wbuf_clear(wbuf_t *w) {
    arena_destroy(w->arena);
    w->arena = NULL;
    memset(w->head->next, 0, WB_MAX_HEIGHT * sizeof(wb_node_t *));
    memset(w->tail, 0, sizeof w->tail);
    w->height = 1;
    w->nundo = 0;
    w->count = 0;
    w->arena_bytes = 0;
}

/* Free everything. */
void wbuf_destroy(wbuf_t *w) {
    if (!w) return;
    arena_destroy(w->arena);
    free(w->undo);
    free(w->head);
    free(w);
}

/* Random height: 1 + geometric(1/WB_BRANCHING), capped (xorshift64). */
static int wb_random_height(wbuf_t *w) {
    int h = 1;
    while (h < WB_MAX_HEIGHT) {
        w->rnd ^= w->rnd << 13;
        w->rnd ^= w->rnd >> 7;
        w->rnd ^= w->rnd << 17;
        if ((w->rnd >> 32) % WB_BRANCHING != 0) break;
        h++;
    }
    return h;
}

/* First node >= (cf_id, key), or NULL; fills prevs[0..height) with the last
 * node < target per level (head included) when prevs is non-NULL. */
static wb_node_t *wb_find_ge(const wbuf_t *w, uint32_t cf_id, slice_t key, wb_node_t **prevs) {
    wb_node_t *x = w->head;
    for (int lvl = w->height - 1; lvl >= 0; lvl--) {
        wb_node_t *n;
        while ((n = x->next[lvl]) != NULL && wb_cmp(n, cf_id, key) < 0) x = n;
        if (prevs) prevs[lvl] = x;
    }
    return x->next[0];
}

/* Last node < (cf_id, key), or NULL. */
static wb_node_t *wb_find_lt(const wbuf_t *w, uint32_t cf_id, slice_t key) {
    wb_node_t *x = w->head;
    for (int lvl = w->height - 1; lvl >= 0; lvl--) {
        wb_node_t *n;
        while ((n = x->next[lvl]) != NULL && wb_cmp(n, cf_id, key) < 0) x = n;
    }
    return x == w->head ? NULL : x;
}

/* Last node, or NULL. */
static wb_node_t *wb_last(const wbuf_t *w) { return w->tail[0]; }

/* Is (cf_id, key) past every node? (A transaction writing keys in order
 * appends: no search.) */
static int wb_past_last(const wbuf_t *w, uint32_t cf_id, slice_t key) {
    return w->tail[0] && wb_cmp(w->tail[0], cf_id, key) < 0;
}

/* Carve n bytes from the arena, counting them. */
static void *wb_alloc(wbuf_t *w, size_t n) {
    void *p = arena_alloc(w->arena, n);
    if (p) w->arena_bytes += n ? (n + 7) & ~(size_t)7 : 8;
    return p;
}

/* Set (cf_id, key) to (type, value), logging the previous state. */
int wbuf_put(wbuf_t *w, uint32_t cf_id, slice_t key, unsigned type, slice_t value) {
    if (type != KT_PUT && type != KT_PUT_TTL && type != KT_DELETE && type != KT_SINGLE_DELETE)
        return tdb_err(TDB_ERR_INVALID_ARG, "write buffer: bad entry type %u", type);
    if (type == KT_PUT_TTL && value.size < 8)
        return tdb_err(TDB_ERR_INVALID_ARG, "write buffer: TTL value of %zu bytes has no expiry", value.size);
    if (!w->arena) {
        w->arena = arena_create(WB_ARENA_BLOCK);
        if (!w->arena) return tdb_err(TDB_ERR_NOMEM, "write buffer arena");
    }
    if (w->nundo == w->capundo) {
        size_t cap = w->capundo ? w->capundo * 2 : 64;
        wb_undo_t *u = (wb_undo_t *)realloc(w->undo, cap * sizeof *u);
        if (!u) return tdb_err(TDB_ERR_NOMEM, "write buffer undo log (%zu records)", cap);
        w->undo = u;
        w->capundo = cap;
    }
    const char *v = "";
    if (value.size) {
        char *p = (char *)wb_alloc(w, value.size);
        if (!p) return tdb_err(TDB_ERR_NOMEM, "write buffer value (%zu bytes)", value.size);
        memcpy(p, value.data, value.size);
        v = p;
    }
    wb_node_t *prevs[WB_MAX_HEIGHT], *n = NULL;
    if (wb_past_last(w, cf_id, key))
        for (int l = 0; l < w->height; l++) prevs[l] = w->tail[l] ? w->tail[l] : w->head;
    else
        n = wb_find_ge(w, cf_id, key, prevs);
    wb_undo_t *u = &w->undo[w->nundo];
    if (n && wb_cmp(n, cf_id, key) == 0) {
        u->node = n;
        u->value = n->value;
        u->vlen = n->vlen;
        u->type = n->type;
        u->present = n->present;
        if (!n->present) w->count++;
    } else {
        int h = wb_random_height(w);
        n = (wb_node_t *)wb_alloc(w, sizeof(wb_node_t) + (size_t)h * sizeof(wb_node_t *) + key.size);
        if (!n) return tdb_err(TDB_ERR_NOMEM, "write buffer node (%zu byte key)", key.size);
        n->klen = key.size;
        n->cf_id = cf_id;
        n->height = (uint8_t)h;
        if (key.size) memcpy((char *)wb_key(n), key.data, key.size);
        if (h > w->height) {
            for (int l = w->height; l < h; l++) prevs[l] = w->head;
            w->height = h;
        }
        for (int l = 0; l < h; l++) {
            n->next[l] = prevs[l]->next[l];
            prevs[l]->next[l] = n;
            if (!n->next[l]) w->tail[l] = n;
        }
        n->prev = prevs[0] == w->head ? NULL : prevs[0];
        if (n->next[0]) n->next[0]->prev = n;
        u->node = n;
        u->value = "";
        u->vlen = 0;
        u->type = KT_DELETE;
        u->present = 0;
        w->count++;
    }
    w->nundo++;
    n->value = v;
    n->vlen = value.size;
    n->type = (uint8_t)type;
    n->present = 1;
    return TDB_OK;
}

/* Point lookup of a live entry. */
int wbuf_get(const wbuf_t *w, uint32_t cf_id, slice_t key, unsigned *type, slice_t *value) {
    if (wb_past_last(w, cf_id, key)) return 0;
    const wb_node_t *n = wb_find_ge(w, cf_id, key, NULL);
    if (!n || !n->present || wb_cmp(n, cf_id, key) != 0) return 0;
    if (type) *type = n->type;
    if (value) *value = slice_make(n->value, n->vlen);
    return 1;
}

/* Live entries. */
size_t wbuf_count(const wbuf_t *w) { return w->count; }

/* Arena bytes + undo records + fixed structures. */
size_t wbuf_bytes(const wbuf_t *w) {
    return sizeof *w + sizeof(wb_node_t) + WB_MAX_HEIGHT * sizeof(wb_node_t *) + w->arena_bytes +
           w->nundo * sizeof(wb_undo_t);
}

/* The undo log position. */
uint64_t wbuf_mark(const wbuf_t *w) { return w->nundo; }

/* Pop undo records back to mark, restoring each node's previous state. */
int wbuf_rollback_to(wbuf_t *w, uint64_t mark) {
    if (mark > w->nundo)
        return tdb_err(TDB_ERR_INVALID_ARG, "write buffer: savepoint mark %llu past position %zu",
                       (unsigned long long)mark, w->nundo);
    while (w->nundo > mark) {
        const wb_undo_t *u = &w->undo[--w->nundo];
        wb_node_t *n = u->node;
        if (n->present && !u->present) w->count--;
        else if (!n->present && u->present) w->count++;
        n->value = u->value;
        n->vlen = u->vlen;
        n->type = u->type;
        n->present = u->present;
    }
    return TDB_OK;
}

/* In-order walk over present nodes. */
int wbuf_foreach(const wbuf_t *w, int (*fn)(void *ctx, uint32_t cf_id, slice_t key, unsigned type, slice_t value),
                 void *ctx) {
    for (const wb_node_t *n = w->head->next[0]; n; n = n->next[0]) {
        if (!n->present) continue;
        int r = fn(ctx, n->cf_id, slice_make(wb_key(n), n->klen), n->type, slice_make(n->value, n->vlen));
        if (r) return r;
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* Iterator                                                            */
/* ------------------------------------------------------------------ */

typedef struct wb_iter {
    iter_t base;
    wbuf_t *w;
    uint32_t cf_id;
    const wb_node_t *node; /* current; NULL = invalid */
    buf_t key;             /* internal key of node, copied at positioning */
    slice_t value;
    int status;
} wb_iter_t;

/* Position on n (NULL = invalid), copying its key and value slice. */
static void wbi_set(wb_iter_t *it, const wb_node_t *n) {
    it->node = NULL;
    it->status = TDB_OK;
    if (!n) return;
    buf_clear(&it->key);
    if (ikey_append(&it->key, slice_make(wb_key(n), n->klen), WBUF_SEQ, n->type) != TDB_OK) {
        it->status = TDB_ERR_NOMEM;
        return;
    }
    it->value = slice_make(n->value, n->vlen);
    it->node = n;
}

/* First present node of the family at or after n. */
static const wb_node_t *wbi_fwd(const wb_iter_t *it, const wb_node_t *n) {
    while (n && n->cf_id == it->cf_id && !n->present) n = n->next[0];
    return n && n->cf_id == it->cf_id ? n : NULL;
}

/* Last present node of the family at or before n. */
static const wb_node_t *wbi_bwd(const wb_iter_t *it, const wb_node_t *n) {
    while (n && n->cf_id == it->cf_id && !n->present) n = n->prev;
    return n && n->cf_id == it->cf_id ? n : NULL;
}

/* Valid while positioned on a node. */
static int wbi_valid(const iter_t *base) { return ((const wb_iter_t *)base)->node != NULL; }

/* First entry of the family. */
static void wbi_seek_to_first(iter_t *base) {
    wb_iter_t *it = (wb_iter_t *)base;
    wbi_set(it, wbi_fwd(it, wb_find_ge(it->w, it->cf_id, slice_make("", 0), NULL)));
}

/* Last entry of the family. */
static void wbi_seek_to_last(iter_t *base) {
    wb_iter_t *it = (wb_iter_t *)base;
    const wb_node_t *n =
        it->cf_id == UINT32_MAX ? wb_last(it->w) : wb_find_lt(it->w, it->cf_id + 1, slice_make("", 0));
    wbi_set(it, wbi_bwd(it, n));
}

/* First entry whose internal key >= target (ikey order). */
static void wbi_seek(iter_t *base, slice_t target) {
    wb_iter_t *it = (wb_iter_t *)base;
    if (!ikey_valid(target)) {
        wbi_set(it, NULL);
        it->status = TDB_ERR_INVALID_ARG;
        return;
    }
    slice_t user = ikey_user(target);
    const wb_node_t *n = wbi_fwd(it, wb_find_ge(it->w, it->cf_id, user, NULL));
    /* Same user key: the entry sorts before the target if its trailer is
     * larger (newer). */
    if (n && wb_cmp(n, it->cf_id, user) == 0 && ikey_pack(WBUF_SEQ, n->type) > ikey_trailer(target))
        n = wbi_fwd(it, n->next[0]);
    wbi_set(it, n);
}

/* Next entry of the family. */
static void wbi_next(iter_t *base) {
    wb_iter_t *it = (wb_iter_t *)base;
    if (it->node) wbi_set(it, wbi_fwd(it, it->node->next[0]));
}

/* Previous entry of the family. */
static void wbi_prev(iter_t *base) {
    wb_iter_t *it = (wb_iter_t *)base;
    if (it->node) wbi_set(it, wbi_bwd(it, it->node->prev));
}

/* Internal key copied at positioning. */
static slice_t wbi_key(const iter_t *base) { return buf_slice(&((const wb_iter_t *)base)->key); }

/* Value captured at positioning (arena memory: stays valid until clear). */
static slice_t wbi_value(const iter_t *base) { return ((const wb_iter_t *)base)->value; }

/* TDB_OK, or the error of the last positioning. */
static int wbi_status(const iter_t *base) { return ((const wb_iter_t *)base)->status; }

/* Free the iterator. */
static void wbi_destroy(iter_t *base) {
    wb_iter_t *it = (wb_iter_t *)base;
    buf_free(&it->key);
    free(it);
}

static const iter_ops_t g_wbi_ops = {
    wbi_valid, wbi_seek_to_first, wbi_seek_to_last, wbi_seek,   wbi_next,
    wbi_prev,  wbi_key,           wbi_value,        wbi_status, wbi_destroy,
    NULL, /* seek_prepare */
    NULL, /* seek_forward */
    NULL, /* next_user_key */
    NULL, /* seek_for_prev: seek and step back */
};

/* New unpositioned iterator over one family. */
iter_t *wbuf_iter(wbuf_t *w, uint32_t cf_id) {
    wb_iter_t *it = (wb_iter_t *)calloc(1, sizeof *it);
    if (!it) {
        tdb_err(TDB_ERR_NOMEM, "write buffer iterator");
        return iter_empty(TDB_ERR_NOMEM);
    }
    it->base.ops = &g_wbi_ops;
    it->w = w;
    it->cf_id = cf_id;
    it->value = slice_make("", 0);
    return &it->base;
}
