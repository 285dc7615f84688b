/* test_file.c - the writer: content lands whole or not at all, planted links are
 * never followed, no temporary survives, signals wait for the rename; devices, FIFOs
 * and the process's streams are written through, never replaced; modes are kept and
 * read-only files refused; one writer per target. */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cflux.h"
#include "test.h"
#include "tmpdir.h"

static char *slurp(const char *path)
{
    static char buf[256];
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    return buf;
}

static int count_tmp(void)
{
    int n = 0;
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));) n += strstr(e->d_name, ".tmp.") != NULL;
    if (d) closedir(d);
    return n;
}

static int write_text(const char *path, const char *text)
{
    cf_file *f = cf_file_create(path);
    if (!f) return -1;
    fputs(text, cf_file_stream(f));
    return cf_file_commit(f);
}

TEST(commit_and_abort)
{
    const char *p = tmp("a.txt");
    CHECK(write_text(p, "one") == 0);
    CHECK(slurp(p) && !strcmp(slurp(p), "one"));
    CHECK(write_text(p, "two") == 0);
    CHECK(slurp(p) && !strcmp(slurp(p), "two"));
    cf_file *f = cf_file_create(p);
    CHECK(f != NULL);
    if (f) {
        fputs("three", cf_file_stream(f));
        CHECK(count_tmp() == 1);
        cf_file_abort(f);
    }
    CHECK(slurp(p) && !strcmp(slurp(p), "two"));
    CHECK(count_tmp() == 0);
}

/* Links planted where the temporary files will be (PATH.tmp.PID.N) are never
 * followed; a link at the target itself, made by the user, is written at the file it
 * points to, and stays a link. */
TEST(planted_links_are_not_followed)
{
    const char *victim = tmp("victim"), *p = tmp("plot.svg");
    CHECK(write_text(victim, "precious") == 0);
    char link[300];
    for (int i = 0; i < 200; i++) {
        snprintf(link, sizeof link, "%s.tmp.%ld.%d", p, (long)getpid(), i);
        CHECK(symlink(victim, link) == 0);
    }
    snprintf(link, sizeof link, "%s.tmp.%ld", p, (long)getpid());   /* the old name */
    CHECK(symlink(victim, link) == 0);
    int rc = write_text(p, "new plot");   /* 100 tries all meet a link: refused */
    CHECK(rc == -1);
    CHECK(slurp(victim) && !strcmp(slurp(victim), "precious"));
    /* with some names free it succeeds; the links are left alone */
    for (int i = 100; i < 200; i++) {
        snprintf(link, sizeof link, "%s.tmp.%ld.%d", p, (long)getpid(), i);
        unlink(link);
    }
    CHECK(write_text(p, "new plot") == 0);
    struct stat st;
    CHECK(lstat(p, &st) == 0 && S_ISREG(st.st_mode));
    CHECK(slurp(p) && !strcmp(slurp(p), "new plot"));
    CHECK(slurp(victim) && !strcmp(slurp(victim), "precious"));
    for (int i = 0; i < 100; i++) {
        snprintf(link, sizeof link, "%s.tmp.%ld.%d", p, (long)getpid(), i);
        CHECK(unlink(link) == 0);
    }
    snprintf(link, sizeof link, "%s.tmp.%ld", p, (long)getpid());
    CHECK(unlink(link) == 0);
    /* the user's own link to a checkpoint: the checkpoint is written, the link kept */
    const char *latest = tmp("latest.ckpt");
    CHECK(symlink(victim, latest) == 0);
    CHECK(write_text(latest, "epoch 2") == 0);
    CHECK(lstat(latest, &st) == 0 && S_ISLNK(st.st_mode));
    CHECK(slurp(victim) && !strcmp(slurp(victim), "epoch 2"));
    CHECK(count_tmp() == 0);
    /* a link to nothing is refused, and stays */
    const char *dangling = tmp("dangling.svg");
    CHECK(symlink(tmp("nowhere"), dangling) == 0);
    CHECK(write_text(dangling, "x") == -1);
    CHECK_HAS(cf_last_error(), "dangling.svg: cannot write: it is a symbolic link to a file that does not exist");
    CHECK(lstat(dangling, &st) == 0 && S_ISLNK(st.st_mode) && access(tmp("nowhere"), F_OK) != 0);
}

/* In a shared directory (sticky, writable by all, as /tmp), a link that another user
 * made is not followed: that is how a planted link would reach a victim. Needs root
 * to make a link owned by another user. */
TEST(others_links_in_shared_directories)
{
    if (geteuid() != 0) {
        printf("others_links_in_shared_directories: needs root to own a link as another user; checked in CI\n");
        return;
    }
    const char *shared = tmp("shared"), *victim = tmp("victim2");
    CHECK(mkdir(shared, 01777) == 0 && chmod(shared, 01777) == 0);
    CHECK(write_text(victim, "precious") == 0);
    char link[300];
    snprintf(link, sizeof link, "%s/out.csv", shared);
    CHECK(symlink(victim, link) == 0);
    CHECK(lchown(link, 65534, 65534) == 0);
    CHECK(write_text(link, "x") == -1);
    CHECK_HAS(cf_last_error(), "it is a symbolic link made by another user (uid 65534) in the shared directory");
    CHECK(slurp(victim) && !strcmp(slurp(victim), "precious"));
    CHECK(lchown(link, 0, 0) == 0);   /* one's own link there is followed */
    CHECK(write_text(link, "mine") == 0);
    CHECK(slurp(victim) && !strcmp(slurp(victim), "mine"));
}

/* A device node (made here, a copy of /dev/null's numbers: never the system's own) is
 * written through and stays a device; so is a FIFO, whose reader gets the bytes. A
 * block device and a socket are refused. */
TEST(devices_and_fifos_are_written_through)
{
    struct stat st;
    const char *null = tmp("null");
    if (geteuid() == 0) {
        CHECK(mknod(null, S_IFCHR | 0666, makedev(1, 3)) == 0);
        CHECK(write_text(null, "gone") == 0);
        CHECK(cf_file_check(null) == 0);
        CHECK(stat(null, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3));
        const char *disk = tmp("disk");
        CHECK(mknod(disk, S_IFBLK | 0600, makedev(7, 250)) == 0);
        CHECK(write_text(disk, "x") == -1);
        CHECK_HAS(cf_last_error(), "disk: cannot write: it is a block device (a disk)");
        CHECK(cf_file_check(disk) == -1);
        CHECK(stat(disk, &st) == 0 && S_ISBLK(st.st_mode));
    } else {
        printf("devices_and_fifos_are_written_through: mknod needs root; checked in CI\n");
    }
    CHECK(count_tmp() == 0);

    const char *fifo = tmp("fifo"), *got = tmp("got");
    CHECK(mkfifo(fifo, 0600) == 0);
    CHECK(cf_file_check(fifo) == 0);   /* the check does not open it: no reader is waiting */
    pid_t child = fork();
    if (child == 0) {   /* the reader: copy the FIFO to a file; no writer in 10 s is a failure */
        alarm(10);
        FILE *in = fopen(fifo, "rb"), *out = fopen(got, "wb");
        int c;
        while (in && out && (c = fgetc(in)) != EOF) fputc(c, out);
        _exit(in && out && fclose(out) == 0 ? 0 : 1);
    }
    CHECK(write_text(fifo, "through the pipe") == 0);
    int status = -1;
    CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(slurp(got) && !strcmp(slurp(got), "through the pipe"));
    CHECK(stat(fifo, &st) == 0 && S_ISFIFO(st.st_mode));

    const char *sock = tmp("sock");
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", sock);
    CHECK(fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0);
    CHECK(write_text(sock, "x") == -1);
    CHECK_HAS(cf_last_error(), "sock: cannot write: it is a socket");
    CHECK(stat(sock, &st) == 0 && S_ISSOCK(st.st_mode));
    if (fd >= 0) close(fd);
}

/* /dev/stdout goes where the process's standard output goes, in order with what else
 * was written there; the file it was redirected to is not replaced. */
TEST(stdout_is_written_through_its_descriptor)
{
    const char *out = tmp("stdout.txt");
    pid_t child = fork();
    if (child == 0) {
        int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || dup2(fd, 1) != 1) _exit(2);
        printf("before\n");
        /* /dev/stdout is a link to /proc/self/fd/1: one made here stands for it, so that
         * a wrong writer replaces this link, not the system's */
        char link[300];
        snprintf(link, sizeof link, "%s/stdout", dir);
        if (symlink("/proc/self/fd/1", link) != 0) _exit(3);
        int rc = write_text(link, "middle\n") | write_text("/proc/self/fd/1", "again\n");
        printf("after\n");
        fflush(stdout);
        _exit(rc ? 1 : 0);
    }
    struct stat before, after;
    int status = -1;
    CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(stat(out, &before) == 0);
    char *text = slurp(out);
    CHECK(text && !strcmp(text, "before\nmiddle\nagain\nafter\n"));
    if (text && strcmp(text, "before\nmiddle\nagain\nafter\n")) fprintf(stderr, "got: %s\n", text);
    CHECK(stat(out, &after) == 0 && after.st_ino == before.st_ino && count_tmp() == 0);
    CHECK(lstat(tmp("stdout"), &after) == 0 && S_ISLNK(after.st_mode));
}

/* A replaced file keeps its mode; one with no write permission is refused, even for
 * root (who could write it, but it was marked to be kept). */
TEST(modes_are_kept_and_read_only_is_refused)
{
    const char *p = tmp("mode.ckpt"), *ro = tmp("ro.ckpt");
    struct stat st;
    CHECK(write_text(p, "one") == 0 && chmod(p, 0640) == 0);
    CHECK(write_text(p, "two") == 0);
    CHECK(stat(p, &st) == 0 && (st.st_mode & 07777) == 0640);
    CHECK(slurp(p) && !strcmp(slurp(p), "two"));
    CHECK(write_text(ro, "keep me") == 0 && chmod(ro, 0444) == 0);
    CHECK(write_text(ro, "lost") == -1);
    CHECK_HAS(cf_last_error(), "ro.ckpt: cannot write: it is read-only (mode 0444)");
    CHECK(cf_file_check(ro) == -1);
    CHECK(stat(ro, &st) == 0 && (st.st_mode & 07777) == 0444);
    CHECK(slurp(ro) && !strcmp(slurp(ro), "keep me"));
    CHECK(count_tmp() == 0);
}

/* Temporaries that a killed process left are removed when the target is next
 * written; a live process's are not. */
TEST(stale_temporaries_are_removed)
{
    const char *p = tmp("run.ckpt");
    pid_t gone = fork();
    if (gone == 0) _exit(0);
    waitpid(gone, NULL, 0);
    char dead[300], live[300], other[300];
    snprintf(dead, sizeof dead, "%s.tmp.%ld.3", p, (long)gone);
    snprintf(live, sizeof live, "%s.tmp.%ld.0", p, (long)getppid());
    snprintf(other, sizeof other, "%s.tmp.%ld.x", p, (long)gone);   /* not a name the writer makes */
    CHECK(write_text(dead, "half") == 0 && write_text(live, "busy") == 0 && write_text(other, "?") == 0);
    CHECK(write_text(p, "whole") == 0);
    CHECK(access(dead, F_OK) != 0);
    CHECK(access(live, F_OK) == 0 && access(other, F_OK) == 0);
    unlink(live);
    unlink(other);
}

/* One writer per target: a second taker, here or in another process, is refused with
 * the holder's process id; after release it is free, and no lock file stays. */
TEST(locks_keep_a_second_writer_out)
{
    const char *p = tmp("shared.ckpt");
    cf_file_lock *l = cf_file_lock_take(p);
    CHECK(l != NULL);
    char want[64];
    snprintf(want, sizeof want, "another cflux (process %ld) is writing it", (long)getpid());
    CHECK(cf_file_lock_take(p) == NULL);
    CHECK_HAS(cf_last_error(), want);
    pid_t child = fork();
    if (child == 0) _exit(cf_file_lock_take(p) == NULL && strstr(cf_last_error(), want) ? 0 : 1);
    int status = -1;
    CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    cf_file_lock_release(l);
    CHECK(access(tmp("shared.ckpt.lock"), F_OK) != 0);
    cf_file_lock *again = cf_file_lock_take(p);
    CHECK(again != NULL);
    cf_file_lock_release(again);
    /* a lock file left by a killed holder holds nothing */
    CHECK(write_text(tmp("shared.ckpt.lock"), "999999\n") == 0);
    again = cf_file_lock_take(p);
    CHECK(again != NULL);
    cf_file_lock_release(again);
    /* a stream needs none */
    cf_file_lock *dev = cf_file_lock_take("/proc/self/fd/2"), *dev2 = cf_file_lock_take("/proc/self/fd/2");
    CHECK(dev && dev2);
    cf_file_lock_release(dev);
    cf_file_lock_release(dev2);
}

static volatile sig_atomic_t got_term;
static void on_term(int sig) { got_term = sig; }

TEST(signals_wait_for_the_rename)
{
    const char *p = tmp("s.txt");
    signal(SIGTERM, on_term);
    got_term = 0;
    cf_file *f = cf_file_create(p);
    CHECK(f != NULL);
    raise(SIGTERM);
    CHECK(got_term == 0);   /* held back while the temporary exists */
    if (f) {
        fputs("done", cf_file_stream(f));
        CHECK(cf_file_commit(f) == 0);
    }
    CHECK(got_term == SIGTERM);   /* delivered once the rename is done */
    CHECK(count_tmp() == 0);
    signal(SIGTERM, SIG_DFL);
}

TEST(check_names_the_reason)
{
    CHECK(cf_file_check(tmp("fine.csv")) == 0);
    CHECK(access(tmp("fine.csv"), F_OK) != 0);   /* the probe leaves nothing */
    CHECK(count_tmp() == 0);
    CHECK(cf_file_check(tmp("none/x.svg")) == -1);
    CHECK_HAS(cf_last_error(), "x.svg: cannot write: the directory ");
    CHECK_HAS(cf_last_error(), "/none does not exist");
    CHECK(cf_file_check(dir) == -1);
    CHECK_HAS(cf_last_error(), "cannot write: it is a directory");
    CHECK(cf_file_check("") == -1);
}

int main(void)
{
    if (tmpdir_make("file")) return 1;
    RUN(commit_and_abort);
    RUN(planted_links_are_not_followed);
    RUN(others_links_in_shared_directories);
    RUN(devices_and_fifos_are_written_through);
    RUN(stdout_is_written_through_its_descriptor);
    RUN(modes_are_kept_and_read_only_is_refused);
    RUN(stale_temporaries_are_removed);
    RUN(locks_keep_a_second_writer_out);
    RUN(signals_wait_for_the_rename);
    RUN(check_names_the_reason);
    int rc = test_summary("file");
    tmpdir_remove();
    return rc;
}
