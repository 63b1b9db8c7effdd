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
2. acquisition: a GP over (X, c) on the last ``max_points`` observations; X maximises Log Noisy
   Expected Improvement (``num_fantasies`` fantasy models, as BoTorch's ``LogNoisyExpectedImprovement``)
   with the context fixed; this stage lasts until the GP has been updated at least ``min_updates`` (100)
   times and the best expected improvement is below ``ei_stop`` (10 %) of the search range;
3. exploitation: X minimises the GP posterior mean of f with the context fixed.

Speed (a decision must take milliseconds, DAC '26 reports 7.1 ms): the GP is BoTorch's default
``SingleTaskGP`` model (RBF kernel with one length scale per input, the dimension-scaled log-normal
length-scale prior, length scales >= 0.025, constant mean, ``Standardize`` outcome transform, known
noise ``noise``) written in numpy, because building BoTorch models and fantasy models per decision cost
seconds at 400 points. ``observe`` only records (O(1), so nothing runs on the simulator's event path);
the next ``suggest`` conditions the GP on the new observations with the current hyper-parameters (one
Cholesky factorisation). Hyper-parameters (MAP, L-BFGS-B with analytic gradients, warm-started) are
re-fitted only when the data doubled since the last fit, and every ``refit_every`` observations after
that. X is a scalar in [0, x_max] with the context fixed, so the acquisition is maximised by a dense
vectorised evaluation on a grid of ``grid`` points, refined by two finer grids around the best point
(resolution x_max / 10^4), instead of multi-start L-BFGS-B. All randomness (Latin hypercube, fantasy
samples) comes from the ``seed`` generator; results are deterministic for a given seed.
"""
from __future__ import annotations

import math
import time
from typing import Callable, Sequence

import numpy as np

from models.base import Estimator, NotFittedError

#: Context features are log1p-transformed then divided by log1p of these scales (seconds), so they
#: lie in [0, 1] for the ranges met in GPU clusters (inter-arrival up to 1 h, durations up to ~115 days).
CONTEXT_SCALES = np.array([3600.0, 1e7, 1e4, 1e4])

#: BoTorch's dimension-scaled length-scale prior (Hvarfner et al. 2024) for d = 5 inputs: LogNormal(
#: sqrt(2) + log(d) / 2, sqrt(3)), length scales >= 0.025, started at the prior's mode.
_DIMS = 5
_LS_LOC = math.sqrt(2.0) + 0.5 * math.log(_DIMS)
_LS_SCALE2 = 3.0
_LS_MIN = 0.025
_LS_MODE = math.exp(_LS_LOC - _LS_SCALE2)
#: Noise of the noiseless fantasy models (standardised units), as BoTorch (plus jitter where needed).
_FANTASY_NOISE = 1e-7
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)



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

    def __init__(self, x_max: float = 100.0, seed: int | np.random.Generator | None = 0):
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


# -- Gaussian process ------------------------------------------------------------------------------
def _sq_dists(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Per-dimension squared differences, shape (len(A), len(B), d)."""
    return (A[:, None, :] - B[None, :, :]) ** 2


def _cholesky(M: np.ndarray) -> tuple[np.ndarray, bool]:
    """Lower Cholesky factor (scipy ``cho_factor`` form), adding diagonal jitter 1e-8 ... 1e-4 as far
    as needed (GPyTorch's ``psd_safe_cholesky`` adds 1e-8 ... 1e-6)."""
    from scipy.linalg import cho_factor

    for jitter in (0.0, 1e-8, 1e-7, 1e-6, 1e-5, 1e-4):
        try:
            return cho_factor(M + jitter * np.eye(len(M)) if jitter else M, lower=True, check_finite=False)
        except np.linalg.LinAlgError:
            continue
    raise np.linalg.LinAlgError("matrix is not positive definite even with 1e-4 jitter")


def _log_h(u: np.ndarray) -> np.ndarray:
    """log(phi(u) + u Phi(u)), the log of expected improvement per unit sigma, stable for u << 0
    (as BoTorch's ``_log_ei_helper``)."""
    from scipy.special import erfcx, log_ndtr

    u = np.asarray(u, dtype=float)
    out = np.empty_like(u)
    hi = u > -1.0
    uh = u[hi]
    out[hi] = np.log(np.exp(-0.5 * uh * uh - _LOG_SQRT_2PI) + uh * np.exp(log_ndtr(uh)))
    ul = u[~hi]
    far = ul < -1e4
    mid = ul[~far]
    # phi(u) (1 + u Phi(u)/phi(u)), with Phi(u)/phi(u) = sqrt(pi/2) erfcx(-u/sqrt(2)).
    low = np.empty_like(ul)
    low[~far] = (-0.5 * mid * mid - _LOG_SQRT_2PI
                 + np.log1p(mid * math.sqrt(math.pi / 2.0) * erfcx(-mid / math.sqrt(2.0))))
    uf = ul[far]
    low[far] = -0.5 * uf * uf - _LOG_SQRT_2PI - 2.0 * np.log(-uf)  # phi(u) / u^2
    out[~hi] = low
    return out


class GaussianProcess(Estimator):
    """Exact GP regression with BoTorch ``SingleTaskGP``'s default model and known noise (numpy).

    Inputs lie in [0, 1]^5; outcomes are standardised (mean, unbiased std) when hyper-parameters are
    fitted, and the standardisation is kept with them. ``condition`` recomputes the posterior on new
    data with fixed hyper-parameters; ``fit`` finds MAP length scales (the constant mean is profiled
    out in closed form) by L-BFGS-B from the current values.

    The hyper-parameters (``log_ls``, ``const``, ...) are set in ``__init__`` as well: they are the
    starting point of the next fit (warm start), not learned state; what a fit or ``condition`` learns
    about the data is marked by ``n_train_`` (the posterior's number of points).
    """

    def __init__(self, noise: float = 1e-3):
        self.noise = float(noise)
        self.log_ls = np.full(_DIMS, math.log(_LS_MODE))
        self.const = 0.0
        self.y_mean, self.y_std = 0.0, 1.0
        self.X = np.zeros((0, _DIMS))
        self.fits = 0
        self.fantasy: dict | None = None

    # -- hyper-parameters ----------------------------------------------------------------------
    def _standardise(self, y: np.ndarray) -> None:
        self.y_mean = float(y.mean())
        std = float(y.std(ddof=1)) if len(y) > 1 else 1.0
        self.y_std = std if std >= 1e-8 else 1.0

    @property
    def _s2(self) -> float:
        return self.noise / self.y_std ** 2

    def neg_log_posterior(self, log_ls: np.ndarray, D: np.ndarray, ys: np.ndarray,
                          s2: float) -> tuple[float, np.ndarray, float]:
        """-(log marginal likelihood + log prior) / n at the best constant mean, its gradient in the
        log length scales, and that constant."""
        from scipy.linalg import cho_solve

        n = len(ys)
        inv_ls2 = np.exp(-2.0 * log_ls)
        Kf = np.exp(-0.5 * (D @ inv_ls2))
        A = Kf + s2 * np.eye(n)
        cf = _cholesky(A)
        Ainv = cho_solve(cf, np.eye(n), check_finite=False)
        a1 = Ainv.sum(axis=1)
        ay = Ainv @ ys
        const = float(ay.sum() / a1.sum())
        alpha = ay - const * a1
        r = ys - const
        nll = 0.5 * float(r @ alpha) + float(np.log(np.diag(cf[0])).sum()) + n * _LOG_SQRT_2PI
        W = np.outer(alpha, alpha) - Ainv
        grad = -0.5 * np.einsum("ij,ijd->d", W * Kf, D) * inv_ls2
        z = log_ls - _LS_LOC
        # LogNormal density of each length scale: -log p = log l + (log l - loc)^2 / (2 scale^2) + const.
        nlp = float((log_ls + z * z / (2.0 * _LS_SCALE2)).sum()) + _DIMS * (0.5 * math.log(2 * math.pi * _LS_SCALE2))
        grad = grad + 1.0 + z / _LS_SCALE2
        return (nll + nlp) / n, grad / n, const

    def fit(self, X: np.ndarray, y: np.ndarray) -> "GaussianProcess":
        """MAP hyper-parameters on (X, y), warm-started from the current ones, then condition."""
        from scipy.optimize import minimize

        X, y = np.asarray(X, dtype=float), np.asarray(y, dtype=float)
        self._standardise(y)
        ys = (y - self.y_mean) / self.y_std
        D = _sq_dists(X, X)
        s2 = self._s2

        def fun(u: np.ndarray) -> tuple[float, np.ndarray]:
            try:
                value, grad, _ = self.neg_log_posterior(u, D, ys, s2)
            except np.linalg.LinAlgError:
                return 1e10, np.zeros_like(u)
            return value, grad

        try:
            res = minimize(fun, self.log_ls, jac=True, method="L-BFGS-B",
                           bounds=[(math.log(_LS_MIN), None)] * _DIMS, options={"maxiter": 200})
            if np.all(np.isfinite(res.x)) and res.fun < 1e9:
                self.log_ls = res.x
        except (ValueError, np.linalg.LinAlgError):  # keep the previous hyper-parameters
            pass
        try:
            self.const = self.neg_log_posterior(self.log_ls, D, ys, s2)[2]
        except np.linalg.LinAlgError:
            self.const = 0.0
        self.fits += 1
        self.condition(X, y)
        return self

    # -- posterior ------------------------------------------------------------------------------
    def kernel(self, A: np.ndarray, B: np.ndarray) -> np.ndarray:
        a, b = A * np.exp(-self.log_ls), B * np.exp(-self.log_ls)
        sq = (a * a).sum(1)[:, None] + (b * b).sum(1)[None, :] - 2.0 * (a @ b.T)
        return np.exp(-0.5 * np.maximum(sq, 0.0))

    def condition(self, X: np.ndarray, y: np.ndarray, reuse: int = 0) -> None:
        """Posterior on (X, y) with the current hyper-parameters and standardisation. ``reuse``: the
        first ``reuse`` rows of X are the last ``reuse`` rows of the data conditioned on before, so
        their kernel block is kept; with nothing dropped the Cholesky factor is extended, not redone."""
        from scipy.linalg import cho_solve, solve_triangular

        X = np.asarray(X, dtype=float)
        ys = (np.asarray(y, dtype=float) - self.y_mean) / self.y_std
        n, old = len(X), len(self.X)
        reuse = min(reuse, old, n)
        if reuse:
            new = X[reuse:]
            Kf = np.empty((n, n))
            Kf[:reuse, :reuse] = self.Kf[old - reuse:, old - reuse:]
            Kf[reuse:, :] = self.kernel(new, X)
            Kf[:reuse, reuse:] = Kf[reuse:, :reuse].T
        else:
            Kf = self.kernel(X, X)
        chol = None
        if reuse == old and reuse:  # nothing dropped: extend the factor by the new rows
            L = np.tril(self._chol[0])
            S = solve_triangular(L, Kf[:reuse, reuse:], lower=True, check_finite=False)
            try:
                L22 = np.linalg.cholesky(Kf[reuse:, reuse:] + self._s2 * np.eye(n - reuse) - S.T @ S)
                full = np.zeros((n, n))
                full[:reuse, :reuse], full[reuse:, :reuse], full[reuse:, reuse:] = L, S.T, L22
                chol = (full, True)
            except np.linalg.LinAlgError:
                chol = None
        self.X, self.Kf = X, Kf
        self._chol = chol or _cholesky(Kf + self._s2 * np.eye(n))
        self.alpha = cho_solve(self._chol, ys - self.const, check_finite=False)
        self.fantasy = None
        self.n_train_ = n

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Posterior mean (outcome units) at the rows of ``X`` (m, 5)."""
        self.check_is_fitted()
        k = self.kernel(np.asarray(X, dtype=float), self.X)
        return self.y_mean + self.y_std * (self.const + k @ self.alpha)

    def _context_weights(self, context: np.ndarray) -> np.ndarray:
        """Kernel factor of the (fixed) context dimensions against every training point."""
        d2 = (self.X[:, 1:] - context[None, :]) ** 2
        return np.exp(-0.5 * (d2 @ np.exp(-2.0 * self.log_ls[1:])))

    def _k(self, xs: np.ndarray, cw: np.ndarray) -> np.ndarray:
        """k((x, c), X) for candidate deferrals xs (normalised) and context weights cw: (len(xs), n)."""
        dx = (xs[:, None] - self.X[None, :, 0]) ** 2
        return np.exp(-0.5 * dx * math.exp(-2.0 * self.log_ls[0])) * cw[None, :]

    def mean(self, xs: np.ndarray, context: np.ndarray) -> np.ndarray:
        """Posterior mean (outcome units) at (x, context) for each x."""
        k = self._k(xs, self._context_weights(context))
        return self.y_mean + self.y_std * (self.const + k @ self.alpha)

    def build_fantasies(self, num: int, rng: np.random.Generator) -> None:
        """Noiseless fantasy models at the training inputs, as BoTorch's LogNoisyExpectedImprovement:
        ``num`` joint posterior samples f_s(X) (pathwise: a prior sample corrected by the data), each
        interpolated by a noiseless GP with the same hyper-parameters; best_s = max f_s(X)."""
        from scipy.linalg import cho_solve

        n, s2 = len(self.X), self._s2
        L0 = _cholesky(self.Kf + _FANTASY_NOISE * np.eye(n))
        z = rng.standard_normal((2, n, num))
        prior = np.tril(L0[0]) @ z[0]  # ~ N(0, Kf)
        noisy = prior + math.sqrt(s2) * z[1]
        dev = prior - self.Kf @ cho_solve(self._chol, noisy, check_finite=False)  # ~ N(0, posterior cov)
        f = (self.Kf @ self.alpha)[:, None] + dev  # f_s(X) - const, standardised
        beta = cho_solve(L0, f, check_finite=False)
        best = self.y_mean + self.y_std * (self.const + f.max(axis=0))
        self.fantasy = {"L0": L0, "beta": beta, "best": best}

    def log_nei(self, xs: np.ndarray, context: np.ndarray) -> np.ndarray:
        """log of the fantasy-averaged expected improvement (outcome units) at (x, context)."""
        from scipy.linalg import solve_triangular
        from scipy.special import logsumexp

        fz = self.fantasy
        k = self._k(xs, self._context_weights(context))
        mean = self.y_mean + self.y_std * (self.const + k @ fz["beta"])  # (len(xs), num)
        v = solve_triangular(fz["L0"][0], k.T, lower=True, check_finite=False)
        var = np.maximum(1.0 - np.einsum("ij,ij->j", v, v), 1e-12) * self.y_std ** 2
        sigma = np.sqrt(var)[:, None]
        log_ei = _log_h((mean - fz["best"][None, :]) / sigma) + np.log(sigma)
        return logsumexp(log_ei, axis=1) - math.log(log_ei.shape[1])


def argmax_on_grid(fn: Callable[[np.ndarray], np.ndarray], points: int = 101,
                   levels: int = 3) -> tuple[float, float]:
    """Maximise a vectorised function on [0, 1]: a grid of ``points``, then ``levels - 1`` grids of 21
    points spanning one step either side of the best point so far (each 10x finer)."""
    xs = np.linspace(0.0, 1.0, points)
    values = fn(xs)
    i = int(np.argmax(values))
    best_x, best_v = float(xs[i]), float(values[i])
    step = 1.0 / (points - 1)
    for _ in range(levels - 1):
        xs = np.clip(np.linspace(best_x - step, best_x + step, 21), 0.0, 1.0)
        values = fn(xs)
        i = int(np.argmax(values))
        if values[i] > best_v:
            best_x, best_v = float(xs[i]), float(values[i])
        step /= 10.0
    return best_x, best_v


_BLAS = None


def _one_blas_thread():
    """BLAS limited to one thread while the GP computes: its matrices (<= 400 x 400) are too small to
    gain from threads, and spinning BLAS threads on a busy machine cost 10-50x (measured)."""
    global _BLAS
    if _BLAS is None:
        try:
            import scipy.linalg  # noqa: F401 - load scipy's own BLAS first, so that the controller sees it
            from threadpoolctl import ThreadpoolController

            _BLAS = ThreadpoolController()
        except ImportError:  # optional (scikit-learn's dependency)
            _BLAS = False
    if _BLAS is False:
        from contextlib import nullcontext

        return nullcontext()
    return _BLAS.limit(limits=1, user_api="blas")


class BODeferralPredictor(Estimator):
    """Contextual GP-BO deferral predictor (see the module docstring for the stages).

    An online estimator: it learns from ``observe`` (or ``fit``, a batch of observations) while it
    answers ``suggest``, and answers before any observation (the bootstrap stage is the paper's design),
    so ``suggest`` never raises NotFittedError; :meth:`expected_cost` does. Unlike scikit-learn's
    habit, ``__init__`` also draws the Latin hypercube: ``seed`` may be the replay's own generator, and
    drawing at construction keeps its sequence (and so every Lazer replay) as it was;
    ``set_params`` therefore starts the predictor afresh from its parameters."""

    def __init__(self, x_max: float = 100.0, n_bootstrap: int = 10, min_updates: int = 100,
                 ei_stop: float = 0.10, refit_every: int = 500, max_points: int = 400,
                 noise: float = 1e-3, num_fantasies: int = 16, grid: int = 101,
                 seed: int | np.random.Generator | None = 0):
        self.noise, self.seed = noise, seed
        self.x_max, self.n_bootstrap, self.min_updates = float(x_max), int(n_bootstrap), int(min_updates)
        self.ei_stop, self.refit_every, self.max_points = float(ei_stop), int(refit_every), int(max_points)
        self.num_fantasies, self.grid = int(num_fantasies), int(grid)
        if self.grid < 3 or self.max_points < 2 or self.num_fantasies < 1 or self.refit_every < 1:
            raise ValueError("grid >= 3, max_points >= 2, num_fantasies >= 1 and refit_every >= 1 are needed")
        self.name = "bo"
        self.rng = np.random.default_rng(seed)
        # Latin hypercube in one dimension: one uniform point in each of n_bootstrap equal cells, shuffled.
        cells = self.rng.permutation(self.n_bootstrap) + self.rng.random(self.n_bootstrap)
        self._lhs = (cells / self.n_bootstrap * self.x_max).tolist()
        self.X: list[list[float]] = []  # normalised (x, c1..c4)
        self.y: list[float] = []  # -f / x_max (maximised)
        self.decisions = 0
        self.updates = 0
        self.exploit = False
        self.last_ei: float | None = None
        self.stage_log: list[tuple[int, str]] = []
        self.gp = GaussianProcess(noise)
        self._seen = 0  # observations the GP is conditioned on
        self._fit_at = 0  # observations at the last hyper-parameter fit
        self.fit_seconds = 0.0
        self.condition_seconds = 0.0
        self.suggest_seconds = 0.0
        self.conditions = 0

    def set_params(self, **params) -> "BODeferralPredictor":
        super().set_params(**params)
        self.__init__(**self.get_params())  # type: ignore[misc] - a fresh start (see the class docstring)
        return self

    def fitted_attributes(self) -> list[str]:
        """Learned state is the observations (kept in ``X`` / ``y`` under the names the policy reads)."""
        return ["X", "y"] if self.y else []

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

    def _refresh(self) -> None:
        """Bring the GP up to date with the observations: re-fit hyper-parameters when the data doubled
        since the last fit or grew by ``refit_every``, else condition with the current ones."""
        n = len(self.y)
        if n == self._seen:
            return
        t0 = time.perf_counter()
        start = max(0, n - self.max_points)
        X, y = np.asarray(self.X[start:]), np.asarray(self.y[start:])
        if not self._fit_at or n >= 2 * self._fit_at or n - self._fit_at >= self.refit_every:
            self.gp.fit(X, y)
            self._fit_at = n
            self.fit_seconds += time.perf_counter() - t0
        else:
            kept = self._seen - max(start, self._seen - len(self.gp.X))  # rows shared with the last window
            self.gp.condition(X, y, reuse=max(kept, 0))
            self.conditions += 1
            self.condition_seconds += time.perf_counter() - t0
        self._seen = n

    # -- protocol ------------------------------------------------------------------------------
    def suggest(self, context: Sequence[float]) -> float:
        t0 = time.perf_counter()
        c = self.encode_context(context)
        stage = self.stage
        self.decisions += 1
        if stage == "bootstrap":
            x = self._lhs[(self.decisions - 1) % len(self._lhs)]
        else:
            with _one_blas_thread():
                x = self._model_based(stage, c)
        self.suggest_seconds += time.perf_counter() - t0
        return float(min(max(x, 0.0), self.x_max))

    def _model_based(self, stage: str, c: np.ndarray) -> float:
        """X from the GP: Log-NEI (acquisition) or the posterior mean (exploitation)."""
        self._refresh()
        if stage == "acquisition":
            if self.gp.fantasy is None:
                self.gp.build_fantasies(self.num_fantasies, self.rng)
            u, log_ei = argmax_on_grid(lambda xs: self.gp.log_nei(xs, c), self.grid)
            self.last_ei = math.exp(log_ei)  # in units of y = -f / x_max, i.e. a share of the range
            if self.updates >= self.min_updates and self.last_ei < self.ei_stop:
                self.exploit = True
                self.stage_log.append((self.decisions, "exploitation"))
        else:
            u, _ = argmax_on_grid(lambda xs: self.gp.mean(xs, c), self.grid)
        return u * self.x_max

    def observe(self, context: Sequence[float], x: float, f: float) -> None:
        """Record f(X|c) >= 0 for a decision; the GP takes it in at the next ``suggest``."""
        c = self.encode_context(context)
        self.X.append([min(max(x / self.x_max, 0.0), 1.0), *c.tolist()])
        self.y.append(-float(f) / self.x_max)
        self.updates += 1

    def fit(self, X: np.ndarray, y: np.ndarray) -> "BODeferralPredictor":
        """Observe a batch: rows of ``X`` are (deferral X in seconds, the four context values), ``y``
        the observed costs f(X|c). Adds to what was observed before (an online learner)."""
        X = np.asarray(X, dtype=float)
        if X.ndim != 2 or X.shape[1] != 1 + len(CONTEXT_SCALES) or len(X) != len(y):
            raise ValueError(f"X must be (n, {1 + len(CONTEXT_SCALES)}) rows of (x, context) and y n costs")
        for row, f in zip(X, np.asarray(y, dtype=float)):
            self.observe(row[1:], float(row[0]), float(f))
        return self

    def expected_cost(self, context: Sequence[float], xs: Sequence[float]) -> np.ndarray:
        """The GP's posterior mean of f(X|c) at deferrals ``xs`` (seconds) in ``context``; needs
        observations (NotFittedError before any). Brings the GP up to date, as ``suggest`` would."""
        if len(self.y) < 2:
            raise NotFittedError(f"{type(self).__name__} is not fitted: it needs at least two observations")
        with _one_blas_thread():
            self._refresh()
            u = np.clip(np.asarray(xs, dtype=float) / self.x_max, 0.0, 1.0)
            return -self.gp.mean(u, self.encode_context(context)) * self.x_max

    def stats(self) -> dict[str, float]:
        return {"bo_decisions": self.decisions, "bo_updates": self.updates, "bo_fits": self.gp.fits,
                "bo_conditions": self.conditions, "bo_fit_seconds": self.fit_seconds,
                "bo_condition_seconds": self.condition_seconds, "bo_suggest_seconds": self.suggest_seconds,
                "bo_exploiting": float(self.exploit)}


def make_deferral_predictor(spec: str | float, x_max: float = 100.0,
                            seed: int | np.random.Generator | None = 0, **bo_options: float):
    """'bo', 'random', 'grid', or a number (fixed deferral in seconds); ``bo_options`` go to
    :class:`BODeferralPredictor`."""
    kind = parse_deferral(spec)
    if kind == "bo":
        return BODeferralPredictor(x_max=x_max, seed=seed, **bo_options)
    if kind == "random":
        return RandomDeferral(x_max, seed)
    if kind == "grid":
        return GridDeferral(x_max)
    return FixedDeferral(float(kind))


def parse_deferral(spec: str | float) -> str | float:
    """'bo' | 'random' | 'grid' or the fixed deferral in seconds; ValueError otherwise."""
    if isinstance(spec, (int, float)) and not isinstance(spec, bool):
        return float(spec)
    if spec in ("bo", "random", "grid"):
        return spec
    try:
        return float(spec)
    except (TypeError, ValueError):
        raise ValueError(f"unknown deferral predictor {spec!r}: bo, random, grid or seconds") from None
