/* test_file.c - the crash-safe writer: content lands whole or not at all, planted
 * links are never followed, no temporary survives, signals wait for the rename. */
#define _GNU_SOURCE
#include <dirent.h>
#include <signal.h>
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

/* Links planted where the temporary files will be (PATH.tmp.PID.N) and at the target
 * itself: the victim they point to is never written. */
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
    CHECK(symlink(victim, p) == 0);
    int rc = write_text(p, "new plot");   /* 100 tries all meet a link: refused */
    CHECK(rc == -1);
    CHECK(slurp(victim) && !strcmp(slurp(victim), "precious"));
    /* with some names free it succeeds, replacing the link at the target, not the victim */
    for (int i = 100; i < 200; i++) {
        snprintf(link, sizeof link, "%s.tmp.%ld.%d", p, (long)getpid(), i);
        unlink(link);
    }
    CHECK(write_text(p, "new plot") == 0);
    struct stat st;
    CHECK(lstat(p, &st) == 0 && S_ISREG(st.st_mode));
    CHECK(slurp(p) && !strcmp(slurp(p), "new plot"));
    CHECK(slurp(victim) && !strcmp(slurp(victim), "precious"));
    for (int i = 0; i < 100; i++) {   /* the planted links are left alone, and go now */
        snprintf(link, sizeof link, "%s.tmp.%ld.%d", p, (long)getpid(), i);
        CHECK(unlink(link) == 0);
    }
    snprintf(link, sizeof link, "%s.tmp.%ld", p, (long)getpid());
    CHECK(unlink(link) == 0);
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
    RUN(signals_wait_for_the_rename);
    RUN(check_names_the_reason);
    int rc = test_summary("file");
    tmpdir_remove();
    return rc;
}
