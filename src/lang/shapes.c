/* shapes.c - `cflux shapes`: the forward function as a listing annotated with the
 * shape of every value, as Flux.jl's @shapes did, marking where shapes stop fitting.
 *
 *   model  (model.flux:9:9)
 *     input x                                     (B, 10)
 *     TLP  (called at model.flux:9:9)
 *       Affine  (called at model.flux:3:12)
 *         <stdlib>/affine.flux:5:8  *   (B, 10) * (10, 20) -> (B, 20)   | x -> x * W + b
 *       ...
 *         <stdlib>/affine.flux:5:8  *   (B, 20) * (21, 15)              | x -> x * W + b
 *         ^ shapes stop fitting here: matrix product shapes do not match */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/graph.h"
#include "lang/compile.h"
#include "ops/op.h"

/* Line `line` of text, without its newline, into buf. */
static const char *source_line(const char *text, int line, char *buf, size_t size)
{
    buf[0] = 0;
    if (!text || line < 1) return buf;
    const char *p = text;
    for (int l = 1; l < line && p; l++) {
        p = strchr(p, '\n');
        if (p) p++;
    }
    if (!p) return buf;
    while (*p == ' ' || *p == '\t') p++;
    size_t n = strcspn(p, "\r\n");
    if (n >= size) n = size - 1;
    memcpy(buf, p, n);
    buf[n] = 0;
    return buf;
}

static const char *text_of(const char *file, const char *user_file, const char *user_text)
{
    if (file && user_file && strcmp(file, user_file) == 0) return user_text;
    for (int i = 0; file && i < cf_stdlib_count; i++)
        if (strcmp(cf_stdlib_files[i].name, file) == 0) return cf_stdlib_files[i].text;
    return NULL;
}

static char *shape_b(cf_shape s, int batch, char *buf, size_t size)
{
    if (batch > 0)
        for (int i = 0; i < s.rank; i++)
            if (s.d[i] == CF_BATCH) s.d[i] = batch;
    return cf_shape_str(s, buf, size);
}

/* Outermost-first list of a node's frames. */
static int chain_of(const cf_node *n, const cf_frame **out, int max)
{
    int k = 0;
    for (const cf_frame *f = n->frame; f && k < max; f = f->parent) out[k++] = f;
    for (int i = 0; i < k / 2; i++) {
        const cf_frame *t = out[i];
        out[i] = out[k - 1 - i];
        out[k - 1 - i] = t;
    }
    return k;
}

#define MAXF 128

int cf_model_print_shapes(const char *path, int batch, FILE *out)
{
    size_t len;
    char *text = cf_lang_read_file(path, &len);
    if (!text) return -1;
    int failed = 0;
    cf_model *m = cf_lang_compile(text, len, path, 1, &failed);
    if (!m) {
        free(text);
        return -1;
    }
    char err[CF_ERRMAX];
    snprintf(err, sizeof err, "%s", failed ? cf_last_error() : "");
    const cf_frame *prev[MAXF];
    int nprev = 0;
    char line[256], s1[96], s2[96], s3[96], place[512];
    /* one column for the shapes: past the widest place (indented as its rows are) */
    int wplace = 0;
    for (int i = 0; i < m->nnodes; i++) {
        const cf_node *n = m->nodes[i];
        if (n->op == CF_OP_PARAM || n->op == CF_OP_STATE || n->op == CF_OP_CONST || n->op == CF_OP_INPUT) continue;
        const cf_frame *ch[MAXF];
        int w = 2 * chain_of(n, ch, MAXF) + snprintf(place, sizeof place, "%s:%d:%d", n->loc.file, n->loc.line, n->loc.col);
        if (w > wplace) wplace = w;
    }
    int wshape = wplace + 2 + 10 + 1;   /* place, two spaces, the op's name in 10, a space */
    for (int i = 0; i < m->nnodes; i++) {
        const cf_node *n = m->nodes[i];
        if (n->op == CF_OP_PARAM || n->op == CF_OP_STATE || n->op == CF_OP_CONST) continue;
        const cf_frame *ch[MAXF];
        int nc = chain_of(n, ch, MAXF), same = 0;
        while (same < nc && same < nprev && ch[same] == prev[same]) same++;
        for (int k = same; k < nc; k++) {
            if (ch[k]->call.file)
                fprintf(out, "%*s%s  (called at %s:%d:%d)\n", 2 * k, "", ch[k]->name, ch[k]->call.file, ch[k]->call.line,
                        ch[k]->call.col);
            else
                fprintf(out, "%*s%s\n", 2 * k, "", ch[k]->name);
        }
        memcpy(prev, ch, (size_t)nc * sizeof *ch);
        nprev = nc;
        int last_failed = failed && i == m->nnodes - 1;
        if (n->op == CF_OP_INPUT) {
            int w = 2 * nc + 6 + (int)strlen(n->name);
            fprintf(out, "%*sinput %s%*s%s\n", 2 * nc, "", n->name, w < wshape ? wshape - w : 1, "",
                    shape_b(n->shape, batch, s1, sizeof s1));
            continue;
        }
        char ins[256] = "";
        for (int k = 0; k < n->nin && k < 4; k++) {
            size_t l = strlen(ins);
            snprintf(ins + l, sizeof ins - l, "%s%s", k ? (n->op == CF_OP_MATMUL ? " * " : ", ") : "",
                     shape_b(n->in[k]->shape, batch, s2, sizeof s2));
        }
        if (!last_failed) {
            size_t l = strlen(ins);
            snprintf(ins + l, sizeof ins - l, " -> %s", shape_b(n->shape, batch, s3, sizeof s3));
        }
        snprintf(place, sizeof place, "%s:%d:%d", n->loc.file, n->loc.line, n->loc.col);
        fprintf(out, "%*s%-*s  %-10s %-40s | %s\n", 2 * nc, "", wplace - 2 * nc, place, cf_ops[n->op]->name, ins,
                source_line(text_of(n->loc.file, path, text), n->loc.line, line, sizeof line));
        if (last_failed) {
            const char *msg = strncmp(err, "error: ", 7) == 0 ? err + 7 : err;
            int w = (int)strcspn(msg, "\n");
            fprintf(out, "%*s^ shapes stop fitting here: %.*s\n", 2 * nc, "", w, msg);
        }
    }
    if (!failed) {
        char s[96];
        for (int o = 0; o < m->noutputs; o++)
            fprintf(out, "output %-*d%s\n", wshape - 7, o, shape_b(m->outputs[o]->shape, batch, s, sizeof s));
    }
    cf_model_free(m);
    free(text);
    if (failed) {
        cf_seterr("%s", err);
        return -1;
    }
    return 0;
}
