/* train.c - `cflux train`, `cflux eval`, `cflux predict`: the training loop of the
 * library, with progress on a terminal, plain lines elsewhere, CSV, SVG and JSON
 * records of the run, and a clean stop on SIGINT or SIGTERM. */
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cflux.h"
#include "commands.h"
#include "plot.h"
#include "report.h"

typedef struct run {
    const args *a;
    int epochs, batch;
    cf_trainer *trainer;
    int tty, drawn;           /* stderr is a terminal; a progress line is on it */
    double last_draw;
    int failed;               /* a record or checkpoint could not be written */
    int saved_epoch;          /* the epoch of the last checkpoint written, or -1 */
    int text;                 /* text data: the sequence length T (losses are per character); else 0 */
    report *rep;              /* --report: the page, rewritten after every epoch */
} run;

/* Where train's lines for people go: stdout, or stderr with --json (whose object is
 * then stdout's one line). */
static FILE *say;

/* A figure with four decimals, or four digits in %g's way when that would hide it
 * (33710207303.6800 is 3.371e+10, 0.00001234 is 1.234e-05); "-" for none. */
const char *fmt_num(double v, char *buf)
{
    if (isnan(v)) return "-";
    double a = fabs(v);
    snprintf(buf, 32, a >= 1e5 || (a > 0 && a < 1e-3) ? "%.4g" : "%.4f", v);
    return buf;
}

/* A loss, and for text data its unit: "2.1234 nats/char" ("-" for none). */
static const char *fmt_loss(double v, int text, char *buf)
{
    if (isnan(v)) return "-";
    fmt_num(v, buf);
    if (text) strcat(buf, " nats/char");
    return buf;
}

static void json_num(const char *key, double v, int last)
{
    if (isfinite(v)) printf("\"%s\": %.6g%s", key, v, last ? "" : ", ");
    else printf("\"%s\": null%s", key, last ? "" : ", ");
}

/* --json's object as far as every run has it: the epochs done, the last epoch's
 * figures (NULL: none), the speed; the caller adds its own keys and "params". */
static void json_begin(int epochs, const cf_epoch_stats *last, double sps, double secs, int text)
{
    printf("{\"epochs\": %d, ", epochs);
    json_num("train_loss", last ? last->train_loss : NAN, 0);
    json_num("train_accuracy", last ? last->train_accuracy : NAN, 0);
    json_num("val_loss", last ? last->val_loss : NAN, 0);
    json_num("val_accuracy", last ? last->val_accuracy : NAN, 0);
    json_num("test_loss", last ? last->test_loss : NAN, 0);
    json_num("test_accuracy", last ? last->test_accuracy : NAN, 0);
    json_num("samples_per_sec", sps, 0);
    if (text) json_num("chars_per_sec", sps * text, 0);
    json_num("seconds", secs, 0);
}

/* ---- signals: the first stops training after its step, a second exits at once ---- */

static cf_trainer *volatile stop_target;
static volatile sig_atomic_t stop_signal;
static pthread_t main_thread;

/* Signals sent to the process may land on any thread that does not block them, such
 * as OpenBLAS's own; they are passed on to the main thread, which holds them back
 * while it writes a file, so that exiting never leaves a temporary file behind. */
static void on_signal(int sig)
{
    if (!pthread_equal(pthread_self(), main_thread)) {
        pthread_kill(main_thread, sig);
        return;
    }
    if (stop_signal) {
        static const char nl[] = "\ncflux: stopped at once; the last checkpoint written is intact\n";
        ssize_t ignored = write(2, nl, sizeof nl - 1);
        (void)ignored;
        _exit(128 + sig);
    }
    stop_signal = sig;
    if (stop_target) cf_trainer_stop_with(stop_target, sig);
}

static void catch_signals(void)
{
    main_thread = pthread_self();
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

/* ---- progress and records ---- */

static void end_progress(run *r)
{
    if (r->drawn) fprintf(stderr, "\r\033[K");
    r->drawn = 0;
}

static void on_warning(const char *msg, void *user)
{
    end_progress(user);
    fprintf(stderr, "%s\n", msg);
}

static void on_batch(int epoch, long step, long steps, double loss, double acc, double sps, void *user)
{
    run *r = user;
    if (!r->tty || r->a->quiet) return;
    double t = now();
    if (step != steps && t - r->last_draw < 0.1) return;
    r->last_draw = t;
    int width = 24, fill = (int)(width * step / steps);
    char bar[32];
    for (int i = 0; i < width; i++) bar[i] = i < fill ? '=' : i == fill ? '>' : ' ';
    bar[width] = 0;
    double eta = sps > 0 ? (double)(steps - step) * (double)r->batch / sps : 0;
    char b1[32], b2[32];
    fprintf(stderr, "\repoch %d/%d [%s] %3d%%  loss %s  acc %s  %.0f %s/s  ETA %.0fs \033[K", epoch, r->epochs, bar,
            (int)(100 * step / steps), fmt_loss(loss, r->text, b2), fmt_num(acc, b1), r->text ? sps * r->text : sps,
            r->text ? "chars" : "samples", eta);
    fflush(stderr);
    r->drawn = 1;
}

/* The whole history as CSV, written crash-safe: a resumed run's log holds every epoch.
 * A stream (--log /dev/stdout, a FIFO, a terminal) is opened once and kept: the header
 * goes once, then each epoch as it ends (a FIFO closed after epoch 1 would end its
 * reader there, and the next epoch's open would wait for another). */
static int write_log(const char *path, const cf_epoch_stats *h, int n)
{
    static cf_file *stream;   /* the kept stream, until the process exits */
    static int sent;          /* the epochs it has had */
    cf_file *f = stream ? stream : cf_file_create(path);
    if (!f) return -1;
    FILE *fp = cf_file_stream(f);
    int from = stream ? sent : 0;
    if (!stream)
        fprintf(fp, "epoch,train_loss,train_accuracy,val_loss,val_accuracy,test_loss,test_accuracy,lr,seconds,"
                    "samples_per_sec\n");
    if (cf_file_through(f)) {
        stream = f;
        sent = n;
    }
    for (int i = from; i < n; i++) {
        double v[9] = {h[i].train_loss, h[i].train_accuracy, h[i].val_loss, h[i].val_accuracy, h[i].test_loss,
                       h[i].test_accuracy, h[i].lr, h[i].seconds, h[i].samples_per_sec};
        fprintf(fp, "%d", h[i].epoch);
        for (int k = 0; k < 9; k++)   /* NaN (nothing measured) as an empty field */
            if (isnan(v[k])) fprintf(fp, ",");
            else fprintf(fp, k == 7 ? ",%.3f" : k == 8 ? ",%.0f" : ",%.6g", v[k]);
        fprintf(fp, "\n");
    }
    if (stream && fflush(fp) == 0 && !ferror(fp)) return 0;
    stream = NULL;   /* a failed stream: its commit says why, and training stops */
    return cf_file_commit(f);
}

static int on_epoch(const cf_epoch_stats *s, void *user)
{
    run *r = user;
    char a[32], b[32], c[32], d[32], e[32], f[32];
    end_progress(r);
    if (!r->a->quiet) {   /* what was measured: a split without data, a regression's accuracy, left out */
        fprintf(say, "epoch %2d/%d  train loss %s", s->epoch, s->epochs, fmt_loss(s->train_loss, r->text, a));
        if (!isnan(s->train_accuracy)) fprintf(say, " acc %s", fmt_num(s->train_accuracy, b));
        if (!isnan(s->val_loss)) fprintf(say, " | val loss %s", fmt_loss(s->val_loss, r->text, c));
        if (!isnan(s->val_accuracy)) fprintf(say, " acc %s", fmt_num(s->val_accuracy, d));
        if (!isnan(s->test_loss)) fprintf(say, " | test loss %s", fmt_loss(s->test_loss, r->text, e));
        if (!isnan(s->test_accuracy)) fprintf(say, " acc %s", fmt_num(s->test_accuracy, f));
        fprintf(say, " | %.1f s, %.0f %s/s\n", s->seconds, r->text ? s->samples_per_sec * r->text : s->samples_per_sec,
                r->text ? "chars" : "samples");
    }
    fflush(say);
    const cf_epoch_stats *h;
    int n = cf_trainer_history(r->trainer, &h);
    /* a record or checkpoint we cannot write is work we would lose: stop */
    if (r->a->log && write_log(r->a->log, h, n)) {
        r->failed = 1;
        return fail();
    }
    if (r->a->save) {
        if (cf_trainer_save(r->trainer, r->a->save)) {
            r->failed = 1;
            return fail();
        }
        r->saved_epoch = s->epoch;
    }
    if (r->rep) {
        char status[96];
        snprintf(status, sizeof status, "Training: epoch %d of %d done; this page reloads every 30 seconds.", s->epoch,
                 s->epochs);
        if (report_write(r->rep, status, 0)) {
            r->failed = 1;
            return 1;
        }
    }
    return !isnan(r->a->stop_after) && s->epoch >= (int)r->a->stop_after;
}

/* ---- train ---- */

static int train_run(const args *a, int ranks);

/* An image folder, in one line: its images and classes, and the files left out
 * ("images:DIR: 600 images of 10 classes (a, b, ...); 2 other files passed over;
 * skipped 3 unreadable files of 603: first a.png: truncated"). Nothing for other data. */
static void describe_folder(const cf_dataset *d)
{
    if (!d || !cf_dataset_streamed(d)) return;
    const char *const *names, *first;
    size_t ignored, bad = cf_dataset_skipped(d, &ignored, &first), n = cf_dataset_count(d);
    int nc = cf_dataset_class_names(d, &names);
    fprintf(say, "images:%s: %zu images of %d classes (", cf_dataset_name(d), n, nc);
    for (int i = 0; i < nc && i < 8; i++) fprintf(say, "%s%s", i ? ", " : "", names[i]);
    fprintf(say, "%s)", nc > 8 ? ", ..." : "");
    if (ignored) fprintf(say, "; %zu other file%s passed over (not .png, .jpg or .jpeg, or hidden)", ignored,
                        ignored == 1 ? "" : "s");
    if (bad) fprintf(say, "; skipped %zu unreadable file%s of %zu: first %s", bad, bad == 1 ? "" : "s", n + bad, first);
    fprintf(say, "\n");
}

/* What was inferred from the data and the model, in one line: the task, the loss,
 * and for CSV data which column holds the labels and which the features. */
static void describe_task(const cf_dataset *d, cf_trainer *t, const cf_model *m, int normalize)
{
    int xent = cf_trainer_loss(t) == CF_LOSS_XENT, nvocab;
    cf_shape out = cf_model_output_shape(m, 0);
    if (cf_dataset_vocab(d, &nvocab)) {
        fprintf(say, "task: the next character, of %d distinct in the text (the model has %d classes), at each of %d "
               "steps; cross-entropy in nats per character\n", nvocab, out.d[out.rank - 1],
               cf_dataset_sample_shape(d).d[0]);
        return;
    }
    if (xent) fprintf(say, "task: classification into %d classes (cross-entropy)", out.d[out.rank - 1]);
    else fprintf(say, "task: regression (mean squared error)");
    int col = cf_dataset_label_column(d), ncols = cf_dataset_column_count(d);
    if (col >= 0) {
        const char *name = cf_dataset_column_name(d, col);
        int nf = cf_dataset_sample_shape(d).d[0];
        fprintf(say, "; %s: column %d%s%s%s of %d", xent ? "labels" : "targets", col,
                name ? " '" : "", name ? name : "", name ? "'" : "", ncols);
        if (nf == ncols - 1) fprintf(say, ", features: the other %d", nf);
        else fprintf(say, ", features: %d chosen (--features), %d column%s ignored", nf, ncols - 1 - nf,
                     ncols - 1 - nf == 1 ? "" : "s");
    }
    const char *const *names;
    int nn = cf_dataset_class_names(d, &names);
    for (int i = 0; i < nn && i < 10; i++) fprintf(say, "%s%s", i ? ", " : "; the classes: ", names[i]);
    if (nn > 10) fprintf(say, ", ... (%d)", nn);
    fprintf(say, "\n");
    if (normalize && !xent)
        fprintf(say, "--normalize: inputs and targets standardised with the training split's statistics (kept in the "
                     "checkpoint): the losses below are on standardised targets; eval's metrics and predict are in "
                     "the targets' own units\n");
    cf_target_stats ts;
    if (!xent && cf_dataset_target_stats(d, &ts) == 0 && ts.whole && !ts.more && ts.distinct <= 20 && ts.distinct > 1)
        fprintf(stderr, "note: the targets are whole numbers of only %zu values: if they are classes, end the model "
                        "with softmax (one output per class)\n", ts.distinct);
}

/* Check each file the run will write, before the first step. 0 or 1. */
static int check_outputs(const args *a)
{
    const char *paths[5] = {a->save, a->log, a->plot, a->keep_best, a->report};
    for (int i = 0; i < 5; i++)
        if (paths[i] && cf_file_check(paths[i])) return fail();
    return 0;
}

/* How to go on from a checkpoint: this command line with --resume PATH (without its
 * --stop-after when that is where the run paused). */
static void print_resume(const args *a, const char *path, int paused)
{
    fprintf(stderr, "resume with: cflux train");
    for (int i = 0; i < a->argc; i++) {
        const char *s = a->argv[i];
        if (!strcmp(s, "--resume") || (paused && !strcmp(s, "--stop-after"))) {
            i++;
            continue;
        }
        if (!strncmp(s, "--resume=", 9) || (paused && !strncmp(s, "--stop-after=", 13))) continue;
        fprintf(stderr, " %s", s);
    }
    fprintf(stderr, " --resume %s\n", path);
}

static cf_loss loss_arg(const char *s)
{
    if (!s) return 0;
    if (!strcmp(s, "xent")) return CF_LOSS_XENT;
    if (!strcmp(s, "mse")) return CF_LOSS_MSE;
    return (cf_loss)-1;
}

/* The sequence length T of a model whose input 0 is one sequence, (T): what text data
 * is cut into. 0 for any other input. */
static int model_seq_len(const cf_model *m)
{
    cf_shape s = cf_model_input_shape(m, 0);
    int k = s.rank > 0 && s.d[0] == CF_BATCH;
    return s.rank - k == 1 ? s.d[k] : 0;
}

int open_data(const args *a, const cf_model *m, cf_dataset **train, cf_dataset **test)
{
    cf_data_opts o = cf_data_defaults();
    o.label = a->label_col;
    o.features = a->features;
    o.seq_len = model_seq_len(m);
    o.image = cf_model_input_shape(m, 0);
    o.exact_size = a->exact_size;
    o.skip_bad = a->skip_bad;
    o.nclass_names = cf_model_class_names(m, &o.class_names);   /* a trained model's: the data maps to them */
    o.classes_of = a->classes ? a->classes : a->params;
    return cf_data_open_opts(a->data ? a->data : "fashion-mnist", &o, train, test);
}

/* The sequence length of text data (its losses are per character); 0 for other data. */
static int text_seq_len(const cf_dataset *d)
{
    return cf_dataset_vocab(d, NULL) ? cf_dataset_sample_shape(d).d[0] : 0;
}

/* Started by mpirun with more than one process: train data-parallel (the library's
 * "Data-parallel training"). Rank 0 alone prints and writes files. 0, or 1 with the
 * message. */
static int start_ranks(const args **a, args *local, int *ranks)
{
    const char *n = getenv("OMPI_COMM_WORLD_SIZE");
    *ranks = 1;
    if (!n || atoi(n) < 2) return 0;
    if (!cf_dist_available()) {
        fprintf(stderr, "error: started as %s processes, but this cflux was built without MPI (install Open MPI's "
                        "libopenmpi-dev and rebuild)\n", n);
        return 1;
    }
    if (cf_dist_init()) return fail();
    *ranks = cf_dist_size();
    if (cf_dist_rank() > 0) {   /* the others: quiet, no files */
        *local = **a;
        local->quiet = 1;
        local->json = 0;
        local->save = local->log = local->plot = local->report = local->keep_best = NULL;
        *a = local;
    }
    return 0;
}

int cmd_train(const args *a)
{
    args local;
    int ranks;
    if (start_ranks(&a, &local, &ranks)) return 1;
    int rc = train_run(a, ranks);
    if (ranks > 1 && rc == 1) cf_dist_abort();   /* the other ranks may wait on this one */
    if (ranks > 1) cf_dist_finalize();
    return rc;
}

/* The line a run ends with, --quiet or not: the test set's figures, else the
 * validation split's, else the training data's, of the last epoch (for text the loss
 * per character and the accuracy; for regression the loss alone). */
static void result_line(const cf_epoch_stats *e, int text, int standardised)
{
    const char *what = !isnan(e->test_loss) ? "test" : !isnan(e->val_loss) ? "validation" : "train";
    double loss = !isnan(e->test_loss) ? e->test_loss : !isnan(e->val_loss) ? e->val_loss : e->train_loss;
    double acc = !isnan(e->test_loss) ? e->test_accuracy : !isnan(e->val_loss) ? e->val_accuracy : e->train_accuracy;
    if (isnan(loss)) return;
    char b[32];
    if (text) fprintf(say, "%s loss %s nats/char, accuracy %.4f\n", what, fmt_num(loss, b), acc);
    else if (!isnan(acc)) fprintf(say, "%s accuracy %.4f\n", what, acc);
    else fprintf(say, "%s loss %s (mean squared error%s)\n", what, fmt_num(loss, b), standardised ? ", on standardised targets" : "");
}

/* The samples the validation split takes from train, as cf_dataset_split takes them. */
static size_t val_count(const cf_dataset *train, double fraction)
{
    return fraction > 0 ? (size_t)llround(fraction * (double)cf_dataset_count(train)) : 0;
}

/* A warm-up longer than the whole run never reaches the base rate: say so. */
static void warmup_note(const char *schedule, const cf_dataset *train, const cf_fit_opts *o)
{
    const char *w = strstr(schedule, "warmup:");
    if (!w) return;
    long warm = atol(w + 7);
    size_t n = cf_dataset_count(train) - val_count(train, o->val_fraction), B = (size_t)o->batch;
    long per = (long)(cf_dataset_sequential(train) ? n / B : (n + B - 1) / B);
    if (o->limit_batches > 0 && per > o->limit_batches) per = o->limit_batches;
    long total = per * o->epochs;
    if (warm > total)
        fprintf(stderr, "note: the warm-up of %ld steps is longer than the whole run (%ld steps, %ld an epoch): the "
                        "learning rate never reaches its base %g\n", warm, total, per, (double)o->optim.lr);
}

static int train_run(const args *a, int ranks)
{
    run r = {.a = a, .saved_epoch = -1};
    say = a->json ? stderr : stdout;
    r.epochs = isnan(a->epochs) ? 10 : (int)a->epochs;
    r.batch = isnan(a->batch) ? 64 : (int)a->batch;
    cf_optim_opts oo = cf_optim_defaults(a->optim ? a->optim : "adam");
    if (!oo.name) {
        fprintf(stderr, "cflux train: unknown optimizer '%s' (sgd, momentum, nesterov, adam, adamw)\n", a->optim);
        return 2;
    }
    if (!isnan(a->lr)) oo.lr = (float)a->lr;
    if (!isnan(a->wd)) oo.weight_decay = (float)a->wd;
    if (!isnan(a->momentum)) oo.momentum = (float)a->momentum;
    if (!isnan(a->clip)) oo.clip_norm = (float)a->clip;
    cf_loss loss = loss_arg(a->loss);
    if ((int)loss < 0) {
        fprintf(stderr, "cflux train: --loss is xent or mse, not '%s'\n", a->loss);
        return 2;
    }
    if (a->init && a->resume) {
        fprintf(stderr, "cflux train: --init starts a new run from weights and --resume continues a run: give one\n");
        return 2;
    }
    if (a->partial && !a->init) {
        fprintf(stderr, "cflux train: --partial says how --init loads weights: give --init FILE with it\n");
        return 2;
    }
    if (!isnan(a->stop_after) && (int)a->stop_after > r.epochs) {
        fprintf(stderr, "cflux train: --stop-after %d is past the %d epochs planned\n", (int)a->stop_after, r.epochs);
        return 2;
    }
    const char *schedule = a->schedule ? a->schedule : "cosine";
    float lr0;
    if (cf_schedule_lr(schedule, 1, 0, 1, 1, &lr0)) return fail();
    if (data_options_fit(a, a->data, "train")) return 2;
    if (apply_common(a) || check_outputs(a)) return 1;
    catch_signals();

    cf_dataset *train = NULL, *test = NULL;
    if (is_weights_file(a->pos[0])) {   /* its model and weights, but which run? */
        fprintf(stderr, "error: %s is a checkpoint (or parameter file), not a model: give the model's file with "
                        "--resume %s (its run goes on) or --init %s (a new run from its weights)\n", a->pos[0],
                a->pos[0], a->pos[0]);
        return 1;
    }
    cf_model *m = cf_model_load(a->pos[0]);
    int rc = 1;
    if (!m) return fail();
    if (cf_dist_rank() == 0) fputs(cf_model_compile_notes(m), stderr);   /* before the data, which may fail */
    cf_model_set_seed(m, a->seed);
    if (a->augment && cf_augment_check(a->augment, cf_model_input_shape(m, 0))) {   /* before the data is read */
        fprintf(stderr, "cflux train: %s\n", cf_last_error() + (strncmp(cf_last_error(), "error: ", 7) ? 0 : 7));
        rc = 2;
        goto done;
    }
    if (a->label_smoothing > 0 && (loss == CF_LOSS_MSE || (!loss && strcmp(cf_model_output_op(m, 0), "softmax")))) {
        fprintf(stderr, "cflux train: --label-smoothing is for cross-entropy, and %s trains with mean squared error "
                        "(a classifier ends with softmax)\n", a->pos[0]);
        rc = 2;
        goto done;
    }
    if (class_names_set(m, a->classes, a->data, NULL)) goto done;   /* first: word labels are read as these */
    if (open_data(a, m, &train, &test)) goto out;
    if (only_classes(m, a, &train, &test) || class_names_from_data(m, train) || freeze_params(m, a)) goto done;
    r.text = text_seq_len(train);
    cf_fit_opts fo = cf_fit_defaults();
    fo.epochs = r.epochs;
    fo.batch = r.batch;
    fo.optim = oo;
    fo.schedule = schedule;
    fo.val_fraction = isnan(a->val) ? 0 : a->val;
    fo.seed = a->seed;
    fo.loss = loss;
    fo.normalize = a->normalize;
    fo.on_epoch = on_epoch;
    fo.on_batch = on_batch;
    fo.on_warning = on_warning;
    fo.user = &r;
    fo.patience = isnan(a->patience) ? 0 : (int)a->patience;
    fo.keep_best = a->keep_best;
    fo.distributed = ranks > 1;
    fo.limit_batches = isnan(a->limit_batches) ? 0 : (long)a->limit_batches;
    fo.augment = a->augment;
    fo.label_smoothing = isnan(a->label_smoothing) ? 0 : a->label_smoothing;
    r.tty = isatty(fileno(stderr));
    if (!(r.trainer = cf_trainer_new(m, train, &fo))) goto out;
    if (load_init(m, a)) goto done;
    if (a->resume && cf_trainer_load(r.trainer, a->resume)) goto out;
    if (data_remember(m, a, train)) goto done;   /* after the weights: a file's notes replace the model's */
    int first = cf_trainer_epoch(r.trainer);
    if (first >= r.epochs || (!isnan(a->stop_after) && first >= (int)a->stop_after)) {
        fprintf(stderr, "note: %s has done %d epochs of the %d asked for: nothing to train (raise --epochs)\n",
                a->resume, first, !isnan(a->stop_after) && (int)a->stop_after < r.epochs ? (int)a->stop_after : r.epochs);
        if (a->json) {   /* the checkpoint's figures, and that this run trained nothing */
            const cf_epoch_stats *h;
            int nh = cf_trainer_history(r.trainer, &h);
            json_begin(first, nh ? &h[nh - 1] : NULL, 0, 0, r.text);
            printf("\"nothing_to_train\": true, \"params\": %zu}\n", cf_model_weight_count(m));
        }
        rc = 0;
        goto done;
    }
    if (!a->quiet) {
        int nt = cf_threads();
        char what[64] = "samples";
        if (r.text) snprintf(what, sizeof what, "sequences of %d characters", r.text);
        char limit[96] = "";
        if (fo.limit_batches)
            snprintf(limit, sizeof limit, ", limited to %ld batch%s per epoch and per evaluation", fo.limit_batches,
                     fo.limit_batches == 1 ? "" : "es");
        int aug = a->augment && strcmp(a->augment, "none") != 0;
        char smooth[48] = "", wd[32] = "", val[48] = "";
        if (fo.label_smoothing > 0) snprintf(smooth, sizeof smooth, ", label smoothing %g", fo.label_smoothing);
        if (oo.weight_decay > 0) snprintf(wd, sizeof wd, " wd %g", (double)oo.weight_decay);
        /* the split as cf_dataset_split makes it */
        size_t nall = cf_dataset_count(train), nval = val_count(train, fo.val_fraction);
        if (fo.val_fraction > 0) snprintf(val, sizeof val, "%zu validation, ", nval);
        int xent = cf_trainer_loss(r.trainer) == CF_LOSS_XENT;
        fprintf(say, "training %s on %s: %zu train, %s%zu test %s, %zu weights, %s lr %g%s, schedule %s%s%s, batch %d%s%s%s, "
                     "%d thread%s\n",
               a->pos[0], a->data ? a->data : "fashion-mnist", nall - nval, val, test ? cf_dataset_count(test) : 0, what,
               cf_model_weight_count(m), oo.name, (double)oo.lr, wd, schedule, smooth,
               !fo.normalize ? "" : xent ? ", inputs standardised" : ", inputs and targets standardised", r.batch, limit,
               aug ? ", augment " : "", aug ? a->augment : "", nt, nt == 1 ? "" : "s");
        if (ranks > 1)
            fprintf(say, "data-parallel over %d ranks: each takes its share of every batch of %d (%d to %d rows)\n", ranks,
                   r.batch, r.batch / ranks, (r.batch + ranks - 1) / ranks);
        if (cf_dataset_about(train)) fprintf(say, "text: %s\n", cf_dataset_about(train));
        if (test && cf_dataset_about(test)) fprintf(say, "test: %s\n", cf_dataset_about(test));
        describe_folder(train);
        describe_folder(test);
        describe_task(train, r.trainer, m, a->normalize);
        if (cf_model_summary(m, 0, 0, say)) goto out;
        if (a->init) fprintf(say, "starting from the weights in %s\n", a->init);
        if (cf_trainer_epoch_samples(r.trainer))
            fprintf(say, "resuming %s in epoch %d after %zu samples\n", a->resume, first + 1,
                    cf_trainer_epoch_samples(r.trainer));
        else if (a->resume)
            fprintf(say, "resuming %s after epoch %d of %d\n", a->resume, first, r.epochs);
        fflush(say);
    }
    report rep = {0};
    char command[4096], lr_s[32], batch_s[16], epochs_s[16], val_s[32], seed_s[32], threads_s[16], pat_s[16];
    char loss_s[64];   /* the report keeps pointers to these until the run ends */
    if (a->report) {
        rep.path = a->report;
        rep.model = a->pos[0];
        size_t k = (size_t)snprintf(command, sizeof command, "cflux train");
        for (int i = 0; i < a->argc && k < sizeof command; i++)
            k += (size_t)snprintf(command + k, sizeof command - k, strpbrk(a->argv[i], " \t'\"") ? " '%s'" : " %s",
                                  a->argv[i]);
        rep.command = command;
        snprintf(lr_s, sizeof lr_s, "%g", (double)oo.lr);
        snprintf(batch_s, sizeof batch_s, "%d", r.batch);
        snprintf(epochs_s, sizeof epochs_s, "%d", r.epochs);
        snprintf(val_s, sizeof val_s, "%g", fo.val_fraction);
        snprintf(seed_s, sizeof seed_s, "%llu", (unsigned long long)a->seed);
        snprintf(threads_s, sizeof threads_s, "%d", cf_threads());
        snprintf(pat_s, sizeof pat_s, "%d", fo.patience);
        if (fo.label_smoothing > 0)
            snprintf(loss_s, sizeof loss_s, "cross-entropy, label smoothing %g", fo.label_smoothing);
        else
            snprintf(loss_s, sizeof loss_s, "%s",
                     cf_trainer_loss(r.trainer) == CF_LOSS_XENT ? "cross-entropy" : "mean squared error");
        const char *set[][2] = {{"data", a->data ? a->data : "fashion-mnist"},
                                {"loss", loss_s},
                                {"optimizer", oo.name}, {"learning rate", lr_s}, {"schedule", schedule},
                                {"augmentation", a->augment ? a->augment : "none"},
                                {"batch", batch_s}, {"epochs", epochs_s}, {"validation split", val_s},
                                {"patience", fo.patience ? pat_s : "none"}, {"seed", seed_s}, {"threads", threads_s},
                                {"CPU", cf_cpu_name()}, {"kernels", cf_gemm_name()}};
        for (size_t i = 0; i < sizeof set / sizeof *set; i++) {
            rep.settings[rep.nsettings][0] = set[i][0];
            rep.settings[rep.nsettings++][1] = set[i][1];
        }
        size_t len = 0;
        FILE *mem = open_memstream(&rep.summary, &len);
        if (mem && cf_model_summary(m, r.batch, 0, mem)) {
            fclose(mem);
            free(rep.summary);
            rep.summary = NULL;
        } else if (mem) {
            fclose(mem);
        }
        /* the schedule, by step, at most 400 points */
        size_t ntrain = cf_dataset_count(train);
        ntrain -= val_count(train, fo.val_fraction);
        long spe = (long)((ntrain + (size_t)r.batch - 1) / (size_t)r.batch), total = spe * r.epochs;
        rep.lr_x = malloc(400 * sizeof *rep.lr_x);
        rep.lr_y = malloc(400 * sizeof *rep.lr_y);
        for (int i = 0; rep.lr_x && rep.lr_y && total > 0 && i < 400; i++) {
            long step = (long)((double)i * (double)total / 399);
            float v;
            if (cf_schedule_lr(schedule, oo.lr, step, total, spe, &v)) break;
            rep.lr_x[i] = (double)step / (double)spe;
            rep.lr_y[i] = v;
            rep.nlr = i + 1;
        }
        rep.m = m;
        rep.t = r.trainer;
        rep.test = test;
        rep.text = r.text;
        rep.val = fo.val_fraction > 0;
        r.rep = &rep;
    }
    warmup_note(schedule, train, &fo);
    double start = now();
    stop_target = r.trainer;
    if (stop_signal) cf_trainer_stop_with(r.trainer, stop_signal);   /* a signal while the data loaded */
    int fit = cf_fit(r.trainer, train, test);
    stop_target = NULL;
    end_progress(&r);
    if (fit < 0 || r.failed) {
        if (fit < 0) fail();
        if (r.saved_epoch >= 0) fprintf(stderr, "the checkpoint of epoch %d is in %s\n", r.saved_epoch, a->save);
        goto plot;
    }
    double secs = now() - start;
    const cf_epoch_stats *h;
    int nh = cf_trainer_history(r.trainer, &h);
    if (fit == CF_STOPPED) {
        int sig = cf_trainer_stop_reason(r.trainer);   /* data-parallel: the signal any rank was given */
        if (sig != SIGINT && sig != SIGTERM) sig = stop_signal ? stop_signal : SIGINT;
        int epoch = cf_trainer_epoch(r.trainer);
        size_t part = cf_trainer_epoch_samples(r.trainer);
        fprintf(stderr, "cflux train: interrupted (%s) ", sig == SIGTERM ? "SIGTERM" : "SIGINT");
        if (part) fprintf(stderr, "in epoch %d after %zu samples\n", epoch + 1, part);
        else fprintf(stderr, "after epoch %d\n", epoch);
        if (a->save) {
            if (cf_trainer_save(r.trainer, a->save)) {
                fail();
            } else {
                fprintf(stderr, "saved %s\n", a->save);
                print_resume(a, a->save, 0);
            }
        } else if (cf_dist_rank() == 0) {   /* the other ranks never save */
            fprintf(stderr, "nothing saved (no --save)\n");
        }
        if (a->plot) plot_write_svg(a->plot, h, nh, a->pos[0]);
        rc = 128 + sig;
        goto done;
    }
    if (a->plot && plot_write_svg(a->plot, h, nh, a->pos[0])) goto done;
    const cf_epoch_stats *last = nh ? &h[nh - 1] : NULL;
    double samples = 0;
    for (int i = 0; i < nh; i++)
        if (h[i].epoch > first) samples += h[i].samples_per_sec * h[i].seconds;
    double sps = secs > 0 ? samples / secs : 0;   /* evaluation included: what a user waits for */
    if (last && cf_dist_rank() == 0)   /* --quiet too: what the run came to; once, not from every rank */
        result_line(last, r.text, cf_model_target_norm(m, NULL, NULL) > 0);
    int best = 0, early = fo.patience && nh && cf_early_stop(&h[0].val_loss, sizeof *h, nh, fo.patience, &best);
    if (fo.patience || fo.keep_best) cf_early_stop(&h[0].val_loss, sizeof *h, nh, 0, &best);
    if (!a->quiet && early && cf_trainer_epoch(r.trainer) < r.epochs)
        fprintf(say, "stopped early after epoch %d: the validation loss has not improved for %d epoch%s\n",
               cf_trainer_epoch(r.trainer), fo.patience, fo.patience == 1 ? "" : "s");
    if (!a->quiet && best > 0)
        fprintf(say, "best epoch %d: validation loss %.4f%s%s\n", best, h[best - 1].val_loss, a->keep_best ? ", kept in " : "",
               a->keep_best ? a->keep_best : "");
    if (r.saved_epoch >= 0 && !a->quiet) fprintf(say, "saved %s (epoch %d)\n", a->save, r.saved_epoch);
    if (cf_dist_rank() == 0 && !isnan(a->stop_after) && cf_trainer_epoch(r.trainer) < r.epochs &&
        cf_trainer_epoch(r.trainer) >= (int)a->stop_after) {
        /* paused as asked: how to go on, as after Ctrl-C */
        if (a->save) print_resume(a, a->save, 1);
        else fprintf(stderr, "note: stopped after epoch %d of %d (--stop-after) with nothing saved (no --save) to resume "
                             "from\n", cf_trainer_epoch(r.trainer), r.epochs);
    }
    double waited = cf_trainer_wait_seconds(r.trainer);
    if (ranks > 1 && !a->quiet)
        fprintf(say, "%.0f samples/s over %d ranks; waiting on the other ranks %.2f s of %.2f s (%.1f%%)\n", sps, ranks,
               waited, secs, secs > 0 ? 100 * waited / secs : 0);
    if (a->json) {
        json_begin(cf_trainer_epoch(r.trainer), last, sps, secs, r.text);
        if (ranks > 1) printf("\"ranks\": %d, \"wait_seconds\": %.6g, ", ranks, waited);
        if (best > 0) printf("\"best_epoch\": %d, \"stopped_early\": %s, ", best, early ? "true" : "false");
        printf("\"params\": %zu}\n", cf_model_weight_count(m));
    }
    rc = 0;
    goto done;
plot:
    if (a->plot) {
        const cf_epoch_stats *hh;
        int n = cf_trainer_history(r.trainer, &hh);
        if (n) plot_write_svg(a->plot, hh, n, a->pos[0]);
    }
    goto done;
out:
    fail();
done:
    if (r.rep) {
        char status[160];
        int e = cf_trainer_epoch(r.trainer);
        if (rc == 0 && e < r.epochs && !isnan(a->stop_after) && e >= (int)a->stop_after)
            snprintf(status, sizeof status, "Paused after epoch %d of %d (--stop-after); --resume goes on.", e,
                     r.epochs);
        else if (rc == 0)
            snprintf(status, sizeof status, "Finished: %d epoch%s%s.", e, e == 1 ? "" : "s",
                     e < r.epochs ? ", stopped early: the validation loss no longer improved" : "");
        else if (rc > 128) snprintf(status, sizeof status, "Interrupted after epoch %d.", e);
        else snprintf(status, sizeof status, "Stopped by an error after epoch %d.", e);
        if (report_write(r.rep, status, 1) == 0 && !a->quiet) fprintf(say, "report: %s\n", a->report);
        free(r.rep->summary);
        free(r.rep->lr_x);
        free(r.rep->lr_y);
    }
    cf_trainer_free(r.trainer);
    cf_dataset_free(train);
    cf_dataset_free(test);
    cf_model_free(m);
    return rc;
}

/* ---- eval ---- */

/* Text data must be the characters the checkpoint was trained on, when it says (a
 * parameter file does not): 0; 1 when they are not (said here); -1 when the file
 * cannot be read (cf_last_error). */
static int check_params_vocab(const char *params, const cf_dataset *d)
{
    int n;
    const unsigned char *v = cf_dataset_vocab(d, &n);
    unsigned char cv[256];
    int cn = v ? cf_checkpoint_vocab(params, cv) : 0;
    if (cn < 0) return -1;
    if (cn == 0 || (cn == n && memcmp(cv, v, (size_t)n) == 0)) return 0;
    fprintf(stderr, "error: %s: the checkpoint was trained on text of other characters (%d distinct, %s has %d)\n",
            params, cn, cf_dataset_name(d), n);
    return 1;
}

int cmd_eval(const args *a)
{
    cf_loss loss = loss_arg(a->loss);
    if ((int)loss < 0) {
        fprintf(stderr, "cflux eval: --loss is xent or mse, not '%s'\n", a->loss);
        return 2;
    }
    if (apply_common(a)) return 1;
    cf_dataset *train = NULL, *test = NULL;
    const char *params;
    cf_model *m = load_model_and_weights(a, "eval", &params);
    int rc = 1;
    if (!m) return params ? 1 : 2;
    args eff;   /* the options, with what the checkpoint remembers of its data */
    /* the checkpoint's weights and class names (or --classes) first: word labels are read as them */
    data_recall(m, a, &eff, a->json ? NULL : stdout);
    eff.params = params;   /* what the classes are said to be of */
    if (data_options_fit(a, eff.data, "eval")) {
        rc = 2;
        goto done;
    }
    if (class_names_set(m, a->classes, eff.data, NULL)) goto done;
    if (open_data(&eff, m, &train, &test)) goto out;
    if (only_classes(m, &eff, &train, &test) || data_contradicts(m, a, train, params)) goto done;
    int vocab = check_params_vocab(params, train);
    if (vocab < 0) goto out;
    if (vocab > 0) goto done;
    const cf_dataset *d = test ? test : train;
    range_note(m, d, params);
    int text = text_seq_len(d);
    if (loss && cf_model_add_loss(m, loss)) goto out;
    double l, acc;
    /* text: in the run's batches by default, so that its streams and carried state are
       those the run's test figures came from */
    int batch = isnan(a->batch) ? 256 : (int)a->batch;
    int trained = text && isnan(a->batch) ? cf_checkpoint_batch(params) : 0;
    if (trained < 0) goto out;
    if (trained > 0) batch = trained;
    long limit = isnan(a->limit_batches) ? 0 : (long)a->limit_batches;
    if (cf_evaluate_ex(m, d, batch, limit, &l, &acc)) goto out;
    /* what was scored: --limit-batches takes batches of samples spread over the data
       (of text the first batches, of streams the first steps of each) */
    size_t n = cf_dataset_count(d), scored = limit && n / (size_t)batch >= (size_t)limit ? (size_t)limit * (size_t)batch : n;
    if (!isfinite(l)) {
        fprintf(stderr, "error: %s: the loss on %s is %s: the weights overflow on this data\n", params,
                cf_dataset_name(d), isnan(l) ? "not a number" : "infinite");
        goto done;
    }
    if (class_names_set(m, a->classes, eff.data, d) || class_names_from_data(m, d)) goto done;
    /* text: the loss and accuracy of the run's streams; per-class figures of 76
       characters would say little */
    cf_metrics mt = {0};
    int top = isnan(a->top) ? 0 : (int)a->top, have = !text;
    if (have && cf_evaluate_metrics_ex(m, d, batch, limit, top, &mt)) goto out;
    if (a->json) {
        printf("{\"samples\": %zu, ", scored);
        if (scored < n) printf("\"limit_batches\": %ld, \"batch\": %d, ", limit, batch);
        json_num("loss", l, 0);
        json_num("accuracy", acc, !have);
        if (have) metrics_json(m, &mt, stdout);
        if (cf_model_quantized_count(m)) {
            const char *f32 = cf_model_info(m, "float32_accuracy");
            printf(", \"int8_products\": %d, \"int8_kernel\": ", cf_model_quantized_count(m));
            json_string(stdout, cf_int8_kernel());
            if (f32) printf(", \"float32_accuracy\": %s", f32);
        }
        printf("}\n");
    } else {
        char part[96] = "";
        if (scored < n)
            snprintf(part, sizeof part, text ? " of %zu, the first %ld batch%s of %d" : " of %zu: %ld batch%s of %d, spread over it",
                     n, limit, limit == 1 ? "" : "es", batch);
        printf("%s on %s (%zu %s%s): loss %.4f%s", a->pos[0], test ? "the test set" : "the data", scored,
               text ? "sequences" : "samples", part, l,
               text ? " nats/char" : cf_model_target_norm(m, NULL, NULL) ? " (on standardised targets)" : "");
        if (!isnan(acc)) printf(", accuracy %.4f", acc);
        if (have && mt.top_k) printf(", top-%d accuracy %.4f", mt.top_k, mt.top_k_accuracy);
        printf("\n");
        if (cf_model_quantized_count(m)) {   /* and the float32 model's, as cflux quantize measured it */
            const char *f32 = cf_model_info(m, "float32_accuracy");
            printf("int8: %d product%s in 8-bit integers (kernel %s)", cf_model_quantized_count(m),
                   cf_model_quantized_count(m) == 1 ? "" : "s", cf_int8_kernel());
            if (f32) printf("; the float32 weights' accuracy %s (cflux quantize, on the test set)", f32);
            printf("\n");
        }
        if (have) metrics_print(m, &mt, stdout);
    }
    cf_metrics_free(&mt);
    rc = 0;
    goto done;
out:
    fail();
done:
    cf_dataset_free(train);
    cf_dataset_free(test);
    cf_model_free(m);
    return rc;
}

/* ---- predict ---- */

/* One sample's value of one output: the top classes of a softmax (names when the model
 * has them), else the numbers. */
static void print_output(const cf_model *m, int o, const float *p, size_t k, int top, int json)
{
    if (!strcmp(cf_model_output_op(m, o), "softmax")) {
        int order[16], n = top < (int)k ? top : (int)k;
        for (int j = 0; j < n; j++) {   /* the n largest, in order; ties to the lower class */
            int best = -1;
            for (size_t c = 0; c < k; c++) {
                int taken = 0;
                for (int q = 0; q < j; q++) taken |= order[q] == (int)c;
                if (!taken && (best < 0 || p[c] > p[best])) best = (int)c;
            }
            order[j] = best;
        }
        const char *const *names;
        int nn = o == 0 ? cf_model_class_names(m, &names) : 0;
        if (json && n > 1) printf("[");
        for (int j = 0; j < n; j++) {
            int c = order[j];
            if (json) {
                printf("%s{\"class\": %d, ", j ? ", " : "", c);
                if (c < nn) {
                    printf("\"name\": ");
                    json_string(stdout, names[c]);
                    printf(", ");
                }
                printf("\"probability\": %.6g}", (double)p[c]);
            } else {
                printf("%s class %d", j ? "," : "", c);
                if (c < nn) printf(" %s", names[c]);
                printf(" (p = %.4f)", (double)p[c]);
            }
        }
        if (json && n > 1) printf("]");
        return;
    }
    if (json) printf("[");
    for (size_t c = 0; c < k; c++) printf("%s%.6g", c && json ? ", " : json ? "" : " ", (double)p[c]);
    if (json) printf("]");
}

/* Is the file an image (PNG or JPEG): named .png, .jpg or .jpeg, or a regular file
 * that begins as a PNG or a JPEG does (a pipe is not read here: its bytes would be
 * gone)? */
static int is_image(const char *path)
{
    static const char *const ext[] = {".png", ".jpg", ".jpeg"};
    size_t len = strlen(path);
    for (size_t i = 0; i < sizeof ext / sizeof *ext; i++) {
        size_t n = strlen(ext[i]);
        if (len > n && !strcasecmp(path + len - n, ext[i])) return 1;
    }
    struct stat st;
    if (stat(path, &st) || !S_ISREG(st.st_mode)) return 0;
    unsigned char sig[8];
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(sig, 1, 8, f) : 0;
    if (f) fclose(f);
    return (n == 8 && !memcmp(sig, "\x89PNG\r\n\x1a\n", 8)) || (n >= 3 && !memcmp(sig, "\xff\xd8\xff", 3));
}

/* A CSV file laid out as the training file was (its label column too, and the
 * columns the features were picked from), when the checkpoint remembers that layout
 * and *d, read as features alone, does not fit the model or could not be read (a label
 * column of words is no feature): the file read again as training read its own, the
 * label column left out of the inputs. 0 with *d the data (NULL: not read, the reason
 * is cf_last_error), or 1 with the message printed (read neither way: the first's). */
static int csv_as_trained(const cf_model *m, const args *a, cf_dataset **d)
{
    cf_shape in = cf_model_input_shape(m, 0);
    size_t want = 1;
    for (int i = in.rank > 0 && in.d[0] == CF_BATCH; i < in.rank; i++) want *= (size_t)in.d[i];
    int cols = remembered_columns(m);
    if (cols <= 0 || (*d && cf_shape_count(cf_dataset_sample_shape(*d)) == want)) return 0;
    if (*d && (cf_shape_count(cf_dataset_sample_shape(*d)) != (size_t)cols || cf_dataset_column_count(*d) != cols))
        return 0;
    char spec[4200], first[1024];
    if ((size_t)snprintf(spec, sizeof spec, "csv:%s", a->pos[1]) >= sizeof spec) return 0;
    snprintf(first, sizeof first, "%s", cf_last_error());
    args eff;
    data_recall(m, a, &eff, NULL);
    eff.data = spec;
    eff.params = a->params ? a->params : a->pos[0];
    cf_dataset *again = NULL, *none = NULL;
    if (open_data(&eff, m, &again, &none)) {
        if (*d) return fail();   /* it is laid out as the training file: its own error */
        fprintf(stderr, "%s\n", first);   /* neither way: the error of reading it as features */
        return 1;
    }
    cf_dataset_free(none);
    cf_dataset_free(*d);
    *d = again;
    return 0;
}

/* Each sample on a line, "i: ..." (or "FILE: ..." for images) with a model's outputs
 * side by side (" | " between them); --json: an array of samples, each its one
 * output's value, or with several outputs an array of their values. */
int cmd_predict(const args *a)
{
    if (apply_common(a)) return 1;
    const char *params;
    cf_model *m = load_model_and_weights(a, "predict", &params);
    if (!m) return params ? 1 : 2;   /* the small files first: a bad checkpoint is said before a large input is read */
    if (class_names_set(m, a->classes, "", NULL)) {
        cf_model_free(m);
        return 1;
    }
    int images = a->npos > 2 || is_image(a->pos[1]);
    for (int i = 1; images && i < a->npos; i++)
        if (!is_image(a->pos[i])) {
            fprintf(stderr, "error: %s: not a PNG or JPEG image; several inputs must all be images (an IDX or CSV "
                            "file goes alone)\n", a->pos[i]);
            cf_model_free(m);
            return 1;
        }
    cf_dataset *d = images ? cf_dataset_load_images(a->pos + 1, a->npos - 1, cf_model_input_shape(m, 0))
                           : cf_dataset_load_inputs(a->pos[1]);
    if (!images && csv_as_trained(m, a, &d)) {
        cf_model_free(m);
        return 1;
    }
    int rc = 1, no = cf_model_output_count(m), top = isnan(a->top) ? 1 : (int)a->top;
    if (top > 16) top = 16;
    float **outs = calloc(no > 0 ? (size_t)no : 1, sizeof *outs);
    if (!d) goto out;
    range_note(m, d, params);   /* the inputs as read: cf_predict_outputs standardises its copies */
    size_t n = cf_dataset_count(d);
    if (!outs) {
        fprintf(stderr, "error: out of memory\n");
        goto done;
    }
    for (int o = 0; o < no; o++) {
        size_t k = cf_shape_count(cf_model_output_shape(m, o));
        if (!(outs[o] = malloc((n ? n : 1) * k * sizeof **outs))) {
            fprintf(stderr, "error: %s: out of memory for the %zu values of output %d of %zu samples\n", a->pos[1],
                    n * k, o, n);
            goto done;
        }
    }
    if (cf_predict_outputs(m, d, isnan(a->batch) ? 256 : (int)a->batch, outs)) goto out;
    if (a->json) printf("[");
    for (size_t i = 0; i < n; i++) {
        if (a->json) printf("%s%s", i ? ", " : "", no > 1 ? "[" : "");
        else if (images) printf("%s:", a->pos[1 + i]);
        else printf("%zu:", i);
        for (int o = 0; o < no; o++) {
            size_t k = cf_shape_count(cf_model_output_shape(m, o));
            if (o) printf(a->json ? ", " : " |");
            print_output(m, o, outs[o] + i * k, k, top, a->json);
        }
        printf(a->json ? (no > 1 ? "]" : "") : "\n");
    }
    if (a->json) printf("]\n");
    rc = 0;
    goto done;
out:
    fail();
done:
    for (int o = 0; outs && o < no; o++) free(outs[o]);
    free(outs);
    cf_dataset_free(d);
    cf_model_free(m);
    return rc;
}
