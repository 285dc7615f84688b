/* file.c - the one crash-safe writer behind every file cflux writes.
 *
 * A new file is written to a temporary "PATH.tmp.PID.N" beside the target, created
 * with O_CREAT | O_EXCL | O_NOFOLLOW (so a file or a symbolic link planted at that
 * name is never followed or truncated), then flushed, fsync'd and renamed over the
 * target, and the directory fsync'd: a crash leaves the old file or the new one,
 * never a mix. While a temporary file exists, SIGINT, SIGTERM, SIGHUP and SIGQUIT
 * are held back in the writing thread (the thread pool's workers block them for
 * good), so a signal cannot end the process between creating the temporary and
 * renaming or removing it: it is delivered right after. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cflux.h"
#include "core/error.h"

struct cf_file {
    FILE *fp;
    char *path, *tmp;
    sigset_t old;   /* the signal mask to restore */
};

static void hold_signals(sigset_t *old)
{
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGINT);
    sigaddset(&s, SIGTERM);
    sigaddset(&s, SIGHUP);
    sigaddset(&s, SIGQUIT);
    pthread_sigmask(SIG_BLOCK, &s, old);
}

/* The directory part of path ("." when there is none); NULL when out of memory. */
static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash) return strdup(".");
    if (slash == path) return strdup("/");
    return strndup(path, (size_t)(slash - path));
}

/* Why path cannot be written, as a message; 0 when it looks writable. */
static int explain(const char *path, int err)
{
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) return cf_seterr("error: %s: cannot write: it is a directory", path);
    char *dir = dir_of(path);
    if (!dir) return cf_oom(strlen(path) + 1);
    int rc;
    if (stat(dir, &st) != 0)
        rc = cf_seterr("error: %s: cannot write: the directory %s does not exist", path, dir);
    else if (!S_ISDIR(st.st_mode))
        rc = cf_seterr("error: %s: cannot write: %s is not a directory", path, dir);
    else
        rc = cf_seterr("error: %s: cannot write: %s", path, strerror(err));
    free(dir);
    return rc;
}

cf_file *cf_file_create(const char *path)
{
    static atomic_uint counter;
    if (!path || !*path) return cf_seterr("error: cf_file_create: no path"), NULL;
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) return explain(path, EISDIR), NULL;
    cf_file *f = calloc(1, sizeof *f);
    size_t tlen = strlen(path) + 48;
    if (!f || !(f->path = strdup(path)) || !(f->tmp = malloc(tlen))) {
        if (f) free(f->path);
        free(f);
        return cf_oom(tlen), NULL;
    }
    hold_signals(&f->old);
    int fd = -1;
    for (int tries = 0; fd < 0 && tries < 100; tries++) {
        snprintf(f->tmp, tlen, "%s.tmp.%ld.%u", path, (long)getpid(), atomic_fetch_add(&counter, 1));
        fd = open(f->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST) break;
    }
    int e = errno;
    if (fd >= 0 && !(f->fp = fdopen(fd, "wb"))) {
        e = errno;
        close(fd);
        unlink(f->tmp);
        fd = -1;
    }
    if (fd < 0) {
        pthread_sigmask(SIG_SETMASK, &f->old, NULL);
        explain(path, e);
        free(f->tmp);
        free(f->path);
        free(f);
        return NULL;
    }
    return f;
}

FILE *cf_file_stream(cf_file *f) { return f ? f->fp : NULL; }

static void release(cf_file *f)
{
    pthread_sigmask(SIG_SETMASK, &f->old, NULL);
    free(f->tmp);
    free(f->path);
    free(f);
}

void cf_file_abort(cf_file *f)
{
    if (!f) return;
    fclose(f->fp);
    unlink(f->tmp);
    release(f);
}

/* fsync the directory holding path, so that the rename itself is durable. */
static int sync_dir(const char *path)
{
    char *dir = dir_of(path);
    if (!dir) return cf_oom(strlen(path) + 1);
    int rc = 0, fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        if (fsync(fd) != 0 && errno != EINVAL && errno != ENOTSUP)
            rc = cf_seterr("error: %s: written, but syncing its directory %s failed: %s", path, dir, strerror(errno));
        close(fd);
    }
    free(dir);
    return rc;
}

int cf_file_commit(cf_file *f)
{
    if (!f) return cf_seterr("error: cf_file_commit: no file");
    int ok = !ferror(f->fp) && fflush(f->fp) == 0 && fsync(fileno(f->fp)) == 0, e = ok ? 0 : errno;
    if (fclose(f->fp) != 0 && ok) {
        ok = 0;
        e = errno;
    }
    int rc = 0;
    if (!ok) {
        unlink(f->tmp);
        rc = cf_seterr("error: %s: writing failed: %s", f->path, strerror(e ? e : EIO));
    } else if (rename(f->tmp, f->path) != 0) {
        e = errno;
        unlink(f->tmp);
        rc = cf_seterr("error: %s: cannot replace it with the new file: %s", f->path, strerror(e));
    } else {
        rc = sync_dir(f->path);
    }
    release(f);
    return rc;
}

int cf_file_check(const char *path)
{
    cf_file *f = cf_file_create(path);
    if (!f) return -1;
    cf_file_abort(f);
    return 0;
}
