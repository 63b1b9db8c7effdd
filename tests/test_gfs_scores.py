"""GFS placement scores (Eq. 13-16), the circuit breaker, FGD's fragmentation measure, Alg. 2 victims."""
import pytest

from sim.placement import score_fgd, score_gfs_colocation, score_gfs_eviction, score_gfs_packing
from sim.placement.pool import NodePool
from sim.placement.score_gfs_colocation import GpuClassState
from sim.placement.state import NodeState
from sim.policies.gfs.pts import EvictionHistory, GfsPlacement, plan_preemption
from sim.workload import Request


def test_packing_prefers_fuller_nodes():
    assert score_gfs_packing.score(NodeState(8, 8), 2) == pytest.approx(2 / 8)
    assert score_gfs_packing.score(NodeState(8, 3), 2) == pytest.approx(7 / 8)
    assert score_gfs_packing.score(NodeState(8, 2), 2) == 1.0
    # A fractional pod: whole GPUs in use count 1, shared GPUs by their used share, plus the pod's share.
    # 4 free, one shared GPU with 600 free (so 3 whole in use + 0.4): after a 0.25 pod, 3.65 of 8.
    assert score_gfs_packing.score(NodeState(8, 4, (600,)), 0, 250) == pytest.approx(3.65 / 8)
    assert score_gfs_packing.score(NodeState(8, 4), 0, 250) == pytest.approx(4.25 / 8)


def test_colocation_counts_gpus_of_the_same_class():
    st = GpuClassState(8, 2, class_gpus={"hp": 4, "spot": 2})
    assert score_gfs_colocation.score(st, 1, 0, "hp") == pytest.approx(4 / 6)
    assert score_gfs_colocation.score(st, 1, 0, "spot") == pytest.approx(2 / 6)
    assert score_gfs_colocation.score(GpuClassState(8, 8), 1, 0, "spot") == 1.0
    # Plain snapshots fall back to job counts per class.
    assert score_gfs_colocation.score(NodeState(8, 4, classes={"hp": 1, "spot": 3}), 1, 0, "spot") == 0.75


def test_eviction_score_and_breaker_old_reading():
    # mode="inverse": the old reading, kept by name.
    assert score_gfs_eviction.pressure(2, 24, mode="inverse") == pytest.approx(0.8 * 2 + 0.2 * 1)
    st = GpuClassState(8, 8, evictions_1h=2, evictions_24h=24)
    assert score_gfs_eviction.score(st, 1, 0, "spot", mode="inverse") == pytest.approx(1 / (1 + 1.8))
    assert score_gfs_eviction.score(st, 1, 0, "hp", mode="inverse") == 1.0
    assert not score_gfs_eviction.tripped(st, mode="inverse")
    assert score_gfs_eviction.tripped(GpuClassState(8, 8, evictions_1h=3), mode="inverse")


def test_score3_and_breaker_as_printed():
    # e_bar = 0.8 x e_1h + 0.2 x e_24h; Score3 = max(0, 1 - 0.01 x 3^e_bar).
    st = GpuClassState(8, 8, evictions_1h=2, evictions_24h=4)  # e_bar = 1.6 + 0.8 = 2.4
    assert score_gfs_eviction.pressure(2, 4) == pytest.approx(2.4)
    assert score_gfs_eviction.score(st, 1, 0, "spot") == pytest.approx(1 - 0.01 * 3 ** 2.4)  # 0.86
    assert score_gfs_eviction.score(GpuClassState(8, 8), 1, 0, "spot") == pytest.approx(0.99)
    # Criterion 3: HP pods prefer the node with the highest past eviction count (the score is e_bar).
    assert score_gfs_eviction.score(st, 1, 0, "hp") == pytest.approx(2.4)
    # The breaker: 0.01 x 3^e_bar >= 1 <=> e_bar >= log_3 100 = 4.19. Four in the hour: e_bar 4 -> 1 - 0.81.
    four = GpuClassState(8, 8, evictions_1h=4, evictions_24h=4)
    assert score_gfs_eviction.score(four, 1, 0, "spot") == pytest.approx(0.19)
    assert not score_gfs_eviction.tripped(four)
    # Three in the hour but 8 in the day: e_bar = 2.4 + 1.6 = 4.0 -> open; 10 in the day: 2.4 + 2.0 = 4.4 -> tripped.
    assert not score_gfs_eviction.tripped(GpuClassState(8, 8, evictions_1h=3, evictions_24h=8))
    assert score_gfs_eviction.tripped(GpuClassState(8, 8, evictions_1h=3, evictions_24h=10))
    assert score_gfs_eviction.score(GpuClassState(8, 8, evictions_1h=3, evictions_24h=10), 1, 0, "spot") == 0.0
    assert score_gfs_eviction.spot_score(1000.0) == 0.0  # no overflow


def test_breaker_and_ties_in_the_gfs_placement():
    pool = NodePool([8, 8, 8])
    pool.job_class = ["hp", "spot"]
    pool.allocate([(0, 4)], job=0)  # node 0: 4 HP GPUs
    pool.allocate([(1, 4)], job=1)  # node 1: 4 spot GPUs
    hist = EvictionHistory()
    place = GfsPlacement(hist, lambda: 100.0)
    # Packing ties (nodes 0 and 1 have 4 free): co-location decides by class.
    assert place.place(pool, Request(1, 2, job_class="spot")) == [(1, 2)]
    assert place.place(pool, Request(1, 2, job_class="hp")) == [(0, 2)]
    for t in (10.0, 20.0, 30.0, 40.0, 50.0):
        hist.add(1, t)  # five evictions on node 1 in the last hour: e_bar 5 >= 4.19, its breaker trips for spot
    assert place.place(pool, Request(1, 2, job_class="spot")) == [(0, 2)]
    assert place.place(pool, Request(1, 4, job_class="spot")) == [(0, 4)]
    assert place.place(pool, Request(1, 6, job_class="spot")) == [(2, 6)]  # only the empty node holds 6
    later = GfsPlacement(hist, lambda: 100.0 + 3600.0)  # an hour on: e_bar = 0.2 x 5 = 1, open again
    assert later.place(pool, Request(1, 2, job_class="spot")) == [(1, 2)]
    # The old reading (breaker at 3 in the hour) trips on three.
    old_hist = EvictionHistory()
    for t in (10.0, 20.0, 30.0):
        old_hist.add(1, t)
    assert GfsPlacement(old_hist, lambda: 100.0, score3="inverse").place(pool, Request(1, 2, job_class="spot")) == [(0, 2)]
    assert GfsPlacement(old_hist, lambda: 100.0).place(pool, Request(1, 2, job_class="spot")) == [(1, 2)]


def test_criterion3_sends_hp_to_the_node_with_most_past_evictions():
    # Three empty 8-GPU nodes tie on packing and co-location; node 2 had 2 evictions, node 1 one.
    pool = NodePool([8, 8, 8])
    pool.job_class = []
    hist = EvictionHistory()
    hist.add(1, 50.0)
    hist.add(2, 60.0)
    hist.add(2, 70.0)
    place = GfsPlacement(hist, lambda: 100.0)
    assert place.place(pool, Request(1, 4, job_class="hp")) == [(2, 4)]
    assert place.place(pool, Request(1, 4, job_class="spot")) == [(0, 4)]  # spot avoids them
    # The old reading gave HP pods a constant Score3: the lowest node number wins.
    assert GfsPlacement(hist, lambda: 100.0, score3="inverse").place(pool, Request(1, 4, job_class="hp")) == [(0, 4)]


def test_fgd_fragmentation_by_hand():
    dist = ((0, 500, 0.5), (2, 0, 0.5))  # half 0.5-GPU pods, half 2-GPU pods
    # 1 idle GPU and a shared GPU with 300 free: the 0.5 pod fits (frag: the 0.3 that no 0.5 pod fits);
    # the 2-GPU pod does not fit at all (frag: all 1.3 free GPUs).
    assert score_fgd.node_fragmentation(1, (300,), dist) == pytest.approx(0.5 * 0.3 + 0.5 * 1.3)
    assert score_fgd.node_fragmentation(4, (), dist) == 0.0
    assert score_fgd.gpu_fragmentation(300, dist) == pytest.approx(0.3)
    assert score_fgd.gpu_fragmentation(1000, dist) == pytest.approx(0.5 * 1.0)  # a 2-GPU pod cannot use one GPU
    # Filling a shared GPU with exactly 500 free removes its 0.5 fragment for 2-GPU pods: F 0.25 -> 0.
    st = NodeState(4, 2, (500,))
    assert score_fgd.gradient(st, 0, 500, dist) == pytest.approx(-0.25)
    # Opening a GPU of an empty 2-free node: the 2-GPU pod no longer fits (1 + 0.5 free are fragments).
    assert score_fgd.gradient(NodeState(4, 2, ()), 0, 500, dist) == pytest.approx(0.5 * 1.5)
    assert score_fgd.score(st, 0, 500, None, dist) > score_fgd.score(NodeState(4, 2, ()), 0, 500, None, dist)
    assert score_fgd.distribution_of([1, 1, 8], [0, 500, 0], [1, 1, 2]) == ((0, 500, 1 / 3), (1, 0, 1 / 3),
                                                                              (4, 0, 1 / 3))


def _pool_with(jobs):
    """jobs: {job: (node, gpus)} on two 8-GPU nodes, classes by name."""
    pool = NodePool([8, 8])
    for job, (node, gpus) in jobs.items():
        pool.allocate([(node, gpus)], job=job)
    return pool


def test_alg2_victims_by_waste_and_least_cost_node():
    # Node 0: HP job 0 (4 GPUs), spot 1 (2 GPUs, waste 7,200), spot 2 (2 GPUs, waste 100).
    # Node 1: spot 3 (4 GPUs, waste 3,600), spot 4 (4 GPUs, waste 36,000).
    pool = _pool_with({0: (0, 4), 1: (0, 2), 2: (0, 2), 3: (1, 4), 4: (1, 4)})
    waste = {1: 7200.0, 2: 100.0, 3: 3600.0, 4: 36000.0}
    cands = {0: [1, 2], 1: [3, 4]}
    gpus = lambda j, n: pool.holders[n].get(j, 0)  # noqa: E731
    plan = plan_preemption(pool, Request(1, 4), cands, waste.__getitem__, gpus, eq19="gpus")
    # Old reading (eq19="gpus"): node 0 needs both spot tasks: cost 0.5*(7300/14400) + 0.5*(4/4) = 0.7535;
    # node 1 needs job 3 only:       cost 0.5*(3600/14400) + 0.5*(4/4) = 0.625 -> node 1, victim 3.
    assert plan == ([(1, 4)], {3})
    # Waste order decides inside a node: for a 2-GPU pod on node 0 the cheaper spot task (2) goes.
    plan2 = plan_preemption(pool, Request(1, 2), {0: [1, 2]}, waste.__getitem__, gpus)
    assert plan2 == ([(0, 2)], {2})


def test_eq19_as_printed_by_hand():
    from sim.policies.gfs.pts import eq19_cost

    # beta sum W / (sum S x T) + (1 - beta)(F + |T|)/(G + F + |T|), T = 3,600 s.
    # Two victims, wastes 7,200 and 100 GPU-s, 2 GPUs each; F = 3 failed, G = 45 succeeded periods:
    # 0.5 x 7,300 / (4 x 3,600) + 0.5 x 5 / 50 = 0.25347 + 0.05 = 0.30347.
    assert eq19_cost([7200.0, 100.0], [2, 2], 4, 0.5, "paper", failed=3, succeeded=45) == pytest.approx(
        0.5 * 7300 / 14400 + 0.5 * 5 / 50)
    # One victim of 4 GPUs, waste 3,600: 0.5 x 0.25 + 0.5 x 4 / 49.
    assert eq19_cost([3600.0], [4], 4, 0.5, "paper", failed=3, succeeded=45) == pytest.approx(0.125 + 0.5 * 4 / 49)
    # The old reading counts GPUs per pod GPU: 0.5 x 7,300 / 14,400 + 0.5 x 4 / 4.
    assert eq19_cost([7200.0, 100.0], [2, 2], 4, 0.5, "gpus") == pytest.approx(0.5 * 7300 / 14400 + 0.5)
    # Node choice flips where the readings differ: node 0 evicts two 1-GPU tasks with little waste, node 1 one
    # 2-GPU task with much. Paper (F = 0, G = 20): node 0 0.5 x 200/7200 + 0.5 x 2/22 = 0.0593; node 1
    # 0.5 x 3600/7200 + 0.5 x 1/21 = 0.2738 -> node 0. Old: node 0 0.5 x 200/7200 + 0.5 x 2/2 = 0.514; node 1
    # 0.5 x 3600/7200 + 0.5 x 2/2 = 0.75 -> node 0 too; with waste 10 on node 1 the old picks node 1 (0.5007).
    pool = _pool_with({1: (0, 1), 2: (0, 1), 0: (0, 6), 3: (1, 2), 9: (1, 6)})
    gpus = lambda j, n: pool.holders[n].get(j, 0)  # noqa: E731
    waste = {1: 100.0, 2: 100.0, 3: 10.0}
    cands = {0: [1, 2], 1: [3]}
    assert plan_preemption(pool, Request(1, 2), cands, waste.__getitem__, gpus, eq19="gpus") == ([(1, 2)], {3})
    # Paper, F = 0, G = 20: node 0: 0.5 x 200/7200 + 0.5 x 2/22 = 0.0593; node 1: 0.5 x 10/7200 + 0.5 x 1/21
    # = 0.0245 -> node 1 as well; with F = 20 failed periods the count term barely differs (22/42 vs 21/41).
    assert plan_preemption(pool, Request(1, 2), cands, waste.__getitem__, gpus, succeeded=20) == ([(1, 2)], {3})
    waste[3] = 3600.0  # node 1's victim lost an hour: paper 0.5 x 0.5 + 0.0238 = 0.274 > 0.059 -> node 0
    assert plan_preemption(pool, Request(1, 2), cands, waste.__getitem__, gpus, succeeded=20) == ([(0, 2)], {1, 2})


def test_alg2_spares_what_can_be_spared():
    # Node 0 full: spot 1 (1 GPU, waste 10), spot 2 (4 GPUs, waste 100), spot 3 (3 GPUs, waste 500).
    # Ascending waste takes 1 then 2 (5 GPUs >= 4); job 1 is not needed and is spared.
    pool = _pool_with({1: (0, 1), 2: (0, 4), 3: (0, 3), 9: (1, 8)})
    waste = {1: 10.0, 2: 100.0, 3: 500.0}
    plan = plan_preemption(pool, Request(1, 4), {0: [1, 2, 3]}, waste.__getitem__,
                           lambda j, n: pool.holders[n].get(j, 0))
    assert plan == ([(0, 4)], {2})
    # Without sparing both go.
    plan = plan_preemption(pool, Request(1, 4), {0: [1, 2, 3]}, waste.__getitem__,
                           lambda j, n: pool.holders[n].get(j, 0), spare=False)
    assert plan == ([(0, 4)], {1, 2})


def test_alg2_gang_needs_every_pod_or_nothing():
    pool = _pool_with({1: (0, 8), 0: (1, 8)})  # node 0: spot, node 1: HP (not a candidate)
    plan = plan_preemption(pool, Request(2, 8, spread=False), {0: [1]}, lambda j: 1.0,
                           lambda j, n: pool.holders[n].get(j, 0))
    assert plan is None
    plan = plan_preemption(pool, Request(1, 8), {0: [1]}, lambda j: 1.0, lambda j, n: pool.holders[n].get(j, 0))
    assert plan == ([(0, 8)], {1})
