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

/* One direct convolution (rt/qgemm.h's cf_qdirect) of random integers against the sums
   taken one by one: 1 when every output position's bits match. ext: every activation
   127 (the padding too) and every weight +127 or -127. */
static int direct_same(const cf_qgemm_impl *im, int C, int H, int W, int KH, int KW, int pad, int O, int relu, int ext)
{
    int Hp = H + 2 * pad, Wp = W + 2 * pad, OH = Hp - KH + 1, OW = Wp - KW + 1, G = (KW + 3) / 4;
    int npos = (OH * Wp + CF_QDIRECT_POS - 1) / CF_QDIRECT_POS * CF_QDIRECT_POS;
    size_t plane = (size_t)(npos + (KH - 1) * Wp + 4 * (G - 1) + 15) / 16 * 16;
    int z = ext ? 127 : (int)(next() % 128);
    uint8_t *q = malloc((size_t)C * (plane + 3));
    uint32_t *x4 = malloc((size_t)C * plane * 4);
    int8_t *k = malloc((size_t)O * C * KH * KW);
    int32_t *w = malloc(cf_qdirect_words(O, C, KH, KW) * 4), *colsum = calloc((size_t)O, 4);
    float *scale = malloc((size_t)O * 4), *bias = malloc((size_t)O * 4), *out = malloc((size_t)O * npos * 4);
    for (int c = 0; c < C; c++)
        for (size_t i = 0; i < plane + 3; i++) {
            int r = (int)(i / (size_t)Wp), col = (int)(i % (size_t)Wp);
            int inside = r >= pad && r < pad + H && col >= pad && col < pad + W;
            q[(size_t)c * (plane + 3) + i] = (uint8_t)(ext ? 127 : inside ? (int)(next() % 128) : z);
        }
    for (int c = 0; c < C; c++)
        for (size_t i = 0; i < plane; i++) {
            const uint8_t *b = q + (size_t)c * (plane + 3) + i;
            x4[(size_t)c * plane + i] = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
        }
    for (int i = 0; i < O * C * KH * KW; i++) {
        k[i] = (int8_t)(ext ? (next() % 2 ? 127 : -127) : (int)(next() % 255) - 127);
        colsum[i / (C * KH * KW)] += k[i];
    }
    for (int o = 0; o < O; o++) scale[o] = uniform(0.0001f, 0.01f), bias[o] = uniform(-1, 1);
    cf_qdirect_pack(w, k, O, C, KH, KW);
    cf_qdirect d = {.x4 = x4, .plane = plane, .C = C, .KH = KH, .G = G, .Wp = Wp, .O = O, .npos = npos, .w = w,
                    .colsum = colsum, .scale = scale, .bias = bias, .zero = z, .relu = relu, .out = out};
    im->direct(&d);
    int ok = 1;
    for (int o = 0; o < O && ok; o++)
        for (int oh = 0; oh < OH && ok; oh++)
            for (int ow = 0; ow < OW && ok; ow++) {
                int64_t acc = 0;
                for (int c = 0; c < C; c++)
                    for (int ki = 0; ki < KH; ki++)
                        for (int kj = 0; kj < KW; kj++)
                            acc += q[(size_t)c * (plane + 3) + (size_t)(oh + ki) * Wp + ow + kj] *
                                   k[((o * C + c) * KH + ki) * KW + kj];
                float v = (float)(int32_t)(acc - (int64_t)z * colsum[o]) * scale[o] + bias[o];
                v = relu && !(v > 0) ? 0 : v;
                float got = out[(size_t)o * npos + oh * Wp + ow];
                if (memcmp(&got, &v, 4)) {
                    fprintf(stderr, "  %s direct C %d %dx%d KH %d KW %d pad %d O %d: out[%d][%d][%d] = %.9g, reference %.9g\n",
                            im->name, C, H, W, KH, KW, pad, O, o, oh, ow, got, v);
                    ok = 0;
                }
            }
    free(q), free(x4), free(k), free(w), free(colsum), free(scale), free(bias), free(out);
    return ok;
}

/* The direct convolution of every kernel that has one: few channels, every count of
 * taps in a word's last group, channels past a multiple of 8, positions past a step of
 * 48, padding, and the extremes (C KH KW = 1024 products of 127 and +-127). */
TEST(direct_conv_bitwise)
{
    static const int shapes[][7] = {
        /* C, H, W, KH, KW, pad, O */
        {1, 28, 28, 5, 5, 0, 8},  {1, 12, 12, 5, 5, 2, 16}, {3, 9, 7, 3, 3, 1, 4},   {2, 6, 6, 1, 1, 0, 3},
        {4, 8, 5, 2, 4, 0, 9},    {1, 5, 19, 3, 6, 1, 13},  {3, 7, 7, 7, 7, 3, 17},  {4, 4, 4, 4, 8, 2, 1},
        {2, 3, 30, 3, 9, 0, 8},   {1, 1, 1, 1, 1, 0, 1},    {4, 16, 16, 16, 16, 0, 2}, {3, 11, 13, 5, 2, 4, 24},
    };
    int ran = 0;
    for (size_t n = 0; n < sizeof names / sizeof *names; n++) {
        const cf_qgemm_impl *im = cf_qgemm_impl_named(names[n]);
        if (!im || !im->direct) continue;
        ran++;
        for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
            const int *s = shapes[i];
            CHECK(direct_same(im, s[0], s[1], s[2], s[3], s[4], s[5], s[6], (int)i % 2, 0));
        }
        CHECK(direct_same(im, 4, 16, 16, 16, 16, 0, 8, 0, 1));
        CHECK(direct_same(im, 4, 20, 17, 16, 16, 0, 8, 1, 1));
    }
    printf("  direct convolution: %d kernels have one\n", ran);
}

int main(void)
{
    printf("qgemm: kernel %s (%s)\n", cf_qgemm_name(), cf_qgemm_why());
    RUN(random_shapes_bitwise);
    RUN(extremes_bitwise);
    RUN(maddubsw_saturation_emulated);
    RUN(activation_range);
    RUN(quant_edges_every_kernel);
    RUN(direct_conv_bitwise);
    return test_summary("qgemm");
}
