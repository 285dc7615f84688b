/* kern_avx512.c - the built-in GEMM's AVX-512 implementation: an 8 x 32 tile in
 * sixteen zmm accumulators (gemm_tile.h). Compiled with -mavx512f -mavx512bw
 * -mavx512dq -mavx512vl -mfma; run only on CPUs (and kernels) that have them. The
 * same source at the same tile is also built for AVX2 by tests/test_gemm_builtin.c,
 * so machines without AVX-512 still test it. */
#include <stddef.h>

#include "rt/gemm_impl.h"

#define TILE_MR 8
#define TILE_NR 32
#define TILE_VW 16
#define TILE(name) name##_avx512
#define TILE_NAME "avx512"
#define TILE_ENTRY cf_gemm_avx512
#include "rt/gemm_tile.h"
