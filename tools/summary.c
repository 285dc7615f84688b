/* summary.c - `cflux summary MODEL`: the model's layers, each with its place in the
 * source, output shape, parameters, FLOPs and values per sample, --depth levels deep
 * (cf_model_summary_ex); with --freeze, the frozen parameters marked. */
#include <math.h>
#include <stdio.h>

#include "cflux.h"
#include "commands.h"

int cmd_summary(const args *a)
{
    if (apply_common(a)) return 1;
    cf_model *m = cf_model_load(a->pos[0]);   /* shapes only: no weights are allocated */
    if (!m) return fail();
    if (freeze_params(m, a)) {   /* marked frozen in the table */
        cf_model_free(m);
        return 1;
    }
    int depth = isnan(a->depth) ? 1 : (int)a->depth;
    int rc = cf_model_summary_ex(m, isnan(a->batch) ? 0 : (int)a->batch, a->json, depth, stdout);
    fflush(stdout);
    fputs(cf_model_compile_notes(m), stderr);
    cf_model_free(m);
    return rc ? fail() : 0;
}
