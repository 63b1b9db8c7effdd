"""Lazer's deferral predictor (DAC '26 §4.2): how long to defer a preemption, learned online by
contextual Bayesian optimisation, plus the fixed / random / grid deferrals it is compared with.

Every predictor answers ``suggest(context) -> X`` (seconds in [0, x_max]) and learns from
``observe(context, X, f)`` where f(X|c) = |X - F| is the observed cost of the decision (the policy
defines F from simulated events). Context c = (mean inter-arrival over the past hour, remaining duration
of the new job, its load time, the largest pause-and-save time among the jobs it would preempt), in
seconds.

The BO predictor runs in three stages:
1. bootstrap: the first ``n_bootstrap`` (M = 10) decisions take X from a seeded Latin hypercube over
   [0, x_max];
2. acquisition: a SingleTaskGP over (X, c) is fitted on all observations; X maximises
   LogNoisyExpectedImprovement with the context fixed, by L-BFGS-B from ``restarts`` (5) starts; this
   stage lasts until the GP has been updated at least ``min_updates`` (100) times and the best
   expected improvement is below ``ei_stop`` (10 %) of the search range;
3. exploitation: X minimises the GP posterior mean of f with the context fixed (L-BFGS-B, same starts).
Every stage observes f and updates the GP. Hyper-parameters are re-fitted on the first
``min_updates`` updates and then every ``refit_every`` updates; in between the model is re-conditioned
on the new data with the last hyper-parameters (cheap). Seeded and deterministic.
"""
from __future__ import annotations

import math
import time
import warnings
from typing import Sequence

import numpy as np

#: Context features are log1p-transformed then divided by log1p of these scales (seconds), so they
#: lie in [0, 1] for the ranges met in GPU clusters (inter-arrival up to 1 h, durations up to ~115 days).
CONTEXT_SCALES = np.array([3600.0, 1e7, 1e4, 1e4])


class _Searcher:
    """Non-learning deferral choices: they ignore observations."""

    name = "searcher"
    decisions = 0

    def suggest(self, context: Sequence[float]) -> float:
        self.decisions += 1
        return self._next()

    def _next(self) -> float:  # pragma: no cover - interface
        raise NotImplementedError

    def observe(self, context: Sequence[float], x: float, f: float) -> None:
        pass

    @property
    def stage(self) -> str:
        return self.name


class FixedDeferral(_Searcher):
    """Always defer by the same X (X = 0 is plain SRTF-style immediate preemption)."""

    def __init__(self, x: float = 0.0):
        self.x = float(x)
        self.name = f"fixed({self.x:g})"

    def _next(self) -> float:
        return self.x


class RandomDeferral(_Searcher):
    """X uniform on [0, x_max], seeded."""

    name = "random"

    def __init__(self, x_max: float = 100.0, seed: int = 0):
        self.x_max, self.rng = float(x_max), np.random.default_rng(seed)

    def _next(self) -> float:
        return float(self.rng.uniform(0.0, self.x_max))


class GridDeferral(_Searcher):
    """X cycles through the integers 0, 1, ..., x_max - 1 (grid search with step 1)."""

    name = "grid"

    def __init__(self, x_max: float = 100.0):
        self.x_max = int(x_max)

    def _next(self) -> float:
        return float(self.decisions - 1) % self.x_max


class BODeferralPredictor:
    """Contextual GP-BO deferral predictor (see the module docstring for the stages)."""

    def __init__(self, x_max: float = 100.0, n_bootstrap: int = 10, min_updates: int = 100,
                 ei_stop: float = 0.10, restarts: int = 5, raw_samples: int = 32, refit_every: int = 25,
                 max_points: int = 400, noise: float = 1e-3, seed: int = 0):
        self.x_max, self.n_bootstrap, self.min_updates = float(x_max), int(n_bootstrap), int(min_updates)
        self.ei_stop, self.restarts, self.raw_samples = float(ei_stop), int(restarts), int(raw_samples)
        self.refit_every, self.max_points, self.noise, self.seed = int(refit_every), int(max_points), noise, seed
        self.name = "bo"
        from scipy.stats import qmc

        self._lhs = (qmc.LatinHypercube(d=1, seed=seed).random(self.n_bootstrap)[:, 0] * self.x_max).tolist()
        self.X: list[list[float]] = []  # normalised (x, c1..c4)
        self.y: list[float] = []  # -f / x_max (maximised)
        self.decisions = 0
        self.updates = 0
        self.exploit = False
        self.last_ei: float | None = None
        self.stage_log: list[tuple[int, str]] = []
        self.fit_seconds = 0.0
        self.suggest_seconds = 0.0
        self._model = None
        self._state = None
        self._fits = 0

    # -- helpers -------------------------------------------------------------------------------
    @staticmethod
    def encode_context(context: Sequence[float]) -> np.ndarray:
        c = np.maximum(np.asarray(context, dtype=float), 0.0)
        return np.minimum(np.log1p(c) / np.log1p(CONTEXT_SCALES), 1.0)

    @property
    def stage(self) -> str:
        if self.decisions < self.n_bootstrap or len(self.y) < 2:
            return "bootstrap"
        return "exploitation" if self.exploit else "acquisition"

    def _fit(self) -> None:
        import torch
        from botorch.fit import fit_gpytorch_mll
        from botorch.models import SingleTaskGP
        from botorch.models.transforms import Standardize
        from gpytorch.mlls import ExactMarginalLogLikelihood

        t0 = time.perf_counter()
        X = torch.tensor(self.X[-self.max_points:], dtype=torch.double)
        Y = torch.tensor(self.y[-self.max_points:], dtype=torch.double).unsqueeze(-1)
        Yvar = torch.full_like(Y, self.noise)
        model = SingleTaskGP(X, Y, train_Yvar=Yvar, outcome_transform=Standardize(m=1))
        refit = self._state is None or self.updates <= self.min_updates or self._fits % self.refit_every == 0
        if refit:
            torch.manual_seed(self.seed + self.updates)
            mll = ExactMarginalLogLikelihood(model.likelihood, model)
            try:
                fit_gpytorch_mll(mll)
            except Exception:  # noqa: BLE001 - keep default hyper-parameters on a failed fit
                pass
            self._state = {k: v.clone() for k, v in model.covar_module.state_dict().items()}
        else:
            model.covar_module.load_state_dict(self._state)
        model.eval()
        self._model = model
        self._fits += 1
        self.fit_seconds += time.perf_counter() - t0

    def _optimise(self, acq, c: np.ndarray) -> tuple[float, float]:
        import torch
        from botorch.optim import optimize_acqf

        torch.manual_seed(self.seed + 7919 * self.decisions)
        bounds = torch.tensor([[0.0] * 5, [1.0] * 5], dtype=torch.double)
        fixed = {i + 1: float(v) for i, v in enumerate(c)}
        with warnings.catch_warnings():
            # Flat acquisition surfaces (e.g. EI ~ 0 late in a run) make L-BFGS-B report ABNORMAL
            # line searches; BoTorch retries and returns the best point, which is what we want.
            warnings.simplefilter("ignore")
            cand, value = optimize_acqf(acq, bounds=bounds, q=1, num_restarts=self.restarts,
                                        raw_samples=self.raw_samples, fixed_features=fixed,
                                        options={"maxiter": 50})
        return float(cand[0, 0]) * self.x_max, float(value)

    # -- protocol ------------------------------------------------------------------------------
    def suggest(self, context: Sequence[float]) -> float:
        t0 = time.perf_counter()
        c = self.encode_context(context)
        stage = self.stage
        self.decisions += 1
        if stage == "bootstrap":
            x = self._lhs[(self.decisions - 1) % len(self._lhs)]
        elif stage == "acquisition":
            import torch
            from botorch.acquisition.analytic import LogNoisyExpectedImprovement

            if self._model is None:
                self._fit()
            X_base = torch.tensor(self.X[-self.max_points:], dtype=torch.double)
            acq = LogNoisyExpectedImprovement(self._model, X_base, num_fantasies=16)
            x, log_ei = self._optimise(acq, c)
            self.last_ei = math.exp(log_ei)  # in units of y = -f / x_max, i.e. a share of the range
            if self.updates >= self.min_updates and self.last_ei < self.ei_stop:
                self.exploit = True
                self.stage_log.append((self.decisions, "exploitation"))
        else:
            from botorch.acquisition.analytic import PosteriorMean

            if self._model is None:
                self._fit()
            x, _ = self._optimise(PosteriorMean(self._model), c)
        self.suggest_seconds += time.perf_counter() - t0
        return float(min(max(x, 0.0), self.x_max))

    def observe(self, context: Sequence[float], x: float, f: float) -> None:
        """Record f(X|c) >= 0 for a decision and update the GP (not during bootstrap: fitted lazily)."""
        c = self.encode_context(context)
        self.X.append([min(max(x / self.x_max, 0.0), 1.0), *c.tolist()])
        self.y.append(-float(f) / self.x_max)
        self.updates += 1
        if self.decisions >= self.n_bootstrap and len(self.y) >= 2:
            self._fit()
        else:
            self._model = None

    def stats(self) -> dict[str, float]:
        return {"bo_decisions": self.decisions, "bo_updates": self.updates, "bo_fits": self._fits,
                "bo_fit_seconds": self.fit_seconds, "bo_suggest_seconds": self.suggest_seconds,
                "bo_exploiting": float(self.exploit)}


def make_deferral_predictor(spec: str | float, x_max: float = 100.0, seed: int = 0, **kwargs):
    """'bo', 'random', 'grid', or a number (fixed deferral in seconds)."""
    if isinstance(spec, (int, float)):
        return FixedDeferral(float(spec))
    if spec == "bo":
        return BODeferralPredictor(x_max=x_max, seed=seed, **kwargs)
    if spec == "random":
        return RandomDeferral(x_max, seed)
    if spec == "grid":
        return GridDeferral(x_max)
    try:
        return FixedDeferral(float(spec))
    except ValueError:
        raise ValueError(f"unknown deferral predictor {spec!r}: bo, random, grid or seconds") from None
