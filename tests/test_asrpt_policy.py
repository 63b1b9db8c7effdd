"""A-SRPT policy: virtual SRPT order on a hand-worked trace, unseen groups, the delay rule, invariants."""
from __future__ import annotations

import pytest

from evaluation.metrics import check_identities, job_table
from sim.asrpt.performance import IterationSpeed
from sim.engine import Engine
from sim.placement.heavy_edge import HeavyEdge
from sim.policies.asrpt import ASrpt, ASrptPerfect
from tests.helpers import workload
from tests.test_asrpt_performance import FakeCatalog
from tests.test_engine_v2_requests import starts


def _run(w, factory, iterations=None, perf=None):
    preds = {"iterations": iterations} if iterations is not None else None
    return Engine(w, factory, placement=HeavyEdge(), predictions=preds, performance=perf,
                  check_invariants=True, record_events=True).run()


def test_virtual_srpt_order_by_hand():
    # One 4-GPU server, no stage profiles (alpha = 1). Sizes p = g/G * n:
    # j0 (t=0, 4 GPUs, n=10): p=10; j1 (t=1, 2 GPUs, n=2): p=1; j2 (t=1, 4 GPUs, n=0, unseen group): p=0.
    # Virtual SRPT: j2 completes at 1, j1 at 2, j0 at 11 (preempted for 1 s). Real cluster, strict order:
    # j2 runs 1-6, j1 6-9 (waits for GPUs), j0 enters the real queue at 11 and runs 11-31.
    w = workload([(0, 20, 4), (1, 3, 2), (1, 5, 4)], nodes=1, gpus=4)
    res = _run(w, ASrpt, iterations=[10.0, 2.0, 0.0])
    st = {j: t for t, kind, j, _ in res.event_log if kind == "start"}
    assert st == {2: 1.0, 1: 6.0, 0: pytest.approx(11.0)}
    assert res.end == pytest.approx([31.0, 9.0, 6.0])
    check_identities(job_table(res))


def test_strict_order_head_blocks():
    # j0 (3 GPUs, n=1 -> p=0.75) enters first; j1 (2 GPUs, n=2 -> p=1) is next but does not fit while j0
    # runs; j2 (1 GPU, n=4 -> p=1) would fit beside j0 but must wait behind j1 (non-preemptive, strict).
    w = workload([(0, 10, 3), (0, 5, 2), (0, 5, 1)], nodes=1, gpus=4)
    res = _run(w, ASrpt, iterations=[1.0, 2.0, 4.0])
    st = {j: t for t, kind, j, _ in res.event_log if kind == "start"}
    assert st[0] == pytest.approx(0.75) and st[1] == pytest.approx(10.75) and st[2] == pytest.approx(10.75)


@pytest.mark.parametrize("tau, start, end", [(1.0, 20.2, 20.2 + 30 * 0.4 / 0.202), (5.0, 40.0, 70.0)])
def test_delay_rule(tau, start, end):
    # 2 servers x 3 GPUs. j0 (40 s) and j1 (100 s), plain 2-GPU jobs of unseen groups, start at once on
    # servers 0 and 1. j2 ('p2', 2 GPUs, communication-heavy: alpha_max 0.4 / alpha_min 0.202 >= 1.5) has
    # n=150: p = 2/6 * 150 * 0.202 = 10.1, so it reaches the head at 10.1 when only one GPU per server is
    # free (alpha 0.4). It may wait tau * 10.1 s: tau=1 -> starts spread at 20.2 at speed 0.202/0.4;
    # tau=5 -> still waiting when j0 ends at 40, then starts on one server at speed 1 (ends 70).
    w = workload([(0, 40, 2), (0, 100, 2), (0, 30, 2)], nodes=2, gpus=3)
    w.model = [None, None, "p2"]
    perf = IterationSpeed(FakeCatalog(), inter_gbit=8.0, intra_gbyte=100.0)
    res = _run(w, lambda: ASrpt(tau=tau), iterations=[0.0, 0.0, 150.0], perf=perf)
    st = {j: (t, pl) for t, kind, j, pl in res.event_log if kind == "start"}
    assert st[2][0] == pytest.approx(start)
    assert res.end[2] == pytest.approx(end)
    check_identities(job_table(res))


def test_perfect_uses_true_iterations_and_no_predictions_needed():
    # Perfect: n = duration / alpha (alpha = 1 without a profile): sizes 5 and 1 -> j1 enters first.
    w = workload([(0, 20, 4), (0, 4, 4)], nodes=1, gpus=4)
    res = _run(w, ASrptPerfect)
    st = {j: t for t, kind, j, _ in res.event_log if kind == "start"}
    assert st[1] < st[0]
    with pytest.raises(ValueError):
        ASrpt(iterations="oracle")
