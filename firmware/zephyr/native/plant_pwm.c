/* The emulated board's PWM controller (thermrig,plant-pwm): it keeps each channel's duty and period, which
 * the plant bridge sends the plant model as the heater's and fans' outputs. It counts as the Nucleo-F411RE's
 * timers do with no prescaler (96 MHz): channels 0 and 3 on a 32-bit timer (TIM2: the heater's output and
 * a second one that the rig leaves unconnected), the others on 16-bit ones (TIM3, the fans'), so a period
 * past 65536 cycles there (under 1465 Hz) is refused with -ENOTSUP, as Zephyr's STM32 PWM driver refuses
 * it. A channel no part of the rig is wired to (plant-wiring) takes any duty and drives nothing. */
#define DT_DRV_COMPAT thermrig_plant_pwm

#include <zephyr/device.h>
#include <zephyr/drivers/pwm.h>

#include "plant_bridge.h"

#define PLANT_PWM_CHANNELS 8u

#define PLANT_PWM_CYCLES_PER_SEC 96000000u
#define PLANT_PWM_16BIT_MAX 0x10000u
#define PLANT_PWM_32BIT_CHANNELS (BIT(0) | BIT(3)) /* TIM2's outputs */

static uint16_t duty_pm[PLANT_PWM_CHANNELS];
static uint32_t period_ns[PLANT_PWM_CHANNELS];
static uint32_t failing; /* channels whose driver refuses every duty (an injected pwm-error) */

static int plant_pwm_set_cycles(const struct device *dev, uint32_t channel, uint32_t period, uint32_t pulse,
                                pwm_flags_t flags)
{
    ARG_UNUSED(dev);
    if (channel >= PLANT_PWM_CHANNELS || period == 0u || pulse > period) {
        return -EINVAL;
    }
    if ((PLANT_PWM_32BIT_CHANNELS & BIT(channel)) == 0u && period > PLANT_PWM_16BIT_MAX) {
        return -ENOTSUP; /* the 16-bit timer's auto-reload cannot hold the period */
    }
    if (failing & BIT(channel)) {
        return -EIO; /* the output has stopped (plant_pwm_stopped) */
    }
    uint32_t pm = (uint32_t)(((uint64_t)pulse * RIG_FULL_SCALE_PM + period / 2u) / period);
    period_ns[channel] = (uint32_t)(((uint64_t)period * 1000000000u) / PLANT_PWM_CYCLES_PER_SEC);
    duty_pm[channel] = (uint16_t)((flags & PWM_POLARITY_INVERTED) ? RIG_FULL_SCALE_PM - pm : pm);
    return 0;
}

static int plant_pwm_cycles_per_sec(const struct device *dev, uint32_t channel, uint64_t *cycles)
{
    ARG_UNUSED(dev);
    ARG_UNUSED(channel);
    *cycles = PLANT_PWM_CYCLES_PER_SEC;
    return 0;
}

static const struct pwm_driver_api plant_pwm_api = {
    .set_cycles = plant_pwm_set_cycles,
    .get_cycles_per_sec = plant_pwm_cycles_per_sec,
};

void plant_pwm_fail(uint32_t channels)
{
    failing = channels;
}

bool plant_pwm_stopped(uint32_t channel)
{
    return channel < PLANT_PWM_CHANNELS && (failing & BIT(channel)) != 0u;
}

uint32_t plant_pwm_period_ns(uint32_t channel)
{
    return channel < PLANT_PWM_CHANNELS ? period_ns[channel] : 0u;
}

uint16_t plant_pwm_permille(uint32_t channel)
{
    return channel < PLANT_PWM_CHANNELS ? duty_pm[channel] : 0u;
}

DEVICE_DT_INST_DEFINE(0, NULL, NULL, NULL, NULL, POST_KERNEL, CONFIG_KERNEL_INIT_PRIORITY_DEVICE, &plant_pwm_api);
