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


# -- the numpy GP behind the BO predictor, and what it must agree with --------------------------------
def _gp_data(n=14, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.random((n, 5))
    y = -np.abs(X[:, 0] - 0.3 * X[:, 1]) + 0.02 * rng.standard_normal(n)
    return X, y


@pytest.mark.slow
def test_gp_matches_botorch_single_task_gp():
    """Same model as BoTorch's default SingleTaskGP: equal MAP objective, posterior mean and variance."""
    torch = pytest.importorskip("torch")
    from botorch.models import SingleTaskGP
    from botorch.models.transforms import Standardize
    from gpytorch.mlls import ExactMarginalLogLikelihood

    from models.deferral import GaussianProcess, _sq_dists

    X, y = _gp_data()
    gp = GaussianProcess(noise=1e-3)
    gp.fit(X, y)
    Xt, Yt = torch.tensor(X), torch.tensor(y).unsqueeze(-1)
    model = SingleTaskGP(Xt, Yt, train_Yvar=torch.full_like(Yt, 1e-3), outcome_transform=Standardize(m=1))
    model.covar_module.lengthscale = torch.tensor(np.exp(gp.log_ls))
    model.mean_module.constant.data.fill_(gp.const)
    mll = ExactMarginalLogLikelihood(model.likelihood, model)
    model.train()
    with torch.no_grad():
        botorch_mll = float(mll(model(*model.train_inputs), model.train_targets))
    ys = (y - gp.y_mean) / gp.y_std
    ours, grad, _ = gp.neg_log_posterior(gp.log_ls, _sq_dists(X, X), ys, gp.noise / gp.y_std ** 2)
    assert -ours == pytest.approx(botorch_mll, abs=1e-6)
    assert np.abs(grad[gp.log_ls > np.log(0.025) + 1e-6]).max() < 1e-3  # a stationary point of the MAP
    model.eval()
    xs, c = np.linspace(0, 1, 9), X[2, 1:]
    with torch.no_grad():
        post = model.posterior(torch.tensor(np.column_stack([xs, np.tile(c, (9, 1))])))
    assert gp.mean(xs, c) == pytest.approx(post.mean.squeeze(-1).numpy(), abs=1e-10)
    k = gp._k(xs, gp._context_weights(c))
    from scipy.linalg import cho_solve

    var = (1.0 - np.einsum("ij,ji->i", k, cho_solve(gp._chol, k.T))) * gp.y_std ** 2
    assert var == pytest.approx(post.variance.squeeze(-1).numpy(), rel=1e-6, abs=1e-12)


def test_map_gradient_matches_finite_differences():
    from models.deferral import GaussianProcess, _sq_dists

    X, y = _gp_data(20, seed=4)
    gp, D, ys = GaussianProcess(), _sq_dists(X, X), (y - y.mean()) / y.std(ddof=1)
    u = np.log([0.3, 0.8, 1.5, 0.2, 2.0])
    value, grad, _ = gp.neg_log_posterior(u, D, ys, 0.05)
    eps = 1e-6
    numeric = [(gp.neg_log_posterior(u + eps * e, D, ys, 0.05)[0] - gp.neg_log_posterior(u - eps * e, D, ys, 0.05)[0])
               / (2 * eps) for e in np.eye(5)]
    assert grad == pytest.approx(numeric, rel=1e-5, abs=1e-8)


@pytest.mark.slow
def test_log_nei_matches_botorch_where_improvement_is_plausible():
    """Fantasy-averaged log EI agrees with BoTorch's LogNoisyExpectedImprovement (different fantasy
    samples: within 0.3 where log EI > -9; both are vanishing near the data)."""
    torch = pytest.importorskip("torch")
    from botorch.acquisition.analytic import LogNoisyExpectedImprovement
    from botorch.models import SingleTaskGP
    from botorch.models.transforms import Standardize

    from models.deferral import GaussianProcess

    rng = np.random.default_rng(0)
    X = rng.random((12, 5)) * 0.5
    X[:, 1:] = 0.3
    y = -np.abs(X[:, 0] - 0.3) + 0.02 * rng.standard_normal(12)
    gp = GaussianProcess(1e-3)
    gp.fit(X, y)
    Xt, Yt = torch.tensor(X), torch.tensor(y).unsqueeze(-1)
    model = SingleTaskGP(Xt, Yt, train_Yvar=torch.full_like(Yt, 1e-3), outcome_transform=Standardize(m=1))
    model.covar_module.lengthscale = torch.tensor(np.exp(gp.log_ls))
    model.mean_module.constant.data.fill_(gp.const)
    model.eval()
    xs, c = np.linspace(0, 1, 11), X[0, 1:]
    torch.manual_seed(0)
    with torch.no_grad():
        theirs = LogNoisyExpectedImprovement(model, Xt, num_fantasies=4096)(
            torch.tensor(np.column_stack([xs, np.tile(c, (11, 1))])).unsqueeze(1)).numpy()
    gp.build_fantasies(4096, np.random.default_rng(0))
    ours = gp.log_nei(xs, c)
    plausible = theirs > -9
    assert plausible.sum() >= 4
    assert ours[plausible] == pytest.approx(theirs[plausible], abs=0.3)
    assert (ours[~plausible] < -8).all()


def test_incremental_conditioning_equals_a_fresh_posterior():
    from models.deferral import GaussianProcess

    X, y = _gp_data(60, seed=1)
    inc = GaussianProcess()
    inc.fit(X[:30], y[:30])
    ref = GaussianProcess()
    ref.log_ls, ref.const, ref.y_mean, ref.y_std = inc.log_ls.copy(), inc.const, inc.y_mean, inc.y_std
    for lo, hi, reuse in ((0, 45, 30), (10, 50, 35), (25, 60, 25)):  # append; slide; slide
        inc.condition(X[lo:hi], y[lo:hi], reuse=reuse)
        ref.condition(X[lo:hi], y[lo:hi])
        assert inc.alpha == pytest.approx(ref.alpha, abs=1e-9)
        assert inc.mean(np.linspace(0, 1, 5), X[0, 1:]) == pytest.approx(ref.mean(np.linspace(0, 1, 5), X[0, 1:]))


def test_observe_only_records_and_the_gp_refits_rarely():
    """observe() does no GP work; suggest() conditions on what arrived; hyper-parameters are re-fitted
    when the data doubled or grew by refit_every, the rest are cheap conditionings."""
    bo = BODeferralPredictor(seed=1, min_updates=10_000, refit_every=50, max_points=60)
    rng = np.random.default_rng(2)
    for i in range(200):
        c = (60.0, float(rng.uniform(100, 1e5)), 100.0, 50.0)
        x = bo.suggest(c)
        assert 0.0 <= x <= 100.0
        fits, conditions = bo.gp.fits, bo.conditions
        bo.observe(c, x, abs(x - 25.0))
        assert (bo.gp.fits, bo.conditions) == (fits, conditions)
    assert len(bo.gp.X) == 60  # the last max_points observations
    # Fits at 10, 20, 40, 80 observations (doubling), then every 50: 130, 180.
    assert bo.gp.fits == 6 and bo.conditions == 200 - 10 - 6


def test_argmax_on_grid_refines_between_grid_points():
    from models.deferral import argmax_on_grid

    x, v = argmax_on_grid(lambda xs: -(xs - 0.123456) ** 2)
    assert abs(x - 0.123456) < 1e-4 and v <= 0
    assert argmax_on_grid(lambda xs: xs)[0] == 1.0


def test_lazer_parameters_are_typed_and_checked_before_the_replay():
    import inspect
    import typing

    from sim.policies.lazer import Lazer

    sig = inspect.signature(Lazer.__init__)
    hints = typing.get_type_hints(Lazer.__init__)
    assert all(p.kind is not p.VAR_KEYWORD for p in sig.parameters.values())
    assert set(sig.parameters) - {"self"} <= set(hints)
    with pytest.raises(ValueError):
        get_policy("lazer:grid=1")
    with pytest.raises(ValueError):
        get_policy("lazer:deferral=soon")


def _contended():
    # 2 GPUs; a long job arrives every 3 s and a shorter one just after: ~20 preemption decisions.
    rows = []
    for i in range(24):
        rows.append((i * 40.0, 4000.0 - 100 * i, 1))
        rows.append((i * 40.0 + 3.0, 900.0 - 30 * i, 1))
    return workload(rows, nodes=1, gpus=2, load=[20.0] * len(rows), save=[10.0] * len(rows))


def _bo_decisions(seed, spec="lazer:n_bootstrap=4,min_updates=6"):
    info, factory, _ = get_policy(spec)
    engine = Engine(_contended(), factory, seed=seed, check_invariants=True)
    result = engine.run()
    return [o[1] for o in engine.policies[0].observations], result


def test_lazer_bo_seed_comes_from_the_run_seed():
    x0, r0 = _bo_decisions(0)
    again, r0b = _bo_decisions(0)
    x7, _ = _bo_decisions(7)
    assert len(x0) >= 8
    assert x0 == again and r0.end == r0b.end
    assert x0 != x7
    # An explicit seed overrides the run seed.
    assert _bo_decisions(0, "lazer:n_bootstrap=4,min_updates=6,seed=3")[0] == \
        _bo_decisions(7, "lazer:n_bootstrap=4,min_updates=6,seed=3")[0]
