/* passes.h - the passes between compiling and binding.
 *
 * A pass rewrites a graph (analysis.h) into one that computes the same values with
 * fewer or faster nodes: it puts an ordinary node (a fused op of the table) in the slot
 * of the last node it replaces and removes the rest. Passes run in the order of the
 * list in passes.c, each on the analysis its predecessors left, and can be switched
 * off one by one with the environment variable CFLUX_PASSES: a list of names, each
 * with - (off) or + (on), or "none" (all off), as in CFLUX_PASSES=-fuse_affine. Under
 * CFLUX_NANTRAP, which must name the op that made a NaN, the binder asks for the
 * structural ones alone. */
#ifndef CF_EXEC_PASSES_H
#define CF_EXEC_PASSES_H

#include "exec/analysis.h"

typedef struct cf_pass {
    const char *name;        /* as CFLUX_PASSES names it: "fuse_affine" */
    /* Rewrite g, reading a (g's analysis); *changed = 1 when it did. 0 or -1. */
    int (*run)(cf_graph *g, const cf_analysis *a, int *changed);
    /* 1: the form the model means (an LSTM over its sequence), which the summary and
     * the exports see too; 0: how a step runs faster, for executors alone */
    int structural;
} cf_pass;

/* Each pass's file defines its row. */
extern const cf_pass cf_pass_fuse_lstm, cf_pass_fuse_attention, cf_pass_fuse_affine, cf_pass_quantize, cf_pass_fuse_bn_add_relu,
    cf_pass_fuse_bn_relu;

/* g rewritten by the passes that are on (the structural ones alone unless `all`), and
 * a its analysis in the mode `flags` (replaced: freed first). 0 or -1 with the message
 * (a bad CFLUX_PASSES, no memory). */
int cf_graph_lower(cf_graph *g, cf_analysis *a, unsigned flags, int all);

/* A node for a pass to put in slot `id` of g: op, inputs, shape and place given, the
 * rest zero. NULL with the message when out of memory. */
cf_node *cf_graph_node(cf_graph *g, int id, cf_opcode op, int nin, cf_node *const *in, const cf_node *like);

#endif
