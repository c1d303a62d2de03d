/* rigsim: the firmware core on POSIX. Serial side on a pty, sensors and actuators exchanged with the
 * plant model over a Unix socket once per control tick (protocol in docs/plant.md, "virtual wires"). */
#define _XOPEN_SOURCE 700
#define _DEFAULT_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "rig.h"
#include "rig_wires.h"

typedef struct {
    const char *plant_path;
    const char *link_path;
    bool realtime;
    double ppm;
    int64_t offset_us;
} options_t;

typedef struct {
    int master;
    int slave;          /* kept open so the pty survives clients coming and going */
    int plant;
    char inbuf[2048];
    size_t inlen;
    int64_t t0_unix_us;
    uint64_t plant_t_us;
    uint64_t tx_frames_dropped;
    bool unread; /* nobody drained the port for a whole second: drop at once until someone does */
    uint64_t silent_until_us; /* serial line dead (both directions) until this plant time */
    bool unplugged;           /* the pty is gone, as a USB device after an unplug */
    uint64_t replug_at_us;
    double reset_base_us; /* simulation time of the last MCU reset: uptime restarts there */
    /* An injected clock fault ("J", "K"): what the uptime gained since the last reset by jumps and by
     * running fast before clock_ppm_since_us, and how fast it runs beyond its crystal from then on. */
    double clock_gained_us;
    double clock_ppm;
    double clock_ppm_since_us;
    /* Real time: the simulation time the tick in flight was due at. The simulated MCU runs each tick when
     * it is due, whenever the host lets this process run: the tick is stamped with that time, and what
     * the host sent meanwhile is taken in time order, after the ticks due before it arrived. */
    double tick_due_us;
    double stall_until_us; /* an injected stall ("T"): the control loop misses the ticks due before this */
    uint8_t rxbuf[256];    /* bytes from the host not yet taken, read at rx_at_unix_us */
    size_t rxlen;
    int64_t rx_at_unix_us;
} sim_t;

static int64_t unix_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static double sim_time_us(const sim_t *sim, const options_t *opt)
{
    return opt->realtime ? (double)(unix_us() - sim->t0_unix_us) : (double)sim->plant_t_us;
}

/* The MCU's uptime at simulation time `now`: time since its last reset scaled by the crystal error, plus an
 * arbitrary offset and what an injected clock fault added. */
static uint64_t mcu_at_us(const sim_t *sim, const options_t *opt, double now)
{
    if (now < sim->reset_base_us) {
        now = sim->reset_base_us; /* a tick due before a reset that came while it was in flight: at the reset */
    }
    double t = now - sim->reset_base_us;
    double fault = sim->clock_gained_us + (now - sim->clock_ppm_since_us) * sim->clock_ppm * 1e-6;
    return (uint64_t)((double)opt->offset_us + t * (1.0 + opt->ppm * 1e-6) + fault);
}

static uint64_t mcu_now_us(const sim_t *sim, const options_t *opt)
{
    return mcu_at_us(sim, opt, sim_time_us(sim, opt));
}

/* A clock fault: the uptime jumps forward by jump_us now, and runs ppm fast beyond its crystal from now on. */
static void clock_fault(sim_t *sim, const options_t *opt, uint32_t jump_us, uint32_t ppm)
{
    double now = sim_time_us(sim, opt);
    sim->clock_gained_us += (now - sim->clock_ppm_since_us) * sim->clock_ppm * 1e-6 + (double)jump_us;
    sim->clock_ppm = (double)ppm;
    sim->clock_ppm_since_us = now;
}

static int open_pty(sim_t *sim, const options_t *opt, char *name, size_t cap)
{
    sim->unplugged = false;
    sim->master = posix_openpt(O_RDWR | O_NOCTTY);
    if (sim->master < 0 || grantpt(sim->master) != 0 || unlockpt(sim->master) != 0) {
        return -1;
    }
    snprintf(name, cap, "%s", ptsname(sim->master));
    sim->slave = open(name, O_RDWR | O_NOCTTY);
    if (sim->slave < 0) {
        return -1;
    }
    struct termios tio;
    tcgetattr(sim->slave, &tio);
    cfmakeraw(&tio);
    tcsetattr(sim->slave, TCSANOW, &tio);
    fcntl(sim->master, F_SETFL, fcntl(sim->master, F_GETFL) | O_NONBLOCK);
    if (opt->link_path != NULL) {
        unlink(opt->link_path);
        if (symlink(name, opt->link_path) != 0) {
            return -1;
        }
    }
    return 0;
}

static int connect_plant(const char *path)
{
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path);
    if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
        return -1;
    }
    return fd;
}

static void close_pty(sim_t *sim, const options_t *opt)
{
    close(sim->master);
    close(sim->slave);
    sim->master = sim->slave = -1;
    sim->unplugged = true;
    if (opt->link_path != NULL) {
        unlink(opt->link_path);
    }
}

static void announce(const sim_t *sim, const options_t *opt, const char *pty_name)
{
    printf("{\"pty\": \"%s\", \"pid\": %d, \"t0_unix_us\": %lld, \"ppm\": %.3f, \"offset_us\": %lld}\n", pty_name,
           (int)getpid(), (long long)sim->t0_unix_us, opt->ppm, (long long)opt->offset_us);
    fflush(stdout);
}

static bool line_dead(const sim_t *sim)
{
    return sim->unplugged || sim->plant_t_us < sim->silent_until_us;
}

/* Serial output: a real UART drops what nobody drains; here a frame that does not fit is dropped. */
static void flush_tx(sim_t *sim, const options_t *opt, rig_tx_t *tx)
{
    size_t off = 0;
    if (line_dead(sim)) {
        tx->len = 0;
        return;
    }
    while (off < tx->len) {
        ssize_t n = write(sim->master, tx->buf + off, tx->len - off);
        if (n > 0) {
            off += (size_t)n;
            sim->unread = false;
            continue;
        }
        if (n < 0 && errno == EAGAIN && !opt->realtime && !sim->unread) {
            /* Accelerated runs give a slow reader up to a second before dropping. A port nobody
             * drained for that long has no reader: waiting on every frame would slow the whole
             * simulation to one tick a second, so frames are dropped at once until it drains. */
            struct pollfd p = {.fd = sim->master, .events = POLLOUT};
            if (poll(&p, 1, 1000) > 0) {
                continue;
            }
            sim->unread = true;
        }
        sim->tx_frames_dropped++;
        break;
    }
    tx->len = 0;
}

static int send_line(const sim_t *sim, const textbuf_t *tb)
{
    return !tb->overflow && write(sim->plant, tb->buf, tb->len) == (ssize_t)tb->len ? 0 : -1;
}

static int send_outputs(const sim_t *sim, const rig_outputs_t *out)
{
    char line[WIRES_LINE_MAX];
    textbuf_t tb;
    tb_init(&tb, line, sizeof line);
    wires_put_outputs(&tb, out);
    return send_line(sim, &tb);
}

static int send_channels(const sim_t *sim)
{
    char line[FRAME_MAX_LEN];
    textbuf_t tb;
    tb_init(&tb, line, sizeof line);
    wires_put_channels(&tb);
    return send_line(sim, &tb);
}

/* Fault injection on the serial side (docs/plant.md): garbage, silence, unplug. */
static void serial_fault(sim_t *sim, const options_t *opt, rig_t *rig, const wires_msg_t *m, rig_tx_t *tx)
{
    switch (m->kind) {
    case WIRES_GARBAGE:
        if (!m->toward_host) {
            rig_rx(rig, m->garbage, m->garbage_len, mcu_now_us(sim, opt), tx);
        } else {
            size_t room = RIG_TX_CAP - tx->len;
            size_t k = m->garbage_len < room ? m->garbage_len : room;
            memcpy(tx->buf + tx->len, m->garbage, k);
            tx->len += k;
        }
        flush_tx(sim, opt, tx);
        break;
    case WIRES_SILENCE: /* the line goes dead for ms of plant time */
        sim->silent_until_us = sim->plant_t_us + (uint64_t)m->ms * 1000u;
        break;
    case WIRES_UNPLUG: /* unplugged, back as a new device after ms */
        if (!sim->unplugged) {
            close_pty(sim, opt);
            sim->replug_at_us = sim->plant_t_us + (uint64_t)m->ms * 1000u;
        }
        break;
    default:
        break;
    }
}

/* One message from the plant: a sample ("S ..."), "R cause" (MCU reset), or a serial fault. Returns 1
 * after a step (the plant waits for the next request), 0 otherwise, -1 on a message rigsim cannot take. */
static int handle_plant_line(sim_t *sim, const options_t *opt, rig_t *rig, const char *line, rig_outputs_t *out,
                             rig_tx_t *tx)
{
    static wires_msg_t m;
    switch (wires_parse(line, &m)) {
    case WIRES_RESET:
        rig_init(rig, m.cause);
        sim->reset_base_us = sim_time_us(sim, opt);
        sim->clock_gained_us = 0.0; /* the uptime restarts; a fast oscillator stays fast */
        sim->clock_ppm_since_us = sim->reset_base_us;
        return 0;
    case WIRES_CLOCK_JUMP:
        clock_fault(sim, opt, m.us, (uint32_t)sim->clock_ppm);
        return 0;
    case WIRES_CLOCK_RATE:
        clock_fault(sim, opt, 0u, m.ppm);
        return 0;
    case WIRES_TICK_STALL:
        sim->stall_until_us = sim_time_us(sim, opt) + (double)m.ms * 1000.0;
        return 0;
    case WIRES_GARBAGE:
    case WIRES_SILENCE:
    case WIRES_UNPLUG:
        serial_fault(sim, opt, rig, &m, tx);
        return 0;
    case WIRES_SAMPLE:
        break;
    default:
        fprintf(stderr, "rigsim: bad plant message (expected %d thermocouples): %s\n", RIG_NUM_TC, line);
        return -1;
    }
    sim->plant_t_us = m.t_us;
    if (sim->unplugged && m.t_us >= sim->replug_at_us) {
        char name[128];
        if (open_pty(sim, opt, name, sizeof name) != 0) {
            perror("rigsim: replug");
            return -1;
        }
        announce(sim, opt, name);
    }
    double tick_us = opt->realtime ? sim->tick_due_us : (double)m.t_us;
    if (tick_us < sim->stall_until_us) {
        return 1; /* the control loop is stuck: this tick is missed (no step, no telemetry) */
    }
    rig_step(rig, &m.samples, mcu_at_us(sim, opt, tick_us), NULL, 0u, out, tx);
    flush_tx(sim, opt, tx);
    return 1;
}

/* The host's bytes go in once every tick due before they were read has run: in real time a late process
 * runs the ticks it owes first, so the MCU's timeline stays in order. The plant paces otherwise, and they
 * go in at once, at plant time. */
static void take_rx(sim_t *sim, const options_t *opt, rig_t *rig, rig_tx_t *tx, bool waiting, int64_t next_tick)
{
    if (sim->rxlen == 0 || (opt->realtime && (waiting || sim->rx_at_unix_us >= next_tick))) {
        return;
    }
    if (!line_dead(sim)) {
        double at = opt->realtime ? (double)(sim->rx_at_unix_us - sim->t0_unix_us) : sim_time_us(sim, opt);
        rig_rx(rig, sim->rxbuf, sim->rxlen, mcu_at_us(sim, opt, at), tx);
        flush_tx(sim, opt, tx);
    }
    sim->rxlen = 0;
}

static int parse_options(int argc, char **argv, options_t *opt)
{
    static const struct option LONG[] = {
        {"plant", required_argument, NULL, 'p'}, {"link", required_argument, NULL, 'l'},
        {"realtime", no_argument, NULL, 'r'},    {"ppm", required_argument, NULL, 'c'},
        {"offset-us", required_argument, NULL, 'o'}, {NULL, 0, NULL, 0},
    };
    int c;
    while ((c = getopt_long(argc, argv, "", LONG, NULL)) != -1) {
        switch (c) {
        case 'p': opt->plant_path = optarg; break;
        case 'l': opt->link_path = optarg; break;
        case 'r': opt->realtime = true; break;
        case 'c': opt->ppm = atof(optarg); break;
        case 'o': opt->offset_us = atoll(optarg); break;
        default: return -1;
        }
    }
    return opt->plant_path != NULL ? 0 : -1;
}

int main(int argc, char **argv)
{
    options_t opt = {0};
    if (parse_options(argc, argv, &opt) != 0) {
        fprintf(stderr, "usage: rigsim --plant SOCKET [--realtime] [--ppm PPM] [--offset-us US] [--link PATH]\n"
                        "Runs the thermrig firmware core against the plant model listening on SOCKET.\n");
        return 2;
    }
    static sim_t sim;
    static rig_t rig;
    static rig_tx_t tx;
    char pty_name[128];
    sim.t0_unix_us = unix_us();
    if (open_pty(&sim, &opt, pty_name, sizeof pty_name) != 0 || (sim.plant = connect_plant(opt.plant_path)) < 0) {
        perror("rigsim");
        return 1;
    }
    announce(&sim, &opt, pty_name);

    rig_init(&rig, 0u);
    if (send_channels(&sim) != 0) {
        perror("rigsim: plant");
        return 1;
    }
    rig_outputs_t out = rig_safe_outputs();
    bool waiting = false;
    int64_t next_tick = unix_us();
    for (;;) {
        if (!waiting && (!opt.realtime || unix_us() >= next_tick)) {
            if (send_outputs(&sim, &out) != 0) {
                break;
            }
            waiting = true;
            sim.tick_due_us = (double)(next_tick - sim.t0_unix_us);
            next_tick += (int64_t)RIG_TICK_MS * 1000;
        }
        take_rx(&sim, &opt, &rig, &tx, waiting, next_tick);
        int timeout = -1;
        if (!waiting) {
            int64_t wait_us = next_tick - unix_us();
            timeout = wait_us > 0 ? (int)((wait_us + 999) / 1000) : 0;
        }
        struct pollfd fds[2] = {{.fd = sim.plant, .events = POLLIN}, {.fd = sim.master, .events = POLLIN}};
        /* poll ignores negative descriptors: no port while unplugged, no read while bytes wait their turn */
        fds[1].fd = sim.unplugged || sim.rxlen > 0 ? -1 : sim.master;
        if (poll(fds, 2, timeout) < 0 && errno != EINTR) {
            break;
        }
        if (fds[1].revents & POLLIN) {
            ssize_t n = read(sim.master, sim.rxbuf, sizeof sim.rxbuf);
            sim.rx_at_unix_us = unix_us(); /* the bytes had arrived by now: the MCU takes them at this time */
            sim.rxlen = n > 0 ? (size_t)n : 0u;
            take_rx(&sim, &opt, &rig, &tx, waiting, next_tick);
        }
        if (fds[0].revents & (POLLIN | POLLHUP)) {
            ssize_t n = read(sim.plant, sim.inbuf + sim.inlen, sizeof sim.inbuf - 1u - sim.inlen);
            if (n <= 0) {
                break; /* the plant went away: the simulation is over */
            }
            sim.inlen += (size_t)n;
            char *nl;
            while ((nl = memchr(sim.inbuf, '\n', sim.inlen)) != NULL) {
                *nl = '\0';
                int r = handle_plant_line(&sim, &opt, &rig, sim.inbuf, &out, &tx);
                if (r < 0) {
                    return 1;
                }
                if (r > 0) {
                    waiting = false;
                }
                size_t used = (size_t)(nl - sim.inbuf) + 1u;
                memmove(sim.inbuf, nl + 1, sim.inlen - used);
                sim.inlen -= used;
            }
        }
    }
    fprintf(stderr, "rigsim: exiting; frames dropped on the serial side: %llu\n",
            (unsigned long long)(sim.tx_frames_dropped + tx.dropped));
    if (opt.link_path != NULL) {
        unlink(opt.link_path);
    }
    return 0;
}
