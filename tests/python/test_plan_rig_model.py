"""The planner's rig model (testbed.simulated_rig_model.DirectRigModel: the plant stepped in the caller's thread
under model_link's port of the firmware's air loop) against the simulated rig on rigsim, the firmware
itself (SteppedRigModel): the same profile set from a cold rig and the drive busy, the two courses alike
frame for frame where they are judged: when the chassis air first reaches its target, where it and the
drive's controller settle, and how warm the drive gets under the workload."""

from __future__ import annotations

import statistics

import pytest

from thermrig.dut.replay import Pattern
from thermrig.dut.rig_model import RigModel
from thermrig.hardware.chassis_profiles import load_profile
from thermrig.protocol.messages import Telemetry
from thermrig.testbed.simulated_rig_model import STEP_S, rig_model, stepped_rig_model

pytestmark = pytest.mark.timeout(600)
DRIVE = "950pro_512"
SETTLE_S = 900.0  # rig s from a cold rig with the profile set: the chassis at its target
BUSY_S = 300.0  # then the drive writing flat out


def course(model: RigModel, args: dict[str, int]) -> list[Telemetry]:
    """The profile set on a cold rig, SETTLE_S idle then BUSY_S of sequential writes: every frame."""

    def work() -> list[Telemetry]:
        q = model.link.subscribe()
        frames: list[Telemetry] = []
        try:
            model.link.set(**args)
            for seconds, pattern in ((SETTLE_S, None), (BUSY_S, Pattern(write=True, random=False, bs=128 * 1024))):
                model.heat(pattern)
                start = None
                while True:
                    tel = q.get(timeout=30)
                    frames.append(tel)
                    start = tel.uptime_ms if start is None else start
                    if tel.uptime_ms - start >= seconds * 1000:
                        break
        finally:
            model.link.unsubscribe(q)
            model.heat(None)
        return frames

    try:
        return model.run(work)
    finally:
        model.close()


def reached_s(frames: list[Telemetry], channel: str, level: float) -> float:
    t0 = frames[0].uptime_ms
    return next((f.uptime_ms - t0) / 1000 for f in frames if f.named(channel).value >= level)


def mean(frames: list[Telemetry], channel: str, since_s: float, until_s: float) -> float:
    t0 = frames[0].uptime_ms
    return statistics.mean(
        f.named(channel).value for f in frames if since_s * 1000 <= f.uptime_ms - t0 < until_s * 1000
    )


def test_the_planners_model_runs_the_course_the_firmware_runs() -> None:
    profile = load_profile("dual_gpu_load")
    assert profile.air_c is not None
    args = profile.set_args()
    direct, firmware = course(rig_model(DRIVE), args), course(stepped_rig_model(DRIVE), args)
    said = []
    # the air loop: when the chassis first reaches its target (the stepped rig's SET lands within a step)
    rise = [reached_s(f, "chassis_air", profile.air_c - 3.0) for f in (direct, firmware)]
    said.append(f"air at 3 °C under its target after {rise[0]:.1f} / {rise[1]:.1f} s")
    settled = {
        ch: [mean(f, ch, SETTLE_S - 120, SETTLE_S) for f in (direct, firmware)] for ch in ("chassis_air", "drive_ctrl")
    }
    hot = [mean(f, "drive_ctrl", SETTLE_S + BUSY_S - 60, SETTLE_S + BUSY_S) for f in (direct, firmware)]
    said += [f"{ch} settled {a:.2f} / {b:.2f} °C" for ch, (a, b) in settled.items()]
    said.append(f"drive_ctrl at the end of the writes {hot[0]:.2f} / {hot[1]:.2f} °C")
    print("; ".join(said))
    assert abs(rise[0] - rise[1]) <= STEP_S + 1.0, said
    for a, b in settled.values():
        assert abs(a - b) <= 0.1, said
    assert abs(hot[0] - hot[1]) <= 0.2, said
