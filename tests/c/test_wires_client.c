/* A firmware's end of the virtual wires (firmware/core/rig_wires_client.c): lines assembled byte by byte
 * with an overlong one dropped whole, the plant's mode, its samples and the uptime they give. */
#include <string.h>

#include "check.h"
#include "rig_wires_client.h"

static wires_client_t c;

/* Feeds text byte by byte; takes every whole line; returns the kind of the last one (WIRES_BAD: none). */
static wires_kind_t feed(const char *text)
{
    wires_kind_t last = WIRES_BAD;
    for (; *text != '\0'; text++) {
        const char *line = wires_client_byte(&c, *text);
        if (line != NULL) {
            last = wires_client_line(&c, line);
        }
    }
    return last;
}

static void test_lines(void)
{
    memset(&c, 0, sizeof c);
    CHECK(wires_client_byte(&c, 'R') == NULL);
    CHECK(wires_client_byte(&c, ' ') == NULL);
    CHECK(wires_client_byte(&c, '7') == NULL);
    const char *line = wires_client_byte(&c, '\n');
    CHECK(line != NULL);
    CHECK_STR(line, "R 7");
    CHECK_INT(wires_client_line(&c, line), WIRES_RESET);
    /* The longest line that fits, then one byte more: that one is dropped whole, the next one taken. */
    char longest[WIRES_LINE_MAX];
    memset(longest, 'x', sizeof longest);
    longest[WIRES_LINE_MAX - 1u] = '\0';
    for (size_t i = 0; i + 1u < WIRES_LINE_MAX; i++) {
        CHECK(wires_client_byte(&c, longest[i]) == NULL);
    }
    line = wires_client_byte(&c, '\n');
    CHECK(line != NULL && strlen(line) == WIRES_LINE_MAX - 1u);
    for (size_t i = 0; i < WIRES_LINE_MAX; i++) {
        CHECK(wires_client_byte(&c, 'y') == NULL);
    }
    CHECK(wires_client_byte(&c, '\n') == NULL);
    CHECK_INT(feed("M 1 1024\n"), WIRES_MODE);
    CHECK(c.configured && c.realtime);
    CHECK_INT(c.boot_cause, 1024);
    CHECK_INT(wires_client_uptime_us(&c, 42u), 42); /* in real time, the board's own clock */
}

static void test_samples(void)
{
    memset(&c, 0, sizeof c);
    CHECK_INT(feed("M 0 0\n"), WIRES_MODE);
    CHECK(c.configured && !c.realtime);
    CHECK_INT(wires_client_uptime_us(&c, 42u), 0);
    c.requested = true;
    CHECK_INT(feed("S 5000000 00C80190 019000F0 0FFF0001 00640000 - 7 0\n"), WIRES_SAMPLE);
    CHECK(c.sample_ready && !c.requested);
    CHECK_INT(c.sample.tc_word[0], 0x00C80190);
    CHECK_INT(c.sample.tach_pulses[0], 7);
    CHECK_INT(wires_client_uptime_us(&c, 42u), 0); /* uptime starts at the first sample of the boot */
    CHECK_INT(feed("S 5100000 00C80190 019000F0 0FFF0001 00640000 - 0 3\n"), WIRES_SAMPLE);
    CHECK_INT(wires_client_uptime_us(&c, 42u), 100000);
    CHECK_INT(c.sample.tach_pulses[1], 3);
    /* What is not the board's leaves its state as it was. */
    c.sample_ready = false;
    CHECK_INT(feed("Q 5000\n"), WIRES_SILENCE);
    CHECK_INT(feed("S 1\n"), WIRES_BAD);
    CHECK(!c.sample_ready);
    CHECK_INT(wires_client_uptime_us(&c, 42u), 100000);
}

int main(void)
{
    test_lines();
    test_samples();
    return check_report("test_wires_client");
}
