/* compile.c - the notation's meaning: evaluate a parsed file into a model's graph.
 *
 * Values at compile time are numbers, tensors (graph nodes, only while a forward
 * function runs), tuples, templates (nets), models (instances: a template's forward
 * function with its environment, a Chain, an Input, a lambda), built-in functions,
 * initialisers, parameters (declared in a net body, made into graph nodes when a
 * forward function first reads them, with their final names) and partial
 * instantiations (a template given all but its `in`, waiting inside a Chain).
 *
 * Two traces are kept as evaluation goes: the compiler's own frame stack, for errors
 * found while evaluating, and the model's scopes (cf_scope_begin_at), which every
 * graph node records, for shape errors. Both read like
 *     error: matrix product shapes do not match: (B, 20) * (21, 15)
 *       in Affine at <stdlib>/affine.flux:5:8
 *       in TLP at model.flux:5:14
 *       in model at model.flux:9:9
 *
 * This file reads the files and builds the model from `model`; compile_int.h lists
 * the other files of the compiler, by concern, and what they share. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/safetensors.h"
#include "lang/compile_int.h"

/* ---- files ---- */

/* Bind every net of a file in en; "defined twice" is an error. */
static int hoist_nets(cc *c, env *en, const ast *root)
{
    for (int i = 0; i < root->n; i++) {
        const ast *s = root->items[i];
        if (s->kind != AST_NET) continue;
        int j = cc_local_index(en, s->name);
        if (j >= 0) {
            const ast *w = en->where[j];
            return cc_err(c, en->file, s->line, s->col, "the net '%s' is defined twice (first at %d:%d)", s->name,
                          w->line, w->col);
        }
        value v = {.kind = V_TEMPLATE, .net = s, .defenv = en};
        if (cc_bind(c, en, s->name, v, s)) return -1;
    }
    return 0;
}

static int eval_top(cc *c, env *en, const ast *root)
{
    for (int i = 0; i < root->n; i++) {
        const ast *s = root->items[i];
        if (s->kind == AST_NET) continue;
        if (s->kind != AST_ASSIGN)
            return cc_err(c, en->file, s->line, s->col, "expected a binding 'name = ...' or a net at the top level");
        int j = cc_local_index(en, s->name);
        if (j >= 0) {
            const ast *w = en->where[j];
            return cc_err(c, en->file, s->line, s->col, "'%s' is bound twice (first at %d:%d)", s->name, w->line,
                          w->col);
        }
        value v;
        c->frames[c->nframes++] = (frame){s->name, NULL, 0, 0};
        int rc = cc_eval(c, en, s->a, &v);
        c->nframes--;
        if (rc || cc_bind(c, en, s->name, v, s)) return -1;
    }
    return 0;
}

static int add_outputs(cc *c, const value *v, const char *file, const ast *where)
{
    if (v->kind == V_TUPLE) {
        for (int i = 0; i < v->n; i++)
            if (add_outputs(c, &v->items[i], file, where)) return -1;
        return 0;
    }
    if (v->kind != V_TENSOR)
        return cc_err(c, file, where->line, where->col, "the model's forward function returns %s, not a value",
                      cc_kind_name(v));
    return cf_output(c->m, v->node) < 0 ? -1 : 0;
}

/* The expression that starts at line:col of src (columns in characters), on one line:
 * to the end of its statement, each run of blanks, newlines and comments one space (none
 * inside parentheses' edges). One too long for a message, or a block, is "Name(...)"
 * or "...". For notes that show the model rewritten. */
static void expr_text(const char *src, int line, int col, char *out, size_t size)
{
    const char *p = src;
    for (int l = 1; l < line && *p; p++) l += *p == '\n';
    for (int k = 1; k < col && *p && *p != '\n'; k++)
        for (p++; (*p & 0xC0) == 0x80; p++) {}
    const char *start = p;
    size_t n = 0;
    int depth = 0, blank = 0, fits = 1;
    for (; *p; p++) {
        char ch = *p;
        if (ch == '#') {
            while (p[1] && p[1] != '\n') p++;
            continue;
        }
        if (depth == 0 && (ch == '\n' || ch == ';')) break;
        if (ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n') {
            blank = 1;
            continue;
        }
        if (ch == '{' || n + 3 > size || n >= 100) {
            fits = 0;
            break;
        }
        depth += ch == '(' || ch == '[';
        depth -= depth > 0 && (ch == ')' || ch == ']');
        if (blank && n && out[n - 1] != '(' && ch != ')') out[n++] = ' ';
        out[n++] = ch;
        blank = 0;
    }
    out[n] = 0;
    if (fits) return;
    for (n = 0, p = start; n + 6 < size && (isalnum((unsigned char)*p) || *p == '_' || (*p & 0x80)); p++)
        out[n++] = *p;
    if (n && *p == '(') snprintf(out + n, size - n, "(...)");
    else snprintf(out, size, "...");
}

/* Build the graph: call model's forward function on fresh inputs (src: the file's text). */
static int build_model(cc *c, env *top, const char *file, const char *src)
{
    int j = cc_local_index(top, "model");
    if (j < 0) {
        c->nframes = 0;
        const char *best = NULL;
        int bestd = 99;
        for (int k = 0; k < top->n; k++) cc_consider("model", top->names[k], &best, &bestd);
        if (best && bestd <= 2)
            return cc_err(c, file, top->where[cc_local_index(top, best)]->line,
                          top->where[cc_local_index(top, best)]->col,
                          "the file does not bind 'model' (did you mean 'model' instead of '%s'?)", best);
        return cc_err(c, file, 1, 1, "the file does not bind 'model' (the model to build: model = ...)");
    }
    value root = top->vals[j];
    const ast *where = top->where[j]->a;   /* the model's expression */
    expr_text(src, where->line, where->col, c->model_text, sizeof c->model_text);
    c->frames[c->nframes++] = (frame){"model", NULL, 0, 0};
    cf_scope_begin_at(c->m, "model", NULL, NULL, 0, 0);
    if (root.kind == V_TEMPLATE) {
        if (cc_instantiate(c, &root, NULL, 0, NULL, NULL, 0, file, where->line, where->col, 0, &root)) return -1;
    }
    if (root.kind != V_MODEL)
        return cc_err(c, file, where->line, where->col, "model must be a model, such as Chain(...), not %s",
                      cc_kind_name(&root));
    inst *r = root.model;
    int nin = 1;
    const char *names[MAX_ARGS] = {"x"};
    if (r->kind == I_NET || r->kind == I_LAMBDA) {
        nin = r->lambda->n;
        for (int k = 0; k < nin && k < MAX_ARGS; k++) names[k] = r->lambda->items[k]->name;
    }
    if (nin > MAX_ARGS) return cc_err(c, file, where->line, where->col, "a model takes at most %d inputs", MAX_ARGS);
    value args[MAX_ARGS];
    for (int k = 0; k < nin; k++) {
        cf_node *x = cf_input_at(c->m, names[k], CF_SCALAR, file, where->line, where->col);
        if (!x) return -1;
        args[k] = tensor_value(x);
        c->unresolved[c->nunresolved++] = x;
    }
    value out;
    if (cc_call_model(c, r, args, nin, file, where->line, where->col, &out)) return -1;
    if (c->nunresolved)
        return cc_err(c, file, where->line, where->col,
                      "cannot tell the shape of the input '%s': begin the model with Input(...)",
                      c->unresolved[0]->name);
    if (add_outputs(c, &out, file, where)) return -1;
    cf_scope_end(c->m);
    c->nframes--;
    return 0;
}

/* Compile text; on failure NULL, unless keep is set and the failure came after the
 * graph began (a shape that does not fit): then the model is returned as far as it
 * got, *failed set, for listings. */
static cf_model *compile(const char *text, size_t len, const char *file, int keep, int *failed, int steps)
{
    cc c = {0};
    c.steps = steps;
    enum { MAXLIBS = 32 };
    cf_ast *user = NULL, *libs[MAXLIBS] = {0};
    cf_model *m = cf_model_new();
    if (!m) return NULL;
    c.m = m;
    /* The standard library: each file's nets see their own file (for locations) and,
     * through the parent, every other library net. */
    env *std = cc_env_new(&c, NULL, "<stdlib>");
    int rc = std ? 0 : -1;
    if (cf_stdlib_count > MAXLIBS) rc = cf_seterr("error: the standard library has more than %d files", MAXLIBS);
    for (int i = 0; i < cf_stdlib_count && rc == 0; i++) {
        const cf_stdlib_file *sf = &cf_stdlib_files[i];
        env *fe = cc_env_new(&c, std, sf->name);
        libs[i] = cf_parse(sf->text, strlen(sf->text), sf->name);
        if (!fe || !libs[i] || hoist_nets(&c, fe, cf_ast_root(libs[i]))) rc = -1;
        for (int k = 0; rc == 0 && k < fe->n; k++)
            if (cc_bind(&c, std, fe->names[k], fe->vals[k], fe->where[k])) rc = -1;
    }
    if (rc == 0) {
        user = cf_parse(text, len, file);
        if (!user) rc = -1;
    }
    env *top = rc == 0 ? cc_env_new(&c, std, file) : NULL;
    if (rc == 0 && !top) rc = -1;
    if (rc == 0) rc = hoist_nets(&c, top, cf_ast_root(user));
    if (rc == 0) rc = eval_top(&c, top, cf_ast_root(user));
    if (rc == 0) rc = build_model(&c, top, file, cf_ast_text(user));
    if (rc == 0) rc = cf_model_infer_shapes(m);
    for (int i = 0; i < MAXLIBS; i++) cf_ast_free(libs[i]);
    cf_ast_free(user);
    cf_arena_free(&c.arena);
    if (rc == 0) {
        m->source = malloc(len + 1);
        m->source_name = strdup(file);
        if (m->source && m->source_name) {
            memcpy(m->source, text, len);
            m->source[len] = 0;
        } else {
            rc = cf_oom(len + strlen(file) + 2);
        }
    }
    if (failed) *failed = rc != 0;
    if (rc && !(keep && c.shape_failed && !m->builderr)) {
        /* after the error, the notes made before it: a state read outside unroll, say,
           tells why a recurrent net's shapes did not fit sequences */
        char msg[CF_ERRMAX];
        const char *notes = cf_model_compile_notes(m);
        snprintf(msg, sizeof msg, "%s%s%.*s", cf_last_error(), *notes ? "\n" : "", (int)strlen(notes) - (*notes != 0),
                 notes);
        cf_model_free(m);
        cf_seterr("%s", msg);
        return NULL;
    }
    return m;
}

cf_model *cf_lang_compile(const char *text, size_t len, const char *file, int keep, int *failed)
{
    return compile(text, len, file, keep, failed, 0);
}

const char *cf_model_compile_notes(const cf_model *m)
{
    return m && m->compile_notes ? m->compile_notes : "";
}

cf_model *cf_model_parse(const char *src, const char *filename)
{
    if (!src) return cf_seterr("error: cf_model_parse: no text"), NULL;
    return compile(src, strlen(src), filename ? filename : "<model>", 0, NULL, 0);
}

/* The text of a model file, NUL-terminated (malloc'd), or NULL with the error. */
char *cf_lang_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return cf_seterr("error: %s: cannot open: %s", path, strerror(errno)), NULL;
    char *buf = malloc(CF_PARSE_MAX_BYTES + 2);
    if (!buf) {
        fclose(f);
        return cf_oom(CF_PARSE_MAX_BYTES), NULL;
    }
    size_t n = fread(buf, 1, CF_PARSE_MAX_BYTES + 1, f);
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return cf_seterr("error: %s: cannot read", path), NULL;
    }
    buf[n] = 0;
    *len = n;
    return buf;
}

cf_model *cf_model_load_steps(const char *path, int steps)
{
    if (!path) return cf_seterr("error: cf_model_load: no path"), NULL;
    if (steps < 0) return cf_seterr("error: cf_model_load_steps: %d steps", steps), NULL;
    size_t n;
    char *text = cf_lang_read_file(path, &n);
    if (!text) return NULL;
    /* a checkpoint or parameter file where the model's source goes: say so, and whose */
    const unsigned char *u = (const unsigned char *)text;
    uint64_t hlen = 0;
    for (int i = 7; n > 8 && i >= 0; i--) hlen = hlen << 8 | u[i];
    if (n > 8 && u[8] == '{' && hlen >= 2 && hlen <= n - 8) {
        free(text);
        cf_st_file *f = cf_st_read_want(path, CF_ST_HEADER_ONLY, NULL, NULL);
        const char *file = f ? cf_st_meta(f, CF_MODEL_FILE_META) : NULL;
        cf_seterr("error: %s: a checkpoint or parameter file (safetensors), not a model's source%s%s%s", path,
                  file && *file ? "; it holds the weights of " : "", file && *file ? file : "",
                  f && cf_st_meta(f, CF_MODEL_SOURCE_META) ? " and its source: load it as a trained model" : "");
        cf_st_free(f);
        return NULL;
    }
    cf_model *m = compile(text, n, path, 0, NULL, steps);
    free(text);
    return m;
}

cf_model *cf_model_load(const char *path) { return cf_model_load_steps(path, 0); }
