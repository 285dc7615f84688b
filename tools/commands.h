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

/* The datasets of --data (default fashion-mnist) for model m, read as the options
 * say (--label-col, --features, image folders' --skip-bad and --exact-size; text in
 * sequences of the model's input length). 0, or -1 with the error. */
int open_data(const args *a, const cf_model *m, cf_dataset **train, cf_dataset **test);
/* Class c's name, or its number in buf. */
const char *class_name(const cf_model *m, int c, char *buf, size_t size);
/* Evaluation's metrics as a table, and as JSON members (no braces). */
void metrics_print(const cf_model *m, const cf_metrics *r, FILE *f);
void metrics_json(const cf_model *m, const cf_metrics *r, FILE *f);

/* Settings every command takes: --threads and --max-memory. 0, or 1 with the error. */
int apply_common(const args *a);

#endif
