/* util.c - helpers shared by the ops' shape rules and kernels. */
#include <math.h>
#include <string.h>

#include "core/error.h"
#include "ops/op.h"

int cf_broadcast_shapes(const cf_node *n, cf_shape a, int ab, cf_shape b, int bb,
                        cf_shape *out, int *outb)
{
    int r = a.rank > b.rank ? a.rank : b.rank;
    cf_shape o = {r, {0}};
    for (int i = 0; i < r; i++) {
        int ia = a.rank - r + i, ib = b.rank - r + i;
        int da = ia >= 0 ? a.d[ia] : 1, db = ib >= 0 ? b.d[ib] : 1;
        o.d[i] = db == 1 ? da : db;
        /* unequal and neither 1, or a batch dimension lined up with one of a sample:
           (B, d) and (B, 1, d) */
        if ((da != db && da != 1 && db != 1) || (i > 0 && o.d[i] == CF_BATCH)) {
            char sa[96], sb[96];
            return cf_seterr("error: %s shapes do not broadcast: %s and %s", cf_ops[n->op]->what,
                             cf_shape_str(a, sa, sizeof sa), cf_shape_str(b, sb, sizeof sb));
        }
    }
    *out = o;
    *outb = (ab || bb);
    return 0;
}

void cf_broadcast_strides(cf_shape in, int in_rank, cf_shape out, int out_rank, size_t *st)
{
    size_t s = 1;
    for (int i = out_rank - 1; i >= 0; i--) {
        int k = in_rank - out_rank + i;
        int d = k >= 0 ? in.d[k] : 1;
        st[i] = (d == 1 && out.d[i] != 1) ? 0 : s;
        s *= (size_t)d;
    }
}

int cf_same_shape(cf_node *n)
{
    n->shape = n->in[0]->shape;
    n->batched = n->in[0]->batched;
    return 0;
}

void cf_shape_split(cf_shape s, int dim, size_t *outer, size_t *inner)
{
    size_t o = 1, in = 1;
    for (int i = 0; i < dim; i++) o *= (size_t)s.d[i];
    for (int i = dim + 1; i < s.rank; i++) in *= (size_t)s.d[i];
    *outer = o;
    *inner = in;
}

int cf_norm_dim(int dim, int rank)
{
    if (dim < 0) dim += rank;
    return dim >= 0 && dim < rank ? dim : -1;
}

int cf_fail_folded(const cf_node *n)
{
    if (!n->folded_frame) return -1;
    cf_node at = {.loc = n->folded_loc, .frame = n->folded_frame};   /* only its place is read */
    cf_adderr_trace(&at);
    return CF_FWD_TRACED;
}

void cf_put(float *dst, const float *src, size_t n, int acc)
{
    if (!acc) {
        memcpy(dst, src, n * sizeof *dst);
        return;
    }
    for (size_t i = 0; i < n; i++) dst[i] += src[i];
}

double cf_count1(cf_shape s) { return (double)cf_shape_count_b(s, 1); }

int cf_grads_wanted(const cf_node *n, const unsigned char *want)
{
    int c = 0;
    for (int j = 0; j < n->nin; j++) c += want[j] != 0;
    return c;
}

void cf_flops_elementwise(const cf_node *n, const unsigned char *want, double *fwd, double *bwd)
{
    double E = cf_count1(n->shape);
    *fwd = E;
    *bwd = E * cf_grads_wanted(n, want);
}

int cf_attrs_decode(const cf_opdef *d, const double *v, int *ia, int *nia, float *fa, int *nfa)
{
    *nia = *nfa = 0;
    for (int k = 0; k < CF_OP_ATTRS && d->attrs[k].name; k++) {
        const cf_attrdef *a = &d->attrs[k];
        double x = isnan(v[k]) ? a->def : v[k];
        if (isnan(x)) return k + 1;
        if (a->kind == 'i') {
            if (x != floor(x) || fabs(x) > 1e9) return k + 1;
            ia[a->slot] = (int)x;
            if (a->slot + 1 > *nia) *nia = a->slot + 1;
        } else {
            fa[a->slot] = (float)x;
            if (a->slot + 1 > *nfa) *nfa = a->slot + 1;
        }
    }
    return 0;
}
