// Command tdbgo_bench runs tdb_bench's fillrandom and readrandom through
// the Go binding, with tdb_bench's keys, values, seeds and TidesDB
// settings, so that its figures divided by those of
// `tdb_bench --engines=tidesdb --threads=1` are the binding's overhead
// (bindings/go/bench.sh runs both, alternating). One goroutine, as
// --threads=1: per operation it stamps the time and bins the latency, as
// tdb_bench does.
package main

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"math/bits"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	tidesdb "tidesdb/bindings/go"
	"tidesdb/bindings/go/internal/benchkeys"
)

// hist bins latencies: 8 sub-buckets per power of two of nanoseconds.
type hist struct {
	b [64 * 8]uint64
	n uint64
}

func (h *hist) add(ns uint64) {
	if ns == 0 {
		ns = 1
	}
	e := 63 - bits.LeadingZeros64(ns)
	sub := uint64(0)
	if e >= 3 {
		sub = (ns >> (e - 3)) & 7
	}
	h.b[e*8+int(sub)]++
	h.n++
}

func (h *hist) pct(p float64) float64 {
	want := uint64(math.Ceil(p / 100 * float64(h.n)))
	var c uint64
	for i, n := range h.b {
		if c += n; c >= want && n > 0 {
			e, sub := i/8, i%8
			lo := float64(uint64(1) << e)
			return (lo + lo*float64(sub)/8 + lo/16) / 1e3 // bucket middle, us
		}
	}
	return 0
}

func cpuNs() uint64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return uint64(ru.Utime.Nano() + ru.Stime.Nano())
}

type result struct {
	name             string
	ops, found       uint64
	secs, cpuUsPerOp float64
	p50, p99, p999   float64
}

func main() {
	num := flag.Uint64("num", 1000000, "key space and keys per fill")
	reads := flag.Uint64("reads", 0, "operations per read step (0 = num)")
	keySize := flag.Int("key_size", 16, "bytes, >= 8")
	valueSize := flag.Int("value_size", 100, "bytes")
	seed := flag.Uint64("seed", 301, "random seed (tdb_bench's)")
	workloads := flag.String("workloads", "fillrandom,readrandom", "comma list of fillrandom,readrandom")
	dbDir := flag.String("db", "/tmp/tdbgo_bench", "database directory (removed first)")
	csvPath := flag.String("csv", "", "also write results as CSV")
	flag.Parse()
	if *reads == 0 {
		*reads = *num
	}
	if *keySize < 8 {
		fmt.Fprintln(os.Stderr, "--key_size must be >= 8")
		os.Exit(2)
	}

	// tdb_bench's defaults mapped as engine_tidesdb.c maps them.
	o := tidesdb.DefaultOptions()
	o.CreateIfMissing = true
	o.BlockCacheSize = 256 << 20
	o.FlushThreads, o.CompactionThreads = 1, 1 // bg_threads=2
	o.LogLevel = tidesdb.LogWarn
	o.DefaultCF.WriteBufferSize = 64 << 20
	o.DefaultCF.Compression = tidesdb.CompressLZ4
	o.DefaultCF.BloomFPR = math.Pow(0.6185, 10)
	o.DefaultCF.SyncMode = tidesdb.SyncNone
	o.DefaultCF.BlockSize = 4096

	dir := filepath.Join(*dbDir, "tidesdb-go")
	pool := benchkeys.ValuePool(*valueSize, *seed)
	var db *tidesdb.DB
	var results []result
	fail := func(what string, err error) {
		fmt.Fprintf(os.Stderr, "tdbgo_bench: %s: %v\n", what, err)
		os.Exit(1)
	}
	for step, w := range strings.Split(*workloads, ",") {
		stepSeed := *seed*1000003 + uint64(step)*1009 // thread 0
		key := make([]byte, *keySize)
		var h hist
		res := result{name: w}
		switch w {
		case "fillrandom":
			if db != nil {
				db.Close()
			}
			if err := os.RemoveAll(dir); err != nil {
				fail("remove", err)
			}
			var err error
			if db, err = tidesdb.Open(dir, &o); err != nil {
				fail("open", err)
			}
			r := benchkeys.NewRng(stepSeed)
			pos := int(r.Next() % uint64(len(pool)))
			cpu0, t0 := cpuNs(), time.Now()
			prev := t0
			for i := uint64(0); i < *num; i++ {
				benchkeys.KeyEncode(key, r.Uniform(*num))
				if pos+*valueSize > len(pool) {
					pos = 0
				}
				if err := db.Put(key, pool[pos:pos+*valueSize]); err != nil {
					fail("put", err)
				}
				pos += *valueSize
				now := time.Now()
				h.add(uint64(now.Sub(prev)))
				prev = now
			}
			res.secs = prev.Sub(t0).Seconds()
			res.ops = *num
			// Settle untimed but inside the CPU figure, as tdb_bench.
			if err := db.Flush(nil); err != nil {
				fail("flush", err)
			}
			if err := db.WaitIdle(); err != nil {
				fail("wait idle", err)
			}
			res.cpuUsPerOp = float64(cpuNs()-cpu0) / 1e3 / float64(res.ops)
		case "readrandom":
			if db == nil {
				fail("readrandom", fmt.Errorf("needs a fillrandom first"))
			}
			it, err := db.NewIterator(nil) // warm the block cache, untimed
			if err != nil {
				fail("iterator", err)
			}
			for ok := it.First(); ok; ok = it.Next() {
			}
			if err := it.Err(); err != nil {
				fail("warm", err)
			}
			it.Close()
			r := benchkeys.NewRng(stepSeed)
			cpu0, t0 := cpuNs(), time.Now()
			prev := t0
			for i := uint64(0); i < *reads; i++ {
				benchkeys.KeyEncode(key, r.Uniform(*num))
				_, err := db.Get(key)
				if err == nil {
					res.found++
				} else if !isNotFound(err) {
					fail("get", err)
				}
				now := time.Now()
				h.add(uint64(now.Sub(prev)))
				prev = now
			}
			res.secs = prev.Sub(t0).Seconds()
			res.ops = *reads
			res.cpuUsPerOp = float64(cpuNs()-cpu0) / 1e3 / float64(res.ops)
		default:
			fail("workload", fmt.Errorf("unknown %q (fillrandom, readrandom)", w))
		}
		res.p50, res.p99, res.p999 = h.pct(50), h.pct(99), h.pct(99.9)
		results = append(results, res)
	}
	if db != nil {
		if err := db.Close(); err != nil {
			fail("close", err)
		}
	}
	os.RemoveAll(dir)

	fmt.Printf("%-12s %-12s %10s %12s %9s %9s %10s %10s\n", "engine", "workload", "ops", "ops/s", "p50(us)", "p99(us)", "p99.9(us)", "cpu-us/op")
	for _, r := range results {
		fmt.Printf("%-12s %-12s %10d %12.0f %9.2f %9.2f %10.2f %10.3f\n", "tidesdb-go", r.name, r.ops,
			float64(r.ops)/r.secs, r.p50, r.p99, r.p999, r.cpuUsPerOp)
	}
	if *csvPath != "" {
		var b strings.Builder
		b.WriteString("engine,workload,ops,ops_per_sec,p50_us,p99_us,p999_us,cpu_us_per_op,found\n")
		for _, r := range results {
			fmt.Fprintf(&b, "tidesdb-go,%s,%d,%.1f,%.2f,%.2f,%.2f,%.3f,%d\n", r.name, r.ops,
				float64(r.ops)/r.secs, r.p50, r.p99, r.p999, r.cpuUsPerOp, r.found)
		}
		if err := os.WriteFile(*csvPath, []byte(b.String()), 0o644); err != nil {
			fail("csv", err)
		}
	}
}

func isNotFound(err error) bool {

	return errors.Is(err, tidesdb.ErrNotFound)
}
