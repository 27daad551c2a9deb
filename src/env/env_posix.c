/*
 * env/env_posix: the real environment on a POSIX filesystem.
 *
 * Invariants
 *  - Every error is raised with tdb_err(tdb_errno_code(errno), ...) and a
 *    detail naming the operation, the path and strerror(errno).
 *  - Writable files: fd opened O_WRONLY|O_CREAT|O_TRUNC; append() is an
 *    unbuffered pwrite() loop at offset `size` (EINTR and short writes
 *    retried), so one append() is one system call whenever the kernel
 *    accepts it whole;
 *    `size` counts bytes appended (including those of a failed append that
 *    reached the file). Used by one thread at a time.
 *  - Log files (open_log): appended through a shared writable mapping of
 *    a window of the file (LOG_WINDOW bytes, page aligned) instead of a
 *    write() per append: an append is a copy into the page cache, so it
 *    survives a crash of the process like a write() would, at a fraction
 *    of the cost. The copy stores in address order (copy_in_order), so a
 *    process killed mid-append leaves a prefix of it, like write(). Space
 *    is reserved with fallocate() before a window is mapped, so running
 *    out of space is an error of the append that needs the window
 *    (TDB_ERR_NO_SPACE), never a SIGBUS; on filesystems
 *    without fallocate the file is written with write() instead. sync()
 *    is fdatasync(), which also writes back pages dirtied through the
 *    mapping; a window, once full, is handed to writeback at once
 *    (sync_file_range), so a later sync waits for one window at most.
 *    The window is faulted in writable ahead of the copies, 64 KiB at a
 *    time (MADV_POPULATE_WRITE, advice only), so appends do not fault page
 *    by page under the WAL lock. An append of LOG_PWRITE_MIN bytes or more
 *    is one pwrite() at `size` instead (the window stays mapped): for it
 *    the system call costs less than faulting each page into the mapping
 *    (read in as zeros, then made writable, later unmapped), and the
 *    kernel copies in file order, so a kill still leaves a prefix.
 *    close() unmaps and truncates the file to the bytes appended;
 *    after a crash the file may end in zeros (reserved, never written).
 *    Nothing else may shrink a log file while a window is mapped, except
 *    after an append failed (the log writer then stops appending).
 *  - A log file synced about as often as it is appended to (a database
 *    that syncs every commit) leaves the mapping at its next window
 *    boundary for good: from then on appends are pwrite() at `size` into
 *    space written with zeros ahead of them (zero_end >= size, at least
 *    one window of zeros ahead after each sync), never into fallocate()d
 *    space. ext4 keeps reserved space as unwritten extents and journals
 *    their conversion when data reaches them, so every fdatasync into
 *    reserved space also committed the journal; into written blocks of an
 *    unchanged file size it writes only the data. And a store through the
 *    mapping into a page the last sync cleaned takes a write fault. A 2 KiB
 *    append + fdatasync on a VM's ext4: 148-182 us reserved and mapped,
 *    136-165 us reserved with pwrite, median 96-99 us into written zeros
 *    with pwrite. Logs synced rarely keep the cheaper mapped appends.
 *    Zeros are written by sync(), after its fdatasync, so the next sync
 *    carries them, once per window; an append that reaches zero_end writes
 *    them itself. Zeroing is best-effort: if it fails (out of space),
 *    appends grow the file and report their own errors. Crash images end
 *    in zeros as before.
 *  - Readable files: pread(), and optionally one read-only shared mapping
 *    of the file (map_readable, MADV_RANDOM: a fault reads only its own
 *    page), set up once by the opener before the handle is shared and
 *    unmapped at close. Any number of threads may read one handle
 *    concurrently; nothing in the handle is mutated after that.
 *  - Locks: g_locks (guarded by g_lock_mu) lists every lock held by this
 *    process by (device, inode): the file, under whatever name. A second
 *    lock of the same file from this process is refused before flock() is
 *    even tried, so the refusal holds on filesystems where flock() is a
 *    no-op. A held file renamed away or removed is no longer the file at its
 *    old path: a new file there is locked independently (matching by path
 *    made a checkpoint that found its staging directory already renamed by
 *    the one before it create a new one, be refused its lock and leave it
 *    behind). Across
 *    processes flock(LOCK_EX|LOCK_NB) decides (fcntl() record locks as a
 *    fallback where flock() is unsupported).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "env/env.h"
#include "util/error.h"

typedef struct posix_file {
    env_file_t base;
    int fd;
    int writable;
    uint64_t size; /* writable: bytes appended so far */
    char *path;
    /* Log files appended through a mapping (see the top of the file). */
    int mapped;
    char *map;          /* current window, NULL if none */
    uint64_t map_off;   /* file offset of the window */
    uint64_t alloc_end; /* bytes reserved with fallocate */
    /* Mapped log files: appends and syncs since the current window was
     * mapped, to tell a log synced at (nearly) every append. */
    uint32_t win_appends, win_syncs;
    /* Log files that left the mapping (see the top of the file). */
    int zeroed;        /* appends are pwrite() at size */
    int zero_failed;   /* writing zeros ahead failed once: stop trying */
    uint64_t zero_end; /* the file holds written zeros (or data) up to here */
    /* Readable files: the read-only mapping, if any. */
    const char *rmap;
    uint64_t rmap_len;
} posix_file_t;

/* Bytes of a log file mapped at a time (also the fallocate step, and the
 * step of the zeros written ahead of a synced log's appends). */
#define LOG_WINDOW (1u << 20)

/* Appends of at least this many bytes bypass a log's mapping (pwrite). */
#define LOG_PWRITE_MIN (64u << 10)

/* A mapped log whose last full window saw at least one sync per this many
 * appends leaves the mapping (TDB_SYNC_FULL syncs every group: ~1). */
#define LOG_SYNCED_RATIO 4

struct env_lock {
    int fd;
    dev_t dev;
    ino_t ino;
    char *path;  /* as given by the caller, for messages */
    struct env_lock *next;
};

static pthread_mutex_t g_lock_mu = PTHREAD_MUTEX_INITIALIZER;
static struct env_lock *g_locks; /* guarded by g_lock_mu */

/* Text of errnum without touching the shared strerror() buffer. */
static const char *os_strerror(int errnum, char *buf, size_t n) {
#if defined(__GLIBC__) && defined(_GNU_SOURCE)
    return strerror_r(errnum, buf, n);
#else
    if (strerror_r(errnum, buf, n) != 0) snprintf(buf, n, "errno %d", errnum);
    return buf;
#endif
}

/* Raise the TDB code of errnum with "op path: strerror". */
static int os_err(int errnum, const char *op, const char *path) {
    char tmp[128];
    return tdb_err(tdb_errno_code(errnum), "%s %s: %s", op, path, os_strerror(errnum, tmp, sizeof tmp));
}

/* Allocate a file handle owning a copy of path. */
static posix_file_t *file_new(env_t *e, const char *path, int fd, int writable) {
    posix_file_t *f = (posix_file_t *)calloc(1, sizeof *f);
    if (!f) return NULL;
    f->path = strdup(path);
    if (!f->path) {
        free(f);
        return NULL;
    }
    f->base.env = e;
    f->fd = fd;
    f->writable = writable;
    return f;
}

/* open() retried on EINTR. */
static int open_retry(const char *path, int flags, mode_t mode) {
    int fd;
    do {
        fd = open(path, flags, mode);
    } while (fd < 0 && errno == EINTR);
    return fd;
}

/* Create (truncating) a file for appending; `mapped`: a log file appended
 * through a mapping (a shared writable mapping needs O_RDWR). */
static int create_for_append(env_t *e, const char *path, int mapped, env_file_t **out) {
    *out = NULL;
    int fd = open_retry(path, (mapped ? O_RDWR : O_WRONLY) | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return os_err(errno, "create", path);
    posix_file_t *f = file_new(e, path, fd, 1);
    if (!f) {
        close(fd);
        return tdb_err(TDB_ERR_NOMEM, "create %s: out of memory", path);
    }
    f->mapped = mapped;
    *out = &f->base;
    return TDB_OK;
}

static int px_open_writable(env_t *e, const char *path, env_file_t **out) { return create_for_append(e, path, 0, out); }
static int px_open_log(env_t *e, const char *path, env_file_t **out) { return create_for_append(e, path, 1, out); }

/* Drop the current window of a log file. */
static void unmap_window(posix_file_t *f) {
    if (f->map) munmap(f->map, LOG_WINDOW);
    f->map = NULL;
}

/* Bytes of a log window faulted in at a time, ahead of the appends. */
#define LOG_POPULATE (64u << 10)

/* 0 once the kernel refused MADV_POPULATE_WRITE (before Linux 5.14). */
static atomic_int g_populate_ok = 1;

/* Fault in, writable, the LOG_POPULATE-aligned chunks that a copy of the
 * file bytes [from, to) of the current window starts (the chunk holding
 * `from` was faulted in by the copy that reached into it, is the window's
 * first, or was written by a pwrite(): its rest then faults in on the
 * copy). Advice only: a refusal leaves the faults to the copy.
 * A copy into a page not faulted in takes a page fault inside the append,
 * under the WAL lock: every ~32nd small write, and the writer queued behind
 * it, paid 20-40 us. A whole window at once would be fewer calls, but pages
 * dirtied past the log's last record count as written (/proc/self/io)
 * although the log is cut before they reach the disk. Windows are
 * LOG_WINDOW-aligned, a multiple of LOG_POPULATE, so no chunk crosses one. */
static void populate_for(posix_file_t *f, uint64_t from, uint64_t to) {
#ifdef MADV_POPULATE_WRITE
    const uint64_t mask = LOG_POPULATE - 1;
    uint64_t lo = (from + mask) & ~mask, hi = (to + mask) & ~mask;
    if (lo >= hi || !atomic_load_explicit(&g_populate_ok, memory_order_relaxed)) return;
    int saved = errno;
    if (madvise(f->map + (lo - f->map_off), (size_t)(hi - lo), MADV_POPULATE_WRITE) != 0 && errno == EINVAL)
        atomic_store_explicit(&g_populate_ok, 0, memory_order_relaxed);
    errno = saved;
#else
    (void)f, (void)from, (void)to;
#endif
}

/* Map the window holding offset f->size, reserving its space first. On
 * a filesystem without fallocate (first window only) the file falls back
 * to plain appends: f->mapped becomes 0 and TDB_OK is returned. */
static int map_window(posix_file_t *f) {
    /* Start writing the finished window back now (without waiting), so the
     * sync when the log is sealed or synced finds little left to write.
     * Unmapped first: writeback of a page still mapped must write-protect
     * it in the page table and flush every CPU's TLB, page by page (that
     * cost ~6% of a write-heavy run's CPU); unmapped, the dirty pages are
     * plain page cache. */
    int had = f->map != NULL;
    uint64_t old_off = f->map_off;
    unmap_window(f);
    if (had) (void)sync_file_range(f->fd, (off_t)old_off, LOG_WINDOW, SYNC_FILE_RANGE_WRITE);
    int synced_log = had && f->win_syncs > 0 && f->win_appends <= (uint64_t)f->win_syncs * LOG_SYNCED_RATIO;
    f->win_appends = f->win_syncs = 0;
    if (synced_log && f->size == f->alloc_end) { /* the window is full: nothing reserved past size */
        f->mapped = 0;
        f->zeroed = 1;
        f->zero_end = f->size;
        return TDB_OK;
    }
    uint64_t off = f->size - f->size % LOG_WINDOW, end = off + LOG_WINDOW;
    if (end > (uint64_t)INT64_MAX) return tdb_err(TDB_ERR_TOO_LARGE, "write %s: log too large", f->path);
    if (end > f->alloc_end) {
        int r;
        do {
            r = fallocate(f->fd, 0, (off_t)f->alloc_end, (off_t)(end - f->alloc_end));
        } while (r != 0 && errno == EINTR);
        if (r != 0) {
            if ((errno == EOPNOTSUPP || errno == ENOSYS) && f->size == 0 && f->alloc_end == 0) {
                f->mapped = 0; /* nothing written yet: plain appends start at 0 */
                return TDB_OK;
            }
            return os_err(errno, "fallocate", f->path);
        }
        f->alloc_end = end;
    }
    void *m = mmap(NULL, LOG_WINDOW, PROT_READ | PROT_WRITE, MAP_SHARED, f->fd, (off_t)off);
    if (m == MAP_FAILED) return os_err(errno, "mmap", f->path);
    f->map = (char *)m;
    f->map_off = off;
    return TDB_OK;
}

/* Write zeros over [f->zero_end, end) (whole pages, so the file's
 * blocks are written, not reserved) and start their writeback. On
 * failure zeroing stops for good (zero_failed); the error is not
 * raised: appends then grow the file and report their own. */
static void write_zeros_to(posix_file_t *f, uint64_t end) {
    static const char zeros[64 << 10];
    enum { NV = 16 };
    struct iovec iov[NV];
    for (int i = 0; i < NV; i++) iov[i] = (struct iovec){(void *)zeros, sizeof zeros};
    uint64_t start = f->zero_end;
    int saved = errno;
    while (f->zero_end < end) {
        uint64_t left = end - f->zero_end;
        int cnt = 0;
        size_t want = 0;
        for (; cnt < NV && want < left; cnt++) {
            size_t k = left - want < sizeof zeros ? (size_t)(left - want) : sizeof zeros;
            iov[cnt].iov_len = k;
            want += k;
        }
        ssize_t w = pwritev(f->fd, iov, cnt, (off_t)f->zero_end);
        for (int i = 0; i < cnt; i++) iov[i].iov_len = sizeof zeros;
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            f->zero_failed = 1;
            break;
        }
        f->zero_end += (uint64_t)w;
    }
    if (f->zero_end > start) (void)sync_file_range(f->fd, (off_t)start, (off_t)(f->zero_end - start), SYNC_FILE_RANGE_WRITE);
    errno = saved;
}

/* A synced log: unless the file holds zeros (or data) up to `need`
 * already, write zeros up to the window boundary at least one window past
 * it. */
static void zeros_past(posix_file_t *f, uint64_t need) {
    if (!f->zeroed || f->zero_failed || need <= f->zero_end) return;
    uint64_t end = need + LOG_WINDOW;
    write_zeros_to(f, end - end % LOG_WINDOW);
}

/* Write n bytes at offset f->size with a pwrite() loop that survives
 * EINTR and short writes; f->size counts what reached the file. For a
 * file appended only by this loop the offset is the fd's own, as write()
 * would use. */
static int write_at_size(posix_file_t *f, const char *p, size_t n) {
    while (n > 0) {
        ssize_t w = pwrite(f->fd, p, n, (off_t)f->size);
        if (w < 0) {
            if (errno == EINTR) continue;
            return os_err(errno, "write", f->path);
        }
        if (w == 0) return tdb_err(TDB_ERR_IO, "write %s: no progress", f->path);
        p += w;
        n -= (size_t)w;
        f->size += (uint64_t)w;
    }
    return TDB_OK;
}

/* Append to a log file that left the mapping: pwrite() at size, into
 * zeros written ahead when they are there. */
static int append_zeroed(posix_file_t *f, const char *p, size_t n) {
    zeros_past(f, f->size + n);
    int rc = write_at_size(f, p, n);
    if (f->size > f->zero_end) f->zero_end = f->size;
    return rc;
}

/* Copy n bytes with stores in address order, so that a process killed
 * part-way leaves a prefix of src at dst, as an interrupted write() does.
 * memcpy promises no order: glibc's stores a copy's first bytes last for
 * some sizes, and a kill in between left a group's later log records
 * intact behind a damaged first one, which reads as damage in the middle
 * of the log (open fails) instead of a torn tail. Volatile stores are
 * neither reordered nor merged by the compiler, and a CPU retires stores
 * in program order, so the ones done before the kill are its prefix. */
static void copy_in_order(char *dst, const char *src, size_t n) {
    volatile char *d = dst;
    for (; n > 0 && ((uintptr_t)d & 7); n--) *d++ = *src++;
    volatile uint64_t *w = (volatile uint64_t *)(uintptr_t)d;
    for (; n >= 8; n -= 8, src += 8) {
        uint64_t v;
        memcpy(&v, src, 8);
        *w++ = v;
    }
    for (d = (volatile char *)w; n > 0; n--) *d++ = *src++;
}

/* Append to a log file: an in-order copy into the mapped windows. */
static int append_mapped(posix_file_t *f, const char *p, size_t n) {
    f->win_appends++;
    if (n >= LOG_PWRITE_MIN) return write_at_size(f, p, n);
    while (n > 0) {
        if (!f->map || f->size >= f->map_off + LOG_WINDOW) {
            TDB_RET(map_window(f));
            if (f->zeroed) return append_zeroed(f, p, n);
            if (!f->mapped) return 1; /* caller continues with write() */
        }
        size_t room = (size_t)(f->map_off + LOG_WINDOW - f->size), k = n < room ? n : room;
        populate_for(f, f->size, f->size + k);
        copy_in_order(f->map + (f->size - f->map_off), p, k);
        p += k;
        n -= k;
        f->size += k;
    }
    return TDB_OK;
}

/* Open an existing file for random reads. */
static int px_open_readable(env_t *e, const char *path, env_file_t **out) {
    *out = NULL;
    int fd = open_retry(path, O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0) return os_err(errno, "open", path);
    posix_file_t *f = file_new(e, path, fd, 0);
    if (!f) {
        close(fd);
        return tdb_err(TDB_ERR_NOMEM, "open %s: out of memory", path);
    }
    *out = &f->base;
    return TDB_OK;
}

/* Append n bytes with a write() loop that survives EINTR and short writes. */
static int px_append(env_file_t *fb, const void *data, size_t n) {
    posix_file_t *f = (posix_file_t *)fb;
    if (!f->writable) return tdb_err(TDB_ERR_INVALID_ARG, "append %s: file not opened for writing", f->path);
    const char *p = (const char *)data;
    if (f->zeroed) return append_zeroed(f, p, n);
    if (f->mapped) {
        int rc = append_mapped(f, p, n);
        if (rc != 1) return rc; /* 1: fell back to plain writes before writing anything */
    }
    return write_at_size(f, p, n);
}

/* pread loop: fills buf unless end of file is reached first. */
static int px_pread(env_file_t *fb, uint64_t off, void *buf, size_t n, size_t *nread) {
    posix_file_t *f = (posix_file_t *)fb;
    char *p = (char *)buf;
    size_t got = 0;
    *nread = 0;
    if (off > (uint64_t)INT64_MAX) return tdb_err(TDB_ERR_INVALID_ARG, "read %s: offset %llu out of range", f->path, (unsigned long long)off);
    while (got < n) {
        ssize_t r = pread(f->fd, p + got, n - got, (off_t)(off + got));
        if (r < 0) {
            if (errno == EINTR) continue;
            char tmp[128];
            int code = tdb_errno_code(errno);
            return tdb_err(code, "read %s at offset %llu: %s", f->path, (unsigned long long)(off + got),
                           os_strerror(errno, tmp, sizeof tmp));
        }
        if (r == 0) break; /* end of file */
        got += (size_t)r;
    }
    *nread = got;
    return TDB_OK;
}

/* Map the first n bytes of a readable file (once). */
static int px_map_readable(env_file_t *fb, uint64_t n, const char **out) {
    posix_file_t *f = (posix_file_t *)fb;
    *out = NULL;
    if (f->writable) return tdb_err(TDB_ERR_INVALID_ARG, "map %s: file opened for writing", f->path);
    if (f->rmap) return tdb_err(TDB_ERR_INVALID_ARG, "map %s: already mapped", f->path);
    if (n == 0 || n > (uint64_t)SIZE_MAX) return tdb_err(TDB_ERR_INVALID_ARG, "map %s: %llu bytes", f->path, (unsigned long long)n);
    void *m = mmap(NULL, (size_t)n, PROT_READ, MAP_SHARED, f->fd, 0);
    if (m == MAP_FAILED) return os_err(errno, "mmap", f->path);
    (void)madvise(m, (size_t)n, MADV_RANDOM); /* advice only */
    f->rmap = (const char *)m;
    f->rmap_len = n;
    *out = f->rmap;
    return TDB_OK;
}

/* fdatasync the file. */
static int px_sync(env_file_t *fb) {
    posix_file_t *f = (posix_file_t *)fb;
    if (fdatasync(f->fd) != 0) return os_err(errno, "fdatasync", f->path);
    if (f->mapped) f->win_syncs++;
    /* Keep a window of zeros ahead of a synced log: written now, synced by
     * the next sync. */
    zeros_past(f, f->size + LOG_WINDOW);
    return TDB_OK;
}

/* Bytes appended (writable) or current size (readable). */
static int px_size(env_file_t *fb, uint64_t *out) {
    posix_file_t *f = (posix_file_t *)fb;
    if (f->writable) {
        *out = f->size;
        return TDB_OK;
    }
    struct stat st;
    if (fstat(f->fd, &st) != 0) return os_err(errno, "stat", f->path);
    *out = (uint64_t)st.st_size;
    return TDB_OK;
}

/* Close and free the handle (always freed). */
static int px_close(env_file_t *fb) {
    posix_file_t *f = (posix_file_t *)fb;
    int rc = TDB_OK;
    if (f->mapped || f->zeroed) { /* give back the reserved space (or zeros) past the last append */
        unmap_window(f);
        struct stat st;
        if (fstat(f->fd, &st) == 0 && (uint64_t)st.st_size > f->size && ftruncate(f->fd, (off_t)f->size) != 0)
            rc = os_err(errno, "truncate", f->path);
    }
    if (f->rmap) munmap((void *)f->rmap, (size_t)f->rmap_len);
    /* Never retry close(): on Linux the fd is released even on EINTR. */
    if (close(f->fd) != 0 && errno != EINTR) rc = os_err(errno, "close", f->path);
    free(f->path);
    free(f);
    return rc;
}

/* Size of the file at path. */
static int px_file_size(env_t *e, const char *path, uint64_t *out) {
    struct stat st;
    if (stat(path, &st) != 0) return os_err(errno, "stat", path);
    *out = (uint64_t)st.st_size;
    return TDB_OK;
}

/* 1 if path exists, else 0. */
static int px_exists(env_t *e, const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

/* Set the file's size. */
static int px_truncate(env_t *e, const char *path, uint64_t size) {
    if (size > (uint64_t)INT64_MAX) return tdb_err(TDB_ERR_INVALID_ARG, "truncate %s: size out of range", path);
    int r;
    do {
        r = truncate(path, (off_t)size);
    } while (r != 0 && errno == EINTR);
    if (r != 0) return os_err(errno, "truncate", path);
    return TDB_OK;
}

/* rename(2): atomically replaces `to`. */
static int px_rename(env_t *e, const char *from, const char *to) {
    if (rename(from, to) != 0) {
        char tmp[128];
        int en = errno;
        return tdb_err(tdb_errno_code(en), "rename %s -> %s: %s", from, to, os_strerror(en, tmp, sizeof tmp));
    }
    return TDB_OK;
}

/* unlink(2). */
static int px_remove(env_t *e, const char *path) {
    if (unlink(path) != 0) return os_err(errno, "remove", path);
    return TDB_OK;
}

/* mkdir(2); an existing directory is success. */
static int px_mkdir(env_t *e, const char *path) {
    if (mkdir(path, 0755) == 0) return TDB_OK;
    int en = errno;
    if (en == EEXIST) {
        struct stat st;
        if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) return TDB_OK;
        return tdb_err(TDB_ERR_EXISTS, "mkdir %s: exists and is not a directory", path);
    }
    return os_err(en, "mkdir", path);
}

/* rmdir(2). */
static int px_rmdir(env_t *e, const char *path) {
    if (rmdir(path) != 0) return os_err(errno, "rmdir", path);
    return TDB_OK;
}

/* Names in a directory, without "." and "..". */
static int px_list_dir(env_t *e, const char *path, char ***names, size_t *count) {
    *names = NULL;
    *count = 0;
    DIR *d = opendir(path);
    if (!d) return os_err(errno, "opendir", path);
    size_t n = 0, cap = 16;
    char **v = (char **)malloc(cap * sizeof *v);
    int rc = TDB_OK;
    if (!v) {
        rc = tdb_err(TDB_ERR_NOMEM, "list %s: out of memory", path);
        goto done;
    }
    for (;;) {
        errno = 0;
        struct dirent *de = readdir(d);
        if (!de) {
            if (errno != 0) rc = os_err(errno, "readdir", path);
            break;
        }
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
        if (n == cap) {
            char **nv = (char **)realloc(v, cap * 2 * sizeof *v);
            if (!nv) {
                rc = tdb_err(TDB_ERR_NOMEM, "list %s: out of memory", path);
                break;
            }
            v = nv;
            cap *= 2;
        }
        if (!(v[n] = strdup(de->d_name))) {
            rc = tdb_err(TDB_ERR_NOMEM, "list %s: out of memory", path);
            break;
        }
        n++;
    }
done:
    closedir(d);
    if (rc != TDB_OK) {
        env_free_list(v, n);
        return rc;
    }
    *names = v;
    *count = n;
    return TDB_OK;
}

/* fsync a directory so entries created or renamed in it are durable. */
static int px_sync_dir(env_t *e, const char *path) {
    int fd = open_retry(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
    if (fd < 0) return os_err(errno, "open dir", path);
    int rc = TDB_OK;
    if (fsync(fd) != 0 && errno != EINVAL) rc = os_err(errno, "fsync dir", path); /* EINVAL: fs cannot sync dirs */
    close(fd);
    return rc;
}

/* Take a cross-process exclusive lock on fd: TDB_OK, TDB_ERR_LOCKED, or 1 if
 * the filesystem supports neither flock() nor fcntl() locks. */
static int os_lock(int fd, const char *path) {
    int r;
    do {
        r = flock(fd, LOCK_EX | LOCK_NB);
    } while (r != 0 && errno == EINTR);
    if (r == 0) return TDB_OK;
    if (errno == EWOULDBLOCK) return tdb_err(TDB_ERR_LOCKED, "lock %s: held by another process", path);
    if (errno != ENOLCK && errno != EOPNOTSUPP && errno != ENOSYS && errno != EINVAL)
        return os_err(errno, "flock", path);
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    do {
        r = fcntl(fd, F_SETLK, &fl);
    } while (r != 0 && errno == EINTR);
    if (r == 0) return TDB_OK;
    if (errno == EACCES || errno == EAGAIN) return tdb_err(TDB_ERR_LOCKED, "lock %s: held by another process", path);
    return 1; /* no lock support: the in-process registry is all we have */
}

/* The registered lock on file (dev, ino), or NULL. Caller holds g_lock_mu. */
static struct env_lock *lock_find(dev_t dev, ino_t ino) {
    for (struct env_lock *h = g_locks; h; h = h->next)
        if (h->dev == dev && h->ino == ino) return h;
    return NULL;
}

/* Exclusive lock on path (created if missing), held until unlock. */
static int px_lock_file(env_t *e, const char *path, env_lock_t **out) {
    *out = NULL;
    struct env_lock *l = (struct env_lock *)calloc(1, sizeof *l);
    if (!l || !(l->path = strdup(path))) {
        free(l);
        return tdb_err(TDB_ERR_NOMEM, "lock %s: out of memory", path);
    }
    l->fd = -1;
    int rc = TDB_OK;
    struct stat st;
    memset(&st, 0, sizeof st);
    struct env_lock *held;
    pthread_mutex_lock(&g_lock_mu);
    /* Refuse a lock this process holds before opening the file: with fcntl()
     * locks, closing any descriptor of the file would drop the held lock. */
    if (stat(path, &st) == 0 && (held = lock_find(st.st_dev, st.st_ino)) != NULL)
        RAISE(TDB_ERR_LOCKED, "lock %s: already held by this process (as %s)", path, held->path);
    l->fd = open_retry(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (l->fd < 0) {
        rc = os_err(errno, "open lock file", path);
        goto err;
    }
    if (fstat(l->fd, &st) != 0) {
        rc = os_err(errno, "stat lock file", path);
        goto err;
    }
    l->dev = st.st_dev;
    l->ino = st.st_ino;
    if ((held = lock_find(l->dev, l->ino)) != NULL)
        RAISE(TDB_ERR_LOCKED, "lock %s: already held by this process (as %s)", path, held->path);
    rc = os_lock(l->fd, path);
    if (rc == 1) rc = TDB_OK;
    if (rc != TDB_OK) goto err;
    l->next = g_locks;
    g_locks = l;
    pthread_mutex_unlock(&g_lock_mu);
    *out = l;
    return TDB_OK;
err:
    if (l->fd >= 0) close(l->fd);
    pthread_mutex_unlock(&g_lock_mu);
    free(l->path);
    free(l);
    return rc;
}

/* Release a lock taken by px_lock_file and free it. */
static int px_unlock_file(env_t *e, env_lock_t *l) {
    if (!l) return TDB_OK;
    int rc = TDB_OK;
    pthread_mutex_lock(&g_lock_mu);
    for (struct env_lock **pp = &g_locks; *pp; pp = &(*pp)->next) {
        if (*pp == l) {
            *pp = l->next;
            break;
        }
    }
    /* Closing the only descriptor releases the flock/fcntl lock; do it under
     * the mutex so a concurrent relock in this process cannot race it. */
    if (close(l->fd) != 0 && errno != EINTR) rc = os_err(errno, "close lock file", l->path);
    pthread_mutex_unlock(&g_lock_mu);
    free(l->path);
    free(l);
    return rc;
}

/* link(2); NOT_SUPPORTED where the filesystem cannot link (across
 * filesystems, or no hard links), so the caller copies. */
static int px_link(env_t *e, const char *from, const char *to) {
    if (link(from, to) == 0) return TDB_OK;
    char tmp[128];
    int en = errno;
    int code = en == EXDEV || en == EPERM || en == EMLINK || en == EOPNOTSUPP ? TDB_ERR_NOT_SUPPORTED : tdb_errno_code(en);
    return tdb_err(code, "link %s -> %s: %s", from, to, os_strerror(en, tmp, sizeof tmp));
}

/* Microseconds on CLOCK_MONOTONIC. */
static uint64_t px_now_micros(env_t *e) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static env_t g_posix_env = {
    .open_writable = px_open_writable,
    .open_log = px_open_log,
    .open_readable = px_open_readable,
    .append = px_append,
    .pread = px_pread,
    .map_readable = px_map_readable,
    .sync = px_sync,
    .size = px_size,
    .close = px_close,
    .file_size = px_file_size,
    .exists = px_exists,
    .truncate = px_truncate,
    .rename = px_rename,
    .remove = px_remove,
    .mkdir = px_mkdir,
    .rmdir = px_rmdir,
    .list_dir = px_list_dir,
    .sync_dir = px_sync_dir,
    .lock_file = px_lock_file,
    .unlock_file = px_unlock_file,
    .now_micros = px_now_micros,
    .link = px_link,
};

/* The process-wide POSIX environment (a static singleton). */
env_t *env_posix(void) { return &g_posix_env; }
