/* lexer.h - tokens of the model notation (internal to src/lang).
 *
 * The lexer reads a whole .flux text one token at a time. It keeps a stack of the
 * open brackets so that a newline inside ( ) is skipped while one inside { } (or at
 * top level) becomes a T_NEWLINE statement separator. Columns count code points.
 *
 * A lexical error (bad UTF-8, a NUL byte, an unexpected character, a malformed
 * number like 2x or 3.4.5, a number too large for a double) does not stop anything
 * by itself: the lexer returns a T_ERROR token, and keeps returning it, with the
 * message in lx->err. The parser reports it when it reaches that token, so the
 * error that comes first in the text is the one reported. The lexer is a plain
 * struct: a copy lexes ahead without moving the original. */
#ifndef CF_LANG_LEXER_H
#define CF_LANG_LEXER_H

#include <stddef.h>

#include "lang/ast.h"

typedef enum tok_kind {
    T_EOF,
    T_NEWLINE,
    T_SEMI,      /* ; */
    T_NAME,
    T_NUM,
    T_PLUS,      /* +  */
    T_MINUS,     /* -  */
    T_STAR,      /* *  */
    T_SLASH,     /* /  */
    T_DOTSTAR,   /* .* */
    T_DOTSLASH,  /* ./ */
    T_DOTPLUS,   /* .+ */
    T_DOTMINUS,  /* .- */
    T_LPAREN,
    T_RPAREN,
    T_LBRACE,
    T_RBRACE,
    T_COMMA,
    T_EQ,        /* =  */
    T_ARROW,     /* -> */
    T_QUESTION,  /* ? */
    T_COLON,     /* : */
    T_EQEQ,      /* == */
    T_NE,        /* != */
    T_LT,        /* <  */
    T_LE,        /* <= */
    T_GT,        /* >  */
    T_GE,        /* >= */
    T_AND,       /* && */
    T_OR,        /* || */
    T_NOT,       /* !  */
    T_ERROR      /* a lexical error; the message is in the lexer */
} tok_kind;

typedef struct token {
    tok_kind kind;
    const char *s;      /* the lexeme, pointing into the text (not NUL-terminated) */
    size_t len;
    int line, col;      /* 1-based; col in code points */
    int space_before;   /* whitespace, a comment or a line start precedes it */
    double num;         /* T_NUM: the value */
} token;

/* Open brackets tracked; the parser refuses nesting beyond CF_PARSE_MAX_DEPTH long
 * before the lexer (at most two tokens ahead) could fill this. */
#define LEX_MAX_NEST (CF_PARSE_MAX_DEPTH + 16)

typedef struct lexer {
    const char *src;
    size_t len, pos;
    int line, col;
    int depth;                  /* open brackets */
    char nest[LEX_MAX_NEST];    /* '(' or '{' for each */
    int failed;                 /* a T_ERROR was returned; lex_next repeats it */
    token errtok;
    char err[192];              /* the message, without file:line:col */
} lexer;

/* Start lexing src[0..len); a UTF-8 byte order mark at the start is skipped. */
void lex_init(lexer *lx, const char *src, size_t len);

/* The next token; T_EOF at the end, T_ERROR (repeatedly) after a lexical error. */
token lex_next(lexer *lx);

/* How a token reads in a message: "'foo'", "'+'", "end of line", "end of file".
 * Long lexemes are cut short with "...". Returns buf. */
const char *tok_describe(const token *t, char *buf, size_t n);

#endif
