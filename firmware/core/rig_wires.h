/* The virtual wires (docs/plant.md): the text lines a simulated rig's firmware exchanges with the plant
 * model each control tick. One codec for every firmware that runs on the plant: rigsim (POSIX) and the
 * emulated Zephyr board. No heap, no scanf or printf. */
#ifndef RIG_WIRES_H
#define RIG_WIRES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rig.h"
#include "textbuf.h"

/* The longest line a firmware needs to buffer for the messages it parses ("S" with six thermocouples
 * is about 110 characters); "G" lines carry up to WIRES_GARBAGE_MAX bytes as hex. */
#define WIRES_LINE_MAX 160u
#define WIRES_GARBAGE_MAX 512u
/* The most a "K" line may speed the MCU's clock up: 10 %, far past any oscillator. */
#define WIRES_CLOCK_PPM_MAX 100000u

/* Plant -> firmware messages. */
typedef enum {
    WIRES_BAD = 0,  /* not a message this codec knows, or malformed */
    WIRES_SAMPLE,   /* "S t_us tc0..tcN-1 sht tach0 tach1": the raw sensors at plant time t_us */
    WIRES_RESET,    /* "R cause": reset the MCU with that cause */
    WIRES_MODE,     /* "M realtime cause": the answer to "B" */
    WIRES_GARBAGE,  /* "G R|H hex": garbage bytes into the rig's receiver (R) or toward the host (H) */
    WIRES_SILENCE,  /* "Q ms": the serial line dead both ways for ms of plant time */
    WIRES_UNPLUG,   /* "U ms": the serial port gone, back as a new device after ms */
    WIRES_CLOCK_JUMP, /* "J us": the MCU's uptime jumps forward by us (a faulty clock) */
    WIRES_CLOCK_RATE, /* "K ppm": the MCU's clock runs fast by ppm beyond its crystal from now on (0: as its crystal) */
    WIRES_TICK_STALL, /* "T ms": the MCU's control loop stalls for ms: the ticks due in that time are missed */
} wires_kind_t;

typedef struct {
    wires_kind_t kind;
    uint64_t t_us;          /* SAMPLE */
    rig_samples_t samples;  /* SAMPLE */
    uint32_t cause;         /* RESET, MODE */
    bool realtime;          /* MODE */
    uint32_t ms;            /* SILENCE, UNPLUG, TICK_STALL */
    uint32_t us;            /* CLOCK_JUMP */
    uint32_t ppm;           /* CLOCK_RATE */
    bool toward_host;       /* GARBAGE */
    uint8_t garbage[WIRES_GARBAGE_MAX];
    size_t garbage_len;
} wires_msg_t;

/* Parse one NUL-terminated line without its newline. Every field is checked (single spaces, digits,
 * ranges, the thermocouple count of this build); anything else is WIRES_BAD. */
wires_kind_t wires_parse(const char *line, wires_msg_t *msg);

/* Firmware -> plant lines, newline included; tb->overflow says one did not fit. */
/* "A heater fan0 fan1": the outputs (permille) from now on, and the request for the next sample. */
void wires_put_outputs(textbuf_t *tb, const rig_outputs_t *out);
/* "C key:name,...": the channel table, so the plant wires one sensor per channel where its name says. */
void wires_put_channels(textbuf_t *tb);
/* "B": a firmware that reboots for real has booted and asks how to run ("M"). */
void wires_put_boot(textbuf_t *tb);
/* "S ...": a sample as the plant sends it (for tests, and the codec's round trip). */
void wires_put_sample(textbuf_t *tb, uint64_t t_us, const rig_samples_t *s);

#endif
