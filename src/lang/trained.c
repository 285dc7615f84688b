/* trained.c - a model from a file of cflux's that holds its weights and the notation
 * it was written in (a checkpoint, a parameter file): the source is compiled (this
 * layer's work), then the weights are loaded into it (core/params_io.c). */
#include "core/error.h"
#include "core/graph.h"
#include "core/params_io.h"
#include "core/safetensors.h"

cf_model *cf_model_load_trained(const char *path)
{
    if (!path) return cf_seterr("error: cf_model_load_trained: no path"), NULL;
    cf_st_file *f = cf_st_read_want(path, 0, cf_params_want, NULL);
    if (!f) return NULL;
    const char *src = cf_st_meta(f, CF_MODEL_SOURCE_META), *file = cf_st_meta(f, CF_MODEL_FILE_META);
    cf_model *m = NULL;
    if (!src || !*src) {
        cf_seterr("error: %s: the file holds weights but not the model's source (it was written by a model built in "
                  "C, or by PyTorch): load the model from its .flux file and the weights with it",
                  path);
    } else if ((m = cf_model_parse(src, file && *file ? file : path)) &&
               (cf_model_init_params(m) || cf_model_params_from(m, f, path, 0))) {
        cf_model_free(m);
        m = NULL;
    }
    cf_st_free(f);
    return m;
}
