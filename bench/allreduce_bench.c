/* allreduce_bench.c - what one MPI_Allreduce (a sum of floats, in place) costs on this
 * machine or cluster, by message size: the numbers behind the cost model of
 * docs/distributed.md. A benchmark, not a test (built when MPI is found).
 *
 *   mpirun -np N build/bench_allreduce [--rounds R] [--samples S] [--max-bytes B]
 *                                      [--iallreduce | --iallreduce-sleep] [--json]
 *
 * Sizes from 4 B to --max-bytes (16 MB) by powers of 4. Each round visits every size
 * once (so machine noise hits all alike) and takes S samples of it; a sample times k
 * calls back to back between two barriers, k chosen once per size so that a sample
 * lasts about a millisecond, and counts the slowest rank's time. Per size: the median
 * over all samples of the time of one call, its latency (µs), the algorithm bandwidth
 * size / time and the bus bandwidth (GB/s, 10^9 B/s): the algorithm bandwidth times
 * 2(N-1)/N, the share of the message each rank sends and receives in a ring
 * allreduce, so that a link's speed reads the same at every N (the convention of
 * NCCL's tests). Before timing, one call of each size is checked to sum.
 *
 * --iallreduce times MPI_Iallreduce finished by MPI_Test in a busy loop instead (what
 * cflux's trainer calls: Open MPI runs it in its libnbc module, with algorithms of its
 * own; `--mca coll_libnbc_iallreduce_algorithm A` chooses one); --iallreduce-sleep
 * finishes it the way the trainer waits (1000 tests, then a 20 µs sleep between
 * tests), to show what that wait costs. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { MAX_SIZES = 32 };

/* How a call is made: MPI_Allreduce; MPI_Iallreduce and MPI_Test until done; the
 * same with cflux's sleeps between tests. */
enum { BLOCKING, NONBLOCKING, NONBLOCKING_SLEEP };
static int mode = BLOCKING;
static const char *mode_name[] = {"MPI_Allreduce", "MPI_Iallreduce + MPI_Test", "MPI_Iallreduce + MPI_Test, sleeping"};

static void allreduce(float *buf, int count)
{
    if (mode == BLOCKING) {
        MPI_Allreduce(MPI_IN_PLACE, buf, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        return;
    }
    MPI_Request req;
    int done = 0, spins = 0;
    MPI_Iallreduce(MPI_IN_PLACE, buf, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &req);
    while (MPI_Test(&req, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && !done)
        if (mode == NONBLOCKING_SLEEP && ++spins > 1000) {
            struct timespec ns = {0, 20000};
            nanosleep(&ns, NULL);
        }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Seconds of k calls on count floats, the slowest rank's. */
static double time_calls(float *buf, int count, int k)
{
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < k; i++) allreduce(buf, count);
    double t = MPI_Wtime() - t0, worst;
    MPI_Allreduce(&t, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return worst;
}

/* One call sums: rank r's element i is r + i % 7; the sum N(N-1)/2 + N (i % 7). */
static int check_sum(float *buf, int count, int rank, int size)
{
    for (int i = 0; i < count; i++) buf[i] = (float)(rank + i % 7);
    allreduce(buf, count);
    for (int i = 0; i < count; i++)
        if (buf[i] != (float)(size * (size - 1) / 2 + size * (i % 7))) return -1;
    return 0;
}

static void usage(void)
{
    fprintf(stderr, "usage: mpirun -np N bench_allreduce [--rounds R (5)] [--samples S (20)] "
                    "[--max-bytes B (16777216)] [--iallreduce | --iallreduce-sleep] [--json]\n");
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, rounds = 5, samples = 20, json = 0;
    long max_bytes = 16L << 20;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) json = 1;
        else if (!strcmp(argv[i], "--iallreduce")) mode = NONBLOCKING;
        else if (!strcmp(argv[i], "--iallreduce-sleep")) mode = NONBLOCKING_SLEEP;
        else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--samples") && i + 1 < argc) samples = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--max-bytes") && i + 1 < argc) max_bytes = atol(argv[++i]);
        else {
            if (rank == 0) usage();
            MPI_Finalize();
            return 2;
        }
    }
    if (rounds < 1 || samples < 1 || max_bytes < 4 || max_bytes > (1L << 30)) {
        if (rank == 0) usage();
        MPI_Finalize();
        return 2;
    }

    long bytes[MAX_SIZES];
    int ns = 0;
    for (long b = 4; b <= max_bytes && ns < MAX_SIZES; b *= 4) bytes[ns++] = b;
    float *buf = malloc((size_t)max_bytes);
    double *t = malloc((size_t)ns * (size_t)rounds * (size_t)samples * sizeof *t);
    int k[MAX_SIZES];
    if (!buf || !t) {
        fprintf(stderr, "bench_allreduce: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    int bad = 0;
    for (int s = 0; s < ns; s++) bad |= check_sum(buf, (int)(bytes[s] / 4), rank, size);
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_BOR, MPI_COMM_WORLD);
    if (bad) {
        if (rank == 0) fprintf(stderr, "bench_allreduce: a sum came out wrong\n");
        MPI_Finalize();
        return 1;
    }
    /* zeros from here: sums of zeros stay zeros (no overflow, no subnormals) */
    memset(buf, 0, (size_t)max_bytes);

    /* calls per sample: double k until k calls take 1 ms (after a warm-up) */
    for (int s = 0; s < ns; s++) {
        int count = (int)(bytes[s] / 4);
        time_calls(buf, count, 4);
        k[s] = 1;
        while (k[s] < (1 << 16) && time_calls(buf, count, k[s]) < 1e-3) k[s] *= 2;
    }

    int n = rounds * samples;   /* per size: t[s * n + r * samples + j] */
    for (int r = 0; r < rounds; r++)
        for (int s = 0; s < ns; s++)
            for (int j = 0; j < samples; j++)
                t[(size_t)s * n + (size_t)(r * samples + j)] = time_calls(buf, (int)(bytes[s] / 4), k[s]) / k[s];

    if (rank == 0) {
        double ring = 2.0 * (size - 1) / size;
        if (json) {
            printf("{\"ranks\": %d, \"rounds\": %d, \"samples\": %d, \"op\": \"%s, float sum in place\", "
                   "\"sizes\": [", size, rounds, samples, mode_name[mode]);
        } else {
            printf("%s, float sum in place, %d ranks: medians of %d samples (%d rounds)\n", mode_name[mode], size, n,
                   rounds);
            printf("%10s %8s %12s %10s %10s %10s\n", "bytes", "calls", "latency us", "min us", "alg GB/s", "bus GB/s");
        }
        for (int s = 0; s < ns; s++) {
            double *v = t + (size_t)s * n;
            double med = median(v, n), lo = v[0], hi = v[n - 1];   /* median sorts v */
            double alg = (double)bytes[s] / med / 1e9, bus = alg * ring;
            if (json)
                printf("%s{\"bytes\": %ld, \"calls_per_sample\": %d, \"latency_us\": %.4g, \"min_us\": %.4g, "
                       "\"max_us\": %.4g, \"alg_gbps\": %.4g, \"bus_gbps\": %.4g}",
                       s ? ", " : "", bytes[s], k[s], med * 1e6, lo * 1e6, hi * 1e6, alg, bus);
            else
                printf("%10ld %8d %12.2f %10.2f %10.3f %10.3f\n", bytes[s], k[s], med * 1e6, lo * 1e6, alg, bus);
        }
        if (json) printf("]}\n");
    }
    free(buf);
    free(t);
    MPI_Finalize();
    return 0;
}
