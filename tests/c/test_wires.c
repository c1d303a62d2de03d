/* The virtual-wires codec (firmware/core/rig_wires.c): every plant message, the firmware's lines, and
 * the malformed lines it must refuse. Lines as host/thermrig/sim/wires.py writes them. */
#include <stdlib.h>

#include "check.h"
#include "rig_wires.h"

static wires_msg_t m;

static void test_sample(void)
{
    CHECK_INT(wires_parse("S 123456789 00C80190 019000F0 0FFF0001 00640000 6666936666A2 7 0", &m), WIRES_SAMPLE);
    CHECK_INT(m.t_us, 123456789);
    CHECK_INT(m.samples.tc_word[0], 0x00C80190);
    CHECK_INT(m.samples.tc_word[2], 0x0FFF0001);
    CHECK_INT(m.samples.tc_word[3], 0x00640000);
    CHECK(m.samples.sht_present);
    CHECK_INT(m.samples.sht_raw[0], 0x66);
    CHECK_INT(m.samples.sht_raw[2], 0x93);
    CHECK_INT(m.samples.sht_raw[5], 0xA2);
    CHECK_INT(m.samples.tach_pulses[0], 7);
    CHECK_INT(m.samples.tach_pulses[1], 0);
    /* The SHT3x did not answer; the largest values each field takes. */
    CHECK_INT(wires_parse("S 18446744073709551615 FFFFFFFF 0 1 a - 65535 65535", &m), WIRES_SAMPLE);
    CHECK_INT(m.t_us == UINT64_MAX, 1);
    CHECK_INT(m.samples.tc_word[0], 0xFFFFFFFFu);
    CHECK_INT(m.samples.tc_word[3], 0xA);
    CHECK(!m.samples.sht_present);
    CHECK_INT(m.samples.tach_pulses[1], 65535);
}

static void test_events(void)
{
    CHECK_INT(wires_parse("R 1024", &m), WIRES_RESET);
    CHECK_INT(m.cause, FAULT_WATCHDOG);
    CHECK_INT(wires_parse("M 1 0", &m), WIRES_MODE);
    CHECK(m.realtime);
    CHECK_INT(m.cause, 0);
    CHECK_INT(wires_parse("M 0 1024", &m), WIRES_MODE);
    CHECK(!m.realtime);
    CHECK_INT(m.cause, 1024);
    CHECK_INT(wires_parse("Q 5000", &m), WIRES_SILENCE);
    CHECK_INT(m.ms, 5000);
    CHECK_INT(wires_parse("U 2000", &m), WIRES_UNPLUG);
    CHECK_INT(m.ms, 2000);
    CHECK_INT(wires_parse("J 20000", &m), WIRES_CLOCK_JUMP);
    CHECK_INT(m.us, 20000);
    CHECK_INT(wires_parse("K 2000", &m), WIRES_CLOCK_RATE);
    CHECK_INT(m.ppm, 2000);
    CHECK_INT(wires_parse("K 0", &m), WIRES_CLOCK_RATE);
    CHECK_INT(m.ppm, 0);
    CHECK_INT(wires_parse("T 300", &m), WIRES_TICK_STALL);
    CHECK_INT(m.ms, 300);
    CHECK_INT(wires_parse("T", &m), WIRES_BAD);
    CHECK_INT(wires_parse("G R 00FF0A", &m), WIRES_GARBAGE);
    CHECK(!m.toward_host);
    CHECK_INT(m.garbage_len, 3);
    CHECK_INT(m.garbage[1], 0xFF);
    CHECK_INT(m.garbage[2], '\n');
    CHECK_INT(wires_parse("G H 41", &m), WIRES_GARBAGE);
    CHECK(m.toward_host);
    CHECK_INT(m.garbage_len, 1);
}

static void test_garbage_limit(void)
{
    static char line[4u + 2u * WIRES_GARBAGE_MAX + 4u];
    memcpy(line, "G R ", 4);
    for (size_t i = 0; i < 2u * WIRES_GARBAGE_MAX; i++) {
        line[4 + i] = 'A';
    }
    line[4 + 2u * WIRES_GARBAGE_MAX] = '\0';
    CHECK_INT(wires_parse(line, &m), WIRES_GARBAGE);
    CHECK_INT(m.garbage_len, WIRES_GARBAGE_MAX);
    memcpy(&line[4 + 2u * WIRES_GARBAGE_MAX], "AA", 3);
    CHECK_INT(wires_parse(line, &m), WIRES_BAD); /* one byte more than a firmware buffers */
}

static void test_refused(void)
{
    static const char *const BAD[] = {
        "",
        "S",
        "S ",
        "X 1",
        "R",
        "R ",
        "R x",
        "R 4294967296",                                             /* cause beyond 32 bits */
        "R 1 ",                                                      /* trailing space */
        "R  1",                                                      /* double space */
        "M 2 0",                                                     /* realtime is 0 or 1 */
        "M 1",
        "Q -5",
        "U 1.5",
        "J -1",                                                      /* the uptime jumps forward only */
        "J 4294967296",
        "K 100001",                                                  /* faster than 10 % */
        "K -100",
        "G X 00",
        "G R",
        "G R 0",                                                     /* half a byte */
        "G R 0G",
        "S 1 0 0 0 - 0 0",                                           /* three thermocouples */
        "S 1 0 0 0 0 0 - 0 0",                                       /* five */
        "S 1 0 0 0 123456789 - 0 0",                                 /* nine hex digits */
        "S 1 0 0 0 0 66669366 0 0",                                  /* SHT3x: 4 bytes */
        "S 1 0 0 0 0 6666936666A2FF 0 0",                            /* SHT3x: 7 bytes */
        "S 1 0 0 0 0 - 0 65536",                                     /* tach beyond 16 bits */
        "S 1 0 0 0 0 - 0",
        "S 18446744073709551616 0 0 0 0 - 0 0",                      /* time beyond 64 bits */
        "S 1 0 0 0 0 - 0 0 0",
        "S 1 0 0 0 0 -\t0 0",
    };
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
        m.kind = WIRES_SAMPLE;
        if (wires_parse(BAD[i], &m) != WIRES_BAD || m.kind != WIRES_BAD) {
            fprintf(stderr, "accepted: \"%s\"\n", BAD[i]);
            CHECK(0);
        }
    }
}

static void test_firmware_lines(void)
{
    char buf[WIRES_LINE_MAX];
    textbuf_t tb;
    rig_outputs_t out = rig_safe_outputs();
    out.heater_pm = 250u;
    tb_init(&tb, buf, sizeof buf);
    wires_put_outputs(&tb, &out);
    CHECK_STR(buf, "A 250 1000 1000\n");
    tb_init(&tb, buf, sizeof buf);
    wires_put_boot(&tb);
    CHECK_STR(buf, "B\n");
    char chan[FRAME_MAX_LEN];
    tb_init(&tb, chan, sizeof chan);
    wires_put_channels(&tb);
    CHECK(!tb.overflow);
    static const char TCS[] = "C tc0:drive_ctrl,tc1:drive_nand,tc2:heatsink,tc3:chassis_air,";
    CHECK(strncmp(chan, TCS, sizeof TCS - 1u) == 0);
    CHECK(strstr(chan, ",rpm1:fan1\n") != NULL);
    tb_init(&tb, buf, 4u);
    wires_put_outputs(&tb, &out);
    CHECK(tb.overflow);
}

/* A sample written and parsed again is the same sample; the line is what the plant writes. */
static void test_round_trip(void)
{
    rig_samples_t s = {.sht_present = true, .sht_raw = {1, 2, 3, 0xAB, 0xCD, 0xEF}, .tach_pulses = {3, 65535}};
    for (uint8_t i = 0; i < RIG_NUM_TC; i++) {
        s.tc_word[i] = 0x01900000u * (i + 1u) + i;
    }
    char buf[WIRES_LINE_MAX];
    textbuf_t tb;
    tb_init(&tb, buf, sizeof buf);
    wires_put_sample(&tb, 4200000u, &s);
    CHECK(!tb.overflow);
    CHECK(strncmp(buf, "S 4200000 01900000 03200001 ", 28) == 0);
    CHECK(strstr(buf, " 010203ABCDEF 3 65535\n") != NULL);
    buf[tb.len - 1u] = '\0';
    CHECK_INT(wires_parse(buf, &m), WIRES_SAMPLE);
    CHECK_INT(m.t_us, 4200000);
    for (uint8_t i = 0; i < RIG_NUM_TC; i++) {
        CHECK_INT(m.samples.tc_word[i], s.tc_word[i]);
    }
    CHECK(m.samples.sht_present && memcmp(m.samples.sht_raw, s.sht_raw, sizeof s.sht_raw) == 0);
    CHECK_INT(m.samples.tach_pulses[0], 3);
    CHECK_INT(m.samples.tach_pulses[1], 65535);
}

int main(void)
{
    test_sample();
    test_events();
    test_garbage_limit();
    test_refused();
    test_firmware_lines();
    test_round_trip();
    return check_report("test_wires");
}
