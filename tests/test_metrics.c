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

/* Macro averages over the classes present only, recomputed here from the (true,
 * predicted) pairs. Four classes, class 3 absent from the data yet predicted once:
 *   true 0: predicted 0, 0, 1;  true 1: 1, 3;  true 2: 2, 0
 * precision 2/3, 1/2, 1 (class 3's 0 left out): macro 13/18, not 13/24 over all four;
 * recall 2/3, 1/2, 1/2: 5/9; F1 2/3, 1/2, 2/3: 11/18. */
TEST(macro_averages_over_present_classes)
{
    enum { K = 4, N = 7 };
    const int truth[N] = {0, 0, 0, 1, 1, 2, 2}, pred[N] = {0, 0, 1, 1, 3, 2, 0};
    float p[N * K], y[N];
    for (int i = 0; i < N; i++) {
        for (int c = 0; c < K; c++) p[i * K + c] = c == pred[i] ? 0.7f : 0.1f;
        y[i] = (float)truth[i];
    }
    double sp = 0, sr = 0, sf = 0;
    int present = 0;
    for (int c = 0; c < K; c++) {
        int tp = 0, predicted = 0, support = 0;
        for (int i = 0; i < N; i++) {
            tp += truth[i] == c && pred[i] == c;
            predicted += pred[i] == c;
            support += truth[i] == c;
        }
        if (!support) continue;
        double prec = predicted ? (double)tp / predicted : 0, rec = (double)tp / support;
        sp += prec;
        sr += rec;
        sf += prec + rec > 0 ? 2 * prec * rec / (prec + rec) : 0;
        present++;
    }
    CHECK(present == 3);
    CHECK_NEAR(sp / present, 13.0 / 18, 1e-12);   /* the recount agrees with the hand count */
    cf_metrics r;
    CHECK(cf_metrics_compute(p, K, y, 1, N, 1, 0, &r) == 0);
    CHECK(r.classes == K && r.support[3] == 0 && r.precision[3] == 0);
    CHECK_NEAR(r.macro_precision, sp / present, 1e-12);
    CHECK_NEAR(r.macro_recall, sr / present, 1e-12);
    CHECK_NEAR(r.macro_f1, sf / present, 1e-12);
    CHECK_NEAR(r.macro_recall, 5.0 / 9, 1e-12);
    CHECK_NEAR(r.macro_f1, 11.0 / 18, 1e-12);
    cf_metrics_free(&r);
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

/* Two target columns of different means, recomputed here: column 0 targets 1..4
 * (mean 2.5) predicted 1.5, 2, 2, 5; column 1 targets 10..40 (mean 25) predicted 12,
 * 18, 30, 40. SS_res .25 + 1 + 1 + 4 + 4 = 10.25; SS_tot about each column's own mean
 * 5 + 500: R² = 1 - 10.25 / 505, not 1 - 10.25 / 2530 about column 0's mean. */
TEST(regression_columns_each_about_its_mean)
{
    enum { N = 4, W = 2 };
    const float out[N * W] = {1.5f, 12, 2, 18, 2, 30, 5, 40}, y[N * W] = {1, 10, 2, 20, 3, 30, 4, 40};
    double se = 0, ae = 0, tot = 0;
    for (int j = 0; j < W; j++) {
        double mean = 0;
        for (int i = 0; i < N; i++) mean += y[i * W + j] / (double)N;
        for (int i = 0; i < N; i++) {
            double e = (double)out[i * W + j] - y[i * W + j];
            se += e * e;
            ae += fabs(e);
            tot += (y[i * W + j] - mean) * (y[i * W + j] - mean);
        }
    }
    CHECK_NEAR(tot, 505, 1e-12);   /* the recount agrees with the hand count */
    cf_metrics r;
    CHECK(cf_metrics_compute(out, W, y, W, N, 0, 0, &r) == 0);
    CHECK(r.count == N);
    CHECK_NEAR(r.mse, se / (N * W), 1e-12);
    CHECK_NEAR(r.mae, ae / (N * W), 1e-12);
    CHECK_NEAR(r.r2, 1 - se / tot, 1e-12);
    CHECK_NEAR(r.r2, 1 - 10.25 / 505, 1e-12);
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
    RUN(macro_averages_over_present_classes);
    RUN(regression_by_hand);
    RUN(regression_columns_each_about_its_mean);
    RUN(on_a_model);
    return test_summary("metrics");
}
