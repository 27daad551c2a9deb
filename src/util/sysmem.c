/*
 * util/sysmem: the memory this process may use (invariants in sysmem.h).
 */
#include "util/sysmem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

uint64_t sysmem_physical(void) {
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    return pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz : 0;
}

/* The number in file path, or UINT64_MAX ("max", missing, unreadable). */
static uint64_t read_limit(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return UINT64_MAX;
    char buf[64] = {0};
    char *ok = fgets(buf, sizeof buf, f);
    fclose(f);
    if (!ok || buf[0] < '0' || buf[0] > '9') return UINT64_MAX;
    char *end;
    unsigned long long v = strtoull(buf, &end, 10);
    return v > 0 ? (uint64_t)v : UINT64_MAX;
}

/* The smallest value of file in dir root+cg and each of its ancestors up to
 * root itself. */
static uint64_t path_limit(const char *root, const char *cg, const char *file) {
    char dir[4096];
    uint64_t lim = UINT64_MAX;
    int n = snprintf(dir, sizeof dir, "%s%s", root, strcmp(cg, "/") == 0 ? "" : cg);
    if (n < 0 || (size_t)n >= sizeof dir) return lim;
    size_t rootlen = strlen(root);
    for (;;) {
        char path[4096 + 32];
        snprintf(path, sizeof path, "%s/%s", dir, file);
        uint64_t v = read_limit(path);
        if (v < lim) lim = v;
        char *slash = strrchr(dir, '/');
        if (!slash || (size_t)(slash - dir) < rootlen) break;
        *slash = '\0';
    }
    return lim;
}

uint64_t sysmem_cgroup_limit(const char *proc_cgroup, const char *v2_root, const char *v1_root) {
    FILE *f = fopen(proc_cgroup, "r");
    if (!f) return UINT64_MAX;
    uint64_t lim = UINT64_MAX;
    char line[4096];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2) continue;
        *c1 = *c2 = '\0';
        const char *ctrls = c1 + 1, *cg = c2 + 1;
        uint64_t v = UINT64_MAX;
        if (strcmp(line, "0") == 0 && ctrls[0] == '\0') { /* v2: "0::/path" */
            v = path_limit(v2_root, cg, "memory.max");
        } else { /* v1: "N:a,memory,b:/path" */
            char list[256];
            snprintf(list, sizeof list, ",%s,", ctrls);
            if (strstr(list, ",memory,")) v = path_limit(v1_root, cg, "memory.limit_in_bytes");
        }
        if (v < lim) lim = v;
    }
    fclose(f);
    return lim;
}

uint64_t sysmem_limit(void) {
    uint64_t ram = sysmem_physical();
    uint64_t cg = sysmem_cgroup_limit("/proc/self/cgroup", "/sys/fs/cgroup", "/sys/fs/cgroup/memory");
    if (ram == 0) return cg == UINT64_MAX ? 0 : cg;
    return cg < ram ? cg : ram;
}
