/* util/error: thread-local error details and code names. */
#include "util/error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

static _Thread_local char g_last_error[512];

int tdb_err(int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_last_error, sizeof g_last_error, fmt, ap);
    va_end(ap);
    return code;
}

const char *tdb_last_error(void) { return g_last_error; }

int tdb_errno_code(int errnum) {
    switch (errnum) {
    case ENOENT: return TDB_ERR_NOT_FOUND;
    case ENOSPC:
    case EDQUOT: return TDB_ERR_NO_SPACE;
    case ENOMEM: return TDB_ERR_NOMEM;
    case EEXIST: return TDB_ERR_EXISTS;
    case EINVAL: return TDB_ERR_INVALID_ARG;
    case EROFS: return TDB_ERR_READ_ONLY;
    case EWOULDBLOCK: return TDB_ERR_LOCKED;
    default: return TDB_ERR_IO;
    }
}

const char *tdb_strerror(int code) {
    switch (code) {
    case TDB_OK: return "ok";
    case TDB_ERR_NOT_FOUND: return "not found";
    case TDB_ERR_IO: return "I/O error";
    case TDB_ERR_CORRUPTION: return "corruption";
    case TDB_ERR_BUSY: return "busy";
    case TDB_ERR_CONFLICT: return "conflict";
    case TDB_ERR_INVALID_ARG: return "invalid argument";
    case TDB_ERR_LOCKED: return "locked";
    case TDB_ERR_NOMEM: return "out of memory";
    case TDB_ERR_EXISTS: return "already exists";
    case TDB_ERR_CLOSED: return "handle closed";
    case TDB_ERR_READ_ONLY: return "read-only after error";
    case TDB_ERR_NO_SPACE: return "no space left";
    case TDB_ERR_DEADLOCK: return "deadlock";
    case TDB_ERR_TIMEOUT: return "timed out";
    case TDB_ERR_TOO_LARGE: return "too large";
    case TDB_ERR_NOT_SUPPORTED: return "not supported";
    case TDB_ERR_ABORTED: return "aborted";
    default: return "unknown error";
    }
}
