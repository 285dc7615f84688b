/* test_qgemm.c - the 8-bit integer product (rt/qgemm.h) against an exact integer
 * reference: every kernel this CPU runs, bitwise, at the extremes of both ranges
 * (where AVX2's vpmaddubsw would saturate with 8-bit activations), at every tile
 * edge of rows, columns and depth, with static and per-row quantization, at 1 and 2
 * threads; and the saturation that 7-bit activations avoid, emulated. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "qref.h"
#include "rt/pool.h"
#include "rt/qgemm.h"
#include "test.h"

static const char *const names[] = {"portable", "avx2", "avx-vnni", "avx512-vnni", "avx512-vnni-16"};

static uint32_t rng = 12345;
static uint32_t next(void) { return rng = rng * 1664525u + 1013904223u; }
static float uniform(float lo, float hi) { return lo + (hi - lo) * (float)(next() >> 8) / 16777216.0f; }

/* One product with kernel im against the reference: 1 when every bit matches. */
static int same(const cf_qgemm_impl *im, int M, int N, int K, const float *A, const int8_t *W, const float *sw,
                const cf_qact *qa, const float *bias, int relu)
{
    cf_qweights qw;
    void *wbuf = malloc(cf_qweights_bytes(im, K, N));
    cf_qweights_pack(&qw, im, K, N, W, N, 1, sw, wbuf);
    void *ws = aligned_alloc(64, (cf_qgemm_ws_bytes(&qw, M) + 63) / 64 * 64);
    float *C = malloc((size_t)M * N * sizeof *C), *R = malloc((size_t)M * N * sizeof *R);
    cf_qgemm(&qw, M, A, K, qa, C, N, &(cf_gemm_ep){bias, relu}, ws);
    reference(M, N, K, A, W, sw, qa, bias, relu, R);
    int ok = memcmp(C, R, (size_t)M * N * sizeof *C) == 0;
    for (int i = 0; i < M * N && !ok; i++)
        if (memcmp(&C[i], &R[i], sizeof *C)) {
            fprintf(stderr, "  %s %dx%dx%d: C[%d][%d] = %.9g, reference %.9g\n", im->name, M, N, K, i / N, i % N,
                    C[i], R[i]);
            break;
        }
    free(wbuf), free(ws), free(C), free(R);
    return ok;
}

/* Every kernel this CPU runs, on random values, at every tile edge. */
TEST(random_shapes_bitwise)
{
    static const int Ms[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 47, 48, 49, 97, 150, 300};
    static const int Ns[] = {1, 10, 15, 16, 17, 31, 32, 33, 64, 100};
    static const int Ks[] = {1, 3, 4, 5, 8, 63, 130};
    int ran = 0;
    for (int threads = 1; threads <= 2; threads++) {
        cf_set_threads(threads);
        for (size_t n = 0; n < sizeof names / sizeof *names; n++) {
            const cf_qgemm_impl *im = cf_qgemm_impl_named(names[n]);
            if (!im) continue;
            ran++;
            for (size_t a = 0; a < sizeof Ms / sizeof *Ms; a++)
                for (size_t b = 0; b < sizeof Ns / sizeof *Ns; b++)
                    for (size_t c = 0; c < sizeof Ks / sizeof *Ks; c++) {
                        int M = Ms[a], N = Ns[b], K = Ks[c];
                        float *A = malloc((size_t)M * K * sizeof *A), *sw = malloc((size_t)N * sizeof *sw),
                              *bias = malloc((size_t)N * sizeof *bias);
                        int8_t *W = malloc((size_t)K * N);
                        for (int i = 0; i < M * K; i++) A[i] = uniform(-1, 3);
                        for (int i = 0; i < K * N; i++) W[i] = (int8_t)((int)(next() % 255) - 127);
                        for (int j = 0; j < N; j++) sw[j] = uniform(0.001f, 0.02f), bias[j] = uniform(-1, 1);
                        cf_qact dyn = {1, 0, 0}, st = {0, 4.0f / 127, 32};
                        int ok = same(im, M, N, K, A, W, sw, &dyn, bias, (a + b) % 2) &&
                                 same(im, M, N, K, A, W, sw, &st, (a + c) % 2 ? bias : NULL, (b + c) % 2);
                        CHECK(ok);
                        free(A), free(sw), free(bias), free(W);
                        if (!ok) return;
                    }
        }
    }
    CHECK(ran >= 2);   /* the portable kernel and at least one of the CPU's */
    cf_set_threads(0);
}

/* The extremes: every activation integer 127 and every weight +-127, long sums, and
 * the largest K whose sum 32 bits hold, at both thread counts. */
TEST(extremes_bitwise)
{
    for (int threads = 1; threads <= 2; threads++) {
        cf_set_threads(threads);
        for (size_t n = 0; n < sizeof names / sizeof *names; n++) {
            const cf_qgemm_impl *im = cf_qgemm_impl_named(names[n]);
            if (!im) continue;
            static const int Ks[] = {4, 784, 4099, 20000};
            for (int c = 0; c < 4; c++)
                for (int pattern = 0; pattern < 3; pattern++) {
                    int M = 9, N = 33, K = Ks[c];
                    float *A = malloc((size_t)M * K * sizeof *A), sw[33];
                    int8_t *W = malloc((size_t)K * N);
                    for (int i = 0; i < M * K; i++) A[i] = 1.0f;   /* static scale 1/127: every integer 127 */
                    for (int i = 0; i < K * N; i++)
                        W[i] = pattern == 0 ? 127 : pattern == 1 ? -127 : (i % 2 ? 127 : -127);
                    for (int j = 0; j < N; j++) sw[j] = 1.0f / 127;
                    cf_qact st = {0, 1.0f / 127, 0};
                    CHECK(same(im, M, N, K, A, W, sw, &st, NULL, 0));
                    /* and what the integers sum to: K x 127 x 127 per entry, exactly */
                    if (pattern == 0) {
                        cf_qweights qw;
                        void *wbuf = malloc(cf_qweights_bytes(im, K, N));
                        cf_qweights_pack(&qw, im, K, N, W, N, 1, (float[33]){[0 ... 32] = 1}, wbuf);
                        void *ws = aligned_alloc(64, (cf_qgemm_ws_bytes(&qw, M) + 63) / 64 * 64);
                        float *C = malloc((size_t)M * N * sizeof *C);
                        cf_qgemm(&qw, M, A, K, &(cf_qact){0, 1, 0}, C, N, NULL, ws);   /* scale 1: A = 1 is q 1 */
                        CHECK(C[0] == (float)K * 127 && C[M * N - 1] == (float)K * 127);
                        free(wbuf), free(ws), free(C);
                    }
                    free(A), free(W);
                }
        }
    }
    cf_set_threads(0);
}

/* vpmaddubsw's 16-bit pair sum, saturated, as the instruction computes it. */
static int sat16(int v) { return v > 32767 ? 32767 : v < -32768 ? -32768 : v; }

/* The AVX2 kernel's arithmetic, emulated on every pair of the extremes: with 7-bit
 * activations no pair saturates, with 8-bit ones it would (so the check can fail). */
TEST(maddubsw_saturation_emulated)
{
    int worst7 = 0, saturated8 = 0;
    for (int a0 = 0; a0 <= 255; a0 += 1)
        for (int w0 = -128; w0 <= 127; w0 += 1) {
            int a1 = a0, w1 = w0;   /* the pair's two products alike: the largest sums */
            int exact = a0 * w0 + a1 * w1;
            if (w0 < -CF_QW_MAX) continue;   /* weights are symmetric: -127..127 */
            if (a0 <= CF_QA_MAX) worst7 |= sat16(exact) != exact;
            else saturated8 |= sat16(exact) != exact;
        }
    CHECK(!worst7);
    CHECK(saturated8);
}

/* The scale and zero point of a range: 0 is exact, the ends map to 0 and 127. */
TEST(activation_range)
{
    float s;
    int z;
    cf_qact_range(-1, 3, &s, &z);
    CHECK_NEAR(s, 4.0 / 127, 1e-9);
    CHECK(z == 32);
    cf_qact_range(0.5f, 2, &s, &z);   /* widened to hold 0 */
    CHECK(z == 0);
    CHECK_NEAR(s, 2.0 / 127, 1e-9);
    cf_qact_range(0, 0, &s, &z);
    CHECK(s == 1 && z == 0);
    cf_qact_range(NAN, NAN, &s, &z);
    CHECK(s == 1 && z == 0);
    cf_qact_range(-INFINITY, 1, &s, &z);
    CHECK(s == 1 && z == 0);
}

/* A NaN and huge values quantize to the ends, the same in every kernel. */
TEST(quant_edges_every_kernel)
{
    float x[37];
    for (int i = 0; i < 37; i++) x[i] = (float)(i - 18) * 0.37f;
    x[3] = NAN, x[5] = 1e30f, x[7] = -1e30f, x[20] = 0.5f * 0.37f * 3;   /* a half: rounds to even */
    uint8_t want[37], got[37];
    cf_qgemm_portable.quant(x, 37, 1 / 0.37f, 20, want);
    CHECK(want[3] == 0 && want[5] == 127 && want[7] == 0);
    for (size_t n = 1; n < sizeof names / sizeof *names; n++) {
        const cf_qgemm_impl *im = cf_qgemm_impl_named(names[n]);
        if (!im) continue;
        for (int len = 1; len <= 37; len++) {
            memset(got, 0xee, sizeof got);
            im->quant(x, len, 1 / 0.37f, 20, got);
            CHECK(memcmp(got, want, (size_t)len) == 0 && (len == 37 || got[len] == 0xee));
            float lo, hi, rl, rh;
            im->minmax(x, len, &lo, &hi);
            cf_qgemm_portable.minmax(x, len, &rl, &rh);
            CHECK(lo == rl && hi == rh);
        }
    }
}

int main(void)
{
    printf("qgemm: kernel %s (%s)\n", cf_qgemm_name(), cf_qgemm_why());
    RUN(random_shapes_bitwise);
    RUN(extremes_bitwise);
    RUN(maddubsw_saturation_emulated);
    RUN(activation_range);
    RUN(quant_edges_every_kernel);
    return test_summary("qgemm");
}
