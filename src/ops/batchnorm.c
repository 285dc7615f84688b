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
            double s = 0, q = 0;
            for (size_t b = 0; b < j->B; b++) {
                const float *xc = x + (b * j->C + c) * j->S;
                for (size_t i = 0; i < j->S; i++) s += xc[i];
            }
            mean = s / (double)N;
            for (size_t b = 0; b < j->B; b++) {
                const float *xc = x + (b * j->C + c) * j->S;
                for (size_t i = 0; i < j->S; i++) q += (xc[i] - mean) * (xc[i] - mean);
            }
            var = q / (double)N;
            rmean[c] = (1 - mom) * rmean[c] + mom * (float)mean;
            rvar[c] = (1 - mom) * rvar[c] + mom * (float)(q / (double)(N - 1));
        } else {
            mean = rmean[c];
            var = rvar[c];
        }
        float m = (float)mean, istd = (float)(1 / sqrt(var + eps));
        k->aux[c] = m;
        k->aux[j->C + c] = istd;
        float a = gamma[c] * istd, sh = beta[c] - m * a;
        for (size_t b = 0; b < j->B; b++) {
            const float *xc = x + (b * j->C + c) * j->S;
            float *yc = k->y + (b * j->C + c) * j->S;
            for (size_t i = 0; i < j->S; i++) yc[i] = xc[i] * a + sh;
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

static void backward_range(void *p, size_t c0, size_t c1)
{
    const job *j = p;
    const cf_inst *k = j->k;
    const float *x = k->x[0], *gamma = k->x[1], *dy = k->dy;
    float *dx = k->dx[0], *dgamma = k->dx[1], *dbeta = k->dx[2];
    size_t N = j->B * j->S;
    for (size_t c = c0; c < c1; c++) {
        float m = k->aux[c], istd = k->aux[j->C + c];
        double sdy = 0, sdyx = 0;
        for (size_t b = 0; b < j->B; b++) {
            const float *xc = x + (b * j->C + c) * j->S, *dyc = dy + (b * j->C + c) * j->S;
            for (size_t i = 0; i < j->S; i++) {
                sdy += dyc[i];
                sdyx += dyc[i] * ((xc[i] - m) * istd);
            }
        }
        if (dgamma) dgamma[c] = (k->acc[1] ? dgamma[c] : 0) + (float)sdyx;
        if (dbeta) dbeta[c] = (k->acc[2] ? dbeta[c] : 0) + (float)sdy;
        if (!dx) continue;
        float g = gamma[c] * istd;
        /* training: dx = g dy - g / N (dbeta + xhat dgamma) = a dy + b x + c0 */
        float a = g, bx = 0, c0v = 0;
        if (batch_stats(k)) {
            float mb = (float)(sdy / (double)N), mg = (float)(sdyx / (double)N);
            bx = -g * mg * istd;
            c0v = -g * mb + g * mg * istd * m;
        }
        for (size_t b = 0; b < j->B; b++) {
            const float *xc = x + (b * j->C + c) * j->S, *dyc = dy + (b * j->C + c) * j->S;
            float *dxc = dx + (b * j->C + c) * j->S;
            if (k->acc[0])
                for (size_t i = 0; i < j->S; i++) dxc[i] += a * dyc[i] + bx * xc[i] + c0v;
            else
                for (size_t i = 0; i < j->S; i++) dxc[i] = a * dyc[i] + bx * xc[i] + c0v;
        }
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
