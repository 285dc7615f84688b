/* gelu.c - the Gaussian error linear unit, as PyTorch's torch.nn.functional.gelu.
 *
 *   exact (attribute f[0] nonzero; PyTorch's default, approximate='none'):
 *       y = x Φ(x), Φ the standard normal distribution function
 *   else (approximate='tanh'):
 *       y = 0.5 x (1 + tanh(sqrt(2/π) (x + 0.044715 x³)))
 *
 * y has x's shape. Both ways run through rt/vmath.h, four, (AVX2) eight or (AVX-512)
 * sixteen elements at a time, each element's result the same wherever it sits; backward recomputes the
 * derivative from x (rt/vmath.h has both derivatives and how they keep accurate). */
#include "ops/op.h"
#include "rt/cpu.h"
#include "rt/vmath.h"

typedef struct {
    const cf_inst *k;
    int exact;
    int isa;   /* 2: AVX-512, 1: AVX2, 0: neither */
} job;

static job job_of(const cf_inst *k)
{
#if defined(__x86_64__)
    job j = {k, k->node->attr.f[0] != 0, cf_cpu_avx512(cf_cpu()) ? 2 : cf_cpu_avx2(cf_cpu())};
#else
    job j = {k, k->node->attr.f[0] != 0, 0};
#endif
    return j;
}

static void forward_range(void *p, size_t b, size_t e)
{
    const job *j = p;
#if defined(__x86_64__)
    if (j->isa == 2) {
        cf_vgelu_avx512(j->k->y + b, j->k->x[0] + b, e - b, j->exact);
        return;
    }
    if (j->isa == 1) {
        cf_vgelu_avx2(j->k->y + b, j->k->x[0] + b, e - b, j->exact);
        return;
    }
#endif
    cf_vgelu(j->k->y + b, j->k->x[0] + b, e - b, j->exact);
}

static void backward_range(void *p, size_t b, size_t e)
{
    const job *j = p;
    const cf_inst *k = j->k;
#if defined(__x86_64__)
    if (j->isa == 2) {
        cf_vgelu_grad_avx512(k->dx[0] + b, k->x[0] + b, k->dy + b, e - b, j->exact, k->acc[0]);
        return;
    }
    if (j->isa == 1) {
        cf_vgelu_grad_avx2(k->dx[0] + b, k->x[0] + b, k->dy + b, e - b, j->exact, k->acc[0]);
        return;
    }
#endif
    cf_vgelu_grad(k->dx[0] + b, k->x[0] + b, k->dy + b, e - b, j->exact, k->acc[0]);
}

static int gelu_forward(const cf_inst *k)
{
    job j = job_of(k);
    cf_parallel_range(cf_shape_count_b(k->ys, 1), 12, forward_range, &j);
    return 0;
}

static void gelu_backward(const cf_inst *k)
{
    job j = job_of(k);
    cf_parallel_range(cf_shape_count_b(k->ys, 1), 16, backward_range, &j);
}

const cf_opdef cf_op_gelu = {
    .name = "gelu", .what = "gelu", .infer = cf_same_shape, .forward = gelu_forward,
    .backward = gelu_backward, .flags = CF_BWD_X | CF_CALL | CF_POSITIONWISE, .nin = 1,
    .flops = cf_flops_elementwise,
};
