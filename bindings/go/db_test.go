package tidesdb

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// testOptions are small settings for quick tests.
func testOptions() *Options {
	o := DefaultOptions()
	o.LogLevel = LogWarn
	o.BlockCacheSize = 4 << 20
	o.FlushThreads = 1
	o.CompactionThreads = 1
	o.DefaultCF.SyncMode = SyncNone
	return &o
}

func openTemp(t testing.TB, opts *Options) (*DB, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "db")
	if opts == nil {
		opts = testOptions()
	}
	db, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("open %s: %v", dir, err)
	}
	t.Cleanup(func() { db.Close() })
	return db, dir
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// wantCode fails unless err carries code, through errors.Is and As.
func wantCode(t testing.TB, err error, code Code) {
	t.Helper()
	if !errors.Is(err, code) {
		t.Fatalf("got error %v, want %v", err, code)
	}
	var e *Error
	if !errors.As(err, &e) || e.Code != code {
		t.Fatalf("error %v is not an *Error with code %d", err, code)
	}
}

func k(i int) []byte { return []byte(fmt.Sprintf("k%03d", i)) }
func v(i int) []byte { return []byte(fmt.Sprintf("value-%d", i)) }

func TestPutGetDelete(t *testing.T) {
	db, _ := openTemp(t, nil)
	must(t, db.Put([]byte("alice"), []byte("admin")))
	got, err := db.Get([]byte("alice"))
	must(t, err)
	if string(got) != "admin" {
		t.Fatalf("get = %q", got)
	}
	// An empty value is a value, not an absence.
	must(t, db.Put([]byte("empty"), nil))
	got, err = db.Get([]byte("empty"))
	must(t, err)
	if got == nil || len(got) != 0 {
		t.Fatalf("empty value = %#v", got)
	}
	must(t, db.Delete([]byte("alice")))
	_, err = db.Get([]byte("alice"))
	wantCode(t, err, ErrNotFound)
	_, err = db.Get([]byte("never"))
	wantCode(t, err, ErrNotFound)
	// The caller's buffers are copied: changing them later changes nothing.
	key, val := []byte("mut"), []byte("v1")
	must(t, db.Put(key, val))
	val[1] = '9'
	got, _ = db.Get(key)
	if string(got) != "v1" {
		t.Fatalf("value aliased the caller's buffer: %q", got)
	}
	// Values of changing sizes: Get's buffer follows the last size read,
	// larger ones take the fallback copy.
	for i, n := range []int{10, 1000, 5, 100000, 0, 50, 50, 3000} {
		key := []byte(fmt.Sprintf("size%d", i))
		val := bytes.Repeat([]byte{byte('a' + i)}, n)
		must(t, db.Put(key, val))
		got, err := db.Get(key)
		if err != nil || !bytes.Equal(got, val) || got == nil {
			t.Fatalf("value of %d bytes: got %d bytes, %v", n, len(got), err)
		}
	}
	// A large value (stored apart from the key blocks) round-trips.
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<14)
	must(t, db.Put([]byte("big"), big))
	got, err = db.Get([]byte("big"))
	must(t, err)
	if !bytes.Equal(got, big) {
		t.Fatal("large value differs")
	}
}

func TestInvalidArguments(t *testing.T) {
	db, _ := openTemp(t, nil)
	wantCode(t, db.Put(nil, []byte("x")), ErrInvalidArg)
	_, err := db.Get([]byte{})
	wantCode(t, err, ErrInvalidArg)
	wantCode(t, db.Put(make([]byte, 64*1024+1), nil), ErrTooLarge)
	wantCode(t, db.Default().DeleteRange([]byte("b"), []byte("a")), ErrInvalidArg)
	var e *Error
	err = db.Put(nil, nil)
	if !errors.As(err, &e) || e.Op != "put" || e.Detail == "" {
		t.Fatalf("want an *Error with op and detail, got %#v", err)
	}
	if e.Code.Retryable() || !ErrConflict.Retryable() {
		t.Fatal("Retryable")
	}
	_, err = db.CreateColumnFamily("a\x00b", nil)
	wantCode(t, err, ErrInvalidArg)
	_, err = Open(t.TempDir()+"/x\x00y", nil)
	wantCode(t, err, ErrInvalidArg)
	wantCode(t, db.Write(nil, nil), ErrInvalidArg)
	o := DefaultOptions()
	o.BlockCacheSize = -1
	_, err = Open(t.TempDir(), &o)
	wantCode(t, err, ErrInvalidArg)
}

func TestTTL(t *testing.T) {
	db, _ := openTemp(t, nil)
	must(t, db.Default().PutTTL([]byte("short"), []byte("x"), time.Second))
	must(t, db.Default().PutTTL([]byte("long"), []byte("y"), time.Hour))
	if _, err := db.Get([]byte("short")); err != nil {
		t.Fatalf("fresh ttl key: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := db.Get([]byte("short"))
		if errors.Is(err, ErrNotFound) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ttl key still readable after 5 s: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := db.Get([]byte("long")); err != nil {
		t.Fatalf("long ttl key: %v", err)
	}
}

func TestReopenKeepsData(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	db, err := Open(dir, testOptions())
	must(t, err)
	for i := 0; i < 100; i++ {
		must(t, db.Put(k(i), v(i)))
	}
	must(t, db.Close())
	o := testOptions()
	o.ErrorIfExists = true
	_, err = Open(dir, o)
	wantCode(t, err, ErrExists)
	db, err = Open(dir, testOptions())
	must(t, err)
	defer db.Close()
	for i := 0; i < 100; i++ {
		got, err := db.Get(k(i))
		if err != nil || !bytes.Equal(got, v(i)) {
			t.Fatalf("key %d after reopen: %q %v", i, got, err)
		}
	}
	// Open without create on a missing directory.
	o = testOptions()
	o.CreateIfMissing = false
	_, err = Open(filepath.Join(t.TempDir(), "none"), o)
	if err == nil {
		t.Fatal("open of a missing db without create succeeded")
	}
}

func TestColumnFamilies(t *testing.T) {
	db, _ := openTemp(t, nil)
	co := DefaultCFOptions()
	co.Compression = CompressZstd
	co.WriteBufferSize = 1 << 20
	users, err := db.CreateColumnFamily("users", &co)
	must(t, err)
	_, err = db.CreateColumnFamily("users", nil)
	wantCode(t, err, ErrExists)
	got, err := users.Options()
	must(t, err)
	if got.Compression != CompressZstd || got.WriteBufferSize != 1<<20 {
		t.Fatalf("options = %+v", got)
	}
	must(t, users.Put([]byte("k"), []byte("in users")))
	must(t, db.Put([]byte("k"), []byte("in default")))
	again, err := db.ColumnFamily("users")
	must(t, err)
	if again.Name() != "users" {
		t.Fatal(again.Name())
	}
	val, err := again.Get([]byte("k"))
	must(t, err)
	if string(val) != "in users" {
		t.Fatalf("users k = %q", val)
	}
	val, _ = db.Get([]byte("k"))
	if string(val) != "in default" {
		t.Fatalf("default k = %q", val)
	}
	names, err := db.ListColumnFamilies()
	must(t, err)
	slices.Sort(names)
	if !slices.Equal(names, []string{"default", "users"}) {
		t.Fatalf("families = %v", names)
	}
	_, err = db.ColumnFamily("nope")
	wantCode(t, err, ErrNotFound)
	must(t, db.DropColumnFamily("users"))
	wantCode(t, users.Put([]byte("k"), []byte("x")), ErrClosed)
	_, err = db.ColumnFamily("users")
	wantCode(t, err, ErrNotFound)
	if err := db.DropColumnFamily(DefaultColumnFamily); err == nil {
		t.Fatal("dropped the default family")
	}
	// A family of another database is refused, not misused.
	other, _ := openTemp(t, nil)
	ocf, err := other.CreateColumnFamily("x", nil)
	must(t, err)
	b, err := db.NewBatch()
	must(t, err)
	defer b.Close()
	wantCode(t, b.Put(ocf, []byte("a"), []byte("b")), ErrInvalidArg)
	_, err = db.Stats(ocf)
	wantCode(t, err, ErrInvalidArg)
}

func TestBatch(t *testing.T) {
	db, _ := openTemp(t, nil)
	logs, err := db.CreateColumnFamily("logs", nil)
	must(t, err)
	for i := 0; i < 10; i++ {
		must(t, db.Put(k(i), v(i)))
	}
	b, err := db.NewBatch()
	must(t, err)
	must(t, b.Put(nil, []byte("a"), []byte("1")))
	must(t, b.Put(logs, []byte("a"), []byte("log")))
	must(t, b.Delete(nil, k(0)))
	must(t, b.DeleteRange(nil, k(5), k(8)))
	must(t, b.Put(nil, k(6), []byte("after range"))) // later in the batch: survives
	must(t, b.Put(nil, []byte("a"), []byte("2")))    // later wins
	if b.Count() != 6 {
		t.Fatalf("count = %d", b.Count())
	}
	// Nothing is visible before Write.
	_, err = db.Get([]byte("a"))
	wantCode(t, err, ErrNotFound)
	must(t, db.Write(b, nil))
	check := func(key []byte, want string) {
		t.Helper()
		got, err := db.Get(key)
		if want == "" {
			wantCode(t, err, ErrNotFound)
			return
		}
		if err != nil || string(got) != want {
			t.Fatalf("%s = %q, %v; want %q", key, got, err, want)
		}
	}
	check([]byte("a"), "2")
	check(k(0), "")
	check(k(5), "")
	check(k(6), "after range")
	check(k(7), "")
	check(k(8), string(v(8)))
	got, err := logs.Get([]byte("a"))
	must(t, err)
	if string(got) != "log" {
		t.Fatalf("logs a = %q", got)
	}
	must(t, b.Clear())
	if b.Count() != 0 {
		t.Fatal("clear")
	}
	must(t, b.SingleDelete(nil, []byte("a")))
	must(t, db.Write(b, &WriteOptions{StallTimeout: time.Second}))
	check([]byte("a"), "")
	must(t, b.Close())
	wantCode(t, b.Close(), ErrClosed)
	wantCode(t, b.Put(nil, []byte("x"), nil), ErrClosed)
	wantCode(t, db.Write(b, nil), ErrClosed)
	// A batch of one database cannot be written to another.
	other, _ := openTemp(t, nil)
	ob, err := other.NewBatch()
	must(t, err)
	defer ob.Close()
	wantCode(t, db.Write(ob, nil), ErrInvalidArg)
}

func TestSnapshots(t *testing.T) {
	db, _ := openTemp(t, nil)
	cf, err := db.CreateColumnFamily("c", nil)
	must(t, err)
	must(t, db.Put([]byte("x"), []byte("old")))
	must(t, cf.Put([]byte("y"), []byte("old-y")))
	s, err := db.NewSnapshot()
	must(t, err)
	seq := s.Sequence()
	must(t, db.Put([]byte("x"), []byte("new")))
	must(t, db.Put([]byte("z"), []byte("new")))
	must(t, cf.Delete([]byte("y")))
	got, err := s.Get(nil, []byte("x"))
	must(t, err)
	if string(got) != "old" {
		t.Fatalf("snapshot x = %q", got)
	}
	_, err = s.Get(nil, []byte("z"))
	wantCode(t, err, ErrNotFound)
	got, err = s.Get(cf, []byte("y"))
	must(t, err)
	if string(got) != "old-y" {
		t.Fatalf("snapshot y = %q", got)
	}
	// The snapshot survives a flush and compaction.
	must(t, db.Flush(nil))
	must(t, db.Compact(nil))
	got, _ = s.Get(nil, []byte("x"))
	if string(got) != "old" {
		t.Fatalf("snapshot x after compaction = %q", got)
	}
	it, err := s.NewIterator(nil, nil)
	must(t, err)
	var keys []string
	for key := range it.All() {
		keys = append(keys, string(key))
	}
	must(t, it.Err())
	must(t, it.Close())
	if !slices.Equal(keys, []string{"x"}) {
		t.Fatalf("snapshot iterator keys = %v", keys)
	}
	s2, _ := db.NewSnapshot()
	if s2.Sequence() <= seq {
		t.Fatalf("sequences %d then %d", seq, s2.Sequence())
	}
	must(t, s2.Close())
	must(t, s.Close())
	wantCode(t, s.Close(), ErrClosed)
	_, err = s.Get(nil, []byte("x"))
	wantCode(t, err, ErrClosed)
	_, err = db.NewIterator(&IterOptions{Snapshot: s})
	wantCode(t, err, ErrClosed)
}

func TestMaintenanceAndStats(t *testing.T) {
	o := testOptions()
	o.DefaultCF.WriteBufferSize = 256 << 10
	db, dir := openTemp(t, o)
	for i := 0; i < 3000; i++ {
		must(t, db.Put([]byte(fmt.Sprintf("key%06d", i)), bytes.Repeat([]byte{byte(i)}, 100)))
	}
	must(t, db.Sync())
	must(t, db.Flush(nil))
	must(t, db.Flush(db.Default()))
	must(t, db.WaitIdle())
	st, err := db.Stats(nil)
	must(t, err)
	files := uint64(0)
	for _, l := range st.Levels {
		files += l.Files
	}
	if st.Flushes == 0 || files == 0 || st.UserBytesWritten == 0 || st.WriteAmplification() <= 0 || st.LastSequence < 3000 {
		t.Fatalf("stats after flush: %+v", st)
	}
	n, err := db.Default().ApproximateCount(nil, nil)
	must(t, err)
	if n < 1500 || n > 6000 {
		t.Fatalf("approximate count %d for 3000 keys", n)
	}
	n, err = db.Default().ApproximateCount([]byte("z"), nil)
	must(t, err)
	if n != 0 {
		t.Fatalf("approximate count past the last key = %d", n)
	}
	must(t, db.Compact(nil))
	must(t, db.PauseBackground())
	st, _ = db.Stats(db.Default())
	if st.BackgroundPaused != 1 {
		t.Fatalf("paused = %d", st.BackgroundPaused)
	}
	wantCode(t, db.WaitIdle(), ErrBusy)
	must(t, db.ContinueBackground())
	wantCode(t, db.ContinueBackground(), ErrInvalidArg)

	cp := filepath.Join(filepath.Dir(dir), "checkpoint")
	seq, err := db.Checkpoint(cp)
	must(t, err)
	if seq < 3000 {
		t.Fatalf("checkpoint seq %d", seq)
	}
	_, err = db.Checkpoint(cp)
	wantCode(t, err, ErrExists)
	must(t, db.Put([]byte("after"), []byte("cp")))
	cdb, err := Open(cp, testOptions())
	must(t, err)
	defer cdb.Close()
	got, err := cdb.Get([]byte("key001234"))
	must(t, err)
	if !bytes.Equal(got, bytes.Repeat([]byte{byte(1234 % 256)}, 100)) {
		t.Fatal("checkpoint value")
	}
	_, err = cdb.Get([]byte("after"))
	wantCode(t, err, ErrNotFound)
}

func TestLockedByAnotherHandle(t *testing.T) {
	_, dir := openTemp(t, nil)
	_, err := Open(dir, testOptions())
	wantCode(t, err, ErrLocked)
}

func TestMain(m *testing.M) {
	if os.Getenv(crashChildEnv) != "" {
		crashChild()
		return
	}
	os.Exit(m.Run())
}
