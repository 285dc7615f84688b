/* options.h - the tool's commands and their options as tables: one parser for all,
 * each command's help made from its table, and a suggestion for an option that is
 * not there (the nearest name, or the command that has it). */
#ifndef CF_TOOLS_OPTIONS_H
#define CF_TOOLS_OPTIONS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Everything any command takes; an option not given stays NULL (strings) or NAN
 * (numbers). */
#define MAX_POSITIONAL 4096   /* MODEL and the inputs of predict */
#define MAX_REPEATS 64        /* values of an option that may be given again (OPT_LIST) */

/* The values of an option given again and again, in order. */
typedef struct opt_list {
    const char *v[MAX_REPEATS];
    int n;
} opt_list;

typedef struct args {
    const char *pos[MAX_POSITIONAL];   /* the positional arguments: MODEL, INPUT... */
    int npos;
    const char *data, *optim, *schedule, *save, *resume, *log, *plot, *init, *params, *loss, *out, *max_memory;
    const char *prime, *from_torch, *to_torch, *onnx, *map;
    const char *classes, *keep_best, *report, *label_col, *features;
    const char *augment;
    const char *activations;    /* quantize: auto, dynamic or static */
    double top, patience, lr_start, lr_end, steps, depth;
    double epochs, batch, stop_after, lr, wd, clip, val, momentum, threads, seconds, length, temperature, limit_batches;
    double label_smoothing;
    uint64_t seed;
    int has_seed, json, quiet, normalize, skip_bad, exact_size, int8, no_cache;
    double calib_batches;
    const char *only_classes;   /* --only-classes LIST */
    int partial;                /* --partial: --init loads what matches */
    opt_list freeze;            /* --freeze PATTERN, repeated */
    int argc;             /* the command's own arguments, for messages */
    char **argv;
} args;

/* OPT_LIST: a string that may be given again and again, each kept, into an opt_list */
typedef enum opt_kind { OPT_FLAG, OPT_INT, OPT_NUM, OPT_STR, OPT_U64, OPT_SIZE, OPT_LIST } opt_kind;

typedef struct opt {
    const char *name;   /* "--epochs" */
    opt_kind kind;
    double lo, hi;      /* OPT_INT and OPT_NUM: the range */
    size_t off;         /* the field in struct args */
    const char *arg;    /* what the value is, in the help: "N" */
    const char *help;
} opt;

typedef struct command {
    const char *name;
    const char *positional;   /* "MODEL", "MODEL INPUT"; "MODEL INPUT...": the last again and again */
    int npos;                 /* how many positional arguments it takes */
    const char *about;        /* one line for `cflux help` */
    const char *more;         /* paragraphs for `cflux help NAME`, or NULL */
    const opt *opts;
    int (*run)(const args *a);
} command;

/* The commands, ended by a NULL name (commands.c). */
extern const command cf_commands[];

/* Fill a from argv (the arguments after the command's name). 0; 1 when --help or -h
 * was given (the help is printed); or 2 with one line printed to stderr. */
int args_parse(const command *c, int argc, char **argv, args *a);

/* Does c's last positional argument repeat ("INPUT...")? */
int command_repeats(const command *c);

/* The help of one command, made from its table. */
void command_help(const command *c, FILE *f);

/* Where args_parse writes help and messages (NULL: stdout and stderr). */
void options_streams(FILE *out, FILE *err);

/* Edit distance between a and b, capped at 9 (names are short): for "did you mean". */
int edit_distance(const char *a, const char *b);

/* A size such as 512M, 4G, 1.5G or 1000000 (bytes): 0, or -1 when malformed. */
int parse_size(const char *s, size_t *out);

#endif
