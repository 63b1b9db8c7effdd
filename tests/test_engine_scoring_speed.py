"""Scoring a replay without per-job Python (issue 23, the whole command <= 2.5x the minimal loop): the
workload's per-job arrays are kept from the build (Workload.column), breakdowns group object labels from
one hash pass. Both give exactly what the general paths give: the same arrays, fingerprints, summaries.
"""
from __future__ import annotations

import hashlib
import math

import numpy as np
import pandas as pd
import pytest

from evaluation import metrics
from sim.sizing import offered_load
from sim.workload import build_workload
from tests.helpers import cluster, table

NAMES = ("submit", "duration", "gpus", "gpu_demand", "partition", "load_time", "save_time")


def _old_fingerprint(w) -> str:
    h = hashlib.sha256()
    for arr in (w.submit, w.duration, w.gpus, w.partition, w.load_time, w.save_time):
        h.update(np.asarray(arr, dtype=float).tobytes())
    if not w.simple:
        for arr in (w.pods, w.gpus_per_pod, w.gpu_milli, w.checkpoint):
            h.update(np.asarray(arr, dtype=float).tobytes())
        for labels in (w.gpu_type, w.job_class, w.stages):
            h.update("\x1f".join("" if x is None else str(x) for x in labels).encode())
    return h.hexdigest()[:16]


@pytest.mark.parametrize("columns", [{}, {"gpu_fraction": [0.5, 1.0, 0.25, 1.0, 1.0, 1.0]},
                                     {"org": ["a", "b", "a", "b", "zz", "a"]}])
def test_workload_columns_are_the_lists_as_arrays(columns):
    rows = [(0, 10.5, 1), (3, 20, 2), (3, 5.25, 1), (7, 0, 4), (9, 1e6, 2), (12, 3, 1)]
    parts = {"a": 2, "b": 1} if "org" in columns else None
    c = cluster(nodes=2, gpus=4, partitions=parts)
    w = build_workload(table(rows, **columns), c)
    assert w._columns, "build_workload keeps its arrays"
    for name in NAMES:
        got, ref = w.column(name), np.asarray(getattr(w, name))
        assert got.dtype == ref.dtype, name
        np.testing.assert_array_equal(got, ref)
        if name in w._columns:
            assert not got.flags.writeable  # the kept arrays are never written into
    assert w.fingerprint == _old_fingerprint(w)
    assert offered_load(w, c.gpus) == pytest.approx(
        float(np.sum(np.asarray(w.duration, float) * np.asarray(w.gpus, float)))
        / ((max(w.submit) - min(w.submit)) * c.gpus), rel=0, abs=0)


def test_submit_and_duration_lists_are_made_at_their_first_read():
    """build_workload leaves ``submit`` and ``duration`` as its arrays until a list is read (then an ordinary
    attribute, a list of Python floats, the array element for element); len, column and the fingerprint
    read the arrays; a copy stays deferred; a list assigned before any read is the one read."""
    import copy
    import dataclasses
    import pickle

    rows = [(0, 10.5, 1), (3, 20, 2), (3, 5.25, 1), (7, 0, 4)]
    w = build_workload(table(rows), cluster(nodes=2, gpus=4))
    assert "submit" not in w.__dict__ and "duration" not in w.__dict__
    assert len(w) == 4 and w.fingerprint == build_workload(table(rows), cluster(nodes=2, gpus=4)).fingerprint
    kept = w.column("duration")
    assert not kept.flags.writeable and "duration" not in w.__dict__
    for other in (pickle.loads(pickle.dumps(w)), copy.deepcopy(w)):
        assert "duration" not in other.__dict__ and other.duration == [10.5, 20.0, 5.25, 0.0]
    assert w.duration == [10.5, 20.0, 5.25, 0.0] and all(type(v) is float for v in w.duration)
    assert "duration" in w.__dict__ and w.column("duration") is kept  # the list read is the array's
    assert w.submit == [0.0, 3.0, 3.0, 7.0] and pickle.loads(pickle.dumps(w)).submit == w.submit
    assert dataclasses.replace(w, partition=list(w.partition)).duration == w.duration
    v = build_workload(table(rows), cluster(nodes=2, gpus=4))
    v.duration = [1.0, 2.0, 3.0, 4.0]  # replaced before any read: the new list, not the kept array
    assert v.duration == [1.0, 2.0, 3.0, 4.0]
    np.testing.assert_array_equal(v.column("duration"), [1.0, 2.0, 3.0, 4.0])
    with pytest.raises(AttributeError):
        v.no_such_list


def test_an_engine_reads_predicted_durations_at_first_use():
    """Without duration predictions ``engine.predicted`` is the workload's duration list (read when first
    used, not when the engine is made); with them, the predictions as a list."""
    from sim.engine import Engine
    from sim.policies import get_policy

    w = build_workload(table([(0, 10, 1), (5, 20, 2)]), cluster(nodes=1, gpus=4))
    factory = get_policy("spjf")[1]
    engine = Engine(w, factory, placement="first-fit")
    assert "duration" not in w.__dict__ and "predicted" not in engine.__dict__
    assert engine.predicted is w.duration
    given = Engine(w, factory, placement="first-fit", predictions=np.array([3.0, 4.0]))
    assert given.predicted == [3.0, 4.0] and type(given.predicted) is list


def test_replaced_lists_are_read_from_the_list():
    w = build_workload(table([(0, 10, 1), (5, 20, 2)]), cluster(nodes=1, gpus=4))
    w.load_time = [1.0, 2.0]  # as tests.helpers.workload and dataclasses.replace do
    np.testing.assert_array_equal(w.column("load_time"), [1.0, 2.0])
    assert w.fingerprint == _old_fingerprint(w)


def _old_breakdown(jobs: pd.DataFrame, by: str) -> pd.DataFrame:
    """The breakdown as it was: pandas' groupby over the labels, summarize on each group's frame."""
    keys = jobs[by]
    if len(keys) and keys.dtype == object and isinstance(keys.iloc[0], str) and keys.eq(keys.iloc[0]).all():
        return pd.DataFrame([{by: keys.iloc[0], **metrics.summarize(jobs)}])
    slim = jobs[[c for c in metrics.SUMMARY_COLUMNS if c in jobs and c != by] + [by]]
    return pd.DataFrame([{by: key, **metrics.summarize(group)} for key, group in slim.groupby(by, sort=True)])


def _jobs(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    submit = np.sort(rng.uniform(0, 1e5, n))
    wait, train = rng.exponential(300, n), rng.lognormal(6, 1.5, n)
    jobs = pd.DataFrame({"submit": submit, "wait": wait, "load": rng.choice([0.0, 12.5], n), "train": train,
                         "save": np.zeros(n), "futile": rng.choice([0.0, 0.0, 40.0], n),
                         "preemptions": rng.integers(0, 3, n), "failures": rng.integers(0, 2, n),
                         "lost_work": rng.uniform(0, 5, n), "duration": train})
    jobs["end"] = submit + wait + train
    jobs["jct"] = jobs["end"] - submit
    jobs["slowdown"] = jobs["jct"] / np.maximum(jobs["duration"], 1.0)
    labels = np.array(["done", "failed"], dtype=object)
    jobs["status"] = pd.Series(labels[(rng.random(n) < 0.1).astype(int)], dtype=object)
    jobs["size"] = pd.Series(np.array(["<=8 GPUs", ">8 GPUs"], dtype=object)[rng.integers(0, 2, n)], dtype=object)
    jobs["partition"] = pd.Series(["pool"] * n, dtype=object)
    cls = np.array(["hp", "spot", None, "be"], dtype=object)[rng.integers(0, 4, n)]
    jobs["job_class"] = pd.Series(cls, dtype=object)
    jobs["gpus"] = rng.integers(1, 9, n)
    return jobs


@pytest.mark.parametrize("by", ["size", "partition", "job_class", "status", "gpus"])
@pytest.mark.parametrize("n", [0, 1, 7, 5000])
def test_breakdown_equals_groupby(by, n):
    jobs = _jobs(n, seed=n)
    got, ref = metrics.breakdown(jobs, by), _old_breakdown(jobs, by)
    pd.testing.assert_frame_equal(got, ref, check_exact=True)


def test_summarize_with_a_given_failed_mask_is_the_same():
    jobs = _jobs(3000, seed=2)
    failed = (jobs["status"] == "failed").to_numpy()
    assert metrics.summarize(jobs.drop(columns=["status"]), failed=failed) == metrics.summarize(jobs)
    assert math.isnan(metrics.summarize(jobs.iloc[:0])["jct_mean"])
