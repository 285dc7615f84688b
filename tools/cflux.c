/* cflux - the command-line tool, a thin layer over the public API.
 *
 * Exit codes: 0 ok, 1 bad model or data, 2 bad usage, 130/143 interrupted. Errors go
 * to stderr as cflux prints them: the message and, for shapes, the trace into the
 * model's source. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cflux.h"
#include "commands.h"
#include "files.h"

int fail(void)
{
    if (cf_dist_rank() > 0 && cf_dist_error_shared()) return 1;   /* every rank has it: rank 0 says it */
    fprintf(stderr, "%s\n", cf_last_error());
    return 1;
}

void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s < 32) fprintf(f, "\\u%04x", *s);
        else fputc(*s, f);
    }
    fputc('"', f);
}

double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: cflux COMMAND [ARGS]\n\n"
               "cflux compiles a model to a static graph, checks every shape before anything\n"
               "runs, and trains and runs it on a fast CPU engine.\n\ncommands:\n");
    for (const command *c = cf_commands; c->name; c++) {
        char head[64];
        snprintf(head, sizeof head, "%s %s", c->name, c->positional);
        fprintf(f, "  %-20s %s\n", head, c->about);
    }
    fprintf(f, "\n'cflux help COMMAND' (or 'cflux COMMAND --help') lists a command's options.\n"
               "exit status: 0 ok, 1 bad model or data, 2 bad usage, 130 or 143 interrupted\n");
}

static const command *find_command(const char *name)
{
    for (const command *c = cf_commands; c->name; c++)
        if (!strcmp(c->name, name)) return c;
    return NULL;
}

int apply_common(const args *a)
{
    if (!isnan(a->threads)) cf_set_threads((int)a->threads);
    size_t limit;
    if (a->max_memory && (parse_size(a->max_memory, &limit) || cf_set_memory_limit(limit))) return fail();
    return 0;
}

/* A model file's own training settings: its first line that begins "# train:" holds
 * options for `cflux train`, read as if they came before the command line's (which
 * win). 0, or the exit status of a line that does not parse (its message printed). */
static int model_defaults(const command *c, int argc, char **argv, args *a)
{
    enum { MAXTOK = 32 };
    static char line[512];
    static char *av[MAXTOK + 256];
    FILE *f = fopen(a->pos[0], "r");
    if (!f) return 0;   /* the command says what is wrong with the file */
    int found = 0;
    for (int n = 0; n < 200 && fgets(line, sizeof line, f); n++)
        if (!strncmp(line, "# train:", 8)) {
            found = 1;
            break;
        }
    fclose(f);
    if (!found || argc > 256) return 0;
    int k = 0;
    for (char *t = strtok(line + 8, " \t\r\n"); t && k < MAXTOK; t = strtok(NULL, " \t\r\n")) av[k++] = t;
    for (int i = 0; i < argc; i++) av[k + i] = argv[i];
    int rc = args_parse(c, k + argc, av, a);
    if (rc == 0 && !a->quiet && k) {
        FILE *say = a->json ? stderr : stdout;   /* --json: stdout is the object's */
        fprintf(say, "settings from %s:", a->pos[0]);
        for (int i = 0; i < k; i++) fprintf(say, " %s", av[i]);
        fprintf(say, " (the command line's win)\n");
    }
    return rc == 1 ? 0 : rc;
}

int cmd_check(const args *a)
{
    if (apply_common(a)) return 1;
    cf_model *m = cf_model_load(a->pos[0]);   /* compiles and infers every shape; allocates no weights */
    if (!m) return fail();
    char buf[128];
    size_t w = cf_model_weight_count(m);
    printf("%s: ok: %zu weights in %d parameters (%.1f MB)", a->pos[0], w, cf_model_param_count(m), 4e-6 * (double)w);
    size_t s = 0;
    for (int i = 0; i < cf_model_state_count(m); i++) s += cf_shape_count(cf_model_state_shape(m, i));
    if (s) printf(", %zu numbers of state in %d states (running statistics)", s, cf_model_state_count(m));
    printf("\n");
    for (int i = 0; i < cf_model_input_count(m); i++) {
        int v = cf_model_input_classes(m, i);
        printf("  input %s: %s", cf_model_input_name(m, i), cf_shape_format(cf_model_input_shape(m, i), buf, sizeof buf));
        if (v) printf(", indices in 0..%d", v - 1);
        printf("\n");
    }
    for (int i = 0; i < cf_model_output_count(m); i++)
        printf("  output %d: %s\n", i, cf_shape_format(cf_model_output_shape(m, i), buf, sizeof buf));
    fflush(stdout);   /* the notes after what they are about, in one stream too */
    fputs(cf_model_compile_notes(m), stderr);
    cf_model_free(m);
    return 0;
}

int cmd_shapes(const args *a)
{
    fflush(stdout);
    if (cf_model_print_shapes(a->pos[0], isnan(a->batch) ? 0 : (int)a->batch, stdout)) {
        fflush(stdout);
        return fail();
    }
    return 0;
}

int cmd_graph(const args *a)
{
    cf_model *m = cf_model_load(a->pos[0]);
    if (!m) return fail();
    int rc = cf_model_dump_dot(m, a->out ? a->out : "-");
    cf_model_free(m);
    return rc ? fail() : 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *name = argv[1];
    if (!strcmp(name, "--help") || !strcmp(name, "-h") || !strcmp(name, "help")) {
        if (argc > 2 && strcmp(name, "help") == 0) {
            const command *c = find_command(argv[2]);
            if (!c) {
                fprintf(stderr, "cflux help: unknown command '%s' (try 'cflux help')\n", argv[2]);
                return 2;
            }
            command_help(c, stdout);
            return 0;
        }
        usage(stdout);
        return 0;
    }
    /* a misspelt engine is an error, not a silent fallback to the default */
    const char *gemm = getenv("CFLUX_GEMM");
    if (cf_set_gemm(NULL)) {
        const char *msg = cf_last_error();
        fprintf(stderr, "error: CFLUX_GEMM=%s: %s\n", gemm, strncmp(msg, "error: ", 7) ? msg : msg + 7);
        return 1;
    }
    const char *qgemm = getenv("CFLUX_QGEMM");
    if (qgemm && *qgemm && strcmp(qgemm, cf_int8_kernel()) != 0) {
        fprintf(stderr, "error: CFLUX_QGEMM=%s: %s\n", qgemm, cf_int8_kernel_why());
        return 1;
    }
    if (!strcmp(name, "--version")) return cmd_version(NULL);
    const command *c = find_command(name);
    if (!c || !c->run) {
        fprintf(stderr, "cflux: unknown command '%s' (try 'cflux help')\n", name);
        return 2;
    }
    args a;
    int rc = args_parse(c, argc - 2, argv + 2, &a);
    if (rc) return rc == 1 ? 0 : rc;
    if (!strcmp(c->name, "train") && (rc = model_defaults(c, argc - 2, argv + 2, &a))) return rc;
    if (files_check(c, &a)) return 1;
    return c->run(&a);
}
