/* safetensors.h - read and write the safetensors format (Hugging Face).
 *
 * A safetensors file is: an 8-byte little-endian u64 N; N bytes of UTF-8 JSON,
 *   {"__metadata__": {"key": "value", ...},
 *    "name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}, ...}
 * padded with spaces; then the data buffer, whose offsets the header gives
 * (relative to the buffer's start). The rules this reader keeps are those of the
 * reference implementation (huggingface/safetensors, tensor.rs): N at most 100 MB;
 * the header valid UTF-8 JSON with no duplicate keys; the tensors, taken in order
 * of their offsets, cover the data buffer exactly, from byte 0 to its last byte,
 * with no holes and no overlaps; each tensor's byte length is its element count
 * times its dtype's size. Row-major, little-endian.
 *
 * cflux keeps float32 only: it writes F32 (and I64 when asked, for PyTorch's
 * counters, and I8 for quantized weights), and reads F32, F64, F16, BF16 and I8,
 * converting to float32 on read. Any other dtype (I64, U8, BOOL ...) is an error
 * that names the tensor, unless the reader is given CF_ST_OTHER_DTYPES: such a
 * tensor is then kept, checked like the others, with its dtype and shape and no
 * values (data NULL), for a caller that decides what it means (a PyTorch
 * BatchNorm's num_batches_tracked, an I64, is ignored on import). Dtypes of fewer
 * bits than a byte (F4, F6_*) stay errors.
 *
 *   cf_st_tensor t = {.name = "w", .rank = 2, .shape = {2, 3}, .count = 6, .data = w};
 *   const char *k[] = {"format"}, *v[] = {"cflux-1"};
 *   if (cf_st_write("ckpt.safetensors", 1, &t, 1, k, v)) puts(cf_last_error());
 *   cf_st_file *f = cf_st_read("ckpt.safetensors");
 *   const cf_st_tensor *w2 = f ? cf_st_find(f, "w") : NULL;
 *   cf_st_free(f);
 *
 * Every failure returns -1 or NULL and leaves a message for cf_last_error() that
 * starts with "error: " and names the file. */
#ifndef CF_CORE_SAFETENSORS_H
#define CF_CORE_SAFETENSORS_H

#include <stddef.h>
#include <stdio.h>

#define CF_ST_MAXDIMS 6
#define CF_ST_MAX_HEADER 100000000ULL /* bytes of JSON header, as the reference */

typedef struct cf_st_tensor {
    const char *name;                /* non-empty UTF-8, unique in a file */
    int rank;                        /* 0 (a scalar) .. CF_ST_MAXDIMS */
    long long shape[CF_ST_MAXDIMS];  /* shape[0 .. rank-1], each >= 0 */
    size_t count;                    /* product of shape (1 for a scalar) */
    const float *data;               /* count float32 values, row-major; NULL for a
                                        dtype kept but not read (CF_ST_OTHER_DTYPES) */
    const char *dtype;               /* read: the file's dtype ("F32", "I64"); write:
                                        "I64" writes data's values (whole numbers)
                                        as int64, "I8" as int8, anything else F32 */
} cf_st_tensor;

/* Reader flags. */
#define CF_ST_OTHER_DTYPES 1u   /* keep tensors of whole-byte dtypes cflux does not read */
#define CF_ST_HEADER_ONLY 2u    /* every tensor kept without its values (data NULL): the
                                   names, shapes and metadata, for the cost of the header */

/* Write n float32 (or int64) tensors and nmeta string pairs (the "__metadata__" object) to
 * path, crash-safe (through cf_file_create: a temporary file renamed over path,
 * fsync'd, see core/file.c). Tensors go
 * into the header and the data buffer in the order given; the header is padded with
 * spaces so the data starts 8-byte aligned. Refuses empty, non-UTF-8 or duplicate
 * names, the reserved name "__metadata__", a count that is not the product of the
 * shape, and duplicate metadata keys. On failure the old file at path is untouched
 * and the temporary removed (except when only the final directory fsync fails: the
 * new file is then in place, and the error says so). 0 or -1. */
int cf_st_write(const char *path, int n, const cf_st_tensor *tensors,
                int nmeta, const char *const *meta_keys, const char *const *meta_values);

/* Write count floats as little-endian float32 bytes, as safetensors (and ONNX's raw
 * data) hold them, through a small buffer (one path for every host byte order). 0, or
 * -1 with errno. */
int cf_write_floats_le(FILE *fp, const float *x, size_t count);

typedef struct cf_st_file cf_st_file;

/* Read and check a whole file (read into memory, converted to float32). NULL on error.
 * _ex takes reader flags. */
cf_st_file *cf_st_read(const char *path);
cf_st_file *cf_st_read_ex(const char *path, unsigned flags);

/* The same, reading the values of only the tensors that want(f, name, user) says
 * (non-zero) it needs: the others are kept without them (data NULL), and a regular
 * file's bytes past the header are read only where a wanted tensor's are. want sees
 * the file's metadata (cf_st_meta(f, ...)), not yet its tensors. The whole file is
 * still checked (its header, and its length against the tensors'). */
typedef int cf_st_want_fn(const cf_st_file *f, const char *name, void *user);
cf_st_file *cf_st_read_want(const char *path, unsigned flags, cf_st_want_fn *want, void *user);

/* The same from memory; `what` names the input in messages. Copies what it keeps:
 * buf may be freed once this returns. NULL on error. */
cf_st_file *cf_st_parse(const void *buf, size_t len, const char *what);
cf_st_file *cf_st_parse_ex(const void *buf, size_t len, const char *what, unsigned flags);

/* Number of tensors. */
int cf_st_count(const cf_st_file *f);

/* Tensor i, 0 <= i < count, in the order of their data in the file (by offset);
 * for files that cf_st_write made, the order they were given in. NULL if out of range. */
const cf_st_tensor *cf_st_get(const cf_st_file *f, int i);

/* The tensor called name (binary search), or NULL if absent. */
const cf_st_tensor *cf_st_find(const cf_st_file *f, const char *name);

/* The "__metadata__" value for key, or NULL if absent. */
const char *cf_st_meta(const cf_st_file *f, const char *key);
/* The metadata in key order: how many entries, and entry i's key and value (NULL when
 * i is out of range). */
int cf_st_meta_count(const cf_st_file *f);
const char *cf_st_meta_at(const cf_st_file *f, int i, const char **value);

/* Free everything the file owns, tensors' names and data included. NULL is fine. */
void cf_st_free(cf_st_file *f);

#endif
