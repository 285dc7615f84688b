/* classes.c - the names of a model's classes (--classes FILE, Fashion-MNIST's built
 * in), training and evaluating on some of the classes (--only-classes), and
 * evaluation's metrics as the tool prints them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cflux.h"
#include "commands.h"

static const char *const fashion[] = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                      "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};

int class_names_set(cf_model *m, const char *path, const char *data, const cf_dataset *d)
{
    if (!path) {
        const char *const *have;
        if (cf_model_class_names(m, &have)) return 0;   /* a checkpoint's */
        int nd = cf_dataset_class_names(d, &have);   /* the data's class names when it has them */
        if (nd) return cf_model_set_class_names(m, have, nd) ? fail() : 0;
        cf_shape out = cf_model_output_shape(m, 0);
        int fm = !data || !strcmp(data, "fashion-mnist");
        if (fm && out.rank == 2 && out.d[1] == 10) return cf_model_set_class_names(m, fashion, 10) ? fail() : 0;
        return 0;
    }
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "error: %s: cannot open the class names\n", path);
        return 1;
    }
    enum { MAXC = 4096 };
    static char lines[MAXC][128];
    const char *names[MAXC];
    int n = 0, rc = 0;
    char buf[512];
    while (fgets(buf, sizeof buf, f)) {
        size_t len = strcspn(buf, "\r\n");
        buf[len] = 0;
        if (!len) continue;   /* blank lines: none */
        if (n == MAXC || len >= sizeof lines[0]) {
            fprintf(stderr, "error: %s: %s\n", path, n == MAXC ? "more than 4096 class names" : "a name over 100 bytes");
            rc = 1;
            break;
        }
        memcpy(lines[n], buf, len + 1);
        names[n] = lines[n];
        n++;
    }
    fclose(f);
    if (rc) return rc;
    if (cf_model_set_class_names(m, names, n)) {
        fprintf(stderr, "error: %s: %s\n", path, cf_last_error() + (strncmp(cf_last_error(), "error: ", 7) ? 0 : 7));
        return 1;
    }
    return 0;
}

/* names, ", "-separated, cut short past about 300 bytes. */
static void names_str(const char *const *names, int n, char *buf, size_t size)
{
    size_t k = 0;
    buf[0] = 0;
    for (int i = 0; i < n && k < size; i++) {
        if (k > 300) {
            snprintf(buf + k, size - k, ", ... (%d in all)", n);
            break;
        }
        k += (size_t)snprintf(buf + k, size - k, "%s%s", i ? ", " : "", names[i]);
    }
}

int class_names_from_data(cf_model *m, const cf_dataset *d)
{
    const char *const *dn, *const *mn;
    int n = cf_dataset_class_names(d, &dn), k = cf_model_class_names(m, &mn), same = k == n;
    if (!n) return 0;
    for (int i = 0; same && i < n; i++) same = !strcmp(dn[i], mn[i]);
    if (same) return 0;
    char a[400], b[400];
    names_str(dn, n, a, sizeof a);
    names_str(mn, k, b, sizeof b);
    if (k) {
        fprintf(stderr, "error: %s: the labels are the classes %s, but the model's are %s\n", cf_dataset_name(d), a, b);
        return 1;
    }
    cf_shape out = cf_model_output_shape(m, 0);
    int want = out.rank ? out.d[out.rank - 1] : 0;
    if (want != n) {
        fprintf(stderr, "error: %s: the labels are %d classes (%s), but the model's output gives %d; a classifier of "
                        "them ends with softmax over %d\n", cf_dataset_name(d), n, a, want, n);
        return 1;
    }
    return cf_model_set_class_names(m, dn, n) ? fail() : 0;
}

const char *class_name(const cf_model *m, int c, char *buf, size_t size)
{
    const char *const *names;
    int n = cf_model_class_names(m, &names);
    if (c >= 0 && c < n) return names[c];
    snprintf(buf, size, "%d", c);
    return buf;
}

static void json_val(FILE *f, double v)
{
    if (isfinite(v)) fprintf(f, "%.6g", v);
    else fprintf(f, "null");
}

void metrics_print(const cf_model *m, const cf_metrics *r, FILE *f)
{
    char buf[32];
    if (!r->classes) {
        fprintf(f, "MSE %.6g, MAE %.6g, R² %.4f\n", r->mse, r->mae, r->r2);
        return;
    }
    int k = r->classes, w = 11;
    for (int c = 0; c < k; c++) {
        int len = (int)strlen(class_name(m, c, buf, sizeof buf));
        if (len + 4 > w) w = len + 4 < 28 ? len + 4 : 28;
    }
    if (k > 30) {
        fprintf(f, "(%d classes: the confusion matrix and per-class figures are in --json)\n", k);
        return;
    }
    fprintf(f, "confusion matrix (rows: the true class; columns: the predicted one, by number):\n");
    fprintf(f, "%*s", w, "");
    for (int c = 0; c < k; c++) fprintf(f, " %5d", c);
    fprintf(f, "\n");
    for (int t = 0; t < k; t++) {
        fprintf(f, "%3d %-*.*s", t, w - 4, w - 4, class_name(m, t, buf, sizeof buf));
        for (int p = 0; p < k; p++) fprintf(f, " %5ld", r->confusion[(size_t)t * k + p]);
        fprintf(f, "\n");
    }
    /* the figures' columns, wide enough for the classes and for "macro average" */
    int wf = w > 17 ? w : 17;
    fprintf(f, "%*s %9s %7s %7s %8s\n", wf, "", "precision", "recall", "F1", "support");
    for (int c = 0; c < k; c++)
        fprintf(f, "%3d %-*.*s %9.4f %7.4f %7.4f %8ld\n", c, wf - 4, w - 4, class_name(m, c, buf, sizeof buf),
                r->precision[c], r->recall[c], r->f1[c], r->support[c]);
    fprintf(f, "%-*s %9.4f %7.4f %7.4f %8zu\n", wf, "macro average", r->macro_precision, r->macro_recall, r->macro_f1,
            r->count);
}

void metrics_json(const cf_model *m, const cf_metrics *r, FILE *f)
{
    char buf[32];
    if (!r->classes) {
        fprintf(f, "\"mse\": ");
        json_val(f, r->mse);
        fprintf(f, ", \"mae\": ");
        json_val(f, r->mae);
        fprintf(f, ", \"r2\": ");
        json_val(f, r->r2);
        return;
    }
    int k = r->classes;
    if (r->top_k) {
        fprintf(f, "\"top_k\": %d, \"top_k_accuracy\": ", r->top_k);
        json_val(f, r->top_k_accuracy);
        fprintf(f, ", ");
    }
    fprintf(f, "\"classes\": [");
    for (int c = 0; c < k; c++) {
        if (c) fprintf(f, ", ");
        json_string(f, class_name(m, c, buf, sizeof buf));
    }
    fprintf(f, "], \"confusion\": [");
    for (int t = 0; t < k; t++) {
        fprintf(f, "%s[", t ? ", " : "");
        for (int p = 0; p < k; p++) fprintf(f, "%s%ld", p ? ", " : "", r->confusion[(size_t)t * k + p]);
        fprintf(f, "]");
    }
    fprintf(f, "], \"per_class\": [");
    for (int c = 0; c < k; c++) {
        fprintf(f, "%s{\"precision\": ", c ? ", " : "");
        json_val(f, r->precision[c]);
        fprintf(f, ", \"recall\": ");
        json_val(f, r->recall[c]);
        fprintf(f, ", \"f1\": ");
        json_val(f, r->f1[c]);
        fprintf(f, ", \"support\": %ld}", r->support[c]);
    }
    fprintf(f, "], \"macro_precision\": ");
    json_val(f, r->macro_precision);
    fprintf(f, ", \"macro_recall\": ");
    json_val(f, r->macro_recall);
    fprintf(f, ", \"macro_f1\": ");
    json_val(f, r->macro_f1);
}

/* The class names --only-classes may use: the data's, else Fashion-MNIST's for its
 * data. The count (0: none). */
static int names_of_data(const args *a, const cf_dataset *d, const char *const **names)
{
    int n = cf_dataset_class_names(d, names);
    if (n) return n;
    if (a->data && strcmp(a->data, "fashion-mnist")) return 0;
    *names = fashion;
    return 10;
}

/* One item of --only-classes: a class's name, a number or a range "A-B". The classes
 * it stands for go to keep[*n ...]: 0, or 1 with the message. */
static int class_item(const char *item, const char *const *names, int nnames, int *keep, int *n, int max)
{
    int lo = -1, hi = -1;
    for (int c = 0; c < nnames && lo < 0; c++)
        if (!strcmp(item, names[c])) lo = hi = c;
    char *end;
    if (lo < 0 && *item >= '0' && *item <= '9') {
        lo = hi = (int)strtol(item, &end, 10);
        if (*end == '-' && end[1] >= '0' && end[1] <= '9') hi = (int)strtol(end + 1, &end, 10);
        if (*end || hi < lo || hi > 1 << 20) lo = -1;
    }
    if (lo < 0) {
        char list[400];
        names_str(names, nnames, list, sizeof list);
        fprintf(stderr, "error: --only-classes: '%s' is not a class: give class numbers, ranges such as 0-4, or the "
                        "classes' names, separated by commas%s%s\n", item, nnames ? "; the classes: " : "", list);
        return 1;
    }
    for (int c = lo; c <= hi; c++) {
        if (*n == max) {
            fprintf(stderr, "error: --only-classes: more than %d classes\n", max);
            return 1;
        }
        keep[(*n)++] = c;
    }
    return 0;
}

/* Replace *d (NULL: nothing) by its samples of the kept classes. 0 or -1. */
static int keep_in(cf_dataset **d, const int *keep, int n)
{
    if (!*d) return 0;
    cf_dataset *part = cf_dataset_keep_classes(*d, keep, n);
    if (!part) return -1;
    cf_dataset_free(*d);
    *d = part;
    return 0;
}

int only_classes(cf_model *m, const args *a, cf_dataset **train, cf_dataset **test)
{
    if (!a->only_classes) return 0;
    enum { MAXK = 1024 };
    static int keep[MAXK];
    const char *const *names;
    int nnames = names_of_data(a, *train, &names), n = 0;
    for (const char *p = a->only_classes; *p;) {
        size_t len = strcspn(p, ",");
        char item[256];
        snprintf(item, sizeof item, "%.*s", (int)(len < sizeof item ? len : sizeof item - 1), p);
        if (class_item(item, names, nnames, keep, &n, MAXK)) return 1;
        p += len + (p[len] == ',');
    }
    cf_shape out = cf_model_output_shape(m, 0);
    int want = out.rank ? out.d[out.rank - 1] : 0;
    if (want != n) {
        fprintf(stderr, "error: --only-classes %s keeps %d classes, but the model's output gives %d; a classifier of "
                        "them ends with softmax over %d\n", a->only_classes, n, want, n);
        return 1;
    }
    if (keep_in(train, keep, n) || keep_in(test, keep, n)) return fail();
    if (cf_dataset_class_names(*train, NULL) || !nnames) return 0;   /* the data's names came along */
    const char *kept[MAXK];
    for (int i = 0; i < n; i++) kept[i] = keep[i] < nnames ? names[keep[i]] : "";
    const char *const *have;
    int k = cf_model_class_names(m, &have), same = k == n;
    for (int i = 0; same && i < n; i++) same = !strcmp(have[i], kept[i]);
    if (k && !same) {
        char x[400], y[400];
        names_str(kept, n, x, sizeof x);
        names_str(have, k, y, sizeof y);
        fprintf(stderr, "error: --only-classes %s keeps the classes %s, but the model's are %s\n", a->only_classes, x, y);
        return 1;
    }
    return cf_model_set_class_names(m, kept, n) ? fail() : 0;
}
