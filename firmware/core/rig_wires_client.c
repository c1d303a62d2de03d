/* A firmware's end of the virtual wires: lines assembled, the plant's mode, sample and time. */
#include "rig_wires_client.h"

const char *wires_client_byte(wires_client_t *c, char byte)
{
    if (byte == '\n') {
        bool whole = !c->line_long;
        c->line[c->line_len] = '\0';
        c->line_len = 0;
        c->line_long = false;
        return whole ? c->line : NULL;
    }
    if (c->line_len < WIRES_LINE_MAX - 1u) {
        c->line[c->line_len++] = byte;
    } else {
        c->line_long = true;
    }
    return NULL;
}

wires_kind_t wires_client_line(wires_client_t *c, const char *line)
{
    wires_kind_t kind = wires_parse(line, &c->msg);
    switch (kind) {
    case WIRES_MODE:
        c->realtime = c->msg.realtime;
        c->boot_cause = c->msg.cause;
        c->configured = true;
        break;
    case WIRES_SAMPLE:
        c->sample = c->msg.samples;
        c->plant_us = c->msg.t_us;
        if (!c->have_base) {
            c->base_us = c->plant_us;
            c->have_base = true;
        }
        c->requested = false;
        c->sample_ready = true;
        break;
    default:
        break;
    }
    return kind;
}

uint64_t wires_client_uptime_us(const wires_client_t *c, uint64_t clock_us)
{
    if (c->realtime) {
        return clock_us;
    }
    return c->have_base ? c->plant_us - c->base_us : 0u;
}
