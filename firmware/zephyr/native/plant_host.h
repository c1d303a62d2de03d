/* The emulated board's host side (plant_host_bottom.c, built against the host's C library by the native
 * simulator): the Unix sockets to the simulation's serial bridge and plant model, and the real reboot. */
#ifndef PLANT_HOST_H
#define PLANT_HOST_H

/* The socket named by $<path_env>, or after a reboot the descriptor in $<fd_env>: a descriptor or -1. */
int plant_host_open(const char *path_env, const char *fd_env);
/* Up to len bytes already there (never waits): their count, 0 if none, -1 once the peer has gone. */
int plant_host_recv(int fd, void *buf, int len);
/* Wait up to timeout_ms (host time, the simulated clock stands still) for fd to be readable: 1 or 0. */
int plant_host_wait(int fd, int timeout_ms);
/* All len bytes, waiting as needed: 0, or -1 once the peer has gone. */
int plant_host_send(int fd, const void *buf, int len);
/* The host's monotonic clock (CLOCK_MONOTONIC_RAW, the one native_sim's real time follows), microseconds. */
long long plant_host_now_us(void);
/* Start this program afresh (a cold reboot) with both sockets kept open for the new boot. */
void plant_host_reboot(int serial_fd, int plant_fd);

#endif
