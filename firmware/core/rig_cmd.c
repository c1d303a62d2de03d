/* Host commands: HELLO, SET, CLEAR, PING, SAFE. SET is validated whole before anything applies. Each
 * command changes the rig's state and writes its reply into the caller's buffer. */
#include "rig_cmd.h"

#include <string.h>

#include "rig_channels.h"

#define RIG_STR_(x) #x
#define RIG_STR(x) RIG_STR_(x)

typedef struct {
    const char *key;
    int32_t min;
    int32_t max;
} set_key_t;

enum { K_AIR, K_HEAT, K_HLIM, K_FAN0, K_FAN1, K_RPM0, K_RPM1, K_RATE, K_KP, K_KI, K_KD, K_COUNT };

static const set_key_t SET_KEYS[K_COUNT] = {
    [K_AIR] = {"air", RIG_AIR_TARGET_MIN_CC, RIG_AIR_TARGET_MAX_CC},
    [K_HEAT] = {"heat", 0, 1},
    [K_HLIM] = {"hlim", 0, (int32_t)RIG_FULL_SCALE_PM},
    [K_FAN0] = {"fan0", 0, (int32_t)RIG_FULL_SCALE_PM},
    [K_FAN1] = {"fan1", 0, (int32_t)RIG_FULL_SCALE_PM},
    [K_RPM0] = {"rpm0", 0, (int32_t)RIG_FAN_MAX_RPM},
    [K_RPM1] = {"rpm1", 0, (int32_t)RIG_FAN_MAX_RPM},
    [K_RATE] = {"rate", 0, (int32_t)RIG_TEL_MAX_MS},
    [K_KP] = {"kp", 0, RIG_AIR_KP_MAX},
    [K_KI] = {"ki", 0, RIG_AIR_KI_MAX},
    [K_KD] = {"kd", 0, RIG_AIR_KD_MAX},
};

void rig_reply_nak(textbuf_t *reply, int32_t host_seq, const char *reason, const char *detail)
{
    tb_str(reply, "NAK ");
    if (host_seq < 0) {
        tb_char(reply, '-');
    } else {
        tb_i64(reply, host_seq);
    }
    tb_char(reply, ' ');
    tb_str(reply, reason);
    if (detail != NULL) {
        tb_char(reply, ' ');
        tb_str(reply, detail);
    }
}

static void ack(textbuf_t *reply, uint16_t host_seq)
{
    tb_str(reply, "ACK ");
    tb_u64(reply, host_seq);
}

static void cmd_hello(rig_t *rig, const frame_t *f, textbuf_t *reply)
{
    (void)rig;
    for (uint8_t i = 0; i < f->nargs; i++) {
        if (strncmp(f->args[i], "proto=", 6) == 0) {
            int32_t v;
            if (parse_i32(f->args[i] + 6, 0, 65535, &v) != PARSE_OK) {
                rig_reply_nak(reply, f->seq, "ARG", "proto");
                return;
            }
            if (v != RIG_PROTO_VERSION) {
                rig_reply_nak(reply, f->seq, "VERSION", "proto=" RIG_STR(RIG_PROTO_VERSION));
                return;
            }
        }
    }
    ack(reply, f->seq);
    tb_str(reply, " fw=" RIG_FW_NAME " ver=" RIG_FW_VERSION);
    tb_kv_i64(reply, "proto", RIG_PROTO_VERSION);
    tb_str(reply, " board=" RIG_BOARD);
    /* How long heating may go without a host frame: the host's keepalive follows it. */
    tb_kv_i64(reply, "hto", RIG_HOST_TIMEOUT_MS);
    tb_str(reply, " ch=");
    rig_channels_put(reply);
}

/* What SET changes, once every key has passed. Turning heating on restarts the PID, so a stale
 * integral does not kick the heater; another telemetry period starts at once. */
static void apply_set(rig_t *rig, const int32_t *val, const bool *given)
{
    if (given[K_AIR]) {
        rig->air_target_cc = val[K_AIR];
    }
    if (given[K_HLIM]) {
        rig->heat_limit_pm = (uint16_t)val[K_HLIM];
        if (rig->out.heater_pm > rig->heat_limit_pm) {
            rig->out.heater_pm = rig->heat_limit_pm; /* a lower limit holds from now, not the next step */
        }
    }
    if (given[K_HEAT]) {
        bool on = val[K_HEAT] == 1;
        if (on && !rig->heat_enabled) {
            pid_reset(&rig->pid);
        }
        rig->heat_enabled = on;
    }
    for (uint8_t i = 0; i < RIG_NUM_FANS; i++) {
        if (given[K_FAN0 + i]) {
            fan_set_duty(&rig->fans[i], (uint16_t)val[K_FAN0 + i]);
        }
        if (given[K_RPM0 + i]) {
            fan_set_rpm(&rig->fans[i], (uint16_t)val[K_RPM0 + i]);
        }
    }
    if (given[K_RATE]) {
        rig->tel_period_ms = (uint32_t)val[K_RATE];
        rig->next_tel_us = rig->now_us;
    }
    /* New gains take effect at the next step; the integral is in output units, so it carries over. */
    if (given[K_KP]) {
        rig->pid.kp = (float)val[K_KP] / (float)RIG_GAIN_SCALE;
    }
    if (given[K_KI]) {
        rig->pid.ki = (float)val[K_KI] / (float)RIG_GAIN_SCALE;
    }
    if (given[K_KD]) {
        rig->pid.kd = (float)val[K_KD] / (float)RIG_GAIN_SCALE;
    }
}

static void cmd_set(rig_t *rig, const frame_t *f, textbuf_t *reply)
{
    int32_t val[K_COUNT];
    bool given[K_COUNT] = {false};
    if (f->nargs == 0u) {
        rig_reply_nak(reply, f->seq, "ARG", NULL);
        return;
    }
    for (uint8_t i = 0; i < f->nargs; i++) {
        const char *eq = strchr(f->args[i], '=');
        size_t klen = eq ? (size_t)(eq - f->args[i]) : 0u;
        uint8_t k = 0;
        while (k < K_COUNT && !(klen == strlen(SET_KEYS[k].key) && strncmp(f->args[i], SET_KEYS[k].key, klen) == 0)) {
            k++;
        }
        if (k == K_COUNT) {
            rig_reply_nak(reply, f->seq, "ARG", NULL);
            return;
        }
        parse_result_t pr = parse_i32(eq + 1, SET_KEYS[k].min, SET_KEYS[k].max, &val[k]);
        if (pr == PARSE_OK && k == K_RATE && val[k] != 0 && val[k] < (int32_t)RIG_TEL_MIN_MS) {
            pr = PARSE_RANGE;
        }
        if (pr != PARSE_OK) {
            rig_reply_nak(reply, f->seq, pr == PARSE_RANGE ? "RANGE" : "ARG", SET_KEYS[k].key);
            return;
        }
        given[k] = true;
    }
    if (given[K_HEAT] && val[K_HEAT] == 1 && safety_tripped(&rig->safety)) {
        rig_reply_nak(reply, f->seq, "STATE", "heat");
        return;
    }
    apply_set(rig, val, given);
    ack(reply, f->seq);
}

static void cmd_clear(rig_t *rig, const frame_t *f, textbuf_t *reply)
{
    /* Faults unlatched and reported afresh. A cleared rig does not resume heating by itself: the host
     * enables it again. */
    safety_clear(&rig->safety);
    rig->reported_faults = 0u;
    rig->heat_enabled = false;
    ack(reply, f->seq);
}

static void cmd_ping(rig_t *rig, const frame_t *f, textbuf_t *reply)
{
    ack(reply, f->seq);
    tb_str(reply, " us=");
    tb_u64(reply, rig->now_us);
}

static void cmd_safe(rig_t *rig, const frame_t *f, textbuf_t *reply)
{
    rig_go_safe(rig);
    ack(reply, f->seq);
}

void rig_command(rig_t *rig, const frame_t *f, textbuf_t *reply)
{
    static const struct {
        const char *name;
        void (*fn)(rig_t *, const frame_t *, textbuf_t *);
    } COMMANDS[] = {
        {"HELLO", cmd_hello}, {"SET", cmd_set}, {"CLEAR", cmd_clear}, {"PING", cmd_ping}, {"SAFE", cmd_safe},
    };
    for (size_t i = 0; i < sizeof COMMANDS / sizeof COMMANDS[0]; i++) {
        if (strcmp(f->type, COMMANDS[i].name) == 0) {
            COMMANDS[i].fn(rig, f, reply);
            return;
        }
    }
    rig_reply_nak(reply, f->seq, "UNKNOWN", NULL);
}
