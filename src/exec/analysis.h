/* analysis.h - the graph an executor runs, and the one analysis of it.
 *
 * A cf_graph is a model's nodes as the passes left them (passes.h): slot i holds the
 * model's node i, a node a pass put in its place (the same id, computing the same
 * value: a fused product holds the value of the relu it absorbed), or NULL where a
 * pass removed it. Nodes keep their inputs as the model made them; an input is read
 * through its slot, so a reader of a replaced node reads its replacement.
 *
 * The analysis is what the binder, the summary and the ONNX writer all need to know
 * of a graph in one mode: each node's effective inputs (a loss fused with a softmax
 * also reads the softmax's input), which nodes are live (the outputs need them), which
 * carry a gradient (on a path from a trainable parameter, or a wanted input, to an
 * output or the loss), which run a backward, and the orders of the steps. */
#ifndef CF_EXEC_ANALYSIS_H
#define CF_EXEC_ANALYSIS_H

#include "core/graph.h"

typedef struct cf_graph {
    cf_model *m;
    int nn;              /* the model's nodes when it was made (more may come later) */
    cf_node **node;      /* per slot: the node that computes it, or NULL */
    cf_arena arena;      /* the nodes passes made */
} cf_graph;

/* The model's graph as it is; NULL with the message when out of memory. */
cf_graph *cf_graph_new(cf_model *m);
void cf_graph_free(cf_graph *g);

/* Node n's value is the model's: a parameter, a state or a constant. */
static inline int cf_model_held(const cf_node *n)
{
    return n->op == CF_OP_PARAM || n->op == CF_OP_STATE || n->op == CF_OP_CONST;
}
static inline int cf_is_leaf(const cf_node *n) { return n->op == CF_OP_INPUT || cf_model_held(n); }

typedef struct cf_analysis {
    const cf_graph *g;
    unsigned flags;          /* CF_TRAIN: gradients; CF_LOSS: the loss is computed;
                                CF_INPUT_GRADS: the inputs' gradients are wanted */
    int nn;
    int *src, *src_at;       /* node i's effective inputs: src[src_at[i] .. src_at[i + 1]) */
    unsigned char *live;     /* an output, the loss or a carried state needs it */
    unsigned char *hasgrad;  /* it carries a gradient (CF_TRAIN) */
    unsigned char *bstep;    /* it runs a backward (CF_TRAIN) */
    int *uses;               /* live readers, and 2 more for each output, the loss or a
                                carried state it is */
    int *reader;             /* the last live reader (the only one when uses is 1), or -1 */
    int *fwd, nfwd;          /* the live computed nodes, in order */
    int *bwd, nbwd;          /* the nodes that run a backward, in reverse order */
    int loss;                /* the loss's slot when CF_LOSS or CF_TRAIN (and not CF_ANALYSE_NO_LOSS)
                                and the model has one, else -1 */
} cf_analysis;

/* For the analysis alone: the loss is left out even in training (the summary's view,
 * which counts what the outputs need), and the carried states' next values are not
 * needed (an export's view: its outputs alone). */
#define CF_ANALYSE_NO_LOSS (1u << 30)
#define CF_ANALYSE_NO_CARRY (1u << 29)

/* Analyse g in the mode `flags`. 0, or -1 with the message (out of memory); a is to
 * be freed either way. */
int cf_analyse(cf_analysis *a, const cf_graph *g, unsigned flags);
void cf_analysis_free(cf_analysis *a);

#define CF_NSRC(a, i) ((a)->src_at[(i) + 1] - (a)->src_at[(i)])
#define CF_SRC(a, i, j) ((a)->src[(a)->src_at[(i)] + (j)])

/* Does effective input j of node n carry a gradient back? */
int cf_slot_differentiable(const cf_analysis *a, const cf_node *n, int j);

#endif
