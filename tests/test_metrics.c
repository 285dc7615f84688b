/* test_metrics.c - cf_metrics_compute against cases worked by hand, and
 * cf_evaluate_metrics agreeing with cf_evaluate. */
#include <stdlib.h>

#include "cflux.h"
#include "test.h"

/* Six samples of three classes. Predicted (argmax) against true:
 *   sample  true  probabilities        argmax  rank of true
 *   0       0     .7  .2  .1           0       0
 *   1       0     .3  .6  .1           1       1
 *   2       1     .1  .8  .1           1       0
 *   3       1     .5  .1  .4           0       2
 *   4       2     .2  .3  .5           2       0
 *   5       2     .4  .4  .2           0 (tie) 2
 * confusion (rows true, columns predicted): [1 1 0; 1 1 0; 1 0 1]
 * precision: class 0 1/3, class 1 1/2, class 2 1/1; recall 1/2, 1/2, 1/2
 * F1: 2(1/3)(1/2)/(5/6) = 0.4, 0.5, 2(1)(1/2)/(3/2) = 2/3
 * accuracy 3/6; top-2: ranks < 2 for samples 0, 1, 2, 4: 4/6 */
TEST(classification_by_hand)
{
    const float p[] = {.7f, .2f, .1f, .3f, .6f, .1f, .1f, .8f, .1f, .5f, .1f, .4f, .2f, .3f, .5f, .4f, .4f, .2f};
    const float y[] = {0, 0, 1, 1, 2, 2};
    cf_metrics r;
    CHECK(cf_metrics_compute(p, 3, y, 1, 6, 1, 2, &r) == 0);
    CHECK(r.classes == 3 && r.count == 6 && r.top_k == 2);
    const long want[9] = {1, 1, 0, 1, 1, 0, 1, 0, 1};
    for (int i = 0; i < 9; i++) CHECK(r.confusion[i] == want[i]);
    CHECK_NEAR(r.accuracy, 0.5, 1e-12);
    CHECK_NEAR(r.top_k_accuracy, 4.0 / 6, 1e-12);
    CHECK_NEAR(r.precision[0], 1.0 / 3, 1e-12);
    CHECK_NEAR(r.precision[1], 0.5, 1e-12);
    CHECK_NEAR(r.precision[2], 1.0, 1e-12);
    for (int c = 0; c < 3; c++) CHECK_NEAR(r.recall[c], 0.5, 1e-12);
    CHECK_NEAR(r.f1[0], 0.4, 1e-12);
    CHECK_NEAR(r.f1[1], 0.5, 1e-12);
    CHECK_NEAR(r.f1[2], 2.0 / 3, 1e-12);
    CHECK_NEAR(r.macro_f1, (0.4 + 0.5 + 2.0 / 3) / 3, 1e-12);
    CHECK(r.support[0] == 2 && r.support[1] == 2 && r.support[2] == 2);
    CHECK(isnan(r.mse) && isnan(r.r2));
    cf_metrics_free(&r);
}

/* A class never predicted has precision 0; one absent from the data has recall NaN
 * and is left out of the macro averages. Sequences: each position is a prediction. */
TEST(absent_classes_and_sequences)
{
    /* two samples of two positions over three classes */
    const float p[] = {.9f, .1f, 0, .8f, .2f, 0, .1f, .9f, 0, .2f, .8f, 0};
    const float y[] = {0, 0, 1, 0};
    cf_metrics r;
    CHECK(cf_metrics_compute(p, 6, y, 2, 2, 1, 0, &r) == 0);
    CHECK(r.classes == 3 && r.count == 4);
    CHECK(r.confusion[0 * 3 + 0] == 2 && r.confusion[0 * 3 + 1] == 1 && r.confusion[1 * 3 + 1] == 1);
    CHECK(r.precision[2] == 0 && isnan(r.recall[2]) && isnan(r.f1[2]));
    CHECK_NEAR(r.recall[0], 2.0 / 3, 1e-12);
    CHECK_NEAR(r.macro_recall, (2.0 / 3 + 1) / 2, 1e-12);
    CHECK(isnan(r.top_k_accuracy));
    cf_metrics_free(&r);
    const float bad[] = {0, 0, 3, 0};
    CHECK(cf_metrics_compute(p, 6, bad, 2, 2, 1, 0, &r) == -1);
    CHECK_HAS(cf_last_error(), "label 2 is 3, not a class in 0..2");
}

/* Targets 1, 2, 3, 4 predicted as 1.5, 2, 2, 5: errors .5, 0, -1, 1; MSE (.25 + 0 + 1
 * + 1) / 4 = .5625, MAE 2.5 / 4 = .625; the mean 2.5, SS_tot 2.25 + .25 + .25 + 2.25
 * = 5, R² = 1 - 2.25 / 5 = .55. */
TEST(regression_by_hand)
{
    const float out[] = {1.5f, 2, 2, 5}, y[] = {1, 2, 3, 4};
    cf_metrics r;
    CHECK(cf_metrics_compute(out, 1, y, 1, 4, 0, 0, &r) == 0);
    CHECK(r.classes == 0 && r.confusion == NULL);
    CHECK_NEAR(r.mse, 0.5625, 1e-12);
    CHECK_NEAR(r.mae, 0.625, 1e-12);
    CHECK_NEAR(r.r2, 0.55, 1e-12);
    CHECK(isnan(r.accuracy));
    cf_metrics_free(&r);
}

/* On a model: the accuracy is cf_evaluate's, and the confusion matrix sums to the
 * samples. */
TEST(on_a_model)
{
    cf_model *m = cf_model_parse("model = Chain(Input(2), Affine(4), relu, Affine(3), softmax)\n", "m.flux");
    CHECK(m != NULL);
    if (!m) return;
    cf_model_set_seed(m, 5);
    float x[40], y[20];
    for (int i = 0; i < 20; i++) {
        x[2 * i] = (float)(i % 5) - 2;
        x[2 * i + 1] = (float)(i % 3) - 1;
        y[i] = (float)(i % 3);
    }
    cf_dataset *d = cf_dataset_from_arrays(x, CF_SHAPE(2), y, 1, 20);
    CHECK(d && cf_model_init_params(m) == 0);
    double loss, acc;
    cf_metrics r;
    CHECK(cf_evaluate(m, d, 8, &loss, &acc) == 0);
    CHECK(cf_evaluate_metrics(m, d, 8, 2, &r) == 0);
    CHECK_NEAR(r.accuracy, acc, 1e-12);
    long sum = 0;
    for (int i = 0; i < 9; i++) sum += r.confusion[i];
    CHECK(sum == 20 && r.support[0] == 7 && r.support[1] == 7 && r.support[2] == 6);
    CHECK(r.top_k_accuracy >= r.accuracy);
    cf_metrics_free(&r);
    cf_dataset_free(d);
    cf_model_free(m);
}

int main(void)
{
    RUN(classification_by_hand);
    RUN(absent_classes_and_sequences);
    RUN(regression_by_hand);
    RUN(on_a_model);
    return test_summary("metrics");
}
