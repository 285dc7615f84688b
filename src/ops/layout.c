/* layout.c - ops that move values without arithmetic: reshape, flatten, concat,
 * slice. Shapes are per sample where there is a batch dimension; the batch
 * dimension itself can be neither reshaped, joined nor sliced. */
#include <limits.h>
#include <string.h>

#include "core/error.h"
#include "ops/op.h"

/* ---- reshape (target in n->attr.shape, per sample) and flatten ---- */

static int reshape_infer(cf_node *n)
{
    const cf_node *x = n->in[0];
    int b = x->batched;
    size_t have = cf_shape_count_b(x->shape, 1), want = 1;
    cf_shape t = n->attr.shape;
    if (n->op == CF_OP_FLATTEN) {   /* one dimension of every element: reshape(x, -1) */
        t.rank = 1;
        t.d[0] = -1;
    }
    int hole = -1;
    for (int i = 0; i < t.rank; i++) {
        if (t.d[i] == -1) hole = i;
        else want *= (size_t)t.d[i];
    }
    if (hole >= 0 && want > 0 && have % want == 0) {
        char s1[96];
        if (have / want > INT_MAX)
            return cf_seterr("error: %s of %s would make a dimension of %zu, and a dimension holds at most %d",
                             cf_ops[n->op]->name, cf_shape_str(x->shape, s1, sizeof s1), have / want, INT_MAX);
        t.d[hole] = (int)(have / want);
        want = have;
    }
    if (want != have || t.rank + b > CF_MAX_DIMS) {
        char s1[96], s2[96];
        cf_shape shown = n->attr.shape;
        if (b) {   /* show the target the way the input is shown: with B in front */
            shown.rank = n->attr.shape.rank + 1 <= CF_MAX_DIMS ? n->attr.shape.rank + 1 : CF_MAX_DIMS;
            shown.d[0] = CF_BATCH;
            for (int i = 1; i < shown.rank; i++) shown.d[i] = n->attr.shape.d[i - 1];
        }
        if (t.rank + b > CF_MAX_DIMS)
            return cf_seterr("error: reshape to %s: more than %d dimensions", cf_shape_str(shown, s2, sizeof s2), CF_MAX_DIMS);
        return cf_seterr("error: reshape cannot change the number of elements: %s (%zu per sample) to %s",
                         cf_shape_str(x->shape, s1, sizeof s1), have, cf_shape_str(shown, s2, sizeof s2));
    }
    n->batched = b;
    n->shape.rank = t.rank + b;
    if (b) n->shape.d[0] = CF_BATCH;
    for (int i = 0; i < t.rank; i++) n->shape.d[i + b] = t.d[i];
    return 0;
}

static int copy_forward(const cf_inst *k)
{
    memcpy(k->y, k->x[0], cf_shape_count_b(k->ys, 1) * sizeof *k->y);
    return 0;
}

static void copy_backward(const cf_inst *k)
{
    cf_put(k->dx[0], k->dy, cf_shape_count_b(k->ys, 1), k->acc[0]);
}

/* The same floats in the same order: always the input's memory. */
static int reshape_view(const cf_inst *k, size_t *off)
{
    (void)k;
    *off = 0;
    return 1;
}

const cf_opdef cf_op_reshape = {
    .name = "reshape", .what = "reshape", .infer = reshape_infer, .forward = copy_forward,
    .backward = copy_backward, .flags = CF_OWN_BUILDER | CF_NO_FLOPS, .nin = 1, .view = reshape_view,
};
const cf_opdef cf_op_flatten = {
    .name = "flatten", .what = "flatten", .infer = reshape_infer, .forward = copy_forward,
    .backward = copy_backward, .flags = CF_CALL | CF_NO_FLOPS, .nin = 1, .view = reshape_view,
};

/* ---- concat (dim in ia[0]) ---- */

static int concat_infer(cf_node *n)
{
    const cf_node *a = n->in[0];
    char s1[96], s2[96];
    int dim = cf_norm_dim(n->attr.i[0], a->shape.rank);
    if (dim < 0)
        return cf_seterr("error: concat along dimension %d of %s: no such dimension", n->attr.i[0],
                         cf_shape_str(a->shape, s1, sizeof s1));
    cf_shape o = a->shape;
    for (int i = 0; i < n->nin; i++) {
        const cf_node *x = n->in[i];
        if (x->batched && dim == 0)
            return cf_seterr("error: concat cannot join along the batch dimension: %s",
                             cf_shape_str(x->shape, s1, sizeof s1));
        int fits = x->shape.rank == a->shape.rank && x->batched == a->batched;
        for (int d = 0; fits && d < o.rank; d++)
            if (d != dim && x->shape.d[d] != a->shape.d[d]) fits = 0;
        if (!fits)
            return cf_seterr("error: concat along dimension %d needs the other dimensions equal: %s and %s",
                             n->attr.i[0], cf_shape_str(a->shape, s1, sizeof s1), cf_shape_str(x->shape, s2, sizeof s2));
        if (i > 0 && x->shape.d[dim] > INT_MAX - o.d[dim])
            return cf_seterr("error: concat along dimension %d of %s and %s: the joined dimension would be more than "
                             "%d", n->attr.i[0], cf_shape_str(a->shape, s1, sizeof s1),
                             cf_shape_str(x->shape, s2, sizeof s2), INT_MAX);
        if (i > 0) o.d[dim] += x->shape.d[dim];
    }
    n->shape = o;
    n->batched = a->batched;
    n->attr.i[1] = dim;   /* normalised, for the kernels */
    return 0;
}

static int concat_forward(const cf_inst *k)
{
    size_t outer, inner, off = 0, row = 0;
    int dim = k->node->attr.i[1];
    cf_shape_split(k->ys, dim, &outer, &inner);
    row = (size_t)k->ys.d[dim] * inner;
    for (int i = 0; i < k->nin; i++) {
        size_t len = (size_t)k->xs[i].d[dim] * inner;
        for (size_t o = 0; o < outer; o++)
            memcpy(k->y + o * row + off, k->x[i] + o * len, len * sizeof *k->y);
        off += len;
    }
    return 0;
}

static void concat_backward(const cf_inst *k)
{
    size_t outer, inner, off = 0, row;
    int dim = k->node->attr.i[1];
    cf_shape_split(k->ys, dim, &outer, &inner);
    row = (size_t)k->ys.d[dim] * inner;
    for (int i = 0; i < k->nin; i++) {
        size_t len = (size_t)k->xs[i].d[dim] * inner;
        if (k->dx[i])
            for (size_t o = 0; o < outer; o++) cf_put(k->dx[i] + o * len, k->dy + o * row + off, len, k->acc[i]);
        off += len;
    }
}

const cf_opdef cf_op_concat = {
    .name = "concat", .what = "concat", .infer = concat_infer, .forward = concat_forward,
    .backward = concat_backward, .flags = CF_OWN_BUILDER | CF_NO_FLOPS, .nin = CF_NIN_ANY,
};

/* ---- slice (dim, start, len in ia[0..2]) ---- */

static int slice_infer(cf_node *n)
{
    const cf_node *x = n->in[0];
    char s[96];
    int dim = cf_norm_dim(n->attr.i[0], x->shape.rank);
    if (dim < 0)
        return cf_seterr("error: slice along dimension %d of %s: no such dimension", n->attr.i[0],
                         cf_shape_str(x->shape, s, sizeof s));
    if (x->batched && dim == 0)
        return cf_seterr("error: slice cannot cut the batch dimension: %s", cf_shape_str(x->shape, s, sizeof s));
    int start = n->attr.i[1], len = n->attr.i[2], size = x->shape.d[dim];
    if (start < 0 || len < 1 || start > size - len)
        return cf_seterr("error: slice [%d, %d) of dimension %d is outside %s", start, start + len, n->attr.i[0],
                         cf_shape_str(x->shape, s, sizeof s));
    n->shape = x->shape;
    n->shape.d[dim] = len;
    n->batched = x->batched;
    n->attr.i[3] = dim;
    return 0;
}

static int slice_forward(const cf_inst *k)
{
    size_t outer, inner;
    int dim = k->node->attr.i[3];
    cf_shape_split(k->xs[0], dim, &outer, &inner);
    size_t len = (size_t)k->node->attr.i[2] * inner, row = (size_t)k->xs[0].d[dim] * inner;
    size_t off = (size_t)k->node->attr.i[1] * inner;
    for (size_t o = 0; o < outer; o++) memcpy(k->y + o * len, k->x[0] + o * row + off, len * sizeof *k->y);
    return 0;
}

static void slice_backward(const cf_inst *k)
{
    size_t outer, inner;
    int dim = k->node->attr.i[3];
    cf_shape_split(k->xs[0], dim, &outer, &inner);
    size_t len = (size_t)k->node->attr.i[2] * inner, row = (size_t)k->xs[0].d[dim] * inner;
    size_t off = (size_t)k->node->attr.i[1] * inner;
    float *dx = k->dx[0];
    if (!k->acc[0]) memset(dx, 0, outer * row * sizeof *dx);
    for (size_t o = 0; o < outer; o++) cf_put(dx + o * row + off, k->dy + o * len, len, 1);
}

/* One range when nothing comes before the cut dimension but dimensions of 1 (a batch
 * of one, say). */
static int slice_view(const cf_inst *k, size_t *off)
{
    size_t outer, inner;
    cf_shape_split(k->xs[0], k->node->attr.i[3], &outer, &inner);
    *off = (size_t)k->node->attr.i[1] * inner;
    return outer == 1;
}

const cf_opdef cf_op_slice = {
    .name = "slice", .what = "slice", .infer = slice_infer, .forward = slice_forward,
    .backward = slice_backward, .flags = CF_OWN_BUILDER | CF_NO_FLOPS, .nin = 1, .view = slice_view,
};
