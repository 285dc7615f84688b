/* affine.c - x W + b, and relu after it: a matrix product, the addition of a bias row
 * and a relu fused into one node (the fuse_affine pass, src/exec/fuse_affine.c, makes
 * it from the three).
 *
 * Inputs: x (..., K), W (K, N), b (N numbers, the same for every row). Two ops: affine
 * (x W + b) and affine_relu, whose backward alone reads its output (relu's mask), so
 * that affine's output need not be kept for the backward. (b + x W or x W + b: the
 * addition sums the bias's gradient the same way on either side.)
 *
 * Forward is one product whose epilogue adds the bias and applies relu to each tile of
 * the result while it is in cache. Backward runs the kernels of the three ops it
 * replaced, in their order, on the same values: the gradients are the same to the bit
 * as the unfused graph's. */
#include "core/error.h"
#include "ops/op.h"

static int affine_infer(cf_node *n)
{
    cf_shape x = n->in[0]->shape, w = n->in[1]->shape, b = n->in[2]->shape;
    char sx[96], sw[96], sb[96];
    if (x.rank < 2 || w.rank != 2 || x.d[x.rank - 1] != w.d[0] || x.d[x.rank - 1] == CF_BATCH)
        return cf_seterr("error: affine: shapes do not match: %s * %s", cf_shape_str(x, sx, sizeof sx),
                         cf_shape_str(w, sw, sizeof sw));
    int N = w.d[1];
    if (n->in[2]->batched || cf_shape_count(b) != (size_t)N || b.d[b.rank - 1] != N)
        return cf_seterr("error: affine: the bias %s is not a row of the product's %d columns",
                         cf_shape_str(b, sb, sizeof sb), N);
    n->shape = x;
    n->shape.d[x.rank - 1] = N;
    n->batched = n->in[0]->batched;
    return 0;
}

static int relu_of(const cf_node *n) { return n->op == CF_OP_AFFINE_RELU; }

static int affine_forward(const cf_inst *k)
{
    cf_matmul_fused(k, k->x[2], relu_of(k->node));
    return 0;
}

static size_t affine_workspace(const cf_inst *k)
{
    return relu_of(k->node) ? cf_shape_count_b(k->ys, 1) : 0;   /* relu's gradient */
}

static void affine_backward(const cf_inst *k)
{
    static const cf_node relu = {.op = CF_OP_RELU}, add = {.op = CF_OP_ADD}, mm = {.op = CF_OP_MATMUL};
    const float *dy = k->dy;
    if (relu_of(k->node)) {   /* relu's: dy where the output is positive */
        float *g = k->ws;
        unsigned char acc0 = 0;
        cf_inst r = {.node = &relu, .nin = 1, .x = (const float *[]){k->y}, .xs = &k->ys, .y = k->y, .ys = k->ys,
                     .ctx = k->ctx, .dy = dy, .dx = &g, .acc = &acc0};
        cf_ops[CF_OP_RELU]->backward(&r);
        dy = g;
    }
    if (k->dx[2]) {             /* the addition's, into the bias alone: the product's is dy itself */
        const float *x[2] = {k->y, k->x[2]};
        cf_shape xs[2] = {k->ys, k->xs[2]};
        float *dx[2] = {NULL, k->dx[2]};
        unsigned char acc[2] = {0, k->acc[2]};
        cf_inst a = {.node = &add, .nin = 2, .x = x, .xs = xs, .y = k->y, .ys = k->ys, .ctx = k->ctx, .dy = dy,
                     .dx = dx, .acc = acc};
        cf_ops[CF_OP_ADD]->backward(&a);
    }
    if (k->dx[0] || k->dx[1]) {
        cf_inst p = {.node = &mm, .nin = 2, .x = k->x, .xs = k->xs, .y = k->y, .ys = k->ys, .ctx = k->ctx, .dy = dy,
                     .dx = k->dx, .acc = k->acc};
        cf_ops[CF_OP_MATMUL]->backward(&p);
    }
}

/* The product's 2 per multiply-add and each gradient product the same again; the
 * bias's and relu's 1 per element, both ways. */
static void affine_flops(const cf_node *n, const unsigned char *want, double *fwd, double *bwd)
{
    double E = (double)cf_shape_count_b(n->shape, 1), K = n->in[1]->shape.d[0], relu = relu_of(n);
    *fwd = 2 * E * K + E + relu * E;
    *bwd = 2 * E * K * ((want[0] != 0) + (want[1] != 0)) + (want[2] ? E : 0) +
           (want[0] || want[1] || want[2] ? relu * E : 0);
}

const cf_opdef cf_op_affine = {
    .name = "affine", .what = "fused product x W + b", .infer = affine_infer, .forward = affine_forward,
    .backward = affine_backward, .flags = CF_BWD_X, .nin = 3, .flops = affine_flops,
};
const cf_opdef cf_op_affine_relu = {
    .name = "affine_relu", .what = "fused product relu(x W + b)", .infer = affine_infer,
    .workspace = affine_workspace, .forward = affine_forward, .backward = affine_backward,
    .flags = CF_BWD_X | CF_BWD_Y | CF_WS_BACKWARD, .nin = 3, .flops = affine_flops,
};
