/* graph.h - the graph IR: models, nodes, source traces.
 *
 * A model owns its nodes in creation order, which is a topological order (a node's
 * inputs always exist before it). Each node remembers where it was made (file, line,
 * column) and the chain of calls around it (frames), so that errors found later, at
 * bind or run time, can point into the model's source. */
#ifndef CF_CORE_GRAPH_H
#define CF_CORE_GRAPH_H

#include <stdint.h>

#include "cflux.h"

typedef struct cf_srcloc {
    const char *file;   /* interned in the model */
    int line, col;      /* col 0: unknown (C code) */
} cf_srcloc;

/* One enclosing call: `name` (a template, or a C scope) entered at `call`, a place in
 * the parent frame. The outermost frame has parent NULL. */
typedef struct cf_frame {
    const char *name;
    cf_srcloc call;
    const struct cf_frame *parent;
} cf_frame;

#define CF_MAX_INPUTS 64    /* concat of more is refused */

/* The most elements one value may hold per sample (parameters: in all); 2^36 floats are
 * 256 GiB, far beyond any machine cflux runs on, and far from overflowing size_t. */
#define CF_MAX_ELEMENTS (1ull << 36)

/* Elements of s with the batch dimension taken as 1, or 0 if past CF_MAX_ELEMENTS. */
size_t cf_shape_count_checked(cf_shape s);

/* An op's attributes, enough for a 2-D convolution (kernel, stride, padding on each
 * side, dilation, groups: 11 integers) or pooling, plus numbers (a slope, a dropout
 * rate, batch normalisation's epsilon and momentum) and a target shape (reshape). */
#define CF_ATTR_INTS 16
#define CF_ATTR_FLOATS 4
typedef struct cf_attrs {
    int i[CF_ATTR_INTS];
    float f[CF_ATTR_FLOATS];
    cf_shape shape;
} cf_attrs;

struct cf_node {
    int id;                  /* position in the model */
    cf_opcode op;
    int nin;
    cf_node **in;
    cf_model *model;

    /* The shape, once inferred: d[0] == CF_BATCH when the value has the batch
     * dimension (then `batched` is 1). */
    cf_shape shape;
    int batched;

    cf_attrs attr;           /* what each op reads is documented in its file */

    const char *name;        /* inputs, parameters and states */
    int index;               /* input, parameter or state number */
    cf_init init;            /* parameters and states */
    cf_grad_req req;         /* parameters: what backward does with the gradient */

    cf_srcloc loc;
    const cf_frame *frame;   /* innermost enclosing call, or NULL */
    /* A layer whose work this node does too (an Embedding folded into the LSTM that
     * reads it): its place and frame, for the errors that are that layer's; frame NULL
     * when none. */
    cf_srcloc folded_loc;
    const cf_frame *folded_frame;
};

/* A bump allocator for what lives as long as the model (nodes, names, frames). */
typedef struct cf_arena_chunk cf_arena_chunk;
typedef struct cf_arena {
    cf_arena_chunk *head;
} cf_arena;

void *cf_arena_alloc(cf_arena *a, size_t bytes);       /* zeroed; NULL on OOM, with the message */
char *cf_arena_strdup(cf_arena *a, const char *s);
void  cf_arena_free(cf_arena *a);

/* How a layer's parameters appear in PyTorch's state_dict, as its net declares with
 * torch(...) (a net that declares nothing: each parameter under its own name, as
 * is). Each parameter or running statistic comes from one PyTorch tensor of the
 * layer's module, as is or transposed, or from two summed (an LSTM's two biases;
 * written back as the first, the second zeros). Shapes compare with the dimensions
 * of size 1 left out: PyTorch's bias (out) is Affine's b (1, out). */
typedef enum cf_tform { CF_TF_COPY, CF_TF_TRANSPOSE, CF_TF_SUM } cf_tform;

typedef struct cf_tmap {
    const char *name;        /* the parameter's or state's full name: "2.W" */
    cf_tform form;
    const char *src[2];      /* the module's tensors: "weight_ih_l0"; src[1] for a sum */
} cf_tmap;

typedef struct cf_layer {
    const char *prefix;      /* the layer's place in the model: "2", "first", "" */
    const char *seq;         /* its module's name in an nn.Sequential: the prefix with each
                                position in a Chain that begins with Input one less */
    const char *torch;       /* its module's name: seq until an import or a parameter
                                file says otherwise */
    const char *tname;       /* its net: "LSTM" */
    cf_srcloc loc;           /* where it was made */
    int declared;            /* the net has torch(...) */
    cf_tmap *maps;
    int nmaps;
} cf_layer;

/* Add a layer (copied into the model), in the order of its first parameter. 0 or -1. */
int cf_model_add_layer(cf_model *m, const cf_layer *l);

/* The layers' module names as one string of "prefix=torch" lines, for a parameter
 * file's metadata: *out is malloc'd, or NULL when every name is nn.Sequential's.
 * cf_model_set_torch_names reads such a string back (lines for layers the model
 * lacks are ignored). 0 or -1. */
int cf_model_torch_names(const cf_model *m, char **out);
#define CF_TORCH_META "torch_modules"   /* the metadata key */
int cf_model_set_torch_names(cf_model *m, const char *s);

/* The class names as one metadata string, one a line (malloc'd; NULL with the error
 * when out of memory), and back (NULL: leave them). 0 or -1. */
#define CF_CLASSES_META "class_names"

/* The metadata a parameter file or checkpoint keeps beside the run's own: the model's
 * file name and source text (when it was compiled from the notation), the PyTorch
 * module names, the class names and the notes (cf_model_set_info, as "info.KEY"),
 * appended to keys/vals from *n on (at most cap in all). The strings it makes are in
 * *owned, to free with cf_model_extra_meta_free. 0 or -1. */
int cf_model_extra_meta(const cf_model *m, const char **keys, const char **vals, int *n, int cap, char ***owned);
void cf_model_extra_meta_free(char **owned);
/* The notes of a file's metadata ("info.KEY"), which replace the model's. 0 or -1. */
struct cf_st_file;
int cf_model_set_info_from(cf_model *m, const struct cf_st_file *f);
#define CF_INFO_META "info."
#define CF_MODEL_FILE_META "model_file"
#define CF_MODEL_SOURCE_META "model_source"
char *cf_model_class_meta(const cf_model *m);
/* The class names as a JSON array of strings, for exports (ONNX metadata_props,
 * safetensors metadata "class_names"); malloc'd. NULL when the model has none, or
 * with the message when out of memory (m->nclasses > 0). */
char *cf_model_class_json(const cf_model *m);
int cf_model_set_class_meta(cf_model *m, const char *s);

/* A net run over a whole sequence step by step, whose net declared the op that does
 * the same at once (sequence(lstm(...)) in its body): nodes lo..hi are the steps, and a
 * pass (src/exec/fuse_lstm.c) may put the op in their place. The op reads in[]; what
 * the rest of the model reads of the steps is `seq`, all steps' outputs (B, T, ...),
 * and last[], each state's value after the last step (for the next call to carry on). */
#define CF_REGION_IN 8
typedef struct cf_region {
    cf_opcode op;
    int lo, hi;
    cf_node *in[CF_REGION_IN];
    int nin;
    cf_node *seq, *last[2];
    cf_srcloc loc;               /* where the net was called, and the frame of that call: */
    const cf_frame *frame;       /* the fused nodes' place */
} cf_region;

/* Add a region (copied into the model). 0 or -1. */
int cf_model_add_region(cf_model *m, const cf_region *r);

/* What the notation's positions(P, x) made: `value`, a node of the first T rows of the
 * table P (T x's length; P itself when T is all its rows), which a model run one
 * position at a time against a cache (cf_model_load_cached) replaces with the rows at
 * the positions reached. 0 or -1. */
int cf_model_add_positions(cf_model *m, cf_node *value, cf_node *table);

#define CF_MAX_SCOPES 256
#define CF_INTERN_SLOTS 64

/* Named leaves by name, to refuse a second of the same name without a pass over all
 * of them (a model may have hundreds of thousands): open addressing, half full at most. */
typedef struct cf_names {
    cf_node **slots;
    int cap, n;
} cf_names;

struct cf_model {
    cf_arena arena;
    const char *interned[CF_INTERN_SLOTS];
    cf_node **nodes;   int nnodes, cap_nodes;
    cf_node **params;  int nparams, cap_params;
    cf_node **states;  int nstates, cap_states;   /* CF_OP_STATE nodes */
    cf_node **inputs;  int ninputs, cap_inputs;
    cf_node **outputs; int noutputs, cap_outputs;
    cf_names held_names;    /* parameters and states: one namespace */
    cf_names carry_names;   /* carried states */

    /* Scopes open while building. */
    const cf_frame *frame;
    const char *paths[CF_MAX_SCOPES];
    unsigned char framed[CF_MAX_SCOPES];   /* the scope pushed a frame */
    int depth;

    /* Recurrent state carried from one forward to the next (unroll, stateful): leaves
     * of op CF_OP_STATE with the batch dimension, whose values each executor keeps,
     * each with the node whose value it takes after a forward (NULL: it keeps its
     * start). Not saved: a run's position in its data, not the model's. */
    struct cf_carry { cf_node *state, *next; } *carries;
    int ncarries, cap_carries;

    cf_region *regions;      /* sequences a pass may fuse (cf_region) */
    int nregions, cap_regions;

    struct cf_posuse { cf_node *value, *table; } *posuses;   /* cf_model_add_positions */
    int nposuses, cap_posuses;

    cf_node *loss;           /* the training loss (cf_model_add_loss), or NULL */
    cf_node *target;         /* its label or target input */
    int loss_kind;

    char *builderr;          /* the first error while building, kept for cf_bind */
    char *source, *source_name;   /* the notation text it was compiled from, if any */
    const char *compile_notes;   /* the compiler's "note: " lines (cf_model_compile_notes), in the arena */
    int shaped;              /* shapes inferred and checked */
    int sealed;              /* no more nodes; parameters allocated */
    uint64_t seed;

    /* Parameter storage, one block each, carved by offset (in floats). */
    float *pdata, *pgrad;
    size_t *poff;
    size_t nweights;
    /* State storage (cf_state), carved likewise; no gradients. */
    float *sdata;
    size_t *soff;
    size_t nstatefloats;

    /* Input standardisation (cf_model_set_input_norm): x' = (x - mean) / std per
     * element of input 0's sample, applied by cf_fit, cf_evaluate and cf_predict as
     * they copy samples in; NULL when there is none. Saved with the parameters. */
    float *norm_mean, *norm_std;
    size_t norm_count;

    /* Target standardisation (cf_model_set_target_norm): y' = (y - mean) / std per
     * target number of a regression model's output 0, applied to the targets by cf_fit
     * and cf_evaluate as they copy samples in, undone on output 0 by cf_predict; NULL
     * when there is none. Saved with the parameters. */
    float *tnorm_mean, *tnorm_std;
    size_t tnorm_count;

    /* Notes kept with the weights (cf_model_set_info): ninfo pairs, info[2i] the key
     * and info[2i + 1] the value, each malloc'd; saved as metadata "info.KEY". */
    char **info;
    int ninfo;

    /* Parameters quantized to 8 bits (core/quant.h), and whether inference binds run
       their int8 products (cf_model_use_quantized). */
    struct cf_qparam *quant;
    int nquant, quant_off;

    cf_layer *layers;        /* the nets with parameters, in model order (cf_layer) */
    int nlayers, cap_layers;

    /* The names of output 0's classes (cf_model_set_class_names): pointers into
     * class_text; saved with the parameters. */
    const char **class_names;
    char *class_text;
    int nclasses;
};

/* A recurrent state of per-sample shape s (the value is (B, s...)), started from init
 * (zeros, ones or a constant) at bind and by cf_exec_reset_state. NULL on error. */
cf_node *cf_carry_at(cf_model *m, const char *name, cf_shape s, cf_init init, const char *file, int line, int col);

/* After each forward, carry takes next's value (same shape). 0 or -1. */
int cf_carry_set_next(cf_model *m, cf_node *carry, cf_node *next);

/* Record a build error (the first one wins) and set cf_last_error. Returns NULL. */
cf_node *cf_build_fail(cf_model *m, cf_srcloc loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Infer and check every node's shape (once per model). 0, or -1 with the message
 * and the failing node's trace. */
int cf_model_infer_shapes(cf_model *m);

/* Infer one node's shape from its inputs' (already inferred). 0, or -1 with the
 * message and the node's trace. */
int cf_node_infer(cf_node *n);

/* Append the trace of a node ("  in F at file:line:col" lines) to the error message. */
void cf_adderr_trace(const cf_node *n);

/* Allocate the parameter gradients (zeroed), once. 0 or -1. */
int cf_model_alloc_grads(cf_model *m);

/* The floats of a block of these leaves (parameters or states) as the model carves
 * it, each rounded up to 64 bytes: the parameter block's size, and the gradients'. */
size_t cf_leaf_floats(cf_node *const *list, int n);

/* After a block that did not fit: name the largest parameter and where the model made
 * it, under the message already set. Returns -1. */
int cf_model_blame_largest(const cf_model *m);

/* A hash of the graph (ops, inputs, attributes, shapes, names, outputs): what a
 * checkpoint records to know the model it was trained with. */
uint64_t cf_model_graph_hash(const cf_model *m);

/* A node as the user wrote it: "Affine at model.flux:1:42" (the template call that
 * made it) or "relu at model.flux:1:36" (an op written directly). Returns buf. */
char *cf_node_describe(const cf_node *n, char *buf, size_t size);

/* Write a shape as "(B, 20)" into buf (at least 96 bytes). Returns buf. */
char *cf_shape_str(cf_shape s, char *buf, size_t size);

/* Elements of a concrete or symbolic shape, with the batch dimension taken as `batch`. */
size_t cf_shape_count_b(cf_shape s, int batch);

#endif
