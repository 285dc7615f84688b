/* plan.c - memory planning: place buffers with known lifetimes in one arena.
 *
 * A linear scan over time: buffers are taken in order of their first step (larger
 * first among equals); before placing one, every placed buffer whose last step is
 * earlier gives its bytes back to a free list, and the new buffer takes the smallest
 * free range that fits (the arena grows when none does). Lifetimes are inclusive, so a
 * step's inputs and outputs never share memory. O(n log n) plus the free list's
 * length per buffer: fine for graphs of a million nodes.
 *
 * Where there are at most GREEDY_MAX buffers, a second plan is made too, greedy by size
 * (the largest first, each at the lowest offset clear of the placed buffers it lives
 * beside), and the smaller arena is kept: neither order packs every graph well (a
 * fused graph, with fewer and shorter buffers, could come out larger by the scan). */
#include <stdlib.h>

#include "core/error.h"
#include "exec/exec.h"

#define ALIGN 16   /* floats: 64 bytes */

static int by_first(const void *pa, const void *pb)
{
    const cf_buf *a = *(cf_buf *const *)pa, *b = *(cf_buf *const *)pb;
    if (a->first != b->first) return a->first < b->first ? -1 : 1;
    if (a->size != b->size) return a->size > b->size ? -1 : 1;
    return a < b ? -1 : a > b;   /* stable: the order they were asked for */
}

/* A min-heap of placed buffers by last step. */
static void heap_push(cf_buf **h, int *n, cf_buf *b)
{
    int i = (*n)++;
    while (i > 0 && h[(i - 1) / 2]->last > b->last) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = b;
}

static cf_buf *heap_pop(cf_buf **h, int *n)
{
    cf_buf *top = h[0], *x = h[--*n];
    int i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && h[c + 1]->last < h[c]->last) c++;
        if (h[c]->last >= x->last) break;
        h[i] = h[c];
        i = c;
    }
    if (*n) h[i] = x;
    return top;
}

/* Free ranges [off, off + size), sorted by offset, coalesced. */
typedef struct { size_t off, size; } range;

static void give_back(range *f, int *nf, size_t off, size_t size)
{
    int i = 0;
    while (i < *nf && f[i].off < off) i++;
    int merge_left = i > 0 && f[i - 1].off + f[i - 1].size == off;
    int merge_right = i < *nf && off + size == f[i].off;
    if (merge_left && merge_right) {
        f[i - 1].size += size + f[i].size;
        for (int k = i; k < *nf - 1; k++) f[k] = f[k + 1];
        (*nf)--;
    } else if (merge_left) {
        f[i - 1].size += size;
    } else if (merge_right) {
        f[i].off = off;
        f[i].size += size;
    } else {
        for (int k = *nf; k > i; k--) f[k] = f[k - 1];
        f[i] = (range){off, size};
        (*nf)++;
    }
}

#define GREEDY_MAX 4096

static int by_size(const void *pa, const void *pb)
{
    const cf_buf *a = *(cf_buf *const *)pa, *b = *(cf_buf *const *)pb;
    if (a->size != b->size) return a->size > b->size ? -1 : 1;
    if (a->first != b->first) return a->first < b->first ? -1 : 1;
    return a < b ? -1 : a > b;
}

static int by_offset(const void *pa, const void *pb)
{
    const cf_buf *a = *(cf_buf *const *)pa, *b = *(cf_buf *const *)pb;
    return a->offset < b->offset ? -1 : a->offset > b->offset;
}

/* Greedy by size: each buffer's offset into off[] (by its index in bufs); the arena's
 * floats. order and near are scratch of n pointers each. */
static size_t plan_by_size(cf_buf *bufs, int n, cf_buf **order, cf_buf **near, size_t *off)
{
    size_t total = 0;
    for (int i = 0; i < n; i++) order[i] = &bufs[i];
    qsort(order, (size_t)n, sizeof *order, by_size);
    for (int i = 0; i < n; i++) {
        cf_buf *b = order[i];
        int m = 0;
        for (int j = 0; j < i; j++)   /* placed before it (offset set) and alive with it */
            if (order[j]->size && order[j]->first <= b->last && b->first <= order[j]->last) near[m++] = order[j];
        qsort(near, (size_t)m, sizeof *near, by_offset);
        size_t at = 0;
        for (int j = 0; j < m && b->size; j++) {
            if (near[j]->offset >= at + b->size) break;   /* it fits in the gap before */
            if (near[j]->offset + near[j]->size > at) at = near[j]->offset + near[j]->size;
        }
        b->offset = at;
        if (b->size && at + b->size > total) total = at + b->size;
    }
    for (int i = 0; i < n; i++) off[i] = bufs[i].offset;
    return total;
}

size_t cf_plan_buffers(cf_buf *bufs, int n)
{
    cf_buf **order = malloc((size_t)(2 * n + 1) * sizeof *order), **heap = order + n;
    range *free_ = malloc((size_t)(n + 1) * sizeof *free_);
    if (!order || !free_) {
        free(order);
        free(free_);
        cf_oom((size_t)(2 * n + 1) * sizeof *order + (size_t)(n + 1) * sizeof *free_);
        return (size_t)-1;
    }
    for (int i = 0; i < n; i++) {
        bufs[i].size = (bufs[i].size + ALIGN - 1) / ALIGN * ALIGN;
        order[i] = &bufs[i];
    }
    qsort(order, (size_t)n, sizeof *order, by_first);
    size_t total = 0;
    int nheap = 0, nfree = 0;
    for (int i = 0; i < n; i++) {
        cf_buf *b = order[i];
        while (nheap && heap[0]->last < b->first) {
            cf_buf *done = heap_pop(heap, &nheap);
            if (done->size) give_back(free_, &nfree, done->offset, done->size);
        }
        b->offset = total;
        if (b->size) {
            int k = nfree;                                     /* best fit */
            for (int j = 0; j < nfree; j++)
                if (free_[j].size >= b->size && (k == nfree || free_[j].size < free_[k].size)) k = j;
            if (k < nfree) {
                b->offset = free_[k].off;
                free_[k].off += b->size;
                free_[k].size -= b->size;
                if (!free_[k].size) {
                    for (int j = k; j < nfree - 1; j++) free_[j] = free_[j + 1];
                    nfree--;
                }
            } else if (nfree && free_[nfree - 1].off + free_[nfree - 1].size == total) {
                b->offset = free_[--nfree].off;                /* the top free range, grown */
                total = b->offset + b->size;
            } else {
                total += b->size;
            }
        }
        heap_push(heap, &nheap, b);
    }
    free(free_);
    size_t *scan = n <= GREEDY_MAX ? malloc((size_t)(2 * n + 1) * sizeof *scan) : NULL;
    if (scan) {   /* no memory for the second plan: the first stands */
        size_t *greedy = scan + n;
        for (int i = 0; i < n; i++) scan[i] = bufs[i].offset;
        size_t t = plan_by_size(bufs, n, order, heap, greedy);
        for (int i = 0; i < n; i++) bufs[i].offset = t < total ? greedy[i] : scan[i];
        if (t < total) total = t;
        free(scan);
    }
    free(order);
    return total;
}
