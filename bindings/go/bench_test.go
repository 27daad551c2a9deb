package tidesdb

import (
	"encoding/binary"
	"testing"
)

// Micro-benchmarks of the binding's calls (go test -bench . -run ^$).
// The overhead against the C API on whole workloads is bench.sh's.

func benchDB(b *testing.B, n int) *DB {
	db, _ := openTemp(b, nil)
	key := make([]byte, 16)
	val := make([]byte, 100)
	for i := 0; i < n; i++ {
		binary.BigEndian.PutUint64(key, uint64(i))
		if err := db.Put(key, val); err != nil {
			b.Fatal(err)
		}
	}
	return db
}

func BenchmarkPut(b *testing.B) {
	db := benchDB(b, 0)
	key := make([]byte, 16)
	val := make([]byte, 100)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		binary.BigEndian.PutUint64(key, uint64(i))
		if err := db.Put(key, val); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGet(b *testing.B) {
	const n = 10000
	db := benchDB(b, n)
	key := make([]byte, 16)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		binary.BigEndian.PutUint64(key, uint64(i%n))
		if _, err := db.Get(key); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkIteratorNext(b *testing.B) {
	db := benchDB(b, 10000)
	it, err := db.NewIterator(nil)
	if err != nil {
		b.Fatal(err)
	}
	defer it.Close()
	it.First()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if !it.Next() {
			it.First()
		}
	}
}

func BenchmarkIteratorAll(b *testing.B) {
	db := benchDB(b, 10000)
	it, err := db.NewIterator(nil)
	if err != nil {
		b.Fatal(err)
	}
	defer it.Close()
	b.ResetTimer()
	n := 0
	for n < b.N {
		for range it.All() {
			if n++; n >= b.N {
				break
			}
		}
	}
}
