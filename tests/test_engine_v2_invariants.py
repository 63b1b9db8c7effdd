"""Engine v2, item 8: invariant checks raise a named InvariantViolation (also under python -O) that
states the invariant, the job, the node and the time."""
import subprocess
import sys
from pathlib import Path

import pytest

from sim.engine import EV_FINISH, Engine, InvariantViolation, SimulationError
from tests.helpers import workload
from tests.test_engine_v2_requests import Greedy

ROOT = Path(__file__).resolve().parents[1]


class CorruptPool(Greedy):
    def schedule(self):
        super().schedule()
        if self.ctx.now == 5:
            self.ctx.pool.free[0] = 9  # more free GPUs than the node has


class FinishTwice(Greedy):
    def on_finish(self, job):
        e = self.ctx._engine  # deliberately behind the Context's back
        if job == 0 and not getattr(self, "done", False):
            self.done = True
            e._push(e.now + 1, EV_FINISH, job)  # a second completion event for a finished job


class LoseWork(Greedy):
    def schedule(self):
        super().schedule()
        if self.ctx.now == 2:
            self.ctx._engine.remaining[0] -= 3  # three seconds of work vanish


def test_violations_name_invariant_node_job_and_time():
    w = workload([(0, 10, 2), (5, 10, 1)], nodes=1, gpus=4)
    with pytest.raises(InvariantViolation) as info:
        Engine(w, CorruptPool, check_invariants=True).run()
    exc = info.value
    assert isinstance(exc, SimulationError)
    assert (exc.invariant, exc.time, exc.node, exc.partition) == ("no node over-allocated", 5, 0, 0)
    assert str(exc).startswith("invariant violated: no node over-allocated (t=5, partition 0, node 0)")

    with pytest.raises(InvariantViolation, match=r"each job completes at most once \(t=11, job 0\)"):
        Engine(workload([(0, 10, 1)]), FinishTwice, check_invariants=True).run()

    with pytest.raises(InvariantViolation, match=r"GPU-seconds conserved.*job 0"):
        Engine(workload([(0, 10, 1), (2, 1, 1)]), LoseWork, check_invariants=True).run()


def test_checks_survive_python_O():
    code = ("from tests.test_engine_v2_invariants import CorruptPool\n"
            "from tests.helpers import workload\nfrom sim.engine import Engine, InvariantViolation\n"
            "try:\n    Engine(workload([(0, 10, 2), (5, 10, 1)], nodes=1, gpus=4), CorruptPool,"
            " check_invariants=True).run()\nexcept InvariantViolation as e:\n    print('caught', e.invariant)\n")
    out = subprocess.run([sys.executable, "-O", "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "caught no node over-allocated", out.stderr


def test_per_gpu_capacity_with_fractions():
    from sim.placement import NodePool

    pool = NodePool([1])
    pool.allocate_shares([(0, 0, 600)], job=1)
    pool.shares[0][0][2] = 500  # 1100 milli-GPUs on one GPU
    with pytest.raises(InvariantViolation, match="no GPU over its capacity.*node 0"):
        pool.check()


def test_unchanged_state_is_not_rechecked_but_a_hidden_corruption_is_caught_at_the_next_change(monkeypatch):
    calls = []
    import sim.invariants

    original = sim.invariants._screen  # where a check reads the whole state (it walks it on a violation only)
    monkeypatch.setattr(sim.invariants, "_screen", lambda engine: (calls.append(1), original(engine))[1])
    w = workload([(0, 10, 2), (0, 10, 2), (1, 1, 4), (2, 1, 4), (3, 1, 4)], nodes=1, gpus=4)
    Engine(w, Greedy, check_invariants=True).run()
    # arrivals at t=1, 2, 3 of jobs that cannot start change nothing: the pool is not re-checked there
    assert 0 < len(calls) < 7, calls

    class Corrupt(Greedy):
        def schedule(self):
            super().schedule()
            if self.ctx.now == 1:  # a 4-GPU job arrives and cannot start: nothing else changes at t=1
                self.ctx.pool.total_free += 1  # the free-GPU total out of sync

    with pytest.raises(InvariantViolation) as info:
        Engine(w, Corrupt, check_invariants=True).run()
    assert info.value.invariant == "free GPU total in sync" and info.value.time == 10  # at the next change
