/* mlp.h - the MLP 784-128-64-10 of models/mlp.flux, built with the C calls, with the
 * same parameter names (1.W, 1.b, 3.W, ...): input "x" (B, 784); returns the logits
 * (B, 10) before the softmax, leaving the head to the caller. */
#ifndef CF_TEST_MLP_H
#define CF_TEST_MLP_H

#include "cflux.h"

static const int mlp_sizes[4] = {784, 128, 64, 10};

static __attribute__((unused)) cf_node *mlp_logits(cf_model *m)
{
    static const char *paths[3] = {"1", "3", "5"};
    cf_node *h = cf_input(m, "x", CF_SHAPE(784));
    for (int i = 0; i < 3; i++) {
        cf_scope_begin(m, "Affine", paths[i]);
        /* statements of their own: C leaves the order of arguments' evaluation open */
        cf_node *W = cf_param(m, "W", CF_SHAPE(mlp_sizes[i], mlp_sizes[i + 1]), CF_GLOROT);
        cf_node *b = cf_param(m, "b", CF_SHAPE(1, mlp_sizes[i + 1]), CF_ZEROS);
        h = cf_add(m, cf_matmul(m, h, W), b);
        cf_scope_end(m);
        if (i < 2) h = cf_relu(m, h);
    }
    return h;
}

/* The MLP as a classifier: inputs "x" and "y" (class indices); outputs 0 the
 * probabilities (B, 10), 1 the mean cross-entropy. */
static __attribute__((unused)) cf_model *mlp_classifier(void)
{
    cf_model *m = cf_model_new();
    cf_node *h = mlp_logits(m);
    cf_node *loss = cf_softmax_xent(m, h, cf_input(m, "y", CF_SCALAR));
    cf_output(m, cf_node_input(loss, 0));
    cf_output(m, loss);
    return m;
}

#endif
