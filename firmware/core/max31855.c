/* MAX31855 32-bit word: D31..D18 thermocouple, D16 fault, D15..D4 internal, D2 SCV, D1 SCG, D0 OC. */
#include "max31855.h"

max31855_reading_t max31855_decode(uint32_t word)
{
    max31855_reading_t r;
    int32_t tc = (int32_t)(word >> 18) & 0x3FFF;
    if (tc & 0x2000) {
        tc -= 0x4000;
    }
    int32_t internal = (int32_t)(word >> 4) & 0x0FFF;
    if (internal & 0x0800) {
        internal -= 0x1000;
    }
    r.tc_cc = tc * 25;
    r.internal_cc = (internal * 625) / 100;
    r.faults = (uint8_t)(word & 0x7u);
    if ((word & 0x10000u) != 0u && r.faults == 0u) {
        r.faults = MAX31855_FAULT_OC; /* fault flag without a cause bit: treat as open */
    }
    if (word == 0u || word == 0xFFFFFFFFu) {
        /* No chip drove MISO (a dead or unpowered chip, a chip select that never reaches it): the bus
         * reads its pull-up or pull-down. Not a reading: a cold junction at exactly 0 C never happens in a
         * lab. Treated as open, the thermocouple's one "not connected" fault. */
        r.faults = MAX31855_FAULT_OC;
    }
    return r;
}
