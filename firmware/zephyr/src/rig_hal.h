/* Zephyr board access for the rig: raw sensors, actuators, the control tick, reset cause and watchdog. */
#ifndef RIG_HAL_H
#define RIG_HAL_H

#include <zephyr/kernel.h>

#include "rig.h"

/* Real boards: rig_hal.c (sensors, actuators) and rig_hal_mcu.c (tick, uptime, reset cause, watchdog).
 * The emulated board (qemu_cortex_m3): ../emulated/rig_hal_wires.c, the plant model's values over a UART. */

/* Check every device is ready and start the tach counters; wake is given whenever the HAL has news for
 * the main loop. Returns 0 or a negative errno. */
int rig_hal_init(struct k_sem *wake);
/* Why the MCU started: 0 (power-on, reset pin, reboot) or FAULT_WATCHDOG. */
uint32_t rig_hal_reset_cause(void);
/* The MCU's uptime, the clock every protocol stamp uses. */
uint64_t rig_hal_uptime_us(void);
/* How long the main loop may sleep before it asks rig_hal_tick_due() again. */
k_timeout_t rig_hal_tick_timeout(void);
/* Whether a control tick is due now (each true is one tick). */
bool rig_hal_tick_due(void);
/* Fill samples with this tick's raw readings (thermocouple words, SHT3x bytes, tach pulses). */
void rig_hal_sample(rig_samples_t *samples);
/* Apply the step's outputs to the heater and fan PWMs. */
void rig_hal_output(const rig_outputs_t *out);
/* Everything off but the fans: used before the first step and on any HAL error. */
void rig_hal_safe(void);
/* Start the watchdog (0 or a negative errno) and feed it once per tick. */
int rig_hal_watchdog_start(void);
void rig_hal_watchdog_feed(void);

#endif
