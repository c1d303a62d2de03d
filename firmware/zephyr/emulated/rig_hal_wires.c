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
#include "rig_wires_client.h"
#include "uart_rx.h"

static const struct device *const WIRES = DEVICE_DT_GET(DT_CHOSEN(thermrig_wires));

RING_BUF_DECLARE(wires_ring, 256);
static uart_rx_t wires_rx = {.ring = &wires_ring}; /* .wake: main()'s, given at init */
static wires_client_t plant;
static rig_outputs_t outputs; /* main() puts the safe outputs here first (rig_hal_safe) */
static int64_t next_tick_ms;

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
    plant.requested = true;
}

static void pump_lines(void)
{
    uint8_t byte;
    while (ring_buf_get(&wires_ring, &byte, 1) == 1u) {
        const char *line = wires_client_byte(&plant, (char)byte);
        /* serial faults are the bridge's (docs/plant.md); nothing else is for this board */
        if (line != NULL && wires_client_line(&plant, line) == WIRES_RESET) {
            sys_reboot(SYS_REBOOT_COLD); /* the plant tells the new boot its cause ("M") */
        }
    }
}

int rig_hal_init(struct k_sem *wake)
{
    wires_rx.wake = wake;
    if (!device_is_ready(WIRES)) {
        return -ENODEV;
    }
    uart_irq_callback_user_data_set(WIRES, uart_rx_isr, &wires_rx);
    uart_irq_rx_enable(WIRES);
    char boot[4];
    textbuf_t tb;
    tb_init(&tb, boot, sizeof boot);
    wires_put_boot(&tb);
    send_line(boot);
    while (!plant.configured) {
        (void)k_sem_take(wake, K_FOREVER);
        pump_lines();
    }
    if (!plant.realtime) {
        send_request();
    }
    return 0;
}

uint32_t rig_hal_reset_cause(void)
{
    return plant.boot_cause;
}

uint64_t rig_hal_uptime_us(void)
{
    return wires_client_uptime_us(&plant, k_ticks_to_us_floor64(k_uptime_ticks()));
}

k_timeout_t rig_hal_tick_timeout(void)
{
    return plant.realtime && !plant.requested ? K_TIMEOUT_ABS_MS(next_tick_ms) : K_FOREVER;
}

bool rig_hal_tick_due(void)
{
    pump_lines();
    if (plant.realtime && !plant.requested && k_uptime_get() >= next_tick_ms) {
        next_tick_ms = (next_tick_ms == 0 ? k_uptime_get() : next_tick_ms) + RIG_TICK_MS;
        send_request();
    }
    bool due = plant.sample_ready;
    plant.sample_ready = false;
    return due;
}

void rig_hal_sample(rig_samples_t *samples)
{
    *samples = plant.sample;
}

void rig_hal_output(const rig_outputs_t *out)
{
    outputs = *out;
    if (!plant.realtime) {
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
