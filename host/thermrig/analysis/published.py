"""What the seeds published, cell by cell: the numbers the virtual drive is calibrated against."""

from __future__ import annotations

from dataclasses import dataclass

ONSET_REL = 0.25  # acceptance: onset within +-25 % ...
ONSET_ABS_S = 5.0  # ... or +-5 s, whichever is larger
DEPTH_PP = 8.0  # depth within +-8 percentage points


@dataclass(frozen=True)
class PugetCell:
    """Seed 001 (Puget Systems, Samsung 950 Pro 512GB): "throttled by ~depth % after ~onset s"."""

    slot: str
    profile: str
    onset_s: float  # the middle of a published range ("~50-60 sec" -> 55)
    depth_pct: float
    published: str

    def onset_tolerance_s(self) -> float:
        return max(ONSET_REL * self.onset_s, ONSET_ABS_S)

    def judge(self, onset_s: float | None, depth_pct: float) -> tuple[bool, bool]:
        onset_ok = onset_s is not None and abs(onset_s - self.onset_s) <= self.onset_tolerance_s()
        return onset_ok, abs(depth_pct - self.depth_pct) <= DEPTH_PP


PUGET: tuple[PugetCell, ...] = (
    PugetCell("bottom", "single_gpu_idle", 55, 40, "~40% after ~50-60 sec"),
    PugetCell("top", "single_gpu_idle", 47.5, 45, "~45% after ~45-50 sec"),
    PugetCell("upright", "single_gpu_idle", 67.5, 42, "~42% after ~65-70 sec"),
    PugetCell("underside", "single_gpu_idle", 55.5, 48, "~48% after ~53-58 sec"),
    PugetCell("bottom", "dual_gpu_idle", 30, 60, "~60% after ~30 sec"),
    PugetCell("top", "dual_gpu_idle", 35, 55, "~55% after ~35 sec"),
    PugetCell("upright", "dual_gpu_idle", 65, 42, "~42% after ~65 sec"),
    PugetCell("bottom", "single_gpu_load", 40, 52, "~52% after ~40 sec"),
    PugetCell("top", "single_gpu_load", 25, 50, "~50% after ~25 sec"),
    PugetCell("upright", "single_gpu_load", 55, 48, "~48% after ~55 sec"),
    PugetCell("underside", "single_gpu_load", 25, 70, "~70% after ~25 sec"),
    PugetCell("bottom", "dual_gpu_load", 15.5, 68, "~68% after ~14-17 sec"),
    PugetCell("top", "dual_gpu_load", 7, 76, "~76% after ~7 sec"),
    PugetCell("upright", "dual_gpu_load", 42, 56, "~56% after ~40-44 sec"),
)
PUGET_RUNTIME_S = 120  # sequential write per cell; depth from its last 30 s

# Seed 004 (AnandTech, 950 Pro 512GB + Wings PX1): the heatsink "up to twice as fast" sustained
# sequential. Accepted band for sustained(heatsink) / sustained(bare), same slot and profile.
HEATSINK_RATIO = 2.0
HEATSINK_RATIO_BAND = (1.6, 2.4)
HEATSINK_CONDITION = ("top", "single_gpu_idle")  # an ordinary closed case, one idle GPU
HEATSINK_RUNTIME_S = 300  # sustained: the mean of the last 30 s of five minutes

# Seed 002 (AnandTech, SM951 512GB): ~2 min at peak sequential write; sustained 4 KB random write
# 7,878 IOPS bare vs 10,873 with a heatsink. Open test bench: no GPU heat.
SM951_CONDITION = ("top", "idle")
SM951_PEAK_S = 120.0
SM951_PEAK_BAND_S = (90.0, 150.0)
SM951_IOPS_BARE = 7878.0
SM951_IOPS_SINK = 10873.0
SM951_IOPS_REL = 0.10  # within 10 %
SM951_SEQ_RUNTIME_S = 240
SM951_RANDOM_RUNTIME_S = 600  # the sustained average: the last 300 s of ten minutes on a full drive
SM951_RANDOM_WINDOW_S = 300

# Seed 000 (AnandTech, 950 Pro 512GB, Angelbird Wings PX1): the mixed sweeps, pure reads to pure writes
# in 10 % steps of 3 minutes each, heatsink vs bare, an open bench (no GPU heat).
MIXED_CONDITION = ("top", "idle")
MIXED_STEP_S = 180
MIXED_STEPS = tuple(range(100, -1, -10))
# 4 KB random, QD3, 16 GB span: "random reads were essentially unaffected by the heatsink", "the writes
# improved by enough to bring the average up by 12.5 % for the 512GB drive".
MIXED_RANDOM_GAIN = 0.125
MIXED_RANDOM_GAIN_BAND = (0.05, 0.25)  # the average's gain, accepted band
MIXED_READ_HEAVY = (100, 90, 80)  # read-heavy steps ...
MIXED_READ_HEAVY_REL = 0.05  # ... within 5 % of each other, heatsink or not ("essentially unaffected")
# 128 KB sequential, QD1, whole pre-filled drive: "the overall performance improvements are once again
# attributable to the non-mixed segments", "on the sub-tests with a balanced mix of reads and writes,
# the 950 Pro wasn't throttling even without the heatsink".
MIXED_SEQ_PURE_GAIN = 0.05  # the pure read and pure write steps gain at least this with the heatsink
MIXED_SEQ_BALANCED = (60, 50, 40)  # no throttling in these steps, bare: ...
MIXED_SEQ_UNTHROTTLED_REL = 0.02  # ... the bare drive within 2 % of the heatsink's throughput

# Seed 004 (AnandTech, 950 Pro 512GB + Wings PX1): after a fill, an hour of 4 KB random writes at QD32,
# scored on the last 400 s. "the 512GB drive was shackled by its thermal limits" (the heatsink raises
# the steady state) and "the extremely high consistency score of the 512GB drive without the heatsink
# indicates that the drive spent the entire steady-state period in a single power state".
CONSISTENCY_CONDITION = ("top", "idle")
CONSISTENCY_RUNTIME_S = 3600
CONSISTENCY_WINDOW_S = 400
CONSISTENCY_GAIN_MIN = 0.10  # the heatsink's steady-state IOPS at least 10 % above bare
