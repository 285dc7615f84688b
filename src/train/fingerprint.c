/* fingerprint.c - what the ranks of a data-parallel run compare before training (see
 * fingerprint.h): made from the trainer and the data, compared field by field, and
 * the first difference put in words. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/graph.h"
#include "core/rng.h"
#include "data/data.h"
#include "data/stream.h"
#include "train/fingerprint.h"
#include "train/trainer.h"

enum {
    FP_WEIGHTS, FP_GRAPH, FP_TRAIN_ROWS, FP_TRAIN_DATA, FP_TEST_ROWS, FP_TEST_DATA, FP_BATCH, FP_EPOCHS, FP_SEED,
    FP_OPTIM, FP_LR, FP_MOMENTUM, FP_BETAS, FP_WD, FP_CLIP, FP_SCHEDULE, FP_AUGMENT, FP_VAL, FP_LOSS, FP_NORMALIZE,
    FP_NORM_STATS, FP_PATIENCE, FP_START, FP_N
};
_Static_assert(FP_N <= CF_FP_FIELDS, "CF_FP_FIELDS holds every field");

/* How a difference in a field reads. A setting: "rank 1's --batch is 32, rank 0's is
 * 64". A count: "rank 1's training data has 299 rows, rank 0's has 300". A hash, after
 * its count (if any) agreed: "rank 1's training data differs from rank 0's (the same
 * 300 rows, other content)". */
enum { SETTING, COUNT, HASH };
static const struct {
    int kind;
    const char *name;
    const char *what;   /* a count: its unit; a hash: how it differs */
    int count;          /* a hash: the field counting what it hashes, or -1 */
} field[FP_N] = {
    [FP_WEIGHTS] = {COUNT, "model", "weights", -1},
    [FP_GRAPH] = {HASH, "model", "another graph", FP_WEIGHTS},
    [FP_TRAIN_ROWS] = {COUNT, "training data", "rows", -1},
    [FP_TRAIN_DATA] = {HASH, "training data", "other content", FP_TRAIN_ROWS},
    [FP_TEST_ROWS] = {COUNT, "test data", "rows", -1},
    [FP_TEST_DATA] = {HASH, "test data", "other content", FP_TEST_ROWS},
    [FP_BATCH] = {SETTING, "--batch", NULL, -1},
    [FP_EPOCHS] = {SETTING, "--epochs", NULL, -1},
    [FP_SEED] = {SETTING, "--seed", NULL, -1},
    [FP_OPTIM] = {SETTING, "--optim", NULL, -1},
    [FP_LR] = {SETTING, "--lr", NULL, -1},
    [FP_MOMENTUM] = {SETTING, "--momentum", NULL, -1},
    [FP_BETAS] = {SETTING, "optimizer's betas and epsilon", NULL, -1},
    [FP_WD] = {SETTING, "--wd", NULL, -1},
    [FP_CLIP] = {SETTING, "--clip", NULL, -1},
    [FP_SCHEDULE] = {SETTING, "--schedule", NULL, -1},
    [FP_AUGMENT] = {SETTING, "--augment", NULL, -1},
    [FP_VAL] = {SETTING, "--val", NULL, -1},
    [FP_LOSS] = {SETTING, "--loss", NULL, -1},
    [FP_NORMALIZE] = {SETTING, "--normalize", NULL, -1},
    [FP_NORM_STATS] = {HASH, "input normalisation", "other means and deviations", -1},
    [FP_PATIENCE] = {SETTING, "--patience", NULL, -1},
    [FP_START] = {SETTING, "starting point (--resume)", NULL, -1},
};

static inline uint64_t rotl(uint64_t v, int k) { return v << k | v >> (64 - k); }

uint64_t cf_hash_floats(const float *x, size_t n, uint64_t seed)
{
    /* xxHash64's round on four lanes: the multiplies of one lane do not wait on another's */
    const uint64_t p1 = 0x9e3779b185ebca87ull, p2 = 0xc2b2ae3d27d4eb4full;
    uint64_t h[4] = {seed + p1 + p2, seed + p2, seed, seed - p1};
    const unsigned char *b = (const unsigned char *)x;
    size_t bytes = n * sizeof(float), i = 0;
    for (; i + 32 <= bytes; i += 32)
        for (int k = 0; k < 4; k++) {
            uint64_t w;
            memcpy(&w, b + i + 8 * (size_t)k, 8);
            h[k] = rotl(h[k] + w * p2, 31) * p1;
        }
    uint64_t r = cf_rng_mix(bytes ^ seed);
    for (int k = 0; k < 4; k++) r = cf_rng_mix(r ^ h[k]);
    for (; i < bytes; i += 4) {   /* the last floats, fewer than 8 */
        uint32_t w;
        memcpy(&w, b + i, 4);
        r = cf_rng_mix(r ^ w);
    }
    return r;
}

/* A dataset's contents: its sample shape, targets, vocabulary, inputs (a streamed
 * dataset's files) and targets. */
static uint64_t data_hash(const cf_dataset *d)
{
    uint64_t h = cf_rng_mix((uint64_t)d->shape.rank ^ (uint64_t)d->ysize << 8 ^ (uint64_t)d->nvocab << 16);
    for (int i = 0; i < d->shape.rank; i++) h = cf_rng_mix(h ^ (uint64_t)d->shape.d[i]);
    for (int i = 0; i < d->nvocab; i++) h = cf_rng_mix(h ^ d->vocab[i]);
    if (d->src) {   /* streamed: the files' names (below the folder) and sizes, not their pixels */
        for (size_t i = 0; i < d->src->n; i++)
            h = cf_rng_mix(h ^ cf_hash_str(d->src->path[i] + d->src->root_len) ^ (uint64_t)d->src->bytes[i]);
    } else {
        h = cf_hash_floats(d->x, d->n * d->sample, h);
    }
    return cf_hash_floats(d->y, d->n * (size_t)d->ysize, h);
}

static void set_u(cf_fp_field *f, uint64_t v)
{
    f->v = v;
    snprintf(f->text, sizeof f->text, "%" PRIu64, v);
}

static void set_d(cf_fp_field *f, double v)
{
    memcpy(&f->v, &v, sizeof v);
    snprintf(f->text, sizeof f->text, "%g", v);
}

static void set_s(cf_fp_field *f, const char *s)
{
    f->v = cf_hash_str(s);
    snprintf(f->text, sizeof f->text, "%s", s);
}

void cf_fingerprint_make(const cf_trainer *t, const cf_dataset *train, const cf_dataset *test, cf_fingerprint *fp)
{
    const cf_model *m = t->m;
    const cf_fit_opts *o = &t->o;
    cf_fp_field *f = fp->f;
    memset(fp, 0, sizeof *fp);
    set_u(&f[FP_WEIGHTS], cf_model_weight_count(m));
    f[FP_GRAPH].v = cf_model_graph_hash(m);
    set_u(&f[FP_TRAIN_ROWS], train->n);
    f[FP_TRAIN_DATA].v = data_hash(train);
    set_u(&f[FP_TEST_ROWS], test ? test->n : 0);
    f[FP_TEST_DATA].v = test ? data_hash(test) : 0;
    set_u(&f[FP_BATCH], (uint64_t)o->batch);
    set_u(&f[FP_EPOCHS], (uint64_t)o->epochs);
    set_u(&f[FP_SEED], o->seed);
    set_s(&f[FP_OPTIM], o->optim.name ? o->optim.name : "");
    set_d(&f[FP_LR], o->optim.lr);
    set_d(&f[FP_MOMENTUM], o->optim.momentum);
    float betas[3] = {o->optim.beta1, o->optim.beta2, o->optim.eps};
    f[FP_BETAS].v = cf_hash_floats(betas, 3, 0);
    snprintf(f[FP_BETAS].text, sizeof f[FP_BETAS].text, "%g, %g, %g", betas[0], betas[1], betas[2]);
    set_d(&f[FP_WD], o->optim.weight_decay);
    set_d(&f[FP_CLIP], o->optim.clip_norm);
    set_s(&f[FP_SCHEDULE], o->schedule ? o->schedule : "const");
    char aug[64];
    set_s(&f[FP_AUGMENT], cf_augment_format(&t->aug, aug, sizeof aug));
    set_d(&f[FP_VAL], o->val_fraction);
    set_s(&f[FP_LOSS], o->loss == CF_LOSS_XENT ? "xent" : "mse");
    set_s(&f[FP_NORMALIZE], o->normalize ? "on" : "off");
    f[FP_NORM_STATS].v = cf_hash_floats(m->norm_mean, m->norm_count, m->norm_count);
    f[FP_NORM_STATS].v = cf_hash_floats(m->norm_std, m->norm_count, f[FP_NORM_STATS].v);
    f[FP_NORM_STATS].v = cf_hash_floats(m->tnorm_mean, m->tnorm_count, f[FP_NORM_STATS].v ^ m->tnorm_count);
    f[FP_NORM_STATS].v = cf_hash_floats(m->tnorm_std, m->tnorm_count, f[FP_NORM_STATS].v);
    set_u(&f[FP_PATIENCE], (uint64_t)o->patience);
    cf_fp_field *s = &f[FP_START];
    s->v = cf_rng_mix((uint64_t)t->epoch) ^ t->epoch_samples;
    if (t->epoch_samples)
        snprintf(s->text, sizeof s->text, "epoch %d after %zu samples", t->epoch + 1, t->epoch_samples);
    else if (t->epoch)
        snprintf(s->text, sizeof s->text, "after epoch %d", t->epoch);
    else
        snprintf(s->text, sizeof s->text, "the beginning");
}

int cf_fingerprint_compare(const cf_fingerprint *all, int n, char *msg, size_t size)
{
    for (int r = 1; r < n; r++)
        for (int i = 0; i < FP_N; i++) {
            const cf_fp_field *a = &all[r].f[i], *z = &all[0].f[i];
            if (a->v == z->v) continue;
            if (field[i].kind == SETTING)
                snprintf(msg, size, "rank %d's %s is %s, rank 0's is %s", r, field[i].name, a->text, z->text);
            else if (field[i].kind == COUNT)
                snprintf(msg, size, "rank %d's %s has %s %s, rank 0's has %s", r, field[i].name, a->text,
                         field[i].what, z->text);
            else if (field[i].count >= 0)
                snprintf(msg, size, "rank %d's %s differs from rank 0's (the same %s %s, %s)", r, field[i].name,
                         all[0].f[field[i].count].text, field[field[i].count].what, field[i].what);
            else
                snprintf(msg, size, "rank %d's %s differs from rank 0's (%s)", r, field[i].name, field[i].what);
            return 1;
        }
    return 0;
}
