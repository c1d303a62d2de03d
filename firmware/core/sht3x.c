/* SHT3x: CRC-8 poly 0x31 init 0xFF; T = -45 + 175 S/65535 degC, RH = 100 S/65535 %. */
#include "sht3x.h"

uint8_t sht3x_crc8(const uint8_t *data, uint8_t len)
{
    uint8_t crc = 0xFFu;
    for (uint8_t i = 0; i < len; i++) {
        crc ^= data[i];
        for (uint8_t bit = 0; bit < 8u; bit++) {
            uint32_t shifted = (uint32_t)crc << 1;
            crc = (uint8_t)((crc & 0x80u) ? (shifted ^ 0x31u) : shifted);
        }
    }
    return crc;
}

bool sht3x_decode(const uint8_t raw[6], int32_t *t_cc, int32_t *rh_dpct)
{
    if (sht3x_crc8(&raw[0], 2u) != raw[2] || sht3x_crc8(&raw[3], 2u) != raw[5]) {
        return false;
    }
    uint32_t st = ((uint32_t)raw[0] << 8) | raw[1];
    uint32_t srh = ((uint32_t)raw[3] << 8) | raw[4];
    *t_cc = -4500 + (int32_t)((17500u * st + 32767u) / 65535u);
    *rh_dpct = (int32_t)((1000u * srh + 32767u) / 65535u);
    return true;
}
