package tidesdb

// #include "shim.h"
import "C"

import (
	"bytes"
	"time"
	"unsafe"
)

// ColumnFamily is a handle on a column family of an open database: a
// separate key space with its own settings, written atomically with the
// others through batches and transactions. Safe for concurrent use. It
// stays valid until the database is closed or the family dropped
// (ErrClosed then).
type ColumnFamily struct {
	db   *DB
	c    *C.tdb_cf_t
	name string
}

// Name returns the family's name.
func (cf *ColumnFamily) Name() string { return cf.name }

// Options returns the family's settings.
func (cf *ColumnFamily) Options() (CFOptions, error) {
	if err := cf.db.core.lock("column family options"); err != nil {
		return CFOptions{}, err
	}
	defer cf.db.core.mu.RUnlock()
	var c C.tdb_cf_config_t
	if err := errOf("column family options", C.tdbgo_cf_get_config(cf.c, &c)); err != nil {
		return CFOptions{}, err
	}
	return cfOptionsFromC(&c), nil
}

// ttlSeconds converts a TTL to the library's whole seconds (a positive
// TTL below a second counts as one); 0 = no expiry.
func ttlSeconds(ttl time.Duration) C.int64_t {
	if ttl > 0 && ttl < time.Second {
		return 1
	}
	return C.int64_t((ttl + time.Second - 1) / time.Second)
}

// Put writes key = value (durable when it returns per the family's sync
// mode). Keys are 1..64 KiB, values up to 256 MiB.
func (cf *ColumnFamily) Put(key, value []byte) error { return cf.PutTTL(key, value, 0) }

// PutTTL writes key = value that reads as absent once ttl has passed
// (whole seconds, rounded up; 0 = never).
func (cf *ColumnFamily) PutTTL(key, value []byte, ttl time.Duration) error {
	return put(cf.db.core, cf.c, key, value, ttl)
}

func put(d *dbCore, c *C.tdb_cf_t, key, value []byte, ttl time.Duration) error {
	if err := d.lock("put"); err != nil {
		return err
	}
	r := C.tdbgo_put(d.c, c, ptr(key), C.size_t(len(key)), ptr(value), C.size_t(len(value)), ttlSeconds(ttl))
	d.mu.RUnlock()
	return errOf("put", r)
}

// Delete deletes key (absent keys are fine).
func (cf *ColumnFamily) Delete(key []byte) error { return del(cf.db.core, cf.c, key) }

func del(d *dbCore, c *C.tdb_cf_t, key []byte) error {
	if err := d.lock("delete"); err != nil {
		return err
	}
	r := C.tdbgo_delete(d.c, c, ptr(key), C.size_t(len(key)))
	d.mu.RUnlock()
	return errOf("delete", r)
}

// SingleDelete deletes a key written exactly once since its last delete
// (see tdb_batch_single_delete for the contract; mixing it with Delete or
// a second Put of the key is undefined).
func (cf *ColumnFamily) SingleDelete(key []byte) error {
	d := cf.db.core
	if err := d.lock("single delete"); err != nil {
		return err
	}
	defer d.mu.RUnlock()
	return errOf("single delete", C.tdbgo_single_delete(d.c, cf.c, ptr(key), C.size_t(len(key))))
}

// DeleteRange deletes every key k with start <= k < end.
func (cf *ColumnFamily) DeleteRange(start, end []byte) error {
	d := cf.db.core
	if err := d.lock("delete range"); err != nil {
		return err
	}
	defer d.mu.RUnlock()
	return errOf("delete range", C.tdbgo_delete_range(d.c, cf.c, ptr(start), C.size_t(len(start)), ptr(end), C.size_t(len(end))))
}

// Get returns a copy of key's value: ErrNotFound if absent, deleted or
// expired.
func (cf *ColumnFamily) Get(key []byte) ([]byte, error) {
	return get(cf.db.core, cf.c, nil, key)
}

var errGetNotFound = &Error{Op: "get", Code: ErrNotFound}

// get reads into a buffer of the size of the last value read from this
// database (getHint), so that a value that fits costs one cgo call; a
// larger one falls back to copying the library's copy and freeing it.
// A snapshot read (sc non-nil) holds the snapshot's read lock too.
func get(d *dbCore, c *C.tdb_cf_t, sc *snapCore, key []byte) ([]byte, error) {
	op := "get"
	if sc != nil {
		op = "snapshot get"
	}
	buf := make([]byte, d.getHint.Load())
	if err := d.lock(op); err != nil {
		return nil, err
	}
	var snap *C.tdb_snapshot_t
	if sc != nil {
		sc.mu.RLock()
		if snap = sc.c; snap == nil {
			sc.mu.RUnlock()
			d.mu.RUnlock()
			return nil, newErr(op, ErrClosed, "snapshot is closed")
		}
	}
	r := C.tdbgo_get_into(d.c, c, snap, ptr(key), C.size_t(len(key)), ptr(buf), C.size_t(len(buf)))
	if sc != nil {
		sc.mu.RUnlock()
	}
	d.mu.RUnlock()
	if r.rc == C.TDB_OK && r.val == nil {
		n := int(r.vlen)
		if n != len(buf) {
			d.getHint.Store(int64(n))
			if n < len(buf)/2 { // do not hand out a mostly unused buffer
				return bytes.Clone(buf[:n]), nil
			}
		}
		return buf[:n:n], nil
	}
	if r.rc == C.TDB_OK {
		d.getHint.Store(int64(r.vlen))
	}
	if op == "get" {
		return takeValue(op, r, errGetNotFound)
	}
	return takeValue(op, r, errSnapGetNotFound)
}

var errSnapGetNotFound = &Error{Op: "snapshot get", Code: ErrNotFound}

// takeValue copies a looked-up value into Go memory and frees the C copy.
func takeValue(op string, r C.tdbgo_val, notFound error) ([]byte, error) {
	if r.rc != C.TDB_OK {
		if r.rc == C.TDB_ERR_NOT_FOUND && r.detail == nil {
			return nil, notFound
		}
		return nil, errDetail(op, r.rc, r.detail)
	}
	out := make([]byte, int(r.vlen))
	if r.val != nil {
		copy(out, unsafe.Slice((*byte)(r.val), int(r.vlen)))
		C.tdb_free(r.val)
	}
	return out, nil
}

// ApproximateCount estimates the entries with key in [lo, hi) (lo empty =
// from the first key, hi nil = to the last) without a scan; every
// version and tombstone counts.
func (cf *ColumnFamily) ApproximateCount(lo, hi []byte) (uint64, error) {
	d := cf.db.core
	if err := d.lock("approximate count"); err != nil {
		return 0, err
	}
	defer d.mu.RUnlock()
	var n C.uint64_t
	hp := ptr(hi)
	if hi != nil && hp == nil { // an empty, non-nil hi: an empty range
		return 0, nil
	}
	if err := errOf("approximate count", C.tdbgo_approximate_count(d.c, cf.c, ptr(lo), C.size_t(len(lo)), hp, C.size_t(len(hi)), &n)); err != nil {
		return 0, err
	}
	return uint64(n), nil
}
