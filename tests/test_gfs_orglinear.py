"""OrgLinear as GFS prints it (Eq. 3 concatenated calendar embeddings, Eq. 7 scale on the cyclical part) and
OrgLinear driving the spot quota inside a replay (trained causally, warm-started)."""
import math

import numpy as np
import pandas as pd
import pytest

from sim import simulate
from tests.helpers import workload


def _net(**kw):
    from models.forecast import build_orglinear_net

    return build_orglinear_net(lookback=3, horizon=1, n_orgs=1, n_attrs=0, d=2, kernel=3, **kw)


def test_eq7_scale_reads_the_cyclical_component_as_printed():
    import torch

    # x = [0, 3, 0], kernel 3 with reflection padding [3, 0, 3, 0, 3]: trend [2, 1, 2], cyclical [-2, 2, -2].
    # With the context's scale term zeroed and the scale head summing the window: Eq. 7 (cyc) softplus(-2),
    # the old reading (|cyc|) softplus(6).
    x = torch.tensor([[0.0, 3.0, 0.0]])
    h = w = o = torch.zeros((1, 1), dtype=torch.long)
    org = torch.zeros(1, dtype=torch.long)
    attrs = torch.zeros((1, 0))
    for mode, expected in (("cyc", math.log1p(math.exp(-2.0))), ("abs", math.log1p(math.exp(6.0)))):
        net = _net(scale_input=mode)
        trend, cyc = net.decompose(x)
        assert trend.tolist() == [pytest.approx([2.0, 1.0, 2.0])] and cyc.tolist() == [pytest.approx([-2.0, 2.0, -2.0])]
        with torch.no_grad():
            net.scale_ctx.weight.zero_()
            net.scale_ctx.bias.zero_()
            net.scale_cyc.weight.fill_(1.0)
            net.scale_cyc.bias.zero_()
            _, scale = net(x, h, w, o, org, attrs)
        assert float(scale[0, 0]) == pytest.approx(expected + 1e-3, rel=1e-5)


def test_eq3_concatenates_the_calendar_embeddings():
    import torch

    net = _net(calendar="concat")
    assert net.cal_proj.in_features == 6 and net.cal_proj.out_features == 2
    with torch.no_grad():
        net.hour.weight.copy_(torch.arange(48.0).reshape(24, 2))
        net.wday.weight.copy_(100 + torch.arange(14.0).reshape(7, 2))
        net.hol.weight.copy_(1000 + torch.arange(4.0).reshape(2, 2))
        # A projection that reads the concatenation's first (hour) and fourth (weekday) coordinates apart:
        # a sum of the three embeddings could not tell hour 1 / weekday 0 from hour 0 / weekday 1 this way.
        net.cal_proj.weight.zero_()
        net.cal_proj.bias.zero_()
        net.cal_proj.weight[0, 0] = 1.0
        net.cal_proj.weight[1, 3] = 1.0
    hour, wday, hol = torch.tensor([[5]]), torch.tensor([[2]]), torch.tensor([[1]])
    step = net.cal_proj(torch.cat([net.hour(hour), net.wday(wday), net.hol(hol)], dim=-1))
    assert step.tolist() == [[[10.0, 105.0]]]  # hour 5 -> (10, 11); weekday 2 -> (104, 105)
    assert _net(calendar="sum").cal_proj is None
    with pytest.raises(ValueError):
        from models.forecast import OrgLinear

        OrgLinear(calendar="mean")


def test_orglinear_warm_start_continues_the_same_network():
    from models.forecast import OrgLinear

    idx = pd.date_range("2020-05-01", periods=120, freq="h")
    rng = np.random.default_rng(0)
    demand = pd.DataFrame({"a": 10 + 5 * np.sin(np.arange(120) * 2 * np.pi / 24) + rng.normal(0, 0.5, 120),
                           "b": 3 + rng.normal(0, 0.2, 120).cumsum()}, index=idx).clip(lower=0)
    m = OrgLinear(lookback=24, horizon=2, kernel=5, max_epochs=3, holiday_country=None, engine="torch").fit(demand)
    net = m.net_
    before = [p.detach().clone() for p in net.parameters()]
    m.update(demand.iloc[24:], epochs=1)
    assert m.net_ is net  # warm start: the same network, trained further
    assert any(not np.allclose(a.numpy(), b.detach().numpy()) for a, b in zip(before, net.parameters()))
    fc = m.forecast(demand, None, [idx[100]])
    assert fc.mean.shape == (1, 2, 2) and np.all(fc.scale > 0)


def test_orglinear_drives_the_quota_inside_the_replay():
    # One 16-GPU node pair; two organisations with a daily HP cycle for 5 days; a few spot tasks late on.
    # OrgLinear needs lookback (48) + H (1) + 24 h of hourly maxima: the daily retrain at 96 h fits it, at
    # 120 h it warm-starts; from its first fit the quota's forecasts are the model's.
    w = _daily_cycle_workload()
    r = simulate(w, "gfs", check_invariants=True)
    st = r.policy_stats
    assert st["sqa_estimator"] == "orglinear"
    assert st["sqa_model_fits"] >= 1 and st["sqa_model_forecasts"] > 0
    persistence = simulate(w, "gfs:estimator=persistence")
    assert persistence.policy_stats["sqa_model_forecasts"] == 0
    log = {row[1]: row[3] for row in st["sqa_quota_log"]}  # t -> f
    plog = {row[1]: row[3] for row in persistence.policy_stats["sqa_quota_log"]}
    assert all(log[t] == pytest.approx(plog[t]) for t in log if t < 96 * 3600.0)  # before the first fit: the fallback
    assert any(abs(log[t] - plog[t]) > 1e-6 for t in log if t >= 96 * 3600.0)


def test_one_token_attention_equals_the_attention_module():
    # Without organisation attributes the attention has one key: its weight is 1 and the shortcut must give the
    # module's value and gradients.
    import torch

    from models.forecast import build_orglinear_net

    torch.manual_seed(0)
    net = build_orglinear_net(lookback=8, horizon=3, n_orgs=4, n_attrs=0, d=16, kernel=3)
    tokens = torch.randn(5, 1, 16, requires_grad=True)
    step = torch.randn(5, 3, 16, requires_grad=True)
    fast = net.one_token_attention(tokens).expand(5, 3, 16)
    slow, _ = net.attn(step, tokens, tokens)
    assert torch.allclose(fast, slow, atol=1e-6)
    gf = torch.autograd.grad(fast.sum(), [tokens, net.attn.in_proj_weight])
    gs = torch.autograd.grad(slow.sum(), [tokens, net.attn.in_proj_weight])
    assert all(torch.allclose(a, b, atol=1e-5) for a, b in zip(gf, gs))


def test_foreach_adam_is_the_per_tensor_update():
    import torch

    from models.forecast import _adam_step

    torch.manual_seed(0)
    ps = [torch.randn(3, 4), torch.randn(7)]
    ref = [p.clone() for p in ps]
    ms, vs = [torch.zeros_like(p) for p in ps], [torch.zeros_like(p) for p in ps]
    rm, rv = [torch.zeros_like(p) for p in ps], [torch.zeros_like(p) for p in ps]
    for t in range(1, 6):
        grads = [torch.randn_like(p) for p in ps]
        for p, g in zip(ps, grads):
            p.grad = g
        _adam_step(ps, ms, vs, t, 3e-3, 0.9, 0.999, 1e-8)
        for p, m, v, g in zip(ref, rm, rv, grads):  # the loop it replaced
            m.mul_(0.9).add_(g, alpha=0.1)
            v.mul_(0.999).addcmul_(g, g, value=0.001)
            p.addcdiv_(m, (v / (1 - 0.999 ** t)).sqrt_().add_(1e-8), value=-3e-3 / (1 - 0.9 ** t))
    assert all(torch.allclose(a, b, atol=1e-7) for a, b in zip(ps, ref))


def test_persistence_init_starts_as_the_persistence_forecast():
    from models.forecast import OrgLinear

    idx = pd.date_range("2020-05-01", periods=60, freq="h")
    rng = np.random.default_rng(1)
    demand = pd.DataFrame({"a": rng.integers(0, 9, 60), "b": rng.integers(0, 3, 60)}, index=idx).astype(float)
    m = OrgLinear(lookback=24, horizon=1, kernel=5, max_epochs=0, holiday_country=None, engine="torch",
                  init="persistence", norm="max").fit(demand)
    assert list(m.scale_) == [demand["a"].max(), max(1.0, demand["b"].max())]  # norm="max": the peak
    v = demand.to_numpy() / m.scale_
    rms = float(np.sqrt(np.mean((v[24:] - v[23:-1]) ** 2)))  # every window's target minus its last value
    fc = m.forecast(demand, None, [idx[40]])
    assert np.allclose(fc.mean[0, :, 0], demand.iloc[39].to_numpy(), atol=1e-5)
    assert np.allclose(fc.scale[0, :, 0] / m.scale_, rms, rtol=1e-4)
    with pytest.raises(ValueError):
        OrgLinear(norm="median")


def test_replay_calendar_is_the_timestamp_calendar():
    from models.forecast import _calendar
    from sim.policies.gfs.sqa import _calendar_of_hours

    hours = np.arange(0, 24 * 15, 7)
    idx = pd.Timestamp("2020-05-01") + pd.to_timedelta(hours, unit="h")
    for a, b in zip(_calendar_of_hours(hours), _calendar(pd.DatetimeIndex(idx), None)):
        assert np.array_equal(a, b)


def test_in_replay_orglinear_scales_by_the_peak_and_stays_bounded():
    # An organisation whose mean is under one GPU but whose peak is 20: with the mean as the scale (the old
    # reading, norm="mean") its inputs reach 40 and the warm starts diverged; the in-replay default divides by
    # the peak, and forecasts stay of the size of the history through daily warm starts.
    from sim.policies.gfs.sqa import ModelEstimator

    rng = np.random.default_rng(0)
    T = 24 * 9
    a = np.where(rng.random(T) < 0.03, 20.0, 0.0)
    b = 10 + 5 * np.sin(np.arange(T) * 2 * np.pi / 24) + rng.normal(0, 1, T)
    hist = np.stack([a, np.maximum(b, 0)], axis=1)
    est = ModelEstimator("orglinear", ["a", "b"], 1)
    for t in range(96, T + 1, 24):
        est.fit(hist[:t])
    assert est.fits >= 4 and est.model.norm == "max" and est.model.init == "persistence"
    assert est.model.scale_[0] == 20.0
    mu, sig = est.predict(hist, T, 1)
    assert np.all(mu <= 2 * hist.max(axis=0)[:, None] + 1) and np.all(sig < hist.max(axis=0)[:, None])


def _daily_cycle_workload():
    """The replay of test_orglinear_drives_the_quota_inside_the_replay (5 days, OrgLinear fits from 96 h)."""
    rows, orgs, cls = [], [], []
    for h in range(0, 5 * 24):
        for o, base in enumerate((4, 2)):
            rows.append((h * 3600.0 + 1.0 + o, 3500.0, base + (2 if 8 <= h % 24 < 20 else 0)))
            orgs.append(f"o{o}")
            cls.append("hp")
    for k in range(4):
        rows.append((100 * 3600.0 + 60.0 * k, 1800.0, 2))
        orgs.append("s")
        cls.append("spot")
    order = sorted(range(len(rows)), key=lambda i: rows[i][0])
    rows, orgs, cls = [rows[i] for i in order], [orgs[i] for i in order], [cls[i] for i in order]
    return workload(rows, nodes=2, gpus=8, org=orgs, job_class=cls,
                    checkpoint_interval=[3600.0 if c == "spot" else None for c in cls])


def test_reused_orglinear_fits_replay_identically(monkeypatch):
    """The fit cache (estimators.FIT_CACHE: GFS variants on one workload share the HP-only warm-up's fits) is
    a fast path: replays that reuse every fit equal the replays that train, job by job and quota by quota."""
    from sim.policies.gfs import estimators

    w = _daily_cycle_workload()

    def trace(r):
        return (list(r.first_start), list(r.wait), list(r.evictions or []), r.policy_stats["sqa_quota_log"])

    monkeypatch.setattr(estimators, "FIT_CACHE_ENABLED", False)
    trained = {p: simulate(w, p) for p in ("gfs", "gfs-d")}
    assert trained["gfs"].policy_stats["sqa_fit_cache_hits"] == 0
    monkeypatch.setattr(estimators, "FIT_CACHE_ENABLED", True)
    monkeypatch.setattr(estimators, "FIT_CACHE", {})
    cold = simulate(w, "gfs")  # trains and fills the cache
    warm = {p: simulate(w, p) for p in ("gfs", "gfs-d")}  # the same HP history: every fit reused
    fits = trained["gfs"].policy_stats["sqa_model_fits"]
    assert fits >= 2 and cold.policy_stats["sqa_fit_cache_hits"] == 0
    for p, r in warm.items():
        assert r.policy_stats["sqa_fit_cache_hits"] == r.policy_stats["sqa_model_fits"] == fits, p
        assert trace(r) == trace(trained[p]), p
    assert trace(cold) == trace(trained["gfs"])
