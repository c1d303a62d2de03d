/* The rig: one control step from raw samples and received bytes to actuator outputs and bytes to send. */
#ifndef RIG_H
#define RIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fan.h"
#include "frame.h"
#include "pid.h"
#include "rig_config.h"
#include "safety.h"

#define RIG_TX_CAP 1024u

/* Raw sensor data as the hardware delivers it. */
typedef struct {
    uint32_t tc_word[RIG_NUM_TC];      /* MAX31855 32-bit words */
    uint8_t sht_raw[6];                /* SHT3x T and RH words with their CRCs */
    bool sht_present;                  /* false when the I2C read failed (no ACK) */
    uint16_t tach_pulses[RIG_NUM_FANS];/* tach pulses counted since the previous step */
    bool output_error;                 /* an output could not be set since the previous step (PWM driver) */
} rig_samples_t;

typedef struct {
    uint16_t heater_pm;
    uint16_t fan_pm[RIG_NUM_FANS];
} rig_outputs_t;

/* Bytes to send; frames that do not fit are dropped whole and counted. */
typedef struct {
    uint8_t buf[RIG_TX_CAP];
    size_t len;
    uint32_t dropped;
} rig_tx_t;

typedef struct {
    uint32_t frames;   /* valid frames received */
    uint32_t errors;   /* bad frames: LONG + SYNTAX + CRC */
    uint32_t naks;     /* every NAK sent, bad frames included */
    uint32_t repeats;  /* resent commands answered from the cached reply */
} rig_counters_t;

typedef struct {
    linebuf_t rx;
    uint16_t tx_seq;
    rig_counters_t count;
    uint64_t now_us;
    uint64_t last_step_us;
    bool stepped;
    uint64_t last_host_us;
    uint32_t reset_cause;
    bool boot_reported;
    uint32_t reported_faults;

    int32_t air_target_cc;
    bool heat_enabled;
    uint16_t heat_limit_pm;
    pid_ctl_t pid;
    fan_t fans[RIG_NUM_FANS];
    safety_t safety;

    int32_t tc_cc[RIG_NUM_TC];
    uint8_t tc_status[RIG_NUM_TC];
    int32_t amb_cc;
    int32_t rh_dpct;
    uint8_t amb_status;

    /* The last command and its reply: a resent frame (same SEQ and CRC) gets the same reply again,
     * and is not applied twice. */
    bool have_last_cmd;
    uint16_t last_cmd_seq;
    uint16_t last_cmd_crc;
    char last_reply[FRAME_MAX_LEN + 1u]; /* the reply's body: after its SEQ and space, before its '*' */

    uint32_t tel_period_ms;
    uint64_t next_tel_us;
    rig_outputs_t out;
} rig_t;

/* reset_cause: 0 power-on, FAULT_WATCHDOG when the watchdog reset the MCU (latched at boot). Every reset
 * starts in the safe state, heater off and fans full, until the host sets them. */
void rig_init(rig_t *rig, uint32_t reset_cause);
/* The safe state (rig_safe.c), the one definition every path uses: the core when a fault is latched,
 * at reset and on SAFE; HALs before the first step and on any error. Its outputs: heater off, fans at
 * full scale. */
rig_outputs_t rig_safe_outputs(void);
/* The commanded safe state (reset, SAFE): heating off, fan duties at the safe outputs', until the host
 * sets them again. */
void rig_go_safe(rig_t *rig);
/* Process received bytes at MCU time now_us (replies go to tx at once, e.g. PING timestamps). */
void rig_rx(rig_t *rig, const uint8_t *bytes, size_t n, uint64_t now_us, rig_tx_t *tx);
/* One control tick: received bytes first, then sensors, control, safety, telemetry. */
void rig_step(rig_t *rig, const rig_samples_t *samples, uint64_t now_us, const uint8_t *rx, size_t rx_len,
              rig_outputs_t *out, rig_tx_t *tx);

/* Whether the heater is under closed-loop control (enabled and no fault latched). */
bool rig_heating(const rig_t *rig);

#endif
