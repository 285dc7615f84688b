/* fuzz_parser.c - libFuzzer target over the .flux parser (cf_parse).
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -Iinclude -Isrc \
 *       tests/fuzz/fuzz_parser.c src/lang/lexer.c src/lang/parser.c src/core/error.c \
 *       -o fuzz_parser
 *   ./fuzz_parser -max_len=4096 tests/fuzz/corpus_parser
 *
 * Every input must either parse, into a tree that keeps the promises of ast.h (and
 * of the parser's grammar: tuples of two or more, lambdas with name parameters,
 * blocks ending with an expression, net bodies ending with their forward function,
 * children starting no earlier than their parent), or fail with exactly one
 * "fuzz:LINE:COL: error: MESSAGE" line. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cflux.h"
#include "lang/ast.h"

static int before(const ast *a, const ast *b)
{
    return a->line < b->line || (a->line == b->line && a->col < b->col);
}

/* Check one node's own promises; its children are pushed by the walk. */
static void check_node(const ast *e, const ast *parent, int lines)
{
    int i;
    if (!e) abort();
    if ((unsigned)e->kind > AST_NET || e->line < 1 || e->col < 1 || e->line > lines) abort();
    if (parent && before(e, parent)) abort();
    if (e->n < 0 || (e->n > 0 && !e->items)) abort();
    for (i = 0; i < e->n; i++)
        if (!e->items[i]) abort();
    switch (e->kind) {
    case AST_NAME:
    case AST_PREV:
    case AST_ASSIGN:
    case AST_KWARG:
    case AST_NET:
        if (!e->name || !e->name[0]) abort();
        break;
    default:
        break;
    }
    switch (e->kind) {
    case AST_BINOP:
        if (!e->a || !e->b || (unsigned)e->op > OP_OR || before(e->b, e->a)) abort();
        break;
    case AST_COND:
        if (!e->a || !e->b || !e->c || before(e->b, e->a) || before(e->c, e->b)) abort();
        break;
    case AST_NOT:
    case AST_NEG:
    case AST_CALL:
    case AST_KWARG:
    case AST_ASSIGN:
        if (!e->a) abort();
        break;
    case AST_TUPLE:
        if (e->n < 2) abort();
        break;
    case AST_PREV:
        if (!(e->num <= -1) || e->num != (double)(long long)e->num) abort();
        break;
    case AST_LAMBDA:
        if (e->n < 1 || !e->a) abort();
        for (i = 0; i < e->n; i++)
            if (e->items[i]->kind != AST_NAME) abort();
        break;
    case AST_BLOCK:
        if (parent && (e->n < 1 || e->items[e->n - 1]->kind == AST_ASSIGN)) abort();
        for (i = 0; parent && i < e->n; i++)
            if (e->items[i]->kind == AST_NET || e->items[i]->kind == AST_KWARG) abort();
        break;
    case AST_NET:
        if (!e->a || e->a->kind != AST_BLOCK || e->a->n < 1) abort();
        if (e->a->items[e->a->n - 1]->kind != AST_LAMBDA) abort();
        for (i = 0; i < e->n; i++)
            if (e->items[i]->kind != AST_NAME && e->items[i]->kind != AST_KWARG) abort();
        break;
    default:
        break;
    }
}

typedef struct pair {
    const ast *e, *parent;
} pair;

/* Walk the tree with an explicit stack: a long a+a+... chain is deep. */
static void check_tree(const ast *root, int lines)
{
    size_t n = 0, cap = 64;
    pair *st = malloc(cap * sizeof *st);
    int i;

    if (!st) return;
    if (!root || root->kind != AST_BLOCK || root->line != 1 || root->col != 1) abort();
    for (i = 0; i < root->n; i++) {
        const ast *s = root->items[i];
        if (!s || (s->kind != AST_ASSIGN && s->kind != AST_NET)) abort();
    }
    st[n++] = (pair){root, NULL};
    while (n) {
        pair p = st[--n];
        const ast *kids[3] = {p.e->a, p.e->b, p.e->c};
        check_node(p.e, p.parent, lines);
        if (n + (size_t)p.e->n + 3 > cap) {
            pair *bigger;
            cap = 2 * (n + (size_t)p.e->n + 3);
            if (!(bigger = realloc(st, cap * sizeof *st))) break;
            st = bigger;
        }
        for (i = 0; i < 3; i++)
            if (kids[i]) st[n++] = (pair){kids[i], p.e};
        for (i = 0; i < p.e->n; i++) st[n++] = (pair){p.e->items[i], p.e};
    }
    free(st);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cf_ast *t = cf_parse((const char *)data, size, "fuzz");
    const char *err, *text;
    int line, col, used = 0, lines = 1;
    size_t i;

    for (i = 0; i < size; i++) lines += data[i] == '\n';
    if (!t) {
        err = cf_last_error();
        if (sscanf(err, "fuzz:%d:%d: error: %n", &line, &col, &used) != 2 || !used) abort();
        if (line < 1 || col < 1 || line > lines || !err[used] || strchr(err, '\n')) abort();
        return 0;
    }
    text = cf_ast_text(t);
    if (!text || (size && memcmp(text, data, size)) || text[size]) abort();
    check_tree(cf_ast_root(t), lines);
    cf_ast_free(t);
    return 0;
}
