package tidesdb

// The library is linked statically: libtidesdb.a from the build directory
// of this checkout (build/, the README's build command) or from the
// linker's search path (an installed library); a CGO_LDFLAGS=-L<dir>
// comes first and so picks another build. test.sh shows the whole recipe.

// #cgo CFLAGS: -I${SRCDIR}/../../include
// #cgo LDFLAGS: -L${SRCDIR}/../../build -l:libtidesdb.a -llz4 -lzstd -lxxhash -lsnappy -lpthread -lm
// #include "shim.h"
import "C"

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"
)

// DB is an open database. It is safe for concurrent use by many
// goroutines. Close it when done: Close first closes every iterator,
// snapshot and transaction still open on it (their later use returns
// ErrClosed), then the database.
type DB struct {
	core *dbCore
}

// dbCore is the state the children share. Invariants:
//  1. c is non-nil while open; it is set to nil only under mu's write
//     lock (Close), so a caller holding mu.RLock sees it stable.
//  2. Every call into the library on this database or anything derived
//     from it (families, iterators, snapshots, transactions, batches that
//     name a family) holds mu.RLock; Close waits for them.
//  3. children holds the cores of open iterators, snapshots and
//     transactions; Close releases them before tdb_close. Guarded by
//     regMu, a leaf lock.
//  4. Cores never point back at the Go handles users hold, so a handle
//     dropped without Close is collected and its finalizer releases the
//     C object (counted in leaked).
type dbCore struct {
	mu       sync.RWMutex
	c        *C.tdb_t
	def      *C.tdb_cf_t // the default family
	regMu    sync.Mutex
	children map[child]struct{}
	getHint  atomic.Int64 // size of the last value read: Get's buffer size
}

// child is an open iterator, snapshot or transaction core.
type child interface {
	// release frees the C object; the caller holds the database's write
	// lock (nothing else runs on it).
	release()
}

// leaked counts handles released by a finalizer instead of Close.
var leaked atomic.Int64

func (d *dbCore) register(ch child) {
	d.regMu.Lock()
	d.children[ch] = struct{}{}
	d.regMu.Unlock()
}

func (d *dbCore) unregister(ch child) {
	d.regMu.Lock()
	delete(d.children, ch)
	d.regMu.Unlock()
}

// lock takes the read lock for a call; it fails once the database is
// closed.
func (d *dbCore) lock(op string) error {
	d.mu.RLock()
	if d.c == nil {
		d.mu.RUnlock()
		return newErr(op, ErrClosed, "database is closed")
	}
	return nil
}

// cstr returns a C copy of s (free it with C.free); a NUL inside s would
// cut the C string short, so it is refused.
func cstr(op, s string) (*C.char, error) {
	if strings.IndexByte(s, 0) >= 0 {
		return nil, newErr(op, ErrInvalidArg, fmt.Sprintf("%q contains a NUL byte", s))
	}
	return C.CString(s), nil
}

// ptr returns the address of b's first byte, or nil for an empty slice.
// The library copies what it needs before the call returns.
func ptr(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(unsafe.SliceData(b))
}

// Open opens (by default creating) the database in directory path. opts
// nil means DefaultOptions(). Only one process may hold a database open:
// ErrLocked otherwise. A crash is recovered from the write-ahead log.
func Open(path string, opts *Options) (*DB, error) {
	var cfg C.tdb_config_t
	C.tdb_config_default(&cfg)
	if opts != nil {
		if err := opts.toC(&cfg); err != nil {
			return nil, err
		}
	}
	p, err := cstr("open", path)
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(p))
	var c *C.tdb_t
	if err := errOf("open", C.tdbgo_open(p, &cfg, &c)); err != nil {
		return nil, err
	}
	var dc *C.tdb_cf_t
	dn := C.CString(DefaultColumnFamily)
	defer C.free(unsafe.Pointer(dn))
	if err := errOf("open", C.tdbgo_get_cf(c, dn, &dc)); err != nil {
		C.tdb_close(c)
		return nil, err
	}
	// No handle the users see is reachable from the core (invariant 4),
	// so db is collectable, and finalized, once the last of them is.
	db := &DB{core: &dbCore{c: c, def: dc, children: map[child]struct{}{}}}
	runtime.SetFinalizer(db, func(db *DB) {
		if db.core.closeAll() == nil {
			leaked.Add(1)
		}
	})
	return db, nil
}

// Close closes every iterator, snapshot and transaction still open on the
// database, then the database itself (waiting for background work; data
// in memtables is recovered from the WAL at the next open). A second Close
// returns ErrClosed. The error of a background failure is reported here.
func (db *DB) Close() error {
	runtime.SetFinalizer(db, nil)
	return db.core.closeAll()
}

func (d *dbCore) closeAll() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.c == nil {
		return newErr("close", ErrClosed, "database is already closed")
	}
	d.regMu.Lock()
	for ch := range d.children {
		ch.release()
	}
	clear(d.children)
	d.regMu.Unlock()
	err := errOf("close", C.tdbgo_close(d.c))
	d.c = nil
	return err
}

// DefaultColumnFamily is the name of the family every database has.
const DefaultColumnFamily = "default"

// Default returns the "default" column family, which always exists.
func (db *DB) Default() *ColumnFamily {
	return &ColumnFamily{db: db, c: db.core.def, name: DefaultColumnFamily}
}

// cfArg resolves a family argument: nil is the default family; a family
// of another database is refused.
func (db *DB) cfArg(op string, cf *ColumnFamily) (*C.tdb_cf_t, error) {
	if cf == nil {
		return db.core.def, nil
	}
	if cf.db != db {
		return nil, newErr(op, ErrInvalidArg, "column family '"+cf.name+"' belongs to another database")
	}
	return cf.c, nil
}

// CreateColumnFamily creates a family (opts nil = DefaultCFOptions());
// ErrExists if it is there already.
func (db *DB) CreateColumnFamily(name string, opts *CFOptions) (*ColumnFamily, error) {
	var cfg C.tdb_cf_config_t
	C.tdb_cf_config_default(&cfg)
	if opts != nil {
		if err := opts.toC(&cfg); err != nil {
			return nil, err
		}
	}
	if err := db.core.lock("create column family"); err != nil {
		return nil, err
	}
	defer db.core.mu.RUnlock()
	n, err := cstr("create column family", name)
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(n))
	var c *C.tdb_cf_t
	if err := errOf("create column family", C.tdbgo_create_cf(db.core.c, n, &cfg, &c)); err != nil {
		return nil, err
	}
	return &ColumnFamily{db: db, c: c, name: name}, nil
}

// ColumnFamily looks a family up by name: ErrNotFound if absent.
func (db *DB) ColumnFamily(name string) (*ColumnFamily, error) {
	if err := db.core.lock("column family"); err != nil {
		return nil, err
	}
	defer db.core.mu.RUnlock()
	n, err := cstr("column family", name)
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(n))
	var c *C.tdb_cf_t
	if err := errOf("column family", C.tdbgo_get_cf(db.core.c, n, &c)); err != nil {
		return nil, err
	}
	return &ColumnFamily{db: db, c: c, name: name}, nil
}

// DropColumnFamily drops a family and deletes its data. Its handles then
// return ErrClosed. The default family cannot be dropped.
func (db *DB) DropColumnFamily(name string) error {
	if err := db.core.lock("drop column family"); err != nil {
		return err
	}
	defer db.core.mu.RUnlock()
	n, err := cstr("drop column family", name)
	if err != nil {
		return err
	}
	defer C.free(unsafe.Pointer(n))
	return errOf("drop column family", C.tdbgo_drop_cf(db.core.c, n))
}

// ListColumnFamilies returns the names of all families.
func (db *DB) ListColumnFamilies() ([]string, error) {
	if err := db.core.lock("list column families"); err != nil {
		return nil, err
	}
	defer db.core.mu.RUnlock()
	var names **C.char
	var n C.size_t
	if err := errOf("list column families", C.tdbgo_list_cfs(db.core.c, &names, &n)); err != nil {
		return nil, err
	}
	arr := unsafe.Slice(names, int(n))
	out := make([]string, len(arr))
	for i, s := range arr {
		out[i] = C.GoString(s)
		C.tdb_free(unsafe.Pointer(s))
	}
	C.tdb_free(unsafe.Pointer(names))
	return out, nil
}

// Put writes key = value in the default family.
func (db *DB) Put(key, value []byte) error { return put(db.core, db.core.def, key, value, 0) }

// Get reads key from the default family: ErrNotFound if absent.
func (db *DB) Get(key []byte) ([]byte, error) { return get(db.core, db.core.def, nil, key) }

// Delete deletes key from the default family.
func (db *DB) Delete(key []byte) error { return del(db.core, db.core.def, key) }

// NewIterator opens an iterator over the default family (opts may be nil).
func (db *DB) NewIterator(opts *IterOptions) (*Iterator, error) {
	return db.Default().NewIterator(opts)
}

// Sync makes every write acknowledged so far durable (fsyncs the WAL),
// whatever the families' sync modes.
func (db *DB) Sync() error {
	if err := db.core.lock("sync"); err != nil {
		return err
	}
	defer db.core.mu.RUnlock()
	return errOf("sync", C.tdbgo_sync(db.core.c))
}

// Flush writes the memtables of cf (nil = all families) to disk and waits.
func (db *DB) Flush(cf *ColumnFamily) error {
	return db.maint("flush", cf, func(c *C.tdb_t, f *C.tdb_cf_t) C.tdbgo_rc { return C.tdbgo_flush(c, f) })
}

// Compact compacts cf (nil = all families) fully down its levels and waits.
func (db *DB) Compact(cf *ColumnFamily) error {
	return db.maint("compact", cf, func(c *C.tdb_t, f *C.tdb_cf_t) C.tdbgo_rc { return C.tdbgo_compact(c, f) })
}

func (db *DB) maint(op string, cf *ColumnFamily, fn func(*C.tdb_t, *C.tdb_cf_t) C.tdbgo_rc) error {
	var c *C.tdb_cf_t
	if cf != nil {
		var err error
		if c, err = db.cfArg(op, cf); err != nil {
			return err
		}
	}
	if err := db.core.lock(op); err != nil {
		return err
	}
	defer db.core.mu.RUnlock()
	return errOf(op, fn(db.core.c, c))
}

// WaitIdle waits until no flush or compaction is queued or running
// (ErrBusy at once while background work is paused).
func (db *DB) WaitIdle() error {
	return db.simple("wait idle", func(c *C.tdb_t) C.tdbgo_rc { return C.tdbgo_wait_idle(c) })
}

// PauseBackground stops starting flushes and compactions (calls nest).
func (db *DB) PauseBackground() error {
	return db.simple("pause background", func(c *C.tdb_t) C.tdbgo_rc { return C.tdbgo_pause_background(c) })
}

// ContinueBackground undoes one PauseBackground.
func (db *DB) ContinueBackground() error {
	return db.simple("continue background", func(c *C.tdb_t) C.tdbgo_rc { return C.tdbgo_continue_background(c) })
}

func (db *DB) simple(op string, fn func(*C.tdb_t) C.tdbgo_rc) error {
	if err := db.core.lock(op); err != nil {
		return err
	}
	defer db.core.mu.RUnlock()
	return errOf(op, fn(db.core.c))
}

// Checkpoint writes a consistent copy of the open database into dir (which
// must not exist or be empty) and returns the sequence number it holds.
func (db *DB) Checkpoint(dir string) (uint64, error) {
	if err := db.core.lock("checkpoint"); err != nil {
		return 0, err
	}
	defer db.core.mu.RUnlock()
	d, err := cstr("checkpoint", dir)
	if err != nil {
		return 0, err
	}
	defer C.free(unsafe.Pointer(d))
	var seq C.uint64_t
	if err := errOf("checkpoint", C.tdbgo_checkpoint(db.core.c, d, &seq)); err != nil {
		return 0, err
	}
	return uint64(seq), nil
}

// Stats returns the figures of one family, or of the whole database for
// cf nil.
func (db *DB) Stats(cf *ColumnFamily) (Stats, error) {
	var c *C.tdb_cf_t
	if cf != nil {
		var err error
		if c, err = db.cfArg("stats", cf); err != nil {
			return Stats{}, err
		}
	}
	if err := db.core.lock("stats"); err != nil {
		return Stats{}, err
	}
	defer db.core.mu.RUnlock()
	var s C.tdb_stats_t
	if err := errOf("stats", C.tdbgo_get_stats(db.core.c, c, &s)); err != nil {
		return Stats{}, err
	}
	return statsFromC(&s), nil
}

// RecoverPrepared lists the xids of the unresolved prepared transactions
// (recovered after a crash, or prepared by live handles).
func (db *DB) RecoverPrepared() ([][]byte, error) {
	if err := db.core.lock("recover prepared"); err != nil {
		return nil, err
	}
	defer db.core.mu.RUnlock()
	x := (*C.tdbgo_xids)(C.calloc(1, C.sizeof_tdbgo_xids))
	defer C.free(unsafe.Pointer(x))
	defer C.tdbgo_xids_free(x)
	if err := errOf("recover prepared", C.tdbgo_recover_prepared(db.core.c, x)); err != nil {
		return nil, err
	}
	out := make([][]byte, int(x.n))
	for i := range out {
		out[i] = C.GoBytes(C.tdbgo_xid_at(x, C.size_t(i)), C.int(C.tdbgo_xid_len(x, C.size_t(i))))
	}
	return out, nil
}

// CommitPrepared commits the prepared transaction xid (ErrNotFound if
// none; ErrBusy while a live Txn owns it: resolve it through the Txn).
func (db *DB) CommitPrepared(xid []byte) error {
	if err := db.core.lock("commit prepared"); err != nil {
		return err
	}
	defer db.core.mu.RUnlock()
	return errOf("commit prepared", C.tdbgo_commit_prepared(db.core.c, ptr(xid), C.size_t(len(xid))))
}

// RollbackPrepared rolls back the prepared transaction xid.
func (db *DB) RollbackPrepared(xid []byte) error {
	if err := db.core.lock("rollback prepared"); err != nil {
		return err
	}
	defer db.core.mu.RUnlock()
	return errOf("rollback prepared", C.tdbgo_rollback_prepared(db.core.c, ptr(xid), C.size_t(len(xid))))
}
