/* alloc_count.h - count heap allocations: malloc and friends replaced by versions that
 * count while `counting` is set. Include in one test file only. Under the sanitizers
 * (which own malloc) ALLOC_COUNT_OFF is defined and nothing is replaced. */
#ifndef CF_TEST_ALLOC_COUNT_H
#define CF_TEST_ALLOC_COUNT_H

#include <stddef.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define ALLOC_COUNT_OFF 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define ALLOC_COUNT_OFF 1
#endif
#endif

#ifndef ALLOC_COUNT_OFF
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

static volatile int counting, allocations;

void *malloc(size_t n) { if (counting) allocations++; return __libc_malloc(n); }
void *calloc(size_t n, size_t s) { if (counting) allocations++; return __libc_calloc(n, s); }
void *realloc(void *p, size_t n) { if (counting) allocations++; return __libc_realloc(p, n); }
void free(void *p) { __libc_free(p); }
void *aligned_alloc(size_t a, size_t n) { if (counting) allocations++; return __libc_memalign(a, n); }
void *memalign(size_t a, size_t n) { if (counting) allocations++; return __libc_memalign(a, n); }
int posix_memalign(void **p, size_t a, size_t n)
{
    if (counting) allocations++;
    *p = __libc_memalign(a, n);
    return *p ? 0 : 12;
}
#endif

#endif
