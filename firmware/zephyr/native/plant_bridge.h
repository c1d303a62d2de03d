/* The emulated board's link to the plant model (plant_bridge.c): the last sample the plant sent, for the
 * bus emulators, and the PWM outputs for the plant. */
#ifndef PLANT_BRIDGE_H
#define PLANT_BRIDGE_H

#include <zephyr/devicetree.h>

#include "rig.h"

/* The rig's true wiring (boards/native_sim_64.overlay), which the emulators answer by. */
#define PLANT_WIRING DT_INST(0, thermrig_plant_wiring)

/* The plant's raw sensors at its current tick: thermocouple words in the channel table's order, the
 * SHT3x's bytes (or none: it does not acknowledge), tach pulses since the tick before. */
const rig_samples_t *plant_sample(void);

/* The PWM controller's duty on a channel, permille of its period (0 for a channel never set). */
uint16_t plant_pwm_permille(uint32_t channel);

/* The period the channel was last set to, in nanoseconds (0 for a channel never set). */
uint32_t plant_pwm_period_ns(uint32_t channel);

/* From now on the PWM driver refuses every duty on these channels (bit n: channel n) with -EIO, and
 * their timer output has stopped (plant_pwm_stopped). */
void plant_pwm_fail(uint32_t channels);
bool plant_pwm_stopped(uint32_t channel);

#endif
