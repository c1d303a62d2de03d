/* A firmware's end of the virtual wires (docs/plant.md) on a board that reboots for real: the plant's
 * lines assembled as their bytes come, its answer to "B" (how time runs, the boot cause), the latest
 * sample and the plant time since the first one of this boot. The emulated Zephyr boards keep one each:
 * qemu_cortex_m3 over a UART, native_sim over a socket. No heap. */
#ifndef RIG_WIRES_CLIENT_H
#define RIG_WIRES_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rig.h"
#include "rig_wires.h"

typedef struct {
    char line[WIRES_LINE_MAX];
    size_t line_len;
    bool line_long;      /* longer than any message a board takes: dropped whole */
    wires_msg_t msg;
    bool configured;     /* the "M" answering "B" has come */
    bool realtime;       /* the firmware's clock paces the ticks; otherwise the plant does */
    uint32_t boot_cause;
    bool requested;      /* an "A" is waiting for its sample (set by the board when it sends one) */
    bool sample_ready;   /* a sample came that the board has not stepped on yet */
    rig_samples_t sample;
    bool have_base;
    uint64_t base_us;    /* plant time of the first sample since boot: paced uptime starts there */
    uint64_t plant_us;
} wires_client_t;

/* One byte from the plant: the line it ends (NUL-terminated, without its newline), or NULL when it ends
 * none or the line was too long. The line stays valid until the next byte. */
const char *wires_client_byte(wires_client_t *c, char byte);

/* Take one line from the plant: "M" and "S" update c; returns the line's kind (WIRES_RESET: the board
 * reboots with the cause the plant tells the new boot; the rest are not a board's). */
wires_kind_t wires_client_line(wires_client_t *c, const char *line);

/* The MCU's uptime: clock_us (the board's own clock) in real time; paced, the plant's time since the
 * first sample of this boot, 0 before it. */
uint64_t wires_client_uptime_us(const wires_client_t *c, uint64_t clock_us);

#endif
