"""What training prints and draws (issue 9 items 9, 10): quiet by default, metrics with units and no raw
MSE, `schedcast models` as a table without importing mlflow, labelled plots with class names."""
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.test_mlflow import empty_store_db  # noqa: F401 - fixture

ROOT = Path(__file__).resolve().parents[1]


def _run(args, cwd, uri, timeout=600):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
    env.update(MLFLOW_TRACKING_URI=uri, OMP_NUM_THREADS="1", MPLBACKEND="Agg", PYTHONPATH=str(ROOT))
    env.pop("PYTHONWARNINGS", None)
    return subprocess.run([sys.executable, "-m", "pipelines.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


@pytest.mark.slow
def test_training_is_quiet_by_default_and_the_models_table_is_fast(tmp_path, empty_store_db, shared_data):
    import shutil

    shutil.copy(empty_store_db, tmp_path / "mlflow.db")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    # what EBM training prints is under test, not the model: at most 100 boosting rounds instead of interpret's
    # 50,000 with early stopping (7.3 s -> 0.5 s of CPU for the fit)
    r = _run(["train", "duration", "--synthetic", "demo", "--jobs", "800", "--test-days", "0.2",
              "--algo", "ebm", "--param", "max_rounds=100", "--allow-worse-than-baseline"], tmp_path, uri)
    assert r.returncode == 0, r.stderr
    assert r.stderr.strip() == "", r.stderr  # no MLflow type-hint warning, no INFO lines, no ANSI codes
    assert "mse" not in r.stdout.split() and "log-s" in r.stdout
    # Lightning's banner and tips stay silent too (OrgLinear is a Lightning module).
    r = _run(["train", "demand", "--data-dir", str(shared_data), "--freq", "1h", "--param", "max_epochs=1",
              "--allow-worse-than-baseline"], tmp_path, uri)
    assert r.returncode == 0, r.stderr
    assert r.stderr.strip() == "", r.stderr
    assert "GPU available" not in r.stdout and "Tip" not in r.stdout
    r = _run(["train", "duration", "--synthetic", "demo", "--jobs", "800", "--test-days", "0.2", "--verbose",
              "--param", "n_estimators=5"], tmp_path, uri)
    assert r.returncode == 0 and "mlflow" in r.stderr.lower()  # --verbose shows what was hidden

    body = ("import sys, time; t0 = time.perf_counter(); from pipelines.cli import main; main(['models']); "
            "print('mlflow imported:', 'mlflow' in sys.modules); print(f'seconds: {time.perf_counter() - t0:.3f}')")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
    env.update(MLFLOW_TRACKING_URI=uri, PYTHONPATH=str(ROOT))
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", body], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=120).stdout
    wall = time.perf_counter() - t0
    lines = out.splitlines()
    assert lines[0].split()[:7] == ["model", "version", "aliases", "algorithm", "primary", "data", "created"]
    demand = next(ln for ln in lines if ln.startswith("demand"))
    assert "champion" in demand and "orglinear" in demand and "ql_0.9" in demand and "baseline" in demand
    duration = next(ln for ln in lines if ln.startswith("duration ") and "champion" in ln)
    assert "ebm" in duration and "synthetic:demo" in duration and "log_mae" in duration
    assert "mlflow imported: False" in out
    print(f"schedcast models: {wall:.2f} s wall ({lines[-1]})")


def test_metrics_table_has_units_and_explains_nan():
    from pipelines.modelops import metrics_table
    from pipelines.train import TrainResult

    m = {"mae": 4134.0, "mse": 1.5e9, "rmse": 12409.0, "log_mae": 1.8, "spearman": 0.19, "r2": -0.1,
         "mape": 3.0, "mape_share": 1.0}
    base = {"median": {**m, "spearman": float("nan")}}
    text = metrics_table(TrainResult("duration", "lightgbm", None, m, {}, {}, pd.DataFrame(), baselines=base))
    assert "mse" not in text.split() and "mape_share" not in text
    assert "log_mae (primary)" in text and "log-s" in text and " s " in text
    assert "n/a*" in text and "constant prediction has no rank correlation" in text


def test_plots_name_their_axes_and_the_packing_classes():
    from sklearn.tree import DecisionTreeClassifier

    from evaluation import plots
    from models.tabular import make_duration_model

    rng = np.random.default_rng(0)
    X = pd.DataFrame({"num_gpus": rng.choice([1.0, 2.0, 8.0], 400), "hour": rng.integers(0, 24, 400).astype(float)})
    y = np.exp(5 + X["num_gpus"] / 4 + rng.normal(0, 0.3, 400)).to_numpy()
    model = make_duration_model("ebm", fast=True).fit(X, y)
    figs = {"imp": plots.importance_figure(model.importances(), "t", plots.importance_measure(model)),
            "shape": plots.shape_figure(model, "num_gpus", "s", "GPUs"),
            "local": plots.local_explanation_figure(model, X.head(1), "one"),
            "pred": plots.prediction_figure(y, model.predict(X), "p")}
    for name, fig in figs.items():
        ax = fig.axes[0]
        assert ax.get_xlabel() and ax.get_ylabel(), name
    assert "log(1 + y), y in s" in figs["shape"].axes[0].get_ylabel()
    assert figs["shape"].axes[0].get_xlabel() == "num_gpus (GPUs)"
    assert "mean |contribution|" in figs["imp"].axes[0].get_xlabel()
    feats = ["gpu_util", "gmem_util", "gmem", "amp"]
    Xp = pd.DataFrame(rng.random((90, 4)), columns=feats)
    yp = np.repeat([0, 1, 2], 30)
    tree = DecisionTreeClassifier(max_depth=2, random_state=0).fit(Xp, yp)
    fig = plots.tree_figure(tree, feats, tree.classes_)
    texts = " ".join(t.get_text() for t in fig.axes[0].texts)
    assert "class = tiny" in texts or "class = medium" in texts or "class = jumbo" in texts
    plots.close({**figs, "tree": fig})
