/* Bounded text writer and integer parsing for protocol frames, without printf or heap. */
#ifndef TEXTBUF_H
#define TEXTBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    char *buf;
    size_t cap;      /* bytes available, including room for a terminating NUL */
    size_t len;
    bool overflow;   /* set once anything did not fit; the content is then unusable */
} textbuf_t;

void tb_init(textbuf_t *tb, char *buf, size_t cap);
void tb_char(textbuf_t *tb, char c);
void tb_str(textbuf_t *tb, const char *s);
void tb_i64(textbuf_t *tb, int64_t v);
void tb_u64(textbuf_t *tb, uint64_t v);
void tb_hex(textbuf_t *tb, uint32_t v, uint8_t digits);
/* " key=value" */
void tb_kv_i64(textbuf_t *tb, const char *key, int64_t v);

typedef enum { PARSE_OK = 0, PARSE_SYNTAX, PARSE_RANGE } parse_result_t;

/* Parse a whole string as a signed decimal (at most 10 digits) within [min, max]. */
parse_result_t parse_i32(const char *s, int32_t min, int32_t max, int32_t *out);

#endif
