"""Auto-tune of the chassis-air loop (`thermrig rig tune`): a relay experiment on the rig (relay.py), a
first-order-plus-dead-time model fitted to it and SIMC gains from the model (model.py), and a chassis-air
step judged as the hold figures are (air_step.py). The gains are kept per rig by thermrig.link.stored_gains
and sent at every connection."""
