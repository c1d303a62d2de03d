"""The rig conformance suite: the checks that prove a rig (simulated or real) behaves as the protocol
and safety documents say. `thermrig rig selftest` runs it; tests/conformance runs it under pytest."""
