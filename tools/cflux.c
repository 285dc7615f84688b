/* cflux - the command-line tool, a thin layer over the public API.
 *
 * Exit codes: 0 ok, 1 bad model or data, 2 bad usage. Errors go to stderr as cflux
 * prints them: the message and, for shapes, the trace into the model's source. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cflux.h"
#include "commands.h"

static const char usage[] =
    "usage: cflux COMMAND [ARGS]\n"
    "\n"
    "cflux compiles a model to a static graph, checks every shape before anything\n"
    "runs, and trains and runs it on a fast CPU engine.\n"
    "\n"
    "commands:\n"
    "  check MODEL                 compile MODEL (a .flux file); say what it holds\n"
    "  shapes MODEL [--batch N]    list the forward function with every value's shape\n"
    "  graph MODEL [-o FILE]       write the graph in Graphviz DOT (to stdout)\n"
    "  train MODEL [OPTIONS]       train MODEL; report loss and accuracy per epoch\n"
    "  eval MODEL --params CKPT [--data SPEC] [--json]\n"
    "                              loss and accuracy of trained parameters\n"
    "  predict MODEL --params CKPT INPUT [--json]\n"
    "                              class and probability for each sample of INPUT\n"
    "                              (an IDX file of images, or a CSV file of numbers)\n"
    "  help [COMMAND]              show this text\n"
    "  version                     print the version and the engine's settings\n"
    "\n"
    "\n"
    "train options:\n"
    "  --data SPEC        fashion-mnist (default; Debian's dataset-fashion-mnist or\n"
    "                     $CFLUX_DATA), idx:TRAIN_IMAGES,TRAIN_LABELS[,TEST_IMAGES,TEST_LABELS],\n"
    "                     csv:TRAIN[,TEST] (label in --label-col, default 0)\n"
    "  --epochs N         10          --batch N          64\n"
    "  --stop-after N     stop after epoch N of the --epochs planned (resume later)\n"
    "  --optim NAME       sgd, momentum, nesterov, adam, adamw (default adam)\n"
    "  --lr X             learning rate (sgd family 0.1, adam family 0.001)\n"
    "  --momentum X       0.9         --wd X             weight decay\n"
    "  --clip X           clip the gradients' global norm to X\n"
    "  --schedule S       const, step:E:G, cosine (default), each optionally +warmup:N\n"
    "  --val X            hold out a fraction X of the training data for validation\n"
    "  --seed N           everything random (initialisation, shuffling)\n"
    "  --threads N        threads for the kernels (default: all CPUs)\n"
    "  --save PATH        write a checkpoint after every epoch (safetensors)\n"
    "  --resume PATH      continue from a checkpoint of the same model\n"
    "  --log CSV          per-epoch figures as CSV\n"
    "  --plot SVG         loss and accuracy curves as SVG\n"
    "  --json             end with one JSON object of the results\n"
    "  --quiet            no per-epoch lines\n"
    "\n"
    "exit status: 0 ok, 1 bad model or data, 2 bad usage\n";

static int bad_usage(const char *fmt, const char *arg)
{
    fprintf(stderr, "cflux: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (try 'cflux help')\n");
    return 2;
}

static int fail(void)
{
    fprintf(stderr, "%s\n", cf_last_error());
    return 1;
}

/* A positive integer option value, or -1. */
static int positive(const char *s)
{
    char *end;
    long v = s ? strtol(s, &end, 10) : 0;
    return s && *s && !*end && v > 0 && v <= 1 << 30 ? (int)v : -1;
}

static int cmd_check(int argc, char **argv)
{
    if (argc != 1) return bad_usage("check takes one model file%s", "");
    cf_model *m = cf_model_load(argv[0]);
    if (!m) return fail();
    cf_exec *e = cf_bind(m, 1, 0);
    if (!e) {
        cf_model_free(m);
        return fail();
    }
    char buf[128];
    printf("%s: ok: %zu weights in %d parameters\n", argv[0], cf_model_weight_count(m), cf_model_param_count(m));
    for (int i = 0; i < cf_model_input_count(m); i++)
        printf("  input %s: %s\n", cf_model_input_name(m, i), cf_shape_format(cf_model_input_shape(m, i), buf, sizeof buf));
    for (int i = 0; i < cf_model_output_count(m); i++)
        printf("  output %d: %s\n", i, cf_shape_format(cf_model_output_shape(m, i), buf, sizeof buf));
    cf_exec_free(e);
    cf_model_free(m);
    return 0;
}

static int cmd_shapes(int argc, char **argv)
{
    const char *path = NULL;
    int batch = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--batch")) {
            if (i + 1 >= argc || (batch = positive(argv[++i])) < 0)
                return bad_usage("--batch needs a positive number%s", "");
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return bad_usage("shapes: unknown option '%s'", argv[i]);
        } else if (!path) {
            path = argv[i];
        } else {
            return bad_usage("shapes takes one model file%s", "");
        }
    }
    if (!path) return bad_usage("shapes needs a model file%s", "");
    fflush(stdout);
    if (cf_model_print_shapes(path, batch, stdout)) {
        fflush(stdout);
        return fail();
    }
    return 0;
}

static int cmd_graph(int argc, char **argv)
{
    const char *path = NULL, *out = "-";
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "-o")) {
            if (i + 1 >= argc) return bad_usage("-o needs a file name%s", "");
            out = argv[++i];
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return bad_usage("graph: unknown option '%s'", argv[i]);
        } else if (!path) {
            path = argv[i];
        } else {
            return bad_usage("graph takes one model file%s", "");
        }
    }
    if (!path) return bad_usage("graph needs a model file%s", "");
    cf_model *m = cf_model_load(path);
    if (!m) return fail();
    int rc = cf_model_dump_dot(m, out);
    cf_model_free(m);
    return rc ? fail() : 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs(usage, stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        fputs(usage, stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
        printf("cflux %s (matrix products: %s, threads: %d)\n", cf_version(), cf_gemm_name(), cf_threads());
        return 0;
    }
    if (!strcmp(cmd, "check")) return cmd_check(argc - 2, argv + 2);
    if (!strcmp(cmd, "shapes")) return cmd_shapes(argc - 2, argv + 2);
    if (!strcmp(cmd, "graph")) return cmd_graph(argc - 2, argv + 2);
    if (!strcmp(cmd, "train")) return cmd_train(argc - 2, argv + 2);
    if (!strcmp(cmd, "eval")) return cmd_eval(argc - 2, argv + 2);
    if (!strcmp(cmd, "predict")) return cmd_predict(argc - 2, argv + 2);
    return bad_usage("unknown command '%s'", cmd);
}
