"""Job-level features for duration / iteration prediction (Lucid Workload Estimate, A-SRPT, QSSF).

Everything is computable at the job's submission from the past only: a past job's duration enters a
feature only once that job has *finished* (its end = submit + queueing, when the trace records it, +
duration) at or before the submission being described. History features are joined with an as-of join
on time, never by row position, so a later job can never leak into an earlier one.
"""
from __future__ import annotations

import hashlib
from typing import Iterable

import numpy as np
import pandas as pd

from features.jobtable import JobTable

#: History keys: name -> columns that identify "the same kind of job".
HISTORY_KEYS: dict[str, tuple[str, ...]] = {
    "user": ("user",),
    "org": ("org",),
    "gpus": ("num_gpus",),
    "user_gpus": ("user", "num_gpus"),
    "org_gpus": ("org", "num_gpus"),
    "group": ("group_id",),
    "name": ("name_bucket",),
}
ROLL = 10  # jobs in the rolling window
#: Keys whose job count is kept as a feature. Counts of broad keys (org, GPU size) grow with time and
#: act as a clock that leaves the training range on later data, so they are left out.
COUNT_KEYS = ("user", "user_gpus", "group", "name")


def stable_hash(parts: Iterable[object], length: int = 12) -> str:
    """A hash that is the same across processes and machines (Python's hash() is salted)."""
    text = "\x1f".join("" if p is None or (isinstance(p, float) and np.isnan(p)) else str(p) for p in parts)
    return hashlib.md5(text.encode()).hexdigest()[:length]


def normalise_name(name: object) -> str | None:
    """Job names without run-specific digits and separators ('bert_lr0.01_seed3' -> 'bert_lr_seed')."""
    if name is None or (isinstance(name, float) and np.isnan(name)) or name is pd.NA:
        return None
    import re

    text = re.sub(r"[0-9]+", "", str(name).lower())
    text = re.sub(r"[._\-]+", "_", text).strip("_")
    return text or None


def recurring_group_id(frame: pd.DataFrame) -> pd.Series:
    """A-SRPT's recurring-job id: a hash over user and normalised job name (command-like fields).

    Traces with fewer fields use the equivalent key they have: (user, GPUs) without names, (org, GPUs)
    without users (Philly's processed file).
    """
    names = frame["job_name"].map(normalise_name) if "job_name" in frame else pd.Series(None, index=frame.index)
    users = frame["user"] if "user" in frame else pd.Series(pd.NA, index=frame.index)
    orgs = frame["org"] if "org" in frame else pd.Series(pd.NA, index=frame.index)
    gpus = frame["num_gpus"]
    out = [group_key(n, None if u is pd.NA else u, None if o is pd.NA else o, g)
           for n, u, o, g in zip(names, users.astype(object), orgs.astype(object), gpus.astype(object))]
    return pd.Series(out, index=frame.index, dtype="string")


def group_key(name: str | None, user: object, org: object, gpus: object) -> str:
    """One job's recurring-group id (:func:`recurring_group_id`), from its normalised name, user, org and
    GPU count (None where missing); also called per record by models.serving (no pandas per request)."""
    if name is not None and user is not None:
        return "n" + stable_hash((user, name))
    if user is not None:
        return "u" + stable_hash((user, gpus))
    return "o" + stable_hash((org, gpus))


def _end_times(frame: pd.DataFrame) -> np.ndarray:
    queue = frame["queue_time"].fillna(0.0).to_numpy(dtype=float) if "queue_time" in frame else 0.0
    return frame["submit_time"].to_numpy(dtype=float) + queue + frame["duration"].to_numpy(dtype=float)


def history_features(frame: pd.DataFrame, keys: dict[str, tuple[str, ...]] | None = None) -> pd.DataFrame:
    """Per key: jobs finished so far, their mean / rolling mean / rolling median / last duration."""
    keys = keys or HISTORY_KEYS
    order = np.argsort(frame["submit_time"].to_numpy(), kind="stable")
    jobs = frame.iloc[order]
    end = _end_times(jobs)
    out = pd.DataFrame(index=jobs.index)
    for name, cols in keys.items():
        if not all(c in jobs for c in cols) or jobs[list(cols)].isna().all().any():
            for stat in ("count", "mean", "roll_mean", "roll_median", "last"):
                if stat != "count" or name in COUNT_KEYS:
                    out[f"hist_{name}_{stat}"] = np.nan
            continue
        key = jobs[list(cols)].astype(str).agg("|".join, axis=1) if len(cols) > 1 else jobs[cols[0]].astype(str)
        key = key.where(jobs[list(cols)].notna().all(axis=1), None)
        done = pd.DataFrame({"key": key.to_numpy(), "end": end, "duration": jobs["duration"].to_numpy(dtype=float)})
        done = done[done["key"].notna()].sort_values(["key", "end"], kind="stable")
        g = done.groupby("key", sort=False)["duration"]
        done["count"] = g.cumcount() + 1
        done["mean"] = g.cumsum() / done["count"]
        done["roll_mean"] = g.transform(lambda s: s.rolling(ROLL, min_periods=1).mean())
        done["roll_median"] = g.transform(lambda s: s.rolling(ROLL, min_periods=1).median())
        done["last"] = done["duration"]
        done = done.sort_values("end", kind="stable")
        left = pd.DataFrame({"key": key.to_numpy(), "t": jobs["submit_time"].to_numpy(dtype=float),
                             "row": np.arange(len(jobs))})
        known = left[left["key"].notna()].sort_values("t", kind="stable")
        merged = pd.merge_asof(known, done.drop(columns="duration"), left_on="t", right_on="end", by="key",
                               allow_exact_matches=False, direction="backward")
        for stat in ("count", "mean", "roll_mean", "roll_median", "last"):
            if stat == "count" and name not in COUNT_KEYS:
                continue
            col = np.full(len(jobs), np.nan)
            col[merged["row"].to_numpy()] = merged[stat].to_numpy(dtype=float)
            if stat == "count":
                col = np.where(np.isnan(col) & left["key"].notna().to_numpy(), 0.0, col)
            out[f"hist_{name}_{stat}"] = col
    return out.loc[frame.index]


def calendar_features(frame: pd.DataFrame, month: bool = False) -> pd.DataFrame:
    """Hour and weekday of submission (from submit_ts, else from submit_time on a day clock). Month is
    optional: with time-based splits the test months are never seen in training."""
    ts = frame["submit_ts"]
    if ts.notna().all():
        out = pd.DataFrame({"hour": ts.dt.hour, "weekday": ts.dt.weekday}, index=frame.index)
        if month:
            out["month"] = ts.dt.month
        return out
    t = frame["submit_time"].to_numpy(dtype=float)
    return pd.DataFrame({"hour": (t // 3600 % 24).astype(int), "weekday": (t // 86400 % 7).astype(int)},
                        index=frame.index)


def duration_features(table: JobTable | pd.DataFrame, *, name_bucketer=None) -> pd.DataFrame:
    """The model-ready feature frame for duration models (one row per job, same index).

    Columns: num_gpus, num_nodes, org, user (categorical codes as strings), hour, weekday,
    group_id, name_bucket (when a bucketer is given and names exist) and the history features.
    """
    frame = table.frame if isinstance(table, JobTable) else table
    frame = frame.copy()
    frame["group_id"] = frame["group_id"].fillna(recurring_group_id(frame)) if "group_id" in frame else \
        recurring_group_id(frame)
    if name_bucketer is not None and "job_name" in frame and frame["job_name"].notna().any():
        frame["name_bucket"] = name_bucketer.transform(frame["job_name"])
    else:
        frame["name_bucket"] = pd.NA
    feats = pd.DataFrame(index=frame.index)
    feats["num_gpus"] = frame["num_gpus"].astype(float)
    feats["num_nodes"] = frame["num_nodes"].astype(float) if "num_nodes" in frame else np.nan
    for col in ("org", "user", "group_id", "name_bucket"):
        feats[col] = frame[col].astype("string").fillna("<unknown>").astype(str) if col in frame else "<unknown>"
    feats = feats.join(calendar_features(frame).astype(float))  # floats: MLflow schemas allow missing values
    feats = feats.join(history_features(frame))
    return feats


CATEGORICAL = ("org", "user", "group_id", "name_bucket")
