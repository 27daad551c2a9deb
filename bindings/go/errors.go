package tidesdb

// #include "shim.h"
import "C"

import (
	"fmt"
	"unsafe"
)

// Code is a TidesDB error code (the C API's TDB_ERR_*). Each code is an
// error value of its own, so errors.Is(err, tidesdb.ErrNotFound) tells what
// happened; errors.As(err, &e) with e *Error gives the operation and the
// library's detail (file names, offsets).
type Code int

// The error codes, one for each TDB_ERR_* of include/tidesdb/tidesdb.h.
const (
	ErrNotFound     Code = C.TDB_ERR_NOT_FOUND     // key, column family or file absent
	ErrIO           Code = C.TDB_ERR_IO            // the OS reported an I/O error
	ErrCorruption   Code = C.TDB_ERR_CORRUPTION    // a checksum or format check failed
	ErrBusy         Code = C.TDB_ERR_BUSY          // back-pressure: retry later
	ErrConflict     Code = C.TDB_ERR_CONFLICT      // transaction conflict: retry the transaction
	ErrInvalidArg   Code = C.TDB_ERR_INVALID_ARG   // bad argument or misuse of the API
	ErrLocked       Code = C.TDB_ERR_LOCKED        // database open in another process
	ErrNoMem        Code = C.TDB_ERR_NOMEM         // out of memory
	ErrExists       Code = C.TDB_ERR_EXISTS        // already exists (column family, database)
	ErrClosed       Code = C.TDB_ERR_CLOSED        // handle used after Close (or family dropped)
	ErrReadOnly     Code = C.TDB_ERR_READ_ONLY     // sticky error state after a failed sync
	ErrNoSpace      Code = C.TDB_ERR_NO_SPACE      // disk full
	ErrDeadlock     Code = C.TDB_ERR_DEADLOCK      // lock wait would deadlock
	ErrTimeout      Code = C.TDB_ERR_TIMEOUT       // lock or stall wait timed out
	ErrTooLarge     Code = C.TDB_ERR_TOO_LARGE     // key, value or transaction too large
	ErrNotSupported Code = C.TDB_ERR_NOT_SUPPORTED // option or operation not available
	ErrAborted      Code = C.TDB_ERR_ABORTED       // wait cancelled (Txn.CancelWait)
)

// Error returns the library's name of the code ("not found", ...).
func (c Code) Error() string {
	return C.GoString(C.tdb_strerror(C.int(c)))
}

// Retryable reports whether the same call may succeed if tried again
// later: back-pressure, a transaction conflict, deadlock or timeout.
func (c Code) Retryable() bool {
	switch c {
	case ErrBusy, ErrConflict, ErrDeadlock, ErrTimeout:
		return true
	}
	return false
}

// Error is what every failing call returns: the operation, the code and
// the library's detail. It unwraps to its Code.
type Error struct {
	Op     string // the binding's method, e.g. "put", "txn commit"
	Code   Code
	Detail string // the C library's tdb_last_error() at the failure, may be ""
}

func (e *Error) Error() string {
	if e.Detail == "" {
		return fmt.Sprintf("tidesdb: %s: %s", e.Op, e.Code.Error())
	}
	return fmt.Sprintf("tidesdb: %s: %s (%s)", e.Op, e.Code.Error(), e.Detail)
}

// Unwrap returns the code, so errors.Is(err, ErrConflict) works.
func (e *Error) Unwrap() error { return e.Code }

// errOf turns a shim result into an error (nil for TDB_OK); it frees the
// detail copy.
func errOf(op string, r C.tdbgo_rc) error {
	return errDetail(op, r.rc, r.detail)
}

func errDetail(op string, rc C.int, detail *C.char) error {
	if rc == C.TDB_OK {
		return nil
	}
	e := &Error{Op: op, Code: Code(rc)}
	if detail != nil {
		e.Detail = C.GoString(detail)
		C.free(unsafe.Pointer(detail))
	}
	return e
}

// newErr is an error raised by the binding itself (misuse caught in Go).
func newErr(op string, code Code, detail string) error {
	return &Error{Op: op, Code: code, Detail: detail}
}
