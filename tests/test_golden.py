"""Tiny traces whose schedules were worked out by hand (see the comments); pinned per policy."""
import pytest

from evaluation.metrics import check_identities, job_table
from sim import simulate
from tests.helpers import workload

# One node with 4 GPUs. (submit, duration, GPUs)
TRACE = [(0, 10, 4), (1, 5, 2), (2, 1, 2), (3, 2, 1)]

EXPECTED_JCT = {
    # FIFO: j0 0-10; at 10 j1 10-15 and j2 10-11; j3 waits for a GPU, 11-13.
    "fifo": [10, 14, 9, 10],
    # SJF: at 10 order j2, j3, j1: j2 10-11, j3 10-12; j1 (2 GPUs) blocked until 11, runs 11-16.
    "sjf": [10, 15, 9, 9],
    # SRTF: j1 preempts j0 at 1 (1-6); j2 2-3; j3 3-5; j0 resumes at 6 with 9 s left, ends 15.
    "srtf": [15, 5, 1, 2],
    # Rounds every 4 s: 0: j0 starts. 4: j2 preempts j0 (4-5), j3 4-6, j1 blocked (j3, j2 shorter).
    # 8: j1 8-13, j0 (6 s left) blocked. 16: j0 16-22.
    "periodic-srtf:interval=4": [22, 12, 3, 3],
    # Threshold 8 GPU-s: j0 demoted at 2 -> preempted by j1 (2-7) and j2 (2-3); j3 3-5; j1 demoted at
    # 6 -> j0 (same queue, earlier) preempts it, runs 6-14; j1 finishes 14-15.
    "tiresias:thresholds=8": [14, 14, 1, 2],
    # The same, decided every 4 s: 0: j0. 2: j0 demoted. 4: j1 preempts j0 (j1 4-9, j2 4-5); j3 cannot
    # preempt the better-ranked j1/j2. 8: j1 demoted (same queue as j0, later); j3 8-10; j0 cannot fit
    # even by preempting j1 (j3 ranks higher), so it waits until the round at 12: 12-18 (6 s left).
    "tiresias-rounds:thresholds=8,interval=4": [18, 8, 3, 7],
    # Work-conserving by submission: same as FIFO here (j3 cannot fit before 11 either).
    "wcs-subtime": [10, 14, 9, 10],
}


@pytest.mark.parametrize("policy", sorted(EXPECTED_JCT))
def test_golden_jct(policy):
    w = workload(TRACE)
    result = simulate(w, policy, check_invariants=True)
    jobs = job_table(result)
    check_identities(jobs)
    assert jobs["jct"].tolist() == pytest.approx(EXPECTED_JCT[policy])


def test_srtf_counts_one_preemption():
    result = simulate(workload(TRACE), "srtf")
    assert result.preemptions == [1, 0, 0, 0]


def test_wcs_differs_from_strict_order():
    # 4 GPUs: j0 uses 3; j1 (2 GPUs) cannot fit, j2 (1 GPU) can. Strict FIFO blocks j2 behind j1.
    trace = [(0, 10, 3), (1, 5, 2), (2, 5, 1)]
    strict = job_table(simulate(workload(trace), "fifo"))["jct"].tolist()
    greedy = job_table(simulate(workload(trace), "wcs-subtime"))["jct"].tolist()
    assert strict == [10, 14, 13]
    assert greedy == [10, 14, 5]


def test_fifo_backfill_only_when_head_not_delayed():
    # j0 3 GPUs 0-10; head j1 needs 4 (reservation at 10); j2 1 GPU x 5 s ends before 10 -> backfilled;
    # j3 1 GPU x 50 s would delay j1 -> waits.
    trace = [(0, 10, 3), (1, 5, 4), (2, 5, 1), (3, 50, 1)]
    jobs = job_table(simulate(workload(trace), "fifo-backfill"))
    assert jobs["first_start"].tolist() == [0, 10, 2, 15]


def test_lifecycle_futile_preemption_during_load():
    # 1 GPU. j0: 100 s, j1: 50 s (arrives 20), j2: 10 s (arrives 30); load 10 s, save 5 s each.
    # SRTF: j0 loads 0-10, trains 10-20, saves 20-25; j1 loads 25-30 and is preempted by j2 while
    # loading (5 s futile); j2 loads 30-40, trains 40-50; j1 loads 50-60, trains 60-110;
    # j0 loads 110-120, trains 120-210.
    w = workload([(0, 100, 1), (20, 50, 1), (30, 10, 1)], nodes=1, gpus=1, load=[10] * 3, save=[5] * 3)
    jobs = job_table(simulate(w, "srtf", check_invariants=True))
    check_identities(jobs)
    assert jobs["jct"].tolist() == pytest.approx([210, 90, 20])
    assert jobs["futile"].tolist() == pytest.approx([0, 5, 0])
    assert jobs["wait"].tolist() == pytest.approx([85, 25, 0])
    assert jobs["load"].tolist() == pytest.approx([20, 15, 10])
    assert jobs["save"].tolist() == pytest.approx([5, 0, 0])
    assert jobs["train"].tolist() == pytest.approx([100, 50, 10])
    assert jobs["preemptions"].tolist() == [1, 1, 0]
