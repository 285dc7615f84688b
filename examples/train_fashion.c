/* train_fashion.c - train models/mlp.flux on Fashion-MNIST from C: the tool's
 * `cflux train` in a few calls of the public API.
 *
 *     cc train_fashion.c $(pkg-config --cflags --libs cflux) -o train_fashion
 *     ./train_fashion models/mlp.flux          (needs dataset-fashion-mnist) */
#include <stdio.h>

#include <cflux.h>

static int report(const cf_epoch_stats *s, void *user)
{
    (void)user;
    printf("epoch %d/%d: train loss %.4f, test accuracy %.4f\n", s->epoch, s->epochs, s->train_loss,
           s->test_accuracy);
    return 0;
}

int main(int argc, char **argv)
{
    cf_model *m = cf_model_load(argc > 1 ? argv[1] : "models/mlp.flux");
    cf_dataset *train = NULL, *test = NULL;
    cf_trainer *t = NULL;
    int rc = 1;
    if (!m || cf_data_open("fashion-mnist", 0, &train, &test)) goto out;
    cf_fit_opts o = cf_fit_defaults();
    o.epochs = 3;
    o.optim = cf_optim_defaults("adam");
    o.schedule = "cosine";
    o.on_epoch = report;
    if (!(t = cf_trainer_new(m, train, &o)) || cf_fit(t, train, test)) goto out;
    rc = 0;
out:
    if (rc) fprintf(stderr, "%s\n", cf_last_error());
    cf_trainer_free(t);
    cf_dataset_free(train);
    cf_dataset_free(test);
    cf_model_free(m);
    return rc;
}
