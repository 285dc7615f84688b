/* dot.c - the graph in Graphviz DOT: one box per node with its op and shape,
 * parameters and inputs named, edges along the data flow. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "core/graph.h"
#include "ops/op.h"

/* Write s to f with DOT's string escapes. */
static void dot_str(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fputc('\\', f);
        fputc(*s, f);
    }
}

int cf_model_dump_dot(cf_model *m, const char *path)
{
    if (!m || !path) return cf_seterr("error: cf_model_dump_dot: no model or no path");
    int shaped = cf_model_infer_shapes(m) == 0;
    int to_stdout = strcmp(path, "-") == 0;
    cf_file *out = to_stdout ? NULL : cf_file_create(path);
    if (!to_stdout && !out) return -1;
    FILE *f = to_stdout ? stdout : cf_file_stream(out);
    fprintf(f, "digraph model {\n  rankdir=TB;\n  node [shape=box, fontname=\"Helvetica\", fontsize=10];\n");
    for (int i = 0; i < m->nnodes; i++) {
        const cf_node *n = m->nodes[i];
        char shape[96] = "";
        if (shaped) cf_shape_str(n->shape, shape, sizeof shape);
        fprintf(f, "  n%d [label=\"", i);
        if (n->op == CF_OP_CONST) fprintf(f, "%g", (double)n->attr.f[0]);
        else dot_str(f, cf_ops[n->op]->name);
        if (n->name) {
            fputc(' ', f);
            dot_str(f, n->name);
        }
        fprintf(f, "\\n%s\"%s];\n", shape,
                n->op == CF_OP_PARAM   ? ", style=filled, fillcolor=\"#dde8f7\""
                : n->op == CF_OP_STATE ? ", style=filled, fillcolor=\"#f2e6d0\""
                : n->op == CF_OP_INPUT ? ", style=filled, fillcolor=\"#e3f2dc\""
                                       : "");
        for (int j = 0; j < n->nin; j++) fprintf(f, "  n%d -> n%d;\n", n->in[j]->id, i);
    }
    for (int o = 0; o < m->noutputs; o++)
        fprintf(f, "  out%d [label=\"output %d\", shape=plaintext];\n  n%d -> out%d;\n", o, o, m->outputs[o]->id, o);
    fprintf(f, "}\n");
    if (!to_stdout) {
        if (cf_file_commit(out)) return -1;
    } else if (fflush(f) != 0 || ferror(f)) {
        return cf_seterr("error: writing the graph to the standard output failed");
    }
    if (!shaped) cf_clearerr();
    return 0;
}
