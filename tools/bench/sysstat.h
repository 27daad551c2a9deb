/*
 * sysstat.h: what the bench measures about its own process and files.
 *
 * Every figure here is taken the same way for every engine: each engine
 * runs in its own forked child process, so /proc/self/io and the peak
 * anonymous resident set belong to that engine alone.
 */
#ifndef TDB_BENCH_SYSSTAT_H
#define TDB_BENCH_SYSSTAT_H

#include <stdint.h>

/* Monotonic clock in nanoseconds. */
uint64_t sys_now_ns(void);
/* write_bytes of /proc/self/io: bytes this process (all threads) caused to
 * be written to storage, counted when pages are dirtied; -1 if
 * unavailable. */
int64_t sys_io_write_bytes(void);
/* CPU time (user + system) used so far by every thread of this process,
 * in nanoseconds (getrusage RUSAGE_SELF); 0 if unavailable. */
uint64_t sys_cpu_ns(void);
/* Start sampling this process's anonymous resident memory (resident minus
 * file-backed and shared pages, /proc/self/statm) every 10 ms in a
 * background thread; 0 on success. Anonymous because file pages are the
 * OS page cache: an engine that reads its files with pread has them
 * there uncounted, one that maps them (LevelDB; TidesDB's mmap_reads)
 * would have the same pages counted in its plain RSS. */
int sys_rss_sampler_start(void);
/* Largest anonymous resident set seen so far (sampler and this call), in
 * bytes; -1 if unavailable. */
int64_t sys_peak_rss_bytes(void);
/* Sum of the apparent sizes of the regular files under dir. */
uint64_t sys_dir_bytes(const char *dir);
/* Remove dir and everything under it; 0 if it is gone afterwards. */
int sys_rm_rf(const char *dir);
/* Create dir and its parents. */
int sys_mkdir_p(const char *dir);
/* Drop the OS page cache of every file under dir (posix_fadvise
 * DONTNEED after fdatasync); best effort. */
void sys_drop_file_cache(const char *dir);

#endif /* TDB_BENCH_SYSSTAT_H */
