/* Host side of the emulated board (plant_host.h): plain POSIX sockets, built by the native simulator
 * against the host's C library, outside Zephyr. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "plant_host.h"

#ifdef THERMRIG_GCOV_DUMP
extern void __gcov_dump(void); /* coverage builds (make coverage): keep this boot's counts */
#endif

int plant_host_open(const char *path_env, const char *fd_env)
{
    const char *fd_text = getenv(fd_env);
    if (fd_text != NULL) {
        return atoi(fd_text);
    }
    const char *path = getenv(path_env);
    if (path == NULL || strlen(path) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
        fprintf(stderr, "thermrig: $%s must name the simulation's socket\n", path_env);
        return -1;
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    strcpy(addr.sun_path, path);
    if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
        fprintf(stderr, "thermrig: cannot connect to %s: %s\n", path, strerror(errno));
        return -1;
    }
    return fd;
}

int plant_host_recv(int fd, void *buf, int len)
{
    ssize_t n = recv(fd, buf, (size_t)len, MSG_DONTWAIT);
    if (n > 0) {
        return (int)n;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
        return 0;
    }
    return -1;
}

long long plant_host_now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC_RAW, &t);
    return (long long)t.tv_sec * 1000000LL + t.tv_nsec / 1000;
}

int plant_host_wait(int fd, int timeout_ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    return poll(&p, 1, timeout_ms) > 0 ? 1 : 0;
}

int plant_host_send(int fd, const void *buf, int len)
{
    const char *b = buf;
    while (len > 0) {
        ssize_t n = send(fd, b, (size_t)len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return -1;
        }
        b += n;
        len -= (int)n;
    }
    return 0;
}

static void keep_fd(int fd, const char *env)
{
    char text[16];
    snprintf(text, sizeof text, "%d", fd);
    setenv(env, text, 1);
    (void)fcntl(fd, F_SETFD, 0);
}

void plant_host_reboot(int serial_fd, int plant_fd)
{
    static char cmdline[4096];
    char *argv[64];
    int argc = 0;
    FILE *f = fopen("/proc/self/cmdline", "rb");
    size_t len = f != NULL ? fread(cmdline, 1, sizeof cmdline - 1, f) : 0;
    if (f != NULL) {
        fclose(f);
    }
    for (size_t i = 0; i < len && argc < 63; i += strlen(cmdline + i) + 1) {
        argv[argc++] = cmdline + i;
    }
    argv[argc] = NULL;
    keep_fd(serial_fd, "THERMRIG_SERIAL_FD");
    keep_fd(plant_fd, "THERMRIG_PLANT_FD");
#ifdef THERMRIG_GCOV_DUMP
    __gcov_dump();
#endif
    execv("/proc/self/exe", argv);
    fprintf(stderr, "thermrig: reboot failed: %s\n", strerror(errno));
    _exit(1);
}
