/* SHT3x emulator on the emulated I2C bus: acknowledges its address from the rig's true wiring
 * (plant-wiring's sht-address) only, takes the single-shot command 0x2400 and then reads back the plant's
 * six bytes (temperature and humidity words, each with its CRC-8). A read with no measurement started,
 * any other command, or a plant whose sensor does not answer is not acknowledged (-EIO, an I2C NAK). The
 * SHT3x takes the bus up to Fast-mode Plus (1 MHz): a bus clocked faster (High-speed mode, 3.4 MHz and up)
 * is never acknowledged either. */
#define DT_DRV_COMPAT thermrig_sht3x_raw

#include <string.h>
#include <zephyr/device.h>
#include <zephyr/drivers/emul.h>
#include <zephyr/drivers/i2c.h>
#include <zephyr/drivers/i2c_emul.h>

#include "plant_bridge.h"

static bool measuring;
static const struct device *bus; /* the I2C controller the chip sits on */

static int sht3x_emul_transfer(const struct emul *target, struct i2c_msg *msgs, int num_msgs, int addr)
{
    ARG_UNUSED(target);
    const rig_samples_t *s = plant_sample();
    uint32_t config = 0u;
    if (bus == NULL || i2c_get_config(bus, &config) != 0 || I2C_SPEED_GET(config) > I2C_SPEED_FAST_PLUS) {
        return -EIO; /* clocked past the chip: it never recognises its address */
    }
    if (addr != DT_PROP(PLANT_WIRING, sht_address) || !s->sht_present) {
        return -EIO;
    }
    for (int i = 0; i < num_msgs; i++) {
        struct i2c_msg *m = &msgs[i];
        if ((m->flags & I2C_MSG_READ) == 0u) {
            if (m->len != 2u || m->buf[0] != 0x24u || m->buf[1] != 0x00u) {
                return -EIO;
            }
            measuring = true;
        } else {
            if (!measuring || m->len > sizeof s->sht_raw) {
                return -EIO;
            }
            memcpy(m->buf, s->sht_raw, m->len);
            measuring = false;
        }
    }
    return 0;
}

static const struct i2c_emul_api sht3x_emul_api = {.transfer = sht3x_emul_transfer};

static int sht3x_emul_init(const struct emul *target, const struct device *parent)
{
    ARG_UNUSED(target);
    bus = parent;
    return 0;
}

#define SHT3X_EMUL(n)                                                                                       \
    DEVICE_DT_INST_DEFINE(n, NULL, NULL, NULL, NULL, POST_KERNEL, CONFIG_KERNEL_INIT_PRIORITY_DEVICE, NULL); \
    EMUL_DT_INST_DEFINE(n, sht3x_emul_init, NULL, NULL, &sht3x_emul_api, NULL)

DT_INST_FOREACH_STATUS_OKAY(SHT3X_EMUL)
