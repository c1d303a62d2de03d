/* The channel table: its order and kinds, and the HELLO map and telemetry keys the rig builds from it. */
#include <stdlib.h>

#include "check.h"
#include "rig.h"
#include "rig_channels.h"

static rig_t rig;
static rig_tx_t tx;

/* The first frame in tx whose text contains `type`, NUL-terminated in out. */
static void sent_frame(const char *type, char *out, size_t cap)
{
    out[0] = '\0';
    size_t start = 0;
    for (size_t i = 0; i < tx.len; i++) {
        if (tx.buf[i] == '\n') {
            size_t n = i - start < cap - 1u ? i - start : cap - 1u;
            memcpy(out, &tx.buf[start], n);
            out[n] = '\0';
            if (strstr(out, type) != NULL) {
                return;
            }
            start = i + 1u;
        }
    }
    out[0] = '\0';
}

static void test_table(void)
{
    uint8_t per_kind[4] = {0};
    for (uint8_t i = 0; i < RIG_NUM_CHANNELS; i++) {
        const rig_channel_t *ch = &RIG_CHANNELS[i];
        /* Thermocouples first, entry i being thermocouple i (safety.c and rig.c index them so). */
        CHECK((i < RIG_NUM_TC) == (ch->kind == RIG_CH_TC));
        CHECK_INT(ch->index, per_kind[ch->kind]);
        per_kind[ch->kind]++;
        CHECK(ch->min < ch->max);
        for (uint8_t j = 0; j < i; j++) {
            CHECK(strcmp(ch->key, RIG_CHANNELS[j].key) != 0);
            CHECK(strcmp(ch->name, RIG_CHANNELS[j].name) != 0);
        }
    }
    CHECK_INT(per_kind[RIG_CH_TC], RIG_NUM_TC);
    CHECK_INT(per_kind[RIG_CH_AMB_T], 1);
    CHECK_INT(per_kind[RIG_CH_AMB_RH], 1);
    CHECK_INT(per_kind[RIG_CH_FAN_RPM], RIG_NUM_FANS);
    CHECK_STR(RIG_CHANNELS[RIG_TC_CHASSIS_AIR].name, "chassis_air");
}

/* HELLO's ch= and TEL's channel keys both list the table, in its order. */
static void test_hello_and_telemetry(void)
{
    char frame[FRAME_MAX_LEN + 2u];
    char expect[FRAME_MAX_LEN];
    textbuf_t tb;
    rig_init(&rig, 0u);
    rig_samples_t s = {0};
    rig_outputs_t out;
    char hello[40];
    frame_begin(&tb, hello, sizeof hello, 1u, "HELLO proto=1");
    CHECK(frame_end(&tb));
    rig_step(&rig, &s, 1000000u, (const uint8_t *)hello, tb.len, &out, &tx);

    sent_frame(" ACK 1 ", frame, sizeof frame);
    tb_init(&tb, expect, sizeof expect);
    tb_str(&tb, " ch=");
    for (uint8_t i = 0; i < RIG_NUM_CHANNELS; i++) {
        tb_str(&tb, i ? "," : "");
        tb_str(&tb, RIG_CHANNELS[i].key);
        tb_char(&tb, ':');
        tb_str(&tb, RIG_CHANNELS[i].name);
    }
    tb_char(&tb, '*');
    CHECK(strstr(frame, expect) != NULL);
#if RIG_NUM_TC == 4
    /* Protocol v1's map, byte for byte (docs/protocol.md). */
    CHECK(strstr(frame, " ch=tc0:drive_ctrl,tc1:drive_nand,tc2:heatsink,tc3:chassis_air,amb:ambient_t,"
                        "rh:ambient_rh,rpm0:fan0,rpm1:fan1*") != NULL);
#endif

    sent_frame(" TEL ", frame, sizeof frame);
    const char *at = frame;
    for (uint8_t i = 0; i < RIG_NUM_CHANNELS; i++) {
        char key[16];
        snprintf(key, sizeof key, " %s=", RIG_CHANNELS[i].key);
        const char *found = strstr(at, key);
        CHECK(found != NULL);
        at = found != NULL ? found : at;
    }
}

int main(void)
{
    test_table();
    test_hello_and_telemetry();
    return check_report("test_channels");
}
