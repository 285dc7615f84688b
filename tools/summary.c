/* summary.c - `cflux summary MODEL`: the model's layers, each with its place in the
 * source, output shape, parameters, FLOPs and values per sample (cf_model_summary). */
#include <math.h>
#include <stdio.h>

#include "cflux.h"
#include "commands.h"

int cmd_summary(const args *a)
{
    if (apply_common(a)) return 1;
    cf_model *m = cf_model_load(a->pos[0]);   /* shapes only: no weights are allocated */
    if (!m) return fail();
    int rc = cf_model_summary(m, isnan(a->batch) ? 0 : (int)a->batch, a->json, stdout);
    cf_model_free(m);
    return rc ? fail() : 0;
}
