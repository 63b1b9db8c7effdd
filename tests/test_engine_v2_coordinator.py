"""Engine v2, items 6-7: a toy coordinator (moving an idle node, transferring a waiting job),
predictions by name, run seed and per-stream generators."""
import numpy as np
import pytest

from sim.coordinator import Coordinator
from sim.engine import Engine, SimulationError
from sim.workload import build_workload
from tests.helpers import cluster, table, workload
from tests.test_engine_v2_requests import Greedy


class Releasing(Greedy):
    """Greedy with the contract's release / waiting_count (the base class gets them from the POLICIES
    helper; defined here so this test does not depend on that migration)."""

    def release(self, job):
        if job in self.waiting:
            self.waiting.remove(job)
            return True
        return False

    def waiting_count(self):
        return len(self.waiting)


class Balancer(Coordinator):
    """Sends waiting jobs of a busy partition to one with idle nodes; at t=20 moves an idle node of b
    to a."""

    def __init__(self):
        self.transfers, self.moves, self.views = 0, 0, []
        self.queues = {}  # partition -> its policy's waiting list (policies register in on_start)

    def on_start(self):
        self.cctx.set_timer(20, "move")

    def after_schedule(self):
        a, b = self.cctx.view("a"), self.cctx.view("b")
        self.views.append((self.cctx.now, a.free_gpus, a.capacity, a.waiting(), b.free_gpus, sorted(b.running)))
        if a.waiting() and b.idle_nodes():
            for job in list(self.queues[a.index]):
                if self.cctx.jobs.gpus[job] <= b.free_gpus and self.cctx.transfer(job, "b"):
                    self.transfers += 1

    def on_timer(self, payload):
        assert payload == "move"
        b = self.cctx.view("b")
        self.cctx.move_node(b.idle_nodes()[0], "b", "a")
        self.moves += 1

    def stats(self):
        return {"transfers": self.transfers, "moves": self.moves}


class WithBalancer(Releasing):
    coordinator_class = Balancer

    def on_start(self):
        self.ctx.coordinator.queues[self.ctx.partition] = self.waiting


def test_toy_coordinator_transfers_a_job_and_moves_an_idle_node():
    # Partitions a and b, one 4-GPU node each. j0 (a, 4 GPUs, 100 s) runs on a; j1 (a, 4 GPUs, 10 s) at 1
    # waits, the coordinator sends it to b: 1-11. At 20 b's idle node moves to a; j2 (a, 4 GPUs) at 20
    # starts on it at once.
    t = table([(0, 100, 4), (1, 10, 4), (20, 5, 4)], org=["a", "a", "a"])
    w = build_workload(t, cluster(gpus=4, partitions={"a": 1, "b": 1}))
    engine = Engine(w, WithBalancer, check_invariants=True, record_events=True)
    result = engine.run()
    assert result.first_start == [0, 1, 20] and result.end == [100, 11, 25]
    assert engine.partition_of == [0, 1, 0]
    assert result.policy_stats["transfers"] == 1 and result.policy_stats["moves"] == 1
    assert engine.policies[0].ctx.coordinator is engine.coordinator
    moves = [e for e in result.event_log if e[1] == "move-node"]
    assert moves == [(20, "move-node", -1, (1, 0, 0, 1))]
    view = engine.coordinator.cctx.view("a")
    assert (view.capacity, view.nominal_capacity) == (8, 4)
    # What the coordinator saw after scheduling at 1: a full with one waiting job, b idle.
    assert (1, 0, 4, 1, 4, []) in engine.coordinator.views


def test_coordinator_cannot_move_a_busy_node_or_transfer_a_running_job():
    class Greedy2(Coordinator):
        def after_schedule(self):
            if self.cctx.now == 0:
                self.cctx.move_node(0, "a", "b")

    t = table([(0, 10, 4)], org=["a"])
    w = build_workload(t, cluster(gpus=4, partitions={"a": 1, "b": 1}))
    with pytest.raises(SimulationError, match="only an idle node"):
        Engine(w, Releasing, coordinator=Greedy2()).run()

    class Mover(Coordinator):
        def after_schedule(self):
            if self.cctx.now == 0:
                self.cctx.transfer(0, "b")

    with pytest.raises(SimulationError, match="only a waiting job"):
        Engine(w, Releasing, coordinator=Mover()).run()


class Recorder(Greedy):
    out = {}

    def on_start(self):
        ctx = self.ctx
        Recorder.out[ctx.partition] = (ctx.seed, ctx.rng("bo").random(3).tolist(), ctx.rng("bo").random(),
                                       ctx.rng("other").random())


def _draws(seed, partitions=None):
    Recorder.out = {}
    if partitions:
        w = build_workload(table([(0, 1, 1)], org=["a"]), cluster(gpus=1, partitions=partitions))
    else:
        w = workload([(0, 1, 1)])
    Engine(w, Recorder, seed=seed).run()
    return dict(Recorder.out)


def test_rng_is_deterministic_per_seed_stream_and_partition():
    a, b, c = _draws(0), _draws(0), _draws(7)
    assert a == b and a != c
    seed, first, fourth, other = a[0]
    assert seed == 0 and c[0][0] == 7
    assert fourth not in first and other not in first   # the stream continues; streams differ
    parts = _draws(0, {"a": 1, "b": 1})
    assert parts[0][1] != parts[1][1]                    # partitions differ


def test_predictions_by_name():
    w = workload([(0, 10, 1), (1, 20, 1)])
    seen = {}

    class Reader(Greedy):
        def on_arrival(self, job):
            ctx = self.ctx
            seen[job] = (ctx.prediction(job), ctx.prediction(job, "iterations"), ctx.has_prediction("iterations"),
                         ctx.has_prediction("class"))
            super().on_arrival(job)

    Engine(w, Reader, predictions={"duration": [11.0, 19.0], "iterations": [100, 200]}).run()
    assert seen == {0: (11.0, 100, True, False), 1: (19.0, 200, True, False)}
    seen.clear()
    Engine(w, Reader, predictions={"iterations": [1, 2]}).run()
    assert seen[0][0] == 10  # no duration predictions: the true duration, as before

    class Missing(Greedy):
        def on_arrival(self, job):
            self.ctx.prediction(job, "class")

    with pytest.raises(SimulationError, match="no 'class' predictions"):
        Engine(w, Missing).run()
    with pytest.raises(SimulationError, match="1 values for 2 jobs"):
        Engine(w, Greedy, predictions={"duration": [1.0]})


def test_simulate_passes_seed_and_plain_prediction_lists():
    from sim import simulate

    w = workload([(0, 10, 1), (0, 5, 1)], nodes=1, gpus=1)
    # spjf orders by predicted duration: with predictions [1, 50] j0 goes first despite being longer.
    r = simulate(w, "spjf", predictions=[1.0, 50.0], seed=3)
    assert r.end == [10, 15] and r.seed == 3
    assert np.allclose(simulate(w, "spjf").end, [15, 5])  # oracle by default: the shorter first
