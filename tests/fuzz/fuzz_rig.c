/* libFuzzer target: any bytes into the rig's receiver, interleaved with control steps. Checks that
 * the rig never leaves its limits and only ever sends valid frames. Mode byte: even = raw bytes;
 * odd = newline-separated payloads completed with a correct CRC, to reach the command parser. */
#include <stdint.h>
#include <string.h>

#include "crc16.h"
#include "frame.h"
#include "rig.h"

static rig_t rig;
static rig_tx_t tx;

static void require(int ok)
{
    if (!ok) {
        __builtin_trap();
    }
}

static void check_output(const rig_outputs_t *out)
{
    require(out->heater_pm <= RIG_FULL_SCALE_PM && out->heater_pm <= rig.heat_limit_pm);
    require(!safety_tripped(&rig.safety) || out->heater_pm == 0u);
    for (uint8_t i = 0; i < RIG_NUM_FANS; i++) {
        require(out->fan_pm[i] <= RIG_FULL_SCALE_PM);
    }
    require(rig.air_target_cc >= RIG_AIR_TARGET_MIN_CC && rig.air_target_cc <= RIG_AIR_TARGET_MAX_CC);
    /* Every frame the rig sent decodes. */
    size_t start = 0;
    for (size_t i = 0; i < tx.len; i++) {
        if (tx.buf[i] == '\n') {
            char line[FRAME_MAX_LEN + 2u];
            size_t n = i - start;
            require(n <= FRAME_MAX_LEN);
            memcpy(line, &tx.buf[start], n);
            line[n] = '\0';
            frame_t f;
            require(frame_decode(line, n, &f) == FRAME_OK);
            start = i + 1u;
        }
    }
    require(start == tx.len);
    tx.len = 0;
}

static void step(uint64_t now_us)
{
    rig_samples_t s = {0};
    for (uint8_t i = 0; i < RIG_NUM_TC; i++) {
        s.tc_word[i] = (uint32_t)(100 + 40 * i) << 18; /* 25..55 C */
    }
    s.tach_pulses[0] = s.tach_pulses[1] = 4;
    rig_outputs_t out;
    rig_step(&rig, &s, now_us, NULL, 0u, &out, &tx);
    check_output(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0u) {
        return 0;
    }
    rig_init(&rig, 0u);
    tx.len = 0;
    uint64_t now = 1000000u;
    step(now);
    if ((data[0] & 1u) == 0u) {
        /* Raw: feed in chunks of varying size, a control step between chunks. */
        size_t i = 1;
        while (i < size) {
            size_t n = 1u + (data[i] % 64u);
            n = n > size - i ? size - i : n;
            rig_rx(&rig, &data[i], n, now, &tx);
            check_output(&rig.out);
            now += 100000u;
            step(now);
            i += n;
        }
        return 0;
    }
    /* Payloads: each line gets "*CRC\n", so frames pass the codec and exercise the commands. */
    size_t start = 1;
    for (size_t i = 1; i <= size; i++) {
        if (i == size || data[i] == '\n') {
            uint8_t frame[FRAME_MAX_LEN + 8u];
            size_t n = i - start;
            if (n > FRAME_MAX_LEN) {
                n = FRAME_MAX_LEN;
            }
            memcpy(frame, &data[start], n);
            uint16_t crc = crc16_ccitt_false(frame, n);
            static const char HEX[] = "0123456789ABCDEF";
            frame[n++] = '*';
            for (int shift = 12; shift >= 0; shift -= 4) {
                frame[n++] = (uint8_t)HEX[(crc >> shift) & 0xFu];
            }
            frame[n++] = '\n';
            rig_rx(&rig, frame, n, now, &tx);
            check_output(&rig.out);
            now += 37000u;
            step(now);
            start = i + 1u;
        }
    }
    return 0;
}
