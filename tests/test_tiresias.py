"""Tiresias (discretised 2D-LAS) decides what the plain algorithm decides.

``_Brute`` is the algorithm with none of the shortcuts of ``sim.policies.preemptive.Tiresias``: every
event gets a full pass, the preemption search walks every running job ranked worse than the head
(worst first) and asks the placement about each prefix in turn, a start asks the placement every time,
and every demotion timer is set. Only the ranks (queue by attained GPU-seconds, then submission) and
the timers at the exact crossing times are shared with the policy under test."""
from __future__ import annotations

import random

import pytest

from sim.engine import Engine
from sim.placement import Consolidate
from sim.policies.preemptive import Tiresias
from sim.states import LOADING, RUNNING
from tests.helpers import workload


class _Brute(Tiresias):
    skip_unreached = False

    def track(self, job: int) -> None:
        self.version += 1

    def _untrack(self, job: int) -> None:
        pass

    def candidates(self, job: int):
        ctx = self.ctx
        mine = self.rank(job)
        running = sorted((j for j in ctx.running if ctx.state(j) in (LOADING, RUNNING)), key=self.rank,
                         reverse=True)
        victims = []
        for victim in running:
            if not self.rank(victim) > mine:
                break
            victims.append(victim)
            if ctx.would_fit(job, victims) is not None:
                return victims
        return None

    def _start(self, job: int) -> bool:
        if self.ctx.try_start(job):
            self.started(job)
            return True
        return False

    def schedule(self) -> None:
        ctx, items, gpus = self.ctx, self.queue.items, self.ctx.jobs.gpus
        while items:
            job = items[0][1]
            if self._start(job):
                items.pop(0)
                continue
            if self.saving_gpus and gpus[job] <= ctx.free_gpus + self.saving_gpus:
                break
            victims = self.candidates(job)
            if not victims:
                break
            self.preempt(victims)
            if self._start(job):
                items.pop(0)
            else:
                break
        keep = items[:1]
        for entry in items[1:]:
            if not (ctx.free_gpus and self._start(entry[1])):
                keep.append(entry)
        self.queue.items = keep


def _same(a, b) -> None:
    assert a.first_start == b.first_start
    assert a.end == b.end
    assert a.preemptions == b.preemptions
    assert a.policy_stats == b.policy_stats


def _random_rows(seed: int, sizes: list[int], n: int = 60) -> list[tuple]:
    rng = random.Random(seed)
    t, rows = 0.0, []
    for _ in range(n):
        t += rng.choice([0, 0, 5, 20, 60])
        rows.append((t, rng.choice([10, 60, 300, 900, 4000]), rng.choice(sizes)))
    return rows


# (nodes, GPUs per node, job sizes): jobs of one node and jobs spanning two (or more) nodes
SHAPES = [(3, 4, [1, 1, 1, 2, 2, 4, 8]), (4, 8, [1, 1, 2, 4, 8, 8, 16, 24])]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("thresholds", [200.0, [100.0, 1500.0]])
@pytest.mark.parametrize("shape", SHAPES)
def test_same_schedule_as_the_brute_force_algorithm(seed, thresholds, shape):
    nodes, per_node, sizes = shape
    rows = _random_rows(seed, sizes)
    save = [0.0 if seed % 2 else 7.0] * len(rows)
    load = [0.0 if seed % 3 else 3.0] * len(rows)
    w = workload(rows, nodes=nodes, gpus=per_node, load=load, save=save)
    fast = Engine(w, lambda: Tiresias(thresholds=thresholds), placement=Consolidate(),
                  check_invariants=True).run()
    brute = Engine(w, lambda: _Brute(thresholds=thresholds), placement=Consolidate(),
                   check_invariants=True).run()
    _same(fast, brute)
    assert sum(fast.preemptions) > 0


def test_a_finish_lets_the_blocked_head_preempt_at_once():
    # One node of 4 GPUs. j0 (1 GPU) and j1 (2 GPUs) run from t=0 and drop to queue 1 (100 GPU-s) at
    # t=100 and t=50; j2 (1 GPU, t=150, 60 s) stays in queue 0 and ends at t=210. The 4-GPU head j3
    # (t=200, 20 s) cannot be placed by preempting j0 and j1 while j2 runs (3 GPUs); when j2 ends it can.
    # Tiresias re-decides on every completion: j3 preempts j0 and j1 at t=210. (Before, a finish did
    # not count as a change of the running set, so the failed search was not asked again and j3
    # waited for j0 and j1 to end at t=1000.)
    rows = [(0, 1000, 1), (0, 1000, 2), (150, 60, 1), (200, 20, 4)]
    w = workload(rows, nodes=1, gpus=4)
    result = Engine(w, lambda: Tiresias(thresholds=100.0), placement=Consolidate(),
                    check_invariants=True).run()
    assert result.first_start[3] == 210.0
    assert result.preemptions == [1, 1, 0, 0]
    brute = Engine(w, lambda: _Brute(thresholds=100.0), placement=Consolidate()).run()
    _same(result, brute)


def test_timers_after_a_jobs_end_are_not_set(monkeypatch):
    # Each job ends before its first crossing (3,600 GPU-s): the policy sets no demotion timer.
    w = workload([(0, 100, 1), (5, 200, 2), (9, 50, 4)], nodes=2, gpus=4)
    timers = []
    original = Engine.set_timer

    def set_timer(self, at, payload, owner):
        timers.append(payload)
        return original(self, at, payload, owner)

    monkeypatch.setattr(Engine, "set_timer", set_timer)
    fast = Engine(w, Tiresias, placement=Consolidate()).run()
    assert timers == []
    brute = Engine(w, _Brute, placement=Consolidate()).run()
    assert timers == [0, 1, 2]
    _same(fast, brute)
