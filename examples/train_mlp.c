/* train_mlp.c - train a small classifier through cflux's public C API alone.
 *
 * The data: three interleaved spirals in the plane (a classic that a linear model
 * cannot separate), made here. The model: 2 -> 64 -> 64 -> 3 with tanh, softmax and
 * cross-entropy. Prints the falling loss and the final accuracy.
 *
 * Build against an installed cflux:
 *     cc train_mlp.c $(pkg-config --cflags --libs cflux) -lm -o train_mlp */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <cflux.h>

#define CLASSES 3
#define PER_CLASS 200
#define N (CLASSES * PER_CLASS)
#define BATCH 60
#define EPOCHS 300

/* Point i of class c on its spiral arm, with a little noise (a fixed LCG: the
 * example prints the same numbers every run). */
static unsigned lcg = 12345;
static float noise(void)
{
    lcg = lcg * 1103515245u + 12345u;
    return ((float)(lcg >> 8) / 16777216.0f - 0.5f) * 0.2f;
}

static void make_spirals(float *x, float *y)
{
    for (int c = 0; c < CLASSES; c++)
        for (int i = 0; i < PER_CLASS; i++) {
            float r = (float)i / PER_CLASS, t = 4.0f * r + 2.0944f * (float)c + noise();
            int k = c * PER_CLASS + i;
            x[2 * k] = r * sinf(t);
            x[2 * k + 1] = r * cosf(t);
            y[k] = (float)c;
        }
}

/* y = x W + b, with parameters named PATH.W and PATH.b. */
static cf_node *affine(cf_model *m, cf_node *x, const char *path, int in, int out)
{
    cf_scope_begin(m, "affine", path);
    cf_node *W = cf_param(m, "W", CF_SHAPE(in, out), CF_GLOROT);
    cf_node *b = cf_param(m, "b", CF_SHAPE(1, out), CF_ZEROS);
    cf_node *y = cf_add(m, cf_matmul(m, x, W), b);
    cf_scope_end(m);
    return y;
}

int main(void)
{
    static float data[N * 2], labels[N];
    make_spirals(data, labels);

    cf_model *m = cf_model_new();
    cf_model_set_seed(m, 1);
    cf_node *x = cf_input(m, "x", CF_SHAPE(2));
    cf_node *y = cf_input(m, "y", CF_SCALAR);
    cf_node *h = cf_tanh(m, affine(m, x, "1", 2, 64));
    h = cf_tanh(m, affine(m, h, "2", 64, 64));
    cf_node *loss = cf_softmax_xent(m, affine(m, h, "3", 64, CLASSES), y);
    cf_output(m, cf_node_input(loss, 0));   /* 0: probabilities (B, 3) */
    cf_output(m, loss);                     /* 1: mean cross-entropy */

    cf_exec *e = cf_bind(m, BATCH, CF_TRAIN);
    if (!e) {
        fprintf(stderr, "%s\n", cf_last_error());
        cf_model_free(m);
        return 1;
    }
    printf("cflux %s: %zu parameters, matrix products by %s, %d thread(s)\n", cf_version(),
           cf_model_weight_count(m), cf_gemm_name(), cf_threads());

    float *bx = cf_exec_input(e, 0, NULL), *by = cf_exec_input(e, 1, NULL);
    int order[N];
    for (int i = 0; i < N; i++) order[i] = i;
    for (int epoch = 1; epoch <= EPOCHS; epoch++) {
        for (int i = N - 1; i > 0; i--) {   /* shuffle */
            lcg = lcg * 1103515245u + 12345u;
            int j = (int)((lcg >> 8) % (unsigned)(i + 1)), t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        double total = 0;
        for (int b = 0; b < N / BATCH; b++) {
            for (int i = 0; i < BATCH; i++) {
                int k = order[b * BATCH + i];
                bx[2 * i] = data[2 * k];
                bx[2 * i + 1] = data[2 * k + 1];
                by[i] = labels[k];
            }
            if (cf_forward(e, 1) || cf_backward(e) || cf_update_sgd(e, 0.2f)) {
                fprintf(stderr, "%s\n", cf_last_error());
                return 1;
            }
            total += cf_exec_output(e, 1, NULL)[0];
        }
        if (epoch == 1 || epoch % 30 == 0) printf("epoch %3d  loss %.4f\n", epoch, total / (N / BATCH));
    }

    /* accuracy over all points, a batch at a time */
    int correct = 0;
    for (int b = 0; b < N / BATCH; b++) {
        for (int i = 0; i < BATCH; i++) {
            bx[2 * i] = data[2 * (b * BATCH + i)];
            bx[2 * i + 1] = data[2 * (b * BATCH + i) + 1];
            by[i] = labels[b * BATCH + i];
        }
        cf_forward(e, 0);
        const float *p = cf_exec_output(e, 0, NULL);
        for (int i = 0; i < BATCH; i++) {
            int best = 0;
            for (int c = 1; c < CLASSES; c++)
                if (p[i * CLASSES + c] > p[i * CLASSES + best]) best = c;
            correct += best == (int)by[i];
        }
    }
    printf("accuracy %.3f on %d points\n", (double)correct / N, N);
    cf_exec_free(e);
    cf_model_free(m);
    return 0;
}
