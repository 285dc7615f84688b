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
 * any thread count. */
#include <math.h>
#include <stddef.h>

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
} job;

static job job_of(const cf_inst *k)
{
    job j = {k, (size_t)k->ys.d[0], (size_t)k->ys.d[1], 1};
    for (int i = 2; i < k->ys.rank; i++) j.S *= (size_t)k->ys.d[i];
    return j;
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
    const float *x = k->x[0], *gamma = k->x[1], *beta = k->x[2];
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
        float a = gamma[c] * istd, sh = beta[c] - m * a;
        size_t S = j->S;   /* a local, for the loop to vectorise (dx_planes) */
        for (size_t b = 0; b < j->B; b++) {
            const float *restrict xc = x + (b * j->C + c) * S;
            float *restrict yc = k->y + (b * j->C + c) * S;
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

/* dx for channel c's planes: a dy + bx x + c0, added when acc. */
static void dx_planes(const job *j, size_t c, float a, float bx, float c0, int acc)
{
    const cf_inst *k = j->k;
    size_t S = j->S;   /* a local: through j, every store to dx might change it, and no loop would vectorise */
    for (size_t b = 0; b < j->B; b++) {
        size_t o = (b * j->C + c) * S;
        const float *restrict xc = k->x[0] + o, *restrict dyc = k->dy + o;
        float *restrict dxc = k->dx[0] + o;
        if (acc)
            for (size_t i = 0; i < S; i++) dxc[i] += a * dyc[i] + bx * xc[i] + c0;
        else
            for (size_t i = 0; i < S; i++) dxc[i] = a * dyc[i] + bx * xc[i] + c0;
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
        double sdy = 0, sdyx = 0;   /* sum dy, and sum dy (x - m), which istd makes sum dy xhat */
        for (size_t b = 0; b < j->B; b++) {
            size_t o = (b * j->C + c) * j->S;
            float s, sx;
            cf_vsum_grad(x + o, dy + o, j->S, m, &s, &sx);
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
        dx_planes(j, c, a, bx, c0v, k->acc[0]);
    }
}

static void bn_backward(const cf_inst *k)
{
    job j = job_of(k);
    cf_parallel_range(j.C, 4 * j.B * j.S + 1, backward_range, &j);
}

/* Training: the mean (1), the variance (3), y = x a + c (2); backward: sum dy and
 * sum dy xhat (5), and with dx, a dy + b x + c (4). */
static void bn_flops(const cf_node *n, const unsigned char *want, double *fwd, double *bwd)
{
    double E = cf_count1(n->shape);
    *fwd = 6 * E;
    *bwd = 5 * E + (want[0] ? 4 * E : 0);
}

const cf_opdef cf_op_batchnorm = {
    .name = "batchnorm", .what = "batch normalisation", .infer = bn_infer, .aux = bn_aux,
    .forward = bn_forward, .backward = bn_backward, .flags = CF_BWD_X, .nograd = 1u << 3 | 1u << 4, .nin = 5,
    .flops = bn_flops,
};
