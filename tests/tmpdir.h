/* tmpdir.h - a directory for a test program's own files: tmpdir_make() makes it,
 * tmp(name) names a file in it, tmpdir_remove() removes it with all it holds. */
#ifndef CF_TEST_TMPDIR_H
#define CF_TEST_TMPDIR_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char dir[64];

/* /tmp/cflux-PREFIX-XXXXXX; 0, or -1 with the reason printed. */
static __attribute__((unused)) int tmpdir_make(const char *prefix)
{
    snprintf(dir, sizeof dir, "/tmp/cflux-%s-XXXXXX", prefix);
    if (mkdtemp(dir)) return 0;
    perror("mkdtemp");
    return -1;
}

/* The path of name in the directory; the last four stay valid. */
static __attribute__((unused)) const char *tmp(const char *name)
{
    static char path[4][256];
    static int k;
    k = (k + 1) % 4;
    snprintf(path[k], sizeof path[k], "%s/%s", dir, name);
    return path[k];
}

static __attribute__((unused)) void tmpdir_remove(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "note: could not remove %s\n", dir);
}

#endif
