/* cflux - the command-line tool, a thin layer over the public API.
 *
 * Exit codes: 0 ok, 1 bad model or data, 2 bad usage. */
#include <stdio.h>
#include <string.h>

#include "cflux.h"

static const char usage[] =
    "usage: cflux [--help] [--version] COMMAND [ARGS]\n"
    "\n"
    "cflux compiles a model to a static graph, checks every shape before anything\n"
    "runs, and trains and runs it on a fast CPU engine.\n"
    "\n"
    "commands:\n"
    "  help        show this text\n"
    "  version     print the version and the matrix-product engine\n"
    "\n"
    "The model notation (check, shapes, graph) and training (train, eval, predict)\n"
    "arrive with the next releases; the C library is usable now: see cflux.h.\n";

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
    fprintf(stderr, "cflux: unknown command '%s' (try 'cflux --help')\n", cmd);
    return 2;
}
