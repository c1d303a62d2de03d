/* Zephyr HAL: MAX31855 words over SPI, SHT3x bytes over I2C, tach edges counted by GPIO interrupts,
 * heater and fans on PWM. Hardware lives in the board overlay only (boards/<board>.overlay). */
#include <zephyr/device.h>
#include <zephyr/drivers/gpio.h>
#include <zephyr/drivers/i2c.h>
#include <zephyr/drivers/pwm.h>
#include <zephyr/drivers/spi.h>
#include <zephyr/sys/atomic.h>

#include "rig_hal.h"

#define USER_NODE DT_PATH(zephyr_user)
/* MAX31855: mode 0, MSB first, unless a node's spi-cpol, spi-cpha or spi-lsb-first says otherwise. */
#define TC_SPI_OP(node)                                                                                     \
    (SPI_OP_MODE_MASTER | SPI_WORD_SET(8) | (DT_PROP(node, spi_cpol) ? SPI_MODE_CPOL : 0) |              \
     (DT_PROP(node, spi_cpha) ? SPI_MODE_CPHA : 0) | (DT_PROP(node, spi_lsb_first) ? SPI_TRANSFER_LSB : 0))
#define TC_SPEC(label) SPI_DT_SPEC_GET(DT_NODELABEL(label), TC_SPI_OP(DT_NODELABEL(label)), 0)

static const struct spi_dt_spec TC[] = {TC_SPEC(tc0), TC_SPEC(tc1), TC_SPEC(tc2), TC_SPEC(tc3)};
static const struct i2c_dt_spec AMBIENT = I2C_DT_SPEC_GET(DT_NODELABEL(ambient));
static const struct pwm_dt_spec HEATER = PWM_DT_SPEC_GET_BY_NAME(USER_NODE, heater);
static const struct pwm_dt_spec FANS[] = {
    PWM_DT_SPEC_GET_BY_NAME(USER_NODE, fan0),
    PWM_DT_SPEC_GET_BY_NAME(USER_NODE, fan1),
};
static const struct gpio_dt_spec TACH[] = {
    GPIO_DT_SPEC_GET_BY_IDX(USER_NODE, tach_gpios, 0),
    GPIO_DT_SPEC_GET_BY_IDX(USER_NODE, tach_gpios, 1),
};
/* The devices must match the core's channel table (rig_channels.c): one MAX31855 per thermocouple,
 * one PWM and one tach per fan. */
BUILD_ASSERT(ARRAY_SIZE(TC) == RIG_NUM_TC, "one tcN node in the overlay per thermocouple of the channel table");
BUILD_ASSERT(ARRAY_SIZE(FANS) == RIG_NUM_FANS && ARRAY_SIZE(TACH) == RIG_NUM_FANS, "one PWM and tach per fan");

/* SHT3x single shot, high repeatability, no clock stretching: 15 ms, read at the next tick. */
static const uint8_t SHT3X_MEASURE[2] = {0x24, 0x00};

static struct gpio_callback tach_cb[RIG_NUM_FANS];
static atomic_t tach_count[RIG_NUM_FANS];
static bool sht_triggered;
static bool output_error; /* a PWM driver refused a duty since the last sample */

static void tach_edge(const struct device *port, struct gpio_callback *cb, gpio_port_pins_t pins)
{
    ARG_UNUSED(port);
    ARG_UNUSED(pins);
    atomic_inc(&tach_count[cb == &tach_cb[0] ? 0 : 1]);
}

int rig_hal_init(struct k_sem *wake)
{
    ARG_UNUSED(wake); /* the tick comes from the kernel clock (rig_hal_mcu.c) */
    for (uint8_t i = 0; i < RIG_NUM_TC; i++) {
        if (!spi_is_ready_dt(&TC[i])) {
            return -ENODEV;
        }
    }
    if (!i2c_is_ready_dt(&AMBIENT) || !pwm_is_ready_dt(&HEATER)) {
        return -ENODEV;
    }
    for (uint8_t i = 0; i < RIG_NUM_FANS; i++) {
        if (!pwm_is_ready_dt(&FANS[i]) || !gpio_is_ready_dt(&TACH[i])) {
            return -ENODEV;
        }
        int err = gpio_pin_configure_dt(&TACH[i], GPIO_INPUT);
        err = err ? err : gpio_pin_interrupt_configure_dt(&TACH[i], GPIO_INT_EDGE_TO_ACTIVE);
        if (err) {
            return err;
        }
        gpio_init_callback(&tach_cb[i], tach_edge, BIT(TACH[i].pin));
        err = gpio_add_callback_dt(&TACH[i], &tach_cb[i]);
        if (err) {
            return err;
        }
    }
    return 0;
}

static uint32_t read_tc(const struct spi_dt_spec *spec)
{
    uint8_t rx[4];
    struct spi_buf buf = {.buf = rx, .len = sizeof rx};
    struct spi_buf_set set = {.buffers = &buf, .count = 1};
    if (spi_read_dt(spec, &set) != 0) {
        return 0x00010001u; /* no answer on the bus reads as an open thermocouple: heaters off */
    }
    return ((uint32_t)rx[0] << 24) | ((uint32_t)rx[1] << 16) | ((uint32_t)rx[2] << 8) | rx[3];
}

void rig_hal_sample(rig_samples_t *samples)
{
    for (uint8_t i = 0; i < RIG_NUM_TC; i++) {
        samples->tc_word[i] = read_tc(&TC[i]);
    }
    samples->sht_present = sht_triggered && i2c_read_dt(&AMBIENT, samples->sht_raw, 6) == 0;
    sht_triggered = i2c_write_dt(&AMBIENT, SHT3X_MEASURE, sizeof SHT3X_MEASURE) == 0;
    for (uint8_t i = 0; i < RIG_NUM_FANS; i++) {
        samples->tach_pulses[i] = (uint16_t)atomic_clear(&tach_count[i]);
    }
    samples->output_error = output_error; /* the core latches OUTPUT_ERROR and asks for the safe outputs */
    output_error = false;
}

static void set_duty(const struct pwm_dt_spec *pwm, uint16_t permille)
{
    if (pwm_set_pulse_dt(pwm, (uint32_t)(((uint64_t)pwm->period * permille) / RIG_FULL_SCALE_PM)) != 0) {
        output_error = true;
    }
}

void rig_hal_output(const rig_outputs_t *out)
{
    set_duty(&HEATER, out->heater_pm);
    for (uint8_t i = 0; i < RIG_NUM_FANS; i++) {
        set_duty(&FANS[i], out->fan_pm[i]);
    }
}

void rig_hal_safe(void)
{
    const rig_outputs_t safe = rig_safe_outputs();
    rig_hal_output(&safe);
}
