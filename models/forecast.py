"""Per-organisation GPU demand forecasters: GFS's OrgLinear and the baselines it is compared with.

All forecasters share one protocol on a demand matrix (time x organisation, a DataFrame with a
DatetimeIndex) and organisation attributes (org x numeric columns):

    fit(demand, attrs) -> self
    forecast(demand, attrs, origins) -> Forecast   # for each origin t: steps t .. t + horizon - 1

and forecasts are distributions: ``Forecast`` holds a mean and, for Gaussian models, a scale, or
quantiles computed from training residuals for point models. Only values before an origin are used.

OrgLinear (GFS, ASPLOS '26, §3.2): a moving-average decomposition with reflection padding splits the
look-back window into trend and cyclical parts; two linear heads map them to the horizon (Eq. 5-6);
hour / weekday / holiday embeddings of each forecast step and organisation-attribute embeddings
combined by attention add context; a softplus head gives a heteroscedastic scale (Eq. 7); training
minimises the Gaussian negative log-likelihood over all organisations and steps (Eq. 8). Quantiles
come from the inverse normal CDF (what GFS's quota allocator, Eq. 9, consumes).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from models.base import Estimator
from models.orglinear_net import _adam_step, build_orglinear_net  # noqa: F401  (re-exported: the network lives there)


@dataclass
class Forecast:
    """Forecasts for n = (#origins x #orgs) windows of ``horizon`` steps, in demand units."""

    origins: list[pd.Timestamp]
    orgs: list[str]
    mean: np.ndarray  # (n_origins, n_orgs, horizon)
    scale: np.ndarray | None = None  # Gaussian sigma, same shape
    residual_quantiles: dict[float, np.ndarray] = field(default_factory=dict)  # p -> (horizon,) offsets
    fixed_quantiles: dict[float, np.ndarray] = field(default_factory=dict)  # p -> full arrays
    samples: np.ndarray | None = None  # (n_samples, n_origins, n_orgs, horizon)

    def quantile(self, p: float) -> np.ndarray:
        if p in self.fixed_quantiles:
            return self.fixed_quantiles[p]
        if self.scale is not None:
            from statistics import NormalDist  # (not scipy.stats: seconds of import for the replay's forecasts)

            return self.mean + self.scale * NormalDist().inv_cdf(p)
        if self.samples is not None:
            return np.quantile(self.samples, p, axis=0)
        if p in self.residual_quantiles:
            return self.mean + self.residual_quantiles[p][None, None, :]
        raise ValueError(f"this forecast has no quantile {p}")


def origins_for(index: pd.DatetimeIndex, start: pd.Timestamp, horizon: int, lookback: int) -> list[pd.Timestamp]:
    """Forecast origins every ``horizon`` steps from ``start`` while a full horizon remains."""
    pos = int(index.searchsorted(start))
    pos = max(pos, lookback)
    return [index[i] for i in range(pos, len(index) - horizon + 1, horizon)]


def truth(demand: pd.DataFrame, origins: list[pd.Timestamp], horizon: int) -> np.ndarray:
    idx = demand.index
    return np.stack([demand.iloc[idx.get_loc(o): idx.get_loc(o) + horizon].to_numpy().T for o in origins])


def _windows(values: np.ndarray, lookback: int, horizon: int, stride: int = 1):
    """All (x, y, t) windows of a (T, O) array: x (N, O, L), y (N, O, H), t the origin positions."""
    T = values.shape[0]
    starts = np.arange(lookback, T - horizon + 1, stride)
    x = np.stack([values[s - lookback: s].T for s in starts])
    y = np.stack([values[s: s + horizon].T for s in starts])
    return x, y, starts


class _ResidualQuantiles(Estimator):
    levels = (0.5, 0.9, 0.95)

    def _fit_residuals(self, demand: pd.DataFrame, attrs: pd.DataFrame) -> None:
        """Per-step empirical quantiles of (truth - mean) over training origins."""
        idx = demand.index
        origins = [idx[i] for i in range(self.lookback, len(idx) - self.horizon + 1, max(1, self.horizon // 2))]
        fc = self._point(demand, attrs, origins)
        res = truth(demand, origins, self.horizon) - fc
        self.res_q_ = {p: np.quantile(res.reshape(-1, self.horizon), p, axis=0) for p in self.levels}


class SeasonalNaive(_ResidualQuantiles):
    """Forecast = the value one season (default one day) before each step.

    ``lookback`` (None: one season) is resolved at construction, not in ``fit``, because callers read
    it before fitting to place the first origin; ``get_params`` returns the resolved value, which builds
    the same model."""

    def __init__(self, horizon: int, season: int, lookback: int | None = None):
        self.horizon, self.season = horizon, season
        self.lookback = lookback or season

    def fit(self, demand: pd.DataFrame, attrs: pd.DataFrame | None = None) -> "SeasonalNaive":
        t0 = time.perf_counter()
        self._fit_residuals(demand, attrs)
        self.fit_seconds_ = time.perf_counter() - t0
        return self

    def _point(self, demand, attrs, origins):
        idx, v = demand.index, demand.to_numpy()
        out = []
        for o in origins:
            p = idx.get_loc(o)
            steps = [p + h - self.season * (1 + h // self.season) for h in range(self.horizon)]
            out.append(v[steps].T)
        return np.stack(out)

    def forecast(self, demand, attrs, origins) -> Forecast:
        self.check_is_fitted()
        return Forecast(origins, list(demand.columns), self._point(demand, attrs, origins),
                        residual_quantiles=self.res_q_)


class PreviousWeekPeak(Estimator):
    """GFS's production heuristic (GFS-e): the demand estimate for the coming hours is the peak of the
    previous week. Used as the point forecast and as every quantile (it is an upper envelope). It learns
    nothing, but ``fit`` is still required before ``forecast``, so that every forecaster is used alike."""

    def __init__(self, horizon: int, week: int):
        self.horizon, self.week, self.lookback = horizon, week, week

    def fit(self, demand: pd.DataFrame, attrs: pd.DataFrame | None = None) -> "PreviousWeekPeak":
        self.fit_seconds_ = 0.0
        return self

    def forecast(self, demand, attrs, origins) -> Forecast:
        self.check_is_fitted()
        idx, v = demand.index, demand.to_numpy()
        peaks = np.stack([np.repeat(v[max(0, idx.get_loc(o) - self.week): idx.get_loc(o)].max(axis=0)[:, None],
                                    self.horizon, axis=1) for o in origins])
        return Forecast(origins, list(demand.columns), peaks, fixed_quantiles={0.9: peaks, 0.95: peaks, 0.5: peaks})


def _scales(demand: pd.DataFrame, attrs: pd.DataFrame | None, norm: str = "mean") -> np.ndarray:
    """Per-org normalisation: the quota when known, else the training mean (at least 1 GPU); ``norm="max"``:
    the training peak (at least 1 GPU), which keeps every input in [0, 1] (see :class:`OrgLinear`)."""
    if norm == "max":
        return np.maximum(demand.max().to_numpy(dtype=float), 1.0)
    if attrs is not None and "quota_gpus" in attrs:
        s = attrs["quota_gpus"].reindex(demand.columns).to_numpy(dtype=float)
    else:
        s = demand.mean().to_numpy(dtype=float)
    fallback = np.maximum(demand.mean().to_numpy(dtype=float), 1.0)
    return np.where(np.isfinite(s) & (s > 0), s, fallback)


def _calendar(index: pd.DatetimeIndex, holiday_country: str | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    hol = np.zeros(len(index), dtype=np.int64)
    if holiday_country:
        import holidays

        days = holidays.country_holidays(holiday_country, years=sorted(set(index.year)))
        hol = np.array([d in days for d in index.date], dtype=np.int64)
    return index.hour.to_numpy(np.int64), index.weekday.to_numpy(np.int64), hol


CALENDAR_MODES = ("concat", "sum")
SCALE_INPUTS = ("cyc", "abs")
NORMS = ("mean", "max")
INITS = ("mean", "last", "persistence")
ENGINES = ("lightning", "torch", "numpy")


class OrgLinear(Estimator):
    """GFS OrgLinear forecaster, trained on the CPU (see module docstring).

    ``calendar``: "concat" (Eq. 3 as printed) or "sum" (the old reading); ``scale_input``: "cyc" (Eq. 7 as
    printed) or "abs"; ``engine``: "lightning" (a Lightning Trainer) or "torch" (a plain loop: no Trainer
    start-up, what the in-replay retraining uses). :meth:`update` continues training the fitted network
    (warm start) for a few epochs on newer data.

    ``norm``: the per-organisation scale the series are divided by: "mean" (the quota when known, else the
    training mean) or "max" (the training peak, what the in-replay training uses). Why "max" there: an
    organisation whose mean is under one GPU but whose peak is 26 feeds inputs of 40+ to the linear heads;
    the Gaussian NLL's gradients on them, with Adam's moments carried across warm starts, drove GFS's
    in-replay forecasts to hundreds of GPUs on a 320-GPU cluster (summed 0.9-quantile 990 GPUs above the
    demand on average on the gfs-medium history); with "max" it is 15."""

    def __init__(self, lookback: int = 144, horizon: int = 36, d_model: int = 16, kernel: int = 13,
                 max_epochs: int = 4, batch_size: int = 256, lr: float = 3e-3, stride: int = 1,
                 val_steps: int = 0, patience: int = 2,
                 holiday_country: str | None = "CN", seed: int = 0, calendar: str = "concat",
                 scale_input: str = "cyc", engine: str = "lightning", min_steps: int = 0, init: str = "mean",
                 norm: str = "mean"):
        self.lookback, self.horizon, self.d_model, self.kernel = lookback, horizon, d_model, kernel
        self.max_epochs, self.batch_size, self.lr, self.stride = max_epochs, batch_size, lr, stride
        self.val_steps, self.patience = val_steps, patience
        self.holiday_country, self.seed = holiday_country, seed
        self.calendar, self.scale_input, self.engine, self.min_steps = calendar, scale_input, engine, min_steps
        self.init, self.norm = init, norm
        self._validate()  # at construction too: a mistyped option fails where it is written

    def _validate(self) -> None:
        """The choices, checked at construction and again in ``fit`` (``set_params`` may change them)."""
        if self.calendar not in CALENDAR_MODES:
            raise ValueError(f"calendar must be one of {', '.join(CALENDAR_MODES)}, got {self.calendar!r}")
        if self.scale_input not in SCALE_INPUTS:
            raise ValueError(f"scale_input must be one of {', '.join(SCALE_INPUTS)}, got {self.scale_input!r}")
        if self.engine not in ENGINES:
            raise ValueError(f"engine must be one of {', '.join(ENGINES)}, got {self.engine!r}")
        if getattr(self, "init", "mean") not in INITS:
            raise ValueError(f"init must be one of {', '.join(INITS)}, got {self.init!r}")
        if getattr(self, "norm", "mean") not in NORMS:
            raise ValueError(f"norm must be one of {', '.join(NORMS)}, got {self.norm!r}")

    def _torch_epochs(self, tensors, epochs: int, min_steps: int = 0) -> None:
        """Plain-torch Gaussian NLL training of ``self.net_`` (Eq. 8), shuffled mini-batches, seeded."""
        import torch

        net = self.net_.train()
        params = [p for p in net.parameters() if p.requires_grad]
        state = getattr(self, "opt_", None)  # Adam moments kept across warm starts
        if state is None:
            state = self.opt_ = {"t": 0, "m": [torch.zeros_like(p) for p in params],
                                 "v": [torch.zeros_like(p) for p in params]}
        loss_fn = torch.nn.GaussianNLLLoss(full=True)
        gen = torch.Generator().manual_seed(self.seed + getattr(self, "updates_", 0))
        n = len(tensors[0])
        per_epoch = max(1, math.ceil(n / self.batch_size))
        epochs = max(epochs, math.ceil(min_steps / per_epoch))  # a short history still gets enough steps
        b1, b2, eps = 0.9, 0.999, 1e-8
        for _ in range(epochs):
            perm = torch.randperm(n, generator=gen)
            for i in range(0, n, self.batch_size):
                idx = perm[i: i + self.batch_size]
                x, y, h, w, o, org, a = (t[idx] for t in tensors)
                for p in params:
                    p.grad = None
                mean, scale = net(x, h, w, o, org, a)
                loss = loss_fn(mean, y, scale ** 2)
                loss.backward()
                # Adam by hand (the same update as torch.optim.Adam): torch.optim's first use imports
                # torch._dynamo, seconds of start-up for a replay that trains a few hundred steps.
                state["t"] += 1
                _adam_step(params, state["m"], state["v"], state["t"], self.lr, b1, b2, eps)
        self.net_ = net.eval()

    def update(self, demand: pd.DataFrame, attrs: pd.DataFrame | None = None, epochs: int = 1,
               min_steps: int = 0) -> "OrgLinear":
        """Warm start: continue training the fitted network on ``demand`` (same organisations, same
        per-organisation scale as the first fit) for ``epochs`` epochs of the plain loop."""
        if not hasattr(self, "net_"):
            return self.fit(demand, attrs)
        if list(demand.columns) != self.orgs_:
            raise ValueError("update needs the organisations the model was trained on, in the same order")
        t0 = time.perf_counter()
        positions = np.arange(self.lookback, len(demand) - self.horizon + 1, self.stride)
        if len(positions):
            self.updates_ = getattr(self, "updates_", 0) + 1
            if self.engine == "numpy":
                self._numpy_epochs(self._arrays(demand, attrs, positions), epochs, min_steps)
            else:
                import torch

                torch.manual_seed(self.seed)
                self._torch_epochs(self._tensors(demand, attrs, positions), epochs, min_steps)
        self.fit_seconds_ = time.perf_counter() - t0
        return self

    def _attr_matrix(self, attrs: pd.DataFrame | None, orgs: list[str]) -> np.ndarray:
        if attrs is None or attrs.empty:
            return np.zeros((len(orgs), 0), dtype=np.float32)
        a = attrs.reindex(orgs).astype(float).fillna(0.0).to_numpy()
        return (np.log1p(np.maximum(a, 0.0)) / np.log1p(np.maximum(self.attr_max_, 1.0))).astype(np.float32)

    def _tensors(self, demand: pd.DataFrame, attrs, positions):
        import torch

        return tuple(torch.from_numpy(a) for a in self._arrays(demand, attrs, positions))

    def _arrays(self, demand: pd.DataFrame, attrs, positions) -> tuple[np.ndarray, ...]:
        v = (demand.to_numpy(dtype=float) / self.scale_[None, :]).astype(np.float32)
        hour, wday, hol = _calendar(demand.index, self.holiday_country)
        O, H, L = v.shape[1], self.horizon, self.lookback
        xs = np.stack([v[p - L: p].T for p in positions])  # (N, O, L)
        ys = np.stack([v[p: p + H].T if p + H <= len(v) else np.zeros((O, H), np.float32) for p in positions])
        steps = np.stack([np.arange(p, p + H) for p in positions]).clip(max=len(v) - 1)
        n = len(positions)
        A = self._attr_matrix(attrs, list(demand.columns))
        rep = lambda a: np.repeat(a[steps], O, axis=0)  # noqa: E731
        return (xs.reshape(n * O, L), ys.reshape(n * O, H), rep(hour), rep(wday), rep(hol),
                np.tile(np.arange(O), n), np.tile(A, (n, 1)))

    def _numpy_epochs(self, arrays: tuple[np.ndarray, ...], epochs: int, min_steps: int = 0) -> None:
        """``_torch_epochs`` on the numpy network (models.orglinear_np): no torch import, no dispatch cost."""
        per_epoch = max(1, math.ceil(len(arrays[0]) / self.batch_size))
        self.net_.train_epochs(arrays[:6], max(epochs, math.ceil(min_steps / per_epoch)), self.batch_size, self.lr,
                               self.seed + getattr(self, "updates_", 0))

    def _fit_numpy(self, demand: pd.DataFrame, attrs: pd.DataFrame | None) -> "OrgLinear":
        """``engine="numpy"``: the plain loop on the numpy network (no attributes, no early stopping)."""
        from models.orglinear_np import NumpyOrgLinearNet

        if (attrs is not None and not attrs.empty) or getattr(self, "val_steps", 0) > 0:
            raise ValueError("engine='numpy' takes no organisation attributes and no val_steps; use engine='torch'")
        t0 = time.perf_counter()
        self.orgs_, self.scale_, self.attr_max_ = list(demand.columns), _scales(demand, None, self.norm), np.zeros(0)
        positions = np.arange(self.lookback, len(demand) - self.horizon + 1, self.stride)
        arrays = self._arrays(demand, None, positions)
        spread = None
        if self.init == "persistence" and len(arrays[0]):
            spread = float(np.sqrt(np.mean((arrays[1].astype(float) - arrays[0][:, -1:]) ** 2)))
        self.net_ = NumpyOrgLinearNet(self.lookback, self.horizon, len(self.orgs_), self.d_model, self.kernel,
                                      self.calendar, self.scale_input, self.init, spread, self.seed)
        self._numpy_epochs(arrays, self.max_epochs, self.min_steps)
        self.fit_seconds_ = time.perf_counter() - t0
        self.windows_ = int(len(positions) * len(self.orgs_))
        return self

    def fit(self, demand: pd.DataFrame, attrs: pd.DataFrame | None = None) -> "OrgLinear":
        self._validate()
        if self.engine == "numpy":
            return self._fit_numpy(demand, attrs)
        import torch
        from torch.utils.data import DataLoader, TensorDataset

        t0 = time.perf_counter()
        torch.manual_seed(self.seed)
        self.orgs_ = list(demand.columns)
        self.scale_ = _scales(demand, attrs, getattr(self, "norm", "mean"))
        self.attr_max_ = attrs.reindex(self.orgs_).astype(float).max().to_numpy() if attrs is not None and not \
            attrs.empty else np.zeros(0)
        positions = np.arange(self.lookback, len(demand) - self.horizon + 1, self.stride)
        tensors = self._tensors(demand, attrs, positions)
        n_attrs = tensors[-1].shape[1]
        init = getattr(self, "init", "mean")
        spread = None
        if init == "persistence" and len(tensors[0]):  # RMS of (target - last value of the window), scaled units
            spread = float(((tensors[1] - tensors[0][:, -1:]) ** 2).mean().sqrt())
        net = build_orglinear_net(self.lookback, self.horizon, len(self.orgs_), n_attrs, self.d_model, self.kernel,
                                  self.calendar, self.scale_input, init, spread)
        lr = self.lr
        if getattr(self, "val_steps", 0) > 0 and self.engine != "torch":
            raise ValueError("val_steps (early stopping on a validation window) needs engine='torch'")
        if self.engine == "torch":
            self.net_, self.opt_ = net, None
            if getattr(self, "val_steps", 0) > 0:
                self._fit_early_stopped(demand, attrs, positions)
            else:
                self._torch_epochs(tensors, self.max_epochs, self.min_steps)
            self.fit_seconds_ = time.perf_counter() - t0
            self.windows_ = int(len(positions) * len(self.orgs_))
            return self
        import lightning as L

        class Module(L.LightningModule):
            def __init__(self) -> None:
                super().__init__()
                self.net = net
                self.loss = torch.nn.GaussianNLLLoss(full=True)  # Eq. 8 over all orgs and steps

            def training_step(self, batch, _):
                x, y, h, w, o, org, a = batch
                mean, scale = self.net(x, h, w, o, org, a)
                return self.loss(mean, y, scale ** 2)

            def configure_optimizers(self):
                return torch.optim.Adam(self.parameters(), lr=lr)

        loader = DataLoader(TensorDataset(*tensors), batch_size=self.batch_size, shuffle=True,
                            generator=torch.Generator().manual_seed(self.seed))
        trainer = L.Trainer(max_epochs=self.max_epochs, accelerator="cpu", devices=1, logger=False,
                            enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
                            deterministic=True)
        module = Module()
        trainer.fit(module, loader)
        self.net_ = module.net.eval()
        self.fit_seconds_ = time.perf_counter() - t0
        self.windows_ = int(len(positions) * len(self.orgs_))
        return self

    def _fit_early_stopped(self, demand: pd.DataFrame, attrs, positions: np.ndarray) -> None:
        """Time-based early stopping: the windows whose targets lie in the last ``val_steps`` steps are held
        out, the net trains on the earlier ones epoch by epoch (at most ``max_epochs``) until ``patience``
        epochs bring no lower validation NLL (Eq. 8); then the best epoch count is trained again from the same
        start on every window. Why: a fixed epoch count over- or under-fits as the history grows."""
        import torch

        T, H = len(demand), self.horizon
        train_pos, val_pos = positions[positions + H <= T - self.val_steps], positions[positions >= T - self.val_steps]
        if len(train_pos) == 0 or len(val_pos) == 0:
            raise ValueError(f"val_steps={self.val_steps} leaves no training or no validation window in {T} steps")
        start = {k: v.clone() for k, v in self.net_.state_dict().items()}
        train, val = self._tensors(demand, attrs, train_pos), self._tensors(demand, attrs, val_pos)
        losses: list[float] = []
        while len(losses) < self.max_epochs and len(losses) - int(np.argmin(losses or [0])) <= self.patience:
            self.updates_ = len(losses)  # a new shuffle each epoch (``_torch_epochs`` seeds it by updates_)
            self._torch_epochs(train, 1)
            with torch.no_grad():
                mean, scale = self.net_(val[0], *val[2:])
                losses.append(float(torch.nn.GaussianNLLLoss(full=True)(mean, val[1], scale ** 2)))
        self.val_losses_, self.best_epochs_ = losses, int(np.argmin(losses)) + 1
        self.net_.load_state_dict(start)
        self.opt_, full = None, self._tensors(demand, attrs, positions)
        for epoch in range(self.best_epochs_):
            self.updates_ = epoch
            self._torch_epochs(full, 1)
        del self.updates_

    def forecast_window(self, window: np.ndarray, steps: pd.DatetimeIndex | None = None,
                        calendar: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
                        ) -> tuple[np.ndarray, np.ndarray]:
        """One origin, fast: ``window`` (lookback, orgs) in demand units, ``steps`` the horizon's timestamps
        (or ``calendar``: their (hour, weekday, holiday) arrays already computed, as the replay does);
        returns (mean, scale), each (orgs, horizon). No attributes (a model fitted without them)."""
        O, L = window.shape[1], self.lookback
        hour, wday, hol = calendar if calendar is not None else _calendar(steps, self.holiday_country)
        s = self.scale_[:, None]
        if self.engine == "numpy":
            rep = lambda a: np.repeat(np.asarray(a)[None, :], O, axis=0)  # noqa: E731
            mean, scale = self.net_.forward((window[-L:] / self.scale_[None, :]).T, rep(hour), rep(wday), rep(hol),
                                            np.arange(O))
            return mean * s, scale * s
        import torch

        x = torch.from_numpy((window[-L:] / self.scale_[None, :]).T.astype(np.float32))
        rep = lambda a: torch.from_numpy(np.repeat(a[None, :], O, axis=0))  # noqa: E731
        org = torch.arange(O)
        attrs = torch.zeros((O, 0))
        with torch.no_grad():
            mean, scale = self.net_(x, rep(hour), rep(wday), rep(hol), org, attrs)
        return mean.numpy() * s, scale.numpy() * s

    def forecast(self, demand: pd.DataFrame, attrs: pd.DataFrame | None, origins) -> Forecast:
        self.check_is_fitted()
        if list(demand.columns) != self.orgs_:
            raise ValueError("forecast needs the organisations the model was trained on, in the same order")
        positions = [demand.index.get_loc(o) for o in origins]
        if self.engine == "numpy":
            x, _, h, w, hol, org, _a = self._arrays(demand, None, positions)
            mean, scale = self.net_.forward(x, h, w, hol, org)
        else:
            import torch

            x, _, h, w, hol, org, a = self._tensors(demand, attrs, positions)
            with torch.no_grad():
                mean, scale = self.net_(x, h, w, hol, org, a)
            mean, scale = mean.numpy(), scale.numpy()
        shape = (len(origins), len(self.orgs_), self.horizon)
        s = self.scale_[None, :, None]
        return Forecast(list(origins), self.orgs_, mean.reshape(shape) * s, scale=scale.reshape(shape) * s)


class DLinear(_ResidualQuantiles):
    """DLinear (Zeng et al., AAAI'23): decomposition + two linear heads, MSE loss, shared across orgs.
    Quantiles from training residuals per horizon step."""

    def __init__(self, lookback: int = 144, horizon: int = 36, kernel: int = 25, max_epochs: int = 8,
                 batch_size: int = 256, lr: float = 3e-3, seed: int = 0):
        self.lookback, self.horizon, self.kernel = lookback, horizon, kernel
        self.max_epochs, self.batch_size, self.lr, self.seed = max_epochs, batch_size, lr, seed

    def fit(self, demand: pd.DataFrame, attrs: pd.DataFrame | None = None) -> "DLinear":
        import torch
        from torch import nn
        from torch.nn import functional as F

        t0 = time.perf_counter()
        torch.manual_seed(self.seed)
        self.scale_ = _scales(demand, attrs)
        v = (demand.to_numpy(dtype=float) / self.scale_[None, :]).astype(np.float32)
        x, y, _ = _windows(v, self.lookback, self.horizon)
        x = torch.from_numpy(x.reshape(-1, self.lookback))
        y = torch.from_numpy(y.reshape(-1, self.horizon))
        kernel = self.kernel

        class Net(nn.Module):
            def __init__(self, L, H):
                super().__init__()
                self.t, self.c = nn.Linear(L, H), nn.Linear(L, H)

            def forward(self, x):
                pad = (kernel - 1) // 2
                trend = F.avg_pool1d(F.pad(x.unsqueeze(1), (pad, kernel - 1 - pad), mode="reflect"), kernel,
                                     stride=1).squeeze(1)
                return self.t(trend) + self.c(x - trend)

        net = Net(self.lookback, self.horizon)
        opt = torch.optim.Adam(net.parameters(), lr=self.lr)
        gen = torch.Generator().manual_seed(self.seed)
        for _ in range(self.max_epochs):
            perm = torch.randperm(len(x), generator=gen)
            for i in range(0, len(x), self.batch_size):
                idx = perm[i: i + self.batch_size]
                opt.zero_grad()
                loss = F.mse_loss(net(x[idx]), y[idx])
                loss.backward()
                opt.step()
        self.net_ = net.eval()
        self._fit_residuals(demand, attrs)
        self.fit_seconds_ = time.perf_counter() - t0
        return self

    def _point(self, demand, attrs, origins):
        import torch

        v = (demand.to_numpy(dtype=float) / self.scale_[None, :]).astype(np.float32)
        pos = [demand.index.get_loc(o) for o in origins]
        x = torch.from_numpy(np.stack([v[p - self.lookback: p].T for p in pos]).reshape(-1, self.lookback))
        with torch.no_grad():
            out = self.net_(x).numpy().reshape(len(origins), v.shape[1], self.horizon)
        return out * self.scale_[None, :, None]

    def forecast(self, demand, attrs, origins) -> Forecast:
        self.check_is_fitted()
        return Forecast(list(origins), list(demand.columns), self._point(demand, attrs, origins),
                        residual_quantiles=self.res_q_)


def gluonts_entries(demand: pd.DataFrame, freq: str, end: int | None = None, static_cat: bool = True) -> list[dict]:
    """One GluonTS entry per organisation (its series up to ``end``), the organisation's index as a static
    category where the model takes one (DeepAR, TFT)."""
    start = pd.Period(demand.index[0], freq=freq)
    entries = [{"start": start, "target": demand[c].to_numpy(dtype=np.float32)[:end]} for c in demand.columns]
    if static_cat:
        for i, e in enumerate(entries):
            e["feat_static_cat"] = [i]
    return entries


def gluonts_trainer(max_epochs: int, root: str, **extra) -> dict:
    """Lightning trainer settings for a GluonTS estimator: CPU, quiet, checkpoints under ``root``."""
    return {"max_epochs": max_epochs, "accelerator": "cpu", "enable_progress_bar": False, "logger": False,
            "enable_model_summary": False, "default_root_dir": root, **extra}


class DeepARForecaster(Estimator):
    """GluonTS DeepAR (torch backend) with the organisation as a static categorical feature."""

    def __init__(self, lookback: int = 144, horizon: int = 36, freq: str = "10min", max_epochs: int = 100,
                 num_batches_per_epoch: int = 50, num_samples: int = 100, seed: int = 0):
        self.lookback, self.horizon, self.freq = lookback, horizon, freq
        self.max_epochs, self.num_batches_per_epoch, self.num_samples, self.seed = (
            max_epochs, num_batches_per_epoch, num_samples, seed)

    def _entries(self, demand: pd.DataFrame, end: int | None = None) -> list[dict]:
        return gluonts_entries(demand, self.freq, end)

    def fit(self, demand: pd.DataFrame, attrs: pd.DataFrame | None = None) -> "DeepARForecaster":
        import lightning as L
        from gluonts.torch.model.deepar import DeepAREstimator

        import tempfile

        t0 = time.perf_counter()
        L.seed_everything(self.seed, verbose=False)
        self._tmp = tempfile.mkdtemp(prefix="schedcast-deepar-")  # GluonTS keeps a best-model checkpoint
        est = DeepAREstimator(freq=self.freq, prediction_length=self.horizon, context_length=self.lookback,
                              num_feat_static_cat=1, cardinality=[demand.shape[1]],
                              num_batches_per_epoch=self.num_batches_per_epoch,
                              trainer_kwargs=gluonts_trainer(self.max_epochs, self._tmp))
        try:
            self.predictor_ = est.train(self._entries(demand))
        finally:
            import shutil

            shutil.rmtree(self._tmp, ignore_errors=True)
        self.fit_seconds_ = time.perf_counter() - t0
        return self

    def forecast(self, demand, attrs, origins) -> Forecast:
        self.check_is_fitted()
        import lightning as L

        L.seed_everything(self.seed, verbose=False)
        entries = []
        for o in origins:
            entries += self._entries(demand, end=demand.index.get_loc(o))
        samples = np.stack([f.samples[: self.num_samples] for f in self.predictor_.predict(entries,
                                                                                            num_samples=self.num_samples)])
        n, O = len(origins), demand.shape[1]
        samples = samples.reshape(n, O, self.num_samples, self.horizon).transpose(2, 0, 1, 3)
        return Forecast(list(origins), list(demand.columns), samples.mean(axis=0), samples=samples)
