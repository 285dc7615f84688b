/* report.c - `cflux train --report run.html`: one self-contained page of the run,
 * rewritten (crash-safe) after every epoch so that it can be watched, and once more
 * at the end. No scripts and nothing fetched: styles inline, curves as inline SVG,
 * images as PNG data URIs. While the run goes on the page asks the browser to reload
 * it every 30 seconds (a meta refresh); the last version does not. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cflux.h"
#include "commands.h"
#include "plot.h"
#include "report.h"

#define WORST 16   /* test images shown */

static void esc(FILE *f, const char *s) { plot_escape(f, s ? s : ""); }

static void base64(FILE *f, const unsigned char *p, size_t n)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)p[i] << 16 | (i + 1 < n ? (unsigned)p[i + 1] << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
        fputc(tab[v >> 18 & 63], f);
        fputc(tab[v >> 12 & 63], f);
        fputc(i + 1 < n ? tab[v >> 6 & 63] : '=', f);
        fputc(i + 2 < n ? tab[v & 63] : '=', f);
    }
}

/* The image a sample is, when the model's input is one: (C, H, W) with C 1 or 3, or
 * a flat s·s grey. 0 when it is not. */
static int image_shape(const cf_model *m, int *c, int *h, int *w)
{
    cf_shape s = cf_model_input_shape(m, 0);
    int k = s.rank > 0 && s.d[0] == CF_BATCH, r = s.rank - k;
    if (r == 3 && (s.d[k] == 1 || s.d[k] == 3)) {
        *c = s.d[k], *h = s.d[k + 1], *w = s.d[k + 2];
        return 1;
    }
    if (r == 1) {
        int side = (int)lround(sqrt((double)s.d[k]));
        if (side > 1 && side * side == s.d[k]) {
            *c = 1, *h = *w = side;
            return 1;
        }
    }
    return 0;
}

/* Sample x (c planes of h×w in 0..1) as an <img> of a PNG. */
static void put_image(FILE *f, const float *x, int c, int h, int w)
{
    unsigned char *px = malloc((size_t)c * h * w), *png = NULL;
    size_t len = 0;
    if (!px) return;
    for (int y = 0; y < h; y++)
        for (int i = 0; i < w; i++)
            for (int k = 0; k < c; k++) {
                float v = x[((size_t)k * h + y) * w + i];
                px[((size_t)y * w + i) * c + k] = (unsigned char)lrintf(255 * fminf(1, fmaxf(0, v)));
            }
    if (cf_png_encode(px, w, h, c, &png, &len) == 0) {
        fprintf(f, "<img width=\"%d\" height=\"%d\" alt=\"test image\" src=\"data:image/png;base64,", w * 3, h * 3);
        base64(f, png, len);
        fprintf(f, "\">");
    }
    free(png);
    free(px);
}

static const char *style =
    "body{font-family:sans-serif;margin:2em auto;max-width:1000px;color:#222}"
    "h1{font-size:1.5em;margin-bottom:.2em}h2{font-size:1.15em;margin-top:1.6em;border-bottom:1px solid #ddd}"
    "pre{background:#f6f6f6;padding:.8em;overflow-x:auto;font-size:12px}"
    "table{border-collapse:collapse;font-size:13px}td,th{padding:3px 8px;text-align:right}"
    "th{background:#f0f0f0}td.l,th.l{text-align:left}.status{color:#555}"
    "table.cm td{width:2.6em;text-align:center}"
    ".imgs{display:flex;flex-wrap:wrap;gap:12px}.imgs figure{margin:0;font-size:12px;width:110px}"
    ".imgs img{image-rendering:pixelated;border:1px solid #ccc;display:block}"
    "footer{margin-top:2em;color:#777;font-size:12px}";

static void settings_table(FILE *f, const report *r)
{
    fprintf(f, "<table>");
    for (int i = 0; i < r->nsettings; i++) {
        fprintf(f, "<tr><th class=\"l\">");
        esc(f, r->settings[i][0]);
        fprintf(f, "</th><td class=\"l\">");
        esc(f, r->settings[i][1]);
        fprintf(f, "</td></tr>");
    }
    fprintf(f, "</table>\n");
}

/* A figure of the history: four decimals, or four digits in %g's way when that would
 * hide it (a regression's loss of 2.3e10), as `cflux train` prints it; "-" for NaN. */
static void put_cell(FILE *f, double v)
{
    char buf[32];
    fprintf(f, "<td>%s</td>", isfinite(v) ? fmt_num(v, buf) : "-");
}

/* Each epoch's figures: a classifier's loss and accuracy, a regression's loss, MAE and
 * R² (it has no accuracy; it scores no MAE or R² in training). */
static void history_table(FILE *f, const cf_epoch_stats *h, int n, int best, int regression)
{
    if (regression)
        fprintf(f, "<table><tr><th>epoch</th><th>train loss</th><th>val loss</th><th>val MAE</th><th>val R²</th>"
                   "<th>test loss</th><th>test MAE</th><th>test R²</th><th>learning rate</th><th>seconds</th></tr>\n");
    else
        fprintf(f, "<table><tr><th>epoch</th><th>train loss</th><th>train acc</th><th>val loss</th><th>val acc</th>"
                   "<th>test loss</th><th>test acc</th><th>learning rate</th><th>seconds</th></tr>\n");
    for (int i = 0; i < n; i++) {
        const double c[6] = {h[i].train_loss, h[i].train_accuracy, h[i].val_loss, h[i].val_accuracy,
                             h[i].test_loss, h[i].test_accuracy};
        const double r[7] = {h[i].train_loss, h[i].val_loss, h[i].val_mae, h[i].val_r2,
                             h[i].test_loss, h[i].test_mae, h[i].test_r2};
        fprintf(f, "<tr%s><td>%d</td>", h[i].epoch == best ? " style=\"font-weight:bold\"" : "", h[i].epoch);
        for (int k = 0; k < (regression ? 7 : 6); k++) put_cell(f, regression ? r[k] : c[k]);
        fprintf(f, "<td>%.3g</td><td>%.1f</td></tr>\n", h[i].lr, h[i].seconds);
    }
    fprintf(f, "</table>\n");
}

/* The confusion matrix as a heat map (each row shaded by its share of the row), the
 * per-class table, and the worst-classified images. */
static void test_sections(FILE *f, const report *r, const float *out, const cf_metrics *mt)
{
    char buf[32];
    int k = mt->classes;
    fprintf(f, "<h2>Test set: confusion matrix</h2>\n<p>Rows: the true class; columns: the predicted one. "
               "Accuracy %.4f on %zu samples.</p>\n<table class=\"cm\"><tr><th></th>", mt->accuracy, mt->count);
    for (int p = 0; p < k; p++) fprintf(f, "<th>%d</th>", p);
    fprintf(f, "</tr>\n");
    for (int t = 0; t < k; t++) {
        fprintf(f, "<tr><th class=\"l\">%d ", t);
        esc(f, class_name(r->m, t, buf, sizeof buf));
        fprintf(f, "</th>");
        long row = mt->support[t] ? mt->support[t] : 1;
        for (int p = 0; p < k; p++) {
            long v = mt->confusion[(size_t)t * k + p];
            double share = (double)v / (double)row;
            int shade = (int)lround(255 * (1 - share));
            const char *hue = t == p ? "rgb(%d,%d,255)" : "rgb(255,%d,%d)";
            fprintf(f, "<td style=\"background:");
            fprintf(f, hue, shade, shade);
            fprintf(f, ";color:%s\">%ld</td>", share > 0.5 ? "white" : "black", v);
        }
        fprintf(f, "</tr>\n");
    }
    fprintf(f, "</table>\n<h2>Per class</h2>\n<table><tr><th class=\"l\">class</th><th>precision</th><th>recall</th>"
               "<th>F1</th><th>support</th></tr>\n");
    for (int c = 0; c < k; c++) {
        fprintf(f, "<tr><td class=\"l\">%d ", c);
        esc(f, class_name(r->m, c, buf, sizeof buf));
        fprintf(f, "</td><td>%.4f</td><td>%.4f</td><td>%.4f</td><td>%ld</td></tr>\n", mt->precision[c], mt->recall[c],
                mt->f1[c], mt->support[c]);
    }
    fprintf(f, "<tr><td class=\"l\">macro average</td><td>%.4f</td><td>%.4f</td><td>%.4f</td><td>%zu</td></tr>"
               "</table>\n", mt->macro_precision, mt->macro_recall, mt->macro_f1, mt->count);
    int c, h, w;
    if (!image_shape(r->m, &c, &h, &w) || cf_dataset_target_size(r->test) != 1) return;
    /* the lowest probabilities given to the true class */
    size_t n = cf_dataset_count(r->test), worst[WORST];
    int nw = 0;
    const float *y = cf_dataset_y(r->test);
    for (size_t i = 0; i < n; i++) {
        float pi = out[i * (size_t)k + (size_t)y[i]];
        int at = nw < WORST ? nw++ : WORST;
        while (at > 0 && out[worst[at - 1] * (size_t)k + (size_t)y[worst[at - 1]]] > pi) {
            if (at < WORST) worst[at] = worst[at - 1];
            at--;
        }
        if (at < WORST) worst[at] = i;
    }
    fprintf(f, "<h2>Worst-classified test images</h2>\n<p>The %d test images given the lowest probability of their "
               "true class.</p>\n<div class=\"imgs\">\n", nw);
    size_t per = cf_shape_count(cf_dataset_sample_shape(r->test));
    float *img = malloc(per * sizeof *img);   /* one image at a time: a streamed test set decodes it */
    if (!img) nw = 0;
    for (int j = 0; j < nw; j++) {
        size_t i = worst[j];
        const float *p = out + i * (size_t)k;
        int t = (int)y[i], best = 0;
        for (int q = 1; q < k; q++)
            if (p[q] > p[best]) best = q;
        fprintf(f, "<figure>");
        if (cf_dataset_read(r->test, i, 1, img)) memset(img, 0, per * sizeof *img);   /* a file gone bad: black */
        put_image(f, img, c, h, w);
        fprintf(f, "<figcaption>#%zu<br>true: ", i);
        esc(f, class_name(r->m, t, buf, sizeof buf));
        fprintf(f, " (%.3f)<br>predicted: ", (double)p[t]);
        esc(f, class_name(r->m, best, buf, sizeof buf));
        fprintf(f, " (%.3f)</figcaption></figure>\n", (double)p[best]);
    }
    free(img);
    fprintf(f, "</div>\n");
}

static void page(FILE *f, const report *r, const char *status, int final, const float *out, const cf_metrics *mt)
{
    const cf_epoch_stats *h;
    int n = cf_trainer_history(r->t, &h), best = 0;
    if (r->val) cf_early_stop(&h[0].val_loss, sizeof *h, n, 0, &best);
    fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n");
    if (!final) fprintf(f, "<meta http-equiv=\"refresh\" content=\"30\">\n");
    fprintf(f, "<title>cflux: ");
    esc(f, r->model);
    fprintf(f, "</title>\n<style>%s</style></head><body>\n<h1>", style);
    esc(f, r->model);
    fprintf(f, "</h1>\n<p class=\"status\">");
    esc(f, status);
    fprintf(f, "</p>\n<h2>Command</h2>\n<pre>");
    esc(f, r->command);
    fprintf(f, "</pre>\n<h2>Settings</h2>\n");
    settings_table(f, r);
    if (r->summary) {
        fprintf(f, "<h2>Model</h2>\n<pre>");
        esc(f, r->summary);
        fprintf(f, "</pre>\n");
    }
    int regression = cf_trainer_loss(r->t) != CF_LOSS_XENT, scored = 0;   /* R² on validation or test data */
    for (int i = 0; i < n; i++) scored |= isfinite(h[i].val_r2) || isfinite(h[i].test_r2);
    fprintf(f, "<h2>%s</h2>\n", !regression ? "Loss and accuracy" : scored ? "Loss and R²" : "Loss");
    plot_svg(f, h, n, r->model);
    history_table(f, h, n, best, regression);
    if (r->nlr) {
        fprintf(f, "<h2>Learning rate</h2>\n");
        plot_xy_svg(f, r->lr_x, r->lr_y, r->nlr, "epoch", "learning rate");
    }
    if (out && mt && mt->classes) test_sections(f, r, out, mt);
    time_t now_t = time(NULL);
    char when[64];
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", gmtime(&now_t));
    fprintf(f, "<footer>Written by cflux %s at %s, on ", cf_version(), when);
    esc(f, cf_cpu_name());
    fprintf(f, ".</footer>\n</body></html>\n");
}

int report_write(report *r, const char *status, int final)
{
    float *out = NULL;
    cf_metrics mt = {0};
    int have = 0;
    if (r->test && !r->text && cf_dataset_classes(r->test) > 0) {
        size_t n = cf_dataset_count(r->test), k = cf_shape_count(cf_model_output_shape(r->m, 0));
        out = malloc((n ? n : 1) * k * sizeof *out);
        have = out && cf_predict(r->m, r->test, 256, out) == 0 &&
               cf_metrics_compute(out, k, cf_dataset_y(r->test), cf_dataset_target_size(r->test), n, 1, 0, &mt) == 0;
    }
    cf_file *file = cf_file_create(r->path);
    if (!file) {
        free(out);
        cf_metrics_free(&mt);
        return fail();
    }
    page(cf_file_stream(file), r, status, final, have ? out : NULL, have ? &mt : NULL);
    free(out);
    cf_metrics_free(&mt);
    return cf_file_commit(file) ? fail() : 0;
}
