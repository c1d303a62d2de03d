/* Zephyr HAL for the emulated board (qemu_cortex_m3): sensors and actuators are the plant model's, over
 * the virtual wires on a second UART (docs/plant.md). At boot the firmware asks the plant how time runs
 * ("B" -> "M <realtime> <cause>"); then each tick it sends "A <heater> <fan0> <fan1>" and steps on the
 * "S ..." sample that answers it. "R <cause>" answering a request reboots the MCU for real. */
#include <zephyr/device.h>
#include <zephyr/drivers/uart.h>
#include <zephyr/sys/reboot.h>
#include <zephyr/sys/ring_buffer.h>

#include "rig_hal.h"
#include "rig_wires.h"

static const struct device *const WIRES = DEVICE_DT_GET(DT_CHOSEN(thermrig_wires));

RING_BUF_DECLARE(wires_ring, 256);
static struct k_sem *wake_main;
static char line[WIRES_LINE_MAX];
static size_t line_len;
static bool line_long; /* longer than any message this board takes: dropped whole */
static wires_msg_t msg;

static bool configured;
static bool realtime;   /* the firmware's clock paces the ticks; otherwise the plant does */
static uint32_t boot_cause;
static bool requested;  /* an "A" is waiting for its sample */
static bool sample_ready;
static rig_samples_t sample;
static rig_outputs_t outputs; /* main() puts the safe outputs here first (rig_hal_safe) */
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

static void send_request(void)
{
    char buf[WIRES_LINE_MAX];
    textbuf_t tb;
    tb_init(&tb, buf, sizeof buf);
    wires_put_outputs(&tb, &outputs);
    send_line(buf);
    requested = true;
}

static void handle_line(const char *s)
{
    switch (wires_parse(s, &msg)) {
    case WIRES_MODE:
        realtime = msg.realtime;
        boot_cause = msg.cause;
        configured = true;
        break;
    case WIRES_RESET:
        sys_reboot(SYS_REBOOT_COLD); /* the plant tells the new boot its cause ("M") */
        break;
    case WIRES_SAMPLE:
        sample = msg.samples;
        plant_us = msg.t_us;
        if (!have_base) {
            base_us = plant_us;
            have_base = true;
        }
        requested = false;
        sample_ready = true;
        break;
    default:
        break; /* serial faults are the bridge's (docs/plant.md); nothing else is for this board */
    }
}

static void pump_lines(void)
{
    uint8_t byte;
    while (ring_buf_get(&wires_ring, &byte, 1) == 1u) {
        if (byte == '\n') {
            line[line_len] = '\0';
            if (!line_long) {
                handle_line(line);
            }
            line_len = 0;
            line_long = false;
        } else if (line_len < WIRES_LINE_MAX - 1u) {
            line[line_len++] = (char)byte;
        } else {
            line_long = true;
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
    char boot[4];
    textbuf_t tb;
    tb_init(&tb, boot, sizeof boot);
    wires_put_boot(&tb);
    send_line(boot);
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
    outputs = rig_safe_outputs();
}

/* The emulated board has no watchdog Zephyr drives; docs/firmware.md says what stands in. */
int rig_hal_watchdog_start(void)
{
    return 0;
}

void rig_hal_watchdog_feed(void)
{
}
