/* file.c - opening and reading data files, plain or gzip'd, with errors worded for
 * the user: what the readers of every format share. */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "data/data.h"

gzFile cf_data_gzopen(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        cf_seterr("error: %s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    if (S_ISDIR(st.st_mode)) {
        cf_seterr("error: %s: cannot open: it is a directory", path);
        return NULL;
    }
    errno = 0;
    gzFile f = gzopen(path, "rb");
    if (!f) {
        cf_seterr("error: %s: cannot open: %s", path, errno ? strerror(errno) : "out of memory");
        return NULL;
    }
    gzbuffer(f, 1 << 18);
    return f;
}

/* gzread's failure, worded. */
static int read_error(gzFile f, const char *path)
{
    int code = 0;
    const char *msg = gzerror(f, &code);
    if (code == Z_ERRNO) msg = strerror(errno);
    return cf_seterr("error: %s: cannot read: %s", path, msg && *msg ? msg : "unknown error");
}

/* A gzip stream that ended before its end marker reads as a short file with
 * Z_BUF_ERROR set; anything else at the end is fine. */
static int ended_early(gzFile f)
{
    int code = 0;
    gzerror(f, &code);
    return code == Z_BUF_ERROR;
}

long cf_data_read(gzFile f, const char *path, void *buf, size_t n, size_t *total)
{
    if (n > INT_MAX) n = INT_MAX;
    int got = gzread(f, buf, (unsigned)n);
    if (got < 0) return read_error(f, path);
    *total += (size_t)got;
    if ((size_t)got < n && ended_early(f))
        return cf_seterr("error: %s: truncated: the gzip data ends early (after %zu bytes)", path, *total);
    return got;
}
