/* SHT3x measurement decoding: CRC-8 check and conversion of the raw temperature and RH words. */
#ifndef SHT3X_H
#define SHT3X_H

#include <stdbool.h>
#include <stdint.h>

uint8_t sht3x_crc8(const uint8_t *data, uint8_t len);

/* raw: T msb, T lsb, T crc, RH msb, RH lsb, RH crc as read from the sensor.
 * Returns false on a CRC error, leaving the outputs untouched. */
bool sht3x_decode(const uint8_t raw[6], int32_t *t_cc, int32_t *rh_dpct);

#endif
