/* mem.h - the memory budget: the library's big blocks are counted against one
 * process-wide limit, so that a request too big for the machine fails with a message
 * before it is allocated (instead of being granted by overcommit and killed later).
 *
 * Counted: dataset arrays, the parameter and gradient blocks, optimizer state, the
 * executor's arena. Small structures (handles, tables, names) use plain malloc.
 *
 * The limit is cf_set_memory_limit's, else $CFLUX_MAX_MEMORY, else the memory this
 * process can have (cf_mem_available; see cflux.h). A malformed $CFLUX_MAX_MEMORY refuses every counted
 * request until it is fixed (cf_set_memory_limit(0) reads it again) or a limit is
 * set; the message says what is wrong with it. */
#ifndef CF_CORE_MEM_H
#define CF_CORE_MEM_H

#include <stddef.h>

/* A counted block of bytes, 64-byte aligned, not zeroed. NULL with the message set
 * when it would pass the limit ("error: WHAT needs 9.1 GB, above the memory limit of
 * 4.0 GB (CFLUX_MAX_MEMORY or --max-memory)") or when malloc fails. what is a
 * singular subject: "the parameter block", "data.csv: the data". */
void *cf_mem_alloc(size_t bytes, const char *what);

/* Resize a counted block (p NULL: a new one), keeping its contents up to the smaller
 * size; only 16-byte aligned after a resize. NULL with the message (p untouched) as
 * cf_mem_alloc. */
void *cf_mem_realloc(void *p, size_t bytes, const char *what);

/* Free a counted block and give its bytes back to the budget. NULL is fine. */
void cf_mem_free(void *p);

/* The bytes of a counted block, as asked for. */
size_t cf_mem_size(const void *p);

/* Bytes still free under the limit (0 when the limit is malformed). A hint for
 * sizing growth; cf_mem_alloc decides. */
size_t cf_mem_room(void);

/* Set the message for a request that does not fit: "error: " + the formatted text
 * (a subject and what it needs, e.g. "a.csv:9: the data needs more than 1.0 GB")
 * + ", above the memory limit of L" + ", with U already in use" (when the counted
 * bytes other than `own`, those the subject holds itself, are not 0) +
 * " (CFLUX_MAX_MEMORY or --max-memory)". With a malformed limit, that problem is the
 * message instead. Returns -1. */
int cf_mem_refuse(size_t own, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The memory this process can have (mem_avail.c): the smallest of MemAvailable (else
 * the physical memory), its cgroups' limits (v2 memory.max, v1 memory.limit_in_bytes,
 * its own and those above it) and RLIMIT_AS and RLIMIT_DATA when set. */
size_t cf_mem_available(void);
/* The same from other files than /proc/meminfo, /proc/self/cgroup and /sys/fs/cgroup
 * (the root of the cgroup file systems: v2 there, v1's memory controller in
 * root/memory), for tests; a file that cannot be read sets no limit. */
size_t cf_mem_available_from(const char *meminfo, const char *self_cgroup, const char *cgroup_root);

/* bytes as "512 B", "4.0 KB", "9.1 GB" (powers of 1024), into buf; returns buf. */
#define CF_MEM_STR 24
char *cf_mem_str(size_t bytes, char buf[CF_MEM_STR]);

/* Parse a size: bytes ("4096") or a number with K, M, G or T (powers of 1024; an
 * optional B or iB after it; any case): "512M", "4G", "1.5g", "2GiB". Blanks around
 * it are allowed. 0, or -1 for anything else (no message): empty, negative, zero,
 * not a number, an unknown unit, or past SIZE_MAX. */
int cf_mem_parse(const char *s, size_t *bytes);

#endif
