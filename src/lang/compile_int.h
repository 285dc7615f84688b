/* compile_int.h - what the files of the compiler share (not a public interface).
 *
 * The compiler (compile.c's overview says what it does) is split by concern:
 *   names.c     errors and their traces, environments, names and "did you mean"
 *   values.c    values, models made, and the checks around every graph node made
 *   eval.c      evaluating expressions, arguments and calls
 *   builtins.c  the built-in functions (conv2d, param, Chain, ...), each a row that says
 *               what it takes, held to it by one check; and the ops called by name
 *   nets.c      nets: instantiation, parameters, torch(...), Chains, calling a model
 *   unroll.c    recurrent states and unroll (with the standard library's LSTM fused)
 *   compile.c   files, the model's inputs and outputs, the entry points
 * The functions they share are prefixed cc_ (they take the compile, a cc). */
#ifndef CF_LANG_COMPILE_INT_H
#define CF_LANG_COMPILE_INT_H

#include "core/error.h"
#include "core/graph.h"
#include "lang/compile.h"
#include "ops/op.h"

#define MAX_INSTANTIATION_DEPTH 64
/* Operations in one model; fuzzing builds lower it so that huge models cost little. */
#ifndef CF_MAX_MODEL_NODES
#define CF_MAX_MODEL_NODES 1000000
#endif
#define MAX_NODES CF_MAX_MODEL_NODES
/* Models made in one compile (nets, Chains, lambdas, nets waiting in a Chain): they are
 * made before their operations, and nested repeats multiply, so the operations' limit
 * alone comes too late. */
#define MAX_MODELS (MAX_NODES / 10)
#define MAX_ARGS 64

typedef struct value value;
typedef struct env env;
typedef struct inst inst;
typedef struct param param;
typedef struct partial partial;
typedef struct rstate rstate;

typedef enum vkind {
    V_NONE, V_NUM, V_TENSOR, V_TUPLE, V_TEMPLATE, V_MODEL, V_BUILTIN, V_INIT, V_PARAM, V_PARTIAL, V_STATE
} vkind;

struct value {
    vkind kind;
    union {
        double num;                                  /* V_NUM */
        cf_node *node;                               /* V_TENSOR */
        struct { value *items; int n; };             /* V_TUPLE */
        struct { const ast *net; env *defenv; };     /* V_TEMPLATE: the net and where it was defined */
        inst *model;                                 /* V_MODEL */
        int fn;                                      /* V_BUILTIN */
        cf_init init;                                /* V_INIT */
        param *param;                                /* V_PARAM */
        partial *partial;                            /* V_PARTIAL */
        rstate *state;                               /* V_STATE */
    };
};

struct env {
    env *parent;
    const char *file;    /* the source that code evaluated here comes from */
    const char **names;
    value *vals;
    const ast **where;   /* the binding, for "bound twice" */
    int n, cap;
};

typedef enum ikind { I_NET, I_LAMBDA, I_CHAIN, I_INPUT, I_UNROLL } ikind;

struct inst {
    ikind kind;
    const char *tname;        /* in traces: "Affine", "Chain", "Input", "lambda" */
    const ast *lambda;        /* I_NET, I_LAMBDA */
    env *env;
    value *items;             /* I_CHAIN; I_UNROLL: the model unrolled */
    const ast **item_ast;
    int n;                    /* I_CHAIN: items; I_UNROLL: steps */
    int stateful;             /* I_UNROLL */
    cf_shape shape;           /* I_INPUT, per sample */
    inst *parent;             /* placement: the first place that names it */
    const char *local;
    int placed;
    const char *file;         /* I_NET: where it was made */
    int line, col;
    struct tdecl *torch;      /* I_NET: its parameters in PyTorch (torch(...), or as is) */
    int ntorch, declared;
    /* I_NET: the op that runs it over a whole sequence, as its body declares with
       sequence(lstm(W, U, b, h, c)) (CF_OP_INPUT: none), and that op's parameters and
       states; or sequence(each) */
    cf_opcode seq_op;
    param *seq_p[3];
    rstate *seq_s[2];
    int seq_each;             /* I_NET: sequence(each): it treats every step alike */
    int layer;                /* added to the model's layers */
    int noted;                /* I_NET: a note says it reads a state outside unroll */
};

/* One parameter of a net as PyTorch keeps it (cf_tmap before names are known). */
struct tdecl {
    param *p;
    cf_tform form;
    const char *src[2];
};

struct param {            /* a parameter, or a state (stat(...)) */
    int state;
    cf_shape shape;
    cf_init init;
    inst *owner;
    const char *local;
    cf_node *node;
    const char *file;
    int line, col;
};

/* A recurrent state (state(...) in a net body). While a model is built, `prev` is its
 * value at the previous step (NULL: its start) and `cur` the value assigned in this
 * step (NULL: none yet); unroll moves cur to prev after each step. Its start is a
 * carried leaf of the graph (cf_carry_at), made when first read. */
struct rstate {
    cf_shape shape;           /* per sample */
    cf_init init;
    inst *owner;
    const char *local;
    const char *file;
    int line, col;
    cf_node *start, *prev, *cur;
    int touched;              /* read or assigned since unroll last looked */
    rstate *next;             /* every state of the compile */
};

struct partial {
    value tmpl;
    value *args;              /* as many as the call has arguments, positional or not */
    const char **kwnames;
    value *kwvals;
    int nargs, nkw;
    const char *file;
    int line, col;
};

typedef struct frame {
    const char *name;
    const char *file;   /* where this frame was entered from (NULL for a top binding) */
    int line, col;
} frame;

typedef struct cc {
    cf_model *m;
    cf_arena arena;
    frame frames[MAX_INSTANTIATION_DEPTH * 4 + 8];
    int nframes, depth;
    int in_forward;
    inst *building;
    cf_node *unresolved[MAX_ARGS];
    int nunresolved;
    int shape_failed;   /* the last node made did not fit */
    int eval_depth;
    const ast *chain_elem;   /* the call being evaluated as an argument of Chain(...) */
    rstate *states;          /* every recurrent state made, newest first */
    int steps;               /* > 0: every unroll runs this many steps instead */
    int models;              /* made so far (MAX_MODELS) */
    int unrolling;           /* inside unroll(...): states are carried from step to step */
    char model_text[128];    /* the model's expression as written, on one line, for notes */
} cc;

/* ---- built-ins ---- */

/* The built-ins that code apart from their own function tells apart; the rest are
 * B_CALL. */
enum { B_CALL, B_OP, B_PARAM, B_STAT, B_NORMAL, B_UNIFORM, B_CHAIN, B_REPEAT };

/* A keyword a built-in takes, and what its value must be. */
struct kwspec {
    const char *name;
    char kind;          /* 'i': a whole number of at least lo (at most 1e6); 'b': true or false; 'n': a number
                           in (lo, hi), 'N': in (lo, hi]; 'I': an initialiser; 'Z': zeros or ones */
    double lo, hi;
    double def;         /* its value when not given (a cf_init_kind for 'I' and 'Z') */
    const char *note;   /* added to the message for a value that does not fit */
};
#define BUILTIN_KWS 4

/* A built-in function, and what it takes: one row of cc_builtins (builtins.c), whose
 * call is held to the row before its function runs. */
struct builtin {
    const char *name;
    int id;
    cf_opcode op;       /* its op, for functions of values */
    int unary;          /* usable as a Chain element / a model of one input */
    char where;         /* 'f': on values, so inside a forward function; 'F': so, and the message outside one
                           says to write it bare in a Chain; 'b': in a net body, before its forward function */
    const char *hint;   /* after the message for 'F' outside a forward function */
    const char *args;   /* its positional arguments' kinds: v a value, n a number, m a model, x anything (its
                           function checks it); a last '*' repeats the kind before it */
    int min;            /* positional arguments it needs */
    const char *usage;  /* when they do not fit (NULL: "NAME needs a value as its first argument", or
                           "NAME takes one value but was given N arguments") */
    int each;           /* a positional of the wrong kind is named by its number, not by the usage */
    struct kwspec kw[BUILTIN_KWS];   /* its keywords; name NULL ends them */
    /* runs after the checks, kw the keywords' values in the row's order; NULL for an op
       (cc_op_call) and for repeat (cc_repeat_call, called before its arguments are evaluated) */
    int (*call)(cc *c, env *en, const ast *e, const struct builtin *b, value *args, int nargs, const value *kw,
                value *out);
};
extern const struct builtin cc_builtins[];
extern const int cc_nbuiltins;

/* ---- names.c ---- */

/* "error: MSG" and a trace line per frame, innermost first, starting at file:line:col. */
int cc_err(cc *c, const char *file, int line, int col, const char *fmt, ...) __attribute__((format(printf, 5, 6)));
#define ERR(c, en, e, ...) cc_err(c, (en)->file, (e)->line, (e)->col, __VA_ARGS__)
int cc_enter(cc *c, const char *name, const char *file, int line, int col);
void cc_leave(cc *c);
int cc_distance(const char *a, const char *b);
void cc_consider(const char *name, const char *cand, const char **best, int *bestd);
/* What cflux calls another framework's name for a layer, a function or a keyword
 * ("Dense", "Linear", "padding"), and whose name it is ("Keras's"); NULL if none. */
const char *cc_foreign(const char *name, const char **whose);
env *cc_env_new(cc *c, env *parent, const char *file);
int cc_bind(cc *c, env *en, const char *name, value v, const ast *where);
int cc_local_index(const env *en, const char *name);
const value *cc_lookup(const env *en, const char *name);
int cc_name_known(const env *en, const char *name);
int cc_eval_name(cc *c, env *en, const ast *e, value *out);

/* ---- values.c ---- */

static inline value num_value(double x) { return (value){.kind = V_NUM, .num = x}; }
static inline value tensor_value(cf_node *n) { return (value){.kind = V_TENSOR, .node = n}; }
static inline value model_value(inst *i) { return (value){.kind = V_MODEL, .model = i}; }
const char *cc_kind_name(const value *v);
int cc_count_model(cc *c, const char *file, int line, int col);
inst *cc_inst_new(cc *c, ikind kind, const char *tname, const char *file, int line, int col);
void cc_place(inst *i, inst *parent, const char *local);
int cc_dim_of(cc *c, env *en, const ast *e, const value *v, const char *what, int *out);
int cc_made(cc *c, const env *en, const ast *e, cf_node *n);
int cc_is_unresolved(cc *c, const cf_node *n);
void cc_resolve(cc *c, cf_node *n, cf_shape s);
int cc_unresolved_error(cc *c, const env *en, const ast *e, const cf_node *n, const char *what);
int cc_resolve_pair(cc *c, const env *en, const ast *e, cf_opcode op, cf_node *a, cf_node *b);
cf_node *cc_as_node(cc *c, env *en, const ast *e, const value *v);
int cc_unary_node(cc *c, env *en, const ast *e, cf_opcode op, const value *x, float a, value *out);

/* ---- eval.c ---- */

int cc_eval(cc *c, env *en, const ast *e, value *out);
int cc_eval_args(cc *c, env *en, const ast *e, value *args, int *nargs, const char **kwn, value *kwv, int *nkw,
                 int allow_partial);
int cc_given_required(const ast *net, int npos, const char *const *kwn, int nkw, int *required);
int cc_names_in(const char *const *kwn, int nkw);
int cc_first_is_in(const ast *net);

/* ---- builtins.c ---- */

struct builtin cc_builtin_at(int fn);
int cc_builtin_find(const char *name);
int cc_call_builtin(cc *c, env *en, const ast *e, int fi, value *args, int nargs, const char **kwn, value *kwv,
                    int nkw, value *out);
int cc_repeat_call(cc *c, env *en, const ast *e, value *out);
int cc_op_call(cc *c, env *en, const ast *e, cf_opcode op, value *args, int nargs, const char **kwn, value *kwv,
               int nkw, value *out);

/* ---- nets.c ---- */

int cc_full_name(const inst *owner, const char *local, const char *file, int line, int col, char *name,
                 size_t size);
int cc_param_node(cc *c, param *p, value *out);
int cc_instantiate(cc *c, const value *tmpl, value *args, int nargs, const char **kwn, value *kwv, int nkw,
                   const char *file, int line, int col, int in_chain, value *out);
int cc_features_from(cf_shape s, int first);
int cc_make_partial(cc *c, inst *chain, int pos, int features, value *out);
int cc_apply(cc *c, const value *f, value *x, int nx, const char *file, const ast *where, value *out, inst *chain,
             int pos);
int cc_call_model(cc *c, inst *mdl, value *args, int nargs, const char *file, int line, int col, value *out);

/* ---- unroll.c ---- */

int cc_state_prev(cc *c, env *en, const ast *e, value *out);
int cc_state_assign(cc *c, env *en, const ast *s, rstate *st, const value *v);
int cc_call_unroll(cc *c, inst *u, value *args, int nargs, const char *file, int line, int col, value *out);

#endif
