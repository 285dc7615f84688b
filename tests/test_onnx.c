/* test_onnx.c - cf_model_export_onnx: what it refuses (an unsealed model, a loss, an
 * op with no ONNX form, a path it cannot write), leaving no file; and what it writes,
 * read back with a small protobuf reader of its own: ModelProto's IR version 8, opset
 * 17 and producer, the graph's nodes, initializers (named as in cflux, holding the
 * parameters' bytes), inputs and outputs with the symbolic batch dimension, a
 * recurrent model written step by step with its carried state made batch-sized, and a
 * convolution's and a pooling's attributes in ONNX's order of axes.
 * (tests/interop/onnx_check.py runs the files in onnxruntime against cflux.) */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cflux.h"
#include "ops/op.h"
#include "test.h"
#include "tmpdir.h"

/* ---- a protobuf reader, just enough to walk ONNX's messages ---- */

typedef struct {
    const unsigned char *p, *end;
} msg;

typedef struct {
    int field, wire;
    uint64_t v;       /* varint and fixed32 values */
    msg sub;          /* length-delimited content */
} fld;

static int varint(msg *m, uint64_t *v)
{
    *v = 0;
    for (int s = 0; s < 64 && m->p < m->end; s += 7) {
        unsigned char b = *m->p++;
        *v |= (uint64_t)(b & 0x7f) << s;
        if (!(b & 0x80)) return 0;
    }
    return -1;
}

/* The next field of m: 1, 0 at the end, -1 when malformed. */
static int next(msg *m, fld *f)
{
    uint64_t tag;
    if (m->p == m->end) return 0;
    if (varint(m, &tag) || tag >> 3 == 0) return -1;
    f->field = (int)(tag >> 3);
    f->wire = (int)(tag & 7);
    switch (f->wire) {
    case 0: return varint(m, &f->v) ? -1 : 1;
    case 5:
        if (m->end - m->p < 4) return -1;
        f->v = m->p[0] | (uint32_t)m->p[1] << 8 | (uint32_t)m->p[2] << 16 | (uint32_t)m->p[3] << 24;
        m->p += 4;
        return 1;
    case 2: {
        uint64_t n;
        if (varint(m, &n) || n > (uint64_t)(m->end - m->p)) return -1;
        f->sub = (msg){m->p, m->p + n};
        m->p += n;
        return 1;
    }
    default: return -1;   /* ONNX uses no other wire type here */
    }
}

/* Does every field of m parse, to its end? */
static int well_formed(msg m)
{
    fld f;
    int r;
    while ((r = next(&m, &f)) == 1) {}
    return r == 0;
}

/* The first field `field` of m (0 if none). */
static int find(msg m, int field, fld *out)
{
    fld f;
    while (next(&m, &f) == 1)
        if (f.field == field) {
            *out = f;
            return 1;
        }
    return 0;
}

/* Is the length-delimited field equal to the string s? */
static int is_str(const fld *f, const char *s)
{
    size_t n = strlen(s);
    return f->wire == 2 && (size_t)(f->sub.end - f->sub.p) == n && memcmp(f->sub.p, s, n) == 0;
}

/* The string at field `field` of m into buf ("" if none). */
static const char *str_at(msg m, int field, char *buf, size_t size)
{
    fld f;
    buf[0] = 0;
    if (find(m, field, &f) && f.wire == 2) {
        size_t n = (size_t)(f.sub.end - f.sub.p);
        if (n >= size) n = size - 1;
        memcpy(buf, f.sub.p, n);
        buf[n] = 0;
    }
    return buf;
}

static unsigned char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *p = malloc(len > 0 ? (size_t)len : 1);
    *n = p ? fread(p, 1, (size_t)len, f) : 0;
    fclose(f);
    return p;
}

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* ---- what a written file holds ---- */

typedef struct {
    unsigned char *data;
    msg model, graph;
    int ok;
} onnx_file;

static onnx_file open_onnx(const char *path)
{
    onnx_file o = {0};
    size_t n;
    o.data = slurp(path, &n);
    if (!o.data) return o;
    o.model = (msg){o.data, o.data + n};
    fld g;
    o.ok = well_formed(o.model) && find(o.model, 7, &g) && g.wire == 2 && well_formed(g.sub);
    if (o.ok) o.graph = g.sub;
    return o;
}

/* Some node of the graph has op type `op` (and, if out is not NULL, output `out`). */
static int has_node(const onnx_file *o, const char *op, const char *out)
{
    msg g = o->graph;
    fld f, k;
    while (next(&g, &f) == 1) {
        if (f.field != 1) continue;
        int op_ok = 0, out_ok = out == NULL;
        msg n = f.sub;
        while (next(&n, &k) == 1) {
            if (k.field == 4 && is_str(&k, op)) op_ok = 1;
            if (k.field == 2 && out && is_str(&k, out)) out_ok = 1;
        }
        if (op_ok && out_ok) return 1;
    }
    return 0;
}

/* The initializer named `name` (a TensorProto), if there is one. */
static int initializer(const onnx_file *o, const char *name, msg *t)
{
    msg g = o->graph;
    fld f, k;
    while (next(&g, &f) == 1)
        if (f.field == 5 && find(f.sub, 8, &k) && is_str(&k, name)) {
            *t = f.sub;
            return 1;
        }
    return 0;
}

/* The shape of graph input (field 11) or output (12) `name`: dims[i] its dim_value, or
 * -1 for dim_param "batch"; the rank, or -1 if there is no such value. */
static int io_shape(const onnx_file *o, int field, const char *name, long dims[8])
{
    msg g = o->graph;
    fld f, k, t, tt, shape;
    while (next(&g, &f) == 1) {
        if (f.field != field || !find(f.sub, 1, &k) || !is_str(&k, name)) continue;
        if (!find(f.sub, 2, &t) || !find(t.sub, 1, &tt) || !find(tt.sub, 2, &shape)) return -1;
        fld et;
        if (!find(tt.sub, 1, &et) || et.v != 1) return -1;   /* float */
        int rank = 0;
        msg s = shape.sub;
        while (next(&s, &k) == 1 && rank < 8) {
            fld d;
            if (k.field != 1) continue;
            if (find(k.sub, 1, &d)) dims[rank++] = (long)d.v;
            else if (find(k.sub, 2, &d) && is_str(&d, "batch")) dims[rank++] = -1;
            else dims[rank++] = -2;
        }
        return rank;
    }
    return -1;
}

/* The integers of attribute `name` of the first node of op type `op` (AttributeProto:
 * name 1, i 3, ints 8, unpacked or packed) into v; how many, or -1 if there is no such
 * attribute. */
static int node_ints(const onnx_file *o, const char *op, const char *name, long *v, int max)
{
    msg g = o->graph;
    fld f, k, a;
    while (next(&g, &f) == 1) {
        if (f.field != 1 || !find(f.sub, 4, &k) || !is_str(&k, op)) continue;
        for (msg n = f.sub; next(&n, &k) == 1;) {
            if (k.field != 5 || !find(k.sub, 1, &a) || !is_str(&a, name)) continue;
            int count = 0;
            for (msg at = k.sub; next(&at, &a) == 1;) {
                if ((a.field == 8 || a.field == 3) && a.wire == 0 && count < max) v[count++] = (long)(int64_t)a.v;
                if (a.field == 8 && a.wire == 2) {
                    uint64_t x;
                    while (a.sub.p < a.sub.end && varint(&a.sub, &x) == 0 && count < max) v[count++] = (long)(int64_t)x;
                }
            }
            return count;
        }
        return -1;
    }
    return -1;
}

/* ---- the tests ---- */

static const char *err(void) { return cf_last_error(); }

TEST(refuses_an_unsealed_model)
{
    cf_model *m = cf_model_parse("model = Chain(Input(4), Affine(3), softmax)", "m.flux");
    CHECK(m != NULL);
    if (!m) return;
    const char *p = tmp("unsealed.onnx");
    CHECK(cf_model_export_onnx(m, p) == -1);
    CHECK(strncmp(err(), "error: ", 7) == 0);
    CHECK_HAS(err(), "no values yet");
    CHECK(!exists(p));
    CHECK(cf_model_export_onnx(NULL, p) == -1);
    CHECK(cf_model_export_onnx(m, NULL) == -1);
    cf_model_free(m);
}

/* A loss among the outputs: refused with its name and its line here; an old file at
 * the path stays as it was. */
TEST(refuses_a_loss)
{
    cf_model *m = cf_model_new();
    cf_node *x = cf_input(m, "x", CF_SHAPE(4));
    cf_node *t = cf_input(m, "t", CF_SHAPE(3));
    cf_node *W = cf_param(m, "W", CF_SHAPE(4, 3), CF_GLOROT);
    cf_node *y = cf_matmul(m, x, W);
    int line = __LINE__ + 1;
    cf_node *loss = cf_mse(m, y, t);
    cf_output(m, y);
    cf_output(m, loss);
    CHECK(cf_model_init_params(m) == 0);
    const char *p = tmp("loss.onnx");
    FILE *f = fopen(p, "w");
    if (f) {
        fputs("old", f);
        fclose(f);
    }
    CHECK(cf_model_export_onnx(m, p) == -1);
    CHECK(strncmp(err(), "error: ", 7) == 0);
    CHECK_HAS(err(), "mse (mean squared error)");
    char at[64];
    snprintf(at, sizeof at, "test_onnx.c:%d", line);
    CHECK_HAS(err(), at);
    CHECK_HAS(err(), "is a loss");
    size_t n;
    unsigned char *old = slurp(p, &n);
    CHECK(old && n == 3 && memcmp(old, "old", 3) == 0);
    free(old);
    cf_model_free(m);
}

/* An op whose row says no ONNX operator (cf_opdef.onnx) and that has no writer in
 * onnx.c: refused, naming the op and its line here, not written as something else.
 * Planted: relu's row without its "Relu". */
TEST(refuses_an_op_without_an_onnx_form)
{
    const cf_opdef *relu = cf_ops[CF_OP_RELU];
    cf_opdef bare = *relu;
    bare.onnx = NULL;
    cf_ops[CF_OP_RELU] = &bare;
    cf_model *m = cf_model_new();
    cf_node *x = cf_input(m, "x", CF_SHAPE(4));
    cf_node *W = cf_param(m, "W", CF_SHAPE(4, 3), CF_GLOROT);
    int line = __LINE__ + 1;
    cf_node *y = cf_relu(m, cf_matmul(m, x, W));
    cf_output(m, y);
    CHECK(cf_model_init_params(m) == 0);
    CHECK(cf_model_export_onnx(m, tmp("bare.onnx")) == -1);
    CHECK(strncmp(err(), "error: ", 7) == 0);
    CHECK_HAS(err(), "cannot write relu (relu)");
    char at[64];
    snprintf(at, sizeof at, "test_onnx.c:%d", line);
    CHECK_HAS(err(), at);
    CHECK_HAS(err(), "ONNX has no operator that computes it");
    struct stat st;
    CHECK(stat(tmp("bare.onnx"), &st) != 0);
    cf_ops[CF_OP_RELU] = relu;
    cf_model_free(m);
}

TEST(refuses_a_path_it_cannot_write)
{
    cf_model *m = cf_model_parse("model = Chain(Input(4), Affine(3), softmax)", "m.flux");
    CHECK(m && cf_model_init_params(m) == 0);
    if (!m) return;
    CHECK(cf_model_export_onnx(m, tmp("no/such/dir/m.onnx")) == -1);
    CHECK(strncmp(err(), "error: ", 7) == 0);
    CHECK(cf_model_export_onnx(m, dir) == -1);   /* a directory */
    cf_model_free(m);
}

/* A small CNN with batch normalisation and dropout: the ModelProto's fields, the nodes,
 * the initializers' names and bytes, the inputs' and outputs' shapes. */
TEST(writes_a_model_proto)
{
    cf_model *m = cf_model_parse("model = Chain(Input(2, 6, 6), Conv2D(3, 3, pad = 1), BatchNorm(), relu,\n"
                                 "  MaxPool(2), flatten, Dropout(0.5), Affine(4), softmax)",
                                 "cnn.flux");
    CHECK(m != NULL);
    if (!m) return;
    CHECK(cf_model_init_params(m) == 0);
    const char *p = tmp("cnn.onnx");
    CHECK(cf_model_export_onnx(m, p) == 0);
    onnx_file o = open_onnx(p);
    CHECK(o.ok);
    if (!o.ok) {
        free(o.data);
        cf_model_free(m);
        return;
    }
    fld f, k;
    char buf[64];
    CHECK(o.model.p[0] == 0x08);   /* field 1 (ir_version), a varint, comes first */
    CHECK(find(o.model, 1, &f) && f.wire == 0 && f.v == 8);
    CHECK(find(o.model, 2, &f) && is_str(&f, "cflux"));
    CHECK(find(o.model, 8, &f) && f.wire == 2);
    CHECK(find(f.sub, 2, &k) && k.v == 17);
    CHECK(!find(f.sub, 1, &k) || is_str(&k, ""));
    CHECK(strcmp(str_at(o.graph, 2, buf, sizeof buf), "cnn") == 0);
    const char *ops[] = {"Conv", "Add", "BatchNormalization", "Relu", "MaxPool", "Reshape", "MatMul"};
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) CHECK(has_node(&o, ops[i], NULL));
    CHECK(has_node(&o, "Softmax", "y"));
    CHECK(!has_node(&o, "Dropout", NULL));
    /* every parameter and running statistic, named as in cflux, with its bytes */
    for (int i = 0; i < cf_model_param_count(m) + cf_model_state_count(m); i++) {
        int state = i >= cf_model_param_count(m), j = state ? i - cf_model_param_count(m) : i;
        const char *name = state ? cf_model_state_name(m, j) : cf_model_param_name(m, i);
        cf_shape s = state ? cf_model_state_shape(m, j) : cf_model_param_shape(m, j);
        const float *data = state ? cf_model_state_data(m, j) : cf_model_param_data(m, j);
        msg t;
        CHECK(initializer(&o, name, &t));
        if (!initializer(&o, name, &t)) continue;
        int rank = 0, dims_ok = 1;
        fld d;
        for (msg it = t; next(&it, &d) == 1;)
            if (d.field == 1) dims_ok &= rank < s.rank && (long)d.v == s.d[rank++];
        CHECK(dims_ok && rank == s.rank);
        CHECK(find(t, 2, &d) && d.v == 1);   /* FLOAT */
        size_t bytes = cf_shape_count(s) * 4;
        CHECK(find(t, 9, &d) && (size_t)(d.sub.end - d.sub.p) == bytes && memcmp(d.sub.p, data, bytes) == 0);
    }
    msg t;
    CHECK(initializer(&o, "2.mean", &t) && initializer(&o, "2.var", &t));
    long dims[8];
    CHECK(io_shape(&o, 11, "x", dims) == 4 && dims[0] == -1 && dims[1] == 2 && dims[2] == 6 && dims[3] == 6);
    CHECK(io_shape(&o, 12, "y", dims) == 2 && dims[0] == -1 && dims[1] == 4);
    free(o.data);
    cf_model_free(m);
}

/* A model that trains has a loss and its labels: neither is written. */
TEST(leaves_out_the_loss)
{
    cf_model *m = cf_model_parse("model = Chain(Input(4), Affine(3), softmax)", "m.flux");
    CHECK(m && cf_model_add_loss(m, CF_LOSS_XENT) == 0 && cf_model_init_params(m) == 0);
    if (!m) return;
    CHECK(cf_model_input_count(m) == 2);
    const char *p = tmp("trained.onnx");
    CHECK(cf_model_export_onnx(m, p) == 0);
    onnx_file o = open_onnx(p);
    CHECK(o.ok);
    long dims[8];
    CHECK(io_shape(&o, 11, "x", dims) == 2);
    CHECK(io_shape(&o, 11, "label", dims) == -1);
    CHECK(io_shape(&o, 12, "y", dims) == 2 && dims[0] == -1 && dims[1] == 3);
    free(o.data);
    cf_model_free(m);
}

/* Written step by step, with the carried states made batch-sized from the input's
 * shape; the fused lstm node is gone; the indices are cast for Gather. */
TEST(writes_a_recurrent_model)
{
    cf_model *m = cf_model_parse("model = unroll(Chain(Input(), Embedding(5, 3), LSTM(4), Affine(5), softmax), 6)",
                                 "rnn.flux");
    CHECK(m != NULL);
    if (!m) return;
    CHECK(cf_model_init_params(m) == 0);
    const char *p = tmp("rnn.onnx");
    CHECK(cf_model_export_onnx(m, p) == 0);
    onnx_file o = open_onnx(p);
    CHECK(o.ok);
    const char *ops[] = {"Shape", "ConstantOfShape", "Cast", "Gather", "Split", "Sigmoid", "Tanh", "Softmax"};
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) CHECK(has_node(&o, ops[i], NULL));
    CHECK(!has_node(&o, "LSTM", NULL));
    long dims[8];
    CHECK(io_shape(&o, 11, "x", dims) == 2 && dims[0] == -1 && dims[1] == 6);
    CHECK(io_shape(&o, 12, "y", dims) == 3 && dims[0] == -1 && dims[1] == 6 && dims[2] == 5);
    msg t;
    CHECK(initializer(&o, "1.E", &t) && initializer(&o, "2.U", &t));
    free(o.data);
    cf_model_free(m);
}

/* Several outputs are y1, y2, ...; an output that is an input, or a value that is
 * already an output, is an Identity. */
TEST(names_several_outputs)
{
    cf_model *m = cf_model_new();
    cf_node *x = cf_input(m, "x", CF_SHAPE(3));
    cf_node *r = cf_relu(m, x);
    cf_output(m, r);
    cf_output(m, x);
    cf_output(m, r);
    CHECK(cf_model_init_params(m) == 0);
    const char *p = tmp("three.onnx");
    CHECK(cf_model_export_onnx(m, p) == 0);
    onnx_file o = open_onnx(p);
    CHECK(o.ok);
    CHECK(has_node(&o, "Relu", "y1"));
    CHECK(has_node(&o, "Identity", "y2"));
    CHECK(has_node(&o, "Identity", "y3"));
    long dims[8];
    for (int i = 1; i <= 3; i++) {
        char name[8];
        snprintf(name, sizeof name, "y%d", i);
        CHECK(io_shape(&o, 12, name, dims) == 2 && dims[0] == -1 && dims[1] == 3);
    }
    free(o.data);
    cf_model_free(m);
}

/* A convolution and a pooling whose two axes differ in every setting, as only the C
 * API makes them: ONNX lists kernel_shape, strides and dilations as (h, w), and pads as
 * [h_begin, w_begin, h_end, w_end] (cflux pads both ends of an axis alike). */
TEST(conv_and_pool_attributes_per_axis)
{
    cf_model *m = cf_model_new();
    cf_node *x = cf_input(m, "x", CF_SHAPE(2, 7, 9));
    cf_node *K = cf_param(m, "K", CF_SHAPE(4, 1, 3, 2), CF_GLOROT);   /* (O, C/groups, KH, KW) */
    /* stride (1, 2), pad (2, 1), dilation (1, 2), 2 groups: (B, 4, 7 + 4 - 2 - 1 + 1, (9 + 2 - 2 - 1) / 2 + 1) */
    cf_node *c = cf_op_at(m, CF_OP_CONV2D, 2, (cf_node *const[]){x, K}, (const int[]){1, 2, 2, 1, 1, 2, 2}, 7, NULL,
                          0, __FILE__, __LINE__, 0);
    /* kernel (3, 2), stride (1, 2), pad (1, 0): (B, 4, 9, 2) */
    cf_node *y = cf_op_at(m, CF_OP_MAXPOOL, 1, (cf_node *const[]){c}, (const int[]){3, 2, 1, 2, 1, 0}, 6, NULL, 0,
                          __FILE__, __LINE__, 0);
    cf_output(m, y);
    CHECK(cf_model_init_params(m) == 0);
    const char *p = tmp("axes.onnx");
    CHECK(cf_model_export_onnx(m, p) == 0);
    onnx_file o = open_onnx(p);
    CHECK(o.ok);
    long v[8], dims[8];
#define INTS(op, name, ...)                                                                                 \
    do {                                                                                                    \
        const long want_[] = {__VA_ARGS__};                                                                 \
        int n_ = (int)(sizeof want_ / sizeof *want_), got_ = node_ints(&o, op, name, v, 8);                 \
        int same_ = got_ == n_;                                                                             \
        for (int i_ = 0; same_ && i_ < n_; i_++) same_ = v[i_] == want_[i_];                                \
        if (!same_) {                                                                                       \
            fprintf(stderr, "  %s %s:", op, name);                                                          \
            for (int i_ = 0; i_ < got_; i_++) fprintf(stderr, " %ld", v[i_]);                               \
            fprintf(stderr, " (%d), want %s\n", got_, #__VA_ARGS__);                                        \
        }                                                                                                   \
        CHECK(same_);                                                                                       \
    } while (0)
    INTS("Conv", "kernel_shape", 3, 2);
    INTS("Conv", "strides", 1, 2);
    INTS("Conv", "pads", 2, 1, 2, 1);
    INTS("Conv", "dilations", 1, 2);
    INTS("Conv", "group", 2);
    INTS("MaxPool", "kernel_shape", 3, 2);
    INTS("MaxPool", "strides", 1, 2);
    INTS("MaxPool", "pads", 1, 0, 1, 0);
#undef INTS
    CHECK(io_shape(&o, 12, "y", dims) == 4 && dims[0] == -1 && dims[1] == 4 && dims[2] == 9 && dims[3] == 2);
    free(o.data);
    cf_model_free(m);
}

/* An input named like an output cannot be written: ONNX names each value once. */
TEST(refuses_a_name_used_twice)
{
    cf_model *m = cf_model_new();
    cf_output(m, cf_tanh(m, cf_input(m, "y", CF_SHAPE(3))));
    CHECK(cf_model_init_params(m) == 0);
    const char *p = tmp("twice.onnx");
    CHECK(cf_model_export_onnx(m, p) == -1);
    CHECK_HAS(err(), "would be named 'y'");
    CHECK(!exists(p));
    cf_model_free(m);
}

int main(void)
{
    if (tmpdir_make("onnx")) return 1;
    RUN(refuses_an_unsealed_model);
    RUN(refuses_a_loss);
    RUN(refuses_an_op_without_an_onnx_form);
    RUN(refuses_a_path_it_cannot_write);
    RUN(writes_a_model_proto);
    RUN(leaves_out_the_loss);
    RUN(writes_a_recurrent_model);
    RUN(names_several_outputs);
    RUN(conv_and_pool_attributes_per_axis);
    RUN(refuses_a_name_used_twice);
    tmpdir_remove();
    return test_summary("onnx");
}
