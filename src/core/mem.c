/* mem.c - the memory budget (see mem.h): counted blocks, the limit and its default.
 *
 * A counted block carries its size in a 64-byte header in front of it, so freeing
 * gives back exactly what was taken. The bytes in use are one atomic counter; a
 * request takes its bytes with a compare-and-swap that fails, taking nothing, when
 * they would pass the limit. The limit is resolved once, under a lock, on first use. */
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cflux.h"
#include "core/error.h"
#include "core/mem.h"

#define HEADER 64

static _Atomic size_t in_use;
static _Atomic size_t limit;     /* 0: not resolved yet, or malformed */
static _Atomic int malformed;    /* $CFLUX_MAX_MEMORY is not a size */
static char bad_value[64];       /* that value, for the message (under lock) */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- sizes as text ---- */

static int blank(char c) { return c == ' ' || c == '\t'; }

/* The unit at s: its multiplier, and *s moved past it; 0 for an unknown unit. */
static size_t unit(const char **s)
{
    static const char units[] = "kmgt";
    const char *p = *s, *u = *p ? strchr(units, *p | 0x20) : NULL;
    size_t mult = 1;
    if (u) {
        for (const char *k = units; k <= u; k++) mult <<= 10;
        p++;
        if ((*p | 0x20) == 'i' && (p[1] | 0x20) == 'b') p += 2;
        else if ((*p | 0x20) == 'b') p++;
    } else if ((*p | 0x20) == 'b') {
        p++;
    }
    while (blank(*p)) p++;
    *s = p;
    return *p ? 0 : mult;
}

int cf_mem_parse(const char *s, size_t *bytes)
{
    if (!s) return -1;
    while (blank(*s)) s++;
    unsigned long long whole = 0;
    double frac = 0, scale = 1;
    int digits = 0;
    for (; *s >= '0' && *s <= '9'; s++, digits++) {
        if (whole > (ULLONG_MAX - 9) / 10) return -1;
        whole = whole * 10 + (unsigned)(*s - '0');
    }
    if (*s == '.')
        for (s++; *s >= '0' && *s <= '9'; s++, digits++) frac += (*s - '0') * (scale /= 10);
    if (!digits) return -1;
    while (blank(*s)) s++;
    size_t mult = unit(&s);
    if (!mult || whole > SIZE_MAX / mult) return -1;
    size_t b = (size_t)whole * mult, f = (size_t)(frac * (double)mult);
    if (b > SIZE_MAX - f || b + f == 0) return -1;
    b += f;
    *bytes = b;
    return 0;
}

char *cf_mem_str(size_t bytes, char buf[CF_MEM_STR])
{
    static const char *names[] = {"KB", "MB", "GB", "TB", "PB", "EB"};
    if (bytes < 1024) {
        snprintf(buf, CF_MEM_STR, "%zu B", bytes);
        return buf;
    }
    double v = (double)bytes / 1024;
    int u = 0;
    while (v >= 1023.95 && u < 5) v /= 1024, u++;
    snprintf(buf, CF_MEM_STR, "%.1f %s", v, names[u]);
    return buf;
}

/* ---- the limit ---- */

/* The default: $CFLUX_MAX_MEMORY, else what this process can have (not the machine's
 * whole memory: others use some, and a cgroup or ulimit may allow less). Under lock.
 * 0 when the variable is malformed (then `malformed` is set and bad_value holds it). */
static size_t read_default(void)
{
    const char *env = getenv("CFLUX_MAX_MEMORY");
    size_t b;
    if (env && *env) {
        if (cf_mem_parse(env, &b) == 0) return b;
        snprintf(bad_value, sizeof bad_value, "%s", env);
        if (strlen(env) >= sizeof bad_value) strcpy(bad_value + sizeof bad_value - 4, "...");
        atomic_store(&malformed, 1);
        return 0;
    }
    return cf_mem_available();
}

/* The limit now, resolving the default on first use; 0 when malformed. */
static size_t limit_now(void)
{
    size_t l = atomic_load(&limit);
    if (l || atomic_load(&malformed)) return l;
    pthread_mutex_lock(&lock);
    l = atomic_load(&limit);
    if (!l && !atomic_load(&malformed)) atomic_store(&limit, l = read_default());
    pthread_mutex_unlock(&lock);
    return l;
}

static int malformed_error(void)
{
    char v[sizeof bad_value];
    pthread_mutex_lock(&lock);
    memcpy(v, bad_value, sizeof v);
    pthread_mutex_unlock(&lock);
    return cf_seterr("error: CFLUX_MAX_MEMORY is '%s', not a size: write bytes or a number with K, M, G or T, as in "
                     "512M, 4G or 1.5G", v);
}

int cf_set_memory_limit(size_t bytes)
{
    pthread_mutex_lock(&lock);
    atomic_store(&malformed, 0);
    atomic_store(&limit, bytes ? bytes : read_default());
    int bad = atomic_load(&malformed);
    pthread_mutex_unlock(&lock);
    return bad ? malformed_error() : 0;
}

size_t cf_memory_limit(void)
{
    size_t l = limit_now();
    if (!l) malformed_error();
    return l;
}

size_t cf_memory_in_use(void) { return atomic_load(&in_use); }

size_t cf_mem_room(void)
{
    size_t l = limit_now(), u = atomic_load(&in_use);
    return u < l ? l - u : 0;
}

/* ---- counting ---- */

/* Take bytes from the budget: 0, or -1 (nothing taken) when they do not fit. */
static int take(size_t bytes)
{
    size_t l = limit_now(), cur = atomic_load(&in_use);
    do {
        if (!l || bytes > l || cur > l - bytes) return -1;
    } while (!atomic_compare_exchange_weak(&in_use, &cur, cur + bytes));
    return 0;
}

static void give(size_t bytes) { atomic_fetch_sub(&in_use, bytes); }

int cf_mem_refuse(size_t own, const char *fmt, ...)
{
    if (!limit_now()) return malformed_error();
    char what[CF_ERRMAX / 2], l[CF_MEM_STR], u[CF_MEM_STR];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    size_t used = atomic_load(&in_use);
    cf_seterr("error: %s, above the memory limit of %s", what, cf_mem_str(limit_now(), l));
    if (used > own) cf_adderr(", with %s already in use", cf_mem_str(used - own, u));
    cf_adderr(" (CFLUX_MAX_MEMORY or --max-memory)");
    return -1;
}

/* The refusal or out-of-memory message for a request of bytes for what, which holds
 * own bytes already (a block being resized). */
static void *fail(size_t bytes, const char *what, int refused, size_t own)
{
    char b[CF_MEM_STR];
    if (refused) cf_mem_refuse(own, "%s needs %s", what, cf_mem_str(bytes, b));
    else cf_seterr("error: %s needs %s: out of memory", what, cf_mem_str(bytes, b));
    return NULL;
}

void *cf_mem_alloc(size_t bytes, const char *what)
{
    if (bytes > SIZE_MAX / 2 || take(bytes)) return fail(bytes, what, 1, 0);
    unsigned char *base = aligned_alloc(HEADER, (HEADER + bytes + HEADER - 1) / HEADER * HEADER);
    if (!base) {
        give(bytes);
        return fail(bytes, what, 0, 0);
    }
    memcpy(base, &bytes, sizeof bytes);
    return base + HEADER;
}

size_t cf_mem_size(const void *p)
{
    size_t n;
    memcpy(&n, (const unsigned char *)p - HEADER, sizeof n);
    return n;
}

void *cf_mem_realloc(void *p, size_t bytes, const char *what)
{
    if (!p) return cf_mem_alloc(bytes, what);
    size_t old = cf_mem_size(p);
    if (bytes > old && (bytes > SIZE_MAX / 2 || take(bytes - old))) return fail(bytes, what, 1, old);
    unsigned char *base = realloc((unsigned char *)p - HEADER, HEADER + bytes);
    if (!base) {
        if (bytes > old) give(bytes - old);
        return fail(bytes, what, 0, old);
    }
    if (bytes < old) give(old - bytes);
    memcpy(base, &bytes, sizeof bytes);
    return base + HEADER;
}

void cf_mem_free(void *p)
{
    if (!p) return;
    give(cf_mem_size(p));
    free((unsigned char *)p - HEADER);
}
