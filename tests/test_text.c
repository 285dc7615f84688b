/* test_text.c - text data for character models: the vocabulary and the indices of a
 * small made-up text, the targets shifted by one, the held-out end, the stream order
 * in which cf_fit reads sequential data (seen in the executor's input after each
 * batch), the vocabulary's round trip through a checkpoint, and the errors. */
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "cflux.h"
#include "core/safetensors.h"
#include "data/data.h"
#include "test.h"
#include "tmpdir.h"
#include "train/trainer.h"

static void write_bytes(const char *name, const void *data, size_t len)
{
    FILE *f = fopen(tmp(name), "wb");
    fwrite(data, 1, len, f);
    fclose(f);
}

static void write_text(const char *name, const char *text) { write_bytes(name, text, strlen(text)); }

/* The index of byte c in a vocabulary. */
static int index_of(const unsigned char *v, int n, unsigned char c)
{
    for (int i = 0; i < n; i++)
        if (v[i] == c) return i;
    return -1;
}

TEST(vocab_and_indices)
{
    const char *text = "abracadabra, cab!";   /* 17 bytes */
    write_text("abra.txt", text);
    cf_dataset *tr, *te;
    CHECK(cf_dataset_load_text(tmp("abra.txt"), 3, 0, &tr, &te) == 0);
    if (!tr) return;
    CHECK(te == NULL);
    int n;
    const unsigned char *v = cf_dataset_vocab(tr, &n);
    /* distinct bytes, ascending: ' ', '!', ',', 'a', 'b', 'c', 'd', 'r' */
    CHECK(n == 8 && v && memcmp(v, " !,abcdr", 8) == 0);
    CHECK(cf_dataset_sequential(tr) == 1);
    CHECK(cf_dataset_count(tr) == 5);   /* (17 - 1) / 3 */
    CHECK(cf_dataset_sample_shape(tr).rank == 1 && cf_dataset_sample_shape(tr).d[0] == 3);
    CHECK(cf_dataset_target_size(tr) == 3);
    const float *x = cf_dataset_x(tr), *y = cf_dataset_y(tr);
    int ok = 1;
    for (int j = 0; j < 5; j++)
        for (int t = 0; t < 3; t++) {
            ok &= x[j * 3 + t] == (float)index_of(v, n, (unsigned char)text[j * 3 + t]);
            ok &= y[j * 3 + t] == (float)index_of(v, n, (unsigned char)text[j * 3 + t + 1]);   /* the shift */
        }
    CHECK(ok);
    /* by hand: "abr" -> "bra", indices a 3, b 4, r 7 */
    CHECK(x[0] == 3 && x[1] == 4 && x[2] == 7 && y[0] == 4 && y[1] == 7 && y[2] == 3);
    /* samples go on one from another: the last target of one is the first input of the next */
    CHECK(y[2] == x[3] && y[5] == x[6]);
    cf_dataset_free(tr);

    /* a gzip'd file reads the same */
    gzFile g = gzopen(tmp("abra.txt.gz"), "wb");
    gzwrite(g, text, (unsigned)strlen(text));
    gzclose(g);
    CHECK(cf_dataset_load_text(tmp("abra.txt.gz"), 3, 0, &tr, &te) == 0);
    CHECK(tr && cf_dataset_count(tr) == 5 && cf_dataset_x(tr)[2] == 7);
    cf_dataset_free(tr);

    /* every byte value, escapes and all */
    unsigned char all[512];
    for (int i = 0; i < 512; i++) all[i] = (unsigned char)(255 - i % 256);
    write_bytes("all.bin", all, sizeof all);
    CHECK(cf_dataset_load_text(tmp("all.bin"), 5, 0, &tr, &te) == 0);
    v = cf_dataset_vocab(tr, &n);
    CHECK(n == 256 && v && v[0] == 0 && v[255] == 255);
    CHECK(tr && cf_dataset_x(tr)[0] == 255 && cf_dataset_y(tr)[0] == 254);
    cf_dataset_free(tr);
}

TEST(held_out_end)
{
    char text[101];
    for (int i = 0; i < 100; i++) text[i] = (char)('a' + i % 7);
    text[100] = 0;
    text[95] = 'z';   /* only in the held-out end: still in the vocabulary */
    write_text("tail.txt", text);
    cf_dataset *tr, *te;
    CHECK(cf_data_open_ex("text:" "/nonexistent", 0, 4, &tr, &te) == -1);
    char spec[300];
    snprintf(spec, sizeof spec, "text:%s", tmp("tail.txt"));
    CHECK(cf_data_open_ex(spec, 0, 4, &tr, &te) == 0);
    if (!tr || !te) return;
    CHECK(cf_dataset_count(tr) == 22);   /* the first 90 characters: (90 - 1) / 4 */
    CHECK(cf_dataset_count(te) == 2);    /* the last 10: (10 - 1) / 4 */
    CHECK(cf_dataset_sequential(te) == 1);
    int n, nt;
    const unsigned char *v = cf_dataset_vocab(tr, &n), *vt = cf_dataset_vocab(te, &nt);
    CHECK(n == 8 && nt == 8 && memcmp(v, vt, 8) == 0 && v[7] == 'z');
    CHECK(cf_dataset_x(te)[0] == (float)index_of(v, n, (unsigned char)text[90]));
    CHECK(cf_dataset_x(te)[5] == 7);   /* text[95], 'z' */
    CHECK(cf_dataset_y(tr)[22 * 4 - 1] == (float)index_of(v, n, (unsigned char)text[88]));
    CHECK_HAS(cf_dataset_name(te), "tail.txt (held-out end)");

    /* a validation split of sequential data is its end, and keeps it sequential */
    cf_dataset *a, *b;
    CHECK(cf_dataset_split(tr, 0.25, 9, &a, &b) == 0);
    CHECK(a && b && cf_dataset_count(a) == 16 && cf_dataset_count(b) == 6);
    CHECK(a && b && cf_dataset_sequential(a) && cf_dataset_sequential(b));
    CHECK(b && memcmp(cf_dataset_x(b), cf_dataset_x(tr) + 16 * 4, 6 * 4 * sizeof(float)) == 0);
    CHECK(b && cf_dataset_vocab(b, &nt) && nt == 8);
    cf_dataset_free(a);
    cf_dataset_free(b);
    cf_dataset_free(tr);
    cf_dataset_free(te);

    /* a tail too short for one sequence: all of it trains */
    CHECK(cf_dataset_load_text(tmp("tail.txt"), 12, 0.1, &tr, &te) == 0);
    CHECK(tr && !te && cf_dataset_count(tr) == 8);   /* (100 - 1) / 12 */
    cf_dataset_free(tr);
}

TEST(errors)
{
    cf_dataset *tr = (cf_dataset *)1, *te = (cf_dataset *)1;
    CHECK(cf_dataset_load_text(tmp("missing.txt"), 4, 0.1, &tr, &te) == -1 && !tr && !te);
    CHECK_HAS(cf_last_error(), "missing.txt: cannot open: No such file or directory");
    write_text("empty.txt", "");
    CHECK(cf_dataset_load_text(tmp("empty.txt"), 4, 0.1, &tr, &te) == -1);
    CHECK_HAS(cf_last_error(), "empty.txt: the file is empty; text data needs at least 5 characters");
    write_text("short.txt", "abcd");
    CHECK(cf_dataset_load_text(tmp("short.txt"), 4, 0.1, &tr, &te) == -1);
    CHECK_HAS(cf_last_error(), "short.txt: the text has 4 characters, fewer than the 5 that one sequence of 4 takes");
    write_text("five.txt", "abcde");
    CHECK(cf_dataset_load_text(tmp("five.txt"), 4, 0.1, &tr, &te) == 0 && tr && cf_dataset_count(tr) == 1);
    cf_dataset_free(tr);
    CHECK(cf_dataset_load_text(tmp("five.txt"), 0, 0.1, &tr, &te) == -1);
    CHECK(cf_dataset_load_text(tmp("five.txt"), 4, 1, &tr, &te) == -1);
    char spec[300];
    snprintf(spec, sizeof spec, "text:%s", tmp("five.txt"));
    CHECK(cf_data_open(spec, 0, &tr, &te) == -1);
    CHECK_HAS(cf_last_error(), "text data takes its sequence length T from the model");
    CHECK(cf_data_open("text:", 0, &tr, &te) == -1);
    CHECK_HAS(cf_last_error(), "text: takes a file name");

    /* more characters than the model's classes; a model that is not a classifier */
    write_text("abc.txt", "abcdefabcdefabcdef");   /* 6 distinct */
    CHECK(cf_dataset_load_text(tmp("abc.txt"), 2, 0, &tr, &te) == 0);
    cf_model *m = cf_model_parse("model = Chain(Input(2), x -> reshape(x, 2, 1), Affine(5), softmax)\n", "c5.flux");
    cf_fit_opts o = cf_fit_defaults();
    o.batch = 2;
    CHECK(m && cf_trainer_new(m, tr, &o) == NULL);
    CHECK_HAS(cf_last_error(), "abc.txt: the text has 6 distinct characters but the model's output has 5 classes");
    cf_model_free(m);
    m = cf_model_parse("model = Chain(Input(2), x -> reshape(x, 2, 1), Affine(6))\n", "mse.flux");
    CHECK(m && cf_trainer_new(m, tr, &o) == NULL);
    CHECK_HAS(cf_last_error(), "text data trains a classifier of characters");
    cf_model_free(m);
    m = cf_model_parse("model = Chain(Input(2), Affine(6), softmax)\n", "flat.flux");
    CHECK(m && cf_trainer_new(m, tr, &o) == NULL);
    CHECK_HAS(cf_last_error(), "abc.txt: text data has a target for each of the 2 characters of a sequence, so the "
                               "model's output is (B, 2, classes); this one's is (B, 6)");
    cf_model_free(m);

    /* fewer sequences than a batch */
    m = cf_model_parse("model = Chain(Input(2), x -> reshape(x, 2, 1), Affine(6), softmax)\n", "c6.flux");
    o.batch = 16;
    cf_trainer *t = m ? cf_trainer_new(m, tr, &o) : NULL;
    CHECK(t && cf_fit(t, tr, NULL) == -1);
    CHECK_HAS(cf_last_error(), "the text makes 8 sequences of 2 characters to train on, fewer than the batch size 16");
    cf_trainer_free(t);
    cf_model_free(m);
    cf_dataset_free(tr);
}

/* ---- the order of batches ---- */

/* A text whose sample j (T = 2) starts with byte j + 1 and has 0 after it: with every
 * byte 0 .. N in it, index = byte, so x[0] of a row names its sample. */
#define N 50
static void write_numbered(const char *name)
{
    unsigned char b[2 * N + 1];
    for (int j = 0; j < N; j++) {
        b[2 * j] = (unsigned char)(j + 1);
        b[2 * j + 1] = 0;
    }
    b[2 * N] = 0;
    write_bytes(name, b, sizeof b);
}

typedef struct seen {
    cf_trainer *t;
    int batches, wrong, epochs, eval_wrong;
    size_t K, B, Ktest;
} seen;

/* Batch k (step k + 1) of every epoch: row i must be sample i*K + k. */
static void on_batch(int epoch, long step, long steps, double loss, double acc, double sps, void *user)
{
    (void)epoch, (void)loss, (void)acc, (void)sps;
    seen *s = user;
    const float *x = cf_exec_input(s->t->train.full, 0, NULL);
    s->batches++;
    if (steps != (long)s->K) s->wrong++;
    for (size_t i = 0; i < s->B; i++)
        if (x[i * 2] != (float)(i * s->K + (size_t)(step - 1) + 1)) s->wrong++;
}

/* After the evaluation of the test set, its last batch (K - 1) is in the executor. */
static int on_epoch(const cf_epoch_stats *st, void *user)
{
    (void)st;
    seen *s = user;
    const float *x = cf_exec_input(s->t->eval.full, 0, NULL);
    s->epochs++;
    for (size_t i = 0; i < s->B; i++)
        if (x[i * 2] != (float)(i * s->Ktest + s->Ktest - 1 + 1)) s->eval_wrong++;
    return 0;
}

TEST(stream_order)
{
    write_numbered("numbered.bin");
    cf_dataset *tr, *te;
    CHECK(cf_dataset_load_text(tmp("numbered.bin"), 2, 0, &tr, &te) == 0);
    if (!tr) return;
    CHECK(cf_dataset_count(tr) == N);
    for (int j = 0; j < N; j++) CHECK(cf_dataset_x(tr)[2 * j] == (float)(j + 1));
    /* a model that carries its state along the streams (one without reads windows) */
    cf_model *m = cf_model_parse("model = unroll(Chain(Input(), x -> reshape(x, 1), Affine(4), Recurrent(4), "
                                 "Affine(51), softmax), 2)\n", "c.flux");
    seen s = {0};
    s.B = 4;
    s.K = N / 4;       /* 12 batches; samples 48 and 49 left out */
    s.Ktest = N / 4;   /* the test set is the same text */
    cf_fit_opts o = cf_fit_defaults();
    o.batch = 4;
    o.epochs = 2;
    o.optim = cf_optim_defaults("adam");
    o.on_batch = on_batch;
    o.on_epoch = on_epoch;
    o.user = &s;
    s.t = cf_trainer_new(m, tr, &o);
    CHECK(s.t != NULL);
    if (!s.t) {
        fprintf(stderr, "%s\n", cf_last_error());
        cf_model_free(m);
        cf_dataset_free(tr);
        return;
    }
    CHECK(cf_fit(s.t, tr, tr) == 0);
    CHECK(s.batches == 24 && s.wrong == 0);
    CHECK(s.epochs == 2 && s.eval_wrong == 0);
    CHECK(s.t->eval.tail_batch == 0);   /* streams: whole batches only */
    const cf_epoch_stats *h;
    CHECK(cf_trainer_history(s.t, &h) == 2 && isfinite(h[1].test_loss));
    cf_trainer_free(s.t);
    cf_model_free(m);
    cf_dataset_free(tr);
}

/* A model that carries no state reads windows that start anywhere, drawn afresh each
 * epoch: each row is T consecutive characters of the text and its targets the next
 * ones; windows start on both the numbers and the zeros between them. Its test set is
 * read whole, not in whole batches of streams. */
typedef struct windows_seen {
    cf_trainer *t;
    int rows, bad, odd;
    unsigned long long sum[2];   /* of the first characters, per epoch */
} windows_seen;

static void on_window_batch(int epoch, long step, long steps, double loss, double acc, double sps, void *user)
{
    (void)step, (void)steps, (void)loss, (void)acc, (void)sps;
    windows_seen *s = user;
    const float *x = cf_exec_input(s->t->train.full, 0, NULL), *y = cf_exec_input(s->t->train.full, 1, NULL);
    for (int i = 0; i < 4; i++) {
        const float *r = x + 2 * i, *q = y + 2 * i;
        s->rows++;
        s->odd += r[0] == 0;
        s->sum[epoch - 1] += (unsigned long long)r[0];
        /* number j is followed by 0, and 0 by number j + 1 */
        int ok = q[0] == r[1] && (r[0] != 0 ? r[1] == 0 && (q[1] == r[0] + 1 || q[1] == 0)
                                            : r[1] != 0 && q[1] == 0);
        s->bad += !ok;
    }
}

TEST(windows_for_stateless_models)
{
    write_numbered("numbered.bin");
    cf_dataset *tr, *te;
    CHECK(cf_dataset_load_text(tmp("numbered.bin"), 2, 0, &tr, &te) == 0);
    if (!tr) return;
    cf_model *m = cf_model_parse("model = Chain(Input(2), x -> reshape(x, 2, 1), Affine(51), softmax)\n", "c.flux");
    windows_seen s = {0};
    cf_fit_opts o = cf_fit_defaults();
    o.batch = 4;
    o.epochs = 2;
    o.optim = cf_optim_defaults("adam");
    o.on_batch = on_window_batch;
    o.user = &s;
    s.t = cf_trainer_new(m, tr, &o);
    CHECK(s.t != NULL);
    if (s.t) {
        CHECK(cf_fit(s.t, tr, tr) == 0);
        CHECK(s.t->windows == 1);
        CHECK(s.rows == 2 * 48 && s.bad == 0);   /* 12 batches of 4 an epoch */
        CHECK(s.odd > 10 && s.odd < 2 * 48 - 10);
        CHECK(s.sum[0] != s.sum[1]);             /* each epoch its own windows */
        CHECK(s.t->eval.tail_batch == 2);        /* the test set whole: 12 batches of 4 and one of 2 */
        cf_trainer_free(s.t);
    }
    cf_model_free(m);
    cf_dataset_free(tr);
}

/* ---- checkpoints ---- */

TEST(vocab_in_checkpoints)
{
    /* bytes that need escaping: newline, backslash, quote, 0xff */
    const char text[] = "a\\b\"c\nd\xff" "a\\b\"c\nd\xff" "a\\b\"c\nd\xff" "a\\b\"c\nd\xff";
    write_bytes("esc.txt", text, sizeof text - 1);
    cf_dataset *tr, *te;
    CHECK(cf_dataset_load_text(tmp("esc.txt"), 3, 0, &tr, &te) == 0);
    if (!tr) return;
    const char *src = "model = Chain(Input(3), x -> reshape(x, 3, 1), Affine(12), softmax)\n";
    cf_model *m = cf_model_parse(src, "c.flux");
    cf_fit_opts o = cf_fit_defaults();
    o.batch = 2;
    o.epochs = 1;
    cf_trainer *t = cf_trainer_new(m, tr, &o);
    CHECK(t && cf_fit(t, tr, NULL) == 0 && cf_trainer_save(t, tmp("esc.ckpt")) == 0);
    unsigned char v[256];
    int n, nd;
    const unsigned char *dv = cf_dataset_vocab(tr, &nd);
    CHECK((n = cf_checkpoint_vocab(tmp("esc.ckpt"), v)) == 8);
    CHECK(n == nd && memcmp(v, dv, (size_t)nd) == 0);
    cf_st_file *f = cf_st_read(tmp("esc.ckpt"));
    CHECK(f && cf_st_meta(f, "text_vocab") && strcmp(cf_st_meta(f, "text_vocab"), "\\x0a\"\\\\abcd\\xff") == 0);
    cf_st_free(f);
    cf_trainer_free(t);
    cf_model_free(m);

    /* resumed on the same text: fine */
    m = cf_model_parse(src, "c.flux");
    o.epochs = 2;
    t = cf_trainer_new(m, tr, &o);
    CHECK(t && cf_trainer_load(t, tmp("esc.ckpt")) == 0);
    cf_trainer_free(t);
    cf_model_free(m);

    /* on another text */
    write_text("other.txt", "abcdefabcdefabcdefabcd");
    cf_dataset *tr2;
    CHECK(cf_dataset_load_text(tmp("other.txt"), 3, 0, &tr2, &te) == 0);
    m = cf_model_parse(src, "c.flux");
    t = cf_trainer_new(m, tr2, &o);
    CHECK(t && cf_trainer_load(t, tmp("esc.ckpt")) == -1);
    CHECK_HAS(cf_last_error(), "the checkpoint was trained on text of other characters (8 distinct, this text has 6; "
                               "class 0 is \\x0a there and 'a' here)");
    cf_trainer_free(t);
    cf_model_free(m);
    cf_dataset_free(tr2);

    /* on data that is not text */
    float x[6] = {0, 1, 2, 3, 4, 5}, y[6] = {1, 2, 3, 4, 5, 6};
    cf_dataset *arr = cf_dataset_from_arrays(x, (cf_shape){1, {3}}, y, 3, 2);
    m = cf_model_parse(src, "c.flux");
    t = cf_trainer_new(m, arr, &o);
    CHECK(t && cf_trainer_load(t, tmp("esc.ckpt")) == -1);
    CHECK_HAS(cf_last_error(), "the checkpoint's run was trained on text (8 distinct characters), and this data is "
                               "not text");
    CHECK(t && cf_fit(t, tr, NULL) == -1);   /* the trainer is for other data */
    CHECK_HAS(cf_last_error(), "text data, but the trainer was made for data that is not text");
    /* and the other way round: a checkpoint of that data, resumed on text */
    o.epochs = 1;
    cf_trainer_free(t);
    cf_model_free(m);
    m = cf_model_parse(src, "c.flux");
    t = cf_trainer_new(m, arr, &o);
    CHECK(t && cf_fit(t, arr, NULL) == 0 && cf_trainer_save(t, tmp("arr.ckpt")) == 0);
    CHECK(cf_checkpoint_vocab(tmp("arr.ckpt"), v) == 0);
    cf_trainer_free(t);
    cf_model_free(m);
    m = cf_model_parse(src, "c.flux");
    t = cf_trainer_new(m, tr, &o);
    CHECK(t && cf_trainer_load(t, tmp("arr.ckpt")) == -1);
    CHECK_HAS(cf_last_error(), "the checkpoint's run was not trained on text, and this one is");
    cf_trainer_free(t);
    cf_model_free(m);
    cf_dataset_free(arr);
    cf_dataset_free(tr);

    /* a malformed vocabulary: out of order, a bad escape, empty */
    float w = 0;
    cf_st_tensor ts = {.name = "w", .rank = 1, .shape = {1}, .count = 1, .data = &w};
    const char *keys[1] = {"text_vocab"};
    const char *bad[3] = {"ba", "a\\q", ""};
    for (int i = 0; i < 3; i++) {
        const char *vals[1] = {bad[i]};
        CHECK(cf_st_write(tmp("bad.st"), 1, &ts, 1, keys, vals) == 0);
        CHECK(cf_checkpoint_vocab(tmp("bad.st"), v) == -1);
        CHECK_HAS(cf_last_error(), "the checkpoint's 'text_vocab' is");
    }
    CHECK(cf_checkpoint_vocab(tmp("missing.ckpt"), v) == -1);
}

/* ---- corpora: folders and lists of files ---- */

/* The bytes of a text dataset's training part, its indices turned back into bytes
 * (sample j's x and the last target: the whole text read, when T divides it). */
static int text_of(const cf_dataset *d, char *out, size_t size)
{
    int nv;
    const unsigned char *v = cf_dataset_vocab(d, &nv);
    size_t T = (size_t)cf_dataset_sample_shape(d).d[0], n = cf_dataset_count(d), k = 0;
    const float *x = cf_dataset_x(d), *y = cf_dataset_y(d);
    for (size_t i = 0; i < n * T && k + 2 < size; i++) out[k++] = (char)v[(int)x[i]];
    if (n && k + 1 < size) out[k++] = (char)v[(int)y[n * T - 1]];
    out[k] = 0;
    return (int)k;
}

TEST(corpus_of_a_folder)
{
    CHECK(mkdir(tmp("corpus"), 0755) == 0);
    CHECK(mkdir(tmp("corpus/sub"), 0755) == 0);
    CHECK(mkdir(tmp("corpus/.git"), 0755) == 0);
    write_text("corpus/b.txt", "bbb");
    write_text("corpus/a.txt", "aa");
    write_text("corpus/sub/c", "cccc");
    write_text("corpus/.hidden", "HHHH");
    write_text("corpus/.git/x", "XXXX");
    write_text("outside.txt", "oo");
    CHECK(symlink("../outside.txt", tmp("corpus/y-link")) == 0);   /* a link to a file: read through it */
    CHECK(symlink("a.txt", tmp("corpus/z-link")) == 0);            /* a.txt again: read once */
    write_bytes("corpus/b.dat", "\0\0\2%", 4);                   /* an index, not text */
    cf_dataset *tr, *te;
    /* sorted by path: a.txt, b.txt, sub/c, y-link; each end marked */
    CHECK(cf_dataset_load_text(tmp("corpus"), 1, 0, &tr, &te) == 0);
    if (!tr) return;
    char got[64];
    text_of(tr, got, sizeof got);
    CHECK(strcmp(got, "aa\x1e" "bbb\x1e" "cccc\x1e" "oo\x1e") == 0);
    int n;
    const unsigned char *v = cf_dataset_vocab(tr, &n);
    CHECK(n == 5 && v[0] == CF_TEXT_FILE_END && memcmp(v + 1, "abco", 4) == 0);
    CHECK_HAS(cf_dataset_about(tr), "4 files, 15 characters, each file's end marked by the byte 0x1e; passed over: 1 "
                                    "read already (links to a file before them), 1 not text (a NUL byte)");
    CHECK(te == NULL);
    cf_dataset_free(tr);

    /* the held-out end: the last half of each file, rounded down (1, 2, 2 and 1
       characters), one after another; the files' first parts train */
    CHECK(cf_dataset_load_text(tmp("corpus"), 1, 0.5, &tr, &te) == 0);
    CHECK(te && cf_dataset_count(te) == 5 && cf_dataset_count(tr) == 8);
    if (te) {
        CHECK_HAS(cf_dataset_about(te), "the last 50% of each file, 6 characters in all");
        text_of(te, got, sizeof got);
        CHECK(strcmp(got, "\x1e" "b\x1e" "c\x1e" "\x1e") == 0);
        text_of(tr, got, sizeof got);
        CHECK(strcmp(got, "aa" "bb" "ccc" "oo") == 0);
    }
    cf_dataset_free(tr);
    cf_dataset_free(te);
    CHECK(cf_dataset_load_text(tmp("corpus"), 4, 0.3, &tr, &te) == 0);   /* tails of 2 in all: fewer than T + 1 */
    CHECK(tr && te == NULL && cf_dataset_count(tr) == 3);
    cf_dataset_free(tr);

    /* the spec, with a slash at the end too */
    char spec[300];
    snprintf(spec, sizeof spec, "text:%s/", tmp("corpus"));
    CHECK(cf_data_open_ex(spec, 0, 1, &tr, &te) == 0 && tr && cf_dataset_count(tr) == 14);
    cf_dataset_free(tr);
    cf_dataset_free(te);

    /* the vocabulary, end marker and all, goes into a checkpoint */
    CHECK(cf_dataset_load_text(tmp("corpus"), 1, 0, &tr, &te) == 0);
    cf_model *m = cf_model_parse("model = Chain(Input(1), x -> reshape(x, 1, 1), Affine(5), softmax)\n", "c.flux");
    cf_fit_opts o = cf_fit_defaults();
    o.batch = 2;
    o.epochs = 1;
    cf_trainer *t = m ? cf_trainer_new(m, tr, &o) : NULL;
    CHECK(t && cf_fit(t, tr, NULL) == 0 && cf_trainer_save(t, tmp("corpus.ckpt")) == 0);
    unsigned char cv[256];
    CHECK(cf_checkpoint_vocab(tmp("corpus.ckpt"), cv) == 5 && cv[0] == CF_TEXT_FILE_END);
    cf_st_file *f = cf_st_read(tmp("corpus.ckpt"));
    CHECK(f && cf_st_meta(f, "text_vocab") && strcmp(cf_st_meta(f, "text_vocab"), "\\x1eabco") == 0);
    cf_st_free(f);
    cf_trainer_free(t);
    cf_model_free(m);
    cf_dataset_free(tr);
}

TEST(corpus_of_a_list)
{
    write_text("one.txt", "11");
    write_text("two.txt", "222");
    write_text("with,comma.txt", "abcdef");
    char spec[1024];
    cf_dataset *tr, *te;
    /* in the order given */
    snprintf(spec, sizeof spec, "%s,%s", tmp("two.txt"), tmp("one.txt"));
    CHECK(cf_dataset_load_text(spec, 1, 0, &tr, &te) == 0);
    char got[64] = "";
    if (tr) text_of(tr, got, sizeof got);
    CHECK(strcmp(got, "222\x1e" "11\x1e") == 0);
    cf_dataset_free(tr);
    /* a folder in the list */
    snprintf(spec, sizeof spec, "text:%s,%s", tmp("one.txt"), tmp("corpus/sub"));
    CHECK(cf_data_open_ex(spec, 0, 1, &tr, &te) == 0);
    if (tr) text_of(tr, got, sizeof got);
    CHECK(strcmp(got, "11\x1e" "cccc\x1e") == 0);
    cf_dataset_free(tr);
    /* a file whose name holds a comma and exists is that file, alone and unmarked */
    snprintf(spec, sizeof spec, "text:%s", tmp("with,comma.txt"));
    CHECK(cf_data_open_ex(spec, 0, 1, &tr, &te) == 0);
    if (tr) text_of(tr, got, sizeof got);
    CHECK(strcmp(got, "abcdef") == 0 && cf_dataset_about(tr) == NULL);
    cf_dataset_free(tr);
    /* one missing: named */
    snprintf(spec, sizeof spec, "%s,%s", tmp("one.txt"), tmp("three.txt"));
    CHECK(cf_dataset_load_text(spec, 1, 0, &tr, &te) == -1 && !tr);
    CHECK_HAS(cf_last_error(), "three.txt: cannot open: No such file or directory");
    snprintf(spec, sizeof spec, "%s,", tmp("one.txt"));
    CHECK(cf_dataset_load_text(spec, 1, 0, &tr, &te) == -1);
    CHECK_HAS(cf_last_error(), "an empty name in the list of files");
}

TEST(corpus_errors)
{
    cf_dataset *tr = (cf_dataset *)1, *te = (cf_dataset *)1;
    CHECK(mkdir(tmp("empty"), 0755) == 0);
    CHECK(cf_dataset_load_text(tmp("empty"), 4, 0.1, &tr, &te) == -1 && !tr && !te);
    CHECK_HAS(cf_last_error(), "empty: the folder is empty: text data needs a file of text in it");
    CHECK(mkdir(tmp("nofile"), 0755) == 0);
    CHECK(mkdir(tmp("nofile/sub"), 0755) == 0);
    write_text("nofile/.hidden", "abc");
    CHECK(mkfifo(tmp("nofile/sub/fifo"), 0644) == 0);
    CHECK(cf_dataset_load_text(tmp("nofile"), 4, 0.1, &tr, &te) == -1);
    CHECK_HAS(cf_last_error(), "nofile: the folder holds no file to read (passed over: 1 hidden, 1 not regular files)");
    CHECK(mkdir(tmp("binary"), 0755) == 0);
    write_bytes("binary/a.dat", "\0\1", 2);
    write_bytes("binary/b.dat", "ab\0", 3);
    CHECK(cf_dataset_load_text(tmp("binary"), 4, 0.1, &tr, &te) == -1 && !tr && !te);
    CHECK_HAS(cf_last_error(), "binary: no file of text: the 2 files read all hold NUL bytes");
    /* a link to nothing, named */
    CHECK(mkdir(tmp("broken"), 0755) == 0);
    write_text("broken/a.txt", "abcdefgh");
    CHECK(symlink("gone.txt", tmp("broken/b.txt")) == 0);
    CHECK(cf_dataset_load_text(tmp("broken"), 4, 0.1, &tr, &te) == -1);
    CHECK_HAS(cf_last_error(), "broken/b.txt: cannot open: No such file or directory (a symbolic link to nothing)");
    /* a loop of links */
    CHECK(mkdir(tmp("loop"), 0755) == 0);
    CHECK(mkdir(tmp("loop/in"), 0755) == 0);
    write_text("loop/in/a.txt", "abcdefgh");
    CHECK(symlink("..", tmp("loop/in/up")) == 0);
    CHECK(cf_dataset_load_text(tmp("loop"), 4, 0.1, &tr, &te) == -1);
    CHECK_HAS(cf_last_error(), "loop/in/up: a loop of symbolic links: it is the folder ");
    /* a file that cannot be read (as root every file can: a folder without x stands in) */
    CHECK(mkdir(tmp("locked"), 0755) == 0);
    write_text("locked/a.txt", "abcdefgh");
    if (geteuid() != 0) {
        CHECK(chmod(tmp("locked/a.txt"), 0) == 0);
        CHECK(cf_dataset_load_text(tmp("locked"), 4, 0.1, &tr, &te) == -1);
        CHECK_HAS(cf_last_error(), "locked/a.txt: cannot open: Permission denied");
        chmod(tmp("locked/a.txt"), 0644);
    }
    /* a corpus too short for one sequence: the marked text's length */
    CHECK(mkdir(tmp("short"), 0755) == 0);
    write_text("short/a", "ab");
    CHECK(cf_dataset_load_text(tmp("short"), 4, 0, &tr, &te) == -1);
    CHECK_HAS(cf_last_error(), "short: the text has 3 characters, fewer than the 5 that one sequence of 4 takes");
}

int main(void)
{
    if (tmpdir_make("text")) return 1;
    RUN(vocab_and_indices);
    RUN(held_out_end);
    RUN(errors);
    RUN(stream_order);
    RUN(windows_for_stateless_models);
    RUN(vocab_in_checkpoints);
    RUN(corpus_of_a_folder);
    RUN(corpus_of_a_list);
    RUN(corpus_errors);
    tmpdir_remove();
    return test_summary("text");
}
