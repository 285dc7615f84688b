/* test_checkpoint_py.c - a checkpoint opens with Python's safetensors package and its
 * tensors equal cflux's, bit for bit: the parameters and the optimizer's state.
 * The Python is $CFLUX_PYTHON (ctest sets it to the virtual environment that
 * `make test` makes with tools/pyenv.sh); without safetensors there, the test fails. */
#include <stdlib.h>

#include "cflux.h"
#include "core/safetensors.h"
#include "test.h"

#define CKPT "/tmp/cflux-py-check.safetensors"
#define OUT "/tmp/cflux-py-check.txt"

/* The tensor `name` in the Python listing: its values into out (at most n); count. */
static long read_tensor(FILE *f, const char *name, float *out, long n)
{
    char word[16], tname[256], shape[64];
    long count;
    rewind(f);
    while (fscanf(f, "%15s", word) == 1) {
        if (strcmp(word, "tensor") != 0) {
            int c;
            while ((c = fgetc(f)) != '\n' && c != EOF) {}
            continue;
        }
        if (fscanf(f, "%255s %63s %ld", tname, shape, &count) != 3) return -1;
        int match = strcmp(tname, name) == 0;
        for (long i = 0; i < count; i++) {
            char v[64];
            if (fscanf(f, "%63s", v) != 1) return -1;
            if (match && i < n) out[i] = strtof(v, NULL);
        }
        if (match) return count;
    }
    return -1;
}

TEST(python_reads_what_cflux_wrote)
{
    cf_model *m = cf_model_parse("model = Chain(Input(3), Affine(5), tanh, Affine(2), softmax)", "py.flux");
    float x[12] = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f, 0.7f, 0.8f, 0.9f, 1.0f, 1.1f, 1.2f}, y[4] = {0, 1, 1, 0};
    cf_dataset *d = cf_dataset_from_arrays(x, CF_SHAPE(3), y, 1, 4);
    cf_fit_opts o = cf_fit_defaults();
    o.epochs = 3;
    o.batch = 2;
    o.optim = cf_optim_defaults("adam");
    cf_trainer *t = cf_trainer_new(m, d, &o);
    CHECK(t && cf_fit(t, d, NULL) == 0 && cf_trainer_save(t, CKPT) == 0);
    const char *py = getenv("CFLUX_PYTHON");
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s' tests/read_checkpoint.py " CKPT " > " OUT, py && *py ? py : "python3");
    int rc = system(cmd);
    if (WEXITSTATUS(rc) == 77) {
        if (system("cat " OUT)) {}
        fprintf(stderr, "checkpoint_py: %s cannot import safetensors and numpy: run 'make test', which makes the "
                        "environment (tools/pyenv.sh)\n", py && *py ? py : "python3");
    }
    CHECK(rc == 0);
    FILE *f = fopen(OUT, "r");
    CHECK(f != NULL);
    if (!f) return;
    char line[256];
    CHECK(fgets(line, sizeof line, f) && strstr(line, "meta format cflux-checkpoint"));
    CHECK(fgets(line, sizeof line, f) && strstr(line, "meta epoch 3"));
    int tensors = 0;
    for (int p = 0; p < cf_model_param_count(m); p++) {
        float v[64];
        long n = (long)cf_shape_count(cf_model_param_shape(m, p));
        CHECK(read_tensor(f, cf_model_param_name(m, p), v, 64) == n);
        CHECK(memcmp(v, cf_model_param_data(m, p), (size_t)n * sizeof(float)) == 0);
        tensors++;
    }
    /* the optimizer's state too, under optim.NAME */
    cf_optim *opt = cf_optim_new(m, &o.optim);   /* for the names only */
    for (int i = 0; i < cf_optim_state_count(opt); i++) {
        char name[300];
        float v[64];
        snprintf(name, sizeof name, "optim.%s", cf_optim_state_name(opt, i));
        size_t n;
        cf_optim_state_data(opt, i, &n);
        CHECK(read_tensor(f, name, v, 64) == (long)n);
        /* equal to what cflux's own reader finds there */
        cf_st_file *st = cf_st_read(CKPT);
        const cf_st_tensor *x = st ? cf_st_find(st, name) : NULL;
        CHECK(x && x->count == n && memcmp(x->data, v, n * sizeof(float)) == 0);
        cf_st_free(st);
        tensors++;
    }
    CHECK(tensors == 4 + 8);
    fclose(f);
    cf_optim_free(opt);
    cf_trainer_free(t);
    cf_dataset_free(d);
    cf_model_free(m);
    remove(CKPT);
    remove(OUT);
}

int main(void)
{
    RUN(python_reads_what_cflux_wrote);
    return test_summary("checkpoint_py");
}
