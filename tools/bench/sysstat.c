/*
 * sysstat.c: process and file-system measurements (see sysstat.h).
 */
#include "sysstat.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Monotonic clock in nanoseconds. */
uint64_t sys_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Value of the line "name: N" (or "name:\tN kB") in a /proc file, -1 if
 * absent. */
static int64_t sys_proc_field(const char *path, const char *name)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[256];
    size_t n = strlen(name);
    int64_t v = -1;
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, name, n) == 0 && line[n] == ':') {
            v = strtoll(line + n + 1, NULL, 10);
            break;
        }
    }
    fclose(f);
    return v;
}

/* write_bytes of /proc/self/io. */
int64_t sys_io_write_bytes(void)
{
    return sys_proc_field("/proc/self/io", "write_bytes");
}

/* User + system CPU of the whole process (all threads). */
uint64_t sys_cpu_ns(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return 0;
    return ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * 1000000000u +
           ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000u;
}

static _Atomic int64_t sys_anon_peak = -1;

/* Anonymous resident bytes now: (resident - shared) pages of statm. */
static int64_t sys_anon_now(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f)
        return -1;
    long long size, resident, shared;
    int n = fscanf(f, "%lld %lld %lld", &size, &resident, &shared);
    fclose(f);
    if (n != 3 || resident < shared)
        return -1;
    return (int64_t)(resident - shared) * (int64_t)sysconf(_SC_PAGESIZE);
}

/* Raise the recorded peak to the current value. */
static void sys_anon_sample(void)
{
    int64_t v = sys_anon_now(), p = atomic_load(&sys_anon_peak);
    while (v > p && !atomic_compare_exchange_weak(&sys_anon_peak, &p, v))
        ;
}

/* Sampler thread body. */
static void *sys_anon_sampler(void *arg)
{
    (void)arg;
    const struct timespec tick = {0, 10 * 1000 * 1000};
    for (;;) {
        sys_anon_sample();
        nanosleep(&tick, NULL);
    }
    return NULL;
}

/* Start the sampler thread (detached; it ends with the process). */
int sys_rss_sampler_start(void)
{
    pthread_t t;
    sys_anon_sample();
    if (pthread_create(&t, NULL, sys_anon_sampler, NULL) != 0)
        return -1;
    pthread_detach(t);
    return 0;
}

/* Peak anonymous resident bytes seen so far. */
int64_t sys_peak_rss_bytes(void)
{
    sys_anon_sample();
    return atomic_load(&sys_anon_peak);
}

static uint64_t sys_walk_total; /* nftw callbacks take no user pointer */

/* nftw callback: add a regular file's size. */
static int sys_add_size(const char *path, const struct stat *st, int type,
                        struct FTW *ftw)
{
    (void)path;
    (void)ftw;
    if (type == FTW_F && S_ISREG(st->st_mode))
        sys_walk_total += (uint64_t)st->st_size;
    return 0;
}

/* Apparent bytes of the regular files under dir. */
uint64_t sys_dir_bytes(const char *dir)
{
    sys_walk_total = 0;
    nftw(dir, sys_add_size, 32, FTW_PHYS);
    return sys_walk_total;
}

/* nftw callback: remove one entry (children come first with FTW_DEPTH). */
static int sys_rm_one(const char *path, const struct stat *st, int type,
                      struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    if (type == FTW_DP)
        rmdir(path);
    else
        unlink(path);
    return 0;
}

/* Remove dir recursively. */
int sys_rm_rf(const char *dir)
{
    struct stat st;
    if (lstat(dir, &st) != 0)
        return errno == ENOENT ? 0 : -1;
    nftw(dir, sys_rm_one, 32, FTW_DEPTH | FTW_PHYS);
    return lstat(dir, &st) != 0 && errno == ENOENT ? 0 : -1;
}

/* Create dir and its parents. */
int sys_mkdir_p(const char *dir)
{
    char buf[PATH_MAX];
    if (snprintf(buf, sizeof(buf), "%s", dir) >= (int)sizeof(buf))
        return -1;
    for (char *p = buf + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            if (mkdir(buf, 0755) != 0 && errno != EEXIST)
                return -1;
            *p = '/';
        }
    }
    return mkdir(buf, 0755) == 0 || errno == EEXIST ? 0 : -1;
}

/* nftw callback: sync a file and drop its cached pages. */
static int sys_drop_one(const char *path, const struct stat *st, int type,
                        struct FTW *ftw)
{
    (void)ftw;
    if (type != FTW_F || !S_ISREG(st->st_mode))
        return 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    fdatasync(fd);
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
    return 0;
}

/* Drop the page cache of every file under dir. */
void sys_drop_file_cache(const char *dir)
{
    nftw(dir, sys_drop_one, 32, FTW_PHYS);
}
