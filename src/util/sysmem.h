/*
 * util/sysmem: how much memory this process may use.
 *
 * The default memory budget (max_memory_usage = 0) is a share of what the
 * process may use. Inside a container or a systemd slice that is the
 * cgroup's memory limit, not the machine's RAM: a server limited to 768 MiB
 * on a 24 GiB machine that sized its memtables from the RAM was killed by
 * the cgroup's OOM killer.
 *
 * Invariants
 *  - The limit is the smallest of the physical RAM and every memory limit
 *    on the process's cgroup path: cgroup v2 memory.max of the cgroup and
 *    each ancestor, cgroup v1 memory.limit_in_bytes of the memory
 *    controller's cgroup and each ancestor. "max", a missing file or an
 *    unreadable one mean no limit at that level.
 *  - 0 only when nothing could be read at all.
 */
#ifndef TDB_UTIL_SYSMEM_H
#define TDB_UTIL_SYSMEM_H

#include <stddef.h>
#include <stdint.h>

/* Physical RAM in bytes (0 if unknown). */
uint64_t sysmem_physical(void);

/* The smallest cgroup memory limit on the path of the process described by
 * proc_cgroup (the text format of /proc/self/cgroup) under the cgroup file
 * systems mounted at v2_root (e.g. "/sys/fs/cgroup") and v1_root (e.g.
 * "/sys/fs/cgroup/memory"); UINT64_MAX when there is none. */
uint64_t sysmem_cgroup_limit(const char *proc_cgroup, const char *v2_root, const char *v1_root);

/* min(sysmem_physical(), the limit of this process's cgroups). */
uint64_t sysmem_limit(void);

#endif
