/*
 * version/compaction: choosing what to compact, and writing merged data
 * (flushes and compactions) into new tables.
 *
 * Picking policy (compaction_pick, most urgent first):
 *  - level 1: file count / l1_file_count_trigger;
 *  - level L in 2..TDB_MAX_LEVELS-2: bytes not already being compacted /
 *    target(L), target(L) = base_level_bytes * level_size_ratio^(L-2)
 *    (base_level_bytes 0 disables size-triggered compaction of levels >= 2);
 *  - the highest score >= 1 that can run wins; failing that, the file with
 *    the highest tombstone share >= tombstone_density_trigger (in (0,1],
 *    else disabled) among files with >= tombstone_density_min_entries
 *    entries, at levels 1..TDB_MAX_LEVELS-2, goes into the next level.
 *
 * Shapes
 *  - A level-1 compaction takes every level-1 file (all or none: taking a
 *    newer file without the older ones it overlaps would let an older
 *    version shadow a newer one) plus the level-2 files overlapping their
 *    range, into level 2. Hence at most one level-1 compaction at a time.
 *  - A level-L (>= 2) compaction takes one file, rotating through the key
 *    space with a per-level cursor kept in the version, plus its overlaps
 *    in L+1, into L+1.
 *  - Manual (compaction_pick_level): every file of the level plus overlaps,
 *    into level+1; for the last level, a rewrite in place (bottommost).
 *
 * Invariants
 *  - A file is an input of at most one running compaction: picking marks
 *    inputs being_compacted and never picks a set touching a marked file;
 *    compaction_release clears the marks. Both run under the db mutex.
 *  - Output key ranges of concurrent compactions into one level are
 *    disjoint: any file of the output level overlapping the inputs is an
 *    input, so a second compaction over that range finds it marked.
 *  - A compaction holds a reference on each input file meta until release,
 *    so inputs stay on disk while it reads them.
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

typedef struct compaction_opts {
    int l1_file_count_trigger;
    int level_size_ratio;
    uint64_t base_level_bytes; /* target size of level 2 */
    uint64_t target_file_size;
    double tombstone_density_trigger;
    uint64_t tombstone_density_min_entries;
} compaction_opts_t;

typedef struct compaction {
    int level, output_level;
    int nin[2];            /* inputs from level, from output_level */
    file_meta_t **in[2];   /* each holds a file ref until release */
    int bottommost;
    double score;          /* what made it urgent (>= 1 for count/size) */
} compaction_t;

/* Most urgent compaction of v, inputs marked being_compacted; NULL if none
 * is due or every due one is blocked. Caller holds the db mutex and passes
 * the current version (it records the rotation cursor). */
compaction_t *compaction_pick(version_t *v, const compaction_opts_t *o);
/* Manual compaction of `level` (1..TDB_MAX_LEVELS-1): NULL if the level is
 * empty or an input is already being compacted. Caller holds the db mutex. */
compaction_t *compaction_pick_level(version_t *v, int level, const compaction_opts_t *o);
/* Clear being_compacted, drop input refs, free c. Caller holds the db mutex. */
void compaction_release(compaction_t *c);

/* Shared by flush and compaction. */
typedef struct table_write_ctx {
    env_t *env;
    const char *dbdir;
    sst_options_t sst;
    uint64_t target_file_size; /* 0 = never split */
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
 * edit, splitting once an output reaches target_file_size but only between
 * user keys.
 * Dropping rule: the stripe of seq s is the smallest snapshot >= s, or
 * "latest" above all snapshots; a version is kept only if it is the newest
 * of its user key within its stripe. If bottommost, a kept KT_DELETE /
 * KT_SINGLE_DELETE, or a KT_PUT_TTL whose expiry <= now_unix, in the lowest
 * stripe (seq <= smallest snapshot, or any seq without snapshots) is dropped
 * too. Writes no file if nothing is kept. On error every output of this call
 * is deleted and removed from edit. */
int table_write_from_iter(iter_t *input, table_write_ctx_t *ctx, int out_level, version_edit_t *edit);

/* Run c: merge its inputs (read through tc), write with ctx (ctx->bottommost
 * is set from c), and add the deletion of every input to edit. Runs without
 * the db mutex. On error edit is left as it was. */
int compaction_run(compaction_t *c, table_cache_t *tc, table_write_ctx_t *ctx, version_edit_t *edit);

#ifdef __cplusplus
}
#endif
#endif
