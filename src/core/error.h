/* error.h - the library's error channel: one message per thread.
 *
 * A public call that fails sets the message with cf_seterr() and returns NULL or
 * non-zero; cf_last_error() (in cflux.h) reads it back. Messages are written the
 * way they will be printed: "error: what happened" plus trace lines where there are
 * any. */
#ifndef CF_CORE_ERROR_H
#define CF_CORE_ERROR_H

#include <stddef.h>

#define CF_ERRMAX 4096

/* Replace this thread's message. Returns -1 so callers can `return cf_seterr(...)`. */
int cf_seterr(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Append to this thread's message (for trace lines). */
void cf_adderr(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Append n trace lines, innermost first, folding runs of the same line ("  ... the
 * same 60 more times") and, past 30 runs, the middle, so that the outermost frame
 * always shows. line(ctx, i, buf) writes line i ("  in F at FILE:L:C", no newline)
 * into buf, CF_TRACE_LINE chars; it is called about twice per line. No heap, and no
 * buffer per line: a trace may be hundreds of frames deep. */
#define CF_TRACE_LINE 256
void cf_adderr_lines(int n, void (*line)(void *ctx, int i, char *buf), void *ctx);

/* Clear the message. */
void cf_clearerr(void);

/* The out-of-memory message, set and returned as -1. */
int cf_oom(size_t bytes);

#endif
