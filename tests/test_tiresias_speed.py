"""Tiresias' fast paths decide exactly what the plain search decides, and ask the placement less.

The reference below is Tiresias as it was before the fast paths: the lazy preemption heap of
HeadPreemptive walked from the worst-ranked running job, every pass run in full, and a placement that
is not the built-in ``consolidate`` type (the same rule in a subclass), so that no shortcut that relies
on consolidate's answers depending only on the pool applies."""
from __future__ import annotations

import pytest

from features.traces import load_trace
from sim.cluster import load_cluster
from sim.engine import Engine
from sim.placement import Consolidate
from sim.policies.preemptive import HeadPreemptive, Tiresias
from sim.workload import build_workload
from tests.helpers import workload


class _Plain(Consolidate):
    """Consolidate's rule under another type: the policy and the engine take their general paths."""

    calls = 0

    def place(self, pool, request):
        type(self).calls += 1
        return super().place(pool, request)


class _HeapTiresias(Tiresias):
    """Tiresias with HeadPreemptive's heap walk and a full pass on every event (the code before)."""

    skip_unreached = False  # every demotion timer is set, also those after the job's end

    def track(self, job: int) -> None:
        HeadPreemptive.track(self, job)

    def candidates(self, job: int):
        failed = self._failed
        if failed is not None and failed[0] == job and failed[2] == self._pool_shape():
            return None
        victims = HeadPreemptive.candidates(self, job)
        self._failed = None
        if victims is None and self.ctx.fits_monotonically(job):
            self._failed = (job, self.rank(job), self._pool_shape())
        return victims

    schedule = HeadPreemptive.schedule


@pytest.fixture
def counted(monkeypatch):
    """Counts the questions asked of the built-in Consolidate (what-if placements included)."""
    calls = {"n": 0}
    original = Consolidate.place

    def place(self, pool, request):
        if type(self) is Consolidate:
            calls["n"] += 1
        return original(self, pool, request)

    monkeypatch.setattr(Consolidate, "place", place)
    return calls


def _same(a, b) -> None:
    assert (a.first_start, a.end, a.preemptions, a.wait, a.train) == (b.first_start, b.end, b.preemptions, b.wait,
                                                                      b.train)
    assert a.policy_stats == b.policy_stats


@pytest.mark.slow  # ~14 s on the loaded 2-core machine (reading Philly, two replays)
def test_real_philly_same_schedule_with_far_fewer_placement_questions(philly_file, tmp_path, counted):
    # 3,000 Philly jobs on 20 x 8 GPUs: contended (thousands of preemptions, blocked multi-GPU heads)
    (tmp_path / "small.yaml").write_text("name: small\ngpu_type: P100\ngpus_per_node: 8\nnodes: 20\n")
    w = build_workload(load_trace(philly_file), load_cluster(str(tmp_path / "small.yaml")), limit=3000)
    fast = Engine(w, Tiresias, placement=Consolidate()).run()
    _Plain.calls = 0
    plain = Engine(w, _HeapTiresias, placement=_Plain()).run()
    _same(fast, plain)
    assert sum(fast.preemptions) > 1000
    # the reference asks 35,563 questions; the code before these fast paths 20,322 (its monotone
    # shortcut: one question for all eligible victims past the 8th); now 15,988
    assert counted["n"] < 0.5 * _Plain.calls, (counted["n"], _Plain.calls)


def _blocked_by_fragments():
    # 2 nodes x 4 GPUs. j0 (1 GPU) and j1 (3 GPUs, 10 s) fill node 0, j2 (1 GPU) goes to node 1; from
    # t=10 three GPUs are free on each node, so the 4-GPU head j3 passes the GPU count but cannot be
    # placed, and every running job is ranked better (queue 0, earlier). j1's demotion timer fires at
    # t=100 (300 GPU-s / 3 GPUs) after j1 finished: an event that changes nothing.
    rows = [(0, 1000, 1), (0, 10, 3), (0, 1000, 1), (1, 50, 4)]
    return workload(rows, nodes=2, gpus=4)


@pytest.mark.parametrize("reference", [False, True])
def test_an_event_that_changes_nothing_asks_nothing(monkeypatch, reference):
    engines = []
    asked_at: list[float] = []
    original = Consolidate.place

    def place(self, pool, request):
        asked_at.append(engines[0].now)
        return original(self, pool, request)

    monkeypatch.setattr(Consolidate, "place", place)
    policy, placement = (_HeapTiresias, _Plain()) if reference else (Tiresias, Consolidate())
    # the policy's own memo in the general loop (sim.kernel_tiresias keeps it too, but places inline)
    engine = Engine(_blocked_by_fragments(), lambda: policy(thresholds=300.0), placement=placement, fast_path=False)
    engines.append(engine)
    result = engine.run()
    assert result.first_start[3] == 300.0  # j0 and j2 drop a queue at t=300: j3 preempts j2
    assert result.preemptions == [0, 0, 1, 0]
    assert 10.0 in asked_at  # j1's finish: the head is asked for
    # the pass at t=100 would read what the pass at t=10 read; the reference asks again (Tiresias now
    # sets no timer there: j1 ends at t=10, before its crossing)
    assert (100.0 in asked_at) == reference


def test_failing_search_asks_a_monotone_placement_twice_not_once_per_prefix(counted):
    # 4 nodes x 8 GPUs. 7-GPU jobs leave one GPU per node to four long 1-GPU anchors; when three of them
    # end (t=5) the 8-GPU head (t=6) is blocked by the anchors (ranked better). Twelve later 1-GPU jobs
    # backfill (7 on node 0, 5 on node 1). At t=8 the last 7-GPU job ends (ranked better: the head's
    # remembered failure no longer holds) and the head may preempt all twelve, but even that leaves an
    # anchor on every node. 16 GPUs are free, so every prefix passes the GPU count: the search asked
    # the first 8 prefixes one by one, then all 12 (9 questions); now the first, then all 12.
    rows = [(0, 5, 7)] * 3 + [(0, 8, 7)] + [(0.5, 5000, 1)] * 4 + [(6, 1000, 8)] + [(7, 5000, 1)] * 12
    w = workload(rows, nodes=4, gpus=8)
    fast = Engine(w, lambda: Tiresias(thresholds=1e9), placement=Consolidate(), check_invariants=True).run()
    _Plain.calls = 0
    plain = Engine(w, lambda: _HeapTiresias(thresholds=1e9), placement=_Plain(), check_invariants=True).run()
    _same(fast, plain)
    assert fast.first_start[8] == 5000.5 and sum(fast.preemptions) == 0
    assert counted["n"] <= _Plain.calls - 7, (counted["n"], _Plain.calls)
