/* Host commands: HELLO, SET, CLEAR, PING, SAFE. SET is validated whole before anything applies. */
#include <string.h>

#include "rig_channels.h"
#include "rig_internal.h"

#define RIG_STR_(x) #x
#define RIG_STR(x) RIG_STR_(x)

typedef struct {
    const char *key;
    int32_t min;
    int32_t max;
} set_key_t;

enum { K_AIR, K_HEAT, K_HLIM, K_FAN0, K_FAN1, K_RPM0, K_RPM1, K_RATE, K_COUNT };

static const set_key_t SET_KEYS[K_COUNT] = {
    [K_AIR] = {"air", RIG_AIR_TARGET_MIN_CC, RIG_AIR_TARGET_MAX_CC},
    [K_HEAT] = {"heat", 0, 1},
    [K_HLIM] = {"hlim", 0, 1000},
    [K_FAN0] = {"fan0", 0, 1000},
    [K_FAN1] = {"fan1", 0, 1000},
    [K_RPM0] = {"rpm0", 0, (int32_t)RIG_FAN_MAX_RPM},
    [K_RPM1] = {"rpm1", 0, (int32_t)RIG_FAN_MAX_RPM},
    [K_RATE] = {"rate", 0, (int32_t)RIG_TEL_MAX_MS},
};

static void ack_begin(rig_t *rig, textbuf_t *tb, char *buf, size_t cap, uint16_t host_seq)
{
    frame_begin(tb, buf, cap, rig->tx_seq, "ACK");
    tb_char(tb, ' ');
    tb_u64(tb, host_seq);
}

static void ack(rig_t *rig, rig_tx_t *tx, uint16_t host_seq)
{
    char buf[FRAME_MAX_LEN + 2u];
    textbuf_t tb;
    ack_begin(rig, &tb, buf, sizeof buf, host_seq);
    rig_send(rig, tx, &tb);
}

static void cmd_hello(rig_t *rig, const frame_t *f, rig_tx_t *tx)
{
    for (uint8_t i = 0; i < f->nargs; i++) {
        if (strncmp(f->args[i], "proto=", 6) == 0) {
            int32_t v;
            if (parse_i32(f->args[i] + 6, 0, 65535, &v) != PARSE_OK) {
                rig_nak(rig, tx, f->seq, "ARG", "proto");
                return;
            }
            if (v != RIG_PROTO_VERSION) {
                rig_nak(rig, tx, f->seq, "VERSION", "proto=" RIG_STR(RIG_PROTO_VERSION));
                return;
            }
        }
    }
    char buf[FRAME_MAX_LEN + 2u];
    textbuf_t tb;
    ack_begin(rig, &tb, buf, sizeof buf, f->seq);
    tb_str(&tb, " fw=" RIG_FW_NAME " ver=" RIG_FW_VERSION);
    tb_kv_i64(&tb, "proto", RIG_PROTO_VERSION);
    tb_str(&tb, " board=" RIG_BOARD " ch=");
    for (uint8_t i = 0; i < RIG_NUM_CHANNELS; i++) {
        if (i > 0u) {
            tb_char(&tb, ',');
        }
        tb_str(&tb, RIG_CHANNELS[i].key);
        tb_char(&tb, ':');
        tb_str(&tb, RIG_CHANNELS[i].name);
    }
    rig_send(rig, tx, &tb);
}

static void cmd_set(rig_t *rig, const frame_t *f, rig_tx_t *tx)
{
    int32_t val[K_COUNT];
    bool given[K_COUNT] = {false};
    if (f->nargs == 0u) {
        rig_nak(rig, tx, f->seq, "ARG", NULL);
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
            rig_nak(rig, tx, f->seq, "ARG", NULL);
            return;
        }
        parse_result_t pr = parse_i32(eq + 1, SET_KEYS[k].min, SET_KEYS[k].max, &val[k]);
        if (pr == PARSE_OK && k == K_RATE && val[k] != 0 && val[k] < (int32_t)RIG_TEL_MIN_MS) {
            pr = PARSE_RANGE;
        }
        if (pr != PARSE_OK) {
            rig_nak(rig, tx, f->seq, pr == PARSE_RANGE ? "RANGE" : "ARG", SET_KEYS[k].key);
            return;
        }
        given[k] = true;
    }
    if (given[K_HEAT] && val[K_HEAT] == 1 && rig_tripped(rig)) {
        rig_nak(rig, tx, f->seq, "STATE", "heat");
        return;
    }
    if (given[K_AIR]) {
        rig_set_air_target(rig, val[K_AIR]);
    }
    if (given[K_HLIM]) {
        rig_set_heat_limit(rig, (uint16_t)val[K_HLIM]);
    }
    if (given[K_HEAT]) {
        rig_set_heating(rig, val[K_HEAT] == 1);
    }
    for (uint8_t i = 0; i < RIG_NUM_FANS; i++) {
        if (given[K_FAN0 + i]) {
            rig_set_fan_duty(rig, i, (uint16_t)val[K_FAN0 + i]);
        }
        if (given[K_RPM0 + i]) {
            rig_set_fan_rpm(rig, i, (uint16_t)val[K_RPM0 + i]);
        }
    }
    if (given[K_RATE]) {
        rig_set_telemetry_period(rig, (uint32_t)val[K_RATE]);
    }
    ack(rig, tx, f->seq);
}

static void cmd_clear(rig_t *rig, const frame_t *f, rig_tx_t *tx)
{
    /* A cleared rig does not resume heating by itself: the host enables it again. */
    rig_clear_faults(rig);
    ack(rig, tx, f->seq);
}

static void cmd_ping(rig_t *rig, const frame_t *f, rig_tx_t *tx)
{
    char buf[FRAME_MAX_LEN + 2u];
    textbuf_t tb;
    ack_begin(rig, &tb, buf, sizeof buf, f->seq);
    tb_str(&tb, " us=");
    tb_u64(&tb, rig_now_us(rig));
    rig_send(rig, tx, &tb);
}

static void cmd_safe(rig_t *rig, const frame_t *f, rig_tx_t *tx)
{
    rig_go_safe(rig);
    ack(rig, tx, f->seq);
}

void rig_command(rig_t *rig, const frame_t *f, rig_tx_t *tx)
{
    static const struct {
        const char *name;
        void (*fn)(rig_t *, const frame_t *, rig_tx_t *);
    } COMMANDS[] = {
        {"HELLO", cmd_hello}, {"SET", cmd_set}, {"CLEAR", cmd_clear}, {"PING", cmd_ping}, {"SAFE", cmd_safe},
    };
    for (size_t i = 0; i < sizeof COMMANDS / sizeof COMMANDS[0]; i++) {
        if (strcmp(f->type, COMMANDS[i].name) == 0) {
            COMMANDS[i].fn(rig, f, tx);
            return;
        }
    }
    rig_nak(rig, tx, f->seq, "UNKNOWN", NULL);
}
