/*
 * version/compaction: choosing what to compact, and writing merged data
 * (flushes and compactions) into new tables.
 *
 * Level targets (compaction_level_targets). Level 1 has no size target (it
 * is governed by its file count). With dynamic_level_bytes (the db's
 * setting, modelled on RocksDB's level_compaction_dynamic_level_bytes):
 *  - the bottom level is TDB_MAX_LEVELS-1 and its target is the actual size
 *    S of the largest level >= 2 (the bottom itself once the tree settled);
 *  - each level above has a target ratio times smaller:
 *    target(L) = S / ratio^(bottom-L);
 *  - levels whose target would be <= base_level_bytes / ratio stay empty;
 *    the shallowest level above that cut-off is the "base" level, the one
 *    level 1 compacts into (with S == 0 the base is the bottom itself). If
 *    data still sits above it (legacy shapes, shrinking trees), the base is
 *    the first non-empty level instead, so level 1 never jumps over data;
 *  - targets of levels base..bottom-1 are at least base_level_bytes (no
 *    "hourglass" where level 1 dwarfs the base and starves).
 *   So about 90% of the data sits in the bottom level, the other levels
 *   hold S/ratio, S/ratio^2, ..., and the tree has only as many levels as
 *   S needs; each byte is rewritten about ratio+1 times per level it passes.
 * Without it (static, the zero-initialised default): base = 2 and
 * target(L) = base_level_bytes * ratio^(L-2). base_level_bytes 0 disables
 * size-triggered compaction of levels >= 2 in both modes.
 *
 * Scores (compaction_pick, most urgent first). Each is "how far past its
 * trigger", so they compare directly (1.0 = exactly at trigger):
 *  - level 1: runs / its trigger, l1_file_count_trigger or, while
 *    batching (below), twice that, or when idle (below) at most
 *    l1_idle_trigger (0 while a level-1 compaction runs: at most one at a
 *    time). A run is about what one flush wrote (version_l1_runs): a
 *    flush cut at key runs (flush_run_cuts) writes up to FLUSH_MAX_RUNS
 *    key-disjoint files, and where its writers took turns their sequence
 *    ranges interleave: they count once, as counting files would make
 *    level 1 due sooner than its trigger says. Every other flush writes
 *    one file, whose sequence range meets no other level-1 file's, so
 *    without cuts runs == files;
 *  - level L in base..TDB_MAX_LEVELS-2: bytes not already being compacted /
 *    target(L) (the bottom level never pushes down by size);
 *  - the highest score >= 1 that can run wins (ties: the shallower level);
 *    failing that, the file with the highest tombstone share >=
 *    tombstone_density_trigger (in (0,1], else disabled) among files with
 *    >= tombstone_density_min_entries entries, at levels
 *    2..TDB_MAX_LEVELS-2, goes into the next level. Level 1 is left to its
 *    file count (at most l1_file_count_trigger - 1 files linger): under
 *    steady deletes every flush is all tombstones, and merging each into
 *    the base level on its own multiplied compaction writes.
 *
 * Level-1 batching (compaction_l1_trigger). A level-1 compaction rewrites
 * every base-level byte its range overlaps, and with random keys that is
 * the whole base level, so its cost per byte it moves down is 1 + base
 * bytes overlapped / level-1 bytes. While writes_pending and that overlap
 * is larger than level 1 itself, level 1 waits for 2 x
 * l1_file_count_trigger files: twice the bytes per base rewrite. Once the
 * memtables are empty (writes stopped and flushed) the plain trigger
 * applies again, and if the whole database took no write since its last
 * memtable switch (db/config.c passes l1_idle_trigger only then), level 1
 * is idle and due at l1_idle_trigger files (the db's l1_idle_file_trigger,
 * 2 by default; 0: the plain trigger), or at l1_file_count_trigger if that
 * is smaller: by default an idle tree settles with at most one level-1
 * file for readers. A family whose writes paused while others continue (a
 * bulk load going table by table) is not idle: merging its level 1 at
 * every pause added compactions to a TPC-C schema build (38 against 25;
 * docs/design/version.md). Level-1 files
 * overlap each other, so every seek and scan merges each of them with the
 * base level; after a burst of random writes left two or three of them,
 * range reads paid up to twice the work of a settled tree (tdb_bench
 * scan100 0.66x LevelDB's, whose reads trigger compactions that flatten
 * its tree). The cost is at most one extra base-level rewrite per idle
 * period, done when writes have stopped. The db also counts writes as
 * stopped while a caller waits in tdb_wait_idle, whose promise is that
 * idle shape. Back-pressure starts far above either (db/write.c: level 1
 * at 4x the trigger).
 *
 * Shapes
 *  - A level-1 compaction takes every level-1 file (all or none: taking a
 *    newer file without the older ones it overlaps would let an older
 *    version shadow a newer one) plus the base-level files overlapping
 *    their range, into the base level; or, as a trivial move, only the
 *    files that overlap nothing (below).
 *  - A level-L (>= 2) compaction takes one file plus its overlaps in L+1,
 *    into L+1: the pickable file with the fewest overlapping L+1 bytes per
 *    byte of its own (RocksDB's kMinOverlappingRatio), ties in key order.
 *  - Manual (compaction_pick_level): every file of the level plus overlaps,
 *    into the next level (level 1: the base level); for the last level, a
 *    rewrite in place (bottommost).
 *
 * Trivial moves (allow_trivial_move). A picked compaction with no input in
 * the output level, whose level inputs are pairwise disjoint (always true
 * for levels >= 2; for level 1 every file must be disjoint from the others),
 * that moves down (level != output_level) and either does not land in the
 * bottommost position or has no deletions, point or range (nothing a
 * rewrite would drop; shadowed versions and expired TTL values simply
 * stay), is marked
 * trivial_move, and its output level sinks past every deeper level where
 * no file overlaps its range and no running compaction writes into that
 * range (a sequential load goes straight to the bottom instead of waiting
 * in the base level for the next level-1 compaction to rewrite it).
 * compaction_move records "delete at level, add the same file_meta at
 * output_level" and writes nothing. The file stays referenced
 * throughout, so its obsolete callback does not fire.
 * Level-1 files free to move on their own (no tombstone, no overlap with
 * another level-1 file or with a base-level file: writers filling separate
 * key ranges in order, their flushes cut at key runs) are a level-1
 * compaction of their own, picked before the rest: they move into the gaps
 * of the base level as they are, while the rest waits until it is due by
 * itself. A merge of all of level 1 takes every base-level file
 * overlapping the union of their ranges, because one output may span the
 * gap between two inputs; moved first, the free files no longer widen that
 * union. A file with tombstones merges, so that they meet what they
 * delete.
 *
 * Concurrency (compaction_state_t). The db keeps one registry per family of
 * the compactions in progress. compaction_pick / compaction_pick_level
 * register what they return, compaction_release unregisters it; all under
 * the db mutex. A candidate is refused if
 *  - one of its inputs is marked being_compacted (an input of another);
 *  - it is a level-1 compaction and another level-1 compaction runs;
 *  - a running compaction has the same output level and an overlapping
 *    user-key range [smallest, largest] (the range covers all its inputs,
 *    hence all it writes), or its level inputs overlap the range a running
 *    compaction writes into that level.
 * So concurrent compactions of one family read disjoint files and write
 * disjoint ranges of each level, and version edits of different ones
 * commute. With a NULL registry only the input marks apply.
 *
 * Invariants
 *  - A file is an input of at most one running compaction: picking marks
 *    inputs being_compacted and never picks a set touching a marked file;
 *    compaction_release clears the marks. Both run under the db mutex.
 *  - Output key ranges of concurrent compactions into one level are
 *    disjoint (registry rule above).
 *  - A compaction holds a reference on each input file meta until release,
 *    so inputs stay on disk while it reads them, and its range slices stay
 *    valid.
 *  - bottommost = no level below output_level has files overlapping the
 *    inputs' user-key range; only then may tombstones and expired TTL
 *    values be dropped (nothing older can resurface).
 *  - table_write_from_iter never splits one user key's versions across two
 *    output files, so levels >= 2 stay disjoint by user key.
 */
#ifndef TDB_VERSION_COMPACTION_H
#define TDB_VERSION_COMPACTION_H

#include <stdint.h>

#include "env/env.h"
#include "sst/sst.h"
#include "util/iter.h"
#include "version/table_cache.h"
#include "version/version.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Policy settings. A zeroed struct plus the first six fields gives the
 * static policy without trivial moves (fields were appended). */
typedef struct compaction_opts {
    int l1_file_count_trigger;
    int level_size_ratio;
    uint64_t base_level_bytes; /* target of the base level (static: level 2) */
    uint64_t target_file_size;
    double tombstone_density_trigger;
    uint64_t tombstone_density_min_entries;
    int dynamic_level_bytes; /* 1: targets from the bottom level's size */
    int allow_trivial_move;  /* 1: move instead of rewrite when allowed */
    int writes_pending;      /* 1: more level-1 files are on their way (the
                                family's memtables hold data, nobody waits
                                in tdb_wait_idle): level 1 may batch up
                                (see "Level-1 batching") */
    int l1_idle_trigger;     /* level-1 files due when writes_pending is 0,
                                if below l1_file_count_trigger; 0: none */
    int l1_read_due;         /* 1: scans stepped over more dead keys than
                                level 1 holds entries since its last
                                compaction: level 1 is due from one run
                                (docs/design/version.md, "Read-triggered level 1") */
} compaction_opts_t;

typedef struct compaction_state compaction_state_t;

typedef struct compaction {
    int level, output_level;
    int nin[2];            /* inputs from level, from output_level */
    file_meta_t **in[2];   /* each holds a file ref until release */
    int bottommost;
    double score;          /* what made it urgent (>= 1 for count/size) */
    int trivial_move;      /* run with compaction_move: no rewrite */
    slice_t smallest, largest; /* user-key range of all inputs (borrowed
                                  from the input metas) */
    compaction_state_t *state_; /* registry it is in (internal) */
} compaction_t;

/* Registry of a family's compactions in progress (see above). */
compaction_state_t *compaction_state_create(void);
/* Free s; every compaction picked with it must have been released. */
void compaction_state_free(compaction_state_t *s);
/* Compactions registered in s (0 for NULL). Caller holds the db mutex. */
int compaction_state_running(const compaction_state_t *s);

/* Level-1 runs that make level 1 due under o (l1_file_count_trigger,
 * twice it while batching, at most l1_idle_trigger when idle; see
 * "Level-1 batching"); base is v's base
 * level as compaction_level_targets returns it. Caller holds the db mutex
 * or owns v. */
int compaction_l1_trigger(version_t *v, const compaction_opts_t *o, int base);

/* At most this many key runs are told apart in one flush. */
#define FLUSH_MAX_RUNS 4
/* (version/flush_runs.c) Where a memtable's keys form separate runs
 * (writers filling separate key ranges at once), the first user key of
 * each run after the first, ascending, into cuts[0, FLUSH_MAX_RUNS - 1);
 * returns how many (0: one run). The runs' borders are the adjacent user
 * keys with the shortest common prefix, if there are at most
 * FLUSH_MAX_RUNS - 1 such pairs and each run holds at least
 * FLUSH_RUN_MIN_ENTRIES entries. The keys
 * borrow from the iterator's source (a memtable), which must outlive their
 * use. it is repositioned. */
int flush_run_cuts(iter_t *it, slice_t cuts[FLUSH_MAX_RUNS - 1]);

/* Target bytes of each level of v under o (0 = no size target: levels 0
 * and 1, levels above the base, or base_level_bytes 0); target[last] is the
 * bottom's reference size. Returns the base level (where level 1 goes).
 * Caller holds the db mutex or owns v. */
int compaction_level_targets(const version_t *v, const compaction_opts_t *o, uint64_t target[TDB_MAX_LEVELS]);

/* Most urgent compaction of v that does not conflict with those in s (may
 * be NULL), inputs marked being_compacted and registered in s; NULL if none
 * is due or every due one is blocked. Caller holds the db mutex. */
compaction_t *compaction_pick(version_t *v, const compaction_opts_t *o, compaction_state_t *s);
/* Manual compaction of `level` (1..TDB_MAX_LEVELS-1), registered in s (may
 * be NULL): NULL if the level is empty, an input is already being
 * compacted, or it conflicts with a compaction in s. Caller holds the db
 * mutex. */
compaction_t *compaction_pick_level(version_t *v, int level, const compaction_opts_t *o, compaction_state_t *s);
/* Manual compaction of the files of `level` (1..TDB_MAX_LEVELS-2) whose
 * user keys meet [*lo, *hi] (NULL: open end) into the level below, with
 * their overlaps there. At level 1, whose files may overlap each other,
 * every file overlapping a chosen one is chosen too (transitively), so no
 * older version is left above a newer one. NULL with *busy = 0 if no file
 * meets the range; NULL with *busy = 1 if an input is being compacted or
 * the pick conflicts with a compaction in s. Caller holds the db mutex. */
compaction_t *compaction_pick_range(version_t *v, int level, const slice_t *lo, const slice_t *hi,
                                    const compaction_opts_t *o, compaction_state_t *s, int *busy);
/* Unregister c from s (the registry it was picked with; NULL if none),
 * clear being_compacted, drop input refs, free c. Caller holds the db
 * mutex. */
void compaction_release(compaction_state_t *s, compaction_t *c);

/* Record a trivial move of c in edit: each level input deleted from
 * c->level and the same file_meta added at c->output_level (the edit takes
 * a reference). No I/O; runs without the db mutex. On error edit is left
 * as it was. */
int compaction_move(const compaction_t *c, version_edit_t *edit);

/* The user keys where c's outputs may end early (its output level then
 * lines up with the level below, so pushing one of its files down later
 * rewrites no partly overlapped neighbour): the smallest key of each file
 * of the first non-empty level below c->output_level that starts inside
 * c's range, ascending; none if c is bottommost. *keys (free() it) borrows
 * from v's file metas, so v must stay referenced while they are used.
 * Caller holds the db mutex or owns v. */
int compaction_cut_keys(const compaction_t *c, version_t *v, slice_t **keys, int *n);

/* Shared by flush and compaction. */
typedef struct table_write_ctx {
    env_t *env;
    const char *dbdir;
    sst_options_t sst;
    uint64_t target_file_size; /* 0 = never split */
    /* Ascending user keys where an output of at least target_file_size / 2
     * is also cut, before the first user key >= one of them
     * (compaction_cut_keys); NULL/0 = none. */
    const slice_t *cut_keys;
    int ncut;
    int cut_every; /* 1: cut at each cut key whatever the output's size (a
                      flush cut at key runs, flush_run_cuts) */
    uint64_t (*new_file_number)(void *ctx);
    void *ctx;
    const uint64_t *snapshots; /* live snapshot sequences, ascending */
    int nsnapshots;
    int bottommost;
    int64_t now_unix; /* TTL expiry reference */
    /* out, accumulated (+=): bytes_read = internal-key bytes of every input
     * entry plus value bytes of the entries not shadowed in their stripe
     * (shadowed values are never read); bytes_written = file bytes of the
     * finished outputs. */
    uint64_t bytes_read, bytes_written;
} table_write_ctx_t;

/* Write `input` (internal-key order) into new tables at out_level, added to
 * edit, splitting once an output reaches target_file_size, or half of it
 * where the stream passes one of ctx->cut_keys, but only between user keys.
 * Dropping rule: the stripe of seq s is the smallest snapshot >= s, or
 * "latest" above all snapshots; a version is kept only if it is the newest
 * of its user key within its stripe. If bottommost, a kept KT_DELETE /
 * KT_SINGLE_DELETE, or a KT_PUT_TTL whose expiry <= now_unix, in the lowest
 * stripe (seq <= smallest snapshot, or any seq without snapshots) is dropped
 * too. Range tombstones (in-band KT_RANGE_DELETE entries, value = end; the
 * inputs' blocks in compaction_run) drop covered entries of their stripe,
 * are clipped into every output they intersect and are dropped when
 * bottommost in the lowest stripe; a KT_SINGLE_DELETE meeting a put as the
 * next older version in its stripe is dropped with it at any level
 * (docs/design/deletes.md). If bottommost and out_level >= 2, the kept
 * version of the lowest stripe is written with sequence 0. Writes no file
 * if nothing is kept. On error
 * every output of this call is deleted and removed from edit. */
int table_write_from_iter(iter_t *input, table_write_ctx_t *ctx, int out_level, version_edit_t *edit);
/* The same with range tombstones supplied apart from the stream, pre[0,
 * npre) sorted by start (a compaction's inputs' range-deletion blocks). */
int table_write_merged(iter_t *input, const range_del_t *pre, size_t npre, table_write_ctx_t *ctx, int out_level,
                       version_edit_t *edit);
/* Undo what a failed compaction added to edit since n_add0 (its output
 * tables deleted) and n_del0. */
void table_write_undo(table_write_ctx_t *ctx, version_edit_t *edit, int n_add0, int n_del0);

/* (version/compaction_run.c) Run c: merge its inputs (read through tc),
 * write with ctx (ctx->bottommost is set from c), and add the deletion of
 * every input to edit. Rewrites even when c->trivial_move is set (callers
 * use compaction_move then). Runs without the db mutex. On error edit is
 * left as it was. */
int compaction_run(compaction_t *c, table_cache_t *tc, table_write_ctx_t *ctx, version_edit_t *edit);

#ifdef __cplusplus
}
#endif
#endif
