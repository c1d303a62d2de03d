/* Private to rig.c and rig_cmd.c: frame output, command dispatch, and the state changes commands make. */
#ifndef RIG_INTERNAL_H
#define RIG_INTERNAL_H

#include "rig.h"

/* Frame output: every frame the rig sends goes through rig_send (sequence number, reply cache). */
void rig_send(rig_t *rig, rig_tx_t *tx, textbuf_t *tb);
void rig_nak(rig_t *rig, rig_tx_t *tx, int32_t host_seq, const char *reason, const char *detail);
/* Apply one decoded host frame (rig_cmd.c). */
void rig_command(rig_t *rig, const frame_t *f, rig_tx_t *tx);

/* What commands change, kept in rig.c so that one file owns rig_t's control state. */
void rig_set_air_target(rig_t *rig, int32_t cc);
void rig_set_heat_limit(rig_t *rig, uint16_t pm);
/* Turning heating on restarts the PID, so a stale integral does not kick the heater. */
void rig_set_heating(rig_t *rig, bool on);
void rig_set_fan_duty(rig_t *rig, uint8_t fan, uint16_t pm);
void rig_set_fan_rpm(rig_t *rig, uint8_t fan, uint16_t rpm);
/* 0 stops telemetry; another period starts at once. */
void rig_set_telemetry_period(rig_t *rig, uint32_t ms);
/* The safe state on command or reset: heater off, fans full, until the host sets them again. */
void rig_go_safe(rig_t *rig);
/* CLEAR: faults unlatched and reported afresh; heating stays off until the host enables it. */
void rig_clear_faults(rig_t *rig);
bool rig_tripped(const rig_t *rig);
uint64_t rig_now_us(const rig_t *rig);

#endif
