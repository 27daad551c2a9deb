package tidesdb

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The crash test: a child process (this test binary, re-executed) writes
// at SyncFull through Put, batches and transactions and reports each
// write on stdout only after the call returned; the parent kills it with
// SIGKILL mid-stream, reopens the database and must find every write the
// child acknowledged.
const (
	crashChildEnv = "TIDESDB_GO_CRASH_CHILD" // the database directory
	crashStartEnv = "TIDESDB_GO_CRASH_START" // the first key's number
)

// crashValue is the value of key i (checked after the crash).
func crashValue(i int) []byte {
	return []byte(fmt.Sprintf("value-%d-%s", i, strings.Repeat("x", i%97)))
}

func crashKey(i int) []byte { return []byte(fmt.Sprintf("key%07d", i)) }

// crashChild runs in the child: write forever, acknowledging each write
// ("ack <first> <last>") after it returned.
func crashChild() {
	dir := os.Getenv(crashChildEnv)
	o := DefaultOptions()
	o.LogLevel = LogWarn
	o.DefaultCF.SyncMode = SyncFull
	o.DefaultCF.WriteBufferSize = 256 << 10 // flushes happen during the run
	db, err := Open(dir, &o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child open:", err)
		os.Exit(2)
	}
	b, err := db.NewBatch()
	if err != nil {
		os.Exit(2)
	}
	out := os.Stdout // unbuffered: one write per ack
	first, _ := strconv.Atoi(os.Getenv(crashStartEnv))
	for i := first; ; {
		var n int
		switch i % 3 {
		case 0: // a put
			err, n = db.Put(crashKey(i), crashValue(i)), 1
		case 1: // a batch of three
			b.Clear()
			for j := i; j < i+3 && err == nil; j++ {
				err = b.Put(nil, crashKey(j), crashValue(j))
			}
			if err == nil {
				err = db.Write(b, nil)
			}
			n = 3
		default: // a transaction of two
			var tx *Txn
			if tx, err = db.Begin(nil); err == nil {
				err = tx.Put(nil, crashKey(i), crashValue(i))
				if err == nil {
					err = tx.Put(nil, crashKey(i+1), crashValue(i+1))
				}
				if err == nil {
					err = tx.Commit()
				}
				tx.Close()
			}
			n = 2
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "child write:", err)
			os.Exit(3)
		}
		fmt.Fprintf(out, "ack %d %d\n", i, i+n-1)
		i += n
	}
}

func TestCrashKeepsAcknowledgedWrites(t *testing.T) {
	dir := t.TempDir() + "/db"
	for round := 0; round < 2; round++ { // the second round crashes a recovered db
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		first := round * 1000000 // each round writes keys of its own
		cmd.Env = append(os.Environ(), crashChildEnv+"="+dir, crashStartEnv+"="+strconv.Itoa(first))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		stdout, err := cmd.StdoutPipe()
		must(t, err)
		must(t, cmd.Start())
		sc := bufio.NewScanner(stdout)
		acked := first - 1
		killed := false
		start := time.Now()
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) != 3 || f[0] != "ack" {
				t.Fatalf("child said %q", sc.Text())
			}
			last, _ := strconv.Atoi(f[2])
			acked = last
			// Kill after enough writes (or time) to have flushed tables
			// and WAL records behind the kill.
			if !killed && (acked-first >= 1500 || time.Since(start) > 20*time.Second) {
				must(t, cmd.Process.Signal(syscall.SIGKILL))
				killed = true // keep reading: lines already written are acknowledged too
			}
		}
		cmd.Wait()
		if !killed {
			t.Fatalf("child ended on its own: %s", stderr.String())
		}
		if acked-first < 100 {
			t.Fatalf("only %d writes acknowledged before the kill: %s", acked-first+1, stderr.String())
		}
		db, err := Open(dir, testOptions())
		must(t, err)
		missing := 0
		for i := first; i <= acked; i++ {
			got, err := db.Get(crashKey(i))
			if err != nil || !bytes.Equal(got, crashValue(i)) {
				if missing++; missing < 5 {
					t.Errorf("round %d: acknowledged key %d: %q %v", round, i, got, err)
				}
			}
		}
		if missing > 0 {
			t.Fatalf("round %d: %d of %d acknowledged writes lost", round, missing, acked-first+1)
		}
		if round == 1 { // the first round's writes survived a second crash and recovery
			for i := 0; i < 100; i++ {
				if _, err := db.Get(crashKey(i)); err != nil {
					t.Fatalf("round 0 key %d after round 1: %v", i, err)
				}
			}
		}
		t.Logf("round %d: %d acknowledged writes, all found after SIGKILL", round, acked-first+1)
		must(t, db.Close())
	}
}
