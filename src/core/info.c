/* info.c - notes a model keeps with its weights (cf_model_set_info), and the metadata
 * that parameter files and checkpoints both write beside their own: the model's source,
 * the PyTorch module names, the class names, the notes. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/graph.h"
#include "core/safetensors.h"

#define INFO_KEY_MAX 64
#define INFO_VALUE_MAX ((size_t)1 << 16)
#define INFO_MAX 64

static int find(const cf_model *m, const char *key)
{
    for (int i = 0; i < m->ninfo; i++)
        if (!strcmp(m->info[2 * i], key)) return i;
    return -1;
}

static int key_ok(const char *key)
{
    size_t n = strlen(key);
    if (n == 0 || n > INFO_KEY_MAX) return 0;
    for (const char *p = key; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_' || *p == '.' || *p == '-'))
            return 0;
    return 1;
}

int cf_model_set_info(cf_model *m, const char *key, const char *value)
{
    if (!m || !key) return cf_seterr("error: cf_model_set_info: no model or no key");
    if (!key_ok(key))
        return cf_seterr("error: cf_model_set_info: the key \"%.80s\" is not 1 to %d of a-z, 0-9, '_', '.', '-'", key,
                         INFO_KEY_MAX);
    int i = find(m, key);
    if (!value) {   /* remove it, keeping the others in order */
        if (i < 0) return 0;
        free(m->info[2 * i]);
        free(m->info[2 * i + 1]);
        memmove(m->info + 2 * i, m->info + 2 * i + 2, (size_t)(m->ninfo - i - 1) * 2 * sizeof *m->info);
        m->ninfo--;
        return 0;
    }
    if (strlen(value) > INFO_VALUE_MAX)
        return cf_seterr("error: cf_model_set_info: the value of \"%s\" is %zu bytes; at most %zu", key, strlen(value),
                         INFO_VALUE_MAX);
    char *v = strdup(value);
    if (!v) return cf_oom(strlen(value) + 1);
    if (i >= 0) {
        free(m->info[2 * i + 1]);
        m->info[2 * i + 1] = v;
        return 0;
    }
    if (m->ninfo == INFO_MAX) {
        free(v);
        return cf_seterr("error: cf_model_set_info: a model keeps at most %d notes", INFO_MAX);
    }
    char *k = strdup(key), **grown = realloc(m->info, (size_t)(m->ninfo + 1) * 2 * sizeof *m->info);
    if (!k || !grown) {
        free(k);
        free(v);
        if (grown) m->info = grown;
        return cf_oom(strlen(key) + 1);
    }
    m->info = grown;
    int at = 0;   /* kept in key order: the same notes write the same bytes, however they were set */
    while (at < m->ninfo && strcmp(m->info[2 * at], key) < 0) at++;
    memmove(m->info + 2 * at + 2, m->info + 2 * at, (size_t)(m->ninfo - at) * 2 * sizeof *m->info);
    m->info[2 * at] = k;
    m->info[2 * at + 1] = v;
    m->ninfo++;
    return 0;
}

const char *cf_model_info(const cf_model *m, const char *key)
{
    int i = m && key ? find(m, key) : -1;
    return i < 0 ? NULL : m->info[2 * i + 1];
}

int cf_model_info_count(const cf_model *m) { return m ? m->ninfo : 0; }

const char *cf_model_info_key(const cf_model *m, int i)
{
    return m && i >= 0 && i < m->ninfo ? m->info[2 * i] : NULL;
}

void cf_model_extra_meta_free(char **owned)
{
    for (char **p = owned; p && *p; p++) free(*p);
    free(owned);
}

int cf_model_extra_meta(const cf_model *m, const char **keys, const char **vals, int *n, int cap, char ***owned)
{
    /* the strings made here: torch names, class names, and a key for each note */
    char **own = calloc((size_t)m->ninfo + 3, sizeof *own);
    int k = 0;
    *owned = own;
    if (!own) return cf_oom(((size_t)m->ninfo + 3) * sizeof *own);
    if (*n + 4 + m->ninfo > cap) return cf_seterr("error: too much metadata to write (%d entries)", *n + 4 + m->ninfo);
    if (m->source) {   /* the model itself: the file can be loaded alone (cf_model_load_trained) */
        keys[*n] = CF_MODEL_FILE_META, vals[(*n)++] = m->source_name ? m->source_name : "";
        keys[*n] = CF_MODEL_SOURCE_META, vals[(*n)++] = m->source;
    }
    char *torch = NULL;
    if (cf_model_torch_names(m, &torch)) return -1;
    if (torch) {
        own[k++] = torch;
        keys[*n] = CF_TORCH_META, vals[(*n)++] = torch;
    }
    if (m->nclasses) {
        char *classes = cf_model_class_meta(m);
        if (!classes) return -1;
        own[k++] = classes;
        keys[*n] = CF_CLASSES_META, vals[(*n)++] = classes;
    }
    for (int i = 0; i < m->ninfo; i++) {
        char *key = malloc(strlen(CF_INFO_META) + strlen(m->info[2 * i]) + 1);
        if (!key) return cf_oom(strlen(m->info[2 * i]) + 8);
        strcpy(key, CF_INFO_META);
        strcat(key, m->info[2 * i]);
        own[k++] = key;
        keys[*n] = key, vals[(*n)++] = m->info[2 * i + 1];
    }
    return 0;
}

int cf_model_set_info_from(cf_model *m, const cf_st_file *f)
{
    size_t pl = strlen(CF_INFO_META);
    for (int i = 0; i < m->ninfo; i++) {   /* the file's notes replace the model's */
        free(m->info[2 * i]);
        free(m->info[2 * i + 1]);
    }
    m->ninfo = 0;
    for (int i = 0; i < cf_st_meta_count(f); i++) {
        const char *v, *k = cf_st_meta_at(f, i, &v);
        if (!strncmp(k, CF_INFO_META, pl) && key_ok(k + pl) && cf_model_set_info(m, k + pl, v)) return -1;
    }
    return 0;
}
