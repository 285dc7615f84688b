/* parser.c - recursive descent from .flux text to the tree of ast.h.
 *
 * Grammar (loosest first; newlines and ';' separate statements, see lexer.h):
 *
 *   file     := { NAME '=' expr | 'net' NAME '(' params ')' block }
 *   params   := [ param { ',' param } [','] ]      param := NAME | NAME '=' expr
 *   block    := '{' { NAME '=' expr | expr } '}'
 *               (a net body: bindings, at most one torch(...) declaration among them,
 *               and last its forward function)
 *   expr     := cond [ '->' ( block | expr ) ]  (the left side: a name or a tuple of names)
 *   cond     := or [ '?' expr ':' expr ]         (right-associative, as in C and Julia)
 *   or       := and { '||' and }
 *   and      := compare { '&&' compare }
 *   compare  := additive [ ('==' | '!=' | '<' | '<=' | '>' | '>=') additive ]
 *               (comparisons do not chain: a < b < c is an error)
 *   additive := term { ('+' | '-' | '.+' | '.-') term }
 *   term     := operand { ('*' | '/' | '.*' | './') operand }
 *   operand  := { '-' | '!' } primary { '(' args ')' | '{' '-' INTEGER '}' }
 *               (-NUMBER folds into the number; {-k} only right after a name)
 *   args     := [ arg { ',' arg } [','] ]          arg := NAME '=' expr | expr
 *   primary  := NUMBER | NAME | '(' expr { ',' expr } ')'
 *
 * A block that is never closed is reported as "expected '}' to close the block
 * opened at L:C": at the end of the file, at `net` (nets are top-level only), or,
 * in a net body, at whatever follows the forward function when no '}' closes the
 * body further on (looked for by lexing ahead on a copy of the lexer).
 *
 * Everything the input can nest (parentheses, calls, blocks, forward functions,
 * minus signs) goes through enter(), which refuses more than CF_PARSE_MAX_DEPTH
 * levels, so the C stack stays bounded (about 400 bytes a level at -O2, under
 * 100 KB at the limit); left-associative chains are loops. All nodes live in one
 * arena, so an error anywhere frees everything at once. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "lang/ast.h"
#include "lang/lexer.h"

/* ---- Arena ---------------------------------------------------------------------- */

typedef struct ablock {
    struct ablock *next;
    size_t cap, used;
    _Alignas(16) unsigned char data[];
} ablock;

typedef struct arena {
    ablock *head;
} arena;

#define ARENA_CHUNK ((size_t)64 << 10)

/* n zeroed bytes aligned to 16, or NULL (with the out-of-memory message set). */
static void *arena_alloc(arena *a, size_t n)
{
    ablock *b = a->head;
    void *p;

    if (n > SIZE_MAX / 2) {
        cf_oom(n);
        return NULL;
    }
    n = (n + 15) & ~(size_t)15;
    if (!b || b->cap - b->used < n) {
        size_t cap = n > ARENA_CHUNK ? n : ARENA_CHUNK;
        if (!(b = malloc(sizeof *b + cap))) {
            cf_oom(sizeof *b + cap);
            return NULL;
        }
        b->cap = cap;
        b->used = 0;
        if (a->head && n > ARENA_CHUNK) {   /* a big one-off: keep filling the current */
            b->next = a->head->next;
            a->head->next = b;
        } else {
            b->next = a->head;
            a->head = b;
        }
    }
    p = b->data + b->used;
    b->used += n;
    memset(p, 0, n);
    return p;
}

static void arena_free(arena *a)
{
    ablock *b = a->head, *next;
    for (; b; b = next) {
        next = b->next;
        free(b);
    }
    a->head = NULL;
}

struct cf_ast {
    arena ar;
    char *text;
    ast *root;
};

/* ---- Parser state --------------------------------------------------------------- */

typedef struct parser {
    lexer lx;
    token tok;          /* the current token */
    token next;         /* one token of lookahead, when have_next */
    int have_next;
    tok_kind last;      /* the kind of the token consumed last */
    const char *file;
    arena *ar;
    int depth;
    int failed;
    token closed_open;  /* the '{' and '}' of the block closed last (.s NULL: none) */
    token closed_close;
} parser;

/* A growing list of nodes, kept in the arena (the old copies are simply dropped). */
typedef struct nodes {
    ast **v;
    int n, cap;
} nodes;

static void advance(parser *p)
{
    if (p->tok.kind == T_ERROR) return;
    p->last = p->tok.kind;
    if (p->have_next) {
        p->tok = p->next;
        p->have_next = 0;
    } else p->tok = lex_next(&p->lx);
}

static const token *peek(parser *p)
{
    if (!p->have_next) {
        p->next = p->tok.kind == T_ERROR ? p->tok : lex_next(&p->lx);
        p->have_next = 1;
    }
    return &p->next;
}

/* ---- Errors --------------------------------------------------------------------- */

/* Report MESSAGE at line:col, unless an error was already reported. Returns NULL. */
static void *fail_at(parser *p, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void *fail_at(parser *p, int line, int col, const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    if (p->failed) return NULL;
    p->failed = 1;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    cf_seterr("%s:%d:%d: error: %s", p->file, line, col, msg);
    return NULL;
}

/* The lexer's error, if the current token is one. */
static void *fail_lex(parser *p)
{
    return fail_at(p, p->tok.line, p->tok.col, "%s", p->lx.err);
}

/* "expected WHAT but found TOKEN" at the current token (or its lexical error). */
static void *expected(parser *p, const char *what)
{
    char found[64];
    if (p->tok.kind == T_ERROR) return fail_lex(p);
    return fail_at(p, p->tok.line, p->tok.col, "expected %s but found %s", what,
                   tok_describe(&p->tok, found, sizeof found));
}

/* A message of our own at the current token (or its lexical error). */
static void *fail_here(parser *p, const char *msg)
{
    if (p->tok.kind == T_ERROR) return fail_lex(p);
    return fail_at(p, p->tok.line, p->tok.col, "%s", msg);
}

/* The column where the line holding `at` (a place in the text) starts its text:
 * 1 + the blanks that indent it. */
static int indent_col(const parser *p, const char *at)
{
    const char *src = p->lx.src, *s = at;
    int col = 1;

    while (s > src && s[-1] != '\n') s--;
    if (s == src && p->lx.len >= 3 && !memcmp(src, "\xEF\xBB\xBF", 3)) s += 3;
    for (; s < at && (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\f' || *s == '\v'); s++)
        col++;
    return col;
}

/* Whether the block the current token is in gets closed: 1 if a '}' closes it
 * further on, 0 if the file ends first, -1 if a lexical error comes first (who
 * knows). Lexes ahead on a copy of the lexer, so nothing moves. */
static int closes_later(parser *p)
{
    lexer lx = p->lx;
    token t = p->tok;
    int depth = 0, first = 1;

    for (;;) {
        switch (t.kind) {
        case T_EOF: return 0;
        case T_ERROR: return -1;
        case T_LBRACE: depth++; break;
        case T_RBRACE:
            if (depth-- == 0) return 1;
            break;
        default: break;
        }
        if (first && p->have_next) t = p->next;
        else t = lex_next(&lx);
        first = 0;
    }
}

/* "expected '}' to close the net body (or block) opened at L:C but found TOKEN" at
 * the current token. When the '}' closed last inside this block stands alone on a
 * line, dedented from the line of its '{' to this block's level, it was most
 * likely meant for this block: the message says which block it closed instead. */
static void *unclosed(parser *p, const token *open, int netbody)
{
    const token *o = &p->closed_open, *c = &p->closed_close;
    char found[64], note[128] = "";

    if (p->tok.kind == T_ERROR) return fail_lex(p);
    if (c->s && o->s > open->s && indent_col(p, c->s) == c->col &&
        c->col < indent_col(p, o->s) && c->col <= indent_col(p, open->s))
        snprintf(note, sizeof note, " (the '}' at %d:%d closes the block opened at %d:%d)",
                 c->line, c->col, o->line, o->col);
    return fail_at(p, p->tok.line, p->tok.col,
                   "expected '}' to close the %s opened at %d:%d but found %s%s",
                   netbody ? "net body" : "block", open->line, open->col,
                   tok_describe(&p->tok, found, sizeof found), note);
}

/* One more level of nesting at the current token; 0 (and an error) past the limit. */
static int enter(parser *p)
{
    if (p->depth >= CF_PARSE_MAX_DEPTH) {
        fail_at(p, p->tok.line, p->tok.col, "nesting deeper than %d", CF_PARSE_MAX_DEPTH);
        return 0;
    }
    p->depth++;
    return 1;
}

static void leave(parser *p) { p->depth--; }

/* ---- Nodes ---------------------------------------------------------------------- */

static ast *node(parser *p, ast_kind kind, int line, int col)
{
    ast *e = arena_alloc(p->ar, sizeof *e);
    if (!e) {
        p->failed = 1;
        return NULL;
    }
    e->kind = kind;
    e->line = line;
    e->col = col;
    return e;
}

static ast *node_at(parser *p, ast_kind kind, const token *t)
{
    return node(p, kind, t->line, t->col);
}

static char *copy_name(parser *p, const token *t)
{
    char *s = arena_alloc(p->ar, t->len + 1);
    if (!s) {
        p->failed = 1;
        return NULL;
    }
    memcpy(s, t->s, t->len);
    s[t->len] = 0;
    return s;
}

/* A name node from the current T_NAME token, consuming it. */
static ast *name_node(parser *p, ast_kind kind)
{
    ast *e = node_at(p, kind, &p->tok);
    if (!e || !(e->name = copy_name(p, &p->tok))) return NULL;
    advance(p);
    return e;
}

static int push(parser *p, nodes *l, ast *e)
{
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 4;
        ast **v = arena_alloc(p->ar, (size_t)cap * sizeof *v);
        if (!v) {
            p->failed = 1;
            return 0;
        }
        if (l->n) memcpy(v, l->v, (size_t)l->n * sizeof *v);
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = e;
    return 1;
}

static void set_items(ast *e, const nodes *l)
{
    e->items = l->v;
    e->n = l->n;
}

static int is_sep(const token *t) { return t->kind == T_NEWLINE || t->kind == T_SEMI; }

/* ---- Expressions ---------------------------------------------------------------- */

static ast *parse_expr(parser *p);
static ast *parse_block(parser *p, int netbody);

/* '(' args ')' after the callee f, which starts the call. */
static ast *parse_call(parser *p, ast *f)
{
    ast *call = node(p, AST_CALL, f->line, f->col);
    nodes args = {0};
    int keywords = 0;

    if (!call || !enter(p)) return NULL;
    call->a = f;
    advance(p); /* ( */
    while (p->tok.kind != T_RPAREN) {
        ast *arg;
        if (p->tok.kind == T_NAME && peek(p)->kind == T_EQ) {
            if (!(arg = name_node(p, AST_KWARG))) return NULL;
            advance(p); /* = */
            if (!(arg->a = parse_expr(p))) return NULL;
            keywords = 1;
        } else {
            int line = p->tok.line, col = p->tok.col;
            if (!(arg = parse_expr(p))) return NULL;
            if (keywords)
                return fail_at(p, line, col,
                               "a positional argument cannot follow a keyword argument");
        }
        if (!push(p, &args, arg)) return NULL;
        if (p->tok.kind == T_COMMA) advance(p);
        else if (p->tok.kind != T_RPAREN) return expected(p, "')'");
    }
    advance(p); /* ) */
    leave(p);
    set_items(call, &args);
    return call;
}

/* '{' '-' INTEGER '}' right after the name e: the state's value that many steps ago. */
static ast *parse_prev(parser *p, ast *e)
{
    static const char *what = "a negative step like {-1}";
    double k = 0;
    size_t i;

    advance(p); /* { */
    if (p->tok.kind != T_MINUS) return expected(p, what);
    advance(p);
    if (p->tok.kind != T_NUM || p->tok.len > 9) return expected(p, what);
    for (i = 0; i < p->tok.len; i++) {
        if (p->tok.s[i] < '0' || p->tok.s[i] > '9') return expected(p, what);
        k = k * 10 + (p->tok.s[i] - '0');
    }
    if (k < 1) return expected(p, what);
    advance(p);
    if (p->tok.kind != T_RBRACE) return expected(p, "'}'");
    advance(p);
    e->kind = AST_PREV;
    e->num = -k;
    return e;
}

/* A parenthesised expression or tuple, at '('. */
static ast *parse_paren(parser *p)
{
    int line = p->tok.line, col = p->tok.col;
    nodes items = {0};
    ast *e, *tuple;

    if (!enter(p)) return NULL;
    advance(p);
    if (p->tok.kind == T_RPAREN) {
        if (peek(p)->kind == T_ARROW)
            return fail_at(p, line, col, "a forward function needs at least one parameter");
        return expected(p, "an expression");
    }
    if (!(e = parse_expr(p))) return NULL;
    if (p->tok.kind == T_COMMA) {
        if (!(tuple = node(p, AST_TUPLE, line, col)) || !push(p, &items, e)) return NULL;
        while (p->tok.kind == T_COMMA) {
            advance(p);
            if (!(e = parse_expr(p)) || !push(p, &items, e)) return NULL;
        }
        set_items(tuple, &items);
        e = tuple;
    }
    if (p->tok.kind != T_RPAREN) return expected(p, "')'");
    advance(p);
    leave(p);
    return e;
}

/* An operand: { '-' | '!' } primary { postfix }. A run of prefix signs is a loop
 * (each still counts as a level of nesting); -NUMBER folds into the number. */
static ast *parse_operand(parser *p)
{
    ast *e, *neg = NULL, *inner = NULL;
    int line = p->tok.line, col = p->tok.col, minus = 0, nots = 0, i;

    while (p->tok.kind == T_MINUS || p->tok.kind == T_NOT) {
        ast *n;
        int is_not = p->tok.kind == T_NOT;
        if (!enter(p) || !(n = node_at(p, is_not ? AST_NOT : AST_NEG, &p->tok))) return NULL;
        if (inner) inner->a = n;
        else neg = n;
        inner = n;
        minus++;
        nots += is_not;
        advance(p);
    }
    switch (p->tok.kind) {
    case T_NUM:
        if (!(e = node_at(p, AST_NUM, &p->tok))) return NULL;
        e->num = p->tok.num;
        advance(p);
        break;
    case T_NAME:
        e = name_node(p, AST_NAME);
        break;
    case T_LPAREN:
        e = parse_paren(p);
        break;
    case T_LBRACE:
        return fail_here(p, "a block { ... } can only be the body of a forward function "
                            "(x -> { ... })");
    default:
        return expected(p, "an expression");
    }
    while (e) {
        if (p->tok.kind == T_LPAREN) e = parse_call(p, e);
        else if (p->tok.kind == T_LBRACE && !p->tok.space_before && p->last == T_NAME &&
                 e->kind == AST_NAME)
            e = parse_prev(p, e);
        else break;
    }
    if (!e) return NULL;
    for (i = 0; i < minus; i++) leave(p);
    if (!minus) return e;
    if (e->kind == AST_NUM && !nots) {   /* -3 is the number -3 (and --3 is 3) */
        if (minus % 2) e->num = -e->num;
        e->line = line;
        e->col = col;
        return e;
    }
    inner->a = e;
    return neg;
}

static int mul_op(tok_kind k, ast_op *op)
{
    switch (k) {
    case T_STAR: *op = OP_MATMUL; return 1;
    case T_SLASH: *op = OP_DIV; return 1;
    case T_DOTSTAR: *op = OP_EMUL; return 1;
    case T_DOTSLASH: *op = OP_EDIV; return 1;
    default: return 0;
    }
}

static int add_op(tok_kind k, ast_op *op)
{
    switch (k) {
    case T_PLUS: *op = OP_ADD; return 1;
    case T_MINUS: *op = OP_SUB; return 1;
    case T_DOTPLUS: *op = OP_EADD; return 1;
    case T_DOTMINUS: *op = OP_ESUB; return 1;
    default: return 0;
    }
}

static ast *binop(parser *p, ast_op op, ast *a, ast *b)
{
    ast *e = node(p, AST_BINOP, a->line, a->col);
    if (!e) return NULL;
    e->op = op;
    e->a = a;
    e->b = b;
    return e;
}

/* Sums of products of operands, both left-associative, as two nested loops (one
 * stack frame however long the chain). */
static ast *parse_additive(parser *p)
{
    ast *sum = NULL, *prod;
    ast_op addop = OP_ADD, op;

    for (;;) {
        if (!(prod = parse_operand(p))) return NULL;
        while (mul_op(p->tok.kind, &op)) {
            ast *b;
            advance(p);
            if (!(b = parse_operand(p)) || !(prod = binop(p, op, prod, b))) return NULL;
        }
        if (sum && !(prod = binop(p, addop, sum, prod))) return NULL;
        sum = prod;
        if (!add_op(p->tok.kind, &addop)) return sum;
        advance(p);
    }
}

static int cmp_op(tok_kind k, ast_op *op)
{
    switch (k) {
    case T_EQEQ: *op = OP_EQ; return 1;
    case T_NE: *op = OP_NE; return 1;
    case T_LT: *op = OP_LT; return 1;
    case T_LE: *op = OP_LE; return 1;
    case T_GT: *op = OP_GT; return 1;
    case T_GE: *op = OP_GE; return 1;
    default: return 0;
    }
}

/* additive [ comparison additive ]: one comparison, never a chain (a < b < c means
 * one thing in C and another in Julia; neither is what a reader may guess). */
static ast *parse_compare(parser *p)
{
    ast *a = parse_additive(p), *b;
    ast_op op;

    if (!a || !cmp_op(p->tok.kind, &op)) return a;
    advance(p);
    if (!(b = parse_additive(p)) || !(a = binop(p, op, a, b))) return NULL;
    if (cmp_op(p->tok.kind, &op))
        return fail_here(p, "comparisons do not chain: write a < b && b < c");
    return a;
}

/* compare { '&&' compare } and { '||' and }, left-associative loops. */
static ast *parse_and(parser *p)
{
    ast *e = parse_compare(p), *b;
    while (e && p->tok.kind == T_AND) {
        advance(p);
        if (!(b = parse_compare(p)) || !(e = binop(p, OP_AND, e, b))) return NULL;
    }
    return e;
}

static ast *parse_or(parser *p)
{
    ast *e = parse_and(p), *b;
    while (e && p->tok.kind == T_OR) {
        advance(p);
        if (!(b = parse_and(p)) || !(e = binop(p, OP_OR, e, b))) return NULL;
    }
    return e;
}

/* or [ '?' expr ':' expr ]: the else branch is a whole expression, so that
 * a ? b : c ? d : e nests to the right (and may be a forward function). */
static ast *parse_cond(parser *p)
{
    ast *e = parse_or(p), *cond;

    if (!e || p->tok.kind != T_QUESTION) return e;
    if (!enter(p) || !(cond = node(p, AST_COND, e->line, e->col))) return NULL;
    cond->a = e;
    advance(p); /* ? */
    if (!(cond->b = parse_expr(p))) return NULL;
    if (p->tok.kind != T_COLON) return expected(p, "':' (a ? b : c)");
    advance(p);
    if (!(cond->c = parse_expr(p))) return NULL;
    leave(p);
    return cond;
}

/* An expression, possibly a forward function `params -> body`. */
static ast *parse_expr(parser *p)
{
    int line = p->tok.line, col = p->tok.col;
    ast *e = parse_cond(p), *fn;
    nodes params = {0};
    int i;

    if (!e || p->tok.kind != T_ARROW) return e;
    if (e->kind == AST_NAME) {
        if (!push(p, &params, e)) return NULL;
    } else if (e->kind == AST_TUPLE) {
        for (i = 0; i < e->n; i++) {
            if (e->items[i]->kind != AST_NAME)
                return fail_at(p, e->items[i]->line, e->items[i]->col,
                               "the parameters of a forward function must be names");
            if (!push(p, &params, e->items[i])) return NULL;
        }
    } else
        return fail_at(p, e->line, e->col,
                       "the parameters of a forward function must be names");
    if (!(fn = node(p, AST_LAMBDA, line, col))) return NULL;
    set_items(fn, &params);
    if (!enter(p)) return NULL;
    advance(p); /* -> */
    fn->a = p->tok.kind == T_LBRACE ? parse_block(p, 0) : parse_expr(p);
    if (!fn->a) return NULL;
    leave(p);
    return fn;
}

/* ---- Statements ----------------------------------------------------------------- */

/* NAME '=' expr (an AST_ASSIGN) or, in a block, an expression. */
static ast *parse_stmt(parser *p)
{
    int line = p->tok.line, col = p->tok.col;
    ast *e;

    if (p->tok.kind == T_NAME && peek(p)->kind == T_EQ) {
        if (!(e = name_node(p, AST_ASSIGN))) return NULL;
        advance(p); /* = */
        if (!(e->a = parse_expr(p))) return NULL;
        return e;
    }
    if (!(e = parse_expr(p))) return NULL;
    if (p->tok.kind == T_EQ)
        return fail_at(p, line, col, "the left side of '=' must be a plain name");
    return e;
}

/* '{' statements '}': a forward function's body, or (netbody) a template's body,
 * whose statements are bindings ending with the forward function. */
static ast *parse_block(parser *p, int netbody)
{
    static const char *need_fn = "a net body must end with its forward function (x -> ...)";
    ast *blk = node_at(p, AST_BLOCK, &p->tok), *last = NULL;
    nodes items = {0};
    token open = p->tok;

    if (!blk || !enter(p)) return NULL;
    advance(p); /* { */
    for (;;) {
        ast *s;
        int is_net;
        while (is_sep(&p->tok)) advance(p);
        if (p->tok.kind == T_RBRACE) break;
        if (p->tok.kind == T_EOF) return unclosed(p, &open, netbody);
        /* `net Name` (never a statement here), or anything after a net's forward
         * function: if this block is never closed, its '}' is what is missing. */
        is_net = p->tok.kind == T_NAME && p->tok.len == 3 && !memcmp(p->tok.s, "net", 3) &&
                 peek(p)->kind == T_NAME;
        if (is_net || (netbody && last && last->kind == AST_LAMBDA)) {
            int closed = closes_later(p);
            if (closed < 0)     /* a lexical error further on: go by the indentation */
                closed = p->tok.col > indent_col(p, open.s);
            if (!closed) return unclosed(p, &open, netbody);
            if (is_net) return fail_here(p, "a net can only be defined at top level");
        }
        if (!(s = parse_stmt(p))) return NULL;
        if (netbody) {
            if (last && last->kind == AST_LAMBDA)
                return fail_at(p, s->line, s->col,
                               "the forward function must come last in a net body");
            int decl = s->kind == AST_CALL && s->a->kind == AST_NAME &&
                       (!strcmp(s->a->name, "torch") || !strcmp(s->a->name, "sequence"));
            if (s->kind != AST_ASSIGN && s->kind != AST_LAMBDA && !decl)
                return fail_at(p, s->line, s->col, "%s", need_fn);
        }
        if (!push(p, &items, s)) return NULL;
        last = s;
        if (is_sep(&p->tok)) continue;
        if (p->tok.kind == T_EOF) return unclosed(p, &open, netbody);
        if (p->tok.kind != T_RBRACE) return expected(p, "end of line or '}'");
    }
    if (netbody && (!last || last->kind != AST_LAMBDA)) return fail_here(p, need_fn);
    if (!last) return fail_here(p, "a block must end with an expression");
    if (last->kind == AST_ASSIGN) {
        /* `y = f(...)` last in a block (the Recurrent example in docs/notation.md,
         * "Not yet") sets y and gives its value: the block reads as `y = f(...); y`. */
        ast *val = node(p, AST_NAME, last->line, last->col);
        if (!val || !push(p, &items, val)) return NULL;
        val->name = last->name;
    }
    p->closed_open = open;
    p->closed_close = p->tok;
    advance(p); /* } */
    leave(p);
    set_items(blk, &items);
    return blk;
}

/* net NAME '(' params ')' '{' body '}', at the 'net' keyword. */
static ast *parse_net(parser *p)
{
    ast *net = node_at(p, AST_NET, &p->tok);
    nodes params = {0};
    int defaults = 0;

    if (!net) return NULL;
    advance(p); /* net */
    if (p->tok.kind != T_NAME) return expected(p, "a name");
    if (!(net->name = copy_name(p, &p->tok))) return NULL;
    advance(p);
    if (p->tok.kind != T_LPAREN) return expected(p, "'('");
    if (!enter(p)) return NULL;
    advance(p);
    while (p->tok.kind != T_RPAREN) {
        ast *param;
        if (p->tok.kind != T_NAME) return expected(p, "a parameter name");
        if (peek(p)->kind == T_EQ) {
            if (!(param = name_node(p, AST_KWARG))) return NULL;
            advance(p); /* = */
            if (!(param->a = parse_expr(p))) return NULL;
            defaults = 1;
        } else {
            if (defaults)
                return fail_here(p, "a parameter without a default cannot follow one "
                                    "with a default");
            if (!(param = name_node(p, AST_NAME))) return NULL;
        }
        if (!push(p, &params, param)) return NULL;
        if (p->tok.kind == T_COMMA) advance(p);
        else if (p->tok.kind != T_RPAREN) return expected(p, "')'");
    }
    advance(p); /* ) */
    leave(p);
    set_items(net, &params);
    if (p->tok.kind != T_LBRACE) return expected(p, "'{'");
    if (!(net->a = parse_block(p, 1))) return NULL;
    return net;
}

static ast *parse_top(parser *p)
{
    static const char *binding = "expected a binding 'name = ...' or 'net' at top level";
    ast *root = node(p, AST_BLOCK, 1, 1);
    nodes items = {0};

    if (!root) return NULL;
    for (;;) {
        ast *s;
        while (is_sep(&p->tok)) advance(p);
        if (p->tok.kind == T_EOF) break;
        if (p->tok.kind != T_NAME) return fail_here(p, binding);
        if (peek(p)->kind == T_EQ) s = parse_stmt(p);
        else if (p->tok.len == 3 && !memcmp(p->tok.s, "net", 3)) s = parse_net(p);
        else return fail_here(p, binding);
        if (!s || !push(p, &items, s)) return NULL;
        if (is_sep(&p->tok)) continue;
        if (p->tok.kind != T_EOF) return expected(p, "end of line");
    }
    set_items(root, &items);
    return root;
}

/* ---- Public --------------------------------------------------------------------- */

cf_ast *cf_parse(const char *text, size_t len, const char *file)
{
    cf_ast *t;
    arena ar = {0};
    parser *p;

    if (!file) file = "<input>";
    if (len > CF_PARSE_MAX_BYTES) {
        cf_seterr("%s:1:1: error: the model file is larger than 4 MiB", file);
        return NULL;
    }
    if (!text && len) {
        cf_seterr("%s:1:1: error: no text to parse", file);
        return NULL;
    }
    if (!(t = arena_alloc(&ar, sizeof *t))) goto fail;
    if (!(t->text = arena_alloc(&ar, len + 1))) goto fail;
    if (len) memcpy(t->text, text, len);
    if (!(p = malloc(sizeof *p))) {
        cf_oom(sizeof *p);
        goto fail;
    }
    memset(p, 0, sizeof *p);
    p->file = file;
    p->ar = &ar;
    lex_init(&p->lx, t->text, len);
    p->tok = lex_next(&p->lx);
    t->root = parse_top(p);
    free(p);
    if (!t->root) goto fail;
    t->ar = ar;
    return t;
fail:
    arena_free(&ar);
    return NULL;
}

const ast *cf_ast_root(const cf_ast *t) { return t ? t->root : NULL; }

const char *cf_ast_text(const cf_ast *t) { return t ? t->text : NULL; }

void cf_ast_free(cf_ast *t)
{
    arena ar;
    if (!t) return;
    ar = t->ar;  /* t lives in its own arena */
    arena_free(&ar);
}
