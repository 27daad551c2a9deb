package tidesdb

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
)

// fill writes k000..k(n-1) into the default family.
func fill(t *testing.T, db *DB, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		must(t, db.Put(k(i), v(i)))
	}
}

func keysOf(t *testing.T, it *Iterator, seq func(yield func([]byte, []byte) bool)) []string {
	t.Helper()
	var out []string
	for key, val := range seq {
		var i int
		if _, err := fmt.Sscanf(string(key), "k%03d", &i); err != nil || !bytes.Equal(val, v(i)) {
			t.Fatalf("entry %q = %q", key, val)
		}
		out = append(out, string(key))
	}
	must(t, it.Err())
	return out
}

func names(lo, hi int) []string { // k(lo)..k(hi-1)
	var out []string
	for i := lo; i < hi; i++ {
		out = append(out, string(k(i)))
	}
	return out
}

func TestIteratorForwardReverseSeek(t *testing.T) {
	db, _ := openTemp(t, nil)
	fill(t, db, 50)
	must(t, db.Flush(nil)) // half on disk, half in the memtable
	for i := 50; i < 100; i++ {
		must(t, db.Put(k(i), v(i)))
	}
	must(t, db.Delete(k(10)))
	it, err := db.NewIterator(nil)
	must(t, err)
	defer it.Close()

	want := slices.DeleteFunc(names(0, 100), func(s string) bool { return s == "k010" })
	if got := keysOf(t, it, it.All()); !slices.Equal(got, want) {
		t.Fatalf("forward: %v", got)
	}
	rev := slices.Clone(want)
	slices.Reverse(rev)
	if got := keysOf(t, it, it.Backward()); !slices.Equal(got, rev) {
		t.Fatalf("backward: %v", got)
	}
	if got := keysOf(t, it, it.From([]byte("k09"))); !slices.Equal(got, want[89:]) {
		t.Fatalf("from k09: %v", got)
	}
	// Explicit positioning.
	if !it.Seek([]byte("k0105")) || string(it.Key()) != "k011" || string(it.Value()) != "value-11" {
		t.Fatalf("seek k0105 -> %q", it.Key())
	}
	if !it.Prev() || string(it.Key()) != "k009" {
		t.Fatalf("prev over the deleted key -> %q", it.Key())
	}
	if !it.SeekForPrev([]byte("k0105")) || string(it.Key()) != "k009" {
		t.Fatalf("seek for prev -> %q", it.Key())
	}
	if !it.SeekForPrev(k(20)) || string(it.Key()) != "k020" {
		t.Fatalf("seek for prev exact -> %q", it.Key())
	}
	if !it.Last() || string(it.Key()) != "k099" {
		t.Fatal("last")
	}
	if it.Next() || it.Valid() || it.Err() != nil || it.Key() != nil {
		t.Fatal("next past the end")
	}
	if it.Seek([]byte("zzz")) {
		t.Fatal("seek past the end")
	}
	if !it.First() || string(it.Key()) != "k000" {
		t.Fatal("first")
	}
	// Early break from a range loop leaves the iterator usable.
	n := 0
	for range it.All() {
		if n++; n == 3 {
			break
		}
	}
	if string(it.Key()) != "k002" {
		t.Fatalf("after break at 3: %q", it.Key())
	}
}

func TestIteratorBounds(t *testing.T) {
	db, _ := openTemp(t, nil)
	fill(t, db, 100)
	must(t, db.Put([]byte("user:1"), []byte("a")))
	must(t, db.Put([]byte("user:2"), []byte("b")))
	must(t, db.Put([]byte("user;"), []byte("c"))) // just after the prefix
	must(t, db.Put([]byte("usex"), []byte("d")))

	it, err := db.NewIterator(&IterOptions{LowerBound: k(20), UpperBound: k(30)})
	must(t, err)
	defer it.Close()
	if got := keysOf(t, it, it.All()); !slices.Equal(got, names(20, 30)) {
		t.Fatalf("[k020,k030): %v", got)
	}
	rev := names(20, 30)
	slices.Reverse(rev)
	if got := keysOf(t, it, it.Backward()); !slices.Equal(got, rev) {
		t.Fatalf("[k020,k030) backward: %v", got)
	}
	if !it.Seek(k(5)) || string(it.Key()) != "k020" { // clamped to the lower bound
		t.Fatalf("seek below lower: %q", it.Key())
	}
	if it.Seek(k(30)) {
		t.Fatal("seek at the upper bound is valid")
	}
	if !it.SeekForPrev(k(90)) || string(it.Key()) != "k029" {
		t.Fatalf("seek for prev above upper: %q", it.Key())
	}
	if it.SeekForPrev(k(10)) {
		t.Fatal("seek for prev below lower is valid")
	}

	pit, err := db.NewIterator(&IterOptions{Prefix: []byte("user:")})
	must(t, err)
	defer pit.Close()
	var got []string
	for key, val := range pit.All() {
		got = append(got, string(key)+"="+string(val))
	}
	if !slices.Equal(got, []string{"user:1=a", "user:2=b"}) {
		t.Fatalf("prefix: %v", got)
	}
	got = got[:0]
	for key := range pit.Backward() {
		got = append(got, string(key))
	}
	if !slices.Equal(got, []string{"user:2", "user:1"}) {
		t.Fatalf("prefix backward: %v", got)
	}
	if e := prefixEnd([]byte{'a', 0xff, 0xff}); !bytes.Equal(e, []byte{'b'}) {
		t.Fatalf("prefixEnd = %v", e)
	}
	if prefixEnd([]byte{0xff}) != nil {
		t.Fatal("prefixEnd of 0xff")
	}
}

func TestIteratorViewIsPointInTime(t *testing.T) {
	db, _ := openTemp(t, nil)
	fill(t, db, 10)
	it, err := db.NewIterator(nil)
	must(t, err)
	defer it.Close()
	must(t, db.Put(k(50), v(50)))
	must(t, db.Delete(k(0)))
	if got := keysOf(t, it, it.All()); !slices.Equal(got, names(0, 10)) {
		t.Fatalf("view moved: %v", got)
	}
	// Keys and values handed out are copies: they outlive the iterator.
	it.First()
	key, val := it.Key(), it.Value()
	must(t, it.Close())
	if string(key) != "k000" || string(val) != "value-0" {
		t.Fatal("copies changed after close")
	}
}

func TestIteratorColumnFamily(t *testing.T) {
	db, _ := openTemp(t, nil)
	fill(t, db, 5)
	cf, err := db.CreateColumnFamily("other", nil)
	must(t, err)
	must(t, cf.Put(k(7), v(7)))
	it, err := cf.NewIterator(nil)
	must(t, err)
	defer it.Close()
	if got := keysOf(t, it, it.All()); !slices.Equal(got, []string{"k007"}) {
		t.Fatalf("family iterator: %v", got)
	}
}

// The range functions read ahead in batches (seqBatchMax entries or
// seqBatchBytes): many batches, an entry larger than a batch buffer,
// bounds inside a batch, and a break in mid-batch must all look exactly
// like stepping one entry at a time.
func TestIteratorBatches(t *testing.T) {
	db, _ := openTemp(t, nil)
	const n = 3000
	key := func(i int) []byte { return []byte(fmt.Sprintf("b%05d", i)) }
	val := func(i int) []byte {
		if i == 1234 {
			return bytes.Repeat([]byte("L"), 3*seqBatchBytes) // larger than a batch buffer
		}
		return []byte(fmt.Sprintf("v%d-%s", i, bytes.Repeat([]byte("x"), i%50)))
	}
	for i := 0; i < n; i++ {
		must(t, db.Put(key(i), val(i)))
	}
	must(t, db.Flush(nil))
	for i := 0; i < n; i += 7 { // newer versions in the memtable for some
		must(t, db.Put(key(i), val(i)))
	}
	check := func(name string, it *Iterator, seq func(func([]byte, []byte) bool), lo, hi, step int) {
		t.Helper()
		i := lo
		for k, v := range seq {
			if !bytes.Equal(k, key(i)) || !bytes.Equal(v, val(i)) {
				t.Fatalf("%s: entry %d is %q (%d bytes of value)", name, i, k, len(v))
			}
			if it.Key() != nil || it.Valid() {
				t.Fatalf("%s: the iterator reports a position inside the loop", name)
			}
			i += step
		}
		must(t, it.Err())
		if i != hi {
			t.Fatalf("%s: stopped at %d, want %d", name, i, hi)
		}
	}
	it, err := db.NewIterator(nil)
	must(t, err)
	defer it.Close()
	check("all", it, it.All(), 0, n, 1)
	check("backward", it, it.Backward(), n-1, -1, -1)
	check("from", it, it.From(key(1000)), 1000, n, 1)

	bit, err := db.NewIterator(&IterOptions{LowerBound: key(100), UpperBound: key(2900)})
	must(t, err)
	defer bit.Close()
	check("bounded", bit, bit.All(), 100, 2900, 1)
	check("bounded backward", bit, bit.Backward(), 2899, 99, -1)

	// A break in mid-batch leaves the iterator on the last entry yielded.
	m := 0
	for k, v := range it.All() {
		if m == 300 {
			k = append(k, "-appended"...) // capped: cannot write into v
			if !bytes.Equal(v, val(300)) {
				t.Fatal("appending to a key changed its value")
			}
			break
		}
		m++
	}
	if !it.Valid() || !bytes.Equal(it.Key(), key(300)) || !it.Next() || !bytes.Equal(it.Key(), key(301)) {
		t.Fatalf("after a break at 300: %q", it.Key())
	}
	for k := range it.Backward() {
		if bytes.Equal(k, key(2500)) {
			break
		}
	}
	if !bytes.Equal(it.Key(), key(2500)) || !it.Prev() || !bytes.Equal(it.Key(), key(2499)) {
		t.Fatalf("after a backward break at 2500: %q", it.Key())
	}

	// A transaction's iterator batches too, its own writes included.
	tx, err := db.Begin(nil)
	must(t, err)
	defer tx.Close()
	must(t, tx.Put(nil, []byte("b01500x"), []byte("own")))
	must(t, tx.Delete(nil, key(1501)))
	tit, err := tx.NewIterator(nil, nil)
	must(t, err)
	count, own := 0, false
	for k, v := range tit.All() {
		count++
		if string(k) == "b01500x" && string(v) == "own" {
			own = true
		}
		if bytes.Equal(k, key(1501)) {
			t.Fatal("a deleted key in the transaction's view")
		}
	}
	must(t, tit.Err())
	must(t, tit.Close())
	if count != n || !own {
		t.Fatalf("transaction view: %d entries, own write seen %v", count, own)
	}
}
