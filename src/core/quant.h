/* quant.h - a model's parameters quantized to 8 bits, for the int8 products that
 * inference binds run (the quantize pass, src/exec/quantize.c; ops/qaffine.c).
 *
 * A quantized parameter keeps its float32 values too (the integers times their
 * scales), so training, the summary and a bind with quantization off see an ordinary
 * model. Saved in a parameter file as the integers (dtype I8, the parameter's name and
 * shape), "NAME.qscale" (F32, a scale per output channel: a matrix's column, a
 * convolution's kernel) and, for an input quantized with a fixed scale, "NAME.qinput"
 * (F32, [scale, zero point]); without it, the input is quantized as it runs (per row
 * of a matrix product, per sample of a convolution). */
#ifndef CF_CORE_QUANT_H
#define CF_CORE_QUANT_H

#include <stdint.h>

#include "cflux.h"

/* The largest activation integer: 7 bits (rt/qgemm.h says why). */
#define CF_QA_MAX 127
/* The largest weight integer in magnitude: symmetric int8. */
#define CF_QW_MAX 127
/* The longest sum that 32 bits hold exactly: K x 127 x 127 < 2^31. */
#define CF_QGEMM_MAX_K 131072
/* The most 8-bit products one qchain node takes in a row (ops/qchain.c). */
#define CF_QCHAIN_MAX 8

#define CF_QSCALE_SUFFIX ".qscale"
#define CF_QINPUT_SUFFIX ".qinput"

typedef struct cf_qparam {
    int param;            /* the parameter's index */
    int channels;         /* output channels (cf_qparam_channels) */
    int8_t *q;            /* the integers, in the parameter's layout */
    float *scale;         /* channels */
    int act_static;       /* 1: the input's fixed scale and zero point; 0: per row */
    float act_scale;
    int act_zero;
    void *packed;         /* a cf_qweights (rt/qgemm.h) and its panels: the integers packed
                             for this process's kernel by the quantize pass at the first
                             bind (src/exec/quantize.c); freed with the model */
} cf_qparam;

/* Parameter `param`'s quantization, or NULL. */
cf_qparam *cf_model_qparam(const cf_model *m, int param);

/* Whether node n is a product that runs in 8 bits once its weights are quantized: an
 * affine or affine_relu node (what fuse_affine makes) whose W is a parameter matrix,
 * or a conv2d of one group whose kernels are a parameter, each with sums short enough
 * for 32 bits (CF_QGEMM_MAX_K). What cf_model_quantize quantizes and the quantize pass
 * rewrites. */
int cf_qproduct(const cf_node *n);

/* The output channels of a quantized parameter of shape s: N of a matrix (K, N), O of
 * a convolution's kernels (O, C, KH, KW); 0 for any other shape. */
int cf_qparam_channels(cf_shape s);

/* Quantize parameter `param`, a (K, N) matrix or (O, C, KH, KW) kernels, from integers
 * q (floats holding whole numbers in -127..127, the parameter's layout) and a scale
 * per output channel; its float values become q times the scales. act_static: the
 * input's fixed scale and zero point. 0 or -1. */
int cf_qparam_set(cf_model *m, int param, const float *q, const float *scale, int act_static, float act_scale,
                  int act_zero);

/* Drop m's quantization: what an update of its parameters does (cf_optim_step,
 * cf_update_sgd), since the integers no longer match them. Executors bound before go on
 * with float32 products (ops/qaffine.c). */
void cf_model_quant_free(cf_model *m);

#endif
