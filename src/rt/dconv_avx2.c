/* dconv_avx2.c - the direct convolution kernels (dconv_tile.h) for AVX2 + FMA.
 * Compiled with -mavx2 -mfma; run only on CPUs that have both. */
#define DC(name) name##_avx2
#define DC_ENTRY cf_dconv_avx2
#include "rt/dconv_tile.h"
