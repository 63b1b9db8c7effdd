"""OrgLinear's network (GFS §3.2, Eq. 3-8) in numpy, forward and backward by hand: ``OrgLinear(engine="numpy")``.

Why a second engine: inside a GFS replay OrgLinear is retrained every ``retrain_hours`` on a few hundred
windows of one-hour maxima (look-back 48, horizon 1, width 16) and asked ~400 one-origin forecasts. At that
size torch's per-call overhead, not arithmetic, is the cost, and ``import torch`` alone took ~2 s of CPU of a
~6 s gfs-medium replay (profiled: 45 % of the replay was "training", most of it the import and the dispatch).
Every layer of the network is linear except the softplus of the scale, so its gradient is short to write.

Scope: no organisation attributes (the replay has none: the one-key attention then is exactly
out_proj(v_proj(org token)), as in ``orglinear_net.OrgLinearNet.one_token_attention``). The same Gaussian NLL
(torch.nn.GaussianNLLLoss(full=True), mean over rows and steps) and the same Adam update as the plain-torch
loop; ``tests/test_orglinear_np.py`` checks loss, gradients and an Adam step against the torch network with
the same weights (``from_torch``). Float64; its own seeded initialisation (the torch layers' distributions) and
shuffles, so a replay with it is not byte-identical to the torch engine, only the same model and loop.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

LOG_2PI = math.log(2.0 * math.pi)


def moving_average_matrix(length: int, kernel: int) -> np.ndarray:
    """(L, L) matrix A with trend = x @ A.T: a ``kernel``-step average over the window reflected at its ends
    (what F.pad(mode="reflect") then avg_pool1d(stride=1) compute)."""
    pad = (kernel - 1) // 2
    A = np.zeros((length, length))
    for i in range(length):
        for j in range(i - pad, i - pad + kernel):
            k = -j if j < 0 else (2 * (length - 1) - j if j > length - 1 else j)
            A[i, k] += 1.0 / kernel
    return A


def _softplus(x: np.ndarray) -> np.ndarray:
    return np.logaddexp(0.0, x)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))


class NumpyOrgLinearNet:
    """The network's parameters (a dict of float64 arrays, torch's names) with ``forward`` / ``loss_and_grads``
    and Adam state; see the module docstring."""

    def __init__(self, lookback: int, horizon: int, n_orgs: int, d: int = 16, kernel: int = 25,
                 calendar: str = "concat", scale_input: str = "cyc", init: str = "mean",
                 init_spread: float | None = None, seed: int = 0):
        self.lookback, self.horizon, self.d, self.kernel = lookback, horizon, d, kernel
        self.calendar, self.scale_input = calendar, scale_input
        self.A = moving_average_matrix(lookback, kernel)
        rng = np.random.default_rng(seed)
        L, H = lookback, horizon

        def uniform(shape: tuple[int, ...], fan_in: int) -> np.ndarray:  # nn.Linear's default (kaiming, a=sqrt 5)
            b = 1.0 / math.sqrt(fan_in)
            return rng.uniform(-b, b, shape)

        P: dict[str, np.ndarray] = {}
        for head in ("trend_head", "cyc_head"):  # Eq. 5-6, started as persistence or as the window's mean
            W = np.zeros((H, L))
            if init in ("last", "persistence"):
                W[:, -1] = 1.0
            else:
                W[:] = 1.0 / L
            P[f"{head}.weight"], P[f"{head}.bias"] = W, np.zeros(H)
        P["hour.weight"], P["wday.weight"], P["hol.weight"] = (rng.standard_normal((n, d)) for n in (24, 7, 2))
        if calendar == "concat":  # Eq. 3: [E_hour; E_weekday; E_holiday] projected to the width
            P["cal_proj.weight"], P["cal_proj.bias"] = uniform((d, 3 * d), 3 * d), uniform((d,), 3 * d)
        P["org.weight"] = rng.standard_normal((n_orgs, d))
        bound = math.sqrt(6.0 / (3 * d + d))  # xavier_uniform over MultiheadAttention's (3d, d) in_proj
        P["attn.v.weight"], P["attn.v.bias"] = rng.uniform(-bound, bound, (d, d)), np.zeros(d)
        P["attn.out_proj.weight"], P["attn.out_proj.bias"] = uniform((d, d), d), np.zeros(d)
        P["ctx_mean.weight"], P["ctx_mean.bias"] = np.zeros((1, d)), np.zeros(1)
        P["scale_ctx.weight"], P["scale_ctx.bias"] = uniform((1, d), d), uniform((1,), d)
        P["scale_cyc.weight"], P["scale_cyc.bias"] = uniform((H, L), L), uniform((H,), L)
        if init == "persistence":  # the persistence forecast's spread (softplus^-1), as orglinear_net does
            spread = max(float(init_spread or 0.05) - 1e-3, 1e-4)
            P["scale_ctx.weight"][:] = 0.0
            P["scale_ctx.bias"][:] = math.log(math.expm1(spread))
        if init in ("last", "persistence"):
            if init == "last":
                P["scale_ctx.bias"][:] = -3.0
            P["scale_cyc.weight"][:] = 0.0
            P["scale_cyc.bias"][:] = 0.0
        self.params = P
        self.adam: dict[str, Any] | None = None

    # -- forward / backward ------------------------------------------------------------------------------
    def _forward(self, x, hour, wday, hol, org) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        P = self.params
        trend = x @ self.A.T
        cyc = x - trend
        if self.calendar == "concat":
            cat = np.concatenate([P["hour.weight"][hour], P["wday.weight"][wday], P["hol.weight"][hol]], axis=-1)
            step = cat @ P["cal_proj.weight"].T + P["cal_proj.bias"]
        else:
            cat = None
            step = P["hour.weight"][hour] + P["wday.weight"][wday] + P["hol.weight"][hol]  # (B, H, d)
        g = P["org.weight"][org]
        v = g @ P["attn.v.weight"].T + P["attn.v.bias"]
        ctx = v @ P["attn.out_proj.weight"].T + P["attn.out_proj.bias"]  # the one-key attention
        z = step + ctx[:, None, :]
        mean = (trend @ P["trend_head.weight"].T + P["trend_head.bias"] + cyc @ P["cyc_head.weight"].T
                + P["cyc_head.bias"] + z @ P["ctx_mean.weight"][0] + P["ctx_mean.bias"][0])
        cin = np.abs(cyc) if self.scale_input == "abs" else cyc
        pre = z @ P["scale_ctx.weight"][0] + P["scale_ctx.bias"][0] + cin @ P["scale_cyc.weight"].T \
            + P["scale_cyc.bias"]
        scale = _softplus(pre) + 1e-3
        cache = {"trend": trend, "cyc": cyc, "cin": cin, "cat": cat, "g": g, "v": v, "z": z, "pre": pre,
                 "hour": hour, "wday": wday, "hol": hol, "org": org}
        return mean, scale, cache

    def forward(self, x, hour, wday, hol, org) -> tuple[np.ndarray, np.ndarray]:
        """(mean, scale), each (B, H), of scaled windows ``x`` (B, L) and step calendars (B, H)."""
        mean, scale, _ = self._forward(x, hour, wday, hol, org)
        return mean, scale

    def loss_and_grads(self, x, y, hour, wday, hol, org) -> tuple[float, dict[str, np.ndarray]]:
        """Eq. 8 (Gaussian NLL with var = scale^2, full, mean over all entries) and its gradient."""
        P = self.params
        mean, scale, c = self._forward(x, hour, wday, hol, org)
        var = np.maximum(scale ** 2, 1e-6)
        r = mean - y
        n = r.size
        loss = float(np.mean(0.5 * (np.log(var) + r ** 2 / var)) + 0.5 * LOG_2PI)
        dmean = r / var / n
        dscale = 0.5 * (1.0 / var - r ** 2 / var ** 2) / n * 2.0 * scale
        dpre = dscale * _sigmoid(c["pre"])
        G: dict[str, np.ndarray] = {}
        G["trend_head.weight"], G["trend_head.bias"] = dmean.T @ c["trend"], dmean.sum(0)
        G["cyc_head.weight"], G["cyc_head.bias"] = dmean.T @ c["cyc"], dmean.sum(0)
        z = c["z"]
        G["ctx_mean.weight"] = np.einsum("bh,bhd->d", dmean, z)[None, :]
        G["ctx_mean.bias"] = np.array([dmean.sum()])
        G["scale_ctx.weight"] = np.einsum("bh,bhd->d", dpre, z)[None, :]
        G["scale_ctx.bias"] = np.array([dpre.sum()])
        G["scale_cyc.weight"], G["scale_cyc.bias"] = dpre.T @ c["cin"], dpre.sum(0)
        dz = dmean[..., None] * P["ctx_mean.weight"][0] + dpre[..., None] * P["scale_ctx.weight"][0]
        dctx = dz.sum(axis=1)
        G["attn.out_proj.weight"], G["attn.out_proj.bias"] = dctx.T @ c["v"], dctx.sum(0)
        dv = dctx @ P["attn.out_proj.weight"]
        G["attn.v.weight"], G["attn.v.bias"] = dv.T @ c["g"], dv.sum(0)
        G["org.weight"] = _scatter(c["org"], dv @ P["attn.v.weight"], P["org.weight"].shape)
        d = self.d
        if self.calendar == "concat":
            flat = dz.reshape(-1, d)
            G["cal_proj.weight"] = flat.T @ c["cat"].reshape(-1, 3 * d)
            G["cal_proj.bias"] = flat.sum(0)
            dcat = dz @ P["cal_proj.weight"]
            parts = (dcat[..., :d], dcat[..., d: 2 * d], dcat[..., 2 * d:])
        else:
            parts = (dz, dz, dz)
        for name, idx, part in zip(("hour", "wday", "hol"), (c["hour"], c["wday"], c["hol"]), parts):
            G[f"{name}.weight"] = _scatter(idx.ravel(), part.reshape(-1, d), P[f"{name}.weight"].shape)
        return loss, G

    def adam_step(self, grads: dict[str, np.ndarray], lr: float, b1: float = 0.9, b2: float = 0.999,
                  eps: float = 1e-8) -> None:
        """torch.optim.Adam's update (``orglinear_net._adam_step``), moments kept across warm starts."""
        if self.adam is None:
            self.adam = {"t": 0, "m": {k: np.zeros_like(v) for k, v in self.params.items()},
                         "v": {k: np.zeros_like(v) for k, v in self.params.items()}}
        st = self.adam
        st["t"] += 1
        t = st["t"]
        for k, g in grads.items():
            m, v = st["m"][k], st["v"][k]
            m *= b1
            m += (1 - b1) * g
            v *= b2
            v += (1 - b2) * g * g
            denom = np.sqrt(v / (1 - b2 ** t)) + eps
            self.params[k] -= lr / (1 - b1 ** t) * m / denom

    def train_epochs(self, arrays: tuple[np.ndarray, ...], epochs: int, batch_size: int, lr: float,
                     seed: int) -> None:
        """Shuffled mini-batch epochs (seeded by ``seed``) of Eq. 8 with Adam, as ``OrgLinear._torch_epochs``."""
        x, y, h, w, o, org = arrays
        n = len(x)
        rng = np.random.default_rng(seed)
        for _ in range(epochs):
            perm = rng.permutation(n)
            for i in range(0, n, batch_size):
                idx = perm[i: i + batch_size]
                _, grads = self.loss_and_grads(x[idx], y[idx], h[idx], w[idx], o[idx], org[idx])
                self.adam_step(grads, lr)


def _scatter(index: np.ndarray, rows: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """The embedding gradient: ``rows`` summed into the table rows they were read from."""
    out = np.zeros(shape)
    np.add.at(out, index, rows)
    return out


def from_torch(net: Any, n_orgs: int) -> NumpyOrgLinearNet:
    """A numpy copy of a torch ``OrgLinearNet`` without attributes (the same weights), for the tests."""
    sd = {k: v.detach().double().numpy().copy() for k, v in net.state_dict().items()}
    L = sd["trend_head.weight"].shape[1]
    H, d = sd["trend_head.weight"].shape[0], sd["org.weight"].shape[1]
    out = NumpyOrgLinearNet(L, H, n_orgs, d, net.kernel, net.calendar, net.scale_input)
    P = out.params
    for k in P:
        if k.startswith("attn.v."):
            P[k] = sd[f"attn.in_proj_{k.rsplit('.', 1)[1]}"][2 * d:].copy()
        else:
            P[k] = sd[k]
    return out
