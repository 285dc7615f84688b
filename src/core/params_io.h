/* params_io.h - parameters from an already read safetensors file (for checkpoints). */
#ifndef CF_CORE_PARAMS_IO_H
#define CF_CORE_PARAMS_IO_H

#include "cflux.h"
#include "core/safetensors.h"

#define CF_LOAD_CHECK 0x100u   /* check names and shapes; change nothing */

/* The metadata "format" of a training checkpoint (train/checkpoint.c), which holds
 * more than parameters: the files that read parameters tell it apart by this. */
#define CF_CHECKPOINT_FORMAT "cflux-checkpoint"

/* cf_model_load_params_ex on a file already read; path names it in messages. The
 * model's parameters must exist. 0 or -1. */
int cf_model_params_from(cf_model *m, const cf_st_file *f, const char *path, unsigned flags);

/* For cf_st_read_want: the tensors cf_model_params_from reads, all but a checkpoint's
 * optimizer and carried state (optim.*, carry.*), which a model's weights do not need
 * (a checkpoint's greater part: Adam keeps two values a weight). */
int cf_params_want(const cf_st_file *f, const char *name, void *user);

/* The model's parameters (initialised) and its input standardisation, if any, as
 * safetensors entries t[0 .. cf_model_params_tensor_count(m)), for writing; the
 * entries point into the model. */
int cf_model_params_tensor_count(const cf_model *m);
void cf_model_params_as_tensors(const cf_model *m, cf_st_tensor *t);

#endif
