/* layernorm.c - layer normalisation over the last dimension, as PyTorch's
 * torch.nn.functional.layer_norm(x, (d,), gamma, beta, eps) and nn.LayerNorm(d).
 *
 *   inputs: x (B, ..., d), gamma and beta (d numbers each: the scale and the shift)
 *   each row of d numbers (x at every index but the last) on its own:
 *   y[r, j] = (x[r, j] - mean_r) rstd_r gamma[j] + beta[j],
 *   rstd_r = 1 / sqrt(var_r + eps), var the biased variance of the row
 *
 * Attribute (node->attr.f): [0] eps (0: 1e-5).
 * Forward, a row at a time while it sits in cache: its sum, then the sums of the
 * residuals x - m and of their squares (two passes: no cancellation, as
 * E[x²] - mean² would have), then y. m is the float nearest the first pass's mean;
 * the residuals' sum, 0 but for rounding, gives what m misses, mlo = sum(x - m) / d,
 * and corrects the variance (Chan, Golub and LeVeque's corrected two-pass algorithm).
 * Residuals are taken as (x - m) - mlo, the first subtraction exact where x is near m:
 * a mean far from 0 (a row of 3 ± 0.25) costs no accuracy. Sums run in eight lanes,
 * added in an order that depends on d alone. Rows are split between threads.
 * aux (3 R floats, R rows): each row's m, mlo and rstd, for backward.
 * Backward, with xhat = (x - mean) rstd, g = dy gamma and means over the row:
 *   dx = rstd (g - mean(g) - xhat mean(g xhat)),
 *   dgamma = the sum over rows of dy xhat,  dbeta = the sum over rows of dy.
 * The rows are split into at most NCHUNK chunks that depend on R alone; each chunk
 * makes its rows' dx and its own partial dgamma and dbeta (2 d floats of the
 * workspace), and the partial sums are added in chunk order: the same bits at any
 * thread count. */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "core/error.h"
#include "ops/op.h"
#include "rt/vmath.h"

#define DEFAULT_EPS 1e-5f
#define NCHUNK 32

static float eps_of(const cf_node *n) { return n->attr.f[0] > 0 ? n->attr.f[0] : DEFAULT_EPS; }

static int ln_infer(cf_node *n)
{
    static const char *role[] = {"x", "the scale (gamma)", "the shift (beta)"};
    cf_shape x = n->in[0]->shape;
    char sx[96], s[96];
    if (x.rank < 2 || !n->in[0]->batched)
        return cf_seterr("error: layernorm takes x as (B, ..., d) and normalises over d, but x is %s",
                         cf_shape_str(x, sx, sizeof sx));
    cf_shape_str(x, sx, sizeof sx);
    size_t d = (size_t)x.d[x.rank - 1];
    for (int i = 1; i < 3; i++) {
        const cf_node *p = n->in[i];
        if (p->batched || cf_shape_count(p->shape) != d)
            return cf_seterr("error: layernorm of x %s: %s must hold one number per element of x's last "
                             "dimension, %zu, not %s",
                             sx, role[i], d, cf_shape_str(p->shape, s, sizeof s));
    }
    if (!(n->attr.f[0] >= 0 && n->attr.f[0] < 1))
        return cf_seterr("error: layernorm of x %s: eps %g must be in (0, 1) (0 stands for the default, 1e-5)", sx,
                         (double)n->attr.f[0]);
    n->shape = x;
    n->batched = 1;
    return 0;
}

typedef struct {
    const cf_inst *k;
    size_t R, d;   /* x as R rows of d */
    size_t nc;     /* backward's chunks of rows */
} job;

static size_t nchunks(size_t R) { return R < NCHUNK ? R : NCHUNK; }

static job job_of(const cf_inst *k)
{
    job j = {k, 0, (size_t)k->ys.d[k->ys.rank - 1], 0};
    j.R = cf_shape_count_b(k->ys, 1) / j.d;
    j.nc = nchunks(j.R);
    return j;
}

static size_t ln_aux(const cf_inst *k) { return 3 * job_of(k).R; }
static size_t ln_workspace(const cf_inst *k)
{
    job j = job_of(k);
    return j.nc * 2 * j.d;
}

/* Eight lanes' sums, added in a fixed order. */
static float lanes_total(cf_v4 a, cf_v4 b)
{
    cf_v4 s = a + b;
    float t = 0;
    for (int i = 0; i < CF_VMATH_LANES; i++) t += s[i];
    return t;
}

/* The sum of x[i] - c over a row (c 0: the plain sum), and of its squares in *sq. */
static float row_sums(const float *x, float c, size_t d, float *sq)
{
    const cf_v4 cv = cf_v4_set1(c);
    cf_v4 s0 = {0}, s1 = {0}, q0 = {0}, q1 = {0};
    size_t i = 0;
    for (; i + 2 * CF_VMATH_LANES <= d; i += 2 * CF_VMATH_LANES) {
        cf_v4 a, b;
        memcpy(&a, x + i, sizeof a);
        memcpy(&b, x + i + CF_VMATH_LANES, sizeof b);
        a -= cv;
        b -= cv;
        s0 += a;
        s1 += b;
        q0 += a * a;
        q1 += b * b;
    }
    float s = lanes_total(s0, s1), q = lanes_total(q0, q1);
    for (; i < d; i++) {
        float a = x[i] - c;
        s += a;
        q += a * a;
    }
    *sq = q;
    return s;
}

/* The sums over a row of g = dy gamma and of g ((x - m) - mlo), for backward. */
static void grad_sums(const float *x, const float *dy, const float *gamma, float m, float mlo, size_t d, float *sg,
                      float *sgx)
{
    const cf_v4 mv = cf_v4_set1(m), lv = cf_v4_set1(mlo);
    cf_v4 s0 = {0}, s1 = {0}, t0 = {0}, t1 = {0};
    size_t i = 0;
    for (; i + 2 * CF_VMATH_LANES <= d; i += 2 * CF_VMATH_LANES) {
        cf_v4 xa, xb, da, db, ga, gb;
        memcpy(&xa, x + i, sizeof xa);
        memcpy(&xb, x + i + CF_VMATH_LANES, sizeof xb);
        memcpy(&da, dy + i, sizeof da);
        memcpy(&db, dy + i + CF_VMATH_LANES, sizeof db);
        memcpy(&ga, gamma + i, sizeof ga);
        memcpy(&gb, gamma + i + CF_VMATH_LANES, sizeof gb);
        da *= ga;
        db *= gb;
        s0 += da;
        s1 += db;
        t0 += da * ((xa - mv) - lv);
        t1 += db * ((xb - mv) - lv);
    }
    float s = lanes_total(s0, s1), t = lanes_total(t0, t1);
    for (; i < d; i++) {
        float g = dy[i] * gamma[i];
        s += g;
        t += g * ((x[i] - m) - mlo);
    }
    *sg = s;
    *sgx = t;
}

static void forward_rows(void *p, size_t r0, size_t r1)
{
    const job *j = p;
    const cf_inst *k = j->k;
    const float *restrict gamma = k->x[1], *restrict beta = k->x[2];
    size_t d = j->d;
    float eps = eps_of(k->node), inv_d = 1.0f / (float)d;
    for (size_t r = r0; r < r1; r++) {
        const float *restrict x = k->x[0] + r * d;
        float *restrict y = k->y + r * d;
        float sq, m = row_sums(x, 0, d, &sq) * inv_d;
        float c = row_sums(x, m, d, &sq);   /* the residuals' sum: 0 but for rounding */
        float mlo = c * inv_d, var = (sq - c * mlo) * inv_d;
        float rstd = 1.0f / sqrtf((var > 0 ? var : 0) + eps);
        k->aux[3 * r] = m;
        k->aux[3 * r + 1] = mlo;
        k->aux[3 * r + 2] = rstd;
        for (size_t i = 0; i < d; i++) y[i] = ((x[i] - m) - mlo) * rstd * gamma[i] + beta[i];
    }
}

static int ln_forward(const cf_inst *k)
{
    job j = job_of(k);
    cf_parallel_range(j.R, 6 * j.d, forward_rows, &j);
    return 0;
}

/* Chunks [c0, c1) of the rows: their dx, and each chunk's partial dgamma and dbeta. */
static void backward_chunks(void *p, size_t c0, size_t c1)
{
    const job *j = p;
    const cf_inst *k = j->k;
    const float *restrict gamma = k->x[1];
    float *dx = k->dx[0];
    int partial = k->dx[1] || k->dx[2], acc = k->acc[0];
    size_t d = j->d;
    float inv_d = 1.0f / (float)d;
    for (size_t c = c0; c < c1; c++) {
        size_t r0 = j->R * c / j->nc, r1 = j->R * (c + 1) / j->nc;
        float *restrict pg = k->ws + c * 2 * d, *restrict pb = pg + d;
        if (partial) memset(pg, 0, 2 * d * sizeof *pg);
        for (size_t r = r0; r < r1; r++) {
            const float *restrict x = k->x[0] + r * d, *restrict dy = k->dy + r * d;
            float m = k->aux[3 * r], mlo = k->aux[3 * r + 1], rstd = k->aux[3 * r + 2];
            if (dx) {
                float sg, sgx;
                grad_sums(x, dy, gamma, m, mlo, d, &sg, &sgx);
                /* dx = rstd g - rstd mean(g) - (x - mean) rstd^3 mean(g (x - mean)) */
                float a = rstd * sg * inv_d, b = rstd * rstd * rstd * sgx * inv_d;
                float *restrict dxr = dx + r * d;
                if (acc)
                    for (size_t i = 0; i < d; i++) dxr[i] += rstd * dy[i] * gamma[i] - a - ((x[i] - m) - mlo) * b;
                else
                    for (size_t i = 0; i < d; i++) dxr[i] = rstd * dy[i] * gamma[i] - a - ((x[i] - m) - mlo) * b;
            }
            if (partial)
                for (size_t i = 0; i < d; i++) {
                    pg[i] += dy[i] * (((x[i] - m) - mlo) * rstd);
                    pb[i] += dy[i];
                }
        }
    }
}

static void ln_backward(const cf_inst *k)
{
    job j = job_of(k);
    cf_parallel_range(j.nc, (j.R / j.nc + 1) * 10 * j.d, backward_chunks, &j);
    /* dgamma and dbeta: the chunks' partial sums, in chunk order */
    for (int w = 1; w < 3; w++) {
        float *g = k->dx[w];
        if (!g) continue;
        const float *part = k->ws + (w - 1) * j.d;
        cf_put(g, part, j.d, k->acc[w]);
        for (size_t c = 1; c < j.nc; c++) cf_put(g, part + c * 2 * j.d, j.d, 1);
    }
}

/* The row's sum (1), its squares about the mean (3), y = (x - m) r g + b (4);
 * backward: dy's sums for dγ and dβ (5), and with dx the row's sums (5) and dx (6). */
static void ln_flops(const cf_node *n, const unsigned char *want, double *fwd, double *bwd)
{
    double E = cf_count1(n->shape);
    *fwd = 8 * E;
    *bwd = (want[1] || want[2] ? 5 * E : 0) + (want[0] ? 11 * E : 0);
}

const cf_opdef cf_op_layernorm = {
    .name = "layernorm", .what = "layer normalisation", .infer = ln_infer, .aux = ln_aux,
    .workspace = ln_workspace, .forward = ln_forward, .backward = ln_backward, .flags = CF_BWD_X, .nin = 3,
    .flops = ln_flops,
};
