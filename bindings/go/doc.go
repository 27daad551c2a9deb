// Package tidesdb is the Go binding of TidesDB, an embeddable, durable,
// ordered key-value store (an LSM tree). It wraps the C API of
// include/tidesdb/tidesdb.h through cgo, one Go call per C call, and
// links this repository's static library (see test.sh for the build).
//
//	db, err := tidesdb.Open("/tmp/db", nil)
//	if err != nil { ... }
//	defer db.Close()
//	err = db.Put([]byte("k"), []byte("v"))
//	v, err := db.Get([]byte("k"))       // errors.Is(err, tidesdb.ErrNotFound) if absent
//	it, err := db.NewIterator(&tidesdb.IterOptions{Prefix: []byte("k")})
//	for k, v := range it.All() { ... }  // it.Backward(), it.From(key), or First/Next/Seek...
//
// Surface: DB (Open, Close, column families, Put/Get/Delete, DeleteRange,
// SingleDelete, PutTTL, Write of a Batch, Flush, Compact, Checkpoint,
// Stats, two-phase commit recovery), ColumnFamily, Batch, Iterator
// (forward, reverse, seek, bounds and prefixes, range-over-func),
// Snapshot, Txn (isolation levels, savepoints, pessimistic row locks,
// Prepare). Every handle is an io.Closer; a second Close, or any use after
// Close, returns an error with code ErrClosed.
//
// Errors: every failure is an *Error carrying the library's code (a Code,
// usable with errors.Is: ErrNotFound, ErrConflict, ErrBusy, ...) and its
// detail. Code.Retryable tells the codes worth retrying.
//
// Memory: keys and values are []byte in and []byte out. The library
// copies what it is given before a call returns, so callers may reuse
// their buffers; what it returns is copied into Go memory, so results
// stay valid after the handle is closed. No Go pointer is kept by C.
//
// Concurrency: DB, ColumnFamily, Snapshot and Txn are safe for concurrent
// use; an Iterator and a Batch belong to one goroutine at a time. Close
// waits for calls in flight on the handle. Closing a DB closes every
// iterator, snapshot and transaction still open on it. A handle dropped
// without Close is released by a finalizer, but only when the garbage
// collector runs: Close is the way to release resources.
package tidesdb
