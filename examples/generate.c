/* generate.c - text from a character GPT through cflux's public C API: the model run one
 * position at a time against its cache of keys and values (cf_model_load_cached), the
 * most probable character taken at each step (greedy decoding).
 *
 *     generate MODEL CHECKPOINT [PRIME] [LENGTH]
 *
 * The checkpoint is a run of `cflux train MODEL --data text:...`: it holds the weights
 * and the text's vocabulary (class i is byte vocab[i]). Each forward reads one
 * character and gives the probabilities of the next; the cache holds T positions
 * (the model's window), so when it is full the example empties it and reads the last
 * T / 4 characters again, one at a time. (cflux sample reads them in one forward of the
 * model loaded to read T / 4 positions at once, cf_model_load_cached_n, and moves the
 * caches over with cf_exec_state_copy; the text is the same.)
 *
 * Build against an installed cflux:
 *     cc generate.c $(pkg-config --cflags --libs cflux) -o generate */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cflux.h>

static int fail(void)
{
    fprintf(stderr, "%s\n", cf_last_error());
    return 1;
}

/* Character c (a class index) read at the next position: the output's probabilities of
 * the one after. w holds the characters in the cache, *n of them. NULL on error. */
static const float *feed(cf_exec *e, float *w, int *n, int T, int c)
{
    if (*n == T) {   /* full: empty it, and read the last quarter again */
        memmove(w, w + T - T / 4, (size_t)(T / 4) * sizeof *w);
        *n = T / 4;
        cf_exec_reset_state(e);
        for (int i = 0; i < *n; i++) {
            cf_exec_input(e, 0, NULL)[0] = w[i];
            if (cf_forward(e, 0)) return NULL;
        }
    }
    cf_exec_input(e, 0, NULL)[0] = w[(*n)++] = (float)c;
    return cf_forward(e, 0) ? NULL : cf_exec_output(e, 0, NULL);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s MODEL CHECKPOINT [PRIME] [LENGTH]\n", argv[0]);
        return 2;
    }
    const char *prime = argc > 3 ? argv[3] : "\n";
    int length = argc > 4 ? atoi(argv[4]) : 200;
    unsigned char vocab[256];
    int nv = cf_checkpoint_vocab(argv[2], vocab);
    if (nv <= 0) return nv < 0 ? fail() : (fprintf(stderr, "%s: no text vocabulary\n", argv[2]), 1);
    int index[256];
    for (int i = 0; i < 256; i++) index[i] = -1;
    for (int i = 0; i < nv; i++) index[vocab[i]] = i;

    cf_model *m = cf_model_load_cached(argv[1]);
    if (!m || cf_model_load_params(m, argv[2])) return fail();
    cf_exec *e = cf_bind(m, 1, 0);
    if (!e) return fail();
    int T = cf_model_cache_size(m), n = 0;
    float *w = malloc((size_t)T * sizeof *w);
    if (!w) return 1;
    const float *p = NULL;
    for (const char *c = prime; *c; c++) {
        if (index[(unsigned char)*c] < 0) {
            fprintf(stderr, "the prime has '%c', which the text did not\n", *c);
            return 1;
        }
        if (!(p = feed(e, w, &n, T, index[(unsigned char)*c]))) return fail();
    }
    fputs(prime, stdout);
    for (int k = 0; k < length && p; k++) {
        int best = 0;   /* the most probable next character */
        for (int i = 1; i < nv; i++)
            if (p[i] > p[best]) best = i;
        putchar(vocab[best]);
        if (k + 1 < length && !(p = feed(e, w, &n, T, best))) return fail();
    }
    putchar('\n');
    free(w);
    cf_exec_free(e);
    cf_model_free(m);
    return 0;
}
