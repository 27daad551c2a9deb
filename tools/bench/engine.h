/*
 * engine.h: the adapter vtable through which tdb_bench drives every engine.
 *
 * Invariants
 *  - An adapter translates one engine_settings_t into its engine's options
 *    so that every engine runs with the same write buffer, block cache,
 *    bloom bits per key, compression, block size, background threads and
 *    sync setting. Where an engine cannot match a setting, the adapter says
 *    so in describe(), and that text is printed with the results.
 *  - The database handle is thread-safe (every engine here guarantees it);
 *    batch and iterator handles belong to one thread at a time.
 *  - Functions returning int return 0 on success and -1 on error (the
 *    adapter has already printed the engine's message to stderr); get()
 *    returns 1 when the key was found, 0 when absent.
 */
#ifndef TDB_BENCH_ENGINE_H
#define TDB_BENCH_ENGINE_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    BENCH_COMPRESS_NONE = 0,
    BENCH_COMPRESS_LZ4,
    BENCH_COMPRESS_ZSTD,
    BENCH_COMPRESS_SNAPPY,
} bench_compression_t;

/* The settings every engine is matched on. */
typedef struct engine_settings {
    size_t write_buffer_size; /* memtable bytes before a flush             */
    size_t cache_size;        /* block cache bytes                         */
    size_t block_size;        /* data block target bytes                   */
    int    compression;       /* bench_compression_t                       */
    int    bloom_bits;        /* bloom bits per key; 0 disables the filter */
    int    sync;              /* 1: every write is durable before return   */
    int    bg_threads;        /* background flush + compaction threads     */
} engine_settings_t;

/* Counters an engine reports about itself (cumulative since open). */
typedef struct engine_stats {
    int64_t stall_micros;     /* time writers were throttled; -1 if n/a    */
} engine_stats_t;

typedef struct engine_vtable {
    const char *name;
    /* One line per setting that the engine maps differently or cannot
     * match (e.g. a compression it lacks); written into buf. */
    void (*describe)(const engine_settings_t *s, char *buf, size_t n);
    int  (*open)(const engine_settings_t *s, const char *dir, void **db);
    void (*close)(void *db);

    int  (*put)(void *db, const char *k, size_t kl, const char *v, size_t vl);
    int  (*del)(void *db, const char *k, size_t kl);
    void *(*batch_new)(void *db);
    int  (*batch_put)(void *b, const char *k, size_t kl, const char *v,
                      size_t vl);
    /* Apply the batch atomically, then leave it empty for reuse. */
    int  (*batch_write)(void *db, void *b);
    void (*batch_free)(void *b);

    /* Point lookup; *vlen receives the value size when found. */
    int  (*get)(void *db, const char *k, size_t kl, size_t *vlen);

    void *(*iter_new)(void *db);
    void (*iter_seek)(void *it, const char *k, size_t kl);
    void (*iter_seek_first)(void *it);
    int  (*iter_valid)(void *it); /* 1 entry, 0 end, -1 error */
    void (*iter_next)(void *it);
    const char *(*iter_key)(void *it, size_t *kl);
    const char *(*iter_value)(void *it, size_t *vl);
    void (*iter_free)(void *it);

    /* Optional (NULL when the engine has no transactions): one put in its
     * own transaction, committed; and a point get through a read-only
     * snapshot transaction. *ctx is per-thread state the adapter keeps
     * between calls (NULL at first), released with txn_ctx_free. */
    int  (*txn_put)(void *db, void **ctx, const char *k, size_t kl,
                    const char *v, size_t vl);
    int  (*snapshot_get)(void *db, void **ctx, const char *k, size_t kl,
                         size_t *vlen);
    void (*txn_ctx_free)(void *ctx);

    /* Optional (NULL when the engine has no such call): write the
     * memtable(s) out now and wait for that, so the step that filled them
     * pays for their flush. */
    int  (*flush)(void *db);
    /* Wait until no flush or compaction is queued or running. */
    int  (*wait_idle)(void *db);
    void (*stats)(void *db, engine_stats_t *out);
} engine_vtable_t;

/* The adapters compiled into this binary, in default run order. */
extern const engine_vtable_t *const bench_engines[];
extern const size_t bench_engine_count;

/* Adapter by name, or NULL when it was not compiled in. */
const engine_vtable_t *engine_find(const char *name);

/* Name of a compression setting ("none", "lz4", ...). */
const char *bench_compression_name(int c);

#endif /* TDB_BENCH_ENGINE_H */
