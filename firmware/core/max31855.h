/* MAX31855 thermocouple word decoding: temperature and the open / short-to-GND / short-to-VCC faults. */
#ifndef MAX31855_H
#define MAX31855_H

#include <stdint.h>

#define MAX31855_FAULT_OC 0x01u
#define MAX31855_FAULT_SCG 0x02u
#define MAX31855_FAULT_SCV 0x04u

typedef struct {
    int32_t tc_cc;       /* thermocouple temperature, centi-degC (0.25 degC LSB) */
    int32_t internal_cc; /* cold-junction temperature, centi-degC (0.0625 degC LSB, truncated) */
    uint8_t faults;      /* MAX31855_FAULT_* bits; nonzero means tc_cc is meaningless */
} max31855_reading_t;

max31855_reading_t max31855_decode(uint32_t word);

#endif
