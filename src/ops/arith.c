/* arith.c - a + b, a - b, a .* b, a ./ b with numpy broadcasting.
 *
 * Shapes are aligned from the right; a dimension of 1 (or a missing one) stretches.
 * Kernels walk the output row by row (the last dimension, after merging dimensions
 * that are contiguous in all three arrays), with each input's stride 0 or 1 there.
 * The gradient of a broadcast input sums over the dimensions it was stretched along. */
#include <string.h>

#include "ops/op.h"
#include "rt/vsum.h"

/* A walk over the output: `rank` dims (merged), and for each of a and b the element
 * stride of every dim (0 where broadcast). The threads share it out in pieces: each
 * row in `parts` pieces, where rows are few and long (operands of one shape merge into
 * one row of every element, which would leave every thread but one idle); an
 * element's value does not depend on its piece. */
typedef struct {
    int rank;
    size_t od[CF_MAX_DIMS];
    size_t sa[CF_MAX_DIMS], sb[CF_MAX_DIMS];
    size_t rows, n;          /* rows = product of od[0..rank-2], n = od[rank-1] */
    size_t parts;
} walk;

#define PIECE 8192   /* elements a piece of a row, about, when rows are few */
#define FEW_ROWS 16

static void walk_init(walk *w, cf_shape a, cf_shape b, cf_shape y)
{
    size_t sa[CF_MAX_DIMS], sb[CF_MAX_DIMS];
    cf_broadcast_strides(a, a.rank, y, y.rank, sa);
    cf_broadcast_strides(b, b.rank, y, y.rank, sb);
    /* Merge dim i into the one after it where both strides continue it. */
    int r = 0;
    for (int i = 0; i < y.rank; i++) {
        if (y.d[i] == 1) continue;        /* size-1 dims: nothing to walk */
        if (r > 0 && sa[i] * (size_t)y.d[i] == w->sa[r - 1] && sb[i] * (size_t)y.d[i] == w->sb[r - 1]) {
            w->od[r - 1] *= (size_t)y.d[i];
            w->sa[r - 1] = sa[i];
            w->sb[r - 1] = sb[i];
            continue;
        }
        w->od[r] = (size_t)y.d[i];
        w->sa[r] = sa[i];
        w->sb[r] = sb[i];
        r++;
    }
    if (r == 0) { w->od[0] = 1; w->sa[0] = w->sb[0] = 1; r = 1; }
    w->rank = r;
    w->n = w->od[r - 1];
    w->rows = 1;
    for (int i = 0; i < r - 1; i++) w->rows *= w->od[i];
    w->parts = w->rows >= FEW_ROWS || w->n <= PIECE ? 1 : (w->n + PIECE - 1) / PIECE;
}

/* Piece u of the walk: columns [*j0, *j1) of row *r. */
static void walk_piece(const walk *w, size_t u, size_t *r, size_t *j0, size_t *j1)
{
    size_t part = u % w->parts;
    *r = u / w->parts;
    *j0 = w->n * part / w->parts;
    *j1 = w->n * (part + 1) / w->parts;
}

/* Offsets of row `row` in a and b: the walk's dims but the last. */
static void walk_row(const walk *w, size_t row, size_t *oa, size_t *ob)
{
    cf_walk_offsets(w->od, w->rank - 1, w->sa, w->sb, row, oa, ob);
}

#define ROW_LOOP(EXPR)                                                                  \
    do {                                                                                \
        if (sa && sb) for (size_t j = 0; j < n; j++) { float u = a[j], v = b[j]; y[j] = EXPR; } \
        else if (sa) { float v = b[0]; for (size_t j = 0; j < n; j++) { float u = a[j]; y[j] = EXPR; } } \
        else if (sb) { float u = a[0]; for (size_t j = 0; j < n; j++) { float v = b[j]; y[j] = EXPR; } } \
        else { float u = a[0], v = b[0]; for (size_t j = 0; j < n; j++) y[j] = EXPR; }  \
    } while (0)

static void row_forward(cf_opcode op, float *restrict y, const float *restrict a, size_t sa,
                        const float *restrict b, size_t sb, size_t n)
{
    switch (op) {
    case CF_OP_ADD: ROW_LOOP(u + v); break;
    case CF_OP_SUB: ROW_LOOP(u - v); break;
    case CF_OP_MUL: ROW_LOOP(u * v); break;
    default:        ROW_LOOP(u / v); break;
    }
}

typedef struct {
    const cf_inst *k;
    walk w;
} job;

static void forward_pieces(void *p, size_t u0, size_t u1)
{
    const job *j = p;
    const cf_inst *k = j->k;
    size_t sa = j->w.sa[j->w.rank - 1], sb = j->w.sb[j->w.rank - 1];
    for (size_t u = u0; u < u1; u++) {
        size_t r, j0, j1, oa, ob;
        walk_piece(&j->w, u, &r, &j0, &j1);
        walk_row(&j->w, r, &oa, &ob);
        row_forward(k->node->op, k->y + r * j->w.n + j0, k->x[0] + oa + j0 * sa, sa, k->x[1] + ob + j0 * sb, sb,
                    j1 - j0);
    }
}

static int arith_forward(const cf_inst *k)
{
    job j = {k, {0}};
    walk_init(&j.w, k->xs[0], k->xs[1], k->ys);
    cf_parallel_range(j.w.rows * j.w.parts, j.w.n / j.w.parts, forward_pieces, &j);
    return 0;
}

/* d input `which` of one element: the local derivative times dy. */
static inline float local_grad(cf_opcode op, int which, float g, float u, float v)
{
    switch (op) {
    case CF_OP_ADD: return g;
    case CF_OP_SUB: return which ? -g : g;
    case CF_OP_MUL: return which ? g * u : g * v;
    default:        return which ? -g * u / (v * v) : g / v;
    }
}

typedef struct {
    const cf_inst *k;
    walk w;
    int which;
} bjob;

/* dx = local grads, for an input with the output's shape (pieces are independent). */
static void backward_pieces_full(void *p, size_t u0, size_t u1)
{
    const bjob *j = p;
    const cf_inst *k = j->k;
    cf_opcode op = k->node->op;
    size_t sa = j->w.sa[j->w.rank - 1], sb = j->w.sb[j->w.rank - 1];
    int acc = k->acc[j->which];
    for (size_t u = u0; u < u1; u++) {
        size_t r, j0, j1, oa, ob;
        walk_piece(&j->w, u, &r, &j0, &j1);
        walk_row(&j->w, r, &oa, &ob);
        size_t n = j1 - j0;
        const float *a = k->x[0] + oa + j0 * sa, *b = k->x[1] + ob + j0 * sb, *dy = k->dy + r * j->w.n + j0;
        float *dx = k->dx[j->which] + r * j->w.n + j0;
        if (op == CF_OP_ADD || op == CF_OP_SUB) {   /* reads neither input */
            float sign = (op == CF_OP_SUB && j->which) ? -1.0f : 1.0f;
            if (acc) for (size_t i = 0; i < n; i++) dx[i] += sign * dy[i];
            else for (size_t i = 0; i < n; i++) dx[i] = sign * dy[i];
            continue;
        }
        if (op == CF_OP_MUL && sa == 1 && sb == 1) {   /* the common case, in vectors */
            const float *o = j->which ? a : b;        /* d(u v)/du = v, d(u v)/dv = u */
            if (acc) for (size_t i = 0; i < n; i++) dx[i] += dy[i] * o[i];
            else for (size_t i = 0; i < n; i++) dx[i] = dy[i] * o[i];
            continue;
        }
        for (size_t i = 0; i < n; i++) {
            float g = local_grad(op, j->which, dy[i], a[i * sa], b[i * sb]);
            dx[i] = acc ? dx[i] + g : g;
        }
    }
}

static void arith_backward(const cf_inst *k)
{
    bjob j = {k, {0}, 0};
    walk_init(&j.w, k->xs[0], k->xs[1], k->ys);
    size_t total = cf_shape_count_b(k->ys, 1);
    for (int which = 0; which < 2; which++) {
        float *dx = k->dx[which];
        if (!dx) continue;
        j.which = which;
        if (cf_shape_count_b(k->xs[which], 1) == total) {
            cf_parallel_range(j.w.rows * j.w.parts, j.w.n / j.w.parts, backward_pieces_full, &j);
            continue;
        }
        /* A broadcast input: sum the local gradients into its elements. */
        if (!k->acc[which]) memset(dx, 0, cf_shape_count_b(k->xs[which], 1) * sizeof *dx);
        cf_opcode op = k->node->op;
        size_t n = j.w.n, sa = j.w.sa[j.w.rank - 1], sb = j.w.sb[j.w.rank - 1];
        size_t sx = which ? sb : sa;
        for (size_t r = 0; r < j.w.rows; r++) {
            size_t oa, ob;
            walk_row(&j.w, r, &oa, &ob);
            const float *a = k->x[0] + oa, *b = k->x[1] + ob, *dy = k->dy + r * n;
            float *d = dx + (which ? ob : oa);
            if (op == CF_OP_ADD || op == CF_OP_SUB) {   /* reads neither input */
                float sign = (op == CF_OP_SUB && which) ? -1.0f : 1.0f, s = 0;
                if (sx == 0) {
                    s = cf_vsum(dy, n);   /* a bias over an image sums a plane a row */
                    d[0] += sign * s;
                } else {
                    for (size_t i = 0; i < n; i++) d[i] += sign * dy[i];
                }
                continue;
            }
            if (sx == 0) {
                float s = 0;
                for (size_t i = 0; i < n; i++) s += local_grad(op, which, dy[i], a[i * sa], b[i * sb]);
                d[0] += s;
            } else {
                for (size_t i = 0; i < n; i++) d[i] += local_grad(op, which, dy[i], a[i * sa], b[i * sb]);
            }
        }
    }
}

static int arith_infer(cf_node *n)
{
    return cf_broadcast_shapes(n, n->in[0]->shape, n->in[0]->batched, n->in[1]->shape,
                               n->in[1]->batched, &n->shape, &n->batched);
}

const cf_opdef cf_op_add = {
    .name = "+", .what = "addition", .infer = arith_infer, .forward = arith_forward,
    .backward = arith_backward, .nin = 2,
    .flops = cf_flops_elementwise, .onnx = "Add",   /* numpy's broadcasting, as cflux's */
};
const cf_opdef cf_op_sub = {
    .name = "-", .what = "subtraction", .infer = arith_infer, .forward = arith_forward,
    .backward = arith_backward, .nin = 2,
    .flops = cf_flops_elementwise, .onnx = "Sub",   /* numpy's broadcasting, as cflux's */
};
const cf_opdef cf_op_mul = {
    .name = ".*", .what = "elementwise product", .infer = arith_infer, .forward = arith_forward,
    .backward = arith_backward, .flags = CF_BWD_X, .nin = 2,
    .flops = cf_flops_elementwise, .onnx = "Mul",   /* numpy's broadcasting, as cflux's */
};
const cf_opdef cf_op_div = {
    .name = "./", .what = "elementwise division", .infer = arith_infer, .forward = arith_forward,
    .backward = arith_backward, .flags = CF_BWD_X, .nin = 2,
    .flops = cf_flops_elementwise, .onnx = "Div",   /* numpy's broadcasting, as cflux's */
};
