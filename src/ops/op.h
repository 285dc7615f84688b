/* op.h - what an op is: a shape rule, a forward and a backward, one row of a table.
 *
 * Adding an op: append its code to cf_opcode (cflux.h), write src/ops/NAME.c with its
 * cf_opdef (its notation name, input count and CF_CALL make it a function of the
 * notation, and its attrs the numbers it takes there and in cf_call: nothing in
 * src/lang changes; its flops, or CF_NO_FLOPS, are what cflux summary counts; its
 * onnx operator is how it is exported, with no writer in src/interop), add the row to
 * the table in src/ops/table.c, and a gradient check to tests/test_grad.c (which fails
 * for an op without one, or without flops or CF_NO_FLOPS). src/ops/clamp.c is an
 * example.
 *
 * Kernels see a cf_inst: the concrete shapes and buffers of one node in one executor.
 * A backward kernel writes the gradient of input i into dx[i] (NULL: not wanted),
 * overwriting it when acc[i] is 0 and adding to it when acc[i] is 1. */
#ifndef CF_OPS_OP_H
#define CF_OPS_OP_H

#include <stddef.h>
#include <stdint.h>

#include "core/graph.h"
#include "rt/gemm.h"
#include "rt/pool.h"

/* What a kernel may know of the run: training or evaluation (dropout, batch
 * statistics), the step (forwards since the bind, from 1), and the key of this
 * forward's random numbers, to be hashed with the node's id and each element's index
 * (as ops/dropout.c does): the same numbers at any thread count. */
typedef struct cf_runctx {
    int train;
    long step;
    uint64_t key;
} cf_runctx;

typedef struct cf_inst {
    const cf_node *node;
    int nin;                  /* effective inputs (may exceed node->nin: see CF_FUSE) */
    const float **x;          /* input values */
    const cf_shape *xs;       /* their concrete shapes */
    float *y;                 /* output value */
    cf_shape ys;
    float *aux;               /* saved by forward for backward, aux() floats; NULL when 0 */
    const cf_runctx *ctx;     /* the run: mode, step, random key */
    /* backward only */
    const float *dy;
    float **dx;
    unsigned char *acc;
    float *ws;                /* scratch of workspace() floats, in forward and in backward
                                 (not kept between them); NULL when 0 */
} cf_inst;

/* What backward reads, beyond dy. */
#define CF_BWD_X 1u   /* the input values */
#define CF_BWD_Y 2u   /* the output value */
/* The op's loss is computed from, and differentiated into, the input of a softmax
 * that feeds its input 0: the executor passes that softmax's input as an extra,
 * hidden last input, whose gradient is the only one computed (d logits = p - onehot). */
#define CF_FUSE_SOFTMAX 4u
/* In the notation, a function of one value, called by its name: relu(x), and usable
 * as a Chain element; the numbers it takes after the value are its attrs. */
#define CF_CALL 8u
/* Made by a constructor of its own (cf_reshape, cf_slice, cf_concat), which sets its
 * attributes; cf_unary_at and cf_binary_at refuse it. */
#define CF_OWN_BUILDER 32u

/* Treats every position of (B, n, ...) alike (a function of each element, or of each
 * row of the last dimension): unroll may run it once over a whole sequence. */
#define CF_POSITIONWISE 64u
/* Does no arithmetic (copies at most): its FLOPs are none, and it has no flops(). */
#define CF_NO_FLOPS 128u

/* A number an op takes after its value in the notation, by position or by name
 * (leakyrelu(x, 0.2), clamp(x, lo = 0, hi = 6)): kept in attr.f[slot] (kind 'f') or
 * attr.i[slot] (kind 'i', a whole number). In ONNX (cf_opdef.onnx) it is the
 * operator's attribute onnx_attr ("alpha"), or its next input onnx_input, a constant
 * of one number (Clip's "min"; float, or int64 for kind 'i'), or neither (not written). */
typedef struct cf_attrdef {
    const char *name;     /* its keyword, and its name in messages: "slope" */
    char kind;            /* 'f' or 'i' */
    int slot;
    float def;            /* when it is not given; NAN: it must be */
    const char *onnx_attr;
    const char *onnx_input;
} cf_attrdef;
#define CF_OP_ATTRS 4

/* Its workspace() is scratch for its backward only; its forward needs none. */
#define CF_WS_BACKWARD 256u

/* Its forward may write its output over input 0, in place: where input 0 is a carried
 * state that only it reads and whose next value it is (a cache it adds rows to), the
 * executor gives it that state's memory as its output, and the state needs no copy
 * after the forward. The forward runs as ever (it copies nothing when y is x[0]). */
#define CF_IN_PLACE 512u

/* cf_opdef.nin for an op of any number of inputs (concat). */
#define CF_NIN_ANY (-1)

typedef struct cf_opdef {
    const char *name;          /* as in the notation: "matmul" */
    const char *what;          /* in messages: "matrix product" */
    /* Set n->shape (symbolic: CF_BATCH at d[0] of batched values) and n->batched from
     * the inputs' shapes, or cf_seterr("error: ...") without a trace and return -1. */
    int (*infer)(cf_node *n);
    /* Floats that forward saves for backward (optional): the executor plans them
     * from the forward step to the backward one. Sees k's node, shapes (xs, ys) only. */
    size_t (*aux)(const cf_inst *k);
    /* Floats of scratch that forward and backward need (optional); each step gets
     * them fresh. Sees k's node and shapes only. */
    size_t (*workspace)(const cf_inst *k);
    /* 0, or -1 with cf_seterr (bad data, such as a label out of range): the executor
     * adds the node's trace. CF_FWD_TRACED: the trace is there already
     * (cf_fail_folded). */
    int (*forward)(const cf_inst *k);
    void (*backward)(const cf_inst *k);   /* NULL: no gradient flows through */
    unsigned flags;
    unsigned nograd;                      /* bit i: input i is not differentiable */
    int nin;                              /* inputs: 0 (a leaf), their count, or CF_NIN_ANY */
    /* Forward and backward FLOPs of node n for one sample (symbolic shapes, the batch
     * taken as 1), for cflux summary and cf_model_flops; want[j]: input j's gradient is
     * computed (j up to its effective inputs, as the executor counts them). The counts,
     * which cflux.h and the tool's help give: matrix products and convolutions 2 per
     * multiply-add, each gradient product the same again; elementwise ops 1 per output
     * element, and backward 1 per element for each input that takes a gradient
     * (cf_flops_elementwise); the rest from their kernels' arithmetic. NULL only with
     * CF_NO_FLOPS (the contract test in tests/test_grad.c holds every op to one). */
    void (*flops)(const cf_node *n, const unsigned char *want, double *fwd, double *bwd);
    /* The output is the input's memory from *off floats on, as it lies, when the
     * layout of these concrete shapes (k's node and shapes only) allows: 1, and the
     * executor skips the forward (a reshape; a slice of one contiguous range); else 0
     * (optional: NULL for an op that always computes). */
    int (*view)(const cf_inst *k, size_t *off);
    /* The numbers the notation takes after the value (CF_CALL), in order; name NULL
     * ends the list. */
    cf_attrdef attrs[CF_OP_ATTRS];
    /* The ONNX operator that computes it in evaluation ("Relu"), over its inputs in
     * order and then its numbers that are inputs, with its numbers that are attributes
     * (cf_attrdef.onnx_*): all that src/interop/onnx.c needs to write it, unless it has
     * a writer there for what this cannot say (softmax's axis and causal mask). NULL:
     * only a writer there exports it; without one, the export is refused, naming the
     * op and where the model made it. */
    const char *onnx;
} cf_opdef;

/* Mutable only so that tests can plant a broken op and see the gradient check fail. */
extern const cf_opdef *cf_ops[CF_OP_COUNT_];

/* Shared helpers for kernels and shape rules (src/ops/util.c). */

/* numpy broadcasting of two symbolic shapes; -1 with a message naming `what`. */
int cf_broadcast_shapes(const cf_node *n, cf_shape a, int ab, cf_shape b, int bb,
                        cf_shape *out, int *outb);

/* Element strides, in `in`, of each of the first out_rank dims of `out` when `in`'s
 * first in_rank dims broadcast against them (aligned from the right): 0 where `in`
 * stretches. */
void cf_broadcast_strides(cf_shape in, int in_rank, cf_shape out, int out_rank, size_t *st);

/* Offsets in a and b of element `index` of a walk over `rank` dims od[] (row-major),
 * where a and b step by sa[] and sb[] along each dim. */
static inline void cf_walk_offsets(const size_t *od, int rank, const size_t *sa, const size_t *sb, size_t index,
                                   size_t *oa, size_t *ob)
{
    size_t a = 0, b = 0;
    for (int i = rank - 1; i >= 0; i--) {
        size_t k = index % od[i];
        index /= od[i];
        a += k * sa[i];
        b += k * sb[i];
    }
    *oa = a;
    *ob = b;
}

/* The shape rule of an op whose output has its input's shape (activations). */
int cf_same_shape(cf_node *n);

/* Split a concrete shape at dim: outer = product of dims before, inner = after. */
void cf_shape_split(cf_shape s, int dim, size_t *outer, size_t *inner);

/* Normalise a dimension index (negative counts from the end); -1 if out of range. */
int cf_norm_dim(int dim, int rank);

/* The forward of a matrix product x * W (W a matrix) fused with the addition of a
 * bias row (N floats) and, if relu, a relu after it (src/ops/matmul.c); the executor
 * runs it for chains it found at bind. */
void cf_matmul_fused(const cf_inst *k, const float *bias, int relu);

/* Every element of x (concrete shape xs) a class index, a whole number in 0..V-1:
 * 0, or -1 with "error: embedding: x[3, 12] is 7.5, not an index in 0..75 ..." (the
 * first that is not). For the ops that pick rows of a table (ops/embedding.c). */
int cf_check_indices(const float *x, cf_shape xs, int V);

/* The mask of dropout node `id` at rate p in the run ctx (ops/dropout.c), for an op
 * that drops out as that node would (the fused attention): elements first .. first + n
 * of its value into f (each 0 or 1 / (1 - p)) and y = x f (y may be x). */
typedef struct cf_dropout {
    uint64_t key;
    uint32_t thr;   /* kept when the hash is at least this: p 2^32 */
    float scale;
    int isa;        /* 2: AVX-512, 1: AVX2, 0: neither */
} cf_dropout;
cf_dropout cf_dropout_of(const cf_runctx *ctx, int id, float p);
void cf_dropout_run(const cf_dropout *d, float *y, float *f, const float *x, size_t first, size_t n);

/* Positions pos[0 .. B) of a cache of S (ops/attention.c, ops/cache.c): each a whole
 * number with room for T more. 0, or -1 with the message. */
int cf_check_positions(const float *pos, size_t B, size_t T, size_t S);

/* A forward's failure that is the folded layer's (cf_node.folded_frame: an index
 * an LSTM's folded Embedding cannot pick): the trace of that layer's place added
 * to the message, CF_FWD_TRACED returned; -1 for a node with nothing folded in. */
#define CF_FWD_TRACED (-2)
int cf_fail_folded(const cf_node *n);

/* Op d's numbers (cf_opdef.attrs) as a node's attributes: v[k] for the k-th, NAN where
 * it is not given (its default then), into ia and fa and the counts of them used, as
 * cf_op_at takes them. 0, or k + 1 for the k-th when it has no value (required and not
 * given) or, of kind 'i', is not a whole number. */
int cf_attrs_decode(const cf_opdef *d, const double *v, int *ia, int *nia, float *fa, int *nfa);

/* Elements of symbolic shape s in one sample (the batch taken as 1): what FLOPs count. */
double cf_count1(cf_shape s);

/* The input gradients that want (cf_opdef.flops) asks for, among n's inputs. */
int cf_grads_wanted(const cf_node *n, const unsigned char *want);

/* The FLOPs of an elementwise op (cf_opdef.flops): 1 per output element, and backward
 * 1 per element for each input that takes a gradient. */
void cf_flops_elementwise(const cf_node *n, const unsigned char *want, double *fwd, double *bwd);

/* dst = src (acc 0) or dst += src (acc 1). */
void cf_put(float *dst, const float *src, size_t n, int acc);

#endif
