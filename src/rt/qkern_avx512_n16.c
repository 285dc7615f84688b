/* qkern_avx512_n16.c - the AVX-512 VNNI kernels for products of at most 16 columns:
 * qkern_avx512.c's, with a tile of 16 rows by 16 columns. */
#define CF_QKERN_NARROW
#include "qkern_avx512.c"
