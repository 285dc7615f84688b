/* torch.c - PyTorch's state_dict, saved with safetensors, into a model's parameters
 * and out again (cf_model_import_torch, cf_model_export_torch in cflux.h).
 *
 * The file's tensors are grouped into modules by the name before their last dot
 * ("features.3.weight": module "features.3"), and each module goes to one layer of
 * the model (cf_layer: a net with parameters, in model order, with how PyTorch keeps
 * each of them, from its torch(...)). Which module is which layer: a --map file's
 * lines first; then, when every module's name ends in a number (nn.Sequential, or a
 * ModuleList), the k-th module in natural order ("2" before "10") is the k-th layer;
 * otherwise a module goes to the one layer whose tensors it has, by name and shape,
 * and two that fit the same layer are ambiguous (a --map line settles it).
 *
 * Every tensor is checked before anything is written: a module whose tensors are not
 * those its layer takes, a tensor missing or left over, a dtype that is not a float,
 * and a shape that does not fit (after the layer's transpose; dimensions of size 1
 * aside, so PyTorch's bias (out) fills b (1, out)) are errors naming the tensor. A
 * BatchNorm's num_batches_tracked has no counterpart: it is ignored, with a note, and
 * written as 0 on export. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "core/graph.h"
#include "core/params_io.h"
#include "core/safetensors.h"
#include "interop/interop.h"

#define COUNTER "num_batches_tracked"
#define NAME_MAX_ 512

typedef struct module {
    const char *prefix;   /* in plan's names */
    const int *t;         /* its tensors' indices in the file, in file order: a run of plan's order */
    int nt;
    int layer;            /* the layer it goes to, or -1 */
} module;

/* What one layer reads: its module, or -1. */
typedef struct plan {
    const cf_st_file *f;
    const char *path;
    module *mods;
    int nmods;
    int *order;      /* every tensor's index, module by module */
    char *names;     /* the modules' names, one after another */
    int *mod_of;     /* per layer */
} plan;

/* ---- names ---- */

static const char *suffix(const char *name)
{
    const char *dot = strrchr(name, '.');
    return dot ? dot + 1 : name;
}

static int all_digits(const char *s, size_t n)
{
    if (!n) return 0;
    for (size_t i = 0; i < n; i++)
        if (!isdigit((unsigned char)s[i])) return 0;
    return 1;
}

/* Natural order of module names: numbers as numbers ("2" < "10"), the rest bytewise. */
static int natural_cmp(const char *a, const char *b)
{
    while (*a && *b) {
        if (isdigit((unsigned char)*a) && isdigit((unsigned char)*b)) {
            while (*a == '0' && isdigit((unsigned char)a[1])) a++;
            while (*b == '0' && isdigit((unsigned char)b[1])) b++;
            size_t la = 0, lb = 0;
            while (isdigit((unsigned char)a[la])) la++;
            while (isdigit((unsigned char)b[lb])) lb++;
            if (la != lb) return la < lb ? -1 : 1;
            int c = strncmp(a, b, la);
            if (c) return c;
            a += la, b += lb;
            continue;
        }
        if (*a != *b) return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
        a++, b++;
    }
    return *a ? 1 : *b ? -1 : 0;
}

/* Natural order; names it cannot tell apart ("01" and "1") bytewise. */
static int cmp_modules(const void *x, const void *y)
{
    const char *a = ((const module *)x)->prefix, *b = ((const module *)y)->prefix;
    int c = natural_cmp(a, b);
    return c ? c : strcmp(a, b);
}

/* "prefix.src", or src alone for the model's own module (""). buf holds NAME_MAX_. */
static const char *tensor_name(const char *prefix, const char *src, char *buf)
{
    snprintf(buf, NAME_MAX_, "%.250s%s%.250s", prefix, *prefix ? "." : "", src);
    return buf;
}

/* ---- the model's side ---- */

/* The values of parameter or state `name`, and its shape; NULL when the model does not
 * have it (a parameter the forward function never used). */
static float *held(cf_model *m, const char *name, cf_shape *s)
{
    int i = cf_model_param_index(m, name);
    if (i >= 0) {
        *s = cf_model_param_shape(m, i);
        return cf_model_param_data(m, i);
    }
    i = cf_model_state_index(m, name);
    if (i < 0) return NULL;
    *s = cf_model_state_shape(m, i);
    return cf_model_state_data(m, i);
}

/* The shape PyTorch keeps a parameter of shape s in: reversed for a transpose; a bias
 * as a vector. */
static cf_shape torch_shape(cf_shape s, const cf_tmap *t, const char *src)
{
    cf_shape r = s;
    if (t->form == CF_TF_TRANSPOSE)
        for (int d = 0; d < s.rank; d++) r.d[d] = s.d[s.rank - 1 - d];
    if (!strncmp(src, "bias", 4)) r = (cf_shape){1, {(int)cf_shape_count(s)}};
    return r;
}

/* Equal with dimensions of size 1 left out. */
static int fits(cf_shape want, const cf_st_tensor *t)
{
    int i = 0, j = 0;
    for (;;) {
        while (i < want.rank && want.d[i] == 1) i++;
        while (j < t->rank && t->shape[j] == 1) j++;
        if (i == want.rank || j == t->rank) return i == want.rank && j == t->rank;
        if (want.d[i++] != t->shape[j++]) return 0;
    }
}

static void st_shape(const cf_st_tensor *t, char *buf, size_t size)
{
    size_t k = (size_t)snprintf(buf, size, "(");
    for (int d = 0; d < t->rank && k < size; d++)
        k += (size_t)snprintf(buf + k, size - k, "%s%lld", d ? ", " : "", t->shape[d]);
    if (k < size) snprintf(buf + k, size - k, ")");
}

/* "Affine (at mlp.flux:4:3)" */
static const char *layer_str(const cf_layer *l, char *buf, size_t size)
{
    if (l->loc.file) snprintf(buf, size, "%s (at %s:%d:%d)", l->tname, l->loc.file, l->loc.line, l->loc.col);
    else snprintf(buf, size, "%s", l->tname);
    return buf;
}

/* The tensors a layer takes, as "weight, bias". */
static void layer_takes(cf_model *m, const cf_layer *l, char *buf, size_t size)
{
    size_t k = 0;
    buf[0] = 0;
    for (int i = 0; i < l->nmaps && k < size; i++) {
        cf_shape s;
        if (!held(m, l->maps[i].name, &s)) continue;
        for (int j = 0; j < 1 + (l->maps[i].form == CF_TF_SUM); j++)
            k += (size_t)snprintf(buf + k, size - k, "%s%s", k ? ", " : "", l->maps[i].src[j]);
    }
}

/* Does the layer take a tensor called src? */
static int takes(cf_model *m, const cf_layer *l, const char *src)
{
    cf_shape s;
    for (int i = 0; i < l->nmaps; i++)
        if (held(m, l->maps[i].name, &s) &&
            (!strcmp(l->maps[i].src[0], src) || (l->maps[i].src[1] && !strcmp(l->maps[i].src[1], src))))
            return 1;
    return 0;
}

static const cf_st_tensor *in_module(const plan *p, const module *md, const char *src)
{
    char name[NAME_MAX_];
    const cf_st_tensor *t = cf_st_find(p->f, tensor_name(md->prefix, src, name));
    return t && !strcmp(suffix(t->name), src) ? t : NULL;
}

/* Does module md hold what layer l takes, every tensor of it a float of the right
 * shape, and nothing else? 0; or -1, and with say the error naming the tensor. */
static int check_pair(cf_model *m, const plan *p, const cf_layer *l, const module *md, int say)
{
    char ls[600] = "", s1[96], s2[96], takes_list[256] = "", name[NAME_MAX_];
    if (say) {   /* for the messages; matching asks of every pair, and says nothing */
        layer_str(l, ls, sizeof ls);
        layer_takes(m, l, takes_list, sizeof takes_list);
    }
    const cf_st_tensor *unknown = NULL;
    const char *missing = NULL;
    for (int k = 0; k < md->nt; k++) {
        const cf_st_tensor *t = cf_st_get(p->f, md->t[k]);
        if (!takes(m, l, suffix(t->name)) && strcmp(suffix(t->name), COUNTER) && !unknown) unknown = t;
    }
    for (int i = 0; i < l->nmaps && !missing; i++) {
        cf_shape s;
        if (!held(m, l->maps[i].name, &s)) continue;
        for (int j = 0; j < 1 + (l->maps[i].form == CF_TF_SUM) && !missing; j++)
            if (!in_module(p, md, l->maps[i].src[j])) missing = l->maps[i].src[j];
    }
    if (!say && (unknown || missing)) return -1;
    if (unknown && missing)
        return cf_seterr("error: %s: tensor '%s' is not one of this model's: module '%s' stands where the model has "
                         "%s, which takes %s (are the weights of another architecture?)",
                         p->path, unknown->name, md->prefix, ls, takes_list);
    if (missing)
        return cf_seterr("error: %s: tensor '%s' is missing: module '%s' is the model's %s, which takes %s", p->path,
                         tensor_name(md->prefix, missing, name), md->prefix, ls, takes_list);
    if (unknown) {
        st_shape(unknown, s1, sizeof s1);
        return cf_seterr("error: %s: tensor '%s' %s matches nothing in the model: module '%s' is its %s, which takes "
                         "%s", p->path, unknown->name, s1, md->prefix, ls, takes_list);
    }
    for (int i = 0; i < l->nmaps; i++) {
        const cf_tmap *tm = &l->maps[i];
        cf_shape s;
        if (!held(m, tm->name, &s)) continue;
        for (int j = 0; j < 1 + (tm->form == CF_TF_SUM); j++) {
            const cf_st_tensor *t = in_module(p, md, tm->src[j]);
            if (!say && (!t->data || !fits(torch_shape(s, tm, tm->src[j]), t))) return -1;
            if (!t->data)
                return cf_seterr("error: %s: tensor '%s' is %s; a parameter is read from a float (F32, F64, F16 or "
                                 "BF16)", p->path, t->name, t->dtype ? t->dtype : "not a float");
            if (!fits(torch_shape(s, tm, tm->src[j]), t)) {
                st_shape(t, s1, sizeof s1);
                cf_shape_str(torch_shape(s, tm, tm->src[j]), s2, sizeof s2);
                char own[96];
                cf_shape_str(s, own, sizeof own);
                return cf_seterr("error: %s: tensor '%s' is %s, but the model's %s needs %s for its %s %s%s", p->path,
                                 t->name, s1, ls, s2, suffix(tm->name), own,
                                 tm->form == CF_TF_TRANSPOSE ? ", transposed" : "");
            }
            for (size_t e = 0; say && e < t->count; e++)   /* once, for the pair chosen */
                if (!isfinite(t->data[e]))
                    return cf_seterr("error: %s: tensor '%s' holds %s at element %zu", p->path, t->name,
                                     isnan(t->data[e]) ? "NaN" : "infinity", e);
        }
    }
    return 0;
}

/* ---- --map ---- */

/* The layer whose prefix is name, or which holds parameter name (then *map is its
 * index in the layer's maps); -1 when none. */
static int find_layer(const cf_model *m, const char *name, int *map)
{
    *map = -1;
    for (int i = 0; i < m->nlayers; i++)
        if (!strcmp(m->layers[i].prefix, name)) return i;
    for (int i = 0; i < m->nlayers; i++)
        for (int k = 0; k < m->layers[i].nmaps; k++)
            if (!strcmp(m->layers[i].maps[k].name, name)) {
                *map = k;
                return i;
            }
    return -1;
}

/* The map, opened to be read as text: a file or a pipe, never a directory (which
 * fopen opens and reads as nothing: an empty map; anything else that is not text
 * holds a NUL byte). NULL and the error. */
static FILE *open_map(const char *path)
{
    FILE *fp = fopen(path, "r");
    if (!fp) {
        cf_seterr("error: %s: cannot open the map: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fileno(fp), &st) == 0 && S_ISDIR(st.st_mode)) {
        cf_seterr("error: %s: cannot read the map: it is a directory", path);
        fclose(fp);
        return NULL;
    }
    return fp;
}

/* The words of a map line, up to 3, cut at its '#' (line is changed); how many. */
static int map_words(char *line, char *w[3])
{
    char *hash = strchr(line, '#'), *save = NULL;
    if (hash) *hash = 0;
    int k = 0;
    for (char *s = strtok_r(line, " \t\r\n\v\f", &save); s && k < 3; s = strtok_r(NULL, " \t\r\n\v\f", &save))
        w[k++] = s;
    return k;
}

/* Read "torch_name cflux_name" lines (# comments) into names[layer] (NAME_MAX_ each),
 * with given[layer] set for the layers a line names. f: the PyTorch file being imported (NULL on export),
 * whose tensor and module names a line must use. Lines are read whole, whatever their
 * length (a line cut in two would read a comment's tail as a mapping); a NUL byte is
 * refused at its line. 0 or -1. */
static int read_map(const cf_model *m, const char *path, const cf_st_file *f, char (*names)[NAME_MAX_], int *given)
{
    FILE *fp = open_map(path);
    if (!fp) return -1;
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int rc = 0, no = 0;
    while (!rc && (errno = 0, len = getline(&line, &cap, fp)) >= 0) {
        no++;
        if (memchr(line, 0, (size_t)len)) {
            rc = cf_seterr("error: %s:%d: the map holds a NUL byte; it is a text file of 'torch_name cflux_name' "
                           "lines", path, no);
            break;
        }
        char *w[3];
        int k = map_words(line, w);
        if (k <= 0) continue;
        if (k != 2) {
            rc = cf_seterr("error: %s:%d: a line of the map is 'torch_name cflux_name'", path, no);
            break;
        }
        if (strlen(w[0]) >= NAME_MAX_ || strlen(w[1]) >= NAME_MAX_) {
            const char *lw = strlen(w[0]) >= NAME_MAX_ ? w[0] : w[1];
            rc = cf_seterr("error: %s:%d: the name '%.24s...' is %zu characters long; a name has at most %d", path, no,
                           lw, strlen(lw), NAME_MAX_ - 1);
            break;
        }
        const char *tn = w[0], *cn = w[1];
        int map, li = find_layer(m, cn, &map);
        if (li < 0) {
            rc = cf_seterr("error: %s:%d: the model has no layer or parameter '%s'", path, no, cn);
            break;
        }
        const cf_layer *l = &m->layers[li];
        char module[NAME_MAX_];
        snprintf(module, sizeof module, "%s", tn);
        if (map >= 0) {   /* a tensor: its module is the layer's, its name the one the layer declares */
            const cf_tmap *t = &l->maps[map];
            const char *sfx = suffix(tn);
            if (strcmp(sfx, t->src[0]) && !(t->src[1] && !strcmp(sfx, t->src[1]))) {
                rc = cf_seterr("error: %s:%d: PyTorch keeps %s as %s%s%s, not %s", path, no, cn, t->src[0],
                               t->src[1] ? " + " : "", t->src[1] ? t->src[1] : "", sfx);
                break;
            }
            module[sfx == tn ? 0 : sfx - tn - 1] = 0;
        }
        if (f && !(map >= 0 && cf_st_find(f, tn))) {   /* a module: some tensor begins with it */
            int found = 0;
            size_t n = strlen(module);
            for (int i = 0; i < cf_st_count(f) && !found; i++) {
                const char *name = cf_st_get(f, i)->name;
                found = n ? !strncmp(name, module, n) && name[n] == '.' && !strchr(name + n + 1, '.')
                          : !strchr(name, '.');
            }
            if (!found) {
                rc = cf_seterr("error: %s:%d: '%s' is neither a tensor nor a module of the weights file", path, no, tn);
                break;
            }
        }
        if (given[li] && strcmp(names[li], module)) {
            rc = cf_seterr("error: %s:%d: layer '%s' is given two modules, '%s' and '%s'", path, no, l->prefix,
                           names[li], module);
            break;
        }
        snprintf(names[li], NAME_MAX_, "%s", module);
        given[li] = 1;
    }
    if (!rc && errno == ENOMEM) rc = cf_oom(cap);
    else if (!rc && ferror(fp)) rc = cf_seterr("error: %s: cannot read the map: %s", path, strerror(errno));
    free(line);
    fclose(fp);
    return rc;
}

/* ---- import ---- */

/* A tensor's module name (its name up to the last dot) and index, to sort by. */
typedef struct keyed {
    const char *name;
    size_t len;
    int i;
} keyed;

static int cmp_keyed(const void *x, const void *y)
{
    const keyed *a = x, *b = y;
    int c = memcmp(a->name, b->name, a->len < b->len ? a->len : b->len);
    if (c) return c;
    if (a->len != b->len) return a->len < b->len ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}

static int same_module(const keyed *a, const keyed *b)
{
    return a->len == b->len && !memcmp(a->name, b->name, a->len);
}

static int group_oom(const plan *p, int n, size_t bytes)
{
    return cf_seterr("error: %s: out of memory grouping its %d tensors into modules (asking for %zu bytes)", p->path, n,
                     bytes);
}

/* The tensors grouped into modules by the name before their last dot: sorted by it
 * (then by index, so that a module keeps its tensors in file order), each run of one
 * name a module; then the modules in natural order. n log n, in memory in proportion
 * to the file. */
static int group(plan *p)
{
    int n = cf_st_count(p->f);
    keyed *k = malloc(((size_t)n + 1) * sizeof *k);
    if (!k) return group_oom(p, n, ((size_t)n + 1) * sizeof *k);
    for (int i = 0; i < n; i++) {
        const char *name = cf_st_get(p->f, i)->name;
        size_t len = (size_t)(suffix(name) - name);
        len = len ? len - 1 : 0;
        if (len >= NAME_MAX_) {
            free(k);
            return cf_seterr("error: %s: tensor name '%.60s...' is too long", p->path, name);
        }
        k[i] = (keyed){name, len, i};
    }
    qsort(k, (size_t)n, sizeof *k, cmp_keyed);
    int nmods = 0;
    size_t pool = 0;
    for (int i = 0; i < n; i++)
        if (!i || !same_module(&k[i - 1], &k[i])) {
            nmods++;
            pool += k[i].len + 1;
        }
    size_t bytes = ((size_t)nmods + 1) * sizeof *p->mods + ((size_t)n + 1) * sizeof *p->order + pool + 1;
    p->mods = calloc((size_t)nmods + 1, sizeof *p->mods);
    p->order = malloc(((size_t)n + 1) * sizeof *p->order);
    p->names = malloc(pool + 1);
    if (!p->mods || !p->order || !p->names) {
        free(k);
        return group_oom(p, n, bytes);
    }
    char *at = p->names;
    for (int i = 0; i < n; i++) {
        if (!i || !same_module(&k[i - 1], &k[i])) {
            module *md = &p->mods[p->nmods++];
            memcpy(at, k[i].name, k[i].len);
            at[k[i].len] = 0;
            md->prefix = at;
            at += k[i].len + 1;
            md->t = p->order + i;
            md->layer = -1;
        }
        p->order[i] = k[i].i;
        p->mods[p->nmods - 1].nt++;
    }
    free(k);
    qsort(p->mods, (size_t)p->nmods, sizeof *p->mods, cmp_modules);
    return 0;
}

static int numbered(const module *md)
{
    const char *last = suffix(md->prefix);
    return md->prefix[0] && all_digits(last, strlen(last));
}

static void assign(plan *p, int layer, int mod)
{
    p->mod_of[layer] = mod;
    p->mods[mod].layer = layer;
}

/* Whether the dotted path ends with the dotted name: "1.norm1" with "norm1". */
static int path_ends_with(const char *path, const char *name)
{
    size_t a = strlen(path), b = strlen(name);
    return b && (a == b ? !strcmp(path, name) : a > b && path[a - b - 1] == '.' && !strcmp(path + a - b, name));
}

/* The layers no map line gave a module: by order, by name, or by what fits. */
static int match(cf_model *m, plan *p)
{
    int all_numbered = 1;
    for (int k = 0; k < p->nmods; k++) all_numbered &= p->mods[k].layer >= 0 || numbered(&p->mods[k]);
    if (all_numbered) {
        int k = 0;
        for (int i = 0; i < m->nlayers; i++) {
            if (p->mod_of[i] >= 0) continue;
            while (k < p->nmods && p->mods[k].layer >= 0) k++;
            if (k == p->nmods) break;
            assign(p, i, k);
        }
        return 0;
    }
    /* by name: a module named as the layer is exported ('0.blocks.0.norm1' for the
       layer '1.blocks.0.norm1' after an Input), as the layer, or as the end of its
       path ('norm1' for '1.norm1'), that fits it */
    for (int i = 0; i < m->nlayers; i++) {
        if (p->mod_of[i] >= 0) continue;
        const cf_layer *l = &m->layers[i];
        int found = -1, nfit = 0;
        for (int k = 0; k < p->nmods; k++)
            if (p->mods[k].layer < 0 &&
                ((l->torch && !strcmp(l->torch, p->mods[k].prefix)) || path_ends_with(l->prefix, p->mods[k].prefix)) &&
                !check_pair(m, p, l, &p->mods[k], 0))
                found = k, nfit++;
        if (nfit == 1) assign(p, i, found);
    }
    /* by fit: a layer that exactly one free module fits takes it, until nothing changes */
    for (int changed = 1; changed;) {
        changed = 0;
        for (int i = 0; i < m->nlayers; i++) {
            if (p->mod_of[i] >= 0) continue;
            int found = -1, nfit = 0;
            for (int k = 0; k < p->nmods; k++)
                if (p->mods[k].layer < 0 && !check_pair(m, p, &m->layers[i], &p->mods[k], 0)) found = k, nfit++;
            if (nfit == 1) {
                assign(p, i, found);
                changed = 1;
            }
        }
    }
    for (int i = 0; i < m->nlayers; i++) {
        if (p->mod_of[i] >= 0) continue;
        char ls[600], list[400] = "";
        int nfit = 0;
        for (int k = 0; k < p->nmods; k++)
            if (p->mods[k].layer < 0 && !check_pair(m, p, &m->layers[i], &p->mods[k], 0)) {
                size_t len = strlen(list);
                if (len < 300)
                    snprintf(list + len, sizeof list - len, "%s'%.60s'", nfit ? ", " : "", p->mods[k].prefix);
                nfit++;
            }
        if (nfit > 1)
            return cf_seterr("error: %s: modules %s all fit layer '%s', the model's %s: say which with --map (a line "
                             "'TORCH_MODULE %s')", p->path, list, m->layers[i].prefix,
                             layer_str(&m->layers[i], ls, sizeof ls), m->layers[i].prefix);
        /* nothing fits: the free module that has its tensors' names (or most of them) says why */
        int best = -1, best_score = -1;
        for (int k = 0; k < p->nmods; k++) {
            if (p->mods[k].layer >= 0) continue;
            int score = 0;
            for (int t = 0; t < p->mods[k].nt; t++)
                score += takes(m, &m->layers[i], suffix(cf_st_get(p->f, p->mods[k].t[t])->name));
            if (score > best_score) best = k, best_score = score;
        }
        if (best >= 0 && best_score > 0) {
            check_pair(m, p, &m->layers[i], &p->mods[best], 1);
            return -1;
        }
        char takes_list[256];
        layer_takes(m, &m->layers[i], takes_list, sizeof takes_list);
        return cf_seterr("error: %s: no module holds the tensors of layer '%s', the model's %s (%s): are the weights "
                         "of another architecture?", p->path, m->layers[i].prefix,
                         layer_str(&m->layers[i], ls, sizeof ls), takes_list);
    }
    return 0;
}

/* Copy module md's tensors into layer l's parameters (checked before). */
static void fill(cf_model *m, const plan *p, const cf_layer *l, const module *md)
{
    for (int i = 0; i < l->nmaps; i++) {
        const cf_tmap *tm = &l->maps[i];
        cf_shape s;
        float *dst = held(m, tm->name, &s);
        if (!dst) continue;
        const cf_st_tensor *a = in_module(p, md, tm->src[0]);
        size_t n = cf_shape_count(s);
        if (tm->form == CF_TF_TRANSPOSE) {   /* s (r, c) from (c, r) */
            int r = s.d[0], c = s.d[1];
            for (int x = 0; x < r; x++)
                for (int y = 0; y < c; y++) dst[(size_t)x * c + y] = a->data[(size_t)y * r + x];
        } else if (tm->form == CF_TF_SUM) {
            const cf_st_tensor *b = in_module(p, md, tm->src[1]);
            for (size_t e = 0; e < n; e++) dst[e] = a->data[e] + b->data[e];
        } else
            memcpy(dst, a->data, n * sizeof *dst);
    }
}

/* As many modules as layers, or the pairs fit: else the file is another model's. */
static int another_architecture(cf_model *m, plan *p)
{
    int bad = -1;
    for (int i = 0; i < m->nlayers && bad < 0; i++)
        if (p->mod_of[i] >= 0 && check_pair(m, p, &m->layers[i], &p->mods[p->mod_of[i]], 0)) bad = i;
    if (bad < 0 || p->nmods == m->nlayers) return 0;
    char mods[256] = "", layers[256] = "";
    for (int k = 0; k < p->nmods; k++) {
        size_t len = strlen(mods);
        if (len < 200) snprintf(mods + len, sizeof mods - len, "%s%.40s", k ? ", " : "", p->mods[k].prefix);
    }
    for (int i = 0; i < m->nlayers; i++) {
        size_t len = strlen(layers);
        if (len < 200) snprintf(layers + len, sizeof layers - len, "%s%.40s", i ? ", " : "", m->layers[i].tname);
    }
    check_pair(m, p, &m->layers[bad], &p->mods[p->mod_of[bad]], 1);
    char first[1024];
    const char *msg = cf_last_error(), *colon = strstr(msg, ": tensor");
    snprintf(first, sizeof first, "%s", colon ? colon + 2 : msg);
    return cf_seterr("error: %s holds the weights of another architecture: %d module%s with weights (%s) for the "
                     "model's %d layer%s (%s); the first that does not fit: %s", p->path, p->nmods,
                     p->nmods == 1 ? "" : "s", mods, m->nlayers, m->nlayers == 1 ? "" : "s", layers, first);
}

static int import_checked(cf_model *m, plan *p, const char *map_path, FILE *notes)
{
    if (group(p)) return -1;
    if (map_path) {
        char (*names)[NAME_MAX_] = calloc((size_t)m->nlayers, sizeof *names);
        if (!names) return cf_oom((size_t)m->nlayers * sizeof *names);
        int *given = calloc((size_t)m->nlayers, sizeof *given);
        int rc = given ? read_map(m, map_path, p->f, names, given) : cf_oom((size_t)m->nlayers * sizeof *given);
        for (int i = 0; i < m->nlayers && !rc; i++)
            for (int k = 0; given[i] && k < p->nmods; k++)
                if (!strcmp(p->mods[k].prefix, names[i])) {
                    if (p->mods[k].layer >= 0)
                        rc = cf_seterr("error: %s: module '%s' is given to two layers", map_path, names[i]);
                    else assign(p, i, k);
                }
        free(given);
        free(names);
        if (rc) return -1;
    }
    if (match(m, p)) return -1;
    if (another_architecture(m, p)) return -1;
    char ls[600];
    for (int i = 0; i < m->nlayers; i++) {
        const cf_layer *l = &m->layers[i];
        if (p->mod_of[i] < 0) {
            char takes_list[256], name[NAME_MAX_];
            layer_takes(m, l, takes_list, sizeof takes_list);
            return cf_seterr("error: %s: tensor '%s' is missing: the file has no module for layer '%s', the model's %s "
                             "(which takes %s)", p->path, tensor_name(l->seq, l->maps[0].src[0], name), l->prefix,
                             layer_str(l, ls, sizeof ls), takes_list);
        }
        if (check_pair(m, p, l, &p->mods[p->mod_of[i]], 1)) return -1;
    }
    char extra[512] = "";
    int nextra = 0;
    for (int k = 0; k < p->nmods; k++) {
        if (p->mods[k].layer >= 0) continue;
        for (int t = 0; t < p->mods[k].nt; t++) {
            size_t len = strlen(extra);
            if (len < 400)
                snprintf(extra + len, sizeof extra - len, "%s%s", nextra ? ", " : "",
                         cf_st_get(p->f, p->mods[k].t[t])->name);
            nextra++;
        }
    }
    if (nextra)
        return cf_seterr("error: %s: %d tensor%s match%s nothing in the model: %s (the model has %d layer%s with "
                         "weights)", p->path, nextra, nextra == 1 ? "" : "s", nextra == 1 ? "es" : "", extra,
                         m->nlayers, m->nlayers == 1 ? "" : "s");
    /* every parameter and statistic is filled by some layer */
    for (int i = 0; i < m->nparams + m->nstates; i++) {
        const char *name = i < m->nparams ? m->params[i]->name : m->states[i - m->nparams]->name;
        int found = 0;
        for (int j = 0; j < m->nlayers && !found; j++)
            for (int k = 0; k < m->layers[j].nmaps && !found; k++) found = !strcmp(m->layers[j].maps[k].name, name);
        if (!found)
            return cf_seterr("error: %s: the model's %s '%s' belongs to no layer, so no PyTorch tensor can fill it",
                             p->path, i < m->nparams ? "parameter" : "statistic", name);
    }
    /* all checked: write, and remember the modules' names */
    char ignored[512] = "";
    int nignored = 0;
    for (int i = 0; i < m->nlayers; i++) {
        const module *md = &p->mods[p->mod_of[i]];
        fill(m, p, &m->layers[i], md);
        char *name = cf_arena_strdup(&m->arena, md->prefix);
        if (!name) return -1;
        m->layers[i].torch = name;
        for (int t = 0; t < md->nt; t++) {
            const char *tn = cf_st_get(p->f, md->t[t])->name;
            if (strcmp(suffix(tn), COUNTER)) continue;
            size_t len = strlen(ignored);
            if (len < 400) snprintf(ignored + len, sizeof ignored - len, "%s%s", nignored ? ", " : "", tn);
            nignored++;
        }
    }
    if (nignored && notes)
        fprintf(notes, "note: %s: ignored %s (a BatchNorm's count of training batches, which cflux does not keep)\n",
                p->path, ignored);
    return 0;
}

int cf_torch_import(cf_model *m, const cf_st_file *f, const char *path, const char *map_path, FILE *notes)
{
    if (cf_model_init_params(m)) return -1;
    if (!m->nlayers) return cf_seterr("error: the model has no layers with weights to import into");
    const char *format = cf_st_meta(f, "format");
    if (format && !strncmp(format, "cflux-", 6))
        return cf_seterr("error: %s is cflux's own %s, not a PyTorch state_dict: cflux reads it as it is (--params, "
                         "--init)", path, strcmp(format, CF_CHECKPOINT_FORMAT) ? "parameter file" : "checkpoint");
    plan p = {.f = f, .path = path};
    int rc = -1;
    if (!(p.mod_of = malloc((size_t)m->nlayers * sizeof *p.mod_of))) {
        cf_oom((size_t)m->nlayers * sizeof *p.mod_of);
        goto done;
    }
    for (int i = 0; i < m->nlayers; i++) p.mod_of[i] = -1;
    rc = import_checked(m, &p, map_path, notes);
done:
    free(p.mods);
    free(p.order);
    free(p.names);
    free(p.mod_of);
    return rc;
}

/* A failure while reading or matching path says so: a message that names neither it
 * nor the map (running out of memory deep inside) gets its name in front. -1. */
static int naming(const char *path, const char *map_path)
{
    const char *msg = cf_last_error();
    if (strstr(msg, path) || (map_path && strstr(msg, map_path))) return -1;
    char *copy = strdup(strncmp(msg, "error: ", 7) ? msg : msg + 7);
    if (!copy) return cf_seterr("error: %s: out of memory", path);
    cf_seterr("error: %s: %s", path, copy);
    free(copy);
    return -1;
}

int cf_model_import_torch(cf_model *m, const char *path, const char *map_path, FILE *notes)
{
    if (!m || !path) return cf_seterr("error: cf_model_import_torch: no model or no path");
    if (cf_model_init_params(m)) return -1;   /* the model's own memory: its message names the parameter */
    cf_st_file *f = cf_st_read_ex(path, CF_ST_OTHER_DTYPES);
    if (!f) return naming(path, NULL);
    int rc = cf_torch_import(m, f, path, map_path, notes);
    cf_st_free(f);
    return rc ? naming(path, map_path) : 0;
}

/* ---- export ---- */

int cf_model_export_torch(cf_model *m, const char *path, const char *map_path)
{
    if (!m || !path) return cf_seterr("error: cf_model_export_torch: no model or no path");
    if (!m->sealed) return cf_seterr("error: the model has no weights yet: load or train them before exporting");
    if (!m->nlayers) return cf_seterr("error: the model has no layers with weights to export");
    char (*names)[NAME_MAX_] = calloc((size_t)m->nlayers, sizeof *names);
    int cap = 0;
    for (int i = 0; i < m->nlayers; i++) cap += 2 * m->layers[i].nmaps + 1;
    cf_st_tensor *t = calloc((size_t)cap, sizeof *t);
    char (*tn)[NAME_MAX_] = calloc((size_t)cap, sizeof *tn);
    float **owned = calloc((size_t)cap, sizeof *owned);
    int n = 0, rc = -1, *given = NULL;
    static const float zero = 0;
    if (!names || !t || !tn || !owned) {
        cf_oom((size_t)cap * NAME_MAX_);
        goto done;
    }
    given = calloc((size_t)m->nlayers, sizeof *given);
    if (!given) {
        cf_oom((size_t)m->nlayers * sizeof *given);
        goto done;
    }
    if (map_path && read_map(m, map_path, NULL, names, given)) goto done;
    for (int i = 0; i < m->nlayers; i++) {
        const cf_layer *l = &m->layers[i];
        const char *module = given[i] ? names[i] : l->torch;
        int counter = 0;
        for (int k = 0; k < l->nmaps; k++) {
            const cf_tmap *tm = &l->maps[k];
            cf_shape s;
            float *data = held(m, tm->name, &s);
            if (!data) continue;
            size_t count = cf_shape_count(s);
            for (int j = 0; j < 1 + (tm->form == CF_TF_SUM); j++) {
                cf_shape ts = torch_shape(s, tm, tm->src[j]);
                cf_st_tensor *x = &t[n];
                x->name = tensor_name(module, tm->src[j], tn[n]);
                x->rank = ts.rank;
                for (int d = 0; d < ts.rank; d++) x->shape[d] = ts.d[d];
                x->count = count;
                x->data = data;
                if (tm->form == CF_TF_TRANSPOSE || j == 1) {   /* a copy: transposed, or the zeros of a sum's second */
                    float *c = calloc(count ? count : 1, sizeof *c);
                    if (!c) {
                        cf_oom(count * sizeof *c);
                        goto done;
                    }
                    owned[n] = c;
                    if (j == 0) {
                        int r = s.d[0], cols = s.d[1];
                        for (int a = 0; a < r; a++)
                            for (int b = 0; b < cols; b++) c[(size_t)b * r + a] = data[(size_t)a * cols + b];
                    }
                    x->data = c;
                }
                n++;
            }
            counter |= !strcmp(tm->src[0], "running_mean");
        }
        if (counter) {
            t[n] = (cf_st_tensor){.name = tensor_name(module, COUNTER, tn[n]), .rank = 0, .count = 1, .data = &zero,
                                  .dtype = "I64"};
            n++;
        }
    }
    char *classes = cf_model_class_json(m);   /* the classes' names, when the model has them */
    if (m->nclasses && !classes) goto done;
    const char *keys[] = {"format", "class_names"}, *vals[] = {"pt", classes};
    rc = cf_st_write(path, n, t, classes ? 2 : 1, keys, vals);
    free(classes);
done:
    for (int i = 0; owned && i < cap; i++) free(owned[i]);
    free(owned);
    free(tn);
    free(t);
    free(names);
    free(given);
    return rc;
}
