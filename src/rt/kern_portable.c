/* kern_portable.c - the built-in GEMM for any CPU: the 6 x 16 tile of gemm_tile.h
 * over 4-float vectors, compiled for the baseline ISA (SSE2 on x86-64; the compiler
 * lowers the vectors to whatever the target has). */
#include <stddef.h>

#include "rt/gemm_impl.h"

#define TILE_MR 6
#define TILE_NR 16
#define TILE_VW 4
#define TILE(name) name##_portable
#define TILE_NAME "portable"
#define TILE_ENTRY cf_gemm_portable
#include "rt/gemm_tile.h"
