/* libFuzzer target: any line into the virtual-wires parser (firmware/core/rig_wires.c), as a firmware on
 * the plant receives it. Checks that nothing is read or written out of bounds, that a refused line says
 * so, and that every sample it accepts is written back and parsed again to the same values. */
#include <stdint.h>
#include <string.h>

#include "rig_wires.h"

static void require(int ok)
{
    if (!ok) {
        __builtin_trap();
    }
}

static void check_round_trip(const wires_msg_t *m)
{
    static char line[WIRES_LINE_MAX];
    static wires_msg_t again;
    textbuf_t tb;
    tb_init(&tb, line, sizeof line);
    wires_put_sample(&tb, m->t_us, &m->samples);
    require(!tb.overflow && tb.len > 0u && line[tb.len - 1u] == '\n');
    line[tb.len - 1u] = '\0';
    require(wires_parse(line, &again) == WIRES_SAMPLE);
    require(again.t_us == m->t_us);
    for (uint8_t i = 0; i < RIG_NUM_TC; i++) {
        require(again.samples.tc_word[i] == m->samples.tc_word[i]);
    }
    require(again.samples.sht_present == m->samples.sht_present);
    require(!m->samples.sht_present || memcmp(again.samples.sht_raw, m->samples.sht_raw, 6u) == 0);
    for (uint8_t i = 0; i < RIG_NUM_FANS; i++) {
        require(again.samples.tach_pulses[i] == m->samples.tach_pulses[i]);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char line[2u * WIRES_GARBAGE_MAX + 16u];
    static wires_msg_t m;
    if (size >= sizeof line) {
        return 0;
    }
    memcpy(line, data, size);
    line[size] = '\0';
    wires_kind_t kind = wires_parse(line, &m);
    require(kind == m.kind);
    switch (kind) {
    case WIRES_SAMPLE:
        check_round_trip(&m);
        break;
    case WIRES_GARBAGE:
        require(m.garbage_len > 0u && m.garbage_len <= WIRES_GARBAGE_MAX);
        require(2u * m.garbage_len + 4u == strlen(line));
        break;
    case WIRES_MODE:
    case WIRES_RESET:
    case WIRES_SILENCE:
    case WIRES_UNPLUG:
    case WIRES_CLOCK_JUMP:
    case WIRES_CLOCK_RATE:
    case WIRES_TICK_STALL:
    case WIRES_BAD:
        break;
    }
    return 0;
}
