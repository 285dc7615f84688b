/* fuzz_stream.h - for the data fuzzers: bytes as a zlib stream, the way the readers
 * get files, so that the fuzzers go through the very path that files do.
 *
 * The first byte's top two bits say what the rest is: 0 or 3, the file as it is (it
 * may be gzip'd: zlib tells by its first bytes); 1, text to gzip first; 2, text to
 * gzip and then cut short at a place set by the second byte. The bytes go into an
 * anonymous memory file (memfd) that zlib reads through gzdopen. */
#ifndef CF_FUZZ_STREAM_H
#define CF_FUZZ_STREAM_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memfd_create; the including file defines it before any header */
#endif
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include "cflux.h"

/* The data fuzzers run under a memory limit of 64 MB: a file that claims more is
 * refused, not allocated. */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    cf_set_memory_limit((size_t)64 << 20);
    return 0;
}

/* data as one gzip member; *out bytes (malloc'd), NULL if zlib fails */
static unsigned char *fuzz_gzip(const uint8_t *data, size_t size, size_t *out)
{
    z_stream z = {0};
    if (deflateInit2(&z, 6, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY) != Z_OK) return NULL;
    size_t cap = deflateBound(&z, size);
    unsigned char *buf = malloc(cap);
    z.next_in = (unsigned char *)data;
    z.avail_in = (unsigned)size;
    z.next_out = buf;
    z.avail_out = (unsigned)cap;
    int rc = buf ? deflate(&z, Z_FINISH) : Z_MEM_ERROR;
    deflateEnd(&z);
    if (rc != Z_STREAM_END) {
        free(buf);
        return NULL;
    }
    *out = cap - z.avail_out;
    return buf;
}

/* The stream for an input whose mode is in `mode` (see above) and whose file is
 * data[0, size); cut is the second mode byte. NULL if the system refuses. */
static gzFile fuzz_stream(unsigned mode, unsigned cut, const uint8_t *data, size_t size)
{
    size_t len = size;
    unsigned char *z = NULL;
    const uint8_t *bytes = data;
    if ((mode >> 6) == 1 || (mode >> 6) == 2) {
        if (!(z = fuzz_gzip(data, size, &len))) return NULL;
        if ((mode >> 6) == 2) len = len * cut / 256;
        bytes = z;
    }
    int fd = memfd_create("fuzz", MFD_CLOEXEC);
    gzFile f = NULL;
    if (fd >= 0 && (len == 0 || write(fd, bytes, len) == (ssize_t)len) && lseek(fd, 0, SEEK_SET) == 0)
        f = gzdopen(fd, "rb");
    if (!f && fd >= 0) close(fd);
    free(z);
    return f;
}

#endif
