/* Bounded text writer and integer parsing for protocol frames. */
#include "textbuf.h"

void tb_init(textbuf_t *tb, char *buf, size_t cap)
{
    tb->buf = buf;
    tb->cap = cap;
    tb->len = 0;
    tb->overflow = (cap == 0u);
    if (cap > 0u) {
        buf[0] = '\0';
    }
}

void tb_char(textbuf_t *tb, char c)
{
    if (tb->overflow || tb->len + 1u >= tb->cap) {
        tb->overflow = true;
        return;
    }
    tb->buf[tb->len++] = c;
    tb->buf[tb->len] = '\0';
}

void tb_str(textbuf_t *tb, const char *s)
{
    while (*s != '\0') {
        tb_char(tb, *s++);
    }
}

void tb_u64(textbuf_t *tb, uint64_t v)
{
    char digits[20];
    uint8_t n = 0;
    do {
        digits[n++] = (char)('0' + (v % 10u));
        v /= 10u;
    } while (v != 0u);
    while (n > 0u) {
        tb_char(tb, digits[--n]);
    }
}

void tb_i64(textbuf_t *tb, int64_t v)
{
    if (v < 0) {
        tb_char(tb, '-');
        tb_u64(tb, (uint64_t)(-(v + 1)) + 1u);
    } else {
        tb_u64(tb, (uint64_t)v);
    }
}

void tb_hex(textbuf_t *tb, uint32_t v, uint8_t digits)
{
    static const char HEX[] = "0123456789ABCDEF";
    for (int8_t i = (int8_t)(digits - 1u); i >= 0; i--) {
        tb_char(tb, HEX[(v >> (4 * i)) & 0xFu]);
    }
}

void tb_kv_i64(textbuf_t *tb, const char *key, int64_t v)
{
    tb_char(tb, ' ');
    tb_str(tb, key);
    tb_char(tb, '=');
    tb_i64(tb, v);
}

parse_result_t parse_i32(const char *s, int32_t min, int32_t max, int32_t *out)
{
    bool neg = false;
    int64_t v = 0;
    if (*s == '-') {
        neg = true;
        s++;
    }
    if (*s == '\0') {
        return PARSE_SYNTAX;
    }
    for (uint8_t n = 0; *s != '\0'; s++, n++) {
        if (*s < '0' || *s > '9' || n >= 10u) {
            return PARSE_SYNTAX;
        }
        v = v * 10 + (*s - '0');
    }
    if (neg) {
        v = -v;
    }
    if (v < min || v > max) {
        return PARSE_RANGE;
    }
    *out = (int32_t)v;
    return PARSE_OK;
}
