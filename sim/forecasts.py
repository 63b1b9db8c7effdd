"""Forecasts by time: providers that a timer queries and that see only the past when asked.

A provider is fed observations in time order (``observe(t, amount)``, e.g. one per submission) and
answers ``forecast(now)`` from the observations at or before ``now`` only: a query never sees an
observation stamped later than ``now``, even if one was recorded (a test feeds a whole series and
checks this). ``update(now)`` retrains whatever model the provider has on the past. Lucid's throughput
forecast (submissions in the coming hour, behind its dynamic sharing and time-aware scaling) is one
provider; GFS' quota forecast every 300 s will be another.
"""
from __future__ import annotations

import bisect
from typing import Any, Protocol

import numpy as np

HOUR = 3600.0


class ForecastProvider(Protocol):
    def observe(self, t: float, amount: float = 1.0) -> None:
        """Record ``amount`` of the forecast quantity at time ``t`` (non-decreasing ``t``)."""

    def forecast(self, now: float) -> float | None:
        """The forecast at ``now`` from observations at or before ``now`` (None: no forecast yet)."""

    def update(self, now: float) -> None:
        """Retrain on observations before ``now`` (a no-op for providers without a model)."""


class EventSeries:
    """Observations in time order, with counts by window and by fixed bin, restricted to the past."""

    def __init__(self, bin_seconds: float = 600.0) -> None:
        self.bin = float(bin_seconds)
        self.times: list[float] = []
        self.amounts: list[float] = []
        self._cum: list[float] = [0.0]

    def observe(self, t: float, amount: float = 1.0) -> None:
        if self.times and t < self.times[-1]:
            raise ValueError(f"observation at {t} after one at {self.times[-1]}: observations must come in "
                             "time order")
        self.times.append(float(t))
        self.amounts.append(float(amount))
        self._cum.append(self._cum[-1] + float(amount))

    def total(self, start: float, stop: float) -> float:
        """Sum of observations with ``start < t <= stop``."""
        i = bisect.bisect_right(self.times, start)
        j = bisect.bisect_right(self.times, stop)
        return self._cum[j] - self._cum[i] if j > i else 0.0

    def bins(self, start: int, stop: int, now: float) -> np.ndarray:
        """Sums per bin for bins [start, stop), counting only observations at or before ``now`` (bins
        that end after ``now`` are refused: they are not complete yet)."""
        if stop * self.bin > now + 1e-9:
            raise ValueError(f"bin {stop - 1} ends at {stop * self.bin}, after now={now}: not complete yet")
        out = np.zeros(max(0, stop - start))
        lo = bisect.bisect_left(self.times, start * self.bin)
        hi = bisect.bisect_left(self.times, stop * self.bin)
        for t, a in zip(self.times[lo:hi], self.amounts[lo:hi]):
            out[int(t // self.bin) - start] += a
        return out


class ThroughputForecast:
    """Lucid's throughput forecast: submissions expected in the coming hour.

    ``mode="model"``: Lucid's Throughput Predict Model (a LightGBM or GA2M on calendar, lag and rolling
    features of the 10-minute submission series, :class:`models.update.ThroughputUpdater`), retrained
    by ``update`` on the completed bins so far and queried at most hourly; it answers only while it
    beats the naive last value on the latest day. Otherwise, and with ``mode="trend"``, the past hour
    plus half its change over the hour before. ``source`` says which answered the last query.
    """

    HORIZON = 3  # forecast the bin 30 minutes ahead: the middle of the coming hour

    def __init__(self, origin: Any, mode: str = "model", model: str = "lightgbm", bin_seconds: float = 600.0) -> None:
        if mode not in ("model", "trend"):
            raise ValueError("mode must be 'model' or 'trend'")
        from models.update import ThroughputUpdater

        self.origin, self.mode = origin, mode
        self.series = EventSeries(bin_seconds)
        self.updater = ThroughputUpdater(model=model, horizon=self.HORIZON)
        self.source = "none"
        self._at, self._value = -np.inf, 0.0

    def observe(self, t: float, amount: float = 1.0) -> None:
        self.series.observe(t, amount)

    def hours(self, now: float) -> tuple[float, float]:
        """Submissions in (now - 1 h, now] and in (now - 2 h, now - 1 h]."""
        s = self.series
        return s.total(now - HOUR, now), s.total(now - 2 * HOUR, now - HOUR)

    def frame(self, start: int, stop: int, now: float):
        """Submissions per bin over complete bins [start, stop), on the wall clock."""
        import pandas as pd

        counts = self.series.bins(start, stop, now)
        index = self.origin + pd.to_timedelta(np.arange(start, stop) * self.series.bin, unit="s")
        return pd.DataFrame({"submit_gpu_job": counts}, index=index)

    def forecast(self, now: float) -> float:
        value = self._model(now) if self.mode == "model" else None
        if value is None:
            last, before = self.hours(now)
            self.source = "trend"
            return last + 0.5 * (last - before)
        self.source = "model"
        return value

    def _model(self, now: float) -> float | None:
        from features.series import throughput_features

        if self.updater.fitted_ is None:
            return None
        if now - self._at < HOUR:
            return self._value
        b = self.series.bin
        stop = int(now // b)  # completed bins
        start = max(0, stop - 7 * 144 - 150)  # a week of lags plus the longest rolling window
        if not self.series.total(max(0, stop - 7 * 144) * b - 1e-9, stop * b - 1e-9):
            self._at, self._value = now, 0.0  # no submission for a week: the trace has ended
            return self._value
        X, _ = throughput_features(self.frame(start, stop, now), horizon=self.HORIZON, keep_unlabelled=True)
        if X.empty:
            return None
        self._at = now
        self._value = max(0.0, float(self.updater.predict(X.iloc[[-1]])[0])) * HOUR / b
        return self._value

    def update(self, now: float) -> None:
        stop = int(now // self.series.bin)
        if stop < 9 * 144:
            return
        self.updater.update(now, self.frame(0, stop, now))
        self._at = -np.inf

    @property
    def records(self) -> list[dict]:
        return self.updater.records
