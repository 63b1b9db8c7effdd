"""Engine v2, item 4: placement-dependent speed through the performance-model hook."""
import pytest

from evaluation.metrics import check_identities, job_table
from sim import simulate
from sim.engine import Engine
from sim.interference import PairInterference
from sim.performance import ConstantSpeed, PerformanceModel
from tests.helpers import workload
from tests.test_engine_v2_requests import Greedy


def test_no_model_means_speed_one():
    w = workload([(0, 10, 1), (0, 10, 1)], nodes=1, gpus=1, gpu_fraction=[0.5, 0.5])
    assert Engine(w, Greedy, check_invariants=True).run().end == [10, 10]


def test_golden_shared_gpu_slows_both_and_neighbour_leaving_restores():
    # 1 GPU; j0 (0.5 GPU, 100 s) alone 0-10; j1 (0.5 GPU, 20 s) shares it from 10: both at 0.5, j1 needs
    # 40 s and ends at 50; j0 did 10 + 20 = 30 s of work, runs alone again at speed 1: ends 50 + 70 = 120.
    w = workload([(0, 100, 1), (10, 20, 1)], nodes=1, gpus=1, gpu_fraction=[0.5, 0.5])
    result = Engine(w, Greedy, performance=ConstantSpeed(shared=0.5), check_invariants=True).run()
    jobs = job_table(result)
    check_identities(jobs)
    assert jobs["end"].tolist() == pytest.approx([120, 50])
    assert result.work_done == pytest.approx([100, 20])


def test_golden_speed_from_the_placement():
    # 2 nodes x 2 GPUs; a 4-GPU job spans both nodes: speed 1 - 0.5 x 1 extra node = 0.5, so 10 s of work
    # take 20 s; a 2-GPU job on one node runs at 1.
    w = workload([(0, 10, 4), (30, 10, 2)], nodes=2, gpus=2)
    result = simulate(w, "fifo", performance=ConstantSpeed(per_extra_node=0.5), check_invariants=True)
    assert result.end == pytest.approx([20, 40])


def test_model_sees_job_placement_and_sharers():
    calls = []
    engine = None  # models get the workload, not the engine: the test reads the clock itself

    class Spy(PerformanceModel):
        def speed(self, job, placement, colocated):
            calls.append((engine.now, job, tuple(placement), tuple(colocated)))
            return 1.0

    w = workload([(0, 10, 1), (2, 5, 1)], nodes=1, gpus=1, gpu_fraction=[0.5, 0.5])
    engine = Engine(w, Greedy, performance=Spy())
    engine.run()
    assert calls == [(0, 0, ((0, 0, 500),), ()),            # j0 starts alone
                     (2, 1, ((0, 0, 500),), (0,)),          # j1 starts next to j0 ...
                     (2, 0, ((0, 0, 500),), (1,)),          # ... and j0's neighbours changed
                     (7, 0, ((0, 0, 500),), ())]            # j1 left: j0 alone again


class FakePairs:
    def speeds(self, a, b):
        return {("x", "y"): (0.8, 0.6), ("y", "x"): (0.6, 0.8)}[(a, b)]


def test_pair_interference_is_one_implementation():
    # j0 (key x, 100 s) and j1 (key y, 60 s) share one GPU from 0: x at 0.8, y at 0.6. j1 ends at 100
    # (60 / 0.6); j0 has done 80 by then and ends at 120.
    w = workload([(0, 100, 1), (0, 60, 1)], nodes=1, gpus=1, gpu_fraction=[0.5, 0.5])
    result = Engine(w, Greedy, performance=PairInterference(FakePairs(), ["x", "y"]), check_invariants=True).run()
    assert result.end == pytest.approx([120, 100])
