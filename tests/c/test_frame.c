/* Frame codec against the shared vectors (tests/vectors/frames.tsv) and line-assembler edge cases. */
#include <stdlib.h>

#include "check.h"
#include "crc16.h"
#include "frame.h"

static size_t unescape(const char *in, char *out)
{
    size_t n = 0;
    while (*in != '\0') {
        if (in[0] == '\\' && in[1] != '\0') {
            char c = in[1];
            in += 2;
            if (c == 'n') {
                out[n++] = '\n';
            } else if (c == 'r') {
                out[n++] = '\r';
            } else if (c == 't') {
                out[n++] = '\t';
            } else if (c == 'x') {
                char hex[3] = {in[0], in[1], '\0'};
                out[n++] = (char)strtoul(hex, NULL, 16);
                in += 2;
            } else {
                out[n++] = c;
            }
        } else {
            out[n++] = *in++;
        }
    }
    out[n] = '\0';
    return n;
}

/* "OK seq type args..." or "ERR class" for one decoded line. */
static void describe(char *line, size_t len, char *out, size_t cap)
{
    frame_t f;
    frame_err_t err = frame_decode(line, len, &f);
    textbuf_t tb;
    tb_init(&tb, out, cap);
    if (err != FRAME_OK) {
        tb_str(&tb, "ERR ");
        tb_str(&tb, frame_err_name(err));
        return;
    }
    tb_str(&tb, "OK ");
    tb_u64(&tb, f.seq);
    tb_char(&tb, ' ');
    tb_str(&tb, f.type);
    for (uint8_t i = 0; i < f.nargs; i++) {
        tb_char(&tb, ' ');
        tb_str(&tb, f.args[i]);
    }
}

static void run_stream(const char *data, size_t len, char *out, size_t cap)
{
    linebuf_t lb;
    textbuf_t tb;
    char one[512];
    linebuf_init(&lb);
    tb_init(&tb, out, cap);
    for (size_t i = 0; i < len; i++) {
        line_status_t st = linebuf_push(&lb, (uint8_t)data[i]);
        if (st == LINE_NONE || (st == LINE_READY && lb.len == 0u)) {
            if (st != LINE_NONE) {
                linebuf_reset(&lb);
            }
            continue;
        }
        if (tb.len > 0u) {
            tb_char(&tb, '|');
        }
        if (st == LINE_TOO_LONG) {
            tb_str(&tb, "ERR LONG");
        } else {
            describe(lb.buf, lb.len, one, sizeof one);
            tb_str(&tb, one);
        }
        linebuf_reset(&lb);
    }
    if (tb.len == 0u) {
        tb_str(&tb, "-");
    }
}

static int run_vectors(const char *path)
{
    static char line[4096], input[2048], expect[2048], got[2048];
    FILE *fp = fopen(path, "r");
    int rows = 0;
    if (fp == NULL) {
        perror(path);
        return 0;
    }
    while (fgets(line, sizeof line, fp) != NULL) {
        if (line[0] == '#' || line[0] == '\n') {
            continue;
        }
        line[strcspn(line, "\n")] = '\0';
        char *op = line;
        char *in = strchr(op, '\t');
        char *ex = in ? strchr(in + 1, '\t') : NULL;
        CHECK(ex != NULL);
        if (ex == NULL) {
            continue;
        }
        *in++ = '\0';
        *ex++ = '\0';
        size_t ilen = unescape(in, input);
        unescape(ex, expect);
        if (strcmp(op, "crc") == 0) {
            textbuf_t tb;
            tb_init(&tb, got, sizeof got);
            tb_hex(&tb, crc16_ccitt_false((const uint8_t *)input, ilen), 4u);
        } else if (strcmp(op, "encode") == 0) {
            /* input: "SEQ TYPE rest" -> frame_begin(seq, type) + " rest" */
            char *sp1 = strchr(input, ' ');
            char *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
            textbuf_t tb;
            *sp1 = '\0';
            if (sp2 != NULL) {
                *sp2 = '\0';
            }
            frame_begin(&tb, got, sizeof got, (uint16_t)atoi(input), sp1 + 1);
            if (sp2 != NULL) {
                tb_char(&tb, ' ');
                tb_str(&tb, sp2 + 1);
            }
            CHECK(frame_end(&tb));
        } else if (strcmp(op, "decode") == 0) {
            describe(input, ilen, got, sizeof got);
        } else if (strcmp(op, "stream") == 0) {
            run_stream(input, ilen, got, sizeof got);
        } else {
            CHECK(!"unknown vector op");
            continue;
        }
        if (strcmp(got, expect) != 0) {
            fprintf(stderr, "vector %s \"%s\": got \"%s\", expected \"%s\"\n", op, in, got, expect);
        }
        CHECK(strcmp(got, expect) == 0);
        rows++;
    }
    fclose(fp);
    return rows;
}

static void test_encode_limits(void)
{
    char buf[400];
    textbuf_t tb;
    frame_begin(&tb, buf, sizeof buf, 1, "SET");
    for (int i = 0; i < 60; i++) {
        tb_str(&tb, " abcd");
    }
    CHECK(!frame_end(&tb)); /* over FRAME_MAX_LEN: refused, never sent truncated */
    char small[8];
    frame_begin(&tb, small, sizeof small, 65535, "PING");
    CHECK(!frame_end(&tb));
}

static void test_textbuf(void)
{
    char buf[32];
    textbuf_t tb;
    tb_init(&tb, buf, sizeof buf);
    tb_i64(&tb, INT64_MIN);
    CHECK_STR(buf, "-9223372036854775808");
    int32_t v = 0;
    CHECK_INT(parse_i32("-2147483648", INT32_MIN, INT32_MAX, &v), PARSE_OK);
    CHECK_INT(v, INT32_MIN);
    CHECK_INT(parse_i32("12345678901", INT32_MIN, INT32_MAX, &v), PARSE_SYNTAX);
    CHECK_INT(parse_i32("-", 0, 1, &v), PARSE_SYNTAX);
    CHECK_INT(parse_i32("1a", 0, 10, &v), PARSE_SYNTAX);
    CHECK_INT(parse_i32("11", 0, 10, &v), PARSE_RANGE);
    tb_init(&tb, buf, 0);
    CHECK(tb.overflow);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s frames.tsv\n", argv[0]);
        return 2;
    }
    int rows = run_vectors(argv[1]);
    printf("vectors: %d rows\n", rows);
    CHECK(rows >= 40);
    test_encode_limits();
    test_textbuf();
    return check_report("test_frame");
}
