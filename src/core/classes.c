/* classes.c - the names of a model's classes (cf_model_set_class_names in cflux.h):
 * kept with the parameters, for evaluation, prediction and reports. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/graph.h"
#include "core/safetensors.h"

#define MAX_NAME 100

int cf_model_set_class_names(cf_model *m, const char *const *names, int n)
{
    if (!m) return cf_seterr("error: cf_model_set_class_names: no model");
    if (!names || n <= 0) {
        free(m->class_text);
        free(m->class_names);
        m->class_text = NULL;
        m->class_names = NULL;
        m->nclasses = 0;
        return 0;
    }
    if (cf_model_infer_shapes(m)) return -1;
    cf_shape s = m->noutputs ? m->outputs[0]->shape : (cf_shape){0};
    int want = s.rank ? s.d[s.rank - 1] : 0;
    if (n != want)
        return cf_seterr("error: %d class names, but the model's output gives %d classes", n, want);
    size_t len = 0;
    for (int i = 0; i < n; i++) {
        size_t k = names[i] ? strlen(names[i]) : 0;
        if (!k || k > MAX_NAME) return cf_seterr("error: class %d's name is %s", i, k ? "over 100 bytes" : "empty");
        for (size_t j = 0; j < k; j++)
            if ((unsigned char)names[i][j] < 0x20 || names[i][j] == 0x7f)
                return cf_seterr("error: class %d's name holds a control character", i);
        len += k + 1;
    }
    char *text = malloc(len);
    const char **list = malloc((size_t)n * sizeof *list);
    if (!text || !list) {
        free(text);
        free(list);
        return cf_oom(len + (size_t)n * sizeof *list);
    }
    char *p = text;
    for (int i = 0; i < n; i++) {
        size_t k = strlen(names[i]);
        memcpy(p, names[i], k + 1);
        list[i] = p;
        p += k + 1;
    }
    free(m->class_text);
    free(m->class_names);
    m->class_text = text;
    m->class_names = list;
    m->nclasses = n;
    return 0;
}

int cf_model_class_names(const cf_model *m, const char *const **names)
{
    if (names) *names = m ? m->class_names : NULL;
    return m ? m->nclasses : 0;
}

char *cf_model_class_meta(const cf_model *m)
{
    size_t len = 1;
    for (int i = 0; i < m->nclasses; i++) len += strlen(m->class_names[i]) + 1;
    char *s = malloc(len), *p = s;
    if (!s) {
        cf_oom(len);
        return NULL;
    }
    for (int i = 0; i < m->nclasses; i++) p += sprintf(p, "%s%s", i ? "\n" : "", m->class_names[i]);
    *p = 0;
    return s;
}

char *cf_model_class_json(const cf_model *m)
{
    if (!m->nclasses) return NULL;
    size_t len = 3;
    for (int i = 0; i < m->nclasses; i++) len += 2 * strlen(m->class_names[i]) + 4;
    char *s = malloc(len), *p = s;
    if (!s) {
        cf_oom(len);
        return NULL;
    }
    *p++ = '[';
    for (int i = 0; i < m->nclasses; i++) {   /* names hold no control characters: '"' and '\\' are escaped */
        if (i) *p++ = ',', *p++ = ' ';
        *p++ = '"';
        for (const char *c = m->class_names[i]; *c; c++) {
            if (*c == '"' || *c == '\\') *p++ = '\\';
            *p++ = *c;
        }
        *p++ = '"';
    }
    *p++ = ']';
    *p = 0;
    return s;
}

int cf_model_set_class_meta(cf_model *m, const char *s)
{
    if (!s) return 0;
    size_t len = strlen(s);
    char *copy = malloc(len + 1);
    if (!copy) return cf_oom(len + 1);
    memcpy(copy, s, len + 1);
    int n = 1;
    for (char *p = copy; *p; p++) n += *p == '\n';
    const char **names = malloc((size_t)n * sizeof *names);
    if (!names) {
        free(copy);
        return cf_oom((size_t)n * sizeof *names);
    }
    int k = 0;
    for (char *p = copy, *q; p; p = q) {
        q = strchr(p, '\n');
        if (q) *q++ = 0;
        names[k++] = p;
    }
    int rc = cf_model_set_class_names(m, names, k);
    free(names);
    free(copy);
    return rc;
}

int cf_model_load_class_names(cf_model *m, const char *path)
{
    if (!m || !path) return cf_seterr("error: cf_model_load_class_names: no model or no path");
    cf_st_file *f = cf_st_read_ex(path, CF_ST_HEADER_ONLY);
    if (!f) return -1;
    const char *meta = cf_st_meta(f, CF_CLASSES_META);
    int rc = cf_model_set_class_meta(m, meta);
    if (rc) {   /* the file named */
        char why[256];
        snprintf(why, sizeof why, "%s", cf_last_error() + (strncmp(cf_last_error(), "error: ", 7) ? 0 : 7));
        cf_seterr("error: %s: %s", path, why);
    }
    cf_st_free(f);
    return rc;
}
