package tidesdb

// #include "shim.h"
import "C"

import (
	"fmt"
	"time"
)

// SyncMode is how a column family makes writes durable (tdb_sync_mode_t).
type SyncMode int

const (
	// SyncNone leaves the WAL in OS buffers: a crash may lose a suffix of
	// acknowledged writes (never a hole).
	SyncNone SyncMode = C.TDB_SYNC_NONE
	// SyncInterval fsyncs the WAL every SyncInterval in the background.
	SyncInterval SyncMode = C.TDB_SYNC_INTERVAL
	// SyncFull fsyncs before a write returns: nothing acknowledged is lost.
	SyncFull SyncMode = C.TDB_SYNC_FULL
)

// Compression of table blocks (tdb_compression_t).
type Compression int

const (
	CompressNone   Compression = C.TDB_COMPRESS_NONE
	CompressSnappy Compression = C.TDB_COMPRESS_SNAPPY
	CompressLZ4    Compression = C.TDB_COMPRESS_LZ4
	CompressZstd   Compression = C.TDB_COMPRESS_ZSTD
)

// LogLevel of the database's LOG file (tdb_log_level_t).
type LogLevel int

const (
	LogDebug LogLevel = C.TDB_LOG_DEBUG
	LogInfo  LogLevel = C.TDB_LOG_INFO
	LogWarn  LogLevel = C.TDB_LOG_WARN
	LogError LogLevel = C.TDB_LOG_ERROR
	LogFatal LogLevel = C.TDB_LOG_FATAL
	LogNone  LogLevel = C.TDB_LOG_NONE
)

// CFOptions are a column family's settings (tdb_cf_config_t). Start from
// DefaultCFOptions: a zero CFOptions is not the defaults.
type CFOptions struct {
	WriteBufferSize            int           // memtable bytes before a flush
	Compression                Compression   // table block compression
	BloomFPR                   float64       // bloom false-positive rate; 0 = no filter
	SyncMode                   SyncMode      // durability of writes
	SyncInterval               time.Duration // period of SyncInterval (microsecond resolution)
	BlockSize                  int           // data block target bytes
	ValueThreshold             int           // values this large are stored apart from keys
	L0QueueStallThreshold      int           // immutable memtables queued before writers wait
	L1FileCountTrigger         int           // level-1 files that start a compaction
	LevelSizeRatio             int           // size ratio between levels
	TombstoneDensityTrigger    float64       // tombstone share that compacts a file early
	TombstoneDensityMinEntries uint64        // ...if it has at least this many entries
}

// Options are the database's settings (tdb_config_t). Start from
// DefaultOptions: a zero Options is not the defaults.
type Options struct {
	CreateIfMissing                bool
	ErrorIfExists                  bool
	BlockCacheSize                 int // bytes; 0 = no block cache
	MaxOpenSSTables                int
	FlushThreads                   int
	CompactionThreads              int
	LogLevel                       LogLevel // messages go to <dir>/LOG
	MaxMemoryUsage                 int      // bytes; 0 = half of what the process may use
	UnifiedMemtable                bool     // all families share one write buffer and sync mode
	UnifiedMemtableWriteBufferSize int
	UnifiedMemtableSyncMode        SyncMode
	// WriteStallTimeout bounds how long a write waits out back-pressure
	// before it fails with ErrBusy; 0 = no bound (millisecond resolution).
	WriteStallTimeout time.Duration
	MmapReads         bool // re-read evicted blocks through a read-only mapping
	// L1IdleFileTrigger is the level-1 file count that starts a family's
	// compaction once its writes stop, if below its L1FileCountTrigger;
	// 0 = the family's trigger applies then too.
	L1IdleFileTrigger int
	// ReleaseBeforeSync: a commit group that syncs the WAL is made visible
	// and its transactions give back their row locks before the fsync;
	// each commit still returns once durable (tdb_config_t.release_before_sync).
	ReleaseBeforeSync bool
	DefaultCF         CFOptions // settings of the "default" family
}

// DefaultOptions returns the library's defaults (tdb_config_default).
func DefaultOptions() Options {
	var c C.tdb_config_t
	C.tdb_config_default(&c)
	return optionsFromC(&c)
}

// DefaultCFOptions returns the library's column family defaults.
func DefaultCFOptions() CFOptions {
	var c C.tdb_cf_config_t
	C.tdb_cf_config_default(&c)
	return cfOptionsFromC(&c)
}

func b2i(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

func cfOptionsFromC(c *C.tdb_cf_config_t) CFOptions {
	return CFOptions{
		WriteBufferSize:            int(c.write_buffer_size),
		Compression:                Compression(c.compression),
		BloomFPR:                   float64(c.bloom_fpr),
		SyncMode:                   SyncMode(c.sync_mode),
		SyncInterval:               time.Duration(c.sync_interval_us) * time.Microsecond,
		BlockSize:                  int(c.block_size),
		ValueThreshold:             int(c.value_threshold),
		L0QueueStallThreshold:      int(c.l0_queue_stall_threshold),
		L1FileCountTrigger:         int(c.l1_file_count_trigger),
		LevelSizeRatio:             int(c.level_size_ratio),
		TombstoneDensityTrigger:    float64(c.tombstone_density_trigger),
		TombstoneDensityMinEntries: uint64(c.tombstone_density_min_entries),
	}
}

// toC checks the values a C field cannot hold and fills c; the library
// checks the rest (ErrInvalidArg with a detail).
func (o *CFOptions) toC(c *C.tdb_cf_config_t) error {
	if o.WriteBufferSize < 0 || o.BlockSize < 0 || o.BlockSize > 1<<31 ||
		o.ValueThreshold < 0 || o.ValueThreshold > 1<<31 || o.SyncInterval < 0 {
		return newErr("options", ErrInvalidArg, fmt.Sprintf("negative or oversized column family setting in %+v", *o))
	}
	c.write_buffer_size = C.size_t(o.WriteBufferSize)
	c.compression = C.int(o.Compression)
	c.bloom_fpr = C.double(o.BloomFPR)
	c.sync_mode = C.int(o.SyncMode)
	c.sync_interval_us = C.uint64_t(o.SyncInterval / time.Microsecond)
	c.block_size = C.uint32_t(o.BlockSize)
	c.value_threshold = C.uint32_t(o.ValueThreshold)
	c.l0_queue_stall_threshold = C.int(o.L0QueueStallThreshold)
	c.l1_file_count_trigger = C.int(o.L1FileCountTrigger)
	c.level_size_ratio = C.int(o.LevelSizeRatio)
	c.tombstone_density_trigger = C.double(o.TombstoneDensityTrigger)
	c.tombstone_density_min_entries = C.uint64_t(o.TombstoneDensityMinEntries)
	return nil
}

func optionsFromC(c *C.tdb_config_t) Options {
	return Options{
		CreateIfMissing:                c.create_if_missing != 0,
		ErrorIfExists:                  c.error_if_exists != 0,
		BlockCacheSize:                 int(c.block_cache_size),
		MaxOpenSSTables:                int(c.max_open_sstables),
		FlushThreads:                   int(c.flush_threads),
		CompactionThreads:              int(c.compaction_threads),
		LogLevel:                       LogLevel(c.log_level),
		MaxMemoryUsage:                 int(c.max_memory_usage),
		UnifiedMemtable:                c.unified_memtable != 0,
		UnifiedMemtableWriteBufferSize: int(c.unified_memtable_write_buffer_size),
		UnifiedMemtableSyncMode:        SyncMode(c.unified_memtable_sync_mode),
		WriteStallTimeout:              time.Duration(c.write_stall_timeout_ms) * time.Millisecond,
		MmapReads:                      c.mmap_reads != 0,
		L1IdleFileTrigger:              int(c.l1_idle_file_trigger),
		ReleaseBeforeSync:              c.release_before_sync != 0,
		DefaultCF:                      cfOptionsFromC(&c.default_cf),
	}
}

func (o *Options) toC(c *C.tdb_config_t) error {
	if o.BlockCacheSize < 0 || o.MaxMemoryUsage < 0 || o.UnifiedMemtableWriteBufferSize < 0 || o.WriteStallTimeout < 0 {
		return newErr("options", ErrInvalidArg, "negative size or timeout in Options")
	}
	c.create_if_missing = b2i(o.CreateIfMissing)
	c.error_if_exists = b2i(o.ErrorIfExists)
	c.block_cache_size = C.size_t(o.BlockCacheSize)
	c.max_open_sstables = C.int(o.MaxOpenSSTables)
	c.flush_threads = C.int(o.FlushThreads)
	c.compaction_threads = C.int(o.CompactionThreads)
	c.log_level = C.int(o.LogLevel)
	c.max_memory_usage = C.size_t(o.MaxMemoryUsage)
	c.unified_memtable = b2i(o.UnifiedMemtable)
	c.unified_memtable_write_buffer_size = C.size_t(o.UnifiedMemtableWriteBufferSize)
	c.unified_memtable_sync_mode = C.int(o.UnifiedMemtableSyncMode)
	c.write_stall_timeout_ms = C.int64_t(o.WriteStallTimeout / time.Millisecond)
	c.mmap_reads = b2i(o.MmapReads)
	c.l1_idle_file_trigger = C.int(o.L1IdleFileTrigger)
	c.release_before_sync = b2i(o.ReleaseBeforeSync)
	return o.DefaultCF.toC(&c.default_cf)
}

// Isolation is a transaction's isolation level (tdb_isolation_t; the
// anomaly table is in docs/design/txn.md).
type Isolation int

const (
	IsoReadUncommitted Isolation = C.TDB_ISO_READ_UNCOMMITTED // behaves as IsoReadCommitted
	IsoReadCommitted   Isolation = C.TDB_ISO_READ_COMMITTED   // every read sees the latest commit
	IsoRepeatableRead  Isolation = C.TDB_ISO_REPEATABLE_READ  // snapshot reads, last writer wins
	IsoSnapshot        Isolation = C.TDB_ISO_SNAPSHOT         // snapshot reads, first committer wins
	IsoSerializable    Isolation = C.TDB_ISO_SERIALIZABLE     // IsoSnapshot plus validation of all reads
)

// TxnOptions are a transaction's settings (tdb_txn_options_t). Start from
// DefaultTxnOptions; nil means the defaults.
type TxnOptions struct {
	Isolation   Isolation
	ReadOnly    bool          // writes fail with ErrInvalidArg
	Pessimistic bool          // row locks held until commit or rollback
	LockTimeout time.Duration // lock wait bound (millisecond resolution)
	MaxBytes    int           // buffered write bytes; 0 = 1/4 of the memory budget
	// StallTimeout bounds each Commit's back-pressure wait: 0 = the
	// database's WriteStallTimeout, < 0 = no bound.
	StallTimeout time.Duration
}

// DefaultTxnOptions returns the library's defaults (Snapshot isolation,
// optimistic, 5 s lock timeout).
func DefaultTxnOptions() TxnOptions {
	var c C.tdb_txn_options_t
	C.tdb_txn_options_default(&c)
	return TxnOptions{
		Isolation:    Isolation(c.isolation),
		ReadOnly:     c.read_only != 0,
		Pessimistic:  c.pessimistic != 0,
		LockTimeout:  time.Duration(c.lock_timeout_ms) * time.Millisecond,
		MaxBytes:     int(c.max_bytes),
		StallTimeout: time.Duration(c.stall_timeout_ms) * time.Millisecond,
	}
}

// msOrUnbounded converts a timeout where < 0 means "no bound".
func msOrUnbounded(d time.Duration) C.int64_t {
	if d < 0 {
		return -1
	}
	return C.int64_t(d / time.Millisecond)
}

func (o *TxnOptions) toC(c *C.tdb_txn_options_t) error {
	if o.MaxBytes < 0 || o.LockTimeout < 0 {
		return newErr("txn options", ErrInvalidArg, "negative MaxBytes or LockTimeout")
	}
	C.tdb_txn_options_default(c)
	c.isolation = C.int(o.Isolation)
	c.read_only = b2i(o.ReadOnly)
	c.pessimistic = b2i(o.Pessimistic)
	c.lock_timeout_ms = C.int64_t(o.LockTimeout / time.Millisecond)
	c.max_bytes = C.size_t(o.MaxBytes)
	c.stall_timeout_ms = msOrUnbounded(o.StallTimeout)
	return nil
}

// WriteOptions tune one Write.
type WriteOptions struct {
	// StallTimeout bounds the back-pressure wait: 0 = the database's
	// WriteStallTimeout, < 0 = no bound.
	StallTimeout time.Duration
}

// LevelStats is one level's shape.
type LevelStats struct {
	Files uint64
	Bytes uint64
}

// Stats are the figures of tdb_get_stats (one family, or the whole
// database). Levels[0] is unused: level 1 holds freshly flushed files.
type Stats struct {
	Levels                 [C.TDB_MAX_LEVELS]LevelStats
	MemtableBytes          uint64
	ImmutableMemtables     uint64
	FlushesPending         uint64
	CompactionsPending     uint64
	NumEntriesEstimate     uint64
	BlockCacheHits         uint64
	BlockCacheMisses       uint64
	BlockCacheBytes        uint64
	UserBytesWritten       uint64
	WALBytesWritten        uint64
	FlushBytesWritten      uint64
	CompactionBytesRead    uint64
	CompactionBytesWritten uint64
	Flushes                uint64
	Compactions            uint64
	StallMicros            uint64
	StallMaxMicros         uint64
	Stalls                 uint64
	Slowdowns              uint64
	StallTimeouts          uint64
	LockWaits              uint64
	LockWaitMicros         uint64
	LockWaitMaxMicros      uint64
	LockDeadlocks          uint64
	LockTimeouts           uint64
	BackgroundPaused       int
	MemoryBudget           uint64
	LastSequence           uint64
}

// WriteAmplification is (WAL + flush + compaction bytes written) / user
// bytes written; 0 before any write.
func (s *Stats) WriteAmplification() float64 {
	if s.UserBytesWritten == 0 {
		return 0
	}
	return float64(s.WALBytesWritten+s.FlushBytesWritten+s.CompactionBytesWritten) / float64(s.UserBytesWritten)
}

func statsFromC(c *C.tdb_stats_t) Stats {
	s := Stats{
		MemtableBytes:          uint64(c.memtable_bytes),
		ImmutableMemtables:     uint64(c.immutable_memtables),
		FlushesPending:         uint64(c.flushes_pending),
		CompactionsPending:     uint64(c.compactions_pending),
		NumEntriesEstimate:     uint64(c.num_entries_estimate),
		BlockCacheHits:         uint64(c.block_cache_hits),
		BlockCacheMisses:       uint64(c.block_cache_misses),
		BlockCacheBytes:        uint64(c.block_cache_bytes),
		UserBytesWritten:       uint64(c.user_bytes_written),
		WALBytesWritten:        uint64(c.wal_bytes_written),
		FlushBytesWritten:      uint64(c.flush_bytes_written),
		CompactionBytesRead:    uint64(c.compaction_bytes_read),
		CompactionBytesWritten: uint64(c.compaction_bytes_written),
		Flushes:                uint64(c.flushes),
		Compactions:            uint64(c.compactions),
		StallMicros:            uint64(c.stall_micros),
		StallMaxMicros:         uint64(c.stall_max_micros),
		Stalls:                 uint64(c.stalls),
		Slowdowns:              uint64(c.slowdowns),
		StallTimeouts:          uint64(c.stall_timeouts),
		LockWaits:              uint64(c.lock_waits),
		LockWaitMicros:         uint64(c.lock_wait_micros),
		LockWaitMaxMicros:      uint64(c.lock_wait_max_micros),
		LockDeadlocks:          uint64(c.lock_deadlocks),
		LockTimeouts:           uint64(c.lock_timeouts),
		BackgroundPaused:       int(c.background_paused),
		MemoryBudget:           uint64(c.memory_budget),
		LastSequence:           uint64(c.last_sequence),
	}
	for i := range s.Levels {
		s.Levels[i] = LevelStats{Files: uint64(c.levels[i].files), Bytes: uint64(c.levels[i].bytes)}
	}
	return s
}
