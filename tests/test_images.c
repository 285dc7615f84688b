/* test_images.c - image folders (images:DIR[,TESTDIR]) as streamed datasets.
 *
 * The one that matters: Fashion-MNIST samples written as a folder of class folders
 * (grey PNGs, RGB PNGs of the grey repeated, 56x56 PNGs of each pixel 2x2, JPEGs at
 * quality 100) train models/cnn.flux as the same samples read from IDX do: the same
 * class order, test accuracies within 0.5 points. A streamed folder trains bit for bit
 * as its images held in memory, at 1 and 2 threads, with a validation split. And the
 * hostile folders: a link loop, an empty class folder, no class folders, a class the
 * training data lacks, a file that is no image, a file corrupt past its header (an
 * error when training reaches it, naming it), skip_bad counting what it skipped. And
 * --normalize's statistics per channel. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cflux.h"
#include "data/jpeg.h"
#include "data/png.h"
#include "test.h"
#include "tmpdir.h"

#ifdef CFLUX_TEST_SANITIZED
#define NTRAIN 400   /* the sanitizers are slower: fewer images, the same cases */
#define NTEST 300
#else
#define NTRAIN 600
#define NTEST 400
#endif

static void mkdirs(const char *path)
{
    char p[512];
    snprintf(p, sizeof p, "%s", path);
    for (char *s = p + 1; *s; s++)
        if (*s == '/') {
            *s = 0;
            mkdir(p, 0755);
            *s = '/';
        }
    mkdir(p, 0755);
}

static void put(const char *path, const unsigned char *b, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(b, 1, n, f) != n || fclose(f)) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(1);
    }
}

/* Sample px (784 bytes) as file `name` (no extension) in kind k: 0 grey PNG, 1 RGB PNG,
 * 2 grey 56x56 PNG (2x2 blocks), 3 grey JPEG quality 100. */
static void write_sample(const char *name, const unsigned char *px, int k)
{
    unsigned char big[56 * 56 * 3], *out = NULL;
    size_t len = 0;
    char path[512];
    int rc;
    if (k == 1) {
        for (int i = 0; i < 784; i++) big[3 * i] = big[3 * i + 1] = big[3 * i + 2] = px[i];
        rc = cf_png_encode(big, 28, 28, 3, &out, &len);
    } else if (k == 2) {
        for (int y = 0; y < 56; y++)
            for (int x = 0; x < 56; x++) big[y * 56 + x] = px[(y / 2) * 28 + x / 2];
        rc = cf_png_encode(big, 56, 56, 1, &out, &len);
    } else if (k == 3) {
        rc = cf_jpeg_encode(px, 28, 28, 1, 100, 0, &out, &len);
    } else {
        rc = cf_png_encode(px, 28, 28, 1, &out, &len);
    }
    if (rc) {
        fprintf(stderr, "cannot encode %s: %s\n", name, cf_last_error());
        exit(1);
    }
    snprintf(path, sizeof path, "%s.%s", name, k == 3 ? "JPG" : "png");
    put(path, out, len);
    free(out);
}

/* The first n samples of an IDX pair as bytes and labels. */
static int read_idx(const char *images, const char *labels, size_t n, unsigned char *px, int *lab)
{
    cf_dataset *d = cf_dataset_load_idx(images, labels);
    if (!d) return -1;
    const float *x = cf_dataset_x(d), *y = cf_dataset_y(d);
    for (size_t i = 0; i < n * 784; i++) px[i] = (unsigned char)(x[i] * 255.0f + 0.5f);
    for (size_t i = 0; i < n; i++) lab[i] = (int)y[i];
    cf_dataset_free(d);
    return 0;
}

#define FM "/usr/share/datasets/fashion-mnist/"
static unsigned char trpx[NTRAIN * 784], tepx[NTEST * 784];
static int trlab[NTRAIN], telab[NTEST];
static int have_fm;

/* root/train and root/test: class folders c0 .. c9 (some in a subfolder), sample i as
 * %05d in kind kinds(i). */
static void make_folder(const char *root, int jpeg)
{
    for (int part = 0; part < 2; part++) {
        size_t n = part ? NTEST : NTRAIN;
        for (size_t i = 0; i < n; i++) {
            int y = part ? telab[i] : trlab[i];
            char d[400], name[480];
            snprintf(d, sizeof d, "%s/%s/c%d%s", root, part ? "test" : "train", y, i % 5 == 4 ? "/more" : "");
            mkdirs(d);
            snprintf(name, sizeof name, "%s/%05zu", d, i);
            int k = (int)(i % 4);
            if (k == 3 && !jpeg) k = 0;
            write_sample(name, (part ? tepx : trpx) + i * 784, k);
        }
    }
}

/* The samples of an IDX pair in the folder's order: by class, then by number. */
static cf_dataset *idx_in_folder_order(const unsigned char *px, const int *lab, size_t n)
{
    float *x = malloc(n * 784 * sizeof *x), *y = malloc(n * sizeof *y);
    size_t k = 0;
    for (int c = 0; c < 10; c++) {
        /* within a class folder: the files at its top first, then those of more/ */
        for (int sub = 0; sub < 2; sub++)
            for (size_t i = 0; i < n; i++) {
                if (lab[i] != c || (i % 5 == 4) != sub) continue;
                for (int j = 0; j < 784; j++) x[k * 784 + j] = (float)px[i * 784 + j] / 255.0f;
                y[k++] = (float)c;
            }
    }
    cf_dataset *d = cf_dataset_from_arrays(x, (cf_shape){3, {1, 28, 28}}, y, 1, n);
    free(x);
    free(y);
    return d;
}

/* Train a fresh cnn.flux (seed 7) on train, test on test: the last test accuracy, and
 * the weights saved to params (NULL: not). -1 on failure (the message printed). */
static double train_cnn(const cf_dataset *train, const cf_dataset *test, int epochs, double val, const char *params)
{
    cf_model *m = cf_model_load("models/cnn.flux");
    if (!m) return fprintf(stderr, "  %s\n", cf_last_error()), -1;
    cf_model_set_seed(m, 7);
    cf_fit_opts o = cf_fit_defaults();
    o.epochs = epochs;
    o.batch = 32;
    o.optim = cf_optim_defaults("adam");
    o.seed = 11;
    o.val_fraction = val;
    cf_trainer *t = cf_trainer_new(m, train, &o);
    double acc = -1;
    if (t && cf_fit(t, train, test) == 0) {
        const cf_epoch_stats *h;
        int nh = cf_trainer_history(t, &h);
        acc = h[nh - 1].test_accuracy;
        if (params && cf_model_save_params(m, params)) acc = -1;
    }
    if (acc < 0) fprintf(stderr, "  %s\n", cf_last_error());
    cf_trainer_free(t);
    cf_model_free(m);
    return acc;
}

static cf_data_opts image_opts(void)
{
    cf_data_opts o = cf_data_defaults();
    o.image = (cf_shape){3, {1, 28, 28}};
    return o;
}

static int same_file(const char *a, const char *b)
{
    FILE *f = fopen(a, "rb"), *g = fopen(b, "rb");
    int same = f && g;
    while (same) {
        int x = fgetc(f), y = fgetc(g);
        same = x == y;
        if (x == EOF) break;
    }
    if (f) fclose(f);
    if (g) fclose(g);
    return same;
}

/* The Fashion-MNIST folder tmp(name) as images:DIR/train,DIR/test (made first, with
 * JPEGs among its PNGs when jpeg, unless make is 0: made by an earlier test). 0, or
 * -1 with the error printed. */
static int open_fm(const char *name, int make, int jpeg, int stream_only, cf_dataset **tr, cf_dataset **te)
{
    char root[300], spec[700];
    snprintf(root, sizeof root, "%s", tmp(name));
    if (make) make_folder(root, jpeg);
    snprintf(spec, sizeof spec, "images:%s/train,%s/test", root, root);
    cf_data_opts o = image_opts();
    o.stream_only = stream_only;
    if (cf_data_open_opts(spec, &o, tr, te) == 0) return 0;
    fprintf(stderr, "  %s\n", cf_last_error());
    return -1;
}

TEST(folder_trains_as_idx)
{
    CHECK(have_fm);
    if (!have_fm) return;
    cf_dataset *tr, *te;
    CHECK(open_fm("fm", 1, 1, 0, &tr, &te) == 0);
    if (!tr || !te) return;
    CHECK(cf_dataset_streamed(tr) && cf_dataset_streamed(te));
    CHECK(cf_dataset_x(tr) == NULL);
    CHECK(cf_dataset_count(tr) == NTRAIN && cf_dataset_count(te) == NTEST);
    const char *const *names;
    CHECK(cf_dataset_class_names(tr, &names) == 10);
    int order_ok = 1;
    for (int c = 0; c < 10; c++) {
        char want[8];
        snprintf(want, sizeof want, "c%d", c);
        order_ok &= !strcmp(names[c], want);
    }
    CHECK(order_ok);
    cf_dataset *itr = idx_in_folder_order(trpx, trlab, NTRAIN), *ite = idx_in_folder_order(tepx, telab, NTEST);
    int labels_ok = 1;   /* the class order: the folder's labels are the IDX file's */
    for (size_t i = 0; i < NTRAIN; i++) labels_ok &= cf_dataset_y(tr)[i] == cf_dataset_y(itr)[i];
    CHECK(labels_ok);
    double a = train_cnn(tr, te, 3, 0, NULL), b = train_cnn(itr, ite, 3, 0, NULL);
    printf("note: test accuracy from the folder %.4f, from IDX %.4f (%d train, %d test images)\n", a, b, NTRAIN, NTEST);
    CHECK(a > 0.3 && b > 0.3);   /* it learned */
    CHECK_NEAR(a, b, 0.005);
    cf_dataset_free(tr);
    cf_dataset_free(te);
    cf_dataset_free(itr);
    cf_dataset_free(ite);
    CHECK(cf_memory_in_use() == 0);
}

TEST(streamed_is_memory_bitwise)
{
    CHECK(have_fm);
    if (!have_fm) return;
    cf_dataset *tr, *te;
    CHECK(open_fm("fm", 0, 0, 0, &tr, &te) == 0);   /* made by folder_trains_as_idx */
    if (!tr) return;
    size_t n = cf_dataset_count(tr), nt = cf_dataset_count(te);
    float *x = malloc(n * 784 * sizeof *x), *xt = malloc(nt * 784 * sizeof *xt);
    CHECK(cf_dataset_read(tr, 0, n, x) == 0 && cf_dataset_read(te, 0, nt, xt) == 0);
    cf_dataset *mtr = cf_dataset_from_arrays(x, (cf_shape){3, {1, 28, 28}}, cf_dataset_y(tr), 1, n);
    cf_dataset *mte = cf_dataset_from_arrays(xt, (cf_shape){3, {1, 28, 28}}, cf_dataset_y(te), 1, nt);
    free(x);
    free(xt);
    cf_set_threads(1);
    double a = train_cnn(tr, te, 2, 0.2, tmp("s1.st"));
    cf_set_threads(2);
    double b = train_cnn(tr, te, 2, 0.2, tmp("s2.st"));
    double c = train_cnn(mtr, mte, 2, 0.2, tmp("m2.st"));
    CHECK(a >= 0 && b >= 0 && c >= 0);
    CHECK(a == b && b == c);
    CHECK(same_file(tmp("s1.st"), tmp("s2.st")));   /* the same weights at 1 and 2 threads */
    CHECK(same_file(tmp("s2.st"), tmp("m2.st")));   /* and as in memory */
    cf_set_threads(0);
    cf_dataset_free(tr);
    cf_dataset_free(te);
    cf_dataset_free(mtr);
    cf_dataset_free(mte);
    CHECK(cf_memory_in_use() == 0);
}

static size_t peak_in_use;
static void note_memory(int epoch, long step, long steps, double loss, double acc, double sps, void *user)
{
    (void)epoch, (void)step, (void)steps, (void)loss, (void)acc, (void)sps, (void)user;
    if (cf_memory_in_use() > peak_in_use) peak_in_use = cf_memory_in_use();
}

/* What cf_fit's memory grows by, at its batches' ends, on train (tested on test). */
static size_t fit_growth(const cf_dataset *train, const cf_dataset *test)
{
    size_t base = cf_memory_in_use();
    cf_model *m = cf_model_load("models/cnn.flux");
    cf_fit_opts o = cf_fit_defaults();
    o.epochs = 1;
    o.batch = 32;
    o.on_batch = note_memory;
    cf_trainer *t = m ? cf_trainer_new(m, train, &o) : NULL;
    size_t before = cf_memory_in_use();
    peak_in_use = 0;
    int rc = t ? cf_fit(t, train, test) : -1;
    cf_trainer_free(t);
    cf_model_free(m);
    CHECK(rc == 0 && cf_memory_in_use() == base);   /* the queues are gone once their plans are read */
    return peak_in_use - before;
}

/* A streamed folder holds no more than its queue besides what training holds anyway:
 * 4 batches of 32 images (401,408 bytes), and what decoding one PNG takes (PNGs only:
 * a JPEG's decoding reserves about 1 MB, as much as the pixels of 340 images here). */
TEST(streamed_memory_is_the_queue)
{
    CHECK(have_fm);
    if (!have_fm) return;
    cf_dataset *tr, *te;
    CHECK(open_fm("png", 1, 0, 1, &tr, &te) == 0);   /* stream_only: no images kept decoded, the queue alone */
    if (!tr) return;
    cf_dataset *itr = idx_in_folder_order(trpx, trlab, NTRAIN), *ite = idx_in_folder_order(tepx, telab, NTEST);
    size_t streamed = fit_growth(tr, te), held = fit_growth(itr, ite), queue = 4 * 32 * 784 * sizeof(float);
    printf("note: cf_fit grows by %zu bytes streamed, %zu in memory; the queue is %zu\n", streamed, held, queue);
    CHECK(streamed > held && streamed - held <= queue + (64 << 10));
    cf_dataset_free(tr);
    cf_dataset_free(te);
    cf_dataset_free(itr);
    cf_dataset_free(ite);
    CHECK(cf_memory_in_use() == 0);
}

/* A folder that fits is decoded once: its pixels are kept, a byte each (as much memory
 * as that and no more), and a second run reads no file (they are gone by then) and
 * trains to the same weights as the images in memory. */
TEST(a_folder_that_fits_is_decoded_once)
{
    CHECK(have_fm);
    if (!have_fm) return;
    char cmd[800];
    cf_dataset *tr, *te;
    CHECK(open_fm("kept", 1, 0, 0, &tr, &te) == 0);
    if (!tr) return;
    size_t base = cf_memory_in_use();
    double a = train_cnn(tr, te, 1, 0, tmp("k1.st"));
    size_t kept = cf_memory_in_use() - base;
    CHECK(kept == (NTRAIN + NTEST) * 784);
    snprintf(cmd, sizeof cmd, "rm -r '%s'", tmp("kept"));
    CHECK(system(cmd) == 0);
    double b = train_cnn(tr, te, 1, 0, tmp("k2.st"));
    cf_dataset *itr = idx_in_folder_order(trpx, trlab, NTRAIN), *ite = idx_in_folder_order(tepx, telab, NTEST);
    double c = train_cnn(itr, ite, 1, 0, tmp("k3.st"));
    CHECK(a >= 0 && a == b && b == c);
    CHECK(same_file(tmp("k1.st"), tmp("k2.st")) && same_file(tmp("k2.st"), tmp("k3.st")));
    cf_dataset_free(tr);
    cf_dataset_free(te);
    cf_dataset_free(itr);
    cf_dataset_free(ite);
    CHECK(cf_memory_in_use() == 0);
}

/* A small folder: two classes, a and b, of three grey PNGs each. */
static void small_folder(const char *root)
{
    unsigned char px[784];
    for (int c = 0; c < 2; c++)
        for (int i = 0; i < 3; i++) {
            char d[400], name[480];
            snprintf(d, sizeof d, "%s/%c", root, "ab"[c]);
            mkdirs(d);
            for (int j = 0; j < 784; j++) px[j] = (unsigned char)(j * (c + 1) + i);
            snprintf(name, sizeof name, "%s/%d", d, i);
            write_sample(name, px, 0);
        }
}

/* cf_data_open_opts on spec fails with a message holding want. */
static void refused(const char *spec, const cf_data_opts *o, const char *want)
{
    cf_dataset *tr = NULL, *te = NULL;
    CHECK(cf_data_open_opts(spec, o, &tr, &te) == -1);
    CHECK(!tr && !te);
    CHECK_HAS(cf_last_error(), want);
}

TEST(hostile_folders)
{
    char root[300], spec[700], p[700], q[700];
    cf_data_opts o = image_opts();
    snprintf(root, sizeof root, "%s", tmp("h"));
    small_folder(root);
    /* a link loop: b/loop -> .. (the root) */
    snprintf(p, sizeof p, "%s/b/loop", root);
    CHECK(symlink("..", p) == 0);
    snprintf(spec, sizeof spec, "images:%s", root);
    refused(spec, &o, "b/loop: a folder read already (a link loop");
    unlink(p);
    /* an empty class folder, named */
    snprintf(p, sizeof p, "%s/c", root);
    mkdirs(p);
    refused(spec, &o, "/c: the class folder holds no images");
    rmdir(p);
    /* no class folders */
    snprintf(p, sizeof p, "%s/none", tmp("h2"));
    mkdirs(p);
    snprintf(q, sizeof q, "images:%s", tmp("h2/none"));
    refused(q, &o, "no class folders");
    /* a test folder with a class the training data lacks */
    snprintf(p, sizeof p, "%s/zz", tmp("h2/none"));
    mkdirs(p);
    snprintf(q, sizeof q, "%s/zz/x.png", tmp("h2/none"));
    put(q, (const unsigned char *)"x", 1);
    snprintf(q, sizeof q, "images:%s,%s", root, tmp("h2/none"));
    refused(q, &o, "the class folder 'zz' is not one of the 2 classes of");
    /* eval: folders map to the model's classes by name */
    const char *known[3] = {"z", "b", "a"};
    cf_data_opts ok = o;
    ok.class_names = known;
    ok.nclass_names = 3;
    cf_dataset *tr, *te;
    CHECK(cf_data_open_opts(spec, &ok, &tr, &te) == 0);
    CHECK(tr && cf_dataset_y(tr)[0] == 2 && cf_dataset_y(tr)[5] == 1 && cf_dataset_classes(tr) == 3);
    cf_dataset_free(tr);
    /* hidden and other files are passed over and counted */
    snprintf(p, sizeof p, "%s/a/.hidden.png", root);
    put(p, (const unsigned char *)"x", 1);
    snprintf(p, sizeof p, "%s/a/notes.txt", root);
    put(p, (const unsigned char *)"x", 1);
    CHECK(cf_data_open_opts(spec, &o, &tr, &te) == 0);
    size_t ignored = 0;
    CHECK(tr && cf_dataset_skipped(tr, &ignored, NULL) == 0 && ignored == 2 && cf_dataset_count(tr) == 6);
    cf_dataset_free(tr);
    /* a file that is no image: named at open; skip_bad counts it */
    snprintf(p, sizeof p, "%s/a/bad.PNG", root);
    put(p, (const unsigned char *)"hello, world", 12);
    refused(spec, &o, "a/bad.PNG: not a PNG or JPEG image");
    /* cut past its header: found only by decoding it */
    unsigned char px[784] = {0}, *png;
    size_t len;
    CHECK(cf_png_encode(px, 28, 28, 1, &png, &len) == 0);
    snprintf(q, sizeof q, "%s/b/cut.png", root);
    put(q, png, 40);
    free(png);
    cf_data_opts skip = o;
    skip.skip_bad = 1;
    const char *first = NULL;
    CHECK(cf_data_open_opts(spec, &skip, &tr, &te) == 0);
    CHECK(tr && cf_dataset_skipped(tr, NULL, &first) == 2 && cf_dataset_count(tr) == 6);
    CHECK_HAS(first ? first : "", "a/bad.PNG: ");
    cf_dataset_free(tr);
    unlink(p);
    /* without skip_bad the cut file passes the header check and stops training, named */
    CHECK(cf_data_open_opts(spec, &o, &tr, &te) == 0);
    CHECK(tr && cf_dataset_count(tr) == 7);
    if (tr) {
        const char *two = "model = Chain(Input(1, 28, 28), flatten, Affine(2), softmax)\n";
        put(tmp("two.flux"), (const unsigned char *)two, strlen(two));
        cf_model *m = cf_model_load(tmp("two.flux"));
        cf_fit_opts fo = cf_fit_defaults();
        fo.epochs = 1;
        fo.batch = 2;
        cf_trainer *t = m ? cf_trainer_new(m, tr, &fo) : NULL;
        CHECK(t && cf_fit(t, tr, NULL) == -1);
        CHECK_HAS(cf_last_error(), "b/cut.png");
        cf_trainer_free(t);
        cf_model_free(m);
        /* a model of other classes than the folder's */
        m = cf_model_load("models/cnn.flux");
        CHECK(m && !cf_trainer_new(m, tr, &fo));
        CHECK_HAS(cf_last_error(), "the data names 2 classes but the model's output has 10");
        cf_model_free(m);
    }
    cf_dataset_free(tr);
    /* --exact-size: a 56x56 image is refused, named */
    unlink(q);
    snprintf(q, sizeof q, "%s/b/big", root);
    write_sample(q, px, 2);
    cf_data_opts ex = o;
    ex.exact_size = 1;
    refused(spec, &ex, "b/big.png: the image is 56x56 and the model takes 28x28");
    CHECK(cf_memory_in_use() == 0);
}

/* --normalize on a folder: one mean and std per channel, over every pixel of every
 * image, in each element of its plane. */
TEST(normalize_per_channel)
{
    char root[300], spec[400], model[300];
    snprintf(root, sizeof root, "%s", tmp("rgb"));
    unsigned char px[4 * 4 * 3];
    for (int c = 0; c < 2; c++)
        for (int i = 0; i < 5; i++) {
            char d[400], path[480];
            snprintf(d, sizeof d, "%s/%c", root, "ab"[c]);
            mkdirs(d);
            for (int j = 0; j < 16; j++) {   /* R around 200, G around 100, B around 20, each varying */
                px[3 * j] = (unsigned char)(180 + (j * 7 + i * 3 + c) % 40);
                px[3 * j + 1] = (unsigned char)(80 + (j * 5 + i) % 50);
                px[3 * j + 2] = (unsigned char)(10 + (j + i * 11) % 20);
            }
            unsigned char *png;
            size_t len;
            CHECK(cf_png_encode(px, 4, 4, 3, &png, &len) == 0);
            snprintf(path, sizeof path, "%s/%d.png", d, i);
            put(path, png, len);
            free(png);
        }
    snprintf(model, sizeof model, "%s", tmp("rgb.flux"));
    const char *src = "model = Chain(Input(3, 4, 4), flatten, Affine(2), softmax)\n";
    put(model, (const unsigned char *)src, strlen(src));
    snprintf(spec, sizeof spec, "images:%s", root);
    cf_data_opts o = cf_data_defaults();
    o.image = (cf_shape){3, {3, 4, 4}};
    cf_dataset *tr, *te;
    CHECK(cf_data_open_opts(spec, &o, &tr, &te) == 0);
    cf_model *m = cf_model_load(model);
    if (!tr || !m) {
        fprintf(stderr, "  %s\n", cf_last_error());
        cf_dataset_free(tr);
        cf_model_free(m);
        return;
    }
    float x[10 * 48];
    CHECK(cf_dataset_count(tr) == 10 && cf_dataset_read(tr, 0, 10, x) == 0);
    cf_fit_opts fo = cf_fit_defaults();
    fo.epochs = 1;
    fo.batch = 4;
    fo.normalize = 1;
    cf_trainer *t = cf_trainer_new(m, tr, &fo);
    CHECK(t && cf_fit(t, tr, NULL) == 0);
    const float *mean, *std;
    CHECK(cf_model_input_norm(m, &mean, &std) == 48);
    int ok = mean && std;
    for (int ch = 0; ok && ch < 3; ch++) {
        double mu = 0, var = 0;
        for (int s = 0; s < 10; s++)
            for (int j = 0; j < 16; j++) mu += x[s * 48 + ch * 16 + j];
        mu /= 160;
        for (int s = 0; s < 10; s++)
            for (int j = 0; j < 16; j++) var += (x[s * 48 + ch * 16 + j] - mu) * (x[s * 48 + ch * 16 + j] - mu);
        double sd = sqrt(var / 160);
        for (int j = 0; j < 16; j++) {
            ok &= fabs(mean[ch * 16 + j] - mu) < 1e-6 && fabs(std[ch * 16 + j] - sd) < 1e-6 * sd;
            if (j == 0 && !ok) printf("  channel %d: mean %g std %g, want %g %g\n", ch, mean[ch * 16], std[ch * 16], mu, sd);
        }
    }
    CHECK(ok);
    cf_trainer_free(t);
    cf_model_free(m);
    cf_dataset_free(tr);
    CHECK(cf_memory_in_use() == 0);
}

int main(void)
{
    if (tmpdir_make("images")) return 1;
    have_fm = read_idx(FM "train-images-idx3-ubyte.gz", FM "train-labels-idx1-ubyte.gz", NTRAIN, trpx, trlab) == 0 &&
              read_idx(FM "t10k-images-idx3-ubyte.gz", FM "t10k-labels-idx1-ubyte.gz", NTEST, tepx, telab) == 0;
    if (!have_fm) printf("note: no Fashion-MNIST (%s): the training cases are skipped\n", cf_last_error());
    RUN(folder_trains_as_idx);
    RUN(streamed_is_memory_bitwise);
    RUN(streamed_memory_is_the_queue);
    RUN(a_folder_that_fits_is_decoded_once);
    RUN(hostile_folders);
    RUN(normalize_per_channel);
    tmpdir_remove();
    return test_summary("images");
}
