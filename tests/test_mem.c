/* test_mem.c - the memory limit: sizes as written in $CFLUX_MAX_MEMORY, the default
 * and a malformed value, counting (back to zero after every free), refusals before
 * allocation that name what the memory was for (a gzip'd CSV that inflates far past
 * the limit, an IDX header, parameters with their place in the model, activations,
 * optimizer state), and many threads at once. The gzip bomb runs first, so that the
 * peak resident size it is measured against is this program's own small start. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>
#include <zlib.h>

#include "cflux.h"
#include "core/mem.h"
#include "test.h"
#include "tmpdir.h"

#define MB ((size_t)1 << 20)

/* How much the peak resident size may grow past the limit while a file is refused:
 * AddressSanitizer copies on every realloc and keeps freed blocks in quarantine. */
#if defined(__SANITIZE_ADDRESS__)
#define RSS_SLACK (160 * MB)
#else
#define RSS_SLACK (32 * MB)
#endif

/* Peak resident size of this process so far, in bytes. */
static size_t peak_rss(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (size_t)u.ru_maxrss * 1024;
}

/* One gzip member holding text. */
static unsigned char *gzip_member(const char *text, size_t len, size_t *out)
{
    z_stream z = {0};
    deflateInit2(&z, 9, Z_DEFLATED, 31, 9, Z_DEFAULT_STRATEGY);
    size_t cap = deflateBound(&z, len);
    unsigned char *buf = malloc(cap);
    z.next_in = (unsigned char *)text;
    z.avail_in = (unsigned)len;
    z.next_out = buf;
    z.avail_out = (unsigned)cap;
    deflate(&z, Z_FINISH);
    *out = cap - z.avail_out;
    deflateEnd(&z);
    return buf;
}

/* The $CFLUX_MAX_MEMORY that main set before anything else is the limit. */
TEST(env_at_first_use)
{
    CHECK(cf_memory_limit() == (size_t)3 << 30);
    CHECK(cf_memory_in_use() == 0);
}

/* A gzip'd CSV of 2 GB of numbers, 4 MB on disk (the same member 2000 times), against
 * a limit of 32 MB: refused at the line where the numbers pass the limit, naming the
 * file, with the peak resident size grown by little more than the limit. */
TEST(csv_gzip_bomb)
{
    size_t rows = 50000, row = 20;
    char *text = malloc(rows * row + 1);
    for (size_t i = 0; i < rows; i++) memcpy(text + i * row, "1,2,3,4,5,6,7,8,9,0\n", row);
    size_t zl;
    unsigned char *member = gzip_member(text, rows * row, &zl);
    free(text);
    FILE *f = fopen(tmp("bomb.csv.gz"), "wb");
    for (int i = 0; i < 2000; i++) fwrite(member, 1, zl, f);
    fclose(f);
    free(member);
    CHECK(zl * 2000 < 8 * MB);

    CHECK(cf_set_memory_limit(32 * MB) == 0);
    size_t before = peak_rss();
    cf_dataset *d = cf_dataset_load_csv(tmp("bomb.csv.gz"), -1, 0);
    size_t grew = peak_rss() - before;
    CHECK(d == NULL);
    CHECK_HAS(cf_last_error(), "error: ");
    CHECK_HAS(cf_last_error(), "bomb.csv.gz:");
    CHECK_HAS(cf_last_error(), ": the data needs more than ");
    CHECK_HAS(cf_last_error(), ", above the memory limit of 32.0 MB (CFLUX_MAX_MEMORY or --max-memory)");
    printf("note: the bomb of 2 GB of text grew the peak resident size by %.1f MB\n", (double)grew / MB);
    CHECK(grew < 32 * MB + RSS_SLACK);
    CHECK(cf_memory_in_use() == 0);
    cf_dataset_free(d);
    CHECK(cf_set_memory_limit(0) == 0);
}

TEST(parse_sizes)
{
    struct { const char *s; size_t v; } ok[] = {
        {"4096", 4096}, {"512M", 512 * MB}, {"4G", (size_t)4 << 30}, {"1.5G", (size_t)3 << 29},
        {"1.5g", (size_t)3 << 29}, {"2GiB", (size_t)2 << 30}, {"2gb", (size_t)2 << 30}, {" 64 K ", 65536},
        {"1T", (size_t)1 << 40}, {"100B", 100}, {"0.5K", 512}, {"7.", 7},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        size_t v = 0;
        int rc = cf_mem_parse(ok[i].s, &v);
        if (rc || v != ok[i].v) fprintf(stderr, "  '%s' -> %d, %zu\n", ok[i].s, rc, v);
        CHECK(rc == 0 && v == ok[i].v);
    }
    const char *bad[] = {"", " ", "0", "0G", "-1G", "+1G", "G", "4X", "4GG", "4 G B", "1e9", "0x10", ".", "4G5",
                         "99999999999999999999", "20000000T", "nan", NULL};
    for (int i = 0; bad[i] || i == 0; i++) {
        size_t v = 1234;
        int rc = cf_mem_parse(bad[i], &v);
        if (rc == 0) fprintf(stderr, "  '%s' was taken as %zu\n", bad[i], v);
        CHECK(rc == -1 && v == 1234);
        if (!bad[i]) break;
    }
    char b[CF_MEM_STR];
    CHECK(strcmp(cf_mem_str(100, b), "100 B") == 0);
    CHECK(strcmp(cf_mem_str((size_t)4 << 30, b), "4.0 GB") == 0);
    CHECK(strcmp(cf_mem_str(9771000000ull, b), "9.1 GB") == 0);
    CHECK(strcmp(cf_mem_str(1023 * MB + 1000 * 1024, b), "1.0 GB") == 0);
}

TEST(malformed_env)
{
    setenv("CFLUX_MAX_MEMORY", "12Q", 1);
    CHECK(cf_set_memory_limit(0) == -1);
    CHECK_HAS(cf_last_error(), "error: CFLUX_MAX_MEMORY is '12Q', not a size: write bytes or a number with K, M, G or "
                               "T, as in 512M, 4G or 1.5G");
    cf_set_memory_limit(0);
    CHECK(cf_memory_limit() == 0);
    CHECK_HAS(cf_last_error(), "CFLUX_MAX_MEMORY is '12Q'");
    /* every counted request fails with that message */
    float x[2] = {1, 2}, y[2] = {0, 1};
    CHECK(cf_dataset_from_arrays(x, CF_SHAPE(1), y, 1, 2) == NULL);
    CHECK_HAS(cf_last_error(), "CFLUX_MAX_MEMORY is '12Q'");
    cf_model *m = cf_model_new();
    cf_output(m, cf_relu(m, cf_param(m, "w", CF_SHAPE(3), CF_ONES)));
    CHECK(cf_bind(m, 1, 0) == NULL);
    CHECK_HAS(cf_last_error(), "CFLUX_MAX_MEMORY is '12Q'");
    /* a limit set by the program wins */
    CHECK(cf_set_memory_limit(MB) == 0 && cf_memory_limit() == MB);
    cf_exec *e = cf_bind(m, 1, 0);
    CHECK(e != NULL);
    cf_exec_free(e);
    cf_model_free(m);
    /* a long value is cut in the message */
    setenv("CFLUX_MAX_MEMORY", "4G but not this long tail of words that goes on and on and on and on", 1);
    CHECK(cf_set_memory_limit(0) == -1);
    CHECK_HAS(cf_last_error(), "...', not a size");
    setenv("CFLUX_MAX_MEMORY", "1.5G", 1);
    CHECK(cf_set_memory_limit(0) == 0 && cf_memory_limit() == (size_t)3 << 29);
    /* unset (or empty): what the process can have (cf_mem_available), less than the
     * machine's whole memory (MemAvailable is below MemTotal) */
    size_t phys = (size_t)sysconf(_SC_PHYS_PAGES) * (size_t)sysconf(_SC_PAGESIZE);
    setenv("CFLUX_MAX_MEMORY", "", 1);
    CHECK(cf_set_memory_limit(0) == 0);
    CHECK(cf_memory_limit() < phys && cf_memory_limit() > 0);
    unsetenv("CFLUX_MAX_MEMORY");
    CHECK(cf_set_memory_limit(0) == 0);
    CHECK(cf_memory_limit() < phys && cf_memory_limit() > 0);
    CHECK(cf_memory_in_use() == 0);
}

/* Blocks are counted while they live and given back when freed. */
TEST(counting)
{
    float x[6] = {1, 2, 3, 4, 5, 6}, y[3] = {0, 1, 0};
    cf_dataset *d = cf_dataset_from_arrays(x, CF_SHAPE(2), y, 1, 3);
    CHECK(cf_memory_in_use() == 9 * sizeof(float));
    cf_dataset *tr, *va;
    CHECK(cf_dataset_split(d, 0.34, 1, &tr, &va) == 0);
    CHECK(cf_memory_in_use() == 18 * sizeof(float));
    cf_dataset_free(tr);
    cf_dataset_free(va);
    cf_dataset_free(d);
    CHECK(cf_memory_in_use() == 0);

    cf_model *m = cf_model_new();
    cf_node *in = cf_input(m, "x", CF_SHAPE(10));
    cf_node *W = cf_param(m, "W", CF_SHAPE(10, 20), CF_GLOROT);
    cf_output(m, cf_sum(m, cf_matmul(m, in, W)));
    CHECK(cf_model_init_params(m) == 0);
    size_t params = 208 * sizeof(float);   /* 200 rounded up to 16 floats */
    CHECK(cf_memory_in_use() == params);
    cf_exec *e = cf_bind(m, 4, CF_TRAIN);
    CHECK(e != NULL);
    CHECK(cf_memory_in_use() == 2 * params + cf_exec_arena_bytes(e, NULL));
    cf_optim_opts o = cf_optim_defaults("adam");
    cf_optim *opt = cf_optim_new(m, &o);
    CHECK(opt != NULL);
    CHECK(cf_memory_in_use() == 4 * params + cf_exec_arena_bytes(e, NULL));
    cf_optim_free(opt);
    cf_exec_free(e);
    CHECK(cf_memory_in_use() == 2 * params);
    cf_model_free(m);
    CHECK(cf_memory_in_use() == 0);
}

/* The parameters of Chain(Input(784), Affine(3000000), softmax) need 8.8 GB: refused
 * before anything is allocated, naming the largest parameter and its place. */
TEST(parameters_refused)
{
    CHECK(cf_set_memory_limit((size_t)1 << 30) == 0);
    cf_model *m = cf_model_parse("model = Chain(Input(784), Affine(3000000), softmax)\n", "model.flux");
    CHECK(m != NULL);
    size_t before = peak_rss();
    CHECK(cf_bind(m, 1, 0) == NULL);
    CHECK(peak_rss() - before < 64 * MB);
    const char *err = cf_last_error();
    CHECK_HAS(err, "error: the parameter block needs 8.8 GB, above the memory limit of 1.0 GB "
                   "(CFLUX_MAX_MEMORY or --max-memory); the largest parameter is ");
    CHECK_HAS(err, "W (784, 3000000), 8.8 GB\n");
    CHECK_HAS(err, "\n  in Affine at <stdlib>/affine.flux:2:7\n  in Chain at model.flux:1:27\n");
    CHECK(cf_memory_in_use() == 0);
    cf_model_free(m);
    /* the gradients, when the parameters fit but not both */
    m = cf_model_parse("model = Chain(Input(784), Affine(20000), softmax)\n", "model.flux");
    CHECK(cf_set_memory_limit(100 * MB) == 0);
    cf_exec *e = cf_bind(m, 1, 0);
    CHECK(e != NULL);
    cf_exec_free(e);
    CHECK(cf_bind(m, 1, CF_TRAIN) == NULL);
    CHECK_HAS(cf_last_error(), "error: the gradient block needs 59.9 MB, above the memory limit of 100.0 MB, with "
                               "59.9 MB already in use (CFLUX_MAX_MEMORY or --max-memory); the largest parameter is ");
    CHECK_HAS(cf_last_error(), "\n  in Chain at model.flux:1:27\n");
    cf_model_free(m);
    CHECK(cf_memory_in_use() == 0);
    cf_set_memory_limit(0);
}

/* Activations: the parameters fit, the batch's values do not. */
TEST(activations_refused)
{
    cf_model *m = cf_model_parse("model = Chain(Input(1000), Affine(1000), relu, Affine(10), softmax)\n", "act.flux");
    CHECK(cf_set_memory_limit(64 * MB) == 0);
    CHECK(cf_bind(m, 100000, 0) == NULL);
    CHECK_HAS(cf_last_error(), "error: at batch 100000, the activation memory needs ");
    CHECK_HAS(cf_last_error(), "above the memory limit of 64.0 MB");
    CHECK_HAS(cf_last_error(), "the largest is the value of ");
    CHECK_HAS(cf_last_error(), "(B, 1000), 381.5 MB\n");
    CHECK_HAS(cf_last_error(), "act.flux:1:");
    cf_exec *e = cf_bind(m, 100, 0);
    CHECK(e != NULL);
    cf_exec_free(e);
    cf_model_free(m);
    CHECK(cf_memory_in_use() == 0);
    cf_set_memory_limit(0);
}

TEST(optimizer_refused)
{
    cf_model *m = cf_model_new();
    cf_output(m, cf_sum(m, cf_param(m, "w", CF_SHAPE(1000, 1000), CF_ONES)));
    CHECK(cf_set_memory_limit(10 * MB) == 0);
    cf_exec *e = cf_bind(m, 1, CF_TRAIN);
    CHECK(e != NULL);
    cf_optim_opts o = cf_optim_defaults("adam");
    CHECK(cf_optim_new(m, &o) == NULL);
    CHECK_HAS(cf_last_error(), "error: the optimizer state needs 7.6 MB, above the memory limit of 10.0 MB, with 7.6 MB already in use (");
    cf_exec_free(e);
    cf_model_free(m);
    CHECK(cf_memory_in_use() == 0);
    cf_set_memory_limit(0);
}

/* Datasets: an IDX header that claims more than the limit, and arrays. */
/* A run too large for the limit is refused before any of it is made: the weights,
 * their gradients and Adam's state (299.5, 299.5 and 598.9 MB here, under a limit of 600 MB)
 * are sized first. Before, the weights were made and initialised, and the optimizer's
 * state refused after (for big.flux, 9.4 GB and minutes). lr-find and train share it. */
TEST(training_sized_first)
{
    static float x[4 * 784], y[4] = {0, 1, 2, 1};
    cf_dataset *d = cf_dataset_from_arrays(x, CF_SHAPE(784), y, 1, 4);
    cf_model *m = cf_model_parse("model = Chain(Input(784), Affine(100000), softmax)\n", "wide.flux");
    CHECK(d && m && cf_set_memory_limit(600 * MB) == 0);
    size_t before = peak_rss();
    cf_lrfind_opts o = cf_lrfind_defaults();
    cf_lrfind_result r;
    CHECK(cf_lrfind(m, d, &o, &r) == -1);
    CHECK(peak_rss() - before < 64 * MB);
    CHECK_HAS(cf_last_error(), "error: training needs 1.2 GB (weights 299.5 MB, their gradients 299.5 MB, the "
                               "optimizer state 598.9 MB), above the memory limit of 600.0 MB, with ");
    CHECK_HAS(cf_last_error(), "; the largest parameter is 1.W (784, 100000), 299.1 MB\n  in Affine at ");
    CHECK(cf_memory_in_use() < MB);   /* the data's 12.5 KB */
    cf_fit_opts fo = cf_fit_defaults();
    fo.optim = cf_optim_defaults("adam");
    CHECK(cf_trainer_new(m, d, &fo) == NULL);
    CHECK_HAS(cf_last_error(), "error: training needs 1.2 GB");
    CHECK(peak_rss() - before < 64 * MB);
    /* sgd keeps no state: the weights and gradients fit */
    fo.optim = cf_optim_defaults("sgd");
    cf_trainer *t = cf_trainer_new(m, d, &fo);
    CHECK(t != NULL);
    cf_trainer_free(t);
    cf_model_free(m);
    cf_dataset_free(d);
    CHECK(cf_memory_in_use() == 0);
    cf_set_memory_limit(0);
}

/* Write text to the file at path (made with its directories under the test's tmp). */
static void put(const char *path, const char *text)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "mkdir -p \"$(dirname '%s')\"", path);
    CHECK(system(cmd) == 0);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) fputs(text, f), fclose(f);
}

/* The default limit is what the process can have: MemAvailable, not MemTotal; the
 * cgroup's limit and its parents' (v2 and v1), "max" being none. */
TEST(available_memory)
{
    char mi[256], self[256], root[256], p[512];
    snprintf(mi, sizeof mi, "%s", tmp("meminfo"));
    snprintf(self, sizeof self, "%s", tmp("self-cgroup"));
    snprintf(root, sizeof root, "%s", tmp("cg"));
    put(mi, "MemTotal:       16000000 kB\nMemFree:         1000000 kB\nMemAvailable:    3000000 kB\n");
    put(self, "0::/a/b\n");
    snprintf(p, sizeof p, "%s/memory.max", root);
    put(p, "max\n");
    snprintf(p, sizeof p, "%s/a/b/memory.max", root);
    put(p, "max\n");
    CHECK(cf_mem_available_from(mi, self, root) == (size_t)3000000 * 1024);   /* MemAvailable, not MemTotal */
    snprintf(p, sizeof p, "%s/a/memory.max", root);
    put(p, "1073741824\n");                                                  /* a parent's limit binds */
    CHECK(cf_mem_available_from(mi, self, root) == (size_t)1 << 30);
    snprintf(p, sizeof p, "%s/a/b/memory.max", root);
    put(p, "536870912\n");
    CHECK(cf_mem_available_from(mi, self, root) == (size_t)1 << 29);
    /* cgroup v1: the memory controller's hierarchy; no limit is a huge number */
    put(self, "4:cpu,cpuacct:/x\n7:memory:/x\n");
    snprintf(p, sizeof p, "%s/memory/x/memory.limit_in_bytes", root);
    put(p, "9223372036854771712\n");
    CHECK(cf_mem_available_from(mi, self, root) == (size_t)3000000 * 1024);
    put(p, "2147483648\n");
    CHECK(cf_mem_available_from(mi, self, root) == (size_t)2 << 20 << 10);
    /* nothing readable: the physical memory, whatever else */
    size_t phys = (size_t)sysconf(_SC_PHYS_PAGES) * (size_t)sysconf(_SC_PAGESIZE);
    CHECK(cf_mem_available_from(tmp("none"), tmp("none"), tmp("none")) <= phys);
    CHECK(cf_mem_available() <= phys && cf_mem_available() > 0);
}

TEST(data_refused)
{
    unsigned char h[16] = {0, 0, 8, 3, 0, 1, 0x86, 0xA0, 0, 0, 0, 28, 0, 0, 0, 28};   /* 100000 of 28x28 */
    FILE *f = fopen(tmp("big-images"), "wb");
    fwrite(h, 1, sizeof h, f);
    fclose(f);
    CHECK(cf_set_memory_limit(32 * MB) == 0);
    CHECK(cf_dataset_load_idx(tmp("big-images"), tmp("big-labels")) == NULL);
    CHECK_HAS(cf_last_error(), "big-images: the header says 100000 images of 28x28: the data needs 299.1 MB, above "
                               "the memory limit of 32.0 MB (CFLUX_MAX_MEMORY or --max-memory)");
    static float x[4 << 20], y[1];
    CHECK(cf_set_memory_limit(8 * MB) == 0);
    CHECK(cf_dataset_from_arrays(x, CF_SHAPE(4 << 20), y, 1, 1) == NULL);
    CHECK_HAS(cf_last_error(), "error: cf_dataset_from_arrays: the data needs 16.0 MB, above the memory limit of 8.0 MB");
    cf_set_memory_limit(0);
}

/* Many threads taking and giving back: never past the limit, back to zero after. */
#define THREADS 8
static _Atomic size_t most_seen;
static _Atomic int granted, refused;

static void *churn(void *arg)
{
    (void)arg;
    for (int i = 0; i < 500; i++) {
        void *p[2];
        for (int k = 0; k < 2; k++) {
            p[k] = cf_mem_alloc(MB, "a test block");
            size_t now = cf_memory_in_use(), seen = most_seen;
            while (now > seen && !atomic_compare_exchange_weak(&most_seen, &seen, now)) {}
            if (p[k]) granted++;
            else refused++;
        }
        sched_yield();   /* hold them while the others run */
        cf_mem_free(p[0]);
        cf_mem_free(p[1]);
    }
    return NULL;
}

TEST(threads)
{
    CHECK(cf_set_memory_limit(3 * MB) == 0);
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, churn, NULL);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    printf("note: %d granted, %d refused\n", granted, refused);
    CHECK(granted + refused == THREADS * 1000 && granted > 0);
    CHECK(most_seen <= 3 * MB);
    CHECK(cf_memory_in_use() == 0);
    cf_set_memory_limit(0);
}

int main(void)
{
    setenv("CFLUX_MAX_MEMORY", "3G", 1);   /* read at first use */
    if (tmpdir_make("mem")) return 1;
    RUN(env_at_first_use);
    RUN(csv_gzip_bomb);
    RUN(parse_sizes);
    RUN(malformed_env);
    RUN(counting);
    RUN(parameters_refused);
    RUN(activations_refused);
    RUN(optimizer_refused);
    RUN(training_sized_first);
    RUN(available_memory);
    RUN(data_refused);
    RUN(threads);
    tmpdir_remove();
    return test_summary("mem");
}
