"""Lucid's dynamic strategy and time-aware scaling as pure rules on the throughput forecast.

Every tick the forecast (submissions expected in the coming hour) is compared with the hourly
submissions seen so far: G_SS is 2 (Default) when busy (75th percentile), 1 (Apathetic) when moderate
or rising, 0 (off) when quiet (25th percentile) and not rising. A burst is a forecast in the top decile
of hours seen and at least twice the median: then T_prof halves, N_prof drops to 1 GPU and the profiler
borrows idle VC nodes; when the burst has passed the borrowed nodes go back.
"""
from __future__ import annotations

import bisect
import math
from collections import deque

import numpy as np

WINDOW_HOURS = 24 * 7 * 6  # hourly observations the percentiles look back on (ticks, at most)
MIN_HOURS = 6  # ticks seen before the strategy acts


def levels(hourly: list[float]) -> tuple[float, float, float, float]:
    """(quiet, median, busy, top): the 25th, 50th, 75th and 90th percentiles of recent hourly counts."""
    hist = np.asarray(hourly[-WINDOW_HOURS:])
    quiet, median, busy, top = np.percentile(hist, (25, 50, 75, 90))
    return float(quiet), float(median), float(busy), float(top)


class RollingLevels:
    """``levels`` of the hourly counts appended so far, kept incrementally: the window's values stay sorted
    (one insertion and at most one removal per tick) and the four percentiles are read off them with
    ``np.percentile``'s linear rule, step for step (the same floating-point operations, so the same bits).
    Re-sorting up to 1,008 values through ``np.percentile`` on every tick cost ~175 us, several seconds of a
    Lucid replay with tens of thousands of ticks. ``levels(hourly)`` stays the reference (a test compares)."""

    QS = (0.25, 0.5, 0.75, 0.9)  # np.percentile's q / 100 for (25, 50, 75, 90), as numpy divides them

    def __init__(self, window: int = WINDOW_HOURS) -> None:
        self.window = window
        self.recent: deque[float] = deque()  # the window in arrival order
        self.ordered: list[float] = []  # the same values, sorted
        self.nans = 0

    def add(self, value: float) -> None:
        value = float(value)
        self.recent.append(value)
        if math.isnan(value):
            self.nans += 1
        else:
            bisect.insort(self.ordered, value)
        if len(self.recent) > self.window:
            old = self.recent.popleft()
            if math.isnan(old):
                self.nans -= 1
            else:
                del self.ordered[bisect.bisect_left(self.ordered, old)]

    def levels(self) -> tuple[float, float, float, float]:
        if self.nans or not self.ordered:  # numpy's NaN and empty-input rules: the reference decides
            return levels(list(self.recent))
        a, n = self.ordered, len(self.ordered)
        out = []
        for q in self.QS:
            virtual = (n - 1) * q
            prev = math.floor(virtual)
            nxt = min(prev + 1, n - 1)
            gamma = virtual - prev
            lo, hi = a[prev], a[nxt]
            diff = hi - lo
            out.append(hi - diff * (1 - gamma) if gamma >= 0.5 else lo + diff * gamma)
        return out[0], out[1], out[2], out[3]


def sharing_mode(forecast: float, last: float, before: float, quiet: float, busy: float) -> int:
    """G_SS from the forecast: 2 busy, 1 moderate (or the last hour rose), 0 quiet."""
    return 2 if forecast >= busy else (1 if forecast > quiet or last > before else 0)


def is_burst(forecast: float, top: float, median: float) -> bool:
    return forecast > 0 and forecast >= max(top, 2 * median)


def profiler_limits(burst: bool, t_prof: float, n_prof: int) -> tuple[float, int]:
    """(T_prof, N_prof) in force: halved T_prof and 1-GPU jobs only during a burst."""
    return (t_prof / 2, 1) if burst else (t_prof, n_prof)
