/* test_docs.c - the examples of docs/notation.md run: every ```flux block compiles
 * and binds with no note from the compiler; every ```flux-note block compiles and binds
 * with the notes, and every ```flux-error block fails with the error, of the lines of
 * the ```text block that follows it ({file} stands for the name the example is
 * compiled under). */
#include <stdlib.h>

#include "cflux.h"
#include "test.h"

#define DOC "docs/notation.md"

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *s = malloc((size_t)n + 1);
    if (fread(s, 1, (size_t)n, f) != (size_t)n) n = 0;
    s[n] = 0;
    fclose(f);
    return s;
}

/* The next fenced block after *p: its info string and body (both malloc'd). */
static int next_block(const char **p, char **info, char **body)
{
    const char *s = strstr(*p, "```");
    while (s && s != *p && s[-1] != '\n') s = strstr(s + 3, "```");
    if (!s) return 0;
    const char *nl = strchr(s, '\n');
    if (!nl) return 0;
    *info = strndup(s + 3, (size_t)(nl - s - 3));
    const char *end = strstr(nl + 1, "\n```");
    if (!end) return 0;
    *body = strndup(nl + 1, (size_t)(end - nl));
    *p = end + 4;
    return 1;
}

/* Each line of the ```text block that follows *p is in got. */
static void has_lines(const char **p, const char *got)
{
    char *info, *expect;
    CHECK(next_block(p, &info, &expect) && !strcmp(info, "text"));
    for (char *line = strtok(expect, "\n"); line; line = strtok(NULL, "\n")) {
        char want[512];
        char *at = strstr(line, "{file}");
        if (at) snprintf(want, sizeof want, "%.*sdoc.flux%s", (int)(at - line), line, at + 6);
        else snprintf(want, sizeof want, "%s", line);
        CHECK_HAS(got, want);
    }
    free(info);
    free(expect);
}

TEST(examples_run)
{
    char *doc = slurp(DOC);
    CHECK(doc != NULL);
    if (!doc) return;
    const char *p = doc;
    char *info, *body;
    int good = 0, bad = 0, noted = 0;
    while (next_block(&p, &info, &body)) {
        int note = !strcmp(info, "flux-note");
        if (note || !strcmp(info, "flux")) {
            cf_model *m = cf_model_parse(body, "doc.flux");
            cf_exec *e = m ? cf_bind(m, 2, CF_TRAIN) : NULL;
            CHECK(e != NULL);
            if (!e) fprintf(stderr, "this example fails:\n%s\n%s\n", body, cf_last_error());
            const char *notes = cf_model_compile_notes(m);
            if (note) {
                has_lines(&p, notes);
            } else if (*notes) {
                CHECK(!*notes);
                fprintf(stderr, "this example has a note:\n%s\n%s", body, notes);
            }
            cf_exec_free(e);
            cf_model_free(m);
            good++;
            noted += note;
        } else if (!strcmp(info, "flux-error")) {
            cf_model *m = cf_model_parse(body, "doc.flux");
            CHECK(m == NULL);
            cf_model_free(m);
            char err[4096];
            snprintf(err, sizeof err, "%s", cf_last_error());
            has_lines(&p, err);
            bad++;
        }
        free(info);
        free(body);
    }
    printf("docs: %d examples compiled (%d with notes), %d errors as documented\n", good, noted, bad);
    CHECK(good >= 5 && bad >= 3 && noted >= 1);
    free(doc);
}

int main(void)
{
    RUN(examples_run);
    return test_summary("docs");
}
