/* A UART's received bytes into a ring buffer from its interrupt. */
#include "uart_rx.h"

#include <zephyr/drivers/uart.h>

void uart_rx_isr(const struct device *dev, void *user_data)
{
    const uart_rx_t *rx = user_data;
    while (uart_irq_update(dev) && uart_irq_rx_ready(dev)) {
        uint8_t byte;
        while (uart_fifo_read(dev, &byte, 1) == 1) {
            (void)ring_buf_put(rx->ring, &byte, 1);
        }
    }
    k_sem_give(rx->wake);
}
