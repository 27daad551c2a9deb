package tidesdb

import (
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func begin(t *testing.T, db *DB, iso Isolation) *Txn {
	t.Helper()
	o := DefaultTxnOptions()
	o.Isolation = iso
	tx, err := db.Begin(&o)
	must(t, err)
	t.Cleanup(func() { tx.Close() })
	return tx
}

func TestTxnCommitRollback(t *testing.T) {
	db, _ := openTemp(t, nil)
	cf, err := db.CreateColumnFamily("c", nil)
	must(t, err)
	tx, err := db.Begin(nil)
	must(t, err)
	must(t, tx.Put(nil, []byte("a"), []byte("1")))
	must(t, tx.Put(cf, []byte("b"), []byte("2")))
	got, err := tx.Get(nil, []byte("a")) // its own write
	must(t, err)
	if string(got) != "1" {
		t.Fatalf("own write = %q", got)
	}
	_, err = db.Get([]byte("a")) // private until commit
	wantCode(t, err, ErrNotFound)
	_, err = tx.Get(nil, []byte("none"))
	wantCode(t, err, ErrNotFound)
	must(t, tx.Commit())
	got, _ = cf.Get([]byte("b"))
	if string(got) != "2" {
		t.Fatalf("after commit b = %q", got)
	}
	wantCode(t, tx.Put(nil, []byte("x"), nil), ErrInvalidArg) // finished
	must(t, tx.Reset(nil))
	must(t, tx.Delete(nil, []byte("a")))
	must(t, tx.Put(nil, []byte("c"), []byte("3")))
	must(t, tx.Rollback())
	if _, err := db.Get([]byte("a")); err != nil {
		t.Fatal("rolled-back delete applied")
	}
	_, err = db.Get([]byte("c"))
	wantCode(t, err, ErrNotFound)
	must(t, tx.Close())
	wantCode(t, tx.Close(), ErrClosed)
	wantCode(t, tx.Commit(), ErrClosed)

	ro := DefaultTxnOptions()
	ro.ReadOnly = true
	rtx, err := db.Begin(&ro)
	must(t, err)
	wantCode(t, rtx.Put(nil, []byte("a"), nil), ErrInvalidArg)
	must(t, rtx.Close())
}

func TestTxnIsolationLevels(t *testing.T) {
	db, _ := openTemp(t, nil)
	must(t, db.Put([]byte("x"), []byte("0")))
	must(t, db.Put([]byte("y"), []byte("0")))

	// SNAPSHOT: first committer wins on a write-write conflict.
	t1 := begin(t, db, IsoSnapshot)
	t2 := begin(t, db, IsoSnapshot)
	must(t, t2.Put(nil, []byte("x"), []byte("t2")))
	must(t, t2.Commit())
	got, _ := t1.Get(nil, []byte("x"))
	if string(got) != "0" {
		t.Fatalf("snapshot read saw a later commit: %q", got)
	}
	must(t, t1.Put(nil, []byte("x"), []byte("t1")))
	err := t1.Commit()
	wantCode(t, err, ErrConflict)
	var e *Error
	if !errors.As(err, &e) || !e.Code.Retryable() {
		t.Fatal("conflict is not retryable")
	}

	// REPEATABLE READ: snapshot reads, last writer wins.
	t3 := begin(t, db, IsoRepeatableRead)
	must(t, db.Put([]byte("x"), []byte("outside")))
	got, _ = t3.Get(nil, []byte("x"))
	if string(got) != "t2" {
		t.Fatalf("repeatable read = %q", got)
	}
	must(t, t3.Put(nil, []byte("x"), []byte("t3")))
	must(t, t3.Commit())
	got, _ = db.Get([]byte("x"))
	if string(got) != "t3" {
		t.Fatalf("last writer = %q", got)
	}

	// READ COMMITTED: every read sees the latest commit.
	t4 := begin(t, db, IsoReadCommitted)
	got, _ = t4.Get(nil, []byte("y"))
	must(t, db.Put([]byte("y"), []byte("1")))
	got2, _ := t4.Get(nil, []byte("y"))
	if string(got) != "0" || string(got2) != "1" {
		t.Fatalf("read committed: %q then %q", got, got2)
	}
	must(t, t4.Commit())

	// SERIALIZABLE: a read that changed before commit fails it (write skew).
	t5 := begin(t, db, IsoSerializable)
	_, err = t5.Get(nil, []byte("y"))
	must(t, err)
	must(t, db.Put([]byte("y"), []byte("2")))
	must(t, t5.Put(nil, []byte("z"), []byte("t5")))
	wantCode(t, t5.Commit(), ErrConflict)
	_, err = db.Get([]byte("z"))
	wantCode(t, err, ErrNotFound)
	// ...and a scanned range too, read-only included.
	t6 := begin(t, db, IsoSerializable)
	it, err := t6.NewIterator(nil, &IterOptions{Prefix: []byte("q")})
	must(t, err)
	for range it.All() {
	}
	must(t, it.Close())
	must(t, db.Put([]byte("q1"), []byte("phantom")))
	wantCode(t, t6.Commit(), ErrConflict)

	// READ UNCOMMITTED never sees uncommitted writes.
	t7 := begin(t, db, IsoReadUncommitted)
	t8 := begin(t, db, IsoSnapshot)
	must(t, t8.Put(nil, []byte("u"), []byte("private")))
	_, err = t7.Get(nil, []byte("u"))
	wantCode(t, err, ErrNotFound)
}

func TestTxnSavepointsAndIterator(t *testing.T) {
	db, _ := openTemp(t, nil)
	must(t, db.Put([]byte("a"), []byte("db")))
	must(t, db.Put([]byte("c"), []byte("db")))
	tx := begin(t, db, IsoSnapshot)
	must(t, tx.Put(nil, []byte("b"), []byte("tx")))
	must(t, tx.Savepoint("sp1"))
	must(t, tx.Put(nil, []byte("d"), []byte("tx")))
	must(t, tx.Delete(nil, []byte("a")))
	must(t, tx.RollbackToSavepoint("sp1"))
	wantCode(t, tx.RollbackToSavepoint("none"), ErrNotFound)
	must(t, tx.Savepoint("sp2"))
	must(t, tx.ReleaseSavepoint("sp2"))
	wantCode(t, tx.ReleaseSavepoint("sp2"), ErrNotFound)

	it, err := tx.NewIterator(nil, nil)
	must(t, err)
	var got []string
	for key, val := range it.All() {
		got = append(got, string(key)+"="+string(val))
	}
	must(t, it.Err())
	if !slices.Equal(got, []string{"a=db", "b=tx", "c=db"}) {
		t.Fatalf("txn view: %v", got)
	}
	// Commit refuses while the transaction's iterator is open.
	wantCode(t, tx.Commit(), ErrInvalidArg)
	_, err = tx.NewIterator(nil, &IterOptions{Snapshot: &Snapshot{}})
	wantCode(t, err, ErrInvalidArg)
	must(t, it.Close())
	must(t, tx.Commit())
	v, err := db.Get([]byte("b"))
	must(t, err)
	if string(v) != "tx" {
		t.Fatal(string(v))
	}
	_, err = db.Get([]byte("d"))
	wantCode(t, err, ErrNotFound)

	// Close of the transaction closes its iterators.
	tx2 := begin(t, db, IsoSnapshot)
	it2, err := tx2.NewIterator(nil, nil)
	must(t, err)
	must(t, tx2.Close())
	if it2.First() {
		t.Fatal("iterator of a closed transaction moved")
	}
	wantCode(t, it2.Err(), ErrClosed)
	wantCode(t, it2.Close(), ErrClosed)
}

func TestTxnPessimisticLocks(t *testing.T) {
	db, _ := openTemp(t, nil)
	o := DefaultTxnOptions()
	o.Pessimistic = true
	o.LockTimeout = 100 * time.Millisecond
	t1, err := db.Begin(&o)
	must(t, err)
	defer t1.Close()
	must(t, t1.Put(nil, []byte("row"), []byte("t1")))
	t2, err := db.Begin(&o)
	must(t, err)
	defer t2.Close()
	start := time.Now()
	wantCode(t, t2.Put(nil, []byte("row"), []byte("t2")), ErrTimeout)
	if time.Since(start) < 50*time.Millisecond {
		t.Fatal("lock wait did not wait")
	}
	// A zero bound fails a held lock at once (not after the 10 s of the
	// options); a negative one is refused.
	o10 := o
	o10.LockTimeout = 10 * time.Second
	must(t, t2.Reset(&o10))
	must(t, t2.SetLockTimeout(0))
	start = time.Now()
	wantCode(t, t2.Put(nil, []byte("row"), []byte("t2")), ErrTimeout)
	if time.Since(start) > 3*time.Second {
		t.Fatalf("a zero lock timeout waited %v", time.Since(start))
	}
	wantCode(t, t2.SetLockTimeout(-time.Second), ErrInvalidArg)
	// A long wait is woken by CancelWait from another goroutine.
	o.LockTimeout = 30 * time.Second
	must(t, t2.Reset(&o))
	done := make(chan error, 1)
	go func() { _, err := t2.GetForUpdate(nil, []byte("row"), true); done <- err }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := db.Stats(nil)
		must(t, err)
		if st.LockWaits >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("second lock wait never started")
		}
		time.Sleep(5 * time.Millisecond)
	}
	must(t, t2.CancelWait())
	select {
	case err := <-done:
		wantCode(t, err, ErrAborted)
	case <-time.After(10 * time.Second):
		t.Fatal("CancelWait did not wake the waiter")
	}
	must(t, t1.Commit())
	must(t, t2.Reset(&o))
	got, err := t2.GetForUpdate(nil, []byte("row"), false)
	must(t, err)
	if string(got) != "t1" {
		t.Fatal(string(got))
	}
	must(t, t2.Commit())
	if t2.SnapshotSequence() == 0 {
		t.Fatal("snapshot sequence")
	}
}

func TestTxnPrepareRecover(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	db, err := Open(dir, testOptions())
	must(t, err)
	tx, err := db.Begin(nil)
	must(t, err)
	must(t, tx.Put(nil, []byte("p1"), []byte("prepared")))
	must(t, tx.Prepare([]byte("xid-1"), true))
	wantCode(t, tx.Put(nil, []byte("p2"), nil), ErrInvalidArg)
	xids, err := db.RecoverPrepared()
	must(t, err)
	if len(xids) != 1 || string(xids[0]) != "xid-1" {
		t.Fatalf("prepared = %q", xids)
	}
	wantCode(t, db.CommitPrepared([]byte("xid-1")), ErrBusy) // a live handle owns it
	must(t, tx.Close())                                      // stays prepared
	must(t, db.Close())

	db, err = Open(dir, testOptions())
	must(t, err)
	defer db.Close()
	xids, err = db.RecoverPrepared()
	must(t, err)
	if len(xids) != 1 || string(xids[0]) != "xid-1" {
		t.Fatalf("prepared after reopen = %q", xids)
	}
	_, err = db.Get([]byte("p1"))
	wantCode(t, err, ErrNotFound)
	must(t, db.CommitPrepared([]byte("xid-1")))
	got, err := db.Get([]byte("p1"))
	must(t, err)
	if string(got) != "prepared" {
		t.Fatal(string(got))
	}
	wantCode(t, db.RollbackPrepared([]byte("xid-1")), ErrNotFound)
	xids, _ = db.RecoverPrepared()
	if len(xids) != 0 {
		t.Fatalf("left prepared: %q", xids)
	}
}
