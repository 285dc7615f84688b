/* interop.h - PyTorch's files in, from memory (for the fuzzer and for callers that
 * have read the file already). */
#ifndef CF_INTEROP_INTEROP_H
#define CF_INTEROP_INTEROP_H

#include <stdio.h>

#include "cflux.h"
#include "core/safetensors.h"

/* cf_model_import_torch on a file already read with CF_ST_OTHER_DTYPES; path names it
 * in messages. 0 or -1. */
int cf_torch_import(cf_model *m, const cf_st_file *f, const char *path, const char *map_path, FILE *notes);

#endif
