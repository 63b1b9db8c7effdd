"""Golden traces worked out by hand (see the comments) for Lazer with a fixed deferral, QSSF and Lucid."""
import pytest

from evaluation.metrics import check_identities, job_table
from sim import simulate
from sim.engine import Engine
from sim.policies import get_policy
from sim.policies.lucid import LucidCoordinator, attach_profiles, with_profiler
from tests.helpers import workload


def test_qssf_orders_by_gpus_times_history_estimate():
    # One node, 4 GPUs. (submit, duration, GPUs). Keys are fixed at arrival: GPUs x mean duration of
    # jobs finished so far (no user / org here: all jobs), 3,600 s before any finished.
    # j0 0-10. j1 (key 3600) and j2 (key 7200) wait; at 10 both start (j1 10-110, j2 10-15), 1 GPU free.
    # j3 arrives at 12: key 2 x 10 = 20; needs 2 GPUs, 1 free: waits. j4 arrives at 13: key 1 x 10 = 10,
    # ahead of j3: starts at once, 13-63 (strict FIFO would keep it behind j3). At 15 j2 ends: j3 15-18.
    rows = [(0, 10, 4), (1, 100, 1), (2, 5, 2), (12, 3, 2), (13, 50, 1)]
    jobs = job_table(simulate(workload(rows), "qssf", check_invariants=True))
    check_identities(jobs)
    assert jobs["first_start"].tolist() == pytest.approx([0, 10, 10, 15, 13])
    assert jobs["jct"].tolist() == pytest.approx([10, 109, 13, 6, 50])
    fifo = job_table(simulate(workload(rows), "fifo"))
    assert fifo["first_start"].tolist()[4] == pytest.approx(15)  # the difference QSSF makes


def test_lazer_fixed_deferral():
    # One node, 4 GPUs, no load / save costs, deferral fixed at 15 s.
    # j0 (0, 100, 2) and j1 (0, 50, 2) run from 0. j2 (10, 20, 2) cannot fit: J_r = [j0] (longest
    # remaining, 90 > 20) is deferred: j0 joins the DRQ, timer at 25. j3 (12, 5, 2): j0 is excluded
    # (DRQ), J_r = [j1] (38 > 5), deferred to 27. At 25 j0 leaves the DRQ and is preempted at once (75 s
    # left): j2 25-45. At 27 j1 (23 s left) is preempted: j3 27-32. At 32 the WQ starts j1 (23 s): 32-55.
    # At 45 j0 (75 s): 45-120.
    rows = [(0, 100, 2), (0, 50, 2), (10, 20, 2), (12, 5, 2)]
    result = simulate(workload(rows), "lazer:deferral=15", check_invariants=True)
    jobs = job_table(result)
    check_identities(jobs)
    assert jobs["jct"].tolist() == pytest.approx([120, 55, 35, 20])
    assert result.preemptions == [1, 1, 0, 0]
    assert result.policy_stats["lazer_deferrals"] == 2
    # Without a deferral Lazer preempts at arrival: j2 10-30 (j0 paused, 90 s left), j3 12-17 (j1 paused,
    # 38 s left), j1 17-55, j0 30-120: the same ends for j0 and j1, 15 s less waiting for j2 and j3.
    now = job_table(simulate(workload(rows), "lazer:deferral=0"))
    assert now["jct"].tolist() == pytest.approx([120, 55, 20, 5])


def test_lucid_profiler_then_binder(shared_data):
    # One 1-GPU VC node and a 1-GPU profiler node; T_prof 200 s, G_SS 2, scores forced to 0, oracle
    # estimates, no update engine, no dynamic strategy, no eviction (unstable_speed=0).
    # j0 (0, 100): profiled 0-100 and done there (the debugging-job filter).
    # j1 (0, 1000): waits for the profiler, profiled 100-300, paused, moved to the VC: 300 on, 800 left.
    # j2 (50, 1000): profiled 300-500, moved with 800 left. At 500 the binder packs it on j1: both
    # profiled, scores 0 + 0 <= 2, j2's estimate 800 >= 300 and <= 2 x j1's 600, j1 solo with 600 left.
    # From 500 j2 runs at speed a and j1 at b (the measured pair speeds); whichever ends first, the
    # other runs alone at speed 1 afterwards.
    from sim.interference import InterferenceModel

    interference = InterferenceModel.load(shared_data)
    keys = ["ResNet18|32|0", "ResNet18|32|0", "MobileNetV3|32|0"]
    w = attach_profiles(workload([(0, 100, 1), (0, 1000, 1), (50, 1000, 1)], nodes=1, gpus=1), interference)
    w.frame["profile_key"] = keys
    w = with_profiler(w, nodes=1, gpus_per_node=1)
    _, factory, _ = get_policy("lucid:update_interval=0,dynamic=False,unstable_speed=0")

    class ScoresZero(LucidCoordinator):
        def on_start(self):
            self.scores[:] = 0
            super().on_start()

    engine = Engine(w, factory, predictions=list(w.duration), check_invariants=True, coordinator=ScoresZero)
    result = engine.run()
    check_identities(job_table(result))
    a, b = interference.speeds(keys[2], keys[1])  # (guest j2, host j1)
    if 600 / b <= 800 / a:  # the host ends first
        end1 = 500 + 600 / b
        end2 = end1 + (800 - a * 600 / b)
    else:
        end2 = 500 + 800 / a
        end1 = end2 + (600 - b * 800 / a)
    assert result.end == pytest.approx([100, end1, end2])
    assert result.first_start == pytest.approx([0, 100, 300])
    assert result.preemptions == [0, 1, 1]
    c = engine.coordinator
    assert (c.finished_in_profiler, c.profiled_then_moved, c.packs) == (1, 2, 1)
