/* test_safetensors.c - the safetensors reader and writer: round trips, crash-safe
 * writing, dtype conversion, and one test per way a file from a stranger can be
 * wrong, each checking the message. */
#include <dirent.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cflux.h"
#include "core/safetensors.h"
#include "test.h"
#include "tmpdir.h"

/* Entries in dir whose name contains sub. */
static int count_files(const char *sub)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    if (!d) return -1;
    while ((e = readdir(d)))
        if (strstr(e->d_name, sub)) n++;
    closedir(d);
    return n;
}

static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    unsigned char *b;
    long n;
    if (!fp) return NULL;
    fseek(fp, 0, SEEK_END);
    n = ftell(fp);
    rewind(fp);
    b = malloc(n + 1);
    *len = fread(b, 1, n, fp);
    fclose(fp);
    return b;
}

/* A file image: the length of json, json, then datalen bytes (i, i+1, ...). */
static unsigned char *image(const char *json, size_t datalen, size_t *len)
{
    size_t h = strlen(json), i;
    unsigned char *b = malloc(8 + h + datalen + 1);
    for (i = 0; i < 8; i++) b[i] = (unsigned char)((uint64_t)h >> 8 * i);
    memcpy(b + 8, json, h);
    for (i = 0; i < datalen; i++) b[8 + h + i] = (unsigned char)i;
    *len = 8 + h + datalen;
    return b;
}

/* Parse json + datalen bytes with reader flags; NULL expected; the message must name
 * the file and say sub. rejects: with no flags. */
static int rejects_ex(const char *json, size_t datalen, unsigned flags, const char *sub)
{
    size_t len;
    unsigned char *b = image(json, datalen, &len);
    cf_st_file *f = cf_st_parse_ex(b, len, "bad.safetensors", flags);
    int ok = f == NULL && strstr(cf_last_error(), "error: bad.safetensors: ") == cf_last_error() &&
             strstr(cf_last_error(), sub) != NULL;
    if (!ok) fprintf(stderr, "  json %s\n  message \"%s\", expected \"%s\"\n", json,
                     f ? "(accepted)" : cf_last_error(), sub);
    cf_st_free(f);
    free(b);
    return ok;
}

static int rejects(const char *json, size_t datalen, const char *sub) { return rejects_ex(json, datalen, 0, sub); }

#define T(name, shp) "\"" name "\":{\"dtype\":\"F32\",\"shape\":" shp ","

TEST(round_trip)
{
    float w[6] = {1, -2.5f, 3e-38f, 1e38f, 0, -0.0f}, s = 42, e[1], big[64 * 3 * 1 * 1 * 2 * 1];
    uint32_t nanbits = 0x7fc12345u;
    const char *keys[] = {"format", "note"}, *vals[] = {"cflux-1", "caf\xc3\xa9 \"q\" \\ \n tab\t"};
    cf_st_tensor t[4] = {
        {.name = "layer1.w", .rank = 2, .shape = {2, 3}, .count = 6, .data = w},
        {.name = "step", .rank = 0, .count = 1, .data = &s},
        {.name = "empty", .rank = 2, .shape = {0, 4}, .count = 0, .data = e},
        {.name = "z\xe2\x82\xac\"six", .rank = 6, .shape = {64, 3, 1, 1, 2, 1}, .count = 384, .data = big},
    };
    const char *p = tmp("rt.safetensors");
    cf_st_file *f;
    size_t i;
    int k;

    for (i = 0; i < 384; i++) big[i] = (float)i * 0.25f - 7;
    memcpy(&big[5], &nanbits, 4);
    CHECK(cf_st_write(p, 4, t, 2, keys, vals) == 0);
    f = cf_st_read(p);
    CHECK(f != NULL);
    if (!f) { fprintf(stderr, "%s\n", cf_last_error()); return; }
    CHECK(cf_st_count(f) == 4);
    for (k = 0; k < 4; k++) {
        const cf_st_tensor *r = cf_st_get(f, k); /* data order = the order given */
        CHECK(r && !strcmp(r->name, t[k].name));
        CHECK(r && r->rank == t[k].rank && r->count == t[k].count);
        CHECK(r && !memcmp(r->shape, t[k].shape, sizeof(long long) * t[k].rank));
        CHECK(r && (r->count == 0 || !memcmp(r->data, t[k].data, 4 * r->count)));
        CHECK(cf_st_find(f, t[k].name) == r);
    }
    CHECK(cf_st_get(f, 4) == NULL && cf_st_get(f, -1) == NULL);
    CHECK(cf_st_find(f, "nope") == NULL);
    CHECK(cf_st_meta(f, "format") && !strcmp(cf_st_meta(f, "format"), "cflux-1"));
    CHECK(cf_st_meta(f, "note") && !strcmp(cf_st_meta(f, "note"), vals[1]));
    CHECK(cf_st_meta(f, "absent") == NULL);
    cf_st_free(f);
    CHECK(count_files(".tmp.") == 0);
}

TEST(header_layout)
{
    float x[3] = {1, 2, 3};
    cf_st_tensor t = {.name = "abc", .rank = 1, .shape = {3}, .count = 3, .data = x};
    const char *k[] = {"a"}, *v[] = {"b"};
    const char *p = tmp("layout.safetensors");
    size_t len, h;
    unsigned char *b;
    CHECK(cf_st_write(p, 1, &t, 1, k, v) == 0);
    b = slurp(p, &len);
    CHECK(b != NULL);
    if (!b) return;
    h = b[0] | (size_t)b[1] << 8;
    CHECK(h % 8 == 0 && len == 8 + h + 12);
    {
        const char *want = "{\"__metadata__\":{\"a\":\"b\"},\"abc\":{\"dtype\":\"F32\","
                           "\"shape\":[3],\"data_offsets\":[0,12]}}";
        CHECK(h >= strlen(want) && !memcmp(b + 8, want, strlen(want)));
    }
    CHECK(b[8 + h - 1] == ' ');                  /* padded with spaces */
    CHECK(!memcmp(b + 8 + h + 4, "\0\0\0\x40", 4)); /* 2.0f, little-endian */
    free(b);
}

TEST(empty_file)
{
    const char *p = tmp("empty.safetensors");
    cf_st_file *f;
    size_t len;
    unsigned char *b;
    CHECK(cf_st_write(p, 0, NULL, 0, NULL, NULL) == 0);
    b = slurp(p, &len);
    CHECK(b && len == 16 && !memcmp(b, "\x08\0\0\0\0\0\0\0{}      ", 16)); /* as the reference */
    free(b);
    f = cf_st_read(p);
    CHECK(f && cf_st_count(f) == 0 && cf_st_meta(f, "x") == NULL);
    cf_st_free(f);
}

TEST(write_rejects)
{
    float x[4] = {0};
    const char *p = tmp("rejected.safetensors");
    cf_st_tensor two[2] = {{.name = "w", .rank = 1, .shape = {4}, .count = 4, .data = x},
                           {.name = "w", .rank = 1, .shape = {4}, .count = 4, .data = x}};
    cf_st_tensor t = two[0];
    const char *k2[] = {"k", "k"}, *v2[] = {"1", "2"};

    CHECK(cf_st_write(p, 2, two, 0, NULL, NULL) == -1);
    CHECK_HAS(cf_last_error(), "two tensors are called 'w'");
    CHECK_HAS(cf_last_error(), "rejected.safetensors");
    t.name = "";
    CHECK(cf_st_write(p, 1, &t, 0, NULL, NULL) == -1);
    CHECK_HAS(cf_last_error(), "tensor 0 has no name");
    t.name = "bad\xff";
    CHECK(cf_st_write(p, 1, &t, 0, NULL, NULL) == -1);
    CHECK_HAS(cf_last_error(), "not valid UTF-8");
    t.name = "ov\xc0\xaf"; /* overlong '/' */
    CHECK(cf_st_write(p, 1, &t, 0, NULL, NULL) == -1);
    CHECK_HAS(cf_last_error(), "not valid UTF-8");
    t.name = "__metadata__";
    CHECK(cf_st_write(p, 1, &t, 0, NULL, NULL) == -1);
    CHECK_HAS(cf_last_error(), "reserves");
    t.name = "w";
    t.count = 5;
    CHECK(cf_st_write(p, 1, &t, 0, NULL, NULL) == -1);
    CHECK_HAS(cf_last_error(), "tensor 'w' has count 5 but shape [4] has 4 elements");
    t.count = 4;
    t.rank = 7;
    CHECK(cf_st_write(p, 1, &t, 0, NULL, NULL) == -1);
    CHECK_HAS(cf_last_error(), "rank 7");
    t.rank = 2;
    t.shape[0] = -2;
    t.shape[1] = -2;
    CHECK(cf_st_write(p, 1, &t, 0, NULL, NULL) == -1);
    CHECK_HAS(cf_last_error(), "negative dimension in shape [-2, -2]");
    t.rank = 1;
    t.shape[0] = 4;
    t.data = NULL;
    CHECK(cf_st_write(p, 1, &t, 0, NULL, NULL) == -1);
    CHECK_HAS(cf_last_error(), "tensor 'w' has no data");
    t.data = x;
    CHECK(cf_st_write(p, 1, &t, 2, k2, v2) == -1);
    CHECK_HAS(cf_last_error(), "metadata key 'k' is given twice");
    CHECK(access(p, F_OK) != 0); /* nothing was created */
    CHECK(count_files(".tmp.") == 0);
}

/* A failed write leaves the old file as it was and no temporary behind. */
TEST(failed_write_keeps_old_file)
{
    static float big[1 << 18]; /* 1 MiB of data */
    float x[2] = {1, 2};
    cf_st_tensor small = {.name = "old", .rank = 1, .shape = {2}, .count = 2, .data = x};
    cf_st_tensor large = {.name = "new", .rank = 1, .shape = {1 << 18}, .count = 1 << 18, .data = big};
    const char *p = tmp("keep.safetensors");
    unsigned char *before, *after;
    size_t lb, la;
    struct rlimit old, lim;
    char sub[300];
    cf_st_file *f;

    CHECK(cf_st_write(p, 1, &small, 0, NULL, NULL) == 0);
    before = slurp(p, &lb);

    /* Into a directory that does not exist. */
    snprintf(sub, sizeof sub, "%s/no/such/dir/x.safetensors", dir);
    CHECK(cf_st_write(sub, 1, &small, 0, NULL, NULL) == -1);
    CHECK_HAS(cf_last_error(), "x.safetensors: cannot write: the directory ");
    CHECK_HAS(cf_last_error(), "/no/such/dir does not exist");

    /* Over a path that is a directory. */
    snprintf(sub, sizeof sub, "%s/adir", dir);
    CHECK(mkdir(sub, 0755) == 0);
    CHECK(cf_st_write(sub, 1, &small, 0, NULL, NULL) == -1);
    CHECK_HAS(cf_last_error(), "adir: cannot write: it is a directory");
    CHECK(rmdir(sub) == 0); /* still an empty directory */

    /* Failing half-way: a file size limit makes the data write fail (EFBIG). */
    signal(SIGXFSZ, SIG_IGN);
    CHECK(getrlimit(RLIMIT_FSIZE, &old) == 0);
    lim = old;
    lim.rlim_cur = 64 * 1024;
    CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0);
    CHECK(cf_st_write(p, 1, &large, 0, NULL, NULL) == -1);
    CHECK(setrlimit(RLIMIT_FSIZE, &old) == 0);
    signal(SIGXFSZ, SIG_DFL);
    CHECK_HAS(cf_last_error(), "error: ");
    CHECK_HAS(cf_last_error(), "keep.safetensors: writing failed: File too large");

    after = slurp(p, &la);
    CHECK(before && after && la == lb && !memcmp(before, after, lb));
    f = cf_st_read(p);
    CHECK(f && cf_st_find(f, "old") && !cf_st_find(f, "new"));
    cf_st_free(f);
    CHECK(count_files(".tmp.") == 0);
    free(before);
    free(after);
}

TEST(read_file_errors)
{
    const char *p = tmp("trunc.safetensors");
    float x[1024] = {0};
    cf_st_tensor t = {.name = "w", .rank = 1, .shape = {1024}, .count = 1024, .data = x};
    size_t len;
    unsigned char *b;
    FILE *fp;

    CHECK(cf_st_read(tmp("missing.safetensors")) == NULL);
    CHECK_HAS(cf_last_error(), "missing.safetensors: cannot open: No such file or directory");
    CHECK(cf_st_read(dir) == NULL);
    CHECK_HAS(cf_last_error(), "is a directory");

    /* A file cut short: the message gives both sizes. */
    CHECK(cf_st_write(p, 1, &t, 0, NULL, NULL) == 0);
    b = slurp(p, &len);
    fp = fopen(p, "wb");
    fwrite(b, 1, len - 3096, fp);
    fclose(fp);
    CHECK(cf_st_read(p) == NULL);
    CHECK_HAS(cf_last_error(), "trunc.safetensors: truncated: the header says 4096 bytes of "
                               "tensor data but the file has 1000");
    free(b);
}

static int want_b(const cf_st_file *f, const char *name, void *user)
{
    ++*(int *)user;
    return strcmp(cf_st_meta(f, "keep"), name) == 0;   /* the metadata, seen before the tensors */
}

/* Parts of a file: the header alone (no values, metadata and shapes kept), and only the
 * tensors wanted (the same values as the whole read, the others without theirs), from
 * a regular file and from a pipe (read whole, then the same); a file cut short is an
 * error either way. */
TEST(reads_parts)
{
    const char *p = tmp("parts.safetensors");
    float a[3] = {1, 2, 3}, b[700], c[5] = {-1, -2, -3, -4, -5};
    for (int i = 0; i < 700; i++) b[i] = (float)i / 7;
    cf_st_tensor t[3] = {{.name = "a", .rank = 1, .shape = {3}, .count = 3, .data = a},
                         {.name = "b", .rank = 2, .shape = {7, 100}, .count = 700, .data = b},
                         {.name = "c", .rank = 1, .shape = {5}, .count = 5, .data = c}};
    const char *k[] = {"keep"}, *v[] = {"b"};
    CHECK(cf_st_write(p, 3, t, 1, k, v) == 0);
    cf_st_file *f = cf_st_read_ex(p, CF_ST_HEADER_ONLY);
    CHECK(f && cf_st_count(f) == 3 && !strcmp(cf_st_meta(f, "keep"), "b"));
    for (int i = 0; f && i < 3; i++) CHECK(cf_st_get(f, i)->data == NULL);
    CHECK(f && cf_st_find(f, "b")->rank == 2 && cf_st_find(f, "b")->shape[1] == 100);
    cf_st_free(f);
    const char *paths[2] = {p, "/dev/stdin"};
    for (int w = 0; w < 2; w++) {   /* a regular file, then a pipe */
        FILE *in = NULL;
        if (w == 1) {
            char cmd[600];
            snprintf(cmd, sizeof cmd, "cat '%s'", p);
            in = popen(cmd, "r");
            CHECK(in != NULL && dup2(fileno(in), 0) == 0);
        }
        int calls = 0;
        f = cf_st_read_want(paths[w], 0, want_b, &calls);
        CHECK(f != NULL && calls == 3);
        if (!f) fprintf(stderr, "%s\n", cf_last_error());
        const cf_st_tensor *x = f ? cf_st_find(f, "b") : NULL;
        CHECK(x && x->data && memcmp(x->data, b, sizeof b) == 0);
        CHECK(f && cf_st_find(f, "a")->data == NULL && cf_st_find(f, "c")->data == NULL);
        CHECK(f && cf_st_find(f, "c")->count == 5);
        cf_st_free(f);
        if (in) pclose(in);
    }
    size_t len;
    unsigned char *all = slurp(p, &len);
    FILE *fp = fopen(p, "wb");
    fwrite(all, 1, len - 8, fp);   /* c's last two values gone */
    fclose(fp);
    CHECK(cf_st_read_ex(p, CF_ST_HEADER_ONLY) == NULL);
    CHECK_HAS(cf_last_error(), "parts.safetensors: truncated: the header says");
    int calls = 0;
    CHECK(cf_st_read_want(p, 0, want_b, &calls) == NULL);
    CHECK_HAS(cf_last_error(), "parts.safetensors: truncated: the header says");
    fp = fopen(p, "wb");
    fwrite(all, 1, 5, fp);
    fclose(fp);
    CHECK(cf_st_read_ex(p, CF_ST_HEADER_ONLY) == NULL);
    CHECK_HAS(cf_last_error(), "parts.safetensors: too short to be a safetensors file (5 bytes");
    fp = fopen(p, "wb");
    fwrite(all, 1, 40, fp);
    fclose(fp);
    CHECK(cf_st_read_want(p, 0, want_b, &calls) == NULL);
    CHECK_HAS(cf_last_error(), "parts.safetensors: truncated: the header length is");
    free(all);
}

TEST(reads_other_dtypes)
{
    /* F64 [1.5, -1e300], F16 [1, -2, 65504, 2^-24 (subnormal), inf, -0], BF16 [1.5, -3]. */
    static const char *json = "{\"d\":{\"dtype\":\"F64\",\"shape\":[2],\"data_offsets\":[0,16]},"
                              "\"h\":{\"dtype\":\"F16\",\"shape\":[2,3],\"data_offsets\":[16,28]},"
                              "\"b\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[28,32]}}";
    unsigned char buf[512];
    size_t h = strlen(json), i;
    double d[2] = {1.5, -1e300};
    uint16_t hv[6] = {0x3c00, 0xc000, 0x7bff, 0x0001, 0x7c00, 0x8000}, bv[2] = {0x3fc0, 0xc040};
    cf_st_file *f;
    const cf_st_tensor *t;

    for (i = 0; i < 8; i++) buf[i] = (unsigned char)(h >> 8 * i);
    memcpy(buf + 8, json, h);
    memcpy(buf + 8 + h, d, 16); /* the test host is little-endian, as the format */
    memcpy(buf + 8 + h + 16, hv, 12);
    memcpy(buf + 8 + h + 28, bv, 4);
    f = cf_st_parse(buf, 8 + h + 32, "mixed");
    CHECK(f != NULL);
    if (!f) { fprintf(stderr, "%s\n", cf_last_error()); return; }
    CHECK(cf_st_count(f) == 3 && !strcmp(cf_st_get(f, 0)->name, "d")); /* data order */
    t = cf_st_find(f, "d");
    CHECK(t && t->data[0] == 1.5f && isinf(t->data[1]) && t->data[1] < 0);
    t = cf_st_find(f, "h");
    CHECK(t && t->rank == 2 && t->count == 6);
    CHECK(t && t->data[0] == 1 && t->data[1] == -2 && t->data[2] == 65504);
    CHECK(t && t->data[3] == ldexpf(1, -24) && isinf(t->data[4]) && t->data[4] > 0);
    CHECK(t && t->data[5] == 0 && signbit(t->data[5]));
    t = cf_st_find(f, "b");
    CHECK(t && t->data[0] == 1.5f && t->data[1] == -3);
    cf_st_free(f);
}

/* With CF_ST_OTHER_DTYPES, tensors of whole-byte dtypes cflux does not read (a PyTorch
 * BatchNorm's I64 num_batches_tracked) are kept, with their dtype and shape and no
 * values, and checked like the others; without it they are refused by name. Sub-byte
 * dtypes stay refused. */
TEST(keeps_unread_dtypes_when_asked)
{
    static const char *json = "{\"bn.weight\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                              "\"bn.num_batches_tracked\":{\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[8,16]},"
                              "\"mask\":{\"dtype\":\"BOOL\",\"shape\":[3],\"data_offsets\":[16,19]}}";
    size_t len;
    unsigned char *b = image(json, 19, &len);
    float w[2] = {0.5f, -2};
    memcpy(b + len - 19, w, 8);
    cf_st_file *f = cf_st_parse(b, len, "bn.safetensors");
    CHECK(f == NULL);
    CHECK_HAS(cf_last_error(), "tensor 'bn.num_batches_tracked' has dtype I64, which cflux does not read");
    f = cf_st_parse_ex(b, len, "bn.safetensors", CF_ST_OTHER_DTYPES);
    CHECK(f != NULL);
    if (f) {
        const cf_st_tensor *t = cf_st_find(f, "bn.num_batches_tracked"), *m = cf_st_find(f, "mask");
        const cf_st_tensor *wt = cf_st_find(f, "bn.weight");
        CHECK(cf_st_count(f) == 3);
        CHECK(t && t->data == NULL && !strcmp(t->dtype, "I64") && t->rank == 0 && t->count == 1);
        CHECK(m && m->data == NULL && !strcmp(m->dtype, "BOOL") && m->rank == 1 && m->count == 3);
        CHECK(wt && !strcmp(wt->dtype, "F32") && wt->data && wt->data[0] == 0.5f && wt->data[1] == -2);
    }
    cf_st_free(f);
    free(b);
    /* still checked: an I64 of 4 bytes, and a sub-byte dtype */
    CHECK(rejects_ex("{\"n\":{\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[0,4]}}", 4, CF_ST_OTHER_DTYPES,
                     "tensor 'n' has 4 bytes of data (data_offsets [0, 4]) but shape [] of I64 needs 8"));
    CHECK(rejects_ex("{\"q\":{\"dtype\":\"F4\",\"shape\":[2],\"data_offsets\":[0,1]}}", 1, CF_ST_OTHER_DTYPES,
                     "tensor 'q' has dtype F4, which cflux does not read"));
}

/* A state_dict as PyTorch writes it (safetensors.torch.save_file; made by
 * tests/golden/gen_torch_state.py): refused by name as it stands, since its BatchNorm
 * counts batches in an I64; read with CF_ST_OTHER_DTYPES, that count is kept without
 * values and every F32 tensor reads as the values the script wrote beside it. */
TEST(reads_a_pytorch_state_dict)
{
    cf_st_file *f = cf_st_read("tests/golden/torch_state.safetensors");
    CHECK(f == NULL);
    CHECK_HAS(cf_last_error(), "tensor '1.num_batches_tracked' has dtype I64, which cflux does not read");
    f = cf_st_read_ex("tests/golden/torch_state.safetensors", CF_ST_OTHER_DTYPES);
    cf_st_file *want = cf_st_read("tests/golden/torch_state_expect.safetensors");
    CHECK(f != NULL && want != NULL);
    if (!f || !want) {
        fprintf(stderr, "%s\n", cf_last_error());
        cf_st_free(f);
        cf_st_free(want);
        return;
    }
    CHECK(cf_st_count(f) == 9 && cf_st_count(want) == 10);   /* and the inputs and outputs of test_torch_io */
    const cf_st_tensor *n = cf_st_find(f, "1.num_batches_tracked");
    CHECK(n && !strcmp(n->dtype, "I64") && n->data == NULL && n->rank == 0);
    for (int i = 0; i < cf_st_count(want); i++) {
        const cf_st_tensor *e = cf_st_get(want, i), *t = cf_st_find(f, e->name + strlen("expect."));
        if (!strcmp(e->name, "expect.input") || !strcmp(e->name, "expect.output")) continue;
        int same = t && !strcmp(t->dtype, "F32") && t->rank == e->rank && t->count == e->count;
        for (int d = 0; same && d < t->rank; d++) same = t->shape[d] == e->shape[d];
        for (size_t k = 0; same && k < t->count; k++) same = t->data[k] == e->data[k];
        if (!same) fprintf(stderr, "  %s: not as PyTorch wrote it\n", e->name);
        CHECK(same);
    }
    cf_st_free(f);
    cf_st_free(want);
}

TEST(accepts_what_the_format_allows)
{
    size_t len;
    unsigned char *b;
    cf_st_file *f;
    /* Any order in the header, zero-size tensors, padding, unknown fields, null metadata. */
    b = image("{\"__metadata__\":null,"
              "\"b\":{\"shape\":[1],\"dtype\":\"F32\",\"data_offsets\":[4,8],\"extra\":1},"
              "\"e\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,8]},"
              "\"a\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]}}   \n ", 8, &len);
    f = cf_st_parse(b, len, "ok");
    CHECK(f != NULL);
    if (!f) fprintf(stderr, "%s\n", cf_last_error());
    CHECK(cf_st_count(f) == 3);
    CHECK(f && !strcmp(cf_st_get(f, 0)->name, "a") && !strcmp(cf_st_get(f, 1)->name, "b"));
    CHECK(f && cf_st_find(f, "a")->rank == 0 && cf_st_find(f, "a")->count == 1);
    CHECK(f && cf_st_find(f, "e")->count == 0);
    cf_st_free(f);
    free(b);
}

TEST(rejects_bad_length_field)
{
    unsigned char b[16] = {0};
    cf_st_file *f;
    CHECK(cf_st_parse(b, 5, "bad.safetensors") == NULL);
    CHECK_HAS(cf_last_error(), "error: bad.safetensors: too short");
    b[0] = 0x00, b[1] = 0xc2, b[2] = 0xeb, b[3] = 0x0b; /* 200,000,000 */
    CHECK(cf_st_parse(b, 16, "bad.safetensors") == NULL);
    CHECK_HAS(cf_last_error(), "header length is 200000000 bytes, over the limit of 100000000");
    memset(b, 0xff, 8); /* 2^64 - 1 */
    CHECK(cf_st_parse(b, 16, "bad.safetensors") == NULL);
    CHECK_HAS(cf_last_error(), "over the limit");
    memset(b, 0, 8);
    b[0] = 100;
    f = cf_st_parse(b, 16, "bad.safetensors");
    CHECK(f == NULL);
    CHECK_HAS(cf_last_error(), "truncated: the header length is 100 bytes but the file has only 8");
    /* A NUL byte in the header, which cJSON would skip as whitespace. */
    memcpy(b, "\x08\0\0\0\0\0\0\0{}\0     ", 16);
    CHECK(cf_st_parse(b, 16, "bad.safetensors") == NULL);
    CHECK_HAS(cf_last_error(), "control character (0x00) at byte 2");
    memcpy(b, "\x08\0\0\0\0\0\0\0{}      ", 16);
    f = cf_st_parse(b, 16, "good");
    CHECK(f && cf_st_count(f) == 0);
    cf_st_free(f);
}

TEST(rejects_bad_json)
{
    CHECK(rejects("{\"a\":", 0, "not valid JSON"));
    CHECK(rejects("{} x", 0, "more after its JSON value"));
    CHECK(rejects("[1,2]", 0, "the header is an array, not a JSON object"));
    CHECK(rejects("\"s\"", 0, "not a JSON object"));
    CHECK(rejects("", 0, "not valid JSON"));
    CHECK(rejects("{\"w\xff\":1}", 0, "not valid UTF-8 (byte 3 of the header)"));
    CHECK(rejects("{\"\xed\xa0\x80\":1}", 0, "not valid UTF-8"));  /* a surrogate */
    CHECK(rejects("{\"a\tb\":1}", 0, "control character (0x09)"));
    CHECK(rejects("\xef\xbb\xbf{}", 0, "non-ASCII character outside a string at byte 0"));
    CHECK(rejects("{\"a\\u0000b\":{}}", 0, "\\u0000"));
    CHECK(rejects("{" T("w", "[01]") "\"data_offsets\":[0,4]}}", 4, "malformed number at byte 29"));
    CHECK(rejects("{" T("w", "[1.]") "\"data_offsets\":[0,4]}}", 4, "malformed number"));
    CHECK(rejects("{" T("w", "[-]") "\"data_offsets\":[0,0]}}", 0, "malformed number"));
    CHECK(rejects("{" T("w", "[1e]") "\"data_offsets\":[0,4]}}", 4, "malformed number"));
    CHECK(rejects("{" T("w", "[1]") "\"data_offsets\":[0,4e0x]}}", 4, "not valid JSON"));
}

TEST(rejects_bad_entries)
{
    CHECK(rejects("{\"w\":3}", 0, "tensor 'w' is a number, not an object"));
    CHECK(rejects("{\"w\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "tensor 'w' has no dtype"));
    CHECK(rejects("{\"w\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", 4, "tensor 'w' has no shape"));
    CHECK(rejects("{\"w\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4, "tensor 'w' has no data_offsets"));
    CHECK(rejects("{\"w\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
                  4, "tensor 'w' has 'dtype' twice"));
    CHECK(rejects("{\"w\":{\"dtype\":5,\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
                  "tensor 'w': dtype is a number, not a string"));
    CHECK(rejects("{\"w\":{\"dtype\":\"Q7\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
                  "tensor 'w' has unknown dtype 'Q7'"));
    CHECK(rejects("{\"step\":{\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[0,8]}}", 8,
                  "tensor 'step' has dtype I64, which cflux does not read"));
}

TEST(rejects_bad_shapes)
{
    CHECK(rejects("{" T("w", "3") "\"data_offsets\":[0,12]}}", 12, "shape is a number, not an array"));
    CHECK(rejects("{" T("w", "[-1]") "\"data_offsets\":[0,0]}}", 0, "tensor 'w': shape[0] is negative (-1)"));
    CHECK(rejects("{" T("w", "[2.5]") "\"data_offsets\":[0,10]}}", 10, "shape[0] is not an integer (2.5)"));
    CHECK(rejects("{" T("w", "[1,\"2\"]") "\"data_offsets\":[0,8]}}", 8, "shape[1] is a string, not an integer"));
    CHECK(rejects("{" T("w", "[1,1,1,1,1,1,1]") "\"data_offsets\":[0,4]}}", 4,
                  "tensor 'w' has 7 dimensions; cflux handles at most 6"));
    CHECK(rejects("{" T("w", "[1e300]") "\"data_offsets\":[0,4]}}", 4, "shape[0] is too large"));
    CHECK(rejects("{" T("w", "[9007199254740993,0]") "\"data_offsets\":[0,0]}}", 0,
                  "shape[0] is too large")); /* 2^53 + 1, which a double cannot hold */
    CHECK(rejects("{" T("w", "[4294967296,4294967296,4294967296]") "\"data_offsets\":[0,0]}}", 0,
                  "tensor 'w': shape [4294967296, 4294967296, 4294967296] has too many elements (overflow)"));
    CHECK(rejects("{" T("w", "[2147483648,2147483648,2]") "\"data_offsets\":[0,0]}}", 0,
                  "is too many bytes (overflow)"));
}

TEST(rejects_bad_offsets)
{
    CHECK(rejects("{" T("w", "[1]") "\"data_offsets\":4}}", 4, "data_offsets is a number, not [begin, end]"));
    CHECK(rejects("{" T("w", "[1]") "\"data_offsets\":[0,4,8]}}", 8, "not [begin, end]"));
    CHECK(rejects("{" T("w", "[1]") "\"data_offsets\":[0,4.5]}}", 4, "data_offsets[1] is not an integer"));
    CHECK(rejects("{" T("w", "[1]") "\"data_offsets\":[-4,0]}}", 4, "data_offsets[0] is negative"));
    CHECK(rejects("{" T("w", "[0]") "\"data_offsets\":[8,4]}}", 8, "data_offsets [8, 4] end before they begin"));
    CHECK(rejects("{" T("w", "[2,2]") "\"data_offsets\":[0,12]}}", 12,
                  "tensor 'w' has 12 bytes of data (data_offsets [0, 12]) but shape [2, 2] of F32 needs 16"));
    CHECK(rejects("{" T("w", "[4]") "\"data_offsets\":[0,16]}}", 8,
                  "truncated: the header says 16 bytes of tensor data but the file has 8"));
}

TEST(rejects_bad_layout)
{
    CHECK(rejects("{" T("a", "[2]") "\"data_offsets\":[0,8]}," T("b", "[2]") "\"data_offsets\":[12,20]}}",
                  20, "bytes 8..12 of the data buffer belong to no tensor (a hole before tensor 'b')"));
    CHECK(rejects("{" T("a", "[2]") "\"data_offsets\":[4,12]}}", 12, "bytes 0..4"));
    CHECK(rejects("{" T("a", "[2]") "\"data_offsets\":[0,8]}," T("b", "[2]") "\"data_offsets\":[4,12]}}",
                  12, "tensor 'b' (bytes 4..12) overlaps tensor 'a' (bytes 0..8)"));
    CHECK(rejects("{" T("a", "[2]") "\"data_offsets\":[0,8]}," T("b", "[2]") "\"data_offsets\":[0,8]}}",
                  8, "overlaps"));
    CHECK(rejects("{" T("a", "[4]") "\"data_offsets\":[0,16]}," T("e", "[0]") "\"data_offsets\":[8,8]}}",
                  16, "tensor 'e' (bytes 8..8) overlaps tensor 'a'"));
    CHECK(rejects("{" T("a", "[2]") "\"data_offsets\":[0,8]}}", 12,
                  "the tensors cover 8 bytes of data but the file has 12 after the header"));
    CHECK(rejects("{" T("w", "[1]") "\"data_offsets\":[0,4]}," T("w", "[1]") "\"data_offsets\":[4,8]}}",
                  8, "tensor 'w' appears twice in the header"));
}

TEST(rejects_bad_metadata)
{
    CHECK(rejects("{\"__metadata__\":[1]}", 0, "__metadata__ is an array, not an object of strings"));
    CHECK(rejects("{\"__metadata__\":\"x\"}", 0, "__metadata__ is a string"));
    CHECK(rejects("{\"__metadata__\":{\"k\":1}}", 0, "__metadata__ 'k' is a number, not a string"));
    CHECK(rejects("{\"__metadata__\":{\"k\":\"a\",\"k\":\"b\"}}", 0, "__metadata__ has key 'k' twice"));
    CHECK(rejects("{\"__metadata__\":{},\"__metadata__\":{}}", 0, "__metadata__ twice"));
}

int main(void)
{
    if (tmpdir_make("st")) return 1;
    RUN(round_trip);
    RUN(header_layout);
    RUN(empty_file);
    RUN(write_rejects);
    RUN(failed_write_keeps_old_file);
    RUN(read_file_errors);
    RUN(reads_parts);
    RUN(reads_other_dtypes);
    RUN(accepts_what_the_format_allows);
    RUN(rejects_bad_length_field);
    RUN(rejects_bad_json);
    RUN(rejects_bad_entries);
    RUN(rejects_bad_shapes);
    RUN(rejects_bad_offsets);
    RUN(rejects_bad_layout);
    RUN(rejects_bad_metadata);
    RUN(keeps_unread_dtypes_when_asked);
    RUN(reads_a_pytorch_state_dict);
    tmpdir_remove();
    return test_summary("safetensors");
}
