/* run_model.c - `interop_run MODEL PARAMS IN OUT`: the interoperability tests' way to
 * run a cflux model on given inputs. IN is a safetensors file with one tensor per
 * model input, named as the input (its first dimension the batch); the model, with
 * the parameters of PARAMS (a parameter file or checkpoint), runs one forward pass in
 * evaluation mode (input 0 standardised first when the model has input
 * standardisation, as cflux predict does), and OUT receives its outputs as "y" (or "y1", "y2", ... for
 * several), float32. Exit 0, or 1 with the error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cflux.h"
#include "core/safetensors.h"

static int fail(void)
{
    fprintf(stderr, "interop_run: %s\n", cf_last_error());
    return 1;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: interop_run MODEL PARAMS IN.safetensors OUT.safetensors\n");
        return 2;
    }
    cf_model *m = cf_model_load(argv[1]);
    if (!m || cf_model_load_params(m, argv[2])) return fail();
    cf_st_file *in = cf_st_read(argv[3]);
    if (!in) return fail();
    int n = cf_model_input_count(m), batch = -1;
    for (int i = 0; i < n; i++) {
        const cf_st_tensor *t = cf_st_find(in, cf_model_input_name(m, i));
        if (!t || t->rank < 1) {
            fprintf(stderr, "interop_run: %s has no tensor '%s' with a batch dimension\n", argv[3],
                    cf_model_input_name(m, i));
            return 1;
        }
        if (batch >= 0 && t->shape[0] != batch) {
            fprintf(stderr, "interop_run: the inputs' batch sizes differ\n");
            return 1;
        }
        batch = (int)t->shape[0];
    }
    cf_exec *e = cf_bind(m, batch, 0);
    if (!e) return fail();
    for (int i = 0; i < n; i++) {
        const cf_st_tensor *t = cf_st_find(in, cf_model_input_name(m, i));
        size_t count;
        cf_exec_input(e, i, &count);
        if (count != t->count) {
            fprintf(stderr, "interop_run: input '%s' has %zu numbers; the model takes %zu\n", t->name, t->count,
                    count);
            return 1;
        }
        const float *mean, *std;
        size_t nn = i == 0 ? cf_model_input_norm(m, &mean, &std) : 0;
        float *x = cf_exec_input(e, i, NULL);
        memcpy(x, t->data, count * sizeof *x);
        for (size_t k = 0; nn && k < count; k++) x[k] = (x[k] - mean[k % nn]) / std[k % nn];
    }
    if (cf_forward(e, 0)) return fail();
    int no = cf_exec_output_count(e);
    cf_st_tensor out[16];
    char names[16][8];
    if (no > 16) no = 16;
    for (int i = 0; i < no; i++) {
        cf_shape s = cf_exec_output_shape(e, i);
        snprintf(names[i], sizeof names[i], no == 1 ? "y" : "y%d", i + 1);
        out[i] = (cf_st_tensor){.name = names[i], .rank = s.rank};
        for (int d = 0; d < s.rank; d++) out[i].shape[d] = s.d[d];
        out[i].data = cf_exec_output(e, i, &out[i].count);
    }
    if (cf_st_write(argv[4], no, out, 0, NULL, NULL)) return fail();
    cf_exec_free(e);
    cf_st_free(in);
    cf_model_free(m);
    return 0;
}
