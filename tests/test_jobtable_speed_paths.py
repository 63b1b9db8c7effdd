"""The load path without needless copies or conversions (issue 23, loading a 1.75 M-row trace <= 3 s), and
proof that every shortcut it takes gives what the general path gives.

- Text columns of a JobTable stay pyarrow-backed (features.jobtable.TEXT_DTYPE) whichever reader read them;
  finalize and build_workload share columns instead of copying them, and never write into the caller's.
- Fast paths beside their general paths: constant workload lists, one-pass time-zone localisation, the
  job table of the evaluation built without pandas' inference, breakdowns of a single group.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import features.traces._io as trace_io
from features.jobtable import TEXT_DTYPE, LoadReport, finalize
from features.traces import load_trace
from tests.helpers import cluster, table

HELIOS = ("job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,duration\n"
          "a,u1,vc1,1,4,1,COMPLETED,2020-05-01 10:00:00,60\n"
          "b,u2,vc2,8,16,1,FAILED,2020-05-01 10:00:05,3600\n"
          "c,u1,vc1,16,4,2,COMPLETED,2020-05-01 09:00:00,25\n")
TEXT = ["job_id", "user", "org", "status", "job_name", "group_id", "gpu_type", "job_class", "model"]


@pytest.mark.parametrize("fast", [True, False])
def test_text_columns_are_pyarrow_backed_whichever_reader_read_them(monkeypatch, tmp_path, fast):
    """Before: finalize turned pyarrow text into Python strings (``astype("string")``: seconds per
    1.75 M-row column). Now every text column, read or filled, is TEXT_DTYPE, with the same values."""
    path = tmp_path / "cluster_log.csv"
    path.write_text(HELIOS)
    if not fast:
        monkeypatch.setattr(trace_io, "_read_arrow", lambda data, width: None)
    frame = load_trace(path, "helios", cache=False).frame
    for col in TEXT:
        assert frame[col].dtype == TEXT_DTYPE, col
        assert frame[col].dtype == "string"  # the semantics of pandas' string dtype stay
    assert frame["job_id"].tolist() == ["c", "a", "b"]
    assert frame["org"].tolist() == ["vc1", "vc1", "vc2"] and frame["model"].isna().all()


def test_finalize_shares_columns_and_leaves_the_callers_frame_alone():
    import pyarrow as pa

    ids = pd.Series(pd.arrays.ArrowStringArray(pa.chunked_array([pa.array(["x", "y"], pa.large_string())])))
    frame = pd.DataFrame({"job_id": ids, "submit_time": [5.0, 1.0], "submit_ts": pd.NaT, "duration": [1.0, 2.0],
                          "num_gpus": [1, 2], "user": ["u", None]})
    before = frame.copy()
    out = finalize(frame, LoadReport(source="t", format="t", rows_read=2), path="t").frame
    pd.testing.assert_frame_equal(frame, before)  # nothing written into the caller's columns
    assert out["job_id"].tolist() == ["y", "x"] and out["submit_time"].tolist() == [0.0, 4.0]
    assert out["user"].dtype == TEXT_DTYPE and out["user"].isna().tolist() == [True, False]
    unsorted = finalize(frame, LoadReport(source="t", format="t", rows_read=2), path="t", sort=False).frame
    assert unsorted["job_id"].array._pa_array is ids.array._pa_array  # the same buffers, not a copy
    assert isinstance(unsorted.index, pd.RangeIndex)


def test_build_workload_shares_the_tables_columns_and_leaves_the_table_alone():
    """Before: ``frame[keep].reset_index()`` copied every column of the table although every job was kept."""
    from sim.workload import build_workload

    t = table([(0, 10, 1), (1, 20, 2), (2, 30, 4)])
    columns = list(t.frame.columns)
    w = build_workload(t, cluster(gpus=8))
    assert np.shares_memory(w.frame["duration"].to_numpy(), t.frame["duration"].to_numpy())
    assert list(t.frame.columns) == columns and "sim_gpus" in w.frame  # columns added to the workload's only
    assert w.job_id == ["j0", "j1", "j2"] and w.duration == [10.0, 20.0, 30.0]
    rejected = build_workload(table([(0, 10, 1), (1, 20, 16)]), cluster(gpus=8))
    assert rejected.job_id == ["j0"] and list(rejected.frame.index) == [0]


@pytest.mark.parametrize("values", [
    np.zeros(4), np.full(3, np.inf), np.array([0.0, -0.0]), np.array([-0.0, -0.0]), np.array([np.nan, np.nan]),
    np.ones(5, dtype=int), np.array([1, 2, 1]), np.array([True, True]), np.array([True, False]), np.zeros(0),
    np.array([None, None], dtype=object), np.array(["a", "a"], dtype=object),
])
def test_constant_lists_equal_tolist(values):
    from sim.workload import _as_list

    fast, slow = _as_list(values), values.tolist()
    assert len(fast) == len(slow)
    assert all(type(a) is type(b) and repr(a) == repr(b) for a, b in zip(fast, slow))  # -0.0 and nan too


@pytest.mark.parametrize("tz", ["Asia/Shanghai", "America/New_York", "UTC", "Europe/London"])
def test_one_pass_localisation_equals_the_three_pass_one(tz):
    """Times clear of daylight-saving changes take one tz_localize; the result is the general path's."""
    parsed = pd.Series(pd.to_datetime(["2020-05-01 10:00:00", "2020-01-02 03:04:05", "2021-07-01 23:59:59"]))
    report = LoadReport(source="t", format="t")
    fast = trace_io._localize(parsed, tz, report, "submit_time")
    first = np.ones(len(parsed), dtype=bool)
    slow = parsed.dt.tz_localize(tz, ambiguous=first, nonexistent="shift_forward").dt.tz_convert("UTC")
    pd.testing.assert_series_equal(fast, slow)
    assert report.notes == []


def test_daylight_saving_times_still_take_the_counted_path():
    parsed = pd.Series(pd.to_datetime(["2020-11-01 01:30:00", "2020-03-08 02:30:00", "2020-05-01 10:00:00"]))
    report = LoadReport(source="t", format="t")
    out = trace_io._localize(parsed, "America/New_York", report, "submit_time")
    assert out.notna().all() and len(report.notes) == 2


def _job_table_by_inference(result) -> pd.DataFrame:
    """The evaluation's job table as pandas infers it from plain columns (the general path)."""
    w = result.workload
    submit, end, n = np.asarray(w.submit), np.asarray(result.end), len(w)
    frame = pd.DataFrame({
        "job_id": pd.array(list(w.job_id), dtype="string[pyarrow]"), "submit": submit, "first_start": np.asarray(result.first_start), "end": end,
        "wait": np.asarray(result.wait), "load": np.asarray(result.load), "train": np.asarray(result.train),
        "save": np.asarray(result.save), "jct": end - submit, "duration": np.asarray(w.duration),
        "gpus": np.asarray(w.gpus), "gpu_demand": np.asarray(w.gpu_demand, dtype=float),
        "preemptions": np.asarray(result.preemptions), "futile": np.asarray(result.futile),
        "evictions": np.asarray(result.evictions or [0] * n), "lost": np.asarray(result.lost or [0.0] * n),
        "failures": np.asarray(result.failures or [0] * n), "lost_work": np.asarray(result.lost_work or [0.0] * n),
        "status": np.where(np.asarray(result.failed or [False] * n, dtype=bool), "failed", "done").astype(object),
        "partition": w.frame["partition"].to_numpy(),
        "job_class": w.frame["job_class"].astype(object).fillna("all").to_numpy(),
        "model": w.frame["model"].astype(object).to_numpy(),
    })
    frame["size"] = np.where(frame["gpus"].to_numpy() > 8, ">8 GPUs", "<=8 GPUs").astype(object)
    frame["slowdown"] = frame["jct"] / np.maximum(frame["duration"], 1.0)
    return frame


def _breakdown_of_whole_groups(jobs: pd.DataFrame, by: str) -> pd.DataFrame:
    from evaluation.metrics import summarize

    return pd.DataFrame([{by: key, **summarize(group)} for key, group in jobs.groupby(by, sort=True)])


@pytest.mark.parametrize("columns", [
    {},  # no classes, no models: one group everywhere
    {"job_class": ["hp", None, "spot", "hp", None, "spot"], "org": ["a", "b", "a", "b", "a", "a"]},
])
def test_evaluation_tables_equal_the_general_path(columns):
    from evaluation.metrics import breakdown, job_table
    from sim import simulate
    from sim.workload import build_workload

    rows = [(0, 100, 1), (1, 50, 4), (2, 300, 16), (3, 10, 2), (5, 80, 8), (6, 40, 1)]
    parts = {"a": 2, "b": 2} if "org" in columns else None
    w = build_workload(table(rows, **columns), cluster(nodes=4, gpus=8, partitions=parts))
    result = simulate(w, "sjf")
    fast, slow = job_table(result), _job_table_by_inference(result)
    pd.testing.assert_frame_equal(fast, slow, check_exact=True)
    assert fast.to_csv(index=False) == slow.to_csv(index=False)
    for by in ("partition", "size", "job_class", "status"):
        pd.testing.assert_frame_equal(breakdown(fast, by), _breakdown_of_whole_groups(slow, by), check_exact=True)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_percentiles_from_one_partition_equal_one_call_each(seed):
    from evaluation.metrics import PERCENTILES, _pcts

    rng = np.random.default_rng(seed)
    for values in (rng.lognormal(3, 2, 10_001), rng.integers(0, 50, 999).astype(float), rng.random(2), np.array([7.0]),
                   np.array([1.0, np.nan]), np.zeros(0)):
        out: dict = {}
        _pcts(values, "x", out)
        for p in PERCENTILES:
            one = float(np.percentile(values, p)) if len(values) else float("nan")
            assert repr(out[f"x_p{p:g}"]) == repr(one), (p, values[:3])


def test_single_group_breakdown_reuses_the_whole_summary():
    from evaluation.metrics import breakdown, summarize

    jobs = pd.DataFrame({c: np.arange(5.0) for c in ("jct", "wait", "futile", "load", "end", "submit", "slowdown",
                                                       "lost_work")})
    jobs["preemptions"] = jobs["failures"] = np.zeros(5, dtype=int)
    jobs["status"] = np.array(["done"] * 5, dtype=object)
    jobs["size"] = np.array(["<=8 GPUs"] * 5, dtype=object)
    whole = summarize(jobs)
    assert breakdown(jobs, "size", whole).to_dict("records") == [{"size": "<=8 GPUs", **whole}]
    marked = {**whole, "jobs": -1}  # the given summary is used as it is, not recomputed
    assert breakdown(jobs, "size", marked)["jobs"].tolist() == [-1]
    pd.testing.assert_frame_equal(breakdown(jobs, "size"), _breakdown_of_whole_groups(jobs, "size"), check_exact=True)


def test_spot_detection_reads_each_label_once():
    from pipelines.replay import has_spot_jobs
    from sim.workload import build_workload

    assert not has_spot_jobs(build_workload(table([(0, 1, 1), (1, 1, 1)], job_class=["hp", None]), cluster(gpus=8)))
    assert has_spot_jobs(build_workload(table([(0, 1, 1), (1, 1, 1)], job_class=["hp", "Spot"]), cluster(gpus=8)))


@pytest.mark.parametrize("values", [np.zeros(7), np.array([0.0, -0.0, 0.0]), np.array([-0.0] * 4),
                                    np.array([0.0, 3.0, 0.0, 0.0]), np.array([0.0, np.nan]), np.array([], dtype=float),
                                    np.array([5.0]), np.random.default_rng(1).exponential(60.0, 1001)])
def test_futile_percentiles_are_numpys_to_the_bit(values):
    """The shortcut for all-+0.0 futile times gives np.percentile's numbers, signs of zeros included."""
    from evaluation.metrics import _futile_percentiles

    fast = _futile_percentiles(values)
    slow = tuple(np.percentile(values, (50, 95))) if len(values) else (float("nan"), float("nan"))
    assert [repr(float(x)) for x in fast] == [repr(float(x)) for x in slow]
