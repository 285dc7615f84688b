/* fit.c - the training loop: shuffle, batch, forward, backward, update; evaluate.
 *
 * Everything random in a run comes from the seed: epoch e's order of samples is a
 * Fisher-Yates shuffle from a generator seeded by (seed, e), so a run resumed at any
 * point (an epoch's end, or the middle of one after cf_trainer_stop) continues
 * exactly as the uninterrupted one would; so is a training sample's augmentation
 * (o.augment), drawn from (seed, e, the sample's index) alone. Sequential data (text)
 * is not shuffled but read as B contiguous streams, one per row of the batch, so that
 * state carried from one batch to the next (a recurrent model's) goes on along the
 * text: see order(); that state starts from zeros where a stream starts from its
 * beginning, at each epoch's training (not where a stopped epoch resumes) and each
 * evaluation. The learning-rate
 * schedule is a function of the position in the run, (epoch - 1) * steps + step, so a run resumed with
 * another batch size or more epochs continues it by the fraction of the run done.
 * Executors are bound once: one for full batches, one for the smaller last batch of
 * an epoch, and the same two without gradients for evaluation.
 *
 * Training stops with an error, before the update that would spoil the parameters,
 * when the loss is not finite or grows past CF_DIVERGED times the run's first loss
 * (the largest of its first CF_FIRST_STEPS that stay within CF_FIRST_SPREAD times the
 * very first, and at least 1): such a run is diverging, and every later step would be
 * wasted. (A reference that followed every rise of the first steps would follow a run
 * that diverges from its first step: a tiny data set's rate of 1 reached 1e19.) */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/error.h"
#include "core/graph.h"
#include "core/mem.h"
#include "core/rng.h"
#include "data/data.h"
#include "train/dist.h"
#include "train/fingerprint.h"
#include "train/trainer.h"

#define CF_DIVERGED 1e4
#define CF_FIRST_STEPS 16
#define CF_FIRST_SPREAD 100
/* A run whose loss after CF_STALL_STEPS steps is within CF_STALL_SHARE of where it
 * began, on regression targets of RMS CF_STALL_RMS or more, is told why (stalled). */
#define CF_STALL_STEPS 50
#define CF_STALL_SHARE 0.01
#define CF_STALL_RMS 100.0

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

void cf_trainer_warn(const cf_trainer *t, const char *fmt, ...)
{
    if (!t->o.on_warning) return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    t->o.on_warning(msg, t->o.user);
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

/* Executors for this rank's shard of batches of `batch` rows and of the last, n %
 * batch rows (data-parallel: cf_dist_shard; else the whole batch); a shard of no rows
 * has none. */
static int bind_shards(cf_trainer *t, bound *b, int batch, size_t n, unsigned flags)
{
    if (!t->dist) return bind_for(t->m, b, batch, n, flags);
    size_t lo, hi, tlo, thi;
    cf_dist_shard((size_t)batch, &lo, &hi);
    cf_dist_shard(n % (size_t)batch, &tlo, &thi);
    int full = (int)(hi - lo), tail = (int)(thi - tlo);
    if ((b->full || b->tail) && b->batch == full && b->tail_batch == tail) return 0;
    unbind(b);
    b->batch = full;
    b->tail_batch = tail;
    if (full && n >= (size_t)batch && !(b->full = cf_bind(t->m, full, flags))) return -1;
    if (tail && !(b->tail = cf_bind(t->m, tail, flags))) return -1;
    if (flags & CF_TRAIN) {
        cf_exec_set_stream(b->full, (uint64_t)cf_dist_rank());
        cf_exec_set_stream(b->tail, (uint64_t)cf_dist_rank());
    }
    return 0;
}

/* The data's samples must hold as many numbers as the model's input 0. */
static int check_input(const cf_model *m, const cf_dataset *d)
{
    cf_shape xs = cf_dataset_sample_shape(d);
    if (cf_shape_count(xs) == cf_shape_count(m->inputs[0]->shape)) return 0;
    char s1[96], s2[96];
    cf_seterr("error: %s: the samples are %s (%zu numbers) but the model's input '%s' takes %s", cf_dataset_name(d),
              cf_shape_format(xs, s1, sizeof s1), cf_shape_count(xs), m->inputs[0]->name,
              cf_shape_format(m->inputs[0]->shape, s2, sizeof s2));
    /* a file of inputs alone, one column wider than the model takes: the label left in */
    if (cf_dataset_column_count(d) > 0 && cf_dataset_label_column(d) < 0 &&
        cf_shape_count(xs) == cf_shape_count(m->inputs[0]->shape) + 1)
        cf_adderr("; one column too many: drop the label column?");
    return -1;
}

/* Where a dataset's labels come from, for messages that suspect the wrong column:
 * " (the labels are column 0 'price' of the file; --label-col chooses another, -1 the
 * last)", or "" when they do not come from a column. */
static const char *label_source(const cf_dataset *d, char *buf, size_t size)
{
    int col = cf_dataset_label_column(d);
    if (col < 0) return "";
    const char *name = cf_dataset_column_name(d, col);
    snprintf(buf, size, " (the labels are column %d%s%s%s of the file; --label-col chooses another, -1 the last)",
             col, name ? " '" : "", name ? name : "", name ? "'" : "");
    return buf;
}

/* Text data must be the text the trainer was made for (its vocabulary is saved in
 * checkpoints), and a classifier with a class for each of its characters. */
static int check_vocab(const cf_trainer *t, const cf_dataset *d)
{
    int nv;
    const unsigned char *v = cf_dataset_vocab(d, &nv);
    if (nv != t->nvocab || (nv && memcmp(v, t->vocab, (size_t)nv) != 0)) {
        if (!t->nvocab) return cf_seterr("error: %s: text data, but the trainer was made for data that is not text",
                                         cf_dataset_name(d));
        if (!nv) return cf_seterr("error: %s: the trainer was made for text data and this is not text",
                                  cf_dataset_name(d));
        return cf_seterr("error: %s: the text's %d distinct characters are not the %d the trainer was made for",
                         cf_dataset_name(d), nv, t->nvocab);
    }
    if (!nv) return 0;
    if (!t->classes) {
        char at[256];
        return cf_seterr("error: %s: text data trains a classifier of characters; the model must end with softmax "
                         "over them, and this one ends with %s", cf_dataset_name(d),
                         cf_node_describe(t->m->outputs[0], at, sizeof at));
    }
    if (nv > t->classes)
        return cf_seterr("error: %s: the text has %d distinct characters but the model's output has %d classes; it "
                         "needs at least %d", cf_dataset_name(d), nv, t->classes, nv);
    int T = cf_dataset_target_size(d);
    if ((size_t)T != t->ycount) {
        char s1[96];
        return cf_seterr("error: %s: text data has a target for each of the %d characters of a sequence, so the "
                         "model's output is (B, %d, classes); this one's is %s", cf_dataset_name(d), T, T,
                         cf_shape_format(t->m->outputs[0]->shape, s1, sizeof s1));
    }
    return 0;
}

/* How much check_data looks at: the shapes and every number, and for a classifier's
 * training set also whether there is more than one class. */
enum { CHECK_VALUES, CHECK_TRAINING };

/* The data must fit the model: input element counts, targets, label range, finite
 * numbers; a training set for a classifier must have more than one class. */
static int check_data(cf_trainer *t, const cf_dataset *d, int level)
{
    if (check_input(t->m, d) || check_vocab(t, d)) return -1;
    size_t ys = (size_t)cf_dataset_target_size(d), n = cf_dataset_count(d);
    char where[256], at[256];
    if (ys != t->ycount) {
        const cf_node *out = t->m->outputs[0];
        if (!t->classes && cf_dataset_classes(d) > 0 && ys == 1)
            return cf_seterr("error: %s: each sample has one label but the model's output has %zu numbers; a "
                             "classifier ends with softmax, and this model ends with %s", cf_dataset_name(d),
                             t->ycount, cf_node_describe(out, at, sizeof at));
        return cf_seterr("error: %s: each sample has %zu target number%s but the model's %s takes %zu",
                         cf_dataset_name(d), ys, ys == 1 ? "" : "s", t->classes ? "labels" : "output", t->ycount);
    }
    int named = cf_dataset_class_names(d, NULL);
    if (named && t->classes && named != t->classes)
        return cf_seterr("error: %s: the data names %d classes but the model's output has %d; its last layer must "
                         "give %d", cf_dataset_target_name(d), named, t->classes, named);
    const float *x = cf_dataset_x(d), *y = cf_dataset_y(d);
    for (size_t i = 0; x && i < n * t->xcount; i++)   /* streamed (x NULL): decoded pixels are finite */
        if (!isfinite(x[i]))
            return cf_seterr("error: %s: sample %zu holds %g, not a finite number", cf_dataset_name(d), i / t->xcount,
                             (double)x[i]);
    for (size_t i = 0; i < n * ys; i++) {
        if (!isfinite(y[i]))
            return cf_seterr("error: %s: the target of sample %zu is %g, not a finite number", cf_dataset_target_name(d),
                             i / ys, (double)y[i]);
        if (t->classes && (!(y[i] >= 0 && y[i] < (float)t->classes) || y[i] != floorf(y[i])))
            return cf_seterr("error: %s: label %g of sample %zu is %s for the model's %d classes%s",
                             cf_dataset_target_name(d), (double)y[i], i / ys,
                             y[i] == floorf(y[i]) ? "out of range" : "not a class index", t->classes,
                             label_source(d, where, sizeof where));
    }
    if (level == CHECK_TRAINING && t->classes && n > 1) {
        size_t i = 1;
        while (i < n * ys && y[i] == y[0]) i++;
        if (i == n * ys)
            return cf_seterr("error: %s: every label is %g: there is nothing to learn%s", cf_dataset_target_name(d),
                             (double)y[0], *label_source(d, where, sizeof where) ? where : "");
    }
    return 0;
}

/* The loss a model trains with when none is asked for: cross-entropy for a model
 * that ends with softmax, mean squared error for anything else. */
static cf_loss default_loss(const cf_model *m) { return m->outputs[0]->op == CF_OP_SOFTMAX ? CF_LOSS_XENT : CF_LOSS_MSE; }

/* What a run keeps from start to end (the parameter and state blocks, the gradients,
 * the optimizer's state), sized against the room under the memory limit before any
 * of it is made: a model too large once had its weights made and initialised, minutes
 * for gigabytes, before the optimizer's state was refused. 0, or -1 naming the largest
 * parameter. */
static int size_run(cf_model *m, const char *optim)
{
    size_t w = m->sealed ? 0 : cf_leaf_floats(m->params, m->nparams) + cf_leaf_floats(m->states, m->nstates);
    size_t g = m->pgrad ? 0 : cf_leaf_floats(m->params, m->nparams), s = cf_optim_state_bytes(m, optim);
    w *= sizeof(float), g *= sizeof(float);
    if (w + g + s <= cf_mem_room()) return 0;
    char a[CF_MEM_STR], b[CF_MEM_STR], c[CF_MEM_STR], d[CF_MEM_STR];
    cf_mem_refuse(0, "training needs %s (weights %s, their gradients %s, the optimizer state %s)",
                  cf_mem_str(w + g + s, a), cf_mem_str(w, b), cf_mem_str(g, c), cf_mem_str(s, d));
    return cf_model_blame_largest(m);
}

cf_trainer *cf_trainer_new(cf_model *m, const cf_dataset *train, const cf_fit_opts *o)
{
    if (!m || !train || !o) return cf_seterr("error: cf_trainer_new: no model, data or options"), NULL;
    if (o->epochs < 1 || o->batch < 1)
        return cf_seterr("error: epochs and batch must be at least 1 (got %d and %d)", o->epochs, o->batch), NULL;
    if (!(o->val_fraction >= 0 && o->val_fraction < 1))
        return cf_seterr("error: the validation fraction must be in [0, 1), not %g", o->val_fraction), NULL;
    if ((o->patience || o->keep_best) && !(o->val_fraction > 0))
        return cf_seterr("error: %s watches the validation loss: hold out a validation split (--val)",
                         o->patience ? "early stopping (--patience)" : "keeping the best epoch (--keep-best)"), NULL;
    if (o->patience < 0) return cf_seterr("error: the patience must be 0 (none) or more epochs, not %d", o->patience), NULL;
    if (o->loss != 0 && o->loss != CF_LOSS_XENT && o->loss != CF_LOSS_MSE)
        return cf_seterr("error: unknown loss %d (CF_LOSS_XENT or CF_LOSS_MSE)", (int)o->loss), NULL;
    if (!(o->label_smoothing >= 0 && o->label_smoothing < 1))
        return cf_seterr("error: the label smoothing must be in [0, 1), not %g", o->label_smoothing), NULL;
    float lr;
    if (cf_schedule_lr(o->schedule ? o->schedule : "const", 1, 0, 1, 1, &lr)) return NULL;
    if (cf_model_infer_shapes(m)) return NULL;
    int trainable = 0;   /* PyTorch's optimizers refuse an empty parameter list likewise */
    for (int i = 0; i < m->nparams; i++) trainable += m->params[i]->req != CF_GRAD_NONE;
    if (!trainable)
        return cf_seterr("error: the model has no parameters to train (%s)",
                         m->nparams ? "all are frozen" : "it has none"), NULL;
    int ninputs = m->ninputs - (m->target != NULL);
    if (ninputs != 1) return cf_seterr("error: training takes models of one input; this one has %d", ninputs), NULL;
    cf_augment aug;
    if (cf_augment_parse(o->augment, m->inputs[0]->shape, &aug)) return NULL;
    if (cf_augment_any(&aug) && cf_dataset_sequential(train))
        return cf_seterr("error: %s: --augment transforms images, and this is text", cf_dataset_name(train)), NULL;
    if (o->normalize && cf_norm_check(m, train)) return NULL;
    cf_loss want = o->loss ? o->loss : cf_model_has_loss(m) ? (cf_loss)cf_model_has_loss(m) : default_loss(m);
    if (cf_loss_fits(m, want)) return NULL;
    if (o->label_smoothing > 0 && want != CF_LOSS_XENT)
        return cf_seterr("error: label smoothing is for cross-entropy, and this model trains with mean squared error "
                         "(a classifier ends with softmax)"), NULL;
    cf_trainer *t = calloc(1, sizeof *t);
    if (!t) return cf_oom(sizeof *t), NULL;
    t->m = m;
    t->o = *o;
    t->o.loss = want;
    if (!t->o.schedule) t->o.schedule = "const";
    /* the targets: the output's shape, less the classes for labels */
    const cf_node *out = m->outputs[0];
    t->classes = want == CF_LOSS_XENT ? out->shape.d[out->shape.rank - 1] : 0;
    t->xcount = cf_shape_count(m->inputs[0]->shape);
    t->ycount = cf_shape_count(out->shape) / (t->classes ? (size_t)t->classes : 1);
    t->ntrain = cf_dataset_count(train);
    const unsigned char *vocab = cf_dataset_vocab(train, &t->nvocab);
    if (t->nvocab) memcpy(t->vocab, vocab, (size_t)t->nvocab);
    t->initial_loss = t->first_loss = NAN;
    atomic_init(&t->stop, 0);
    t->aug = aug;
    if (cf_augment_any(&aug) && !(t->aug_scratch = malloc(t->xcount * sizeof *t->aug_scratch))) {
        cf_oom(t->xcount * sizeof *t->aug_scratch);
        cf_trainer_free(t);
        return NULL;
    }
    /* the model changes (its loss) only once the data fits */
    if (check_data(t, train, CHECK_VALUES) || size_run(m, t->o.optim.name) || cf_model_add_loss(m, want) ||
        cf_loss_set_smoothing(m, (float)o->label_smoothing) || cf_model_init_params(m) ||
        !(t->opt = cf_optim_new(m, &t->o.optim)) || (o->distributed && cf_dist_size() > 1 && !(t->dist = cf_dist_attach(m)))) {
        cf_trainer_free(t);
        return NULL;
    }
    return t;
}

double cf_trainer_wait_seconds(const cf_trainer *t) { return t ? cf_dist_wait_seconds(t->dist) : 0; }

void cf_trainer_free(cf_trainer *t)
{
    if (!t) return;
    unbind(&t->train);
    unbind(&t->eval);
    cf_optim_free(t->opt);
    cf_dist_detach(t->dist);
    free(t->perm);
    free(t->hist);
    free(t->aug_scratch);
    cf_trainer_drop_carry(t);
    free(t);
}

int cf_trainer_record(cf_trainer *t, const cf_epoch_stats *st)
{
    if (t->nhist == t->cap_hist) {
        int cap = t->cap_hist ? 2 * t->cap_hist : 16;
        cf_epoch_stats *h = realloc(t->hist, (size_t)cap * sizeof *h);
        if (!h) return cf_oom((size_t)cap * sizeof *h);
        t->hist = h;
        t->cap_hist = cap;
    }
    t->hist[t->nhist++] = *st;
    return 0;
}

int cf_trainer_history(const cf_trainer *t, const cf_epoch_stats **h)
{
    if (h) *h = t ? t->hist : NULL;
    return t ? t->nhist : 0;
}

int cf_trainer_epoch(const cf_trainer *t) { return t ? t->epoch : 0; }
size_t cf_trainer_epoch_samples(const cf_trainer *t) { return t ? t->epoch_samples : 0; }
cf_loss cf_trainer_loss(const cf_trainer *t) { return t ? t->o.loss : 0; }
void cf_trainer_stop(cf_trainer *t) { cf_trainer_stop_with(t, 1); }

void cf_trainer_stop_with(cf_trainer *t, int reason)
{
    if (t) atomic_store(&t->stop, reason > 0 ? reason : 1);
}

int cf_trainer_stop_reason(const cf_trainer *t) { return t ? atomic_load(&t->stop) : 0; }

/* Data-parallel: whether to stop is every rank's decision, the largest reason of any
 * rank (in *reason, and each rank's own from then on), so that all stop at the same
 * place and give one reason. A signal that lands during the exchange counts at the
 * next: the decision is *reason, never the flag read again. 0 or -1. */
static int agree_stop(cf_trainer *t, int *reason)
{
    *reason = atomic_load(&t->stop);
    if (cf_dist_max(t->dist, reason)) return -1;
    if (*reason) atomic_store(&t->stop, *reason);
    return 0;
}

/* Data-parallel: the ranks compare their fingerprints (fingerprint.h) before the
 * first step; a difference is an error on every rank, the same words on each. 0 or -1. */
static int agree_start(cf_trainer *t, const cf_dataset *train, const cf_dataset *test)
{
    int n = cf_dist_size();
    cf_fingerprint mine, *all = malloc((size_t)n * sizeof *all);
    if (!all) return cf_oom((size_t)n * sizeof *all);
    cf_fingerprint_make(t, train, test, &mine);
    char msg[512];
    int rc = cf_dist_allgather(t->dist, &mine, all, sizeof mine);
    if (!rc && cf_fingerprint_compare(all, n, msg, sizeof msg)) {
        rc = cf_seterr("error: the ranks disagree: %s", msg);
        cf_dist_error_is_shared();
    }
    free(all);
    return rc;
}

/* Stage `stage` of the run's augmentation on b samples x, sample i being training
 * sample at[i] in epoch `epoch`; epoch 0 (evaluation) or no augmentation: nothing. */
static void augment(const cf_trainer *t, int stage, float *x, const size_t *at, size_t b, int epoch)
{
    if (epoch > 0 && t->aug_scratch) cf_augment_apply(&t->aug, stage, x, b, at, t->o.seed, epoch, t->aug_scratch);
}

/* Rows at[0 .. b) of d into e's input and target: sample at[i] (decoded, for a
 * streamed dataset), or, for windows, the sample-sized stretch that starts at float
 * at[i] (text keeps its sequences one after another, so a window is the T floats from
 * there, of x and of y); in training (epoch > 0) transformed by the run's
 * augmentation, around the standardisation. 0, or -1 with the error of a file that
 * cannot be read. */
static int load_rows(const cf_trainer *t, cf_exec *e, const cf_dataset *d, const size_t *at, size_t b, int windows,
                     int epoch)
{
    float *x = cf_exec_input(e, 0, NULL), *y = cf_exec_input(e, t->m->target->index, NULL);
    const float *dx = cf_dataset_x(d), *dy = cf_dataset_y(d);
    if (!windows && cf_dataset_fetch(d, at, b, x)) return -1;
    for (size_t i = 0; i < b; i++) {
        if (windows) memcpy(x + i * t->xcount, dx + at[i], t->xcount * sizeof *x);
        memcpy(y + i * t->ycount, dy + (windows ? at[i] : at[i] * t->ycount), t->ycount * sizeof *y);
    }
    augment(t, CF_AUGMENT_RAW, x, at, b, epoch);
    cf_norm_apply(t->m, x, b);
    augment(t, CF_AUGMENT_STANDARDISED, x, at, b, epoch);
    cf_norm_apply_targets(t->m, y, b);
    return 0;
}

int cf_trainer_load_batch(const cf_trainer *t, cf_exec *e, const cf_dataset *d, const size_t *idx, size_t b)
{
    return load_rows(t, e, d, idx, b, 0, 0);
}

/* Correct predictions in an executor's output 0: the first class of the highest
 * score (as argmax in PyTorch and NumPy) against the label. */
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

/* The sample at place p of an epoch of sequential data read as B streams of K
 * samples each: place p is row p % B of batch p / B, and stream i is samples
 * [iK, iK + K). */
static size_t stream_sample(size_t p, size_t B, size_t K) { return p % B * K + p / B; }

/* The carried state a resumed run's checkpoint held goes to the training executor:
 * each state by name. One missing or of another size (the batch changed) starts
 * every state from zeros, with a note: the run goes on, only not exactly as the one
 * that was stopped would have. */
static void give_carries(cf_trainer *t, cf_exec *e)
{
    if (!t->ncarry || !e) return;
    for (int i = 0; i < cf_exec_state_count(e); i++) {
        const char *name = cf_exec_state_name(e, i);
        const struct cf_saved_carry *c = NULL;
        for (int k = 0; k < t->ncarry && !c; k++)
            if (strcmp(t->carry[k].name, name) == 0) c = &t->carry[k];
        if (!c || c->count != cf_shape_count(cf_exec_state_shape(e, i))) {
            cf_exec_reset_state(e);
            cf_trainer_warn(t, "note: the checkpoint's carried state '%s' %s: the resumed epoch starts it from zeros",
                            name, c ? "was for another batch size" : "is missing");
            break;
        }
        cf_exec_state_set(e, i, c->data);
    }
    cf_trainer_drop_carry(t);
}

/* A streamed dataset's reader ahead for rows [lo, hi) of m spread over d's samples,
 * in batches of B. 0 or -1. */
static int plan_spread(const cf_dataset *d, size_t lo, size_t hi, size_t m, size_t B)
{
    size_t n = cf_dataset_count(d);
    if (m >= n || !cf_dataset_streamed(d)) return cf_dataset_plan_range(d, lo, hi - lo, B);
    size_t *rows = malloc((hi - lo + 1) * sizeof *rows);
    if (!rows) return cf_oom((hi - lo + 1) * sizeof *rows);
    for (size_t p = lo; p < hi; p++) rows[p - lo] = cf_spread_row(p, m, n);
    int rc = cf_dataset_plan(d, rows, hi - lo, B);
    free(rows);
    return rc;
}

/* Mean loss and accuracy over d, in its order; sequential data, for a model that
 * carries state from batch to batch, as streams in batches of o.batch (of n, when it
 * has fewer samples), the samples past the last whole batch left out. A model that
 * carries none reads every sequence, in order. For regression, with mae and r2 not
 * NULL, also cf_metrics's MAE and R² of the samples scored, in the targets' own units:
 * the outputs' standardisation undone, against the data's targets, and R²'s sum of
 * squares about the mean of those targets (a first pass over them). */
static int evaluate(cf_trainer *t, const cf_dataset *d, double *loss, double *acc, double *mae, double *r2)
{
    size_t n = cf_dataset_count(d), B = (size_t)t->o.batch, yc = t->ycount;
    int seq = cf_dataset_sequential(d) && t->m->ncarries > 0, reg = !t->classes && mae && r2 && !seq;
    *loss = *acc = NAN;
    if (reg) *mae = *r2 = NAN;
    if (n == 0) return 0;
    if (seq) {
        if (n < B) B = n;
        n = n / B * B;
    }
    size_t K = n / B, lo = 0, all = n;
    /* a limit: the first batches of text (of its streams, K long still), else batches
       of samples spread over the data (cf_spread_row) */
    if (t->o.limit_batches > 0 && n / B >= (size_t)t->o.limit_batches) n = (size_t)t->o.limit_batches * B;
    size_t hi = n, m = cf_dataset_sequential(d) ? all : n;
    if (t->dist && !seq) cf_dist_shard(n, &lo, &hi);   /* data-parallel: a shard each, summed */
    if (bind_for(t->m, &t->eval, (int)B, hi - lo, CF_LOSS)) return -1;   /* d checked by the caller */
    if (!seq && plan_spread(d, lo, hi, m, B)) return -1;   /* a streamed dataset reads ahead */
    size_t *idx = malloc(B * sizeof *idx);
    double *mean = reg ? calloc(yc, sizeof *mean) : NULL;   /* regression: each target's, over the n scored */
    float *own = reg ? malloc(B * yc * sizeof *own) : NULL;  /* a batch's outputs in the targets' units */
    if (!idx || (reg && (!mean || !own))) {
        free(idx);
        free(mean);
        free(own);
        return cf_oom(B * (sizeof *idx + yc * sizeof *own));
    }
    const float *dy = cf_dataset_y(d);
    for (size_t p = 0; reg && p < n; p++)   /* every rank's rows: the same mean on each */
        for (size_t j = 0; j < yc; j++) mean[j] += dy[cf_spread_row(p, m, all) * yc + j] / (double)n;
    if (seq) cf_exec_reset_state(t->eval.full);   /* the streams start from their beginning */
    double total = 0, ae = 0, se = 0, tot = 0;
    size_t hits = 0;
    int rc = 0;
    for (size_t at = lo; at < hi; at += B) {
        size_t b = hi - at < B ? hi - at : B;
        cf_exec *e = b == B ? t->eval.full : t->eval.tail;
        for (size_t i = 0; i < b; i++) idx[i] = seq ? stream_sample(at + i, B, K) : cf_spread_row(at + i, m, all);
        if (cf_trainer_load_batch(t, e, d, idx, b) || cf_forward(e, 0)) {
            rc = -1;
            break;
        }
        total += (double)cf_exec_loss(e) * (double)b;
        if (t->classes) hits += correct(t, e);
        if (!reg) continue;
        memcpy(own, cf_exec_output(e, 0, NULL), b * yc * sizeof *own);
        cf_norm_undo_targets(t->m, own, b);
        for (size_t i = 0; i < b; i++)
            for (size_t j = 0; j < yc; j++) {
                double y = dy[idx[i] * yc + j], err = own[i * yc + j] - y;
                ae += fabs(err);
                se += err * err;
                tot += (y - mean[j]) * (y - mean[j]);
            }
    }
    free(idx);
    free(mean);
    free(own);
    if (rc) return -1;
    if (t->dist && !seq) {
        double v[5] = {total, (double)hits, ae, se, tot};
        if (cf_dist_sum(t->dist, v, 5)) return -1;
        total = v[0];
        hits = (size_t)v[1];
        ae = v[2], se = v[3], tot = v[4];
    }
    *loss = total / (double)n;
    if (t->classes) *acc = (double)hits / (double)(n * t->ycount);
    if (reg) {
        *mae = ae / (double)(n * yc);
        *r2 = tot > 0 ? 1 - se / tot : NAN;
    }
    return 0;
}

/* Epoch e's order of the n samples it trains. Sequential data: B streams of K = n / B
 * contiguous samples (n is a multiple of B there), stream i in row i of every batch:
 * batch k's row i is sample iK + k. Other data: a shuffle seeded by the run's seed and
 * the epoch. */
void cf_sample_order(size_t *perm, size_t n, size_t B, int seq, uint64_t seed, int pass)
{
    if (seq) {
        for (size_t p = 0; p < n; p++) perm[p] = stream_sample(p, B, n / B);
        return;
    }
    cf_rng r;
    cf_rng_seed(&r, seed ^ (0x9e3779b97f4a7c15ull * (uint64_t)(pass + 1)));
    for (size_t i = 0; i < n; i++) perm[i] = i;
    for (size_t i = n - 1; i > 0; i--) {
        size_t j = i < 0xffffffffu ? cf_rng_below(&r, (uint32_t)(i + 1)) : (size_t)(cf_rng_next(&r) % (i + 1));
        size_t k = perm[i];
        perm[i] = perm[j];
        perm[j] = k;
    }
}

/* Epoch e's n windows of text for a model that carries no state: their first
 * characters, drawn at random from every place a whole window (and its targets) fits
 * in the count sequences of T, seeded by the run's seed and the epoch. */
static void window_order(size_t *perm, size_t n, size_t count, size_t T, uint64_t seed, int epoch)
{
    cf_rng r;
    cf_rng_seed(&r, seed ^ (0xd1b54a32d192ed03ull * (uint64_t)(epoch + 1)));
    size_t places = (count - 1) * T + 1;
    for (size_t i = 0; i < n; i++)
        perm[i] = places < 0xffffffffu ? cf_rng_below(&r, (uint32_t)places) : (size_t)(cf_rng_next(&r) % places);
}

static void order(cf_trainer *t, const cf_dataset *d, size_t n, int epoch, int seq)
{
    if (t->windows) window_order(t->perm, n, cf_dataset_count(d), t->xcount, t->o.seed, epoch);
    else cf_sample_order(t->perm, n, (size_t)t->o.batch, seq, t->o.seed, epoch);
}

/* A loss that says the run diverged: 0, or -1 with the message. The reference is the
 * largest loss of the run's first CF_FIRST_STEPS steps (one batch alone may be easy)
 * within CF_FIRST_SPREAD times the first step's (a rise past that is the run going
 * wrong, not noise). */
static int check_loss(cf_trainer *t, double loss, int epoch, long step, float lr)
{
    if (isnan(t->first_loss)) t->first_loss = isnan(t->initial_loss) ? loss : t->initial_loss;
    double first = isnan(t->initial_loss) ? loss : t->initial_loss;
    double limit = CF_DIVERGED * (first > 1 ? first : 1);
    if (!isfinite(loss))
        return cf_seterr("error: epoch %d, step %ld: the loss is %g: training diverged, or an op overflowed; try a "
                         "smaller learning rate (it is %g) or clipping the gradients, and CFLUX_NANTRAP=1 names the op "
                         "and the line that made the first NaN or infinity", epoch, step, loss, (double)lr);
    if (loss > limit)
        return cf_seterr("error: epoch %d, step %ld: the loss grew to %g, over %g times the first (%g): training "
                         "diverged; try a smaller learning rate (it is %g) or clipping the gradients",
                         epoch, step, loss, CF_DIVERGED, first, (double)lr);
    if (cf_optim_get_steps(t->opt) < CF_FIRST_STEPS && !(loss <= t->initial_loss) &&
        loss <= CF_FIRST_SPREAD * (t->first_loss > 1 ? t->first_loss : 1))
        t->initial_loss = loss;
    return 0;
}

/* The note for a run that does not move: regression targets far from the outputs' scale
 * (a model starts with outputs near 0, and each step moves them a little). After
 * CF_STALL_STEPS steps, a loss still within CF_STALL_SHARE of the mean squared target
 * of its batch (the loss of outputs of 0, where the run started) has not moved, batch
 * to batch noise aside. Said once, by a run that began here (not a resumed one). */
static void stalled(cf_trainer *t, cf_exec *e, double loss)
{
    long step = cf_optim_get_steps(t->opt);
    if (!(t->target_rms >= CF_STALL_RMS) || step != CF_STALL_STEPS || !e || t->m->loss_kind != CF_LOSS_MSE) return;
    size_t n;
    const float *y = cf_exec_input(e, t->m->target->index, &n);
    double sq = 0;
    for (size_t i = 0; i < n; i++) sq += (double)y[i] * y[i];
    if (!(n && loss >= (1 - CF_STALL_SHARE) * sq / (double)n)) return;
    cf_trainer_warn(t, "note: after %d steps the loss (%.4g) is still that of outputs of 0 (%.4g): the targets are "
                    "large (root mean square %.4g), the model's outputs start near 0 and each step moves them a "
                    "little; standardise the targets (--normalize, or cf_fit_opts.normalize, does it and undoes it "
                    "for eval and predict) or scale them yourself", CF_STALL_STEPS, loss, sq / (double)n,
                    t->target_rms);
}

/* A streamed dataset reads ahead the rows this rank will load in the epoch from its
 * batch at `start` on, in the order train_epoch asks for them: each batch's share of
 * the shuffled order. Other data: nothing to do. 0 or -1. */
static int plan_epoch(const cf_trainer *t, const cf_dataset *train, size_t n, size_t start)
{
    if (!cf_dataset_streamed(train)) return 0;
    size_t B = (size_t)t->o.batch, k = 0;
    size_t *rows = malloc((n - start + 1) * sizeof *rows);
    if (!rows) return cf_oom((n - start + 1) * sizeof *rows);
    for (size_t at = start; at < n; at += B) {
        size_t b = n - at < B ? n - at : B, lo = 0, hi = b;
        if (t->dist) cf_dist_shard(b, &lo, &hi);
        for (size_t i = lo; i < hi; i++) rows[k++] = t->perm[at + i];
    }
    int rc = cf_dataset_plan(train, rows, k, B);
    free(rows);
    return rc;
}

/* Train samples [start, n) of the epoch's order; on_batch reports. Sets *stopped when
 * cf_trainer_stop asked to stop before the epoch's end. 0 or -1. */
static int train_epoch(cf_trainer *t, const cf_dataset *train, size_t n, int seq, int epoch, size_t start,
                       cf_epoch_stats *st, int *stopped)
{
    size_t B = (size_t)t->o.batch;
    long steps = (long)((n + B - 1) / B), total = steps * t->o.epochs;
    /* resumed where it stopped: the sums of the epoch's first part go on */
    int same = start == t->epoch_samples && start > 0;
    double t0 = now(), loss = same ? t->epoch_loss : 0;
    size_t hits = same ? t->epoch_hits : 0, done = same ? start : 0, timed = done;
    float lr = 0, lr_max = 0;
    if (seq && start == 0) cf_exec_reset_state(t->train.full);   /* the epoch starts the streams again */
    if (plan_epoch(t, train, n, start)) return -1;
    for (long s = (long)(start / B); s < steps; s++) {
        size_t at = (size_t)s * B, b = n - at < B ? n - at : B, lo = 0, hi = b;
        if (t->dist) cf_dist_shard(b, &lo, &hi);   /* this rank's rows of the batch */
        cf_exec *e = hi == lo ? NULL : b == B ? t->train.full : t->train.tail;
        if (e && load_rows(t, e, train, t->perm + at + lo, hi - lo, t->windows, epoch)) return -1;
        if (cf_schedule_lr(t->o.schedule, t->o.optim.lr, (long)(epoch - 1) * steps + s, total, steps, &lr)) return -1;
        if (lr > lr_max) lr_max = lr;
        if (e) cf_exec_set_step(e, (long)(epoch - 1) * steps + s + 1);   /* dropout's masks follow the run */
        double step_loss, step_hits = 0;
        int stop_now = 0;
        if (!t->dist) {
            if (cf_forward(e, 1) || check_loss(t, (double)cf_exec_loss(e), epoch, s + 1, lr) || cf_backward(e))
                return -1;
            step_loss = (double)cf_exec_loss(e);
            if (t->classes) step_hits = (double)correct(t, e);
        } else {   /* every rank's rows, then the sums of all: the same figures and decisions everywhere */
            if ((e && cf_forward(e, 1)) || cf_dist_begin_step(t->dist, e, (double)(hi - lo) / (double)b) ||
                (e && cf_backward(e)) || cf_dist_end_step(t->dist))
                return -1;
            double v[3] = {e ? (double)cf_exec_loss(e) * (double)(hi - lo) : 0, e && t->classes ? (double)correct(t, e) : 0,
                           atomic_load(&t->stop) > 0};
            if (e) cf_exec_on_grad_ready(e, NULL, NULL);
            if (cf_dist_sum(t->dist, v, 3)) return -1;
            step_loss = v[0] / (double)b;
            step_hits = v[1];
            stop_now = v[2] > 0;
            if (check_loss(t, step_loss, epoch, s + 1, lr)) return -1;
        }
        if (cf_optim_step(t->opt, lr))
            return cf_seterr("error: epoch %d, step %ld: a gradient is not finite (the loss was %g); try a smaller "
                             "learning rate or clipping the gradients, and CFLUX_NANTRAP=1 names the op and the line "
                             "that made the first NaN or infinity", epoch, s + 1, step_loss);
        stalled(t, e, step_loss);
        loss += step_loss * (double)b;
        hits += (size_t)step_hits;
        done += b;
        t->epoch_samples = at + b;
        t->epoch_loss = loss;
        t->epoch_hits = hits;
        if (t->o.on_batch) {
            double secs = now() - t0;
            t->o.on_batch(epoch, s + 1, steps, loss / (double)done,
                          t->classes ? (double)hits / ((double)done * (double)t->ycount) : NAN,
                          secs > 0 ? (double)(done - timed) / secs : 0, t->o.user);
        }
        if (at + b < n && (t->dist ? stop_now : atomic_load(&t->stop))) {   /* distributed: the ranks' sum */
            int reason;
            if (t->dist && agree_stop(t, &reason)) return -1;   /* and their reason */
            *stopped = 1;
            break;
        }
    }
    st->train_loss = loss / (double)done;
    if (t->classes) st->train_accuracy = (double)hits / ((double)done * (double)t->ycount);
    st->lr = lr;
    st->seconds = now() - t0;
    st->samples_per_sec = st->seconds > 0 ? (double)(done - timed) / st->seconds : 0;
    if (lr_max == 0 && !*stopped)
        cf_trainer_warn(t, "warning: epoch %d: the learning rate was 0 for the whole epoch (schedule '%s', base %g): "
                        "the parameters did not change", epoch, t->o.schedule, (double)t->o.optim.lr);
    return 0;
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
    size_t n = cf_dataset_count(train), B = (size_t)t->o.batch;
    int seq = cf_dataset_sequential(train);
    if (n == 0) {
        cf_seterr("error: %s: no samples to train on", cf_dataset_name(train_all));
        goto out;
    }
    if (seq && n < B) {
        cf_seterr("error: %s: the text makes %zu sequences of %d characters to train on, fewer than the batch size "
                  "%zu; sequential data trains in whole batches: use a smaller batch (--batch) or a longer text",
                  cf_dataset_name(train_all), n, cf_dataset_sample_shape(train).d[0], B);
        goto out;
    }
    if (seq) n = n / B * B;   /* whole batches of streams: the rest is left out */
    /* o.limit_batches: an epoch trains the first batches of its order, the order
       still drawn over all n (each epoch another share of shuffled data) */
    size_t ne = t->o.limit_batches > 0 && (n + B - 1) / B > (size_t)t->o.limit_batches
                    ? (size_t)t->o.limit_batches * B : n;
    /* once, before any epoch: the training data (the validation split comes from it) and the test data */
    if (check_data(t, train, CHECK_TRAINING) || (val && check_data(t, val, CHECK_VALUES)) ||
        (test && check_data(t, test, CHECK_VALUES)))
        goto out;
    if (t->o.normalize && !t->m->norm_count && cf_norm_fit(t->m, train)) goto out;
    if (t->o.normalize && !t->classes && !t->m->tnorm_count && t->m->outputs[0]->op != CF_OP_SOFTMAX &&
        cf_norm_fit_targets(t->m, train))
        goto out;
    t->target_rms = 0;
    if (!t->classes && !t->m->tnorm_count) {   /* the scale of the targets, for stalled() */
        const float *y = cf_dataset_y(train);
        size_t ny = n * t->ycount;
        double sq = 0;
        for (size_t i = 0; i < ny; i++) sq += (double)y[i] * y[i];
        t->target_rms = ny ? sqrt(sq / (double)ny) : 0;
    }
    if (t->dist && agree_start(t, train_all, test)) goto out;   /* before the first exchange that could mismatch */
    if (bind_shards(t, &t->train, (int)B, n, CF_TRAIN)) goto out;
    if (t->dist && cf_dist_broadcast(t->dist)) goto out;   /* every rank from rank 0's weights */
    give_carries(t, t->train.full);
    /* text for a model with no state to carry: windows from anywhere, not fixed streams */
    t->windows = seq && t->m->ncarries == 0 && t->xcount == t->ycount;
    if (t->nperm < n) {
        free(t->perm);
        if (!(t->perm = malloc(n * sizeof *t->perm))) {
            cf_oom(n * sizeof *t->perm);
            goto out;
        }
        t->nperm = n;
    }
    rc = 0;
    for (int epoch = t->epoch + 1; epoch <= t->o.epochs; epoch++) {
        order(t, train, n, epoch, seq);
        /* a run stopped mid-epoch goes on from its batch (from the batch that holds
         * its place, when the batch size changed) */
        size_t start = t->epoch_samples / B * B;
        if (start >= ne) start = (ne - 1) / B * B;
        cf_epoch_stats st = {epoch, t->o.epochs, NAN, NAN, NAN, NAN, NAN, NAN, 0, 0, 0, NAN, NAN, NAN, NAN};
        int stopped = 0;
        if (train_epoch(t, train, ne, seq, epoch, start, &st, &stopped)) {
            rc = -1;
            break;
        }
        if (stopped) {
            rc = CF_STOPPED;
            break;
        }
        if (t->dist && cf_dist_epoch_end(t->dist, epoch)) {
            rc = -1;
            break;
        }
        if ((val && evaluate(t, val, &st.val_loss, &st.val_accuracy, &st.val_mae, &st.val_r2)) ||
            (test && evaluate(t, test, &st.test_loss, &st.test_accuracy, &st.test_mae, &st.test_r2))) {
            rc = -1;
            break;
        }
        t->epoch = epoch;
        t->epoch_samples = t->epoch_hits = 0;
        t->epoch_loss = 0;
        if (cf_trainer_record(t, &st)) {
            rc = -1;
            break;
        }
        int best, stop = 0;
        if (t->o.patience || t->o.keep_best) {
            const cf_epoch_stats *h;
            int nh = cf_trainer_history(t, &h);
            stop = cf_early_stop(&h[0].val_loss, sizeof *h, nh, t->o.patience, &best);
            if (t->o.keep_best && best == nh && cf_dist_rank() == 0 && cf_trainer_save(t, t->o.keep_best)) {
                rc = -1;
                break;
            }
        }
        if (t->o.on_epoch && t->o.on_epoch(&st, t->o.user)) break;
        if (stop) break;
        int reason = atomic_load(&t->stop);
        if (t->dist && epoch < t->o.epochs && agree_stop(t, &reason)) {   /* a signal since the last step's sum */
            rc = -1;
            break;
        }
        if (reason && epoch < t->o.epochs) {
            rc = CF_STOPPED;
            break;
        }
    }
out:
    cf_dataset_plan(train_all, NULL, 0, 0);   /* a streamed dataset's reader ahead ends */
    if (test) cf_dataset_plan(test, NULL, 0, 0);
    cf_dataset_free(tr);
    cf_dataset_free(val);
    return rc;
}

int cf_early_stop(const double *val_loss, size_t stride, int n, int patience, int *best_epoch)
{
    int best = 0;
    double low = INFINITY;
    for (int i = 0; i < n; i++) {
        double v = *(const double *)((const char *)val_loss + (size_t)i * stride);
        if (v < low) low = v, best = i + 1;   /* NaN is never better */
    }
    if (best_epoch) *best_epoch = best;
    return patience > 0 && n - best >= patience;
}

/* ---- evaluate and predict, for a model alone ---- */

int cf_evaluate(cf_model *m, const cf_dataset *d, int batch, double *loss, double *accuracy)
{
    return cf_evaluate_ex(m, d, batch, 0, loss, accuracy);
}

int cf_evaluate_ex(cf_model *m, const cf_dataset *d, int batch, long limit_batches, double *loss, double *accuracy)
{
    if (!m || !d || batch < 1 || limit_batches < 0)
        return cf_seterr("error: cf_evaluate: no model or data, a batch below 1 or a limit below 0");
    cf_fit_opts o = cf_fit_defaults();
    o.batch = batch;
    o.epochs = 1;
    o.limit_batches = limit_batches;
    cf_trainer *t = cf_trainer_new(m, d, &o);
    if (!t) return -1;
    double l, a;
    int rc = check_data(t, d, CHECK_VALUES) || evaluate(t, d, &l, &a, NULL, NULL) ? -1 : 0;
    cf_dataset_plan(d, NULL, 0, 0);
    cf_trainer_free(t);
    if (rc) return -1;
    if (loss) *loss = l;
    if (accuracy) *accuracy = a;
    return 0;
}

int cf_predict_outputs(cf_model *m, const cf_dataset *d, int batch, float *const *outs)
{
    return cf_predict_spread(m, d, cf_dataset_count(d), batch, outs);
}

int cf_predict_spread(cf_model *m, const cf_dataset *d, size_t n, int batch, float *const *outs)
{
    if (!m || !d || !outs || batch < 1)
        return cf_seterr("error: cf_predict: no model, data or output, or a batch below 1");
    if (cf_model_infer_shapes(m)) return -1;
    size_t all = cf_dataset_count(d);
    if (n > all) n = all;
    if (check_input(m, d)) return -1;
    bound b = {0};
    size_t rows[256], *idx = (size_t)batch <= 256 ? rows : malloc((size_t)batch * sizeof *idx);
    if (!idx) return cf_oom((size_t)batch * sizeof *idx);
    int rc = bind_for(m, &b, batch, n, 0) || plan_spread(d, 0, n, n, (size_t)batch) ? -1 : 0;
    for (size_t at = 0; rc == 0 && at < n; at += (size_t)batch) {
        size_t k = n - at < (size_t)batch ? n - at : (size_t)batch;
        cf_exec *e = k == (size_t)batch ? b.full : b.tail;
        float *x = cf_exec_input(e, 0, NULL);
        for (size_t i = 0; i < k; i++) idx[i] = cf_spread_row(at + i, n, all);
        if (cf_dataset_fetch(d, idx, k, x)) {
            rc = -1;
            break;
        }
        cf_norm_apply(m, x, k);
        if (cf_forward(e, 0)) {
            rc = -1;
            break;
        }
        for (int o = 0; o < m->noutputs; o++) {
            size_t ocount = cf_shape_count(m->outputs[o]->shape);
            if (outs[o]) memcpy(outs[o] + at * ocount, cf_exec_output(e, o, NULL), k * ocount * sizeof(float));
        }
        if (outs[0]) cf_norm_undo_targets(m, outs[0] + at * cf_shape_count(m->outputs[0]->shape), k);
    }
    if (idx != rows) free(idx);
    unbind(&b);
    cf_dataset_plan(d, NULL, 0, 0);
    return rc;
}

int cf_predict(cf_model *m, const cf_dataset *d, int batch, float *out)
{
    if (!m || !out || m->noutputs < 1) return cf_seterr("error: cf_predict: no model, output or place for it");
    float **outs = calloc((size_t)m->noutputs, sizeof *outs);   /* output 0 alone */
    if (!outs) return cf_oom((size_t)m->noutputs * sizeof *outs);
    outs[0] = out;
    int rc = cf_predict_outputs(m, d, batch, outs);
    free(outs);
    return rc;
}
