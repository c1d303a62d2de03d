/* The channel table: the one place the firmware names its channels (docs/protocol.md, channel map). */
#include "rig_channels.h"

#define TC(n, label, max_cc) {"tc" #n, label, RIG_CH_TC, n, RIG_TC_MIN_CC, max_cc}

const rig_channel_t RIG_CHANNELS[] = {
    TC(0, "drive_ctrl", 11000),
    TC(1, "drive_nand", 9000),
    TC(2, "heatsink", 9000),
    TC(3, "chassis_air", 7000),
#if RIG_NUM_TC == 6
    /* The six-thermocouple variant (rigsim6): air at the drive's slot and at the chassis inlet. */
    TC(4, "slot_air", 7000),
    TC(5, "inlet_air", 7000),
#endif
    {"amb", "ambient_t", RIG_CH_AMB_T, 0, -4000, 12500}, /* SHT3x: -40..125 degC */
    {"rh", "ambient_rh", RIG_CH_AMB_RH, 0, 0, 1000},
    {"rpm0", "fan0", RIG_CH_FAN_RPM, 0, 0, (int32_t)RIG_FAN_MAX_RPM},
    {"rpm1", "fan1", RIG_CH_FAN_RPM, 1, 0, (int32_t)RIG_FAN_MAX_RPM},
};

_Static_assert(RIG_NUM_TC == 4 || RIG_NUM_TC == 6, "the channel table declares 4 or 6 thermocouples");
_Static_assert(RIG_NUM_FANS == 2, "the channel table declares 2 fans");
_Static_assert(sizeof RIG_CHANNELS / sizeof RIG_CHANNELS[0] == RIG_NUM_CHANNELS,
               "one table entry per channel");
_Static_assert(RIG_TC_CHASSIS_AIR < RIG_NUM_TC, "the heater regulates a thermocouple of the table");

void rig_channels_put(textbuf_t *tb)
{
    for (uint8_t i = 0; i < RIG_NUM_CHANNELS; i++) {
        if (i > 0u) {
            tb_char(tb, ',');
        }
        tb_str(tb, RIG_CHANNELS[i].key);
        tb_char(tb, ':');
        tb_str(tb, RIG_CHANNELS[i].name);
    }
}
