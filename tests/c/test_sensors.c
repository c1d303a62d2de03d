/* MAX31855 word decoding and SHT3x CRC/conversion against the datasheets' figures. */
#include "check.h"
#include "max31855.h"
#include "sht3x.h"

static uint32_t word(int32_t tc_quarter, int32_t internal_sixteenth, uint32_t faults)
{
    return ((uint32_t)(tc_quarter & 0x3FFF) << 18) | ((uint32_t)(internal_sixteenth & 0xFFF) << 4) |
           (faults ? 0x10000u : 0u) | faults;
}

int main(void)
{
    /* Datasheet table: 0x6400 (<<2 for D31..D18) = +1600.00 C, 0x0064 = +25 C, 0xFFFC = -1 C (14-bit). */
    max31855_reading_t r = max31855_decode(0x64000000u);
    CHECK_INT(r.tc_cc, 160000);
    r = max31855_decode(word(100, 400, 0)); /* 25.00 C, 25.0 C internal */
    CHECK_INT(r.tc_cc, 2500);
    CHECK_INT(r.internal_cc, 2500);
    CHECK_INT(r.faults, 0);
    r = max31855_decode(word(-1, -16, 0)); /* -0.25 C, -1 C internal */
    CHECK_INT(r.tc_cc, -25);
    CHECK_INT(r.internal_cc, -100);
    r = max31855_decode(word(-1000, 0, 0)); /* -250 C: the negative limit of the K range */
    CHECK_INT(r.tc_cc, -25000);
    CHECK_INT(max31855_decode(word(0, 0, MAX31855_FAULT_OC)).faults, MAX31855_FAULT_OC);
    CHECK_INT(max31855_decode(word(0, 0, MAX31855_FAULT_SCG)).faults, MAX31855_FAULT_SCG);
    CHECK_INT(max31855_decode(word(0, 0, MAX31855_FAULT_SCV)).faults, MAX31855_FAULT_SCV);
    CHECK_INT(max31855_decode(0x10000u).faults, MAX31855_FAULT_OC); /* fault flag, no cause bit */
    CHECK_INT(max31855_decode(0xFFFFFFFFu).faults, MAX31855_FAULT_OC); /* MISO undriven, pulled up */
    CHECK_INT(max31855_decode(0x00000000u).faults, MAX31855_FAULT_OC); /* MISO held low */
    CHECK_INT(max31855_decode(word(0, 1, 0)).faults, 0);               /* 0 C beside 1/16 C: a reading */

    /* Sensirion: CRC(0xBEEF) = 0x92. */
    const uint8_t beef[2] = {0xBE, 0xEF};
    CHECK_INT(sht3x_crc8(beef, 2), 0x92);
    /* S_T = 0x6666 -> -45 + 175 * 26214 / 65535 = 25.00 C; S_RH = 0x8000 -> 50.0 %. */
    uint8_t raw[6] = {0x66, 0x66, 0, 0x80, 0x00, 0};
    raw[2] = sht3x_crc8(&raw[0], 2);
    raw[5] = sht3x_crc8(&raw[3], 2);
    int32_t t = 0, rh = 0;
    CHECK(sht3x_decode(raw, &t, &rh));
    CHECK_INT(t, 2500);
    CHECK_INT(rh, 500);
    raw[5] ^= 1u;
    t = -1;
    CHECK(!sht3x_decode(raw, &t, &rh));
    CHECK_INT(t, -1); /* untouched on CRC error */
    return check_report("test_sensors");
}
