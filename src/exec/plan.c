/* plan.c - memory planning: place buffers with known lifetimes in one arena.
 *
 * Greedy by size (largest first, ties by first use): each buffer goes at the lowest
 * offset where it overlaps no placed buffer whose lifetime meets its own. Lifetimes
 * are inclusive, so a step's inputs and outputs never share memory. */
#include <stdlib.h>

#include "exec/exec.h"

#define ALIGN 16   /* floats: 64 bytes */

static int by_size(const void *pa, const void *pb)
{
    const cf_buf *a = *(cf_buf *const *)pa, *b = *(cf_buf *const *)pb;
    if (a->size != b->size) return a->size > b->size ? -1 : 1;
    if (a->first != b->first) return a->first < b->first ? -1 : 1;
    return a < b ? -1 : a > b;   /* stable: the order they were asked for */
}

static int by_offset(const void *pa, const void *pb)
{
    const cf_buf *a = *(cf_buf *const *)pa, *b = *(cf_buf *const *)pb;
    return a->offset < b->offset ? -1 : a->offset > b->offset;
}

size_t cf_plan_buffers(cf_buf *bufs, int n)
{
    cf_buf **order = malloc((size_t)(2 * n + 1) * sizeof *order), **live = order + n;
    if (!order) return (size_t)-1;
    for (int i = 0; i < n; i++) {
        bufs[i].size = (bufs[i].size + ALIGN - 1) / ALIGN * ALIGN;
        order[i] = &bufs[i];
    }
    qsort(order, (size_t)n, sizeof *order, by_size);
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        cf_buf *b = order[i];
        int nl = 0;
        for (int j = 0; j < i; j++) {
            cf_buf *p = order[j];
            if (p->size && p->first <= b->last && b->first <= p->last) live[nl++] = p;
        }
        qsort(live, (size_t)nl, sizeof *live, by_offset);
        size_t at = 0;
        for (int j = 0; j < nl; j++) {
            if (live[j]->offset >= at + b->size) break;    /* fits in the gap before it */
            size_t end = live[j]->offset + live[j]->size;
            if (end > at) at = end;
        }
        b->offset = at;
        if (at + b->size > total) total = at + b->size;
    }
    free(order);
    return total;
}
