/* MAX31855 emulator on the emulated SPI bus: the chip whose chip select the transfer asserts answers with
 * its thermocouple's 32-bit word from the plant, MSB first, in SPI mode 0. Which chip sits on which chip
 * select is the rig's true wiring (plant-wiring's tc-cs-gpios), not the firmware's overlay: a transfer on a
 * line no chip is wired to, with the wrong select polarity, reads the bus's pull-up (all ones); a wrong
 * SPI mode reads the word a bit late; LSB-first reads each byte mirrored. Clocked past the chip's 5 MHz, SO
 * (valid up to 40 ns after each falling SCK edge) is sampled while it still changes: bits read at random as
 * their neighbour, a different garbled word on each read. */
#define DT_DRV_COMPAT thermrig_max31855_raw

#include <zephyr/device.h>
#include <zephyr/drivers/emul.h>
#include <zephyr/drivers/spi.h>
#include <zephyr/drivers/spi_emul.h>

#include "plant_bridge.h"

#define WIRED_CS(node, prop, idx) GPIO_DT_SPEC_GET_BY_IDX(node, prop, idx),
static const struct gpio_dt_spec WIRED[] = {DT_FOREACH_PROP_ELEM(PLANT_WIRING, tc_cs_gpios, WIRED_CS)};
BUILD_ASSERT(ARRAY_SIZE(WIRED) == RIG_NUM_TC, "plant-wiring: one chip select per thermocouple");

static uint32_t bus_word(const struct spi_config *config)
{
    const struct gpio_dt_spec *cs = &config->cs.gpio;
    for (uint8_t k = 0; k < RIG_NUM_TC; k++) {
        if (cs->port == WIRED[k].port && cs->pin == WIRED[k].pin) {
            if ((cs->dt_flags & GPIO_ACTIVE_LOW) == 0u) {
                return 0xFFFFFFFFu; /* driven high to select: the chip never sees its select */
            }
            return plant_sample()->tc_word[k];
        }
    }
    return 0xFFFFFFFFu;
}

#define MAX31855_MAX_HZ 5000000u

/* xorshift32: the unstable bits of an overclocked read, the same sequence on every run. */
static uint32_t jitter_state = 0x2545F491u;

static uint32_t jitter(void)
{
    jitter_state ^= jitter_state << 13;
    jitter_state ^= jitter_state >> 17;
    jitter_state ^= jitter_state << 5;
    return jitter_state;
}

/* Past 5 MHz a quarter of the bits, at random, read as the bit before them (still on SO). */
static uint32_t overclocked(uint32_t word, uint32_t hz)
{
    if (hz <= MAX31855_MAX_HZ) {
        return word;
    }
    uint32_t late = jitter() & jitter();
    uint32_t before = (word >> 1) | (word & 0x80000000u);
    return (word & ~late) | (before & late);
}

static uint8_t mirror(uint8_t b)
{
    uint8_t r = 0u;
    for (uint8_t i = 0; i < 8u; i++) {
        r = (uint8_t)((r << 1) | ((b >> i) & 1u));
    }
    return r;
}

static int max31855_emul_io(const struct emul *target, const struct spi_config *config,
                            const struct spi_buf_set *tx_bufs, const struct spi_buf_set *rx_bufs)
{
    ARG_UNUSED(target);
    ARG_UNUSED(tx_bufs);
    if (SPI_WORD_SIZE_GET(config->operation) != 8u || (config->operation & SPI_OP_MODE_SLAVE) != 0u) {
        return -ENOTSUP;
    }
    uint32_t word = overclocked(bus_word(config), config->frequency);
    if ((SPI_MODE_GET(config->operation) & (SPI_MODE_CPOL | SPI_MODE_CPHA)) != 0u) {
        word = (word << 1) | 1u; /* sampled on the wrong edge: one bit late, MISO's pull-up shifts in */
    }
    size_t at = 0;
    for (size_t b = 0; rx_bufs != NULL && b < rx_bufs->count; b++) {
        uint8_t *buf = rx_bufs->buffers[b].buf;
        for (size_t i = 0; i < rx_bufs->buffers[b].len; i++, at++) {
            uint8_t byte = at < 4u ? (uint8_t)(word >> (24u - 8u * at)) : 0xFFu;
            if (buf != NULL) {
                buf[i] = (config->operation & SPI_TRANSFER_LSB) ? mirror(byte) : byte;
            }
        }
    }
    return 0;
}

static const struct spi_emul_api max31855_emul_api = {.io = max31855_emul_io};

static int max31855_emul_init(const struct emul *target, const struct device *parent)
{
    ARG_UNUSED(target);
    ARG_UNUSED(parent);
    return 0;
}

/* The chip has no driver of its own (the HAL reads it through spi_dt_spec); the emulator needs a device. */
#define MAX31855_EMUL(n)                                                                                    \
    DEVICE_DT_INST_DEFINE(n, NULL, NULL, NULL, NULL, POST_KERNEL, CONFIG_KERNEL_INIT_PRIORITY_DEVICE, NULL); \
    EMUL_DT_INST_DEFINE(n, max31855_emul_init, NULL, NULL, &max31855_emul_api, NULL)

DT_INST_FOREACH_STATUS_OKAY(MAX31855_EMUL)
