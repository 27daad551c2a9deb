package tidesdb

// #include "shim.h"
import "C"

import (
	"bytes"
	"encoding/binary"
	"iter"
	"runtime"
	"unsafe"
)

// IterOptions choose an iterator's view and range. The zero value (or
// nil) is the whole family as of the iterator's creation.
type IterOptions struct {
	// Snapshot reads as of the snapshot instead of the moment the
	// iterator is created. Not used by transaction iterators.
	Snapshot *Snapshot
	// LowerBound (inclusive) and UpperBound (exclusive) limit the keys
	// the iterator visits; nil = unbounded.
	LowerBound []byte
	UpperBound []byte
	// Prefix, if set, limits the keys to those that start with it (it
	// narrows the bounds above).
	Prefix []byte
}

// Iterator walks a consistent point-in-time view of one column family in
// key order, forward or backward. It belongs to one goroutine at a time.
// Positioning methods return whether the iterator is on an entry; when
// it is not, Err tells whether that is the end or a failure (ErrClosed
// after Close, ErrCorruption, ...). Key and Value return copies.
//
//	it, _ := db.NewIterator(&tidesdb.IterOptions{Prefix: []byte("user:")})
//	defer it.Close()
//	for k, v := range it.All() { ... }
//	if err := it.Err(); err != nil { ... }
type Iterator struct {
	core *iterCore
	db   *DB  // kept alive while the iterator is
	txn  *Txn // for a transaction's iterator
}

// iterCore is the iterator's state. c, kp and vp point into C memory;
// they are read and written only under db.mu.RLock (and the
// transaction's mu for a transaction iterator) and c is nil once closed.
type iterCore struct {
	db           *dbCore
	txn          *txnCore
	c            *C.tdb_iter_t
	lower, upper []byte // copies; nil = unbounded
	valid        bool
	kp, vp       unsafe.Pointer
	kl, vl       int
	err          error
}

// bounds combines the options' bounds and prefix into copies.
func bounds(o *IterOptions) (lower, upper []byte) {
	if o == nil {
		return nil, nil
	}
	if o.LowerBound != nil {
		lower = bytes.Clone(o.LowerBound)
	}
	if o.UpperBound != nil {
		upper = bytes.Clone(o.UpperBound)
	}
	if len(o.Prefix) > 0 {
		if lower == nil || bytes.Compare(o.Prefix, lower) > 0 {
			lower = bytes.Clone(o.Prefix)
		}
		if end := prefixEnd(o.Prefix); end != nil && (upper == nil || bytes.Compare(end, upper) < 0) {
			upper = end
		}
	}
	return lower, upper
}

// prefixEnd is the first key after every key that starts with p (nil if
// there is none: p is all 0xff).
func prefixEnd(p []byte) []byte {
	end := bytes.Clone(p)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] != 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// NewIterator opens an iterator over the family (opts may be nil).
func (cf *ColumnFamily) NewIterator(opts *IterOptions) (*Iterator, error) {
	d := cf.db.core
	if err := d.lock("new iterator"); err != nil {
		return nil, err
	}
	defer d.mu.RUnlock()
	var snap *C.tdb_snapshot_t
	if opts != nil && opts.Snapshot != nil {
		s := opts.Snapshot
		if s.db != cf.db {
			return nil, newErr("new iterator", ErrInvalidArg, "snapshot belongs to another database")
		}
		s.core.mu.RLock()
		defer s.core.mu.RUnlock()
		if s.core.c == nil {
			return nil, newErr("new iterator", ErrClosed, "snapshot is closed")
		}
		snap = s.core.c
	}
	var c *C.tdb_iter_t
	if err := errOf("new iterator", C.tdbgo_iter_create(d.c, cf.c, snap, &c)); err != nil {
		return nil, err
	}
	core := &iterCore{db: d, c: c}
	core.lower, core.upper = bounds(opts)
	d.register(core)
	return newIterator(core, cf.db, nil), nil
}

func newIterator(core *iterCore, db *DB, txn *Txn) *Iterator {
	it := &Iterator{core: core, db: db, txn: txn}
	runtime.SetFinalizer(it, func(it *Iterator) {
		if it.core.close() == nil {
			leaked.Add(1)
		}
	})
	return it
}

// release frees the C iterator (the database's write lock is held).
func (ic *iterCore) release() {
	if ic.c != nil {
		C.tdb_iter_destroy(ic.c)
		ic.c = nil
	}
}

// lock takes the locks a call on the iterator needs.
func (ic *iterCore) lock(op string) error {
	if err := ic.db.lock(op); err != nil {
		return err
	}
	if ic.txn != nil {
		ic.txn.mu.Lock()
	}
	if ic.c == nil {
		ic.unlock()
		return newErr(op, ErrClosed, "iterator is closed")
	}
	return nil
}

func (ic *iterCore) unlock() {
	if ic.txn != nil {
		ic.txn.mu.Unlock()
	}
	ic.db.mu.RUnlock()
}

func (ic *iterCore) close() error {
	if err := ic.db.lock("iterator close"); err != nil {
		return newErr("iterator close", ErrClosed, "iterator is already closed (its database was closed)")
	}
	defer ic.db.mu.RUnlock()
	if ic.txn != nil {
		ic.txn.mu.Lock()
		defer ic.txn.mu.Unlock()
	}
	if ic.c == nil {
		return newErr("iterator close", ErrClosed, "iterator is already closed")
	}
	ic.release()
	if ic.txn != nil {
		delete(ic.txn.iters, ic)
	} else {
		ic.db.unregister(ic)
	}
	return nil
}

// Close releases the iterator; a second Close returns ErrClosed.
func (it *Iterator) Close() error {
	runtime.SetFinalizer(it, nil)
	return it.core.close()
}

const (
	opFirst       = C.TDBGO_FIRST
	opLast        = C.TDBGO_LAST
	opSeek        = C.TDBGO_SEEK
	opSeekForPrev = C.TDBGO_SEEK_FOR_PREV
	opNext        = C.TDBGO_NEXT
	opPrev        = C.TDBGO_PREV
)

// step moves the C iterator (locks held) and records the position.
func (ic *iterCore) step(op C.int, key []byte) {
	p := C.tdbgo_iter_move(ic.c, op, ptr(key), C.size_t(len(key)))
	ic.valid = p.valid != 0
	if ic.valid {
		ic.kp, ic.kl = unsafe.Pointer(p.key), int(p.klen)
		ic.vp, ic.vl = unsafe.Pointer(p.val), int(p.vlen)
		ic.err = nil
	} else {
		ic.err = errDetail("iterator", C.int(p.rc), p.detail)
	}
}

func (ic *iterCore) curKey() []byte { return unsafe.Slice((*byte)(ic.kp), ic.kl) }

// move positions the iterator (op with its key), applies the bounds, and
// returns whether it is on an entry.
func (ic *iterCore) move(op C.int, key []byte) bool {
	ok, _, _ := ic.moveCopy(op, key, false)
	return ok
}

// moveCopy is move, and with want set also returns copies of the new
// entry, under the same locks.
func (ic *iterCore) moveCopy(op C.int, key []byte, want bool) (ok bool, k, v []byte) {
	if err := ic.lock("iterator"); err != nil {
		ic.valid, ic.err = false, err
		return false, nil, nil
	}
	defer ic.unlock()
	switch op {
	case opFirst:
		if ic.lower != nil {
			ic.step(opSeek, ic.lower)
		} else {
			ic.step(opFirst, nil)
		}
	case opLast:
		ic.seekLast()
	case opSeek:
		if ic.lower != nil && bytes.Compare(key, ic.lower) < 0 {
			key = ic.lower
		}
		ic.step(opSeek, key)
	case opSeekForPrev:
		if ic.upper != nil && bytes.Compare(key, ic.upper) >= 0 {
			ic.seekLast()
		} else {
			ic.step(opSeekForPrev, key)
		}
	default:
		ic.step(op, nil)
	}
	if !ic.valid {
		return false, nil, nil
	}
	ck := ic.curKey()
	if (ic.upper != nil && bytes.Compare(ck, ic.upper) >= 0) ||
		(ic.lower != nil && bytes.Compare(ck, ic.lower) < 0) {
		ic.valid = false
		return false, nil, nil
	}
	if want {
		k = bytes.Clone(ck)
		v = make([]byte, ic.vl)
		copy(v, unsafe.Slice((*byte)(ic.vp), ic.vl))
	}
	return true, k, v
}

// seekLast goes to the last key below the upper bound.
func (ic *iterCore) seekLast() {
	if ic.upper == nil {
		ic.step(opLast, nil)
		return
	}
	ic.step(opSeekForPrev, ic.upper)
	if ic.valid && bytes.Equal(ic.curKey(), ic.upper) {
		ic.step(opPrev, nil)
	}
}

// First moves to the first key (of the range).
func (it *Iterator) First() bool { ok := it.core.move(opFirst, nil); runtime.KeepAlive(it); return ok }

// Last moves to the last key (of the range).
func (it *Iterator) Last() bool { ok := it.core.move(opLast, nil); runtime.KeepAlive(it); return ok }

// Seek moves to the first key >= key.
func (it *Iterator) Seek(key []byte) bool {
	ok := it.core.move(opSeek, key)
	runtime.KeepAlive(it)
	return ok
}

// SeekForPrev moves to the last key <= key.
func (it *Iterator) SeekForPrev(key []byte) bool {
	ok := it.core.move(opSeekForPrev, key)
	runtime.KeepAlive(it)
	return ok
}

// Next moves to the next key; false at the end (or on an error: Err).
func (it *Iterator) Next() bool { ok := it.core.move(opNext, nil); runtime.KeepAlive(it); return ok }

// Prev moves to the previous key.
func (it *Iterator) Prev() bool { ok := it.core.move(opPrev, nil); runtime.KeepAlive(it); return ok }

// Valid reports whether the iterator is on an entry (false once closed).
func (it *Iterator) Valid() bool {
	ic := it.core
	if ic.lock("iterator") != nil {
		return false
	}
	ok := ic.valid
	ic.unlock()
	runtime.KeepAlive(it)
	return ok
}

// Err returns the error that ended the iteration, or nil at a plain end.
func (it *Iterator) Err() error { return it.core.err }

// entry returns copies of the current key and/or value (nil if not on an
// entry or closed).
func (ic *iterCore) entry(wantKey, wantVal bool) (k, v []byte) {
	if err := ic.lock("iterator"); err != nil {
		ic.valid, ic.err = false, err
		return nil, nil
	}
	if !ic.valid {
		ic.unlock()
		return nil, nil
	}
	if wantKey {
		k = bytes.Clone(ic.curKey())
	}
	if wantVal {
		v = make([]byte, ic.vl)
		copy(v, unsafe.Slice((*byte)(ic.vp), ic.vl))
	}
	ic.unlock()
	return k, v
}

// Key returns a copy of the current key (nil if not on an entry).
func (it *Iterator) Key() []byte { k, _ := it.core.entry(true, false); runtime.KeepAlive(it); return k }

// Value returns a copy of the current value (nil if not on an entry).
func (it *Iterator) Value() []byte {
	_, v := it.core.entry(false, true)
	runtime.KeepAlive(it)
	return v
}

// seqBatchBytes is the size of the buffers the range functions fill:
// one allocation and one cgo call for up to seqBatchMax entries.
const (
	seqBatchBytes = 16 << 10
	seqBatchMax   = 256
)

// seq yields the entries from a first move on, stepping forward (dir > 0)
// or backward. The entries come in batches copied by tdbgo_iter_fill into
// one Go buffer (each key and value a capped slice of it), so the C
// iterator runs ahead of what was yielded; when the loop body stops
// early, the iterator is moved back to the last entry yielded.
func (it *Iterator) seq(first C.int, key []byte, dir int) iter.Seq2[[]byte, []byte] {
	return func(yield func([]byte, []byte) bool) {
		defer runtime.KeepAlive(it)
		ic := it.core
		if !ic.move(first, key) {
			return
		}
		// From here on the C iterator runs ahead: the position the
		// methods see (Key, Value, Valid) is none until the loop ends.
		ic.valid = false
		size := seqBatchBytes
		for {
			buf, n, more, err := ic.fill(dir, size)
			if err != nil {
				ic.valid, ic.err = false, err
				return
			}
			if n == 0 && more { // one entry larger than the buffer
				size = cap(buf)
				continue
			}
			for off, i := 0, 0; i < n; i++ {
				kl := int(binary.NativeEndian.Uint32(buf[off:]))
				vl := int(binary.NativeEndian.Uint32(buf[off+4:]))
				k := buf[off+8 : off+8+kl : off+8+kl]
				v := buf[off+8+kl : off+8+kl+vl : off+8+kl+vl]
				off += 8 + kl + vl
				if !yield(k, v) {
					ic.rewind(k, dir)
					return
				}
			}
			if !more { // ended (ic.err set by fill) or past the bound
				return
			}
			size = seqBatchBytes
		}
	}
}

// fill copies a batch of entries from the C iterator's position into a
// new buffer of size bytes; with n == 0 and more set, the entry needs a
// buffer of cap(buf) bytes (returned empty).
func (ic *iterCore) fill(dir, size int) (buf []byte, n int, more bool, err error) {
	if err := ic.lock("iterator"); err != nil {
		return nil, 0, false, err
	}
	defer ic.unlock()
	var bound []byte
	if dir > 0 {
		bound = ic.upper
	} else {
		bound = ic.lower
	}
	buf = make([]byte, size)
	f := C.tdbgo_iter_fill(ic.c, C.int(dir), ptr(bound), C.size_t(len(bound)), b2i(bound != nil),
		ptr(buf), C.size_t(len(buf)), seqBatchMax)
	if f.n == 0 && f.more != 0 {
		return make([]byte, 0, int(f.need)), 0, true, nil
	}
	ic.err = errDetail("iterator", C.int(f.rc), f.detail)
	return buf[:f.used], int(f.n), f.more != 0, nil
}

// rewind puts the iterator back on key, the last entry yielded, after a
// range loop stopped early (the C iterator had read ahead).
func (ic *iterCore) rewind(key []byte, dir int) {
	op := C.int(opSeek)
	if dir < 0 {
		op = opSeekForPrev
	}
	ic.move(op, bytes.Clone(key))
}

// All iterates the range forward from its first key, yielding copies of
// each key and value (slices of buffers shared by a batch of entries,
// never changed afterwards). Check Err afterwards. Inside the loop use
// the yielded key and value and do not move the iterator: it reads ahead
// in batches, so Key, Value and Valid report no entry until the loop
// ends. After a break it is on the last entry yielded; after the end, on
// none.
func (it *Iterator) All() iter.Seq2[[]byte, []byte] { return it.seq(opFirst, nil, 1) }

// Backward iterates the range backward from its last key.
func (it *Iterator) Backward() iter.Seq2[[]byte, []byte] { return it.seq(opLast, nil, -1) }

// From iterates forward from the first key >= start.
func (it *Iterator) From(start []byte) iter.Seq2[[]byte, []byte] {
	start = bytes.Clone(start)
	return it.seq(opSeek, start, 1)
}
