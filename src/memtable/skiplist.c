/*
 * memtable/skiplist: lock-free insert, lock-free reads (see skiplist.h for
 * the invariants, node layout and memory ordering).
 */
#include "memtable/skiplist.h"

#include <stdatomic.h>
#include <stdbool.h>

#include "util/coding.h"
#include "util/error.h"
#include "util/ikey.h"
#include "util/prefetch.h"

typedef _Atomic(char *) link_t;

struct skiplist {
    arena_t *arena;
    char *head;              /* entry pointer of the head node (no entry) */
    _Atomic int max_height;  /* highest level in use; only grows */
};

/* The level-i link of the node whose entry is e. */
static inline link_t *sl_link(const char *e, int i) { return ((link_t *)(uintptr_t)e) - 3 - i; }

/* The node's predecessor hint (see skiplist.h, "Predecessor hints"). */
static inline link_t *sl_prev_slot(const char *e) { return ((link_t *)(uintptr_t)e) - 2; }

/* The node's run-end slot (see skiplist_run_end). */
static inline link_t *sl_run_slot(const char *e) { return ((link_t *)(uintptr_t)e) - 1; }

/* Follow a link (acquire: see everything written before publication). */
static inline char *sl_next(const char *e, int i) {
    return atomic_load_explicit(sl_link(e, i), memory_order_acquire);
}

/* Decode a varint32 we encoded ourselves (trusted, so no bounds). */
static inline const char *sl_varint(const char *p, uint32_t *v) {
    uint32_t r = 0;
    for (int shift = 0;; shift += 7) {
        uint32_t b = (unsigned char)*p++;
        r |= (b & 0x7f) << shift;
        if (!(b & 0x80)) break;
    }
    *v = r;
    return p;
}

/* Decode the internal key of an entry. */
slice_t skiplist_entry_key(const char *e, const char **rest) {
    uint32_t klen;
    const char *p = sl_varint(e, &klen);
    if (rest) *rest = p + klen;
    return slice_make(p, klen);
}

/* Decode the varint32 length-prefixed value at p. */
slice_t skiplist_entry_value(const char *p) {
    uint32_t vlen;
    p = sl_varint(p, &vlen);
    return slice_make(p, vlen);
}

/* Compare an entry's internal key with the target (user, trailer). */
static inline int sl_cmp(const char *e, slice_t user, uint64_t trailer) {
    slice_t k = skiplist_entry_key(e, NULL);
    int r = slice_compare(ikey_user(k), user);
    if (r) return r;
    uint64_t t = ikey_trailer(k);
    return t > trailer ? -1 : (t < trailer);
}

/* Random height: 1 + geometric(1/BRANCHING), capped; per-thread xorshift. */
static int sl_random_height(void) {
    static _Thread_local uint64_t rng;
    if (TDB_UNLIKELY(rng == 0)) {
        uint64_t z = (uint64_t)(uintptr_t)&rng + 0x9e3779b97f4a7c15ull;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        rng = (z ^ (z >> 31)) | 1;
    }
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    uint64_t r = rng; /* log2(BRANCHING) fresh bits per level */
    int h = 1;
    while (h < SKIPLIST_MAX_HEIGHT && (r % SKIPLIST_BRANCHING) == 0) {
        h++;
        r /= SKIPLIST_BRANCHING;
    }
    return h;
}

/* Carve a node of the given height from the arena; returns its entry. */
static char *sl_new_node(arena_t *a, int height, size_t entry_size) {
    size_t links = sizeof(link_t) * ((size_t)height + 2); /* + the hint and run-end slots */
    if (entry_size > SIZE_MAX - links) return NULL;
    char *mem = (char *)arena_alloc(a, links + entry_size);
    if (!mem) return NULL;
    char *e = mem + links;
    for (int i = 0; i < height; i++) atomic_init(sl_link(e, i), NULL);
    atomic_init(sl_prev_slot(e), NULL);
    atomic_init(sl_run_slot(e), e);
    return e;
}

/* Create an empty list whose head has every level. */
skiplist_t *skiplist_create(arena_t *arena) {
    skiplist_t *s = (skiplist_t *)arena_alloc(arena, sizeof *s);
    if (!s) return NULL;
    s->arena = arena;
    s->head = sl_new_node(arena, SKIPLIST_MAX_HEIGHT, 0);
    if (!s->head) return NULL;
    atomic_init(&s->max_height, 1);
    return s;
}

/* Allocate a node with room for the entry; the caller fills it in. */
char *skiplist_alloc(skiplist_t *s, size_t entry_size, int *height) {
    int h = sl_random_height();
    char *e = sl_new_node(s->arena, h, entry_size);
    if (e) *height = h;
    return e;
}

/* Starting at `from` (< target), walk level i to the last node < target;
 * *prev gets it and *next its successor (>= target or NULL). `known_ge`
 * is a node already known to be >= target (or NULL): not compared again. */
static void sl_find_level(const char *from, int i, slice_t user, uint64_t trailer,
                          const char *known_ge, char **prev, char **next) {
    const char *x = from;
    for (;;) {
        char *nx = sl_next(x, i);
        /* The walk one level down starts at x's successor there: fetch it
         * while nx is compared (a miss in parallel, not in series). */
        if (i > 0) __builtin_prefetch(atomic_load_explicit(sl_link(x, i - 1), memory_order_relaxed));
        if (nx && nx != known_ge && sl_cmp(nx, user, trailer) < 0) {
            x = nx;
        } else {
            *prev = (char *)(uintptr_t)x;
            *next = nx;
            return;
        }
    }
}

/* Re-find levels [0, level) of the splice top-down; levels >= level (and
 * prev[level], next[level]) already bracket the target. */
static void sl_recompute(skiplist_splice_t *sp, int level, slice_t user, uint64_t trailer) {
    for (int i = level - 1; i >= 0; i--)
        sl_find_level(sp->prev[i + 1], i, user, trailer, sp->next[i + 1], &sp->prev[i], &sp->next[i]);
}

/* Prepare an insert through a splice: raise max_height to the node's
 * height, then check the splice from level 0 up to the first level that
 * still brackets the key tightly (prev < key <= next, prev's link is next).
 * Returns the number of levels below it that must be re-found (0: the
 * splice brackets the key on every level); prev/next at that level are the
 * start of the descent. */
static int sl_prepare(skiplist_t *s, int height, skiplist_splice_t *sp, slice_t user, uint64_t trailer) {
    int top = atomic_load_explicit(&s->max_height, memory_order_relaxed);
    while (height > top) {
        if (atomic_compare_exchange_weak_explicit(&s->max_height, &top, height,
                                                  memory_order_relaxed, memory_order_relaxed)) {
            top = height;
        }
    }
    int recompute = 0;
    if (sp->list != s || sp->height != top) { /* unused, other list, or the list grew */
        sp->list = s;
        sp->height = top;
        sp->prev[top] = s->head;
        sp->next[top] = NULL;
        return top;
    }
    while (recompute < top) {
        char *p = sp->prev[recompute], *n = sp->next[recompute];
        if (sl_next(p, recompute) != n) {
            recompute++; /* not tight: inserts landed in between */
        } else if (p != s->head && sl_cmp(p, user, trailer) >= 0) { /* key before */
            if (!sp->climb) recompute = top;
            while (recompute < top && sp->prev[recompute] == p) recompute++;
        } else if (n && sl_cmp(n, user, trailer) < 0) { /* key after */
            if (!sp->climb) recompute = top;
            while (recompute < top && sp->next[recompute] == n) recompute++;
        } else {
            break; /* this level brackets the key */
        }
    }
    return recompute;
}

/* CAS a node in bottom-up between the splice's prev and next on each of its
 * levels, re-finding a level whose predecessor gained a successor. */
static void sl_link_node(char *e, int height, skiplist_splice_t *sp, slice_t user, uint64_t trailer) {
    for (int i = 0; i < height; i++) {
        for (;;) {
            if (i == 0) {
                /* Joining the front of a run of its user key (a newer
                 * version): inherit the run's end, published with the node. */
                char *succ = sp->next[0];
                char *end = e;
                if (succ && slice_equal(ikey_user(skiplist_entry_key(succ, NULL)), user))
                    end = atomic_load_explicit(sl_run_slot(succ), memory_order_relaxed);
                atomic_store_explicit(sl_run_slot(e), end, memory_order_relaxed);
                atomic_store_explicit(sl_prev_slot(e), sp->prev[0], memory_order_relaxed);
            }
            atomic_store_explicit(sl_link(e, i), sp->next[i], memory_order_relaxed);
            char *expected = sp->next[i];
            if (atomic_compare_exchange_strong_explicit(sl_link(sp->prev[i], i), &expected, e,
                                                        memory_order_release,
                                                        memory_order_relaxed)) {
                /* e is its successor's predecessor now (release: a reader
                 * of the hint sees e's contents). */
                if (i == 0 && expected) atomic_store_explicit(sl_prev_slot(expected), e, memory_order_release);
                break;
            }
            /* Someone linked a node after prev[i]: re-find from there. */
            sl_find_level(sp->prev[i], i, user, trailer, NULL, &sp->prev[i], &sp->next[i]);
        }
    }
    /* The new node is the predecessor of its successor on its levels: the
     * splice stays tight for a following key close above this one. */
    for (int i = 0; i < height; i++) sp->prev[i] = e;
}

/* Link a node using (and updating) a splice: the splice is checked from
 * level 0 up to the first level that still brackets the key tightly
 * (prev < key <= next, prev's link is next); only the levels below are
 * re-found. Then the node is CAS'd in bottom-up. */
void skiplist_insert_splice(skiplist_t *s, char *e, int height, skiplist_splice_t *sp) {
    slice_t key = skiplist_entry_key(e, NULL);
    slice_t user = ikey_user(key);
    uint64_t trailer = ikey_trailer(key);
    int recompute = sl_prepare(s, height, sp, user, trailer);
    if (recompute > 0) sl_recompute(sp, recompute, user, trailer);
    sl_link_node(e, height, sp, user, trailer);
}

/* Link e just before succ through succ's predecessor hint: a level-0 walk
 * from the hint, usually one link long, instead of a descent. */
bool skiplist_insert_before(skiplist_t *s, char *e, int height, const char *succ) {
    if (height != 1) return false; /* upper levels need a descent */
    const char *p = atomic_load_explicit(sl_prev_slot(succ), memory_order_acquire);
    if (!p) return false;
    slice_t key = skiplist_entry_key(e, NULL);
    slice_t user = ikey_user(key);
    uint64_t trailer = ikey_trailer(key);
    /* p < succ always; it is < e too unless it is a newer version of e's
     * key linked since (a concurrent writer): then descend. */
    if (p != s->head && sl_cmp(p, user, trailer) >= 0) return false;
    skiplist_splice_t sp;
    sl_find_level(p, 0, user, trailer, succ, &sp.prev[0], &sp.next[0]);
    sl_link_node(e, 1, &sp, user, trailer);
    return true;
}

/* One lane of skiplist_insert_sorted: a run of ascending entries inserted
 * through its own splice, one node visit per step. */
typedef struct sl_lane {
    char *const *e;
    const int *h;
    size_t i, n;        /* next entry of the run, run length */
    skiplist_splice_t sp;
    slice_t user;       /* key of entry i, while it is being placed */
    uint64_t trailer;
    int level;          /* level being walked */
    char *x, *nx;       /* x < key on `level`; nx = its successor there */
    const char *known_ge;
} sl_lane_t;

/* Start placing the lane's next entry: prepare its splice and either link
 * it at once (the splice still brackets it) or set up the descent with the
 * first successor prefetched. Returns 0 when the run is done. */
static int sl_lane_start(skiplist_t *s, sl_lane_t *l) {
    while (l->i < l->n) {
        slice_t key = skiplist_entry_key(l->e[l->i], NULL);
        l->user = ikey_user(key);
        l->trailer = ikey_trailer(key);
        int r = sl_prepare(s, l->h[l->i], &l->sp, l->user, l->trailer);
        if (r == 0) {
            sl_link_node(l->e[l->i], l->h[l->i], &l->sp, l->user, l->trailer);
            l->i++;
            continue;
        }
        l->level = r - 1;
        l->x = l->sp.prev[r];
        l->known_ge = l->sp.next[r];
        l->nx = sl_next(l->x, l->level);
        __builtin_prefetch(l->nx);
        return 1;
    }
    return 0;
}

/* One step of a lane's descent: compare the (prefetched) successor, then
 * move right or down and prefetch the node the next step compares; link
 * the entry when level 0 is placed. Returns 0 when the run is done. */
static int sl_lane_step(skiplist_t *s, sl_lane_t *l) {
    if (l->nx && l->nx != l->known_ge && sl_cmp(l->nx, l->user, l->trailer) < 0) {
        l->x = l->nx;
    } else {
        l->sp.prev[l->level] = l->x;
        l->sp.next[l->level] = l->nx;
        l->known_ge = l->nx;
        if (--l->level < 0) {
            sl_link_node(l->e[l->i], l->h[l->i], &l->sp, l->user, l->trailer);
            l->i++;
            return sl_lane_start(s, l);
        }
    }
    l->nx = sl_next(l->x, l->level);
    __builtin_prefetch(l->nx);
    return 1;
}

void skiplist_insert_sorted(skiplist_t *s, char *const *entries, const int *heights, size_t n) {
    sl_lane_t lanes[SKIPLIST_LANES];
    size_t nl = n / SKIPLIST_LANE_MIN;
    if (nl > SKIPLIST_LANES) nl = SKIPLIST_LANES;
    if (nl < 1) nl = 1;
    size_t per = n / nl, at = 0;
    int live = 0;
    for (size_t k = 0; k < nl; k++) {
        sl_lane_t *l = &lanes[k];
        l->e = entries + at;
        l->h = heights + at;
        l->n = k + 1 == nl ? n - at : per;
        l->i = 0;
        at += l->n;
        l->sp.list = NULL;
        l->sp.climb = 1;
        if (sl_lane_start(s, l)) lanes[live++] = *l;
    }
    /* Round-robin: each step's node was prefetched a round earlier, so the
     * lanes' cache misses overlap instead of following one another. */
    while (live > 0) {
        for (int k = 0; k < live;) {
            if (sl_lane_step(s, &lanes[k])) {
                k++;
            } else {
                lanes[k] = lanes[--live];
            }
        }
    }
}

/* Link a node: a full descent (a fresh splice), then CAS it in. */
void skiplist_insert(skiplist_t *s, char *e, int height) {
    skiplist_splice_t sp;
    sp.list = NULL;
    sp.climb = 0;
    skiplist_insert_splice(s, e, height, &sp);
}

/* Smallest entry. */
const char *skiplist_first(const skiplist_t *s) { return sl_next(s->head, 0); }

/* Next entry at level 0. */
const char *skiplist_next(const char *e) { return sl_next(e, 0); }

/* Largest entry: run right along each level, then down. */
const char *skiplist_last(const skiplist_t *s) {
    const char *x = s->head;
    int i = atomic_load_explicit(&((skiplist_t *)(uintptr_t)s)->max_height, memory_order_relaxed) - 1;
    for (;;) {
        char *nx = sl_next(x, i);
        if (nx) {
            x = nx;
        } else if (i == 0) {
            return x == s->head ? NULL : x;
        } else {
            i--;
        }
    }
}

/* Descend to the last node < target; returns it (head if none). */
static const char *sl_descend(const skiplist_t *s, slice_t user, uint64_t trailer, char **succ) {
    const char *x = s->head;
    int i = atomic_load_explicit(&((skiplist_t *)(uintptr_t)s)->max_height, memory_order_relaxed) - 1;
    char *last_cmp = NULL; /* a node known to be >= target: skip re-comparing */
    for (;;) {
        char *nx = sl_next(x, i);
        if (nx && nx != last_cmp && sl_cmp(nx, user, trailer) < 0) {
            x = nx;
        } else {
            last_cmp = nx;
            if (i == 0) {
                if (succ) *succ = nx;
                return x;
            }
            i--;
        }
    }
}

/* Prefetch the lines from the node's level-0 link to the entry's
 * entry_bytes-th byte (see skiplist.h). */
void skiplist_prefetch(const char *entry, size_t entry_bytes) {
    if (entry_bytes > TDB_PREFETCH_ENTRY_MAX) entry_bytes = TDB_PREFETCH_ENTRY_MAX;
    tdb_prefetch_range(sl_link(entry, 0), entry + (entry_bytes ? entry_bytes : 1)); /* the links precede the entry */
}

/* A node of entry's user key at or after it (see skiplist.h). */
const char *skiplist_run_end(const char *entry) {
    return atomic_load_explicit(sl_run_slot(entry), memory_order_relaxed);
}

/* First entry >= target. */
const char *skiplist_seek(const skiplist_t *s, slice_t user, uint64_t trailer) {
    char *succ;
    sl_descend(s, user, trailer, &succ);
    return succ;
}

/* Last entry < e: a level-0 walk from e's predecessor hint. */
const char *skiplist_prev(const skiplist_t *s, const char *e) {
    const char *p = atomic_load_explicit(sl_prev_slot(e), memory_order_acquire);
    slice_t key = skiplist_entry_key(e, NULL);
    if (!p) return skiplist_seek_before(s, ikey_user(key), ikey_trailer(key)); /* not linked */
    char *prev, *next;
    sl_find_level(p, 0, ikey_user(key), ikey_trailer(key), e, &prev, &next);
    return prev == s->head ? NULL : prev;
}

/* Last entry < target. */
const char *skiplist_seek_before(const skiplist_t *s, slice_t user, uint64_t trailer) {
    const char *x = sl_descend(s, user, trailer, NULL);
    return x == s->head ? NULL : x;
}

/* Nodes on a level that make a count worth scaling up. The first level
 * (from the top) to reach it is taken, which favours levels that happen to
 * hold more than their share: at 16 a 10,000-entry range was sometimes read
 * as 20,000 (16+ nodes where 10 were expected); at 64 the level above
 * expects at least 16 and the estimate stays within about 30%. */
#define SL_APPROX_MIN 64

/* One stretch of a level walked by skiplist_approx_count: from `at` (not
 * counted) to `end` (counted), or, for the last stretch (end NULL), over
 * every node < hi. */
typedef struct sl_stretch {
    const char *at, *end;
} sl_stretch_t;

/* Approximate entries in [lo, hi): from the top level down, count the
 * range's nodes on each level until one holds at least SL_APPROX_MIN of
 * them (or level 0 is reached); a level-i node stands for about
 * BRANCHING^i entries. Touches O(SL_APPROX_MIN * BRANCHING + height)
 * nodes, whatever the range's size.
 *
 * The nodes a level has in the range (fewer than SL_APPROX_MIN, or the
 * count would have stopped there) are kept: they are nodes of the level
 * below too and cut its range into stretches that end at a known node, so
 * the stretches are walked side by side, one link per stretch per round,
 * each next node prefetched a round ahead. The range's nodes are cold on
 * the low levels (a descent seldom passes them); walked one after another
 * every node is a cache miss in series, side by side the misses overlap.
 * Only the last stretch compares keys with hi, and the first with lo until
 * it passes it (a node < lo may have been linked after x since x was
 * found); the others stop on reaching their end node, which is linked on
 * this level already (linking is bottom-up), so a concurrent insert cannot
 * make them miss it. The count is thus of nodes in [lo, hi) only, and a
 * later count sees every node an earlier one saw. */
uint64_t skiplist_approx_count(const skiplist_t *s, const slice_t *lo, const slice_t *hi) {
    const uint64_t trailer = ikey_pack(SEQ_MAX, KT_SEEK); /* first entry of a user key */
    const char *x = s->head; /* last node < lo on the current level */
    const char *in[SL_APPROX_MIN]; /* the range's nodes on the level above, in order */
    int nin = 0;
    sl_stretch_t st[SL_APPROX_MIN + 1];
    unsigned char seg[SL_APPROX_MIN]; /* stretch of each node found on this level */
    const char *found[SL_APPROX_MIN];
    int i = atomic_load_explicit(&((skiplist_t *)(uintptr_t)s)->max_height, memory_order_relaxed) - 1;
    for (;; i--) {
        if (lo) {
            char *prev, *next;
            sl_find_level(x, i, *lo, trailer, NULL, &prev, &next);
            x = prev;
        }
        int ns = nin + 1, live = ns, nfound = 0;
        unsigned char act[SL_APPROX_MIN + 1]; /* stretches not done, any order */
        for (int k = 0; k < ns; k++) {
            st[k].at = k == 0 ? x : in[k - 1];
            st[k].end = k < nin ? in[k] : NULL;
            act[k] = (unsigned char)k;
        }
        uint64_t n = 0;
        int below_lo = lo != NULL; /* stretch 0 may meet nodes < lo first */
        while (live > 0) {
            for (int a = 0; a < live;) {
                int k = act[a];
                sl_stretch_t *t = &st[k];
                const char *y = sl_next(t->at, i);
                if (k == 0 && below_lo && y && y != t->end && sl_cmp(y, *lo, trailer) < 0) {
                    t->at = y; /* linked after x since it was found: still < lo */
                    continue;
                }
                if (k == 0) below_lo = 0;
                int done = !y || (!t->end && hi && sl_cmp(y, *hi, trailer) >= 0); /* end of list or range */
                if (!done) {
                    if (nfound < SL_APPROX_MIN) {
                        seg[nfound] = (unsigned char)k;
                        found[nfound++] = y;
                    }
                    n++;
                    done = y == t->end;
                }
                if (done) {
                    act[a] = act[--live];
                    continue;
                }
                t->at = y;
                __builtin_prefetch(sl_link(y, i)); /* read next round */
                if (!t->end) __builtin_prefetch(y); /* its key is compared too */
                a++;
            }
        }
        if (n >= SL_APPROX_MIN || i == 0) {
            uint64_t scale = 1;
            for (int k = 0; k < i; k++) scale *= SKIPLIST_BRANCHING;
            return n * scale;
        }
        /* The level's nodes in list order: stretch by stretch, each
         * stretch's in the order walked (a counting sort by stretch). */
        int pos[SL_APPROX_MIN + 2] = {0};
        for (int f = 0; f < nfound; f++) pos[seg[f] + 1]++;
        for (int k = 0; k < ns; k++) pos[k + 1] += pos[k];
        for (int f = 0; f < nfound; f++) in[pos[seg[f]]++] = found[f];
        nin = nfound;
    }
}
