"""OrgLinear's network (GFS, ASPLOS '26, §3.2, Eq. 3-7) and the hand-written Adam step of its plain-torch
training loop; models.forecast.OrgLinear fits it and re-exports both names.

Kept apart from models.forecast so that the estimators' module stays readable: this is torch code only
(imported lazily, inside the functions: a replay of a heuristic policy never imports torch)."""
from __future__ import annotations

import math


def build_orglinear_net(lookback: int, horizon: int, n_orgs: int, n_attrs: int, d: int = 16, kernel: int = 25,
                        calendar: str = "concat", scale_input: str = "cyc", init: str = "mean",
                        init_spread: float | None = None):
    import torch
    from torch import nn
    from torch.nn import functional as F

    class OrgLinearNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.kernel = kernel
            self.trend_head = nn.Linear(lookback, horizon)  # Eq. 5
            self.cyc_head = nn.Linear(lookback, horizon)  # Eq. 6
            self.hour, self.wday, self.hol = nn.Embedding(24, d), nn.Embedding(7, d), nn.Embedding(2, d)
            # Eq. 3: the step's calendar embedding is the concatenation [E_hour; E_weekday; E_holiday], projected
            # to the model width (``calendar="sum"``: the old reading, their sum).
            self.calendar = calendar
            self.cal_proj = nn.Linear(3 * d, d) if calendar == "concat" else None
            self.scale_input = scale_input
            self.org = nn.Embedding(n_orgs, d)
            self.attr = nn.ModuleList([nn.Linear(1, d) for _ in range(n_attrs)])
            self.attn = nn.MultiheadAttention(d, num_heads=1, batch_first=True)
            self.ctx_mean = nn.Linear(d, 1)
            self.scale_ctx = nn.Linear(d, 1)  # Eq. 7 (with the cyclical energy below)
            self.scale_cyc = nn.Linear(lookback, horizon)
            # Start as a moving average of the window (DLinear's initialisation) with a neutral context:
            # training then only learns departures from it, which makes runs stable across seeds.
            with torch.no_grad():
                for head in (self.trend_head, self.cyc_head):
                    if init in ("last", "persistence"):  # every step starts as the window's last value (trend + cyc = x)
                        head.weight.zero_()
                        head.weight[:, -1] = 1.0
                    else:
                        head.weight.fill_(1.0 / lookback)
                    head.bias.zero_()
                self.ctx_mean.weight.zero_()
                self.ctx_mean.bias.zero_()
                if init == "persistence":  # and the persistence forecast's spread (``init_spread``, in scaled
                    # units: the training windows' RMS change over the horizon), so the untrained net already is
                    # the persistence forecast it replaces and training learns departures from it
                    spread = max(float(init_spread or 0.05) - 1e-3, 1e-4)
                    self.scale_ctx.weight.zero_()
                    self.scale_ctx.bias.fill_(math.log(math.expm1(spread)))  # softplus^-1
                    self.scale_cyc.weight.zero_()
                    self.scale_cyc.bias.zero_()
                if init == "last":  # and a small starting spread (softplus(-3) = 5 % of the org's scale): the
                    # NLL widens it where the data asks; from softplus(0) = 69 % a short in-replay training left
                    # sigma four times the persistence spread on the GFS workload
                    self.scale_ctx.bias.fill_(-3.0)
                    self.scale_cyc.weight.zero_()
                    self.scale_cyc.bias.zero_()

        def one_token_attention(self, tokens):
            """Attention over a single key (no attributes: the organisation token only). Its softmax weight
            is exactly 1, so every step's context is out_proj(v_proj(token)): the same value as
            ``self.attn`` (tests/test_gfs_orglinear.py checks it, gradients included) at a fraction of the
            operations, which dominate a small in-replay training step."""
            d = tokens.shape[-1]
            v = F.linear(tokens[:, 0], self.attn.in_proj_weight[2 * d:], self.attn.in_proj_bias[2 * d:])
            return self.attn.out_proj(v).unsqueeze(1)  # (B, 1, d), broadcast over the H steps

        def decompose(self, x):
            pad = (self.kernel - 1) // 2
            padded = F.pad(x.unsqueeze(1), (pad, self.kernel - 1 - pad), mode="reflect")
            trend = F.avg_pool1d(padded, self.kernel, stride=1).squeeze(1)
            return trend, x - trend

        def forward(self, x, hour, wday, hol, org, attrs):
            trend, cyc = self.decompose(x)
            if self.cal_proj is not None:
                step = self.cal_proj(torch.cat([self.hour(hour), self.wday(wday), self.hol(hol)], dim=-1))
            else:
                step = self.hour(hour) + self.wday(wday) + self.hol(hol)  # (B, H, d)
            tokens = [self.org(org).unsqueeze(1)] + [lin(attrs[:, i: i + 1]).unsqueeze(1)
                                                     for i, lin in enumerate(self.attr)]
            tokens = torch.cat(tokens, dim=1)  # (B, 1 + A, d)
            if tokens.shape[1] == 1:
                ctx = self.one_token_attention(tokens)
            else:
                ctx, _ = self.attn(step, tokens, tokens)  # each step attends over the organisation's attributes
            z = step + ctx
            mean = self.trend_head(trend) + self.cyc_head(cyc) + self.ctx_mean(z).squeeze(-1)
            # Eq. 7 as printed: a linear map of the cyclical component itself (``scale_input="abs"``: of |cyc|).
            cyc_in = cyc.abs() if self.scale_input == "abs" else cyc
            scale = F.softplus(self.scale_ctx(z).squeeze(-1) + self.scale_cyc(cyc_in)) + 1e-3
            return mean, scale

    return OrgLinearNet()


def _adam_step(params, ms, vs, t: int, lr: float, b1: float, b2: float, eps: float) -> None:
    """One Adam update of ``params`` in place (the update of torch.optim.Adam, by hand: torch.optim's first use
    imports torch._dynamo, seconds of start-up for a replay that trains a few hundred steps). The parameters
    are updated together with torch's ``_foreach`` kernels: six calls per step instead of five per tensor
    (the per-call overhead, not the arithmetic, is what a small in-replay step costs); the same arithmetic,
    tensor by tensor, as the loop it replaced (a test checks the two agree)."""
    import torch

    live = [(p, m, v) for p, m, v in zip(params, ms, vs) if p.grad is not None]
    if not live:
        return
    ps, m_, v_ = (list(x) for x in zip(*live))
    grads = [p.grad for p in ps]
    with torch.no_grad():
        torch._foreach_mul_(m_, b1)
        torch._foreach_add_(m_, grads, alpha=1 - b1)
        torch._foreach_mul_(v_, b2)
        torch._foreach_addcmul_(v_, grads, grads, value=1 - b2)
        denom = torch._foreach_div(v_, 1 - b2 ** t)
        torch._foreach_sqrt_(denom)
        torch._foreach_add_(denom, eps)
        torch._foreach_addcdiv_(ps, m_, denom, value=-lr / (1 - b1 ** t))
