/* protobuf.h - the few pieces of the protocol-buffers wire format that writing ONNX
 * needs, by hand: varints, fixed 32-bit floats and length-delimited fields (bytes,
 * strings, nested messages), appended to growable buffers.
 *
 * A message is built in a cf_pb, then nested into its parent as one field
 * (cf_pb_message), or written to a stream by its caller. Appends never fail in the
 * moment: a failed allocation marks the buffer `failed`, later appends do nothing,
 * and cf_pb_check reports it once at the end. Repeated scalar fields are written one
 * tag per element (proto2's unpacked form, which every parser reads). */
#ifndef CF_INTEROP_PROTOBUF_H
#define CF_INTEROP_PROTOBUF_H

#include <stddef.h>
#include <stdint.h>

/* Wire types. */
enum { CF_PB_VARINT = 0, CF_PB_FIXED64 = 1, CF_PB_LEN = 2, CF_PB_FIXED32 = 5 };

typedef struct cf_pb {
    unsigned char *p;
    size_t len, cap;
    int failed;        /* an allocation failed: the content is incomplete */
} cf_pb;

/* Bytes of v as a varint (1..10). */
size_t cf_pb_varint_size(uint64_t v);

/* Bytes of field `field`'s tag and length prefix for a length-delimited value of
 * len bytes: what nesting adds to a message of that size. */
size_t cf_pb_len_prefix_size(int field, size_t len);

/* Encode v as a varint into out (at least 10 bytes); returns the bytes written. */
size_t cf_pb_varint_encode(unsigned char *out, uint64_t v);

void cf_pb_raw(cf_pb *b, const void *p, size_t n);       /* n bytes as they are */
void cf_pb_varint(cf_pb *b, uint64_t v);                 /* a bare varint */
void cf_pb_tag(cf_pb *b, int field, int wire);
void cf_pb_int(cf_pb *b, int field, int64_t v);          /* int32, int64, enum: two's complement */
void cf_pb_float(cf_pb *b, int field, float v);          /* fixed32, little-endian */
void cf_pb_bytes(cf_pb *b, int field, const void *p, size_t n);
void cf_pb_string(cf_pb *b, int field, const char *s);
void cf_pb_message(cf_pb *b, int field, const cf_pb *msg);   /* msg's bytes as one field */
/* The tag and length of a length-delimited field whose len bytes follow separately. */
void cf_pb_len_prefix(cf_pb *b, int field, size_t len);

/* 0, or -1 with the out-of-memory message if any append failed. */
int cf_pb_check(const cf_pb *b);

/* Empty the buffer, keeping its memory (and clearing `failed`). */
void cf_pb_clear(cf_pb *b);
void cf_pb_free(cf_pb *b);

#endif
