/* cpu.c - CPU features from cpuid and xgetbv (see cpu.h). */
#include "rt/cpu.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

static unsigned long long xgetbv0(void)
{
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (unsigned long long)hi << 32 | lo;
}

static void detect(cf_cpu_info *c)
{
    unsigned a = 0, b = 0, cx = 0, d = 0, max = 0;
    if (!__get_cpuid(0, &max, &b, &cx, &d)) return;
    memcpy(c->vendor, &b, 4);
    memcpy(c->vendor + 4, &d, 4);
    memcpy(c->vendor + 8, &cx, 4);
    __get_cpuid(1, &a, &b, &cx, &d);
    int fam = (a >> 8) & 15, mod = (a >> 4) & 15;
    if (fam == 15) fam += (a >> 20) & 255;
    if (fam == 6 || fam >= 15) mod |= ((a >> 16) & 15) << 4;
    c->family = fam;
    c->model = mod;
    c->sse42 = (cx >> 20) & 1;
    int osxsave = (cx >> 27) & 1, avx = (cx >> 28) & 1, fma = (cx >> 12) & 1;
    unsigned long long xcr0 = osxsave ? xgetbv0() : 0;
    int ymm = (xcr0 & 6) == 6, zmm = (xcr0 & 0xe6) == 0xe6;   /* SSE+AVX, + opmask/ZMM */
    c->avx = avx && ymm;
    c->fma = fma && ymm;
    if (max >= 7) {
        __get_cpuid_count(7, 0, &a, &b, &cx, &d);
        c->avx2 = ((b >> 5) & 1) && ymm;
        c->avx512f = ((b >> 16) & 1) && zmm;
        c->avx512dq = ((b >> 17) & 1) && zmm;
        c->avx512bw = ((b >> 30) & 1) && zmm;
        c->avx512vl = ((b >> 31) & 1) && zmm;
        c->avx512vnni = ((cx >> 11) & 1) && zmm;
        __get_cpuid_count(7, 1, &a, &b, &cx, &d);
        c->avx512bf16 = ((a >> 5) & 1) && zmm;
        c->avxvnni = ((a >> 4) & 1) && ymm;
    }
    unsigned ext = 0;
    __get_cpuid(0x80000000, &ext, &b, &cx, &d);
    if (ext >= 0x80000004) {
        unsigned r[12];
        for (unsigned i = 0; i < 3; i++) __get_cpuid(0x80000002 + i, &r[4 * i], &r[4 * i + 1], &r[4 * i + 2], &r[4 * i + 3]);
        memcpy(c->name, r, 48);
        c->name[48] = 0;
        /* brand strings come padded with spaces at either end */
        char *s = c->name;
        while (*s == ' ') s++;
        memmove(c->name, s, strlen(s) + 1);
        for (size_t n = strlen(c->name); n && c->name[n - 1] == ' '; n--) c->name[n - 1] = 0;
    }
}
#else
static void detect(cf_cpu_info *c)
{
    struct utsname u;
    if (uname(&u) == 0) snprintf(c->name, sizeof c->name, "%s", u.machine);
}
#endif

static cf_cpu_info cpu;
static char isa[96];
static pthread_once_t once = PTHREAD_ONCE_INIT;

int cf_cpu_avx512(const cf_cpu_info *c) { return c->avx512f && c->avx512bw && c->avx512dq && c->avx512vl && c->fma; }
int cf_cpu_avx2(const cf_cpu_info *c) { return c->avx2 && c->fma; }

static void init(void)
{
    detect(&cpu);
    if (!cpu.name[0]) snprintf(cpu.name, sizeof cpu.name, "unknown CPU");
    const struct { unsigned on; const char *name; } f[] = {
        {cpu.avx512f, "avx512f"}, {cpu.avx512bw, "avx512bw"}, {cpu.avx512dq, "avx512dq"},
        {cpu.avx512vl, "avx512vl"}, {cpu.avx512vnni, "avx512_vnni"}, {cpu.avx512bf16, "avx512_bf16"}, {cpu.avxvnni, "avx_vnni"},
        {cpu.avx2, "avx2"}, {cpu.fma, "fma"}, {cpu.avx && !cpu.avx2, "avx"}, {cpu.sse42 && !cpu.avx, "sse4.2"},
    };
    size_t n = 0;
    for (size_t i = 0; i < sizeof f / sizeof *f; i++)
        if (f[i].on) n += (size_t)snprintf(isa + n, sizeof isa - n, "%s%s", n ? " " : "", f[i].name);
    if (!n) snprintf(isa, sizeof isa, "baseline");
}

const cf_cpu_info *cf_cpu(void)
{
    pthread_once(&once, init);
    return &cpu;
}

const char *cf_cpu_name(void)
{
    pthread_once(&once, init);
    return cpu.name;
}

const char *cf_cpu_isa(void)
{
    pthread_once(&once, init);
    return isa;
}
