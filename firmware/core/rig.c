/* The rig step: decode sensors, run the supervisor, control heater and fans, emit telemetry. */
#include "rig.h"

#include "rig_channels.h"
#include "rig_internal.h"
#include "sht3x.h"

#define HEX_FAULT_DIGITS 4u

void rig_init(rig_t *rig, uint32_t reset_cause)
{
    *rig = (rig_t){0};
    linebuf_init(&rig->rx);
    safety_init(&rig->safety);
    safety_latch(&rig->safety, reset_cause & FAULT_WATCHDOG);
    pid_init(&rig->pid, RIG_AIR_KP, RIG_AIR_KI, RIG_AIR_KD, 0.0f, 1000.0f, RIG_AIR_D_FILTER_S);
    for (uint8_t i = 0; i < RIG_NUM_FANS; i++) {
        fan_init(&rig->fans[i]);
    }
    rig->reset_cause = reset_cause;
    rig->heat_limit_pm = 1000u;
    rig->tel_period_ms = RIG_TEL_DEFAULT_MS;
    for (uint8_t i = 0; i < RIG_NUM_TC; i++) {
        rig->tc_status[i] = CH_NO_DATA;
    }
    rig->amb_status = CH_NO_DATA;
    rig_go_safe(rig);
    rig->out = rig_safe_outputs();
}

rig_outputs_t rig_safe_outputs(void)
{
    rig_outputs_t out = {.heater_pm = 0u};
    for (uint8_t i = 0; i < RIG_NUM_FANS; i++) {
        out.fan_pm[i] = 1000u;
    }
    return out;
}

bool rig_heating(const rig_t *rig)
{
    return rig->heat_enabled && !safety_tripped(&rig->safety);
}

void rig_set_air_target(rig_t *rig, int32_t cc)
{
    rig->air_target_cc = cc;
}

void rig_set_heat_limit(rig_t *rig, uint16_t pm)
{
    rig->heat_limit_pm = pm;
}

void rig_set_heating(rig_t *rig, bool on)
{
    if (on && !rig->heat_enabled) {
        pid_reset(&rig->pid);
    }
    rig->heat_enabled = on;
}

void rig_set_fan_duty(rig_t *rig, uint8_t fan, uint16_t pm)
{
    fan_set_duty(&rig->fans[fan], pm);
}

void rig_set_fan_rpm(rig_t *rig, uint8_t fan, uint16_t rpm)
{
    fan_set_rpm(&rig->fans[fan], rpm);
}

void rig_set_telemetry_period(rig_t *rig, uint32_t ms)
{
    rig->tel_period_ms = ms;
    rig->next_tel_us = rig->now_us;
}

void rig_go_safe(rig_t *rig)
{
    rig->heat_enabled = false;
    for (uint8_t i = 0; i < RIG_NUM_FANS; i++) {
        fan_set_duty(&rig->fans[i], 1000u);
    }
}

void rig_clear_faults(rig_t *rig)
{
    safety_clear(&rig->safety);
    rig->reported_faults = 0u;
    rig->heat_enabled = false;
}

bool rig_tripped(const rig_t *rig)
{
    return safety_tripped(&rig->safety);
}

uint64_t rig_now_us(const rig_t *rig)
{
    return rig->now_us;
}

void rig_send(rig_t *rig, rig_tx_t *tx, textbuf_t *tb)
{
    if (rig->capture_reply) {
        const char *body = tb->buf;
        while (*body != ' ' && *body != '\0') {
            body++;
        }
        textbuf_t keep;
        tb_init(&keep, rig->last_reply, sizeof rig->last_reply);
        tb_str(&keep, body); /* " ACK 5 us=..." */
        rig->capture_reply = false;
    }
    rig->tx_seq++;
    if (!frame_end(tb) || tx->len + tb->len > RIG_TX_CAP) {
        tx->dropped++;
        return;
    }
    for (size_t i = 0; i < tb->len; i++) {
        tx->buf[tx->len++] = (uint8_t)tb->buf[i];
    }
}

void rig_nak(rig_t *rig, rig_tx_t *tx, int32_t host_seq, const char *reason, const char *detail)
{
    char buf[FRAME_MAX_LEN + 2u];
    textbuf_t tb;
    frame_begin(&tb, buf, sizeof buf, rig->tx_seq, "NAK");
    tb_char(&tb, ' ');
    if (host_seq < 0) {
        tb_char(&tb, '-');
    } else {
        tb_i64(&tb, host_seq);
    }
    tb_char(&tb, ' ');
    tb_str(&tb, reason);
    if (detail != NULL) {
        tb_char(&tb, ' ');
        tb_str(&tb, detail);
    }
    rig->count.naks++;
    rig_send(rig, tx, &tb);
}

static void handle_line(rig_t *rig, line_status_t st, rig_tx_t *tx)
{
    frame_t f;
    frame_err_t err = (st == LINE_TOO_LONG) ? FRAME_ERR_LONG : frame_decode(rig->rx.buf, rig->rx.len, &f);
    if (st == LINE_READY && rig->rx.len == 0u) {
        return; /* blank line: a person pressing Enter in a terminal */
    }
    if (err != FRAME_OK) {
        rig->count.errors++;
        rig_nak(rig, tx, -1, frame_err_name(err), NULL);
        return;
    }
    rig->count.frames++;
    rig->last_host_us = rig->now_us;
    if (rig->have_last_cmd && f.seq == rig->last_cmd_seq && f.crc == rig->last_cmd_crc) {
        char buf[FRAME_MAX_LEN + 2u];
        textbuf_t tb;
        tb_init(&tb, buf, sizeof buf);
        tb_u64(&tb, rig->tx_seq);
        tb_str(&tb, rig->last_reply);
        rig->count.repeats++;
        rig_send(rig, tx, &tb);
        return;
    }
    rig->have_last_cmd = true;
    rig->last_cmd_seq = f.seq;
    rig->last_cmd_crc = f.crc;
    rig->capture_reply = true;
    rig_command(rig, &f, tx);
    rig->capture_reply = false;
}

void rig_rx(rig_t *rig, const uint8_t *bytes, size_t n, uint64_t now_us, rig_tx_t *tx)
{
    rig->now_us = now_us;
    for (size_t i = 0; i < n; i++) {
        line_status_t st = linebuf_push(&rig->rx, bytes[i]);
        if (st != LINE_NONE) {
            handle_line(rig, st, tx);
            linebuf_reset(&rig->rx);
        }
    }
}

static void read_sensors(rig_t *rig, const rig_samples_t *s, uint32_t dt_ms)
{
    for (uint8_t ch = 0; ch < RIG_NUM_TC; ch++) {
        max31855_reading_t r = max31855_decode(s->tc_word[ch]);
        rig->tc_status[ch] = safety_check_tc(&rig->safety, ch, &r);
        if (r.faults == 0u) {
            rig->tc_cc[ch] = r.tc_cc;
        }
    }
    /* The ambient sensor is informational: a failure is flagged, never a fault. */
    if (s->sht_present && sht3x_decode(s->sht_raw, &rig->amb_cc, &rig->rh_dpct)) {
        rig->amb_status = 0u;
    } else {
        rig->amb_status = CH_NO_DATA;
    }
    for (uint8_t i = 0; i < RIG_NUM_FANS; i++) {
        fan_tach(&rig->fans[i], s->tach_pulses[i], dt_ms);
        if (fan_stalled(&rig->fans[i])) {
            safety_latch(&rig->safety, FAULT_FAN_STALL);
        }
    }
}

static void control(rig_t *rig, uint32_t dt_ms)
{
    bool active = rig_heating(rig);
    int32_t air = rig->tc_cc[RIG_TC_CHASSIS_AIR];
    safety_check_heater(&rig->safety, active, rig->air_target_cc, air, dt_ms);
    safety_check_stuck(&rig->safety, rig->out.heater_pm, air, dt_ms);
    if (active && (rig->now_us - rig->last_host_us) > (uint64_t)RIG_HOST_TIMEOUT_MS * 1000u) {
        safety_latch(&rig->safety, FAULT_HOST_LOST);
    }
    if (!rig_heating(rig)) {
        pid_reset(&rig->pid);
        rig->out.heater_pm = 0u;
        for (uint8_t i = 0; i < RIG_NUM_FANS; i++) {
            /* Safe state: fans full. Otherwise an idle rig runs its fans as last commanded. */
            rig->out.fan_pm[i] = safety_tripped(&rig->safety) ? 1000u : fan_update(&rig->fans[i], dt_ms);
            rig->fans[i].out_pm = rig->out.fan_pm[i];
        }
        return;
    }
    float duty = pid_update(&rig->pid, (float)rig->air_target_cc / 100.0f, (float)air / 100.0f,
                            (float)dt_ms / 1000.0f);
    rig->out.heater_pm = (uint16_t)(duty + 0.5f);
    if (rig->out.heater_pm > rig->heat_limit_pm) {
        rig->out.heater_pm = rig->heat_limit_pm;
    }
    for (uint8_t i = 0; i < RIG_NUM_FANS; i++) {
        rig->out.fan_pm[i] = fan_update(&rig->fans[i], dt_ms);
    }
}

static void ch_value(textbuf_t *tb, const char *key, int32_t value, uint8_t status)
{
    tb_kv_i64(tb, key, value);
    tb_char(tb, ':');
    tb_hex(tb, status, 2u);
}

static void channel_value(const rig_t *rig, const rig_channel_t *ch, textbuf_t *tb)
{
    switch (ch->kind) {
    case RIG_CH_TC:
        ch_value(tb, ch->key, rig->tc_cc[ch->index], rig->tc_status[ch->index]);
        break;
    case RIG_CH_AMB_T:
        ch_value(tb, ch->key, rig->amb_cc, rig->amb_status);
        break;
    case RIG_CH_AMB_RH:
        ch_value(tb, ch->key, rig->rh_dpct, rig->amb_status);
        break;
    case RIG_CH_FAN_RPM: {
        const fan_t *fan = &rig->fans[ch->index];
        ch_value(tb, ch->key, (int32_t)fan->rpm, fan_stalled(fan) ? CH_STALL : 0u);
        break;
    }
    }
}

static void send_telemetry(rig_t *rig, rig_tx_t *tx)
{
    static const char *const FAN_KEYS[RIG_NUM_FANS] = {"fan0", "fan1"};
    char buf[FRAME_MAX_LEN + 2u];
    textbuf_t tb;
    frame_begin(&tb, buf, sizeof buf, rig->tx_seq, "TEL");
    tb_str(&tb, " up=");
    tb_u64(&tb, rig->now_us / 1000u);
    for (uint8_t i = 0; i < RIG_NUM_CHANNELS; i++) {
        channel_value(rig, &RIG_CHANNELS[i], &tb);
    }
    tb_kv_i64(&tb, "heat", rig->out.heater_pm);
    for (uint8_t i = 0; i < RIG_NUM_FANS; i++) {
        tb_kv_i64(&tb, FAN_KEYS[i], rig->out.fan_pm[i]);
    }
    tb_kv_i64(&tb, "air", rig->air_target_cc);
    tb_kv_i64(&tb, "hen", rig->heat_enabled ? 1 : 0);
    tb_kv_i64(&tb, "hlim", rig->heat_limit_pm);
    tb_str(&tb, " flt=");
    tb_hex(&tb, rig->safety.latched, HEX_FAULT_DIGITS);
    tb_kv_i64(&tb, "err", rig->count.errors);
    rig_send(rig, tx, &tb);
}

static void report_events(rig_t *rig, rig_tx_t *tx)
{
    char buf[FRAME_MAX_LEN + 2u];
    textbuf_t tb;
    if (!rig->boot_reported) {
        rig->boot_reported = true;
        frame_begin(&tb, buf, sizeof buf, rig->tx_seq, "EVT");
        tb_str(&tb, " BOOT");
        tb_kv_i64(&tb, "cause", rig->reset_cause);
        rig_send(rig, tx, &tb);
    }
    uint32_t fresh = rig->safety.latched & ~rig->reported_faults;
    rig->reported_faults = rig->safety.latched;
    if (fresh != 0u) {
        frame_begin(&tb, buf, sizeof buf, rig->tx_seq, "EVT");
        tb_str(&tb, " FAULT flt=");
        tb_hex(&tb, rig->safety.latched, HEX_FAULT_DIGITS);
        tb_str(&tb, " new=");
        tb_hex(&tb, fresh, HEX_FAULT_DIGITS);
        rig_send(rig, tx, &tb);
    }
}

void rig_step(rig_t *rig, const rig_samples_t *samples, uint64_t now_us, const uint8_t *rx, size_t rx_len,
              rig_outputs_t *out, rig_tx_t *tx)
{
    rig_rx(rig, rx, rx_len, now_us, tx);
    uint32_t dt_ms = rig->stepped ? (uint32_t)((now_us - rig->last_step_us) / 1000u) : RIG_TICK_MS;
    rig->stepped = true;
    rig->last_step_us = now_us;

    read_sensors(rig, samples, dt_ms);
    control(rig, dt_ms);
    report_events(rig, tx);
    /* Due within half a tick: scheduling jitter must not skip a frame. Fixed cadence, no drift. */
    if (rig->tel_period_ms != 0u && now_us + RIG_TICK_MS * 500u >= rig->next_tel_us) {
        send_telemetry(rig, tx);
        uint64_t period_us = (uint64_t)rig->tel_period_ms * 1000u;
        rig->next_tel_us += period_us;
        if (rig->next_tel_us + RIG_TICK_MS * 500u <= now_us) {
            rig->next_tel_us = now_us + period_us;
        }
    }
    *out = rig->out;
}
