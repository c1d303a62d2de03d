/* The safe state: heater off, fans at full scale. Defined here once; the rig, its commands and every
 * HAL take it from these two functions. */
#include "rig.h"

rig_outputs_t rig_safe_outputs(void)
{
    rig_outputs_t out = {.heater_pm = 0u};
    for (uint8_t i = 0; i < RIG_NUM_FANS; i++) {
        out.fan_pm[i] = RIG_FULL_SCALE_PM;
    }
    return out;
}

void rig_go_safe(rig_t *rig)
{
    const rig_outputs_t safe = rig_safe_outputs();
    rig->heat_enabled = false;
    for (uint8_t i = 0; i < RIG_NUM_FANS; i++) {
        fan_set_duty(&rig->fans[i], safe.fan_pm[i]);
    }
}
