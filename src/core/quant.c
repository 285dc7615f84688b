/* quant.c - a model's quantized parameters (core/quant.h). */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/graph.h"
#include "core/quant.h"

cf_qparam *cf_model_qparam(const cf_model *m, int param)
{
    for (int i = 0; i < m->nquant; i++)
        if (m->quant[i].param == param) return &m->quant[i];
    return NULL;
}

static void qparam_free(cf_qparam *qp)
{
    free(qp->q);
    free(qp->scale);
    free(qp->packed);
}

int cf_qproduct(const cf_node *n)
{
    int affine = n->op == CF_OP_AFFINE || n->op == CF_OP_AFFINE_RELU, conv = n->op == CF_OP_CONV2D;
    if (!(affine || conv) || n->in[1]->op != CF_OP_PARAM) return 0;
    cf_shape s = n->in[1]->shape;
    if (affine) return s.rank == 2 && s.d[0] <= CF_QGEMM_MAX_K;
    return s.rank == 4 && n->attr.i[6] <= 1 && (size_t)s.d[1] * s.d[2] * s.d[3] <= CF_QGEMM_MAX_K;
}

int cf_qparam_channels(cf_shape s) { return s.rank == 2 ? s.d[1] : s.rank == 4 ? s.d[0] : 0; }

int cf_qparam_set(cf_model *m, int param, const float *q, const float *scale, int act_static, float act_scale,
                  int act_zero)
{
    const cf_node *p = m->params[param];
    int N = cf_qparam_channels(p->shape);
    if (!N)
        return cf_seterr("error: parameter '%s' is neither a matrix nor a convolution's kernels: cflux quantizes the "
                         "weights of products", p->name);
    size_t count = cf_shape_count(p->shape), per = count / (size_t)N;
    cf_qparam *qp = cf_model_qparam(m, param);
    if (!qp) {
        cf_qparam *grown = realloc(m->quant, (size_t)(m->nquant + 1) * sizeof *grown);
        if (!grown) return cf_oom((size_t)(m->nquant + 1) * sizeof *grown);
        m->quant = grown;
        qp = &m->quant[m->nquant++];
        *qp = (cf_qparam){.param = param};
    }
    qparam_free(qp);
    *qp = (cf_qparam){.param = param, .channels = N, .q = malloc(count), .scale = malloc((size_t)N * 4),
                      .act_static = act_static, .act_scale = act_scale, .act_zero = act_zero};
    if (!qp->q || !qp->scale) {
        qparam_free(qp);
        *qp = m->quant[--m->nquant];
        return cf_oom(count);
    }
    memcpy(qp->scale, scale, (size_t)N * sizeof *scale);
    float *w = m->pdata + m->poff[param];
    for (size_t i = 0; i < count; i++) {   /* a matrix's channel is its column, kernels' their first index */
        size_t ch = p->shape.rank == 2 ? i % (size_t)N : i / per;
        qp->q[i] = (int8_t)q[i];
        w[i] = q[i] * scale[ch];
    }
    return 0;
}

void cf_model_quant_free(cf_model *m)
{
    for (int i = 0; i < m->nquant; i++) qparam_free(&m->quant[i]);
    free(m->quant);
    m->quant = NULL;
    m->nquant = 0;
}

int cf_model_quantized_count(const cf_model *m) { return m ? m->nquant : 0; }

void cf_model_use_quantized(cf_model *m, int on)
{
    if (m) m->quant_off = !on;
}
