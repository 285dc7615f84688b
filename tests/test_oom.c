/* test_oom.c - out of memory everywhere: each scenario (compile and bind a model,
 * train a step, build a graph in C, save and load parameters, read CSV and IDX
 * files, split, summarise) is run again and again with its first, second, third ...
 * allocation failing, until it runs through. Every failure must come back as a
 * failure with a message (never NULL/-1 with an empty or stale message, never a
 * crash or a hang), and nothing may leak. malloc and friends are replaced here, so
 * under the sanitizers (which own malloc) the test only runs each scenario once.
 *
 * The scenarios: the notation, model files, C graphs, parameter files, PyTorch and
 * ONNX files, PNG images, CSV and IDX
 * data, and the training loop (cf_trainer_new, cf_fit, checkpoints).
 * Environment: OOM_ONLY=NAME:K runs only scenario NAME with allocation K failing (in gdb: break
 * oom_failing); OOM_VERBOSE=1 prints every run. */
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
#include <zlib.h>

#include "cflux.h"
#include "core/error.h"
#include "data/png.h"
#include "test.h"
#include "tmpdir.h"

#if defined(__SANITIZE_ADDRESS__)
#define OOM_OFF 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define OOM_OFF 1
#endif
#endif

static volatile long countdown = -1;   /* allocations before the one that fails; -1: none fails */
static volatile int failed;            /* the planned failure happened */
static volatile long live;             /* blocks allocated and not freed */

#ifndef OOM_OFF
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

/* A place for a debugger's breakpoint: the planned failure (see main's OOM_ONLY). */
__attribute__((noinline)) void oom_failing(void) { __asm__ volatile(""); }

static int fail_now(void)
{
    if (countdown < 0 || countdown-- > 0) return 0;
    failed = 1;
    oom_failing();
    return 1;
}

static void *counted(void *p)
{
    if (p) __atomic_add_fetch(&live, 1, __ATOMIC_RELAXED);
    return p;
}

void *malloc(size_t n) { return fail_now() ? NULL : counted(__libc_malloc(n)); }
void *calloc(size_t n, size_t s) { return fail_now() ? NULL : counted(__libc_calloc(n, s)); }
void *realloc(void *p, size_t n)
{
    if (fail_now()) return NULL;
    void *q = __libc_realloc(p, n);
    return p ? q : counted(q);
}
void free(void *p)
{
    if (p) __atomic_sub_fetch(&live, 1, __ATOMIC_RELAXED);
    __libc_free(p);
}
void *aligned_alloc(size_t a, size_t n) { return fail_now() ? NULL : counted(__libc_memalign(a, n)); }
void *memalign(size_t a, size_t n) { return fail_now() ? NULL : counted(__libc_memalign(a, n)); }
int posix_memalign(void **p, size_t a, size_t n)
{
    if (fail_now()) return 12;
    *p = counted(__libc_memalign(a, n));
    return *p ? 0 : 12;
}
#endif

/* ---- scenarios: 0 when they ran through, -1 when a call failed ---- */

#define TRY(cond) do { if (!(cond)) { rc = -1; goto out; } } while (0)

static const char *model_src =
    "model = Chain(\n  Input(6),\n  Affine(5), relu,\n  Affine(3), softmax)\n";

static int notation_and_steps(void)
{
    int rc = 0;
    cf_exec *e = NULL;
    cf_model *m = cf_model_parse(model_src, "m.flux");
    TRY(m);
    TRY(cf_model_add_loss(m, CF_LOSS_XENT) == 0);
    TRY(e = cf_bind(m, 4, CF_TRAIN));
    float *x = cf_exec_input(e, 0, NULL), *y = cf_exec_input(e, 1, NULL);
    for (int i = 0; i < 24; i++) x[i] = (float)i / 24;
    for (int i = 0; i < 4; i++) y[i] = (float)(i % 3);
    TRY(cf_forward(e, 1) == 0 && cf_backward(e) == 0 && cf_update_sgd(e, 0.1f) == 0);
out:
    cf_exec_free(e);
    cf_model_free(m);
    return rc;
}

static FILE *null;   /* /dev/null, opened before counting */

static int model_file(void)
{
    int rc = 0;
    cf_model *m = cf_model_load(tmp("m.flux"));
    TRY(m);
    TRY(cf_model_print_shapes(tmp("m.flux"), 8, null) == 0);
out:
    cf_model_free(m);
    return rc;
}

/* The summary of a model of nets made of calls, as a tree and as JSON (the rows of
 * every level, their hash and the sort into a tree) */
static int summary_tree(void)
{
    int rc = 0;
    cf_model *m = cf_model_parse("model = Chain(Input(6), GPT(11, 8, layers = 2, heads = 2, context = 6))\n", "g.flux");
    TRY(m);
    TRY(cf_model_summary_ex(m, 0, 0, 3, null) == 0);
    TRY(cf_model_summary_ex(m, 4, 1, 5, null) == 0);
out:
    cf_model_free(m);
    return rc;
}

static int graph_in_c(void)
{
    int rc = 0;
    cf_exec *e = NULL;
    cf_model *m = cf_model_new();
    TRY(m);
    cf_scope_begin(m, "Layer", "1");
    cf_node *x = cf_input(m, "x", CF_SHAPE(4));
    cf_node *W = cf_param(m, "W", CF_SHAPE(4, 2), CF_GLOROT);
    cf_node *z = cf_concat(m, 1, 2, ((cf_node *[]){cf_matmul(m, x, W), cf_slice(m, x, 1, 0, 2)}));
    cf_scope_end(m);
    TRY(cf_output(m, cf_mean(m, cf_tanh(m, z))) >= 0);
    TRY(e = cf_bind(m, 3, CF_TRAIN | CF_INPUT_GRADS));
    TRY(cf_forward(e, 1) == 0 && cf_backward(e) == 0);
out:
    cf_exec_free(e);
    cf_model_free(m);
    return rc;
}

/* Eight parameters: the file's header outgrows its first buffer. */
static const char *deep_src =
    "model = Chain(Input(6), Affine(5), relu, Affine(5), relu, Affine(5), relu, Affine(3), softmax)\n";

static int params_files(void)
{
    int rc = 0;
    cf_model *a = cf_model_parse(deep_src, "m.flux"), *b = NULL;
    TRY(a && cf_model_init_params(a) == 0);
    TRY(cf_model_save_params(a, tmp("p.safetensors")) == 0);
    TRY(b = cf_model_parse(deep_src, "m.flux"));
    TRY(cf_model_init_params(b) == 0 && cf_model_load_params(b, tmp("p.safetensors")) == 0);
    TRY(cf_model_dump_dot(b, tmp("m.dot")) == 0);
out:
    cf_model_free(a);
    cf_model_free(b);
    return rc;
}

/* PyTorch's layout in and out, and ONNX out (a model with an LSTM: the longest path) */
static int interop_files(void)
{
    int rc = 0;
    const char *src = "model = unroll(Chain(Input(), Embedding(5, 3), LSTM(4), Affine(5), softmax), 3)\n";
    cf_model *a = cf_model_parse(src, "m.flux"), *b = NULL;
    TRY(a && cf_model_init_params(a) == 0);
    TRY(cf_model_export_torch(a, tmp("t.safetensors"), NULL) == 0);
    TRY(b = cf_model_parse(src, "m.flux"));
    TRY(cf_model_import_torch(b, tmp("t.safetensors"), NULL, NULL) == 0);
    TRY(cf_model_export_onnx(b, tmp("m.onnx")) == 0);
out:
    cf_model_free(a);
    cf_model_free(b);
    return rc;
}

/* PNG images in (each size and colour conversion), and out */
static int png_images(void)
{
    int rc = 0;
    const char *paths[2] = {tmp("a.png"), tmp("b.png")};
    cf_dataset *d = NULL, *e = NULL;
    unsigned char *png = NULL;
    size_t len;
    TRY(d = cf_dataset_load_images(paths, 2, CF_SHAPE(1, 28, 28)));
    TRY(e = cf_dataset_load_images(paths, 2, CF_SHAPE(3 * 9 * 9)));
    TRY(cf_png_encode((const unsigned char *)cf_dataset_x(d), 8, 8, 3, &png, &len) == 0);
out:
    free(png);
    cf_dataset_free(d);
    cf_dataset_free(e);
    return rc;
}

static int csv_files(void)
{
    int rc = 0;
    cf_dataset *d = NULL, *tr = NULL, *va = NULL, *in = NULL;
    cf_target_stats s;
    TRY(d = cf_dataset_load_csv(tmp("d.csv.gz"), -1, -1));
    TRY(cf_dataset_split(d, 0.25, 1, &tr, &va) == 0);
    TRY(cf_dataset_target_stats(tr, &s) == 0);
    TRY(in = cf_dataset_load_inputs(tmp("d.csv.gz")));
out:
    cf_dataset_free(d);
    cf_dataset_free(tr);
    cf_dataset_free(va);
    cf_dataset_free(in);
    return rc;
}

static int idx_files(void)
{
    int rc = 0;
    cf_dataset *tr = NULL, *te = NULL, *in = NULL;
    char spec[600];
    snprintf(spec, sizeof spec, "idx:%s,%s", tmp("i.gz"), tmp("l"));
    TRY(cf_data_open(spec, -1, &tr, &te) == 0);
    TRY(in = cf_dataset_load_inputs(tmp("i.gz")));
out:
    cf_dataset_free(tr);
    cf_dataset_free(te);
    cf_dataset_free(in);
    return rc;
}

static int training(void)
{
    int rc = 0;
    cf_dataset *d = NULL;
    cf_trainer *t = NULL;
    cf_model *m = cf_model_parse(model_src, "m.flux");
    TRY(m);
    TRY(d = cf_dataset_load_csv(tmp("d6.csv"), -1, -1));
    cf_fit_opts o = cf_fit_defaults();
    o.epochs = 1;
    o.batch = 2;
    o.val_fraction = 0.25;
    o.optim = cf_optim_defaults("adam");
    TRY(t = cf_trainer_new(m, d, &o));
    TRY(cf_fit(t, d, d) == 0);
    TRY(cf_trainer_save(t, tmp("t.ckpt")) == 0);
    TRY(cf_trainer_load(t, tmp("t.ckpt")) == 0);
out:
    cf_trainer_free(t);
    cf_dataset_free(d);
    cf_model_free(m);
    return rc;
}

static void write_files(void)
{
    FILE *c6 = fopen(tmp("d6.csv"), "w");
    fputs("1,2,3,4,5,6,0\n1,2,3,4,5,6,1\n1,2,3,4,5,6,2\n1,2,3,4,5,6,1\n", c6);
    fclose(c6);
    FILE *m = fopen(tmp("m.flux"), "w");
    fputs(model_src, m);
    fclose(m);
    gzFile f = gzopen(tmp("d.csv.gz"), "wb");
    gzputs(f, "a,b,label\n1,2,0\n3,4,1\n5,6,2\n7,8,1\n");
    gzclose(f);
    unsigned char im[4 + 12 + 12] = {0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 3};
    unsigned char lb[4 + 4 + 2] = {0, 0, 8, 1, 0, 0, 0, 2, 1, 0};
    f = gzopen(tmp("i.gz"), "wb");
    gzwrite(f, im, sizeof im);
    gzclose(f);
    FILE *g = fopen(tmp("l"), "wb");
    fwrite(lb, 1, sizeof lb, g);
    fclose(g);
    static unsigned char px[3 * 56 * 56];
    for (size_t i = 0; i < sizeof px; i++) px[i] = (unsigned char)(i * 7);
    cf_png_write(tmp("a.png"), px, 28, 28, 1);
    cf_png_write(tmp("b.png"), px, 56, 56, 3);
}

/* Run a scenario with its k-th allocation failing, for k = 0, 1, ... until it runs
 * through; every failure must carry a message, and leave nothing allocated. */
static void every_failure(const char *name, int (*run)(void))
{
    int bad_message = 0, leaks = 0, runs = 0;
    CHECK(run() == 0);   /* once as it is: lazy one-time allocations happen now */
    /* OOM_ONLY=NAME:K runs scenario NAME with allocation K failing, alone (for gdb:
     * break oom_failing) */
    const char *only = getenv("OOM_ONLY");
    long from = 0, to = 100000;
    if (only) {
        size_t n = strlen(name);
        if (strncmp(only, name, n) || only[n] != ':') return;
        from = atol(only + n + 1);
        to = from + 1;
    }
    for (long k = from; k < to; k++) {
        cf_clearerr();
        long before = live;
        failed = 0;
        countdown = k;
        int rc = run();
        countdown = -1;
        runs++;
        if (getenv("OOM_VERBOSE")) fprintf(stderr, "  %s: run %d\n", name, runs);
        if (!failed) {
            CHECK(rc == 0);
            break;
        }
        const char *msg = cf_last_error();
        if (rc != 0 && !strstr(msg, "error:") && bad_message++ < 5)
            fprintf(stderr, "  %s: allocation %ld failed, and the call failed with no message\n", name, k);
        if (live != before && leaks++ < 5)
            fprintf(stderr, "  %s: allocation %ld failed, and %ld blocks leaked\n", name, k, live - before);
    }
    printf("note: %s: %d runs, each with one allocation failing\n", name, runs - 1);
    CHECK(bad_message == 0);
    CHECK(leaks == 0);
}

TEST(notation) { every_failure("notation", notation_and_steps); }
TEST(model_files) { every_failure("model_file", model_file); }
TEST(summary) { every_failure("summary", summary_tree); }
TEST(graph) { every_failure("graph", graph_in_c); }
TEST(params) { every_failure("params", params_files); }
TEST(interop) { every_failure("interop", interop_files); }
/* Every allocation that fails while PyTorch weights are imported gives a message that
 * names the file (the grouping of tensors into modules once said only "out of memory"). */
TEST(import_names_its_file)
{
#ifndef OOM_OFF
    const char *src = "model = unroll(Chain(Input(), Embedding(5, 3), LSTM(4), Affine(5), softmax), 3)\n";
    cf_model *b = cf_model_parse(src, "m.flux");
    CHECK(b && cf_model_init_params(b) == 0);   /* the model's own memory is not the file's */
    int unnamed = 0, runs = 0;
    for (long k = 0; b && k < 100000; k++, runs++) {
        cf_clearerr();
        failed = 0;
        countdown = k;
        int rc = cf_model_import_torch(b, tmp("t.safetensors"), NULL, NULL);
        countdown = -1;
        if (!failed) break;
        if (rc != 0 && !strstr(cf_last_error(), "t.safetensors") && unnamed++ < 3)
            fprintf(stderr, "  import: allocation %ld failed: %s\n", k, cf_last_error());
    }
    printf("note: import: %d runs, each with one allocation failing\n", runs);
    CHECK(runs > 3 && unnamed == 0);
    cf_model_free(b);
#endif
}

TEST(png) { every_failure("png", png_images); }
TEST(csv) { every_failure("csv", csv_files); }
TEST(idx) { every_failure("idx", idx_files); }
TEST(train_loop) { every_failure("training", training); }

int main(void)
{
    if (tmpdir_make("oom")) return 1;
#ifdef OOM_OFF
    printf("note: under the sanitizers malloc is theirs; each scenario runs once\n");
#endif
    (void)cf_threads();   /* the pool and the GEMM are made once, before counting */
    (void)cf_gemm_name();
    write_files();
    null = fopen("/dev/null", "w");
    RUN(notation);
    RUN(model_files);
    RUN(summary);
    RUN(graph);
    RUN(params);
    RUN(interop);
    RUN(import_names_its_file);
    RUN(png);
    RUN(csv);
    RUN(idx);
    RUN(train_loop);
    fclose(null);
    tmpdir_remove();
    return test_summary("oom");
}
