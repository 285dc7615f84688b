/* test_torch_io.c - PyTorch weights in and out (cf_model_import_torch,
 * cf_model_export_torch): a state_dict as PyTorch wrote it gives PyTorch's outputs;
 * export writes it back; and each kind of bad file is refused with an error naming
 * the tensor, leaving the model as it was. (With PyTorch installed, tests/interop/
 * checks whole models both ways against PyTorch itself.) */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cflux.h"
#include "core/safetensors.h"
#include "test.h"
#include "tmpdir.h"

/* the model of tests/golden/gen_torch_state.py, in the notation */
static const char *cnn_src =
    "model = Chain(Input(1, 4, 4), Conv2D(2, 3), BatchNorm(), relu, flatten, Affine(3))\n";

static const char *mlp_src = "model = Chain(Input(4), Affine(3), relu, Affine(2), softmax)\n";

static cf_model *parse(const char *src)
{
    cf_model *m = cf_model_parse(src, "m.flux");
    if (!m) fprintf(stderr, "%s\n", cf_last_error());
    return m;
}

/* Output 0 of m on n inputs x. */
static void run(cf_model *m, const float *x, int n, float *y, size_t *count)
{
    cf_exec *e = cf_bind(m, n, 0);
    CHECK(e != NULL);
    if (!e) return;
    cf_exec_set_input(e, 0, x);
    CHECK(cf_forward(e, 0) == 0);
    const float *out = cf_exec_output(e, 0, count);
    memcpy(y, out, *count * sizeof *y);
    cf_exec_free(e);
}

TEST(pytorch_state_dict_gives_pytorchs_outputs)
{
    cf_model *m = parse(cnn_src);
    cf_st_file *want = cf_st_read("tests/golden/torch_state_expect.safetensors");
    CHECK(m && want);
    if (!m || !want) goto out;
    char notes[512] = "";
    FILE *nf = fmemopen(notes, sizeof notes, "w");
    int rc = cf_model_import_torch(m, "tests/golden/torch_state.safetensors", NULL, nf);
    fclose(nf);
    CHECK(rc == 0);
    if (rc) {
        fprintf(stderr, "%s\n", cf_last_error());
        goto out;
    }
    CHECK_HAS(notes, "ignored 1.num_batches_tracked");
    /* the layouts: Linear's weight (3, 8) is W (8, 3) transposed; bias (2) is b (2, 1, 1) */
    const cf_st_tensor *w = cf_st_find(want, "expect.4.weight"), *cb = cf_st_find(want, "expect.0.bias");
    const float *W = cf_model_param_data(m, cf_model_param_index(m, "5.W"));
    const float *b = cf_model_param_data(m, cf_model_param_index(m, "1.b"));
    CHECK(W[1 * 3 + 2] == w->data[2 * 8 + 1] && b[1] == cb->data[1]);
    const float *var = cf_model_state_data(m, cf_model_state_index(m, "2.var"));
    CHECK(var[0] == cf_st_find(want, "expect.1.running_var")->data[0]);
    /* PyTorch's outputs, in evaluation mode */
    const cf_st_tensor *x = cf_st_find(want, "expect.input"), *y = cf_st_find(want, "expect.output");
    float got[64];
    size_t count = 0;
    run(m, x->data, 5, got, &count);
    CHECK(count == y->count);
    double worst = 0;
    for (size_t i = 0; i < count && i < y->count; i++) worst = fmax(worst, fabs(got[i] - y->data[i]));
    CHECK(worst <= 1e-5);
    /* out again: the same tensors, names, shapes and values (the counter as 0) */
    CHECK(cf_model_export_torch(m, tmp("back.safetensors"), NULL) == 0);
    cf_st_file *back = cf_st_read_ex(tmp("back.safetensors"), CF_ST_OTHER_DTYPES);
    CHECK(back && cf_st_count(back) == 9);
    for (int i = 0; back && i < cf_st_count(want); i++) {
        const cf_st_tensor *e = cf_st_get(want, i);
        if (!strcmp(e->name, "expect.input") || !strcmp(e->name, "expect.output")) continue;
        const cf_st_tensor *t = cf_st_find(back, e->name + strlen("expect."));
        int same = t && t->rank == e->rank && t->count == e->count;
        for (int d = 0; same && d < t->rank; d++) same = t->shape[d] == e->shape[d];
        for (size_t k = 0; same && k < t->count; k++) same = t->data[k] == e->data[k];
        if (!same) fprintf(stderr, "  %s: not written back as read\n", e->name);
        CHECK(same);
    }
    const cf_st_tensor *n = back ? cf_st_find(back, "1.num_batches_tracked") : NULL;
    CHECK(n && !strcmp(n->dtype, "I64") && n->rank == 0);
    cf_st_free(back);
out:
    cf_st_free(want);
    cf_model_free(m);
}

/* A file of PyTorch's Sequential(Linear(4, 3), ReLU, Linear(3, 2), Softmax), with
 * what is given in place of the defaults. */
static void write_mlp(const char *path, const char *drop, const cf_st_tensor *extra, const char *dtype0,
                      int wrong_shape)
{
    static float v[64];
    for (int i = 0; i < 64; i++) v[i] = (float)(i % 7) * 0.25f - 0.5f;
    cf_st_tensor t[6] = {
        {.name = "0.weight", .rank = 2, .shape = {3, 4}, .count = 12, .data = v, .dtype = dtype0},
        {.name = "0.bias", .rank = 1, .shape = {3}, .count = 3, .data = v + 12},
        {.name = "2.weight", .rank = 2, .shape = {2, 3}, .count = 6, .data = v + 16},
        {.name = "2.bias", .rank = 1, .shape = {2}, .count = 2, .data = v + 24},
    };
    if (wrong_shape) t[2] = (cf_st_tensor){.name = "2.weight", .rank = 2, .shape = {3, 2}, .count = 6, .data = v + 16};
    int n = 4;
    for (int i = 0; drop && i < n; i++)
        if (!strcmp(t[i].name, drop)) t[i] = t[--n];
    if (extra) t[n++] = *extra;
    CHECK(cf_st_write(path, n, t, 0, NULL, NULL) == 0);
}

TEST(sequential_weights_in_order_and_back)
{
    cf_model *m = parse(mlp_src);
    if (!m) return;
    write_mlp(tmp("mlp.safetensors"), NULL, NULL, NULL, 0);
    CHECK(cf_model_import_torch(m, tmp("mlp.safetensors"), NULL, NULL) == 0);
    const float *W = cf_model_param_data(m, cf_model_param_index(m, "1.W"));   /* (4, 3) */
    CHECK(W[2 * 3 + 1] == (float)((1 * 4 + 2) % 7) * 0.25f - 0.5f);            /* weight[1][2] */
    CHECK(cf_model_export_torch(m, tmp("out.safetensors"), NULL) == 0);
    cf_st_file *a = cf_st_read(tmp("mlp.safetensors")), *b = cf_st_read(tmp("out.safetensors"));
    CHECK(a && b && cf_st_count(b) == 4);
    for (int i = 0; a && b && i < cf_st_count(a); i++) {
        const cf_st_tensor *x = cf_st_get(a, i), *y = cf_st_find(b, x->name);
        CHECK(y && y->rank == x->rank && y->count == x->count && !memcmp(x->data, y->data, x->count * 4));
    }
    CHECK(b && !strcmp(cf_st_meta(b, "format"), "pt"));
    cf_st_free(a);
    cf_st_free(b);
    cf_model_free(m);
}

/* Import into a model whose weights are all 7; check it fails with the messages and
 * leaves every weight at 7. */
static void refused(const char *src, const char *path, const char *map, const char *msg1, const char *msg2)
{
    cf_model *m = parse(src);
    if (!m) return;
    CHECK(cf_model_init_params(m) == 0);
    for (int i = 0; i < cf_model_param_count(m); i++) {
        float *d = cf_model_param_data(m, i);
        for (size_t k = 0; k < cf_shape_count(cf_model_param_shape(m, i)); k++) d[k] = 7;
    }
    CHECK(cf_model_import_torch(m, path, map, NULL) == -1);
    CHECK_HAS(cf_last_error(), msg1);
    if (msg2) CHECK_HAS(cf_last_error(), msg2);
    int kept = 1;
    for (int i = 0; i < cf_model_param_count(m); i++) {
        const float *d = cf_model_param_data(m, i);
        for (size_t k = 0; k < cf_shape_count(cf_model_param_shape(m, i)); k++) kept &= d[k] == 7;
    }
    CHECK(kept);
    cf_model_free(m);
}

TEST(bad_files_are_refused_naming_the_tensor)
{
    float one = 1;
    /* a missing tensor */
    write_mlp(tmp("missing.safetensors"), "2.bias", NULL, NULL, 0);
    refused(mlp_src, tmp("missing.safetensors"), NULL, "tensor '2.bias' is missing", "Affine (at m.flux:1:42)");
    /* an extra tensor: in a module, and a module of its own */
    cf_st_tensor x1 = {.name = "2.scale", .rank = 1, .shape = {1}, .count = 1, .data = &one};
    write_mlp(tmp("extra.safetensors"), NULL, &x1, NULL, 0);
    refused(mlp_src, tmp("extra.safetensors"), NULL, "tensor '2.scale' (1) matches nothing in the model",
            "which takes weight, bias");
    cf_st_tensor x2 = {.name = "4.weight", .rank = 1, .shape = {1}, .count = 1, .data = &one};
    write_mlp(tmp("extra2.safetensors"), NULL, &x2, NULL, 0);
    refused(mlp_src, tmp("extra2.safetensors"), NULL, "1 tensor matches nothing in the model: 4.weight", NULL);
    /* a wrong dtype */
    write_mlp(tmp("dtype.safetensors"), NULL, NULL, "I64", 0);
    refused(mlp_src, tmp("dtype.safetensors"), NULL, "tensor '0.weight' is I64", NULL);
    /* a wrong shape */
    write_mlp(tmp("shape.safetensors"), NULL, NULL, NULL, 1);
    refused(mlp_src, tmp("shape.safetensors"), NULL, "tensor '2.weight' is (3, 2), but the model's Affine",
            "needs (2, 3) for its W (3, 2), transposed");
    /* another architecture: the CNN's weights for the MLP, and the MLP's for the CNN */
    refused(mlp_src, "tests/golden/torch_state.safetensors", NULL,
            "holds the weights of another architecture: 3 modules with weights (0, 1, 4) for the model's 2 layers "
            "(Affine, Affine)", "tensor '0.weight' is (2, 1, 3, 3), but the model's Affine");
    refused(cnn_src, tmp("missing.safetensors"), NULL, "tensor '0.weight' is (3, 4), but the model's Conv2D", NULL);
    /* not a file of tensors */
    refused(mlp_src, tmp("nothing-here.safetensors"), NULL, "nothing-here.safetensors", NULL);
}

/* Modules named, not numbered: the shapes decide, and --map settles what they cannot. */
TEST(named_modules_by_shape_or_map)
{
    static float v[64];
    for (int i = 0; i < 64; i++) v[i] = (float)i;
    cf_st_tensor t[4] = {
        {.name = "out.weight", .rank = 2, .shape = {2, 3}, .count = 6, .data = v},
        {.name = "out.bias", .rank = 1, .shape = {2}, .count = 2, .data = v + 6},
        {.name = "hidden.weight", .rank = 2, .shape = {3, 4}, .count = 12, .data = v + 8},
        {.name = "hidden.bias", .rank = 1, .shape = {3}, .count = 3, .data = v + 20},
    };
    CHECK(cf_st_write(tmp("named.safetensors"), 4, t, 0, NULL, NULL) == 0);
    cf_model *m = parse(mlp_src);
    CHECK(m && cf_model_import_torch(m, tmp("named.safetensors"), NULL, NULL) == 0);
    if (!m) return;
    CHECK(cf_model_param_data(m, cf_model_param_index(m, "3.b"))[1] == 7);
    /* the names stay with the model, through a parameter file, for export */
    CHECK(cf_model_save_params(m, tmp("named.params")) == 0);
    cf_model_free(m);
    m = parse(mlp_src);
    CHECK(m && cf_model_load_params(m, tmp("named.params")) == 0);
    CHECK(m && cf_model_export_torch(m, tmp("named-back.safetensors"), NULL) == 0);
    cf_st_file *f = cf_st_read(tmp("named-back.safetensors"));
    CHECK(f && cf_st_find(f, "hidden.weight") && cf_st_find(f, "out.bias") && cf_st_count(f) == 4);
    cf_st_free(f);
    cf_model_free(m);

    /* two layers of one shape: ambiguous until a map says which */
    const char *twin = "model = Chain(Input(3), Affine(3), relu, Affine(3))\n";
    cf_st_tensor u[4] = {
        {.name = "a.weight", .rank = 2, .shape = {3, 3}, .count = 9, .data = v},
        {.name = "a.bias", .rank = 1, .shape = {3}, .count = 3, .data = v + 9},
        {.name = "b.weight", .rank = 2, .shape = {3, 3}, .count = 9, .data = v + 12},
        {.name = "b.bias", .rank = 1, .shape = {3}, .count = 3, .data = v + 21},
    };
    CHECK(cf_st_write(tmp("twin.safetensors"), 4, u, 0, NULL, NULL) == 0);
    refused(twin, tmp("twin.safetensors"), NULL, "modules 'a', 'b' all fit layer '1'", "--map");
    FILE *mf = fopen(tmp("twin.map"), "w");
    fprintf(mf, "# PyTorch  cflux\nb 1\na.weight 3.W\n");
    fclose(mf);
    m = parse(twin);
    CHECK(m && cf_model_import_torch(m, tmp("twin.safetensors"), tmp("twin.map"), NULL) == 0);
    if (m) CHECK(cf_model_param_data(m, cf_model_param_index(m, "1.b"))[0] == 21);
    cf_model_free(m);
    /* two layers of one shape whose modules have the layers' own names: by name */
    const char *named = "net Two(in) {\n  first = Affine(in, in)\n  second = Affine(in, in)\n"
                        "  x -> second(relu(first(x)))\n}\nmodel = Chain(Input(3), Two())\n";
    cf_st_tensor w[4] = {
        {.name = "second.weight", .rank = 2, .shape = {3, 3}, .count = 9, .data = v},
        {.name = "second.bias", .rank = 1, .shape = {3}, .count = 3, .data = v + 9},
        {.name = "first.weight", .rank = 2, .shape = {3, 3}, .count = 9, .data = v + 12},
        {.name = "first.bias", .rank = 1, .shape = {3}, .count = 3, .data = v + 21},
    };
    CHECK(cf_st_write(tmp("byname.safetensors"), 4, w, 0, NULL, NULL) == 0);
    m = parse(named);
    CHECK(m && cf_model_import_torch(m, tmp("byname.safetensors"), NULL, NULL) == 0);
    if (m) CHECK(cf_model_param_data(m, cf_model_param_index(m, "1.first.b"))[0] == 21);
    if (m) CHECK(cf_model_param_data(m, cf_model_param_index(m, "1.second.b"))[0] == 9);
    cf_model_free(m);
    /* map lines that name what is not there */
    mf = fopen(tmp("bad.map"), "w");
    fprintf(mf, "b 1\nc 3\n");
    fclose(mf);
    refused(twin, tmp("twin.safetensors"), tmp("bad.map"), "bad.map:2: 'c' is neither a tensor nor a module", NULL);
    mf = fopen(tmp("bad2.map"), "w");
    fprintf(mf, "a.bias 3.W\n");
    fclose(mf);
    refused(twin, tmp("twin.safetensors"), tmp("bad2.map"), "bad2.map:1: PyTorch keeps 3.W as weight, not bias", NULL);
}

/* The map is read as text, line by line whatever a line's length: a long comment is
 * a comment (cut at a buffer's end, its tail once read as a mapping), a NUL byte is
 * refused at its line (it once dropped the line's rest), and a directory is no map
 * (it once read as an empty one). */
TEST(map_lines_whole_and_text_only)
{
    const char *twin = "model = Chain(Input(3), Affine(3), relu, Affine(3))\n";   /* twin.safetensors, above */
    FILE *mf = fopen(tmp("long.map"), "w");
    fputc('#', mf);
    for (int i = 0; i < 1086; i++) fputc('x', mf);   /* the old buffer's end: " a 1" began a line of its own */
    fprintf(mf, " a 1\n");
    fclose(mf);
    refused(twin, tmp("twin.safetensors"), tmp("long.map"), "modules 'a', 'b' all fit layer '1'", NULL);
    mf = fopen(tmp("long2.map"), "w");
    fprintf(mf, "b");
    for (int i = 0; i < 5000; i++) fputc(' ', mf);
    fprintf(mf, "1 # and a long comment after it%2000s\n", "");
    fclose(mf);
    cf_model *m = parse(twin);
    CHECK(m && cf_model_import_torch(m, tmp("twin.safetensors"), tmp("long2.map"), NULL) == 0);
    if (m) CHECK(cf_model_param_data(m, cf_model_param_index(m, "1.b"))[0] == 21);
    cf_model_free(m);
    mf = fopen(tmp("longname.map"), "w");
    fprintf(mf, "b 1\n");
    for (int i = 0; i < 600; i++) fputc('a', mf);   /* once cut at 511 characters */
    fprintf(mf, " 3\n");
    fclose(mf);
    refused(twin, tmp("twin.safetensors"), tmp("longname.map"), "longname.map:2: the name '", "is 600 characters long");
    mf = fopen(tmp("nul.map"), "w");
    fwrite("b 1\0 3 x\n", 1, 10, mf);
    fclose(mf);
    refused(twin, tmp("twin.safetensors"), tmp("nul.map"), "nul.map:1: the map holds a NUL byte", NULL);
    refused(twin, tmp("twin.safetensors"), tmp(""), "cannot read the map: it is a directory", NULL);
    m = parse(twin);
    CHECK(m && cf_model_init_params(m) == 0 && cf_model_export_torch(m, tmp("out.safetensors"), tmp("")) == -1);
    CHECK_HAS(cf_last_error(), "it is a directory");
    cf_model_free(m);
}

/* A user's net declares its own layout; one without torch(...) is read by its own
 * names; a declaration that names no parameter is a located error. */
TEST(user_nets_declare_their_layout)
{
    const char *src = "net Scale(in) {\n"
                      "  s = param(1, in, init = ones)\n"
                      "  torch(s = gamma)\n"
                      "  x -> x .* s\n"
                      "}\n"
                      "net Shift(in) {\n"
                      "  t = param(1, in)\n"
                      "  x -> x .+ t\n"
                      "}\n"
                      "model = Chain(Input(2), Scale(), Shift())\n";
    float g[2] = {2, 3}, s[2] = {5, 6};
    cf_st_tensor t[2] = {{.name = "0.gamma", .rank = 1, .shape = {2}, .count = 2, .data = g},
                         {.name = "1.t", .rank = 2, .shape = {1, 2}, .count = 2, .data = s}};
    CHECK(cf_st_write(tmp("user.safetensors"), 2, t, 0, NULL, NULL) == 0);
    cf_model *m = parse(src);
    CHECK(m && cf_model_import_torch(m, tmp("user.safetensors"), NULL, NULL) == 0);
    float x[2] = {1, 1}, y[2];
    size_t count;
    if (m) run(m, x, 1, y, &count);
    CHECK(y[0] == 7 && y[1] == 9);
    cf_model_free(m);
    const char *bad = "net S(in) {\n  s = param(1, in)\n  torch(q = gamma)\n  x -> x .* s\n}\nmodel = S(2)\n";
    CHECK(cf_model_parse(bad, "bad.flux") == NULL);
    CHECK_HAS(cf_last_error(), "error: torch(...): 'q' is not a parameter or statistic of S\n  in S at bad.flux:3:9");
    const char *short_ = "net S(in) {\n  s = param(1, in)\n  u = param(1, in)\n  torch(s = a)\n  x -> x .* s .* u\n}\n"
                         "model = S(2)\n";
    CHECK(cf_model_parse(short_, "short.flux") == NULL);
    CHECK_HAS(cf_last_error(),
              "error: torch(...) does not say which PyTorch tensor holds 'u' of S\n  in S at short.flux:4:3");
    const char *form = "net S(in) {\n  s = param(1, in)\n  torch(s = a * b)\n  x -> x .* s\n}\nmodel = S(2)\n";
    CHECK(cf_model_parse(form, "form.flux") == NULL);
    CHECK_HAS(cf_last_error(), "error: torch(...): s = ...: give a tensor of the PyTorch module: name, "
                               "transpose(name) or name + name\n  in S at form.flux:3:13");
}

/* A GPT out to PyTorch's names and back in, with no map: its eight LayerNorms (and
 * its other layers of one shape) find their layers by the names export gave them. */
TEST(gpt_out_and_back)
{
    const char *src = "model = Chain(Input(6), GPT(11, 8, layers = 2, heads = 2, context = 6))\n";
    cf_model *a = parse(src), *b = parse(src);
    CHECK(a && b && cf_model_init_params(a) == 0);
    if (!a || !b) {
        cf_model_free(a);
        cf_model_free(b);
        return;
    }
    int n = cf_model_param_count(a);
    for (int i = 0; i < n; i++) {   /* every weight its own value, so that a swap shows */
        size_t count = cf_shape_count(cf_model_param_shape(a, i));
        float *w = cf_model_param_data(a, i);
        for (size_t j = 0; j < count; j++) w[j] = (float)(i * 1000 + (int)j) * 1e-3f;
    }
    CHECK(cf_model_export_torch(a, tmp("gpt.safetensors"), NULL) == 0);
    CHECK(cf_model_import_torch(b, tmp("gpt.safetensors"), NULL, NULL) == 0);
    int same = cf_model_param_count(b) == n;
    for (int i = 0; same && i < n; i++) {
        size_t count = cf_shape_count(cf_model_param_shape(a, i));
        int j = cf_model_param_index(b, cf_model_param_name(a, i));
        same = j >= 0 && !memcmp(cf_model_param_data(a, i), cf_model_param_data(b, j), count * sizeof(float));
    }
    CHECK(same);
    cf_model_free(a);
    cf_model_free(b);
}

TEST(export_needs_weights)
{
    cf_model *m = parse(mlp_src);
    CHECK(m && cf_model_export_torch(m, tmp("none.safetensors"), NULL) == -1);
    CHECK_HAS(cf_last_error(), "no weights yet");
    cf_model_free(m);
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* 40,000 tiny tensors, each a module of its own, numbered ("7.weight") or named
 * ("m7.weight"): grouped in n log n, each refused as it should be in well under 2 s
 * (before: a linear search per tensor and a buffer of 40,000 indices per module,
 * 10.5 s and 6.4 GB of address space for each file). */
TEST(many_tensors_cost_little)
{
    enum { N = 40000 };
    static cf_st_tensor t[N];
    static char names[N][24];
    static float one = 1;
    const char *how[2] = {"%d.weight", "m%d.weight"};
    const char *want[2] = {"holds the weights of another architecture: 40000 modules with weights (0, 1, 2",
                           "tensor 'm0.bias' is missing: module 'm0' is the model's Affine"};
    for (int k = 0; k < 2; k++) {
        for (int i = 0; i < N; i++) {
            snprintf(names[i], sizeof names[i], how[k], i);
            t[i] = (cf_st_tensor){.name = names[i], .rank = 1, .shape = {1}, .count = 1, .data = &one};
        }
        CHECK(cf_st_write(tmp("many.safetensors"), N, t, 0, NULL, NULL) == 0);
        cf_model *m = parse(mlp_src);
        if (!m) return;
        double t0 = now_s();
        CHECK(cf_model_import_torch(m, tmp("many.safetensors"), NULL, NULL) == -1);
        double secs = now_s() - t0;
        CHECK_HAS(cf_last_error(), want[k]);
        if (secs >= TEST_CHEAP_SECONDS) fprintf(stderr, "  %s: %.2f s\n", how[k], secs);
        CHECK(secs < TEST_CHEAP_SECONDS);
        cf_model_free(m);
    }
}

int main(void)
{
    if (tmpdir_make("torch")) return 1;
    RUN(pytorch_state_dict_gives_pytorchs_outputs);
    RUN(sequential_weights_in_order_and_back);
    RUN(bad_files_are_refused_naming_the_tensor);
    RUN(named_modules_by_shape_or_map);
    RUN(map_lines_whole_and_text_only);
    RUN(user_nets_declare_their_layout);
    RUN(gpt_out_and_back);
    RUN(export_needs_weights);
    RUN(many_tensors_cost_little);
    tmpdir_remove();
    return test_summary("torch_io");
}
