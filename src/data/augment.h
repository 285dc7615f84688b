/* augment.h - random transforms of training images (cf_fit_opts.augment, --augment):
 * a random crop after zero padding, a horizontal flip, random erasing, as
 * torchvision's RandomCrop(size, padding = P), RandomHorizontalFlip() and
 * RandomErasing() do them.
 *
 * A sample's transform is a pure function of a key made from the run's seed, the
 * epoch and the sample's index in the training data (cf_augment_key): no generator
 * state runs from sample to sample, so which thread or process loads a sample, the
 * batch it falls in and where a run was stopped and resumed change nothing.
 *
 * The transforms come in two stages, around the input standardisation (--normalize)
 * as torchvision's pipelines have them around Normalize: the crop and the flip act
 * on the samples as read (the padding is a pixel of 0, black), erasing on the
 * standardised ones (the erased box is 0 there). The order is always crop, flip,
 * erase, whatever the order of the words in the spec. */
#ifndef CF_DATA_AUGMENT_H
#define CF_DATA_AUGMENT_H

#include <stddef.h>
#include <stdint.h>

#include "cflux.h"

typedef struct cf_augment {
    int pad;        /* crop: zero padding on each side, the shift's range [-pad, pad]; 0: no crop */
    int flip;       /* 1: a horizontal flip, with probability 1/2 */
    float erase;    /* random erasing's probability; 0: none */
    int c, h, w;    /* the images: c planes of h x w */
} cf_augment;

/* What one sample's transform is (cf_augment_draw). */
typedef struct cf_augment_draws {
    int dy, dx;     /* out(y, x) = in(y + dy, x + dx) (before the flip); 0 without a crop */
    int flip;       /* 1: flipped left to right, after the crop */
    int ey, ex, eh, ew;   /* the erased box: top, left, height, width; eh 0: nothing erased */
} cf_augment_draws;

/* Which transforms a stage applies: those before the standardisation of the inputs,
 * or after it. */
enum { CF_AUGMENT_RAW, CF_AUGMENT_STANDARDISED };

/* Parse spec ("crop:4,flip", "erase:0.25", "none") for images of shape `input` (the
 * model's input 0, (C, H, W), with or without its batch dimension) into *a; NULL or
 * "none" gives all zeros, for any input. 0, or -1 with the message naming the bad
 * part. */
int cf_augment_parse(const char *spec, cf_shape input, cf_augment *a);

/* Whether a does anything. */
static inline int cf_augment_any(const cf_augment *a) { return a->pad > 0 || a->flip || a->erase > 0; }

/* a as a spec in its canonical form ("crop:4,flip,erase:0.5"; "none"); returns buf. */
const char *cf_augment_format(const cf_augment *a, char *buf, size_t size);

/* The key of sample `index` of the training data in epoch `epoch` of a run seeded
 * with seed. */
uint64_t cf_augment_key(uint64_t seed, int epoch, size_t index);

/* Sample key's transform under a. */
void cf_augment_draw(const cf_augment *a, uint64_t key, cf_augment_draws *d);

/* Stage `stage` of a on b samples x (each c * h * w floats, one after another), sample
 * i being sample idx[i] of the training data in epoch `epoch` of a run seeded with
 * seed; scratch holds c * h * w floats. */
void cf_augment_apply(const cf_augment *a, int stage, float *x, size_t b, const size_t *idx, uint64_t seed, int epoch,
                      float *scratch);

#endif
