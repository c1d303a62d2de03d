/* The rig step end to end: commands and naks, telemetry cadence, heater control and every safety path. */
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "rig.h"
#include "sht3x.h"

static rig_t rig;
static rig_tx_t tx;
static rig_outputs_t out;
static uint64_t now_us;
static uint16_t host_seq;
static int32_t temps[RIG_NUM_TC] = {3000, 3000, 3000, 2500};
static uint16_t pulses[RIG_NUM_FANS] = {4, 4};
static uint8_t tc_faults[RIG_NUM_TC];
static bool sht_bad;
static char frames[64][FRAME_MAX_LEN + 2u]; /* the frames sent by the last call, NUL-terminated */
static int nframes;

static void collect(void)
{
    nframes = 0;
    size_t start = 0;
    for (size_t i = 0; i < tx.len; i++) {
        if (tx.buf[i] == '\n' && nframes < 64) {
            memcpy(frames[nframes], &tx.buf[start], i - start);
            frames[nframes][i - start] = '\0';
            nframes++;
            start = i + 1u;
        }
    }
    tx.len = 0;
}

static void step(void)
{
    rig_samples_t s = {0};
    for (uint8_t i = 0; i < RIG_NUM_TC; i++) {
        s.tc_word[i] = ((uint32_t)((temps[i] / 25) & 0x3FFF) << 18) | (400u << 4) |
                       (tc_faults[i] ? (0x10000u | tc_faults[i]) : 0u);
    }
    uint8_t raw[6] = {0x66, 0x66, 0, 0x66, 0x66, 0};
    raw[2] = sht3x_crc8(raw, 2);
    raw[5] = (uint8_t)(sht3x_crc8(&raw[3], 2) ^ (sht_bad ? 1u : 0u));
    memcpy(s.sht_raw, raw, 6);
    s.sht_present = true;
    s.tach_pulses[0] = pulses[0];
    s.tach_pulses[1] = pulses[1];
    rig_step(&rig, &s, now_us, NULL, 0, &out, &tx);
    collect();
    now_us += 100000u;
}

static void run_seconds(double seconds)
{
    for (int i = 0; i < (int)(seconds * 10.0 + 0.5); i++) {
        step();
    }
}

/* Send "SEQ payload" as a host frame; returns the reply frame (first ACK/NAK) or "". */
static const char *send(const char *payload)
{
    char buf[300];
    textbuf_t tb;
    frame_begin(&tb, buf, sizeof buf, ++host_seq, payload);
    CHECK(frame_end(&tb));
    rig_rx(&rig, (const uint8_t *)buf, tb.len, now_us, &tx);
    collect();
    for (int i = 0; i < nframes; i++) {
        if (strstr(frames[i], " ACK ") || strstr(frames[i], " NAK ")) {
            return frames[i];
        }
    }
    return "";
}

/* Send a frame with an explicit sequence number (a host resending after a lost reply). */
static const char *send_seq(uint16_t seq, const char *payload)
{
    char buf[300];
    textbuf_t tb;
    frame_begin(&tb, buf, sizeof buf, seq, payload);
    CHECK(frame_end(&tb));
    rig_rx(&rig, (const uint8_t *)buf, tb.len, now_us, &tx);
    collect();
    return nframes > 0 ? strchr(frames[0], ' ') : "";
}

/* The reply without sequence numbers and CRC: "ACK", "NAK RANGE air", ... */
static const char *reply(const char *payload)
{
    static char r[FRAME_MAX_LEN + 2u];
    const char *f = send(payload);
    const char *type = strchr(f, ' ');
    if (type == NULL) {
        return "";
    }
    const char *after_seq = strchr(type + 5, ' '); /* skip " ACK <hostseq>" */
    snprintf(r, sizeof r, "%.3s%s", type + 1, after_seq ? after_seq : "");
    char *star = strchr(r, '*');
    if (star) {
        *star = '\0';
    }
    return r;
}

static int count_type(const char *type)
{
    int n = 0;
    for (int i = 0; i < nframes; i++) {
        n += strstr(frames[i], type) != NULL;
    }
    return n;
}

static void boot(uint32_t cause)
{
    rig_init(&rig, cause);
    now_us = 5000000u;
    host_seq = 0;
    for (uint8_t i = 0; i < RIG_NUM_TC; i++) {
        tc_faults[i] = 0;
    }
    temps[RIG_TC_CHASSIS_AIR] = 2500;
    sht_bad = false;
    pulses[0] = pulses[1] = 4;
}

static void test_handshake_and_naks(void)
{
    boot(0);
    step();
    CHECK_INT(count_type(" EVT BOOT cause=0*"), 1);
    CHECK_INT(count_type(" TEL up=5000 "), 1);
    const char *hello = send("HELLO proto=1");
    CHECK(strstr(hello, " fw=thermrig-core ver=" RIG_FW_VERSION " proto=1 board=sim-posix hto=3000 ch=tc0:drive_ctrl,") != NULL);
    char hto[32];
    snprintf(hto, sizeof hto, " hto=%u ", (unsigned)RIG_HOST_TIMEOUT_MS); /* the timeout the rig applies */
    CHECK(strstr(hello, hto) != NULL);
    CHECK_STR(reply("HELLO proto=2"), "NAK VERSION proto=1");
    CHECK_STR(reply("HELLO proto=x"), "NAK ARG proto");
    CHECK_STR(reply("FLY"), "NAK UNKNOWN");
    CHECK_STR(reply("SET"), "NAK ARG");
    CHECK_STR(reply("SET volume=3"), "NAK ARG");
    CHECK_STR(reply("SET air"), "NAK ARG");
    CHECK_STR(reply("SET air=hot"), "NAK ARG air");
    CHECK_STR(reply("SET air=6501"), "NAK RANGE air");
    CHECK_STR(reply("SET air=-1"), "NAK RANGE air");
    CHECK_STR(reply("SET rate=50"), "NAK RANGE rate");
    CHECK_STR(reply("SET heat=2"), "NAK RANGE heat");
    CHECK_STR(reply("SET rpm0=3001"), "NAK RANGE rpm0");
    /* SET is atomic: one bad value and nothing applies. */
    CHECK_STR(reply("SET fan0=700 hlim=1001"), "NAK RANGE hlim");
    step();
    CHECK_INT(out.fan_pm[0], 1000); /* still the boot state: fans full */
    CHECK_STR(reply("SET fan0=700 hlim=500"), "ACK");
    step();
    CHECK_INT(out.fan_pm[0], 700);
    CHECK_INT(rig.heat_limit_pm, 500);

    /* Bad frames: nak'd with '-' (the sequence number cannot be trusted), counted, never fatal. */
    uint32_t errors = rig.count.errors;
    const char *bad = "1 PING*0000\n";
    rig_rx(&rig, (const uint8_t *)bad, strlen(bad), now_us, &tx);
    collect();
    CHECK_INT(nframes, 1);
    CHECK(strncmp(strchr(frames[0], ' '), " NAK - CRC*", 11) == 0);
    char longline[400];
    memset(longline, 'A', sizeof longline);
    longline[sizeof longline - 1] = '\n';
    rig_rx(&rig, (const uint8_t *)longline, sizeof longline, now_us, &tx);
    collect();
    CHECK(strstr(frames[0], " NAK - LONG*") != NULL);
    rig_rx(&rig, (const uint8_t *)"\r\n\n", 3, now_us, &tx); /* blank lines: silently ignored */
    collect();
    CHECK_INT(nframes, 0);
    CHECK_INT(rig.count.errors, errors + 2u);
    step();
    char want[32];
    snprintf(want, sizeof want, " err=%u*", (unsigned)(errors + 2u));
    CHECK_INT(count_type(want), 1);

    /* PING answers with the uptime at receipt, in microseconds. */
    now_us = 123456789u;
    CHECK_STR(reply("PING"), "ACK us=123456789");
}

static void test_telemetry_rate(void)
{
    boot(0);
    int tel = 0;
    for (int i = 0; i < 100; i++) {
        step();
        tel += count_type(" TEL ");
    }
    CHECK_INT(tel, 100);
    CHECK_STR(reply("SET rate=1000"), "ACK");
    tel = 0;
    for (int i = 0; i < 100; i++) {
        step();
        tel += count_type(" TEL ");
    }
    CHECK_INT(tel, 10);
    CHECK_STR(reply("SET rate=0"), "ACK");
    tel = 0;
    for (int i = 0; i < 50; i++) {
        step();
        tel += count_type(" TEL ");
    }
    CHECK_INT(tel, 0);
    /* Jitter of a few ms in the tick must not skip frames. */
    CHECK_STR(reply("SET rate=100"), "ACK");
    tel = 0;
    for (int i = 0; i < 100; i++) {
        now_us += (i % 2) ? 3000u : (uint64_t)-3000;
        step();
        tel += count_type(" TEL ");
    }
    CHECK_INT(tel, 100);
}

static void test_heater_control_and_heartbeat(void)
{
    boot(0);
    step();
    CHECK_STR(reply("SET air=4500 heat=1 hlim=300 fan0=400"), "ACK");
    step();
    CHECK_INT(out.heater_pm, 300); /* far below target: the limit caps the PID */
    CHECK(rig_heating(&rig));
    /* With a ping every second the heater stays on. */
    for (int i = 0; i < 10; i++) {
        temps[RIG_TC_CHASSIS_AIR] += 30;
        run_seconds(1.0);
        CHECK(strncmp(reply("PING"), "ACK us=", 7) == 0); /* any valid frame is a heartbeat */
    }
    CHECK(rig_heating(&rig));
    /* Host silence: safe state after RIG_HOST_TIMEOUT_MS, not before. */
    uint64_t silent_from = now_us;
    while (!safety_tripped(&rig.safety) && now_us - silent_from < 10000000u) {
        temps[RIG_TC_CHASSIS_AIR] += 3;
        step();
    }
    uint64_t reacted_ms = (now_us - silent_from) / 1000u;
    CHECK(reacted_ms > RIG_HOST_TIMEOUT_MS && reacted_ms <= RIG_HOST_TIMEOUT_MS + 200u);
    CHECK_INT(rig.safety.latched, FAULT_HOST_LOST);
    CHECK_INT(out.heater_pm, 0);
    CHECK_INT(out.fan_pm[0], 1000);
    CHECK_INT(out.fan_pm[1], 1000);
    /* The heater cannot be re-enabled until the fault is cleared; CLEAR leaves it disabled. */
    CHECK_STR(reply("SET heat=1"), "NAK STATE heat");
    CHECK_STR(reply("CLEAR"), "ACK");
    step();
    CHECK(!safety_tripped(&rig.safety));
    CHECK_INT(out.heater_pm, 0);
    CHECK_STR(reply("SET heat=1"), "ACK");
    /* An idle rig (heater disabled) does not need a host. */
    CHECK_STR(reply("SET heat=0"), "ACK");
    run_seconds(10.0);
    CHECK(!safety_tripped(&rig.safety));
}

static void test_pid_gains_set_by_the_host(void)
{
    boot(0);
    step();
    /* Gains in tenths: out of range or malformed is refused whole, nothing applied. */
    CHECK_STR(reply("SET kp=20001"), "NAK RANGE kp");
    CHECK_STR(reply("SET kp=100 ki=-1"), "NAK RANGE ki");
    CHECK(rig.pid.kp == RIG_AIR_KP);
    /* Proportional only, 100 permille per degC: 2 degC below target gives 200 permille. */
    CHECK_STR(reply("SET kp=1000 ki=0 kd=0"), "ACK");
    CHECK(rig.pid.kp == 100.0f && rig.pid.ki == 0.0f && rig.pid.kd == 0.0f);
    char cmd[64];
    snprintf(cmd, sizeof cmd, "SET air=%d heat=1 hlim=1000", (int)temps[RIG_TC_CHASSIS_AIR] + 200);
    CHECK_STR(reply(cmd), "ACK");
    step();
    step();
    CHECK(out.heater_pm >= 195 && out.heater_pm <= 205);
    /* All gains zero: the loop holds the heater off whatever the error. */
    CHECK_STR(reply("SET kp=0"), "ACK");
    step();
    CHECK_INT(out.heater_pm, 0);
    CHECK_STR(reply("SET heat=0"), "ACK");
}

static void test_sensor_faults(void)
{
    static const struct {
        uint8_t ch;
        uint8_t fault;
        int32_t temp;
        uint32_t expect;
    } CASES[] = {
        {RIG_TC_CHASSIS_AIR, 0x1, 2500, FAULT_TC_OPEN},
        {0 /* drive_ctrl */, 0x2, 2500, FAULT_TC_SHORT_GND},
        {2 /* heatsink */, 0x4, 2500, FAULT_TC_SHORT_VCC},
        {RIG_TC_CHASSIS_AIR, 0, 7100, FAULT_OVER_TEMP},
        {1 /* drive_nand */, 0, 9025, FAULT_OVER_TEMP},
    };
    for (size_t c = 0; c < sizeof CASES / sizeof CASES[0]; c++) {
        boot(0);
        step();
        CHECK_STR(reply("SET air=4500 heat=1"), "ACK");
        step();
        CHECK(out.heater_pm > 0);
        tc_faults[CASES[c].ch] = CASES[c].fault;
        int32_t saved = temps[CASES[c].ch];
        temps[CASES[c].ch] = CASES[c].temp;
        step(); /* one sample period */
        CHECK_INT(rig.safety.latched & CASES[c].expect, CASES[c].expect);
        CHECK_INT(out.heater_pm, 0);
        CHECK_INT(out.fan_pm[0], 1000);
        CHECK(count_type(" EVT FAULT ") == 1);
        /* Latched: the condition going away does not release it, and it is reported once. */
        tc_faults[CASES[c].ch] = 0;
        temps[CASES[c].ch] = saved;
        run_seconds(1.0);
        CHECK_INT(out.heater_pm, 0);
        CHECK_INT(count_type(" EVT FAULT "), 0);
        CHECK_STR(reply("CLEAR"), "ACK");
        run_seconds(1.0);
        CHECK_INT(rig.safety.latched, 0);
    }
    /* A fault present at CLEAR latches again at once. */
    boot(0);
    tc_faults[0] = 0x1;
    step();
    CHECK_STR(reply("CLEAR"), "ACK");
    step();
    CHECK_INT(rig.safety.latched, FAULT_TC_OPEN);
    CHECK_INT(count_type(" EVT FAULT flt=0001 new=0001*"), 1);
    /* The ambient sensor is informational: a CRC failure flags the channel, heaters stay on. */
    boot(0);
    step();
    CHECK(strstr(frames[1], " amb=2500:00 rh=400:00 ") != NULL);
    CHECK_STR(reply("SET air=4500 heat=1"), "ACK");
    sht_bad = true;
    step();
    CHECK(strstr(frames[0], " amb=2500:20 rh=400:20 ") != NULL);
    CHECK(out.heater_pm > 0);
    CHECK_INT(rig.safety.latched, 0);
}

static void test_fans_and_safe(void)
{
    boot(0);
    step();
    CHECK_STR(reply("SET fan1=600"), "ACK");
    pulses[1] = 0;
    run_seconds(RIG_FAN_STALL_MS / 1000.0 + 0.5);
    CHECK_INT(rig.safety.latched, FAULT_FAN_STALL);
    CHECK_INT(out.fan_pm[0], 1000);
    boot(0);
    step();
    CHECK_STR(reply("SET rpm0=1200"), "ACK");
    run_seconds(1.0);
    CHECK(out.fan_pm[0] >= RIG_FAN_MIN_DUTY_PM);
    CHECK_STR(reply("SET air=4000 heat=1 fan1=0"), "ACK");
    step();
    CHECK(out.heater_pm > 0);
    CHECK_STR(reply("SAFE"), "ACK");
    step();
    CHECK_INT(out.heater_pm, 0);
    CHECK_INT(out.fan_pm[0], 1000);
    CHECK_INT(out.fan_pm[1], 1000);
    CHECK(!safety_tripped(&rig.safety));
}

/* Every reset, not only a watchdog reset, starts safe: heater off, fans full, until the host sets them. */
static void test_boot_state(void)
{
    boot(0);
    CHECK_INT(rig.out.heater_pm, 0);
    CHECK_INT(rig.out.fan_pm[0], 1000);
    CHECK_INT(rig.out.fan_pm[1], 1000);
    rig_outputs_t safe = rig_safe_outputs();
    CHECK(memcmp(&safe, &rig.out, sizeof safe) == 0);
    run_seconds(5.0);
    CHECK_INT(out.heater_pm, 0);
    CHECK_INT(out.fan_pm[0], 1000);
    CHECK_INT(out.fan_pm[1], 1000);
    CHECK_INT(rig.safety.latched, 0); /* a plain reset is not a fault */
    CHECK_STR(reply("SET fan0=300 air=3500 heat=1"), "ACK");
    step();
    CHECK_INT(out.fan_pm[0], 300);
    CHECK_INT(out.fan_pm[1], 1000); /* not set by the host: still full */
    CHECK(out.heater_pm > 0);
    /* A plain reset in the middle of heating with slow fans comes back safe again. */
    boot(0);
    step();
    CHECK_INT(out.heater_pm, 0);
    CHECK_INT(out.fan_pm[0], 1000);
    CHECK_INT(out.fan_pm[1], 1000);
    CHECK(!rig_heating(&rig));
}

static void test_watchdog_and_overflow(void)
{
    boot(FAULT_WATCHDOG);
    step();
    CHECK_INT(count_type(" EVT BOOT cause=1024*"), 1);
    CHECK_INT(rig.safety.latched, FAULT_WATCHDOG);
    CHECK_INT(out.fan_pm[0], 1000);
    /* A flood of commands in one read: replies that do not fit are dropped and counted, no overrun. */
    boot(0);
    char flood[4000];
    size_t n = 0;
    for (uint16_t i = 1; n + 20u < sizeof flood; i++) {
        char one[40];
        textbuf_t tb;
        frame_begin(&tb, one, sizeof one, i, "PING");
        frame_end(&tb);
        memcpy(&flood[n], one, tb.len);
        n += tb.len;
    }
    rig_rx(&rig, (const uint8_t *)flood, n, now_us, &tx);
    CHECK(tx.len <= RIG_TX_CAP);
    CHECK(tx.dropped > 0u);
    collect();
    CHECK(nframes > 10);
}

static void test_resent_commands_apply_once(void)
{
    boot(0);
    step();
    /* A CLEAR whose ACK was lost, resent after a new fault latched, must not clear that fault. */
    tc_faults[0] = 0x1;
    step();
    tc_faults[0] = 0;
    char first[FRAME_MAX_LEN + 2u];
    snprintf(first, sizeof first, "%s", send_seq(500, "CLEAR"));
    CHECK(strncmp(first, " ACK 500*", 9) == 0);
    step();
    CHECK_INT(rig.safety.latched, 0);
    pulses[1] = 0;
    CHECK_STR(reply("SET fan1=500"), "ACK");
    run_seconds(RIG_FAN_STALL_MS / 1000.0 + 0.5);
    CHECK_INT(rig.safety.latched, FAULT_FAN_STALL);
    pulses[1] = 4;
    step();
    send_seq(700, "CLEAR");
    CHECK_INT(rig.safety.latched, 0);
    tc_faults[0] = 0x1; /* a new fault between the CLEAR and its retry */
    step();
    tc_faults[0] = 0;
    CHECK_INT(rig.safety.latched, FAULT_TC_OPEN);
    CHECK(strncmp(send_seq(700, "CLEAR"), " ACK 700*", 9) == 0);
    CHECK_INT(rig.safety.latched, FAULT_TC_OPEN); /* the retry did not clear what the host never saw */
    uint32_t repeats = rig.count.repeats;
    host_seq = 600;
    send_seq(600, "SET fan0=100");
    send_seq(600, "SET fan0=100"); /* the retry of the last command: answered, not applied again */
    CHECK_INT(rig.count.repeats, repeats + 1u);
    send_seq(601, "CLEAR");
    CHECK_INT(rig.safety.latched, 0);
    step();
    /* Same sequence number, different frame: a new command (e.g. a restarted host). */
    char first_ping[FRAME_MAX_LEN + 2u];
    snprintf(first_ping, sizeof first_ping, "%s", send_seq(601, "PING"));
    CHECK(strstr(first_ping, " ACK 601 us=") != NULL);
    /* A resent PING gets the stamp of its first arrival, under a new rig sequence number. */
    now_us += 5000u;
    char again[FRAME_MAX_LEN + 2u];
    snprintf(again, sizeof again, "%s", send_seq(601, "PING"));
    *strchr(first_ping, '*') = '\0';
    *strchr(again, '*') = '\0';
    CHECK_STR(again, first_ping);
    /* A refused command resent: the same NAK again, counted once; nothing applied either time. */
    uint32_t naks = rig.count.naks;
    char refused[FRAME_MAX_LEN + 2u];
    snprintf(refused, sizeof refused, "%s", send_seq(602, "SET fan0=300 air=9999"));
    char refused_again[FRAME_MAX_LEN + 2u];
    snprintf(refused_again, sizeof refused_again, "%s", send_seq(602, "SET fan0=300 air=9999"));
    *strchr(refused, '*') = '\0';
    *strchr(refused_again, '*') = '\0';
    CHECK_STR(refused, " NAK 602 RANGE air");
    CHECK_STR(refused_again, refused);
    CHECK_INT(rig.count.naks, naks + 1u);
    CHECK_INT(rig.fans[0].duty_pm, 100);
}

static void test_heater_stuck_on(void)
{
    /* Heater commanded off (idle rig), air climbing 0.2 C/s: a welded relay. */
    boot(0);
    step();
    uint64_t start = now_us;
    while (!safety_tripped(&rig.safety) && now_us - start < 60000000u) {
        temps[RIG_TC_CHASSIS_AIR] += 2;
        step();
    }
    CHECK_INT(rig.safety.latched, FAULT_HEATER_STUCK);
    uint64_t took_ms = (now_us - start) / 1000u;
    CHECK(took_ms >= RIG_STUCK_SETTLE_MS && took_ms <= RIG_STUCK_SETTLE_MS + 12000u);
    /* A room drifting 1 C per minute with the heater off is no fault. */
    boot(0);
    for (int i = 0; i < 3000; i++) {
        if (i % 60 == 0) {
            temps[RIG_TC_CHASSIS_AIR] += 10;
        }
        step();
    }
    CHECK_INT(rig.safety.latched, 0);
    /* Heat then stop: the element's stored heat lifts the air by under 1 C; no fault. */
    boot(0);
    step();
    CHECK_STR(reply("SET air=4000 heat=1"), "ACK");
    run_seconds(2.0);
    CHECK_STR(reply("SET heat=0"), "ACK");
    for (int i = 0; i < 300; i++) {
        if (i < 100 && i % 12 == 0) {
            temps[RIG_TC_CHASSIS_AIR] += 10;
        }
        step();
    }
    CHECK_INT(rig.safety.latched, 0);
}

int main(void)
{
    test_handshake_and_naks();
    test_telemetry_rate();
    test_heater_control_and_heartbeat();
    test_sensor_faults();
    test_fans_and_safe();
    test_boot_state();
    test_watchdog_and_overflow();
    test_resent_commands_apply_once();
    test_heater_stuck_on();
    test_pid_gains_set_by_the_host();
    return check_report("test_rig");
}
