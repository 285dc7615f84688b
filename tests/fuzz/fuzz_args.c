/* fuzz_args.c - libFuzzer target over the tool's argument parsing (tools/options.c
 * with the command tables of tools/commands.c).
 *
 * The input is a command name and its arguments, separated by NUL bytes. Every input
 * must be parsed (positional arguments as the command takes them, every value in its
 * option's range, every string one of the arguments) or refused with exactly one line
 * that starts with "cflux COMMAND: "; --help prints the command's help. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "options.h"

/* the commands themselves never run here */
int cmd_check(const args *a) { (void)a; abort(); }
int cmd_shapes(const args *a) { (void)a; abort(); }
int cmd_graph(const args *a) { (void)a; abort(); }
int cmd_train(const args *a) { (void)a; abort(); }
int cmd_eval(const args *a) { (void)a; abort(); }
int cmd_predict(const args *a) { (void)a; abort(); }
int cmd_bench(const args *a) { (void)a; abort(); }
int cmd_sample(const args *a) { (void)a; abort(); }
int cmd_summary(const args *a) { (void)a; abort(); }
int cmd_lrfind(const args *a) { (void)a; abort(); }
int cmd_import(const args *a) { (void)a; abort(); }
int cmd_export(const args *a) { (void)a; abort(); }
int cmd_quantize(const args *a) { (void)a; abort(); }
int cmd_version(const args *a) { (void)a; abort(); }

static int is_arg(const char *s, char **argv, int argc)
{
    for (int i = 0; i < argc; i++)
        if (s >= argv[i] && s <= argv[i] + strlen(argv[i])) return 1;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096) return 0;
    char *buf = malloc(size + 1);
    memcpy(buf, data, size);
    buf[size] = 0;
    char *argv[256];
    int argc = 0;
    for (char *p = buf; argc < 256;) {
        argv[argc++] = p;
        char *z = memchr(p, 0, (size_t)(buf + size - p));
        if (!z || z == buf + size) break;
        p = z + 1;
    }
    const command *c = NULL;
    for (const command *k = cf_commands; k->name; k++)
        if (k->run && !strcmp(k->name, argv[0])) c = k;
    if (!c) c = &cf_commands[(unsigned char)argv[0][0] % 6];   /* the first six have options */
    char *msg = NULL, *help = NULL;
    size_t mlen = 0, hlen = 0;
    FILE *err = open_memstream(&msg, &mlen), *out = open_memstream(&help, &hlen);
    options_streams(out, err);
    args a;
    int rc = args_parse(c, argc - 1, argv + 1, &a);
    fclose(err);
    fclose(out);
    if (rc == 0) {
        if (mlen || hlen || a.npos < c->npos || (!command_repeats(c) && a.npos != c->npos)) abort();
        const char *strs[] = {a.pos[0], a.pos[1], a.data, a.optim, a.schedule, a.save, a.resume, a.log, a.plot,
                              a.init, a.params, a.loss, a.out, a.max_memory, a.from_torch, a.to_torch, a.onnx, a.map,
                              a.classes, a.keep_best, a.report, a.label_col, a.features};
        for (size_t i = 0; i < sizeof strs / sizeof *strs; i++)
            if (strs[i] && !is_arg(strs[i], argv + 1, argc - 1)) abort();
        double nums[] = {a.epochs, a.batch, a.stop_after, a.lr, a.wd, a.clip, a.val, a.momentum, a.threads,
                         a.limit_batches};
        for (size_t i = 0; i < sizeof nums / sizeof *nums; i++)
            if (!isnan(nums[i]) && !(nums[i] >= -1e6 && nums[i] <= 1e12)) abort();
        if (!isnan(a.batch) && (a.batch < 1 || a.batch != floor(a.batch))) abort();
        size_t sz;
        if (a.max_memory && parse_size(a.max_memory, &sz)) abort();
    } else if (rc == 1) {
        if (mlen || strncmp(help, "usage: cflux ", 13)) abort();
    } else if (rc == 2) {
        char head[32];
        snprintf(head, sizeof head, "cflux %s: ", c->name);
        /* one line: the only newline is the last byte */
        if (hlen || strncmp(msg, head, strlen(head)) || mlen < 2 || memchr(msg, '\n', mlen - 1) || msg[mlen - 1] != '\n')
            abort();
    } else {
        abort();
    }
    free(msg);
    free(help);
    free(buf);
    return 0;
}
