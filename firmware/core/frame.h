/* Protocol frames: line assembly, decoding and encoding of "SEQ TYPE ARGS*CRC16\n" (docs/protocol.md). */
#ifndef FRAME_H
#define FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "textbuf.h"

/* Longest frame in bytes, from the sequence number to the CRC digits, without the line ending. */
#define FRAME_MAX_LEN 250u
#define FRAME_MAX_ARGS 24u
#define FRAME_MAX_TYPE_LEN 8u

typedef enum {
    FRAME_OK = 0,
    FRAME_ERR_LONG,   /* line longer than FRAME_MAX_LEN */
    FRAME_ERR_SYNTAX, /* anything malformed other than the CRC value */
    FRAME_ERR_CRC,    /* well-formed, but the CRC does not match */
} frame_err_t;

typedef struct {
    uint16_t seq;
    uint16_t crc; /* the frame's CRC: with seq, identifies a resent frame */
    const char *type;
    uint8_t nargs;
    const char *args[FRAME_MAX_ARGS];
} frame_t;

/* Collects bytes into lines; overlong lines are discarded whole and reported once. */
typedef struct {
    char buf[FRAME_MAX_LEN + 1u];
    uint16_t len;
    bool discarding;
} linebuf_t;

typedef enum { LINE_NONE = 0, LINE_READY, LINE_TOO_LONG } line_status_t;

void linebuf_init(linebuf_t *lb);
/* Feed one byte. On LINE_READY, lb->buf holds the NUL-terminated line (no CR/LF), lb->len its length. */
line_status_t linebuf_push(linebuf_t *lb, uint8_t byte);
/* Call after consuming a ready line. */
void linebuf_reset(linebuf_t *lb);

/* Decode a NUL-terminated line in place (spaces become NULs); fields point into line. */
frame_err_t frame_decode(char *line, size_t len, frame_t *out);

/* Encoding: frame_begin writes "SEQ TYPE", callers append " arg" pieces, frame_end adds "*CRC\n".
 * frame_end returns false if the frame overflowed the buffer or FRAME_MAX_LEN. */
void frame_begin(textbuf_t *tb, char *buf, size_t cap, uint16_t seq, const char *type);
bool frame_end(textbuf_t *tb);

const char *frame_err_name(frame_err_t err);

#endif
