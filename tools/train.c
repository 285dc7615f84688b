/* train.c - `cflux train`, `cflux eval`, `cflux predict`: the training loop of the
 * library, with progress on a terminal, plain lines elsewhere, and CSV, SVG and JSON
 * records of the run. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cflux.h"
#include "commands.h"
#include "plot.h"

typedef struct run {
    const char *model_path, *data, *save, *resume, *log, *plot, *params, *schedule, *optim;
    int epochs, batch, threads, json, quiet, label_col, stop_after;
    double lr, wd, clip, val, momentum;
    unsigned long long seed;
    /* state during training */
    int tty;
    double last_draw, start;
    plot_epoch *hist;
    int nhist;
    FILE *logf;
    int save_failed;
    cf_trainer *trainer;
    size_t weights;
} run;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int usage_error(const char *cmd, const char *what, const char *arg)
{
    fprintf(stderr, "cflux %s: %s%s%s%s (try 'cflux help')\n", cmd, what, arg ? " '" : "", arg ? arg : "",
            arg ? "'" : "");
    return 2;
}

static int fail(void)
{
    fprintf(stderr, "%s\n", cf_last_error());
    return 1;
}

/* Numbers from the command line; -1 (and a message) when malformed. */
static int num_arg(const char *cmd, const char *opt, const char *s, double lo, double hi, double *out)
{
    char *end;
    double v = s ? strtod(s, &end) : 0;
    if (!s || !*s || *end || !(v >= lo && v <= hi)) {
        char what[128];
        snprintf(what, sizeof what, "%s needs a number from %g to %g, not", opt, lo, hi);
        usage_error(cmd, what, s ? s : "(nothing)");
        return -1;
    }
    *out = v;
    return 0;
}

static const char *fmt_num(double v, char *buf)
{
    if (isnan(v)) return "-";
    snprintf(buf, 32, "%.4f", v);
    return buf;
}

/* ---- progress ---- */

static void on_batch(int epoch, long step, long steps, double loss, double acc, double sps, void *user)
{
    run *r = user;
    if (!r->tty || r->quiet) return;
    double t = now();
    if (step != steps && t - r->last_draw < 0.1) return;
    r->last_draw = t;
    int width = 24, fill = (int)(width * step / steps);
    char bar[32];
    for (int i = 0; i < width; i++) bar[i] = i < fill ? '=' : i == fill ? '>' : ' ';
    bar[width] = 0;
    double eta = sps > 0 ? (double)(steps - step) * (double)r->batch / sps : 0;
    char b1[32];
    fprintf(stderr, "\repoch %d/%d [%s] %3d%%  loss %.4f  acc %s  %.0f samples/s  ETA %.0fs \033[K", epoch, r->epochs,
            bar, (int)(100 * step / steps), loss, fmt_num(acc, b1), sps, eta);
    fflush(stderr);
}

static int on_epoch(const cf_epoch_stats *s, void *user)
{
    run *r = user;
    char a[32], b[32], c[32], d[32], e[32], f[32];
    if (r->tty && !r->quiet) fprintf(stderr, "\r\033[K");
    if (!r->quiet)
        printf("epoch %2d/%d  train loss %s acc %s | val loss %s acc %s | test loss %s acc %s | %.1f s, %.0f samples/s\n",
               s->epoch, s->epochs, fmt_num(s->train_loss, a), fmt_num(s->train_accuracy, b), fmt_num(s->val_loss, c),
               fmt_num(s->val_accuracy, d), fmt_num(s->test_loss, e), fmt_num(s->test_accuracy, f), s->seconds,
               s->samples_per_sec);
    fflush(stdout);
    plot_epoch *h = realloc(r->hist, (size_t)(r->nhist + 1) * sizeof *h);
    if (h) {
        r->hist = h;
        h[r->nhist++] = (plot_epoch){s->epoch, s->train_loss, s->val_loss, s->test_loss, s->train_accuracy,
                                     s->val_accuracy, s->test_accuracy};
    }
    if (r->logf) {
        fprintf(r->logf, "%d,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.3f,%.0f\n", s->epoch, s->train_loss,
                s->train_accuracy, s->val_loss, s->val_accuracy, s->test_loss, s->test_accuracy, s->lr, s->seconds,
                s->samples_per_sec);
        fflush(r->logf);
    }
    if (r->save && cf_trainer_save(r->trainer, r->save)) {
        fprintf(stderr, "%s\n", cf_last_error());
        r->save_failed = 1;
        return 1;   /* stop: a checkpoint we cannot write is data we would lose */
    }
    return r->stop_after && s->epoch >= r->stop_after;
}

/* ---- train ---- */

static int parse_train(int argc, char **argv, run *r, const char *cmd)
{
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        double x;
#define NUM(opt, lo, hi, dst) \
    if (!strcmp(a, opt)) { if (num_arg(cmd, opt, v, lo, hi, &x)) return -1; dst = x; i++; continue; }
#define STR(opt, dst) \
    if (!strcmp(a, opt)) { if (!v) { usage_error(cmd, opt " needs a value", NULL); return -1; } dst = v; i++; continue; }
        NUM("--epochs", 1, 1e6, r->epochs)
        NUM("--stop-after", 1, 1e6, r->stop_after)
        NUM("--batch", 1, 1 << 20, r->batch)
        NUM("--lr", 1e-12, 1e6, r->lr)
        NUM("--wd", 0, 1e6, r->wd)
        NUM("--clip", 0, 1e12, r->clip)
        NUM("--val", 0, 0.99, r->val)
        NUM("--momentum", 0, 0.9999, r->momentum)
        NUM("--threads", 1, 1024, r->threads)
        NUM("--seed", 0, 1e18, r->seed)
        NUM("--label-col", -1e6, 1e6, r->label_col)
        STR("--data", r->data)
        STR("--optim", r->optim)
        STR("--schedule", r->schedule)
        STR("--save", r->save)
        STR("--resume", r->resume)
        STR("--log", r->log)
        STR("--plot", r->plot)
        STR("--params", r->params)
#undef NUM
#undef STR
        if (!strcmp(a, "--json")) { r->json = 1; continue; }
        if (!strcmp(a, "--quiet")) { r->quiet = 1; continue; }
        if (a[0] == '-' && a[1]) { usage_error(cmd, "unknown option", a); return -1; }
        if (r->model_path) { usage_error(cmd, "takes one model file; also got", a); return -1; }
        r->model_path = a;
    }
    if (!r->model_path) {
        usage_error(cmd, "needs a model file", NULL);
        return -1;
    }
    return 0;
}

static void json_num(const char *key, double v, int last)
{
    if (isfinite(v)) printf("\"%s\": %.6g%s", key, v, last ? "" : ", ");
    else printf("\"%s\": null%s", key, last ? "" : ", ");
}

int cmd_train(int argc, char **argv)
{
    run r = {0};
    r.data = "fashion-mnist";
    r.epochs = 10;
    r.batch = 64;
    r.optim = "adam";
    r.schedule = "cosine";
    r.momentum = -1;
    r.wd = -1;
    if (parse_train(argc, argv, &r, "train")) return 2;
    cf_optim_opts oo = cf_optim_defaults(r.optim);
    if (!oo.name) return usage_error("train", "unknown optimizer (sgd, momentum, nesterov, adam, adamw):", r.optim);
    if (r.lr > 0) oo.lr = (float)r.lr;
    if (r.wd >= 0) oo.weight_decay = (float)r.wd;
    if (r.momentum >= 0) oo.momentum = (float)r.momentum;
    oo.clip_norm = (float)r.clip;
    if (r.threads) cf_set_threads(r.threads);
    float lr0;
    if (cf_schedule_lr(r.schedule, 1, 0, 1, 1, &lr0)) return fail();

    cf_dataset *train = NULL, *test = NULL;
    cf_model *m = cf_model_load(r.model_path);
    int rc = 1;
    if (!m) return fail();
    cf_model_set_seed(m, r.seed);
    if (cf_data_open(r.data, r.label_col, &train, &test)) goto out;
    cf_fit_opts fo = cf_fit_defaults();
    fo.epochs = r.epochs;
    fo.batch = r.batch;
    fo.optim = oo;
    fo.schedule = r.schedule;
    fo.val_fraction = r.val;
    fo.seed = r.seed;
    fo.on_epoch = on_epoch;
    fo.on_batch = on_batch;
    fo.user = &r;
    if (!(r.trainer = cf_trainer_new(m, train, &fo))) goto out;
    if (r.resume && cf_trainer_load(r.trainer, r.resume)) goto out;
    if (r.log) {
        if (!(r.logf = fopen(r.log, "w"))) {
            fprintf(stderr, "error: %s: cannot write the log\n", r.log);
            rc = 1;
            goto done;
        }
        fprintf(r.logf, "epoch,train_loss,train_accuracy,val_loss,val_accuracy,test_loss,test_accuracy,lr,seconds,"
                        "samples_per_sec\n");
    }
    r.tty = isatty(fileno(stderr));
    r.weights = cf_model_weight_count(m);
    if (!r.quiet)
        printf("training %s on %s: %zu train%s%zu test samples, %zu weights, %s lr %g, batch %d, %d thread%s\n",
               r.model_path, r.data, cf_dataset_count(train), r.val > 0 ? " (less a validation split), " : ", ",
               test ? cf_dataset_count(test) : 0, r.weights, oo.name, (double)oo.lr, r.batch, cf_threads(),
               cf_threads() == 1 ? "" : "s");
    r.start = now();
    int first = cf_trainer_epoch(r.trainer);
    if (cf_fit(r.trainer, train, test)) goto out;
    if (r.save_failed) goto done;
    double secs = now() - r.start;
    if (r.plot && plot_write_svg(r.plot, r.hist, r.nhist, r.model_path)) {
        fprintf(stderr, "error: %s: cannot write the plot\n", r.plot);
        goto done;
    }
    const plot_epoch *last = r.nhist ? &r.hist[r.nhist - 1] : NULL;
    double samples = (double)cf_dataset_count(train) * (1 - r.val) * (cf_trainer_epoch(r.trainer) - first);
    double sps = secs > 0 ? samples / secs : 0;   /* evaluation included: what a user waits for */
    if (last && !r.quiet && !isnan(last->test_acc)) printf("test accuracy %.4f\n", last->test_acc);
    if (r.save && !r.quiet) printf("saved %s\n", r.save);
    if (r.json) {
        printf("{");
        printf("\"epochs\": %d, ", cf_trainer_epoch(r.trainer));
        json_num("train_loss", last ? last->train_loss : NAN, 0);
        json_num("train_accuracy", last ? last->train_acc : NAN, 0);
        json_num("val_loss", last ? last->val_loss : NAN, 0);
        json_num("val_accuracy", last ? last->val_acc : NAN, 0);
        json_num("test_loss", last ? last->test_loss : NAN, 0);
        json_num("test_accuracy", last ? last->test_acc : NAN, 0);
        json_num("samples_per_sec", sps, 0);
        json_num("seconds", secs, 0);
        printf("\"params\": %zu}\n", r.weights);
    }
    rc = 0;
    goto done;
out:
    fail();
done:
    if (r.logf) fclose(r.logf);
    free(r.hist);
    cf_trainer_free(r.trainer);
    cf_dataset_free(train);
    cf_dataset_free(test);
    cf_model_free(m);
    return rc;
}

/* ---- eval ---- */

int cmd_eval(int argc, char **argv)
{
    run r = {0};
    r.data = "fashion-mnist";
    r.batch = 256;
    if (parse_train(argc, argv, &r, "eval")) return 2;
    if (!r.params) return usage_error("eval", "needs --params CHECKPOINT", NULL);
    if (r.threads) cf_set_threads(r.threads);
    cf_dataset *train = NULL, *test = NULL;
    cf_model *m = cf_model_load(r.model_path);
    int rc = 1;
    if (!m) return fail();
    if (cf_data_open(r.data, r.label_col, &train, &test)) goto out;
    const cf_dataset *d = test ? test : train;
    if (cf_model_add_loss(m, cf_dataset_classes(d) > 0 ? CF_LOSS_XENT : CF_LOSS_MSE)) goto out;
    if (cf_model_load_params(m, r.params)) goto out;
    double loss, acc;
    if (cf_evaluate(m, d, r.batch, &loss, &acc)) goto out;
    if (r.json) {
        printf("{\"samples\": %zu, ", cf_dataset_count(d));
        json_num("loss", loss, 0);
        json_num("accuracy", acc, 1);
        printf("}\n");
    } else {
        printf("%s on %s (%zu samples): loss %.4f", r.model_path, test ? "the test set" : "the data",
               cf_dataset_count(d), loss);
        if (!isnan(acc)) printf(", accuracy %.4f", acc);
        printf("\n");
    }
    rc = 0;
    goto done;
out:
    fail();
done:
    cf_dataset_free(train);
    cf_dataset_free(test);
    cf_model_free(m);
    return rc;
}

/* ---- predict ---- */

int cmd_predict(int argc, char **argv)
{
    const char *model = NULL, *params = NULL, *input = NULL;
    int json = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--params")) {
            if (i + 1 >= argc) return usage_error("predict", "--params needs a checkpoint", NULL);
            params = argv[++i];
        } else if (!strcmp(argv[i], "--json")) {
            json = 1;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return usage_error("predict", "unknown option", argv[i]);
        } else if (!model) {
            model = argv[i];
        } else if (!input) {
            input = argv[i];
        } else {
            return usage_error("predict", "takes a model and an input file; also got", argv[i]);
        }
    }
    if (!model || !input || !params) return usage_error("predict", "usage: cflux predict MODEL --params CKPT INPUT", NULL);
    cf_model *m = cf_model_load(model);
    if (!m) return fail();
    cf_dataset *d = cf_dataset_load_inputs(input);
    int rc = 1;
    float *out = NULL;
    if (!d || cf_model_load_params(m, params)) goto out;
    size_t n = cf_dataset_count(d), k = cf_shape_count(cf_model_output_shape(m, 0));
    if (!(out = malloc(n * k * sizeof *out))) goto out;
    if (cf_predict(m, d, 256, out)) goto out;
    int classify = cf_model_output_count(m) > 0 && !strcmp(cf_model_output_op(m, 0), "softmax");
    if (json) printf("[");
    for (size_t i = 0; i < n; i++) {
        const float *p = out + i * k;
        if (classify) {
            size_t best = 0;
            for (size_t c = 1; c < k; c++)
                if (p[c] > p[best]) best = c;
            if (json) printf("%s{\"class\": %zu, \"probability\": %.6g}", i ? ", " : "", best, (double)p[best]);
            else printf("%zu: class %zu (p = %.4f)\n", i, best, (double)p[best]);
        } else {
            if (json) printf("%s[", i ? ", " : "");
            else printf("%zu:", i);
            for (size_t c = 0; c < k; c++) printf(json ? "%s%.6g" : "%s %.6g", json && c ? ", " : "", (double)p[c]);
            printf(json ? "]" : "\n");
        }
    }
    if (json) printf("]\n");
    rc = 0;
    goto done;
out:
    fail();
done:
    free(out);
    cf_dataset_free(d);
    cf_model_free(m);
    return rc;
}
