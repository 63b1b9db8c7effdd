"""Placement plug-ins in the scheduling-framework shape (sim/placement/framework.py): GFS' Alg. 1 as filter
and score stages, Alg. 2 as a victim planner, one FGD bound to the workload when a replay starts, and every
placement reachable by name and listed in ``--placement``'s help."""
import random
from types import SimpleNamespace

import pytest

from sim.engine import Engine
from sim.placement import PLACEMENTS, make_placement
from sim.placement.fgd import FgdPlacement
from sim.placement.framework import Pod, StagedPlacement
from sim.placement.gfs import EvictionHistory, GfsPlacement
from sim.placement.pool import NodePool
from sim.placement.preemption import GfsVictimPlanner, plan_fractional, plan_preemption
from sim.placement.score_fgd import distribution_of
from sim.placement.scored import ScoredPlacement
from sim.policies.base import Policy
from sim.workload import Request
from tests.helpers import workload

ONE_GPU_MIX = SimpleNamespace(gpus=[1] * 4, gpu_milli=[0] * 4, pods=[1] * 4)  # a workload of 1-GPU pods only


def _random_pool(rng: random.Random) -> NodePool:
    """Six 8-GPU nodes holding hp / spot jobs on whole GPUs and on shared GPUs."""
    pool = NodePool([8] * 6)
    classes: list[str] = []
    for n in range(6):
        free = 8
        for _ in range(rng.randint(0, 3)):
            g = rng.randint(1, 3)
            if g > free:
                break
            pool.allocate([(n, g)], job=len(classes))
            classes.append(rng.choice(["hp", "spot"]))
            free -= g
        if free and rng.random() < 0.4:
            pool.allocate_shares([(n, 8 - free, 500)], job=len(classes))
            classes.append(rng.choice(["hp", "spot"]))
    pool.job_class = classes
    return pool


@pytest.mark.parametrize("score3", ["paper", "inverse"])
def test_fused_gfs_ranking_equals_its_filter_and_score_stages(score3):
    # GfsPlacement.rank fuses the breaker filter and Score2 / Score3 for speed; the plain stages must agree
    # on every node set, class and history (old code: no stages to compare with).
    rng = random.Random(7)
    for trial in range(300):
        pool = _random_pool(rng)
        hist = EvictionHistory()
        for n in range(6):
            for _ in range(rng.choice([0, 0, 1, 3, 6])):
                hist.add(n, rng.uniform(0, 7200))
        flags = dict(colocation=rng.random() < 0.8, eviction=rng.random() < 0.8, breaker=rng.random() < 0.8)
        place = GfsPlacement(hist, lambda: 7200.0, score3=score3, **flags)
        nodes = sorted(rng.sample(range(6), rng.randint(1, 6)))
        for cls in ("hp", "spot"):
            place._cls = cls
            pod = Pod(rng.randint(1, 4), 0, cls)
            assert place.rank(pool, nodes, pod) == StagedPlacement.rank(place, pool, nodes, pod), (trial, cls, flags)


def test_gfs_and_fgd_are_placements_by_name():
    assert set(PLACEMENTS) >= {"first-fit", "consolidate", "best-fit", "scored", "heavy-edge", "gfs", "fgd"}
    gfs = make_placement("gfs:breaker=false,m=4")
    assert isinstance(gfs, GfsPlacement) and not gfs.breaker and gfs.m == 4 and not gfs.filters
    fgd = make_placement("fgd")
    assert isinstance(fgd, FgdPlacement) and fgd.mix == "workload"
    with pytest.raises(ValueError, match="request mix"):
        FgdPlacement(mix="nope")
    with pytest.raises(ValueError, match="request mix"):
        ScoredPlacement({"fgd": 1.0}, fgd_mix="nope")
    # GfsPlacement and the victim planner keep their old import paths.
    from sim.policies.gfs import FgdPlacement as OldFgd
    from sim.policies.gfs.pts import GfsPlacement as OldGfs, plan_preemption as old_plan

    assert OldGfs is GfsPlacement and old_plan is plan_preemption and OldFgd is FgdPlacement


def _fgd_case() -> NodePool:
    pool = NodePool([4, 4])
    pool.allocate([(1, 1)], job=0)  # node 0: 4 free, node 1: 3 free
    pool.job_class = ["hp"]
    return pool


def test_one_fgd_scores_against_the_bound_workloads_mix():
    # A 1-GPU pod: against a workload of 1-GPU pods nothing fragments (gradient 0 on both nodes: the lower
    # node); against the fixed v2023 mix (large pods too) breaking the empty node costs more (node 1).
    # Before: scored:fgd always used the fixed mix and gave (1, 1) here while the fgd policy gave (0, 1).
    pool, req = _fgd_case(), Request(1, 1)
    scored = make_placement("scored:fgd=1")
    scored.bind(ONE_GPU_MIX)
    fgd = FgdPlacement()
    fgd.bind(ONE_GPU_MIX)
    assert scored.place(pool, req) == fgd.place(pool, req) == [(0, 1)]
    fixed_scored = ScoredPlacement({"fgd": 1.0}, fgd_mix="v2023")
    fixed_scored.bind(ONE_GPU_MIX)
    fixed = FgdPlacement(mix="v2023")
    fixed.bind(ONE_GPU_MIX)
    assert fixed_scored.place(pool, req) == fixed.place(pool, req) == [(1, 1)]
    assert ScoredPlacement({"fgd": 1.0}).place(pool, req) == [(1, 1)]  # never bound: the fixed mix


class _Idle(Policy):
    def on_arrival(self, job):
        pass


@pytest.mark.parametrize("spec", ["fgd", "scored:fgd=1,best_fit=1"])
def test_the_engine_binds_its_placement_to_the_workload(spec):
    w = workload([(0, 10, 1), (0, 10, 2), (0, 10, 2)], nodes=2, gpus=4)
    engine = Engine(w, _Idle, placement=spec)
    place = engine.contexts[0].placement
    mix = distribution_of(w.gpus, w.gpu_milli, w.pods)
    if isinstance(place, FgdPlacement):
        assert place.distribution == mix
    else:
        node = SimpleNamespace(capacity=4, free=3, shared_free=())
        from sim.placement import score_fgd

        assert place._bound["fgd"](node, 1) == score_fgd.score(node, 1, 0, None, mix)


def test_victim_planner_is_alg2_with_the_policys_rule():
    pool = NodePool([4, 4])
    pool.allocate([(0, 2)], job=1)
    pool.allocate([(0, 2)], job=2)
    pool.allocate([(1, 4)], job=3)
    waste = {1: 7200.0, 2: 100.0, 3: 50.0}
    cands = {0: [1, 2], 1: [3]}

    def gpus(j, n):
        return pool.holders[n].get(j, 0)

    for cost in ("gfs", "count", "value", "first"):
        planner = GfsVictimPlanner(cost, eq19="gpus")
        assert planner.plan(pool, Request(1, 2), cands, waste.__getitem__, gpus) == plan_preemption(
            pool, Request(1, 2), cands, waste.__getitem__, gpus, cost=cost, eq19="gpus", spare=cost != "first")
    # Least total value: job 3 (50) on node 1; fewest victims: one on either node, the lower node wins (job 2,
    # the cheaper of node 0's two).
    assert GfsVictimPlanner("value").plan(pool, Request(1, 2), cands, waste.__getitem__, gpus) == ([(1, 2)], {3})
    assert GfsVictimPlanner("count").plan(pool, Request(1, 2), cands, waste.__getitem__, gpus) == ([(0, 2)], {2})
    with pytest.raises(ValueError, match="victim cost"):
        GfsVictimPlanner("cheapest")
    with pytest.raises(ValueError, match="eq19"):
        GfsVictimPlanner(eq19="nope")


def test_fractional_victims_free_one_gpu_at_least_value():
    # Node 0: one GPU shared by spot shares 1 (value 10) and 2 (value 5); node 1: job 3 holds a whole GPU (1).
    pool = NodePool([1, 1])
    pool.allocate_shares([(0, 0, 500)], job=1)
    pool.allocate_shares([(0, 0, 500)], job=2)
    pool.allocate([(1, 1)], job=3)
    value = {1: 10.0, 2: 5.0, 3: 1.0}.__getitem__
    half = Request(1, 1, 500)
    assert plan_fractional(pool, half, {0: [1, 2], 1: [3]}, value) == [3]  # the whole GPU is cheapest
    assert plan_fractional(pool, half, {0: [1, 2]}, value) == [2]  # else the cheaper share
    assert plan_fractional(pool, Request(1, 1, 800), {0: [1, 2]}, value) == [2, 1]  # 800 needs both shares
    assert plan_fractional(pool, Request(2, 2, 500), {0: [1, 2], 1: [3]}, value) is None  # gangs wait


def test_placement_help_lists_every_placement(capsys):
    from pipelines.cli import main

    with pytest.raises(SystemExit):
        main(["simulate", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for name in PLACEMENTS:
        assert name in text, name
    assert "gfs_packing" in text  # the scores of scored:...


def test_the_gfs_package_exports_what_it_names():
    # __all__ named GfsE ... GfsSP, which never existed: `from sim.policies.gfs import *` raised AttributeError.
    import sim.policies.gfs as gfs

    assert all(hasattr(gfs, name) for name in gfs.__all__)


def test_fixed_fgd_mix_is_reachable_by_name_and_numbers_stay_numbers():
    """``fgd:mix=v2023`` / ``scored:...,fgd_mix=v2023`` name the fixed mix from the CLI; a weight or a flag
    given as text is still refused in one line."""
    from sim.placement import make_placement
    from sim.placement.fgd import FgdPlacement
    from sim.placement.scored import ScoredPlacement

    assert isinstance(make_placement("fgd:mix=v2023"), FgdPlacement)
    assert make_placement("scored:fgd=1,fgd_mix=v2023").fgd_mix == "v2023"
    assert isinstance(make_placement("scored:fgd=1"), ScoredPlacement)
    for bad in ("scored:fgd=abc", "consolidate:strict=yes", "fgd:mix=nope"):
        with pytest.raises(ValueError):
            make_placement(bad)
