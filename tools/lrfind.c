/* lrfind.c - `cflux lr-find`: the learning-rate range test of the library
 * (cf_lrfind) on fresh weights: a table of the loss against the rate, the suggested
 * rate, and the same as JSON or an SVG plot (log-scaled rates, the suggestion marked). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cflux.h"
#include "commands.h"
#include "plot.h"

#define ROWS 25   /* about this many rows of the table: one screen */

/* ---- the plot ---- */

#define W 860
#define H 420
#define L 70   /* margins; the legend sits in the right one */
#define R 210
#define T 40
#define B 50

/* The plot's frame: log10 of the rates across, the loss up. */
typedef struct frame {
    double x0, x1, y0, y1;
} frame;

static double fx(const frame *f, double lr) { return L + (log10(lr) - f->x0) / (f->x1 - f->x0) * (W - L - R); }
static double fy(const frame *f, double v)
{
    v = fmin(fmax(v, f->y0), f->y1);   /* a blow-up is drawn at the top edge */
    return T + (1 - (v - f->y0) / (f->y1 - f->y0)) * (H - T - B);
}

/* One curve through the finite values of v, and its line in the legend. */
static void curve(FILE *f, const frame *fr, const cf_lrfind_result *r, const double *v, const char *style,
                  const char *label, int legend)
{
    fprintf(f, "<polyline fill=\"none\" %s points=\"", style);
    for (int i = 0; i < r->n; i++)
        if (isfinite(v[i])) fprintf(f, "%.1f,%.1f ", fx(fr, r->lr[i]), fy(fr, v[i]));
    fprintf(f, "\"/>\n");
    int y = T + 18 * legend, x = W - R + 20;
    fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" %s/>\n", x, y + 8, x + 24, y + 8, style);
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"12\">%s</text>\n", x + 30, y + 12, label);
}

/* A vertical line at rate lr, with its legend entry. */
static void mark(FILE *f, const frame *fr, double lr, const char *color, const char *what, int legend)
{
    double x = fx(fr, lr);
    fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"%s\" stroke-width=\"1.5\" "
               "stroke-dasharray=\"4,3\"/>\n", x, T, x, H - B, color);
    int y = T + 18 * legend, lx = W - R + 20;
    fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"1.5\" "
               "stroke-dasharray=\"4,3\"/>\n", lx, y + 8, lx + 24, y + 8, color);
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"12\">%s %.3g</text>\n", lx + 30, y + 12, what, lr);
}

/* The loss and the smoothed loss against the rate, as SVG written crash-safe. 0, or
 * -1 with the message printed. */
static int write_plot(const char *path, const cf_lrfind_result *r, const char *title)
{
    frame fr = {floor(log10(r->lr[0])), ceil(log10(r->lr[r->n - 1])), INFINITY, -INFINITY};
    if (fr.x1 <= fr.x0) fr.x1 = fr.x0 + 1;
    /* up: from the lowest loss to a little over the first smoothed loss; the blow-up
       past that would flatten the rest */
    for (int i = 0; i < r->n; i++) {
        if (isfinite(r->loss[i])) fr.y0 = fmin(fr.y0, r->loss[i]);
        if (isfinite(r->smooth[i])) fr.y0 = fmin(fr.y0, r->smooth[i]), fr.y1 = fmax(fr.y1, r->smooth[i]);
    }
    if (isfinite(r->smooth[0])) fr.y1 = fmin(fr.y1, 1.25 * r->smooth[0]);
    if (!(fr.y0 < fr.y1)) fr.y0 = isfinite(fr.y0) ? fr.y0 - 1 : 0, fr.y1 = isfinite(fr.y1) ? fr.y1 + 1 : 1;
    fr.y0 = fmax(0, fr.y0 - 0.05 * (fr.y1 - fr.y0));
    cf_file *out = cf_file_create(path);
    if (!out) return fail(), -1;
    FILE *f = cf_file_stream(out);
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\">\n", W, H);
    fprintf(f, "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n", W, H);
    fprintf(f, "<text x=\"%d\" y=\"22\" font-size=\"14\" text-anchor=\"middle\">", (W - R + L) / 2);
    plot_escape(f, title);
    fprintf(f, "</text>\n");
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#888\"/>\n", L, T, W - L - R,
            H - T - B);
    for (int k = 0; k <= 4; k++) {   /* the loss's grid and labels */
        double y = T + k * (H - T - B) / 4.0;
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#eee\"/>\n", L, y, W - R, y);
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">%.3g</text>\n", L - 6, y + 4,
                fr.y1 - k * (fr.y1 - fr.y0) / 4);
    }
    int every = (int)(fr.x1 - fr.x0) > 10 ? 2 : 1;   /* a label per decade, or every other */
    for (int d = (int)fr.x0; d <= (int)fr.x1; d++) {
        double x = fx(&fr, pow(10, d));
        fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#eee\"/>\n", x, T, x, H - B);
        if ((d - (int)fr.x0) % every == 0)
            fprintf(f, "<text x=\"%.1f\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\">1e%d</text>\n", x,
                    H - B + 16, d);
    }
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"middle\">learning rate (log scale)</text>\n",
            (W - R + L) / 2, H - 12);
    fprintf(f, "<text x=\"16\" y=\"%d\" font-size=\"12\" transform=\"rotate(-90 16 %d)\" text-anchor=\"middle\">loss</text>\n",
            H / 2, H / 2);
    int legend = 0;
    curve(f, &fr, r, r->loss, "stroke=\"#aec7e8\" stroke-width=\"1\"", "loss of the step", legend++);
    curve(f, &fr, r, r->smooth, "stroke=\"#1f77b4\" stroke-width=\"2\"", "smoothed loss", legend++);
    if (r->suggested_at >= 0) {
        mark(f, &fr, r->suggested, "#d62728", "suggested", legend++);
        fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"#d62728\"/>\n", fx(&fr, r->suggested),
                fy(&fr, r->smooth[r->suggested_at]));
    }
    if (r->min_at >= 0) mark(f, &fr, r->min_loss_lr, "#7f7f7f", "lowest loss", legend++);
    fprintf(f, "</svg>\n");
    if (cf_file_commit(out)) return fail(), -1;
    return 0;
}

/* ---- the command ---- */

static void json_num(double v)
{
    if (isfinite(v)) printf("%.6g", v);
    else printf("null");
}

static void json_array(const char *key, const double *v, int n)
{
    printf("\"%s\": [", key);
    for (int i = 0; i < n; i++) {
        if (i) printf(", ");
        json_num(v[i]);
    }
    printf("], ");
}

static void print_table(const cf_lrfind_result *r, int text)
{
    int every = (r->n + ROWS - 1) / ROWS;
    printf("%12s  %10s  %10s%s\n", "lr", "loss", "smoothed", text ? "  (nats/char)" : "");
    for (int i = 0; i < r->n; i++) {
        int sug = i == r->suggested_at, low = i == r->min_at;
        if (i % every && i != r->n - 1 && !sug && !low) continue;
        printf("%12.3e  %10.4f  %10.4f%s\n", r->lr[i], r->loss[i], r->smooth[i],
               sug ? "  <- suggested: the steepest fall" : low ? "  <- the lowest" : "");
    }
}

/* " NAME VALUE" (VALUE alone when NAME is NULL), VALUE quoted for a shell when it needs
 * to be; nothing when VALUE is NULL. */
static void print_arg(const char *name, const char *value)
{
    if (!value) return;
    if (name) printf(" %s", name);
    if (!*value || strpbrk(value, " \t'\"\\$`*?[]{}()<>|&;~#!")) {
        printf(" '");
        for (const char *p = value; *p; p++) printf(*p == '\'' ? "'\\''" : "%c", *p);
        printf("'");
    } else {
        printf(" %s", value);
    }
}

static void print_summary(const args *a, const cf_lrfind_result *r, int steps, const char *optim)
{
    if (r->diverged)
        printf("stopped after %d of %d steps, at lr %.3g: the loss blew up (the smoothed loss passed 4x its lowest)\n",
               r->n, steps, r->lr[r->n - 1]);
    else
        printf("%d steps; the loss did not blow up by lr %.3g: a larger --end shows where it does\n", r->n,
               r->lr[r->n - 1]);
    if (r->suggested_at < 0) {
        printf("no suggestion: %s\n", r->diverged ? "the loss blew up before it fell (try a smaller --start)"
                                                 : "the smoothed loss did not fall (try a larger --end)");
        return;
    }
    printf("lowest smoothed loss %.4f at lr %.3g; a tenth of that, the classic rule: %.3g\n", r->smooth[r->min_at],
           r->min_loss_lr, r->min_loss_lr / 10);
    printf("suggested learning rate: %.3g (where the smoothed loss falls fastest)\n", r->suggested);
    /* every option that chose the data, the loss and the optimizer, as train takes it */
    printf("train with: cflux train");
    print_arg(NULL, a->pos[0]);
    print_arg("--data", a->data);
    print_arg("--label-col", a->label_col);
    print_arg("--features", a->features);
    if (a->skip_bad) printf(" --skip-bad");
    if (a->exact_size) printf(" --exact-size");
    print_arg("--loss", a->loss);
    if (a->normalize) printf(" --normalize");
    print_arg("--optim", a->optim ? optim : NULL);
    if (!isnan(a->momentum)) printf(" --momentum %g", a->momentum);
    if (!isnan(a->wd)) printf(" --wd %g", a->wd);
    if (!isnan(a->clip)) printf(" --clip %g", a->clip);
    if (!isnan(a->batch)) printf(" --batch %d", (int)a->batch);
    if (a->has_seed) printf(" --seed %llu", (unsigned long long)a->seed);
    printf(" --lr %.3g\n", r->suggested);
}

int cmd_lrfind(const args *a)
{
    cf_lrfind_opts o = cf_lrfind_defaults();
    o.optim = cf_optim_defaults(a->optim ? a->optim : "adam");
    if (!o.optim.name) {
        fprintf(stderr, "cflux lr-find: unknown optimizer '%s' (sgd, momentum, nesterov, adam, adamw)\n", a->optim);
        return 2;
    }
    if (!isnan(a->lr_start)) o.start = a->lr_start;
    if (!isnan(a->lr_end)) o.end = a->lr_end;
    if (!isnan(a->steps)) o.steps = (int)a->steps;
    if (!isnan(a->batch)) o.batch = (int)a->batch;
    if (!isnan(a->wd)) o.optim.weight_decay = (float)a->wd;
    if (!isnan(a->momentum)) o.optim.momentum = (float)a->momentum;
    if (!isnan(a->clip)) o.optim.clip_norm = (float)a->clip;
    if (!(o.start < o.end)) {
        fprintf(stderr, "cflux lr-find: the rates must rise: --start %g is not below --end %g\n", o.start, o.end);
        return 2;
    }
    if (a->loss && strcmp(a->loss, "xent") && strcmp(a->loss, "mse")) {
        fprintf(stderr, "cflux lr-find: --loss is xent or mse, not '%s'\n", a->loss);
        return 2;
    }
    o.loss = !a->loss ? 0 : !strcmp(a->loss, "xent") ? CF_LOSS_XENT : CF_LOSS_MSE;
    o.seed = a->seed;
    o.normalize = a->normalize;
    if (data_options_fit(a, a->data, "lr-find")) return 2;
    if (apply_common(a)) return 1;
    if (a->plot && cf_file_check(a->plot)) return fail();

    cf_dataset *train = NULL, *test = NULL;
    cf_lrfind_result r = {0};
    cf_model *m = cf_model_load(a->pos[0]);
    if (!m) return fail();
    cf_model_set_seed(m, a->seed);   /* fresh weights from the seed */
    int rc = 1;
    const char *data = a->data ? a->data : "fashion-mnist";
    if (open_data(a, m, &train, &test)) goto out;
    int text = cf_dataset_vocab(train, NULL) ? cf_dataset_sample_shape(train).d[0] : 0;
    if (!a->json) {
        int nt = cf_threads();
        printf("lr-find %s on %s: %zu %s, batch %d, %s, %d steps from lr %g to %g, %d thread%s\n", a->pos[0], data,
               cf_dataset_count(train), text ? "sequences" : "samples", o.batch, o.optim.name, o.steps, o.start, o.end,
               nt, nt == 1 ? "" : "s");
        fflush(stdout);
    }
    double t0 = now();
    if (cf_lrfind(m, train, &o, &r)) goto out;
    double secs = now() - t0;
    if (a->plot && write_plot(a->plot, &r, a->pos[0])) {
        rc = 1;
        goto done;
    }
    if (a->json) {
        printf("{\"model\": ");
        json_string(stdout, a->pos[0]);
        printf(", \"optim\": \"%s\", \"batch\": %d, \"start\": %g, \"end\": %g, \"steps\": %d, \"steps_run\": %d, "
               "\"diverged\": %s, ", o.optim.name, o.batch, o.start, o.end, o.steps, r.n, r.diverged ? "true" : "false");
        json_array("lr", r.lr, r.n);
        json_array("loss", r.loss, r.n);
        json_array("smooth", r.smooth, r.n);
        printf("\"suggested_lr\": ");
        json_num(r.suggested);
        printf(", \"min_loss_lr\": ");
        json_num(r.min_loss_lr);
        printf(", \"min_loss_lr_10\": ");
        json_num(r.min_loss_lr / 10);
        printf(", \"seconds\": %.3f}\n", secs);
    } else {
        print_table(&r, text);
        print_summary(a, &r, o.steps, o.optim.name);
        if (a->plot) printf("plot: %s\n", a->plot);
    }
    rc = 0;
    goto done;
out:
    fail();
done:
    cf_lrfind_result_free(&r);
    cf_dataset_free(train);
    cf_dataset_free(test);
    cf_model_free(m);
    return rc;
}
