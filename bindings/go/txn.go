package tidesdb

// #include "shim.h"
import "C"

import (
	"runtime"
	"sync"
	"time"
	"unsafe"
)

// Txn is a multi-version transaction across column families: writes are
// buffered and applied atomically at Commit. Safe for concurrent use (the
// calls are serialized), and CancelWait may be called from another
// goroutine while a call waits for a row lock.
//
// A transaction that failed to commit (ErrConflict, ...) is finished:
// Reset it or Close it and retry; ErrBusy from Commit (back-pressure)
// leaves it active, to Commit again or Rollback. Commit, Rollback, Reset
// and Prepare refuse (ErrInvalidArg) while an iterator of the transaction
// is open. Close rolls back an active transaction and frees it, closing
// its iterators first.
type Txn struct {
	core *txnCore
	db   *DB
}

// txnCore. Lock order: db.mu (read) -> mu -> cmu. c is nil once freed.
// mu serializes calls on the transaction and its iterators; cmu lets
// CancelWait run while a call holds mu (free takes it for writing).
// iters holds the open iterators' cores (guarded by mu).
type txnCore struct {
	db    *dbCore
	mu    sync.Mutex
	cmu   sync.RWMutex
	c     *C.tdb_txn_t
	iters map[*iterCore]struct{}
}

func txnOptsC(op string, opts *TxnOptions, c *C.tdb_txn_options_t) (*C.tdb_txn_options_t, error) {
	if opts == nil {
		return nil, nil
	}
	if err := opts.toC(c); err != nil {
		return nil, err
	}
	return c, nil
}

// Begin starts a transaction (opts nil = DefaultTxnOptions()).
func (db *DB) Begin(opts *TxnOptions) (*Txn, error) {
	var co C.tdb_txn_options_t
	cp, err := txnOptsC("begin", opts, &co)
	if err != nil {
		return nil, err
	}
	d := db.core
	if err := d.lock("begin"); err != nil {
		return nil, err
	}
	defer d.mu.RUnlock()
	var c *C.tdb_txn_t
	if err := errOf("begin", C.tdbgo_txn_begin(d.c, cp, &c)); err != nil {
		return nil, err
	}
	core := &txnCore{db: d, c: c, iters: map[*iterCore]struct{}{}}
	d.register(core)
	t := &Txn{core: core, db: db}
	runtime.SetFinalizer(t, func(t *Txn) {
		if t.core.close() == nil {
			leaked.Add(1)
		}
	})
	return t, nil
}

// release closes the iterators and frees the transaction (rolling it back
// if active); the caller holds the database's write lock, or the read
// lock with mu and cmu.
func (tc *txnCore) release() {
	if tc.c == nil {
		return
	}
	for ic := range tc.iters {
		ic.release()
	}
	clear(tc.iters)
	C.tdb_txn_free(tc.c)
	tc.c = nil
}

func (tc *txnCore) close() error {
	if err := tc.db.lock("txn close"); err != nil {
		return newErr("txn close", ErrClosed, "transaction is already closed (its database was closed)")
	}
	defer tc.db.mu.RUnlock()
	tc.mu.Lock()
	defer tc.mu.Unlock()
	tc.cmu.Lock()
	defer tc.cmu.Unlock()
	if tc.c == nil {
		return newErr("txn close", ErrClosed, "transaction is already closed")
	}
	tc.release()
	tc.db.unregister(tc)
	return nil
}

// Close rolls the transaction back if it is active and frees it (a
// prepared transaction stays prepared, resolvable by xid). A second Close
// returns ErrClosed.
func (t *Txn) Close() error {
	runtime.SetFinalizer(t, nil)
	return t.core.close()
}

// do runs fn on the C transaction with the locks held.
func (t *Txn) do(op string, fn func(c *C.tdb_txn_t) C.tdbgo_rc) error {
	tc := t.core
	if err := tc.db.lock(op); err != nil {
		return err
	}
	tc.mu.Lock()
	if tc.c == nil {
		tc.mu.Unlock()
		tc.db.mu.RUnlock()
		return newErr(op, ErrClosed, "transaction is closed")
	}
	r := fn(tc.c)
	tc.mu.Unlock()
	tc.db.mu.RUnlock()
	runtime.KeepAlive(t)
	return errOf(op, r)
}

// Put buffers key = value in cf (nil = the default family).
func (t *Txn) Put(cf *ColumnFamily, key, value []byte) error { return t.PutTTL(cf, key, value, 0) }

// PutTTL buffers key = value expiring after ttl.
func (t *Txn) PutTTL(cf *ColumnFamily, key, value []byte, ttl time.Duration) error {
	c, err := t.db.cfArg("txn put", cf)
	if err != nil {
		return err
	}
	return t.do("txn put", func(tx *C.tdb_txn_t) C.tdbgo_rc {
		return C.tdbgo_txn_put(tx, c, ptr(key), C.size_t(len(key)), ptr(value), C.size_t(len(value)), ttlSeconds(ttl))
	})
}

// Delete buffers a delete of key in cf.
func (t *Txn) Delete(cf *ColumnFamily, key []byte) error {
	c, err := t.db.cfArg("txn delete", cf)
	if err != nil {
		return err
	}
	return t.do("txn delete", func(tx *C.tdb_txn_t) C.tdbgo_rc {
		return C.tdbgo_txn_delete(tx, c, ptr(key), C.size_t(len(key)))
	})
}

// SingleDelete buffers a single delete (see ColumnFamily.SingleDelete).
func (t *Txn) SingleDelete(cf *ColumnFamily, key []byte) error {
	c, err := t.db.cfArg("txn single delete", cf)
	if err != nil {
		return err
	}
	return t.do("txn single delete", func(tx *C.tdb_txn_t) C.tdbgo_rc {
		return C.tdbgo_txn_single_delete(tx, c, ptr(key), C.size_t(len(key)))
	})
}

var errTxnGetNotFound = &Error{Op: "txn get", Code: ErrNotFound}

func (t *Txn) get(op string, cf *ColumnFamily, key []byte, forUpdate, exclusive bool) ([]byte, error) {
	c, err := t.db.cfArg(op, cf)
	if err != nil {
		return nil, err
	}
	tc := t.core
	if err := tc.db.lock(op); err != nil {
		return nil, err
	}
	tc.mu.Lock()
	if tc.c == nil {
		tc.mu.Unlock()
		tc.db.mu.RUnlock()
		return nil, newErr(op, ErrClosed, "transaction is closed")
	}
	r := C.tdbgo_txn_get(tc.c, c, ptr(key), C.size_t(len(key)), b2i(forUpdate), b2i(exclusive))
	tc.mu.Unlock()
	tc.db.mu.RUnlock()
	runtime.KeepAlive(t)
	return takeValue(op, r, errTxnGetNotFound)
}

// Get reads key through the transaction: its own writes first, then the
// database at the isolation level's snapshot. ErrNotFound if absent.
func (t *Txn) Get(cf *ColumnFamily, key []byte) ([]byte, error) {
	return t.get("txn get", cf, key, false, false)
}

// GetForUpdate reads as Get and locks the key: a shared (or exclusive)
// row lock if pessimistic; optimistic, the key joins the commit's
// conflict check.
func (t *Txn) GetForUpdate(cf *ColumnFamily, key []byte, exclusive bool) ([]byte, error) {
	return t.get("txn get for update", cf, key, true, exclusive)
}

// NewIterator opens an iterator over the transaction's view of cf (nil =
// the default family): its own writes merged with its snapshot. Close it
// before Commit or Rollback. opts' bounds apply; its Snapshot must be nil.
func (t *Txn) NewIterator(cf *ColumnFamily, opts *IterOptions) (*Iterator, error) {
	const op = "txn new iterator"
	c, err := t.db.cfArg(op, cf)
	if err != nil {
		return nil, err
	}
	if opts != nil && opts.Snapshot != nil {
		return nil, newErr(op, ErrInvalidArg, "a transaction iterator reads the transaction's snapshot")
	}
	var core *iterCore
	err = t.do(op, func(tx *C.tdb_txn_t) C.tdbgo_rc {
		var ci *C.tdb_iter_t
		r := C.tdbgo_txn_iter_create(tx, c, &ci)
		if r.rc == C.TDB_OK {
			core = &iterCore{db: t.core.db, txn: t.core, c: ci}
			core.lower, core.upper = bounds(opts)
			t.core.iters[core] = struct{}{}
		}
		return r
	})
	if err != nil {
		return nil, err
	}
	return newIterator(core, t.db, t), nil
}

// Commit applies the transaction's writes atomically. ErrConflict (under
// Snapshot or Serializable) finishes it; ErrBusy leaves it active.
func (t *Txn) Commit() error {
	return t.do("txn commit", func(tx *C.tdb_txn_t) C.tdbgo_rc { return C.tdbgo_txn_commit(tx) })
}

// Rollback discards the transaction's writes and releases its locks.
func (t *Txn) Rollback() error {
	return t.do("txn rollback", func(tx *C.tdb_txn_t) C.tdbgo_rc { return C.tdbgo_txn_rollback(tx) })
}

func (t *Txn) named(op, name string, fn func(*C.tdb_txn_t, *C.char) C.tdbgo_rc) error {
	n, err := cstr(op, name)
	if err != nil {
		return err
	}
	defer C.free(unsafe.Pointer(n))
	return t.do(op, func(tx *C.tdb_txn_t) C.tdbgo_rc { return fn(tx, n) })
}

// Savepoint marks a point to roll back to (names nest; a new savepoint
// replaces one of the same name).
func (t *Txn) Savepoint(name string) error {
	return t.named("txn savepoint", name, func(tx *C.tdb_txn_t, n *C.char) C.tdbgo_rc { return C.tdbgo_txn_savepoint(tx, n) })
}

// RollbackToSavepoint undoes the writes after the savepoint and releases
// the locks taken since; the savepoint stays.
func (t *Txn) RollbackToSavepoint(name string) error {
	return t.named("txn rollback to savepoint", name, func(tx *C.tdb_txn_t, n *C.char) C.tdbgo_rc {
		return C.tdbgo_txn_rollback_to_savepoint(tx, n)
	})
}

// ReleaseSavepoint forgets the savepoint (and those after it).
func (t *Txn) ReleaseSavepoint(name string) error {
	return t.named("txn release savepoint", name, func(tx *C.tdb_txn_t, n *C.char) C.tdbgo_rc {
		return C.tdbgo_txn_release_savepoint(tx, n)
	})
}

// Reset begins again with the same handle after Commit or Rollback
// (rolling back an active transaction); opts nil = the defaults.
func (t *Txn) Reset(opts *TxnOptions) error {
	var co C.tdb_txn_options_t
	cp, err := txnOptsC("txn reset", opts, &co)
	if err != nil {
		return err
	}
	return t.do("txn reset", func(tx *C.tdb_txn_t) C.tdbgo_rc { return C.tdbgo_txn_reset(tx, cp) })
}

// Prepare is the first phase of a two-phase commit: it validates the
// transaction and logs its writes as prepared under xid (1..1024 bytes).
// Then only Commit and Rollback are accepted; after a crash,
// DB.RecoverPrepared lists it and DB.CommitPrepared or RollbackPrepared
// resolves it.
func (t *Txn) Prepare(xid []byte, durable bool) error {
	return t.do("txn prepare", func(tx *C.tdb_txn_t) C.tdbgo_rc {
		return C.tdbgo_txn_prepare(tx, ptr(xid), C.size_t(len(xid)), b2i(durable))
	})
}

// SetLockTimeout changes the lock wait bound of the transaction's later
// lock requests (millisecond resolution; 0 = do not wait: a held lock
// fails the request with ErrTimeout at once), e.g. per statement.
func (t *Txn) SetLockTimeout(d time.Duration) error {
	if d < 0 {
		return newErr("txn set lock timeout", ErrInvalidArg, "negative lock timeout")
	}
	return t.do("txn set lock timeout", func(tx *C.tdb_txn_t) C.tdbgo_rc {
		return C.tdbgo_txn_set_lock_timeout(tx, C.int64_t(d/time.Millisecond))
	})
}

// CancelWait wakes a row-lock wait of the transaction (from another
// goroutine): the waiting call returns ErrAborted.
func (t *Txn) CancelWait() error {
	tc := t.core
	if err := tc.db.lock("txn cancel wait"); err != nil {
		return err
	}
	defer tc.db.mu.RUnlock()
	tc.cmu.RLock()
	defer tc.cmu.RUnlock()
	if tc.c == nil {
		return newErr("txn cancel wait", ErrClosed, "transaction is closed")
	}
	C.tdb_txn_cancel_wait(tc.c)
	runtime.KeepAlive(t)
	return nil
}

// SnapshotSequence returns the sequence number of the transaction's
// snapshot (0 once closed).
func (t *Txn) SnapshotSequence() uint64 {
	tc := t.core
	if tc.db.lock("txn snapshot sequence") != nil {
		return 0
	}
	defer tc.db.mu.RUnlock()
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if tc.c == nil {
		return 0
	}
	return uint64(C.tdb_txn_snapshot_sequence(tc.c))
}
