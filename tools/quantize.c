/* quantize.c - `cflux quantize`: trained weights to 8-bit integers (cf_model_quantize),
 * the test accuracy of both models side by side, and the quantized parameter file. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"

int cmd_quantize(const args *a)
{
    if (apply_common(a)) return 1;
    cf_quantize_options o = {.activations = -1, .batch = 100,
                             .batches = isnan(a->calib_batches) ? 10 : (int)a->calib_batches};
    const char *mode = a->activations ? a->activations : "auto";
    if (!strcmp(mode, "auto")) o.activations = CF_QUANT_AUTO;
    else if (!strcmp(mode, "dynamic")) o.activations = CF_QUANT_DYNAMIC;
    else if (!strcmp(mode, "static")) o.activations = CF_QUANT_STATIC;
    if (o.activations < 0) {
        fprintf(stderr, "cflux quantize: --activations is auto, dynamic or static, not '%s'\n", mode);
        return 2;
    }
    if (!a->save) {
        fprintf(stderr, "cflux quantize: needs --save PATH, where the quantized weights go\n");
        return 2;
    }
    const char *params;
    cf_model *m = load_model_and_weights(a, "quantize", &params);
    if (!m) return params ? 1 : 2;
    cf_dataset *train = NULL, *test = NULL;
    int rc = 1;
    FILE *say = a->json ? stderr : stdout;
    args eff;
    data_recall(m, a, &eff, say);
    if (data_options_fit(a, eff.data, "quantize")) {
        rc = 2;
        goto done;
    }
    if (cf_model_quantized_count(m)) {
        fprintf(stderr, "error: %s is quantized already: quantize the float32 weights it came from\n", params);
        goto done;
    }
    if (open_data(&eff, m, &train, &test)) goto out;
    const cf_dataset *d = test ? test : train;
    double l32, acc32, l8, acc8;
    if (cf_evaluate(m, d, 256, &l32, &acc32)) goto out;
    int n = cf_model_quantize(m, train, &o);
    if (n < 0 || cf_evaluate(m, d, 256, &l8, &acc8)) goto out;
    char buf[32];
    if (!isnan(acc32)) {
        snprintf(buf, sizeof buf, "%.4f", acc32);
        if (cf_model_set_info(m, "float32_accuracy", buf)) goto out;
    }
    if (cf_model_save_params(m, a->save)) goto out;
    const char *how = o.activations == CF_QUANT_DYNAMIC ? "dynamic" : "static";   /* auto: static, with data */
    if (a->json) {
        printf("{\"products\": %d, \"activations\": \"%s\", \"kernel\": ", n, how);
        json_string(stdout, cf_int8_kernel());
        printf(", \"samples\": %zu, \"float32\": {\"loss\": %.6g, \"accuracy\": %.6g}, "
               "\"int8\": {\"loss\": %.6g, \"accuracy\": %.6g}, \"saved\": ",
               cf_dataset_count(d), l32, acc32, l8, acc8);
        json_string(stdout, a->save);
        printf("}\n");
    } else {
        printf("%s: %d product%s quantized to int8 (weights per output channel; inputs %s), kernel %s\n", a->pos[0],
               n, n == 1 ? "" : "s", o.activations == CF_QUANT_DYNAMIC ? "measured as they run"
                                                                     : "with ranges fixed on the calibration data",
               cf_int8_kernel());
        printf("on %s (%zu samples):\n", test ? "the test set" : "the data", cf_dataset_count(d));
        printf("  float32   loss %.4f", l32);
        if (!isnan(acc32)) printf(", accuracy %.4f", acc32);
        printf("\n  int8      loss %.4f", l8);
        if (!isnan(acc8)) printf(", accuracy %.4f (%+.2f points)", acc8, 100 * (acc8 - acc32));
        printf("\nsaved %s\n", a->save);
    }
    rc = 0;
    goto done;
out:
    fail();
done:
    cf_dataset_free(train);
    cf_dataset_free(test);
    cf_model_free(m);
    return rc;
}
