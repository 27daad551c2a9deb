/*
 * util/error: the one error idiom used everywhere in the engine.
 *
 * Every fallible internal function returns int: TDB_OK or a negative
 * TDB_ERR_* code from the public header. A function that detects an error
 * raises it with tdb_err(code, fmt, ...), which records a thread-local
 * detail message (see tdb_last_error()) and returns code. Callers propagate
 * with TRY(), which jumps to the function's single `err:` cleanup label:
 *
 *     int f(...) {
 *         int rc = TDB_OK;
 *         TRY(g());
 *         if (bad) { RAISE(TDB_ERR_CORRUPTION, "%s: bad magic", name); }
 *     err:
 *         cleanup...;
 *         return rc;
 *     }
 *
 * The three shapes (WiredTiger's WT_ERR / WT_RET / WT_TRET):
 *  - TRY(expr): on error, rc = its code and goto err (a function that owns
 *    something to release);
 *  - TDB_RET(expr): on error, return its code at once (nothing to release:
 *    instead of `rc = g(); if (rc != TDB_OK) return rc;`);
 *  - TDB_TRET(expr): always evaluate expr (a cleanup step that must run)
 *    and keep the first error: rc takes its code only while rc is TDB_OK
 *    (instead of `r = g(); if (r != TDB_OK && rc == TDB_OK) rc = r;`).
 */
#ifndef TDB_UTIL_ERROR_H
#define TDB_UTIL_ERROR_H

#include "tidesdb/tidesdb.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Record a detail message for `code` on this thread and return `code`. */
int tdb_err(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Map an errno value to a TDB_ERR_* code (ENOSPC -> NO_SPACE, ...). */
int tdb_errno_code(int errnum);

#define TRY(expr)                                                              \
    do {                                                                       \
        rc = (expr);                                                           \
        if (rc != TDB_OK) goto err;                                            \
    } while (0)

#define TDB_RET(expr)                                                          \
    do {                                                                       \
        int tdb_ret_ = (expr);                                                 \
        if (tdb_ret_ != TDB_OK) return tdb_ret_;                               \
    } while (0)

#define TDB_TRET(expr)                                                         \
    do {                                                                       \
        int tdb_tret_ = (expr);                                                \
        if (tdb_tret_ != TDB_OK && rc == TDB_OK) rc = tdb_tret_;               \
    } while (0)

#define RAISE(code, ...)                                                        \
    do {                                                                       \
        rc = tdb_err((code), __VA_ARGS__);                                     \
        goto err;                                                              \
    } while (0)

#define TDB_LIKELY(x) __builtin_expect(!!(x), 1)
#define TDB_UNLIKELY(x) __builtin_expect(!!(x), 0)

#ifdef __cplusplus
}
#endif
#endif
