"""OrgLinear's numpy engine (models.orglinear_np, the in-replay default): the same network, loss, gradients
and Adam update as the torch network, and a GFS replay that never imports torch."""
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

torch = pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[1]


def _batch(L, H, O, B=40, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.random((B, L)), rng.random((B, H)), rng.integers(0, 24, (B, H)), rng.integers(0, 7, (B, H)),
            rng.integers(0, 2, (B, H)), rng.integers(0, O, B))


@pytest.mark.parametrize("calendar,scale_input,init", [("concat", "cyc", "persistence"), ("sum", "abs", "mean"),
                                                        ("concat", "abs", "last")])
def test_numpy_loss_and_gradients_equal_torch(calendar, scale_input, init):
    from models.orglinear_net import build_orglinear_net
    from models.orglinear_np import from_torch

    torch.manual_seed(1)
    L, H, O, d = 48, 3, 5, 16
    net = build_orglinear_net(L, H, O, 0, d, 5, calendar, scale_input, init, 0.2).double()
    with torch.no_grad():  # away from the zero initialisations, so that every gradient path carries a value
        for p in net.parameters():
            p.add_(0.05 * torch.randn_like(p))
    npn = from_torch(net, O)
    x, y, h, w, hol, org = _batch(L, H, O)
    T = torch.from_numpy
    mean, scale = net(T(x), T(h), T(w), T(hol), T(org), torch.zeros((len(x), 0), dtype=torch.float64))
    loss = torch.nn.GaussianNLLLoss(full=True)(mean, T(y), scale ** 2)
    loss.backward()
    got, grads = npn.loss_and_grads(x, y, h, w, hol, org)
    assert got == pytest.approx(float(loss.detach()), rel=1e-12)
    for name, p in net.named_parameters():
        if name.startswith("attn.in_proj"):  # the one-key attention reads only the value rows
            assert np.allclose(p.grad[:2 * d].numpy(), 0.0)
            ref, mine = p.grad[2 * d:].numpy(), grads["attn.v." + name.rsplit("_", 1)[1]]
        else:
            ref, mine = p.grad.numpy(), grads[name]
        assert np.allclose(ref, mine, rtol=1e-9, atol=1e-12), name


def test_numpy_adam_step_equals_torch_adam_step():
    from models.orglinear_net import _adam_step, build_orglinear_net
    from models.orglinear_np import from_torch

    torch.manual_seed(2)
    net = build_orglinear_net(24, 2, 3, 0, 8, 5, "concat", "cyc", "mean").double()
    npn = from_torch(net, 3)
    params = list(net.parameters())
    ms, vs = [torch.zeros_like(p) for p in params], [torch.zeros_like(p) for p in params]
    for t in (1, 2, 3):  # three steps: the moments carry over
        x, y, h, w, hol, org = _batch(24, 2, 3, seed=t)
        for p in params:
            p.grad = None
        mean, scale = net(*(torch.from_numpy(a) for a in (x, h, w, hol, org)), torch.zeros((len(x), 0)).double())
        torch.nn.GaussianNLLLoss(full=True)(mean, torch.from_numpy(y), scale ** 2).backward()
        _adam_step(params, ms, vs, t, 3e-3, 0.9, 0.999, 1e-8)
        _, grads = npn.loss_and_grads(x, y, h, w, hol, org)
        npn.adam_step(grads, 3e-3)
    again = from_torch(net, 3)
    for k, v in again.params.items():
        assert np.allclose(v, npn.params[k], rtol=1e-9, atol=1e-12), k


def test_moving_average_matrix_is_the_reflect_padded_average():
    from models.orglinear_np import moving_average_matrix
    from torch.nn import functional as F

    x = np.random.default_rng(3).random((4, 11))
    for k in (3, 4, 5):
        pad = (k - 1) // 2
        ref = F.avg_pool1d(F.pad(torch.from_numpy(x).unsqueeze(1), (pad, k - 1 - pad), mode="reflect"), k,
                           stride=1).squeeze(1).numpy()
        assert np.allclose(x @ moving_average_matrix(11, k).T, ref)


def test_numpy_engine_fits_forecasts_and_warm_starts():
    from models.forecast import OrgLinear

    idx = pd.date_range("2020-05-01", periods=120, freq="h")
    rng = np.random.default_rng(0)
    demand = pd.DataFrame({"a": 10 + 5 * np.sin(np.arange(120) * 2 * np.pi / 24) + rng.normal(0, 0.5, 120),
                           "b": 3 + rng.normal(0, 0.2, 120).cumsum()}, index=idx).clip(lower=0)
    m = OrgLinear(lookback=24, horizon=2, kernel=5, max_epochs=3, holiday_country=None, engine="numpy",
                  init="persistence", norm="max").fit(demand)
    before = {k: v.copy() for k, v in m.net_.params.items()}
    m.update(demand.iloc[24:], epochs=1)
    assert any(not np.allclose(before[k], v) for k, v in m.net_.params.items())  # warm start trained further
    fc = m.forecast(demand, None, [idx[100]])
    mean, scale = m.forecast_window(demand.iloc[76:100].to_numpy(), steps=idx[100:102])
    assert np.allclose(fc.mean[0], mean) and np.allclose(fc.scale[0], scale) and np.all(scale > 0)
    with pytest.raises(ValueError):
        OrgLinear(engine="numpy", val_steps=10).fit(demand)
    with pytest.raises(ValueError):
        OrgLinear(engine="jax")


def test_in_replay_orglinear_never_imports_torch():
    # The in-replay estimator (engine="numpy") trains, warm-starts and forecasts without torch: its import
    # alone was ~2 s of CPU, a third of a gfs-medium replay. The torch engine stays available by name.
    code = """
import sys
import numpy as np
from sim.policies.gfs.sqa import ModelEstimator
rng = np.random.default_rng(0)
hist = np.maximum(10 + 5 * np.sin(np.arange(200) * 2 * np.pi / 24)[:, None] + rng.normal(0, 1, (200, 2)), 0)
est = ModelEstimator("orglinear", ["a", "b"], 1)
for t in (96, 120, 144):
    est.fit(hist[:t])
mu, sig = est.predict(hist[:150], 150, 1)
assert est.fits == 3 and est.model_forecasts == 1 and np.all(sig > 0), (est.fits, sig)
print("torch" in sys.modules)
"""
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60,
                         env={"PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "False"


def test_numpy_engine_is_deterministic_and_pickles():
    import pickle

    from models.forecast import OrgLinear

    idx = pd.date_range("2020-05-01", periods=96, freq="h")
    demand = pd.DataFrame({"a": 5 + 3 * np.sin(np.arange(96) * 2 * np.pi / 24)}, index=idx)
    make = lambda: OrgLinear(lookback=24, horizon=1, kernel=5, max_epochs=2, holiday_country=None,  # noqa: E731
                             engine="numpy", init="persistence", norm="max")
    a, b = make().fit(demand), make().fit(demand)
    assert all(np.array_equal(a.net_.params[k], b.net_.params[k]) for k in a.net_.params)
    c = pickle.loads(pickle.dumps(a))
    w = demand.to_numpy()[-24:]
    assert np.array_equal(c.forecast_window(w, steps=idx[-1:])[0], a.forecast_window(w, steps=idx[-1:])[0])
