/* folder.c - an image folder as a dataset (images:DIR[,TESTDIR]): one subfolder per
 * class, its images in it and in its subfolders, listed but not decoded (a streamed
 * dataset: stream.h).
 *
 * The list is the same on every machine: entries are sorted by strcmp at every level
 * and walked depth first. Class folders sorted so are the class indices (or, given the
 * classes already known, a trained model's, they map to those by name). An image is a
 * file named .png, .jpg or .jpeg, in any case; hidden entries (a name starting with a
 * dot) and files of other names are passed over and counted. Links are followed; a
 * folder reached a second time (the same device and inode: a link loop, or two links
 * to one folder) is an error naming it, as is nesting past CF_FOLDER_DEPTH.
 *
 * Each image is checked once when the folder is opened: its header read (PNG or JPEG,
 * its size, which --exact-size compares), or, with skip_bad, the whole file decoded,
 * so that every file skipped is skipped before training. A file that fails later is
 * an error when it is read. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "core/error.h"
#include "core/mem.h"
#include "data/data.h"
#include "data/png.h"
#include "data/stream.h"

/* Folders below a class folder, at most. */
#define CF_FOLDER_DEPTH 32

typedef struct scan {
    const char *spec_dir;         /* the folder as given, for messages */
    struct { dev_t dev; ino_t ino; } *seen;
    size_t nseen, capseen;
    cf_source *src;
    int *label;                   /* a label per file of src, grown with it */
    size_t caplabel;
    size_t ignored;
} scan;

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The names in folder path but . and .., sorted: the count, or -1 with the error.
 * *names and its strings are malloc'd (free_names). */
static int list_dir(const char *path, char ***names)
{
    DIR *d = opendir(path);
    if (!d) return cf_seterr("error: %s: cannot open the folder: %s", path, strerror(errno));
    char **v = NULL;
    int n = 0, cap = 0;
    struct dirent *e;
    errno = 0;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            char **w = realloc(v, (size_t)cap * sizeof *w);
            if (!w) goto oom;
            v = w;
        }
        if (!(v[n] = strdup(e->d_name))) goto oom;
        n++;
    }
    if (errno) {
        int err = errno;
        closedir(d);
        for (int i = 0; i < n; i++) free(v[i]);
        free(v);
        return cf_seterr("error: %s: cannot read the folder: %s", path, strerror(err));
    }
    closedir(d);
    if (n) qsort(v, (size_t)n, sizeof *v, cmp_str);
    *names = v;
    return n;
oom:
    closedir(d);
    for (int i = 0; i < n; i++) free(v[i]);
    free(v);
    return cf_oom(256);
}

static void free_names(char **v, int n)
{
    for (int i = 0; i < n; i++) free(v[i]);
    free(v);
}

/* path/name, malloc'd; NULL when out of memory. */
static char *join(const char *path, const char *name)
{
    size_t a = strlen(path), b = strlen(name);
    int slash = a && path[a - 1] == '/';
    char *p = malloc(a + b + 2);
    if (!p) return cf_oom(a + b + 2), NULL;
    memcpy(p, path, a);
    if (!slash) p[a++] = '/';
    memcpy(p + a, name, b + 1);
    return p;
}

static int is_image_name(const char *name)
{
    const char *dot = strrchr(name, '.');
    return dot && (!strcasecmp(dot, ".png") || !strcasecmp(dot, ".jpg") || !strcasecmp(dot, ".jpeg"));
}

/* Remember folder st; a second visit is an error naming path. */
static int visit(scan *s, const struct stat *st, const char *path)
{
    for (size_t i = 0; i < s->nseen; i++)
        if (s->seen[i].dev == st->st_dev && s->seen[i].ino == st->st_ino)
            return cf_seterr("error: %s: a folder read already (a link loop, or two links to one folder); images:%s "
                             "reads each folder once", path, s->spec_dir);
    if (s->nseen == s->capseen) {
        size_t cap = s->capseen ? 2 * s->capseen : 32;
        void *w = realloc(s->seen, cap * sizeof *s->seen);
        if (!w) return cf_oom(cap * sizeof *s->seen);
        s->seen = w;
        s->capseen = cap;
    }
    s->seen[s->nseen].dev = st->st_dev;
    s->seen[s->nseen].ino = st->st_ino;
    s->nseen++;
    return 0;
}

static int add_file(scan *s, const char *path, int64_t bytes, int label)
{
    if (s->src->n == s->caplabel) {
        size_t cap = s->caplabel ? 2 * s->caplabel : 256;
        int *w = realloc(s->label, cap * sizeof *w);
        if (!w) return cf_oom(cap * sizeof *w);
        s->label = w;
        s->caplabel = cap;
    }
    s->label[s->src->n] = label;
    return cf_source_add(s->src, path, bytes);
}

/* The images under folder path (already visited), as class label. */
static int walk(scan *s, const char *path, int label, int depth)
{
    char **names;
    int n = list_dir(path, &names), rc = 0;
    if (n < 0) return -1;
    for (int i = 0; i < n && !rc; i++) {
        if (names[i][0] == '.') {
            s->ignored++;
            continue;
        }
        char *p = join(path, names[i]);
        struct stat st;
        if (!p) {
            rc = -1;
        } else if (stat(p, &st) != 0) {
            if (is_image_name(names[i])) rc = add_file(s, p, -1, label);   /* said when it is checked */
            else s->ignored++;
        } else if (S_ISDIR(st.st_mode)) {
            if (depth >= CF_FOLDER_DEPTH)
                rc = cf_seterr("error: %s: folders nested more than %d deep in a class folder", p, CF_FOLDER_DEPTH);
            else rc = visit(s, &st, p) || walk(s, p, label, depth + 1) ? -1 : 0;
        } else if (S_ISREG(st.st_mode) && is_image_name(names[i])) {
            rc = add_file(s, p, (int64_t)st.st_size, label);
        } else {
            s->ignored++;
        }
        free(p);
    }
    free_names(names, n);
    return rc;
}

/* The class of folder name: its index in known (nknown > 0), else in the sorted names
 * of the folder's own classes. -1 with the error naming it when it is not there. */
static int class_of(const char *name, const char *const *known, int nknown, const char *dir, const char *against)
{
    for (int i = 0; i < nknown; i++)
        if (!strcmp(known[i], name)) return i;
    char list[512] = "";
    for (int i = 0; i < nknown && strlen(list) < 400; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", known[i]);
    if (strlen(list) >= 400) snprintf(list + strlen(list), sizeof list - strlen(list), ", ...");
    cf_seterr("error: %s: the class folder '%s' is not one of the %d classes of %s (%s)", dir, name, nknown, against,
              list);
    return -1;
}

/* One folder's classes and images into s (src made), classes mapped to known when
 * nknown > 0 (against: where they came from, for the message), else named by
 * *names and *nnames (the sorted class folders, malloc'd). 0 or -1. */
static int scan_folder(scan *s, const char *dir, const char *const *known, int nknown, const char *against,
                       char ***names, int *nnames)
{
    struct stat st;
    if (stat(dir, &st) != 0) return cf_seterr("error: images:%s: cannot open the folder: %s", dir, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return cf_seterr("error: images:%s: not a folder; images:DIR takes a folder of class folders", dir);
    if (visit(s, &st, dir)) return -1;
    char **v;
    int n = list_dir(dir, &v), nclass = 0, rc = 0;
    if (n < 0) return -1;
    for (int i = 0; i < n; i++) {   /* the class folders first: they are the classes */
        char *name = v[i], *p = rc || name[0] == '.' ? NULL : join(dir, name);
        v[i] = NULL;
        if (!rc && name[0] != '.' && !p) rc = -1;
        if (p && stat(p, &st) == 0 && S_ISDIR(st.st_mode)) {
            v[nclass++] = name;
        } else {
            s->ignored += !rc;
            free(name);
        }
        free(p);
    }
    n = nclass;
    if (!rc && n == 0)
        rc = cf_seterr("error: images:%s: no class folders; images:DIR takes one subfolder per class, each holding "
                       "that class's images (.png, .jpg, .jpeg)", dir);
    for (int i = 0; i < n && !rc; i++) {
        int label = nknown ? class_of(v[i], known, nknown, dir, against) : i;
        char *p = label < 0 ? NULL : join(dir, v[i]);
        size_t before = s->src->n;
        if (!p || stat(p, &st) != 0 || visit(s, &st, p) || walk(s, p, label, 0)) rc = -1;
        else if (s->src->n == before)
            rc = cf_seterr("error: %s: the class folder holds no images (.png, .jpg or .jpeg, in it or in its "
                           "subfolders)", p);
        free(p);
    }
    if (rc || !names) {
        free_names(v, n);
        return rc;
    }
    *names = v;
    *nnames = n;
    return 0;
}

/* Check every file of s (probe its header, or with full decode it whole): a bad one is
 * an error, or with skip_bad dropped and counted into d. 0 or -1. */
static int check_files(scan *s, int skip_bad, size_t *bad, char **first_bad)
{
    cf_source *src = s->src;
    size_t sample = (size_t)src->c * (size_t)src->h * (size_t)src->w, kept = 0;
    float *buf = skip_bad ? cf_mem_alloc(sample * sizeof *buf, "an image checked") : NULL;
    if (skip_bad && !buf) return -1;
    for (size_t i = 0; i < src->n; i++) {
        int w, h, rc;
        const char *path = src->path[i];
        if (skip_bad) rc = cf_source_decode(src, i, buf);
        else if (!(rc = cf_image_probe(path, &w, &h)) && src->exact && (w != src->w || h != src->h))
            rc = cf_seterr("error: %s: the image is %dx%d and the model takes %dx%d; --exact-size refuses other "
                           "sizes (without it they are resized)", path, w, h, src->w, src->h);
        if (rc && !skip_bad) {
            cf_mem_free(buf);
            return -1;
        }
        if (rc) {
            if (!*first_bad) {
                const char *m = cf_last_error();
                if (!strncmp(m, "error: ", 7)) m += 7;
                if (!(*first_bad = strdup(m))) {
                    cf_mem_free(buf);
                    return cf_oom(strlen(m) + 1);
                }
            }
            ++*bad;
            free(src->path[i]);
            continue;
        }
        src->path[kept] = src->path[i];
        src->bytes[kept] = src->bytes[i];
        s->label[kept++] = s->label[i];
    }
    cf_mem_free(buf);
    src->n = kept;
    return 0;
}

static void scan_free(scan *s)
{
    free(s->seen);
    free(s->label);
    cf_source_free(s->src);
}

/* A folder's dataset: scanned and checked, classes named by names (nnames), labels
 * from known. NULL with the error. */
static cf_dataset *open_folder(const char *dir, const cf_data_opts *o, cf_shape shape, int c, int h, int w,
                               const char *const *known, int nknown, const char *against, char ***names, int *nnames)
{
    scan s = {.spec_dir = dir};
    size_t bad = 0;
    char *first_bad = NULL;
    size_t dl = strlen(dir);
    if ((s.src = cf_source_new(c, h, w, o->exact_size, dl + (dl && dir[dl - 1] != '/')))) s.src->cache_decided = o->stream_only;
    if (!s.src ||
        scan_folder(&s, dir, known, nknown, against, names, nnames) || check_files(&s, o->skip_bad, &bad, &first_bad)) {
        scan_free(&s);
        free(first_bad);
        if (names && *names) free_names(*names, *nnames), *names = NULL;
        return NULL;
    }
    if (s.src->n == 0) {
        cf_seterr("error: images:%s: none of its %zu images could be read: first %s", dir, bad, first_bad);
        scan_free(&s);
        free(first_bad);
        if (names && *names) free_names(*names, *nnames), *names = NULL;
        return NULL;
    }
    size_t n = s.src->n;
    float *y = cf_mem_alloc(n * sizeof *y, "the images' labels");
    cf_dataset *d = y ? cf_dataset_adopt(NULL, shape, y, 1, n, dir) : NULL;
    if (!d) {
        scan_free(&s);
        free(first_bad);
        if (names && *names) free_names(*names, *nnames), *names = NULL;
        return NULL;
    }
    for (size_t i = 0; i < n; i++) y[i] = (float)s.label[i];
    d->classes = nknown ? nknown : *nnames;
    d->src = s.src;
    d->ignored = s.ignored;
    d->bad = bad;
    d->first_bad = first_bad;
    s.src = NULL;
    scan_free(&s);
    return d;
}

int cf_data_images_open(const char *dir, const char *testdir, const cf_data_opts *o, cf_dataset **train,
                        cf_dataset **test)
{
    cf_shape shape;
    int c, h, w;
    if (o->image.rank < 1)
        return cf_seterr("error: images:%s: an image folder is read to the model's input shape, and none was given "
                         "(cf_data_opts.image)", dir);
    if (cf_image_layout(o->image, &shape, &c, &h, &w)) return -1;
    char **names = NULL;
    int nnames = 0;
    const char *const *known = o->nclass_names > 0 ? o->class_names : NULL;
    int nknown = known ? o->nclass_names : 0;
    cf_dataset *tr = open_folder(dir, o, shape, c, h, w, known, nknown, "the model", known ? NULL : &names, &nnames);
    if (!tr) return -1;
    if (cf_dataset_set_class_names(tr, known ? known : (const char *const *)names, known ? nknown : nnames)) {
        free_names(names, nnames);
        cf_dataset_free(tr);
        return -1;
    }
    free_names(names, nnames);
    cf_dataset *te = NULL;
    if (testdir) {
        te = open_folder(testdir, o, shape, c, h, w, (const char *const *)tr->class_names, tr->nclass_names,
                         known ? "the model" : dir, NULL, NULL);
        if (!te || cf_dataset_set_class_names(te, (const char *const *)tr->class_names, tr->nclass_names)) {
            cf_dataset_free(tr);
            cf_dataset_free(te);
            return -1;
        }
    }
    *train = tr;
    *test = te;
    return 0;
}
