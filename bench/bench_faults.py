"""The fault matrix in the simulated rig: every fault of docs/safety.md injected, the reaction and the
time it took in rig time (what `thermrig rig selftest --sim` prints)."""

from __future__ import annotations

from thermrig.conformance.check_runner import run_all
from thermrig.conformance.fault_matrix import FAULT_CHECKS
from thermrig.conformance.result import Outcome, counts
from thermrig.conformance.rig_under_test import RigUnderTest
from thermrig.dut.pacing import Pacing
from thermrig.testbed import SimulatedRigSpec, open_testbed


def main() -> None:
    with open_testbed(SimulatedRigSpec(Pacing.stepped(), seed=7), keepalive=False) as bed:
        results = [r for r, _ in run_all(RigUnderTest(bed, bed.simulated), FAULT_CHECKS)]
    mark = {Outcome.PASSED: "ok  ", Outcome.NOT_APPLICABLE: "n/a ", Outcome.FAILED: "FAIL"}
    for r in results:
        print(f"  {mark[r.outcome]} {r.name:<24} {r.figure if r.passed else r.detail}")
    print(f"  faults injected: {len(results)}: {counts(results)}")


if __name__ == "__main__":
    main()
