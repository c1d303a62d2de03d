"""The demo's procedure: a chassis heat step on a rig, recorded, judged and read back (`thermrig demo`)."""
