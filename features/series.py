"""Cluster time series: Venus throughput (Lucid's Throughput Predict) and per-organisation GPU demand
(GFS OrgLinear). Feature rows at time t use values up to and including t only; targets are values at
t + horizon. Splits are by time, relative to the series' own end, never to fixed dates.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from features.jobtable import TraceError
from features.paths import resolve_data_path

VENUS_THROUGHPUT = "helios/venus_throughput_10min_2020-04_2020-08.csv.gz"
EARTH_VC = "helios/earth_vc_1min_2020-05-01_2020-05-21.csv.gz"
EARTH_VC_DAILY = "helios/earth_vc_gpu_daily.csv"


def load_throughput(path: str | Path | None = None, data: str | Path | None = None) -> pd.DataFrame:
    """The 10-minute Venus series indexed by time (tz-naive local clock), one column per counter."""
    path = Path(path) if path else resolve_data_path(VENUS_THROUGHPUT, data)
    if not path.exists():
        raise TraceError(path, "file not found")
    frame = pd.read_csv(path, parse_dates=["time"]).set_index("time").sort_index()
    return frame.asfreq(pd.infer_freq(frame.index[:100]) or "10min").fillna(0.0)


def throughput_features(series: pd.DataFrame, target: str = "submit_gpu_job", horizon: int = 1,
                        windows: tuple[int, ...] = (6, 36, 144),
                        keep_unlabelled: bool = False) -> tuple[pd.DataFrame, pd.Series]:
    """Features at each bin t and the target ``target`` at t + horizon bins.

    Calendar: hour, weekday, minute of day (sin/cos), weekend flag. Lags of the target: 0..5 bins, one
    day and one week back (from t). Rolling mean / median / exponentially weighted 'soft sum' over
    ``windows`` bins (10 min bins: 1 h, 6 h, 1 day), trend = short minus long rolling mean, and the
    other counters at t. Rows without a full week of history are dropped, and so are rows without a
    target unless ``keep_unlabelled`` (the latest rows, to forecast from; their target is NaN).
    """
    if target not in series:
        raise ValueError(f"unknown target {target!r}; columns: {list(series.columns)}")
    y = series[target].astype(float)
    idx = series.index
    cols: dict[str, Any] = {}  # built as a dict, then one frame: far cheaper than column inserts
    cols["hour"] = idx.hour.astype(float)
    cols["weekday"] = idx.weekday.astype(float)
    minute = idx.hour * 60 + idx.minute
    cols["tod_sin"] = np.sin(2 * np.pi * minute / 1440)
    cols["tod_cos"] = np.cos(2 * np.pi * minute / 1440)
    cols["weekend"] = (idx.weekday >= 5).astype(float)
    for lag in range(6):
        cols[f"lag_{lag}"] = y.shift(lag).to_numpy()
    per_day = int(round(pd.Timedelta("1D") / (idx[1] - idx[0])))
    # Same time of day (of week) as the target, on the latest day (week) already observed at t: one day
    # before the target while horizon < 1 day, whole days (weeks) further back beyond (never a future bin).
    cols["lag_1d"] = y.shift((per_day - horizon) % per_day).to_numpy()
    cols["lag_1w"] = y.shift((7 * per_day - horizon) % (7 * per_day)).to_numpy()
    for w in windows:
        r = y.rolling(w, min_periods=1)
        cols[f"roll_mean_{w}"] = r.mean().to_numpy()
        cols[f"roll_median_{w}"] = r.median().to_numpy()
        cols[f"soft_sum_{w}"] = y.ewm(halflife=w / 2, adjust=False).mean().to_numpy() * w
    cols["trend"] = cols[f"roll_mean_{windows[0]}"] - cols[f"roll_mean_{windows[-1]}"]
    for col in series.columns:
        if col != target:
            cols[f"now_{col}"] = series[col].astype(float).to_numpy()
    X = pd.DataFrame(cols, index=idx)
    target_series = y.shift(-horizon).rename(f"{target}_t+{horizon}")
    keep = X.notna().all(axis=1) & (target_series.notna() | keep_unlabelled)
    keep &= np.arange(len(X)) >= 7 * per_day
    return X[keep], target_series[keep]


def time_split(index: pd.Index, test_fraction: float | None = None, test_days: float | None = None):
    """Boolean masks (train, test): the last test_days (or fraction) of the index is the test set."""
    if test_days is not None:
        cut = index.max() - pd.Timedelta(days=test_days)
    else:
        pos = int(len(index) * (1 - (test_fraction if test_fraction is not None else 0.2)))
        cut = index[min(max(pos, 1), len(index) - 1)]
    test = np.asarray(index > cut)
    return ~test, test


def rolling_origins(index: pd.DatetimeIndex, freq: str = "MS", min_history: str | pd.Timedelta = "50D",
                    min_test_rows: int = 1) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """Rolling-origin splits: for each period of ``freq`` (``"MS"`` months, ``"W-MON"`` weeks) with at
    least ``min_history`` of rows before it and ``min_test_rows`` rows in it, (label, train = every row
    before the period, test = the period's rows). Why: one holdout month is a noisy judge; a model and
    its loss are chosen by the mean over many origins, each trained only on its own past."""
    index = pd.DatetimeIndex(index)
    if len(index) == 0:
        return []
    first, last = index.min(), index.max()
    begins = pd.date_range(first.normalize() - pd.Timedelta(days=31), last, freq=freq)
    out = []
    for i, b in enumerate(begins):
        end = begins[i + 1] if i + 1 < len(begins) else last + pd.Timedelta(1, "ns")
        test = np.asarray((index >= b) & (index < end))
        if b - first < pd.Timedelta(min_history) or test.sum() < max(min_test_rows, 1):
            continue
        label = b.strftime("%Y-%m") if freq.startswith("M") else b.strftime("%Y-%m-%d")
        out.append((label, np.asarray(index < b), test))
    return out


def load_demand(path: str | Path | None = None, data: str | Path | None = None, freq: str = "10min",
                daily_path: str | Path | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-organisation GPU demand and organisation attributes from the Earth per-VC series.

    Demand of an organisation = GPUs of its running jobs + GPUs requested by its pending jobs
    (running_gpu_num + pending_gpu_num): what it would use if nothing queued, the quantity a quota
    must cover. Minute samples are averaged into ``freq`` bins. Returns (demand: time x org, attrs:
    org x [quota_gpus]) where quota_gpus is the VC's allotted GPUs (daily file when it lists the VC,
    else the median total_gpu_num of the series).
    """
    path = Path(path) if path else resolve_data_path(EARTH_VC, data)
    if not path.exists():
        raise TraceError(path, "file not found")
    raw = pd.read_csv(path, parse_dates=["time"], usecols=["vc", "time", "running_gpu_num", "pending_gpu_num",
                                                             "total_gpu_num"])
    raw["demand"] = raw["running_gpu_num"] + raw["pending_gpu_num"]
    demand = raw.pivot_table(index="time", columns="vc", values="demand", aggfunc="mean").sort_index()
    demand = demand.resample(freq).mean().interpolate(limit_direction="both")
    quota = raw.groupby("vc")["total_gpu_num"].median()
    daily = Path(daily_path) if daily_path else resolve_data_path(EARTH_VC_DAILY, data)
    if daily.exists():
        d = pd.read_csv(daily)
        last = d.drop(columns=["date", "total"], errors="ignore").iloc[-1]
        quota = pd.Series({vc: float(last[vc]) if vc in last and last[vc] > 0 else float(q)
                           for vc, q in quota.items()})
    attrs = pd.DataFrame({"quota_gpus": quota.reindex(demand.columns).astype(float)})
    return demand, attrs

