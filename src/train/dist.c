/* dist.c - data-parallel training over MPI (see dist.h and cflux.h's "Data-parallel
 * training").
 *
 * Buckets: the parameters, from the last to the first (the order backward finishes
 * them in), cut into runs of about BUCKET_BYTES of gradient, each run contiguous in
 * the model's gradient block, so that one MPI_Iallreduce sums it in place. MPI wants
 * every rank to start its collectives in the same order: buckets are started in
 * their order, a bucket once it and every bucket before it are finished. Open MPI
 * moves non-blocking collectives on only inside MPI calls, so each readiness also
 * tests the ones in flight. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/error.h"
#include "core/graph.h"
#include "train/dist.h"
#include "train/fingerprint.h"

#ifdef CFLUX_HAVE_MPI
#include <mpi.h>

#include "cflux_mpi.h"

#define BUCKET_BYTES (256u << 10)

static MPI_Comm comm = MPI_COMM_NULL;
static int rank, size = 1, we_init;
static int shared_error;   /* the last error was met by every rank together */

typedef struct bucket {
    int first, last;          /* parameters [first, last] */
    float *g;                 /* their gradients, contiguous */
    size_t count;
    int pending;              /* parameters not yet finished this step */
    MPI_Request req;
    int started;
} bucket;

struct cf_dist {
    cf_model *m;
    bucket *b;
    int nb, next;             /* buckets; the next to start */
    int *of;                  /* per parameter: its bucket */
    float weight;
    double waited;
};

static double seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The deadline of a wait: $CFLUX_DIST_TIMEOUT seconds (20). */
static double timeout(void)
{
    const char *s = getenv("CFLUX_DIST_TIMEOUT");
    double v = s ? atof(s) : 0;
    return v > 0 ? v : 20;
}

/* A wait that passed its deadline: another rank died or hangs. The error says so; the
 * caller stops (the tool stops every rank with cf_dist_abort): waiting on would be
 * forever. -1. */
static int give_up(const char *what)
{
    return cf_seterr("error: rank %d of %d: no answer from the other ranks for %g s while %s: a rank died or hangs; "
                     "stopping every rank (the last checkpoint is intact)", rank, size, timeout(), what);
}

/* Wait for n requests, testing (never blocking) until the deadline. Open MPI moves a
 * non-blocking sum on only while it is tested, so the first second is spent testing
 * without a pause (a pause of 20 us made a 437 KB sum 1.8 times as slow); after that
 * a peer is late, and the wait sleeps between tests. 0, or -1 past the deadline. */
static int wait_all(cf_dist *d, MPI_Request *req, int n, const char *what)
{
    double t0 = seconds(), limit = t0 + timeout(), now = t0;
    int done = 0;
    while (MPI_Testall(n, req, &done, MPI_STATUSES_IGNORE) == MPI_SUCCESS && !done) {
        now = seconds();
        if (now > t0 + 1) {
            struct timespec ns = {0, 200000};
            nanosleep(&ns, NULL);
        }
        if (now > limit) return give_up(what);
    }
    if (d) d->waited += seconds() - t0;
    return 0;
}

int cf_dist_available(void) { return 1; }

int cf_dist_init_comm(MPI_Comm c)
{
    int ok = 0;
    MPI_Initialized(&ok);
    if (!ok) return cf_seterr("error: cf_dist_init_comm: MPI is not initialised (MPI_Init first)");
    if (MPI_Comm_dup(c, &comm) != MPI_SUCCESS) return cf_seterr("error: cf_dist_init_comm: MPI_Comm_dup failed");
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    shared_error = 0;
    return 0;
}

int cf_dist_init(void)
{
    if (comm != MPI_COMM_NULL) return 0;
    int ok = 0, provided;
    MPI_Initialized(&ok);
    if (!ok) {
        if (MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
            return cf_seterr("error: MPI_Init_thread failed");
        we_init = 1;
    }
    return cf_dist_init_comm(MPI_COMM_WORLD);
}

void cf_dist_finalize(void)
{
    if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
    comm = MPI_COMM_NULL;
    rank = 0;
    size = 1;
    int fin = 0;
    MPI_Finalized(&fin);
    if (we_init && !fin) MPI_Finalize();
    we_init = 0;
}

int cf_dist_rank(void) { return rank; }
int cf_dist_size(void) { return comm == MPI_COMM_NULL ? 1 : size; }

void cf_dist_abort(void)
{
    if (comm != MPI_COMM_NULL && size > 1 && !shared_error) MPI_Abort(comm, 1);
}

void cf_dist_error_is_shared(void) { shared_error = 1; }
int cf_dist_error_shared(void) { return shared_error; }

void cf_dist_shard(size_t b, size_t *lo, size_t *hi)
{
    int r = cf_dist_size() > 1 ? rank : 0, n = cf_dist_size();
    *lo = b * (size_t)r / (size_t)n;
    *hi = b * (size_t)(r + 1) / (size_t)n;
}

cf_dist *cf_dist_attach(cf_model *m)
{
    if (comm == MPI_COMM_NULL) return cf_seterr("error: data-parallel training needs cf_dist_init first"), NULL;
    if (cf_model_init_params(m)) return NULL;
    cf_dist *d = calloc(1, sizeof *d);
    int np = m->nparams;
    if (!d || !(d->b = calloc((size_t)(np ? np : 1), sizeof *d->b)) ||
        !(d->of = malloc((size_t)(np ? np : 1) * sizeof *d->of))) {
        cf_dist_detach(d);
        return cf_oom(sizeof *d), NULL;
    }
    d->m = m;
    for (int i = np - 1; i >= 0;) {   /* from the last parameter, runs of about BUCKET_BYTES */
        bucket *b = &d->b[d->nb++];
        b->last = i;
        size_t bytes = 0;
        do {
            bytes += cf_shape_count(m->params[i]->shape) * sizeof(float);
            d->of[i] = d->nb - 1;
            b->first = i--;
        } while (i >= 0 && bytes < BUCKET_BYTES);
        b->g = m->pgrad ? m->pgrad + m->poff[b->first] : NULL;
        b->count = m->poff[b->last] + cf_shape_count(m->params[b->last]->shape) - m->poff[b->first];
    }
    return d;
}

void cf_dist_detach(cf_dist *d)
{
    if (!d) return;
    free(d->b);
    free(d->of);
    free(d);
}

int cf_dist_broadcast(cf_dist *d)
{
    cf_model *m = d->m;
    MPI_Request req[2];
    int n = 0;
    if (m->nweights) MPI_Ibcast(m->pdata, (int)m->nweights, MPI_FLOAT, 0, comm, &req[n++]);
    if (m->nstatefloats) MPI_Ibcast(m->sdata, (int)m->nstatefloats, MPI_FLOAT, 0, comm, &req[n++]);
    return wait_all(NULL, req, n, "receiving rank 0's parameters");
}

/* Start every finished bucket whose turn it is. */
static void start_ready(cf_dist *d)
{
    while (d->next < d->nb && d->b[d->next].pending == 0) {
        bucket *b = &d->b[d->next++];
        if (d->weight != 1)
            for (size_t i = 0; i < b->count; i++) b->g[i] *= d->weight;
        MPI_Iallreduce(MPI_IN_PLACE, b->g, (int)b->count, MPI_FLOAT, MPI_SUM, comm, &b->req);
        b->started = 1;
    }
}

static void on_ready(int param, void *user)
{
    cf_dist *d = user;
    d->b[d->of[param]].pending--;
    start_ready(d);
    for (int i = 0; i < d->next; i++) {   /* move the ones in flight on */
        int flag;
        if (d->b[i].req != MPI_REQUEST_NULL) MPI_Test(&d->b[i].req, &flag, MPI_STATUS_IGNORE);
    }
}

int cf_dist_begin_step(cf_dist *d, cf_exec *e, double weight)
{
    for (int i = 0; i < d->nb; i++) {
        d->b[i].pending = d->b[i].last - d->b[i].first + 1;
        d->b[i].req = MPI_REQUEST_NULL;
        d->b[i].started = 0;
        if (!d->b[i].g) d->b[i].g = d->m->pgrad + d->m->poff[d->b[i].first];
    }
    d->next = 0;
    d->weight = (float)weight;
    if (!e) {   /* no rows here: zero gradients, summed all the same */
        cf_model_zero_grad(d->m);
        for (int i = 0; i < d->nb; i++) d->b[i].pending = 0;
        start_ready(d);
        return 0;
    }
    return cf_exec_on_grad_ready(e, on_ready, d);
}

int cf_dist_end_step(cf_dist *d)
{
    for (int i = 0; i < d->nb; i++) d->b[i].pending = 0;   /* a parameter backward never told of */
    start_ready(d);
    MPI_Request req[d->nb > 0 ? d->nb : 1];
    for (int i = 0; i < d->nb; i++) req[i] = d->b[i].req;
    return wait_all(d, req, d->nb, "summing the gradients");
}

int cf_dist_sum(cf_dist *d, double *v, int n)
{
    MPI_Request req;
    MPI_Iallreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, MPI_SUM, comm, &req);
    return wait_all(d, &req, 1, "summing the losses");
}

int cf_dist_allgather(cf_dist *d, const void *mine, void *all, size_t n)
{
    MPI_Request req;
    MPI_Iallgather(mine, (int)n, MPI_BYTE, all, (int)n, MPI_BYTE, comm, &req);
    return wait_all(d, &req, 1, "comparing the ranks' models, data and settings");
}

int cf_dist_max(cf_dist *d, int *v)
{
    MPI_Request req;
    MPI_Iallreduce(MPI_IN_PLACE, v, 1, MPI_INT, MPI_MAX, comm, &req);
    return wait_all(d, &req, 1, "agreeing to stop");
}

int cf_dist_epoch_end(cf_dist *d, int epoch)
{
    cf_model *m = d->m;
    MPI_Request req;
    if (m->nstatefloats) {   /* running statistics: each rank's saw its shards; the mean */
        MPI_Iallreduce(MPI_IN_PLACE, m->sdata, (int)m->nstatefloats, MPI_FLOAT, MPI_SUM, comm, &req);
        if (wait_all(d, &req, 1, "averaging the running statistics")) return -1;
        for (size_t i = 0; i < m->nstatefloats; i++) m->sdata[i] /= (float)size;
    }
    uint64_t h = cf_hash_floats(m->sdata, m->nstatefloats, cf_hash_floats(m->pdata, m->nweights, 0));
    uint64_t lo[2] = {h, ~h};   /* the min of h and of ~h: both equal on every rank when all are the same */
    MPI_Iallreduce(MPI_IN_PLACE, lo, 2, MPI_UINT64_T, MPI_MIN, comm, &req);
    if (wait_all(d, &req, 1, "comparing the parameters")) return -1;
    if (lo[0] != h || ~lo[1] != h)
        return cf_seterr("error: after epoch %d the parameters of rank %d differ from another rank's (checksum %016llx, "
                         "the lowest %016llx): the ranks no longer train the same model", epoch, rank,
                         (unsigned long long)h, (unsigned long long)lo[0]);
    return 0;
}

double cf_dist_wait_seconds(const cf_dist *d) { return d ? d->waited : 0; }

#else /* no MPI */

int cf_dist_available(void) { return 0; }
int cf_dist_init(void) { return cf_seterr("error: this cflux was built without MPI (CFLUX_MPI off, or no MPI found)"); }
void cf_dist_finalize(void) {}
int cf_dist_rank(void) { return 0; }
int cf_dist_size(void) { return 1; }
void cf_dist_abort(void) {}
void cf_dist_error_is_shared(void) {}
int cf_dist_error_shared(void) { return 0; }
void cf_dist_shard(size_t b, size_t *lo, size_t *hi)
{
    *lo = 0;
    *hi = b;
}
cf_dist *cf_dist_attach(cf_model *m)
{
    (void)m;
    return cf_seterr("error: this cflux was built without MPI"), NULL;
}
void cf_dist_detach(cf_dist *d) { (void)d; }
int cf_dist_broadcast(cf_dist *d) { return d ? 0 : -1; }
int cf_dist_begin_step(cf_dist *d, cf_exec *e, double weight)
{
    (void)d, (void)e, (void)weight;
    return 0;
}
int cf_dist_end_step(cf_dist *d) { return d ? 0 : -1; }
int cf_dist_sum(cf_dist *d, double *v, int n)
{
    (void)d, (void)v, (void)n;
    return 0;
}
int cf_dist_allgather(cf_dist *d, const void *mine, void *all, size_t n)
{
    (void)d;
    memcpy(all, mine, n);
    return 0;
}
int cf_dist_max(cf_dist *d, int *v)
{
    (void)d, (void)v;
    return 0;
}
int cf_dist_epoch_end(cf_dist *d, int epoch)
{
    (void)d, (void)epoch;
    return 0;
}
double cf_dist_wait_seconds(const cf_dist *d)
{
    (void)d;
    return 0;
}

#endif
