/* sample.c - `cflux sample`: text from a character model, one character at a time.
 *
 * The model file is loaded unrolled over one step (cf_model_load_steps) and bound at
 * batch 1: the one-step model shares the trained weights by name and carries its
 * state from each call to the next, so feeding it a character at a time runs the
 * same recurrence that training unrolled. The prime text is read first; then each
 * character is drawn from the last output's probabilities, sharpened or flattened by
 * the temperature, and fed back. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cflux.h"
#include "commands.h"

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
    for (int i = 0; i < n; i++) sum += w[i] = p[i] > 0 ? pow((double)p[i], 1 / temperature) : 0;
    double u = (double)(next_u64(rng) >> 11) * 0x1p-53 * sum;
    for (int i = 0; i < n; i++)
        if ((u -= w[i]) < 0) return i;
    for (int i = n - 1; i > 0; i--)   /* rounding left u at the end: the last possible one */
        if (w[i] > 0) return i;
    return 0;
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
    const char *prime = a->prime ? a->prime : "\n";
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
    cf_shape in = cf_model_input_shape(m, 0), out = cf_model_output_shape(m, 0);
    char s1[96], s2[96];
    if (cf_model_input_count(m) != 1 || in.rank != 2 || in.d[1] != 1 || out.rank != 3 || out.d[1] != 1 ||
        strcmp(cf_model_output_op(m, 0), "softmax") != 0) {
        fprintf(stderr, "error: %s: sample needs a model of character indices unrolled over steps, "
                        "unroll(Chain(Input(), ..., softmax), T); over one step this one takes %s and gives %s\n",
                a->pos[0], cf_shape_format(in, s1, sizeof s1), cf_shape_format(out, s2, sizeof s2));
        goto done;
    }
    int V = out.d[2];
    if (V < nv) {
        fprintf(stderr, "error: %s: the model gives %d classes, but the text of %s had %d characters\n", a->pos[0], V,
                a->params, nv);
        goto done;
    }
    if (cf_model_load_params(m, a->params) || !(e = cf_bind(m, 1, 0))) {
        fail();
        goto done;
    }
    uint64_t rng = a->seed;
    double temperature = isnan(a->temperature) ? 1.0 : a->temperature;
    long length = isnan(a->length) ? 500 : (long)a->length;
    float *x = cf_exec_input(e, 0, NULL);
    const float *p = cf_exec_output(e, 0, NULL);
    fputs(prime, stdout);
    for (const unsigned char *c = (const unsigned char *)prime; *c; c++) {
        x[0] = (float)index[*c];
        if (cf_forward(e, 0)) {
            fail();
            goto done;
        }
    }
    for (long k = 0; k < length; k++) {
        int next = draw(p, nv, temperature, &rng);   /* classes past the text's never come */
        putchar(vocab[next]);
        x[0] = (float)next;
        if (k + 1 < length && cf_forward(e, 0)) {
            fail();
            goto done;
        }
    }
    putchar('\n');
    rc = fflush(stdout) == 0 ? 0 : 1;
done:
    cf_exec_free(e);
    cf_model_free(m);
    return rc;
}
