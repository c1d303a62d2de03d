/* The virtual-wires codec (rig_wires.h). */
#include "rig_wires.h"

#include "rig_channels.h"

#define SHT_BYTES 6u

typedef struct {
    const char *p;
    bool ok;
} cursor_t;

/* One space, then what follows. */
static void space(cursor_t *c)
{
    if (c->ok && *c->p == ' ') {
        c->p++;
    } else {
        c->ok = false;
    }
}

static int hex_digit(char ch)
{
    if (ch >= '0' && ch <= '9') {
        return ch - '0';
    }
    if (ch >= 'A' && ch <= 'F') {
        return ch - 'A' + 10;
    }
    if (ch >= 'a' && ch <= 'f') {
        return ch - 'a' + 10;
    }
    return -1;
}

/* 1..20 decimal digits, at most max. */
static uint64_t decimal(cursor_t *c, uint64_t max)
{
    uint64_t v = 0;
    const char *start = c->p;
    while (c->ok && *c->p >= '0' && *c->p <= '9') {
        uint64_t d = (uint64_t)(*c->p - '0');
        if (d > max || v > (max - d) / 10u) {
            c->ok = false;
            return 0;
        }
        v = v * 10u + d;
        c->p++;
    }
    if (c->p == start) {
        c->ok = false;
    }
    return v;
}

/* 1..8 hex digits. */
static uint32_t hex32(cursor_t *c)
{
    uint32_t v = 0;
    unsigned n = 0;
    int d;
    while (c->ok && (d = hex_digit(*c->p)) >= 0) {
        if (++n > 8u) {
            c->ok = false;
            return 0;
        }
        v = (v << 4) | (uint32_t)d;
        c->p++;
    }
    if (n == 0u) {
        c->ok = false;
    }
    return v;
}

/* Exactly n bytes as 2n hex digits. */
static void hex_bytes(cursor_t *c, uint8_t *out, size_t n)
{
    for (size_t i = 0; c->ok && i < n; i++) {
        int hi = hex_digit(c->p[0]);
        int lo = hi < 0 ? -1 : hex_digit(c->p[1]);
        if (lo < 0) {
            c->ok = false;
            return;
        }
        out[i] = (uint8_t)((hi << 4) | lo);
        c->p += 2;
    }
}

static void parse_sample(cursor_t *c, wires_msg_t *m)
{
    m->t_us = decimal(c, UINT64_MAX);
    for (uint8_t i = 0; i < RIG_NUM_TC; i++) {
        space(c);
        m->samples.tc_word[i] = hex32(c);
    }
    space(c);
    if (c->ok && c->p[0] == '-') {
        m->samples.sht_present = false;
        c->p++;
    } else {
        hex_bytes(c, m->samples.sht_raw, SHT_BYTES);
        m->samples.sht_present = c->ok;
    }
    for (uint8_t i = 0; i < RIG_NUM_FANS; i++) {
        space(c);
        m->samples.tach_pulses[i] = (uint16_t)decimal(c, UINT16_MAX);
    }
}

static void parse_garbage(cursor_t *c, wires_msg_t *m)
{
    if (c->ok && (*c->p == 'R' || *c->p == 'H')) {
        m->toward_host = *c->p == 'H';
        c->p++;
    } else {
        c->ok = false;
    }
    space(c);
    size_t n = 0;
    while (c->ok && *c->p != '\0') {
        if (n == WIRES_GARBAGE_MAX) {
            c->ok = false;
            break;
        }
        hex_bytes(c, &m->garbage[n], 1u);
        n++;
    }
    m->garbage_len = n;
    if (n == 0u) {
        c->ok = false;
    }
}

wires_kind_t wires_parse(const char *line, wires_msg_t *msg)
{
    msg->kind = WIRES_BAD;
    msg->samples = (rig_samples_t){0};
    msg->garbage_len = 0u;
    if (line[0] == '\0' || line[1] != ' ') {
        return WIRES_BAD;
    }
    cursor_t c = {.p = line + 2, .ok = true};
    wires_kind_t kind = WIRES_BAD;
    switch (line[0]) {
    case 'S':
        kind = WIRES_SAMPLE;
        parse_sample(&c, msg);
        break;
    case 'R':
        kind = WIRES_RESET;
        msg->cause = (uint32_t)decimal(&c, UINT32_MAX);
        break;
    case 'M':
        kind = WIRES_MODE;
        msg->realtime = decimal(&c, 1u) == 1u;
        space(&c);
        msg->cause = (uint32_t)decimal(&c, UINT32_MAX);
        break;
    case 'G':
        kind = WIRES_GARBAGE;
        parse_garbage(&c, msg);
        break;
    case 'Q':
    case 'U':
    case 'T':
        kind = line[0] == 'Q' ? WIRES_SILENCE : line[0] == 'U' ? WIRES_UNPLUG : WIRES_TICK_STALL;
        msg->ms = (uint32_t)decimal(&c, UINT32_MAX);
        break;
    case 'J':
        kind = WIRES_CLOCK_JUMP;
        msg->us = (uint32_t)decimal(&c, UINT32_MAX);
        break;
    case 'K':
        kind = WIRES_CLOCK_RATE;
        msg->ppm = (uint32_t)decimal(&c, WIRES_CLOCK_PPM_MAX);
        break;
    default:
        return WIRES_BAD;
    }
    if (!c.ok || *c.p != '\0') {
        return WIRES_BAD;
    }
    msg->kind = kind;
    return kind;
}

void wires_put_outputs(textbuf_t *tb, const rig_outputs_t *out)
{
    tb_str(tb, "A ");
    tb_u64(tb, out->heater_pm);
    for (uint8_t i = 0; i < RIG_NUM_FANS; i++) {
        tb_char(tb, ' ');
        tb_u64(tb, out->fan_pm[i]);
    }
    tb_char(tb, '\n');
}

void wires_put_channels(textbuf_t *tb)
{
    tb_str(tb, "C ");
    rig_channels_put(tb);
    tb_char(tb, '\n');
}

void wires_put_boot(textbuf_t *tb)
{
    tb_str(tb, "B\n");
}

void wires_put_sample(textbuf_t *tb, uint64_t t_us, const rig_samples_t *s)
{
    tb_str(tb, "S ");
    tb_u64(tb, t_us);
    for (uint8_t i = 0; i < RIG_NUM_TC; i++) {
        tb_char(tb, ' ');
        tb_hex(tb, s->tc_word[i], 8u);
    }
    tb_char(tb, ' ');
    if (s->sht_present) {
        for (size_t i = 0; i < SHT_BYTES; i++) {
            tb_hex(tb, s->sht_raw[i], 2u);
        }
    } else {
        tb_char(tb, '-');
    }
    for (uint8_t i = 0; i < RIG_NUM_FANS; i++) {
        tb_char(tb, ' ');
        tb_u64(tb, s->tach_pulses[i]);
    }
    tb_char(tb, '\n');
}
