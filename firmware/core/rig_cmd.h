/* Host commands (rig_cmd.c): one decoded frame applied to the rig, its reply written for the caller.
 * rig.c sends the reply and keeps it for resends; nothing here sends or calls back into rig.c. */
#ifndef RIG_CMD_H
#define RIG_CMD_H

#include "rig.h"
#include "textbuf.h"

/* Apply f (HELLO, SET, CLEAR, PING, SAFE) and write its reply's body into reply: "ACK s ..." or
 * "NAK s REASON [DETAIL]", without SEQ or CRC. */
void rig_command(rig_t *rig, const frame_t *f, textbuf_t *reply);
/* A NAK's body; host_seq < 0 writes '-' (the frame could not be read). */
void rig_reply_nak(textbuf_t *reply, int32_t host_seq, const char *reason, const char *detail);

#endif
