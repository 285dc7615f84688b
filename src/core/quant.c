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

int cf_qparam_set(cf_model *m, int param, const float *q, const float *scale, int act_static, float act_scale,
                  int act_zero)
{
    const cf_node *p = m->params[param];
    if (p->shape.rank != 2)
        return cf_seterr("error: parameter '%s' is not a matrix: cflux quantizes the weights of products", p->name);
    int K = p->shape.d[0], N = p->shape.d[1];
    cf_qparam *qp = cf_model_qparam(m, param);
    if (!qp) {
        cf_qparam *grown = realloc(m->quant, (size_t)(m->nquant + 1) * sizeof *grown);
        if (!grown) return cf_oom((size_t)(m->nquant + 1) * sizeof *grown);
        m->quant = grown;
        qp = &m->quant[m->nquant++];
        *qp = (cf_qparam){.param = param};
    }
    qparam_free(qp);
    *qp = (cf_qparam){.param = param, .channels = N, .q = malloc((size_t)K * N), .scale = malloc((size_t)N * 4),
                      .act_static = act_static, .act_scale = act_scale, .act_zero = act_zero};
    if (!qp->q || !qp->scale) {
        qparam_free(qp);
        *qp = m->quant[--m->nquant];
        return cf_oom((size_t)K * N);
    }
    memcpy(qp->scale, scale, (size_t)N * sizeof *scale);
    float *w = m->pdata + m->poff[param];
    for (int k = 0; k < K; k++)
        for (int j = 0; j < N; j++) {
            qp->q[k * N + j] = (int8_t)q[k * N + j];
            w[k * N + j] = q[k * N + j] * scale[j];
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
