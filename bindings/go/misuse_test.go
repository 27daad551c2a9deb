package tidesdb

import (
	"io"
	"runtime"
	"testing"
	"time"
)

var (
	_ io.Closer = (*DB)(nil)
	_ io.Closer = (*Iterator)(nil)
	_ io.Closer = (*Snapshot)(nil)
	_ io.Closer = (*Txn)(nil)
	_ io.Closer = (*Batch)(nil)
)

func TestUseAfterClose(t *testing.T) {
	db, dir := openTemp(t, nil)
	cf, err := db.CreateColumnFamily("c", nil)
	must(t, err)
	must(t, db.Put([]byte("a"), []byte("1")))
	it, err := db.NewIterator(nil)
	must(t, err)
	if !it.First() {
		t.Fatal("first")
	}
	snap, err := db.NewSnapshot()
	must(t, err)
	tx, err := db.Begin(nil)
	must(t, err)
	must(t, tx.Put(nil, []byte("t"), []byte("uncommitted")))
	tit, err := tx.NewIterator(nil, nil)
	must(t, err)
	b, err := db.NewBatch()
	must(t, err)
	must(t, b.Put(nil, []byte("b"), []byte("x")))

	// Close releases what is still open on the database, then the database.
	must(t, db.Close())
	wantCode(t, db.Close(), ErrClosed)

	wantCode(t, db.Put([]byte("a"), nil), ErrClosed)
	_, err = db.Get([]byte("a"))
	wantCode(t, err, ErrClosed)
	wantCode(t, db.Delete([]byte("a")), ErrClosed)
	wantCode(t, cf.Put([]byte("a"), nil), ErrClosed)
	_, err = cf.Options()
	wantCode(t, err, ErrClosed)
	_, err = db.NewIterator(nil)
	wantCode(t, err, ErrClosed)
	_, err = db.NewSnapshot()
	wantCode(t, err, ErrClosed)
	_, err = db.Begin(nil)
	wantCode(t, err, ErrClosed)
	_, err = db.CreateColumnFamily("d", nil)
	wantCode(t, err, ErrClosed)
	_, err = db.ListColumnFamilies()
	wantCode(t, err, ErrClosed)
	_, err = db.Stats(nil)
	wantCode(t, err, ErrClosed)
	wantCode(t, db.Flush(nil), ErrClosed)
	wantCode(t, db.Sync(), ErrClosed)
	_, err = db.Checkpoint(t.TempDir() + "/cp")
	wantCode(t, err, ErrClosed)
	_, err = db.RecoverPrepared()
	wantCode(t, err, ErrClosed)

	if it.Next() || it.First() || it.Valid() || it.Key() != nil {
		t.Fatal("iterator moved after its database closed")
	}
	wantCode(t, it.Err(), ErrClosed)
	wantCode(t, it.Close(), ErrClosed)
	_, err = snap.Get(nil, []byte("a"))
	wantCode(t, err, ErrClosed)
	wantCode(t, snap.Close(), ErrClosed)
	wantCode(t, tx.Put(nil, []byte("x"), nil), ErrClosed)
	wantCode(t, tx.Commit(), ErrClosed)
	wantCode(t, tx.CancelWait(), ErrClosed)
	wantCode(t, tx.Close(), ErrClosed)
	wantCode(t, tit.Close(), ErrClosed)
	wantCode(t, b.Put(nil, []byte("c"), nil), ErrClosed)
	wantCode(t, db.Write(b, nil), ErrClosed)
	must(t, b.Close()) // a batch is plain memory: it closes after its database

	// The rolled-back transaction's write never reached the database.
	db2, err := Open(dir, testOptions())
	must(t, err)
	defer db2.Close()
	_, err = db2.Get([]byte("t"))
	wantCode(t, err, ErrNotFound)
}

func TestIteratorMisuse(t *testing.T) {
	db, _ := openTemp(t, nil)
	fill(t, db, 3)
	it, err := db.NewIterator(nil)
	must(t, err)
	must(t, it.Close())
	wantCode(t, it.Close(), ErrClosed)
	if it.First() || it.Seek([]byte("k")) || it.Last() || it.Prev() {
		t.Fatal("closed iterator moved")
	}
	wantCode(t, it.Err(), ErrClosed)
	n := 0
	for range it.All() {
		n++
	}
	if n != 0 {
		t.Fatal("range over a closed iterator yielded")
	}
	wantCode(t, it.Err(), ErrClosed)
}

// A handle dropped without Close is released by its finalizer, and the
// database no longer tracks it.
func TestFinalizersReleaseLeaks(t *testing.T) {
	db, _ := openTemp(t, nil)
	fill(t, db, 3)
	before := leaked.Load()
	func() {
		for i := 0; i < 5; i++ {
			it, err := db.NewIterator(nil)
			must(t, err)
			it.First()
			s, err := db.NewSnapshot()
			must(t, err)
			_ = s
			tx, err := db.Begin(nil)
			must(t, err)
			must(t, tx.Put(nil, []byte("leak"), []byte("x")))
			b, err := db.NewBatch()
			must(t, err)
			_ = b
		}
	}()
	registered := func() int {
		db.core.regMu.Lock()
		defer db.core.regMu.Unlock()
		return len(db.core.children)
	}
	deadline := time.Now().Add(10 * time.Second)
	for leaked.Load()-before < 20 || registered() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("finalizers released %d of 20 handles; %d still registered",
				leaked.Load()-before, registered())
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	_, err := db.Get([]byte("leak")) // the leaked transactions rolled back
	wantCode(t, err, ErrNotFound)
}
