"""SimResult.array: the per-job accumulators as arrays. The kernel hands over the arrays it computed its
lists from; both loops give the same arrays (values and dtypes), equal to the lists, and the same tables."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from evaluation.metrics import _text_or, breakdown, evaluate, job_table, summarize
from features.traces import load_trace
from sim.cluster import load_cluster
from sim.engine import Engine
from sim.policies import get_policy
from sim.result import JOB_FIELDS
from sim.workload import build_workload
from tests.helpers import workload


@pytest.fixture(scope="module")
def philly(philly_file):
    return build_workload(load_trace(philly_file), load_cluster("philly-pool"), limit=6_000)


def _run(w, policy: str, fast: bool):
    info, factory, _ = get_policy(policy)
    engine = Engine(w, factory, placement="first-fit", policy_name=policy, fast_path=fast,
                    predictions=list(w.duration) if info.uses_predictions else None)
    return engine, engine.run()


@pytest.mark.parametrize("policy", ["fifo", "sjf"])
def test_kernel_arrays_equal_the_lists_and_the_general_loops_arrays(philly, policy):
    fast_engine, fast = _run(philly, policy, True)
    general_engine, general = _run(philly, policy, False)
    assert (fast.loop, general.loop) == ("kernel", "general")
    # the kernel hands over every field; the general loop only the all-False failure flags
    assert set(fast.arrays) == set(JOB_FIELDS) and set(general.arrays) == {"failed"}
    for name, dtype in JOB_FIELDS.items():
        a, b = fast.array(name), general.array(name)
        assert a.dtype == b.dtype == dtype, name
        assert np.array_equal(a, b), name
        assert np.array_equal(a, np.array(list(getattr(fast, name)) or [0] * len(philly), dtype=dtype)), name
    pd.testing.assert_frame_equal(job_table(fast), job_table(general), check_exact=True)
    assert evaluate(fast)["summary"] == {**evaluate(general)["summary"], "sim_seconds": fast.wall_seconds,
                                         "events_per_second": fast.events / fast.wall_seconds}


def test_array_is_the_callers_own(philly):
    _, result = _run(philly, "sjf", True)
    end = result.array("end")
    end[:] = -1.0
    assert (result.array("end") >= 0).all() and result.end[0] >= 0


def test_small_workload_tables_agree_between_the_loops():
    w = workload([(0, 10, 1), (5, 20, 4), (6, 3, 2)], gpus=4)
    tables = []
    for fast in (True, False):
        _, result = _run(w, "fifo", fast)
        tables.append(job_table(result))
        assert tables[-1]["first_start"].dtype == tables[-1]["end"].dtype == np.float64
        assert tables[-1]["first_start"].tolist() == [0.0, 10.0, 30.0]
    pd.testing.assert_frame_equal(*tables, check_exact=True)


def test_one_label_breakdown_equals_the_grouped_one():
    rng = np.random.default_rng(0)
    n = 5_000
    jobs = pd.DataFrame({"jct": rng.random(n) * 100, "wait": rng.random(n), "futile": np.zeros(n),
                         "preemptions": np.zeros(n, dtype=np.int64), "load": np.zeros(n), "end": rng.random(n) * 200,
                         "submit": rng.random(n), "slowdown": rng.random(n) + 1, "failures": np.zeros(n, dtype=np.int64),
                         "lost_work": np.zeros(n), "status": np.full(n, "done", dtype=object),
                         "size": np.full(n, "<=8 GPUs", dtype=object)})
    fast = breakdown(jobs, "size", summarize(jobs))
    grouped = pd.DataFrame([{"size": key, **summarize(group)} for key, group in jobs.groupby("size", sort=True)])
    pd.testing.assert_frame_equal(fast, grouped, check_exact=True)
    mixed = jobs.assign(size=np.where(np.arange(n) % 3 == 0, ">8 GPUs", "<=8 GPUs").astype(object))
    grouped = pd.DataFrame([{"size": key, **summarize(group)} for key, group in mixed.groupby("size", sort=True)])
    pd.testing.assert_frame_equal(breakdown(mixed, "size", summarize(mixed)), grouped, check_exact=True)


@pytest.mark.parametrize("values", [["a"] * 4, ["a", "b", "a", "a"], ["a", None, "a", "a"], [None] * 4])
@pytest.mark.parametrize("fill", ["all", None])
def test_text_or_on_arrow_text_equals_the_object_path(values, fill):
    arrow = pd.Series(values, dtype="string[pyarrow]")
    obj = arrow.astype(object)
    expected = obj.fillna(fill).to_numpy() if fill is not None else obj.to_numpy()
    got = _text_or(arrow, fill)
    assert got.dtype == object
    assert [None if v is pd.NA else v for v in got] == [None if v is pd.NA else v for v in expected]


def test_kernel_fields_are_lists_when_read_and_survive_pickling(philly):
    import pickle

    _, fast = _run(philly, "sjf", True)
    _, general = _run(philly, "sjf", False)
    assert "end" not in vars(fast)  # kept as an array until read
    copy = pickle.loads(pickle.dumps(fast))
    for result in (fast, copy):
        for name in ("first_start", "end", "wait", "train", "work_done"):
            values = getattr(result, name)
            assert type(values) is list and values == getattr(general, name), name
            assert all(type(v) is float for v in values[:100]), name
    with pytest.raises(AttributeError):
        fast.no_such_field


def test_the_kernel_leaves_the_general_loops_engine_state_and_makes_no_unused_list(philly):
    fast_engine, _ = _run(philly, "sjf", True)
    general_engine, _ = _run(philly, "sjf", False)
    for name in ("state", "since", "seg_start", "remaining", "epoch", "expected_end"):
        assert list(getattr(fast_engine, name)) == list(getattr(general_engine, name)), name
    for name in ("speed", "alloc", "attempt_start", "attempt_work"):  # the general loop's own
        assert name not in vars(fast_engine), name
    assert fast_engine.speed == [1.0] * len(philly)  # made on first use, with its initial value
    with pytest.raises(AttributeError):
        fast_engine.no_such_list
