/* checkpoint.c - a run saved and resumed: the parameters, the optimizer's state and
 * where the run was, in one safetensors file.
 *
 * The metadata (format "cflux-checkpoint", version 2) records the position (epochs
 * The metadata (format "cflux-checkpoint", version 2) records the position (epochs
 * done, samples of the next epoch done, the optimizer's steps), what the run was (seed,
 * batch, base learning rate, schedule, augmentation when there is one, planned epochs,
 * validation fraction, training samples, loss and its label smoothing, the first loss,
 * the frozen parameters) and the model (a hash of its graph, its file name and source
 * text). Metadata comes from a file that anyone may have written: every number is
 * parsed whole and in range, the fields must agree with one another, and the graph
 * must be this model's. Differences that a resumed run can live with (another seed,
 * batch size, schedule, augmentation, number of epochs) are passed to on_warning,
 * saying what they change. Version 1 checkpoints (no position within an epoch, no
 * graph hash) still load.
 *
 * A run on text data also records the text's vocabulary ("text_vocab", the distinct
 * bytes in ascending order, written as text: printable ASCII as itself, a backslash
 * as two, any other byte as \xNN with two lowercase hex digits), so that it resumes
 * only on text of the same characters and `cflux sample` can turn classes back into
 * characters. The field is optional: a checkpoint without it is a run on other data. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/error.h"
#include "core/graph.h"
#include "core/num.h"
#include "core/params_io.h"
#include "core/safetensors.h"
#include "train/trainer.h"

#define CKPT_VERSION 2
#define MAX_EPOCHS 1000000
#define MAX_BATCH (1 << 20)

/* The history: one JSON array per epoch of the numbers of cf_epoch_stats in order,
 * NaN as null, less the timings (so that the same run writes the same bytes) and the
 * regression's MAE and R² (which came later: the epochs a checkpoint resumes have them
 * NaN, and checkpoints stay readable by the builds before). */
#define HIST_FIELDS 9

static void stats_fields(const cf_epoch_stats *e, double *v)
{
    double f[HIST_FIELDS] = {e->epoch, e->epochs, e->train_loss, e->train_accuracy, e->val_loss, e->val_accuracy,
                             e->test_loss, e->test_accuracy, e->lr};
    memcpy(v, f, sizeof f);
}

static char *history_json(const cf_trainer *t)
{
    size_t cap = 64 + (size_t)t->nhist * HIST_FIELDS * 18, k = 0;
    char *b = malloc(cap);
    if (!b) return cf_oom(cap), NULL;
    b[k++] = '[';
    for (int i = 0; i < t->nhist; i++) {
        double v[HIST_FIELDS];
        stats_fields(&t->hist[i], v);
        k += (size_t)snprintf(b + k, cap - k, "%s[", i ? ", " : "");
        for (int j = 0; j < HIST_FIELDS; j++)
            k += (size_t)(isfinite(v[j]) ? snprintf(b + k, cap - k, "%s%.9g", j ? ", " : "", v[j])
                                         : snprintf(b + k, cap - k, "%snull", j ? ", " : ""));
        b[k++] = ']';
    }
    b[k++] = ']';
    b[k] = 0;
    return b;
}

/* Parse a history of epochs 1 .. epoch into *h (malloc'd; *n entries). 0 or -1. */
static int parse_history(const char *text, const char *path, int epoch, cf_epoch_stats **h, int *n)
{
    *h = NULL;
    *n = 0;
    if (!text) return 0;
    cJSON *root = cJSON_Parse(text);
    int count = cJSON_IsArray(root) ? cJSON_GetArraySize(root) : -1;
    cf_epoch_stats *out = count > 0 ? calloc((size_t)count, sizeof *out) : NULL;
    int i = 0;
    for (const cJSON *row = root ? root->child : NULL; count > 0 && out && row; row = row->next, i++) {
        double v[HIST_FIELDS];
        int j = 0;
        if (!cJSON_IsArray(row) || cJSON_GetArraySize(row) != HIST_FIELDS) break;
        for (const cJSON *x = row->child; x; x = x->next, j++) {
            if (cJSON_IsNull(x)) v[j] = NAN;
            else if (cJSON_IsNumber(x) && isfinite(x->valuedouble)) v[j] = x->valuedouble;
            else break;
        }
        /* epochs run 1, 2, ... up to the checkpoint's */
        if (j != HIST_FIELDS || v[0] != (double)(i + 1) || v[0] > epoch || !(v[1] >= v[0] && v[1] <= MAX_EPOCHS)) break;
        out[i] = (cf_epoch_stats){(int)v[0], (int)v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], NAN, NAN,
                                  NAN, NAN, NAN, NAN};   /* MAE and R² are not kept */
    }
    cJSON_Delete(root);
    if (count < 0 || (count > 0 && (!out || i != count))) {
        free(out);
        if (count > 0 && !out) return cf_oom((size_t)count * sizeof *out);
        return cf_seterr("error: %s: the checkpoint's history is malformed (entry %d)", path, i + 1);
    }
    *h = out;
    *n = count;
    return 0;
}

/* A field that is missing or malformed, as an error. */
static int bad_field(const char *path, const char *key, const char *v, const char *want)
{
    if (!v) return cf_seterr("error: %s: the checkpoint has no '%s'", path, key);
    return cf_seterr("error: %s: the checkpoint's '%s' is \"%.40s%s\", not %s", path, key, v,
                     strlen(v) > 40 ? "..." : "", want);
}

/* ---- the vocabulary of text data ---- */

#define VOCAB_TEXT (256 * 4 + 1)

static void vocab_encode(const unsigned char *v, int n, char out[VOCAB_TEXT])
{
    size_t k = 0;
    for (int i = 0; i < n; i++) {
        if (v[i] == '\\') k += (size_t)sprintf(out + k, "\\\\");
        else if (v[i] >= 0x20 && v[i] < 0x7f) out[k++] = (char)v[i];
        else k += (size_t)sprintf(out + k, "\\x%02x", v[i]);
    }
    out[k] = 0;
}

static int hex_digit(char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1; }

/* text (NULL: none) back into v: the count, 0 for none, or -1 with the message. The
 * bytes must be distinct and ascending, as the writer makes them. */
static int vocab_decode(const char *text, const char *path, unsigned char v[256])
{
    if (!text) return 0;
    int n = 0;
    for (const char *p = text; *p; n++) {
        int c;
        if (*p == '\\' && p[1] == '\\') {
            c = '\\';
            p += 2;
        } else if (*p == '\\' && p[1] == 'x' && hex_digit(p[2]) >= 0 && hex_digit(p[3]) >= 0) {
            c = hex_digit(p[2]) * 16 + hex_digit(p[3]);
            p += 4;
        } else if ((unsigned char)*p >= 0x20 && (unsigned char)*p < 0x7f && *p != '\\') {
            c = (unsigned char)*p++;
        } else {
            return bad_field(path, "text_vocab", text, "distinct bytes in ascending order (\\\\ and \\xNN escaped)");
        }
        if (n >= 256 || (n > 0 && c <= v[n - 1]))
            return bad_field(path, "text_vocab", text, "distinct bytes in ascending order (\\\\ and \\xNN escaped)");
        v[n] = (unsigned char)c;
    }
    if (n == 0) return bad_field(path, "text_vocab", text, "at least one character");
    return n;
}

/* A character for a message: itself when printable, else \xNN. */
static const char *show_char(unsigned char c, char buf[8])
{
    if (c >= 0x20 && c < 0x7f && c != '\'') snprintf(buf, 8, "'%c'", c);
    else snprintf(buf, 8, "\\x%02x", c);
    return buf;
}

/* The checkpoint's vocabulary (n of v; 0: none) must be the trainer's. */
static int check_vocab(const cf_trainer *t, const unsigned char *v, int n, const char *path)
{
    if (n == t->nvocab && memcmp(v, t->vocab, (size_t)n) == 0) return 0;
    if (!n) return cf_seterr("error: %s: the checkpoint's run was not trained on text, and this one is", path);
    if (!t->nvocab)
        return cf_seterr("error: %s: the checkpoint's run was trained on text (%d distinct characters), and this "
                         "data is not text", path, n);
    int i = 0;
    while (i < n && i < t->nvocab && v[i] == t->vocab[i]) i++;
    char a[8], b[8], where[96];
    if (i < n && i < t->nvocab)
        snprintf(where, sizeof where, "; class %d is %s there and %s here", i, show_char(v[i], a),
                 show_char(t->vocab[i], b));
    else
        snprintf(where, sizeof where, "; this text %s %s", i < n ? "lacks" : "adds",
                 show_char(i < n ? v[i] : t->vocab[i], a));
    return cf_seterr("error: %s: the checkpoint was trained on text of other characters (%d distinct, this text has "
                     "%d%s): a run resumes only on text with the same characters", path, n, t->nvocab, where);
}

int cf_checkpoint_vocab(const char *path, unsigned char vocab[256])
{
    if (!path || !vocab) return cf_seterr("error: cf_checkpoint_vocab: no path or no place for the vocabulary");
    cf_st_file *f = cf_st_read_ex(path, CF_ST_HEADER_ONLY);
    if (!f) return -1;
    int n = vocab_decode(cf_st_meta(f, "text_vocab"), path, vocab);
    cf_st_free(f);
    return n;
}

int cf_checkpoint_batch(const char *path)
{
    if (!path) return cf_seterr("error: cf_checkpoint_batch: no path");
    cf_st_file *f = cf_st_read_ex(path, CF_ST_HEADER_ONLY);
    if (!f) return -1;
    const char *format = cf_st_meta(f, "format"), *v = cf_st_meta(f, "batch");
    int64_t b = 0;
    int rc = 0;
    if (format && strcmp(format, CF_CHECKPOINT_FORMAT) == 0 && (!v || cf_parse_i64(v, 1, INT32_MAX, &b)))
        rc = bad_field(path, "batch", v, "a whole number of at least 1");
    cf_st_free(f);
    return rc ? -1 : (int)b;
}

static const char *loss_name(int kind) { return kind == CF_LOSS_XENT ? "cross-entropy" : "mean squared error"; }

int cf_trainer_save(cf_trainer *t, const char *path)
{
    if (!t || !path) return cf_seterr("error: cf_trainer_save: no trainer or path");
    cf_model *m = t->m;
    cf_exec *run = t->train.full;
    int np = cf_model_params_tensor_count(m), ns = cf_optim_state_count(t->opt), nc = cf_exec_state_count(run);
    int n = np + ns + nc;
    cf_st_tensor *ts = calloc((size_t)n + 1, sizeof *ts);
    char **names = calloc((size_t)(ns + nc) + 1, sizeof *names);
    if (!ts || !names) {
        free(ts);
        free(names);
        return cf_oom((size_t)n * sizeof *ts);
    }
    cf_model_params_as_tensors(m, ts);
    int rc = 0;
    /* the state a stateful unroll carries to the next batch: resuming mid-epoch goes
       on from it */
    for (int i = 0; i < nc && rc == 0; i++) {
        const char *sn = cf_exec_state_name(run, i);
        cf_shape sh = cf_exec_state_shape(run, i);
        cf_st_tensor *x = &ts[np + ns + i];
        size_t count = cf_shape_count(sh);
        float *data = malloc(count * sizeof *data);
        names[ns + i] = malloc(strlen(sn) + 8);
        if (!data || !names[ns + i]) {
            free(data);
            rc = cf_oom(count * sizeof *data);
            break;
        }
        sprintf(names[ns + i], "carry.%s", sn);
        cf_exec_state_get(run, i, data);
        x->name = names[ns + i];
        x->data = data;
        x->rank = sh.rank;
        for (int d = 0; d < sh.rank; d++) x->shape[d] = sh.d[d];
        x->count = count;
    }
    for (int i = 0; i < ns; i++) {
        size_t count;
        const char *sn = cf_optim_state_name(t->opt, i);
        names[i] = malloc(strlen(sn) + 8);
        if (!names[i]) {
            rc = cf_oom(strlen(sn) + 8);
            break;
        }
        sprintf(names[i], "optim.%s", sn);
        cf_st_tensor *x = &ts[np + i];
        x->name = names[i];
        x->data = cf_optim_state_data(t->opt, i, &count);
        x->rank = 1;
        x->shape[0] = (long long)count;
        x->count = count;
    }
    char version[16], epoch[16], esamples[32], epochs[16], step[32], seed[32], batch[16], lr[32], val[32];
    char ntrain[32], initial[32], hash[32], hyper[256], eloss[40], ehits[32];
    snprintf(version, sizeof version, "%d", CKPT_VERSION);
    snprintf(epoch, sizeof epoch, "%d", t->epoch);
    snprintf(esamples, sizeof esamples, "%zu", t->epoch_samples);
    snprintf(eloss, sizeof eloss, "%.17g", t->epoch_loss);
    snprintf(ehits, sizeof ehits, "%zu", t->epoch_hits);
    snprintf(epochs, sizeof epochs, "%d", t->o.epochs);
    snprintf(step, sizeof step, "%ld", cf_optim_get_steps(t->opt));
    snprintf(seed, sizeof seed, "%" PRIu64, t->o.seed);
    snprintf(batch, sizeof batch, "%d", t->o.batch);
    char limit[32], smooth[32];
    snprintf(limit, sizeof limit, "%ld", t->o.limit_batches);
    snprintf(smooth, sizeof smooth, "%.9g", t->o.label_smoothing);
    snprintf(lr, sizeof lr, "%.9g", (double)t->o.optim.lr);
    snprintf(val, sizeof val, "%.17g", t->o.val_fraction);
    snprintf(ntrain, sizeof ntrain, "%zu", t->ntrain);
    snprintf(initial, sizeof initial, "%.9g", t->initial_loss);
    snprintf(hash, sizeof hash, "%016" PRIx64, cf_model_graph_hash(m));
    const cf_optim_opts *op = &t->o.optim;
    snprintf(hyper, sizeof hyper,
             "{\"lr\": %.9g, \"momentum\": %.9g, \"beta1\": %.9g, \"beta2\": %.9g, \"eps\": %.9g, "
             "\"weight_decay\": %.9g, \"clip_norm\": %.9g}",
             op->lr, op->momentum, op->beta1, op->beta2, op->eps, op->weight_decay, op->clip_norm);
    const char *keys[100], *vals[100];
    int nmeta = 0;
#define META(k, v) (keys[nmeta] = (k), vals[nmeta++] = (v))
    META("format", CF_CHECKPOINT_FORMAT);
    META("format_version", version);
    META("cflux_version", cf_version());
    META("epoch", epoch);
    META("epoch_samples", esamples);
    META("epoch_loss_sum", eloss);
    META("epoch_hits", ehits);
    META("epochs", epochs);
    META("optimizer_steps", step);
    META("seed", seed);
    META("batch", batch);
    if (t->o.limit_batches > 0) META("limit_batches", limit);   /* none: no limit */
    META("lr", lr);
    META("optimizer", op->name);
    META("optimizer_settings", hyper);
    META("schedule", t->o.schedule);
    char aug[64];
    if (cf_augment_any(&t->aug)) META("augment", cf_augment_format(&t->aug, aug, sizeof aug));   /* none: absent */
    META("loss", loss_name(m->loss_kind));
    if (t->o.label_smoothing > 0) META("label_smoothing", smooth);   /* none: 0 */
    META("val_fraction", val);
    META("train_samples", ntrain);
    if (!isnan(t->initial_loss)) META("initial_loss", initial);   /* no step yet: none */
    META("graph_hash", hash);
    char *hist = history_json(t);
    if (!hist) rc = -1;
    META("history", hist ? hist : "[]");
    char vocab[VOCAB_TEXT];
    vocab_encode(t->vocab, t->nvocab, vocab);
    if (t->nvocab) META("text_vocab", vocab);
    char *frozen = cf_frozen_meta(m);
    if (frozen) META("frozen", frozen);
#undef META
    char **owned;
    if (cf_model_extra_meta(m, keys, vals, &nmeta, (int)(sizeof keys / sizeof *keys), &owned)) rc = -1;
    if (rc == 0) rc = cf_st_write(path, n, ts, nmeta, keys, vals);
    for (int i = 0; i < nc; i++) free((float *)ts[np + ns + i].data);
    for (int i = 0; i < ns + nc; i++) free(names[i]);
    free(names);
    free(ts);
    free(hist);
    free(frozen);
    cf_model_extra_meta_free(owned);
    return rc;
}

/* What a checkpoint says of its run, parsed and checked. */
typedef struct ckpt_meta {
    int version, epoch, epochs, batch;    /* epochs 0: not recorded (version 1) */
    int64_t limit_batches;                /* 0: none */
    int64_t steps, epoch_samples, train_samples;   /* train_samples 0: not recorded */
    int64_t epoch_hits;
    double epoch_loss;
    uint64_t seed;
    int has_seed;
    double lr, val_fraction, initial_loss;   /* NAN: not recorded */
    double label_smoothing;                  /* 0: none, or not recorded */
    const char *optim, *schedule, *loss, *hash, *model_file;
    const char *augment;                  /* NULL: none */
} ckpt_meta;

static int get_int(const cf_st_file *f, const char *path, const char *key, int64_t lo, int64_t hi, int64_t *out,
                   int required)
{
    const char *v = cf_st_meta(f, key);
    if (!v && !required) return 0;
    if (cf_parse_i64(v, lo, hi, out) == 0) return 0;
    char want[96];
    snprintf(want, sizeof want, "a whole number from %" PRId64 " to %" PRId64, lo, hi);
    return bad_field(path, key, v, want);
}

static int get_num(const cf_st_file *f, const char *path, const char *key, double lo, double hi, double *out)
{
    const char *v = cf_st_meta(f, key);
    if (!v) return 0;
    if (cf_parse_f64(v, lo, hi, out) == 0) return 0;
    char want[96];
    snprintf(want, sizeof want, "a number from %g to %g", lo, hi);
    return bad_field(path, key, v, want);
}

static int read_meta(const cf_st_file *f, const char *path, ckpt_meta *k)
{
    memset(k, 0, sizeof *k);
    k->lr = k->val_fraction = k->initial_loss = k->epoch_loss = NAN;
    const char *format = cf_st_meta(f, "format");
    if (!format || strcmp(format, CF_CHECKPOINT_FORMAT) != 0)
        return cf_seterr("error: %s: not a cflux checkpoint (no format metadata); load parameters alone with --init",
                         path);
    int64_t v;
    const char *ver = cf_st_meta(f, "format_version");
    if (cf_parse_i64(ver, 1, INT32_MAX, &v))
        return bad_field(path, "format_version", ver, "a whole number");
    if (v > CKPT_VERSION)
        return cf_seterr("error: %s: written by checkpoint format %s; this build reads 1 to %d", path, ver,
                         CKPT_VERSION);
    k->version = (int)v;
    int v2 = k->version >= 2;
    if (get_int(f, path, "epoch", 0, MAX_EPOCHS, &v, 1)) return -1;
    k->epoch = (int)v;
    if (get_int(f, path, "optimizer_steps", 0, INT64_C(1) << 53, &k->steps, 1)) return -1;
    if (get_int(f, path, "batch", 1, MAX_BATCH, &v, v2)) return -1;
    k->batch = (int)v;
    if (get_int(f, path, "limit_batches", 1, INT64_C(1) << 40, &k->limit_batches, 0)) return -1;
    v = 0;
    if (get_int(f, path, "epochs", 1, MAX_EPOCHS, &v, v2)) return -1;
    k->epochs = (int)v;
    if (get_int(f, path, "train_samples", 1, INT64_C(1) << 40, &k->train_samples, v2)) return -1;
    if (get_int(f, path, "epoch_samples", 0, k->train_samples ? k->train_samples - 1 : 0, &k->epoch_samples, v2))
        return -1;
    if (get_int(f, path, "epoch_hits", 0, k->epoch_samples * (INT64_C(1) << 20), &k->epoch_hits, 0) ||
        get_num(f, path, "epoch_loss_sum", 0, 1e300, &k->epoch_loss))
        return -1;
    if (isnan(k->epoch_loss)) k->epoch_loss = 0;
    const char *seed = cf_st_meta(f, "seed");
    if (seed && cf_parse_u64(seed, &k->seed)) return bad_field(path, "seed", seed, "a whole number from 0 to 2^64-1");
    k->has_seed = seed != NULL;
    if (get_num(f, path, "lr", 1e-30, 1e30, &k->lr) || get_num(f, path, "val_fraction", 0, 0.999999, &k->val_fraction) ||
        get_num(f, path, "initial_loss", 0, 1e300, &k->initial_loss) ||
        get_num(f, path, "label_smoothing", 0, 0.999999, &k->label_smoothing))
        return -1;
    k->optim = cf_st_meta(f, "optimizer");
    k->schedule = cf_st_meta(f, "schedule");
    k->augment = cf_st_meta(f, "augment");
    k->loss = cf_st_meta(f, "loss");
    k->hash = cf_st_meta(f, "graph_hash");
    k->model_file = cf_st_meta(f, "model_file");
    if (!k->optim) return bad_field(path, "optimizer", NULL, "");
    if (k->hash && (strlen(k->hash) != 16 || strspn(k->hash, "0123456789abcdef") != 16))
        return bad_field(path, "graph_hash", k->hash, "16 hexadecimal digits");
    /* the fields must agree: at least one step per epoch done, and no more epochs
     * done than planned */
    if (k->epochs && k->epoch > k->epochs)
        return cf_seterr("error: %s: the checkpoint says %d epochs are done of the %d planned", path, k->epoch,
                         k->epochs);
    int64_t least = k->epoch + (k->epoch_samples > 0);
    if (k->steps < least)
        return cf_seterr("error: %s: the checkpoint says %d epochs%s are done in %" PRId64 " optimizer steps; that "
                         "takes at least %" PRId64, path, k->epoch, k->epoch_samples ? " and part of the next" : "",
                         k->steps, least);
    return 0;
}

/* The checkpoint must be this model's (its parameters, then its whole graph) and
 * this optimizer's: errors. */
static int check_same_run(cf_trainer *t, const ckpt_meta *k, const cf_st_file *f, const char *path)
{
    if (strcmp(k->optim, t->o.optim.name) != 0)
        return cf_seterr("error: %s: the checkpoint's optimizer is %s but this run uses %s", path, k->optim,
                         t->o.optim.name);
    if (k->loss && strcmp(k->loss, loss_name(t->o.loss)) != 0)
        return cf_seterr("error: %s: the checkpoint was trained with %s but this run uses %s", path, k->loss,
                         loss_name(t->o.loss));
    if (cf_model_params_from(t->m, f, path, CF_LOAD_CHECK) || cf_frozen_check(t->m, cf_st_meta(f, "frozen"), path))
        return -1;
    if ((float)k->label_smoothing != (float)t->o.label_smoothing)   /* another loss: said before the graph's hash */
        return cf_seterr("error: %s: the checkpoint was trained with label smoothing %g but this run uses %g "
                         "(--label-smoothing)", path, k->label_smoothing, t->o.label_smoothing);
    if (cf_model_params_from(t->m, f, path, CF_LOAD_CHECK)) return -1;
    char hash[32];
    snprintf(hash, sizeof hash, "%016" PRIx64, cf_model_graph_hash(t->m));
    if (k->hash && strcmp(k->hash, hash) != 0)
        return cf_seterr("error: %s: the checkpoint was trained with another model (%s), whose graph differs from "
                         "%s's; to start a new run from its weights, load them as parameters (cflux train --init)",
                         path, k->model_file && *k->model_file ? k->model_file : "its source is in the checkpoint",
                         t->m->source_name ? t->m->source_name : "this model");
    return 0;
}

/* What changed since the checkpoint's run, and what it means for this one: warnings. */
static void note_changes(const cf_trainer *t, const ckpt_meta *k, const char *path)
{
    if (k->has_seed && k->seed != t->o.seed)
        cf_trainer_warn(t, "note: %s: the checkpoint's run used seed %" PRIu64 " and this one %" PRIu64
                        ": the order of the data differs from here on", path, k->seed, t->o.seed);
    if (!isnan(k->lr) && (float)k->lr != t->o.optim.lr)
        cf_trainer_warn(t, "note: %s: the base learning rate changes from %g to %g", path, k->lr,
                        (double)t->o.optim.lr);
    if (k->schedule && strcmp(k->schedule, t->o.schedule) != 0)
        cf_trainer_warn(t, "note: %s: the schedule changes from '%s' to '%s'", path, k->schedule, t->o.schedule);
    char aug[64];
    const char *was = k->augment ? k->augment : "none", *now = cf_augment_format(&t->aug, aug, sizeof aug);
    if (strcmp(was, now) != 0)
        cf_trainer_warn(t, "note: %s: the augmentation changes from '%.60s' to '%s'", path, was, now);
    if (k->epochs && k->epochs != t->o.epochs && k->epoch < t->o.epochs)
        cf_trainer_warn(t, "note: %s: the run now has %d epochs (the checkpoint's had %d): the schedule goes on from "
                        "epoch %d of %d", path, t->o.epochs, k->epochs, k->epoch + 1, t->o.epochs);
    if (k->batch && k->batch != t->o.batch)
        cf_trainer_warn(t, "note: %s: the batch size changes from %d to %d: the schedule goes on by the share of "
                        "the run done", path, k->batch, t->o.batch);
    if (k->limit_batches != t->o.limit_batches) {
        char was[32] = "none", now[32] = "none";
        if (k->limit_batches) snprintf(was, sizeof was, "%" PRId64, k->limit_batches);
        if (t->o.limit_batches) snprintf(now, sizeof now, "%ld", t->o.limit_batches);
        cf_trainer_warn(t, "note: %s: the limit of batches an epoch changes from %s to %s: the schedule goes on by the "
                        "share of the run done, and a stopped epoch goes on from its place or the new epoch's last "
                        "batch", path, was, now);
    }
    if (!isnan(k->val_fraction) && k->val_fraction != t->o.val_fraction)
        cf_trainer_warn(t, "warning: %s: the validation fraction changes from %g to %g: the validation split is "
                        "another, and samples trained on before may be in it", path, k->val_fraction,
                        t->o.val_fraction);
    if (k->train_samples && (size_t)k->train_samples != t->ntrain)
        cf_trainer_warn(t, "warning: %s: the training data has %zu samples, the checkpoint's run had %" PRId64
                        ": the epochs are not the same", path, t->ntrain, k->train_samples);
}

/* The optimizer state tensors of the file, checked against the optimizer's: each
 * there, of its size, finite, and not below 0 where the optimizer's never is. 0 or -1. */
static int check_optim_state(const cf_trainer *t, const cf_st_file *f, const char *path)
{
    for (int i = 0; i < cf_optim_state_count(t->opt); i++) {
        char name[512];
        size_t count;
        snprintf(name, sizeof name, "optim.%s", cf_optim_state_name(t->opt, i));
        cf_optim_state_data(t->opt, i, &count);
        const cf_st_tensor *x = cf_st_find(f, name);
        if (!x || x->count != count)
            return cf_seterr("error: %s: the optimizer state '%s' is %s", path, name,
                             x ? "of another size" : "missing");
        int nonneg = cf_optim_state_nonneg(t->opt, i);
        for (size_t j = 0; j < count; j++) {
            if (!isfinite(x->data[j]))
                return cf_seterr("error: %s: the optimizer state '%s' holds %g (element %zu), not a finite number",
                                 path, name, (double)x->data[j], j);
            if (nonneg && x->data[j] < 0)
                return cf_seterr("error: %s: the optimizer state '%s' holds %g (element %zu), but Adam's second "
                                 "moment is a mean of squares, never below 0: the checkpoint is damaged",
                                 path, name, (double)x->data[j], j);
        }
    }
    return 0;
}

void cf_trainer_drop_carry(cf_trainer *t)
{
    for (int i = 0; i < t->ncarry; i++) free(t->carry[i].name), free(t->carry[i].data);
    free(t->carry);
    t->carry = NULL;
    t->ncarry = 0;
}

/* Keep the carried state saved with the run (carry.NAME) for cf_fit, which gives it
 * to its training executor. A value that is not finite is refused. 0 or -1. */
static int keep_carries(cf_trainer *t, const cf_st_file *f, const char *path)
{
    cf_trainer_drop_carry(t);
    int n = 0;
    for (int i = 0; i < cf_st_count(f); i++) n += strncmp(cf_st_get(f, i)->name, "carry.", 6) == 0;
    if (!n) return 0;
    if (!(t->carry = calloc((size_t)n, sizeof *t->carry))) return cf_oom((size_t)n * sizeof *t->carry);
    for (int i = 0; i < cf_st_count(f); i++) {
        const cf_st_tensor *x = cf_st_get(f, i);
        if (strncmp(x->name, "carry.", 6) != 0) continue;
        for (size_t j = 0; j < x->count; j++)
            if (!isfinite(x->data[j])) {
                cf_trainer_drop_carry(t);
                return cf_seterr("error: %s: the carried state '%s' holds %g (element %zu), not a finite number",
                                 path, x->name, (double)x->data[j], j);
            }
        struct cf_saved_carry *c = &t->carry[t->ncarry++];
        c->name = strdup(x->name + 6);
        c->data = malloc((x->count ? x->count : 1) * sizeof *c->data);
        c->count = x->count;
        if (!c->name || !c->data) {
            cf_trainer_drop_carry(t);
            return cf_oom(x->count * sizeof(float));
        }
        memcpy(c->data, x->data, x->count * sizeof *c->data);
    }
    return 0;
}

int cf_trainer_load(cf_trainer *t, const char *path)
{
    if (!t || !path) return cf_seterr("error: cf_trainer_load: no trainer or path");
    cf_st_file *f = cf_st_read(path);
    if (!f) return -1;
    ckpt_meta k;
    cf_epoch_stats *hist = NULL;
    int nhist = 0, rc = -1;
    /* everything is checked before anything changes */
    unsigned char vocab[256];
    int nvocab = 0;
    if (read_meta(f, path, &k) || check_same_run(t, &k, f, path) ||
        (nvocab = vocab_decode(cf_st_meta(f, "text_vocab"), path, vocab)) < 0 ||
        check_vocab(t, vocab, nvocab, path) || check_optim_state(t, f, path) ||
        parse_history(cf_st_meta(f, "history"), path, k.epoch, &hist, &nhist))
        goto out;
    if (cf_model_params_from(t->m, f, path, 0)) goto out;   /* by name; skips optim.* */
    for (int i = 0; i < cf_optim_state_count(t->opt); i++) {
        char name[512];
        size_t count;
        snprintf(name, sizeof name, "optim.%s", cf_optim_state_name(t->opt, i));
        float *dst = cf_optim_state_data(t->opt, i, &count);
        memcpy(dst, cf_st_find(f, name)->data, count * sizeof *dst);
    }
    if (keep_carries(t, f, path)) goto out;
    cf_optim_set_steps(t->opt, (long)k.steps);
    t->epoch = k.epoch;
    t->epoch_samples = (size_t)k.epoch_samples;
    t->epoch_loss = k.epoch_loss;
    t->epoch_hits = (size_t)k.epoch_hits;
    t->initial_loss = k.initial_loss;
    free(t->hist);
    t->hist = hist;
    t->nhist = t->cap_hist = nhist;
    hist = NULL;
    note_changes(t, &k, path);
    rc = 0;
out:
    free(hist);
    cf_st_free(f);
    return rc;
}
