/* loss.c - adding the training loss to a model: cross-entropy fused with the
 * classifier's softmax (with label smoothing if asked), or mean squared error. */
#include "core/error.h"
#include "core/graph.h"
#include "train/trainer.h"

int cf_model_has_loss(const cf_model *m) { return m && m->loss ? m->loss_kind : 0; }

int cf_loss_fits(const cf_model *m, cf_loss kind)
{
    const cf_node *out = m->outputs[0];
    if (!out->batched)
        return cf_seterr("error: a loss needs an output with the batch dimension, but output 0 is a single value");
    if (kind == CF_LOSS_XENT && out->op != CF_OP_SOFTMAX) {
        char at[256];
        return cf_seterr("error: classifier models must end with softmax, but this one ends with %s (for "
                         "regression, train with mean squared error)", cf_node_describe(out, at, sizeof at));
    }
    return 0;
}

int cf_model_add_loss(cf_model *m, cf_loss kind)
{
    if (!m) return cf_seterr("error: cf_model_add_loss: no model");
    static const char *const names[] = {"", "cross-entropy", "mean squared error"};
    if (m->loss)
        return m->loss_kind == (int)kind ? 0
                                         : cf_seterr("error: the model already has a loss (%s); it cannot also train "
                                                     "with %s", names[m->loss_kind], names[kind == CF_LOSS_XENT ? 1 : 2]);
    if (kind != CF_LOSS_XENT && kind != CF_LOSS_MSE) return cf_seterr("error: unknown loss %d", (int)kind);
    if (cf_model_infer_shapes(m)) return -1;
    if (cf_loss_fits(m, kind)) return -1;
    cf_node *out = m->outputs[0];
    /* the target: per sample, the output's shape (less the classes for labels) */
    cf_shape t = {out->shape.rank - 1, {0}};
    for (int i = 1; i < out->shape.rank; i++) t.d[i - 1] = out->shape.d[i];
    if (kind == CF_LOSS_XENT) t.rank--;
    const char *file = out->loc.file;
    cf_node *target = cf_input_at(m, kind == CF_LOSS_XENT ? "label" : "target", t, file, out->loc.line, out->loc.col);
    cf_node *loss = target ? cf_binary_at(m, kind == CF_LOSS_XENT ? CF_OP_XENT : CF_OP_MSE, out, target, file,
                                          out->loc.line, out->loc.col)
                           : NULL;
    if (!loss || cf_node_infer(loss)) return -1;
    m->loss = loss;
    m->target = target;
    m->loss_kind = kind;
    return 0;
}

/* Label smoothing eps of the model's cross-entropy: the loss node's number (none when
 * 0, so that a graph without smoothing hashes as it always did). */
int cf_loss_set_smoothing(cf_model *m, float eps)
{
    if (eps > 0 && (!m->loss || m->loss_kind != CF_LOSS_XENT))
        return cf_seterr("error: label smoothing is for cross-entropy");
    if (m->loss) m->loss->attr.f[0] = eps;
    return 0;
}
