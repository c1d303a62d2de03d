/* The rig's channel map, declared once: every channel's wire key, name, kind and plausible range. */
#ifndef RIG_CHANNELS_H
#define RIG_CHANNELS_H

#include <stdint.h>

#include "rig_config.h"
#include "textbuf.h"

typedef enum {
    RIG_CH_TC,       /* thermocouple on a MAX31855, centi-degC */
    RIG_CH_AMB_T,    /* SHT3x temperature, centi-degC */
    RIG_CH_AMB_RH,   /* SHT3x relative humidity, deci-percent */
    RIG_CH_FAN_RPM,  /* fan tach, RPM */
} rig_ch_kind_t;

typedef struct {
    const char *key;   /* wire key in TEL frames, e.g. "tc0" */
    const char *name;  /* what it measures, sent in HELLO's ch= */
    rig_ch_kind_t kind;
    uint8_t index;     /* which thermocouple or fan of the HAL */
    int32_t min;       /* plausible range in the kind's unit: the safety supervisor trips outside it */
    int32_t max;       /*   for thermocouples; for the other kinds it is the sensor's range */
} rig_channel_t;

#define RIG_NUM_CHANNELS (RIG_NUM_TC + 2u + RIG_NUM_FANS)

/* HELLO and TEL order. Thermocouples come first, RIG_CHANNELS[i] being thermocouple i. */
extern const rig_channel_t RIG_CHANNELS[RIG_NUM_CHANNELS];

/* The channel map as HELLO's ch= and the wires' "C" line give it: "key:name,..." in that order. */
void rig_channels_put(textbuf_t *tb);

#endif
