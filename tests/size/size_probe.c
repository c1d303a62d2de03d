/* Bare-metal Cortex-M4F image holding one rig instance: measures the core's flash and RAM footprint. */
#include "rig.h"

static rig_t rig;
static rig_tx_t tx;
static rig_samples_t samples;
static rig_outputs_t outputs;
static volatile uint8_t rx_byte;
static volatile uint64_t uptime_us;

void Reset_Handler(void);
void Reset_Handler(void)
{
    rig_init(&rig, 0u);
    for (;;) {
        uint8_t b = rx_byte;
        rig_step(&rig, &samples, uptime_us, &b, 1u, &outputs, &tx);
        tx.len = 0u;
    }
}

/* Minimal vector table: initial stack pointer and reset handler, as addresses. */
extern uint32_t __stack_top;
__attribute__((section(".isr_vector"), used)) static const uintptr_t VECTORS[2] = {
    (uintptr_t)&__stack_top, (uintptr_t)Reset_Handler};
