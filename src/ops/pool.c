/* pool.c - pooling over images x (B, C, H, W): maxpool and avgpool slide a window
 * over each (H, W) plane; globalavgpool takes each plane's mean, giving (B, C).
 *
 * maxpool and avgpool read node->attr.i: [0] kernel_h, [1] kernel_w, [2] stride_h,
 * [3] stride_w (0: the kernel's), [4] pad_h, [5] pad_w. The output is (B, C, OH, OW),
 * OH = (H + 2 pad_h - kernel_h) / stride_h + 1 rounded down (PyTorch's ceil_mode=False),
 * OW likewise. maxpool never picks padding (it counts as -inf) and takes the first
 * maximum of a window, scanning rows then columns, as PyTorch does; its forward saves
 * that position (an index into the plane, as a float) in aux, where backward sends dy.
 * avgpool divides by kernel_h * kernel_w, padding counted as zeros (PyTorch's
 * count_include_pad=True). maxpool has fast paths for windows without padding, and
 * for 2x2 windows moved by 2 (four outputs at a time), that keep these rules. Each plane is one job for the thread pool and is written by
 * it alone: results do not depend on the thread count. */
#include <math.h>
#include <string.h>

#include "core/error.h"
#include "ops/op.h"

/* Geometry of one pooling: a window kh x kw moved by sh, sw over a plane h x w padded
 * by ph, pw, giving oh x ow. */
typedef struct geom {
    int kh, kw, sh, sw, ph, pw;
    int h, w, oh, ow;
} geom;

static geom geom_of(const cf_node *n, int h, int w)
{
    geom g = {n->attr.i[0], n->attr.i[1], n->attr.i[2], n->attr.i[3], n->attr.i[4], n->attr.i[5], h, w, 0, 0};
    if (g.sh == 0) g.sh = g.kh;
    if (g.sw == 0) g.sw = g.kw;
    g.oh = g.sh > 0 ? (h + 2 * g.ph - g.kh) / g.sh + 1 : 0;
    g.ow = g.sw > 0 ? (w + 2 * g.pw - g.kw) / g.sw + 1 : 0;
    return g;
}

static int need_rank4(const cf_node *n)
{
    const cf_node *x = n->in[0];
    if (x->shape.rank == 4) return 0;
    char s[96];
    return cf_seterr("error: %s needs an image batch (B, C, H, W); got %s, of rank %d", cf_ops[n->op]->what,
                     cf_shape_str(x->shape, s, sizeof s), x->shape.rank);
}

static int pool_infer(cf_node *n)
{
    if (need_rank4(n)) return -1;
    const char *what = cf_ops[n->op]->what;
    const cf_shape xs = n->in[0]->shape;
    const int *a = n->attr.i;
    char s[96];
    if (a[0] < 1 || a[1] < 1 || a[2] < 0 || a[3] < 0 || a[4] < 0 || a[5] < 0)
        return cf_seterr("error: %s: kernel %dx%d, stride %dx%d, padding %dx%d: the kernel must be positive, "
                         "the stride and padding not negative", what, a[0], a[1], a[2], a[3], a[4], a[5]);
    if (2 * a[4] > a[0] || 2 * a[5] > a[1])
        return cf_seterr("error: %s: padding %dx%d is more than half the kernel %dx%d", what, a[4], a[5], a[0], a[1]);
    geom g = geom_of(n, xs.d[2], xs.d[3]);
    if (g.h + 2 * g.ph < g.kh || g.w + 2 * g.pw < g.kw || g.oh < 1 || g.ow < 1)
        return cf_seterr("error: %s: the %dx%d window is larger than the input %s padded by %dx%d: no output",
                         what, g.kh, g.kw, cf_shape_str(xs, s, sizeof s), g.ph, g.pw);
    if ((long long)g.h * g.w > (1ll << 24))
        return cf_seterr("error: %s: a plane of %dx%d is more than 2^24 elements, past what the saved positions "
                         "can index", what, g.h, g.w);
    n->shape = xs;
    n->shape.d[2] = g.oh;
    n->shape.d[3] = g.ow;
    n->batched = n->in[0]->batched;
    return 0;
}

typedef struct {
    const cf_inst *k;
    geom g;
} job;

static job job_of(const cf_inst *k)
{
    return (job){k, geom_of(k->node, k->xs[0].d[2], k->xs[0].d[3])};
}

static size_t planes(const cf_inst *k) { return cf_shape_count_b(k->ys, 1) / ((size_t)k->ys.d[2] * k->ys.d[3]); }

static size_t window_cost(const geom *g) { return (size_t)g->oh * g->ow * g->kh * g->kw; }

/* The window of output (oi, oj) clipped to the plane: rows [*r0, *r1), columns [*c0, *c1). */
static void window(const geom *g, int oi, int oj, int *r0, int *r1, int *c0, int *c1)
{
    int r = oi * g->sh - g->ph, c = oj * g->sw - g->pw;
    *r0 = r < 0 ? 0 : r;
    *r1 = r + g->kh < g->h ? r + g->kh : g->h;
    *c0 = c < 0 ? 0 : c;
    *c1 = c + g->kw < g->w ? c + g->kw : g->w;
}

/* Four floats, for the 2x2 fast paths; the baseline ISA (SSE2) has them everywhere. */
typedef float v4 __attribute__((vector_size(16)));
typedef int v4i __attribute__((vector_size(16)));

static inline v4 load4(const float *p)
{
    v4 v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void store4(float *p, v4 v) { memcpy(p, &v, sizeof v); }

static inline v4 select4(v4i m, v4 a, v4 b) { return (v4)(((v4i)a & m) | ((v4i)b & ~m)); }

/* One step of the scan of a window: v at position p replaces the best so far when it
 * is larger or NaN (NaN wins, as in PyTorch; a later NaN replaces an earlier one). */
static inline void take(float v, int p, float *best, int *at)
{
    int m = (v > *best) | (v != v);
    *best = m ? v : *best;
    *at = m ? p : *at;
}

static inline void take4(v4 v, v4 p, v4 *best, v4 *at)
{
    v4i m = (v > *best) | (v != v);
    *best = select4(m, v, *best);
    *at = select4(m, p, *at);
}

/* A plane whose windows lie inside it (no padding): each starts from its first
 * element, which is what the scan from -inf gives too. */
static void max_plane_inside(const geom *g, const float *x, float *y, float *arg)
{
    for (int oi = 0; oi < g->oh; oi++)
        for (int oj = 0; oj < g->ow; oj++) {
            int at0 = oi * g->sh * g->w + oj * g->sw, at = at0;
            float best = x[at0];
            for (int r = 0; r < g->kh; r++)
                for (int c = 0; c < g->kw; c++) {
                    int p = at0 + r * g->w + c;
                    take(x[p], p, &best, &at);
                }
            y[oi * g->ow + oj] = best;
            if (arg) arg[oi * g->ow + oj] = (float)at;
        }
}

/* The common case, 2x2 windows moved by 2 without padding: four outputs at a time,
 * from two rows' even and odd columns. */
static void max_plane_2x2(const geom *g, const float *x, float *y, float *arg)
{
    const v4 lane2 = {0, 2, 4, 6};
    for (int oi = 0; oi < g->oh; oi++) {
        const float *r0 = x + (size_t)2 * oi * g->w, *r1 = r0 + g->w;
        float *yr = y + (size_t)oi * g->ow, *ar = arg ? arg + (size_t)oi * g->ow : NULL;
        int oj = 0;
        for (; oj + 4 <= g->ow; oj += 4) {   /* reads columns 2 oj .. 2 oj + 7 < w */
            v4 a0 = load4(r0 + 2 * oj), b0 = load4(r0 + 2 * oj + 4);
            v4 a1 = load4(r1 + 2 * oj), b1 = load4(r1 + 2 * oj + 4);
            v4 e0 = __builtin_shufflevector(a0, b0, 0, 2, 4, 6), o0 = __builtin_shufflevector(a0, b0, 1, 3, 5, 7);
            v4 e1 = __builtin_shufflevector(a1, b1, 0, 2, 4, 6), o1 = __builtin_shufflevector(a1, b1, 1, 3, 5, 7);
            v4 p = (float)(2 * oi * g->w + 2 * oj) + lane2, best = e0, at = p;
            take4(o0, p + 1, &best, &at);
            take4(e1, p + (float)g->w, &best, &at);
            take4(o1, p + (float)(g->w + 1), &best, &at);
            store4(yr + oj, best);
            if (ar) store4(ar + oj, at);
        }
        for (; oj < g->ow; oj++) {
            int p = 2 * oi * g->w + 2 * oj, at = p;
            float best = x[p];
            take(x[p + 1], p + 1, &best, &at);
            take(x[p + g->w], p + g->w, &best, &at);
            take(x[p + g->w + 1], p + g->w + 1, &best, &at);
            yr[oj] = best;
            if (ar) ar[oj] = (float)at;
        }
    }
}

static int is_2x2(const geom *g) { return g->kh == 2 && g->kw == 2 && g->sh == 2 && g->sw == 2 && !g->ph && !g->pw; }

static void max_forward_range(void *p, size_t b, size_t e)
{
    const job *j = p;
    const geom *g = &j->g;
    size_t in = (size_t)g->h * g->w, out = (size_t)g->oh * g->ow;
    for (size_t q = b; q < e; q++) {
        const float *x = j->k->x[0] + q * in;
        float *y = j->k->y + q * out, *arg = j->k->aux ? j->k->aux + q * out : NULL;
        if (is_2x2(g)) {
            max_plane_2x2(g, x, y, arg);
            continue;
        }
        if (!g->ph && !g->pw) {
            max_plane_inside(g, x, y, arg);
            continue;
        }
        for (int oi = 0; oi < g->oh; oi++)
            for (int oj = 0; oj < g->ow; oj++) {
                int r0, r1, c0, c1;
                window(g, oi, oj, &r0, &r1, &c0, &c1);
                float best = -INFINITY;
                int at = r0 * g->w + c0;
                for (int r = r0; r < r1; r++)
                    for (int c = c0; c < c1; c++) take(x[r * g->w + c], r * g->w + c, &best, &at);
                y[oi * g->ow + oj] = best;
                if (arg) arg[oi * g->ow + oj] = (float)at;
            }
    }
}

/* Backward of the 2x2 case: the windows do not overlap, so each input gets dy where
 * it was the maximum and 0 elsewhere, written (or added) row pair by row pair; the
 * last row or column that no window covers (odd h or w) gets 0. */
static void max_back_2x2(const geom *g, const float *dy, const float *arg, float *dx, int acc)
{
    const v4 lane2 = {0, 2, 4, 6}, zero = {0};
    for (int oi = 0; oi < g->oh; oi++) {
        float *r0 = dx + (size_t)2 * oi * g->w, *r1 = r0 + g->w;
        const float *dr = dy + (size_t)oi * g->ow, *ar = arg + (size_t)oi * g->ow;
        int oj = 0;
        for (; oj + 4 <= g->ow; oj += 4) {
            v4 d = load4(dr + oj), a = load4(ar + oj), p = (float)(2 * oi * g->w + 2 * oj) + lane2;
            v4 d00 = select4(a == p, d, zero), d01 = select4(a == p + 1, d, zero);
            v4 d10 = select4(a == p + (float)g->w, d, zero), d11 = select4(a == p + (float)(g->w + 1), d, zero);
            v4 u0 = __builtin_shufflevector(d00, d01, 0, 4, 1, 5), u1 = __builtin_shufflevector(d00, d01, 2, 6, 3, 7);
            v4 w0 = __builtin_shufflevector(d10, d11, 0, 4, 1, 5), w1 = __builtin_shufflevector(d10, d11, 2, 6, 3, 7);
            float *c0 = r0 + 2 * oj, *c1 = r1 + 2 * oj;
            if (acc) {
                u0 += load4(c0), u1 += load4(c0 + 4), w0 += load4(c1), w1 += load4(c1 + 4);
            }
            store4(c0, u0), store4(c0 + 4, u1), store4(c1, w0), store4(c1 + 4, w1);
        }
        for (; oj < g->ow; oj++) {
            if (!acc) r0[2 * oj] = r0[2 * oj + 1] = r1[2 * oj] = r1[2 * oj + 1] = 0;
            dx[(size_t)ar[oj]] += dr[oj];
        }
        if (!acc && g->w > 2 * g->ow) r0[g->w - 1] = r1[g->w - 1] = 0;
    }
    if (!acc && g->h > 2 * g->oh) memset(dx + (size_t)(g->h - 1) * g->w, 0, (size_t)g->w * sizeof *dx);
}

static void max_backward_range(void *p, size_t b, size_t e)
{
    const job *j = p;
    const geom *g = &j->g;
    size_t in = (size_t)g->h * g->w, out = (size_t)g->oh * g->ow;
    for (size_t q = b; q < e; q++) {
        const float *dy = j->k->dy + q * out, *arg = j->k->aux + q * out;
        float *dx = j->k->dx[0] + q * in;
        if (is_2x2(g)) {
            max_back_2x2(g, dy, arg, dx, j->k->acc[0]);
            continue;
        }
        if (!j->k->acc[0]) memset(dx, 0, in * sizeof *dx);
        for (size_t o = 0; o < out; o++) dx[(size_t)arg[o]] += dy[o];
    }
}

static void avg_forward_range(void *p, size_t b, size_t e)
{
    const job *j = p;
    const geom *g = &j->g;
    size_t in = (size_t)g->h * g->w, out = (size_t)g->oh * g->ow;
    float div = (float)(g->kh * g->kw);
    for (size_t q = b; q < e; q++) {
        const float *x = j->k->x[0] + q * in;
        float *y = j->k->y + q * out;
        for (int oi = 0; oi < g->oh; oi++)
            for (int oj = 0; oj < g->ow; oj++) {
                int r0, r1, c0, c1;
                window(g, oi, oj, &r0, &r1, &c0, &c1);
                float s = 0;
                for (int r = r0; r < r1; r++)
                    for (int c = c0; c < c1; c++) s += x[r * g->w + c];
                y[oi * g->ow + oj] = s / div;
            }
    }
}

static void avg_backward_range(void *p, size_t b, size_t e)
{
    const job *j = p;
    const geom *g = &j->g;
    size_t in = (size_t)g->h * g->w, out = (size_t)g->oh * g->ow;
    float div = (float)(g->kh * g->kw);
    for (size_t q = b; q < e; q++) {
        const float *dy = j->k->dy + q * out;
        float *dx = j->k->dx[0] + q * in;
        if (!j->k->acc[0]) memset(dx, 0, in * sizeof *dx);
        for (int oi = 0; oi < g->oh; oi++)
            for (int oj = 0; oj < g->ow; oj++) {
                int r0, r1, c0, c1;
                window(g, oi, oj, &r0, &r1, &c0, &c1);
                float d = dy[oi * g->ow + oj] / div;
                for (int r = r0; r < r1; r++)
                    for (int c = c0; c < c1; c++) dx[r * g->w + c] += d;
            }
    }
}

/* maxpool's aux: the position of each output's maximum. */
static size_t max_aux(const cf_inst *k) { return cf_shape_count_b(k->ys, 1); }

static int max_forward(const cf_inst *k)
{
    job j = job_of(k);
    cf_parallel_range(planes(k), window_cost(&j.g), max_forward_range, &j);
    return 0;
}

static void max_backward(const cf_inst *k)
{
    job j = job_of(k);
    cf_parallel_range(planes(k), window_cost(&j.g) / 4 + 1, max_backward_range, &j);
}

static int avg_forward(const cf_inst *k)
{
    job j = job_of(k);
    cf_parallel_range(planes(k), window_cost(&j.g), avg_forward_range, &j);
    return 0;
}

static void avg_backward(const cf_inst *k)
{
    job j = job_of(k);
    cf_parallel_range(planes(k), window_cost(&j.g), avg_backward_range, &j);
}

/* ---- globalavgpool: (B, C, H, W) -> (B, C), the mean of each plane ---- */

static int global_infer(cf_node *n)
{
    if (need_rank4(n)) return -1;
    n->shape = n->in[0]->shape;
    n->shape.rank = 2;
    n->batched = n->in[0]->batched;
    return 0;
}

static size_t plane_size(const cf_inst *k) { return (size_t)k->xs[0].d[2] * k->xs[0].d[3]; }

static void global_forward_range(void *p, size_t b, size_t e)
{
    const cf_inst *k = ((const job *)p)->k;
    size_t n = plane_size(k);
    for (size_t q = b; q < e; q++) {
        const float *x = k->x[0] + q * n;
        float s = 0;
        for (size_t i = 0; i < n; i++) s += x[i];
        k->y[q] = s / (float)n;
    }
}

static void global_backward_range(void *p, size_t b, size_t e)
{
    const cf_inst *k = ((const job *)p)->k;
    size_t n = plane_size(k);
    for (size_t q = b; q < e; q++) {
        float d = k->dy[q] / (float)n, *dx = k->dx[0] + q * n;
        if (k->acc[0])
            for (size_t i = 0; i < n; i++) dx[i] += d;
        else
            for (size_t i = 0; i < n; i++) dx[i] = d;
    }
}

static int global_forward(const cf_inst *k)
{
    job j = {k, {0}};
    cf_parallel_range(cf_shape_count_b(k->ys, 1), plane_size(k), global_forward_range, &j);
    return 0;
}

static void global_backward(const cf_inst *k)
{
    job j = {k, {0}};
    cf_parallel_range(cf_shape_count_b(k->ys, 1), plane_size(k), global_backward_range, &j);
}

/* A comparison per window element; back: dy to the max. */
static void max_flops(const cf_node *n, const unsigned char *want, double *fwd, double *bwd)
{
    (void)want;
    *fwd = cf_count1(n->shape) * n->attr.i[0] * n->attr.i[1];
    *bwd = cf_count1(n->shape);
}

/* The window's sum and a division, both ways. */
static void avg_flops(const cf_node *n, const unsigned char *want, double *fwd, double *bwd)
{
    (void)want;
    *fwd = cf_count1(n->shape) * ((double)n->attr.i[0] * n->attr.i[1] + 1);
    *bwd = *fwd;
}

/* A plane's sum and a division; back: a division. */
static void global_flops(const cf_node *n, const unsigned char *want, double *fwd, double *bwd)
{
    (void)want;
    cf_shape x = n->in[0]->shape;
    *fwd = cf_count1(n->shape) * ((double)x.d[2] * x.d[3] + 1);
    *bwd = cf_count1(n->shape);
}

const cf_opdef cf_op_maxpool = {
    .name = "maxpool", .what = "max pooling", .infer = pool_infer, .aux = max_aux, .forward = max_forward,
    .backward = max_backward, .nin = 1, .flops = max_flops, .onnx = "MaxPool",
};
const cf_opdef cf_op_avgpool = {
    .name = "avgpool", .what = "average pooling", .infer = pool_infer, .forward = avg_forward,
    .backward = avg_backward, .nin = 1, .flops = avg_flops, .onnx = "AveragePool",
};
const cf_opdef cf_op_globalavgpool = {
    .name = "globalavgpool", .what = "global average pooling", .infer = global_infer,
    .forward = global_forward, .backward = global_backward, .flags = CF_CALL, .nin = 1,
    .flops = global_flops,
};
