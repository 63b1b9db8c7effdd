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


ROOT = Path(__file__).resolve().parents[1]


#: One real process runs the three training commands one after the other, each command's stdout and stderr
#: captured at the file-descriptor level (what a terminal would show of it, library writes to fd 2 included);
#: the process prints the exit codes. One interpreter pays the imports (MLflow, pandas, the estimators) once
#: instead of three times (~10 s of the test's CPU): quietness is per command (``modelops.quiet`` restores the
#: logging levels and warning filters it changed), and anything printed outside the commands (imports,
#: interpreter exit) must be empty too.
CHILD = """
import json, os, sys
from pipelines.cli import main
folder, commands = sys.argv[1], json.loads(sys.argv[2])
codes = []
for i, argv in enumerate(commands):
    sys.stdout.flush(); sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(os.path.join(folder, f"{i}.out"), "wb") as out, open(os.path.join(folder, f"{i}.err"), "wb") as err:
        os.dup2(out.fileno(), 1); os.dup2(err.fileno(), 2)
        try:
            codes.append(main(argv))
        finally:
            sys.stdout.flush(); sys.stderr.flush()
            os.dup2(saved[0], 1); os.dup2(saved[1], 2)
print(json.dumps(codes))
"""


def _run_commands(commands: list[list[str]], cwd: Path, uri: str, timeout: float = 600) -> tuple[list, str]:
    """Run the schedcast commands in one fresh process; returns [(code, stdout, stderr)] per command and
    what the process printed to stderr outside them."""
    import json

    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
    env.update(MLFLOW_TRACKING_URI=uri, OMP_NUM_THREADS="1", MPLBACKEND="Agg", PYTHONPATH=str(ROOT))
    env.pop("PYTHONWARNINGS", None)
    folder = cwd / "captured"
    folder.mkdir()
    proc = subprocess.run([sys.executable, "-c", CHILD, str(folder), json.dumps(commands)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr
    codes = json.loads(proc.stdout.strip().splitlines()[-1])
    return [(code, (folder / f"{i}.out").read_text(), (folder / f"{i}.err").read_text())
            for i, code in enumerate(codes)], proc.stderr


@pytest.mark.slow
def test_training_is_quiet_by_default_and_the_models_table_is_fast(tmp_path, empty_store_db, shared_data):
    import shutil

    shutil.copy(empty_store_db, tmp_path / "mlflow.db")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    # what EBM training prints is under test, not the model: at most 100 boosting rounds instead of interpret's
    # 50,000 with early stopping (7.3 s -> 0.5 s of CPU for the fit)
    ebm = ["train", "duration", "--synthetic", "demo", "--jobs", "800", "--test-days", "0.2", "--algo", "ebm",
           "--param", "max_rounds=100", "--allow-worse-than-baseline"]
    demand = ["train", "demand", "--data-dir", str(shared_data), "--freq", "1h", "--param", "max_epochs=1",
              "--allow-worse-than-baseline"]
    # last: a command with --verbose must not make the quiet ones after it pass (warnings shown once)
    verbose = ["train", "duration", "--synthetic", "demo", "--jobs", "800", "--test-days", "0.2", "--verbose",
               "--param", "n_estimators=5"]
    runs, outside = _run_commands([ebm, demand, verbose], tmp_path, uri)
    assert len(runs) == 3 and outside.strip() == "", outside  # nothing on import or at exit either
    (code, out, err) = runs[0]
    assert code == 0, err
    assert err.strip() == "", err  # no MLflow type-hint warning, no INFO lines, no ANSI codes
    assert "mse" not in out.split() and "log-s" in out
    # Lightning's banner and tips stay silent too (OrgLinear is a Lightning module).
    (code, out, err) = runs[1]
    assert code == 0, err
    assert err.strip() == "", err
    assert "GPU available" not in out and "Tip" not in out
    (code, out, err) = runs[2]
    assert code == 0 and "mlflow" in err.lower()  # --verbose shows what was hidden

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


def test_model_plots_stay_out_of_pyplots_registry(tmp_path):
    """A long-lived process (scheduled retraining, the suite) must not pile up figures: the model plots are
    plain Figures that nothing global keeps, and they still save as PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from evaluation import plots

    before = plt.get_fignums()
    figs = [plots.prediction_figure(np.arange(1.0, 50.0), np.arange(1.0, 50.0) * 1.1, f"p{i}") for i in range(25)]
    assert plt.get_fignums() == before
    figs[0].savefig(tmp_path / "p.png")
    assert (tmp_path / "p.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    plots.close(dict(enumerate(figs)))
