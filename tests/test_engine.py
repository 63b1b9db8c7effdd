"""Engine mechanics: packing speeds, timers, errors, determinism."""
import pytest

from evaluation.metrics import check_identities, job_table
from sim.engine import Engine, SimulationError
from sim.policies.base import Policy
from tests.helpers import workload


class PackSecond(Policy):
    """Starts the first job alone and packs every later job onto it at half speed each."""

    def __init__(self):
        self.waiting = []

    def on_arrival(self, job):
        self.waiting.append(job)

    def schedule(self):
        for job in list(self.waiting):
            if self.ctx.try_start(job):
                self.waiting.remove(job)
            else:
                host = next(iter(self.ctx.running))
                self.ctx.pack(job, host, 0.5, 0.5)
                self.waiting.remove(job)


def test_pack_stretches_and_unpack_restores():
    # j0 100 s alone 0-10, then both at half speed: j1 (20 s of work) ends at 50; j0 has done
    # 10 + 20 = 30 s of work, runs alone again and ends at 50 + 70 = 120.
    w = workload([(0, 100, 1), (10, 20, 1)], nodes=1, gpus=1)
    result = Engine(w, PackSecond, check_invariants=True).run()
    jobs = job_table(result)
    check_identities(jobs)
    assert jobs["end"].tolist() == pytest.approx([120, 50])
    assert result.work_done == pytest.approx([100, 20])


class NeverStarts(Policy):
    def on_arrival(self, job):
        pass

    def schedule(self):
        pass


def test_unfinished_jobs_are_reported():
    with pytest.raises(SimulationError, match="unfinished jobs"):
        Engine(workload([(0, 1, 1)]), NeverStarts).run()


class BadPreempt(NeverStarts):
    def schedule(self):
        self.ctx.preempt(0)


def test_illegal_decision_names_job_and_time():
    with pytest.raises(SimulationError, match="job 0 cannot be preempted while queued"):
        Engine(workload([(0, 1, 1)]), BadPreempt).run()


class TimerPolicy(Policy):
    def __init__(self):
        self.q, self.fired = [], []

    def on_arrival(self, job):
        self.q.append(job)
        self.ctx.set_timer(self.ctx.now + 7.5, job)

    def on_timer(self, payload):
        self.fired.append((self.ctx.now, payload))
        self.ctx.try_start(self.q.pop(0))

    def schedule(self):
        pass


def test_timers_fire_at_exact_times_and_jobs_end_exactly():
    w = workload([(0, 3.25, 1), (1, 2, 1)])
    engine = Engine(w, TimerPolicy)
    result = engine.run()
    assert engine.policies[0].fired == [(7.5, 0), (8.5, 1)]
    assert result.end == [10.75, 10.5]


def test_same_seed_same_result():
    from features.traces.synthetic import generate_preset
    from sim import simulate
    from sim.cluster import load_cluster
    from sim.workload import build_workload

    def run():
        w = build_workload(generate_preset("demo", seed=3, jobs=300), load_cluster("demo"))
        return job_table(simulate(w, "tiresias"))

    assert run().equals(run())


class EvictSecond(Policy):
    """Runs jobs in order; when job 1 arrives it evicts job 0 (spot) and starts job 1."""

    def __init__(self):
        self.q = []

    def on_arrival(self, job):
        self.q.append(job)
        if job == 1:
            self.ctx.evict(0)

    def schedule(self):
        while self.q and self.ctx.try_start(self.q[0]):
            self.q.pop(0)


def test_evict_loses_progress_and_frees_gpus_at_once():
    # 1 GPU; j0 100 s from 0, evicted at 30 (30 s lost, no save even with a save time); j1 runs
    # 30-40; j0 restarts at 40 from scratch and ends at 140.
    w = workload([(0, 100, 1), (30, 10, 1)], nodes=1, gpus=1, save=[50, 50])
    result = Engine(w, EvictSecond, check_invariants=True).run()
    jobs = job_table(result)
    check_identities(jobs)
    assert jobs["end"].tolist() == pytest.approx([140, 40])
    assert jobs["lost"].tolist() == pytest.approx([30, 0]) and jobs["evictions"].tolist() == [1, 0]
    assert jobs["save"].tolist() == [0, 0]


def test_a_workload_out_of_order_or_with_a_non_finite_submission_is_refused():
    """The engine replays submissions in order; a NaN passed the order check and then never arrived, so
    the replay never ended."""
    import dataclasses

    from sim import simulate
    from sim.errors import SimulationError
    from tests.helpers import workload as make

    w = make([(0, 10, 1), (5, 3, 1), (7, 4, 1)])
    for submit, message in (([0.0, 5.0, 2.0], "not sorted"), ([0.0, float("nan"), 2.0], "finite"),
                            ([0.0, 1.0, float("inf")], "finite")):
        with pytest.raises(SimulationError, match=message):
            simulate(dataclasses.replace(w, submit=submit), "fifo")
    assert simulate(dataclasses.replace(w, submit=[0, 1, 2]), "fifo").events == 6
