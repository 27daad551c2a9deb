package tidesdb_test

import (
	"errors"
	"fmt"
	"log"
	"os"

	tidesdb "tidesdb/bindings/go"
)

// The README's example (run by go test: the output below is checked).
func Example() {
	dir, _ := os.MkdirTemp("", "tidesdb-hello")
	defer os.RemoveAll(dir)

	db, err := tidesdb.Open(dir, nil) // nil: the defaults (sync FULL)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	db.Put([]byte("alice"), []byte("admin"))
	db.Put([]byte("bob"), []byte("dev"))
	if v, err := db.Get([]byte("alice")); err == nil {
		fmt.Printf("alice = %s\n", v)
	}
	it, _ := db.NewIterator(nil)
	defer it.Close()
	for k, v := range it.All() {
		fmt.Printf("%s -> %s\n", k, v)
	}
	// Output:
	// alice = admin
	// alice -> admin
	// bob -> dev
}

// Transactions with an isolation level, retried on conflict.
func ExampleDB_Begin() {
	dir, _ := os.MkdirTemp("", "tidesdb-txn")
	defer os.RemoveAll(dir)
	db, err := tidesdb.Open(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	opts := tidesdb.DefaultTxnOptions()
	opts.Isolation = tidesdb.IsoSerializable
	tx, err := db.Begin(&opts)
	if err != nil {
		log.Fatal(err)
	}
	defer tx.Close()
	for {
		_, err := tx.Get(nil, []byte("balance"))
		if err != nil && !errors.Is(err, tidesdb.ErrNotFound) {
			log.Fatal(err)
		}
		tx.Put(nil, []byte("balance"), []byte("100"))
		err = tx.Commit()
		if errors.Is(err, tidesdb.ErrConflict) {
			tx.Reset(&opts) // someone else changed what we read: try again
			continue
		}
		if err != nil {
			log.Fatal(err)
		}
		break
	}
	v, _ := db.Get([]byte("balance"))
	fmt.Println(string(v))
	// Output: 100
}
