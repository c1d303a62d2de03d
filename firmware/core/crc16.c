/* CRC-16/CCITT-FALSE, bitwise: small flash footprint, frames are short. */
#include "crc16.h"

uint16_t crc16_ccitt_false(const uint8_t *data, size_t len)
{
    uint16_t crc = 0xFFFFu;
    for (size_t i = 0; i < len; i++) {
        crc ^= (uint16_t)((uint16_t)data[i] << 8);
        for (uint8_t bit = 0; bit < 8u; bit++) {
            uint32_t shifted = (uint32_t)crc << 1;
            crc = (uint16_t)((crc & 0x8000u) ? (shifted ^ 0x1021u) : shifted);
        }
    }
    return crc;
}
