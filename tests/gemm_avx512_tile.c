/* gemm_avx512_tile.c - the AVX-512 implementation's source (8 x 32 tile, 16-float
 * vectors) compiled for AVX2 + FMA, where the compiler splits each vector in two:
 * slower, the same products. test_gemm_builtin runs it on machines without AVX-512. */
#include <stddef.h>

#include "rt/gemm_impl.h"

#define TILE_MR 8
#define TILE_NR 32
#define TILE_VW 16
#define TILE(name) name##_avx512_on_avx2
#define TILE_NAME "avx512-tile-on-avx2"
#define TILE_ENTRY test_gemm_avx512_tile
#include "rt/gemm_tile.h"
