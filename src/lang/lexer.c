/* lexer.c - turns a .flux text into tokens (see lexer.h, and "The text of a file" in
 * docs/notation.md).
 *
 * Names: ASCII letters, digits, '_' and any non-ASCII code point, not starting with
 * a digit. Numbers: 3, 0.5, 1e-3, 2.5E+4 (".5" is not a number: '.' starts the
 * operators .* ./ .+ .-). A number running on into letters or into another '.' and
 * digit (2x, 1e, 3.4.5) is one malformed number, reported at its start. Comments run
 * from '#' to the end of the line. The text must be valid UTF-8 and contain no NUL
 * byte, comments included. */
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lang/lexer.h"

/* Show at most this many bytes of a lexeme in a message. */
#define SHOW_MAX 40

void lex_init(lexer *lx, const char *src, size_t len)
{
    memset(lx, 0, sizeof *lx);
    lx->src = src;
    lx->len = len;
    lx->line = 1;
    lx->col = 1;
    if (len >= 3 && !memcmp(src, "\xEF\xBB\xBF", 3)) lx->pos = 3;
}

/* Length of the valid UTF-8 sequence at s (n bytes available), or 0 if invalid
 * (bad lead byte, bad or missing continuation, overlong, surrogate, > U+10FFFF). */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    unsigned char c = s[0], lo = 0x80, hi = 0xBF;
    size_t need, i;

    if (c < 0x80) return 1;
    if (c < 0xC2) return 0;
    if (c < 0xE0) need = 2;
    else if (c < 0xF0) {
        need = 3;
        if (c == 0xE0) lo = 0xA0;        /* overlong */
        if (c == 0xED) hi = 0x9F;        /* surrogates */
    } else if (c < 0xF5) {
        need = 4;
        if (c == 0xF0) lo = 0x90;        /* overlong */
        if (c == 0xF4) hi = 0x8F;        /* beyond U+10FFFF */
    } else return 0;
    if (n < need) return 0;
    if (s[1] < lo || s[1] > hi) return 0;
    for (i = 2; i < need; i++)
        if (s[i] < 0x80 || s[i] > 0xBF) return 0;
    return need;
}

static int is_alpha(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static int is_digit(int c) { return c >= '0' && c <= '9'; }

/* Copy s[0..n) into buf, cut at a code point boundary if it is longer than max
 * bytes (then "..." is added). buf has room for max + 4. */
static void show(char *buf, const char *s, size_t n, size_t max)
{
    size_t k = n;
    if (k > max) {
        k = max;
        while (k > 0 && ((unsigned char)s[k] & 0xC0) == 0x80) k--;
    }
    memcpy(buf, s, k);
    strcpy(buf + k, k < n ? "..." : "");
}

/* Make the current position an error token with a printf-style message. */
static token lex_fail(lexer *lx, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static token lex_fail(lexer *lx, int line, int col, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(lx->err, sizeof lx->err, fmt, ap);
    va_end(ap);
    memset(&lx->errtok, 0, sizeof lx->errtok);
    lx->errtok.kind = T_ERROR;
    lx->errtok.line = line;
    lx->errtok.col = col;
    lx->errtok.s = lx->src + lx->pos;
    lx->failed = 1;
    return lx->errtok;
}

static token bad_char(lexer *lx, unsigned char c)
{
    if (c == 0) return lex_fail(lx, lx->line, lx->col, "unexpected character '\\0'");
    if (c < 0x20 || c == 0x7F)
        return lex_fail(lx, lx->line, lx->col, "unexpected character '\\x%02x'", c);
    return lex_fail(lx, lx->line, lx->col, "unexpected character '%c'", c);
}

static token bad_utf8(lexer *lx, size_t at, int col)
{
    return lex_fail(lx, lx->line, col, "invalid UTF-8 byte 0x%02x",
                    (unsigned char)lx->src[at]);
}

/* strtod in the C locale's notation whatever the process locale: the lexeme's '.'
 * becomes the locale's decimal point in a bounded copy. 0 on success, 1 if the
 * value overflows a double, -1 if out of memory. */
static int to_double(const char *s, size_t n, double *out)
{
    const char *dp = localeconv()->decimal_point;
    size_t dl = dp && *dp ? strlen(dp) : 1, i, k = 0;
    char small[128], *buf = small;
    size_t need = n + dl + 1;

    if (need > sizeof small && !(buf = malloc(need))) return -1;
    for (i = 0; i < n; i++) {
        if (s[i] == '.' && dp && *dp) {
            memcpy(buf + k, dp, dl);
            k += dl;
        } else buf[k++] = s[i];
    }
    buf[k] = 0;
    *out = strtod(buf, NULL);
    if (buf != small) free(buf);
    return isinf(*out) ? 1 : 0;
}

static token lex_number(lexer *lx, token t)
{
    const char *s = lx->src;
    size_t p = lx->pos, n = lx->len;
    double v;
    int rc;
    char shown[SHOW_MAX + 4];

    while (p < n && is_digit(s[p])) p++;
    if (p + 1 < n && s[p] == '.' && is_digit(s[p + 1])) {
        p++;
        while (p < n && is_digit(s[p])) p++;
    }
    if (p < n && (s[p] == 'e' || s[p] == 'E')) {
        size_t q = p + 1;
        if (q < n && (s[q] == '+' || s[q] == '-')) q++;
        if (q < n && is_digit(s[q])) {
            p = q;
            while (p < n && is_digit(s[p])) p++;
        }
    }
    /* 2x, 1e, 3_000, and 3.4.5 (a '.' then a digit is never an operator) */
    if (p < n && (is_alpha(s[p]) || (s[p] == '.' && p + 1 < n && is_digit(s[p + 1])))) {
        size_t q = p;
        while (q < n && (is_alpha(s[q]) || is_digit(s[q]) ||
                         (s[q] == '.' && q + 1 < n && is_digit(s[q + 1]))))
            q++;
        show(shown, s + lx->pos, q - lx->pos, SHOW_MAX);
        return lex_fail(lx, t.line, t.col, "malformed number '%s'", shown);
    }
    t.kind = T_NUM;
    t.len = p - lx->pos;
    rc = to_double(t.s, t.len, &v);
    if (rc < 0) return lex_fail(lx, t.line, t.col, "out of memory reading a number");
    if (rc > 0) {
        show(shown, t.s, t.len, SHOW_MAX);
        return lex_fail(lx, t.line, t.col, "number '%s' is too large", shown);
    }
    t.num = v;
    lx->col += (int)t.len;
    lx->pos = p;
    return t;
}

static token lex_name(lexer *lx, token t)
{
    const unsigned char *s = (const unsigned char *)lx->src;
    size_t p = lx->pos, n = lx->len;

    while (p < n) {
        if (is_alpha(s[p]) || is_digit(s[p])) p++;
        else if (s[p] >= 0x80) {
            size_t k = utf8_seq(s + p, n - p);
            if (!k) {
                lx->pos = p;
                return bad_utf8(lx, p, lx->col);
            }
            p += k;
        } else break;
        lx->col++;
    }
    t.kind = T_NAME;
    t.len = p - lx->pos;
    lx->pos = p;
    return t;
}

/* Skip a comment up to (not over) its newline, checking its bytes. 0 on success. */
static int skip_comment(lexer *lx)
{
    const unsigned char *s = (const unsigned char *)lx->src;
    size_t n = lx->len;

    while (lx->pos < n && s[lx->pos] != '\n') {
        unsigned char c = s[lx->pos];
        size_t k = 1;
        if (c == 0) return 1;
        if (c >= 0x80 && !(k = utf8_seq(s + lx->pos, n - lx->pos))) return 2;
        lx->pos += k;
        lx->col++;
    }
    return 0;
}

static void push(lexer *lx, char c)
{
    if (lx->depth < LEX_MAX_NEST) lx->nest[lx->depth] = c;
    lx->depth++;
}

token lex_next(lexer *lx)
{
    const char *s = lx->src;
    size_t n = lx->len;
    token t;
    unsigned char c;

    if (lx->failed) return lx->errtok;
    memset(&t, 0, sizeof t);
    for (;;) {
        if (lx->pos >= n) {
            t.kind = T_EOF;
            t.line = lx->line;
            t.col = lx->col;
            t.s = s + n;
            return t;
        }
        c = (unsigned char)s[lx->pos];
        if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
            lx->pos++;
            lx->col++;
            t.space_before = 1;
        } else if (c == '#') {
            int rc = skip_comment(lx);
            if (rc == 1) return bad_char(lx, 0);
            if (rc == 2) return bad_utf8(lx, lx->pos, lx->col);
            t.space_before = 1;
        } else if (c == '\n') {
            if (lx->depth > 0 && lx->depth <= LEX_MAX_NEST && lx->nest[lx->depth - 1] == '(') {
                lx->pos++;
                lx->line++;
                lx->col = 1;
                t.space_before = 1;
                continue;
            }
            t.kind = T_NEWLINE;
            t.line = lx->line;
            t.col = lx->col;
            t.s = s + lx->pos;
            t.len = 1;
            lx->pos++;
            lx->line++;
            lx->col = 1;
            return t;
        } else break;
    }

    t.line = lx->line;
    t.col = lx->col;
    t.s = s + lx->pos;
    if (is_digit(c)) return lex_number(lx, t);
    if (is_alpha(c) || c >= 0x80) return lex_name(lx, t);

    t.len = 1;
    switch (c) {
    case ';': t.kind = T_SEMI; break;
    case '+': t.kind = T_PLUS; break;
    case '*': t.kind = T_STAR; break;
    case '/': t.kind = T_SLASH; break;
    case ',': t.kind = T_COMMA; break;
    case '?': t.kind = T_QUESTION; break;
    case ':': t.kind = T_COLON; break;
    case '=': t.kind = T_EQ; break;
    case '<': t.kind = T_LT; break;
    case '>': t.kind = T_GT; break;
    case '!': t.kind = T_NOT; break;
    case '&':
    case '|':   /* && and || alone: a single & or | is no operator */
        if (lx->pos + 1 >= n || s[lx->pos + 1] != (char)c) return bad_char(lx, c);
        t.kind = c == '&' ? T_AND : T_OR;
        t.len = 2;
        break;
    case '-':
        t.kind = T_MINUS;
        if (lx->pos + 1 < n && s[lx->pos + 1] == '>') t.kind = T_ARROW, t.len = 2;
        break;
    case '.': {
        char d = lx->pos + 1 < n ? s[lx->pos + 1] : 0;
        if (d == '*') t.kind = T_DOTSTAR;
        else if (d == '/') t.kind = T_DOTSLASH;
        else if (d == '+') t.kind = T_DOTPLUS;
        else if (d == '-') t.kind = T_DOTMINUS;
        else return bad_char(lx, c);
        t.len = 2;
        break;
    }
    case '(':
    case '{':
        if (lx->depth >= LEX_MAX_NEST)
            return lex_fail(lx, t.line, t.col, "nesting deeper than %d", CF_PARSE_MAX_DEPTH);
        t.kind = c == '(' ? T_LPAREN : T_LBRACE;
        push(lx, (char)c);
        break;
    case ')':
    case '}':
        t.kind = c == ')' ? T_RPAREN : T_RBRACE;
        if (lx->depth > 0) lx->depth--;
        break;
    default:
        return bad_char(lx, c);
    }
    if (t.len == 1 && lx->pos + 1 < n && s[lx->pos + 1] == '=' &&
        (t.kind == T_EQ || t.kind == T_LT || t.kind == T_GT || t.kind == T_NOT)) {
        t.kind = t.kind == T_EQ ? T_EQEQ : t.kind == T_LT ? T_LE : t.kind == T_GT ? T_GE : T_NE;
        t.len = 2;
    }
    lx->pos += t.len;
    lx->col += (int)t.len;
    return t;
}

const char *tok_describe(const token *t, char *buf, size_t n)
{
    char shown[SHOW_MAX + 4];

    switch (t->kind) {
    case T_EOF: snprintf(buf, n, "end of file"); break;
    case T_NEWLINE: snprintf(buf, n, "end of line"); break;
    case T_ERROR: snprintf(buf, n, "an error"); break;
    default:
        show(shown, t->s, t->len, SHOW_MAX);
        snprintf(buf, n, "'%s'", shown);
    }
    return buf;
}
