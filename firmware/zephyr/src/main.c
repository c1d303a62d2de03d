/* Zephyr entry point: watchdog, serial link and the 100 ms control tick around rig_step(). */
#include <zephyr/device.h>
#include <zephyr/drivers/hwinfo.h>
#include <zephyr/drivers/uart.h>
#include <zephyr/drivers/watchdog.h>
#include <zephyr/kernel.h>
#include <zephyr/sys/ring_buffer.h>

#include "rig.h"
#include "rig_hal.h"

#define WDT_TIMEOUT_MS 500u /* five ticks: a stuck loop resets into the safe state */

static const struct device *const UART = DEVICE_DT_GET(DT_CHOSEN(thermrig_serial));
static const struct device *const WDT = DEVICE_DT_GET(DT_ALIAS(watchdog0));

RING_BUF_DECLARE(rx_ring, 512);
static K_SEM_DEFINE(wake, 0, 1);
static rig_t rig;
static rig_tx_t tx;

static void uart_isr(const struct device *dev, void *user_data)
{
    ARG_UNUSED(user_data);
    while (uart_irq_update(dev) && uart_irq_rx_ready(dev)) {
        uint8_t byte;
        while (uart_fifo_read(dev, &byte, 1) == 1) {
            (void)ring_buf_put(&rx_ring, &byte, 1); /* full: dropped, the frame fails its CRC */
        }
    }
    k_sem_give(&wake);
}

static uint64_t uptime_us(void)
{
    return k_ticks_to_us_floor64(k_uptime_ticks());
}

static void flush_tx(void)
{
    for (size_t i = 0; i < tx.len; i++) {
        uart_poll_out(UART, tx.buf[i]);
    }
    tx.len = 0;
}

static uint32_t boot_cause(void)
{
    uint32_t cause = 0;
    if (hwinfo_get_reset_cause(&cause) == 0) {
        (void)hwinfo_clear_reset_cause();
    }
    return (cause & RESET_WATCHDOG) ? FAULT_WATCHDOG : 0u;
}

static int watchdog_start(void)
{
    const struct wdt_timeout_cfg cfg = {
        .window = {.min = 0, .max = WDT_TIMEOUT_MS},
        .flags = WDT_FLAG_RESET_SOC,
    };
    if (!device_is_ready(WDT)) {
        return -ENODEV;
    }
    int channel = wdt_install_timeout(WDT, &cfg);
    if (channel < 0) {
        return channel;
    }
    int err = wdt_setup(WDT, WDT_OPT_PAUSE_HALTED_BY_DBG);
    return err ? err : channel;
}

int main(void)
{
    rig_hal_safe();
    rig_init(&rig, boot_cause());
    int wdt_channel = watchdog_start();
    if (!device_is_ready(UART) || rig_hal_init() != 0 || wdt_channel < 0) {
        /* Without its sensors, link or watchdog the rig must not run: stay safe, let the watchdog
         * (if any) or an operator reset it. */
        for (;;) {
            rig_hal_safe();
            k_sleep(K_SECONDS(1));
        }
    }
    uart_irq_callback_user_data_set(UART, uart_isr, NULL);
    uart_irq_rx_enable(UART);

    int64_t next_tick = k_uptime_get();
    for (;;) {
        (void)k_sem_take(&wake, K_TIMEOUT_ABS_MS(next_tick));
        uint8_t chunk[64];
        uint32_t n;
        while ((n = ring_buf_get(&rx_ring, chunk, sizeof chunk)) > 0u) {
            rig_rx(&rig, chunk, n, uptime_us(), &tx);
        }
        flush_tx();
        if (k_uptime_get() < next_tick) {
            continue;
        }
        next_tick += RIG_TICK_MS;
        rig_samples_t samples;
        rig_outputs_t out;
        rig_hal_sample(&samples);
        rig_step(&rig, &samples, uptime_us(), NULL, 0u, &out, &tx);
        rig_hal_output(&out);
        flush_tx();
        wdt_feed(WDT, wdt_channel);
    }
    return 0;
}
