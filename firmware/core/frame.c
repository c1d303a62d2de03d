/* Protocol frames: line assembly, strict decoding, and encoding with CRC-16/CCITT-FALSE. */
#include "frame.h"

#include "crc16.h"

void linebuf_init(linebuf_t *lb)
{
    lb->len = 0;
    lb->discarding = false;
    lb->buf[0] = '\0';
}

void linebuf_reset(linebuf_t *lb)
{
    linebuf_init(lb);
}

line_status_t linebuf_push(linebuf_t *lb, uint8_t byte)
{
    if (byte == (uint8_t)'\n') {
        if (lb->discarding) {
            linebuf_reset(lb);
            return LINE_TOO_LONG;
        }
        if (lb->len > 0u && lb->buf[lb->len - 1u] == '\r') {
            lb->len--;
        }
        lb->buf[lb->len] = '\0';
        return LINE_READY;
    }
    if (lb->discarding) {
        return LINE_NONE;
    }
    /* One spare byte is kept for a CR that precedes the LF. */
    if (lb->len >= FRAME_MAX_LEN + (byte == (uint8_t)'\r' ? 1u : 0u)) {
        lb->discarding = true;
        return LINE_NONE;
    }
    lb->buf[lb->len++] = (char)byte;
    return LINE_NONE;
}

static int8_t hex_value(char c)
{
    if (c >= '0' && c <= '9') {
        return (int8_t)(c - '0');
    }
    if (c >= 'A' && c <= 'F') {
        return (int8_t)(c - 'A' + 10);
    }
    return -1;
}

static bool is_upper_word(const char *s)
{
    size_t n = 0;
    for (; s[n] != '\0'; n++) {
        if (s[n] < 'A' || s[n] > 'Z') {
            return false;
        }
    }
    return n > 0u && n <= FRAME_MAX_TYPE_LEN;
}

static bool parse_seq(const char *s, uint16_t *out)
{
    int32_t v;
    if (s[0] == '0' && s[1] != '\0') {
        return false; /* no leading zeros: one spelling per number */
    }
    if (s[0] == '-' || parse_i32(s, 0, 65535, &v) != PARSE_OK) {
        return false;
    }
    *out = (uint16_t)v;
    return true;
}

frame_err_t frame_decode(char *line, size_t len, frame_t *out)
{
    if (len > FRAME_MAX_LEN) {
        return FRAME_ERR_LONG;
    }
    if (len < 8u || line[len - 5u] != '*') { /* shortest frame: "0 A*HHHH" */
        return FRAME_ERR_SYNTAX;
    }
    uint16_t want = 0;
    for (size_t i = len - 4u; i < len; i++) {
        int8_t h = hex_value(line[i]);
        if (h < 0) {
            return FRAME_ERR_SYNTAX;
        }
        want = (uint16_t)((want << 4) | (uint16_t)h);
    }
    size_t plen = len - 5u;
    for (size_t i = 0; i < plen; i++) {
        if (line[i] < 0x20 || line[i] > 0x7E || line[i] == '*') {
            return FRAME_ERR_SYNTAX;
        }
    }
    if (crc16_ccitt_false((const uint8_t *)line, plen) != want) {
        return FRAME_ERR_CRC;
    }
    line[plen] = '\0';

    /* Split on single spaces; empty tokens (leading, trailing, double spaces) are malformed. */
    const char *tokens[FRAME_MAX_ARGS + 2u];
    uint8_t ntok = 0;
    char *start = line;
    for (size_t i = 0; i <= plen; i++) {
        if (line[i] == ' ' || line[i] == '\0') {
            if (&line[i] == start || ntok >= FRAME_MAX_ARGS + 2u) {
                return FRAME_ERR_SYNTAX;
            }
            line[i] = '\0';
            tokens[ntok++] = start;
            start = &line[i + 1u];
        }
    }
    if (ntok < 2u || !parse_seq(tokens[0], &out->seq) || !is_upper_word(tokens[1])) {
        return FRAME_ERR_SYNTAX;
    }
    out->crc = want;
    out->type = tokens[1];
    out->nargs = (uint8_t)(ntok - 2u);
    for (uint8_t i = 0; i < out->nargs; i++) {
        out->args[i] = tokens[i + 2u];
    }
    return FRAME_OK;
}

void frame_begin(textbuf_t *tb, char *buf, size_t cap, uint16_t seq, const char *type)
{
    tb_init(tb, buf, cap);
    tb_u64(tb, seq);
    tb_char(tb, ' ');
    tb_str(tb, type);
}

bool frame_end(textbuf_t *tb)
{
    uint16_t crc = crc16_ccitt_false((const uint8_t *)tb->buf, tb->len);
    tb_char(tb, '*');
    tb_hex(tb, crc, 4u);
    if (tb->overflow || tb->len > FRAME_MAX_LEN) {
        return false;
    }
    tb_char(tb, '\n');
    return !tb->overflow;
}

const char *frame_err_name(frame_err_t err)
{
    switch (err) {
    case FRAME_ERR_LONG:
        return "LONG";
    case FRAME_ERR_CRC:
        return "CRC";
    case FRAME_ERR_SYNTAX:
        return "SYNTAX";
    default:
        return "OK";
    }
}
