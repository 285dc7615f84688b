/* test_early_stop.c - early stopping: cf_early_stop on planted validation curves, and
 * cf_fit with patience stopping at the epoch it should, keeping the best epoch's
 * checkpoint. */
#include <stdlib.h>

#include "cflux.h"
#include "test.h"
#include "tmpdir.h"

/* val losses 1.0 .8 .7 .75 .72 .71 .9 .6: the best is epoch 3 until epoch 8 */
TEST(planted_curve)
{
    const double v[] = {1.0, 0.8, 0.7, 0.75, 0.72, 0.71, 0.9, 0.6};
    int best;
    for (int n = 1; n <= 5; n++) CHECK(cf_early_stop(v, sizeof *v, n, 3, &best) == 0);
    CHECK(best == 3);
    CHECK(cf_early_stop(v, sizeof *v, 6, 3, &best) == 1 && best == 3);   /* 4, 5, 6 no better */
    CHECK(cf_early_stop(v, sizeof *v, 6, 4, &best) == 0);
    CHECK(cf_early_stop(v, sizeof *v, 8, 3, &best) == 0 && best == 8);
    CHECK(cf_early_stop(v, sizeof *v, 6, 0, &best) == 0);                 /* patience 0: never */
    /* equal is not better; NaN never is */
    const double flat[] = {0.5, 0.5, NAN, 0.5};
    CHECK(cf_early_stop(flat, sizeof *flat, 4, 3, &best) == 1 && best == 1);
    const double nan[] = {NAN, NAN};
    CHECK(cf_early_stop(nan, sizeof *nan, 2, 1, &best) == 1 && best == 0);
    /* through the history's stride */
    cf_epoch_stats h[3] = {{.val_loss = 0.9}, {.val_loss = 0.4}, {.val_loss = 0.6}};
    CHECK(cf_early_stop(&h[0].val_loss, sizeof *h, 3, 1, &best) == 1 && best == 2);
}

static int epochs_seen;
static int count_epochs(const cf_epoch_stats *s, void *user)
{
    (void)user;
    epochs_seen = s->epoch;
    return 0;
}

/* At a learning rate of 1e-30 the validation loss stays where it is (within the last
 * bits): patience 2 stops two epochs after the best, long before epoch 20, and the
 * kept checkpoint is the best epoch's. */
TEST(fit_stops_and_keeps_the_best)
{
    if (tmpdir_make("early")) return;
    cf_model *m = cf_model_parse("model = Chain(Input(2), Affine(4), relu, Affine(2), softmax)\n", "m.flux");
    float x[80], y[40];
    for (int i = 0; i < 40; i++) {
        x[2 * i] = (float)(i % 7) - 3;
        x[2 * i + 1] = (float)(i % 5) - 2;
        y[i] = (float)(x[2 * i] > x[2 * i + 1]);
    }
    cf_dataset *d = cf_dataset_from_arrays(x, CF_SHAPE(2), y, 1, 40);
    CHECK(m && d);
    if (!m || !d) goto out;
    cf_fit_opts o = cf_fit_defaults();
    o.batch = 8;
    o.val_fraction = 0.25;
    o.optim.lr = 1e-30f;
    o.epochs = 20;
    o.patience = 2;
    o.keep_best = tmp("best.ckpt");
    o.on_epoch = count_epochs;
    cf_trainer *t = cf_trainer_new(m, d, &o);
    CHECK(t != NULL);
    if (!t) goto out;
    CHECK(cf_fit(t, d, NULL) == 0);
    const cf_epoch_stats *h;
    int n = cf_trainer_history(t, &h), best;
    CHECK(cf_early_stop(&h[0].val_loss, sizeof *h, n, 2, &best) == 1);
    CHECK(n < 20 && n == best + 2 && epochs_seen == n && cf_trainer_epoch(t) == n);
    for (int i = 0; i + 1 < n; i++) CHECK(cf_early_stop(&h[0].val_loss, sizeof *h, i + 1, 2, NULL) == 0);
    /* the kept checkpoint is a checkpoint of the best epoch */
    cf_trainer *u = cf_trainer_new(m, d, &o);
    CHECK(u && cf_trainer_load(u, tmp("best.ckpt")) == 0 && cf_trainer_epoch(u) == best);
    cf_trainer_free(u);
    cf_trainer_free(t);
    /* patience needs a validation split */
    o.val_fraction = 0;
    CHECK(cf_trainer_new(m, d, &o) == NULL);
    CHECK_HAS(cf_last_error(), "early stopping (--patience) watches the validation loss");
out:
    cf_dataset_free(d);
    cf_model_free(m);
    tmpdir_remove();
}

int main(void)
{
    RUN(planted_curve);
    RUN(fit_stops_and_keeps_the_best);
    return test_summary("early_stop");
}
