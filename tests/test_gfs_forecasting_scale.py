"""The documented scale of GFS's forecasting table (pipelines/papers/gfs_forecasting.py): the full run's
models (Lag-TST only on request), one torch thread per pool fit, and CPU seconds per (model, origin)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import pipelines.papers.gfs_forecasting as fcm

SPEC = fcm.RollingSpec(lookback=24, horizon=6, n_origins=2, block_days=0.5)


def _demand(days: int = 3) -> pd.DataFrame:
    index = pd.date_range("2020-05-01", periods=days * 144, freq="10min")
    day = np.sin(np.arange(len(index)) * 2 * np.pi / 144)
    return pd.DataFrame({f"org{i}": 20 + 8 * (i + 1) * day for i in range(2)}, index=index)


class _ThreadSpy:
    """A forecaster that records torch's intra-op thread count while it is fitted."""

    horizon = SPEC.horizon
    seen: list[int] = []

    def fit(self, demand, attrs=None):
        import torch

        _ThreadSpy.seen.append(torch.get_num_threads())
        return self

    def forecast(self, demand, attrs, origins):
        from models.forecast import Forecast

        last = demand.dropna().iloc[-1].to_numpy()
        mean = np.repeat(last[None, :, None], self.horizon, axis=2).repeat(len(origins), axis=0)
        return Forecast(list(origins), list(demand.columns), mean, fixed_quantiles={0.9: mean, 0.95: mean})


def test_a_pool_fit_runs_on_one_torch_thread_and_reports_its_cpu():
    torch = pytest.importorskip("torch")
    demand = _demand()
    study = fcm.ForecastingStudy(demand, None, SPEC, {"spy": _ThreadSpy},
                                 fcm.rolling_blocks(len(demand), SPEC, 72))
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        _ThreadSpy.seen.clear()
        row = study.run(("spy", 0), threads=1)
        assert _ThreadSpy.seen == [1] and torch.get_num_threads() == 2  # restored afterwards
        assert row["model"] == "spy" and row["cpu_s"] >= 0.0 and row["seconds"] >= 0.0
    finally:
        torch.set_num_threads(before)


def test_the_pool_task_asks_for_one_thread(monkeypatch):
    import pipelines.papers.gfs as gfs

    calls = []

    class _Study:
        def run(self, task, threads=None):
            calls.append((task, threads))
            return {}

    class _Runner:
        study = _Study()

    monkeypatch.setattr(gfs, "_FORKED", _Runner())
    gfs._forecast_fit_in_worker(("TFT (GluonTS)", 0))
    assert calls == [(("TFT (GluonTS)", 0), 1)]


def test_full_run_leaves_lagtst_out_and_says_so():
    full = fcm.model_factories(fcm.RollingSpec(), quick=False)
    assert "Lag-TST (GluonTS)" not in full
    assert {"OrgLinear", "DLinear", "DeepAR (GluonTS)", "PatchTST (GluonTS)", "TFT (GluonTS)"} <= set(full)
    assert "Lag-TST (GluonTS)" in fcm.model_factories(fcm.RollingSpec(), quick=False, extra=True)
    rows = pd.DataFrame([{"model": m, "origin": o, "mae": 1.0, "ql_0.9": 1.0, "ql_0.95": 1.0, "seconds": 2.0,
                          "cpu_s": 1.5} for m in ("OrgLinear", "DLinear") for o in (0, 1)])
    text = fcm.markdown(fcm.summarise(rows), fcm.RollingSpec(), quick=False)
    assert "| OrgLinear |" in text and "| 4.0 | 3.0 |" in text  # seconds and CPU seconds over origins
    assert "Lag-TST (GluonTS) | left out" in text


class _Shifted(_ThreadSpy):
    """Last value as the mean; the 0.9 quantile `lift` above it (0 = the mean itself)."""

    lift = 0.0

    def fit(self, demand, attrs=None):
        return self

    def forecast(self, demand, attrs, origins):
        fc = super().forecast(demand, attrs, origins)
        q = fc.mean + self.lift
        return type(fc)(list(origins), list(demand.columns), fc.mean, fixed_quantiles={0.9: q, 0.95: q})


def test_each_row_says_how_often_the_truth_fell_below_the_09_quantile():
    demand = _demand()
    pos = list(range(200, 260, 6))
    low = fcm.score_block(_Shifted(), demand, None, 150, pos, SPEC.horizon)
    wide = _Shifted()
    wide.lift = 1e6  # a quantile above every value: covers all of them
    high = fcm.score_block(wide, demand, None, 150, pos, SPEC.horizon)
    truth = np.stack([demand.iloc[p: p + SPEC.horizon].to_numpy().T for p in pos]).ravel()
    last = np.stack([np.repeat(demand.iloc[p - 1].to_numpy()[:, None], SPEC.horizon, axis=1) for p in pos]).ravel()
    assert low["cover_0.9"] == pytest.approx(np.mean(truth <= last))
    assert 0.0 < low["cover_0.9"] < 1.0 and high["cover_0.9"] == 1.0
