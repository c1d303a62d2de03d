"""A freshly built rig's guided first power-up (`thermrig rig bringup`): phases with operator prompts, each
PASS or FAIL with what it measured and what to fix (docs/build-a-rig.md, step 5)."""
