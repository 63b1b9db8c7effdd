"""Lucid's dynamic strategy and time-aware scaling as pure rules on the throughput forecast.

Every tick the forecast (submissions expected in the coming hour) is compared with the hourly
submissions seen so far: G_SS is 2 (Default) when busy (75th percentile), 1 (Apathetic) when moderate
or rising, 0 (off) when quiet (25th percentile) and not rising. A burst is a forecast in the top decile
of hours seen and at least twice the median: then T_prof halves, N_prof drops to 1 GPU and the profiler
borrows idle VC nodes; when the burst has passed the borrowed nodes go back.
"""
from __future__ import annotations

import numpy as np

WINDOW_HOURS = 24 * 7 * 6  # hourly observations the percentiles look back on (ticks, at most)
MIN_HOURS = 6  # ticks seen before the strategy acts


def levels(hourly: list[float]) -> tuple[float, float, float, float]:
    """(quiet, median, busy, top): the 25th, 50th, 75th and 90th percentiles of recent hourly counts."""
    hist = np.asarray(hourly[-WINDOW_HOURS:])
    quiet, median, busy, top = np.percentile(hist, (25, 50, 75, 90))
    return float(quiet), float(median), float(busy), float(top)


def sharing_mode(forecast: float, last: float, before: float, quiet: float, busy: float) -> int:
    """G_SS from the forecast: 2 busy, 1 moderate (or the last hour rose), 0 quiet."""
    return 2 if forecast >= busy else (1 if forecast > quiet or last > before else 0)


def is_burst(forecast: float, top: float, median: float) -> bool:
    return forecast > 0 and forecast >= max(top, 2 * median)


def profiler_limits(burst: bool, t_prof: float, n_prof: int) -> tuple[float, int]:
    """(T_prof, N_prof) in force: halved T_prof and 1-GPU jobs only during a burst."""
    return (t_prof / 2, 1) if burst else (t_prof, n_prof)
