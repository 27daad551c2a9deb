/*
 * version/manifest: the set of files forming the database, kept as one
 * snapshot file "MANIFEST" rewritten atomically (env_write_file_atomic:
 * temp file, fsync, rename, fsync dir) on every change, so a crash at any
 * point leaves either the old or the new manifest, never a mix. The file is
 * never appended to: a short write or a failed fsync (out of space, say)
 * only ever hits MANIFEST.tmp, which is never read (open removes *.tmp),
 * and a MANIFEST cut or damaged in any other way fails its whole-file
 * checksum. So after a failure before the rename the next attempt writes a
 * fresh snapshot; nothing is appended after a torn record.
 *
 * Format (all integers little-endian; docs/design/version.md):
 *
 *   magic "TDBMANIF" (8) | fixed32 format version (4) | body | fixed32 checksum
 *
 *   Format 4 stores each family's options as tagged fields (below);
 *   formats 1-3 stored them positionally and are still read. Format 3 and
 *   later say that the database's WAL records carry batches with the
 *   compact header (docs/design/db.md); under format 1 or 2 they carry the
 *   fixed 12-byte header, and recovery reads them so (the reopen then
 *   writes the current format).
 *
 *   body = varint64 next_file_number | varint64 last_sequence |
 *          varint32 next_cf_id | varint32 ncf | cf*
 *   cf   = varint32 id | lenprefixed name | lenprefixed options |
 *          varint64 log_number | varint32 nfiles | file*
 *   file = varint32 level | varint64 number | varint64 file_size |
 *          lenprefixed smallest | lenprefixed largest | varint64 min_seq |
 *          varint64 max_seq | varint64 num_entries | varint64 num_deletes |
 *          varint64 num_range_deletes (format 2; absent in format 1, read as 0)
 *   options (format 4) = field*, field = varint32 tag | lenprefixed value,
 *          tag = id << 1 | must_understand; unknown tags with the bit clear
 *          are skipped, with it set are an error; the tag table and the
 *          rules for adding a field are in manifest_options.c.
 *   options (formats 1-3) = fields of tdb_cf_config_t in their declaration
 *          order of then (size_t and uint64 as varint64, int and uint32 as
 *          varint32 of the 32-bit pattern, double as fixed64 of its bits);
 *          a longer blob is accepted, its tail ignored.
 *   checksum = tdb_checksum of every preceding byte.
 *
 * Invariants checked by decode (any violation -> TDB_ERR_CORRUPTION with a
 * detail; never a crash, never an allocation beyond what the bytes can
 * describe):
 *  - magic, version and checksum match; the body is consumed exactly.
 *  - cf ids are unique and < next_cf_id; names are unique, 1..TDB_MAX_CF_NAME
 *    bytes without NUL; compression and sync mode are known; doubles finite;
 *    each known option tag at most once, every required one present, no
 *    unknown must-understand tag.
 *  - file numbers are unique over the whole database, nonzero and
 *    < next_file_number; levels are 1..TDB_MAX_LEVELS-1; key bounds are
 *    internal keys with smallest <= largest; min_seq <= max_seq <=
 *    last_sequence (so the db must record a last_sequence covering every
 *    flushed file); levels >= 2 are disjoint (version_apply).
 *
 * Who may touch what: manifest_t is plain data owned by its holder (the db,
 * under its mutex). Versions inside it are referenced, not copied.
 */
#ifndef TDB_VERSION_MANIFEST_H
#define TDB_VERSION_MANIFEST_H

#include <stdint.h>

#include "env/env.h"
#include "tidesdb/tidesdb.h"
#include "util/slice.h"
#include "version/version.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MANIFEST_NAME "MANIFEST"

typedef struct manifest_cf {
    uint32_t id;
    char *name; /* malloc'd, NUL-terminated */
    tdb_cf_config_t config;
    uint64_t log_number; /* WAL files numbered below this hold nothing unflushed */
    version_t *version;  /* one reference owned by the manifest_t */
} manifest_cf_t;

typedef struct manifest {
    uint64_t next_file_number, last_sequence;
    uint32_t next_cf_id;
    int ncf;
    manifest_cf_t *cfs; /* malloc'd array of ncf */
    uint32_t format;    /* as read by decode; encode always writes the current one */
} manifest_t;

/* Serialize m into out (appending). */
int manifest_encode(const manifest_t *m, buf_t *out);
/* Parse data into *m (overwritten), building each family's version with
 * obsolete callback fn/ctx. On error *m is left empty. */
int manifest_decode(slice_t data, manifest_t *m, file_obsolete_fn fn, void *ctx);
/* Atomically replace <dir>/MANIFEST with m. */
int manifest_write(env_t *env, const char *dir, const manifest_t *m);
/* The same; *renamed is 1 once the new file replaced the old one (a failure
 * with *renamed == 0, such as running out of space while writing or
 * syncing the temp file, left the old MANIFEST as it was). */
int manifest_replace(env_t *env, const char *dir, const manifest_t *m, int *renamed);
/* Read and decode <dir>/MANIFEST: TDB_ERR_NOT_FOUND if there is none. */
int manifest_read(env_t *env, const char *dir, manifest_t *m, file_obsolete_fn fn, void *ctx);
/* Append a family's options in the current (tagged) encoding. */
int manifest_options_encode(const tdb_cf_config_t *c, buf_t *b);
/* Decode and validate a family's options stored by a MANIFEST of `format`
 * (family `id` names errors): TDB_ERR_CORRUPTION on anything invalid. */
int manifest_options_decode(slice_t blob, uint32_t format, uint32_t id, tdb_cf_config_t *cfg);
/* Free names and the array, unref versions; *m becomes empty. */
void manifest_free(manifest_t *m);

#ifdef __cplusplus
}
#endif
#endif
