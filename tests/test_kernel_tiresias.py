"""sim.kernel_tiresias replays event-driven Tiresias exactly as the general loop does (every per-job figure, the
allocation series, the event count, the policy's preemption count, the clock, summary.csv bytes) where it is
chosen, and is chosen only there."""
from __future__ import annotations

import numpy as np
import pytest

from features.traces import load_trace
from sim.cluster import Cluster, Partition, load_cluster
from sim.engine import Engine
from sim.policies import get_policy
from sim.workload import build_workload
from tests.helpers import table, workload
from tests.test_engine_kernel import assert_files_equal_with_and_without_the_kernels, assert_same

VARIANTS = ["tiresias", "tiresias:backfill=false", "tiresias:thresholds=[600,3600,36000]",
            "tiresias:thresholds=60"]


def _pair(w, policy: str, placement: str | None = None, **kwargs):
    """The replay with the kernel allowed, and with the general loop only: (engine, result) each."""
    out = []
    for fast in (True, False):
        info, factory, _ = get_policy(policy)
        engine = Engine(w, factory, placement=placement or "consolidate", policy_name=policy, fast_path=fast,
                        **kwargs)
        out.append((engine, engine.run()))
    return out


def _assert_kernel_equals_general(w, policy: str) -> None:
    (fast_engine, fast), (general_engine, general) = _pair(w, policy)
    assert (fast_engine.loop, general_engine.loop) == ("tiresias-kernel", "general")
    assert (fast.loop, general.loop) == ("tiresias-kernel", "general")
    assert_same(fast, general)
    assert fast_engine.now == general_engine.now and fast_engine.unfinished == general_engine.unfinished == 0
    assert fast_engine._seq == general_engine._seq  # as many finishes and timers were pushed
    assert all(c.pool.total_free == c.pool.total_capacity for c in fast_engine.contexts)


@pytest.fixture(scope="module")
def philly(philly_file):
    """The first 12,000 Philly jobs on one pool (1-32 GPUs: jobs wider than a node too)."""
    return build_workload(load_trace(philly_file), load_cluster("philly-pool"), limit=12_000)


@pytest.mark.parametrize("policy", VARIANTS)
def test_kernel_equals_general_loop_on_real_philly(philly, policy):
    _assert_kernel_equals_general(philly, policy)


@pytest.mark.parametrize("policy", ["tiresias", "tiresias:thresholds=[600,3600,36000]"])
def test_kernel_equals_general_loop_on_philly_vcs(philly_file, policy):
    """Several partitions (Philly's virtual clusters): each replayed on its own, the series merged."""
    w = build_workload(load_trace(philly_file), load_cluster("philly-vc"), limit=12_000)
    assert len(w.cluster.partitions) > 1
    _assert_kernel_equals_general(w, policy)


def _two_pools(seed: int, jobs: int = 1200):
    """Two partitions whose events fall on the same whole seconds (and a zero-length job), so the cluster's
    totals change in both at one instant: the merged allocation series must match the general loop's."""
    rng = np.random.default_rng(seed)
    rows = [(float(s), float(d), int(g)) for s, d, g in zip(
        np.floor(np.cumsum(rng.exponential(20.0, size=jobs)) / 30) * 30,
        np.rint(rng.choice([0, 30, 60, 90, 600, 3000], size=jobs)), rng.choice([1, 2, 4, 8, 12], size=jobs))]
    org = rng.choice(["a", "b"], size=jobs).tolist()
    return build_workload(table(rows, org=org), Cluster("two", [Partition("a", [8, 8, 4], ["x"] * 3),
                                                               Partition("b", [8, 4, 4, 2], ["x"] * 4)]))


@pytest.mark.parametrize("seed", [0, 1])
def test_kernel_equals_general_loop_on_two_pools_with_simultaneous_changes(seed):
    w = _two_pools(seed)
    assert len(set(w.partition)) == 2
    _assert_kernel_equals_general(w, "tiresias:thresholds=[60,600]")


def _crowded(seed: int, jobs: int = 1500) -> object:
    """A crowded pool of mixed node sizes (8, 8, 8, 4, 4, 2 GPUs) and jobs of 1-24 GPUs: many preemptions,
    failed searches (one-node and wider than a node), demotions of running jobs and backfill."""
    rng = np.random.default_rng(seed)
    gpus = rng.choice([1, 1, 1, 2, 2, 4, 8, 12, 16, 24], size=jobs)
    duration = np.maximum(1.0, np.rint(rng.lognormal(np.log(900.0), 1.6, size=jobs)))
    submit = np.floor(np.cumsum(rng.exponential(60.0, size=jobs)))
    rows = [(float(s), float(d), int(g)) for s, d, g in zip(submit, duration, gpus)]
    caps = [8, 8, 8, 4, 4, 2]
    return build_workload(table(rows), Cluster("mixed", [Partition("default", caps, ["x"] * len(caps))]))


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("policy", ["tiresias", "tiresias:thresholds=[300,3000]", "tiresias:backfill=false"])
def test_kernel_equals_general_loop_on_crowded_mixed_pools(seed, policy):
    w = _crowded(seed)
    (_, fast), (_, general) = _pair(w, policy)
    assert fast.policy_stats["policy_preemptions"] > 50  # the preemptive paths were exercised
    _assert_kernel_equals_general(w, policy)


def test_kernel_equals_general_loop_on_simultaneous_events():
    """Arrivals, finishes and demotion crossings at the same instants (whole-second times, one node)."""
    rows = [(0, 100, 2), (0, 50, 2), (10, 30, 4), (10, 5, 1), (20, 100, 1), (50, 10, 4), (50, 50, 2), (60, 1, 1),
            (60, 0, 1), (100, 20, 3)]
    w = workload(rows, nodes=1, gpus=4)
    _assert_kernel_equals_general(w, "tiresias:thresholds=[20,100]")


def test_summary_bytes_equal_with_and_without_the_kernel(philly_file, tmp_path, monkeypatch):
    assert_files_equal_with_and_without_the_kernels(
        monkeypatch, tmp_path, ["--trace", str(philly_file), "--cluster", "philly-pool", "--jobs", "6000",
                                "--policy", "tiresias"],
        ("summary.csv", "jobs_tiresias.parquet", "allocation_tiresias.parquet"))


def test_kernel_is_chosen_only_where_it_applies(monkeypatch):
    rows = [(0, 10, 4), (1, 100, 1), (2, 5, 2), (12, 3, 2), (13, 50, 1)]
    w = workload(rows)
    assert _pair(w, "tiresias")[0][0].loop == "tiresias-kernel"
    monkeypatch.setenv("SCHEDCAST_FAST_PATH", "0")
    info, factory, _ = get_policy("tiresias")
    engine = Engine(w, factory)
    engine.run()
    assert engine.loop == "general"
    monkeypatch.delenv("SCHEDCAST_FAST_PATH")
    for policy in ("tiresias-rounds", "srtf", "lazer"):  # other classes, subclasses included
        assert _pair(w, policy)[0][0].loop == "general", policy
    for placement in ("first-fit", "consolidate:strict=false", "best-fit"):
        assert _pair(w, "tiresias", placement)[0][0].loop == "general", placement
    for kwargs in ({"check_invariants": True}, {"record_events": True}, {"time_decisions": True}):
        assert _pair(w, "tiresias", **kwargs)[0][0].loop == "general", kwargs
    assert _pair(workload(rows, load=[5, 0, 0, 0, 0]), "tiresias")[0][0].loop == "general"
    assert _pair(workload(rows, save=[0, 3, 0, 0, 0]), "tiresias")[0][0].loop == "general"
