package tidesdb

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
)

// Goroutines writing (puts, batches) and reading (gets, iterators) at
// once; every write is read back afterwards.
func TestConcurrentReadersWriters(t *testing.T) {
	o := testOptions()
	o.DefaultCF.WriteBufferSize = 256 << 10 // flushes while the test runs
	db, _ := openTemp(t, o)
	const writers, perWriter = 4, 800
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	var done atomic.Bool
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			b, err := db.NewBatch()
			if err != nil {
				errs <- err
				return
			}
			defer b.Close()
			for i := 0; i < perWriter; i++ {
				key := []byte(fmt.Sprintf("w%d-%05d", w, i))
				val := bytes.Repeat([]byte{byte('a' + w)}, 64)
				if i%4 == 0 { // every fourth write through a batch
					b.Clear()
					if err = b.Put(nil, key, val); err == nil {
						err = db.Write(b, nil)
					}
				} else {
					err = db.Put(key, val)
				}
				if err != nil {
					errs <- err
					return
				}
				if got, err := db.Get(key); err != nil || !bytes.Equal(got, val) {
					errs <- fmt.Errorf("read own write %s: %q %v", key, got, err)
					return
				}
			}
		}(w)
	}
	var readers sync.WaitGroup
	for r := 0; r < 2; r++ {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for !done.Load() {
				it, err := db.NewIterator(&IterOptions{Prefix: []byte("w1-")})
				if err != nil {
					errs <- err
					return
				}
				prev := []byte(nil)
				for key := range it.All() {
					if prev != nil && bytes.Compare(prev, key) >= 0 {
						errs <- fmt.Errorf("iterator out of order: %q then %q", prev, key)
					}
					prev = key
				}
				if err := it.Err(); err != nil {
					errs <- err
				}
				it.Close()
			}
		}()
	}
	wg.Wait()
	done.Store(true)
	readers.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for w := 0; w < writers; w++ {
		for i := 0; i < perWriter; i++ {
			if _, err := db.Get([]byte(fmt.Sprintf("w%d-%05d", w, i))); err != nil {
				t.Fatalf("w%d-%05d: %v", w, i, err)
			}
		}
	}
}

// Snapshot-isolated increments from many goroutines, retried on conflict:
// none is lost.
func TestConcurrentTxnCounter(t *testing.T) {
	db, _ := openTemp(t, nil)
	must(t, db.Put([]byte("n"), []byte("0")))
	const goroutines, each = 4, 40
	var wg sync.WaitGroup
	var conflicts atomic.Int64
	errs := make(chan error, goroutines)
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tx, err := db.Begin(nil)
			if err != nil {
				errs <- err
				return
			}
			defer tx.Close()
			for i := 0; i < each; {
				cur, err := tx.Get(nil, []byte("n"))
				runtime.Gosched() // let the others read the same value
				if err == nil {
					n, _ := strconv.Atoi(string(cur))
					err = tx.Put(nil, []byte("n"), []byte(strconv.Itoa(n+1)))
				}
				if err == nil {
					err = tx.Commit()
				}
				var e *Error
				switch {
				case err == nil:
					i++
				case errors.As(err, &e) && e.Code.Retryable():
					conflicts.Add(1)
				default:
					errs <- err
					return
				}
				if err := tx.Reset(nil); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got, err := db.Get([]byte("n"))
	must(t, err)
	if string(got) != strconv.Itoa(goroutines*each) {
		t.Fatalf("counter = %s, want %d (%d conflicts retried)", got, goroutines*each, conflicts.Load())
	}
	t.Logf("%d conflicts retried", conflicts.Load())
}

// Close while other goroutines are writing, reading and iterating: each
// of them ends with ErrClosed, nothing crashes or races.
func TestCloseWhileInUse(t *testing.T) {
	db, _ := openTemp(t, nil)
	fill(t, db, 200)
	snap, err := db.NewSnapshot()
	must(t, err)
	var wg sync.WaitGroup
	var ops atomic.Int64
	results := make(chan error, 8)
	run := func(f func(i int) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				if err := f(i); err != nil {
					results <- err
					return
				}
				ops.Add(1)
			}
		}()
	}
	run(func(i int) error { return db.Put(k(i%500), v(i)) })
	run(func(i int) error { _, err := db.Get(k(i % 200)); return err })
	run(func(i int) error { _, err := snap.Get(nil, k(i%200)); return err })
	run(func(i int) error {
		it, err := db.NewIterator(nil)
		if err != nil {
			return err
		}
		for range it.All() {
		}
		err = it.Err()
		it.Close()
		return err
	})
	for ops.Load() < 2000 {
		runtime.Gosched()
	}
	must(t, db.Close())
	wg.Wait()
	close(results)
	for err := range results {
		wantCode(t, err, ErrClosed)
	}
}

// A snapshot closed while other goroutines read through it.
func TestSnapshotCloseWhileReading(t *testing.T) {
	db, _ := openTemp(t, nil)
	fill(t, db, 10)
	snap, err := db.NewSnapshot()
	must(t, err)
	var wg sync.WaitGroup
	var reads atomic.Int64
	for g := 0; g < 3; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				if _, err := snap.Get(nil, k(3)); err != nil {
					if !errors.Is(err, ErrClosed) {
						t.Error(err)
					}
					return
				}
				reads.Add(1)
			}
		}()
	}
	for reads.Load() < 1000 {
		runtime.Gosched()
	}
	must(t, snap.Close())
	wg.Wait()
}
