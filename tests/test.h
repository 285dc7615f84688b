/* test.h - the smallest test harness that can fail.
 *
 *   TEST(adds) { CHECK(1 + 1 == 2); CHECK_NEAR(x, 0.5, 1e-6); }
 *   int main(void) { RUN(adds); return test_summary("ops"); }
 *
 * Every failed check prints file:line and the expression; test_summary prints
 * "NAME: N passed, N failed" and returns the exit status. */
#ifndef CF_TEST_H
#define CF_TEST_H

#include <math.h>
#include <stdio.h>
#include <string.h>

static int test_failed_checks __attribute__((unused)), test_passed __attribute__((unused)), test_failed __attribute__((unused));
static const char *test_current __attribute__((unused)) = "";

#define TEST(name) static void name(void)

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            test_failed_checks++;                                              \
            fprintf(stderr, "%s:%d: %s: check failed: %s\n", __FILE__,         \
                    __LINE__, test_current, #cond);                            \
        }                                                                      \
    } while (0)

/* |a - b| <= tol, printing both values when it does not hold. */
#define CHECK_NEAR(a, b, tol)                                                  \
    do {                                                                       \
        double a_ = (a), b_ = (b), t_ = (tol);                                 \
        if (!(fabs(a_ - b_) <= t_)) {                                          \
            test_failed_checks++;                                              \
            fprintf(stderr, "%s:%d: %s: %s = %.9g, %s = %.9g, tol %.3g\n",     \
                    __FILE__, __LINE__, test_current, #a, a_, #b, b_, t_);     \
        }                                                                      \
    } while (0)

/* A string contains a substring. */
#define CHECK_HAS(str, sub)                                                    \
    do {                                                                       \
        const char *s_ = (str), *u_ = (sub);                                   \
        if (!s_ || !strstr(s_, u_)) {                                          \
            test_failed_checks++;                                              \
            fprintf(stderr, "%s:%d: %s: expected \"%s\" in \"%s\"\n",          \
                    __FILE__, __LINE__, test_current, u_, s_ ? s_ : "(null)"); \
        }                                                                      \
    } while (0)

/* How long a test gives an input that must cost little (a deflate bomb, a file of
 * 40,000 tensors; before their fixes, seconds to minutes): 2 s, and five times that
 * under the sanitizers, whose checks slow every access (a loaded machine ran such an
 * import in 2.08 s with them). */
#ifdef CFLUX_TEST_SANITIZED
#define TEST_CHEAP_SECONDS 10.0
#else
#define TEST_CHEAP_SECONDS 2.0
#endif

#define RUN(name)                                                              \
    do {                                                                       \
        int before_ = test_failed_checks;                                      \
        test_current = #name;                                                  \
        name();                                                                \
        if (test_failed_checks == before_) test_passed++;                      \
        else test_failed++;                                                    \
    } while (0)

static inline int test_summary(const char *suite)
{
    printf("%s: %d passed, %d failed\n", suite, test_passed, test_failed);
    return test_failed ? 1 : 0;
}

#endif
