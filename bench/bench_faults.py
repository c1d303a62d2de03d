"""The fault matrix in the simulated rig: every fault of docs/safety.md injected, the reaction and the
time it took in rig time (what `thermrig rig selftest --sim` prints)."""

from __future__ import annotations

from thermrig.conformance.fault_matrix import FAULT_CHECKS
from thermrig.conformance.rig_under_test import RigUnderTest
from thermrig.conformance.runner import run_all
from thermrig.dut.pacing import Pacing
from thermrig.link.rig_link import RigLink
from thermrig.sim.simulated_rig import SimConfig, SimulatedRig


def main() -> None:
    with SimulatedRig(SimConfig(pacing=Pacing.stepped(), seed=7)) as sim, RigLink(sim.port) as link:
        link.hello()
        results = [r for r, _ in run_all(RigUnderTest(link, sim), FAULT_CHECKS)]
    for r in results:
        mark = "ok  " if r.passed else "FAIL"
        print(f"  {mark} {r.name:<24} {r.figure if r.passed else r.detail}")
    print(f"  faults injected: {len(results)}, survived as specified: {sum(bool(r.passed) for r in results)}")


if __name__ == "__main__":
    main()
