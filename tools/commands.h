/* commands.h - the tool's commands. Each takes its parsed arguments and returns the
 * exit status: 0 ok, 1 bad model or data, 2 bad usage, 128 + N when stopped by
 * signal N. */
#ifndef CF_TOOLS_COMMANDS_H
#define CF_TOOLS_COMMANDS_H

#include "cflux.h"
#include "options.h"

int cmd_check(const args *a);
int cmd_shapes(const args *a);
int cmd_graph(const args *a);
int cmd_train(const args *a);
int cmd_eval(const args *a);
int cmd_predict(const args *a);
int cmd_bench(const args *a);
int cmd_sample(const args *a);
int cmd_summary(const args *a);
int cmd_lrfind(const args *a);
int cmd_import(const args *a);
int cmd_export(const args *a);
int cmd_quantize(const args *a);
int cmd_version(const args *a);

/* Print cf_last_error() to stderr and return 1 (cflux.c). */
int fail(void);

/* s as a JSON string: quotes, backslashes and control characters escaped (cflux.c). */
void json_string(FILE *f, const char *s);

/* Seconds on the monotonic clock (cflux.c). */
double now(void);

/* Class names (classes.c): from path (one a line), or, with none, the checkpoint's,
 * the data's class names when it has them (d: an image folder's), or Fashion-MNIST's
 * for its data (data NULL or "fashion-mnist"). 0, or 1 with the message printed. */
int class_names_set(cf_model *m, const char *path, const char *data, const cf_dataset *d);
/* Class names from the data (a CSV label column of words): set on m when it has none
 * (the model's output must give that many classes), else they must be m's. 0, or 1
 * with the message printed. */
int class_names_from_data(cf_model *m, const cf_dataset *d);

/* --only-classes LIST (classes.c): train and test (NULL: none) replaced by their samples
 * of the listed classes (numbers, ranges "5-9" or names), relabelled 0.. in the list's
 * order; the model gets their names (Fashion-MNIST's built in), or must have them
 * already. 0 when not given; 0, or 1 with the message. */
int only_classes(cf_model *m, const args *a, cf_dataset **train, cf_dataset **test);
/* Fine-tuning (finetune.c). freeze_params: --freeze PATTERN... (globs over the
 * parameter names) freezes the parameters matched, or, resuming without it, those the
 * checkpoint's run froze; 0, or 1 with the message (a pattern matching nothing,
 * everything frozen). load_init: the weights of --init, all of them, or with --partial
 * those that match in name and shape, saying on stderr what was and was not loaded;
 * 0, or 1 with the message. */
int freeze_params(cf_model *m, const args *a);
int load_init(cf_model *m, const args *a);

/* Is path a safetensors file (a checkpoint, a parameter file) rather than a model? */
int is_weights_file(const char *path);

/* The datasets of --data (default fashion-mnist) for model m, read as the options
 * say (--label-col, --features, image folders' --skip-bad and --exact-size; text in
 * sequences of the model's input length). 0, or -1 with the error. */
int open_data(const args *a, const cf_model *m, cf_dataset **train, cf_dataset **test);
/* What a checkpoint remembers of its data (remember.c). data_remember notes, in the
 * model, how train read it (--data, the label column, --features, the CSV's column
 * count): 0, or 1 with the message. data_recall fills out from a, taking what a leaves
 * out from the model's notes (and says so on said, when not NULL). data_contradicts:
 * 1 (said) when a's --label-col or --features read d otherwise than the checkpoint
 * ckpt was trained; else 0. remembered_columns: the training CSV's column count, or 0. */
int data_remember(cf_model *m, const args *a, const cf_dataset *train);
void data_recall(const cf_model *m, const args *a, args *out, FILE *said);
int data_contradicts(const cf_model *m, const args *a, const cf_dataset *d, const char *ckpt);
int remembered_columns(const cf_model *m);
/* A note on stderr ("note: FILE: the inputs range over ...") when d's inputs lie far
 * outside the range of m's training inputs (remember.c); ckpt names the checkpoint. */
void range_note(const cf_model *m, const cf_dataset *d, const char *ckpt);
/* Options for one kind of data given with another (--label-col or --features without
 * CSV data, --skip-bad or --exact-size without an image folder): 2 with the message,
 * else 0. data NULL is fashion-mnist. */
int data_options_fit(const args *a, const char *data, const char *cmd);
/* MODEL with its weights loaded, for eval, predict and export: MODEL a .flux file with
 * --params CKPT, or a checkpoint alone (its model's source within). *params is the
 * weights' path. NULL with the message printed: *params NULL for a usage error (exit
 * 2), else set. */
cf_model *load_model_and_weights(const args *a, const char *cmd, const char **params);
/* Class c's name, or its number in buf. */
const char *class_name(const cf_model *m, int c, char *buf, size_t size);
/* Evaluation's metrics as a table, and as JSON members (no braces). */
void metrics_print(const cf_model *m, const cf_metrics *r, FILE *f);
void metrics_json(const cf_model *m, const cf_metrics *r, FILE *f);

/* Settings every command takes: --threads and --max-memory. 0, or 1 with the error. */
int apply_common(const args *a);

/* A figure as the epoch lines print it: four decimals, or four digits in %g's way when
 * that would hide it; "-" for NaN. buf holds 32 bytes. (train.c) */
const char *fmt_num(double v, char *buf);

#endif
