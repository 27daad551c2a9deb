package tidesdb

// #include "shim.h"
import "C"

import (
	"runtime"
	"time"
)

// Batch collects writes that DB.Write applies atomically, across column
// families, in order (later operations on a key win). A Batch belongs to
// one goroutine at a time. The library copies keys and values as they are
// added. Close releases it; it can be reused after Write or Clear.
type Batch struct {
	db *DB
	c  *C.tdb_batch_t // nil once closed
}

// NewBatch returns an empty batch for this database.
func (db *DB) NewBatch() (*Batch, error) {
	var c *C.tdb_batch_t
	if err := errOf("new batch", C.tdbgo_batch_create(&c)); err != nil {
		return nil, err
	}
	b := &Batch{db: db, c: c}
	runtime.SetFinalizer(b, func(b *Batch) {
		if b.c != nil {
			C.tdb_batch_destroy(b.c)
			b.c = nil
			leaked.Add(1)
		}
	})
	return b, nil
}

// prep checks the batch and family and takes the database's read lock
// (the library reads the family handle).
func (b *Batch) prep(op string, cf *ColumnFamily) (*C.tdb_cf_t, error) {
	if b.c == nil {
		return nil, newErr(op, ErrClosed, "batch is closed")
	}
	c, err := b.db.cfArg(op, cf)
	if err != nil {
		return nil, err
	}
	if err := b.db.core.lock(op); err != nil {
		return nil, err
	}
	return c, nil
}

// Put adds key = value in cf (nil = the default family).
func (b *Batch) Put(cf *ColumnFamily, key, value []byte) error { return b.PutTTL(cf, key, value, 0) }

// PutTTL adds key = value expiring after ttl (see ColumnFamily.PutTTL).
func (b *Batch) PutTTL(cf *ColumnFamily, key, value []byte, ttl time.Duration) error {
	c, err := b.prep("batch put", cf)
	if err != nil {
		return err
	}
	r := C.tdbgo_batch_put(b.c, c, ptr(key), C.size_t(len(key)), ptr(value), C.size_t(len(value)), ttlSeconds(ttl))
	b.db.core.mu.RUnlock()
	runtime.KeepAlive(b)
	return errOf("batch put", r)
}

// Delete adds a delete of key in cf (nil = the default family).
func (b *Batch) Delete(cf *ColumnFamily, key []byte) error {
	c, err := b.prep("batch delete", cf)
	if err != nil {
		return err
	}
	r := C.tdbgo_batch_delete(b.c, c, ptr(key), C.size_t(len(key)))
	b.db.core.mu.RUnlock()
	runtime.KeepAlive(b)
	return errOf("batch delete", r)
}

// SingleDelete adds a single delete of key (see ColumnFamily.SingleDelete).
func (b *Batch) SingleDelete(cf *ColumnFamily, key []byte) error {
	c, err := b.prep("batch single delete", cf)
	if err != nil {
		return err
	}
	r := C.tdbgo_batch_single_delete(b.c, c, ptr(key), C.size_t(len(key)))
	b.db.core.mu.RUnlock()
	runtime.KeepAlive(b)
	return errOf("batch single delete", r)
}

// DeleteRange adds a delete of every key k with start <= k < end.
func (b *Batch) DeleteRange(cf *ColumnFamily, start, end []byte) error {
	c, err := b.prep("batch delete range", cf)
	if err != nil {
		return err
	}
	r := C.tdbgo_batch_delete_range(b.c, c, ptr(start), C.size_t(len(start)), ptr(end), C.size_t(len(end)))
	b.db.core.mu.RUnlock()
	runtime.KeepAlive(b)
	return errOf("batch delete range", r)
}

// Count returns the number of operations in the batch (0 once closed).
func (b *Batch) Count() int {
	if b.c == nil {
		return 0
	}
	n := int(C.tdb_batch_count(b.c))
	runtime.KeepAlive(b)
	return n
}

// Clear empties the batch for reuse.
func (b *Batch) Clear() error {
	if b.c == nil {
		return newErr("batch clear", ErrClosed, "batch is closed")
	}
	C.tdb_batch_clear(b.c)
	runtime.KeepAlive(b)
	return nil
}

// Close releases the batch; a second Close returns ErrClosed.
func (b *Batch) Close() error {
	if b.c == nil {
		return newErr("batch close", ErrClosed, "batch is already closed")
	}
	runtime.SetFinalizer(b, nil)
	C.tdb_batch_destroy(b.c)
	b.c = nil
	return nil
}

// Write applies b atomically (opts nil = defaults). Durable when it
// returns per the strictest sync mode among the batch's families. On
// ErrBusy (back-pressure) nothing was applied: retry later. The batch
// keeps its contents: Clear it to reuse it.
func (db *DB) Write(b *Batch, opts *WriteOptions) error {
	if b == nil {
		return newErr("write", ErrInvalidArg, "batch is nil")
	}
	if b.c == nil {
		return newErr("write", ErrClosed, "batch is closed")
	}
	if b.db != db {
		return newErr("write", ErrInvalidArg, "batch belongs to another database")
	}
	var stall C.int64_t
	var has C.int
	if opts != nil {
		stall, has = msOrUnbounded(opts.StallTimeout), 1
	}
	if err := db.core.lock("write"); err != nil {
		return err
	}
	r := C.tdbgo_write(db.core.c, b.c, stall, has)
	db.core.mu.RUnlock()
	runtime.KeepAlive(b)
	return errOf("write", r)
}
