/* dist.h - data-parallel training over MPI (dist.c): the trainer's side.
 *
 * Every process (rank) holds the whole model; each global batch is cut into one
 * shard of rows per rank; after backward each rank's gradients are summed across
 * ranks, each weighted by its share of the batch's rows, so every rank applies the
 * same update as one process training on the whole batch. The sums go in buckets of
 * parameters, started (MPI_Iallreduce) as soon as backward has finished a bucket's
 * gradients, so that they overlap the rest of backward. Every wait has a deadline:
 * a rank that died or hangs makes the others stop with an error (MPI_Abort) instead
 * of waiting forever. Without MPI (CFLUX_MPI off) the calls say so. */
#ifndef CF_TRAIN_DIST_H
#define CF_TRAIN_DIST_H

#include <stddef.h>

#include "cflux.h"

typedef struct cf_dist cf_dist;

/* The gradient sums of model m's parameters (its parameters allocated), over the
 * communicator of cf_dist_init; NULL with the error. */
cf_dist *cf_dist_attach(cf_model *m);
void cf_dist_detach(cf_dist *d);

/* Rows [*lo, *hi) of a global batch of b rows are this rank's. */
void cf_dist_shard(size_t b, size_t *lo, size_t *hi);

/* Rank 0's parameters and states to every rank. 0 or -1. */
int cf_dist_broadcast(cf_dist *d);

/* Before backward on e (NULL: this rank has no rows in this batch): its gradients
 * will count with weight `weight` (its rows over the batch's). After it, wait until
 * every bucket is summed. 0 or -1 (a deadline passed: a rank died or hangs). */
int cf_dist_begin_step(cf_dist *d, cf_exec *e, double weight);
int cf_dist_end_step(cf_dist *d);

/* Sum n numbers over the ranks, in place. 0 or -1. */
int cf_dist_sum(cf_dist *d, double *v, int n);

/* Every rank's n bytes (the same n on every rank): rank r's at all + r * n. 0 or -1. */
int cf_dist_allgather(cf_dist *d, const void *mine, void *all, size_t n);

/* The largest of every rank's *v, in *v. 0 or -1. */
int cf_dist_max(cf_dist *d, int *v);

/* The error just set was found by every rank at the same point, from what they
 * exchanged (the ranks disagree at the start): each stops on its own, so
 * cf_dist_abort leaves the others be, and cf_dist_error_shared says so. */
void cf_dist_error_is_shared(void);

/* The running statistics (states) averaged over the ranks, and the parameters
 * checked to be the same on every rank (a checksum; an error when not). 0 or -1. */
int cf_dist_epoch_end(cf_dist *d, int epoch);

/* Seconds spent waiting on the other ranks since attach (the sums not hidden under
 * backward). */
double cf_dist_wait_seconds(const cf_dist *d);

#endif
