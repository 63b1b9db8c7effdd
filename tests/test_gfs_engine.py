"""GFS task model on the engine: evictions keep checkpoints, restart / preemption overheads, gangs and
fractions under the GFS placement, hand-worked numbers."""
import math

import pytest

from evaluation.metrics import check_identities, job_table
from sim import simulate
from sim.engine import Engine
from sim.placement.pool import NodePool
from sim.policies.base import Policy
from sim.policies.gfs.pts import GfsPlacement
from sim.workload import Request
from tests.helpers import workload


class EvictAt(Policy):
    """Starts jobs in order when they fit; evicts job ``victim`` at ``at`` with ``overhead``."""

    def __init__(self, victim=0, at=5000.0, overhead=0.0):
        self.victim, self.at, self.overhead = victim, at, overhead
        self.waiting = []

    def on_start(self):
        self.ctx.set_timer(self.at, "evict")

    def on_arrival(self, job):
        self.waiting.append(job)

    def on_timer(self, payload):
        self.ctx.evict(self.victim, overhead=self.overhead)

    def schedule(self):
        self.waiting[:] = [j for j in self.waiting if not (self.ctx.may_fit(j) and self.ctx.try_start(j))]


def _run(w, **kw):
    return Engine(w, lambda: EvictAt(**kw), check_invariants=True, record_events=True).run()


def test_eviction_loses_only_the_work_since_the_last_checkpoint():
    # One 4-GPU job of 10,000 s checkpointing every 3,600 s, evicted at t=5,000 with a 60 s restart overhead:
    # it keeps 3,600 s, loses 1,400 s, restarts at once (load 60 s) and redoes 6,400 s -> ends 11,460.
    w = workload([(0, 10_000, 4)], nodes=1, gpus=8, checkpoint_interval=[3600.0])
    r = _run(w, overhead=60.0)
    assert r.evictions[0] == 1
    assert r.lost[0] == pytest.approx(1400.0) and r.lost_work[0] == pytest.approx(1400.0)
    assert r.load[0] == pytest.approx(60.0)
    assert r.end[0] == pytest.approx(5000 + 60 + 6400)
    assert r.train[0] == pytest.approx(5000 + 6400)
    assert r.work_done[0] == pytest.approx(10_000)
    check_identities(job_table(r))


def test_eviction_without_checkpoint_interval_is_unchanged():
    # No checkpoint: the whole run since the start is lost, as before (and no overhead unless asked).
    w = workload([(0, 10_000, 4)], nodes=1, gpus=8)
    r = _run(w)
    assert r.lost[0] == pytest.approx(5000.0) and r.lost_work[0] == 0.0
    assert r.end[0] == pytest.approx(15_000.0) and r.load[0] == 0.0


def test_two_checkpoints_in_one_attempt_and_a_second_eviction():
    # Evicted at 8,000 s of run: two checkpoints (7,200 s kept), 800 s lost.
    w = workload([(0, 10_000, 4)], nodes=1, gpus=8, checkpoint_interval=[3600.0])
    r = _run(w, at=8000.0)
    assert r.lost[0] == pytest.approx(800.0)
    assert r.end[0] == pytest.approx(8000 + 2800)


def test_gfs_preemption_hand_worked():
    # Spot 4 GPUs x 10,000 s (checkpoint 3,600 s) from t=0; HP 8 GPUs x 100 s at t=5,000 on one 8-GPU node.
    # HP evicts the spot task (1,400 s lost), pays 40 s, runs 5,000..5,140; the spot task restarts at 5,140
    # with a 40 s overhead and 6,400 s left: ends 11,580, waited 140 s.
    w = workload([(0, 10_000, 4), (5000, 100, 8)], nodes=1, gpus=8, org=["a", "b"],
                 job_class=["spot", "hp"], checkpoint_interval=[3600.0, None])
    # (gfs without its quota: after the HP burst the quota allocator would hold the spot task back.)
    for policy in ("gfs:quota=false", "yarn-cs", "lyra", "fgd"):
        r = simulate(w, policy, check_invariants=True)
        assert r.evictions == [1, 0], policy
        assert r.end[1] == pytest.approx(5140.0) and r.load[1] == pytest.approx(40.0), policy
        assert r.lost[0] == pytest.approx(1400.0), policy
        assert r.wait[0] == pytest.approx(140.0) and r.load[0] == pytest.approx(40.0), policy
        assert r.end[0] == pytest.approx(11_580.0), policy
        check_identities(job_table(r))


def test_big_spot_task_restart_costs_60_s():
    w = workload([(0, 10_000, 16), (5000, 100, 8)], nodes=2, gpus=8, org=["a", "b"],
                 job_class=["spot", "hp"], checkpoint_interval=[3600.0, None], num_pods=[2, 1],
                 gpus_per_pod=[8, 8])
    r = simulate(w, "gfs", check_invariants=True)
    assert r.evictions[0] == 1 and r.load[0] == pytest.approx(60.0)


def test_chronus_evicts_only_at_the_end_of_a_lease():
    # The spot task started at 0 has 5-minute leases: HP arriving at 5,000 waits for the lease end at 5,100.
    w = workload([(0, 10_000, 4), (5000, 100, 8)], nodes=1, gpus=8, org=["a", "b"],
                 job_class=["spot", "hp"], checkpoint_interval=[3600.0, None])
    r = simulate(w, "chronus", check_invariants=True)
    assert r.evictions[0] == 1
    assert r.first_start[1] == pytest.approx(5100.0)


def test_gang_all_or_nothing_under_gfs_placement():
    pool = NodePool([8, 8])
    pool.allocate([(1, 4)], job=0)
    pool.job_class = ["hp"]
    place = GfsPlacement()
    assert place.place(pool, Request(2, 8, spread=False)) is None  # only one node has 8 free: the gang waits whole
    assert place.place(pool, Request(2, 4, spread=False)) == [(0, 4), (1, 4)]  # tightest node first, then the other
    assert place.place(pool, Request(3, 4, spread=False)) == [(0, 8), (1, 4)]


def test_fractional_pods_share_a_gpu_and_gpu_seconds_are_conserved():
    # Two 0.5-GPU spot pods and one HP 0.5 pod on one 1-GPU node: two run at once, the third waits.
    w = workload([(0, 100, 1), (0, 100, 1), (0, 50, 1)], nodes=1, gpus=1, org=["a", "a", "b"],
                 gpu_fraction=[0.5, 0.5, 0.5], job_class=["hp", "spot", "spot"])
    for policy in ("gfs", "fgd", "yarn-cs"):
        r = simulate(w, policy, check_invariants=True)
        starts = sorted(r.first_start)
        assert starts[:2] == [0.0, 0.0] and starts[2] > 0, policy
        assert r.work_done == pytest.approx([100, 100, 50]), policy


def test_fractional_hp_preempts_a_spot_share():
    # A full GPU of two 0.5 spot pods; an HP 0.5 pod arrives: one spot pod is evicted, never the HP.
    w = workload([(0, 1000, 1), (0, 1000, 1), (10, 100, 1)], nodes=1, gpus=1, org=["a", "a", "b"],
                 gpu_fraction=[0.5, 0.5, 0.5], job_class=["spot", "spot", "hp"],
                 checkpoint_interval=[3600.0, 3600.0, None])
    r = simulate(w, "gfs", check_invariants=True)
    assert sum(r.evictions[:2]) == 1 and r.evictions[2] == 0
    assert r.first_start[2] == pytest.approx(10.0)
