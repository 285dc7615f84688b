/* files.c - the files a command reads and writes, looked at together before it starts:
 * an output that is also an input, or two outputs that are one file, are refused with
 * both roles named (a run would destroy its own input, or write one result over
 * another), and every output is locked against a second cflux writing it at once. */
#define _GNU_SOURCE
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cflux.h"
#include "files.h"

enum { MAX_FILES = 64 };

typedef struct role {
    const char *path, *name;   /* "m.ckpt", "--params" */
} role;

typedef struct roles {
    role in[MAX_FILES], out[MAX_FILES];
    int nin, nout;
} roles;

static void add(role *r, int *n, const char *path, const char *name)
{
    if (path && *path && strcmp(path, "-") && *n < MAX_FILES) r[(*n)++] = (role){path, name};   /* "-": stdout */
}

/* The name the user gave an option that has two (train's --init and --params). */
static const char *given(const args *a, const char *name, const char *alias)
{
    for (int i = 0; i < a->argc; i++)
        if (!strncmp(a->argv[i], alias, strlen(alias)) &&
            (a->argv[i][strlen(alias)] == 0 || a->argv[i][strlen(alias)] == '='))
            return alias;
    return name;
}

/* The files a data spec names ("idx:A,B,C,D", "csv:A,B", "text:A"), as inputs. Their
 * names point into block. */
static void add_data(roles *r, const char *spec, char *block, size_t size)
{
    const char *colon = spec ? strchr(spec, ':') : NULL;
    if (!colon || (size_t)snprintf(block, size, "%s", colon + 1) >= size) return;
    for (char *p = block, *c; p; p = c ? c + 1 : NULL) {
        if ((c = strchr(p, ','))) *c = 0;
        add(r->in, &r->nin, p, "--data");
    }
}

/* Where a path's file is or would be: the same key, the same file. A file that
 * exists is its device and inode; one that does not, its directory's real path and
 * its name. 1 when key was set; 0 for what two roles may share (a device, a FIFO,
 * a stream), or a path that cannot be resolved (writing it will say why). */
static int key_of(const char *path, char *key, size_t size)
{
    struct stat st;
    if (stat(path, &st) == 0) {
        if (!S_ISREG(st.st_mode)) return 0;
        snprintf(key, size, "#%llu:%llu", (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
        return 1;
    }
    char dir[PATH_MAX], real[PATH_MAX];
    const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == path) snprintf(dir, sizeof dir, "/");
    else snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    if (!realpath(dir, real)) return 0;
    return snprintf(key, size, "%s/%s", real, base) < (int)size;
}

static int same_file(const char *a, const char *b)
{
    char ka[PATH_MAX + 8], kb[PATH_MAX + 8];
    return key_of(a, ka, sizeof ka) && key_of(b, kb, sizeof kb) && !strcmp(ka, kb);
}

/* The locks held until the tool exits. */
static cf_file_lock *held[MAX_FILES];
static int nheld;

static void release_all(void)
{
    while (nheld > 0) cf_file_lock_release(held[--nheld]);
}

/* The options that name files, and which way each goes. */
static const struct {
    size_t off;        /* the field in struct args */
    const char *name;
    int written;
} file_opts[] = {
    {offsetof(args, resume), "--resume", 0},        {offsetof(args, params), "--params", 0},
    {offsetof(args, from_torch), "--from-torch", 0}, {offsetof(args, map), "--map", 0},
    {offsetof(args, classes), "--classes", 0},      {offsetof(args, save), "--save", 1},
    {offsetof(args, keep_best), "--keep-best", 1},  {offsetof(args, log), "--log", 1},
    {offsetof(args, plot), "--plot", 1},            {offsetof(args, report), "--report", 1},
    {offsetof(args, to_torch), "--to-torch", 1},    {offsetof(args, onnx), "--onnx", 1},
    {offsetof(args, out), "-o", 1},
};

int files_check(const command *c, const args *a)
{
    static roles r;
    static char data[4096];
    memset(&r, 0, sizeof r);
    if (c->npos > 0 && a->npos > 0) add(r.in, &r.nin, a->pos[0], "the model file");
    for (int i = 1; i < a->npos; i++) add(r.in, &r.nin, a->pos[i], "an input");
    add_data(&r, a->data, data, sizeof data);
    add(r.in, &r.nin, a->init, given(a, "--init", "--params"));   /* train's --params is its --init */
    for (size_t k = 0; k < sizeof file_opts / sizeof *file_opts; k++) {
        const char *path = *(const char *const *)((const char *)a + file_opts[k].off);
        if (file_opts[k].written) add(r.out, &r.nout, path, file_opts[k].name);
        else add(r.in, &r.nin, path, file_opts[k].name);
    }
    for (int o = 0; o < r.nout; o++) {
        for (int i = 0; i < r.nin; i++) {
            /* a run that goes on from its checkpoint saves over it: that is what resuming is */
            if (!strcmp(r.out[o].name, "--save") && !strcmp(r.in[i].name, "--resume")) continue;
            if (!same_file(r.out[o].path, r.in[i].path)) continue;
            fprintf(stderr, "error: %s is both %s (read) and %s (written): writing it would destroy the input; "
                            "give %s another path\n", r.out[o].path, r.in[i].name, r.out[o].name, r.out[o].name);
            return 1;
        }
        for (int p = 0; p < o; p++)
            if (same_file(r.out[o].path, r.out[p].path)) {
                fprintf(stderr, "error: %s is both %s and %s: one would overwrite the other; give each its own "
                                "path\n", r.out[o].path, r.out[p].name, r.out[o].name);
                return 1;
            }
    }
    /* data-parallel: the ranks past 0 write nothing (train's start_ranks), and would
     * find rank 0's locks */
    const char *rank = getenv("OMPI_COMM_WORLD_RANK");
    if (rank && atoi(rank) > 0) return 0;
    static int registered;
    if (!registered++) atexit(release_all);
    for (int o = 0; o < r.nout; o++) {
        cf_file_lock *l = cf_file_lock_take(r.out[o].path);
        if (!l) {
            fprintf(stderr, "%s\n", cf_last_error());
            release_all();
            return 1;
        }
        held[nheld++] = l;
    }
    return 0;
}
