/* The emulated board's link to the simulation (native_sim_64), and the MCU half of its HAL (what
 * src/rig_hal_mcu.c is on a Nucleo): the tick, uptime, reset cause and watchdog.
 *
 * The plant: the virtual wires (docs/plant.md) over a Unix socket, as the qemu_cortex_m3 board speaks them
 * over a UART. At boot "B" -> "M <realtime> <cause>"; each tick "A <heater> <fan0> <fan1>" (the duties
 * the PWM controller holds) and the "S ..." that answers it, kept for the bus emulators, its tach pulses
 * played as edges on the tach lines. "R <cause>" answering a request reboots the program for real. The
 * board build's own line, "P <hex>" before each sample: the rig's actuators (bit 0 the heater, 1 and 2
 * the fans) whose PWM channel's driver fails (an injected pwm-error).
 * The host: the rig protocol on an emulated UART whose bytes go to and from the simulation's serial bridge. */
#include <zephyr/device.h>
#include <zephyr/drivers/gpio.h>
#include <zephyr/drivers/gpio/gpio_emul.h>
#include <zephyr/drivers/pwm.h>
#include <zephyr/drivers/serial/uart_emul.h>
#include <zephyr/init.h>
#include <zephyr/kernel.h>
#include <zephyr/sys/reboot.h>

#include "plant_bridge.h"
#include "plant_host.h"
#include "rig_hal.h"
#include "rig_wires.h"
#include "rig_wires_client.h"

extern void posix_exit(int exit_code);

#define POLL_MS 1 /* how often the link is polled for the host's bytes, and a paced tick for its sample */

static const struct device *const LINK = DEVICE_DT_GET(DT_CHOSEN(thermrig_serial));
#define WIRED_TACH(node, prop, idx) GPIO_DT_SPEC_GET_BY_IDX(node, prop, idx),
static const struct gpio_dt_spec TACH_LINE[] = {DT_FOREACH_PROP_ELEM(PLANT_WIRING, tach_gpios, WIRED_TACH)};
static const uint32_t PWM_CHANNEL[1 + RIG_NUM_FANS] = {
    DT_PWMS_CHANNEL_BY_NAME(PLANT_WIRING, heater),
    DT_PWMS_CHANNEL_BY_NAME(PLANT_WIRING, fan0),
    DT_PWMS_CHANNEL_BY_NAME(PLANT_WIRING, fan1),
};
BUILD_ASSERT(ARRAY_SIZE(TACH_LINE) == RIG_NUM_FANS, "plant-wiring: one tach line per fan");

static int serial_fd = -1;
static int plant_fd = -1;
static wires_client_t plant; /* its sample: the sensors the emulators answer with */
static bool tach_idle;        /* tach lines pulled up (idle) once */
static int64_t next_tick_ms;

const rig_samples_t *plant_sample(void)
{
    return &plant.sample;
}

static void gone(void)
{
    posix_exit(0); /* the simulation closed its end: stop, as a board without power */
}

/* "P <hex>": which actuators' PWM channels fail, by the rig's true wiring. */
static bool handle_board_line(const char *s)
{
    if (s[0] != 'P' || s[1] != ' ') {
        return false;
    }
    uint32_t actuators = 0u;
    for (s += 2; *s != '\0'; s++) {
        uint32_t digit = (*s >= '0' && *s <= '9') ? (uint32_t)(*s - '0') : (uint32_t)((*s | 0x20) - 'a' + 10);
        actuators = (actuators << 4) | (digit & 0xFu);
    }
    uint32_t channels = 0u;
    for (uint8_t i = 0; i < ARRAY_SIZE(PWM_CHANNEL); i++) {
        channels |= (actuators & BIT(i)) ? BIT(PWM_CHANNEL[i]) : 0u;
    }
    plant_pwm_fail(channels);
    return true;
}

static void handle_line(const char *s)
{
    /* serial faults are the bridge's (docs/plant.md) */
    if (!handle_board_line(s) && wires_client_line(&plant, s) == WIRES_RESET) {
        sys_reboot(SYS_REBOOT_COLD); /* the plant tells the new boot its cause ("M") */
    }
}

/* Whatever the plant sent so far, line by line. */
static void pump_plant(void)
{
    char chunk[256];
    int n;
    while ((n = plant_host_recv(plant_fd, chunk, sizeof chunk)) != 0) {
        if (n < 0) {
            gone();
            return;
        }
        for (int i = 0; i < n; i++) {
            const char *line = wires_client_byte(&plant, chunk[i]);
            if (line != NULL) {
                handle_line(line);
            }
        }
    }
}

static void send_plant(const char *s, size_t len)
{
    if (plant_host_send(plant_fd, s, (int)len) != 0) {
        gone();
    }
}

/* What the wired devices take: a 4-wire fan's PWM input 21-28 kHz (Intel's specification; outside it
 * the fan's controller ignores the input and runs full, as with the input released), the heater's
 * switch stage up to 1 kHz (a shorter period than its turn-on time never switches it on). */
#define FAN_MIN_PERIOD_NS (1000000000u / 28000u)
#define FAN_MAX_PERIOD_NS (1000000000u / 21000u)
#define HEATER_MIN_PERIOD_NS (1000000000u / 1000u)

static uint16_t heater_pm(uint32_t ch)
{
    if (plant_pwm_stopped(ch) || plant_pwm_period_ns(ch) < HEATER_MIN_PERIOD_NS) {
        return 0u;
    }
    return plant_pwm_permille(ch);
}

static uint16_t fan_pm(uint32_t ch)
{
    uint32_t period = plant_pwm_period_ns(ch);
    if (plant_pwm_stopped(ch) || period < FAN_MIN_PERIOD_NS || period > FAN_MAX_PERIOD_NS) {
        return RIG_FULL_SCALE_PM;
    }
    return plant_pwm_permille(ch);
}

/* A stopped timer output idles low: the heater's switch off; a fan's open-drain PWM line released,
 * which the fan pulls up itself, full speed (as the Nucleo overlay wires them). */
static void send_request(void)
{
    rig_outputs_t out = {.heater_pm = heater_pm(PWM_CHANNEL[0])};
    for (uint8_t i = 0; i < RIG_NUM_FANS; i++) {
        out.fan_pm[i] = fan_pm(PWM_CHANNEL[1 + i]);
    }
    char buf[WIRES_LINE_MAX];
    textbuf_t tb;
    tb_init(&tb, buf, sizeof buf);
    wires_put_outputs(&tb, &out);
    send_plant(buf, tb.len);
    plant.requested = true;
}

/* The sample's tach pulses as falling edges (the lines are active low) on each fan's tach line. */
static void play_tach(void)
{
    for (uint8_t i = 0; i < RIG_NUM_FANS; i++) {
        const struct gpio_dt_spec *t = &TACH_LINE[i];
        if (!tach_idle) {
            (void)gpio_emul_input_set(t->port, t->pin, 1);
        }
        for (uint16_t p = 0; p < plant.sample.tach_pulses[i]; p++) {
            (void)gpio_emul_input_set(t->port, t->pin, 0);
            (void)gpio_emul_input_set(t->port, t->pin, 1);
        }
    }
    tach_idle = true;
}

/* In real time the simulated clock runs at the host's (native_sim's --rt, on CLOCK_MONOTONIC_RAW), but
 * while the host does not run this program it stands still, and then runs flat out to catch up. Bytes
 * the host wrote meanwhile must not reach the board at an uptime before they reached the socket, or the
 * uptime stamped on them (a PING's) would lie before the host sent them: a clock that jumps, as the host's
 * time sync sees it. So each chunk read from the socket carries the host's time it was read at, in the
 * simulated clock's terms, and goes into the UART at the first poll whose tick it does not lie beyond: a
 * stamp in whole ticks then covers it. Where the clock keeps up, that is the poll that read it. */
#define TICK_US (1000000 / CONFIG_SYS_CLOCK_TICKS_PER_SEC)
#define SLACK_US 100 /* how far the least lead seen may overstate the clocks' true offset (a wake-up's latency) */
static int64_t host_lead_us = INT64_MAX; /* the host's clock less the simulated one, the least seen */
static uint8_t held[256];                /* host bytes read but not yet due on the board */
static int held_len;
static int64_t held_due_us; /* simulated time at which they reached the socket */

/* The simulated clock, in microseconds, and the host's as that clock counts it. */
static int64_t sim_us(void)
{
    return (int64_t)k_cyc_to_us_floor64(k_cycle_get_64());
}

static int64_t host_in_sim_us(int64_t now)
{
    int64_t lead = plant_host_now_us() - now;
    host_lead_us = MIN(host_lead_us, lead);
    return now + (lead - host_lead_us);
}

/* The host's bytes into the link UART, as they come: in real time, no earlier than they came. */
static void poll_link(struct k_timer *timer)
{
    ARG_UNUSED(timer);
    int64_t now = sim_us();
    for (;;) {
        if (held_len > 0) {
            if (plant.realtime && held_due_us > now + TICK_US - SLACK_US) {
                return; /* the clock has not caught up with them yet */
            }
            (void)uart_emul_put_rx_data(LINK, held, (size_t)held_len);
            held_len = 0;
        }
        int n = plant_host_recv(serial_fd, held, sizeof held);
        if (n < 0) {
            gone();
        }
        if (n <= 0) {
            return;
        }
        held_len = n;
        held_due_us = plant.realtime ? host_in_sim_us(now) : now;
    }
}
K_TIMER_DEFINE(link_timer, poll_link, NULL);

/* The firmware's bytes to the host, as it writes them. */
static void link_tx(const struct device *dev, size_t size, void *user_data)
{
    ARG_UNUSED(size);
    ARG_UNUSED(user_data);
    uint8_t chunk[64];
    uint32_t n;
    while ((n = uart_emul_get_tx_data(dev, chunk, sizeof chunk)) > 0u) {
        if (plant_host_send(serial_fd, chunk, (int)n) != 0) {
            gone();
        }
    }
}

/* Before main(): both sockets, and the plant's answer to "B" (waited for with the clock stopped). */
static int plant_bridge_init(void)
{
    serial_fd = plant_host_open("THERMRIG_SERIAL_SOCK", "THERMRIG_SERIAL_FD");
    plant_fd = plant_host_open("THERMRIG_PLANT_SOCK", "THERMRIG_PLANT_FD");
    if (serial_fd < 0 || plant_fd < 0) {
        posix_exit(1);
    }
    uart_emul_callback_tx_data_ready_set(LINK, link_tx, NULL);
    char boot[4];
    textbuf_t tb;
    tb_init(&tb, boot, sizeof boot);
    wires_put_boot(&tb);
    send_plant(boot, tb.len);
    while (!plant.configured) {
        (void)plant_host_wait(plant_fd, 1000);
        pump_plant();
    }
    k_timer_start(&link_timer, K_MSEC(POLL_MS), K_MSEC(POLL_MS));
    return 0;
}
SYS_INIT(plant_bridge_init, APPLICATION, 0);

void sys_arch_reboot(int type)
{
    ARG_UNUSED(type);
    plant_host_reboot(serial_fd, plant_fd);
}

uint32_t rig_hal_reset_cause(void)
{
    return plant.boot_cause;
}

uint64_t rig_hal_uptime_us(void)
{
    return wires_client_uptime_us(&plant, k_ticks_to_us_floor64(k_uptime_ticks()));
}

k_timeout_t rig_hal_tick_timeout(void)
{
    if (plant.requested) {
        return K_MSEC(POLL_MS);
    }
    return plant.realtime ? K_TIMEOUT_ABS_MS(next_tick_ms) : K_NO_WAIT;
}

bool rig_hal_tick_due(void)
{
    if (!plant.requested) {
        if (!plant.realtime) {
            send_request(); /* paced: the outputs of the step before, and the plant's next tick */
        } else if (k_uptime_get() >= next_tick_ms) {
            next_tick_ms = (next_tick_ms == 0 ? k_uptime_get() : next_tick_ms) + RIG_TICK_MS;
            send_request();
        }
    }
    pump_plant();
    if (!plant.sample_ready && !plant.realtime && plant_host_wait(plant_fd, POLL_MS) != 0) {
        pump_plant(); /* paced: the plant answers at once unless a stepped test holds it; the clock waits */
    }
    if (!plant.sample_ready) {
        return false;
    }
    plant.sample_ready = false;
    play_tach();
    return true;
}

/* The emulated board has no watchdog Zephyr drives (as qemu_cortex_m3; docs/firmware.md). */
int rig_hal_watchdog_start(void)
{
    return 0;
}

void rig_hal_watchdog_feed(void)
{
}
