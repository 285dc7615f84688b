/* onnx.c - a model's forward function as an ONNX file (opset 17, IR version 8), for
 * inference in onnxruntime and other ONNX tools.
 *
 * The graph holds the nodes that the model's outputs need (no loss, no target), in
 * the model's order, each as the ONNX operator that computes the same function in
 * evaluation mode: dropout is the identity, batchnorm uses the running statistics.
 * Parameters and the running statistics they need are initializers named as in
 * cflux ("1.W", "2.mean"); inputs keep their names and have the symbolic batch
 * dimension "batch"; outputs are "y" (or "y1", "y2", ...). Every value that depends
 * on the batch size gets it at run time: reshapes keep dimension 0 (0 in the target),
 * and a carried recurrent state (B, ...) starts from its initial value, made batch-
 * sized by ConstantOfShape from the shape of the first input. A fused lstm node
 * (ops/lstm.c) is written step by step, as the standard library's LSTM computes it.
 * Each node's doc_string says which layer of the model's source it comes from; the
 * model's class names, when it has them, are the metadata_props entry "class_names".
 *
 * A quantized model (core/quant.h) is written in ONNX's QDQ form: each quantized
 * parameter is its int8 integers (the initializer of its name) through
 * DequantizeLinear, and the input of each product that reads one goes through
 * QuantizeLinear and DequantizeLinear (uint8), clipped first to the 7 bits cflux
 * keeps, with its fixed scale and zero point, or with those measured by Reduce nodes
 * on each row (or sample) as cflux measures them. onnxruntime runs it with its own
 * integer kernels where it fuses the pattern; the values are cflux's quantized ones.
 *
 * Most ops are written as their rows describe them (cf_opdef.onnx: one operator, its
 * numbers as attributes or constant inputs); the rest by writers here. Nothing is
 * written before the whole graph is built: an op without an ONNX counterpart (a loss,
 * an op with neither a description nor a writer) is an error naming it and its place
 * in the source. The parameters are not copied: the file is streamed from the
 * model's memory, the graph's length computed beforehand, through the crash-safe
 * writer. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/graph.h"
#include "core/quant.h"
#include "core/safetensors.h"
#include "exec/passes.h"
#include "interop/protobuf.h"
#include "ops/op.h"

#define IR_VERSION 8
#define OPSET 17
#define ONNX_MAX_BYTES 2147483647u   /* protobuf's limit for one message: the whole file */

/* Field numbers of onnx.proto. */
enum { MODEL_IR_VERSION = 1, MODEL_PRODUCER_NAME = 2, MODEL_PRODUCER_VERSION = 3, MODEL_GRAPH = 7, MODEL_OPSET = 8,
       MODEL_METADATA = 14 };
enum { ENTRY_KEY = 1, ENTRY_VALUE = 2 };
enum { OPSET_DOMAIN = 1, OPSET_VERSION = 2 };
enum { GRAPH_NODE = 1, GRAPH_NAME = 2, GRAPH_INITIALIZER = 5, GRAPH_DOC = 10, GRAPH_INPUT = 11, GRAPH_OUTPUT = 12 };
enum { NODE_INPUT = 1, NODE_OUTPUT = 2, NODE_NAME = 3, NODE_OP_TYPE = 4, NODE_ATTRIBUTE = 5, NODE_DOC = 6 };
enum { ATTR_NAME = 1, ATTR_F = 2, ATTR_I = 3, ATTR_T = 5, ATTR_INTS = 8, ATTR_TYPE = 20 };
enum { ATYPE_FLOAT = 1, ATYPE_INT = 2, ATYPE_TENSOR = 4, ATYPE_INTS = 7 };
enum { TENSOR_DIMS = 1, TENSOR_DATA_TYPE = 2, TENSOR_NAME = 8, TENSOR_RAW = 9 };
enum { DT_FLOAT = 1, DT_UINT8 = 2, DT_INT8 = 3, DT_INT64 = 7 };
enum { VALUE_NAME = 1, VALUE_TYPE = 2, TYPE_TENSOR = 1, TENSOR_ELEM = 1, TENSOR_SHAPE = 2, SHAPE_DIM = 1 };
enum { DIM_VALUE = 1, DIM_PARAM = 2 };

/* An int64 constant made for the graph (a shape, slice bounds, an index), kept to be
 * reused. */
typedef struct {
    int64_t v[CF_MAX_DIMS + 1];
    int n, scalar;
    const char *name;
    const char *batched;   /* for a per-sample shape s: (B, s...), once made */
} i64const;

typedef struct {
    cf_model *m;
    const char *path;
    cf_arena arena;            /* names */
    const char **val;          /* per node id: the name of its value, once written */
    const char **claim;        /* per node id: the output name ("y") its value takes, or NULL */
    cf_graph *g;
    cf_analysis an;            /* the graph's, for inference */
    unsigned char *live;       /* per node id: an output needs it (an's) */
    cf_pb nodes;               /* GraphProto.node fields, in order */
    cf_pb consts;              /* GraphProto.initializer fields of the constants made here */
    cf_pb node, attr, tensor;  /* the node, attribute and tensor being built */
    i64const *i64;
    int ni64, cap_i64;
    const char **defined;      /* every value name defined in the graph, to check each is once */
    int ndefined, cap_defined;
    const char *batch;         /* (1) int64: the batch size, made when first needed */
    int counter;               /* for fresh names */
    int failed;                /* an allocation failed (the message is set) */
} ox;

/* ---- names ---- */

static const char *keep(ox *o, const char *s)
{
    const char *p = cf_arena_strdup(&o->arena, s);
    if (p) return p;
    o->failed = 1;
    return "?";
}

/* A new value name: "/Op_12". A leading '/' keeps them apart from cflux's names. */
static const char *fresh(ox *o, const char *op)
{
    char buf[64];
    snprintf(buf, sizeof buf, "/%s_%d", op, o->counter++);
    return keep(o, buf);
}

/* Record a value name defined in the graph (checked for repeats at the end). */
static void define(ox *o, const char *name)
{
    if (o->ndefined == o->cap_defined) {
        int cap = o->cap_defined ? 2 * o->cap_defined : 256;
        const char **p = realloc(o->defined, (size_t)cap * sizeof *p);
        if (!p) {
            cf_oom((size_t)cap * sizeof *p);
            o->failed = 1;
            return;
        }
        o->defined = p;
        o->cap_defined = cap;
    }
    o->defined[o->ndefined++] = name;
}

static int cmp_names(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* ONNX names every value once: refuse a model where two would share a name. */
static int check_names(ox *o)
{
    if (o->ndefined < 2) return 0;
    qsort(o->defined, (size_t)o->ndefined, sizeof *o->defined, cmp_names);
    for (int i = 1; i < o->ndefined; i++)
        if (strcmp(o->defined[i - 1], o->defined[i]) == 0)
            return cf_seterr("error: %s: two values of the ONNX graph would be named '%s' (an input, a parameter, "
                             "a state or an output: y, y1, ...); rename one",
                             o->path, o->defined[i]);
    return 0;
}

/* The name of node n's value once written: its output name if it is one, else new. */
static const char *value_name(ox *o, const cf_node *n, const char *op)
{
    return o->claim[n->id] ? o->claim[n->id] : fresh(o, op);
}

static const char *V(const ox *o, const cf_node *n) { return o->val[n->id]; }

/* ---- nodes ---- */

static void node_begin(ox *o, const char *op, int nin, const char *const *in, int nout, const char *const *out)
{
    cf_pb *b = &o->node;
    cf_pb_clear(b);
    for (int i = 0; i < nin; i++) cf_pb_string(b, NODE_INPUT, in[i]);
    for (int i = 0; i < nout; i++) {
        cf_pb_string(b, NODE_OUTPUT, out[i]);
        define(o, out[i]);
    }
    cf_pb_string(b, NODE_NAME, out[0]);
    cf_pb_string(b, NODE_OP_TYPE, op);
}

/* The node is complete: its doc_string names the layer of the source it comes from. */
static void node_end(ox *o, const cf_node *src)
{
    if (src) {
        char doc[512];
        cf_pb_string(&o->node, NODE_DOC, cf_node_describe(src, doc, sizeof doc));
    }
    cf_pb_message(&o->nodes, GRAPH_NODE, &o->node);
}

static void attr_begin(ox *o, const char *name, int type)
{
    cf_pb_clear(&o->attr);
    cf_pb_string(&o->attr, ATTR_NAME, name);
    cf_pb_int(&o->attr, ATTR_TYPE, type);
}

static void attr_int(ox *o, const char *name, int64_t v)
{
    attr_begin(o, name, ATYPE_INT);
    cf_pb_int(&o->attr, ATTR_I, v);
    cf_pb_message(&o->node, NODE_ATTRIBUTE, &o->attr);
}

static void attr_ints(ox *o, const char *name, const int64_t *v, int n)
{
    attr_begin(o, name, ATYPE_INTS);
    for (int i = 0; i < n; i++) cf_pb_int(&o->attr, ATTR_INTS, v[i]);
    cf_pb_message(&o->node, NODE_ATTRIBUTE, &o->attr);
}

static void attr_float(ox *o, const char *name, float v)
{
    attr_begin(o, name, ATYPE_FLOAT);
    cf_pb_float(&o->attr, ATTR_F, v);
    cf_pb_message(&o->node, NODE_ATTRIBUTE, &o->attr);
}

/* A tensor of one float, v (ConstantOfShape's value). */
static void attr_float_tensor(ox *o, const char *name, float v)
{
    unsigned char le[4];
    uint32_t u;
    memcpy(&u, &v, 4);
    for (int k = 0; k < 4; k++) le[k] = (unsigned char)(u >> 8 * k);
    cf_pb_clear(&o->tensor);
    cf_pb_int(&o->tensor, TENSOR_DIMS, 1);
    cf_pb_int(&o->tensor, TENSOR_DATA_TYPE, DT_FLOAT);
    cf_pb_bytes(&o->tensor, TENSOR_RAW, le, 4);
    attr_begin(o, name, ATYPE_TENSOR);
    cf_pb_message(&o->attr, ATTR_T, &o->tensor);
    cf_pb_message(&o->node, NODE_ATTRIBUTE, &o->attr);
}

/* A node of one output and no attributes: out = op(in...). Returns out. */
static const char *op_n(ox *o, const char *op, const cf_node *src, const char *out, int nin, const char *const *in)
{
    if (!out) out = fresh(o, op);
    node_begin(o, op, nin, in, 1, &out);
    node_end(o, src);
    return out;
}

static const char *op1(ox *o, const char *op, const cf_node *src, const char *out, const char *a)
{
    return op_n(o, op, src, out, 1, &a);
}

static const char *op2(ox *o, const char *op, const cf_node *src, const char *out, const char *a, const char *b)
{
    return op_n(o, op, src, out, 2, (const char *const[]){a, b});
}

/* ---- constants ---- */

/* An int64 initializer: a vector of n values (0 for the shape of a single number), or
 * with scalar one number (n 1, no dimensions). The same values give the same name. */
static const char *i64s(ox *o, const int64_t *v, int n, int scalar)
{
    if (n < 0 || n > CF_MAX_DIMS + 1 || (scalar && n != 1)) {   /* shapes and bounds only: never */
        cf_seterr("error: %s: an int64 constant of %d values", o->path, n);
        o->failed = 1;
        return "?";
    }
    for (int k = 0; k < o->ni64; k++) {
        const i64const *c = &o->i64[k];
        if (c->n == n && c->scalar == scalar && (n == 0 || memcmp(c->v, v, (size_t)n * sizeof *v) == 0))
            return c->name;
    }
    if (o->ni64 == o->cap_i64) {
        int cap = o->cap_i64 ? 2 * o->cap_i64 : 32;
        i64const *p = realloc(o->i64, (size_t)cap * sizeof *p);
        if (!p) {
            cf_oom((size_t)cap * sizeof *p);
            o->failed = 1;
            return "?";
        }
        o->i64 = p;
        o->cap_i64 = cap;
    }
    i64const *c = &o->i64[o->ni64++];
    memset(c, 0, sizeof *c);
    if (n) memcpy(c->v, v, (size_t)n * sizeof *v);
    c->n = n;
    c->scalar = scalar;
    char buf[48];
    snprintf(buf, sizeof buf, "/const_%d", o->counter++);
    c->name = keep(o, buf);
    define(o, c->name);
    unsigned char raw[8 * (CF_MAX_DIMS + 1)];
    for (int i = 0; i < n; i++)
        for (int k = 0; k < 8; k++) raw[8 * i + k] = (unsigned char)((uint64_t)v[i] >> 8 * k);
    cf_pb_clear(&o->tensor);
    if (!scalar) cf_pb_int(&o->tensor, TENSOR_DIMS, n);
    cf_pb_int(&o->tensor, TENSOR_DATA_TYPE, DT_INT64);
    cf_pb_string(&o->tensor, TENSOR_NAME, c->name);
    cf_pb_bytes(&o->tensor, TENSOR_RAW, raw, (size_t)n * 8);
    cf_pb_message(&o->consts, GRAPH_INITIALIZER, &o->tensor);
    return c->name;
}

static const char *i64_1(ox *o, int64_t v) { return i64s(o, &v, 1, 0); }

/* A float initializer of n values, with dims (a scalar when NULL: the 1 of 1 .- z). */
static const char *f32s(ox *o, const float *v, size_t n, const cf_shape *dims)
{
    const char *name = fresh(o, "const");
    define(o, name);
    cf_pb_clear(&o->tensor);
    for (int i = 0; dims && i < dims->rank; i++) cf_pb_int(&o->tensor, TENSOR_DIMS, dims->d[i]);
    cf_pb_int(&o->tensor, TENSOR_DATA_TYPE, DT_FLOAT);
    cf_pb_string(&o->tensor, TENSOR_NAME, name);
    cf_pb_len_prefix(&o->tensor, TENSOR_RAW, n * 4);
    for (size_t i = 0; i < n; i++) {
        unsigned char le[4];
        uint32_t u;
        memcpy(&u, &v[i], 4);
        for (int k = 0; k < 4; k++) le[k] = (unsigned char)(u >> 8 * k);
        cf_pb_raw(&o->tensor, le, 4);
    }
    cf_pb_message(&o->consts, GRAPH_INITIALIZER, &o->tensor);
    return name;
}

static const char *f32_scalar(ox *o, float v) { return f32s(o, &v, 1, NULL); }

/* A byte initializer (dtype DT_UINT8 or DT_INT8) of n values, a vector, or one number
   without dimensions when scalar. */
static const char *bytes_const(ox *o, int dtype, const uint8_t *v, size_t n, int scalar)
{
    const char *name = fresh(o, "const");
    define(o, name);
    cf_pb_clear(&o->tensor);
    if (!scalar) cf_pb_int(&o->tensor, TENSOR_DIMS, (int64_t)n);
    cf_pb_int(&o->tensor, TENSOR_DATA_TYPE, dtype);
    cf_pb_string(&o->tensor, TENSOR_NAME, name);
    cf_pb_bytes(&o->tensor, TENSOR_RAW, v, n);
    cf_pb_message(&o->consts, GRAPH_INITIALIZER, &o->tensor);
    return name;
}

/* Input 0 as the model sees it: standardised, (x - mean) / std per element of a
 * sample, when the model has input standardisation (cf_model_set_input_norm). */
static void write_input(ox *o, const cf_node *n)
{
    o->val[n->id] = n->name;
    cf_model *m = o->m;
    if (n->index != 0 || !m->norm_count) return;
    cf_shape s = n->shape;   /* per sample: the batch dimension left out */
    if (n->batched) {
        for (int i = 1; i < s.rank; i++) s.d[i - 1] = s.d[i];
        s.rank--;
    }
    if (cf_shape_count(s) != m->norm_count) return;   /* cf_model_set_input_norm checked it */
    const char *mean = f32s(o, m->norm_mean, m->norm_count, &s), *std = f32s(o, m->norm_std, m->norm_count, &s);
    o->val[n->id] = op2(o, "Div", n, NULL, op2(o, "Sub", n, NULL, n->name, mean), std);
}

/* The first input that is not the loss's target: where the batch size comes from. */
static const cf_node *batch_source(const ox *o)
{
    for (int i = 0; i < o->m->ninputs; i++)
        if (o->m->inputs[i] != o->m->target) return o->m->inputs[i];
    return NULL;
}

/* The batch size, (1) int64: Shape(x, start 0, end 1) of the first input. */
static const char *batch_size(ox *o)
{
    if (o->batch) return o->batch;
    const char *x = batch_source(o)->name, *out = fresh(o, "batch");
    node_begin(o, "Shape", 1, &x, 1, &out);
    attr_int(o, "start", 0);
    attr_int(o, "end", 1);
    node_end(o, NULL);
    return o->batch = out;
}

/* Reshape x to shape s, keeping the batch dimension (0 in the target) if batched. */
static const char *reshape_to(ox *o, const char *x, cf_shape s, int batched, const cf_node *src, const char *out)
{
    int64_t t[CF_MAX_DIMS] = {0};
    for (int i = 0; i < s.rank; i++) t[i] = batched && i == 0 ? 0 : s.d[i];
    return op2(o, "Reshape", src, out ? out : fresh(o, "Reshape"), x, i64s(o, t, s.rank, 0));
}

/* ---- the ops ---- */

/* A concatenation along axis. */
static const char *concat(ox *o, const cf_node *src, const char *out, int axis, int nin, const char *const *in)
{
    if (!out) out = fresh(o, "Concat");
    node_begin(o, "Concat", nin, in, 1, &out);
    attr_int(o, "axis", axis);
    node_end(o, src);
    return out;
}

/* A carried recurrent state (B, s...) at its start (zeros, ones or a constant):
 * ConstantOfShape of (B, s...). */
static void write_carry(ox *o, const cf_node *n)
{
    const char *shape = batch_size(o);
    if (n->shape.rank > 1) {   /* (B) and s, joined once for every state of shape s */
        int64_t rest[CF_MAX_DIMS];
        for (int i = 1; i < n->shape.rank; i++) rest[i - 1] = n->shape.d[i];
        const char *s = i64s(o, rest, n->shape.rank - 1, 0);
        i64const *c = NULL;
        for (int k = 0; k < o->ni64 && !c; k++)
            if (o->i64[k].name == s) c = &o->i64[k];
        if (c && c->batched) shape = c->batched;
        else shape = concat(o, n, NULL, 0, 2, (const char *const[]){shape, s});
        if (c) c->batched = shape;
    }
    float v = n->init.kind == CF_INIT_ONES ? 1.0f : n->init.kind == CF_INIT_CONST ? n->init.a : 0.0f;
    const char *out = o->claim[n->id] ? o->claim[n->id] : n->name;
    node_begin(o, "ConstantOfShape", 1, &shape, 1, &out);
    attr_float_tensor(o, "value", v);
    node_end(o, n);
    o->val[n->id] = out;
}

/* The standard library's LSTM over a sequence (ops/lstm.c's fused node) step by step:
 *   z = x_t W + b + h U;  i, f, o = σ(z_i, z_f, z_o);  g = tanh(z_g)
 *   c = f c + i g;        h = o tanh(c);               y_t = (h, c)
 * the input products of all steps at once, (B, T, 4H); y (B, T, 2H). */
static int write_lstm(ox *o, const cf_node *n)
{
    const cf_node *bn = n->in[4];
    int T = n->shape.d[1], H = n->in[3]->shape.d[0];
    const char *h = V(o, n->in[0]), *c = V(o, n->in[1]), *W = V(o, n->in[2]), *U = V(o, n->in[3]);
    const char *b = V(o, bn), *x;
    if (!(bn->shape.rank == 1 || (bn->shape.rank == 2 && bn->shape.d[0] == 1)))   /* b (4H) or (1, 4H) */
        b = reshape_to(o, b, (cf_shape){1, {4 * H}}, 0, n, NULL);
    if (n->nin == 7) {   /* the rows of the table E picked by the indices */
        const char *ids = fresh(o, "Cast");
        node_begin(o, "Cast", 1, (const char *const[]){V(o, n->in[6])}, 1, &ids);
        attr_int(o, "to", DT_INT64);
        node_end(o, n);
        x = fresh(o, "Gather");
        node_begin(o, "Gather", 2, (const char *const[]){V(o, n->in[5]), ids}, 1, &x);
        attr_int(o, "axis", 0);
        node_end(o, n);
    } else {
        x = V(o, n->in[5]);
    }
    const char *xw = op2(o, "Add", n, NULL, op2(o, "MatMul", n, NULL, x, W), b);
    const char **ys = malloc((size_t)T * sizeof *ys);
    if (!ys) return cf_oom((size_t)T * sizeof *ys);
    for (int t = 0; t < T; t++) {
        int64_t step = t;
        const char *xt = fresh(o, "Gather");
        node_begin(o, "Gather", 2, (const char *const[]){xw, i64s(o, &step, 1, 1)}, 1, &xt);
        attr_int(o, "axis", 1);
        node_end(o, n);
        const char *z = op2(o, "Add", n, NULL, xt, op2(o, "MatMul", n, NULL, h, U));
        const char *g[4] = {fresh(o, "Split"), fresh(o, "Split"), fresh(o, "Split"), fresh(o, "Split")};
        node_begin(o, "Split", 1, &z, 4, g);
        attr_int(o, "axis", 1);
        node_end(o, n);
        const char *gi = op1(o, "Sigmoid", n, NULL, g[0]), *gf = op1(o, "Sigmoid", n, NULL, g[1]);
        const char *gg = op1(o, "Tanh", n, NULL, g[2]), *go = op1(o, "Sigmoid", n, NULL, g[3]);
        c = op2(o, "Add", n, NULL, op2(o, "Mul", n, NULL, gf, c), op2(o, "Mul", n, NULL, gi, gg));
        h = op2(o, "Mul", n, NULL, go, op1(o, "Tanh", n, NULL, c));
        ys[t] = concat(o, n, NULL, 1, 2, (const char *const[]){h, c});   /* (B, 2H) */
    }
    const char *all = concat(o, n, NULL, 1, T, ys);   /* (B, T 2H) */
    free(ys);
    o->val[n->id] = reshape_to(o, all, n->shape, 1, n, value_name(o, n, "LSTM"));
    return 0;
}

/* Refuse node n: nothing in ONNX computes it (as far as this writer knows). */
static int refuse(ox *o, const cf_node *n, const char *why)
{
    const char *name = n->op >= 0 && n->op < CF_OP_COUNT_ && cf_ops[n->op] ? cf_ops[n->op]->name : "?";
    const char *what = n->op >= 0 && n->op < CF_OP_COUNT_ && cf_ops[n->op] ? cf_ops[n->op]->what : "an unknown op";
    char at[320] = "";
    if (n->loc.file && n->loc.col > 0) snprintf(at, sizeof at, " at %s:%d:%d", n->loc.file, n->loc.line, n->loc.col);
    else if (n->loc.file) snprintf(at, sizeof at, " at %s:%d", n->loc.file, n->loc.line);
    cf_seterr("error: %s: cannot write %s (%s)%s as ONNX: %s", o->path, name, what, at, why);
    if (n->frame) cf_adderr_trace(n);
    return -1;
}

/* Node n as its row describes it (cf_opdef.onnx): one operator over n's inputs and
 * the numbers that are inputs (constants), with the numbers that are attributes.
 * Returns its value's name. */
static const char *write_described(ox *o, const cf_node *n)
{
    const cf_opdef *d = cf_ops[n->op];
    const char *in[CF_MAX_INPUTS + CF_OP_ATTRS];
    int nin = 0;
    for (int i = 0; i < n->nin; i++) in[nin++] = V(o, n->in[i]);
    for (int k = 0; k < CF_OP_ATTRS && d->attrs[k].name; k++) {
        const cf_attrdef *a = &d->attrs[k];
        if (!a->onnx_input) continue;
        int64_t v = a->kind == 'i' ? n->attr.i[a->slot] : 0;
        in[nin++] = a->kind == 'i' ? i64s(o, &v, 1, 1) : f32_scalar(o, n->attr.f[a->slot]);
    }
    const char *y = value_name(o, n, d->onnx);
    node_begin(o, d->onnx, nin, in, 1, &y);
    for (int k = 0; k < CF_OP_ATTRS && d->attrs[k].name; k++) {
        const cf_attrdef *a = &d->attrs[k];
        if (a->onnx_attr && a->kind == 'i') attr_int(o, a->onnx_attr, n->attr.i[a->slot]);
        else if (a->onnx_attr) attr_float(o, a->onnx_attr, n->attr.f[a->slot]);
    }
    node_end(o, n);
    return y;
}

/* ---- quantized products ---- */

/* The quantization of the weights that product n reads, or NULL (core/quant.h). */
static const cf_qparam *product_qparam(const ox *o, const cf_node *n)
{
    if ((n->op != CF_OP_MATMUL && n->op != CF_OP_CONV2D) || n->nin < 2 || n->in[1]->op != CF_OP_PARAM) return NULL;
    return cf_model_qparam(o->m, n->in[1]->index);
}

/* A quantized parameter's value: its integers (the initializer of its name, INT8)
   through DequantizeLinear with a scale per output channel (axis 1 of a matrix, 0 of
   kernels) and zero points of 0. */
static const char *write_qparam(ox *o, const cf_node *n, const cf_qparam *qp)
{
    uint8_t *zeros = calloc((size_t)qp->channels, 1);
    if (!zeros) {
        cf_oom((size_t)qp->channels);
        o->failed = 1;
        return "?";
    }
    cf_shape cs = {1, {qp->channels}};
    const char *in[3] = {n->name, f32s(o, qp->scale, (size_t)qp->channels, &cs),
                         bytes_const(o, DT_INT8, zeros, (size_t)qp->channels, 0)};
    free(zeros);
    const char *y = fresh(o, "DequantizeLinear");
    node_begin(o, "DequantizeLinear", 3, in, 1, &y);
    attr_int(o, "axis", n->shape.rank == 2 ? 1 : 0);
    node_end(o, n);
    return y;
}

/* x, the input of product n whose weights qp holds, as the product sees it: clipped to
   the 7 bits cflux keeps, then through QuantizeLinear and DequantizeLinear (uint8) with
   the fixed scale and zero point (static), or with those measured on each row of a
   matrix (B, K), or each sample of a convolution's (B, C, H, W), by Reduce nodes as
   cflux measures them (dynamic: per axis 0). */
static const char *qdq_input(ox *o, const cf_node *n, const char *x, const cf_qparam *qp)
{
    const cf_node *xn = n->in[0];
    const char *s, *z, *lo, *hi;
    int dynamic = !qp->act_static;
    if (!dynamic) {
        uint8_t z8 = (uint8_t)qp->act_zero;
        s = f32_scalar(o, qp->act_scale);
        z = bytes_const(o, DT_UINT8, &z8, 1, 1);
        const char *in[3] = {x, f32_scalar(o, (float)-qp->act_zero * qp->act_scale),
                             f32_scalar(o, (float)(CF_QA_MAX - qp->act_zero) * qp->act_scale)};
        x = op_n(o, "Clip", n, NULL, 3, in);
    } else {
        int rank = xn->shape.rank;
        if (!xn->batched || (n->op == CF_OP_MATMUL && rank != 2)) {
            refuse(o, n, "its input is quantized per row of more than a matrix, which ONNX's per-axis "
                         "quantization cannot say (quantize it with --activations static)");
            o->failed = 1;   /* the message is set */
            return "?";
        }
        const int64_t axes[3] = {1, 2, 3};
        const char *mn = fresh(o, "ReduceMin"), *mx = fresh(o, "ReduceMax");
        node_begin(o, "ReduceMin", 1, &x, 1, &mn);
        attr_ints(o, "axes", axes, rank - 1);
        attr_int(o, "keepdims", 1);
        node_end(o, n);
        node_begin(o, "ReduceMax", 1, &x, 1, &mx);
        attr_ints(o, "axes", axes, rank - 1);
        attr_int(o, "keepdims", 1);
        node_end(o, n);
        const char *zero = f32_scalar(o, 0), *one = f32_scalar(o, 1), *top = f32_scalar(o, CF_QA_MAX);
        const char *l = op2(o, "Min", n, NULL, mn, zero), *h = op2(o, "Max", n, NULL, mx, zero);
        const char *raw = op2(o, "Div", n, NULL, op2(o, "Sub", n, NULL, h, l), top);
        /* a range of nothing: scale 1, zero point 0, as cf_qact_range */
        const char *sk = op_n(o, "Where", n, NULL, 3,
                              (const char *const[]){op2(o, "Greater", n, NULL, raw, zero), raw, one});
        const char *zf = op_n(o, "Clip", n, NULL, 3,
                              (const char *const[]){op1(o, "Round", n, NULL, op2(o, "Div", n, NULL,
                                                                                  op1(o, "Neg", n, NULL, l), sk)),
                                                    zero, top});
        lo = op2(o, "Mul", n, NULL, op1(o, "Neg", n, NULL, zf), sk);
        hi = op2(o, "Mul", n, NULL, op2(o, "Sub", n, NULL, top, zf), sk);
        x = op2(o, "Max", n, NULL, op2(o, "Min", n, NULL, x, hi), lo);
        const int64_t flat = -1;
        s = op2(o, "Reshape", n, NULL, sk, i64s(o, &flat, 1, 0));
        const char *zc = fresh(o, "Cast");
        node_begin(o, "Cast", 1, (const char *const[]){op2(o, "Reshape", n, NULL, zf, i64s(o, &flat, 1, 0))}, 1,
                   &zc);
        attr_int(o, "to", DT_UINT8);
        node_end(o, n);
        z = zc;
    }
    const char *q = fresh(o, "QuantizeLinear"), *y = fresh(o, "DequantizeLinear");
    node_begin(o, "QuantizeLinear", 3, (const char *const[]){x, s, z}, 1, &q);
    attr_int(o, "axis", 0);
    node_end(o, n);
    node_begin(o, "DequantizeLinear", 3, (const char *const[]){q, s, z}, 1, &y);
    attr_int(o, "axis", 0);
    node_end(o, n);
    return y;
}

/* Write node n (its inputs written): the ONNX nodes that compute its value, and the
 * name of that value in o->val; a writer here for an op that its row alone cannot
 * describe, else the row's description. 0, or -1 with the message. */
static int write_node(ox *o, const cf_node *n)
{
    const char *x = n->nin > 0 ? V(o, n->in[0]) : NULL, *y;
    const char *op = cf_ops[n->op]->onnx;
    const int *a = n->attr.i;
    switch (n->op) {
    case CF_OP_INPUT:
        write_input(o, n);
        return 0;
    case CF_OP_PARAM: {
        const cf_qparam *qp = cf_model_qparam(o->m, n->index);
        o->val[n->id] = qp ? write_qparam(o, n, qp) : n->name;
        return 0;
    }
    case CF_OP_STATE:
        if (n->batched) write_carry(o, n);
        else o->val[n->id] = n->name;
        return 0;
    case CF_OP_CONST:
        o->val[n->id] = f32_scalar(o, n->attr.f[0]);
        return 0;
    case CF_OP_SOFTMAX:      /* over the last dimension */
    case CF_OP_LOGSOFTMAX:
        if (n->attr.f[0] != 0 && n->op == CF_OP_LOGSOFTMAX)
            return refuse(o, n, "its causal mask is not written as ONNX yet");
        if (n->attr.f[0] != 0) {   /* causal: -inf above the diagonal, so exp gives the 0s */
            int T = n->shape.d[n->shape.rank - 1];
            float *mask = malloc((size_t)T * (size_t)T * sizeof *mask);
            if (!mask) return cf_oom((size_t)T * (size_t)T * sizeof *mask);
            for (int i = 0; i < T; i++)
                for (int j = 0; j < T; j++) mask[i * T + j] = j <= i ? 0.0f : -INFINITY;
            cf_shape ms = {2, {T, T}};
            x = op2(o, "Add", n, fresh(o, "Add"), x, f32s(o, mask, (size_t)T * (size_t)T, &ms));
            free(mask);
        }
        y = value_name(o, n, op);
        node_begin(o, op, 1, &x, 1, &y);
        attr_int(o, "axis", -1);
        node_end(o, n);
        break;
    case CF_OP_SUM:          /* over the last dimension, which goes */
    case CF_OP_MEAN: {
        const int64_t last = -1;
        y = value_name(o, n, op);
        if (n->op == CF_OP_SUM) node_begin(o, op, 2, (const char *const[]){x, i64s(o, &last, 1, 0)}, 1, &y);
        else node_begin(o, op, 1, &x, 1, &y);   /* ReduceMean takes its axes as an attribute until opset 18 */
        if (n->op == CF_OP_MEAN) attr_ints(o, "axes", &last, 1);
        attr_int(o, "keepdims", 0);
        node_end(o, n);
        break;
    }
    case CF_OP_RESHAPE:
    case CF_OP_FLATTEN:
        y = reshape_to(o, x, n->shape, n->batched, n, value_name(o, n, "Reshape"));
        break;
    case CF_OP_CONCAT: {
        const char *in[CF_MAX_INPUTS];
        for (int i = 0; i < n->nin; i++) in[i] = V(o, n->in[i]);
        y = concat(o, n, value_name(o, n, "Concat"), cf_norm_dim(a[0], n->shape.rank), n->nin, in);
        break;
    }
    case CF_OP_SLICE: {   /* [start, start + len) of dimension dim */
        int dim = cf_norm_dim(a[0], n->shape.rank);
        const char *in[4] = {x, i64_1(o, a[1]), i64_1(o, (int64_t)a[1] + a[2]), i64_1(o, dim)};
        y = op_n(o, "Slice", n, value_name(o, n, "Slice"), 4, in);
        break;
    }
    case CF_OP_TRANSPOSE: {   /* two dimensions swapped: the permutation that does it */
        int64_t perm[CF_MAX_DIMS];
        for (int i = 0; i < n->shape.rank; i++) perm[i] = i;
        perm[a[2]] = a[3];
        perm[a[3]] = a[2];
        y = value_name(o, n, "Transpose");
        node_begin(o, "Transpose", 1, &x, 1, &y);
        attr_ints(o, "perm", perm, n->shape.rank);
        node_end(o, n);
        break;
    }
    case CF_OP_CONV2D: {   /* attributes: conv.c; 0 stands for 1 in strides, dilations, groups */
        const cf_shape w = n->in[1]->shape;
        int64_t k[2] = {w.d[2], w.d[3]}, s[2] = {a[0] ? a[0] : 1, a[1] ? a[1] : 1};
        int64_t p[4] = {a[2], a[3], a[2], a[3]}, d[2] = {a[4] ? a[4] : 1, a[5] ? a[5] : 1};
        y = value_name(o, n, "Conv");
        node_begin(o, "Conv", 2, (const char *const[]){x, V(o, n->in[1])}, 1, &y);
        attr_ints(o, "kernel_shape", k, 2);
        attr_ints(o, "strides", s, 2);
        attr_ints(o, "pads", p, 4);
        attr_ints(o, "dilations", d, 2);
        attr_int(o, "group", a[6] ? a[6] : 1);
        node_end(o, n);
        break;
    }
    case CF_OP_MAXPOOL:    /* attributes: pool.c; padding never picked, or counted as zeros */
    case CF_OP_AVGPOOL: {
        int64_t k[2] = {a[0], a[1]}, s[2] = {a[2] ? a[2] : a[0], a[3] ? a[3] : a[1]};
        int64_t p[4] = {a[4], a[5], a[4], a[5]};
        y = value_name(o, n, op);
        node_begin(o, op, 1, &x, 1, &y);
        attr_ints(o, "kernel_shape", k, 2);
        attr_ints(o, "strides", s, 2);
        attr_ints(o, "pads", p, 4);
        if (n->op == CF_OP_AVGPOOL) attr_int(o, "count_include_pad", 1);
        node_end(o, n);
        break;
    }
    case CF_OP_GLOBALAVGPOOL: {   /* (B, C, 1, 1), then (B, C) */
        const char *pooled = op1(o, "GlobalAveragePool", n, NULL, x);
        y = value_name(o, n, "Flatten");
        node_begin(o, "Flatten", 1, &pooled, 1, &y);
        attr_int(o, "axis", 1);
        node_end(o, n);
        break;
    }
    case CF_OP_DROPOUT:   /* the identity in evaluation */
        y = o->claim[n->id] ? op1(o, "Identity", n, o->claim[n->id], x) : x;
        break;
    case CF_OP_LAYERNORM: {   /* over the last dimension; γ and β (d) */
        const char *in[3] = {x, V(o, n->in[1]), V(o, n->in[2])};
        y = value_name(o, n, "LayerNormalization");
        node_begin(o, "LayerNormalization", 3, in, 1, &y);
        attr_int(o, "axis", -1);
        attr_float(o, "epsilon", n->attr.f[0] > 0 ? n->attr.f[0] : 1e-5f);   /* layernorm.c's default */
        node_end(o, n);
        break;
    }
    case CF_OP_GELU: {   /* opset 17 has no Gelu: 0.5 x (1 + erf(x / sqrt 2)), or the tanh form */
        const char *u;
        if (n->attr.f[0] != 0) {
            u = op1(o, "Erf", n, NULL, op2(o, "Mul", n, NULL, x, f32_scalar(o, 0.70710678118654752f)));
        } else {   /* tanh(sqrt(2 / pi) (x + 0.044715 x^3)) */
            const char *x3 = op2(o, "Mul", n, NULL, op2(o, "Mul", n, NULL, x, x), x);
            const char *inner = op2(o, "Add", n, NULL, x, op2(o, "Mul", n, NULL, x3, f32_scalar(o, 0.044715f)));
            u = op1(o, "Tanh", n, NULL, op2(o, "Mul", n, NULL, inner, f32_scalar(o, 0.79788456080286536f)));
        }
        const char *half_x = op2(o, "Mul", n, NULL, x, f32_scalar(o, 0.5f));
        y = op2(o, "Mul", n, value_name(o, n, "Gelu"), half_x, op2(o, "Add", n, NULL, u, f32_scalar(o, 1.0f)));
        break;
    }
    case CF_OP_BATCHNORM: {   /* evaluation: the running statistics; each (C) */
        const char *in[5] = {x};
        int C = n->shape.d[1];
        for (int i = 1; i < 5; i++) {
            in[i] = V(o, n->in[i]);
            if (n->in[i]->shape.rank != 1) in[i] = reshape_to(o, in[i], (cf_shape){1, {C}}, 0, n, NULL);
        }
        y = value_name(o, n, "BatchNormalization");
        node_begin(o, "BatchNormalization", 5, in, 1, &y);
        attr_float(o, "epsilon", n->attr.f[0] > 0 ? n->attr.f[0] : 1e-5f);   /* batchnorm.c's default */
        node_end(o, n);
        break;
    }
    case CF_OP_EMBEDDING: {   /* indices stored as floats: whole numbers, as int64 */
        const char *ids = fresh(o, "Cast");
        node_begin(o, "Cast", 1, &x, 1, &ids);
        attr_int(o, "to", DT_INT64);
        node_end(o, n);
        y = value_name(o, n, "Gather");
        node_begin(o, "Gather", 2, (const char *const[]){V(o, n->in[1]), ids}, 1, &y);
        attr_int(o, "axis", 0);
        node_end(o, n);
        break;
    }
    case CF_OP_LSTM:
        if (n->nin != 6 && n->nin != 7) return refuse(o, n, "an lstm node of an unknown form");
        return write_lstm(o, n);
    case CF_OP_XENT:
    case CF_OP_MSE:
        return refuse(o, n, "it is a loss; ONNX gets the model's forward function only (leave the loss out of "
                            "the outputs)");
    default:
        if (!op) return refuse(o, n, "ONNX has no operator that computes it");
        y = write_described(o, n);
        break;
    }
    o->val[n->id] = y;
    return 0;
}

/* ---- the graph ---- */

/* A ValueInfoProto: a float tensor of shape s, dimension 0 "batch" if batched. */
static void value_info(cf_pb *dst, int field, const char *name, cf_shape s, int batched)
{
    cf_pb shape = {0}, dim = {0}, tensor = {0}, type = {0}, vi = {0};
    for (int i = 0; i < s.rank; i++) {
        cf_pb_clear(&dim);
        if (batched && i == 0) cf_pb_string(&dim, DIM_PARAM, "batch");
        else cf_pb_int(&dim, DIM_VALUE, s.d[i]);
        cf_pb_message(&shape, SHAPE_DIM, &dim);
    }
    cf_pb_int(&tensor, TENSOR_ELEM, DT_FLOAT);
    cf_pb_message(&tensor, TENSOR_SHAPE, &shape);
    cf_pb_message(&type, TYPE_TENSOR, &tensor);
    cf_pb_string(&vi, VALUE_NAME, name);
    cf_pb_message(&vi, VALUE_TYPE, &type);
    cf_pb_message(dst, field, &vi);
    cf_pb_free(&shape);
    cf_pb_free(&dim);
    cf_pb_free(&tensor);
    cf_pb_free(&type);
    cf_pb_free(&vi);
}

/* A parameter's or running statistic's values (n a live PARAM or unbatched STATE). */
static const float *leaf_data(ox *o, const cf_node *n)
{
    return n->op == CF_OP_PARAM ? cf_model_param_data(o->m, n->index) : cf_model_state_data(o->m, n->index);
}

/* The output names, "y" or "y1", "y2", ... */
static const char *output_name(ox *o, int i)
{
    char buf[32];
    if (o->m->noutputs == 1) return "y";
    snprintf(buf, sizeof buf, "y%d", i + 1);
    return keep(o, buf);
}

/* Every node the outputs need, in order; inputs and outputs. 0 or -1. */
static int build(ox *o, cf_pb *io)
{
    cf_model *m = o->m;
    size_t nn = (size_t)m->nnodes;
    o->val = calloc(nn, sizeof *o->val);
    o->claim = calloc(nn, sizeof *o->claim);
    const char **outs = calloc((size_t)m->noutputs, sizeof *outs);
    if (!o->val || !o->claim || !outs) {
        free(outs);
        return cf_oom(nn * 2 * sizeof *o->val);
    }
    /* what the outputs need, as cf_bind finds it for inference after the structural
       passes (an LSTM over its sequence is one node) */
    if (!(o->g = cf_graph_new(m)) || cf_graph_lower(o->g, &o->an, CF_ANALYSE_NO_CARRY, 0)) {
        free(outs);
        return -1;
    }
    o->live = o->an.live;
    /* An output computed by a node of its own takes the output's name; the rest (a
     * leaf, a value that is two outputs) get an Identity at the end. */
    for (int i = 0; i < m->noutputs; i++) {
        const cf_node *n = m->outputs[i];
        int leaf = n->op == CF_OP_INPUT || n->op == CF_OP_PARAM || n->op == CF_OP_CONST ||
                   (n->op == CF_OP_STATE && !n->batched);
        outs[i] = output_name(o, i);
        int undo = i == 0 && m->tnorm_count;   /* target standardisation undone after it: its own nodes */
        if (!leaf && !undo && !o->claim[n->id]) {
            o->claim[n->id] = outs[i];
            outs[i] = NULL;
        }
    }
    for (int i = 0; i < m->ninputs; i++) {
        const cf_node *x = m->inputs[i];
        if (x == m->target && !o->live[x->id]) continue;   /* the loss's labels */
        value_info(io, GRAPH_INPUT, x->name, x->shape, x->batched);
        define(o, x->name);
    }
    int rc = 0;
    for (int k = 0; k < m->nnodes && rc == 0; k++) {
        const cf_node *n = o->g->node[k];
        if (!o->live[k]) continue;
        int param = n->op == CF_OP_PARAM, stat = n->op == CF_OP_STATE && !n->batched;
        if ((param && (n->index < 0 || n->index >= m->nparams || m->params[n->index] != n)) ||
            (stat && (n->index < 0 || n->index >= m->nstates || m->states[n->index] != n)))
            rc = cf_seterr("error: %s: the parameter or state '%s' is not the model's own", o->path, n->name);
        else if ((param || stat) && !leaf_data(o, n))
            rc = cf_seterr("error: %s: '%s' has no values yet", o->path, n->name);
        else if (param || stat)
            define(o, n->name);   /* an initializer */
        const cf_qparam *qp = rc == 0 ? product_qparam(o, n) : NULL;
        if (qp) {   /* the product reads its input quantized: that value, for it alone */
            const char *x = o->val[n->in[0]->id];
            o->val[n->in[0]->id] = qdq_input(o, n, x, qp);
            rc = o->failed ? -1 : write_node(o, n);
            o->val[n->in[0]->id] = x;
        } else if (rc == 0) {
            rc = write_node(o, n);
        }
        if (rc == 0 && o->failed) rc = -1;   /* an allocation failed: the message is set */
    }
    for (int i = 0; i < m->noutputs && rc == 0; i++) {
        const cf_node *n = m->outputs[i];
        if (outs[i] && i == 0 && m->tnorm_count) {   /* y = out * std + mean, per number of a sample */
            cf_shape ps = n->shape;
            if (n->batched) {
                for (int d = 1; d < ps.rank; d++) ps.d[d - 1] = ps.d[d];
                ps.rank--;
            }
            const char *mean = f32s(o, m->tnorm_mean, m->tnorm_count, &ps);
            const char *std = f32s(o, m->tnorm_std, m->tnorm_count, &ps);
            op2(o, "Add", n, outs[i], op2(o, "Mul", n, NULL, V(o, n), std), mean);
        } else if (outs[i]) {
            op1(o, "Identity", n, outs[i], V(o, n));
        }
        value_info(io, GRAPH_OUTPUT, outs[i] ? outs[i] : o->claim[n->id], n->shape, n->batched);
    }
    free(outs);
    if (rc == 0 && o->failed) rc = -1;
    if (rc == 0) rc = check_names(o);
    return rc;
}

/* ---- the file ---- */

/* A TensorProto of n's values up to its raw bytes: dims, type, name, the raw data's
 * tag and length. The floats follow. */
static void leaf_header(cf_pb *h, const cf_node *n, int int8)
{
    cf_pb_clear(h);
    for (int i = 0; i < n->shape.rank; i++) cf_pb_int(h, TENSOR_DIMS, n->shape.d[i]);
    cf_pb_int(h, TENSOR_DATA_TYPE, int8 ? DT_INT8 : DT_FLOAT);
    cf_pb_string(h, TENSOR_NAME, n->name);
    cf_pb_len_prefix(h, TENSOR_RAW, cf_shape_count(n->shape) * (int8 ? 1 : 4));
}

/* The integers of a quantized parameter, which its initializer holds; else NULL. */
static const int8_t *leaf_int8(const ox *o, const cf_node *n)
{
    const cf_qparam *qp = n->op == CF_OP_PARAM ? cf_model_qparam(o->m, n->index) : NULL;
    return qp ? qp->q : NULL;
}

static int put(FILE *fp, const cf_pb *b) { return b->len && fwrite(b->p, 1, b->len, fp) != b->len ? -1 : 0; }

/* The graph's name: the model file's, without folder and extension. */
static void graph_name(const cf_model *m, char *buf, size_t size)
{
    const char *s = m->source_name ? m->source_name : "", *slash = strrchr(s, '/');
    if (slash) s = slash + 1;
    snprintf(buf, size, "%s", *s ? s : "cflux");
    char *dot = strrchr(buf, '.');
    if (dot && dot != buf) *dot = 0;
}

/* ModelProto: ir_version, producer, the graph (nodes, name, initializers, inputs and
 * outputs), opset_import, and the class names as metadata_props "class_names" (a JSON
 * array of strings) when the model has them; the parameters streamed from the model. */
static int write_model(ox *o, const cf_pb *io)
{
    cf_model *m = o->m;
    cf_pb head = {0}, top = {0}, tail = {0}, opset = {0}, h = {0};
    char name[256], doc[512];
    graph_name(m, name, sizeof name);
    snprintf(doc, sizeof doc, "written by cflux %s%s%s", cf_version(), m->source_name ? " from " : "",
             m->source_name ? m->source_name : "");
    cf_pb_string(&head, GRAPH_NAME, name);
    cf_pb_string(&head, GRAPH_DOC, doc);
    size_t graph = o->nodes.len + head.len + o->consts.len + io->len;
    for (int k = 0; k < m->nnodes; k++) {
        const cf_node *n = m->nodes[k];
        if (!o->live[k] || !(n->op == CF_OP_PARAM || (n->op == CF_OP_STATE && !n->batched))) continue;
        const int8_t *q8 = leaf_int8(o, n);
        leaf_header(&h, n, q8 != NULL);
        if (cf_pb_check(&h)) break;
        size_t t = h.len + cf_shape_count(n->shape) * (q8 ? 1 : 4);
        graph += cf_pb_len_prefix_size(GRAPH_INITIALIZER, t) + t;
    }
    cf_pb_int(&top, MODEL_IR_VERSION, IR_VERSION);
    cf_pb_string(&top, MODEL_PRODUCER_NAME, "cflux");
    cf_pb_string(&top, MODEL_PRODUCER_VERSION, cf_version());
    cf_pb_len_prefix(&top, MODEL_GRAPH, graph);
    cf_pb_string(&opset, OPSET_DOMAIN, "");
    cf_pb_int(&opset, OPSET_VERSION, OPSET);
    cf_pb_message(&tail, MODEL_OPSET, &opset);
    char *classes = cf_model_class_json(m);   /* metadata_props "class_names": a JSON array */
    int rc = m->nclasses && !classes ? -1 : 0;
    if (classes) {
        cf_pb_clear(&opset);   /* reused for the entry */
        cf_pb_string(&opset, ENTRY_KEY, "class_names");
        cf_pb_string(&opset, ENTRY_VALUE, classes);
        cf_pb_message(&tail, MODEL_METADATA, &opset);
        free(classes);
    }
    const cf_pb *all[] = {&head, &top, &tail, &h, &o->nodes, &o->consts, io};
    for (size_t i = 0; i < sizeof all / sizeof *all && rc == 0; i++) rc = cf_pb_check(all[i]);
    size_t total = top.len + graph + tail.len;
    if (rc == 0 && total > ONNX_MAX_BYTES)
        rc = cf_seterr("error: %s: the model would take %zu bytes, past the 2 GiB that one ONNX file can hold",
                       o->path, total);
    cf_file *f = rc == 0 ? cf_file_create(o->path) : NULL;
    if (rc == 0 && !f) rc = -1;
    if (rc == 0) {
        FILE *fp = cf_file_stream(f);
        int bad = put(fp, &top) || put(fp, &o->nodes) || put(fp, &head) || put(fp, &o->consts);
        for (int k = 0; k < m->nnodes && !bad; k++) {
            const cf_node *n = m->nodes[k];
            if (!o->live[k] || !(n->op == CF_OP_PARAM || (n->op == CF_OP_STATE && !n->batched))) continue;
            size_t count = cf_shape_count(n->shape);
            const int8_t *q8 = leaf_int8(o, n);
            leaf_header(&h, n, q8 != NULL);
            cf_pb_clear(&head);   /* reused for the initializer's tag and length */
            cf_pb_len_prefix(&head, GRAPH_INITIALIZER, h.len + count * (q8 ? 1 : 4));
            bad = h.failed || head.failed || put(fp, &head) || put(fp, &h) ||
                  (q8 ? fwrite(q8, 1, count, fp) != count : cf_write_floats_le(fp, leaf_data(o, n), count) != 0);
        }
        if (!bad) bad = put(fp, io) || put(fp, &tail);
        if (bad) {
            int e = errno;
            cf_file_abort(f);
            rc = cf_seterr("error: %s: writing failed: %s", o->path, strerror(e ? e : EIO));
        } else {
            rc = cf_file_commit(f);
        }
    }
    cf_pb_free(&head);
    cf_pb_free(&top);
    cf_pb_free(&tail);
    cf_pb_free(&opset);
    cf_pb_free(&h);
    return rc;
}

int cf_model_export_onnx(cf_model *m, const char *path)
{
    if (!m) return cf_seterr("error: cf_model_export_onnx: no model");
    if (!path || !*path) return cf_seterr("error: cf_model_export_onnx: no path given");
    if (cf_model_infer_shapes(m)) return -1;
    if (!m->sealed)
        return cf_seterr("error: %s: the model's parameters have no values yet: load them (cf_model_load_params) "
                         "or initialise them (cf_model_init_params) before writing it as ONNX",
                         path);
    if (m->noutputs < 1) return cf_seterr("error: %s: the model has no output to write as ONNX", path);
    ox o = {.m = m, .path = path};
    if (!batch_source(&o)) return cf_seterr("error: %s: the model has no input to write as ONNX", path);
    cf_pb io = {0};
    int rc = build(&o, &io);
    if (rc == 0) rc = write_model(&o, &io);
    cf_pb_free(&io);
    cf_pb_free(&o.nodes);
    cf_pb_free(&o.consts);
    cf_pb_free(&o.node);
    cf_pb_free(&o.attr);
    cf_pb_free(&o.tensor);
    free(o.val);
    free(o.claim);
    cf_analysis_free(&o.an);
    cf_graph_free(o.g);
    free(o.i64);
    free(o.defined);
    cf_arena_free(&o.arena);
    return rc;
}
