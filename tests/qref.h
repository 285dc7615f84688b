/* qref.h - the 8-bit product computed the plain way, for tests: each row of A
 * quantized as rt/qgemm.h says (per row when qa->dynamic, else qa's scale and zero
 * point), the integer sums in 64 bits, and the epilogue in qgemm.h's order. W is
 * K x N integers, row-major; C is M x N. */
#ifndef CF_TESTS_QREF_H
#define CF_TESTS_QREF_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "rt/qgemm.h"

/* The reference: quantize as qgemm.h says, sum in 64 bits, the same epilogue. */
static inline void reference(int M, int N, int K, const float *A, const int8_t *W, const float *sw, const cf_qact *qa,
                      const float *bias, int relu, float *C)
{
    uint8_t *q = malloc((size_t)K);
    for (int i = 0; i < M; i++) {
        const float *x = A + (size_t)i * K;
        float s = qa->scale;
        int z = qa->zero;
        if (qa->dynamic) {
            float lo = 0, hi = 0;
            for (int k = 0; k < K; k++) lo = x[k] < lo ? x[k] : lo, hi = x[k] > hi ? x[k] : hi;
            cf_qact_range(lo, hi, &s, &z);
        }
        float inv = 1 / s;
        for (int k = 0; k < K; k++) {
            float v = x[k] * inv;
            v = v > -z ? v : (float)-z;
            v = v < CF_QA_MAX - z ? v : (float)(CF_QA_MAX - z);
            q[k] = (uint8_t)((int)nearbyintf(v) + z);
        }
        for (int j = 0; j < N; j++) {
            int64_t acc = 0, cs = 0;
            for (int k = 0; k < K; k++) acc += q[k] * W[(size_t)k * N + j], cs += W[(size_t)k * N + j];
            float v = (float)(int32_t)(acc - z * cs) * (s * sw[j]);
            if (bias) v += bias[j];
            C[(size_t)i * N + j] = relu && !(v > 0) ? 0 : v;
        }
    }
    free(q);
}

#endif
