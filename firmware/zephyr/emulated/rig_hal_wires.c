/* Zephyr HAL for the emulated board (qemu_cortex_m3): sensors and actuators are the plant model's, over
 * the virtual wires on a second UART (docs/plant.md). At boot the firmware asks the plant how time runs
 * ("B" -> "M <realtime> <cause>"); then each tick it sends "A <heater> <fan0> <fan1>" and steps on the
 * "S ..." sample that answers it. "R <cause>" answering a request reboots the MCU for real. */
#include <zephyr/device.h>
#include <zephyr/drivers/uart.h>
#include <zephyr/sys/reboot.h>
#include <zephyr/sys/ring_buffer.h>

#include "rig_hal.h"

#define WIRES_LINE_MAX 128u

static const struct device *const WIRES = DEVICE_DT_GET(DT_CHOSEN(thermrig_wires));

RING_BUF_DECLARE(wires_ring, 256);
static struct k_sem *wake_main;
static char line[WIRES_LINE_MAX];
static size_t line_len;

static bool configured;
static bool realtime;   /* the firmware's clock paces the ticks; otherwise the plant does */
static uint32_t boot_cause;
static bool requested;  /* an "A" is waiting for its sample */
static bool sample_ready;
static rig_samples_t sample;
static rig_outputs_t outputs = {.heater_pm = 0u, .fan_pm = {1000u, 1000u}};
static int64_t next_tick_ms;
static bool have_base;
static uint64_t base_us;  /* plant time of the first sample since boot: paced uptime starts there */
static uint64_t plant_us;

static void wires_isr(const struct device *dev, void *user_data)
{
    ARG_UNUSED(user_data);
    while (uart_irq_update(dev) && uart_irq_rx_ready(dev)) {
        uint8_t byte;
        while (uart_fifo_read(dev, &byte, 1) == 1) {
            (void)ring_buf_put(&wires_ring, &byte, 1);
        }
    }
    k_sem_give(wake_main);
}

static void send_line(const char *s)
{
    for (; *s != '\0'; s++) {
        uart_poll_out(WIRES, (unsigned char)*s);
    }
}

/* Parsing without a libc scanf: unsigned numbers in base 10 or 16, separated by single spaces. */
static bool next_number(const char **p, unsigned base, uint64_t *value)
{
    const char *s = *p;
    uint64_t v = 0;
    if (*s == ' ') {
        s++;
    }
    const char *start = s;
    for (;; s++) {
        unsigned d;
        if (*s >= '0' && *s <= '9') {
            d = (unsigned)(*s - '0');
        } else if (base == 16u && *s >= 'A' && *s <= 'F') {
            d = (unsigned)(*s - 'A' + 10);
        } else {
            break;
        }
        v = v * base + d;
    }
    *p = s;
    *value = v;
    return s != start;
}

/* "S t_us tc0 tc1 tc2 tc3 sht tach0 tach1": the SHT3x's 6 bytes as 12 hex digits or "-". */
static bool parse_sample(const char *s, rig_samples_t *out, uint64_t *t_us)
{
    uint64_t v;
    if (!next_number(&s, 10u, t_us)) {
        return false;
    }
    for (uint8_t i = 0; i < RIG_NUM_TC; i++) {
        if (!next_number(&s, 16u, &v)) {
            return false;
        }
        out->tc_word[i] = (uint32_t)v;
    }
    if (s[0] == ' ' && s[1] == '-') {
        out->sht_present = false;
        s += 2;
    } else {
        const char *start = s + 1;
        if (!next_number(&s, 16u, &v) || s - start != 12) {
            return false;
        }
        for (uint8_t i = 0; i < 6u; i++) { /* 12 hex digits exceed 32 bits but fit in 48 */
            out->sht_raw[i] = (uint8_t)(v >> (40u - 8u * i));
        }
        out->sht_present = true;
    }
    for (uint8_t i = 0; i < RIG_NUM_FANS; i++) {
        if (!next_number(&s, 10u, &v)) {
            return false;
        }
        out->tach_pulses[i] = (uint16_t)v;
    }
    return *s == '\0';
}

static void send_request(void)
{
    char buf[32];
    snprintk(buf, sizeof buf, "A %u %u %u\n", outputs.heater_pm, outputs.fan_pm[0], outputs.fan_pm[1]);
    send_line(buf);
    requested = true;
}

static void handle_line(const char *s)
{
    uint64_t a;
    uint64_t b;
    const char *p = s + 1;
    if (s[0] == 'M' && next_number(&p, 10u, &a) && next_number(&p, 10u, &b)) {
        realtime = a != 0u;
        boot_cause = (uint32_t)b;
        configured = true;
    } else if (s[0] == 'R') {
        sys_reboot(SYS_REBOOT_COLD); /* the plant tells the new boot its cause ("M") */
    } else if (s[0] == 'S' && parse_sample(s + 1, &sample, &plant_us)) {
        if (!have_base) {
            base_us = plant_us;
            have_base = true;
        }
        requested = false;
        sample_ready = true;
    }
}

static void pump_lines(void)
{
    uint8_t byte;
    while (ring_buf_get(&wires_ring, &byte, 1) == 1u) {
        if (byte == '\n') {
            line[line_len] = '\0';
            handle_line(line);
            line_len = 0;
        } else if (line_len < WIRES_LINE_MAX - 1u) {
            line[line_len++] = (char)byte;
        }
    }
}

int rig_hal_init(struct k_sem *wake)
{
    wake_main = wake;
    if (!device_is_ready(WIRES)) {
        return -ENODEV;
    }
    uart_irq_callback_user_data_set(WIRES, wires_isr, NULL);
    uart_irq_rx_enable(WIRES);
    send_line("B\n");
    while (!configured) {
        (void)k_sem_take(wake, K_FOREVER);
        pump_lines();
    }
    if (!realtime) {
        send_request();
    }
    return 0;
}

uint32_t rig_hal_reset_cause(void)
{
    return boot_cause;
}

uint64_t rig_hal_uptime_us(void)
{
    if (realtime) {
        return k_ticks_to_us_floor64(k_uptime_ticks());
    }
    return have_base ? plant_us - base_us : 0u;
}

k_timeout_t rig_hal_tick_timeout(void)
{
    return realtime && !requested ? K_TIMEOUT_ABS_MS(next_tick_ms) : K_FOREVER;
}

bool rig_hal_tick_due(void)
{
    pump_lines();
    if (realtime && !requested && k_uptime_get() >= next_tick_ms) {
        next_tick_ms = (next_tick_ms == 0 ? k_uptime_get() : next_tick_ms) + RIG_TICK_MS;
        send_request();
    }
    bool due = sample_ready;
    sample_ready = false;
    return due;
}

void rig_hal_sample(rig_samples_t *samples)
{
    *samples = sample;
}

void rig_hal_output(const rig_outputs_t *out)
{
    outputs = *out;
    if (!realtime) {
        send_request(); /* paced: the next sample is the plant's next tick */
    }
}

void rig_hal_safe(void)
{
    outputs = (rig_outputs_t){.heater_pm = 0u, .fan_pm = {1000u, 1000u}};
}

/* The emulated board has no watchdog Zephyr drives; docs/firmware.md says what stands in. */
int rig_hal_watchdog_start(void)
{
    return 0;
}

void rig_hal_watchdog_feed(void)
{
}
