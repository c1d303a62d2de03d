/* Zephyr HAL, MCU side on real boards: the 100 ms tick from the kernel clock, the reset cause from
 * hwinfo and the hardware watchdog (aliases/watchdog0 in the board overlay). */
#include <zephyr/device.h>
#include <zephyr/drivers/hwinfo.h>
#include <zephyr/drivers/watchdog.h>

#include "rig_hal.h"

#define WDT_TIMEOUT_MS 500u /* five ticks: a stuck loop resets into the safe state */

static const struct device *const WDT = DEVICE_DT_GET(DT_ALIAS(watchdog0));
static int wdt_channel = -1;
static int64_t next_tick_ms;

uint32_t rig_hal_reset_cause(void)
{
    uint32_t cause = 0;
    if (hwinfo_get_reset_cause(&cause) == 0) {
        (void)hwinfo_clear_reset_cause();
    }
    return (cause & RESET_WATCHDOG) ? FAULT_WATCHDOG : 0u;
}

uint64_t rig_hal_uptime_us(void)
{
    return k_ticks_to_us_floor64(k_uptime_ticks());
}

k_timeout_t rig_hal_tick_timeout(void)
{
    return K_TIMEOUT_ABS_MS(next_tick_ms);
}

bool rig_hal_tick_due(void)
{
    if (k_uptime_get() < next_tick_ms) {
        return false;
    }
    next_tick_ms = (next_tick_ms == 0 ? k_uptime_get() : next_tick_ms) + RIG_TICK_MS;
    return true;
}

int rig_hal_watchdog_start(void)
{
    const struct wdt_timeout_cfg cfg = {
        .window = {.min = 0, .max = WDT_TIMEOUT_MS},
        .flags = WDT_FLAG_RESET_SOC,
    };
    if (!device_is_ready(WDT)) {
        return -ENODEV;
    }
    wdt_channel = wdt_install_timeout(WDT, &cfg);
    if (wdt_channel < 0) {
        return wdt_channel;
    }
    return wdt_setup(WDT, WDT_OPT_PAUSE_HALTED_BY_DBG);
}

void rig_hal_watchdog_feed(void)
{
    (void)wdt_feed(WDT, wdt_channel);
}
