/* fingerprint.h - what every rank of a data-parallel run must share, compared once
 * before the first step (cf_fit): the model's graph and weights, the data (the rows and
 * a hash of the contents of the training and test sets), and every setting that decides
 * the steps (batch, seed, epochs, optimizer, learning rate, schedule, augmentation,
 * normalisation, where a resumed run starts). Ranks given anything different would
 * otherwise meet in mismatched MPI calls (Open MPI's "message truncated") or train in
 * silence on what they do not share; instead every rank stops with one message that
 * names the first difference. The fingerprint is of a fixed size, so that one exchange
 * of it can never be cut short by a rank that disagrees. */
#ifndef CF_TRAIN_FINGERPRINT_H
#define CF_TRAIN_FINGERPRINT_H

#include <stddef.h>
#include <stdint.h>

#include "cflux.h"

#define CF_FP_FIELDS 24

/* A field: its value as compared, and as a message shows it ("64", "adam"). */
typedef struct cf_fp_field {
    uint64_t v;
    char text[64];
} cf_fp_field;

typedef struct cf_fingerprint {
    cf_fp_field f[CF_FP_FIELDS];
} cf_fingerprint;

/* A hash of n floats' bits, in one pass (four independent lanes, 8 bytes a step):
 * equal contents give equal hashes on every machine. */
uint64_t cf_hash_floats(const float *x, size_t n, uint64_t seed);

/* Trainer t's fingerprint for a cf_fit on train (all of it, before any validation
 * split) and test (NULL: none). */
void cf_fingerprint_make(const cf_trainer *t, const cf_dataset *train, const cf_dataset *test, cf_fingerprint *fp);

/* Compare n ranks' fingerprints (all[r] is rank r's) with rank 0's: 0 when they all
 * agree, else 1 and, in msg, the first difference of the lowest rank that differs,
 * such as "rank 1's --batch is 32, rank 0's is 64". */
int cf_fingerprint_compare(const cf_fingerprint *all, int n, char *msg, size_t size);

#endif
