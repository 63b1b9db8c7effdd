"""Lazer (DAC'26): deferral mechanics on hand-worked traces, and the BO predictor's stages."""
import numpy as np
import pytest

from evaluation.metrics import check_identities, job_table
from models.deferral import BODeferralPredictor, GridDeferral, RandomDeferral, make_deferral_predictor
from sim import simulate
from sim.engine import Engine
from sim.policies import get_policy
from tests.helpers import workload

# 1 GPU. j0: 100 s at 0; j1: 50 s at 20; j2: 10 s at 30. Load 10 s, pause-and-save 5 s each.
TRACE = [(0, 100, 1), (20, 50, 1), (30, 10, 1)]


def lazer_run(deferral):
    w = workload(TRACE, nodes=1, gpus=1, load=[10] * 3, save=[5] * 3)
    info, factory, _ = get_policy(f"lazer:deferral={deferral}")
    engine = Engine(w, factory, check_invariants=True)
    result = engine.run()
    jobs = job_table(result)
    check_identities(jobs)
    return jobs, engine.policies[0], result


def test_no_deferral_reproduces_the_futile_preemption_of_srtf():
    jobs, policy, _ = lazer_run(0)
    srtf = job_table(simulate(workload(TRACE, nodes=1, gpus=1, load=[10] * 3, save=[5] * 3), "srtf"))
    assert jobs["jct"].tolist() == pytest.approx([210, 90, 20])
    assert srtf["jct"].tolist() == pytest.approx([210, 90, 20])
    assert jobs["futile"].tolist() == pytest.approx([0, 5, 0])
    # The decision for j1 at t=20 saw a threat (j2, shorter, no idle GPU) at 30: F = 10, f = |0 - 10|.
    ctx, x, F, f = policy.observations[0]
    assert (x, F, f) == (0.0, 10.0, 10.0)
    assert ctx[1:] == (50.0, 10.0, 5.0)  # remaining of j1, its load time, max save time of J_r


def test_deferral_avoids_the_futile_preemption():
    # X = 15: j1 waits in DWQ until 35 and j0 (DRQ) keeps running. j2 arrives at 30: j0 is excluded
    # from its candidates, so it joins WQ. At 35 the orchestrator re-runs for j1: j0 (75 s left) is
    # preempted (save 35-40). At 40 the completion handler fills WQ in ascending remaining: j2 loads
    # 40-50, trains 50-60; j1 loads 60-70, trains 70-120; j0 loads 120-130, trains 130-205.
    jobs, policy, _ = lazer_run(15)
    assert jobs["futile"].tolist() == [0, 0, 0]
    assert jobs["jct"].tolist() == pytest.approx([205, 100, 30])
    assert jobs["first_start"].tolist() == pytest.approx([0, 60, 40])
    ctx, x, F, f = policy.observations[0]
    assert (x, F, f) == (15.0, 10.0, 5.0)
    assert policy.stats()["lazer_deferrals"] == 1


def test_deferred_job_starts_in_gpus_freed_during_its_deferral():
    # 1 GPU. j0 40 s; j1 5 s at 10 deferred by 60 s; j0 ends at 40 and j1 starts then, not at 70.
    w = workload([(0, 40, 1), (10, 5, 1)], nodes=1, gpus=1, load=[1, 1], save=[1, 1])
    info, factory, _ = get_policy("lazer:deferral=60")
    result = Engine(w, factory, check_invariants=True).run()
    assert result.first_start == pytest.approx([0, 41])  # j0 loads 0-1, trains 1-41
    assert result.preemptions == [0, 0]


def test_lhs_bootstrap_then_acquisition_then_exploitation():
    bo = BODeferralPredictor(seed=3, min_updates=14, n_bootstrap=10)
    context = (60.0, 3600.0, 120.0, 60.0)
    xs = []
    for _ in range(10):
        assert bo.stage == "bootstrap"
        x = bo.suggest(context)
        xs.append(x)
        bo.observe(context, x, abs(x - 30.0))
    # Latin hypercube: one sample in each tenth of [0, 100].
    assert sorted(int(x // 10) for x in xs) == list(range(10))
    assert bo.stage == "acquisition"
    for _ in range(60):
        x = bo.suggest(context)
        bo.observe(context, x, abs(x - 30.0))
        if bo.stage == "exploitation":
            break
    assert bo.stage == "exploitation" and bo.updates >= 14 and bo.last_ei < 0.10
    assert abs(bo.suggest(context) - 30.0) < 5.0


def test_bo_is_deterministic():
    def run():
        bo = BODeferralPredictor(seed=11, min_updates=12)
        out = []
        for i in range(16):
            c = (30.0 + i, 1000.0 * (i + 1), 100.0, 50.0)
            x = bo.suggest(c)
            out.append(x)
            bo.observe(c, x, abs(x - 20.0 - i))
        return out

    assert run() == run()


def test_baseline_searchers():
    grid = GridDeferral()
    assert [grid.suggest(()) for _ in range(3)] == [0.0, 1.0, 2.0]
    r1, r2 = RandomDeferral(seed=1), RandomDeferral(seed=1)
    assert [r1.suggest(()) for _ in range(5)] == [r2.suggest(()) for _ in range(5)]
    assert make_deferral_predictor("12.5").x == 12.5
    with pytest.raises(ValueError):
        make_deferral_predictor("soon")


def test_lazer_with_bo_on_a_synthetic_preset(shared_data):
    from features.traces.synthetic import generate_preset
    from sim.cluster import load_cluster
    from sim.profiles import CostModel, ProfileCatalog
    from sim.workload import build_workload

    w = build_workload(generate_preset("demo", seed=2, jobs=400), load_cluster("demo"),
                       catalog=ProfileCatalog.build("lazer", shared_data), costs=CostModel())
    result = simulate(w, "lazer:min_updates=15", check_invariants=True)
    jobs = job_table(result)
    check_identities(jobs)
    assert np.isfinite(jobs["end"]).all()
    assert result.policy_stats["bo_decisions"] >= 1


def test_respect_wq_variant_does_not_jump_shorter_waiting_jobs():
    # One node, 2 GPUs. R1 (1000 s) and R2 (20 s) run from 0. S (30 s, 2 GPUs) arrives at 1: only R1 is
    # longer, which frees 1 GPU of the 2 it needs -> S waits in WQ. N (100 s, 1 GPU) arrives at 2.
    # Paper (Alg. 1): N is compared with running jobs only and preempts R1 at once.
    # respect_wq: S (shorter) already waits, so N joins WQ and starts when R2 frees a GPU at 20.
    trace = [(0, 1000, 1), (0, 20, 1), (1, 30, 2), (2, 100, 1)]
    paper = simulate(workload(trace, nodes=1, gpus=2), "lazer:deferral=0", check_invariants=True)
    variant = simulate(workload(trace, nodes=1, gpus=2), "lazer:deferral=0,respect_wq=True",
                       check_invariants=True)
    assert paper.preemptions == [1, 0, 0, 0] and paper.first_start[3] == 2
    assert variant.preemptions == [0, 0, 0, 0] and variant.first_start[3] == 20


def test_protect_loading_keeps_loading_jobs_out_of_the_retry_set():
    # 2 GPUs on one node; load 10 s and save 5 s for every job. j0 (300 s) loads 0-10 and trains;
    # j1 (1000 s) arrives at 5 and loads 5-15; j2 (100 s) arrives at 8 and has no idle GPU: the
    # longest-remaining victim is j1, so J_r = {j1}, deferred by 3 s (j1 in the DRQ). At 11 the
    # orchestrator runs again. Paper: J_r2 = {j1}, still loading -> futile preemption of 11 - 5 = 6 s.
    # protect_loading: j1 is left alone and j0 (running, 299 s left) is preempted instead.
    trace = [(0, 300, 1), (5, 1000, 1), (8, 100, 1)]
    costs = dict(nodes=1, gpus=2, load=[10] * 3, save=[5] * 3)
    paper = job_table(simulate(workload(trace, **costs), "lazer:deferral=3", check_invariants=True))
    guarded = job_table(simulate(workload(trace, **costs), "lazer:deferral=3,protect_loading=True",
                                 check_invariants=True))
    assert paper["futile"].tolist() == pytest.approx([0, 6, 0])
    assert guarded["futile"].tolist() == [0, 0, 0]
    assert guarded["preemptions"].tolist() == [1, 0, 0]
    check_identities(paper)
    check_identities(guarded)
