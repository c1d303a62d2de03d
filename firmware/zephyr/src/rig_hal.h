/* Zephyr hardware access for the rig: raw sensor reads and actuator outputs, from the devicetree. */
#ifndef RIG_HAL_H
#define RIG_HAL_H

#include "rig.h"

/* Check every device is ready and start the tach counters; returns 0 or a negative errno. */
int rig_hal_init(void);
/* Fill samples with this tick's raw readings (thermocouple words, SHT3x bytes, tach pulses). */
void rig_hal_sample(rig_samples_t *samples);
/* Apply the step's outputs to the heater and fan PWMs. */
void rig_hal_output(const rig_outputs_t *out);
/* Everything off but the fans: used before the first step and on any HAL error. */
void rig_hal_safe(void);

#endif
