// Command tdbgo_overhead measures the Go binding against the C API in one
// process: two databases with the same settings (tdb_bench's, as
// tdbgo_bench), one driven by a C loop calling tdb_put / tdb_get, the
// other by a Go loop calling DB.Put / DB.Get, with the same keys and
// values, in alternating chunks (the side that goes first alternates too),
// so both see the same machine load and the same database shape. It
// prints, for fillrandom, readrandom and readseq (a full forward scan:
// tdb_iter_next in C, the range-over-func Iterator.All in Go, which hands
// out copies), the time per operation of each
// side and the ratio Go/C: the median of the chunks' wall times, and the
// CPU time of the thread that runs both loops (locked to it), which the
// other processes of a shared machine disturb far less; the Go side's is
// also given with the garbage collector's CPU time added. One thread, no
// per-operation clock.
package main

// #cgo CFLAGS: -I${SRCDIR}/../../../../include
// #cgo LDFLAGS: -L${SRCDIR}/../../../../build -l:libtidesdb.a -llz4 -lzstd -lxxhash -lsnappy -lpthread -lm
// #include <stdint.h>
// #include <stdlib.h>
// #include <string.h>
// #include <time.h>
// #include <tidesdb/tidesdb.h>
//
// /* CPU time of the calling thread, ns. */
// static int64_t thread_cpu_ns(void) {
//     struct timespec ts;
//     clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
//     return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
// }
//
// /* Key index i as tdb_bench encodes it (8 big-endian bytes, '0' padding). */
// static void key_encode(char *buf, size_t ks, uint64_t i) {
//     for (int b = 7; b >= 0; b--) { buf[b] = (char)(i & 0xff); i >>= 8; }
//     if (ks > 8) memset(buf + 8, '0', ks - 8);
// }
// /* Put keys idx[0..n) with values from the pool at *pos; 0 or an error. */
// static int c_puts(tdb_t *db, tdb_cf_t *cf, const uint64_t *idx, size_t n, size_t ks,
//                   const char *pool, size_t pool_size, size_t vs, size_t *pos) {
//     char key[4096];
//     for (size_t i = 0; i < n; i++) {
//         key_encode(key, ks, idx[i]);
//         if (*pos + vs > pool_size) *pos = 0;
//         int rc = tdb_put(db, cf, key, ks, pool + *pos, vs, 0);
//         if (rc != TDB_OK) return rc;
//         *pos += vs;
//     }
//     return 0;
// }
// /* Get keys idx[0..n), as a C user does (copy, then free); the number
//  * found, or an error. */
// static int64_t c_gets(tdb_t *db, tdb_cf_t *cf, const uint64_t *idx, size_t n, size_t ks) {
//     char key[4096];
//     int64_t found = 0;
//     for (size_t i = 0; i < n; i++) {
//         key_encode(key, ks, idx[i]);
//         void *v; size_t vl;
//         int rc = tdb_get(db, cf, NULL, key, ks, &v, &vl);
//         if (rc == TDB_OK) { found++; tdb_free(v); }
//         else if (rc != TDB_ERR_NOT_FOUND) return rc;
//     }
//     return found;
// }
// /* Read every entry once (warm the block cache). */
// static int c_warm(tdb_t *db, tdb_cf_t *cf) {
//     tdb_iter_t *it;
//     int rc = tdb_iter_create(db, cf, NULL, &it);
//     if (rc != TDB_OK) return rc;
//     for (tdb_iter_seek_to_first(it); tdb_iter_valid(it); tdb_iter_next(it)) {}
//     rc = tdb_iter_status(it);
//     tdb_iter_destroy(it);
//     return rc;
// }
// /* Step a forward iterator over up to n entries (reading each key and
//  * value as a C user does: pointers and lengths); how many it visited. */
// static int64_t c_scan(tdb_iter_t *it, int64_t n, uint64_t *bytes) {
//     int64_t i = 0;
//     for (; i < n && tdb_iter_valid(it); i++) {
//         size_t kl, vl;
//         const char *k = tdb_iter_key(it, &kl);
//         const char *v = tdb_iter_value(it, &vl);
//         *bytes += kl + vl + (uint64_t)(k[0] ^ v[0]) * 0;
//         tdb_iter_next(it);
//     }
//     return i;
// }
// static int c_open(const char *dir, size_t cache, size_t wbs, double fpr, tdb_t **db, tdb_cf_t **cf) {
//     tdb_config_t c;
//     tdb_config_default(&c);
//     c.create_if_missing = 1;
//     c.block_cache_size = cache;
//     c.flush_threads = 1;
//     c.compaction_threads = 1;
//     c.log_level = TDB_LOG_WARN;
//     c.default_cf.write_buffer_size = wbs;
//     c.default_cf.compression = TDB_COMPRESS_LZ4;
//     c.default_cf.bloom_fpr = fpr;
//     c.default_cf.sync_mode = TDB_SYNC_NONE;
//     c.default_cf.block_size = 4096;
//     int rc = tdb_open(dir, &c, db);
//     if (rc == TDB_OK) rc = tdb_get_cf(*db, TDB_DEFAULT_CF, cf);
//     return rc;
// }
// static int c_settle(tdb_t *db) {
//     int rc = tdb_flush(db, NULL);
//     return rc == TDB_OK ? tdb_wait_idle(db) : rc;
// }
import "C"

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"slices"
	"strings"
	"time"
	"unsafe"

	tidesdb "tidesdb/bindings/go"
	"tidesdb/bindings/go/internal/benchkeys"
)

func fail(what string, err error) {
	fmt.Fprintf(os.Stderr, "tdbgo_overhead: %s: %v\n", what, err)
	os.Exit(1)
}

func cerr(what string, rc C.int) {
	if rc != 0 {
		fail(what, fmt.Errorf("%s (%s)", C.GoString(C.tdb_strerror(rc)), C.GoString(C.tdb_last_error())))
	}
}

func main() {
	num := flag.Int("num", 1000000, "key space, keys per fill and reads")
	chunk := flag.Int("chunk", 5000, "operations per alternation")
	keySize := flag.Int("key_size", 16, "bytes, 8..4096")
	valueSize := flag.Int("value_size", 100, "bytes")
	seed := flag.Uint64("seed", 301, "random seed (tdb_bench's)")
	dbDir := flag.String("db", "/tmp/tdbgo_overhead", "parent directory of the two databases (removed)")
	csvPath := flag.String("csv", "", "also write the figures as CSV")
	flag.Parse()
	if *csvPath != "" {
		csvOut.WriteString("workload,ops,wall_median_c_ns,wall_median_go_ns,cpu_c_ns,cpu_go_ns,cpu_go_gc_ns\n")
		defer func() {
			if err := os.WriteFile(*csvPath, []byte(csvOut.String()), 0o644); err != nil {
				fail("csv", err)
			}
		}()
	}
	if *keySize < 8 || *keySize > 4096 || *chunk < 1 || *num < 1 {
		fail("flags", errors.New("need 8 <= key_size <= 4096, chunk >= 1, num >= 1"))
	}
	const cache, wbs = 256 << 20, 64 << 20
	fpr := math.Pow(0.6185, 10)
	os.RemoveAll(*dbDir)
	if err := os.MkdirAll(*dbDir, 0o755); err != nil {
		fail("mkdir", err)
	}
	defer os.RemoveAll(*dbDir)

	cdir := C.CString(filepath.Join(*dbDir, "c"))
	var cdb *C.tdb_t
	var ccf *C.tdb_cf_t
	cerr("c open", C.c_open(cdir, cache, wbs, C.double(fpr), &cdb, &ccf))
	o := tidesdb.DefaultOptions()
	o.BlockCacheSize = cache
	o.FlushThreads, o.CompactionThreads = 1, 1
	o.LogLevel = tidesdb.LogWarn
	o.DefaultCF.WriteBufferSize = wbs
	o.DefaultCF.Compression = tidesdb.CompressLZ4
	o.DefaultCF.BloomFPR = fpr
	o.DefaultCF.SyncMode = tidesdb.SyncNone
	o.DefaultCF.BlockSize = 4096
	gdb, err := tidesdb.Open(filepath.Join(*dbDir, "go"), &o)
	if err != nil {
		fail("go open", err)
	}
	defer gdb.Close()
	defer C.tdb_close(cdb)

	pool := benchkeys.ValuePool(*valueSize, *seed)
	poolC := C.CBytes(pool)
	defer C.free(poolC)
	ks, vs := *keySize, *valueSize

	// The key sequences of tdb_bench's fillrandom (step 0) and readrandom
	// (step 1) with one thread.
	keys := func(step uint64) ([]uint64, uint64) {
		r := benchkeys.NewRng(*seed*1000003 + step*1009)
		first := r.Next() // fillrandom's value cursor start
		idx := make([]uint64, *num)
		for i := range idx {
			idx[i] = r.Uniform(uint64(*num))
		}
		return idx, first
	}

	// fillrandom
	idx, start := keys(0)
	idxC := (*C.uint64_t)(C.malloc(C.size_t(8 * len(idx))))
	defer C.free(unsafe.Pointer(idxC))
	copy(unsafe.Slice((*uint64)(unsafe.Pointer(idxC)), len(idx)), idx)
	cpos := C.size_t(start % uint64(len(pool)))
	gpos := int(cpos)
	key := make([]byte, ks)
	var tc, tg []float64   // wall ns per operation of each chunk
	var cpuC, cpuG int64   // thread CPU ns of each side
	var gcG float64        // GC CPU seconds during the Go side
	runtime.LockOSThread() // both loops on one thread: its CPU clock is theirs
	perOp := func(t0 time.Time, n int) float64 { return float64(time.Since(t0).Nanoseconds()) / float64(n) }
	runC := func(lo, hi int) {
		t0, c0 := time.Now(), C.thread_cpu_ns()
		rc := C.c_puts(cdb, ccf, (*C.uint64_t)(unsafe.Add(unsafe.Pointer(idxC), 8*lo)), C.size_t(hi-lo),
			C.size_t(ks), (*C.char)(poolC), C.size_t(len(pool)), C.size_t(vs), &cpos)
		cpuC += int64(C.thread_cpu_ns() - c0)
		tc = append(tc, perOp(t0, hi-lo))
		cerr("c put", rc)
	}
	runGo := func(lo, hi int) {
		t0, c0, g0 := time.Now(), C.thread_cpu_ns(), gcSeconds()
		for _, i := range idx[lo:hi] {
			benchkeys.KeyEncode(key, i)
			if gpos+vs > len(pool) {
				gpos = 0
			}
			if err := gdb.Put(key, pool[gpos:gpos+vs]); err != nil {
				fail("go put", err)
			}
			gpos += vs
		}
		cpuG += int64(C.thread_cpu_ns() - c0)
		gcG += gcSeconds() - g0
		tg = append(tg, perOp(t0, hi-lo))
	}
	alternate(len(idx), *chunk, runC, runGo)
	report("fillrandom", tc, tg, cpuC, cpuG, gcG, len(idx))
	cerr("c settle", C.c_settle(cdb))
	if err := gdb.Flush(nil); err != nil {
		fail("go flush", err)
	}
	if err := gdb.WaitIdle(); err != nil {
		fail("go wait idle", err)
	}

	// readrandom, block caches warmed first
	cerr("c warm", C.c_warm(cdb, ccf))
	it, err := gdb.NewIterator(nil)
	if err != nil {
		fail("go iterator", err)
	}
	for ok := it.First(); ok; ok = it.Next() {
	}
	it.Close()
	idx, _ = keys(1)
	copy(unsafe.Slice((*uint64)(unsafe.Pointer(idxC)), len(idx)), idx)
	tc, tg, cpuC, cpuG, gcG = nil, nil, 0, 0, 0
	var foundC, foundGo int64
	runC = func(lo, hi int) {
		t0, c0 := time.Now(), C.thread_cpu_ns()
		n := C.c_gets(cdb, ccf, (*C.uint64_t)(unsafe.Add(unsafe.Pointer(idxC), 8*lo)), C.size_t(hi-lo), C.size_t(ks))
		cpuC += int64(C.thread_cpu_ns() - c0)
		tc = append(tc, perOp(t0, hi-lo))
		if n < 0 {
			cerr("c get", C.int(n))
		}
		foundC += int64(n)
	}
	runGo = func(lo, hi int) {
		t0, c0, g0 := time.Now(), C.thread_cpu_ns(), gcSeconds()
		for _, i := range idx[lo:hi] {
			benchkeys.KeyEncode(key, i)
			if _, err := gdb.Get(key); err == nil {
				foundGo++
			} else if !errors.Is(err, tidesdb.ErrNotFound) {
				fail("go get", err)
			}
		}
		cpuG += int64(C.thread_cpu_ns() - c0)
		gcG += gcSeconds() - g0
		tg = append(tg, perOp(t0, hi-lo))
	}
	alternate(len(idx), *chunk, runC, runGo)
	if foundC != foundGo {
		fail("readrandom", fmt.Errorf("C found %d keys, Go %d", foundC, foundGo))
	}
	report("readrandom", tc, tg, cpuC, cpuG, gcG, len(idx))

	// readseq: both databases hold the same keys; one iterator each,
	// advanced chunk by chunk (the Go side resumes with From after the
	// last key it saw: one seek per chunk).
	var cit *C.tdb_iter_t
	cerr("c iterator", C.tdb_iter_create(cdb, ccf, nil, &cit))
	defer C.tdb_iter_destroy(cit)
	C.tdb_iter_seek_to_first(cit)
	git, err := gdb.NewIterator(nil)
	if err != nil {
		fail("go iterator", err)
	}
	defer git.Close()
	tc, tg, cpuC, cpuG, gcG = nil, nil, 0, 0, 0
	var bytesC C.uint64_t
	var bytesGo uint64
	var nC, nGo int64
	var resume []byte // nil: from the first key
	runC = func(lo, hi int) {
		t0, c0 := time.Now(), C.thread_cpu_ns()
		n := C.c_scan(cit, C.int64_t(hi-lo), &bytesC)
		cpuC += int64(C.thread_cpu_ns() - c0)
		if n > 0 {
			tc = append(tc, perOp(t0, int(n)))
		}
		nC += int64(n)
	}
	runGo = func(lo, hi int) {
		t0, c0, g0 := time.Now(), C.thread_cpu_ns(), gcSeconds()
		n := 0
		var last []byte
		for k, v := range git.From(resume) {
			bytesGo += uint64(len(k) + len(v))
			last = k
			if n++; n == hi-lo {
				break
			}
		}
		if err := git.Err(); err != nil {
			fail("go scan", err)
		}
		cpuG += int64(C.thread_cpu_ns() - c0)
		gcG += gcSeconds() - g0
		if n > 0 {
			tg = append(tg, perOp(t0, n))
			resume = append(last, 0) // the first key after last
		}
		nGo += int64(n)
	}
	alternate(*num, *chunk, runC, runGo)
	if nC != nGo || uint64(bytesC) != bytesGo || nC == 0 {
		fail("readseq", fmt.Errorf("C visited %d entries (%d bytes), Go %d (%d bytes)", nC, bytesC, nGo, bytesGo))
	}
	report("readseq", tc, tg, cpuC, cpuG, gcG, int(nC))
}

// alternate runs chunk after chunk of [0, n) on both sides, the side that
// goes first alternating.
func alternate(n, chunk int, c, g func(lo, hi int)) {
	for lo, k := 0, 0; lo < n; lo, k = lo+chunk, k+1 {
		hi := min(lo+chunk, n)
		if k%2 == 0 {
			c(lo, hi)
			g(lo, hi)
		} else {
			g(lo, hi)
			c(lo, hi)
		}
	}
}

// gcSeconds is the CPU time the garbage collector has used so far (the
// runtime's estimate, updated as cycles end).
func gcSeconds() float64 {
	m := []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}}
	metrics.Read(m)
	if m[0].Value.Kind() != metrics.KindFloat64 {
		return 0
	}
	return m[0].Value.Float64()
}

// report prints both sides' median wall and thread CPU ns per operation.
func report(name string, tc, tg []float64, cpuC, cpuG int64, gcG float64, n int) {
	median := func(x []float64) float64 {
		y := slices.Clone(x)
		slices.Sort(y)
		if len(y)%2 == 1 {
			return y[len(y)/2]
		}
		return (y[len(y)/2-1] + y[len(y)/2]) / 2
	}
	dc, dg := median(tc), median(tg)
	cc, cg := float64(cpuC)/float64(n), float64(cpuG)/float64(n)
	cgc := cg + gcG*1e9/float64(n)
	fmt.Printf("%-11s ops=%d chunks=%d  wall median: C %5.0f Go %5.0f ns/op, Go/C %.3f  |  thread CPU: C %5.0f Go %5.0f ns/op, Go/C %.3f (%+.0f ns/op); with GC: Go %5.0f ns/op, Go/C %.3f\n",
		name, n, len(tc), dc, dg, dg/dc, cc, cg, cg/cc, cg-cc, cgc, cgc/cc)
	fmt.Fprintf(&csvOut, "%s,%d,%.1f,%.1f,%.1f,%.1f,%.1f\n", name, n, dc, dg, cc, cg, cgc)
}

var csvOut strings.Builder
