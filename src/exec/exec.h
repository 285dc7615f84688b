/* exec.h - an executor: a model bound to a batch size, with every buffer planned.
 *
 * Timeline of one training step: forward steps 0..F-1 (one per live computed node,
 * in model order), then backward steps F..F+G-1 (one per node that propagates a
 * gradient, in reverse). Every activation, gradient and scratch buffer has a lifetime
 * [first, last] on that timeline, and buffers whose lifetimes do not meet share memory
 * in one arena (plan.c). Inputs, outputs and head gradients live for the whole step. */
#ifndef CF_EXEC_EXEC_H
#define CF_EXEC_EXEC_H

#include "exec/analysis.h"
#include "ops/op.h"

/* One buffer to place: `size` floats, alive over steps [first, last]. */
typedef struct cf_buf {
    size_t size, offset;
    int first, last;
    float **dest;        /* where the placed pointer goes */
} cf_buf;

/* Place buffers in one arena so that no two with meeting lifetimes overlap; returns the
 * arena size in floats (offsets are multiples of 16 floats), or (size_t)-1 with the
 * message when its scratch memory cannot be had. */
size_t cf_plan_buffers(cf_buf *bufs, int n);

struct cf_exec {
    cf_model *m;
    int batch;
    unsigned flags;
    int nantrap;

    cf_graph *g;         /* the model's graph after the passes: what this executor runs */
    cf_analysis an;      /* g's analysis in this executor's mode */
    int nn;              /* slots of g: the model's nodes when it was bound (more may come later) */
    int ninputs, noutputs;
    cf_shape *shape;     /* concrete shape of each node */
    float **val;         /* value of each node (NULL: not computed) */
    float **grad;        /* gradient of each node (NULL: none) */
    unsigned char *gz;   /* during backward: gradient still all zero */
    cf_inst *inst;       /* per node */
    int *src;            /* the analysis's: node i's effective inputs src[src_at[i] .. src_at[i+1]) */
    int *src_at;
    int *fwd, nfwd;      /* forward order (the analysis's) */
    int *bwd, nbwd;      /* backward order (the analysis's) */
    int *tf, *tb;        /* per node: its forward's and its backward's step, or -1 */
    int *vsrc;           /* per node: the node whose memory its value is (a view), or -1 */
    size_t *voff;        /* and where in that memory it starts, in floats */

    float **head;        /* per output: its head gradient */
    int loss;            /* the loss node, when this executor computes it; else -1 */

    /* per-instance arrays, carved from one block */
    const float **xp;
    cf_shape *xsp;
    float **dxp;
    unsigned char *accp;

    float **aux;         /* per node: what its forward saves for its backward (aux()) */
    float **fws, **bws;  /* per node: its forward's and its backward's scratch */
    cf_runctx ctx;       /* what kernels see of the run (cf_forward sets it) */

    float **own_input;   /* per input: its buffer in the arena, once cf_exec_set_input
                            pointed it elsewhere (NULL before) */

    /* carried recurrent state (the model's carries): one block of this batch's values,
       and whether the last forward left next values to take at the next one (they are
       taken then, not at once: the backward still reads the old ones) */
    float *carry;
    size_t *carry_off;
    int carry_pending;

    unsigned char *block;   /* the arrays above, sized by the graph (bind.c) */
    float *arena;
    size_t arena_floats, unplanned_floats;

    /* cf_exec_on_grad_ready: told of each parameter when backward has finished its
       gradient. ready lists the parameters in the order backward finishes them,
       ready_end[s] how many are finished after backward step s (ready_end[nbwd]: all,
       the ones no step reaches last, after the zeroing at the end). */
    void (*grad_hook)(int param, void *user);
    void *grad_user;
    int *ready, *ready_end;
    uint64_t stream;     /* cf_exec_set_stream: mixed into the run's key */
};

#endif
