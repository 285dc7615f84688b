/* dconv_avx2.c - the direct convolution kernels (dconv_tile.h) for AVX2 + FMA: tiles
 * of 6 rows by two vectors of eight channels (twelve of the sixteen ymm registers).
 * Compiled with -mavx2 -mfma; run only on CPUs that have both. */
#define DC(name) name##_avx2
#define DC_ENTRY cf_dconv_avx2
#define DC_VW 8
#define DC_NP1 12
#define DC_NP 6
#include "rt/dconv_tile.h"
