/* interop.c - `cflux import` (PyTorch weights in) and `cflux export` (PyTorch weights
 * or ONNX out). */
#include <stdio.h>

#include "cflux.h"
#include "commands.h"

int cmd_import(const args *a)
{
    if (!a->from_torch || !a->save) {
        fprintf(stderr, "cflux import: needs --from-torch FILE and --save PATH\n");
        return 2;
    }
    if (apply_common(a)) return 1;
    cf_model *m = cf_model_load(a->pos[0]);
    if (!m) return fail();
    int rc = cf_model_import_torch(m, a->from_torch, a->map, stderr) || cf_model_save_params(m, a->save) ? fail() : 0;
    if (!rc)
        printf("%s: %zu weights in %d parameters%s from %s\n", a->save, cf_model_weight_count(m),
               cf_model_param_count(m), cf_model_state_count(m) ? " and running statistics" : "", a->from_torch);
    cf_model_free(m);
    return rc;
}

int cmd_export(const args *a)
{
    if (!a->to_torch && !a->onnx) {
        fprintf(stderr, "cflux export: needs --to-torch FILE or --onnx FILE (and the weights: --params CKPT, or the "
                        "checkpoint alone in place of MODEL)\n");
        return 2;
    }
    if (a->map && !a->to_torch) {
        fprintf(stderr, "cflux export: --map names PyTorch's modules: it goes with --to-torch\n");
        return 2;
    }
    if (apply_common(a)) return 1;
    const char *params;
    cf_model *m = load_model_and_weights(a, "export", &params);
    if (!m) return params ? 1 : 2;
    int rc = 0;
    if (a->to_torch && !rc) {
        rc = cf_model_export_torch(m, a->to_torch, a->map) ? fail() : 0;
        if (!rc) printf("%s: PyTorch state_dict\n", a->to_torch);
        const float *mean, *std;
        if (!rc && cf_model_input_norm(m, &mean, &std))
            fprintf(stderr, "note: %s standardises its inputs (input.mean, input.std in %s), which a state_dict "
                            "cannot hold: standardise them before PyTorch's model (the ONNX export does it)\n",
                    a->pos[0], params);
        if (!rc && cf_model_target_norm(m, &mean, &std))
            fprintf(stderr, "note: %s standardises its targets (target.mean, target.std in %s), which a state_dict "
                            "cannot hold: PyTorch's outputs are y' = (y - mean) / std; undo it on them (the ONNX "
                            "export does it)\n", a->pos[0], params);
    }
    if (a->onnx && !rc) {
        rc = cf_model_export_onnx(m, a->onnx) ? fail() : 0;
        if (!rc) printf("%s: ONNX, opset 17\n", a->onnx);
    }
    cf_model_free(m);
    return rc;
}
