/* qkern_avxvnni.c - the 8-bit product's kernels for AVX-VNNI: qkern_avx2.c's, with
 * vpdpbusd in place of vpmaddubsw and vpmaddwd (compiled with -mavxvnni). */
#define CF_QKERN_VNNI
#include "qkern_avx2.c"
