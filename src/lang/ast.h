/* ast.h - the syntax tree of the model notation (docs/notation.md; the grammar is at
 * the top of parser.c).
 *
 * The parser turns a .flux text into one AST_BLOCK of top-level statements. Every
 * node has the line and column (1-based, columns counted in characters, not bytes)
 * where it starts; an operator node starts where its left operand starts. All nodes
 * and strings live in one arena owned by the cf_ast returned by cf_parse, freed
 * with it. */
#ifndef CF_LANG_AST_H
#define CF_LANG_AST_H

#include <stddef.h>

typedef enum ast_kind {
    AST_NUM,     /* num */
    AST_NAME,    /* name */
    AST_CALL,    /* a(items...): a is the callee; items are expressions or AST_KWARG */
    AST_KWARG,   /* name = a, inside a call's arguments or a net's parameters */
    AST_BINOP,   /* a op b */
    AST_NEG,     /* -a */
    AST_NOT,     /* !a */
    AST_COND,    /* a ? b : c (the condition a, then b, else c), known when the model is compiled */
    AST_TUPLE,   /* (items...), two or more */
    AST_LAMBDA,  /* items (AST_NAME parameters) -> a (an expression or AST_BLOCK) */
    AST_BLOCK,   /* { items... }: statements; the value is the last item */
    AST_ASSIGN,  /* name = a, a statement */
    AST_PREV,    /* name{num}: a state's value num steps ago (num is -1, -2, ...) */
    AST_NET      /* net name(items...) { body }: items are AST_NAME or AST_KWARG (default);
                    a is the body, an AST_BLOCK whose last item is the AST_LAMBDA */
} ast_kind;

typedef enum ast_op {
    OP_ADD,      /* +  */
    OP_SUB,      /* -  */
    OP_MATMUL,   /* *  */
    OP_EMUL,     /* .* */
    OP_EDIV,     /* ./ */
    OP_EADD,     /* .+ */
    OP_ESUB,     /* .- */
    OP_DIV,      /* /  (numbers only; the compiler says so for tensors) */
    /* on numbers known when the model is compiled, true = 1 and false = 0 */
    OP_EQ,       /* == */
    OP_NE,       /* != */
    OP_LT,       /* <  */
    OP_LE,       /* <= */
    OP_GT,       /* >  */
    OP_GE,       /* >= */
    OP_AND,      /* && (the right side evaluated only when the left is true) */
    OP_OR        /* || (the right side evaluated only when the left is false) */
} ast_op;

typedef struct ast ast;
struct ast {
    ast_kind kind;
    int line, col;
    double num;
    const char *name;
    ast_op op;
    ast *a, *b;
    ast *c;      /* AST_COND: the else branch */
    ast **items;
    int n;
};

typedef struct cf_ast cf_ast;   /* a parsed file: the tree and its arena */

/* Limits that give errors rather than stack overflows or runaway memory. */
#define CF_PARSE_MAX_BYTES (4u << 20)   /* a model file of more is refused */
#define CF_PARSE_MAX_DEPTH 200          /* nesting of expressions and blocks */

/* Parse text (len bytes, need not be NUL-terminated) named `file` in messages.
 * Returns NULL on the first error, with cf_last_error() set to
 *   "FILE:LINE:COL: error: expected ')' but found '='"
 * Never crashes on any input: bad UTF-8, NUL bytes, huge numbers, deep nesting and
 * very long lines are all errors (or accepted), never undefined behaviour. */
cf_ast *cf_parse(const char *text, size_t len, const char *file);

/* The root AST_BLOCK of top-level statements. */
const ast *cf_ast_root(const cf_ast *t);

/* The source text, as given to cf_parse (a copy, NUL-terminated), for listings. */
const char *cf_ast_text(const cf_ast *t);

void cf_ast_free(cf_ast *t);

#endif
