/* dconv_portable.c - the direct convolution kernels (dconv_tile.h) for the baseline
 * ISA, and the choice between implementations. */
#define DC(name) name##_portable
#define DC_ENTRY cf_dconv_portable
#define DC_VW 8
#define DC_NP1 12
#define DC_NP 6
#include "rt/dconv_tile.h"

#include "rt/cpu.h"
#include "rt/gemm_builtin.h"
#include "rt/gemm_impl.h"

const cf_dconv_impl *cf_dconv_pick(void)
{
#if defined(__x86_64__)
    const cf_gemm_impl *im = cf_gemm_builtin_impl();
    if (im == &cf_gemm_avx512) return &cf_dconv_avx512;
    if (im != &cf_gemm_portable && cf_cpu_avx2(cf_cpu())) return &cf_dconv_avx2;
#endif
    return &cf_dconv_portable;
}
