/* protobuf.c - appending protocol-buffers fields to growable buffers (protobuf.h). */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "interop/protobuf.h"

size_t cf_pb_varint_size(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

size_t cf_pb_len_prefix_size(int field, size_t len)
{
    return cf_pb_varint_size((uint64_t)field << 3 | CF_PB_LEN) + cf_pb_varint_size(len);
}

size_t cf_pb_varint_encode(unsigned char *out, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        out[n++] = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    out[n++] = (unsigned char)v;
    return n;
}

/* Room for n more bytes: 0, or -1 with b marked failed. */
static int reserve(cf_pb *b, size_t n)
{
    if (b->failed) return -1;
    if (b->cap - b->len >= n) return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap - b->len < n) {
        if (cap > SIZE_MAX / 2) {
            b->failed = 1;
            return -1;
        }
        cap *= 2;
    }
    unsigned char *p = realloc(b->p, cap);
    if (!p) {
        b->failed = 1;
        return -1;
    }
    b->p = p;
    b->cap = cap;
    return 0;
}

void cf_pb_raw(cf_pb *b, const void *p, size_t n)
{
    if (n == 0 || reserve(b, n)) return;
    memcpy(b->p + b->len, p, n);
    b->len += n;
}

void cf_pb_varint(cf_pb *b, uint64_t v)
{
    if (reserve(b, 10)) return;
    b->len += cf_pb_varint_encode(b->p + b->len, v);
}

void cf_pb_tag(cf_pb *b, int field, int wire) { cf_pb_varint(b, (uint64_t)field << 3 | (uint64_t)wire); }

void cf_pb_int(cf_pb *b, int field, int64_t v)
{
    cf_pb_tag(b, field, CF_PB_VARINT);
    cf_pb_varint(b, (uint64_t)v);
}

void cf_pb_float(cf_pb *b, int field, float v)
{
    uint32_t u;
    unsigned char le[4];
    memcpy(&u, &v, 4);
    for (int k = 0; k < 4; k++) le[k] = (unsigned char)(u >> 8 * k);
    cf_pb_tag(b, field, CF_PB_FIXED32);
    cf_pb_raw(b, le, 4);
}

void cf_pb_len_prefix(cf_pb *b, int field, size_t len)
{
    cf_pb_tag(b, field, CF_PB_LEN);
    cf_pb_varint(b, len);
}

void cf_pb_bytes(cf_pb *b, int field, const void *p, size_t n)
{
    cf_pb_len_prefix(b, field, n);
    cf_pb_raw(b, p, n);
}

void cf_pb_string(cf_pb *b, int field, const char *s) { cf_pb_bytes(b, field, s, strlen(s)); }

void cf_pb_message(cf_pb *b, int field, const cf_pb *msg)
{
    if (msg->failed) {
        b->failed = 1;
        return;
    }
    cf_pb_bytes(b, field, msg->p, msg->len);
}

int cf_pb_check(const cf_pb *b)
{
    return b->failed ? cf_oom(b->cap ? b->cap * 2 : 256) : 0;
}

void cf_pb_clear(cf_pb *b)
{
    b->len = 0;
    b->failed = 0;
}

void cf_pb_free(cf_pb *b)
{
    free(b->p);
    *b = (cf_pb){0};
}
