/* plot.c - the training curves as an SVG file: loss (left axis) and accuracy (right
 * axis) per epoch, for train, validation and test where present. Written through the
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
#define L 70   /* margins; the legend sits in the right one */
#define R 250
#define T 40
#define B 50

static double px(int i, int n) { return L + (n > 1 ? (double)i / (n - 1) : 0.5) * (W - L - R); }
static double py(double v, double lo, double hi) { return T + (1 - (v - lo) / (hi - lo)) * (H - T - B); }

static void series(FILE *f, const double *v, int n, double lo, double hi, const char *color, const char *dash,
                   const char *label, int legend)
{
    int any = 0;
    for (int i = 0; i < n; i++) any |= isfinite(v[i]);
    if (!any) return;
    fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s%s%s points=\"", color,
            dash ? " stroke-dasharray=\"" : "", dash ? dash : "", dash ? "\"" : "");
    for (int i = 0; i < n; i++)
        if (isfinite(v[i])) fprintf(f, "%.1f,%.1f ", px(i, n), py(v[i], lo, hi));
    fprintf(f, "\"/>\n");
    for (int i = 0; i < n; i++)
        if (isfinite(v[i])) fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\"/>\n", px(i, n), py(v[i], lo, hi), color);
    int y = T + 18 * legend, x = W - R + 70;
    fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"2\"%s%s%s/>\n", x, y + 8,
            x + 24, y + 8, color, dash ? " stroke-dasharray=\"" : "", dash ? dash : "", dash ? "\"" : "");
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"12\">%s</text>\n", x + 30, y + 12, label);
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

int plot_svg(FILE *f, const cf_epoch_stats *e, int n, const char *title)
{
    double *v[6] = {0};
    for (int k = 0; k < 6; k++)
        if (!(v[k] = calloc((size_t)(n > 0 ? n : 1), sizeof(double)))) {
            for (int j = 0; j < k; j++) free(v[j]);
            return -1;
        }
    double lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < n; i++) {
        v[0][i] = e[i].train_loss, v[1][i] = e[i].val_loss, v[2][i] = e[i].test_loss;
        v[3][i] = e[i].train_accuracy, v[4][i] = e[i].val_accuracy, v[5][i] = e[i].test_accuracy;
        for (int k = 0; k < 3; k++)
            if (isfinite(v[k][i])) lo = fmin(lo, v[k][i]), hi = fmax(hi, v[k][i]);
    }
    if (!(lo < hi)) lo = isfinite(lo) ? lo - 1 : 0, hi = isfinite(hi) ? hi + 1 : 1;
    lo = fmax(0, lo - 0.05 * (hi - lo));
    /* accuracy: from a little below its lowest to a little above its highest, within [0, 1] */
    double alo = INFINITY, ahi = -INFINITY;
    for (int i = 0; i < n; i++)
        for (int k = 3; k < 6; k++)
            if (isfinite(v[k][i])) alo = fmin(alo, v[k][i]), ahi = fmax(ahi, v[k][i]);
    if (!(alo <= ahi)) alo = 0, ahi = 1;
    alo = fmax(0, floor(alo * 20 - 1) / 20);
    ahi = fmin(1, ceil(ahi * 20 + 0.5) / 20);
    if (!(alo < ahi)) alo = 0, ahi = 1;
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\">\n", W, H);
    fprintf(f, "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n", W, H);
    fprintf(f, "<text x=\"%d\" y=\"22\" font-size=\"14\" text-anchor=\"middle\">", (W - R + L) / 2);
    put_text(f, title);
    fprintf(f, "</text>\n");
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#888\"/>\n", L, T, W - L - R,
            H - T - B);
    for (int k = 0; k <= 4; k++) {   /* grid and both axes' labels */
        double fy = T + k * (H - T - B) / 4.0;
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#eee\"/>\n", L, fy, W - R, fy);
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">%.3g</text>\n", L - 6, fy + 4,
                hi - k * (hi - lo) / 4);
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" font-size=\"11\">%.3g</text>\n", W - R + 6, fy + 4,
                ahi - k * (ahi - alo) / 4);
    }
    for (int i = 0; i < n; i++)
        if (n <= 20 || i % (n / 10 + 1) == 0 || i == n - 1)
            fprintf(f, "<text x=\"%.1f\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\">%d</text>\n", px(i, n),
                    H - B + 16, e[i].epoch);
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"middle\">epoch</text>\n", (W - R + L) / 2, H - 12);
    fprintf(f, "<text x=\"16\" y=\"%d\" font-size=\"12\" transform=\"rotate(-90 16 %d)\" text-anchor=\"middle\">loss</text>\n",
            H / 2, H / 2);
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"12\" transform=\"rotate(90 %d %d)\" text-anchor=\"middle\">accuracy</text>\n",
            W - R + 50, H / 2, W - R + 50, H / 2);
    int legend = 0;
    const char *names[6] = {"train loss", "validation loss", "test loss", "train accuracy", "validation accuracy",
                            "test accuracy"};
    const char *colors[3] = {"#1f77b4", "#2ca02c", "#d62728"};
    for (int k = 0; k < 6; k++) {
        int any = 0;
        for (int i = 0; i < n; i++) any |= isfinite(v[k][i]);
        if (!any) continue;
        series(f, v[k], n, k < 3 ? lo : alo, k < 3 ? hi : ahi, colors[k % 3], k < 3 ? NULL : "5,3", names[k], legend++);
    }
    fprintf(f, "</svg>\n");
    for (int k = 0; k < 6; k++) free(v[k]);
    return 0;
}

int plot_xy_svg(FILE *f, const double *x, const double *y, int n, const char *xlabel, const char *ylabel)
{
    enum { PW = 860, PH = 260, PL = 70, PR = 30, PT = 20, PB = 45 };
    double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
    for (int i = 0; i < n; i++) {
        if (!isfinite(x[i]) || !isfinite(y[i])) continue;
        xlo = fmin(xlo, x[i]), xhi = fmax(xhi, x[i]), ylo = fmin(ylo, y[i]), yhi = fmax(yhi, y[i]);
    }
    if (!(xlo < xhi)) xlo = isfinite(xlo) ? xlo - 1 : 0, xhi = isfinite(xhi) ? xhi + 1 : 1;
    if (!(ylo < yhi)) ylo = isfinite(ylo) ? ylo - 1 : 0, yhi = isfinite(yhi) ? yhi + 1 : 1;
    ylo = fmin(0, ylo);
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\">\n", PW,
            PH);
    fprintf(f, "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n", PW, PH);
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#888\"/>\n", PL, PT,
            PW - PL - PR, PH - PT - PB);
    for (int k = 0; k <= 4; k++) {
        double fy = PT + k * (PH - PT - PB) / 4.0, fx = PL + k * (PW - PL - PR) / 4.0;
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#eee\"/>\n", PL, fy, PW - PR, fy);
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">%.3g</text>\n", PL - 6, fy + 4,
                yhi - k * (yhi - ylo) / 4);
        fprintf(f, "<text x=\"%.1f\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\">%.4g</text>\n", fx, PH - PB + 16,
                xlo + k * (xhi - xlo) / 4);
    }
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"middle\">", (PW + PL - PR) / 2, PH - 8);
    put_text(f, xlabel);
    fprintf(f, "</text>\n<text x=\"16\" y=\"%d\" font-size=\"12\" transform=\"rotate(-90 16 %d)\" "
               "text-anchor=\"middle\">", PH / 2, PH / 2);
    put_text(f, ylabel);
    fprintf(f, "</text>\n<polyline fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"2\" points=\"");
    for (int i = 0; i < n; i++)
        if (isfinite(x[i]) && isfinite(y[i]))
            fprintf(f, "%.1f,%.1f ", PL + (x[i] - xlo) / (xhi - xlo) * (PW - PL - PR),
                    PT + (1 - (y[i] - ylo) / (yhi - ylo)) * (PH - PT - PB));
    fprintf(f, "\"/>\n</svg>\n");
    return 0;
}

void plot_escape(FILE *f, const char *s) { put_text(f, s); }
