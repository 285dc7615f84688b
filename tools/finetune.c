/* finetune.c - fine-tuning from the command line: --freeze PATTERN keeps the
 * parameters whose names match fixed (a glob, as fnmatch(3) without flags: '*' and
 * '?' match dots too, so '1.*' is all of layer 1's), and --init FILE --partial loads
 * the parameters whose names and shapes match, saying which were left out. */
#include <fnmatch.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "commands.h"

static int matches(const char *pattern, const char *name) { return fnmatch(pattern, name, 0) == 0; }

static int count_matches(const cf_model *m, const char *pattern)
{
    int n = 0;
    for (int i = 0; i < cf_model_param_count(m); i++) n += matches(pattern, cf_model_param_name(m, i));
    return n;
}

/* A pattern that matches nothing: say so, with what was probably meant (the pattern a
 * leading "*" makes, when that matches: the names begin with the layer's place, so
 * 'body.*' is '1.body.*'; else the nearest name, a typing slip), and the names. */
static int no_match(const cf_model *m, const char *pattern)
{
    char wider[300], hint[400] = "", names[300] = "";
    snprintf(wider, sizeof wider, "*%s", pattern);
    int k = count_matches(m, wider), np = cf_model_param_count(m), best = -1, bd = 4;
    for (int i = 0; i < np; i++) {
        const char *name = cf_model_param_name(m, i);
        int d = strcasecmp(pattern, name) ? edit_distance(pattern, name) : 0;   /* the same but for case first */
        if (d < bd) bd = d, best = i;
    }
    if (k) snprintf(hint, sizeof hint, " (did you mean '%s'? it matches %d)", wider, k);
    else if (best >= 0) snprintf(hint, sizeof hint, " (did you mean '%s'?)", cf_model_param_name(m, best));
    for (int i = 0, len = 0; i < np && len < 200; i++)
        len += snprintf(names + len, sizeof names - (size_t)len, "%s%s", i ? ", " : "", cf_model_param_name(m, i));
    fprintf(stderr, "error: --freeze '%s' matches no parameter of the model%s; its parameters, as cflux summary names "
                    "them: %s%s (%d)\n", pattern, hint, names, strlen(names) >= 200 ? ", ..." : "", np);
    return 1;
}

int freeze_params(cf_model *m, const args *a)
{
    if (!a->freeze.n) {   /* a resumed run keeps its checkpoint's */
        return a->resume && cf_checkpoint_freeze(a->resume, m) < 0 ? fail() : 0;
    }
    for (int p = 0; p < a->freeze.n; p++)
        if (!count_matches(m, a->freeze.v[p])) return no_match(m, a->freeze.v[p]);
    int np = cf_model_param_count(m), frozen = 0;
    for (int i = 0; i < np; i++) {
        const char *name = cf_model_param_name(m, i);
        for (int p = 0; p < a->freeze.n; p++)
            if (matches(a->freeze.v[p], name)) {
                if (cf_model_set_grad_req(m, name, CF_GRAD_NONE)) return fail();
                frozen++;
                break;
            }
    }
    if (frozen == np) {
        fprintf(stderr, "error: --freeze freezes every parameter of the model (%d): nothing would be trained\n", np);
        return 1;
    }
    return 0;
}

int load_init(cf_model *m, const args *a)
{
    if (!a->init) return 0;
    if (!a->partial) {
        if (!cf_model_load_params(m, a->init)) return 0;
        const char *e = cf_last_error();
        int mismatch = strstr(e, "in the model but") || strstr(e, "do not match the model");
        fprintf(stderr, "%s%s\n", e, mismatch ? " (--partial loads the parameters whose names and shapes match)" : "");
        return 1;
    }
    if (cf_model_load_params_ex(m, a->init, CF_LOAD_PARTIAL | CF_LOAD_MATCHING)) return fail();
    if (*cf_last_error()) fprintf(stderr, "%s\n", cf_last_error());
    else fprintf(stderr, "note: %s: loaded all %d parameters%s\n", a->init,
                 cf_model_param_count(m) + cf_model_state_count(m), cf_model_state_count(m) ? " and statistics" : "");
    return 0;
}
