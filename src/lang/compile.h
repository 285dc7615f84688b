/* compile.h - from the notation's syntax tree to a model's graph.
 *
 * Compiling evaluates the file's top-level bindings in order (nets are known from
 * the start), then calls `model`'s forward function on fresh inputs, which builds the
 * graph; every node remembers its place in the source and the chain of calls around
 * it. Shapes are inferred as each node is made, so the first misfit stops the
 * compile with the trace of where it happened. */
#ifndef CF_LANG_COMPILE_H
#define CF_LANG_COMPILE_H

#include "cflux.h"
#include "lang/ast.h"

/* The embedded standard library: name ("<stdlib>/affine.flux") and text. */
typedef struct cf_stdlib_file {
    const char *name;
    const char *text;
} cf_stdlib_file;
extern const cf_stdlib_file cf_stdlib_files[];
extern const int cf_stdlib_count;

/* Compile a model's text. With keep, a model whose graph stopped at a shape that did
 * not fit is returned as far as it got, with *failed set (and the error message). */
cf_model *cf_lang_compile(const char *text, size_t len, const char *file, int keep, int *failed);

/* Read a model file (at most CF_PARSE_MAX_BYTES); malloc'd and NUL-terminated. */
char *cf_lang_read_file(const char *path, size_t *len);

#endif
