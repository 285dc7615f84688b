/* dconv_avx512.c - the direct convolution kernels (dconv_tile.h) for AVX-512: tiles
 * of 12 rows by two vectors of sixteen channels (24 of the 32 zmm registers).
 * Compiled with -mavx512f -mavx512bw -mavx512dq -mavx512vl -mfma; run only on CPUs
 * that have them. */
#define DC(name) name##_avx512
#define DC_ENTRY cf_dconv_avx512
#define DC_VW 16
#define DC_NP1 12
#define DC_NP 12
#include "rt/dconv_tile.h"
