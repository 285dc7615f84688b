/* fit.c - the training loop: shuffle, batch, forward, backward, update; evaluate;
 * checkpoints that resume exactly.
 *
 * Everything random in a run comes from the seed: epoch e's order of samples is a
 * Fisher-Yates shuffle from a generator seeded by (seed, e), so a run resumed at any
 * epoch continues exactly as the uninterrupted one would. Executors are bound once:
 * one for full batches, one for the smaller last batch of an epoch, and the same two
 * without gradients for evaluation. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/error.h"
#include "core/graph.h"
#include "core/rng.h"
#include "core/safetensors.h"
#include "core/params_io.h"

#define CKPT_FORMAT "cflux-checkpoint"
#define CKPT_VERSION 1

/* Executors for one batch size and one for the remainder of a dataset's size. */
typedef struct bound {
    cf_exec *full, *tail;
    int batch, tail_batch;
} bound;

struct cf_trainer {
    cf_model *m;
    cf_fit_opts o;
    cf_optim *opt;
    bound train, eval;
    int epoch;
    long step;
    int classes;                 /* of the model's output; 0 for regression */
    size_t xcount, ycount;       /* floats per sample: input, target (labels: one per row) */
    size_t *perm;
    size_t nperm;
};

cf_fit_opts cf_fit_defaults(void)
{
    cf_fit_opts o = {0};
    o.epochs = 10;
    o.batch = 64;
    o.optim = cf_optim_defaults("sgd");
    o.schedule = "const";
    return o;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void unbind(bound *b)
{
    cf_exec_free(b->full);
    cf_exec_free(b->tail);
    memset(b, 0, sizeof *b);
}

/* Executors for batches of `batch` over n samples: full batches and the remainder. */
static int bind_for(cf_model *m, bound *b, int batch, size_t n, unsigned flags)
{
    int tail = (int)(n % (size_t)batch);
    if (b->full && b->batch == batch && b->tail_batch == tail) return 0;
    unbind(b);
    b->batch = batch;
    b->tail_batch = tail;
    if (n >= (size_t)batch && !(b->full = cf_bind(m, batch, flags))) return -1;
    if (tail && !(b->tail = cf_bind(m, tail, flags))) return -1;
    return 0;
}

/* The data's samples must hold as many numbers as the model's input 0. */
static int check_input(const cf_model *m, const cf_dataset *d)
{
    cf_shape xs = cf_dataset_sample_shape(d);
    if (cf_shape_count(xs) == cf_shape_count(m->inputs[0]->shape)) return 0;
    char s1[96], s2[96];
    return cf_seterr("error: %s: the samples are %s (%zu numbers) but the model's input '%s' takes %s",
                     cf_dataset_name(d), cf_shape_format(xs, s1, sizeof s1), cf_shape_count(xs), m->inputs[0]->name,
                     cf_shape_format(m->inputs[0]->shape, s2, sizeof s2));
}

/* The data must fit the model: input element counts, targets, label range. */
static int check_data(cf_trainer *t, const cf_dataset *d)
{
    if (check_input(t->m, d)) return -1;
    size_t ys = (size_t)cf_dataset_target_size(d);
    if (ys != t->ycount)
        return cf_seterr("error: %s: each sample has %zu target number%s but the model's %s takes %zu", cf_dataset_name(d),
                         ys, ys == 1 ? "" : "s", t->classes ? "labels" : "output", t->ycount);
    if (t->classes) {
        const float *y = cf_dataset_y(d);
        size_t n = cf_dataset_count(d) * ys;
        for (size_t i = 0; i < n; i++)
            if (!(y[i] >= 0 && y[i] < (float)t->classes) || y[i] != (float)(int)y[i])
                return cf_seterr("error: %s: label %g of sample %zu is out of range for the model's %d classes",
                                 cf_dataset_name(d), (double)y[i], i / ys, t->classes);
    }
    return 0;
}

cf_trainer *cf_trainer_new(cf_model *m, const cf_dataset *train, const cf_fit_opts *o)
{
    if (!m || !train || !o) return cf_seterr("error: cf_trainer_new: no model, data or options"), NULL;
    if (o->epochs < 1 || o->batch < 1)
        return cf_seterr("error: epochs and batch must be at least 1 (got %d and %d)", o->epochs, o->batch), NULL;
    if (!(o->val_fraction >= 0 && o->val_fraction < 1))
        return cf_seterr("error: the validation fraction must be in [0, 1), not %g", o->val_fraction), NULL;
    float lr;
    if (cf_schedule_lr(o->schedule ? o->schedule : "const", 1, 0, 1, 1, &lr)) return NULL;
    if (cf_model_infer_shapes(m)) return NULL;
    if (!cf_model_has_loss(m)) {
        int ninputs = m->ninputs;
        if (ninputs != 1)
            return cf_seterr("error: training takes models of one input; this one has %d", ninputs), NULL;
        if (cf_model_add_loss(m, cf_dataset_classes(train) > 0 ? CF_LOSS_XENT : CF_LOSS_MSE)) return NULL;
    }
    cf_trainer *t = calloc(1, sizeof *t);
    if (!t) return cf_oom(sizeof *t), NULL;
    t->m = m;
    t->o = *o;
    if (!t->o.schedule) t->o.schedule = "const";
    const cf_node *out = m->outputs[0];
    t->classes = m->loss_kind == CF_LOSS_XENT ? out->shape.d[out->shape.rank - 1] : 0;
    t->xcount = cf_shape_count(m->inputs[0]->shape);
    t->ycount = cf_shape_count(m->target->shape);
    if (check_data(t, train) || cf_model_init_params(m) || !(t->opt = cf_optim_new(m, &t->o.optim))) {
        cf_trainer_free(t);
        return NULL;
    }
    return t;
}

void cf_trainer_free(cf_trainer *t)
{
    if (!t) return;
    unbind(&t->train);
    unbind(&t->eval);
    cf_optim_free(t->opt);
    free(t->perm);
    free(t);
}

int cf_trainer_epoch(const cf_trainer *t) { return t ? t->epoch : 0; }

/* Copy samples idx[0..b) of d into an executor's input and target. */
static void load_batch(cf_trainer *t, cf_exec *e, const cf_dataset *d, const size_t *idx, size_t b)
{
    float *x = cf_exec_input(e, 0, NULL), *y = cf_exec_input(e, t->m->target->index, NULL);
    const float *dx = cf_dataset_x(d), *dy = cf_dataset_y(d);
    for (size_t i = 0; i < b; i++) {
        memcpy(x + i * t->xcount, dx + idx[i] * t->xcount, t->xcount * sizeof *x);
        memcpy(y + i * t->ycount, dy + idx[i] * t->ycount, t->ycount * sizeof *y);
    }
}

/* Correct predictions in an executor's output 0 (argmax over the classes). */
static size_t correct(const cf_trainer *t, cf_exec *e)
{
    size_t n, hits = 0;
    const float *p = cf_exec_output(e, 0, &n), *y = cf_exec_input(e, t->m->target->index, NULL);
    int C = t->classes;
    for (size_t r = 0; r < n / (size_t)C; r++) {
        int best = 0;
        for (int c = 1; c < C; c++)
            if (p[r * C + c] > p[r * C + best]) best = c;
        hits += best == (int)y[r];
    }
    return hits;
}

static int evaluate(cf_trainer *t, const cf_dataset *d, double *loss, double *acc)
{
    size_t n = cf_dataset_count(d);
    *loss = *acc = NAN;
    if (n == 0) return 0;
    if (bind_for(t->m, &t->eval, t->o.batch, n, CF_LOSS)) return -1;   /* d checked by the caller */
    size_t *idx = malloc((size_t)t->o.batch * sizeof *idx);
    if (!idx) return cf_oom((size_t)t->o.batch * sizeof *idx);
    double total = 0;
    size_t hits = 0;
    for (size_t at = 0; at < n; at += (size_t)t->o.batch) {
        size_t b = n - at < (size_t)t->o.batch ? n - at : (size_t)t->o.batch;
        cf_exec *e = b == (size_t)t->o.batch ? t->eval.full : t->eval.tail;
        for (size_t i = 0; i < b; i++) idx[i] = at + i;
        load_batch(t, e, d, idx, b);
        if (cf_forward(e, 0)) {
            free(idx);
            return -1;
        }
        total += (double)cf_exec_loss(e) * (double)b;
        if (t->classes) hits += correct(t, e);
    }
    free(idx);
    *loss = total / (double)n;
    if (t->classes) *acc = (double)hits / (double)(n * t->ycount);
    return 0;
}

/* Epoch e's order: a shuffle seeded by the run's seed and the epoch. */
static void shuffle(cf_trainer *t, size_t n, int epoch)
{
    cf_rng r;
    cf_rng_seed(&r, t->o.seed ^ (0x9e3779b97f4a7c15ull * (uint64_t)(epoch + 1)));
    for (size_t i = 0; i < n; i++) t->perm[i] = i;
    for (size_t i = n - 1; i > 0; i--) {
        size_t j = i < 0xffffffffu ? cf_rng_below(&r, (uint32_t)(i + 1)) : (size_t)(cf_rng_next(&r) % (i + 1));
        size_t k = t->perm[i];
        t->perm[i] = t->perm[j];
        t->perm[j] = k;
    }
}

int cf_fit(cf_trainer *t, const cf_dataset *train_all, const cf_dataset *test)
{
    if (!t || !train_all) return cf_seterr("error: cf_fit: no trainer or data");
    const cf_dataset *train = train_all;
    cf_dataset *tr = NULL, *val = NULL;
    int rc = -1;
    if (t->o.val_fraction > 0) {
        if (cf_dataset_split(train_all, t->o.val_fraction, t->o.seed, &tr, &val)) return -1;
        train = tr;
    }
    size_t n = cf_dataset_count(train);
    int B = t->o.batch;
    if (n == 0) {
        cf_seterr("error: %s: no samples to train on", cf_dataset_name(train_all));
        goto out;
    }
    /* once, before any epoch: the training data (the validation split comes from it) and the test data */
    if (check_data(t, train_all) || (test && check_data(t, test))) goto out;
    if (bind_for(t->m, &t->train, B, n, CF_TRAIN)) goto out;
    if (t->nperm < n) {
        free(t->perm);
        if (!(t->perm = malloc(n * sizeof *t->perm))) {
            cf_oom(n * sizeof *t->perm);
            goto out;
        }
        t->nperm = n;
    }
    long steps = (long)((n + (size_t)B - 1) / (size_t)B), total = steps * t->o.epochs;
    for (int epoch = t->epoch + 1; epoch <= t->o.epochs; epoch++) {
        shuffle(t, n, epoch);
        double t0 = now(), loss = 0;
        size_t hits = 0;
        float lr = t->o.optim.lr;
        for (long s = 0; s < steps; s++) {
            size_t at = (size_t)s * (size_t)B, b = n - at < (size_t)B ? n - at : (size_t)B;
            cf_exec *e = b == (size_t)B ? t->train.full : t->train.tail;
            load_batch(t, e, train, t->perm + at, b);
            if (cf_schedule_lr(t->o.schedule, t->o.optim.lr, t->step, total, steps, &lr)) goto out;
            if (cf_forward(e, 1) || cf_backward(e)) goto out;
            if (cf_optim_step(t->opt, lr)) {
                cf_seterr("error: epoch %d, step %ld: a gradient is not finite (the loss was %g); "
                          "try a smaller learning rate or --clip",
                          epoch, s + 1, (double)cf_exec_loss(e));
                goto out;
            }
            t->step++;
            loss += (double)cf_exec_loss(e) * (double)b;
            if (t->classes) hits += correct(t, e);
            if (t->o.on_batch) {
                double done = (double)(at + b), secs = now() - t0;
                t->o.on_batch(epoch, s + 1, steps, loss / done,
                              t->classes ? (double)hits / (done * (double)t->ycount) : NAN,
                              secs > 0 ? done / secs : 0, t->o.user);
            }
        }
        cf_epoch_stats st = {epoch, t->o.epochs, loss / (double)n, NAN, NAN, NAN, NAN, NAN, lr, 0, 0};
        st.seconds = now() - t0;
        st.samples_per_sec = st.seconds > 0 ? (double)n / st.seconds : 0;
        if (t->classes) st.train_accuracy = (double)hits / ((double)n * (double)t->ycount);
        if (val && evaluate(t, val, &st.val_loss, &st.val_accuracy)) goto out;
        if (test && evaluate(t, test, &st.test_loss, &st.test_accuracy)) goto out;
        t->epoch = epoch;
        if (t->o.on_epoch && t->o.on_epoch(&st, t->o.user)) break;
    }
    rc = 0;
out:
    cf_dataset_free(tr);
    cf_dataset_free(val);
    return rc;
}

/* ---- evaluate and predict, for a model alone ---- */

int cf_evaluate(cf_model *m, const cf_dataset *d, int batch, double *loss, double *accuracy)
{
    if (!m || !d || batch < 1) return cf_seterr("error: cf_evaluate: no model or data, or a batch below 1");
    cf_fit_opts o = cf_fit_defaults();
    o.batch = batch;
    o.epochs = 1;
    cf_trainer *t = cf_trainer_new(m, d, &o);
    if (!t) return -1;
    double l, a;
    int rc = evaluate(t, d, &l, &a);
    cf_trainer_free(t);
    if (rc) return -1;
    if (loss) *loss = l;
    if (accuracy) *accuracy = a;
    return 0;
}

int cf_predict(cf_model *m, const cf_dataset *d, int batch, float *out)
{
    if (!m || !d || !out || batch < 1) return cf_seterr("error: cf_predict: no model, data or output, or a batch below 1");
    if (cf_model_infer_shapes(m)) return -1;
    size_t xcount = cf_shape_count(m->inputs[0]->shape), n = cf_dataset_count(d);
    if (check_input(m, d)) return -1;
    bound b = {0};
    if (bind_for(m, &b, batch, n, 0)) {
        unbind(&b);
        return -1;
    }
    size_t ocount = cf_shape_count(m->outputs[0]->shape);
    for (size_t at = 0; at < n; at += (size_t)batch) {
        size_t k = n - at < (size_t)batch ? n - at : (size_t)batch;
        cf_exec *e = k == (size_t)batch ? b.full : b.tail;
        memcpy(cf_exec_input(e, 0, NULL), cf_dataset_x(d) + at * xcount, k * xcount * sizeof(float));
        if (cf_forward(e, 0)) {
            unbind(&b);
            return -1;
        }
        memcpy(out + at * ocount, cf_exec_output(e, 0, NULL), k * ocount * sizeof(float));
    }
    unbind(&b);
    return 0;
}

/* ---- checkpoints ---- */

int cf_trainer_save(cf_trainer *t, const char *path)
{
    if (!t || !path) return cf_seterr("error: cf_trainer_save: no trainer or path");
    cf_model *m = t->m;
    int ns = cf_optim_state_count(t->opt), n = m->nparams + ns;
    cf_st_tensor *ts = calloc((size_t)n + 1, sizeof *ts);
    char **names = calloc((size_t)ns + 1, sizeof *names);
    if (!ts || !names) {
        free(ts);
        free(names);
        return cf_oom((size_t)n * sizeof *ts);
    }
    cf_model_params_as_tensors(m, ts);
    int rc = 0;
    for (int i = 0; i < ns; i++) {
        size_t count;
        const char *sn = cf_optim_state_name(t->opt, i);
        names[i] = malloc(strlen(sn) + 8);
        if (!names[i]) {
            rc = cf_oom(strlen(sn) + 8);
            break;
        }
        sprintf(names[i], "optim.%s", sn);
        cf_st_tensor *x = &ts[m->nparams + i];
        x->name = names[i];
        x->data = cf_optim_state_data(t->opt, i, &count);
        x->rank = 1;
        x->shape[0] = (long long)count;
        x->count = count;
    }
    char version[16], epoch[16], step[32], seed[32], batch[16], hyper[256];
    snprintf(version, sizeof version, "%d", CKPT_VERSION);
    snprintf(epoch, sizeof epoch, "%d", t->epoch);
    snprintf(step, sizeof step, "%ld", t->step);
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)t->o.seed);
    snprintf(batch, sizeof batch, "%d", t->o.batch);
    const cf_optim_opts *op = &t->o.optim;
    snprintf(hyper, sizeof hyper,
             "{\"lr\": %.9g, \"momentum\": %.9g, \"beta1\": %.9g, \"beta2\": %.9g, \"eps\": %.9g, "
             "\"weight_decay\": %.9g, \"clip_norm\": %.9g}",
             op->lr, op->momentum, op->beta1, op->beta2, op->eps, op->weight_decay, op->clip_norm);
    const char *keys[] = {"format", "format_version", "cflux_version", "epoch", "optimizer_steps", "seed", "batch",
                          "optimizer", "optimizer_settings", "schedule", "loss", "model_file", "model_source"};
    const char *vals[] = {CKPT_FORMAT, version, cf_version(), epoch, step, seed, batch, op->name, hyper,
                          t->o.schedule, m->loss_kind == CF_LOSS_XENT ? "cross-entropy" : "mean squared error",
                          m->source_name ? m->source_name : "", m->source ? m->source : ""};
    if (rc == 0) rc = cf_st_write(path, n, ts, 13, keys, vals);
    for (int i = 0; i < ns; i++) free(names[i]);
    free(names);
    free(ts);
    return rc;
}

int cf_trainer_load(cf_trainer *t, const char *path)
{
    if (!t || !path) return cf_seterr("error: cf_trainer_load: no trainer or path");
    cf_st_file *f = cf_st_read(path);
    if (!f) return -1;
    int rc = -1;
    const char *format = cf_st_meta(f, "format"), *ver = cf_st_meta(f, "format_version");
    const char *epoch = cf_st_meta(f, "epoch"), *steps = cf_st_meta(f, "optimizer_steps");
    const char *optim = cf_st_meta(f, "optimizer");
    if (!format || strcmp(format, CKPT_FORMAT) != 0 || !ver || !epoch || !steps || !optim) {
        cf_seterr("error: %s: not a cflux checkpoint (no format metadata); load parameters alone with --params", path);
        goto out;
    }
    if (atoi(ver) < 1 || atoi(ver) > CKPT_VERSION) {
        cf_seterr("error: %s: written by checkpoint format %s; this build reads 1 to %d", path, ver, CKPT_VERSION);
        goto out;
    }
    if (strcmp(optim, t->o.optim.name) != 0) {
        cf_seterr("error: %s: the checkpoint's optimizer is %s but this run uses %s", path, optim, t->o.optim.name);
        goto out;
    }
    /* parameters and every optimizer tensor fit, before anything changes */
    if (cf_model_params_from(t->m, f, path, CF_LOAD_CHECK)) goto out;
    for (int i = 0; i < cf_optim_state_count(t->opt); i++) {
        char name[512];
        size_t count;
        snprintf(name, sizeof name, "optim.%s", cf_optim_state_name(t->opt, i));
        cf_optim_state_data(t->opt, i, &count);
        const cf_st_tensor *x = cf_st_find(f, name);
        if (!x || x->count != count) {
            cf_seterr("error: %s: the optimizer state '%s' is %s", path, name, x ? "of another size" : "missing");
            goto out;
        }
    }
    if (cf_model_params_from(t->m, f, path, 0)) goto out;   /* by name; skips optim.* */
    for (int i = 0; i < cf_optim_state_count(t->opt); i++) {
        char name[512];
        size_t count;
        snprintf(name, sizeof name, "optim.%s", cf_optim_state_name(t->opt, i));
        float *dst = cf_optim_state_data(t->opt, i, &count);
        memcpy(dst, cf_st_find(f, name)->data, count * sizeof *dst);
    }
    cf_optim_set_steps(t->opt, atol(steps));
    t->epoch = atoi(epoch);
    t->step = atol(steps);
    rc = 0;
out:
    cf_st_free(f);
    return rc;
}
