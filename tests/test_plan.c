/* test_plan.c - the memory planner: buffers whose lifetimes meet never share bytes,
 * and reuse actually happens. */
#include <stdlib.h>

#include "exec/exec.h"
#include "test.h"

/* Every pair of buffers alive at a common step is disjoint in memory. */
static int conflicts(const cf_buf *b, int n)
{
    int bad = 0;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            int meet = b[i].first <= b[j].last && b[j].first <= b[i].last;
            int overlap = b[i].offset < b[j].offset + b[j].size && b[j].offset < b[i].offset + b[i].size;
            if (meet && overlap && b[i].size && b[j].size) bad++;
        }
    return bad;
}

TEST(random_lifetimes_never_collide)
{
    srand(1);
    for (int round = 0; round < 200; round++) {
        int n = 1 + rand() % 60;
        cf_buf b[60];
        float *dest[60];
        size_t sum = 0;
        for (int i = 0; i < n; i++) {
            int first = rand() % 40, len = rand() % 10;
            b[i] = (cf_buf){(size_t)(rand() % 5 == 0 ? 0 : 1 + rand() % 3000), 0, first, first + len, &dest[i]};
            sum += (b[i].size + 15) / 16 * 16;
        }
        size_t total = cf_plan_buffers(b, n);
        CHECK(conflicts(b, n) == 0);
        CHECK(total <= sum);
        for (int i = 0; i < n; i++) CHECK(b[i].offset % 16 == 0 && b[i].offset + b[i].size <= total);
    }
}

TEST(a_chain_reuses_two_slots)
{
    /* step i makes buffer i from buffer i-1: two slots suffice */
    cf_buf b[20];
    float *dest[20];
    for (int i = 0; i < 20; i++) b[i] = (cf_buf){1000, 0, i, i + 1, &dest[i]};
    size_t total = cf_plan_buffers(b, 20);
    CHECK(conflicts(b, 20) == 0);
    CHECK(total == 2 * 1008);
}

int main(void)
{
    RUN(random_lifetimes_never_collide);
    RUN(a_chain_reuses_two_slots);
    return test_summary("plan");
}
