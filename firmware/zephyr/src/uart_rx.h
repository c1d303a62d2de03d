/* A UART's received bytes into a ring buffer from its interrupt, waking the thread that takes them: the
 * rig's serial link in main.c, and the virtual wires of the emulated board. */
#ifndef UART_RX_H
#define UART_RX_H

#include <zephyr/device.h>
#include <zephyr/kernel.h>
#include <zephyr/sys/ring_buffer.h>

typedef struct {
    struct ring_buf *ring; /* full: a byte is dropped, and the frame or line it was in fails its checks */
    struct k_sem *wake;
} uart_rx_t;

/* The UART's interrupt callback; user_data: its uart_rx_t. */
void uart_rx_isr(const struct device *dev, void *user_data);

#endif
