/* The rig step: decode sensors, run the supervisor, control heater and fans, emit telemetry. */
#include "rig.h"

#include "rig_channels.h"
#include "rig_cmd.h"
#include "sht3x.h"

#define HEX_FAULT_DIGITS 4u

void rig_init(rig_t *rig, uint32_t reset_cause)
{
    *rig = (rig_t){0};
    linebuf_init(&rig->rx);
    safety_init(&rig->safety);
    safety_latch(&rig->safety, reset_cause & FAULT_WATCHDOG);
    pid_init(&rig->pid, RIG_AIR_KP, RIG_AIR_KI, RIG_AIR_KD, 0.0f, (float)RIG_FULL_SCALE_PM, RIG_AIR_D_FILTER_S);
    for (uint8_t i = 0; i < RIG_NUM_FANS; i++) {
        fan_init(&rig->fans[i]);
    }
    rig->reset_cause = reset_cause;
    rig->heat_limit_pm = RIG_FULL_SCALE_PM;
    rig->tel_period_ms = RIG_TEL_DEFAULT_MS;
    for (uint8_t i = 0; i < RIG_NUM_TC; i++) {
        rig->tc_status[i] = CH_NO_DATA;
    }
    rig->amb_status = CH_NO_DATA;
    rig_go_safe(rig);
    rig->out = rig_safe_outputs();
}

bool rig_heating(const rig_t *rig)
{
    return rig->heat_enabled && !safety_tripped(&rig->safety);
}

/* Every frame the rig sends: the next SEQ, then CRC and newline; one that does not fit is dropped. */
static void send_frame(rig_t *rig, rig_tx_t *tx, textbuf_t *tb)
{
    rig->tx_seq++;
    if (!frame_end(tb) || tx->len + tb->len > RIG_TX_CAP) {
        tx->dropped++;
        return;
    }
    for (size_t i = 0; i < tb->len; i++) {
        tx->buf[tx->len++] = (uint8_t)tb->buf[i];
    }
}

/* A reply ("ACK ..." or "NAK ...") framed under the rig's next SEQ; an empty body (a reply that
 * overflowed its buffer) is dropped as any frame too long is. */
static void send_reply(rig_t *rig, rig_tx_t *tx, const char *body)
{
    char buf[FRAME_MAX_LEN + 2u];
    textbuf_t tb;
    tb_init(&tb, buf, sizeof buf);
    tb_u64(&tb, rig->tx_seq);
    tb_char(&tb, ' ');
    tb_str(&tb, body);
    if (body[0] == '\0') {
        tb.overflow = true;
    }
    send_frame(rig, tx, &tb);
}

static void handle_line(rig_t *rig, line_status_t st, rig_tx_t *tx)
{
    frame_t f;
    frame_err_t err = (st == LINE_TOO_LONG) ? FRAME_ERR_LONG : frame_decode(rig->rx.buf, rig->rx.len, &f);
    if (st == LINE_READY && rig->rx.len == 0u) {
        return; /* blank line: a person pressing Enter in a terminal */
    }
    if (err != FRAME_OK) {
        char body[32];
        textbuf_t reply;
        tb_init(&reply, body, sizeof body);
        rig_reply_nak(&reply, -1, frame_err_name(err), NULL);
        rig->count.errors++;
        rig->count.naks++;
        send_reply(rig, tx, body);
        return;
    }
    rig->count.frames++;
    rig->last_host_us = rig->now_us;
    if (rig->have_last_cmd && f.seq == rig->last_cmd_seq && f.crc == rig->last_cmd_crc) {
        rig->count.repeats++;
        send_reply(rig, tx, rig->last_reply);
        return;
    }
    /* The reply is written straight into the kept one: a resend (same SEQ and CRC) gets it again and
     * is not applied twice. */
    textbuf_t reply;
    tb_init(&reply, rig->last_reply, sizeof rig->last_reply);
    rig_command(rig, &f, &reply);
    if (reply.overflow) {
        rig->last_reply[0] = '\0';
    }
    if (rig->last_reply[0] == 'N') {
        rig->count.naks++;
    }
    rig->have_last_cmd = true;
    rig->last_cmd_seq = f.seq;
    rig->last_cmd_crc = f.crc;
    send_reply(rig, tx, rig->last_reply);
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
    if (s->output_error) {
        safety_latch(&rig->safety, FAULT_OUTPUT); /* the heater or a fan may not be where it was set */
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
        /* A latched fault: the safe state. Otherwise an idle rig runs its fans as last commanded. */
        bool tripped = safety_tripped(&rig->safety);
        const rig_outputs_t safe = rig_safe_outputs();
        rig->out.heater_pm = safe.heater_pm;
        for (uint8_t i = 0; i < RIG_NUM_FANS; i++) {
            rig->out.fan_pm[i] = tripped ? safe.fan_pm[i] : fan_update(&rig->fans[i], dt_ms);
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
    send_frame(rig, tx, &tb);
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
        send_frame(rig, tx, &tb);
    }
    uint32_t fresh = rig->safety.latched & ~rig->reported_faults;
    rig->reported_faults = rig->safety.latched;
    if (fresh != 0u) {
        frame_begin(&tb, buf, sizeof buf, rig->tx_seq, "EVT");
        tb_str(&tb, " FAULT flt=");
        tb_hex(&tb, rig->safety.latched, HEX_FAULT_DIGITS);
        tb_str(&tb, " new=");
        tb_hex(&tb, fresh, HEX_FAULT_DIGITS);
        send_frame(rig, tx, &tb);
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
