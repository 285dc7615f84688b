/* spec.c - data specs, as the tool takes them: "fashion-mnist", "idx:A,B[,C,D]",
 * "csv:TRAIN[,TEST]", "images:DIR[,TESTDIR]", "text:PATH" (a file, a folder, or files
 * and folders separated by commas), opened into a training set and perhaps a test set; and inputs
 * for prediction, IDX or CSV told apart by their first bytes. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "data/data.h"

#define FASHION_DIR "/usr/share/datasets/fashion-mnist"
#define FORMS "fashion-mnist, idx:TRAIN_IMAGES,TRAIN_LABELS[,TEST_IMAGES,TEST_LABELS], csv:TRAIN[,TEST], " \
              "images:DIR[,TESTDIR] or text:FILE"

/* The share of a text held out as its test set: its end. */
#define TEXT_HELD_OUT 0.1

/* Split s at commas into at most max parts (copied into one block, *block to free). */
static int split_commas(const char *s, char **parts, int max, char **block)
{
    char *b = strdup(s);
    if (!b) return cf_oom(strlen(s) + 1);
    int n = 0;
    for (char *p = b;; n++) {
        char *c = strchr(p, ',');
        if (n < max) parts[n] = p;
        if (!c) {
            n++;
            break;
        }
        *c = 0;
        p = c + 1;
    }
    *block = b;
    return n;
}

/* The test set must fit the model that the training set fits. */
static int same_form(const cf_dataset *train, const cf_dataset *test)
{
    cf_shape a = cf_dataset_sample_shape(train), b = cf_dataset_sample_shape(test);
    int same = a.rank == b.rank && cf_dataset_target_size(train) == cf_dataset_target_size(test);
    for (int i = 0; same && i < a.rank; i++) same = a.d[i] == b.d[i];
    if (same) return 0;
    char sa[64] = "(", sb[64] = "(";
    for (int i = 0; i < a.rank; i++) snprintf(sa + strlen(sa), sizeof sa - strlen(sa), "%s%d", i ? ", " : "", a.d[i]);
    for (int i = 0; i < b.rank; i++) snprintf(sb + strlen(sb), sizeof sb - strlen(sb), "%s%d", i ? ", " : "", b.d[i]);
    return cf_seterr("error: the test set does not match the training set: %s has samples of shape %s), %s has %s)",
                     cf_dataset_name(test), sb, cf_dataset_name(train), sa);
}

/* Open a training set and a test set (either pair of paths may be NULL for the test
 * set) with load; 0 or -1 with nothing left allocated. */
static int open_idx(const char *ti, const char *tl, const char *vi, const char *vl, cf_dataset **train,
                    cf_dataset **test)
{
    cf_dataset *tr = cf_dataset_load_idx(ti, tl), *te = NULL;
    if (!tr) return -1;
    if (vi) {
        te = cf_dataset_load_idx(vi, vl);
        if (!te || same_form(tr, te)) {
            cf_dataset_free(tr);
            cf_dataset_free(te);
            return -1;
        }
    }
    *train = tr;
    *test = te;
    return 0;
}

static int open_fashion(cf_dataset **train, cf_dataset **test)
{
    static const char *files[4] = {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                                   "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"};
    const char *env = getenv("CFLUX_DATA");
    const char *dir = env && *env ? env : FASHION_DIR;
    char path[4][4096];
    for (int i = 0; i < 4; i++) {
        size_t dl = strlen(dir);
        int slash = dl && dir[dl - 1] == '/';
        if ((size_t)snprintf(path[i], sizeof path[i], "%s%s%s", dir, slash ? "" : "/", files[i]) >= sizeof path[i])
            return cf_seterr("error: fashion-mnist: the directory name %.64s... is too long", dir);
        struct stat st;
        if (stat(path[i], &st) == 0) continue;
        if (errno != ENOENT && errno != ENOTDIR)
            return cf_seterr("error: fashion-mnist: %s: cannot open: %s", path[i], strerror(errno));
        if (env && *env)
            return cf_seterr("error: fashion-mnist: %s is missing (the directory comes from CFLUX_DATA=%s; unset it "
                             "to use %s)", path[i], dir, FASHION_DIR);
        return cf_seterr("error: fashion-mnist: %s is missing; install it with: apt-get install dataset-fashion-mnist",
                         path[i]);
    }
    return open_idx(path[0], path[1], path[2], path[3], train, test);
}

/* csv:TRAIN[,TEST] as o says. Word labels of the test file are the training file's
 * classes (or those known, o->class_names); both files' labels are words, or neither's. */
static int open_csv(char **p, int n, const cf_data_opts *o, cf_dataset **train, cf_dataset **test)
{
    cf_csv_opts c = {.has_label = 1, .label_col = o->label_col, .label = o->label, .features = o->features,
                     .header = -1, .class_names = o->class_names, .nclass_names = o->nclass_names,
                     .classes_of = o->classes_of};
    cf_dataset *tr = cf_data_csv_load(p[0], &c), *te = NULL;
    if (!tr) return -1;
    if (n == 2) {
        const char *const *names;
        int k = cf_dataset_class_names(tr, &names);
        if (k) {
            c.class_names = names;
            c.nclass_names = k;
            if (!o->nclass_names) c.classes_of = p[0];
        }
        te = cf_data_csv_load(p[1], &c);
        int tk = te ? cf_dataset_class_names(te, NULL) : 0;
        if (te && (k > 0) != (tk > 0))
            cf_seterr("error: %s: the labels are %s, but those of %s are %s", p[1], tk ? "words" : "numbers", p[0],
                      k ? "words" : "numbers");
        if (!te || (k > 0) != (tk > 0) || same_form(tr, te)) {
            cf_dataset_free(tr);
            cf_dataset_free(te);
            return -1;
        }
    }
    *train = tr;
    *test = te;
    return 0;
}

/* Suggest a form for a spec that looks like a bare path. */
static const char *hint(const char *spec)
{
    size_t n = strlen(spec);
    struct stat st;
    if (stat(spec, &st) == 0 && S_ISDIR(st.st_mode)) return " (a folder of class folders of images is written images:DIR)";
    if (n >= 4 && (strcmp(spec + n - 4, ".csv") == 0 || (n >= 7 && strcmp(spec + n - 7, ".csv.gz") == 0)))
        return " (a CSV file is written csv:PATH)";
    if (strstr(spec, "ubyte") || strstr(spec, ".idx")) return " (IDX files are written idx:IMAGES,LABELS)";
    if (n >= 4 && strcmp(spec + n - 4, ".txt") == 0) return " (a text file is written text:PATH)";
    if (strcmp(spec, "mnist") == 0 || strcmp(spec, "fashion_mnist") == 0 || strcmp(spec, "fashionmnist") == 0)
        return " (did you mean fashion-mnist?)";
    return "";
}

/* An IDX file starts with a zero byte, which no CSV file of numbers does. */
cf_dataset *cf_dataset_load_inputs(const char *path)
{
    if (!path) {
        cf_seterr("error: cf_dataset_load_inputs: no path");
        return NULL;
    }
    gzFile f = cf_data_gzopen(path);
    if (!f) return NULL;
    /* one byte looked at and pushed back, so that a pipe is read once */
    int first = gzgetc(f);
    if (first != -1 && gzungetc(first, f) == -1) {
        gzclose(f);
        cf_seterr("error: %s: cannot read it", path);
        return NULL;
    }
    cf_dataset *d = first == 0 ? cf_data_idx_inputs(f, path) : cf_data_csv_inputs(f, path);
    gzclose(f);
    return d;
}

cf_data_opts cf_data_defaults(void) { return (cf_data_opts){0}; }

int cf_data_open(const char *spec, int csv_label_col, cf_dataset **train, cf_dataset **test)
{
    return cf_data_open_ex(spec, csv_label_col, 0, train, test);
}

int cf_data_open_ex(const char *spec, int csv_label_col, int seq_len, cf_dataset **train, cf_dataset **test)
{
    cf_data_opts o = cf_data_defaults();
    o.label_col = csv_label_col;
    o.seq_len = seq_len;
    return cf_data_open_opts(spec, &o, train, test);
}

int cf_data_open_opts(const char *spec, const cf_data_opts *o, cf_dataset **train, cf_dataset **test)
{
    if (train) *train = NULL;
    if (test) *test = NULL;
    if (!o) return cf_seterr("error: cf_data_open_opts: no options");
    int seq_len = o->seq_len;
    if (!spec || !train || !test) return cf_seterr("error: cf_data_open: no spec or no place for the datasets");
    if (strcmp(spec, "fashion-mnist") == 0) return open_fashion(train, test);
    if (strncmp(spec, "text:", 5) == 0) {
        /* the rest is the path, commas and all (cf_dataset_load_text splits a list) */
        if (!spec[5])
            return cf_seterr("error: data spec '%s': text: takes a file name, a folder, or file names separated by "
                             "commas: text:PATH", spec);
        if (seq_len < 1)
            return cf_seterr("error: data spec '%s': text data takes its sequence length T from the model, whose "
                             "input must be one sequence of T character indices, shape (T)", spec);
        return cf_dataset_load_text(spec + 5, seq_len, TEXT_HELD_OUT, train, test);
    }

    if (strncmp(spec, "images:", 7) == 0) {
        char *p[2], *block = NULL;
        int n = split_commas(spec + 7, p, 2, &block);
        if (n < 0) return -1;
        int rc = n > 2 || !*p[0] || (n == 2 && !*p[1])
                     ? cf_seterr("error: data spec '%s': images: takes 1 or 2 folders separated by a comma: "
                                 "images:DIR[,TESTDIR]", spec)
                     : cf_data_images_open(p[0], n == 2 ? p[1] : NULL, o, train, test);
        free(block);
        return rc;
    }
    int idx = strncmp(spec, "idx:", 4) == 0, csv = strncmp(spec, "csv:", 4) == 0;
    if (!idx && !csv) return cf_seterr("error: unknown data spec '%s'%s; use %s", spec, hint(spec), FORMS);
    char *p[4], *block = NULL;
    int n = split_commas(spec + 4, p, 4, &block);
    if (n < 0) return -1;
    int rc = -1;
    int ok_count = idx ? (n == 2 || n == 4) : (n == 1 || n == 2);
    int empty = 0;
    for (int i = 0; i < n && i < 4; i++) empty |= !*p[i];
    if (!ok_count || empty) {
        if (idx)
            cf_seterr("error: data spec '%s': idx: takes 2 or 4 file names separated by commas: "
                      "idx:TRAIN_IMAGES,TRAIN_LABELS[,TEST_IMAGES,TEST_LABELS]", spec);
        else
            cf_seterr("error: data spec '%s': csv: takes 1 or 2 file names separated by commas: csv:TRAIN[,TEST]", spec);
    } else if (idx) {
        rc = open_idx(p[0], p[1], n == 4 ? p[2] : NULL, n == 4 ? p[3] : NULL, train, test);
    } else {
        rc = open_csv(p, n, o, train, test);
    }
    free(block);
    return rc;
}

/* The note "input_range": the least and the greatest of d's inputs, every element of
 * every sample, as "MIN MAX" (%.9g, which reads back as the same float), so that
 * predict and eval can tell inputs of another scale (raw 0..255 pixels fed to a model
 * trained on [0, 1]). One pass over the inputs in memory. An image folder (streamed)
 * is not decoded for it: its readers scale every pixel to [0, 1] (pixels.c), and that
 * is the range noted. No note for indices (text, an embedding's input), whose scale is
 * no question, nor for data without a finite value. 0 or -1. */
int cf_model_note_input_range(cf_model *m, const cf_dataset *d)
{
    if (!m || !d) return cf_seterr("error: cf_model_note_input_range: no model or data");
    if (cf_dataset_sequential(d) || cf_model_input_classes(m, 0)) return cf_model_set_info(m, "input_range", NULL);
    double lo = 0, hi = 1;
    int any = cf_dataset_streamed(d);
    const float *x = cf_dataset_x(d);
    size_t n = x ? cf_dataset_count(d) * cf_shape_count(cf_dataset_sample_shape(d)) : 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(x[i])) continue;
        if (!any) lo = hi = x[i];
        if (x[i] < lo) lo = x[i];
        if (x[i] > hi) hi = x[i];
        any = 1;
    }
    char range[64];
    snprintf(range, sizeof range, "%.9g %.9g", lo, hi);
    return cf_model_set_info(m, "input_range", any ? range : NULL);
}

int cf_model_note_data(cf_model *m, const char *spec, const cf_dataset *d, const char *features,
                       const char *only_classes)
{
    if (!m || !spec || !d) return cf_seterr("error: cf_model_note_data: no model, spec or data");
    char label[256] = "", cols[32];
    int col = cf_dataset_label_column(d);
    const char *name = col >= 0 ? cf_dataset_column_name(d, col) : NULL;
    if (name && *name) snprintf(label, sizeof label, "%s", name);
    else if (col >= 0) snprintf(label, sizeof label, "%d", col);
    snprintf(cols, sizeof cols, "%d", cf_dataset_column_count(d));
    if (cf_model_set_info(m, "data", spec) || cf_model_set_info(m, "label", *label ? label : NULL) ||
        cf_model_set_info(m, "columns", cf_dataset_column_count(d) ? cols : NULL) ||
        cf_model_set_info(m, "features", features) || cf_model_set_info(m, "only_classes", only_classes) ||
        cf_model_note_input_range(m, d))
        return -1;
    return 0;
}
