/* test_models.c - every model file under models/, tests/models/good/ and
 * examples/finetune/ compiles and binds with no note from the compiler; every file
 * under tests/models/bad/ is refused with the message its .expect file gives: each
 * non-empty line of X.expect must appear in the error for X.flux, with {file} standing
 * for the model's path. */
#include <dirent.h>
#include <stdlib.h>

#include "cflux.h"
#include "test.h"

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The .flux files of a directory, sorted; returns the count. */
static int list_models(const char *dir, char ***out)
{
    DIR *d = opendir(dir);
    int n = 0, cap = 0;
    char **names = NULL;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".flux") != 0) continue;
        if (n == cap) names = realloc(names, (size_t)(cap = cap ? 2 * cap : 64) * sizeof *names);
        names[n] = malloc(strlen(dir) + len + 2);
        sprintf(names[n++], "%s/%s", dir, e->d_name);
    }
    if (d) closedir(d);
    if (n) qsort(names, (size_t)n, sizeof *names, by_name);
    *out = names;
    return n;
}

static void free_list(char **names, int n)
{
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
}

/* Compile and bind every model of dir; *total receives how many there are. Returns
 * how many compiled with no note and bound. */
static int good_dir(const char *dir, int *total)
{
    char **names;
    int n = list_models(dir, &names), bad = 0;
    for (int i = 0; i < n; i++) {
        cf_model *m = cf_model_load(names[i]);
        cf_exec *e = m ? cf_bind(m, 3, CF_TRAIN) : NULL;
        if (!e) {
            fprintf(stderr, "%s: should compile and bind, but:\n%s\n", names[i], cf_last_error());
            bad++;
        } else if (*cf_model_compile_notes(m)) {
            fprintf(stderr, "%s: should compile with no note, but:\n%s", names[i], cf_model_compile_notes(m));
            bad++;
        }
        cf_exec_free(e);
        cf_model_free(m);
    }
    free_list(names, n);
    *total = n;
    return n - bad;
}

TEST(good_models_compile)
{
    /* every one of them, and at least the ones there are now (an empty listing, from
     * the wrong directory, passes nothing) */
    int n, ok = good_dir("models", &n);
    CHECK(ok == n && n >= 2);
    ok = good_dir("tests/models/good", &n);
    CHECK(ok == n && n >= 9);
    printf("good models: %d of %d compiled and bound\n", ok, n);
    ok = good_dir("examples/finetune", &n);   /* docs/training.md's fine-tuning example */
    CHECK(ok == n && n == 2);
}

/* Replace {file} in line by path. */
static void expand(const char *line, const char *path, char *out, size_t size)
{
    const char *at = strstr(line, "{file}");
    if (!at) snprintf(out, size, "%s", line);
    else snprintf(out, size, "%.*s%s%s", (int)(at - line), line, path, at + 6);
}

TEST(bad_models_are_refused_with_their_message)
{
    char **names;
    int n = list_models("tests/models/bad", &names), checked = 0;
    for (int i = 0; i < n; i++) {
        char expect[1024];
        snprintf(expect, sizeof expect, "%.*s.expect", (int)(strlen(names[i]) - 5), names[i]);
        FILE *f = fopen(expect, "r");
        CHECK(f != NULL);
        if (!f) {
            fprintf(stderr, "%s: no %s\n", names[i], expect);
            continue;
        }
        cf_model *m = cf_model_load(names[i]);
        CHECK(m == NULL);
        if (m) fprintf(stderr, "%s: compiled, but should not\n", names[i]);
        cf_model_free(m);
        char line[1024], want[1200];
        int lines = 0;
        while (fgets(line, sizeof line, f)) {
            line[strcspn(line, "\n")] = 0;
            if (!line[0]) continue;
            expand(line, names[i], want, sizeof want);
            lines++;
            if (!strstr(cf_last_error(), want)) {
                CHECK_HAS(cf_last_error(), want);
                fprintf(stderr, "  (in %s)\n", names[i]);
            }
        }
        fclose(f);
        CHECK(lines > 0);
        checked++;
    }
    free_list(names, n);
    printf("bad models checked: %d\n", checked);
    CHECK(checked >= 40);
}

int main(void)
{
    RUN(good_models_compile);
    RUN(bad_models_are_refused_with_their_message);
    return test_summary("models");
}
