/* fuzz_torch.c - libFuzzer target over PyTorch weights in (cf_torch_import): any
 * safetensors file that parses, imported into a CNN with batch normalisation and
 * into a character LSTM, either fits (every weight then finite) or fails with a
 * message that starts with "error: fuzz". */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cflux.h"
#include "core/safetensors.h"
#include "interop/interop.h"

static const char *const sources[] = {
    "model = Chain(Input(1, 6, 6), Conv2D(2, 3), BatchNorm(), relu, flatten, Affine(4), softmax)\n",
    "model = unroll(Chain(Input(), Embedding(5, 3), LSTM(4), Affine(5), softmax), 3)\n",
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static cf_model *models[2];
    if (!models[0])
        for (int i = 0; i < 2; i++)
            if (!(models[i] = cf_model_parse(sources[i], "fuzz.flux")) || cf_model_init_params(models[i])) abort();
    cf_st_file *f = cf_st_parse_ex(data, size, "fuzz", CF_ST_OTHER_DTYPES);
    if (!f) return 0;
    for (int i = 0; i < 2; i++) {
        cf_model *m = models[i];
        if (cf_torch_import(m, f, "fuzz", NULL, NULL)) {
            if (strncmp(cf_last_error(), "error: fuzz", 11)) abort();
            continue;
        }
        for (int k = 0; k < cf_model_param_count(m); k++) {
            const float *d = cf_model_param_data(m, k);
            for (size_t e = 0; e < cf_shape_count(cf_model_param_shape(m, k)); e++)
                if (!isfinite(d[e])) abort();
        }
    }
    cf_st_free(f);
    return 0;
}
