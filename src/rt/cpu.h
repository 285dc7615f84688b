/* cpu.h - what this CPU can run, read once with cpuid (x86) and never from a
 * library's own detection: an OpenBLAS that does not know a new CPU falls back to
 * SSE3 kernels on a machine with AVX-512, and cflux's kernel choice must not follow.
 *
 * A feature counts only when the operating system also saves its registers (xgetbv),
 * so AVX-512 disabled by the kernel or a hypervisor reads as absent. */
#ifndef CF_RT_CPU_H
#define CF_RT_CPU_H

#include "cflux.h"

typedef struct cf_cpu_info {
    char vendor[13];           /* "GenuineIntel", "AuthenticAMD" */
    char name[49];             /* the brand string: "AMD EPYC 7B12" */
    int family, model;         /* display family and model, as Linux shows them */
    unsigned sse42 : 1, avx : 1, fma : 1, avx2 : 1;
    unsigned avx512f : 1, avx512bw : 1, avx512dq : 1, avx512vl : 1;
    unsigned avx512vnni : 1, avx512bf16 : 1;
    unsigned avxvnni : 1;      /* the VEX-encoded vpdpbusd on 256-bit registers */
} cf_cpu_info;

/* This CPU, detected on first call (thread-safe). On other architectures every
 * feature is 0 and the name is what uname says. */
const cf_cpu_info *cf_cpu(void);

/* The GEMM tiers: AVX-512 needs F, BW, DQ and VL; AVX2 needs FMA as well. */
int cf_cpu_avx512(const cf_cpu_info *c);
int cf_cpu_avx2(const cf_cpu_info *c);

/* cf_cpu_name and cf_cpu_isa (the features that matter for kernels, space-separated:
 * "avx2 fma", or "sse4.2") are public: cflux.h. */

#endif
