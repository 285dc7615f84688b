/* test_data.c - the data readers: IDX (plain and gzip'd), CSV (read a chunk at a time
 * across every boundary, long lines, the columns it remembers), data specs, splits,
 * the summary of targets, and the real Fashion-MNIST where it is installed. Small
 * files are written into a temporary directory by hand, headers and all. */
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "cflux.h"
#include "core/mem.h"
#include "data/data.h"
#include "test.h"
#include "tmpdir.h"

static void write_file(const char *name, const void *data, size_t len, int gz)
{
    if (gz) {
        gzFile f = gzopen(tmp(name), "wb");
        if (len) gzwrite(f, data, (unsigned)len);
        gzclose(f);
    } else {
        FILE *f = fopen(tmp(name), "wb");
        fwrite(data, 1, len, f);
        fclose(f);
    }
}

static void write_text(const char *name, const char *text) { write_file(name, text, strlen(text), 0); }

/* An IDX file of bytes: magic (0, 0, type, rank), dims big-endian, then data. */
static size_t idx_bytes(unsigned char *out, int type, int rank, const uint32_t *dims, const unsigned char *data,
                        size_t len)
{
    size_t k = 0;
    out[k++] = 0;
    out[k++] = 0;
    out[k++] = (unsigned char)type;
    out[k++] = (unsigned char)rank;
    for (int i = 0; i < rank; i++) {
        out[k++] = (unsigned char)(dims[i] >> 24);
        out[k++] = (unsigned char)(dims[i] >> 16);
        out[k++] = (unsigned char)(dims[i] >> 8);
        out[k++] = (unsigned char)dims[i];
    }
    if (len) memcpy(out + k, data, len);
    return k + len;
}

static void write_idx(const char *name, int rank, const uint32_t *dims, const unsigned char *data, size_t len, int gz)
{
    unsigned char buf[1024];
    write_file(name, buf, idx_bytes(buf, 0x08, rank, dims, data, len), gz);
}

/* 3 images of 2x3 and their labels 2, 0, 1 */
static const unsigned char pixels[18] = {0, 255, 51, 102, 0, 1, 10, 20, 30, 40, 50, 60, 255, 254, 253, 252, 251, 250};
static const unsigned char labels3[3] = {2, 0, 1};

static void write_small_idx(const char *images, const char *labels, int gz)
{
    write_idx(images, 3, (uint32_t[]){3, 2, 3}, pixels, 18, gz);
    write_idx(labels, 1, (uint32_t[]){3}, labels3, 3, gz);
}

/* The small IDX dataset, named after its images file; its targets after the labels. */
static void check_small(cf_dataset *d, const char *images, const char *labels)
{
    CHECK(d != NULL);
    if (!d) {
        fprintf(stderr, "  %s\n", cf_last_error());
        return;
    }
    CHECK(cf_dataset_count(d) == 3);
    cf_shape s = cf_dataset_sample_shape(d);
    CHECK(s.rank == 2 && s.d[0] == 2 && s.d[1] == 3);
    CHECK(cf_dataset_target_size(d) == 1);
    CHECK(cf_dataset_classes(d) == 3);
    CHECK_HAS(cf_dataset_name(d), images);
    CHECK(strstr(cf_dataset_name(d), labels) == NULL);
    CHECK_HAS(cf_dataset_target_name(d), labels);
    CHECK(cf_dataset_column_count(d) == 0 && cf_dataset_label_column(d) == -1 && !cf_dataset_column_name(d, 0));
    const float *x = cf_dataset_x(d), *y = cf_dataset_y(d);
    int exact = 1;
    for (int i = 0; i < 18; i++) exact &= x[i] == (float)pixels[i] / 255.0f;
    CHECK(exact);
    CHECK(x[1] == 1.0f && x[0] == 0.0f);
    CHECK(y[0] == 2 && y[1] == 0 && y[2] == 1);
}

TEST(idx_round_trip_plain)
{
    write_small_idx("a-images", "a-labels", 0);
    cf_dataset *d = cf_dataset_load_idx(tmp("a-images"), tmp("a-labels"));
    check_small(d, "a-images", "a-labels");
    cf_dataset_free(d);
}

TEST(idx_round_trip_gz)
{
    write_small_idx("b-images.gz", "b-labels.gz", 1);
    cf_dataset *d = cf_dataset_load_idx(tmp("b-images.gz"), tmp("b-labels.gz"));
    check_small(d, "b-images.gz", "b-labels.gz");
    cf_dataset_free(d);
    /* one of each */
    write_small_idx("c-images.gz", "c-labels", 0);
    d = cf_dataset_load_idx(tmp("b-images.gz"), tmp("c-labels"));
    check_small(d, "b-images.gz", "c-labels");
    cf_dataset_free(d);
}

TEST(idx_other_ranks)
{
    write_idx("r2-images", 2, (uint32_t[]){3, 6}, pixels, 18, 0);
    write_idx("r4-images.gz", 4, (uint32_t[]){3, 3, 1, 2}, pixels, 18, 1);
    write_idx("r-labels", 1, (uint32_t[]){3}, labels3, 3, 0);
    cf_dataset *d = cf_dataset_load_idx(tmp("r2-images"), tmp("r-labels"));
    CHECK(d && cf_dataset_sample_shape(d).rank == 1 && cf_dataset_sample_shape(d).d[0] == 6);
    cf_dataset_free(d);
    d = cf_dataset_load_idx(tmp("r4-images.gz"), tmp("r-labels"));
    cf_shape s = cf_dataset_sample_shape(d);
    CHECK(d && s.rank == 3 && s.d[0] == 3 && s.d[1] == 1 && s.d[2] == 2);
    CHECK(d && cf_dataset_x(d)[17] == 250 / 255.0f);
    cf_dataset_free(d);
}

TEST(idx_truncated)
{
    write_idx("t-labels", 1, (uint32_t[]){3}, labels3, 3, 0);
    /* data for 2 and a half images */
    write_idx("t-images", 3, (uint32_t[]){3, 2, 3}, pixels, 15, 0);
    CHECK(cf_dataset_load_idx(tmp("t-images"), tmp("t-labels")) == NULL);
    CHECK_HAS(cf_last_error(), "error: ");
    CHECK_HAS(cf_last_error(), "t-images: truncated: the header says 3 images of 2x3 but the file holds 2");
    write_idx("t-images.gz", 3, (uint32_t[]){3, 2, 3}, pixels, 12, 1);
    CHECK(cf_dataset_load_idx(tmp("t-images.gz"), tmp("t-labels")) == NULL);
    CHECK_HAS(cf_last_error(), "t-images.gz: truncated: the header says 3 images of 2x3 but the file holds 2");
    write_idx("t-labels2", 1, (uint32_t[]){3}, labels3, 1, 0);
    write_small_idx("t-images2", "unused-labels", 0);
    CHECK(cf_dataset_load_idx(tmp("t-images2"), tmp("t-labels2")) == NULL);
    CHECK_HAS(cf_last_error(), "t-labels2: truncated: the header says 3 labels but the file holds 1");
    /* the header itself cut short */
    unsigned char h[8] = {0, 0, 8, 3, 0, 0, 0, 3};
    write_file("t-header", h, 8, 0);
    CHECK(cf_dataset_load_idx(tmp("t-header"), tmp("t-labels")) == NULL);
    CHECK_HAS(cf_last_error(), "t-header: truncated: the header ends after 8 of its 16 bytes");
    /* a gzip stream cut short: compress a whole file, keep the first half of it */
    unsigned char raw[1024];
    size_t rawlen = idx_bytes(raw, 8, 3, (uint32_t[]){3, 2, 3}, pixels, 18);
    write_file("t-whole.gz", raw, rawlen, 1);
    FILE *f = fopen(tmp("t-whole.gz"), "rb");
    unsigned char z[1024];
    size_t zl = fread(z, 1, sizeof z, f);
    fclose(f);
    write_file("t-cut.gz", z, zl / 2, 0);
    CHECK(cf_dataset_load_idx(tmp("t-cut.gz"), tmp("t-labels")) == NULL);
    CHECK_HAS(cf_last_error(), "t-cut.gz: ");
    CHECK_HAS(cf_last_error(), "truncated");
    /* more data than the header says */
    write_idx("t-long", 3, (uint32_t[]){2, 2, 3}, pixels, 18, 0);
    CHECK(cf_dataset_load_idx(tmp("t-long"), tmp("t-labels")) == NULL);
    CHECK_HAS(cf_last_error(), "t-long: the header says 2 images of 2x3 but the file holds more data");
}

TEST(idx_bad_magic)
{
    write_small_idx("m-images", "m-labels", 0);
    unsigned char zeros[32] = {0};
    write_file("m-zeros.gz", zeros, sizeof zeros, 1);
    CHECK(cf_dataset_load_idx(tmp("m-images"), tmp("m-zeros.gz")) == NULL);
    CHECK_HAS(cf_last_error(), "error: ");
    CHECK_HAS(cf_last_error(), "m-zeros.gz: not an IDX file (magic 0x00000000)");
    write_text("m-text", "hello, world\n");
    CHECK(cf_dataset_load_idx(tmp("m-text"), tmp("m-labels")) == NULL);
    CHECK_HAS(cf_last_error(), "m-text: not an IDX file (magic 0x68656c6c)");
    write_file("m-empty", "", 0, 0);
    CHECK(cf_dataset_load_idx(tmp("m-images"), tmp("m-empty")) == NULL);
    CHECK_HAS(cf_last_error(), "m-empty: not an IDX file (it is empty)");
    write_file("m-short", "\0\0", 2, 0);
    CHECK(cf_dataset_load_idx(tmp("m-short"), tmp("m-labels")) == NULL);
    CHECK_HAS(cf_last_error(), "m-short: not an IDX file (only 2 bytes)");
    /* floats: a real IDX type that cflux does not read */
    unsigned char fl[64];
    write_file("m-float", fl, idx_bytes(fl, 0x0D, 3, (uint32_t[]){1, 2, 2}, zeros, 16), 0);
    CHECK(cf_dataset_load_idx(tmp("m-float"), tmp("m-labels")) == NULL);
    CHECK_HAS(cf_last_error(), "m-float: an IDX file of floats (type 0x0D); cflux reads IDX files of unsigned bytes");
    /* images and labels swapped */
    CHECK(cf_dataset_load_idx(tmp("m-labels"), tmp("m-images")) == NULL);
    CHECK_HAS(cf_last_error(), "m-labels: expected images");
    CHECK_HAS(cf_last_error(), "labels given as images?");
    write_small_idx("m-images", "m-labels", 0);
    CHECK(cf_dataset_load_idx(tmp("m-images"), tmp("m-images")) == NULL);
    CHECK_HAS(cf_last_error(), "images given as labels?");
    /* missing files and directories */
    CHECK(cf_dataset_load_idx(tmp("m-nothing"), tmp("m-labels")) == NULL);
    CHECK_HAS(cf_last_error(), "m-nothing: cannot open: No such file or directory");
    CHECK(cf_dataset_load_idx(dir, tmp("m-labels")) == NULL);
    CHECK_HAS(cf_last_error(), "cannot open: it is a directory");
    CHECK(cf_dataset_load_idx(NULL, tmp("m-labels")) == NULL);
    CHECK_HAS(cf_last_error(), "error: ");
    /* a header that says no images, or a zero dimension */
    write_idx("m-none", 3, (uint32_t[]){0, 2, 3}, pixels, 0, 0);
    CHECK(cf_dataset_load_idx(tmp("m-none"), tmp("m-labels")) == NULL);
    CHECK_HAS(cf_last_error(), "m-none: the header says the file holds no images");
    write_idx("m-zero", 3, (uint32_t[]){3, 0, 3}, pixels, 0, 0);
    CHECK(cf_dataset_load_idx(tmp("m-zero"), tmp("m-labels")) == NULL);
    CHECK_HAS(cf_last_error(), "m-zero: dimension 1 of the header is 0");
}

TEST(idx_mismatched_lengths)
{
    write_idx("mm-images.gz", 3, (uint32_t[]){3, 2, 3}, pixels, 18, 1);
    write_idx("mm-labels.gz", 1, (uint32_t[]){2}, labels3, 2, 1);
    CHECK(cf_dataset_load_idx(tmp("mm-images.gz"), tmp("mm-labels.gz")) == NULL);
    CHECK_HAS(cf_last_error(), "error: images and labels differ in length: ");
    CHECK_HAS(cf_last_error(), "mm-images.gz has 3 images, ");
    CHECK_HAS(cf_last_error(), "mm-labels.gz has 2 labels");
}

TEST(idx_huge_claims)
{
    write_idx("h-labels", 1, (uint32_t[]){3}, labels3, 3, 0);
    /* 2^20 images of 1024x1024: 2^40 bytes */
    write_idx("h-images", 3, (uint32_t[]){1u << 20, 1024, 1024}, pixels, 18, 0);
    CHECK(cf_dataset_load_idx(tmp("h-images"), tmp("h-labels")) == NULL);
    CHECK_HAS(cf_last_error(), "h-images: the header says 1048576 images of 1024x1024, more than the limit");
    /* every dimension at its largest */
    write_idx("h-max.gz", 4, (uint32_t[]){0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, pixels, 18, 1);
    CHECK(cf_dataset_load_idx(tmp("h-max.gz"), tmp("h-labels")) == NULL);
    CHECK_HAS(cf_last_error(), "more than the limit");
    /* 2^30 bytes claimed, under the limits (of values, and of memory, set high here:
     * the memory is taken as the data arrives), but 18 there: refused after reading 18 */
    cf_set_memory_limit((size_t)64 << 30);
    write_idx("h-lie", 3, (uint32_t[]){1u << 14, 256, 256}, pixels, 18, 0);
    CHECK(cf_dataset_load_idx(tmp("h-lie"), tmp("h-labels")) == NULL);
    CHECK_HAS(cf_last_error(), "h-lie: truncated: the header says 16384 images of 256x256 but the file holds 0");
    cf_set_memory_limit(0);
    write_idx("h-labels-lie", 1, (uint32_t[]){0xffffffffu}, labels3, 3, 0);
    write_small_idx("h-images2", "unused-labels", 0);
    CHECK(cf_dataset_load_idx(tmp("h-images2"), tmp("h-labels-lie")) == NULL);
    CHECK_HAS(cf_last_error(), "h-labels-lie: the header says 4294967295 labels, more than the limit");
}

static cf_dataset *csv(const char *name, const char *text, int label_col, int header)
{
    write_text(name, text);
    return cf_dataset_load_csv(tmp(name), label_col, header);
}

TEST(csv_header_or_not)
{
    cf_dataset *d = csv("plain.csv", "1,2,3\n4,5,6\n", -1, 0);
    CHECK(d && cf_dataset_count(d) == 2);
    cf_shape s = cf_dataset_sample_shape(d);
    CHECK(s.rank == 1 && s.d[0] == 2);
    CHECK(d && cf_dataset_x(d)[0] == 1 && cf_dataset_x(d)[3] == 5 && cf_dataset_y(d)[0] == 3 && cf_dataset_y(d)[1] == 6);
    CHECK(cf_dataset_classes(d) == 7);
    CHECK_HAS(cf_dataset_name(d), "plain.csv");
    cf_dataset_free(d);
    /* header: 1 skips the first row even when it is numbers */
    d = csv("plain.csv", "1,2,3\n4,5,6\n", -1, 1);
    CHECK(d && cf_dataset_count(d) == 1 && cf_dataset_x(d)[0] == 4);
    cf_dataset_free(d);
    /* header: -1 sees numbers and keeps the row */
    d = csv("plain.csv", "1,2,3\n4,5,6\n", -1, -1);
    CHECK(d && cf_dataset_count(d) == 2);
    cf_dataset_free(d);
    /* header: -1 sees names and skips the row */
    d = csv("named.csv", "a,b,label\n1,2,0\n4,5,1\n7,8,1\n", -1, -1);
    CHECK(d && cf_dataset_count(d) == 3 && cf_dataset_classes(d) == 2);
    CHECK(d && cf_dataset_x(d)[0] == 1 && cf_dataset_x(d)[5] == 8);
    cf_dataset_free(d);
    /* header: 0 on a named first row: a bad number on line 1 */
    d = csv("named.csv", "a,b,label\n1,2,0\n", -1, 0);
    CHECK(d == NULL);
    CHECK_HAS(cf_last_error(), "named.csv:1: 'a' is not a number (column 0)");
    CHECK(csv("named.csv", "1,2\n", -1, 2) == NULL);
    CHECK_HAS(cf_last_error(), "header is 2");
}

TEST(csv_label_column)
{
    const char *text = "10,1,2,3\n20,4,5,6\n";
    cf_dataset *d = csv("lc.csv", text, 0, 0);
    CHECK(d && cf_dataset_y(d)[0] == 10 && cf_dataset_y(d)[1] == 20);
    CHECK(d && cf_dataset_x(d)[0] == 1 && cf_dataset_x(d)[5] == 6);
    CHECK(cf_dataset_sample_shape(d).d[0] == 3);
    cf_dataset_free(d);
    d = csv("lc.csv", text, -1, 0);
    CHECK(d && cf_dataset_y(d)[0] == 3 && cf_dataset_y(d)[1] == 6);
    CHECK(d && cf_dataset_x(d)[0] == 10 && cf_dataset_x(d)[3] == 20);
    cf_dataset_free(d);
    d = csv("lc.csv", text, -3, 0);  /* column 1 */
    CHECK(d && cf_dataset_y(d)[0] == 1 && cf_dataset_y(d)[1] == 4);
    CHECK(d && cf_dataset_x(d)[0] == 10 && cf_dataset_x(d)[1] == 2 && cf_dataset_x(d)[2] == 3);
    cf_dataset_free(d);
    d = csv("lc.csv", text, 2, 0);
    CHECK(d && cf_dataset_y(d)[0] == 2 && cf_dataset_x(d)[2] == 3);
    cf_dataset_free(d);
    CHECK(csv("lc.csv", text, 4, 0) == NULL);
    CHECK_HAS(cf_last_error(), "lc.csv: the label column is 4, but the rows have 4 columns (0 to 3, or -4 to -1");
    CHECK(csv("lc.csv", text, -5, 0) == NULL);
    CHECK_HAS(cf_last_error(), "the label column is -5");
    CHECK(csv("one.csv", "1\n2\n", -1, 0) == NULL);
    CHECK_HAS(cf_last_error(), "one.csv:1: one column");
}

TEST(csv_bad_number)
{
    CHECK(csv("bad.csv", "1,2,3\n4,5,6\nabc,1,2\n", -1, -1) == NULL);
    CHECK_HAS(cf_last_error(), "error: ");
    CHECK_HAS(cf_last_error(), "bad.csv:3: 'abc' is not a number (column 0)");
    CHECK(csv("bad.csv", "1,2,3\n4,5x,6\n", -1, 0) == NULL);
    CHECK_HAS(cf_last_error(), "bad.csv:2: '5x' is not a number (column 1)");
    CHECK(csv("bad.csv", "1,2,3\n4,,6\n", -1, 0) == NULL);
    CHECK_HAS(cf_last_error(), "bad.csv:2: a missing value (an empty field) in column 1; ");
    CHECK(csv("bad.csv", "1,2,3\n4,nan,6\n", -1, 0) == NULL);
    CHECK_HAS(cf_last_error(), "bad.csv:2: a missing value ('nan') in column 1; ");
    CHECK(csv("bad.csv", "1,2,3\n4,-inf,6\n", -1, 0) == NULL);
    CHECK_HAS(cf_last_error(), "bad.csv:2: '-inf' is not a finite number (column 1)");
    CHECK(csv("bad.csv", "1,2,3\n4,5,1e99\n", -1, 0) == NULL);
    CHECK_HAS(cf_last_error(), "'1e99' is not a finite number (column 2)");
    CHECK(csv("bad.csv", "1,2,3\n4,6 7,5\n", -1, 0) == NULL);
    CHECK_HAS(cf_last_error(), "'6 7' is not a number");
    /* a long field is cut short in the message, which stays one line */
    CHECK(csv("bad.csv", "1,2,3\n4,5,xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n", 0, 0) == NULL);
    CHECK_HAS(cf_last_error(), "...' is not a number (column 2)");
    CHECK(strchr(cf_last_error(), '\n') == NULL);
    /* a NUL byte inside a field */
    write_file("nul.csv", "1,2,3\n4,5\0,6\n", 13, 0);
    CHECK(cf_dataset_load_csv(tmp("nul.csv"), -1, 0) == NULL);
    CHECK_HAS(cf_last_error(), "nul.csv:2: ");
}

TEST(csv_ragged)
{
    CHECK(csv("ragged.csv", "1,2,3\n4,5,6\n\n7,8\n", -1, 0) == NULL);
    CHECK_HAS(cf_last_error(), "error: ");
    CHECK_HAS(cf_last_error(), "ragged.csv:4: expected 3 fields (as on line 1) but found 2");
    CHECK(csv("ragged.csv", "a,b\n1,2,3\n", -1, -1) == NULL);
    CHECK_HAS(cf_last_error(), "ragged.csv:2: expected 2 fields (as on line 1) but found 3");
    CHECK(csv("ragged.csv", "1,2,3\n4,5,6,\n", -1, 0) == NULL);
    CHECK_HAS(cf_last_error(), "ragged.csv:2: expected 3 fields");
}

TEST(csv_empty)
{
    CHECK(csv("empty.csv", "", -1, -1) == NULL);
    CHECK_HAS(cf_last_error(), "error: ");
    CHECK_HAS(cf_last_error(), "empty.csv: no data rows");
    CHECK(csv("empty.csv", "\n  \r\n\n", -1, -1) == NULL);
    CHECK_HAS(cf_last_error(), "empty.csv: no data rows");
    CHECK(csv("header.csv", "x,y,label\n", -1, -1) == NULL);
    CHECK_HAS(cf_last_error(), "header.csv: no data rows (only a header)");
    CHECK(csv("header.csv", "1,2,3\n", -1, 1) == NULL);
    CHECK_HAS(cf_last_error(), "no data rows");
    CHECK(cf_dataset_load_csv(tmp("nothing.csv"), -1, -1) == NULL);
    CHECK_HAS(cf_last_error(), "nothing.csv: cannot open: ");
}

TEST(csv_layout)
{
    /* CRLF, spaces and tabs, blank lines, no final newline, a byte-order mark */
    cf_dataset *d = csv("crlf.csv", "\xEF\xBB\xBF" "f1 , f2 ,y\r\n 1.5 ,\t-2e1 , 1\r\n\r\n  \r\n3,4,0\r\n5, 6 ,1", -1, -1);
    CHECK(d && cf_dataset_count(d) == 3);
    if (d) {
        const float *x = cf_dataset_x(d), *y = cf_dataset_y(d);
        CHECK(x[0] == 1.5f && x[1] == -20 && x[2] == 3 && x[3] == 4 && x[4] == 5 && x[5] == 6);
        CHECK(y[0] == 1 && y[1] == 0 && y[2] == 1);
    }
    cf_dataset_free(d);
    /* line numbers count the blank lines */
    CHECK(csv("crlf.csv", "1,2\r\n\r\n\r\n3,q\r\n", 0, 0) == NULL);
    CHECK_HAS(cf_last_error(), "crlf.csv:4: 'q' is not a number (column 1)");
    /* gzip'd CSV reads the same */
    const char *text = "1,2,0\n3,4,1\n";
    write_file("z.csv.gz", text, strlen(text), 1);
    d = cf_dataset_load_csv(tmp("z.csv.gz"), -1, -1);
    CHECK(d && cf_dataset_count(d) == 2 && cf_dataset_x(d)[2] == 3);
    cf_dataset_free(d);
}

TEST(csv_classes)
{
    cf_dataset *d = csv("reg.csv", "1,0.5\n2,1.5\n", -1, 0);
    CHECK(d && cf_dataset_classes(d) == 0);
    cf_dataset_free(d);
    d = csv("reg.csv", "1,-1\n2,1\n", -1, 0);
    CHECK(d && cf_dataset_classes(d) == 0);
    cf_dataset_free(d);
    d = csv("reg.csv", "1,0\n2,0\n", -1, 0);
    CHECK(d && cf_dataset_classes(d) == 1);
    cf_dataset_free(d);
    d = csv("reg.csv", "1,250000000\n2,1\n", -1, 0);  /* past 2^24: not class indices */
    CHECK(d && cf_dataset_classes(d) == 0);
    cf_dataset_free(d);
}

/* Two datasets hold the same numbers, shapes and columns. */
static int same_data(const cf_dataset *a, const cf_dataset *b)
{
    if (!a || !b || cf_dataset_count(a) != cf_dataset_count(b)) return 0;
    cf_shape sa = cf_dataset_sample_shape(a), sb = cf_dataset_sample_shape(b);
    size_t n = cf_dataset_count(a), f = (size_t)sa.d[0];
    if (sa.rank != 1 || sb.rank != 1 || sa.d[0] != sb.d[0]) return 0;
    if (memcmp(cf_dataset_x(a), cf_dataset_x(b), n * f * sizeof(float)) ||
        memcmp(cf_dataset_y(a), cf_dataset_y(b), n * sizeof(float)))
        return 0;
    if (cf_dataset_column_count(a) != cf_dataset_column_count(b) ||
        cf_dataset_label_column(a) != cf_dataset_label_column(b))
        return 0;
    for (int c = 0; c < cf_dataset_column_count(a); c++) {
        const char *na = cf_dataset_column_name(a, c), *nb = cf_dataset_column_name(b, c);
        if ((na == NULL) != (nb == NULL) || (na && strcmp(na, nb))) return 0;
    }
    return 1;
}

/* Read a file through the stream reader with small chunks and lines. */
static cf_dataset *csv_chunked(const char *name, const cf_csv_opts *o)
{
    gzFile f = cf_data_gzopen(tmp(name));
    if (!f) return NULL;
    cf_dataset *d = cf_data_csv_read(f, tmp(name), o);
    gzclose(f);
    return d;
}

/* Chunks of 1 to 9 bytes cut lines, CRLFs, the byte-order mark and numbers at every
 * place: the result is the same as in one piece, and so are the errors. */
TEST(csv_chunks)
{
    const char *texts[] = {
        ("\xEF\xBB\xBF" "f1 , f2 ,y\r\n 1.5 ,\t-2e1 , 1\r\n\r\n  \r\n3,4,0\r\n5, 6 ,1"),   /* a BOM, then a header */
        "1,2,3\n4,5,6\n\n\n7,8,9\n",
        "a,b\n0.25,1\n-0.5,0\n123456789,2\n1e-3,3",
        "x\n1\n2\n",
    };
    for (int t = 0; t < 4; t++) {
        write_text("chunks.csv", texts[t]);
        for (int gz = 0; gz < 2; gz++) {
            write_file("chunks.csv", texts[t], strlen(texts[t]), gz);
            cf_csv_opts o = {.has_label = t < 3, .label_col = -1, .header = -1};
            cf_dataset *whole = csv_chunked("chunks.csv", &o);
            CHECK(whole != NULL);
            int same = 1;
            for (size_t chunk = 1; chunk <= 9; chunk++) {
                o.chunk = chunk;
                cf_dataset *d = csv_chunked("chunks.csv", &o);
                if (!same_data(whole, d)) {
                    fprintf(stderr, "  text %d, gz %d, chunk %zu: %s\n", t, gz, chunk, d ? "differs" : cf_last_error());
                    same = 0;
                }
                cf_dataset_free(d);
            }
            CHECK(same);
            cf_dataset_free(whole);
        }
    }
    write_text("chunks.csv", "1,2\r\n\r\n\r\n3,q\r\n");
    for (size_t chunk = 1; chunk <= 5; chunk++) {
        cf_csv_opts o = {.has_label = 1, .label_col = 0, .header = 0, .chunk = chunk};
        CHECK(csv_chunked("chunks.csv", &o) == NULL);
        CHECK_HAS(cf_last_error(), "chunks.csv:4: 'q' is not a number (column 1)");
    }
    CHECK(cf_memory_in_use() == 0);
}

/* Lines longer than a chunk are put together; past the longest a line may be, the
 * line is refused by number. */
TEST(csv_long_lines)
{
    /* a header of 300000 names (2 MB, two chunks), two rows of numbers */
    size_t cols = 300000;
    char *text = malloc(cols * 16 * 3), *p = text;
    for (size_t c = 0; c < cols; c++) p += sprintf(p, "%sc%zu", c ? "," : "", c);
    for (int r = 0; r < 2; r++) {
        *p++ = '\n';
        for (size_t c = 0; c < cols; c++) p += sprintf(p, "%s%d", c ? "," : "", (int)(c % 10) + r);
    }
    *p = 0;
    write_file("wide.csv.gz", text, (size_t)(p - text), 1);
    free(text);
    cf_dataset *d = cf_dataset_load_csv(tmp("wide.csv.gz"), -1, -1);
    CHECK(d && cf_dataset_count(d) == 2 && cf_dataset_sample_shape(d).d[0] == (int)cols - 1);
    CHECK(d && cf_dataset_x(d)[12] == 2 && cf_dataset_x(d)[cols - 1 + 12] == 3);
    CHECK(d && cf_dataset_y(d)[0] == (cols - 1) % 10 && cf_dataset_y(d)[1] == (cols - 1) % 10 + 1);
    CHECK(d && strcmp(cf_dataset_column_name(d, 0), "c0") == 0);
    CHECK(d && strcmp(cf_dataset_column_name(d, (int)cols - 1), "c299999") == 0);
    cf_dataset_free(d);

    /* the limit, made small: lines 3 and 4 of 100 and 101 bytes */
    char big[400];
    snprintf(big, sizeof big, "1,2\n3,4\n%0100d\n%0101d\n", 0, 0);
    big[8 + 50] = ',';
    write_text("long.csv", big);
    for (size_t chunk = 7; chunk <= 1000; chunk *= 11) {
        cf_csv_opts o = {.has_label = 1, .label_col = -1, .header = 0, .chunk = chunk, .max_line = 100};
        CHECK(csv_chunked("long.csv", &o) == NULL);
        CHECK_HAS(cf_last_error(), "long.csv:4: the line is longer than 100 B, the most a CSV line may hold");
    }
    /* and the real one: a line of 64 MiB and one byte, 64 KB gzip'd */
    gzFile f = gzopen(tmp("huge-line.csv.gz"), "wb");
    gzputs(f, "1,2\n");
    char *ones = malloc(1 << 20);
    memset(ones, '1', 1 << 20);
    for (int i = 0; i < 64; i++) gzwrite(f, ones, 1 << 20);
    gzputs(f, "1\n");
    gzclose(f);
    free(ones);
    CHECK(cf_dataset_load_csv(tmp("huge-line.csv.gz"), -1, -1) == NULL);
    CHECK_HAS(cf_last_error(), "huge-line.csv.gz:2: the line is longer than 64.0 MB, the most a CSV line may hold");
    CHECK(cf_memory_in_use() == 0);
}

/* What the columns were: the header's names, the label's column, their count. */
TEST(csv_columns)
{
    cf_dataset *d = csv("cols.csv", "\xEF\xBB\xBF" " a ,\"b c\",\tlabel\r\n1,2,0\n", -1, -1);
    CHECK(d && cf_dataset_column_count(d) == 3 && cf_dataset_label_column(d) == 2);
    CHECK(d && strcmp(cf_dataset_column_name(d, 0), "a") == 0);
    CHECK(d && strcmp(cf_dataset_column_name(d, 1), "b c") == 0);
    CHECK(d && strcmp(cf_dataset_column_name(d, 2), "label") == 0);
    CHECK(cf_dataset_column_name(d, 3) == NULL && cf_dataset_column_name(d, -1) == NULL);
    /* kept by a split */
    cf_dataset *tr, *va;
    write_text("cols2.csv", "x,y,z,label\n1,2,3,0\n4,5,6,1\n7,8,9,0\n");
    cf_dataset *d2 = cf_dataset_load_csv(tmp("cols2.csv"), 1, -1);
    CHECK(cf_dataset_split(d2, 0.34, 1, &tr, &va) == 0);
    CHECK(cf_dataset_label_column(va) == 1 && cf_dataset_column_count(tr) == 4);
    CHECK(tr && strcmp(cf_dataset_column_name(tr, 3), "label") == 0 && strcmp(cf_dataset_column_name(va, 1), "y") == 0);
    cf_dataset_free(tr);
    cf_dataset_free(va);
    cf_dataset_free(d2);
    cf_dataset_free(d);
    /* no header: the columns without names; the label counted from the end */
    d = csv("cols.csv", "1,2,3,4\n5,6,7,8\n", -2, -1);
    CHECK(d && cf_dataset_column_count(d) == 4 && cf_dataset_label_column(d) == 2);
    CHECK(cf_dataset_column_name(d, 0) == NULL);
    cf_dataset_free(d);
    /* a header given as such, of numbers */
    d = csv("cols.csv", "1,2\n3,4\n", 0, 1);
    CHECK(d && strcmp(cf_dataset_column_name(d, 0), "1") == 0 && cf_dataset_label_column(d) == 0);
    cf_dataset_free(d);
    /* inputs alone: columns, no label */
    write_text("cols-in.csv", "p,q\n1,2\n");
    d = cf_dataset_load_inputs(tmp("cols-in.csv"));
    CHECK(d && cf_dataset_column_count(d) == 2 && cf_dataset_label_column(d) == -1);
    CHECK(d && strcmp(cf_dataset_column_name(d, 1), "q") == 0);
    cf_dataset_free(d);
    /* names cut to 63 bytes, not inside a UTF-8 character; control bytes shown as '?' */
    char text[256] = "";
    for (int i = 0; i < 31; i++) strcat(text, "x");
    for (int i = 0; i < 20; i++) strcat(text, "\xC3\xA9");   /* é: 31 + 2 * 16 = 63 bytes fit */
    strcat(text, ",a\x01" "b,\"\",\"\n1,2,3,4\n");
    d = csv("names.csv", text, -1, -1);
    const char *n0 = cf_dataset_column_name(d, 0);
    CHECK(n0 && strlen(n0) == 63 && memcmp(n0 + 61, "\xC3\xA9", 2) == 0);
    CHECK(d && strcmp(cf_dataset_column_name(d, 1), "a?b") == 0);
    CHECK(d && strcmp(cf_dataset_column_name(d, 2), "") == 0 && strcmp(cf_dataset_column_name(d, 3), "\"") == 0);
    cf_dataset_free(d);
    text[0] = 0;
    for (int i = 0; i < 32; i++) strcat(text, "x");
    for (int i = 0; i < 20; i++) strcat(text, "\xC3\xA9");   /* 32 + 31 would split one: 62 bytes */
    strcat(text, ",b\n1,2\n");
    d = csv("names.csv", text, -1, -1);
    CHECK(d && strlen(cf_dataset_column_name(d, 0)) == 62);
    cf_dataset_free(d);
    /* not from a CSV file */
    float x[2] = {1, 2}, y[2] = {0, 1};
    d = cf_dataset_from_arrays(x, CF_SHAPE(1), y, 1, 2);
    CHECK(cf_dataset_column_count(d) == 0 && cf_dataset_label_column(d) == -1 && !cf_dataset_column_name(d, 0));
    CHECK(strcmp(cf_dataset_target_name(d), "arrays") == 0);
    cf_dataset_free(d);
    CHECK(cf_dataset_column_count(NULL) == 0 && cf_dataset_label_column(NULL) == -1);
    CHECK(cf_dataset_column_name(NULL, 0) == NULL && strcmp(cf_dataset_target_name(NULL), "") == 0);
    CHECK(cf_memory_in_use() == 0);
}

/* The summary of targets: distinct values (exact, then "more"), whole numbers, range. */
TEST(target_stats)
{
    static float x[70000], y[70000];
    cf_target_stats s;
    for (int i = 0; i < 10; i++) y[i] = 3;
    cf_dataset *d = cf_dataset_from_arrays(x, CF_SHAPE(1), y, 1, 10);
    CHECK(cf_dataset_target_stats(d, &s) == 0);
    CHECK(s.count == 10 && s.distinct == 1 && !s.more && s.whole && s.min == 3 && s.max == 3);
    cf_dataset_free(d);
    /* fractions; -0 and 0 are one value */
    float f[6] = {0.5f, -0.0f, 0.0f, 2, 0.5f, -7.25f};
    d = cf_dataset_from_arrays(x, CF_SHAPE(1), f, 1, 6);
    CHECK(cf_dataset_target_stats(d, &s) == 0);
    CHECK(s.distinct == 4 && !s.whole && s.min == -7.25 && s.max == 2);
    cf_dataset_free(d);
    /* two targets per sample: all are looked at */
    d = cf_dataset_from_arrays(x, CF_SHAPE(1), f, 2, 3);
    CHECK(cf_dataset_target_stats(d, &s) == 0 && s.count == 6 && s.distinct == 4);
    cf_dataset_free(d);
    /* exactly the most that is counted, then one more */
    for (int i = 0; i < 70000; i++) y[i] = (float)(i % CF_TARGET_DISTINCT_MAX);
    d = cf_dataset_from_arrays(x, CF_SHAPE(1), y, 1, 70000);
    CHECK(cf_dataset_target_stats(d, &s) == 0);
    CHECK(s.distinct == CF_TARGET_DISTINCT_MAX && !s.more && s.whole && s.min == 0 && s.max == 65535);
    cf_dataset_free(d);
    y[69999] = 1e6f;
    d = cf_dataset_from_arrays(x, CF_SHAPE(1), y, 1, 70000);
    CHECK(cf_dataset_target_stats(d, &s) == 0);
    CHECK(s.distinct == CF_TARGET_DISTINCT_MAX && s.more && s.max == 1e6);
    cf_dataset_free(d);
    /* NaN: one value, not whole, outside the range; infinity is not whole */
    float g[4] = {NAN, 1, -NAN, INFINITY};
    d = cf_dataset_from_arrays(x, CF_SHAPE(1), g, 1, 4);
    CHECK(cf_dataset_target_stats(d, &s) == 0);
    CHECK(s.distinct == 3 && !s.whole && s.min == 1 && isinf(s.max));
    cf_dataset_free(d);
    d = cf_dataset_from_arrays(x, CF_SHAPE(1), g, 1, 1);
    CHECK(cf_dataset_target_stats(d, &s) == 0 && isnan(s.min) && isnan(s.max) && s.distinct == 1);
    /* from a CSV file, the label column's values */
    cf_dataset_free(d);
    d = csv("stats.csv", "a,b,label\n1,2,1\n3,4,1\n", -1, -1);
    CHECK(cf_dataset_target_stats(d, &s) == 0 && s.distinct == 1 && s.whole);
    cf_dataset_free(d);
    CHECK(cf_dataset_target_stats(NULL, &s) == -1);
    CHECK_HAS(cf_last_error(), "error: cf_dataset_target_stats: ");
}

TEST(from_arrays)
{
    float x[12], y[6] = {0, 1, 2, 1, 0, 4};
    for (int i = 0; i < 12; i++) x[i] = (float)i;
    cf_dataset *d = cf_dataset_from_arrays(x, CF_SHAPE(2), y, 1, 6);
    CHECK(d && cf_dataset_count(d) == 6 && cf_dataset_classes(d) == 5);
    CHECK(d && cf_dataset_x(d) != x && cf_dataset_x(d)[11] == 11);
    x[0] = 99;
    CHECK(d && cf_dataset_x(d)[0] == 0);
    CHECK(strcmp(cf_dataset_name(d), "arrays") == 0);
    cf_dataset_free(d);
    d = cf_dataset_from_arrays(x, CF_SHAPE(2), y, 2, 3);
    CHECK(d && cf_dataset_target_size(d) == 2 && cf_dataset_classes(d) == 0);
    cf_dataset_free(d);
    CHECK(cf_dataset_from_arrays(NULL, CF_SHAPE(2), y, 1, 6) == NULL);
    CHECK_HAS(cf_last_error(), "error: cf_dataset_from_arrays: x or y is NULL");
    CHECK(cf_dataset_from_arrays(x, CF_SHAPE(2), y, 1, 0) == NULL);
    CHECK_HAS(cf_last_error(), "no samples");
    CHECK(cf_dataset_from_arrays(x, CF_SCALAR, y, 1, 6) == NULL);
    CHECK_HAS(cf_last_error(), "1 to 5 dimensions, not 0");
    CHECK(cf_dataset_from_arrays(x, CF_SHAPE(1, 1, 1, 1, 1, 1), y, 1, 6) == NULL);
    CHECK(cf_dataset_from_arrays(x, CF_SHAPE(2, 0), y, 1, 6) == NULL);
    CHECK_HAS(cf_last_error(), "dimension 1 of the sample shape is 0");
    CHECK(cf_dataset_from_arrays(x, CF_SHAPE(2, -1), y, 1, 6) == NULL);
    CHECK(cf_dataset_from_arrays(x, CF_SHAPE(2), y, 0, 6) == NULL);
    CHECK_HAS(cf_last_error(), "ysize is 0");
    CHECK(cf_dataset_from_arrays(x, CF_SHAPE(1 << 20, 1 << 20), y, 1, 6) == NULL);
    CHECK_HAS(cf_last_error(), "limit");
    /* NULL datasets read as empty */
    CHECK(cf_dataset_count(NULL) == 0 && cf_dataset_x(NULL) == NULL && cf_dataset_classes(NULL) == 0);
    cf_dataset_free(NULL);
}

/* 100 samples, x[i] = (i, -i), y[i] = i % 7 */
static cf_dataset *hundred(void)
{
    float x[200], y[100];
    for (int i = 0; i < 100; i++) {
        x[2 * i] = (float)i;
        x[2 * i + 1] = (float)-i;
        y[i] = (float)(i % 7);
    }
    return cf_dataset_from_arrays(x, CF_SHAPE(2), y, 1, 100);
}

TEST(split)
{
    cf_dataset *d = hundred(), *tr, *va, *tr2, *va2;
    CHECK(cf_dataset_split(d, 0.2, 42, &tr, &va) == 0);
    CHECK(cf_dataset_count(tr) == 80 && cf_dataset_count(va) == 20);
    CHECK(cf_dataset_sample_shape(va).rank == 1 && cf_dataset_sample_shape(va).d[0] == 2);
    /* every sample lands in exactly one part, whole (x and y together); each part keeps the original order */
    int seen[100] = {0}, whole = 1, ordered = 1;
    const cf_dataset *parts[2] = {tr, va};
    for (int p = 0; p < 2; p++) {
        const float *x = cf_dataset_x(parts[p]), *y = cf_dataset_y(parts[p]);
        for (size_t i = 0; i < cf_dataset_count(parts[p]); i++) {
            int k = (int)x[2 * i];
            seen[k]++;
            whole &= x[2 * i + 1] == -k && y[i] == k % 7;
            if (i) ordered &= x[2 * i] > x[2 * (i - 1)];
        }
    }
    int once = 1;
    for (int i = 0; i < 100; i++) once &= seen[i] == 1;
    CHECK(once && whole && ordered);
    /* the same seed, the same split; another seed, another split */
    CHECK(cf_dataset_split(d, 0.2, 42, &tr2, &va2) == 0);
    CHECK(memcmp(cf_dataset_x(va), cf_dataset_x(va2), 40 * sizeof(float)) == 0);
    cf_dataset_free(tr2);
    cf_dataset_free(va2);
    CHECK(cf_dataset_split(d, 0.2, 43, &tr2, &va2) == 0);
    CHECK(memcmp(cf_dataset_x(va), cf_dataset_x(va2), 40 * sizeof(float)) != 0);
    CHECK(cf_dataset_classes(tr2) == 7);
    cf_dataset_free(tr2);
    cf_dataset_free(va2);
    cf_dataset_free(tr);
    cf_dataset_free(va);
    /* rounding: 0.125 of 100 is 12.5, which rounds to 13 */
    CHECK(cf_dataset_split(d, 0.125, 1, &tr, &va) == 0);
    CHECK(cf_dataset_count(tr) == 87 && cf_dataset_count(va) == 13);
    cf_dataset_free(tr);
    cf_dataset_free(va);
    /* a fraction of 0: no validation set, train is everything */
    CHECK(cf_dataset_split(d, 0, 1, &tr, &va) == 0);
    CHECK(cf_dataset_count(tr) == 100 && va == NULL);
    cf_dataset_free(tr);
    CHECK(cf_dataset_split(d, 1.0, 1, &tr, &va) != 0 && tr == NULL && va == NULL);
    CHECK_HAS(cf_last_error(), "error: arrays: the validation fraction is 1;");
    CHECK(cf_dataset_split(d, -0.1, 1, &tr, &va) != 0);
    CHECK(cf_dataset_split(d, NAN, 1, &tr, &va) != 0);
    CHECK(cf_dataset_split(d, 0.999, 1, &tr, &va) != 0);
    CHECK_HAS(cf_last_error(), "leaves none to train on");
    CHECK(cf_dataset_split(NULL, 0.1, 1, &tr, &va) != 0);
    cf_dataset_free(d);
}

TEST(inputs_alone)
{
    write_small_idx("in-images.gz", "in-labels", 1);
    cf_dataset *d = cf_dataset_load_inputs(tmp("in-images.gz"));
    CHECK(d && cf_dataset_count(d) == 3 && cf_dataset_sample_shape(d).rank == 2 && cf_dataset_sample_shape(d).d[1] == 3);
    CHECK(d && cf_dataset_x(d)[1] == 1.0f && cf_dataset_x(d)[2] == 51 / 255.0f);
    CHECK(d && cf_dataset_y(d)[0] == 0 && cf_dataset_y(d)[2] == 0 && cf_dataset_classes(d) == 0);
    CHECK_HAS(cf_dataset_name(d), "in-images.gz");
    cf_dataset_free(d);
    /* a CSV file: every column a feature, header detected */
    write_text("in.csv", "a,b,c\n1,2,3\n4,5,6\n");
    d = cf_dataset_load_inputs(tmp("in.csv"));
    CHECK(d && cf_dataset_count(d) == 2 && cf_dataset_sample_shape(d).d[0] == 3);
    CHECK(d && cf_dataset_x(d)[2] == 3 && cf_dataset_x(d)[5] == 6 && cf_dataset_y(d)[1] == 0);
    CHECK(d && cf_dataset_classes(d) == 0 && cf_dataset_target_size(d) == 1);
    cf_dataset_free(d);
    write_text("in1.csv", "0.5\n1.5\n");
    d = cf_dataset_load_inputs(tmp("in1.csv"));
    CHECK(d && cf_dataset_count(d) == 2 && cf_dataset_sample_shape(d).d[0] == 1 && cf_dataset_x(d)[1] == 1.5f);
    cf_dataset_free(d);
    /* wrong files */
    CHECK(cf_dataset_load_inputs(tmp("in-labels")) == NULL);
    CHECK_HAS(cf_last_error(), "in-labels: expected images");
    write_text("in-bad.csv", "1,2\n3\n");
    CHECK(cf_dataset_load_inputs(tmp("in-bad.csv")) == NULL);
    CHECK_HAS(cf_last_error(), "in-bad.csv:2: expected 2 fields (as on line 1) but found 1");
    write_text("in-empty.csv", "");
    CHECK(cf_dataset_load_inputs(tmp("in-empty.csv")) == NULL);
    CHECK_HAS(cf_last_error(), "in-empty.csv: no data rows");
    CHECK(cf_dataset_load_inputs(tmp("in-none")) == NULL);
    CHECK_HAS(cf_last_error(), "in-none: cannot open");
    CHECK(cf_dataset_load_inputs(NULL) == NULL);
}

TEST(fashion_mnist)
{
    /* not skipped when missing: `make test` installs it */
    const char *fm = "/usr/share/datasets/fashion-mnist";
    CHECK(access(fm, R_OK) == 0);
    if (access(fm, R_OK) != 0) {
        fprintf(stderr, "  %s is missing: apt-get install dataset-fashion-mnist (make test does)\n", fm);
        return;
    }
    unsetenv("CFLUX_DATA");
    cf_dataset *tr, *te;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = cf_data_open("fashion-mnist", -1, &tr, &te);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    CHECK(rc == 0);
    if (rc) {
        fprintf(stderr, "  %s\n", cf_last_error());
        return;
    }
    printf("note: Fashion-MNIST loaded in %.3f s\n", (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9);
    CHECK(cf_dataset_count(tr) == 60000 && cf_dataset_count(te) == 10000);
    cf_shape s = cf_dataset_sample_shape(tr);
    CHECK(s.rank == 2 && s.d[0] == 28 && s.d[1] == 28);
    CHECK(cf_dataset_classes(tr) == 10 && cf_dataset_classes(te) == 10);
    CHECK(cf_dataset_y(tr)[0] == 9);
    CHECK_HAS(cf_dataset_name(tr), "train-images-idx3-ubyte.gz");
    CHECK_HAS(cf_dataset_target_name(tr), "train-labels-idx1-ubyte.gz");
    const float *x = cf_dataset_x(tr);
    float lo = 1, hi = 0;
    for (size_t i = 0; i < 60000 * 784; i++) {
        if (x[i] < lo) lo = x[i];
        if (x[i] > hi) hi = x[i];
    }
    CHECK(lo == 0 && hi == 1);
    cf_dataset_free(tr);
    cf_dataset_free(te);
}

TEST(spec_forms)
{
    cf_dataset *tr = (cf_dataset *)1, *te = (cf_dataset *)1;
    /* fashion-mnist from $CFLUX_DATA, small fake files */
    char fdir[128];
    snprintf(fdir, sizeof fdir, "%s/fm", dir);
    mkdir(fdir, 0700);
    write_small_idx("fm/train-images-idx3-ubyte.gz", "fm/train-labels-idx1-ubyte.gz", 1);
    write_idx("fm/t10k-images-idx3-ubyte.gz", 3, (uint32_t[]){2, 2, 3}, pixels, 12, 1);
    setenv("CFLUX_DATA", fdir, 1);
    CHECK(cf_data_open("fashion-mnist", -1, &tr, &te) != 0 && tr == NULL && te == NULL);
    CHECK_HAS(cf_last_error(), "error: fashion-mnist: ");
    CHECK_HAS(cf_last_error(), "/fm/t10k-labels-idx1-ubyte.gz is missing (the directory comes from CFLUX_DATA=");
    write_idx("fm/t10k-labels-idx1-ubyte.gz", 1, (uint32_t[]){2}, labels3, 2, 1);
    CHECK(cf_data_open("fashion-mnist", -1, &tr, &te) == 0);
    CHECK(cf_dataset_count(tr) == 3 && cf_dataset_count(te) == 2);
    check_small(tr, "train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz");
    cf_dataset_free(tr);
    cf_dataset_free(te);
    /* with a slash at the end too */
    char slash[160];
    snprintf(slash, sizeof slash, "%s/", fdir);
    setenv("CFLUX_DATA", slash, 1);
    CHECK(cf_data_open("fashion-mnist", -1, &tr, &te) == 0);
    cf_dataset_free(tr);
    cf_dataset_free(te);
    unsetenv("CFLUX_DATA");

    /* idx: two or four files */
    char spec[1024];
    write_small_idx("s-images", "s-labels.gz", 0);
    snprintf(spec, sizeof spec, "idx:%s,%s", tmp("s-images"), tmp("s-labels.gz"));
    CHECK(cf_data_open(spec, -1, &tr, &te) == 0 && te == NULL);
    check_small(tr, "s-images", "s-labels.gz");
    cf_dataset_free(tr);
    snprintf(spec, sizeof spec, "idx:%s,%s,%s,%s", tmp("s-images"), tmp("s-labels.gz"), tmp("s-images"),
             tmp("s-labels.gz"));
    CHECK(cf_data_open(spec, -1, &tr, &te) == 0 && te != NULL);
    CHECK(cf_dataset_count(te) == 3);
    cf_dataset_free(tr);
    cf_dataset_free(te);
    /* a test set of another shape */
    write_idx("s-r2", 2, (uint32_t[]){3, 6}, pixels, 18, 0);
    snprintf(spec, sizeof spec, "idx:%s,%s,%s,%s", tmp("s-images"), tmp("s-labels.gz"), tmp("s-r2"),
             tmp("s-labels.gz"));
    CHECK(cf_data_open(spec, -1, &tr, &te) != 0 && tr == NULL && te == NULL);
    CHECK_HAS(cf_last_error(), "error: the test set does not match the training set: ");
    CHECK_HAS(cf_last_error(), "has samples of shape (6), ");
    CHECK_HAS(cf_last_error(), "has (2, 3)");
    /* an error in the test files leaves nothing behind */
    snprintf(spec, sizeof spec, "idx:%s,%s,%s,%s", tmp("s-images"), tmp("s-labels.gz"), tmp("s-images"),
             tmp("s-missing"));
    CHECK(cf_data_open(spec, -1, &tr, &te) != 0 && tr == NULL && te == NULL);
    CHECK_HAS(cf_last_error(), "s-missing: cannot open");

    /* csv: one or two files; the label column comes through, the header is detected */
    write_text("s-train.csv", "a,b,c\n1,2,0\n3,4,1\n5,6,1\n");
    write_text("s-test.csv", "0,7,8\n1,9,10\n");
    write_text("s-wide.csv", "0,7,8,9\n");
    snprintf(spec, sizeof spec, "csv:%s", tmp("s-train.csv"));
    CHECK(cf_data_open(spec, -1, &tr, &te) == 0 && te == NULL);
    CHECK(cf_dataset_count(tr) == 3 && cf_dataset_y(tr)[2] == 1);
    cf_dataset_free(tr);
    snprintf(spec, sizeof spec, "csv:%s,%s", tmp("s-train.csv"), tmp("s-test.csv"));
    CHECK(cf_data_open(spec, 0, &tr, &te) == 0);
    CHECK(cf_dataset_count(tr) == 3 && cf_dataset_count(te) == 2);
    CHECK(cf_dataset_y(tr)[1] == 3 && cf_dataset_y(te)[1] == 1 && cf_dataset_x(te)[0] == 7);
    cf_dataset_free(tr);
    cf_dataset_free(te);
    snprintf(spec, sizeof spec, "csv:%s,%s", tmp("s-train.csv"), tmp("s-wide.csv"));
    CHECK(cf_data_open(spec, -1, &tr, &te) != 0 && tr == NULL && te == NULL);
    CHECK_HAS(cf_last_error(), "s-wide.csv has samples of shape (3), ");

    /* forms that are wrong */
    const char *bad[] = {"idx:a", "idx:a,b,c", "idx:a,b,c,d,e", "idx:,b", "csv:", "csv:a,b,c", "csv:a,"};
    for (int i = 0; i < 7; i++) {
        tr = te = (cf_dataset *)1;
        CHECK(cf_data_open(bad[i], -1, &tr, &te) != 0 && tr == NULL && te == NULL);
        CHECK_HAS(cf_last_error(), "error: data spec '");
        CHECK_HAS(cf_last_error(), i < 4 ? "idx:TRAIN_IMAGES,TRAIN_LABELS[,TEST_IMAGES,TEST_LABELS]" : "csv:TRAIN[,TEST]");
    }
    CHECK(cf_data_open("mnist-ish", -1, &tr, &te) != 0);
    CHECK_HAS(cf_last_error(), "error: unknown data spec 'mnist-ish'; use fashion-mnist, idx:TRAIN_IMAGES,TRAIN_LABELS"
                               "[,TEST_IMAGES,TEST_LABELS], csv:TRAIN[,TEST], images:DIR[,TESTDIR] or text:FILE");
    CHECK(cf_data_open("data.csv", -1, &tr, &te) != 0);
    CHECK_HAS(cf_last_error(), "(a CSV file is written csv:PATH)");
    CHECK(cf_data_open("", -1, &tr, &te) != 0);
    CHECK_HAS(cf_last_error(), "unknown data spec ''");
    CHECK(cf_data_open(NULL, -1, &tr, &te) != 0);
    CHECK(cf_data_open("fashion-mnist", -1, NULL, &te) != 0);
}

/* cf_dataset_view_arrays reads the caller's memory in place and never frees it: the
 * same samples and classes as a copy, from the very pointers given; splits and fetches
 * of it are the copy's; the arrays are unchanged after the free. */
TEST(view_arrays)
{
    float x[6 * 2], y[6], x0[6 * 2];
    for (int i = 0; i < 12; i++) x[i] = x0[i] = (float)i * 0.5f;
    for (int i = 0; i < 6; i++) y[i] = (float)(i % 3);
    cf_dataset *v = cf_dataset_view_arrays(x, CF_SHAPE(2), y, 1, 6, "mine");
    cf_dataset *c = cf_dataset_from_arrays(x, CF_SHAPE(2), y, 1, 6);
    CHECK(v && c);
    if (!v || !c) return;
    CHECK(cf_dataset_x(v) == x && cf_dataset_y(v) == y);
    CHECK(cf_dataset_count(v) == 6 && cf_dataset_classes(v) == 3 && cf_dataset_classes(c) == 3);
    CHECK(!strcmp(cf_dataset_name(v), "mine"));
    cf_dataset *a, *b, *ca, *cb;
    CHECK(cf_dataset_split(v, 0.5, 7, &a, &b) == 0 && cf_dataset_split(c, 0.5, 7, &ca, &cb) == 0);
    CHECK(cf_dataset_count(a) == cf_dataset_count(ca));
    CHECK(!memcmp(cf_dataset_x(a), cf_dataset_x(ca), cf_dataset_count(a) * 2 * sizeof(float)));
    cf_dataset_free(a);
    cf_dataset_free(b);
    cf_dataset_free(ca);
    cf_dataset_free(cb);
    cf_dataset_free(v);
    cf_dataset_free(c);
    CHECK(!memcmp(x, x0, sizeof x));
    CHECK(cf_dataset_view_arrays(x, CF_SHAPE(2), NULL, 1, 6, NULL) == NULL);
    CHECK_HAS(cf_last_error(), "cf_dataset_view_arrays: x or y is NULL");
    CHECK(cf_dataset_view_arrays(x, CF_SHAPE(2), y, 1, 0, NULL) == NULL);
}

int main(void)
{
    if (tmpdir_make("data")) return 1;
    RUN(idx_round_trip_plain);
    RUN(idx_round_trip_gz);
    RUN(idx_other_ranks);
    RUN(idx_truncated);
    RUN(idx_bad_magic);
    RUN(idx_mismatched_lengths);
    RUN(idx_huge_claims);
    RUN(csv_header_or_not);
    RUN(csv_label_column);
    RUN(csv_bad_number);
    RUN(csv_ragged);
    RUN(csv_empty);
    RUN(csv_layout);
    RUN(csv_classes);
    RUN(csv_chunks);
    RUN(csv_long_lines);
    RUN(csv_columns);
    RUN(target_stats);
    RUN(from_arrays);
    RUN(split);
    RUN(inputs_alone);
    RUN(fashion_mnist);
    RUN(spec_forms);
    RUN(view_arrays);
    tmpdir_remove();
    return test_summary("data");
}
