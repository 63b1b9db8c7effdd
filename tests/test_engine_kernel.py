"""sim.kernel's specialised loop gives exactly the general loop's replay (every per-job figure, the
allocation series, the event count, summary.csv bytes) where it is chosen, and is chosen only there."""
from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest

from features.traces import load_trace
from pipelines.cli import main
from sim import simulate
from sim.cluster import load_cluster
from sim.engine import Engine
from sim.policies import get_policy
from sim.workload import build_workload
from tests.helpers import workload

ROOT = Path(__file__).resolve().parents[1]
FIELDS = ["first_start", "end", "wait", "load", "train", "save", "futile", "preemptions", "work_done", "evictions",
          "lost", "failures", "lost_work", "failed", "alloc_times", "alloc_used", "alloc_held"]


def _bench():
    spec = importlib.util.spec_from_file_location("bench_engine", ROOT / "benchmarks" / "bench_engine.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _replay(w, policy: str, placement: str | None, fast: bool):
    info, factory, _ = get_policy(policy)
    preds = list(w.duration) if info.uses_predictions else None
    engine = Engine(w, factory, placement=placement or "consolidate", predictions=preds, policy_name=policy,
                    fast_path=fast)
    return engine, engine.run()


def assert_same(a, b) -> None:
    for name in FIELDS:
        x, y = list(getattr(a, name)), list(getattr(b, name))
        assert len(x) == len(y), name
        # exact equality, infinities included (never-started jobs) — no tolerance
        assert all(u == v or (isinstance(u, float) and math.isnan(u) and math.isnan(v)) for u, v in zip(x, y)), name
    assert a.events == b.events and a.policy_stats == b.policy_stats


@pytest.fixture(scope="module")
def philly_table(philly_file):
    return load_trace(philly_file)


@pytest.fixture(scope="module")
def philly(philly_table):
    """The first 12,000 Philly jobs (the whole trace: the slow test below)."""
    return build_workload(philly_table, load_cluster("philly-pool"), limit=12_000)


@pytest.fixture(scope="module")
def philly_vc(philly_table):
    return build_workload(philly_table, load_cluster("philly-vc"), limit=12_000)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    bench = _bench()
    d = tmp_path_factory.mktemp("ref")
    trace = bench.write_reference_trace(d / "cluster_log.csv", bench.reference_workload(20_000))
    (d / "ref.yaml").write_text("name: ref-pool\ngpu_type: V100\ngpus_per_node: 8\nnodes: 125\n")
    return build_workload(load_trace(trace, "helios", cache=False), load_cluster(str(d / "ref.yaml")))


@pytest.mark.parametrize("policy", ["fifo", "sjf", "spjf", "wcs-subtime", "wcs-duration"])
@pytest.mark.parametrize("placement", ["first-fit", "consolidate", "best-fit", "first-fit:spread=false"])
def test_kernel_equals_general_loop_on_real_philly(philly, policy, placement):
    fast_engine, fast = _replay(philly, policy, placement, True)
    general_engine, general = _replay(philly, policy, placement, False)
    # a work-conserving queue always takes the general loop (its shaped queue); the two runs must agree
    expected = "general" if policy.startswith("wcs-") else "kernel"
    assert fast_engine.loop == expected and general_engine.loop == "general"
    assert (fast.loop, general.loop) == (expected, "general")
    assert fast_engine.now == general_engine.now and fast_engine.unfinished == general_engine.unfinished == 0
    assert_same(fast, general)


END_STATE = ("since", "seg_start", "state", "remaining", "epoch", "expected_end")


@pytest.mark.parametrize("policy", ["sjf", "fifo"])
@pytest.mark.parametrize("vcs", [False, True])
def test_the_kernels_end_state_is_the_general_loops(philly, philly_vc, policy, vcs):
    """The engine's per-job state after a kernel replay (made from the start times at first read) is the
    general loop's, list for list: since, seg_start (a list of its own), state, remaining, epoch, expected end."""
    w = philly_vc if vcs else philly
    fast_engine, _ = _replay(w, policy, "first-fit", True)
    general_engine, _ = _replay(w, policy, "first-fit", False)
    assert fast_engine.loop == "kernel" and fast_engine.all_done_from is not None
    assert not any(name in fast_engine.__dict__ for name in END_STATE)  # made only when read
    for name in END_STATE:
        got, ref = getattr(fast_engine, name), getattr(general_engine, name)
        assert type(got) is list and got == ref, name
    assert fast_engine.seg_start is not fast_engine.since


@pytest.mark.slow
@pytest.mark.parametrize("policy", ["fifo", "sjf"])
@pytest.mark.parametrize("placement", ["first-fit", "consolidate"])
def test_kernel_equals_general_loop_on_the_whole_philly_trace(philly_table, policy, placement):
    w = build_workload(philly_table, load_cluster("philly-pool"))
    fast_engine, fast = _replay(w, policy, placement, True)
    assert fast_engine.loop == "kernel"
    assert_same(fast, _replay(w, policy, placement, False)[1])


@pytest.mark.parametrize("policy", ["fifo", "sjf", "spwf"])
def test_kernel_equals_general_loop_on_philly_vcs(philly_vc, policy):
    """Several partitions (Philly's virtual clusters), each with its own queue and pool."""
    assert len(philly_vc.cluster.partitions) > 1
    fast_engine, fast = _replay(philly_vc, policy, "consolidate", True)
    assert fast_engine.loop == "kernel"
    assert_same(fast, _replay(philly_vc, policy, "consolidate", False)[1])


@pytest.mark.parametrize("policy", ["fifo", "sjf"])
@pytest.mark.parametrize("placement", ["first-fit", "consolidate"])
def test_kernel_equals_general_loop_on_reference_workload(reference, policy, placement):
    fast_engine, fast = _replay(reference, policy, placement, True)
    assert fast_engine.loop == "kernel"
    assert_same(fast, _replay(reference, policy, placement, False)[1])
    if policy == "sjf" and placement == "first-fit":  # and the minimal heap loop's schedule itself
        bench = _bench()
        w = bench.reference_workload(20_000)
        start, _ = bench.minimal_sjf(w["submit"], w["duration"], w["gpus"], 1000)
        assert np.array_equal(np.asarray(fast.first_start), np.asarray(start, dtype=float))


def assert_files_equal_with_and_without_the_kernels(monkeypatch, tmp_path, argv: list[str], files: tuple[str, ...]):
    """`schedcast simulate ARGV` with the specialised loops on and off (SCHEDCAST_FAST_PATH) writes ``files``
    with the same bytes."""
    outs = {}
    for flag in ("1", "0"):
        monkeypatch.setenv("SCHEDCAST_FAST_PATH", flag)
        out = tmp_path / flag
        assert main(["simulate", *argv, "--out", str(out), "--no-progress", "--no-plots"]) == 0
        outs[flag] = out
    for name in files:
        assert (outs["1"] / name).read_bytes() == (outs["0"] / name).read_bytes(), name


def test_summary_bytes_equal_with_and_without_the_kernel(philly_file, tmp_path, monkeypatch):
    assert_files_equal_with_and_without_the_kernels(
        monkeypatch, tmp_path, ["--trace", str(philly_file), "--cluster", "philly-pool", "--jobs", "8000",
                                "--policy", "fifo", "sjf", "--placement", "first-fit"],
        ("summary.csv", "jobs_fifo.parquet", "jobs_sjf.parquet"))


def test_kernel_is_chosen_only_where_it_applies(monkeypatch):
    rows = [(0, 10, 4), (1, 100, 1), (2, 5, 2), (12, 3, 2), (13, 50, 1)]
    w = workload(rows)
    assert _replay(w, "sjf", "first-fit", True)[0].loop == "kernel"
    assert _replay(w, "sjf", "first-fit", False)[0].loop == "general"
    monkeypatch.setenv("SCHEDCAST_FAST_PATH", "0")
    assert _replay(w, "sjf", "first-fit", None)[0].loop == "general"
    monkeypatch.delenv("SCHEDCAST_FAST_PATH")
    assert _replay(w, "sjf", "first-fit", None)[0].loop == "kernel"
    for policy in ("qssf", "srtf", "fifo-backfill", "wcs-duration"):  # other hooks, preemption,
        # or a work-conserving queue (tiresias has a kernel of its own: tests/test_kernel_tiresias.py)
        assert _replay(w, policy, None, True)[0].loop == "general"
    assert _replay(w, "sjf", "scored", True)[0].loop == "general"
    info, factory, _ = get_policy("sjf")
    for kwargs in ({"check_invariants": True}, {"record_events": True}, {"time_decisions": True}):
        assert Engine(w, factory, fast_path=True, **kwargs).run() is not None
        engine = Engine(w, factory, fast_path=True, **kwargs)
        engine.run()
        assert engine.loop == "general"
    loading = workload(rows, load=[5, 0, 0, 0, 0])
    assert _replay(loading, "sjf", None, True)[0].loop == "general"


def test_simulate_passes_the_switch():
    w = workload([(0, 10, 4), (1, 100, 1)])
    a = simulate(w, "sjf", fast_path=False)
    b = simulate(w, "sjf")
    assert_same(a, b)


def test_a_plug_in_queue_policy_takes_the_kernel_only_when_it_declares_its_key_static():
    from sim.policies.queueing import OrderedQueuePolicy

    class Widest(OrderedQueuePolicy):  # a key the kernel does not know: the general loop
        name = "widest"

        def key(self, job):
            return -self.ctx.jobs.gpus[job]

    class WidestStatic(Widest):
        static_key = True

    w = workload([(0, 10, 1), (1, 5, 4), (1, 7, 2), (2, 3, 1), (3, 8, 4), (3, 2, 2)])
    general = Engine(w, Widest, placement="first-fit")
    fast = Engine(w, WidestStatic, placement="first-fit")
    a, b = general.run(), fast.run()
    assert (general.loop, fast.loop) == ("general", "kernel")
    assert_same(a, b)


def test_job_table_labels_are_the_object_columns_np_where_gave():
    from evaluation.metrics import _labels

    mask = np.array([True, False, False, True])
    assert _labels(mask, "failed", "done").tolist() == np.where(mask, "failed", "done").tolist()
    assert _labels(mask, "a", "b").dtype == object and len(_labels(mask[:0], "a", "b")) == 0


def test_with_units_renames_without_copying_the_rows():
    import pandas as pd

    from evaluation.report import with_units

    jobs = pd.DataFrame({"wait": [1.0, 2.0], "job_id": ["a", "b"]})
    out = with_units(jobs, job_table=True)
    assert list(out.columns) == ["wait_s", "job_id"] and list(jobs.columns) == ["wait", "job_id"]
    assert np.shares_memory(out["wait_s"].to_numpy(), jobs["wait"].to_numpy())


def test_the_benchs_loop_copies_give_the_minimal_loops_schedule():
    """bench_engine times a fresh copy of the minimal loop (unspecialised bytecode, as a script's one call runs
    it) and a copy specialised by SPECIALISE_AFTER calls: both are the same loop, with the same start times."""
    bench = _bench()
    w = bench.reference_workload(3000)
    ref = bench.minimal_sjf(w["submit"], w["duration"], w["gpus"], 1000)
    fresh = bench.fresh_copy(bench.minimal_sjf)
    assert fresh.__code__ is not bench.minimal_sjf.__code__ and fresh(w["submit"], w["duration"], w["gpus"], 1000) == ref
    assert bench.specialised_copy(bench.minimal_sjf, 1000)(w["submit"], w["duration"], w["gpus"], 1000) == ref
