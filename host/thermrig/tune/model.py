"""The gains from the relay's record: a first-order-plus-dead-time model of the chassis air fitted to the
whole record (the rise from the room and the oscillation), and Skogestad's SIMC rule on it.

Why a model and not Ziegler-Nichols on the relay's Ku and Tu: the chassis air is a slow lag (tau: minutes)
behind a short delay (heater element and bead: seconds), far from the delay-dominated loops ZN's rules
were made for; on the default chassis ZN "no overshoot" gave kp 127, kd 2057 and a +20 °C step that
overshot 2 °C and took 276 s to settle, where the firmware's hand-set gains take 106 s. SIMC
(Skogestad 2003, "Simple analytic rules for model reduction and PID controller tuning") sets the
closed loop's time constant tau_c from the delay: kp = tau / (K (tau_c + theta)),
Ti = min(tau, 4 (tau_c + theta)), with Skogestad's "tight" tau_c = theta (gain margin about 3); it
reproduces the size of the firmware's defaults on the default
chassis and scales them with the chassis (a heater twice as strong halves kp; an air mass twice as large
doubles it). The derivative is the firmware's own proportion to kp (kd / kp = 0.5 s, on the measurement,
filtered), which damps the bead's lag without amplifying its 0.25 °C steps."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from thermrig.link.stored_gains import Gains
from thermrig.protocol import limits
from thermrig.tune.relay import RelayRecord, TuneError

DT_S = 1.0  # the record is fitted in 1 s means
TAU_C_PER_THETA = 1.0  # SIMC's tau_c as a multiple of the delay: Skogestad's "tight" choice
TD_S = limits.AIR_KD / limits.AIR_KP  # the derivative time of the firmware's defaults


@dataclass(frozen=True)
class Fopdt:
    """y' = (K u(t - theta) - y) / tau: y the air over the room (°C), u the heater duty (permille)."""

    gain_c_per_pm: float
    tau_s: float
    theta_s: float
    rms_c: float  # the fit's residual

    def describe(self) -> str:
        return (
            f"K {self.gain_c_per_pm * 1000:.1f} °C at full heater, tau {self.tau_s:.0f} s, "
            f"dead time {self.theta_s:.1f} s (fit residual {self.rms_c:.2f} °C rms)"
        )


def _seconds(rec: RelayRecord) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    t = np.asarray(rec.t_s)
    idx = np.floor(t / DT_S).astype(int)
    n = idx.max() + 1
    count = np.bincount(idx, minlength=n)
    keep = count > 0
    u = np.bincount(idx, np.asarray(rec.heater_pm), minlength=n)[keep] / count[keep]
    y = np.bincount(idx, np.asarray(rec.air_c), minlength=n)[keep] / count[keep] - rec.room_c
    return np.arange(n)[keep] * DT_S, u, y


def _simulate(t: np.ndarray, u: np.ndarray, y0: float, k: float, tau: float, theta: float) -> np.ndarray:
    from scipy.signal import lfilter  # here, not at the top: every CLI command imports this module

    a = math.exp(-DT_S / tau)
    delayed = np.interp(t - theta, t, u, left=u[0])
    out = lfilter([k * (1 - a)], [1.0, -a], delayed, zi=[a * y0])[0]
    return np.concatenate(([y0], out[:-1]))


def fit_fopdt(rec: RelayRecord) -> Fopdt:
    """The model that best reproduces the record (least squares over every second)."""
    from scipy.optimize import least_squares  # here, not at the top: every CLI command imports this module

    t, u, y = _seconds(rec)
    if len(t) < 60 or u.max() <= 0:
        raise TuneError("the relay record is too short to fit (under a minute, or the heater never ran)")
    y0 = float(y[0])

    def residual(p: np.ndarray) -> np.ndarray:
        return _simulate(t, u, y0, p[0], p[1], p[2]) - y

    best: tuple[float, np.ndarray] | None = None
    for tau in np.geomspace(20, 5000, 12):
        for theta in (1.0, 5.0, 15.0):
            unit = _simulate(t, u, 0.0, 1.0, tau, theta)
            free = _simulate(t, np.zeros_like(u), y0, 1.0, tau, theta)
            k = float(np.dot(unit, y - free) / max(np.dot(unit, unit), 1e-12))
            if k <= 0:
                continue
            cost = float(np.sum((unit * k + free - y) ** 2))
            if best is None or cost < best[0]:
                best = (cost, np.array([k, tau, theta]))
    if best is None:
        raise TuneError("the air did not follow the heater: is the heater aimed at the chassis-air bead?")
    fit = least_squares(residual, best[1], bounds=([1e-6, 5.0, 0.0], [1.0, 20000.0, 60.0]), x_scale=[0.01, 100, 5])
    k, tau, theta = (float(v) for v in fit.x)
    rms = float(np.sqrt(np.mean(fit.fun**2)))
    return Fopdt(k, tau, theta, rms)


def simc_gains(model: Fopdt, tau_c_per_theta: float = TAU_C_PER_THETA) -> Gains:
    """SIMC PI on the model (tau_c = tau_c_per_theta x theta, at least 2 s: the bead and the filter),
    with the firmware's derivative time."""
    theta = max(model.theta_s, 1.0)
    tau_c = max(tau_c_per_theta * theta, 2.0)
    kp = model.tau_s / (model.gain_c_per_pm * (tau_c + theta))
    ti = min(model.tau_s, 4 * (tau_c + theta))
    return Gains(kp, kp / ti, kp * TD_S)
