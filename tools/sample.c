/* sample.c - `cflux sample`: text from a character model, one character at a time.
 *
 * Three ways to run the model, by its kind:
 *  - A recurrent one (unroll(...)) is loaded unrolled over one step
 *    (cf_model_load_steps) and bound at batch 1: the one-step model shares the trained
 *    weights by name and carries its state from each call to the next, so feeding it
 *    a character at a time runs the same recurrence that training unrolled.
 *  - One that reads a window of T characters through causal attention (a GPT) is also
 *    loaded to read one position per call (cf_model_load_cached): its keys and values
 *    are kept, so a character costs one position's work. Before the prime text, both
 *    forms read the same T characters and must give the same probabilities at every
 *    position (to 1e-4): a model that mixes positions other than through its attention
 *    is refused, naming --no-cache.
 *  - With --no-cache, or for a windowed model with no attention to cache (one that
 *    treats each position alone), the window is run again for every new character. Its
 *    outputs at position t must see positions 1..t only, so a window not yet full is
 *    padded after its end and read at its last character; that is checked once, by
 *    running two different paddings.
 * Both windowed ways see the same characters: the window holds the last characters
 * read, at most T; when it is full, it keeps its last T / 4 and goes on from them (the
 * cache emptied and those read again, all in one forward of the cached form that reads
 * T / 4 positions, cf_model_load_cached_n, whose caches then move to the one-position
 * form), so the text is the same with the cache and without it, for the same seed.
 * The prime text is read first; then each character is drawn from the last output's
 * probabilities, sharpened or flattened by the temperature, and fed back.
 *
 * A model trained on a corpus of several files has their end marker
 * (CF_TEXT_FILE_END) among its characters: it is printed as a line of its own,
 * END_LINE, and the default prime is the marker itself, so that the text begins as a
 * file does. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cflux.h"
#include "commands.h"

#define END_LINE "--- end of a file ---"

/* One character of the output: the end marker of a corpus (marked: the vocabulary
 * has it) as END_LINE, on a line of its own. *last is the character printed last. */
static void put_char(unsigned char c, int marked, unsigned char *last)
{
    if (marked && c == CF_TEXT_FILE_END) {
        printf("%s" END_LINE "\n", *last == '\n' ? "" : "\n");
        *last = '\n';
        return;
    }
    putchar(c);
    *last = c;
}

/* splitmix64: the draws, from --seed */
static uint64_t next_u64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* A class drawn from p[0 .. n) raised to 1 / temperature (renormalised). */
static int draw(const float *p, int n, double temperature, uint64_t *rng)
{
    double w[256], sum = 0;
    for (int i = 0; i < n; i++)   /* pow(x, 1) is x: no need to call it */
        sum += w[i] = p[i] > 0 ? temperature == 1 ? (double)p[i] : pow((double)p[i], 1 / temperature) : 0;
    double u = (double)(next_u64(rng) >> 11) * 0x1p-53 * sum;
    for (int i = 0; i < n; i++)
        if ((u -= w[i]) < 0) return i;
    for (int i = n - 1; i > 0; i--)   /* rounding left u at the end: the last possible one */
        if (w[i] > 0) return i;
    return 0;
}

/* How the model reads: the executor e (the recurrent step model, T 1, or the window
 * model of T) and, cached, c (the cached model's); the window w of the last n
 * characters read (n <= T), and the probabilities of the next character after them. */
typedef struct reader {
    cf_exec *e, *c;
    cf_exec *pc;      /* cached, the form that reads T / 4 positions at once, or NULL */
    float *w;
    int n, T, V;
    const float *p;   /* the next character's V probabilities, once computed */
} reader;

/* The window w of n characters (n <= T) into the model's input, padded with `pad`
 * after its end, and a forward pass: 0, or 1 with the message printed. */
static int window_forward(cf_exec *e, const float *w, int n, int pad)
{
    size_t T;
    float *x = cf_exec_input(e, 0, &T);
    for (size_t i = 0; i < T; i++) x[i] = i < (size_t)n ? w[i] : (float)pad;
    return cf_forward(e, 0) ? fail() : 0;
}

/* One forward of the cached model on character ch: 0, or 1 with the message. */
static int cached_forward(reader *r, float ch)
{
    cf_exec_input(r->c, 0, NULL)[0] = ch;
    if (cf_forward(r->c, 0)) return fail();
    r->p = cf_exec_output(r->c, 0, NULL);
    return 0;
}

/* The next character ch read: a recurrent model reads it now, one step; a windowed
 * one appends it to the window, which keeps its last T / 4 first when full (the cache
 * emptied and those read again, at once where they can be). 0, or 1 with the message
 * printed. */
static int feed(reader *r, float ch)
{
    if (r->T == 1) {
        cf_exec_input(r->e, 0, NULL)[0] = ch;
        if (cf_forward(r->e, 0)) return fail();
        r->p = cf_exec_output(r->e, 0, NULL);
        return 0;
    }
    if (r->n == r->T) {
        int keep = r->T / 4;
        memmove(r->w, r->w + r->n - keep, (size_t)keep * sizeof *r->w);
        r->n = keep;
        if (r->pc) {   /* the kept characters read at once, and the caches moved over */
            cf_exec_reset_state(r->pc);
            memcpy(cf_exec_input(r->pc, 0, NULL), r->w, (size_t)keep * sizeof *r->w);
            if (cf_forward(r->pc, 0) || cf_exec_state_copy(r->pc, r->c)) return fail();
        } else if (r->c) {
            cf_exec_reset_state(r->c);
            for (int i = 0; i < keep; i++)
                if (cached_forward(r, r->w[i])) return 1;
        }
    }
    r->w[r->n++] = ch;
    r->p = NULL;
    return r->c ? cached_forward(r, ch) : 0;
}

/* The probabilities of the next character (the window run now when it is not
 * cached), or NULL with the message printed. */
static const float *next_probs(reader *r)
{
    if (!r->p) {
        if (window_forward(r->e, r->w, r->n, 0)) return NULL;
        r->p = cf_exec_output(r->e, 0, NULL) + (size_t)(r->n - 1) * (size_t)r->V;
    }
    return r->p;
}

/* The cached model must give the window model's probabilities: both read the T
 * characters of the window, compared at every position; the cache emptied after.
 * 0, or 1 with the message printed. */
static int cached_check(const char *model, reader *r)
{
    const float *w = r->w;
    if (window_forward(r->e, w, r->T, 0)) return 1;
    const float *all = cf_exec_output(r->e, 0, NULL);
    double worst = 0;
    int at = 0;
    for (int t = 0; t < r->T; t++) {
        if (cached_forward(r, w[t])) return 1;
        for (int v = 0; v < r->V; v++) {
            double d = fabs((double)r->p[v] - (double)all[(size_t)t * (size_t)r->V + (size_t)v]);
            if (d > worst) worst = d, at = t;
        }
    }
    cf_exec_reset_state(r->c);
    r->p = NULL;
    if (worst <= 1e-4) return 0;
    fprintf(stderr, "error: %s: read one position at a time against its cache, the model gives other probabilities "
                    "than over its window (by %.3g at position %d of %d): it mixes positions other than through its "
                    "causal attention; sample it with --no-cache\n", model, worst, at + 1, r->T);
    return 1;
}

/* A window not yet full is read at its last character, past which the input is
 * padding: right only when no output looks ahead. Two paddings must give the same
 * outputs at positions 1..n: 0, or 1 with the message. */
static int causal_check(const char *model, cf_exec *e, const float *w, int n, int V, int nv)
{
    size_t count;
    if (window_forward(e, w, n, 0)) return 1;
    const float *p = cf_exec_output(e, 0, &count);
    size_t k = (size_t)n * (size_t)V;
    float *first = malloc(k * sizeof *first);
    if (!first) {
        fprintf(stderr, "error: out of memory\n");
        return 1;
    }
    memcpy(first, p, k * sizeof *first);
    int rc = window_forward(e, w, n, nv - 1);
    if (rc == 0 && memcmp(first, p, k * sizeof *first) != 0) {
        fprintf(stderr, "error: %s: the model's output at a position depends on the positions after it; sample "
                        "reads a window that is not yet full at its last character, which needs a causal model "
                        "(softmax(..., causal = true) in its attention)\n", model);
        rc = 1;
    }
    free(first);
    return rc;
}

int cmd_sample(const args *a)
{
    if (!a->params) {
        fprintf(stderr, "cflux sample: needs --params CHECKPOINT (a run on text:FILE)\n");
        return 2;
    }
    if (apply_common(a)) return 1;
    unsigned char vocab[256];
    int nv = cf_checkpoint_vocab(a->params, vocab);
    if (nv < 0) return fail();
    if (nv == 0) {
        fprintf(stderr, "error: %s: no text vocabulary: sample needs a checkpoint of a run on text (--data text:FILE)\n",
                a->params);
        return 1;
    }
    int index[256];
    for (int i = 0; i < 256; i++) index[i] = -1;
    for (int i = 0; i < nv; i++) index[vocab[i]] = i;
    int marked = index[CF_TEXT_FILE_END] >= 0;
    static const char file_start[2] = {CF_TEXT_FILE_END, 0};
    const char *prime = a->prime ? a->prime : marked ? file_start : "\n";
    if (!*prime) {
        fprintf(stderr, "error: --prime is empty: give at least one character\n");
        return 1;
    }
    for (const unsigned char *c = (const unsigned char *)prime; *c; c++)
        if (index[*c] < 0) {
            if (*c >= 32 && *c < 127)
                fprintf(stderr, "error: the prime text has '%c', which the training text did not have\n", *c);
            else fprintf(stderr, "error: the prime text has the byte 0x%02x, which the training text did not have\n", *c);
            return 1;
        }
    cf_model *m = cf_model_load_steps(a->pos[0], 1);
    if (!m) return fail();
    int rc = 1;
    cf_exec *e = NULL;
    cf_model *cm = NULL, *pm = NULL;   /* the cached form of a GPT, one step and T / 4 at once */
    reader r = {0};
    float *w = NULL;
    cf_shape in = cf_model_input_shape(m, 0), out = cf_model_output_shape(m, 0);
    char s1[96], s2[96];
    if (cf_model_input_count(m) != 1 || in.rank != 2 || out.rank != 3 || out.d[1] != in.d[1] ||
        strcmp(cf_model_output_op(m, 0), "softmax") != 0) {
        fprintf(stderr, "error: %s: sample needs a character model: unroll(Chain(Input(), ..., softmax), T), or one "
                        "that reads (B, T) characters and gives (B, T, classes) (a GPT); over one step this one takes "
                        "%s and gives %s\n",
                a->pos[0], cf_shape_format(in, s1, sizeof s1), cf_shape_format(out, s2, sizeof s2));
        goto done;
    }
    int V = out.d[2], T = in.d[1];
    if (V < nv) {
        fprintf(stderr, "error: %s: the model gives %d classes, but the text of %s had %d characters\n", a->pos[0], V,
                a->params, nv);
        goto done;
    }
    if (cf_model_load_params(m, a->params) || !(e = cf_bind(m, 1, 0))) {
        fail();
        goto done;
    }
    if (T > 1 && cf_exec_state_count(e) > 0) {
        fprintf(stderr, "error: %s: the model reads %d steps at a time and carries a state; sample runs a recurrent "
                        "model one step at a time (unroll) or a stateless one over a window\n", a->pos[0], T);
        goto done;
    }
    uint64_t rng = a->seed;
    double temperature = isnan(a->temperature) ? 1.0 : a->temperature;
    long length = isnan(a->length) ? 500 : (long)a->length;
    r = (reader){.e = e, .T = T, .V = V};
    if (!(w = malloc((size_t)T * sizeof *w))) {
        fprintf(stderr, "error: out of memory\n");
        goto done;
    }
    r.w = w;
    if (T > 1 && !a->no_cache) {   /* the cached form, unless the model has no attention to cache */
        if (!(cm = cf_model_load_cached(a->pos[0]))) {
            if (!strstr(cf_last_error(), "no causal attention to cache")) {
                fail();
                fprintf(stderr, "(sample --no-cache runs the whole window again for each character instead)\n");
                goto done;
            }
        } else if (cf_model_load_params(cm, a->params) || !(r.c = cf_bind(cm, 1, 0))) {
            fail();
            goto done;
        } else if (isnan(a->threads)) {
            cf_set_threads(1);   /* a position's work is too small to share between threads */
        }
    }
    if (r.c && T / 4 > 1 &&   /* the kept quarter is read at once when the window fills */
        (!(pm = cf_model_load_cached_n(a->pos[0], T / 4)) || cf_model_load_params(pm, a->params) ||
         !(r.pc = cf_bind(pm, 1, 0)))) {
        fail();
        goto done;
    }
    for (int i = 0; i < T; i++) w[i] = (float)((i * 7 + 3) % nv);   /* the checks' text */
    if (T > 1 && (r.c ? cached_check(a->pos[0], &r) : causal_check(a->pos[0], e, w, T / 2, V, nv))) goto done;
    unsigned char last = '\n';
    if (prime != file_start)   /* the marker that starts a file is not shown */
        for (const unsigned char *c = (const unsigned char *)prime; *c; c++) put_char(*c, marked, &last);
    for (const unsigned char *c = (const unsigned char *)prime; *c; c++)
        if (feed(&r, (float)index[*c])) goto done;
    for (long k = 0; k < length; k++) {
        const float *p = next_probs(&r);
        if (!p) goto done;
        int next = draw(p, nv, temperature, &rng);   /* classes past the text's never come */
        put_char(vocab[next], marked, &last);
        if (k + 1 < length && feed(&r, (float)next)) goto done;
    }
    putchar('\n');
    rc = fflush(stdout) == 0 ? 0 : 1;
done:
    free(w);
    cf_exec_free(r.pc);
    cf_model_free(pm);
    cf_exec_free(r.c);
    cf_model_free(cm);
    cf_exec_free(e);
    cf_model_free(m);
    return rc;
}
