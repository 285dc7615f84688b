/* batchnorm.c - batch normalisation over the channels of (B, C, ...), as PyTorch's
 * BatchNorm1d/2d.
 *
 *   inputs: x (B, C, ...), gamma and beta (C numbers, parameters), running mean and
 *   running variance (C numbers each, model states: cf_state)
 *   y[b, c, s] = (x[b, c, s] - mean[c]) * istd[c] * gamma[c] + beta[c],
 *   istd = 1 / sqrt(var + eps)
 *
 * Attributes (node->attr.f): [0] eps (0: 1e-5), [1] momentum (0: 0.1). So momentum 0
 * (PyTorch: frozen statistics) cannot be asked for; evaluation mode does that.
 * Training (ctx->train): mean and var are the batch's, over the N = B S values of each
 * channel (S: the product of the dimensions after C), var biased; the running
 * statistics move towards them, var unbiased (N / (N - 1)): r = (1 - momentum) r +
 * momentum s. The states are written in place: a training forward changes the
 * model, which is why it needs the model to itself (cflux.h, Threads).
 * Evaluation: the running statistics normalise; nothing changes.
 * Frozen: a batchnorm whose scale and shift are both frozen parameters (CF_GRAD_NONE)
 * is part of a fixed function, the body of a fine-tuned model, and runs as in
 * evaluation in training too (as PyTorch's module.eval() on a frozen block): it
 * normalises with the running statistics and leaves them as they are. PyTorch's
 * default, batch statistics that keep moving, would change what the frozen body
 * computes from one step to the next.
 * aux (2 C floats): the mean and istd the forward used, for backward.
 * Backward, with xhat = (x - mean) istd and sums over a channel's N values:
 *   dbeta = sum dy, dgamma = sum dy xhat,
 *   training:   dx = gamma istd / N (N dy - dbeta - xhat dgamma)   (mean, var depend on x)
 *   evaluation: dx = gamma istd dy.
 * Channels are independent and each is summed in one fixed order: the same bits at
 * any thread count.
 *
 * batchnorm_relu: relu(batchnorm(x)) in one node, which the fuse_bn_relu pass
 * (src/exec/fuse_bn_relu.c) makes of the two. Its forward writes relu's output and
 * never batchnorm's; its backward takes relu's gradient in passing (dy where the
 * forward's value x a + sh was positive, recomputed by the same operations rather
 * than read back) and then runs batchnorm's on it, by the same operations in the same
 * order: the bits of the two ops, with two passes over memory fewer each way.
 *
 * batchnorm_add_relu: relu(batchnorm(x) + r) in one node, r (a sixth input) of x's
 * shape: a residual block's end, which the fuse_bn_add_relu pass makes of the three
 * ops. Its forward writes relu's output alone; its backward takes the gate from the
 * forward's value (x a + sh) + r, recomputed, writes r's gradient (relu's, as the
 * addition passes it on) in the pass that sums it and runs batchnorm's on it: the bits
 * of the three ops, with four passes over memory fewer forward and three backward. */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "core/error.h"
#include "ops/op.h"
#include "rt/vsum.h"

#define DEFAULT_EPS 1e-5f
#define DEFAULT_MOMENTUM 0.1f

static float eps_of(const cf_node *n) { return n->attr.f[0] > 0 ? n->attr.f[0] : DEFAULT_EPS; }
static float momentum_of(const cf_node *n) { return n->attr.f[1] > 0 ? n->attr.f[1] : DEFAULT_MOMENTUM; }

/* Batch statistics (training, not frozen: see the top) or the running ones. */
static int batch_stats(const cf_inst *k)
{
    const cf_node *g = k->node->in[1], *b = k->node->in[2];
    int frozen = g->op == CF_OP_PARAM && g->req == CF_GRAD_NONE && b->op == CF_OP_PARAM && b->req == CF_GRAD_NONE;
    return k->ctx->train && !frozen;
}

static int bn_infer(cf_node *n)
{
    static const char *role[] = {"x", "the scale (gamma)", "the shift (beta)", "the running mean",
                                 "the running variance"};
    cf_shape x = n->in[0]->shape;
    char sx[96], s[96];
    if (x.rank < 2 || !n->in[0]->batched)
        return cf_seterr("error: batchnorm takes x as (B, C, ...), not %s", cf_shape_str(x, sx, sizeof sx));
    cf_shape_str(x, sx, sizeof sx);
    size_t C = (size_t)x.d[1];
    for (int i = 1; i < 5; i++) {
        const cf_node *p = n->in[i];
        if (p->batched || cf_shape_count(p->shape) != C)
            return cf_seterr("error: batchnorm of x %s: %s must hold one number per channel, %zu, not %s", sx,
                             role[i], C, cf_shape_str(p->shape, s, sizeof s));
        if (i >= 3 && p->op != CF_OP_STATE)
            return cf_seterr("error: batchnorm of x %s: %s must be model state (state in C, stat in the notation), "
                             "which training updates, not a %s",
                             sx, role[i], cf_ops[p->op]->what);
    }
    cf_shape r = n->op == CF_OP_BATCHNORM_ADD_RELU ? n->in[5]->shape : x;
    if (!(r.rank == x.rank && memcmp(r.d, x.d, sizeof *x.d * (size_t)x.rank) == 0 &&
          (n->op != CF_OP_BATCHNORM_ADD_RELU || n->in[5]->batched)))
        return cf_seterr("error: batchnorm_add_relu of x %s: the value added must have x's shape, not %s", sx,
                         cf_shape_str(r, s, sizeof s));
    if (!(n->attr.f[0] >= 0 && n->attr.f[0] < 1) || !(n->attr.f[1] >= 0 && n->attr.f[1] <= 1))
        return cf_seterr("error: batchnorm of x %s: eps %g must be in (0, 1) and momentum %g in (0, 1] (0 "
                         "stands for the defaults, 1e-5 and 0.1)",
                         sx, (double)n->attr.f[0], (double)n->attr.f[1]);
    n->shape = x;
    n->batched = 1;
    return 0;
}

static size_t bn_aux(const cf_inst *k) { return 2 * (size_t)k->ys.d[1]; }

typedef struct {
    const cf_inst *k;
    size_t B, C, S;   /* x as (B, C, S) */
    int relu;         /* 0: batchnorm, 1: batchnorm_relu, 2: batchnorm_add_relu */
} job;

static job job_of(const cf_inst *k)
{
    job j = {k, (size_t)k->ys.d[0], (size_t)k->ys.d[1], 1,
             k->node->op == CF_OP_BATCHNORM_RELU ? 1 : k->node->op == CF_OP_BATCHNORM_ADD_RELU ? 2 : 0};
    for (int i = 2; i < k->ys.rank; i++) j.S *= (size_t)k->ys.d[i];
    return j;
}

/* y = x a + sh on channel c: a and sh from the mean and istd in aux. */
static void affine_of(const job *j, size_t c, float *a, float *sh)
{
    const cf_inst *k = j->k;
    *a = k->x[1][c] * k->aux[j->C + c];
    *sh = k->x[2][c] - k->aux[c] * *a;
}

/* Channel c's batch mean and biased variance. The sums are taken plane by plane (the S
 * values of one sample, which lie together), each in float by rt/vsum.h's sixteen
 * partial sums (one double accumulator was a chain of dependent additions, and the
 * op's main cost), and the planes' sums added in double in sample order: an order that
 * depends on the shape alone. The mean first, then the squared deviations from it as
 * a float m (a second pass, over values the first leaves in cache), less the square of
 * m's rounding, since sum (x - m)^2 = sum (x - mean)^2 + N (mean - m)^2. */
static void channel_stats(const job *j, size_t c, double *mean, double *var)
{
    const float *x = j->k->x[0];
    size_t N = j->B * j->S;
    double s = 0, q = 0;
    for (size_t b = 0; b < j->B; b++) s += cf_vsum(x + (b * j->C + c) * j->S, j->S);
    *mean = s / (double)N;
    float m = (float)*mean;
    for (size_t b = 0; b < j->B; b++) q += cf_vsum_sqdev(x + (b * j->C + c) * j->S, j->S, m);
    double r = *mean - m;
    *var = q / (double)N - r * r;
    if (*var < 0) *var = 0;
}

/* Channels [c0, c1): statistics (batch or running), then y. */
static void forward_range(void *p, size_t c0, size_t c1)
{
    const job *j = p;
    const cf_inst *k = j->k;
    const float *x = k->x[0];
    /* the running statistics: model state, written here in training (see the top) */
    float *rmean = (float *)k->x[3], *rvar = (float *)k->x[4];
    float eps = eps_of(k->node), mom = momentum_of(k->node);
    size_t N = j->B * j->S;
    for (size_t c = c0; c < c1; c++) {
        double mean, var;
        if (batch_stats(k)) {
            channel_stats(j, c, &mean, &var);
            rmean[c] = (1 - mom) * rmean[c] + mom * (float)mean;
            rvar[c] = (1 - mom) * rvar[c] + mom * (float)(var * (double)N / (double)(N - 1));
        } else {
            mean = rmean[c];
            var = rvar[c];
        }
        float m = (float)mean, istd = (float)(1 / sqrt(var + eps));
        k->aux[c] = m;
        k->aux[j->C + c] = istd;
        float a, sh;
        affine_of(j, c, &a, &sh);
        size_t S = j->S;   /* a local: through j, every store to y might change it, and no loop would vectorise */
        for (size_t b = 0; b < j->B; b++) {
            const float *restrict xc = x + (b * j->C + c) * S;
            float *restrict yc = k->y + (b * j->C + c) * S;
            if (j->relu == 2) {   /* the addition's, then relu's */
                const float *restrict rc = k->x[5] + (b * j->C + c) * S;
                for (size_t i = 0; i < S; i++) {
                    float v = (xc[i] * a + sh) + rc[i];
                    yc[i] = v > 0 ? v : 0;
                }
            } else if (j->relu)   /* relu's own expression (ops/activation.c) */
                for (size_t i = 0; i < S; i++) {
                    float v = xc[i] * a + sh;
                    yc[i] = v > 0 ? v : 0;
                }
            else
                for (size_t i = 0; i < S; i++) yc[i] = xc[i] * a + sh;
        }
    }
}

static int bn_forward(const cf_inst *k)
{
    job j = job_of(k);
    if (batch_stats(k) && j.B * j.S < 2)
        return cf_seterr("error: batchnorm in training needs more than one value per channel to take statistics "
                         "from, but x is %zu x 1 per channel (batch %zu)",
                         j.B, j.B);
    cf_parallel_range(j.C, 3 * j.B * j.S + 1, forward_range, &j);
    return 0;
}

/* batchnorm's incoming gradient g: dy, or for batchnorm_relu dy where the forward's
 * x a + sh was positive and +0 elsewhere, as relu's backward makes it; for
 * batchnorm_add_relu, where (x a + sh) + r was. */
typedef struct {
    int relu;
    float a, sh;
} gate;

/* The gate on four values, r's four with relu 2; relu is a constant wherever this is
 * inlined (see below). */
static inline __attribute__((always_inline)) cf_vsum_v4 gated(cf_vsum_v4 g, cf_vsum_v4 xv, cf_vsum_v4 rv, int relu,
                                                              float a, float sh)
{
    const cf_vsum_v4 av = {a, a, a, a}, shv = {sh, sh, sh, sh}, zero = {0};
    if (relu == 2) return (cf_vsum_v4)((cf_vsum_v4i)((xv * av + shv) + rv > zero) & (cf_vsum_v4i)g);
    return relu ? (cf_vsum_v4)((cf_vsum_v4i)(xv * av + shv > zero) & (cf_vsum_v4i)g) : g;
}

/* The gate on one value. */
static inline __attribute__((always_inline)) float gated1(float g, float x, float r, int relu, float a, float sh)
{
    if (relu == 2) return (x * a + sh) + r > 0 ? g : 0.0f;
    return relu && !(x * a + sh > 0) ? 0.0f : g;
}

/* Sums of g and of g (x - m) over a plane of n values, in rt/vsum.h's order; with
 * relu 2, r's gradient dr = g too (+= with accr). */
static inline __attribute__((always_inline)) void grad_sums_as(const float *restrict x, const float *restrict dy,
                                                               const float *restrict r, float *restrict dr,
                                                               int accr, size_t n, float m, int relu, float a,
                                                               float sh, float *sdy, float *sdyx)
{
    const cf_vsum_v4 mv = {m, m, m, m};
    cf_vsum_v4 s[4] = {{0}, {0}, {0}, {0}}, sx[4] = {{0}, {0}, {0}, {0}}, rv = {0};
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (int q = 0; q < 4; q++) {
            cf_vsum_v4 xv = cf_vsum_load(x + i + 4 * q);
            if (relu == 2) rv = cf_vsum_load(r + i + 4 * q);
            cf_vsum_v4 g = gated(cf_vsum_load(dy + i + 4 * q), xv, rv, relu, a, sh);
            s[q] += g;
            sx[q] += g * (xv - mv);
            if (relu == 2 && dr) {
                cf_vsum_v4 d = accr ? cf_vsum_load(dr + i + 4 * q) + g : g;
                memcpy(dr + i + 4 * q, &d, sizeof d);
            }
        }
    float t = cf_vsum_fold(s), tx = cf_vsum_fold(sx);
    for (; i < n; i++) {
        float g = gated1(dy[i], x[i], relu == 2 ? r[i] : 0, relu, a, sh);
        t += g;
        tx += g * (x[i] - m);
        if (relu == 2 && dr) dr[i] = accr ? dr[i] + g : g;
    }
    *sdy = t;
    *sdyx = tx;
}

/* The gate's test, where it is on, in the loop's copy of its own: none where it is off. */
static void grad_sums(const float *x, const float *dy, const float *r, float *dr, int accr, size_t n, float m,
                      gate g, float *sdy, float *sdyx)
{
    if (g.relu == 2 && accr) grad_sums_as(x, dy, r, dr, 1, n, m, 2, g.a, g.sh, sdy, sdyx);
    else if (g.relu == 2) grad_sums_as(x, dy, r, dr, 0, n, m, 2, g.a, g.sh, sdy, sdyx);
    else if (g.relu) grad_sums_as(x, dy, NULL, NULL, 0, n, m, 1, g.a, g.sh, sdy, sdyx);
    else grad_sums_as(x, dy, NULL, NULL, 0, n, m, 0, 0, 0, sdy, sdyx);
}

/* dx = a g + bx x + c0 over a plane of n values (added when acc), four at a time, the
 * last n % 4 in a padded vector. */
static inline __attribute__((always_inline)) void dx_plane_as(float *dx, const float *x, const float *dy,
                                                              const float *r, size_t n, int relu, float ra, float rsh,
                                                              float a, float bx, float c0, int acc)
{
    const cf_vsum_v4 av = {a, a, a, a}, bv = {bx, bx, bx, bx}, cv = {c0, c0, c0, c0};
    cf_vsum_v4 rv = {0};
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        cf_vsum_v4 xv = cf_vsum_load(x + i);
        if (relu == 2) rv = cf_vsum_load(r + i);
        cf_vsum_v4 d = av * gated(cf_vsum_load(dy + i), xv, rv, relu, ra, rsh) + bv * xv + cv;
        if (acc) d = cf_vsum_load(dx + i) + d;
        memcpy(dx + i, &d, sizeof d);
    }
    if (i < n) {
        cf_vsum_v4 xv = {0}, g = {0}, d0 = {0};
        size_t bytes = (n - i) * sizeof(float);
        memcpy(&xv, x + i, bytes);
        memcpy(&g, dy + i, bytes);
        if (relu == 2) memcpy(&rv, r + i, bytes);
        cf_vsum_v4 d = av * gated(g, xv, rv, relu, ra, rsh) + bv * xv + cv;
        if (acc) {
            memcpy(&d0, dx + i, bytes);
            d = d0 + d;
        }
        memcpy(dx + i, &d, bytes);
    }
}

/* dx for channel c's planes, by a copy of the loop for each gate and acc. */
static void dx_planes(const job *j, size_t c, gate r, float a, float bx, float c0, int acc)
{
    const cf_inst *k = j->k;
    size_t S = j->S;
    for (size_t b = 0; b < j->B; b++) {
        size_t o = (b * j->C + c) * S;
        const float *xc = k->x[0] + o, *dyc = k->dy + o, *rc = r.relu == 2 ? k->x[5] + o : NULL;
        float *dxc = k->dx[0] + o;
        if (r.relu == 2 && acc) dx_plane_as(dxc, xc, dyc, rc, S, 2, r.a, r.sh, a, bx, c0, 1);
        else if (r.relu == 2) dx_plane_as(dxc, xc, dyc, rc, S, 2, r.a, r.sh, a, bx, c0, 0);
        else if (r.relu && acc) dx_plane_as(dxc, xc, dyc, NULL, S, 1, r.a, r.sh, a, bx, c0, 1);
        else if (r.relu) dx_plane_as(dxc, xc, dyc, NULL, S, 1, r.a, r.sh, a, bx, c0, 0);
        else if (acc) dx_plane_as(dxc, xc, dyc, NULL, S, 0, 0, 0, a, bx, c0, 1);
        else dx_plane_as(dxc, xc, dyc, NULL, S, 0, 0, 0, a, bx, c0, 0);
    }
}

static void backward_range(void *p, size_t c0, size_t c1)
{
    const job *j = p;
    const cf_inst *k = j->k;
    const float *x = k->x[0], *gamma = k->x[1], *dy = k->dy;
    float *dgamma = k->dx[1], *dbeta = k->dx[2];
    size_t N = j->B * j->S;
    for (size_t c = c0; c < c1; c++) {
        float m = k->aux[c], istd = k->aux[j->C + c];
        gate r = {j->relu, 0, 0};
        if (r.relu) affine_of(j, c, &r.a, &r.sh);
        double sdy = 0, sdyx = 0;   /* sum g, and sum g (x - m), which istd makes sum g xhat */
        for (size_t b = 0; b < j->B; b++) {
            size_t o = (b * j->C + c) * j->S;
            float s, sx;
            if (r.relu == 2)   /* and r's gradient */
                grad_sums(x + o, dy + o, k->x[5] + o, k->dx[5] ? k->dx[5] + o : NULL, k->acc[5], j->S, m, r, &s, &sx);
            else
                grad_sums(x + o, dy + o, NULL, NULL, 0, j->S, m, r, &s, &sx);
            sdy += s;
            sdyx += sx;
        }
        sdyx *= istd;
        if (dgamma) dgamma[c] = (k->acc[1] ? dgamma[c] : 0) + (float)sdyx;
        if (dbeta) dbeta[c] = (k->acc[2] ? dbeta[c] : 0) + (float)sdy;
        if (!k->dx[0]) continue;
        float g = gamma[c] * istd;
        /* training: dx = g dy - g / N (dbeta + xhat dgamma) = a dy + b x + c0 */
        float a = g, bx = 0, c0v = 0;
        if (batch_stats(k)) {
            float mb = (float)(sdy / (double)N), mg = (float)(sdyx / (double)N);
            bx = -g * mg * istd;
            c0v = -g * mb + g * mg * istd * m;
        }
        dx_planes(j, c, r, a, bx, c0v, k->acc[0]);
    }
}

static void bn_backward(const cf_inst *k)
{
    job j = job_of(k);
    cf_parallel_range(j.C, 4 * j.B * j.S + 1, backward_range, &j);
}

/* Training: the mean (1), the variance (3), y = x a + c (2); backward: sum dy and
 * sum dy xhat (5), and with dx, a dy + b x + c (4). relu's 1 per element each way, as
 * its own row counts it. */
static void bn_flops(const cf_node *n, const unsigned char *want, double *fwd, double *bwd)
{
    double E = cf_count1(n->shape), relu = n->op != CF_OP_BATCHNORM, add = n->op == CF_OP_BATCHNORM_ADD_RELU;
    *fwd = 6 * E + relu * E + add * E;
    *bwd = 5 * E + (want[0] ? 4 * E : 0) + relu * E;
}

const cf_opdef cf_op_batchnorm = {
    .name = "batchnorm", .what = "batch normalisation", .infer = bn_infer, .aux = bn_aux,
    .forward = bn_forward, .backward = bn_backward, .flags = CF_BWD_X, .nograd = 1u << 3 | 1u << 4, .nin = 5,
    .flops = bn_flops,
};
const cf_opdef cf_op_batchnorm_relu = {
    .name = "batchnorm_relu", .what = "fused batch normalisation and relu", .infer = bn_infer, .aux = bn_aux,
    .forward = bn_forward, .backward = bn_backward, .flags = CF_BWD_X, .nograd = 1u << 3 | 1u << 4, .nin = 5,
    .flops = bn_flops,
};
const cf_opdef cf_op_batchnorm_add_relu = {
    .name = "batchnorm_add_relu", .what = "fused batch normalisation, addition and relu", .infer = bn_infer,
    .aux = bn_aux, .forward = bn_forward, .backward = bn_backward, .flags = CF_BWD_X, .nograd = 1u << 3 | 1u << 4,
    .nin = 6, .flops = bn_flops,
};
