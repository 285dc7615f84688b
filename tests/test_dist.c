/* test_dist.c - data-parallel training's single-process side: without mpirun a run
 * asked to be distributed trains exactly as one alone (one rank of one), the rank
 * queries say rank 0 of 1, and a build without MPI refuses cf_dist_init with a
 * message. (tests/check_mpi.sh runs the real thing under mpirun.) */
#include <stdlib.h>
#include <string.h>

#include "cflux.h"
#include "test.h"

static void train(int distributed, float *out, size_t *n)
{
    cf_model *m = cf_model_parse("model = Chain(Input(2), Affine(4), tanh, Affine(2), softmax)\n", "m.flux");
    float x[64], y[32];
    for (int i = 0; i < 32; i++) {
        x[2 * i] = (float)(i % 5) - 2, x[2 * i + 1] = (float)(i % 3) - 1;
        y[i] = (float)(x[2 * i] > x[2 * i + 1]);
    }
    cf_dataset *d = cf_dataset_from_arrays(x, CF_SHAPE(2), y, 1, 32);
    cf_fit_opts o = cf_fit_defaults();
    o.batch = 8;
    o.epochs = 3;
    o.distributed = distributed;
    cf_trainer *t = m && d ? cf_trainer_new(m, d, &o) : NULL;
    CHECK(t && cf_fit(t, d, NULL) == 0);
    CHECK(cf_trainer_wait_seconds(t) == 0);
    *n = 0;
    for (int i = 0; m && i < cf_model_param_count(m); i++) {
        size_t k = cf_shape_count(cf_model_param_shape(m, i));
        memcpy(out + *n, cf_model_param_data(m, i), k * sizeof *out);
        *n += k;
    }
    cf_trainer_free(t);
    cf_dataset_free(d);
    cf_model_free(m);
}

TEST(alone_it_is_one_rank)
{
    CHECK(cf_dist_rank() == 0 && cf_dist_size() == 1);
    float a[64], b[64];
    size_t na, nb;
    train(0, a, &na);
    train(1, b, &nb);
    CHECK(na == 22 && na == nb && memcmp(a, b, na * sizeof *a) == 0);
    if (!cf_dist_available()) {
        CHECK(cf_dist_init() == -1);
        CHECK_HAS(cf_last_error(), "built without MPI");
    }
}

int main(void)
{
    RUN(alone_it_is_one_rank);
    return test_summary("dist");
}
