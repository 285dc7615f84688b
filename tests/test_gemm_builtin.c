/* test_gemm_builtin.c - the built-in GEMM against a double-precision triple loop,
 * for all transpose combinations, odd and block-crossing sizes, padded leading
 * dimensions and alpha/beta combinations, with every implementation this CPU runs
 * (portable, AVX2, AVX-512) and with the AVX-512 tile built for AVX2
 * (gemm_avx512_tile.c), so that machines without AVX-512 test its source too. */
#define _GNU_SOURCE
#include "rt/cpu.h"
#include "rt/gemm.h"
#include "rt/gemm_builtin.h"
#include "rt/gemm_impl.h"
#include "test.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

/* aligned_alloc, which the GEMM's packing buffers come from, fails on a thread that
   sets refuse_alloc; elsewhere it is the real one (libc's, or the sanitizer's). */
static _Thread_local int refuse_alloc;
static atomic_int refused;
void *aligned_alloc(size_t align, size_t n)
{
    static void *(*_Atomic real)(size_t, size_t);
    if (refuse_alloc) {
        atomic_fetch_add(&refused, 1);
        return NULL;
    }
    if (!real) real = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "aligned_alloc");
    return real(align, n);
}

/* xorshift64*: explicit state, reproducible. */
typedef struct { uint64_t s; } rng_t;

static float rng_uniform(rng_t *r) /* in [-1, 1) */
{
    r->s ^= r->s >> 12; r->s ^= r->s << 25; r->s ^= r->s >> 27;
    return (float)((r->s * 2685821657736338717ULL) >> 40) / (float)(1 << 23) - 1.0f;
}

/* The implementation under test. */
static const cf_gemm_impl *cur;

/* Largest |got - want| / (1 + |want|) over C, after computing with cf_gemm_builtin;
   cells outside the M x N window (the ldc padding) must be untouched. Returns the
   error scaled by K so one tolerance fits every size; -1 if padding was touched. */
static double run_case(rng_t *r, int ta, int tb, int M, int N, int K, float alpha,
                       float beta, int pad)
{
    int lda = (ta ? M : K) + pad, ldb = (tb ? K : N) + pad, ldc = N + pad;
    int arows = ta ? K : M, brows = tb ? N : K;
    float *A = malloc(sizeof(float) * (arows * lda + 1));
    float *B = malloc(sizeof(float) * (brows * ldb + 1));
    float *C = malloc(sizeof(float) * (M * ldc + 1));
    double *want = malloc(sizeof(double) * (M * N + 1));
    for (int i = 0; i < arows * lda; i++) A[i] = rng_uniform(r);
    for (int i = 0; i < brows * ldb; i++) B[i] = rng_uniform(r);
    for (int i = 0; i < M * ldc; i++) C[i] = beta == 0 ? NAN : rng_uniform(r);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = 0;
            for (int k = 0; k < K; k++) {
                double a = ta ? A[k * lda + i] : A[i * lda + k];
                double b = tb ? B[j * ldb + k] : B[k * ldb + j];
                s += a * b;
            }
            want[i * N + j] = alpha * s + (beta == 0 ? 0.0 : beta * (double)C[i * ldc + j]);
        }
    for (int i = 0; i < M; i++)
        for (int j = N; j < ldc; j++) C[i * ldc + j] = 12345.0f; /* must stay */
    cf_gemm_builtin_with(cur, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    double err = 0;
    for (int i = 0; i < M; i++) {
        for (int j = 0; j < N; j++) {
            double e = fabs(C[i * ldc + j] - want[i * N + j]) / (1 + fabs(want[i * N + j]));
            if (!(e <= err)) err = e; /* NaN propagates as the error */
        }
        for (int j = N; j < ldc; j++)
            if (C[i * ldc + j] != 12345.0f) err = -1;
    }
    free(A); free(B); free(C); free(want);
    return err < 0 ? err : err / (K > 0 ? K : 1);
}

/* Every transpose combination over a grid of sizes including 1, odd sizes and sizes
   past each block size (MC 144, KC 256, NC 512), with alpha/beta combinations. */
static void sweep(void)
{
    static const int sizes[][3] = {
        {1, 1, 1}, {1, 7, 17}, {7, 1, 65}, {17, 65, 1}, {6, 16, 8}, {7, 17, 130},
        {65, 130, 7}, {130, 65, 300}, {145, 33, 257}, {200, 1030, 40}, {13, 1100, 513},
        {300, 20, 600}, {33, 40, 256}, {20, 50, 500}, {64, 128, 784}, {64, 784, 128},
        {784, 128, 64}, {2, 100, 50}, {3, 33, 784}, {4, 128, 64}, {1, 128, 784}, {4, 10, 3},
        {5, 40, 40}, {1, 600, 50}, {1, 200, 33}, {32, 76, 130}, {36, 40, 33},
    };
    static const float ab[][2] = {{1, 0}, {1, 1}, {-0.5f, 0}, {2, -1.5f}, {0.25f, 0.5f}};
    rng_t r = {0x9e3779b97f4a7c15ULL};
    int ncase = 0;
    if (!cur) cur = cf_gemm_builtin_impl();
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (int t = 0; t < 4; t++) {
            /* every alpha/beta pair on small sizes; one rotating pair on big ones */
            int big = sizes[s][0] * sizes[s][1] * sizes[s][2] > 200000;
            for (int p = 0; p < 5; p++) {
                if (big && p != (int)((s + t) % 5)) continue;
                int pad = (p + t) % 3 == 0 ? 0 : 3 + p;
                double e = run_case(&r, t & 1, t >> 1, sizes[s][0], sizes[s][1],
                                    sizes[s][2], ab[p][0], ab[p][1], pad);
                if (!(e >= 0 && e <= 1e-6))
                    fprintf(stderr, "  ta=%d tb=%d M=%d N=%d K=%d alpha=%g beta=%g pad=%d: err/K %g\n",
                            t & 1, t >> 1, sizes[s][0], sizes[s][1], sizes[s][2],
                            ab[p][0], ab[p][1], pad, e);
                CHECK(e >= 0 && e <= 1e-6);
                ncase++;
            }
        }
    CHECK(ncase > 100);
}

/* The AVX-512 tile's source built for AVX2 (tests/gemm_avx512_tile.c). */
extern const cf_gemm_impl test_gemm_avx512_tile;

TEST(every_implementation_matches_reference)
{
    const cf_gemm_impl *all[] = {&cf_gemm_portable, &cf_gemm_avx2, &cf_gemm_avx2_4, &test_gemm_avx512_tile,
                                 &cf_gemm_avx512};
    int runs[] = {1, cf_cpu_avx2(cf_cpu()), cf_cpu_avx2(cf_cpu()), cf_cpu_avx2(cf_cpu()), cf_cpu_avx512(cf_cpu())};
    int ran = 0;
    for (int i = 0; i < 5; i++) {
        if (!runs[i]) {
            printf("  (%s: this CPU does not run it)\n", all[i]->name);
            continue;
        }
        cur = all[i];
        sweep();
        ran++;
    }
    cur = cf_gemm_builtin_impl();
    CHECK(ran >= 1);
}

/* The epilogue (bias, ReLU, both), applied tile by tile as the product finishes C,
   gives the same bits as the product followed by cf_gemm_ep_apply, for every
   implementation: whole tiles, edge rows and columns, several K blocks (the epilogue
   only after the last), alpha and beta. */
TEST(epilogue_same_bits)
{
    const cf_gemm_impl *all[] = {&cf_gemm_portable, &cf_gemm_avx2, &cf_gemm_avx2_4, &test_gemm_avx512_tile,
                                 &cf_gemm_avx512};
    int runs[] = {1, cf_cpu_avx2(cf_cpu()), cf_cpu_avx2(cf_cpu()), cf_cpu_avx2(cf_cpu()), cf_cpu_avx512(cf_cpu())};
    static const int sizes[][3] = {{64, 128, 32}, {37, 70, 300}, {8, 32, 5}, {150, 96, 128}, {12, 520, 40}};
    rng_t r = {7};
    int checked = 0;
    for (int i = 0; i < 5; i++) {
        if (!runs[i]) continue;
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
            for (int kind = 1; kind < 4; kind++) {
                int M = sizes[s][0], N = sizes[s][1], K = sizes[s][2], ldc = N + 3;
                float beta = kind == 2 ? 0.5f : 0;
                float *A = malloc(sizeof(float) * M * K), *B = malloc(sizeof(float) * K * N);
                float *bias = malloc(sizeof(float) * N), *C = malloc(sizeof(float) * M * ldc);
                float *want = malloc(sizeof(float) * M * ldc);
                for (int j = 0; j < M * K; j++) A[j] = rng_uniform(&r);
                for (int j = 0; j < K * N; j++) B[j] = rng_uniform(&r);
                for (int j = 0; j < N; j++) bias[j] = rng_uniform(&r);
                for (int j = 0; j < M * ldc; j++) C[j] = want[j] = rng_uniform(&r);
                cf_gemm_ep ep = {kind & 1 ? bias : NULL, kind >= 2};
                cf_gemm_builtin_with(all[i], 0, 0, M, N, K, 1.5f, A, K, B, N, beta, want, ldc);
                cf_gemm_ep_apply(&ep, M, N, want, ldc);
                cf_gemm_builtin_ep(all[i], 0, 0, M, N, K, 1.5f, A, K, B, N, beta, C, ldc, &ep);
                if (memcmp(C, want, sizeof(float) * M * ldc))
                    fprintf(stderr, "  %s: %d x %d x %d, bias %d relu %d: other bits\n", all[i]->name, M, N, K,
                            kind & 1, kind >= 2);
                CHECK(memcmp(C, want, sizeof(float) * M * ldc) == 0);
                checked++;
                free(A); free(B); free(bias); free(C); free(want);
            }
    }
    CHECK(checked >= 15);
}

/* K == 0 and alpha == 0 give C = beta * C; beta == 0 then clears NaN. M or N == 0
   touches nothing. */
TEST(degenerate_sizes)
{
    float A[4] = {NAN, NAN, NAN, NAN}, B[4] = {NAN, NAN, NAN, NAN};
    float C[4] = {1, 2, 3, 4};
    cf_gemm_builtin(0, 0, 2, 2, 0, 1, A, 1, B, 2, 2, C, 2);
    CHECK(C[0] == 2 && C[1] == 4 && C[2] == 6 && C[3] == 8);
    cf_gemm_builtin(0, 1, 2, 2, 2, 0, A, 2, B, 2, 0.5f, C, 2);
    CHECK(C[0] == 1 && C[1] == 2 && C[2] == 3 && C[3] == 4);
    float D[4] = {NAN, NAN, NAN, NAN};
    cf_gemm_builtin(1, 0, 2, 2, 0, 1, A, 2, B, 2, 0, D, 2);
    CHECK(D[0] == 0 && D[1] == 0 && D[2] == 0 && D[3] == 0);
    cf_gemm_builtin(0, 0, 0, 2, 2, 1, A, 2, B, 2, 0, D, 2);
    cf_gemm_builtin(0, 0, 2, 0, 2, 1, A, 2, B, 2, 0, D, 2);
    CHECK(D[0] == 0 && D[3] == 0);
}

/* A known product, so a bug shared by the kernel and the reference cannot hide. */
TEST(known_product)
{
    float A[6] = {1, 2, 3, 4, 5, 6};        /* 2 x 3 */
    float B[6] = {7, 8, 9, 10, 11, 12};     /* 3 x 2 */
    float C[4];
    cf_gemm_builtin(0, 0, 2, 2, 3, 1, A, 3, B, 2, 0, C, 2);
    CHECK(C[0] == 58 && C[1] == 64 && C[2] == 139 && C[3] == 154);
    float At[6] = {1, 4, 2, 5, 3, 6};       /* A stored 3 x 2 */
    float Bt[6] = {7, 9, 11, 8, 10, 12};    /* B stored 2 x 3 */
    cf_gemm_builtin(1, 1, 2, 2, 3, 1, At, 2, Bt, 3, 0, C, 2);
    CHECK(C[0] == 58 && C[1] == 64 && C[2] == 139 && C[3] == 154);
}

/* Threads computing disjoint row slices of one C at once (each with its own B) get
   the single-thread answer bit for bit: the packing buffers are per thread. */
enum { TM = 96, TN = 300, TK = 270, TSLICES = 4 };
static float t_a[TM * TK], t_b[TSLICES][TN * TK], t_c[TM * TN], t_want[TM * TN];

static void *slice_worker(void *arg)
{
    int s = (int)(intptr_t)arg, rows = TM / TSLICES;
    for (int rep = 0; rep < 200; rep++)
        cf_gemm_builtin(0, 1, rows, TN, TK, 1, t_a + s * rows * TK, TK, t_b[s], TK, 0,
                        t_c + s * rows * TN, TN);
    return NULL;
}

TEST(concurrent_slices)
{
    rng_t r = {42};
    for (int i = 0; i < TM * TK; i++) t_a[i] = rng_uniform(&r);
    for (int i = 0; i < TSLICES * TN * TK; i++) t_b[i / (TN * TK)][i % (TN * TK)] = rng_uniform(&r);
    for (int s = 0; s < TSLICES; s++)
        cf_gemm_builtin(0, 1, TM / TSLICES, TN, TK, 1, t_a + s * (TM / TSLICES) * TK, TK,
                        t_b[s], TK, 0, t_want + s * (TM / TSLICES) * TN, TN);
    pthread_t th[TSLICES];
    for (int s = 0; s < TSLICES; s++)
        CHECK(pthread_create(&th[s], NULL, slice_worker, (void *)(intptr_t)s) == 0);
    for (int s = 0; s < TSLICES; s++) pthread_join(th[s], NULL);
    CHECK(memcmp(t_c, t_want, sizeof t_c) == 0);
}

/* A thread that cannot get its packing buffers still gets right products (from the
   unpacked loop), and gets the buffers once memory is there again. */
static void *sweep_without_memory(void *arg)
{
    (void)arg;
    refuse_alloc = 1;
    sweep();
    float A[6] = {1, 2, 3, 4, 5, 6}, B[6] = {7, 8, 9, 10, 11, 12}, C[4];
    cf_gemm_builtin(0, 0, 2, 2, 3, 1, A, 3, B, 2, 0, C, 2);
    CHECK(C[0] == 58 && C[1] == 64 && C[2] == 139 && C[3] == 154);
    refuse_alloc = 0;
    CHECK(cf_gemm_builtin_reserve() == 0);
    return NULL;
}

TEST(no_memory_still_right)
{
    pthread_t th;
    atomic_store(&refused, 0);
    CHECK(pthread_create(&th, NULL, sweep_without_memory, NULL) == 0);
    pthread_join(th, NULL);
    CHECK(atomic_load(&refused) > 100);   /* it did take the unpacked loop, every time */
}

/* The engine follows what cpuid says, checked here against the compiler's own
   detection, and never a generic OpenBLAS kernel on a CPU with AVX2: ctest runs this
   with OPENBLAS_CORETYPE=Prescott, OpenBLAS's worst choice. Not a timing test. */
TEST(dispatch_follows_cpuid)
{
    const cf_cpu_info *c = cf_cpu();
    __builtin_cpu_init();
    CHECK(c->avx2 == !!__builtin_cpu_supports("avx2"));
    CHECK(c->fma == !!__builtin_cpu_supports("fma"));
    CHECK(c->avx512f == !!__builtin_cpu_supports("avx512f"));
    CHECK(c->name[0] && strcmp(c->name, "unknown CPU") != 0);
    const char *want = cf_cpu_avx512(c) ? "builtin-avx512" : cf_cpu_avx2(c) ? "builtin-avx2" : NULL;
    printf("  %s (%s): %s, because %s\n", cf_cpu_name(), cf_cpu_isa(), cf_gemm_name(), cf_gemm_why());
    if (want) CHECK(strcmp(cf_gemm_name(), want) == 0);
    else CHECK(strncmp(cf_gemm_name(), "openblas", 8) == 0 || strcmp(cf_gemm_name(), "builtin-portable") == 0);
    const char *core = getenv("OPENBLAS_CORETYPE");
#ifdef CFLUX_TEST_HAVE_BLAS
    if (want && core) CHECK(strstr(cf_gemm_why(), core) != NULL);   /* it saw the generic core */
#endif
    (void)core;
    /* a named engine is honoured, and an unknown one refused with the list */
    CHECK(cf_set_gemm("builtin-portable") == 0 && strcmp(cf_gemm_name(), "builtin-portable") == 0);
    CHECK(cf_set_gemm("builtin-sse9") != 0 && strstr(cf_last_error(), "builtin-portable") != NULL);
    CHECK(cf_set_gemm("builtin") == 0 && strcmp(cf_gemm_name(), want ? want : "builtin-portable") == 0);
    /* NULL goes back to the default; a $CFLUX_GEMM naming no engine is an error then,
       with the engines listed, and the CPU's choice runs */
    CHECK(cf_set_gemm("builtin-portable") == 0 && cf_set_gemm(NULL) == 0);
    CHECK(strcmp(cf_gemm_name(), want ? want : cf_gemm_name()) == 0);
    setenv("CFLUX_GEMM", "builtin-sse9", 1);
    CHECK(cf_set_gemm(NULL) != 0 && strstr(cf_last_error(), "builtin-portable") != NULL);
    CHECK(strstr(cf_gemm_why(), "CFLUX_GEMM=builtin-sse9 is not an engine") != NULL);
    if (want) CHECK(strcmp(cf_gemm_name(), want) == 0);
    unsetenv("CFLUX_GEMM");
    CHECK(cf_set_gemm(NULL) == 0);
}

int main(void)
{
    unsetenv("CFLUX_GEMM");   /* the default choice is under test */
    RUN(dispatch_follows_cpuid);
    RUN(every_implementation_matches_reference);
    RUN(epilogue_same_bits);
    RUN(degenerate_sizes);
    RUN(known_product);
    RUN(concurrent_slices);
    RUN(no_memory_still_right);
    return test_summary("gemm_builtin");
}
