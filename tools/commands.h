/* commands.h - the tool's commands. Each takes its parsed arguments and returns the
 * exit status: 0 ok, 1 bad model or data, 2 bad usage, 128 + N when stopped by
 * signal N. */
#ifndef CF_TOOLS_COMMANDS_H
#define CF_TOOLS_COMMANDS_H

#include "options.h"

int cmd_check(const args *a);
int cmd_shapes(const args *a);
int cmd_graph(const args *a);
int cmd_train(const args *a);
int cmd_eval(const args *a);
int cmd_predict(const args *a);
int cmd_bench(const args *a);
int cmd_sample(const args *a);
int cmd_import(const args *a);
int cmd_export(const args *a);
int cmd_version(const args *a);

/* Print cf_last_error() to stderr and return 1 (cflux.c). */
int fail(void);

/* Seconds on the monotonic clock (cflux.c). */
double now(void);

/* Settings every command takes: --threads and --max-memory. 0, or 1 with the error. */
int apply_common(const args *a);

#endif
