/* Zephyr entry point: serial link, watchdog and the 100 ms control tick around rig_step(). */
#include <zephyr/device.h>
#include <zephyr/drivers/uart.h>
#include <zephyr/kernel.h>
#include <zephyr/sys/ring_buffer.h>

#include "rig.h"
#include "rig_hal.h"
#include "uart_rx.h"

static const struct device *const UART = DEVICE_DT_GET(DT_CHOSEN(thermrig_serial));

RING_BUF_DECLARE(rx_ring, 512);
static K_SEM_DEFINE(wake, 0, 1);
static rig_t rig;
static rig_tx_t tx;

static uart_rx_t rx = {.ring = &rx_ring, .wake = &wake}; /* ring full: the frame fails its CRC */

static void flush_tx(void)
{
    for (size_t i = 0; i < tx.len; i++) {
        uart_poll_out(UART, tx.buf[i]);
    }
    tx.len = 0;
}

int main(void)
{
    rig_hal_safe();
    int err = rig_hal_init(&wake);
    rig_init(&rig, rig_hal_reset_cause());
    err = err ? err : rig_hal_watchdog_start();
    if (!device_is_ready(UART) || err != 0) {
        /* Without its sensors, link or watchdog the rig must not run: stay safe, let the watchdog
         * (if any) or an operator reset it. */
        for (;;) {
            rig_hal_safe();
            k_sleep(K_SECONDS(1));
        }
    }
    uart_irq_callback_user_data_set(UART, uart_rx_isr, &rx);
    uart_irq_rx_enable(UART);

    for (;;) {
        (void)k_sem_take(&wake, rig_hal_tick_timeout());
        uint8_t chunk[64];
        uint32_t n;
        while ((n = ring_buf_get(&rx_ring, chunk, sizeof chunk)) > 0u) {
            rig_rx(&rig, chunk, n, rig_hal_uptime_us(), &tx);
        }
        flush_tx();
        if (!rig_hal_tick_due()) {
            continue;
        }
        rig_samples_t samples;
        rig_outputs_t out;
        rig_hal_sample(&samples);
        rig_step(&rig, &samples, rig_hal_uptime_us(), NULL, 0u, &out, &tx);
        /* Frames before outputs: the emulated board's plant takes the outputs as "tick done". */
        flush_tx();
        rig_hal_output(&out);
        rig_hal_watchdog_feed();
    }
    return 0;
}
