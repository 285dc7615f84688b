/* options.c - the one parser for every command's options (see options.h). */
#include "options.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static FILE *out_stream, *err_stream;

void options_streams(FILE *out, FILE *err)
{
    out_stream = out;
    err_stream = err;
}

#define OUT (out_stream ? out_stream : stdout)
#define ERR (err_stream ? err_stream : stderr)

/* A user's argument as a message shows it: control characters as \xNN (so that a
 * message stays one line), at most 60 bytes. buf holds 256. */
static const char *shown(const char *s, size_t len, char *buf)
{
    size_t k = 0;
    for (size_t i = 0; i < len && s[i] && k < 240; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (i == 60) {
            k += (size_t)snprintf(buf + k, 256 - k, "...");
            break;
        }
        if (ch < 0x20 || ch == 0x7f) k += (size_t)snprintf(buf + k, 256 - k, "\\x%02x", ch);
        else buf[k++] = (char)ch;
    }
    buf[k] = 0;
    return buf;
}

int edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 40 || lb > 40) return 9;
    int row[41];
    for (size_t j = 0; j <= lb; j++) row[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int up = row[j], best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            diag = up;
            row[j] = best;
        }
    }
    return row[lb] < 9 ? row[lb] : 9;
}

static const opt *find(const command *c, const char *name, size_t len)
{
    for (const opt *o = c->opts; o && o->name; o++)
        if (strlen(o->name) == len && strncmp(o->name, name, len) == 0) return o;
    return NULL;
}

/* "unknown option" with what the user probably meant. */
static int unknown(const command *c, const char *arg, size_t len)
{
    char name[256];
    shown(arg, len, name);
    const opt *best = NULL;
    int bd = 9;
    size_t nl = strlen(name);
    for (const opt *o = c->opts; o && o->name; o++) {
        int d = edit_distance(name, o->name);
        size_t ol = strlen(o->name);
        /* "--lr-rate": an option with a word added counts as near */
        if (ol >= 4 && nl > ol && !strncmp(name, o->name, ol) && name[ol] == '-') d = 1;
        if (d < bd) bd = d, best = o;
    }
    if (best && bd <= (nl > 6 ? 3 : 2)) {
        fprintf(ERR, "cflux %s: unknown option '%s' (did you mean %s?)\n", c->name, name, best->name);
        return 2;
    }
    for (const command *k = cf_commands; k->name; k++)
        if (k != c && find(k, name, strlen(name))) {
            fprintf(ERR, "cflux %s: %s is an option of 'cflux %s', not of %s (cflux help %s lists its options)\n",
                    c->name, name, k->name, c->name, c->name);
            return 2;
        }
    fprintf(ERR, "cflux %s: unknown option '%s' (cflux help %s lists its options)\n", c->name, name, c->name);
    return 2;
}

int parse_size(const char *s, size_t *out)
{
    if (!s || !((*s >= '0' && *s <= '9') || *s == '.')) return -1;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    double unit = 1;
    switch (*end) {
    case 'k': case 'K': unit = 1024.0; end++; break;
    case 'm': case 'M': unit = 1024.0 * 1024; end++; break;
    case 'g': case 'G': unit = 1024.0 * 1024 * 1024; end++; break;
    case 't': case 'T': unit = 1024.0 * 1024 * 1024 * 1024; end++; break;
    default: break;
    }
    if (unit > 1 && (*end == 'B' || *end == 'b')) end++;
    v *= unit;
    if (errno || *end || !(v >= 1) || v > 1e18) return -1;
    *out = (size_t)v;
    return 0;
}

/* Store one option's value: 0, or 2 with the message. */
static int store(const command *c, const opt *o, const char *v, args *a)
{
    char *field = (char *)a + o->off, buf[256];
    if (o->kind == OPT_FLAG) {
        *(int *)field = 1;
        return 0;
    }
    if (!v) {
        fprintf(ERR, "cflux %s: %s needs a value: %s %s\n", c->name, o->name, o->name, o->arg);
        return 2;
    }
    char *end;
    switch (o->kind) {
    case OPT_STR:
        if (!*v) {
            fprintf(ERR, "cflux %s: %s needs a value, not an empty string\n", c->name, o->name);
            return 2;
        }
        *(const char **)field = v;
        return 0;
    case OPT_LIST: {
        opt_list *list = (opt_list *)field;
        if (!*v) {
            fprintf(ERR, "cflux %s: %s needs a value, not an empty string\n", c->name, o->name);
            return 2;
        }
        if (list->n == MAX_REPEATS) {
            fprintf(ERR, "cflux %s: %s is given more than %d times\n", c->name, o->name, MAX_REPEATS);
            return 2;
        }
        list->v[list->n++] = v;
        return 0;
    }
    case OPT_SIZE: {
        size_t sz;
        if (parse_size(v, &sz)) {
            fprintf(ERR, "cflux %s: %s needs a size such as 512M or 4G, not '%s'\n", c->name, o->name,
                    shown(v, strlen(v), buf));
            return 2;
        }
        *(const char **)field = v;
        return 0;
    }
    case OPT_U64: {
        errno = 0;
        unsigned long long x = *v >= '0' && *v <= '9' ? strtoull(v, &end, 10) : 0;
        if (!(*v >= '0' && *v <= '9') || errno || *end) {
            fprintf(ERR, "cflux %s: %s needs a whole number from 0 to 18446744073709551615, not '%s'\n", c->name,
                    o->name, shown(v, strlen(v), buf));
            return 2;
        }
        *(uint64_t *)field = x;
        a->has_seed = 1;
        return 0;
    }
    default: {
        errno = 0;
        end = (char *)v;
        double x = (*v >= '0' && *v <= '9') || *v == '-' || *v == '.' || *v == '+' ? strtod(v, &end) : NAN;
        int whole = o->kind == OPT_INT;
        if (!*v || *end || end == v || errno || !(x >= o->lo && x <= o->hi) || (whole && x != floor(x))) {
            fprintf(ERR, whole ? "cflux %s: %s needs a whole number from %.0f to %.0f, not '%s'\n"
                                  : "cflux %s: %s needs a number from %g to %g, not '%s'\n",
                    c->name, o->name, o->lo, o->hi, shown(v, strlen(v), buf));
            return 2;
        }
        *(double *)field = x;
        return 0;
    }
    }
}

int command_repeats(const command *c)
{
    size_t n = strlen(c->positional);
    return n >= 3 && !strcmp(c->positional + n - 3, "...");
}

int args_parse(const command *c, int argc, char **argv, args *a)
{
    memset(a, 0, sizeof *a);
    a->epochs = a->batch = a->stop_after = a->lr = a->wd = a->clip = a->val = a->momentum = a->threads =
        a->limit_batches = a->seconds = a->length = a->temperature = a->top = a->patience = a->lr_start = a->lr_end =
            a->steps = a->depth = NAN;
    a->label_smoothing = a->calib_batches = NAN;
    a->argc = argc;
    a->argv = argv;
    for (int i = 0; i < argc; i++) {
        const char *s = argv[i];
        if (!strcmp(s, "--help") || !strcmp(s, "-h")) {
            command_help(c, OUT);
            return 1;
        }
        if (s[0] == '-' && s[1] && !(s[1] >= '0' && s[1] <= '9')) {
            const char *eq = strchr(s, '=');
            size_t len = eq ? (size_t)(eq - s) : strlen(s);
            const opt *o = find(c, s, len);
            if (!o) return unknown(c, s, len);
            if (o->kind == OPT_FLAG && eq) {
                fprintf(ERR, "cflux %s: %s takes no value\n", c->name, o->name);
                return 2;
            }
            const char *v = eq ? eq + 1 : o->kind == OPT_FLAG ? NULL : i + 1 < argc ? argv[++i] : NULL;
            int rc = store(c, o, v, a);
            if (rc) return rc;
            continue;
        }
        if (command_repeats(c) && a->npos >= c->npos && a->npos < MAX_POSITIONAL) {
            a->pos[a->npos++] = s;
            continue;
        }
        if (command_repeats(c) && a->npos >= MAX_POSITIONAL) {
            fprintf(ERR, "cflux %s: takes at most %d inputs at once\n", c->name, MAX_POSITIONAL - 1);
            return 2;
        }
        if (a->npos >= c->npos) {
            char buf[256];
            fprintf(ERR, "cflux %s: takes %s; '%s' is one argument too many\n", c->name, c->positional,
                    shown(s, strlen(s), buf));
            return 2;
        }
        a->pos[a->npos++] = s;
    }
    if (a->npos < c->npos) {
        fprintf(ERR, "cflux %s: needs %s (usage: cflux %s %s [OPTIONS]; cflux help %s says more)\n", c->name,
                c->positional, c->name, c->positional, c->name);
        return 2;
    }
    return 0;
}

void command_help(const command *c, FILE *f)
{
    fprintf(f, "usage: cflux %s %s%s\n\n%s\n", c->name, c->positional, c->opts && c->opts->name ? " [OPTIONS]" : "",
            c->about);
    if (c->more) fprintf(f, "\n%s", c->more);
    if (!c->opts || !c->opts->name) return;
    fprintf(f, "\noptions:\n");
    for (const opt *o = c->opts; o->name; o++) {
        char head[64];
        snprintf(head, sizeof head, "%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
        /* the help may run over lines: indent the rest under the first */
        fprintf(f, "  %-20s ", head);
        for (const char *h = o->help; *h; h++) {
            fputc(*h, f);
            if (*h == '\n') fprintf(f, "  %-20s ", "");
        }
        fputc('\n', f);
    }
}
