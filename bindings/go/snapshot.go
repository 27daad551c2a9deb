package tidesdb

// #include "shim.h"
import "C"

import (
	"runtime"
	"sync"
)

// Snapshot pins a point in time: reads through it never see later
// writes, and the data it can see is kept until it is closed. Safe for
// concurrent use.
type Snapshot struct {
	core *snapCore
	db   *DB
}

// snapCore: c is nil once released; reads hold mu.RLock (and the
// database's), release holds mu's write lock or the database's.
type snapCore struct {
	db  *dbCore
	mu  sync.RWMutex
	c   *C.tdb_snapshot_t
	seq uint64
}

// NewSnapshot takes a snapshot of the whole database (every family).
func (db *DB) NewSnapshot() (*Snapshot, error) {
	d := db.core
	if err := d.lock("new snapshot"); err != nil {
		return nil, err
	}
	defer d.mu.RUnlock()
	var detail *C.char
	c := C.tdbgo_snapshot_create(d.c, &detail)
	if c == nil {
		return nil, errDetail("new snapshot", C.TDB_ERR_NOMEM, detail)
	}
	core := &snapCore{db: d, c: c, seq: uint64(C.tdb_snapshot_sequence(c))}
	d.register(core)
	s := &Snapshot{core: core, db: db}
	runtime.SetFinalizer(s, func(s *Snapshot) {
		if s.core.close() == nil {
			leaked.Add(1)
		}
	})
	return s, nil
}

// Sequence returns the sequence number the snapshot reads at.
func (s *Snapshot) Sequence() uint64 { return s.core.seq }

func (sc *snapCore) release() {
	if sc.c != nil {
		C.tdb_snapshot_release(sc.db.c, sc.c)
		sc.c = nil
	}
}

func (sc *snapCore) close() error {
	if err := sc.db.lock("snapshot close"); err != nil {
		return newErr("snapshot close", ErrClosed, "snapshot is already closed (its database was closed)")
	}
	defer sc.db.mu.RUnlock()
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.c == nil {
		return newErr("snapshot close", ErrClosed, "snapshot is already closed")
	}
	sc.release()
	sc.db.unregister(sc)
	return nil
}

// Close releases the snapshot; a second Close returns ErrClosed.
func (s *Snapshot) Close() error {
	runtime.SetFinalizer(s, nil)
	return s.core.close()
}

// Get reads key of cf (nil = the default family) as of the snapshot.
func (s *Snapshot) Get(cf *ColumnFamily, key []byte) ([]byte, error) {
	c, err := s.db.cfArg("snapshot get", cf)
	if err != nil {
		return nil, err
	}
	v, err := get(s.core.db, c, s.core, key)
	runtime.KeepAlive(s)
	return v, err
}

// NewIterator opens an iterator over cf (nil = the default family) as of
// the snapshot; opts' bounds apply, its Snapshot is ignored.
func (s *Snapshot) NewIterator(cf *ColumnFamily, opts *IterOptions) (*Iterator, error) {
	if cf == nil {
		cf = s.db.Default()
	}
	var o IterOptions
	if opts != nil {
		o = *opts
	}
	o.Snapshot = s
	it, err := cf.NewIterator(&o)
	runtime.KeepAlive(s)
	return it, err
}
