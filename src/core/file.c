/* file.c - the one writer behind every file cflux writes, and the locks that keep two
 * runs off one file.
 *
 * What a path names decides how it is written:
 *  - a regular file, or nothing yet: crash-safely. A temporary "PATH.tmp.PID.N" is
 *    created beside the target with O_CREAT | O_EXCL | O_NOFOLLOW (so a file or a
 *    symbolic link planted at that name is never followed or truncated), written,
 *    flushed, fsync'd and renamed over the target, and the directory fsync'd: a crash
 *    leaves the old file or the new one, never a mix. The new file keeps the old one's
 *    mode (and owner, where the process may set it). A file the user may not write is
 *    refused, and so is one without any write permission (0444), even for root: root
 *    can write anything, but such a file was marked to be kept. A symbolic link to a
 *    regular file is written at the file it points to, and stays a link.
 *  - the process's own streams (/dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N):
 *    written through the open descriptor, in order with what else goes there.
 *  - a character device (/dev/null, a terminal) or a FIFO: written through, in place;
 *    nothing is renamed over it, and a FIFO's reader gets the bytes.
 *  - a directory, a block device (a disk), a socket, or a link to nothing: refused.
 * While a temporary file exists, SIGINT, SIGTERM, SIGHUP and SIGQUIT are held back in
 * the writing thread (the thread pool's workers block them for good), so a signal
 * cannot end the process between creating the temporary and renaming or removing it:
 * it is delivered right after. Temporaries left by a process that is gone (kill -9)
 * are removed when the same target is next written. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cflux.h"
#include "core/error.h"

struct cf_file {
    FILE *fp;
    char *path;     /* the target as given, for messages */
    char *real;     /* where the new file goes: path, or the file a link points to */
    char *tmp;      /* NULL when written through (a device, a FIFO, a stream) */
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

/* Why path cannot be written, as a message; -1. */
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

/* The descriptor that path names when it is one of this process's own streams
 * (/dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N, /proc/PID/fd/N, or a link
 * to one of them), else -1. Such a path reopened and renamed over would replace the
 * file the stream goes to, or reach nothing. */
static int own_stream(const char *path, int links)
{
    if (!strcmp(path, "/dev/stdout")) return 1;
    if (!strcmp(path, "/dev/stderr")) return 2;
    const char *n = NULL;
    char self[64];
    snprintf(self, sizeof self, "/proc/%ld/fd/", (long)getpid());
    if (!strncmp(path, "/dev/fd/", 8)) n = path + 8;
    else if (!strncmp(path, "/proc/self/fd/", 14)) n = path + 14;
    else if (!strncmp(path, self, strlen(self))) n = path + strlen(self);
    if (n) {
        char *end;
        long fd = strtol(n, &end, 10);
        return *n && !*end && fd >= 0 && fd < INT_MAX ? (int)fd : -1;
    }
    char to[PATH_MAX];
    ssize_t len = links < 8 ? readlink(path, to, sizeof to - 1) : -1;
    if (len <= 0) return -1;
    to[len] = 0;
    return to[0] == '/' ? own_stream(to, links + 1) : -1;
}

/* How path is written. */
enum how { NEW, THROUGH_FD, THROUGH_OPEN };

typedef struct target {
    enum how how;
    int fd;          /* THROUGH_FD: the stream's descriptor */
    char *real;      /* NEW: where the new file goes (malloc'd) */
    struct stat st;  /* NEW: the old file's, when has_old */
    int has_old;
} target;

/* Is the link at path one that another user planted in a shared directory (sticky
 * and writable by all, as /tmp)? Then it is not followed, as the kernel's
 * protected_symlinks rule does: the message is set. */
static int planted(const char *path, const struct stat *ls)
{
    char *dir = dir_of(path);
    struct stat ds;
    int shared = dir && stat(dir, &ds) == 0 && (ds.st_mode & S_ISVTX) && (ds.st_mode & S_IWOTH) &&
                 ls->st_uid != geteuid() && ls->st_uid != ds.st_uid;
    if (shared)
        cf_seterr("error: %s: cannot write: it is a symbolic link made by another user (uid %ld) in the shared "
                  "directory %s; not followed", path, (long)ls->st_uid, dir);
    free(dir);
    return shared;
}

/* Decide how path is written, refusing what must not be (with the message). 0 or -1. */
static int classify(const char *path, target *t)
{
    memset(t, 0, sizeof *t);
    if ((t->fd = own_stream(path, 0)) >= 0) {
        struct stat st;
        if (fstat(t->fd, &st) != 0) return cf_seterr("error: %s: cannot write: descriptor %d is not open", path, t->fd);
        t->how = THROUGH_FD;
        return 0;
    }
    struct stat ls, st;
    if (lstat(path, &ls) != 0) {
        if (errno != ENOENT) return explain(path, errno);
        t->how = NEW;
        return (t->real = strdup(path)) ? 0 : cf_oom(strlen(path) + 1);
    }
    if (S_ISLNK(ls.st_mode) && planted(path, &ls)) return -1;
    if (stat(path, &st) != 0) {
        if (S_ISLNK(ls.st_mode) && errno == ENOENT)
            return cf_seterr("error: %s: cannot write: it is a symbolic link to a file that does not exist "
                             "(write to the file itself, or remove the link)", path);
        return explain(path, errno);
    }
    if (S_ISDIR(st.st_mode)) return explain(path, EISDIR);
    if (S_ISBLK(st.st_mode))
        return cf_seterr("error: %s: cannot write: it is a block device (a disk); cflux writes regular files, "
                         "terminals, FIFOs and /dev/null", path);
    if (S_ISSOCK(st.st_mode))
        return cf_seterr("error: %s: cannot write: it is a socket; cflux writes regular files, terminals, "
                         "FIFOs and /dev/null", path);
    if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) {
        if (access(path, W_OK) != 0) return explain(path, errno);
        t->how = THROUGH_OPEN;
        return 0;
    }
    if (!S_ISREG(st.st_mode)) return cf_seterr("error: %s: cannot write: it is not a regular file", path);
    unsigned mode = (unsigned)(st.st_mode & 07777);
    if (!(st.st_mode & 0222))
        return cf_seterr("error: %s: cannot write: it is read-only (mode %04o); make it writable or remove it "
                         "first to replace it", path, mode);
    if (faccessat(AT_FDCWD, path, W_OK, AT_EACCESS) != 0) {
        if (errno != EACCES) return explain(path, errno);
        return cf_seterr("error: %s: cannot write: this user (uid %ld) may not write it (mode %04o, owner uid %ld)",
                         path, (long)geteuid(), mode, (long)st.st_uid);
    }
    t->how = NEW;
    t->st = st;
    t->has_old = 1;
    t->real = S_ISLNK(ls.st_mode) ? realpath(path, NULL) : strdup(path);
    return t->real ? 0 : cf_seterr("error: %s: cannot write: %s", path, strerror(errno));
}

/* Remove the temporaries "BASE.tmp.PID.N" beside real whose process is gone: what a
 * kill -9 between create and commit left. Others' and live ones are kept. */
static void remove_stale(const char *real)
{
    char *dir = dir_of(real);
    const char *slash = strrchr(real, '/'), *base = slash ? slash + 1 : real;
    DIR *d = dir ? opendir(dir) : NULL;
    size_t blen = strlen(base);
    for (struct dirent *e; d && (e = readdir(d));) {
        const char *s = e->d_name;
        if (strncmp(s, base, blen) || strncmp(s + blen, ".tmp.", 5)) continue;
        char *end;
        long pid = strtol(s + blen + 5, &end, 10);
        if (end == s + blen + 5 || *end != '.' || pid <= 0 || pid == (long)getpid()) continue;
        const char *n = end + 1;
        strtoul(n, &end, 10);
        if (end == n || *end) continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
        struct stat st;
        if (fstatat(dirfd(d), s, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
            unlinkat(dirfd(d), s, 0);
    }
    if (d) closedir(d);
    free(dir);
}

static void release(cf_file *f)
{
    pthread_sigmask(SIG_SETMASK, &f->old, NULL);
    free(f->tmp);
    free(f->real);
    free(f->path);
    free(f);
}

/* Open the stream that writes through to t (a descriptor of ours, a device, a FIFO). */
static int open_through(cf_file *f, const target *t)
{
    int fd;
    if (t->how == THROUGH_FD) {
        if (t->fd <= 2) fflush(t->fd == 1 ? stdout : stderr);   /* keep the order of what went there before */
        fd = fcntl(t->fd, F_DUPFD_CLOEXEC, 3);
    } else {
        fd = open(f->path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
    }
    if (fd < 0 || !(f->fp = fdopen(fd, "wb"))) {
        int e = errno;
        if (fd >= 0) close(fd);
        return explain(f->path, e);
    }
    return 0;
}

cf_file *cf_file_create(const char *path)
{
    static atomic_uint counter;
    if (!path || !*path) return cf_seterr("error: cf_file_create: no path"), NULL;
    target t;
    if (classify(path, &t)) return NULL;
    cf_file *f = calloc(1, sizeof *f);
    size_t tlen = t.real ? strlen(t.real) + 48 : 0;
    if (!f || !(f->path = strdup(path)) || (tlen && !(f->tmp = malloc(tlen)))) {
        if (f) free(f->path);
        free(f);
        free(t.real);
        return cf_oom(tlen + strlen(path)), NULL;
    }
    f->real = t.real;
    if (t.how != NEW) {
        if (open_through(f, &t)) {
            free(f->path);
            free(f);
            return NULL;
        }
        sigemptyset(&f->old);
        pthread_sigmask(SIG_SETMASK, NULL, &f->old);
        return f;
    }
    remove_stale(f->real);
    hold_signals(&f->old);
    int fd = -1;
    for (int tries = 0; fd < 0 && tries < 100; tries++) {
        snprintf(f->tmp, tlen, "%s.tmp.%ld.%u", f->real, (long)getpid(), atomic_fetch_add(&counter, 1));
        fd = open(f->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST) break;
    }
    int e = errno;
    if (fd >= 0 && t.has_old) {   /* the old file's mode and owner, not the umask's */
        if (fchown(fd, t.st.st_uid, t.st.st_gid) != 0) (void)fchown(fd, (uid_t)-1, t.st.st_gid);
        (void)fchmod(fd, t.st.st_mode & 07777);
    }
    if (fd >= 0 && !(f->fp = fdopen(fd, "wb"))) {
        e = errno;
        close(fd);
        unlink(f->tmp);
        fd = -1;
    }
    if (fd < 0) {
        explain(path, e);
        release(f);
        return NULL;
    }
    return f;
}

FILE *cf_file_stream(cf_file *f) { return f ? f->fp : NULL; }

int cf_file_through(const cf_file *f) { return f && !f->tmp; }

void cf_file_abort(cf_file *f)
{
    if (!f) return;
    fclose(f->fp);
    if (f->tmp) unlink(f->tmp);
    release(f);
}

/* fsync the directory holding path, so that the rename itself is durable. */
static int sync_dir(const char *path, const char *shown)
{
    char *dir = dir_of(path);
    if (!dir) return cf_oom(strlen(path) + 1);
    int rc = 0, fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        if (fsync(fd) != 0 && errno != EINVAL && errno != ENOTSUP)
            rc = cf_seterr("error: %s: written, but syncing its directory %s failed: %s", shown, dir, strerror(errno));
        close(fd);
    }
    free(dir);
    return rc;
}

int cf_file_commit(cf_file *f)
{
    if (!f) return cf_seterr("error: cf_file_commit: no file");
    int ok = !ferror(f->fp) && fflush(f->fp) == 0, e = ok ? 0 : errno;
    if (ok && f->tmp && fsync(fileno(f->fp)) != 0) {
        ok = 0;
        e = errno;
    }
    if (fclose(f->fp) != 0 && ok) {
        ok = 0;
        e = errno;
    }
    int rc = 0;
    if (!ok) {
        if (f->tmp) unlink(f->tmp);
        rc = cf_seterr("error: %s: writing failed: %s", f->path, strerror(e ? e : EIO));
    } else if (f->tmp && rename(f->tmp, f->real) != 0) {
        e = errno;
        unlink(f->tmp);
        rc = cf_seterr("error: %s: cannot replace it with the new file: %s", f->path, strerror(e));
    } else if (f->tmp) {
        rc = sync_dir(f->real, f->path);
    }
    release(f);
    return rc;
}

int cf_file_check(const char *path)
{
    if (!path || !*path) return cf_seterr("error: cf_file_check: no path");
    target t;
    if (classify(path, &t)) return -1;
    int through = t.how != NEW;
    free(t.real);
    if (through) return 0;   /* opening a FIFO to see would hand its reader an empty file */
    cf_file *f = cf_file_create(path);
    if (!f) return -1;
    cf_file_abort(f);
    return 0;
}

/* ---- locks: one writer per target -------------------------------------------------- */

struct cf_file_lock {
    int fd;          /* -1: nothing to hold (a device, a FIFO, a stream) */
    char *lockpath;
};

cf_file_lock *cf_file_lock_take(const char *path)
{
    if (!path || !*path) return cf_seterr("error: cf_file_lock_take: no path"), NULL;
    target t;
    if (classify(path, &t)) return NULL;
    cf_file_lock *l = calloc(1, sizeof *l);
    if (!l) return free(t.real), cf_oom(sizeof *l), NULL;
    l->fd = -1;
    if (t.how != NEW) return l;
    size_t len = strlen(t.real) + 6;
    if (!(l->lockpath = malloc(len))) return free(t.real), free(l), cf_oom(len), NULL;
    snprintf(l->lockpath, len, "%s.lock", t.real);
    free(t.real);
    for (int tries = 0; tries < 100; tries++) {
        int fd = open(l->lockpath, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd < 0) {   /* the target's folder is missing or not writable: say so as writing would */
            explain(path, errno);
            break;
        }
        if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
            int e = errno;
            char pid[32] = "";
            ssize_t n = pread(fd, pid, sizeof pid - 1, 0);
            pid[n > 0 ? n : 0] = 0;
            pid[strcspn(pid, "\n")] = 0;
            close(fd);
            if (e == EWOULDBLOCK)
                cf_seterr("error: %s: another cflux%s%s%s is writing it; wait for it to end, or write elsewhere",
                          path, *pid ? " (process " : "", pid, *pid ? ")" : "");
            else
                cf_seterr("error: %s: cannot take the lock %s: %s", path, l->lockpath, strerror(e));
            break;
        }
        /* the lock file may have been removed by its last holder between open and flock */
        struct stat a, b;
        if (fstat(fd, &a) != 0 || stat(l->lockpath, &b) != 0 || a.st_dev != b.st_dev || a.st_ino != b.st_ino) {
            close(fd);
            continue;
        }
        char pid[32];
        int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
        if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)n, 0) != n) { /* the lock holds all the same */ }
        l->fd = fd;
        return l;
    }
    free(l->lockpath);
    free(l);
    return NULL;
}

void cf_file_lock_release(cf_file_lock *l)
{
    if (!l) return;
    if (l->fd >= 0) {
        unlink(l->lockpath);   /* while held: a waiter that opened it sees the inode change and retries */
        close(l->fd);
    }
    free(l->lockpath);
    free(l);
}
