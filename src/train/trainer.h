/* trainer.h - the trainer's insides, shared by the training loop (fit.c) and
 * checkpoints (checkpoint.c), and input standardisation (normalize.c). */
#ifndef CF_TRAIN_TRAINER_H
#define CF_TRAIN_TRAINER_H

#include <stdatomic.h>
#include <stddef.h>

#include "cflux.h"
#include "data/augment.h"

/* Executors for one batch size and one for the remainder of a dataset's size. */
typedef struct bound {
    cf_exec *full, *tail;
    int batch, tail_batch;
} bound;

struct cf_trainer {
    cf_model *m;
    cf_fit_opts o;               /* o.loss is the loss in use */
    cf_optim *opt;
    bound train, eval;
    int epoch;                   /* epochs done */
    size_t epoch_samples;        /* samples of epoch `epoch + 1` trained already (a run stopped mid-epoch) */
    double epoch_loss;           /* over those samples: the loss summed, and the correct predictions, so */
    size_t epoch_hits;           /* that a resumed epoch reports what the whole epoch would have */
    int classes;                 /* of the model's output; 0 for regression */
    size_t xcount, ycount;       /* floats per sample: input, target (labels: one per row) */
    size_t ntrain;               /* samples of the data given to cf_trainer_new, before any validation split */
    double target_rms;           /* regression without target standardisation: the targets' RMS; else 0 */
    double initial_loss;         /* the largest loss of the run's first steps, what divergence is measured
                                    against; NAN before the first */
    double first_loss;           /* the loss of this process's first step (of a resumed run: the reference it
                                    resumed with), which bounds how far the reference may rise; NAN before */
    atomic_int stop;             /* cf_trainer_stop was called */
    cf_epoch_stats *hist;        /* every epoch done, from checkpoints too */
    int nhist, cap_hist;
    size_t *perm;             /* the epoch's order: sample indices, or (windows) character offsets */
    size_t nperm;
    int windows;              /* text for a model that carries no state: windows at any offset */
    int nvocab;                  /* text: the vocabulary of the data it was made with (saved in */
    unsigned char vocab[256];    /* checkpoints); else 0 */
    /* the carried state a checkpoint held (carry.NAME), waiting for the training
       executor that cf_fit binds; given to it and freed there */
    struct cf_saved_carry { char *name; float *data; size_t count; } *carry;
    int ncarry;
    struct cf_dist *dist;        /* data-parallel (o.distributed, more than one rank); else NULL */
    cf_augment aug;              /* o.augment parsed (all 0: none) */
    float *aug_scratch;          /* one sample, for its transform; NULL without augmentation */
};

/* The names of m's frozen parameters, one a line, for a checkpoint's metadata
 * "frozen" (frozen.c): malloc'd, or NULL for none (or out of memory: the error set). */
char *cf_frozen_meta(const cf_model *m);
/* The checkpoint's frozen parameters (meta, NULL: none) must be m's: 0, or -1 with
 * the error naming path. */
int cf_frozen_check(const cf_model *m, const char *meta, const char *path);

/* Free what cf_trainer_load kept of a checkpoint's carried state. */
void cf_trainer_drop_carry(cf_trainer *t);

/* Whether a loss of this kind fits the model's output 0 (a batched value; a softmax
 * for cross-entropy), changing nothing: 0, or -1 with the message. */
int cf_loss_fits(const cf_model *m, cf_loss kind);

/* Set the label smoothing of the model's cross-entropy (src/ops/loss.c says what it
 * does): 0, or -1 when eps > 0 and the model's loss is not cross-entropy. */
int cf_loss_set_smoothing(cf_model *m, float eps);

/* Append an epoch to the history; 0 or -1. */
int cf_trainer_record(cf_trainer *t, const cf_epoch_stats *st);

/* Pass a warning to o.on_warning, if there is one. */
void cf_trainer_warn(const cf_trainer *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Standardise nsamples samples of input 0 in place with the model's statistics (none:
 * nothing happens). */
void cf_norm_apply(const cf_model *m, float *x, size_t nsamples);

/* Copy samples idx[0..b) of d into an executor's input (standardised, when the model
 * says so) and target. 0, or -1 with the error of an image file that cannot be read. */
int cf_trainer_load_batch(const cf_trainer *t, cf_exec *e, const cf_dataset *d, const size_t *idx, size_t b);

/* The order pass `pass` reads n samples in: for sequential data (n a multiple of B) B
 * streams of n / B contiguous samples, stream i in row i of every batch (batch k's
 * row i is sample iK + k); other data a shuffle seeded by the seed and the pass. */
void cf_sample_order(size_t *perm, size_t n, size_t B, int seq, uint64_t seed, int pass);
/* Whether input standardisation (--normalize) fits d and m: not for indices (text's
 * characters, or an input an embedding reads), which it would turn into numbers that
 * index nothing. 0, or -1 with the error naming the option. */
int cf_norm_check(const cf_model *m, const cf_dataset *d);
/* The bytes of the state optimizer `name` keeps for m's trainable parameters (0 for
 * an unknown name), before it is made. */
size_t cf_optim_state_bytes(const cf_model *m, const char *name);
/* Whether state tensor i of o can never be below 0: Adam's second moment v, a running
 * mean of squared gradients whose square root divides each step (a checkpoint's v below
 * 0 made the first step NaN, blamed on the learning rate). */
int cf_optim_state_nonneg(const cf_optim *o, int i);
/* Row p of m rows spread evenly over n (m <= n): p * n / m. What a limited evaluation
 * reads of data that is not sequential: an image folder's samples are in class order,
 * and its first batches would be one class. */
static inline size_t cf_spread_row(size_t p, size_t m, size_t n) { return m < n ? p * n / m : p; }
/* cf_predict_outputs for n samples of d spread evenly over it (cf_spread_row; all of
 * them when it has no more): what cf_evaluate_metrics_ex scores. 0 or -1. */
int cf_predict_spread(cf_model *m, const cf_dataset *d, size_t n, int batch, float *const *outs);
/* Fit the model's input statistics on d's samples. 0 or -1. */
int cf_norm_fit(cf_model *m, const cf_dataset *d);
/* Fit the model's target statistics on d's targets (regression). 0 or -1. */
int cf_norm_fit_targets(cf_model *m, const cf_dataset *d);
/* Standardise nsamples rows of targets in place; undo it on rows of output 0. With no
 * target statistics, nothing happens. */
void cf_norm_apply_targets(const cf_model *m, float *y, size_t nsamples);
void cf_norm_undo_targets(const cf_model *m, float *out, size_t nsamples);

#endif
