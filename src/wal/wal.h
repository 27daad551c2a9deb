/*
 * wal: the write-ahead log. A log file is a sequence of records, each
 * carrying one opaque payload (the db layer puts an encoded write batch in
 * it). The log knows nothing about what payloads mean.
 *
 * Record format (all integers fixed32 little-endian, util/coding.h):
 *
 *     +----------+----------+-------------------+
 *     | checksum | length   | payload           |
 *     | 4 bytes  | 4 bytes  | `length` bytes    |
 *     +----------+----------+-------------------+
 *
 *   checksum = tdb_checksum2(length bytes, 4, payload, length), the masked
 *              checksum of the 4 length bytes followed by the payload.
 *   length   = 0 .. WAL_MAX_PAYLOAD (1 GiB). A larger length field marks the
 *              record as damaged. Empty payloads are allowed.
 *
 * Records are packed back to back from offset 0; there is no file header,
 * no padding and no block structure. An empty file is an empty log. Eight
 * zero bytes are never an intact record (the checksum of an empty payload
 * is not 0), so a zero-filled region never parses as data.
 *
 * Invariants
 *  - Writer: every wal_writer_add() hands all of its records to ONE
 *    env append() call (one write syscall, or one copy into a mapped log
 *    window, on POSIX): a group commit lands whole or, after a crash, as a
 *    torn tail. The file always holds complete records up to
 *    wal_writer_size(); past them, after a crash, it may hold zeros
 *    (preallocated space), which read as a torn tail. A log is sealed
 *    (wal_writer_seal: cut to its records, synced) before a newer log is
 *    created, so only the newest log can end in zeros.
 *  - Writer: after an I/O error in add or sync, the writer is failed:
 *    every later add/sync returns the same error code (a failed fdatasync
 *    may have dropped dirty pages, so a later "successful" sync would lie).
 *    The caller must stop using this log (start a new one to continue).
 *  - Writer: an add that fails with TDB_ERR_NO_SPACE (disk full) is not an
 *    I/O failure: the writer is torn instead. Later adds are refused with
 *    TDB_ERR_NO_SPACE; the next wal_writer_sync() (also the one of
 *    wal_writer_close) first truncates the file back to wal_writer_size()
 *    and then syncs, so the log ends with its last complete record and can
 *    be closed as a complete log (not the newest) before a new one starts.
 *  - Writer: an fsync that fails with TDB_ERR_NO_SPACE right after a group
 *    appended on a fully synced log (wal_writer_sync_group: nothing before
 *    the group was left unsynced) is not an I/O failure either: the pages
 *    it may have dropped hold only that group, which the caller has not
 *    acknowledged, so the file is cut back to the group's start (its last
 *    synced byte) and synced, and the writer is sealed. If that cut or
 *    sync fails, or acknowledged records were still unsynced (NONE and
 *    INTERVAL modes), the writer is failed as after any failed fsync
 *    (wal_writer_error gives the code, so the caller can tell a full disk
 *    from an I/O error).
 *  - Writer: the first successful wal_writer_sync() also syncs the parent
 *    directory, so once any sync returned TDB_OK the file's directory entry
 *    is durable too.
 *  - Reader: never trusts bytes from disk. It reads in chunks of
 *    WAL_READ_CHUNK and grows its buffer only to hold a record whose length
 *    fits in the rest of the file (as measured at open), so memory is
 *    bounded by max(chunk, largest plausible record) and never by a length
 *    field alone.
 *  - Reader recovery rule: when the record at offset O is incomplete (its
 *    header or payload runs past end of file, or its length exceeds
 *    WAL_MAX_PAYLOAD) or its checksum fails, byte offsets after O are tried
 *    as the start of an intact record (length fits in the file, checksum
 *    matches).
 *      - one exists: the damage is in the middle of the log ->
 *        TDB_ERR_CORRUPTION (detail: path and O), torn_tail = 0;
 *      - none exists: torn tail -> TDB_ERR_NOT_FOUND, torn_tail = 1,
 *        valid_end = O; the caller truncates the file to valid_end.
 *    End of file exactly at a record boundary is a clean end
 *    (TDB_ERR_NOT_FOUND, torn_tail = 0). Once next() returns anything other
 *    than TDB_OK it returns the same code forever.
 *  - Cost bound of that scan: trying every candidate offset costs time
 *    cubic in the size of the damaged region when its bytes look random (a
 *    torn 16 MiB record would take minutes), so candidates are tried in
 *    three passes, stopping at the first intact record:
 *      1. every candidate whose length is at most 64 KiB (cheap);
 *      2. every larger candidate whose chain of plausible large headers
 *         (each record's end is the next one's start) ends exactly at end
 *         of file; found by one backward sweep, no per-candidate I/O;
 *      3. the other larger candidates, in file order, while the bytes
 *         checksummed stay under max(1 GiB, 8 x the region's size).
 *    Passes 1-2 find any real intact record after O unless every real
 *    record after O is over 64 KiB AND the last of them is followed by a
 *    torn record (mid-log damage plus a torn tail). Pass 3 covers that
 *    case completely for damaged regions up to a few MiB, so there the
 *    rule above holds exactly. Candidates past the budget stay unverified
 *    and the tail is reported as torn, saying so in the detail: a complete
 *    record between damage and a torn record is also exactly what an
 *    incomplete final group commit looks like. A torn 256 MiB record of
 *    random bytes is classified in a few seconds.
 *  - Threads: a writer or a reader belongs to one thread at a time (the db
 *    layer serialises appends); neither takes locks.
 */
#ifndef TDB_WAL_WAL_H
#define TDB_WAL_WAL_H

#include <stdint.h>

#include "env/env.h"
#include "util/slice.h"

#ifdef __cplusplus
extern "C" {
#endif

#define WAL_HEADER_SIZE 8u
#define WAL_MAX_PAYLOAD (1u << 30)      /* 1 GiB */
#define WAL_READ_CHUNK  (1u << 20)      /* reader's streaming chunk: 1 MiB */

typedef struct wal_writer wal_writer_t;

/* Create a new log file (truncating). */
int wal_writer_open(env_t *env, const char *path, wal_writer_t **out);
/* Append n records (payloads) as ONE append call (env.h): a
 * group commit. n == 0 is a no-op. A payload over WAL_MAX_PAYLOAD is
 * TDB_ERR_TOO_LARGE (nothing written, writer still usable). */
int wal_writer_add(wal_writer_t *w, const slice_t *payloads, int n);
/* fdatasync the file (the first time, also its directory); a torn writer
 * (out of space) is truncated to its complete records first. */
int wal_writer_sync(wal_writer_t *w);
/* Sync right after appending a group that starts at byte `start`
 * (wal_writer_size() before its add): as wal_writer_sync, except that an
 * fsync out of space when nothing before `start` was unsynced cuts the
 * group off and seals the writer (TDB_ERR_NO_SPACE, writer not failed). */
int wal_writer_sync_group(wal_writer_t *w, uint64_t start);
/* Finish the log as complete before a newer one starts: cut the file to
 * its complete records (a log file may be preallocated past them, env.h
 * open_log), then sync as wal_writer_sync. Later adds are refused. A
 * sealed writer is complete and synced: sealing it again does nothing. */
int wal_writer_seal(wal_writer_t *w);
/* The writer's sticky failure code, 0 while healthy: after a failed sync
 * TDB_ERR_NO_SPACE means the disk was full (the db layer relogs its
 * memtables into a new log instead of failing for good, db/switch.c). */
int wal_writer_error(const wal_writer_t *w);
/* Bytes written so far (complete records only). */
uint64_t wal_writer_size(const wal_writer_t *w);
/* Optionally sync, then close and free (always freed; NULL is a no-op).
 * Returns the first error. */
int wal_writer_close(wal_writer_t *w, int sync);

typedef struct wal_reader wal_reader_t;

/* Open an existing log for reading (TDB_ERR_NOT_FOUND if missing). Reads
 * up to the file size at the time of open. */
int wal_reader_open(env_t *env, const char *path, wal_reader_t **out);
/* Next record: TDB_OK with *payload valid until the next call;
 * TDB_ERR_NOT_FOUND at the end (clean end or torn tail);
 * TDB_ERR_CORRUPTION (detail: path and offset) for a damaged record that is
 * followed by at least one intact record. Other codes: I/O errors. */
int wal_reader_next(wal_reader_t *r, slice_t *payload);
/* Offset just past the last intact record returned (0 if none). */
uint64_t wal_reader_valid_end(const wal_reader_t *r);
/* 1 if reading ended at a torn tail (incomplete or damaged final record),
 * else 0. */
int wal_reader_torn_tail(const wal_reader_t *r);
/* Close and free (NULL is a no-op). */
void wal_reader_close(wal_reader_t *r);

#ifdef __cplusplus
}
#endif
#endif
