"""The chassis-air step: a chassis heat step on a rig, recorded, judged and read back (`thermrig sim step`)."""
