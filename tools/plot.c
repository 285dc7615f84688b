/* plot.c - the training curves as SVG: the loss per epoch (left axis) for train,
 * validation and test where present, and on the right axis a classifier's accuracy or
 * a regression's R² (accuracy means nothing there); also one curve y(x), the learning
 * rate's schedule. Ticks stand at round values (1, 2 or 5 × 10^k and their multiples),
 * labelled as %g writes them, at least GAP pixels apart; a loss that falls by more
 * than a factor of 10 gets a log axis (see loss_axis). A file is written through the
 * library's crash-safe writer. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cflux.h"
#include "plot.h"

#define W 860
#define H 420
#define L 78   /* margins; the legend sits in the right one */
#define R 250
#define T 40
#define B 50
#define GAP 20        /* the least distance between two tick labels (font 11), pixels */
#define MAXTICKS 24
#define EPS 1e-6      /* the figures come from floats: a value this close to a round one is it */

/* An axis: the values at its ends, its scale, and the values of its ticks. */
typedef struct axis {
    double lo, hi;
    int log;   /* log10 */
    int n;
    double tick[MAXTICKS];
} axis;

/* Where v falls along a: 0 at lo, 1 at hi. */
static double axis_frac(const axis *a, double v)
{
    return a->log ? log10(v / a->lo) / log10(a->hi / a->lo) : (v - a->lo) / (a->hi - a->lo);
}

/* 1, 2 or 5 × 10^k: the least at or above v, or the greatest at or below it (v > 0). */
static double up125(double v)
{
    double p = pow(10, floor(log10(v))), f = v / p;
    return (f <= 1 + EPS ? 1 : f <= 2 + EPS ? 2 : f <= 5 + EPS ? 5 : 10) * p;
}

static double down125(double v)
{
    double p = pow(10, floor(log10(v))), f = v / p;
    return (f >= 10 - EPS ? 10 : f >= 5 - EPS ? 5 : f >= 2 - EPS ? 2 : 1) * p;
}

/* A linear axis over lo < hi in at most most + 2 steps: the step the least of 1, 2 or
 * 5 × 10^k that makes at most `most` of them, the ends rounded out to multiples of it. */
static void axis_linear(axis *a, double lo, double hi, int most)
{
    double step = up125((hi - lo) / most), k0 = floor(lo / step + EPS), k1 = ceil(hi / step - EPS);
    a->log = 0;
    a->n = 0;
    a->lo = k0 * step;
    a->hi = k1 * step;
    for (double k = k0; k <= k1 && a->n < MAXTICKS; k++) a->tick[a->n++] = k * step;
}

/* A log axis over 0 < lo < hi, len pixels long: ticks at 1, 2 and 5 × 10^k while it
 * spans at most 3 decades and those stand GAP apart (2 to 5 is the narrowest), the
 * ends rounded out to such values; else at powers of ten, every 1st, 2nd, 5th, 10th...
 * so that they stand GAP apart, the ends rounded out to powers of ten. */
static void axis_log(axis *a, double lo, double hi, double len)
{
    static const double m[3] = {1, 2, 5};
    a->log = 1;
    a->n = 0;
    a->lo = down125(lo);
    a->hi = up125(hi);
    double decades = log10(a->hi / a->lo);
    if (decades <= 3 && len * log10(2.0) / decades >= GAP) {
        for (int e = (int)floor(log10(a->lo) + EPS); e <= (int)ceil(log10(a->hi)); e++)
            for (int i = 0; i < 3; i++) {
                double v = m[i] * pow(10, e);
                if (v >= a->lo * (1 - EPS) && v <= a->hi * (1 + EPS) && a->n < MAXTICKS) a->tick[a->n++] = v;
            }
        return;
    }
    int e0 = (int)floor(log10(lo) + EPS), e1 = (int)ceil(log10(hi) - EPS), every = 1;
    if (e1 == e0) e1++;
    a->lo = pow(10, e0);
    a->hi = pow(10, e1);
    while (len * every / (e1 - e0) < GAP) every = (int)up125(every + 1);
    for (int e = e0 - (e0 % every + every) % every; e <= e1 && a->n < MAXTICKS; e += every)
        if (e >= e0) a->tick[a->n++] = pow(10, e);
}

/* v as a tick's label: %g, its exponent without a '+' or leading zeros (2e10, 1e-5). */
static const char *tick_label(double v, char *buf, size_t size)
{
    snprintf(buf, size, "%g", v == 0 ? 0 : v);   /* not -0 */
    char *e = strchr(buf, 'e');
    if (!e) return buf;
    char *to = e + 1 + (e[1] == '-'), *from = e + 2;
    while (*from == '0' && from[1]) from++;
    memmove(to, from, strlen(from) + 1);
    return buf;
}

/* The grid lines and labels of a vertical axis over [top, top + len] at x: labels to
 * the left of x (anchor "end") or to its right ("start"), the grid from x0 to x1 (none
 * when x0 == x1), the title rotated beside them at tx. */
static void vertical_axis(FILE *f, const axis *a, int top, int len, int x, const char *anchor, int x0, int x1, int tx,
                          const char *title)
{
    char buf[32];
    for (int k = 0; k < a->n; k++) {
        double y = top + (1 - axis_frac(a, a->tick[k])) * len;
        if (x0 != x1) fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#eee\"/>\n", x0, y, x1, y);
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" font-size=\"11\" text-anchor=\"%s\">%s</text>\n", x, y + 4, anchor,
                tick_label(a->tick[k], buf, sizeof buf));
    }
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"12\" transform=\"rotate(%d %d %d)\" text-anchor=\"middle\">", tx,
            top + len / 2, *anchor == 'e' ? -90 : 90, tx, top + len / 2);
    plot_escape(f, title);
    fprintf(f, "</text>\n");
}

static double px(int i, int n) { return L + (n > 1 ? (double)i / (n - 1) : 0.5) * (W - L - R); }
static double py(const axis *a, double v) { return T + (1 - fmin(1, fmax(0, axis_frac(a, v)))) * (H - T - B); }

/* One curve on axis a; a point beyond the axis is drawn hollow at its edge. Returns
 * whether one was. */
static int series(FILE *f, const double *v, int n, const axis *a, const char *color, const char *dash,
                  const char *label, int legend)
{
    int off = 0;
    fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s%s%s points=\"", color,
            dash ? " stroke-dasharray=\"" : "", dash ? dash : "", dash ? "\"" : "");
    for (int i = 0; i < n; i++)
        if (isfinite(v[i])) fprintf(f, "%.1f,%.1f ", px(i, n), py(a, v[i]));
    fprintf(f, "\"/>\n");
    for (int i = 0; i < n; i++) {
        if (!isfinite(v[i])) continue;
        double fr = axis_frac(a, v[i]);
        int out = fr < -EPS || fr > 1 + EPS;
        off |= out;
        fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\"%s%s%s/>\n", px(i, n), py(a, v[i]),
                out ? "white" : color, out ? " stroke=\"" : "", out ? color : "", out ? "\"" : "");
    }
    int y = T + 18 * legend, x = W - R + 70;
    fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"2\"%s%s%s/>\n", x, y + 8,
            x + 24, y + 8, color, dash ? " stroke-dasharray=\"" : "", dash ? dash : "", dash ? "\"" : "");
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"12\">", x + 30, y + 12);
    plot_escape(f, label);
    fprintf(f, "</text>\n");
    return off;
}

/* text for SVG: the five characters that XML reserves escaped */
static void put_text(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default: fputc(*s, f);
        }
    }
}

int plot_write_svg(const char *path, const cf_epoch_stats *e, int n, const char *title)
{
    cf_file *out = cf_file_create(path);
    if (!out) {
        fprintf(stderr, "%s\n", cf_last_error());
        return -1;
    }
    if (plot_svg(cf_file_stream(out), e, n, title)) {
        cf_file_abort(out);
        fprintf(stderr, "error: %s: out of memory for the plot\n", path);
        return -1;
    }
    if (cf_file_commit(out)) {
        fprintf(stderr, "%s\n", cf_last_error());
        return -1;
    }
    return 0;
}

/* The least and greatest finite values of n values v[0..count) (INFINITY, -INFINITY:
 * none). */
static void span(double *const *v, int count, int n, double *lo, double *hi)
{
    *lo = INFINITY, *hi = -INFINITY;
    for (int k = 0; k < count; k++)
        for (int i = 0; i < n; i++)
            if (isfinite(v[k][i])) *lo = fmin(*lo, v[k][i]), *hi = fmax(*hi, v[k][i]);
}

/* The loss axis. Log10 when every loss is above 0 and the greatest is more than 10
 * times the least: a regression's mean squared error often falls by decades (1e4 to
 * 10), and on a linear axis everything past its first epochs, what one watches, would
 * lie flat in the lowest tenth. Else linear, the losses' own range rounded out (a
 * classifier's cross-entropy seldom falls tenfold in a run). */
static void loss_axis(axis *a, double *const *v, int n)
{
    double lo, hi;
    span(v, 3, n, &lo, &hi);
    if (!(lo <= hi)) lo = 0, hi = 1;
    if (lo > 0 && hi > 10 * lo) {
        axis_log(a, lo, hi, H - T - B);
        return;
    }
    if (lo == hi) {
        double pad = lo != 0 ? fabs(lo) / 10 : 1;
        lo = lo >= 0 ? fmax(0, lo - pad) : lo - pad, hi += pad;
    }
    axis_linear(a, lo, hi, 5);
}

/* The right axis, of accuracy (within [0, 1]) or R² (at most 1): the values' range
 * rounded out. R² below -1 (a run whose first outputs were far off) would squash the
 * rest once the model does better than the mean (R² above 0): the axis then starts at
 * -1, and those points are drawn hollow at its foot. */
static void score_axis(axis *a, double *const *v, int n, int r2)
{
    double lo, hi;
    span(v, 3, n, &lo, &hi);
    if (!(lo <= hi)) lo = 0, hi = 1;
    if (r2 && hi > 0 && lo < -1) lo = -1;
    if (hi - lo < 0.05) lo -= 0.05, hi += 0.05;
    if (!r2) lo = fmax(0, lo);
    hi = fmin(1, hi);
    axis_linear(a, lo, hi, 5);
}

int plot_svg(FILE *f, const cf_epoch_stats *e, int n, const char *title)
{
    /* train, validation and test: loss (left axis), then accuracy or R² (right axis) */
    double *v[6] = {0};
    for (int k = 0; k < 6; k++)
        if (!(v[k] = calloc((size_t)(n > 0 ? n : 1), sizeof(double)))) {
            for (int j = 0; j < k; j++) free(v[j]);
            return -1;
        }
    int acc = 0, r2 = 0;
    for (int i = 0; i < n; i++) {
        acc |= isfinite(e[i].train_accuracy) || isfinite(e[i].val_accuracy) || isfinite(e[i].test_accuracy);
        r2 |= isfinite(e[i].val_r2) || isfinite(e[i].test_r2);
    }
    r2 &= !acc;
    for (int i = 0; i < n; i++) {
        v[0][i] = e[i].train_loss, v[1][i] = e[i].val_loss, v[2][i] = e[i].test_loss;
        v[3][i] = acc ? e[i].train_accuracy : NAN;   /* regression scores no training R² */
        v[4][i] = acc ? e[i].val_accuracy : r2 ? e[i].val_r2 : NAN;
        v[5][i] = acc ? e[i].test_accuracy : r2 ? e[i].test_r2 : NAN;
    }
    axis ly, ry;
    loss_axis(&ly, v, n);
    if (acc || r2) score_axis(&ry, v + 3, n, r2);
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\">\n", W, H);
    fprintf(f, "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n", W, H);
    fprintf(f, "<text x=\"%d\" y=\"22\" font-size=\"14\" text-anchor=\"middle\">", (W - R + L) / 2);
    put_text(f, title);
    fprintf(f, "</text>\n");
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#888\"/>\n", L, T, W - L - R,
            H - T - B);
    vertical_axis(f, &ly, T, H - T - B, L - 6, "end", L, W - R, 16, ly.log ? "loss (log scale)" : "loss");
    if (acc || r2) vertical_axis(f, &ry, T, H - T - B, W - R + 6, "start", 0, 0, W - R + 50, acc ? "accuracy" : "R²");
    /* epochs: every step-th labelled, the step 1, 2 or 5 × 10^k that keeps labels of
       the widest epoch's digits apart */
    int digits = n > 0 ? snprintf(NULL, 0, "%d", e[n - 1].epoch) : 1, step = 1;
    double per = n > 1 ? (double)(W - L - R) / (n - 1) : W - L - R;
    while (step * per < 7 * digits + GAP / 2) step = (int)up125(step + 1);
    for (int i = 0; i < n; i++)
        if (e[i].epoch % step == 0)
            fprintf(f, "<text x=\"%.1f\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\">%d</text>\n", px(i, n),
                    H - B + 16, e[i].epoch);
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"middle\">epoch</text>\n", (W - R + L) / 2, H - 12);
    int legend = 0, off = 0;
    const char *names[2][6] = {{"train loss", "validation loss", "test loss", "train accuracy", "validation accuracy",
                                "test accuracy"},
                               {"train loss", "validation loss", "test loss", "", "validation R²", "test R²"}};
    const char *colors[3] = {"#1f77b4", "#2ca02c", "#d62728"};
    for (int k = 0; k < 6; k++) {
        int any = 0;
        for (int i = 0; i < n; i++) any |= isfinite(v[k][i]);
        if (any) off |= series(f, v[k], n, k < 3 ? &ly : &ry, colors[k % 3], k < 3 ? NULL : "5,3", names[r2][k], legend++);
    }
    if (off) {   /* only R² falls off its axis (score_axis) */
        char buf[32];
        int y = T + 18 * legend, x = W - R + 70;
        tick_label(ry.lo, buf, sizeof buf);
        fprintf(f, "<circle cx=\"%d\" cy=\"%d\" r=\"3\" fill=\"white\" stroke=\"#555\"/>\n", x + 12, y + 8);
        fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"12\">R² below %s, drawn at %s</text>\n", x + 30, y + 12, buf,
                buf);
    }
    fprintf(f, "</svg>\n");
    for (int k = 0; k < 6; k++) free(v[k]);
    return 0;
}

int plot_xy_svg(FILE *f, const double *x, const double *y, int n, const char *xlabel, const char *ylabel)
{
    enum { PW = 860, PH = 260, PL = 78, PR = 30, PT = 20, PB = 45 };
    double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
    for (int i = 0; i < n; i++) {
        if (!isfinite(x[i]) || !isfinite(y[i])) continue;
        xlo = fmin(xlo, x[i]), xhi = fmax(xhi, x[i]), ylo = fmin(ylo, y[i]), yhi = fmax(yhi, y[i]);
    }
    if (!(xlo < xhi)) xlo = isfinite(xlo) ? xlo - 1 : 0, xhi = isfinite(xhi) ? xhi + 1 : 1;
    if (!(ylo < yhi)) ylo = isfinite(ylo) ? ylo - 1 : 0, yhi = isfinite(yhi) ? yhi + 1 : 1;
    axis ax, ay;
    axis_linear(&ax, xlo, xhi, 8);
    axis_linear(&ay, fmin(0, ylo), yhi, 4);
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\">\n", PW,
            PH);
    fprintf(f, "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n", PW, PH);
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#888\"/>\n", PL, PT,
            PW - PL - PR, PH - PT - PB);
    vertical_axis(f, &ay, PT, PH - PT - PB, PL - 6, "end", PL, PW - PR, 16, ylabel);
    char buf[32];
    for (int k = 0; k < ax.n; k++)
        fprintf(f, "<text x=\"%.1f\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\">%s</text>\n",
                PL + axis_frac(&ax, ax.tick[k]) * (PW - PL - PR), PH - PB + 16, tick_label(ax.tick[k], buf, sizeof buf));
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"middle\">", (PW + PL - PR) / 2, PH - 8);
    put_text(f, xlabel);
    fprintf(f, "</text>\n<polyline fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"2\" points=\"");
    for (int i = 0; i < n; i++)
        if (isfinite(x[i]) && isfinite(y[i]))
            fprintf(f, "%.1f,%.1f ", PL + axis_frac(&ax, x[i]) * (PW - PL - PR),
                    PT + (1 - axis_frac(&ay, y[i])) * (PH - PT - PB));
    fprintf(f, "\"/>\n</svg>\n");
    return 0;
}

void plot_escape(FILE *f, const char *s) { put_text(f, s); }
