"""A-SRPT speed hook on the engine: run time = iterations x alpha(x) for the placement chosen at start,
jobs without a profile at speed 1; the heavy-edge placement's server choice."""
from __future__ import annotations

import pytest

from evaluation.metrics import check_identities, job_table
from sim.asrpt.performance import IterationSpeed
from sim.asrpt.profiles import PipelineConfig, Stage
from sim.engine import Engine
from sim.placement.heavy_edge import HeavyEdge, place_ordered
from sim.placement.pool import NodePool
from tests.helpers import workload
from tests.test_engine_v2_requests import Greedy, starts


class FakeCatalog:
    """Hand configurations: 'ar' (2 stages x 2 replicas, heavy AllReduce), 'p2' (2 stages x 1)."""

    def config(self, model, gpus):
        if model == "ar" and gpus == 4:
            return PipelineConfig("ar", 4, (Stage(0, 0, 2, 0.2, 1e8, 5e8), Stage(1, 1, 2, 0.4, 0.0, 0.0)))
        if model == "p2" and gpus == 2:
            return PipelineConfig("p2", 2, (Stage(0, 0, 1, 0.2, 1e8, 0.0), Stage(1, 1, 1, 0.2, 0.0, 0.0)))
        return None


def _model(**kw):
    # 1e9 B/s across servers, 1e11 B/s inside
    return IterationSpeed(FakeCatalog(), inter_gbit=8.0, intra_gbyte=100.0, **kw)


def test_spread_placement_runs_slower_by_alpha_ratio():
    # 2 nodes x 3 GPUs. j0, j1 (plain, 2 GPUs) take node 0 and node 1; j2 ('p2', 2 GPUs) must spread
    # over both nodes (one GPU each, owning 1/3 of its node's NIC): alpha = 0.2 + 2e8/(1e9/3) = 0.8 vs
    # alpha_min (one server) = 0.2 + 2e8/1e11 = 0.202, so 10 s of work take 10 * 0.8 / 0.202 s. Plain
    # jobs keep speed 1. With nic=whole (the old reading) alpha = 0.2 + 2e8/1e9 = 0.4.
    for nic, a in (("share", 0.8), ("whole", 0.4)):
        w = workload([(0, 100, 2), (0, 100, 2), (0, 10, 2)], nodes=2, gpus=3)
        w.model = [None, None, "p2"]
        res = Engine(w, Greedy, placement=HeavyEdge(), performance=_model(nic=nic), check_invariants=True,
                     record_events=True).run()
        check_identities(job_table(res))
        assert starts(res)[2] == [(0, 1), (1, 1)]
        assert res.end == pytest.approx([100, 100, 10 * a / 0.202])


def test_one_server_is_speed_one_and_iterations_fix_the_run_time():
    w = workload([(0, 10, 2)], nodes=2, gpus=2)
    w.model = ["p2"]
    assert Engine(w, Greedy, placement=HeavyEdge(), performance=_model()).run().end == pytest.approx([10])
    # 4-GPU 'ar' job on two 2-GPU servers: Heavy-Edge keeps each stage on one server, alpha = 0.4;
    # with 30 iterations it runs 30 x 0.4 = 12 s whatever the trace duration says.
    w = workload([(0, 10, 4)], nodes=2, gpus=2)
    w.model = ["ar"]
    res = Engine(w, Greedy, placement=HeavyEdge(), performance=_model(iterations=[30.0])).run()
    assert res.end == pytest.approx([12.0])


def test_unknown_model_and_fractional_jobs_keep_speed_one():
    w = workload([(0, 10, 4), (0, 7, 1)], nodes=5, gpus=1, gpu_fraction=[1.0, 0.5])
    w.model = ["no-such-model", "p2"]
    res = Engine(w, Greedy, placement=HeavyEdge(), performance=_model(), check_invariants=True).run()
    assert res.end == pytest.approx([10, 7])


def test_heavy_edge_server_order():
    pool = NodePool([8, 8, 8])
    pool.allocate([(0, 6), (1, 2)], 99)  # free: 2, 6, 8
    assert place_ordered(pool, 4, most_free=True) == [(1, 4)]  # fits one server: the tightest
    assert place_ordered(pool, 12, most_free=True) == [(2, 8), (1, 4)]
    assert place_ordered(pool, 12, most_free=False) == [(0, 2), (1, 6), (2, 4)]
    assert HeavyEdge().place(pool, 12) == [(2, 8), (1, 4)]
    assert HeavyEdge(most_free=False).place(pool, 12) == [(0, 2), (1, 6), (2, 4)]
    assert place_ordered(pool, 17) is None


def test_heavy_edge_refine_variant_by_name_and_followed_by_the_speed_model():
    from sim.placement import make_placement

    assert make_placement("heavy-edge:refine=true").refine is True
    assert make_placement("heavy-edge").refine is False
    w = workload([(0, 10, 4)], nodes=2, gpus=2)
    w.model = ["ar"]
    perf = _model(iterations=[30.0])
    Engine(w, Greedy, placement=make_placement("heavy-edge:refine=true"), performance=perf).run()
    assert perf.refine is True
    perf = _model(iterations=[30.0])
    Engine(w, Greedy, placement=HeavyEdge(), performance=perf).run()
    assert perf.refine is False
