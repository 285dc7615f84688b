/* mem_avail.c - how much memory this process can have: the default memory limit
 * (mem.c). The machine's whole memory is no limit for a process on a machine that runs
 * other things, in a container, or under ulimit: the smallest of the memory the kernel
 * says is available now (MemAvailable; physical memory where /proc/meminfo has none),
 * the limits of the process's cgroup and of every cgroup above it (v2 memory.max, v1
 * memory.limit_in_bytes), and RLIMIT_AS and RLIMIT_DATA when set. */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "core/mem.h"

static size_t smaller(size_t a, size_t b) { return a < b ? a : b; }

/* MemAvailable of a meminfo file, in bytes; SIZE_MAX when it has none. */
static size_t meminfo_available(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return SIZE_MAX;
    char line[256];
    unsigned long long kb;
    size_t v = SIZE_MAX;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) {
            if (kb > 0 && kb < SIZE_MAX / 1024) v = (size_t)kb * 1024;
            break;
        }
    fclose(f);
    return v;
}

/* A cgroup's limit file: bytes, or "max" (v2) or a huge number (v1) for none;
 * SIZE_MAX when there is none or it cannot be read. */
static size_t cgroup_limit(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return SIZE_MAX;
    char buf[64];
    size_t v = SIZE_MAX;
    if (fgets(buf, sizeof buf, f) && buf[0] >= '0' && buf[0] <= '9') {
        unsigned long long x = strtoull(buf, NULL, 10);
        if (x > 0 && x < SIZE_MAX) v = (size_t)x;
    }
    fclose(f);
    return v;
}

/* Whether the comma-separated list names the controller. */
static int lists(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
        if (!strncmp(p, name, n) && (p[n] == ',' || p[n] == 0)) return 1;
    return 0;
}

/* The smallest limit of the cgroup dir (under root, in file `file`) and of each cgroup
 * above it, up to root's own. */
static size_t cgroup_chain(const char *root, const char *dir, const char *file)
{
    char d[PATH_MAX], path[PATH_MAX + 64];
    snprintf(d, sizeof d, "%s", dir);
    size_t best = SIZE_MAX;
    for (;;) {
        snprintf(path, sizeof path, "%s%s/%s", root, d, file);
        best = smaller(best, cgroup_limit(path));
        char *slash = strrchr(d, '/');
        if (!slash) break;
        *slash = 0;
    }
    return best;
}

/* The memory limits of the cgroups that /proc/self/cgroup (self) names, with the
 * cgroup file systems mounted at root (v2 at root, v1's memory at root/memory); a
 * container that sees only its own cgroup has it at root. SIZE_MAX for none. */
static size_t cgroup_limits(const char *self, const char *root)
{
    char v1root[PATH_MAX];
    snprintf(v1root, sizeof v1root, "%s/memory", root);
    size_t best = smaller(cgroup_chain(root, "", "memory.max"), cgroup_chain(v1root, "", "memory.limit_in_bytes"));
    FILE *f = fopen(self, "r");
    if (!f) return best;
    char line[PATH_MAX + 64];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2 || c2[1] != '/') continue;
        *c2 = 0;
        const char *controllers = c1 + 1, *dir = strcmp(c2 + 1, "/") ? c2 + 1 : "";
        if (!*controllers) best = smaller(best, cgroup_chain(root, dir, "memory.max"));   /* v2: "0::/path" */
        else if (lists(controllers, "memory")) best = smaller(best, cgroup_chain(v1root, dir, "memory.limit_in_bytes"));
    }
    fclose(f);
    return best;
}

size_t cf_mem_available_from(const char *meminfo, const char *self_cgroup, const char *cgroup_root)
{
    size_t best = meminfo_available(meminfo);
    if (best == SIZE_MAX) {   /* no MemAvailable: the physical memory */
        long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        if (pages > 0 && page > 0 && (unsigned long)pages <= SIZE_MAX / (unsigned long)page)
            best = (size_t)pages * (size_t)page;
    }
    best = smaller(best, cgroup_limits(self_cgroup, cgroup_root));
    static const int which[] = {RLIMIT_AS, RLIMIT_DATA};
    for (int i = 0; i < 2; i++) {
        struct rlimit r;
        if (getrlimit(which[i], &r) == 0 && r.rlim_cur != RLIM_INFINITY && r.rlim_cur < best) best = (size_t)r.rlim_cur;
    }
    return best;
}

size_t cf_mem_available(void) { return cf_mem_available_from("/proc/meminfo", "/proc/self/cgroup", "/sys/fs/cgroup"); }
