/* test_augment.c - augmentation of training images (cf_fit_opts.augment): the
 * transforms against a direct reference (a padded image cropped, then flipped; the
 * erased box), specs that are refused and why, training that sees transformed
 * samples while every evaluation sees the data as it is, and runs that are the same
 * bits at 1 and 2 threads, when stopped and resumed, and from an image folder as from
 * its images in memory. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cflux.h"
#include "data/augment.h"
#include "data/png.h"
#include "spirals.h"
#include "test.h"
#include "tmpdir.h"

/* ---- the transforms ---- */

enum { C = 2, H = 5, W = 7, P = 2 };

/* Sample `shape`'s pixel values: all different, none 0, so that a moved or padded
 * pixel shows. */
static void tiny_image(float *x)
{
    for (int i = 0; i < C * H * W; i++) x[i] = 1.0f + (float)i;
}

/* torchvision's RandomCrop(size, padding = P) at top i, left j, then the flip, done
 * the direct way: an image padded with P zeros on every side, a window of H x W from
 * (i, j), read back to front when flipped. */
static void reference_crop_flip(const float *in, int i, int j, int flip, float *out)
{
    enum { PH = H + 2 * P, PW = W + 2 * P };
    float padded[C][PH][PW] = {{{0}}};
    for (int c = 0; c < C; c++)
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) padded[c][y + P][x + P] = in[(c * H + y) * W + x];
    for (int c = 0; c < C; c++)
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) out[(c * H + y) * W + x] = padded[c][y + i][(flip ? W - 1 - x : x) + j];
}

static cf_augment parsed(const char *spec)
{
    cf_augment a;
    if (cf_augment_parse(spec, CF_SHAPE(CF_BATCH, C, H, W), &a)) fprintf(stderr, "%s\n", cf_last_error());
    return a;
}

/* Every shift in [-P, P] on each axis and both flips come up over many samples, and
 * each sample is what the reference makes of its draws; erasing is not part of this
 * stage. */
TEST(crop_and_flip_match_a_padded_crop)
{
    cf_augment a = parsed("crop:2,flip,erase:1");
    CHECK(a.pad == P && a.flip && a.erase == 1.0f && a.c == C && a.h == H && a.w == W);
    int seen_dy[2 * P + 1] = {0}, seen_dx[2 * P + 1] = {0}, flips = 0, wrong = 0, n = 400;
    float in[C * H * W], x[C * H * W], want[C * H * W], scratch[C * H * W];
    tiny_image(in);
    for (size_t idx = 0; idx < (size_t)n; idx++) {
        cf_augment_draws d;
        cf_augment_draw(&a, cf_augment_key(7, 3, idx), &d);
        if (d.dy < -P || d.dy > P || d.dx < -P || d.dx > P) {
            wrong++;
            continue;
        }
        seen_dy[d.dy + P]++, seen_dx[d.dx + P]++, flips += d.flip;
        memcpy(x, in, sizeof x);
        cf_augment_apply(&a, CF_AUGMENT_RAW, x, 1, &idx, 7, 3, scratch);
        reference_crop_flip(in, d.dy + P, d.dx + P, d.flip, want);
        wrong += memcmp(x, want, sizeof x) != 0;
    }
    CHECK(wrong == 0);
    for (int k = 0; k <= 2 * P; k++) CHECK(seen_dy[k] > n / 10 && seen_dx[k] > n / 10);
    CHECK(flips > n / 3 && flips < 2 * n / 3);
}

/* The padding is a pixel of 0 as read (black, before any standardisation): a shift
 * of (1, -2) leaves the last row and the first two columns 0 and moves the rest. */
TEST(padding_is_zero_and_shift_semantics)
{
    cf_augment a = parsed("crop:2");
    float in[C * H * W], x[C * H * W], scratch[C * H * W];
    tiny_image(in);
    /* a sample whose draws are a shift of (1, -2) */
    size_t idx = 0;
    cf_augment_draws d = {0};
    for (; idx < 10000; idx++) {
        cf_augment_draw(&a, cf_augment_key(1, 1, idx), &d);
        if (d.dy == 1 && d.dx == -2) break;
    }
    CHECK(d.dy == 1 && d.dx == -2 && !d.flip);
    memcpy(x, in, sizeof x);
    cf_augment_apply(&a, CF_AUGMENT_RAW, x, 1, &idx, 1, 1, scratch);
    for (int c = 0; c < C; c++)
        for (int y = 0; y < H; y++)
            for (int xx = 0; xx < W; xx++) {
                float got = x[(c * H + y) * W + xx];
                if (y == H - 1 || xx < 2) CHECK(got == 0.0f);
                else CHECK(got == in[(c * H + y + 1) * W + xx - 2]);
            }
}

/* Flip alone: the columns reversed, in every plane, for the samples drawn to flip;
 * the others untouched. */
TEST(flip_reverses_columns)
{
    cf_augment a = parsed("flip");
    float in[C * H * W], x[C * H * W], scratch[C * H * W];
    tiny_image(in);
    int both[2] = {0, 0};
    for (size_t idx = 0; idx < 20; idx++) {
        cf_augment_draws d;
        cf_augment_draw(&a, cf_augment_key(2, 1, idx), &d);
        both[d.flip]++;
        memcpy(x, in, sizeof x);
        cf_augment_apply(&a, CF_AUGMENT_RAW, x, 1, &idx, 2, 1, scratch);
        int ok = 1;
        for (int c = 0; c < C; c++)
            for (int y = 0; y < H; y++)
                for (int xx = 0; xx < W; xx++)
                    ok &= x[(c * H + y) * W + xx] == in[(c * H + y) * W + (d.flip ? W - 1 - xx : xx)];
        CHECK(ok);
    }
    CHECK(both[0] > 0 && both[1] > 0);
}

/* Random erasing: about half the samples at the default probability; the box is 0
 * in every plane, inside the image, of an area and ratio in RandomErasing's ranges
 * (its sides rounded), and nothing else changes; the crop's stage leaves it. */
TEST(erase_sets_a_box_to_zero)
{
    cf_augment a = parsed("erase");
    CHECK(a.erase == 0.5f && !a.pad && !a.flip);
    float in[C * H * W], x[C * H * W], scratch[C * H * W];
    tiny_image(in);
    int erased = 0, n = 400;
    for (size_t idx = 0; idx < (size_t)n; idx++) {
        cf_augment_draws d;
        cf_augment_draw(&a, cf_augment_key(3, 2, idx), &d);
        memcpy(x, in, sizeof x);
        cf_augment_apply(&a, CF_AUGMENT_RAW, x, 1, &idx, 3, 2, scratch);
        CHECK(memcmp(x, in, sizeof x) == 0);
        cf_augment_apply(&a, CF_AUGMENT_STANDARDISED, x, 1, &idx, 3, 2, scratch);
        if (!d.eh) {
            CHECK(memcmp(x, in, sizeof x) == 0);
            continue;
        }
        erased++;
        CHECK(d.ey >= 0 && d.ex >= 0 && d.ey + d.eh <= H && d.ex + d.ew <= W && d.eh < H && d.ew < W && d.ew > 0);
        /* the sides are the rounded square roots of area * ratio and area / ratio */
        double area = (double)d.eh * d.ew;
        CHECK(area <= (sqrt(0.33 * H * W * 3.3) + 0.5) * (sqrt(0.33 * H * W / 0.3) + 0.5));
        int ok = 1;
        for (int c = 0; c < C; c++)
            for (int y = 0; y < H; y++)
                for (int xx = 0; xx < W; xx++) {
                    int in_box = y >= d.ey && y < d.ey + d.eh && xx >= d.ex && xx < d.ex + d.ew;
                    float v = x[(c * H + y) * W + xx];
                    ok &= in_box ? v == 0.0f : v == in[(c * H + y) * W + xx];
                }
        CHECK(ok);
    }
    CHECK(erased > n / 4 && erased < 3 * n / 4);
}

/* The draws depend on the seed, the epoch and the index, each. */
TEST(draws_follow_seed_epoch_and_index)
{
    cf_augment a = parsed("crop:2,flip");
    uint64_t k = cf_augment_key(5, 2, 9);
    CHECK(k == cf_augment_key(5, 2, 9));
    CHECK(k != cf_augment_key(6, 2, 9) && k != cf_augment_key(5, 3, 9) && k != cf_augment_key(5, 2, 10));
    int differ = 0;
    for (size_t i = 0; i < 50; i++) {
        cf_augment_draws d1, d2;
        cf_augment_draw(&a, cf_augment_key(5, 1, i), &d1);
        cf_augment_draw(&a, cf_augment_key(5, 2, i), &d2);
        differ += memcmp(&d1, &d2, sizeof d1) != 0;
    }
    CHECK(differ > 25);
}

/* ---- specs ---- */

TEST(bad_specs_are_refused_naming_the_part)
{
    static const struct { const char *spec, *says; } bad[] = {
        {"blur", "'blur' is not a transform"},  {"crop:4,blur", "'blur' is not a transform"},
        {"crop:-1", "'crop:-1': crop:P"},       {"crop:abc", "'crop:abc': crop:P"},
        {"crop:", "'crop:': crop:P"},           {"crop:7", "from 1 to 4 (less than the images' 5 x 7)"},
        {"crop:4x", "'crop:4x'"},               {"crop:0", "'crop:0'"},
        {"erase:2", "'erase:2': erase:P"},      {"erase:0", "'erase:0'"},
        {"erase:x", "'erase:x'"},               {"flip:1", "'flip:1': flip takes no value"},
        {"flip,flip", "flip is given twice"},   {"crop:1,crop:2", "crop is given twice"},
        {"crop:1,,flip", "an empty part"},      {"", "an empty part"},
        {"none,flip", "none goes alone"},       {"flip,", "an empty part"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        CHECK(cf_augment_check(bad[i].spec, CF_SHAPE(CF_BATCH, C, H, W)) == -1);
        CHECK_HAS(cf_last_error(), bad[i].says);
    }
    CHECK(cf_augment_check("crop:1", CF_SHAPE(CF_BATCH, 784)) == -1);
    CHECK_HAS(cf_last_error(), "the model's input is (B, 784), not an image (C, H, W)");
    CHECK(cf_augment_check("flip", CF_SHAPE(CF_BATCH, 4, 4)) == -1);
    CHECK(cf_augment_check("none", CF_SHAPE(CF_BATCH, 784)) == 0);   /* none fits any model */
    static const char *const good[] = {"crop:4", "flip", "erase", "erase:0.25", "none", "flip,crop:1,erase:1"};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++)
        CHECK(cf_augment_check(good[i], CF_SHAPE(CF_BATCH, 1, 28, 28)) == 0);
    char buf[64];
    cf_augment a = parsed("erase:0.25,flip,crop:2");
    CHECK(strcmp(cf_augment_format(&a, buf, sizeof buf), "crop:2,flip,erase:0.25") == 0);
    a = parsed("none");
    CHECK(!cf_augment_any(&a) && strcmp(cf_augment_format(&a, buf, sizeof buf), "none") == 0);
}

/* ---- training ---- */

enum { N = 160, S = 8 };

/* N images of 1 x S x S: class 0 a bright row, 1 a bright column, 2 a bright square,
 * each at a position and brightness (an 8-bit value) drawn from `seed`. */
static cf_dataset *bars(unsigned seed)
{
    float *x = calloc((size_t)N * S * S, sizeof *x), *y = malloc(N * sizeof *y);
    srand(seed);
    for (int i = 0; i < N; i++) {
        float *im = x + (size_t)i * S * S, v = (float)(128 + rand() % 128) / 255.0f;   /* as an 8-bit image's */
        int c = i % 3, at = 1 + rand() % (S - 2);
        for (int k = 0; k < S; k++) {
            if (c == 0) im[at * S + k] = v;
            if (c == 1) im[k * S + at] = v;
        }
        if (c == 2)
            for (int k = 0; k < 9; k++) im[(at - 1 + k / 3) * S + at - 1 + k % 3] = v;
        y[i] = (float)c;
    }
    cf_dataset *d = cf_dataset_from_arrays(x, CF_SHAPE(1, S, S), y, 1, N);
    free(x);
    free(y);
    return d;
}

static const char *const cnn =
    "model = Chain(Input(1, 8, 8), Conv2D(4, 3, pad = 1), BatchNorm(), relu, MaxPool(2), flatten,\n"
    "              Dropout(0.1), Affine(3), softmax)\n";

/* A run's outcome: every parameter and state, and the last epoch's figures. */
typedef struct outcome {
    float *params, *states;
    size_t np, ns;
    cf_epoch_stats last;
    double eval_test, eval_val;   /* cf_evaluate on the final weights: the test set, the validation split */
} outcome;

static void outcome_free(outcome *o)
{
    free(o->params);
    free(o->states);
}

static int same(const outcome *a, const outcome *b)
{
    return a->params && b->params && a->np == b->np && a->ns == b->ns &&
           !memcmp(a->params, b->params, a->np * sizeof *a->params) &&
           !memcmp(a->states, b->states, a->ns * sizeof *a->states);
}

typedef struct plan {
    const cf_dataset *data, *test;   /* NULL: bars(1) and bars(2) */
    const char *augment;
    int threads, epochs, normalize;
    int stop_epoch;        /* on_epoch stops the run after this epoch; 0: never */
    long stop_step;        /* with stop_epoch: cf_trainer_stop in that epoch's step, not at its end */
    const char *from, *to; /* resume from / save to (NULL: none) */
    cf_trainer *t;
} plan;

static int stop_epoch(const cf_epoch_stats *s, void *user)
{
    const plan *p = user;
    return !p->stop_step && s->epoch == p->stop_epoch;
}

static void stop_step(int epoch, long step, long steps, double loss, double acc, double sps, void *user)
{
    (void)steps, (void)loss, (void)acc, (void)sps;
    plan *p = user;
    if (p->stop_step && epoch == p->stop_epoch && step == p->stop_step) cf_trainer_stop(p->t);
}

/* Train the CNN on bars() (a validation split of 0.2, a test set) as the plan says. */
static outcome train(plan p)
{
    outcome r = {0};
    cf_set_threads(p.threads);
    cf_dataset *own = p.data ? NULL : bars(1), *own_test = p.data ? NULL : bars(2), *tr = NULL, *val = NULL;
    const cf_dataset *d = p.data ? p.data : own, *test = p.data ? p.test : own_test;
    cf_model *m = cf_model_parse(cnn, "cnn.flux");
    cf_model_set_seed(m, 3);
    cf_fit_opts o = opts(p.epochs);
    o.batch = 16;
    o.val_fraction = 0.2;
    o.augment = p.augment;
    o.normalize = p.normalize;
    o.on_epoch = stop_epoch;
    o.on_batch = stop_step;
    o.user = &p;
    cf_trainer *t = p.t = cf_trainer_new(m, d, &o);
    int rc = !t || (p.from && cf_trainer_load(t, p.from)) ? -1 : cf_fit(t, d, test);
    if (rc >= 0 && p.to && cf_trainer_save(t, p.to)) rc = -1;
    if (rc < 0) fprintf(stderr, "%s\n", cf_last_error());
    if (rc >= 0) {
        r.params = params_copy(m, &r.np);
        r.states = states_copy(m, &r.ns);
        const cf_epoch_stats *h;
        int nh = cf_trainer_history(t, &h);
        if (nh) r.last = h[nh - 1];
        /* the split cf_fit made, scored again by cf_evaluate, which knows nothing of augmentation */
        if (cf_dataset_split(d, o.val_fraction, o.seed, &tr, &val) || cf_evaluate(m, test, o.batch, &r.eval_test, NULL) ||
            cf_evaluate(m, val, o.batch, &r.eval_val, NULL))
            fprintf(stderr, "%s\n", cf_last_error());
    }
    cf_trainer_free(t);
    cf_model_free(m);
    cf_dataset_free(own);
    cf_dataset_free(own_test);
    cf_dataset_free(tr);
    cf_dataset_free(val);
    cf_set_threads(0);
    return r;
}

/* Training sees transformed samples (another loss, other weights than the plain
 * run's); the run's own validation and test figures are those of the final weights
 * on the data as it is (cf_evaluate's), bit for bit: evaluation is never
 * transformed. With --normalize too (crop and flip before it, erasing after). */
TEST(training_is_augmented_evaluation_is_not)
{
    static const char *const specs[] = {"crop:2,flip", "erase:1"};
    for (int normalize = 0; normalize < 2; normalize++) {
        outcome plain = train((plan){.threads = 1, .epochs = 1, .normalize = normalize});
        CHECK(plain.params != NULL);
        CHECK(plain.last.test_loss == plain.eval_test && plain.last.val_loss == plain.eval_val);
        for (int s = 0; s < 2; s++) {
            outcome aug = train((plan){.augment = specs[s], .threads = 1, .epochs = 1, .normalize = normalize});
            CHECK(aug.params != NULL && !same(&plain, &aug));
            CHECK(aug.last.train_loss != plain.last.train_loss);
            CHECK(aug.last.test_loss == aug.eval_test);
            CHECK(aug.last.val_loss == aug.eval_val);
            outcome_free(&aug);
        }
        outcome_free(&plain);
    }
}

/* The same bits at 1 and 2 threads. */
TEST(augmented_runs_repeat_at_any_thread_count)
{
    outcome a = train((plan){.augment = "crop:2,flip,erase", .threads = 1, .epochs = 2});
    outcome b = train((plan){.augment = "crop:2,flip,erase", .threads = 2, .epochs = 2});
    CHECK(same(&a, &b));
    CHECK(a.last.train_loss == b.last.train_loss);
    outcome_free(&a);
    outcome_free(&b);
}

/* Stopped after epoch 1 (or in epoch 2's step 3), saved and resumed: the bits of the
 * straight run of 3 epochs; resumed with another augmentation, a note says so. */
TEST(augmented_runs_resume_exactly)
{
    const char *spec = "crop:2,flip,erase";
    outcome straight = train((plan){.augment = spec, .threads = 2, .epochs = 3});
    for (int mid = 0; mid < 2; mid++) {
        outcome first = train((plan){.augment = spec, .threads = 2, .epochs = 3, .stop_epoch = mid ? 2 : 1, .stop_step = mid ? 3 : 0,
                                       .to = tmp("a.ckpt")});
        outcome rest = train((plan){.augment = spec, .threads = 1, .epochs = 3, .from = tmp("a.ckpt")});
        CHECK(first.params && !same(&first, &straight));
        CHECK(same(&rest, &straight));
        outcome_free(&first);
        outcome_free(&rest);
    }
    outcome_free(&straight);
}

/* The images of d as grey PNGs in root/c0, c1, c2 (by label; file names in d's order). */
static void write_folder(const char *root, const cf_dataset *d)
{
    const float *x = cf_dataset_x(d), *y = cf_dataset_y(d);
    for (size_t i = 0; i < cf_dataset_count(d); i++) {
        char path[400];
        mkdir(root, 0755);
        snprintf(path, sizeof path, "%s/c%d", root, (int)y[i]);
        mkdir(path, 0755);   /* made already: fine */
        unsigned char px[S * S], *png = NULL;
        size_t len = 0;
        for (int k = 0; k < S * S; k++) px[k] = (unsigned char)(x[i * S * S + k] * 255.0f + 0.5f);
        snprintf(path, sizeof path, "%s/c%d/%03zu.png", root, (int)y[i], i);
        FILE *f = fopen(path, "wb");
        if (!f || cf_png_encode(px, S, S, 1, &png, &len) || fwrite(png, 1, len, f) != len) fprintf(stderr, "cannot write %s\n", path);
        if (f) fclose(f);
        free(png);
    }
}

/* An image folder (images:DIR, streamed: decoded as it is read, by a thread ahead)
 * trains augmented as its images held in memory do, bit for bit. */
TEST(image_folders_augment_as_memory)
{
    cf_dataset *d = bars(1), *dt = bars(2), *tr = NULL, *te = NULL;
    write_folder(tmp("pics"), d);
    write_folder(tmp("pics-test"), dt);
    char spec[300];
    snprintf(spec, sizeof spec, "images:%s,%s", tmp("pics"), tmp("pics-test"));
    cf_data_opts o = cf_data_defaults();
    o.image = CF_SHAPE(1, S, S);
    CHECK(cf_data_open_opts(spec, &o, &tr, &te) == 0 && cf_dataset_streamed(tr));
    if (!tr) return;
    size_t n = cf_dataset_count(tr), nt = cf_dataset_count(te);
    float *x = malloc(n * S * S * sizeof *x), *xt = malloc(nt * S * S * sizeof *xt);
    CHECK(cf_dataset_read(tr, 0, n, x) == 0 && cf_dataset_read(te, 0, nt, xt) == 0);
    cf_dataset *mtr = cf_dataset_from_arrays(x, CF_SHAPE(1, S, S), cf_dataset_y(tr), 1, n);
    cf_dataset *mte = cf_dataset_from_arrays(xt, CF_SHAPE(1, S, S), cf_dataset_y(te), 1, nt);
    outcome a = train((plan){.data = tr, .test = te, .augment = "crop:2,flip,erase", .threads = 2, .epochs = 2});
    outcome b = train((plan){.data = mtr, .test = mte, .augment = "crop:2,flip,erase", .threads = 2, .epochs = 2});
    outcome c = train((plan){.data = mtr, .test = mte, .threads = 2, .epochs = 2});
    CHECK(same(&a, &b) && !same(&b, &c));
    outcome_free(&a);
    outcome_free(&b);
    outcome_free(&c);
    free(x);
    free(xt);
    cf_dataset_free(d);
    cf_dataset_free(dt);
    cf_dataset_free(tr);
    cf_dataset_free(te);
    cf_dataset_free(mtr);
    cf_dataset_free(mte);
}

static char notes[2048];

static void keep_note(const char *msg, void *user)
{
    (void)user;
    size_t n = strlen(notes);
    snprintf(notes + n, sizeof notes - n, "%s\n", msg);
}

/* A checkpoint records the augmentation; a resumed run with another is told. */
TEST(resume_with_other_augmentation_is_noted)
{
    outcome first = train((plan){.augment = "flip,crop:2", .threads = 1, .epochs = 2, .stop_epoch = 1, .to = tmp("b.ckpt")});
    outcome_free(&first);
    static const struct { const char *spec, *note; } cases[] = {
        {"crop:2,flip", NULL},
        {"crop:1,flip", "the augmentation changes from 'crop:2,flip' to 'crop:1,flip'"},
        {NULL, "the augmentation changes from 'crop:2,flip' to 'none'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        cf_dataset *d = bars(1);
        cf_model *m = cf_model_parse(cnn, "cnn.flux");
        cf_fit_opts o = opts(2);
        o.batch = 16;
        o.val_fraction = 0.2;
        o.augment = cases[i].spec;
        o.on_warning = keep_note;
        notes[0] = 0;
        cf_trainer *t = cf_trainer_new(m, d, &o);
        CHECK(t && cf_trainer_load(t, tmp("b.ckpt")) == 0);
        if (cases[i].note) CHECK_HAS(notes, cases[i].note);
        else CHECK(!strstr(notes, "augmentation"));
        cf_trainer_free(t);
        cf_model_free(m);
        cf_dataset_free(d);
    }
}

/* The library refuses what the tool refuses: a bad spec, a model whose input is not
 * an image. */
TEST(trainer_refuses_bad_augmentation)
{
    cf_dataset *d = bars(1);
    cf_model *m = cf_model_parse(cnn, "cnn.flux");
    cf_fit_opts o = opts(1);
    o.augment = "crop:8";
    CHECK(cf_trainer_new(m, d, &o) == NULL);
    CHECK_HAS(cf_last_error(), "'crop:8': crop:P pads P pixels on each side, a whole number from 1 to 7");
    cf_model_free(m);
    cf_dataset_free(d);
    d = spirals(30, 1);
    m = cf_model_parse(classifier, "spirals.flux");
    o.augment = "flip";
    CHECK(cf_trainer_new(m, d, &o) == NULL);
    CHECK_HAS(cf_last_error(), "not an image (C, H, W)");
    cf_model_free(m);
    cf_dataset_free(d);
}

int main(void)
{
    if (tmpdir_make("augment")) return 1;
    RUN(crop_and_flip_match_a_padded_crop);
    RUN(padding_is_zero_and_shift_semantics);
    RUN(flip_reverses_columns);
    RUN(erase_sets_a_box_to_zero);
    RUN(draws_follow_seed_epoch_and_index);
    RUN(bad_specs_are_refused_naming_the_part);
    RUN(training_is_augmented_evaluation_is_not);
    RUN(augmented_runs_repeat_at_any_thread_count);
    RUN(augmented_runs_resume_exactly);
    RUN(resume_with_other_augmentation_is_noted);
    RUN(image_folders_augment_as_memory);
    RUN(trainer_refuses_bad_augmentation);
    tmpdir_remove();
    return test_summary("augment");
}
