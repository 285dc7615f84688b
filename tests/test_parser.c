/* test_parser.c - the .flux parser: tree shapes, positions and error messages.
 *
 * Trees are checked through a compact dump: (call Chain (call Input 784) relu),
 * (+ a b), (fn (x) body), (block ...), (= name value), (kw name value),
 * (net Name (params) body), (tuple ...), (neg a), (not a), (? a b c), y{-1}. */
#include <locale.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cflux.h"
#include "lang/ast.h"
#include "test.h"

/* ---- Helpers -------------------------------------------------------------------- */

static char dumpbuf[1 << 16];
static size_t dumplen;

static void out(const char *fmt, ...)
{
    va_list ap;
    if (dumplen >= sizeof dumpbuf) return;
    va_start(ap, fmt);
    dumplen += vsnprintf(dumpbuf + dumplen, sizeof dumpbuf - dumplen, fmt, ap);
    va_end(ap);
    if (dumplen > sizeof dumpbuf) dumplen = sizeof dumpbuf;
}

static const char *opname(ast_op op)
{
    static const char *names[] = {"+", "-", "*", ".*", "./", ".+", ".-", "/", "==", "!=", "<", "<=", ">", ">=",
                                  "&&", "||"};
    return op <= OP_OR ? names[op] : "?";
}

static void dump(const ast *e)
{
    int i;
    if (!e) {
        out("NULL");
        return;
    }
    switch (e->kind) {
    case AST_NUM: out("%g", e->num); return;
    case AST_NAME: out("%s", e->name); return;
    case AST_PREV: out("%s{%g}", e->name, e->num); return;
    case AST_CALL: out("(call "); dump(e->a); break;
    case AST_KWARG: out("(kw %s ", e->name); dump(e->a); out(")"); return;
    case AST_BINOP: out("(%s ", opname(e->op)); dump(e->a); out(" "); dump(e->b); out(")"); return;
    case AST_NEG: out("(neg "); dump(e->a); out(")"); return;
    case AST_NOT: out("(not "); dump(e->a); out(")"); return;
    case AST_COND: out("(? "); dump(e->a); out(" "); dump(e->b); out(" "); dump(e->c); out(")"); return;
    case AST_TUPLE: out("(tuple"); break;
    case AST_LAMBDA:
        out("(fn (");
        for (i = 0; i < e->n; i++) out(i ? " %s" : "%s", e->items[i]->name);
        out(") ");
        dump(e->a);
        out(")");
        return;
    case AST_BLOCK: out("(block"); break;
    case AST_ASSIGN: out("(= %s ", e->name); dump(e->a); out(")"); return;
    case AST_NET:
        out("(net %s (", e->name);
        for (i = 0; i < e->n; i++) {
            if (i) out(" ");
            dump(e->items[i]);
        }
        out(") ");
        dump(e->a);
        out(")");
        return;
    }
    for (i = 0; i < e->n; i++) {
        out(" ");
        dump(e->items[i]);
    }
    out(")");
}

/* Parse src (as "t.flux") and dump the root block, or return "ERROR <message>". */
static const char *dump_n(const char *src, size_t len)
{
    cf_ast *t = cf_parse(src, len, "t.flux");
    dumplen = 0;
    dumpbuf[0] = 0;
    if (!t) {
        snprintf(dumpbuf, sizeof dumpbuf, "ERROR %s", cf_last_error());
        return dumpbuf;
    }
    dump(cf_ast_root(t));
    cf_ast_free(t);
    return dumpbuf;
}

static const char *d(const char *src) { return dump_n(src, strlen(src)); }

/* Parse src and return the error message, or "parsed" if it parsed. */
static const char *err_n(const char *src, size_t len)
{
    static char buf[4096];
    cf_ast *t = cf_parse(src, len, "t.flux");
    if (t) {
        cf_ast_free(t);
        return "parsed";
    }
    snprintf(buf, sizeof buf, "%s", cf_last_error());
    return buf;
}

static const char *err(const char *src) { return err_n(src, strlen(src)); }

/* The value of the i-th top-level statement (an AST_ASSIGN's value). */
static const ast *value(const cf_ast *t, int i)
{
    const ast *r = cf_ast_root(t);
    return r && i < r->n ? r->items[i]->a : NULL;
}

#define CHECK_POS(e, l, c) CHECK((e) && (e)->line == (l) && (e)->col == (c))

/* ---- docs/notation.md's examples, verbatim ----------------------------------------
 *
 * doc_mlp is the first model of "A first model", doc_tlp the example of "Templates
 * that take models" (the library's Affine written out, and TLP), doc_rnn the
 * recurrent example of "Not yet". docs_hold_the_examples checks that the guide still
 * shows them as they are here. */

static const char *doc_mlp =
    "# An MLP for 28x28 images of 10 classes.\n"
    "model = Chain(\n"
    "  Input(784),\n"
    "  Affine(128), relu,\n"
    "  Affine(64), relu,\n"
    "  Affine(10), softmax)\n";

static const char *doc_tlp =
    "# a template: parameters first, then the forward function\n"
    "net Affine(in, out) {\n"
    "  W = param(in, out)                # default init: glorot uniform\n"
    "  b = param(1, out, init = zeros)\n"
    "  x -> x * W + b\n"
    "}\n"
    "\n"
    "net TLP(first, second) {            # templates can take other models\n"
    "  x -> {\n"
    "    l1 = σ(first(x))\n"
    "    softmax(second(l1))\n"
    "  }\n"
    "}\n"
    "\n"
    "model = TLP(Affine(10, 20), Affine(20, 15))\n";

static const char *doc_rnn =
    "# recurrence: y{-1} is the value y had at the previous step\n"
    "net Recurrent(in, out) {\n"
    "  Wxy = param(in, out)\n"
    "  Wyy = param(out, out)\n"
    "  by  = param(1, out, init = zeros)\n"
    "  y   = state(out)                  # starts at zeros\n"
    "  x -> {\n"
    "    y = tanh(x * Wxy + y{-1} * Wyy + by)\n"
    "  }\n"
    "}\n"
    "\n"
    "model = unroll(Chain(Input(65), LSTM(256), Affine(65), softmax), 50)\n";

TEST(doc_mlp_example)
{
    CHECK(!strcmp(d(doc_mlp),
                  "(block (= model (call Chain (call Input 784) (call Affine 128) relu "
                  "(call Affine 64) relu (call Affine 10) softmax)))"));
}

TEST(doc_tlp_example)
{
    cf_ast *t = cf_parse(doc_tlp, strlen(doc_tlp), "t.flux");
    const ast *r, *net, *body, *fn;
    CHECK(!strcmp(d(doc_tlp),
                  "(block (net Affine (in out) (block (= W (call param in out)) "
                  "(= b (call param 1 out (kw init zeros))) (fn (x) (+ (* x W) b)))) "
                  "(net TLP (first second) (block (fn (x) (block (= l1 (call σ (call first x))) "
                  "(call softmax (call second l1)))))) "
                  "(= model (call TLP (call Affine 10 20) (call Affine 20 15))))"));
    CHECK(t);
    if (!t) return;
    r = cf_ast_root(t);
    CHECK(r->kind == AST_BLOCK && r->n == 3);
    net = r->items[0];
    CHECK(net->kind == AST_NET && !strcmp(net->name, "Affine"));
    CHECK_POS(net, 2, 1);
    CHECK_POS(net->items[0], 2, 12);                /* in */
    CHECK_POS(net->items[1], 2, 16);                /* out */
    body = net->a;
    CHECK(body->kind == AST_BLOCK && body->n == 3);
    CHECK_POS(body, 2, 21);                         /* { */
    CHECK_POS(body->items[0], 3, 3);                /* W = */
    CHECK_POS(body->items[0]->a, 3, 7);             /* param( */
    CHECK_POS(body->items[1]->a->items[2], 4, 21);  /* init = zeros */
    CHECK(body->items[1]->a->items[2]->kind == AST_KWARG);
    fn = body->items[2];
    CHECK(fn->kind == AST_LAMBDA && fn->n == 1);
    CHECK_POS(fn, 5, 3);
    CHECK_POS(fn->a, 5, 8);                         /* x * W + b starts at x */
    CHECK(fn->a->op == OP_ADD && fn->a->a->op == OP_MATMUL);
    /* σ( : the '(' is one column after σ, whatever its bytes */
    CHECK_POS(r->items[1]->a->items[0]->a->items[0]->a, 10, 10);   /* σ(...) call */
    CHECK_POS(r->items[1]->a->items[0]->a->items[0]->a->items[0], 10, 12); /* first(x) */
    CHECK_POS(r->items[2], 15, 1);
    CHECK_POS(r->items[2]->a->items[1], 15, 29);    /* Affine(20, 15) */
    CHECK(!strcmp(cf_ast_text(t), doc_tlp));
    cf_ast_free(t);
}

TEST(doc_recurrent_example)
{
    cf_ast *t = cf_parse(doc_rnn, strlen(doc_rnn), "t.flux");
    const ast *fn, *blk, *prev;
    /* the block ends with `y = ...`: it reads as `y = ...; y` */
    CHECK(!strcmp(d(doc_rnn),
                  "(block (net Recurrent (in out) (block (= Wxy (call param in out)) "
                  "(= Wyy (call param out out)) (= by (call param 1 out (kw init zeros))) "
                  "(= y (call state out)) (fn (x) (block (= y (call tanh (+ (+ (* x Wxy) "
                  "(* y{-1} Wyy)) by))) y)))) "
                  "(= model (call unroll (call Chain (call Input 65) (call LSTM 256) "
                  "(call Affine 65) softmax) 50)))"));
    CHECK(t);
    if (!t) return;
    fn = cf_ast_root(t)->items[0]->a->items[4];
    CHECK(fn->kind == AST_LAMBDA);
    CHECK_POS(fn, 7, 3);
    blk = fn->a;
    CHECK(blk->kind == AST_BLOCK && blk->n == 2);
    CHECK_POS(blk, 7, 8);
    CHECK(blk->items[1]->kind == AST_NAME && !strcmp(blk->items[1]->name, "y"));
    CHECK_POS(blk->items[1], 8, 5);
    prev = blk->items[0]->a->items[0]->a->b->a;     /* y{-1} */
    CHECK(prev->kind == AST_PREV && !strcmp(prev->name, "y") && prev->num == -1);
    CHECK_POS(prev, 8, 24);
    cf_ast_free(t);
}

/* Each example is the body of a fenced block of docs/notation.md. */
TEST(docs_hold_the_examples)
{
    FILE *f = fopen("docs/notation.md", "rb");
    CHECK(f != NULL);
    if (!f) return;
    static char doc[1 << 16];
    size_t n = fread(doc, 1, sizeof doc - 1, f);
    fclose(f);
    doc[n] = 0;
    const char *examples[] = {doc_mlp, doc_tlp, doc_rnn};
    for (int i = 0; i < 3; i++) {
        char block[2048];
        snprintf(block, sizeof block, "\n%s```\n", examples[i]);
        const char *at = strstr(doc, block);
        CHECK(at != NULL);
        if (!at) fprintf(stderr, "docs/notation.md has no block that reads:\n%s", examples[i]);
        else CHECK((at - doc >= 7 && !memcmp(at - 7, "```flux", 7)) ||
                   (at - doc >= 13 && !memcmp(at - 13, "```flux-error", 13)));
    }
}

/* ---- Good inputs ---------------------------------------------------------------- */

TEST(empty_and_blank)
{
    cf_ast *t = cf_parse("", 0, "t.flux");
    CHECK(t && cf_ast_root(t)->kind == AST_BLOCK && cf_ast_root(t)->n == 0);
    CHECK(t && !strcmp(cf_ast_text(t), ""));
    cf_ast_free(t);
    t = cf_parse(NULL, 0, NULL);
    CHECK(t && cf_ast_root(t)->n == 0);
    cf_ast_free(t);
    CHECK(!strcmp(d("\n\n  # only a comment\n;;\n\t\n"), "(block)"));
    CHECK(!strcmp(d("# no newline at the end"), "(block)"));
    cf_ast_free(NULL);
    CHECK(cf_ast_root(NULL) == NULL && cf_ast_text(NULL) == NULL);
}

TEST(numbers)
{
    const char *src = "a = 3\nb = 0.5\nc = 1e-3\nd = 2.5E+4\ne = 1E5\nf = -3\n"
                      "g = 007\nh = 1e-400\ni = 123456789012345678901234567890\n"
                      "j = 0.1e1\nk = - 2.5\nl = --4\n";
    cf_ast *t = cf_parse(src, strlen(src), "t.flux");
    CHECK(t);
    if (!t) return;
    CHECK(value(t, 0)->kind == AST_NUM && value(t, 0)->num == 3);
    CHECK(value(t, 1)->num == 0.5);
    CHECK(value(t, 2)->num == 1e-3);
    CHECK(value(t, 3)->num == 2.5e4);
    CHECK(value(t, 4)->num == 1e5);
    CHECK(value(t, 5)->kind == AST_NUM && value(t, 5)->num == -3); /* folded */
    CHECK_POS(value(t, 5), 6, 5);
    CHECK(value(t, 6)->num == 7);
    CHECK(value(t, 7)->kind == AST_NUM && value(t, 7)->num >= 0 && value(t, 7)->num < 1e-300);
    CHECK(value(t, 8)->num == 123456789012345678901234567890.0);
    CHECK(value(t, 9)->num == 1);
    CHECK(value(t, 10)->kind == AST_NUM && value(t, 10)->num == -2.5);
    CHECK(value(t, 11)->kind == AST_NUM && value(t, 11)->num == 4);
    cf_ast_free(t);
    /* a number runs into the dot operators, not through them */
    CHECK(!strcmp(d("a = 3.*x\nb = 1.-x\nc = 1 .- x\nd = 2./x\ne = x.+1"),
                  "(block (= a (.* 3 x)) (= b (.- 1 x)) (= c (.- 1 x)) (= d (./ 2 x)) "
                  "(= e (.+ x 1)))"));
}

TEST(numbers_ignore_the_locale)
{
    /* a process in a locale with a decimal comma still reads 0.5 as one half */
    const char *names[] = {"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8", "de_DE"};
    char *old = setlocale(LC_NUMERIC, NULL);
    char saved[64];
    int i;
    snprintf(saved, sizeof saved, "%s", old ? old : "C");
    for (i = 0; i < 4; i++)
        if (setlocale(LC_NUMERIC, names[i])) break;
    CHECK(!strcmp(d("a = 0.5\nb = 2.25e1"), "(block (= a 0.5) (= b 22.5))"));
    setlocale(LC_NUMERIC, saved);
}

TEST(precedence_and_associativity)
{
    CHECK(!strcmp(d("a = b + c * d - e"), "(block (= a (- (+ b (* c d)) e)))"));
    CHECK(!strcmp(d("a = b - c - d"), "(block (= a (- (- b c) d)))"));
    CHECK(!strcmp(d("a = b * c .* d ./ e / 2"), "(block (= a (/ (./ (.* (* b c) d) e) 2)))"));
    CHECK(!strcmp(d("a = 1 .- b ./ c .+ d"), "(block (= a (.+ (.- 1 (./ b c)) d)))"));
    CHECK(!strcmp(d("a = -b * c"), "(block (= a (* (neg b) c)))"));
    CHECK(!strcmp(d("a = b * -c"), "(block (= a (* b (neg c))))"));
    CHECK(!strcmp(d("a = b - -2"), "(block (= a (- b -2)))"));
    CHECK(!strcmp(d("a = -f(x)"), "(block (= a (neg (call f x))))"));
    CHECK(!strcmp(d("a = - - b"), "(block (= a (neg (neg b))))"));
    CHECK(!strcmp(d("a = (b + c) * d"), "(block (= a (* (+ b c) d)))"));
    CHECK(!strcmp(d("a = ((b))"), "(block (= a b))"));
}

/* The conditional and its conditions, loosest first: ?: (right-associative), ||, &&,
 * one comparison, then arithmetic; ! binds as tightly as a minus sign. A forward
 * function may be either branch. */
TEST(conditionals_and_comparisons)
{
    CHECK(!strcmp(d("a = s != 1 || i != o ? f(i) : g"),
                  "(block (= a (? (|| (!= s 1) (!= i o)) (call f i) g)))"));
    CHECK(!strcmp(d("a = p || q && r"), "(block (= a (|| p (&& q r))))"));
    CHECK(!strcmp(d("a = p && q || r && s"), "(block (= a (|| (&& p q) (&& r s))))"));
    CHECK(!strcmp(d("a = b + 1 <= c * 2"), "(block (= a (<= (+ b 1) (* c 2))))"));
    CHECK(!strcmp(d("a = p ? 1 : q ? 2 : 3"), "(block (= a (? p 1 (? q 2 3))))"));
    CHECK(!strcmp(d("a = p ? q ? 1 : 2 : 3"), "(block (= a (? p (? q 1 2) 3)))"));
    CHECK(!strcmp(d("a = (p ? 1 : 2) + 3"), "(block (= a (+ (? p 1 2) 3)))"));
    CHECK(!strcmp(d("a = !p == q"), "(block (= a (== (not p) q)))"));
    CHECK(!strcmp(d("a = !(p < q) && -b > 2"), "(block (= a (&& (not (< p q)) (> (neg b) 2))))"));
    CHECK(!strcmp(d("a = !-1"), "(block (= a (not (neg 1))))"));
    CHECK(!strcmp(d("a = x -> p ? relu(x) : x"), "(block (= a (fn (x) (? p (call relu x) x))))"));
    CHECK(!strcmp(d("a = p ? x -> x : y -> relu(y)"), "(block (= a (? p (fn (x) x) (fn (y) (call relu y)))))"));
    CHECK(!strcmp(d("a = f(c == d, k = b >= 2 ? 1 : 0)"), "(block (= a (call f (== c d) (kw k (? (>= b 2) 1 0)))))"));
    CHECK_HAS(err("a = b < c < d"), "t.flux:1:11: error: comparisons do not chain: write a < b && b < c");
    CHECK_HAS(err("a = p ? 1 2"), "t.flux:1:11: error: expected ':' (a ? b : c) but found '2'");
    CHECK_HAS(err("a = p ? 1"), "t.flux:1:10: error: expected ':' (a ? b : c) but found end of file");
    CHECK_HAS(err("a = p & q"), "t.flux:1:7: error: unexpected character '&'");
    CHECK_HAS(err("a = p | q"), "t.flux:1:7: error: unexpected character '|'");
}

TEST(positions)
{
    const char *src = "a = b + c * d\n"
                      "  e = -x .* f(y)(z)\n"
                      "g = (p, q)\n"
                      "h = (u, v) -> u\n"
                      "k = w -> -3\n";
    cf_ast *t = cf_parse(src, strlen(src), "t.flux");
    CHECK(t);
    if (!t) return;
    CHECK_POS(cf_ast_root(t), 1, 1);
    CHECK_POS(cf_ast_root(t)->items[0], 1, 1);      /* assign */
    CHECK_POS(value(t, 0), 1, 5);                   /* + at b */
    CHECK_POS(value(t, 0)->b, 1, 9);                /* * at c */
    CHECK_POS(value(t, 0)->b->b, 1, 13);            /* d */
    CHECK_POS(cf_ast_root(t)->items[1], 2, 3);
    CHECK_POS(value(t, 1), 2, 7);                   /* .* at - */
    CHECK(value(t, 1)->a->kind == AST_NEG);
    CHECK_POS(value(t, 1)->a, 2, 7);
    CHECK_POS(value(t, 1)->a->a, 2, 8);             /* x */
    CHECK_POS(value(t, 1)->b, 2, 13);               /* f(y)(z) at f */
    CHECK_POS(value(t, 1)->b->a, 2, 13);            /* f(y) at f */
    CHECK_POS(value(t, 1)->b->items[0], 2, 18);     /* z */
    CHECK(value(t, 2)->kind == AST_TUPLE && value(t, 2)->n == 2);
    CHECK_POS(value(t, 2), 3, 5);                   /* ( */
    CHECK_POS(value(t, 2)->items[1], 3, 9);
    CHECK(value(t, 3)->kind == AST_LAMBDA && value(t, 3)->n == 2);
    CHECK_POS(value(t, 3), 4, 5);                   /* ( */
    CHECK_POS(value(t, 3)->items[1], 4, 9);         /* v */
    CHECK_POS(value(t, 4), 5, 5);                   /* w */
    CHECK_POS(value(t, 4)->a, 5, 10);               /* -3 at - */
    cf_ast_free(t);
}

TEST(utf8_names)
{
    const char *src = "σ′ = Δ₀(x)\nstate′ = σ(x)\nΔ = Wₒ * hᵢ + b_1\n";
    cf_ast *t = cf_parse(src, strlen(src), "t.flux");
    CHECK(!strcmp(d(src), "(block (= σ′ (call Δ₀ x)) (= state′ (call σ x)) "
                          "(= Δ (+ (* Wₒ hᵢ) b_1)))"));
    CHECK(t);
    if (!t) return;
    CHECK_POS(value(t, 0)->items[0], 1, 9);   /* x after Δ₀( : two code points each */
    CHECK_POS(value(t, 1)->items[0], 2, 12);
    CHECK_POS(value(t, 2)->b, 3, 15);         /* b_1 */
    cf_ast_free(t);
    /* a byte order mark is skipped; columns start after it */
    t = cf_parse("\xEF\xBB\xBFmodel = x", 12, "t.flux");
    CHECK(t && value(t, 0)->col == 9);
    cf_ast_free(t);
}

TEST(calls_kwargs_tuples)
{
    CHECK(!strcmp(d("a = f()"), "(block (= a (call f)))"));
    CHECK(!strcmp(d("a = f(x,)"), "(block (= a (call f x)))"));
    CHECK(!strcmp(d("a = f(x, y = 2, z = g(1),)"),
                  "(block (= a (call f x (kw y 2) (kw z (call g 1)))))"));
    CHECK(!strcmp(d("a = Affine(3, 4)(x)"), "(block (= a (call (call Affine 3 4) x)))"));
    CHECK(!strcmp(d("a = f(a)(b)(c)"), "(block (= a (call (call (call f a) b) c)))"));
    CHECK(!strcmp(d("a = (a, b)"), "(block (= a (tuple a b)))"));
    CHECK(!strcmp(d("a = ((a, b), c, -1)"), "(block (= a (tuple (tuple a b) c -1)))"));
    CHECK(!strcmp(d("a = conv2d(x, K, b, stride = 1, pad = 0)"),
                  "(block (= a (call conv2d x K b (kw stride 1) (kw pad 0))))"));
    CHECK(!strcmp(d("a = f (x)"), "(block (= a (call f x)))"));
}

TEST(lambdas)
{
    CHECK(!strcmp(d("f = x -> x"), "(block (= f (fn (x) x)))"));
    CHECK(!strcmp(d("f = x -> a + b"), "(block (= f (fn (x) (+ a b))))"));
    CHECK(!strcmp(d("f = (x, h) -> (h, x)"), "(block (= f (fn (x h) (tuple h x))))"));
    CHECK(!strcmp(d("f = (x) -> x"), "(block (= f (fn (x) x)))"));
    CHECK(!strcmp(d("f = x -> y -> x .* y"), "(block (= f (fn (x) (fn (y) (.* x y)))))"));
    CHECK(!strcmp(d("m = Chain(Input(2), x -> x .* 2)"),
                  "(block (= m (call Chain (call Input 2) (fn (x) (.* x 2)))))"));
    CHECK(!strcmp(d("m = Chain(x -> x, y -> (y, y))"),
                  "(block (= m (call Chain (fn (x) x) (fn (y) (tuple y y)))))"));
    CHECK(!strcmp(d("f = x -> { a = x; a }"), "(block (= f (fn (x) (block (= a x) a))))"));
    CHECK(!strcmp(d("f = x -> {x}"), "(block (= f (fn (x) (block x))))"));
    CHECK(!strcmp(d("f = x -> { y = x }"), "(block (= f (fn (x) (block (= y x) y))))"));
    CHECK(!strcmp(d("f = (x -> x)(3)"), "(block (= f (call (fn (x) x) 3)))"));
}

TEST(blocks_and_parentheses_nest)
{
    /* newlines in ( ) are ignored; inside a { } inside ( ) they separate again */
    const char *src = "m = Chain(\n"
                      "  Input(2),\n"
                      "  x -> {\n"
                      "    h = f(x,\n"
                      "          y)\n"
                      "\n"
                      "    g(h)\n"
                      "  },\n"
                      "  relu\n"
                      ")\n";
    CHECK(!strcmp(d(src), "(block (= m (call Chain (call Input 2) "
                          "(fn (x) (block (= h (call f x y)) (call g h))) relu)))"));
    CHECK(!strcmp(d("f = x -> { a = 1;; b = 2\n\n; (a, b) ;}"),
                  "(block (= f (fn (x) (block (= a 1) (= b 2) (tuple a b)))))"));
}

TEST(prev_steps)
{
    CHECK(!strcmp(d("f = x -> { y = y{-1} + y{-2} .* c{-10}; y }"),
                  "(block (= f (fn (x) (block (= y (+ y{-1} (.* y{-2} c{-10}))) y))))"));
    CHECK(!strcmp(d("f = x -> s{-1}(x)"), "(block (= f (fn (x) (call s{-1} x))))"));
    CHECK(!strcmp(d("f = x -> -y{-1}"), "(block (= f (fn (x) (neg y{-1}))))"));
}

TEST(nets)
{
    CHECK(!strcmp(d("net Conv2D(in, out, k, stride = 1, pad = 0) {\n"
                    "  K = param(k, k, in, out)\n"
                    "  x -> conv2d(x, K, stride = stride, pad = pad)\n"
                    "}"),
                  "(block (net Conv2D (in out k (kw stride 1) (kw pad 0)) (block "
                  "(= K (call param k k in out)) (fn (x) (call conv2d x K (kw stride stride) "
                  "(kw pad pad))))))"));
    CHECK(!strcmp(d("net Id() { x -> x }"), "(block (net Id () (block (fn (x) x))))"));
    CHECK(!strcmp(d("net Two(a,\n b,\n) { (x, h) -> (h, x) }; m = Two(1, 2)"),
                  "(block (net Two (a b) (block (fn (x h) (tuple h x)))) "
                  "(= m (call Two 1 2)))"));
    CHECK(!strcmp(d("net S(n) {\n\n  W = param(n)\n\n  x -> x * W\n\n}\n"),
                  "(block (net S (n) (block (= W (call param n)) (fn (x) (* x W)))))"));
    /* `net` is a keyword only where a statement starts, and not before '=' */
    CHECK(!strcmp(d("net = 3\nm = net(net)"), "(block (= net 3) (= m (call net net)))"));
}

TEST(separators_and_comments)
{
    CHECK(!strcmp(d("a = 1; b = 2;c=3"), "(block (= a 1) (= b 2) (= c 3))"));
    CHECK(!strcmp(d("a = f(1, # one\n      2) # two\n# three\nb = 2 # end"),
                  "(block (= a (call f 1 2)) (= b 2))"));
    CHECK(!strcmp(d("a = 1\r\nb = 2\r\n"), "(block (= a 1) (= b 2))"));
    CHECK(!strcmp(d("a = 1 # σ and Δ in a comment\n"), "(block (= a 1))"));
}

TEST(source_text_is_copied)
{
    char src[16] = "a = b XXXXXXX";
    cf_ast *t = cf_parse(src, 5, "t.flux");   /* not NUL-terminated at 5 */
    CHECK(t && !strcmp(cf_ast_text(t), "a = b"));
    src[0] = 'z';
    CHECK(t && !strcmp(cf_ast_text(t), "a = b") && !strcmp(cf_ast_root(t)->items[0]->name, "a"));
    cf_ast_free(t);
}

TEST(long_inputs)
{
    /* a 100 KB line: a left-associative chain parses by looping, not recursing */
    size_t n = 4 + 2 * 50000, i;
    char *src = malloc(n + 1);
    cf_ast *t;
    const ast *e;
    int depth = 0;
    memcpy(src, "a = ", 4);
    for (i = 0; i < 50000; i++) memcpy(src + 4 + 2 * i, i ? "+x" : " x", 2);
    src[n] = 0;
    t = cf_parse(src, n, "t.flux");
    CHECK(t);
    for (e = t ? value(t, 0) : NULL; e && e->kind == AST_BINOP; e = e->a) depth++;
    CHECK(depth == 49999);
    cf_ast_free(t);
    /* 100 KB of call arguments */
    memcpy(src, "a = f(", 6);
    for (i = 6; i + 1 < n; i += 2) memcpy(src + i, "1,", 2);
    src[n - 1] = ')';
    t = cf_parse(src, n, "t.flux");
    CHECK(t && value(t, 0)->kind == AST_CALL && value(t, 0)->n > 49000);
    cf_ast_free(t);
    /* a 100 KB name */
    memcpy(src, "a = ", 4);
    memset(src + 4, 'z', n - 4);
    t = cf_parse(src, n, "t.flux");
    CHECK(t && strlen(value(t, 0)->name) == n - 4);
    cf_ast_free(t);
    free(src);
}

TEST(nesting_up_to_the_limit)
{
    char src[1024];
    size_t i, n = 0;
    n += sprintf(src, "a = ");
    for (i = 0; i < 150; i++) src[n++] = '(';
    src[n++] = 'x';
    for (i = 0; i < 150; i++) src[n++] = ')';
    CHECK(!strcmp(dump_n(src, n), "(block (= a x))"));
}

/* ---- Errors --------------------------------------------------------------------- */

TEST(error_format_of_the_language_doc)
{
    const char *src = "net A(in, out) {\n  W = param(in, out)\n  b = param(1= out)\n  x -> x }";
    cf_ast *t = cf_parse(src, strlen(src), "model.flux");
    CHECK(!t);
    CHECK(!strcmp(cf_last_error(), "model.flux:3:14: error: expected ')' but found '='"));
}

TEST(syntax_errors)
{
    CHECK_HAS(err("model = Affine(3 4)"), "t.flux:1:18: error: expected ')' but found '4'");
    CHECK_HAS(err("model = (a + b = c)"), "t.flux:1:16: error: expected ')' but found '='");
    CHECK_HAS(err("model = f(\n  1,\n"), "t.flux:3:1: error: expected an expression but found end of file");
    CHECK_HAS(err("model =\nx"), "t.flux:1:8: error: expected an expression but found end of line");
    CHECK_HAS(err("model = "), "t.flux:1:9: error: expected an expression but found end of file");
    CHECK_HAS(err("a = 1 2"), "t.flux:1:7: error: expected end of line but found '2'");
    CHECK_HAS(err("a = f(x}"), "t.flux:1:8: error: expected ')' but found '}'");
    CHECK_HAS(err("a = b {-1}"), "t.flux:1:7: error: expected end of line but found '{'");
    CHECK_HAS(err("a = x ->"), "t.flux:1:9: error: expected an expression but found end of file");
    CHECK_HAS(err("a = (a,)"), "t.flux:1:8: error: expected an expression but found ')'");
    CHECK_HAS(err("a = (a, b = 1)"), "t.flux:1:11: error: expected ')' but found '='");
    CHECK_HAS(err("a = b = c"), "t.flux:1:7: error: expected end of line but found '='");
    CHECK_HAS(err("a = f(a; b)"), "t.flux:1:8: error: expected ')' but found ';'");
    CHECK_HAS(err("a = f(x ThisIsAVeryLongNameThatGoesOnAndOnAndOnForeverAndEver)"),
              "t.flux:1:9: error: expected ')' but found 'ThisIsAVeryLongNameThatGoesOnAndOnAndOnF...'");
    CHECK_HAS(err("a = f(x σσσσσσσσσσσσσσσσσσσσσσσσσσσσσσσσσσσσσσσσσσσσσσ)"),
              "expected ')' but found 'σσσσσσσσσσσσσσσσσσσσ...'");
}

TEST(top_level_errors)
{
    CHECK_HAS(err("relu(x)"), "t.flux:1:1: error: expected a binding 'name = ...' or 'net' at top level");
    CHECK_HAS(err("a = 1\n  3 = x"), "t.flux:2:3: error: expected a binding 'name = ...' or 'net' at top level");
    CHECK_HAS(err("a = 1\n}"), "t.flux:2:1: error: expected a binding 'name = ...' or 'net' at top level");
    CHECK_HAS(err("y{-1} = 3"), "t.flux:1:1: error: expected a binding 'name = ...' or 'net' at top level");
}

TEST(net_errors)
{
    CHECK_HAS(err("net (x) { x -> x }"), "t.flux:1:5: error: expected a name but found '('");
    CHECK_HAS(err("net A x"), "t.flux:1:7: error: expected '(' but found 'x'");
    CHECK_HAS(err("net A(x) x -> x"), "t.flux:1:10: error: expected '{' but found 'x'");
    CHECK_HAS(err("net A(x)\n{ x -> x }"), "t.flux:1:9: error: expected '{' but found end of line");
    CHECK_HAS(err("net A(1) { x -> x }"), "t.flux:1:7: error: expected a parameter name but found '1'");
    CHECK_HAS(err("net A(x y) { x -> x }"), "t.flux:1:9: error: expected ')' but found 'y'");
    CHECK_HAS(err("net A(x = 1, y) { x -> x }"),
              "t.flux:1:14: error: a parameter without a default cannot follow one with a default");
    CHECK_HAS(err("net A(x) {\n  W = 1\n}"),
              "t.flux:3:1: error: a net body must end with its forward function (x -> ...)");
    CHECK_HAS(err("net A(x) {}"),
              "t.flux:1:11: error: a net body must end with its forward function (x -> ...)");
    CHECK_HAS(err("net A(x) {\n  relu(x)\n}"),
              "t.flux:2:3: error: a net body must end with its forward function (x -> ...)");
    CHECK_HAS(err("net A(x) {\n  x -> x\n  W = 1\n}"),
              "t.flux:3:3: error: the forward function must come last in a net body");
    CHECK_HAS(err("net A(x) { x -> x"),
              "t.flux:1:18: error: expected '}' to close the net body opened at 1:10 but found end of file");
}

TEST(unclosed_braces)
{
    /* a net body's '}' missing before the next statement: said at that statement */
    CHECK_HAS(err("net Foo(n) {\n  W = param(n, n)\n  x -> x * W\n\nmodel = Chain(Input(3), Foo(3))\n"),
              "t.flux:5:1: error: expected '}' to close the net body opened at 1:12 but found 'model'");
    /* ... also before another net, and with a lexical error further on */
    CHECK_HAS(err("net A(x) {\n  x -> x\nnet B(y) {\n  y -> y\n}\nmodel = B(1)"),
              "t.flux:3:1: error: expected '}' to close the net body opened at 1:10 but found 'net'");
    CHECK_HAS(err("net A(x) {\n  x -> x\nmodel = A(1) @"),
              "t.flux:3:1: error: expected '}' to close the net body opened at 1:10 but found 'model'");
    /* an inner block never closed: its '}' went to the net body, which the message says */
    CHECK_HAS(err("net Foo(n) {\n  W = param(n, n)\n  x -> {\n    y = x * W\n    relu(y)\n}\n"
                  "model = Chain(Input(3), Foo(3))"),
              "t.flux:7:1: error: expected '}' to close the net body opened at 1:12 but found 'model' "
              "(the '}' at 6:1 closes the block opened at 3:8)");
    CHECK_HAS(err("net A(x) {\n  x -> {\n    relu(x)\n}\n"),
              "t.flux:5:1: error: expected '}' to close the net body opened at 1:10 but found end of file "
              "(the '}' at 4:1 closes the block opened at 2:8)");
    /* ... but not when that '}' lines up with its own block */
    CHECK(!strstr(err("net A(x) {\n  x -> {\n    relu(x)\n  }\n"), "closes the block"));
    /* at the end of the file */
    CHECK_HAS(err("net Foo(n) {\n  W = param(n, n)\n  x -> x * W\n"),
              "t.flux:4:1: error: expected '}' to close the net body opened at 1:12 but found end of file");
    CHECK_HAS(err("model = Chain(Input(3), x -> {\n  y = relu(x)\n  y\n"),
              "t.flux:4:1: error: expected '}' to close the block opened at 1:30 but found end of file");
    CHECK_HAS(err("f = x -> {\n  y = relu(x)"),
              "t.flux:2:14: error: expected '}' to close the block opened at 1:10 but found end of file");
    CHECK_HAS(err("f = x -> {\n  g = y -> {\n    y\n  }\n  g(x)\n\nnet A(x) { x -> x }\nmodel = A(1)"),
              "t.flux:7:1: error: expected '}' to close the block opened at 1:10 but found 'net'");
    /* a net inside a block that is closed: nets are top-level only */
    CHECK_HAS(err("net A(x) {\n  net B(y) { y -> y }\n  x -> x\n}"),
              "t.flux:2:3: error: a net can only be defined at top level");
    /* a statement after the forward function of a net that is closed */
    CHECK_HAS(err("net A(x) {\n  x -> x\n  W = 1 @\n}"),
              "t.flux:3:3: error: the forward function must come last in a net body");
    CHECK_HAS(err("net A(x) { x -> x; W = 1 }"),
              "t.flux:1:20: error: the forward function must come last in a net body");
    /* ... and the lexer's own errors still come first */
    CHECK_HAS(err("net A(x) {\n  x -> x\n  W = 1x\n"), "t.flux:3:7: error: malformed number '1x'");
    CHECK_HAS(err("f = x -> {\n  y \xff"), "t.flux:2:5: error: invalid UTF-8 byte 0xff");
}

TEST(block_and_lambda_errors)
{
    CHECK_HAS(err("f = x -> { }"), "t.flux:1:12: error: a block must end with an expression");
    CHECK_HAS(err("f = x -> {\n  y{-1} = 3\n  y\n}"),
              "t.flux:2:3: error: the left side of '=' must be a plain name");
    CHECK_HAS(err("f = x -> { a = 1 b }"), "t.flux:1:18: error: expected end of line or '}' but found 'b'");
    CHECK_HAS(err("f = {a}"),
              "t.flux:1:5: error: a block { ... } can only be the body of a forward function (x -> { ... })");
    CHECK_HAS(err("f = () -> 1"), "t.flux:1:5: error: a forward function needs at least one parameter");
    CHECK_HAS(err("f = ()"), "t.flux:1:6: error: expected an expression but found ')'");
    CHECK_HAS(err("f = (x, 1) -> x"), "t.flux:1:9: error: the parameters of a forward function must be names");
    CHECK_HAS(err("f = g(x) -> x"), "t.flux:1:5: error: the parameters of a forward function must be names");
    CHECK_HAS(err("f = a + x -> x"), "t.flux:1:5: error: the parameters of a forward function must be names");
    CHECK_HAS(err("f = g(x = 1, 2)"), "t.flux:1:14: error: a positional argument cannot follow a keyword argument");
}

TEST(prev_errors)
{
    CHECK_HAS(err("f = x -> y{1}"), "t.flux:1:12: error: expected a negative step like {-1} but found '1'");
    CHECK_HAS(err("f = x -> y{-x}"), "t.flux:1:13: error: expected a negative step like {-1} but found 'x'");
    CHECK_HAS(err("f = x -> y{-1.5}"), "t.flux:1:13: error: expected a negative step like {-1} but found '1.5'");
    CHECK_HAS(err("f = x -> y{-0}"), "t.flux:1:13: error: expected a negative step like {-1} but found '0'");
    CHECK_HAS(err("f = x -> y{}"), "t.flux:1:12: error: expected a negative step like {-1} but found '}'");
    CHECK_HAS(err("f = x -> y{-1"), "t.flux:1:14: error: expected '}' but found end of file");
    CHECK_HAS(err("f = x -> (y){-1}"), "t.flux:1:13: error: expected end of line but found '{'");
}

TEST(lexical_errors)
{
    CHECK_HAS(err("a = x @ y"), "t.flux:1:7: error: unexpected character '@'");
    CHECK_HAS(err("a = x ^ 2"), "t.flux:1:7: error: unexpected character '^'");
    CHECK_HAS(err("a = $x"), "t.flux:1:5: error: unexpected character '$'");
    CHECK_HAS(err("a = .5"), "t.flux:1:5: error: unexpected character '.'");
    CHECK_HAS(err("a = x. y"), "t.flux:1:6: error: unexpected character '.'");
    CHECK_HAS(err("a = 1.5.3"), "t.flux:1:5: error: malformed number '1.5.3'");
    CHECK_HAS(err("model = Chain(Input(4), Affine(3.4.5))"), "t.flux:1:32: error: malformed number '3.4.5'");
    CHECK_HAS(err("a = 1.2.3.4 + 1"), "t.flux:1:5: error: malformed number '1.2.3.4'");
    CHECK_HAS(err("a = 1e5.5"), "t.flux:1:5: error: malformed number '1e5.5'");
    CHECK_HAS(err("a = 3.4.5x"), "t.flux:1:5: error: malformed number '3.4.5x'");
    CHECK_HAS(err("a = 3.4. b"), "t.flux:1:8: error: unexpected character '.'");
    CHECK(!strcmp(err("a = 3.4.*x + 1e2./y"), "parsed"));  /* '.' then an operator is fine */
    CHECK_HAS(err("a = 1e400"), "t.flux:1:5: error: number '1e400' is too large");
    CHECK_HAS(err("\n\n  a = -1e999 + 1"), "t.flux:3:8: error: number '1e999' is too large");
    CHECK_HAS(err("a = 2x"), "t.flux:1:5: error: malformed number '2x'");
    CHECK_HAS(err("a = 1e"), "t.flux:1:5: error: malformed number '1e'");
    CHECK_HAS(err("a = 1\x01"), "t.flux:1:6: error: unexpected character '\\x01'");
    CHECK_HAS(err_n("a = b\0c", 7), "t.flux:1:6: error: unexpected character '\\0'");
    CHECK_HAS(err_n("a = b # \0", 9), "t.flux:1:9: error: unexpected character '\\0'");
    CHECK_HAS(err("σ = σ(x @"), "t.flux:1:9: error: unexpected character '@'");
}

TEST(utf8_errors)
{
    CHECK_HAS(err("a = \xff"), "t.flux:1:5: error: invalid UTF-8 byte 0xff");
    CHECK_HAS(err("a = σ\xce"), "t.flux:1:6: error: invalid UTF-8 byte 0xce");         /* cut short */
    CHECK_HAS(err("a = \xc0\xaf"), "t.flux:1:5: error: invalid UTF-8 byte 0xc0");      /* overlong */
    CHECK_HAS(err("a = \xed\xa0\x80"), "t.flux:1:5: error: invalid UTF-8 byte 0xed");  /* surrogate */
    CHECK_HAS(err("a = \xf4\x90\x80\x80"), "t.flux:1:5: error: invalid UTF-8 byte 0xf4");
    CHECK_HAS(err("a = x\xe2\x28"), "t.flux:1:6: error: invalid UTF-8 byte 0xe2");
    CHECK_HAS(err("a = 1 # ok σ then \x80\n"), "t.flux:1:19: error: invalid UTF-8 byte 0x80");
}

TEST(first_error_wins)
{
    CHECK_HAS(err("a = ) @"), "t.flux:1:5: error: expected an expression but found ')'");
    CHECK_HAS(err("a = 1 @"), "t.flux:1:7: error: unexpected character '@'");
    CHECK_HAS(err("a = f(1 = 1e400)"), "t.flux:1:9: error: expected ')' but found '='");
    CHECK_HAS(err("a = (1 \xff"), "t.flux:1:8: error: invalid UTF-8 byte 0xff");
}

/* n copies of `unit` after `prefix`, then `suffix`. */
static char *repeat(const char *prefix, const char *unit, size_t n, const char *suffix, size_t *len)
{
    size_t lp = strlen(prefix), lu = strlen(unit), ls = strlen(suffix), i;
    char *s = malloc(lp + lu * n + ls + 1);
    memcpy(s, prefix, lp);
    for (i = 0; i < n; i++) memcpy(s + lp + lu * i, unit, lu);
    memcpy(s + lp + lu * n, suffix, ls + 1);
    *len = lp + lu * n + ls;
    return s;
}

TEST(limits)
{
    size_t len;
    char *s;

    s = repeat("a = ", "(", 100000, "", &len);
    CHECK_HAS(err_n(s, len), "t.flux:1:205: error: nesting deeper than 200");
    free(s);
    s = repeat("a = ", "(", 1000000, "x", &len);      /* 1 MB of '(' */
    CHECK_HAS(err_n(s, len), "t.flux:1:205: error: nesting deeper than 200");
    free(s);
    s = repeat("a = ", "-", 100000, "x", &len);
    CHECK_HAS(err_n(s, len), "t.flux:1:205: error: nesting deeper than 200");
    free(s);
    s = repeat("a = ", "f(", 100000, "", &len);
    CHECK_HAS(err_n(s, len), "t.flux:1:406: error: nesting deeper than 200");
    free(s);
    s = repeat("a = ", "x -> ", 100000, "x", &len);
    CHECK_HAS(err_n(s, len), "t.flux:1:1007: error: nesting deeper than 200");
    free(s);
    s = repeat("f = x -> ", "{x -> ", 100000, "", &len);
    CHECK_HAS(err_n(s, len), "nesting deeper than 200");
    free(s);
    s = repeat("a = ", "(\n", 100000, "", &len);
    CHECK_HAS(err_n(s, len), "t.flux:201:1: error: nesting deeper than 200");
    free(s);
    s = repeat("a = x", "{-1}", 100000, "", &len);
    CHECK_HAS(err_n(s, len), "t.flux:1:10: error: expected end of line but found '{'");
    free(s);
    /* the size limit is checked first */
    len = CF_PARSE_MAX_BYTES + 1;
    s = malloc(len);
    memset(s, ' ', len);
    CHECK_HAS(err_n(s, len), "t.flux:1:1: error: the model file is larger than 4 MiB");
    memcpy(s, "a=1", 3);
    CHECK(!strcmp(err_n(s, len - 1), "parsed"));    /* exactly 4 MiB is fine */
    free(s);
}

TEST(errors_free_everything)
{
    /* run under ASan/LSan: an error deep inside a big tree leaks nothing */
    size_t len;
    char *s = repeat("a = f(", "g(1, 2, x -> {y = 3; y}), ", 5000, "1 @", &len);
    CHECK_HAS(err_n(s, len), "unexpected character '@'");
    free(s);
}

int main(void)
{
    RUN(doc_mlp_example);
    RUN(doc_tlp_example);
    RUN(doc_recurrent_example);
    RUN(docs_hold_the_examples);
    RUN(empty_and_blank);
    RUN(numbers);
    RUN(numbers_ignore_the_locale);
    RUN(precedence_and_associativity);
    RUN(conditionals_and_comparisons);
    RUN(positions);
    RUN(utf8_names);
    RUN(calls_kwargs_tuples);
    RUN(lambdas);
    RUN(blocks_and_parentheses_nest);
    RUN(prev_steps);
    RUN(nets);
    RUN(separators_and_comments);
    RUN(source_text_is_copied);
    RUN(long_inputs);
    RUN(nesting_up_to_the_limit);
    RUN(error_format_of_the_language_doc);
    RUN(syntax_errors);
    RUN(top_level_errors);
    RUN(net_errors);
    RUN(unclosed_braces);
    RUN(block_and_lambda_errors);
    RUN(prev_errors);
    RUN(lexical_errors);
    RUN(utf8_errors);
    RUN(first_error_wins);
    RUN(limits);
    RUN(errors_free_everything);
    return test_summary("parser");
}
