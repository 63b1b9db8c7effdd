"""Issue 22 items 5, 6, 8, 9, 13, 14: what `simulate` prints and what it writes to MLflow.

- 5: model versions keep the identifying tags only; simulation runs have "Created by" / source; the parent
  run logs the comparison table; the retrain decision run logs its parameters; size groups are clean names.
- 6: a models:/ predictor without --track / a tracking URI writes no MLflow run.
- 8: the load reached over the submission window beside the offered load; a warning when 5 jobs dominate.
- 9: a --predictor no policy uses is named in one line.
- 13: one unit rule (evaluation.catalog) for files and MLflow metrics; lost_work_total gets its _s.
- 14: the timing line adds up; long quiet steps get a spinner in a terminal.
"""
from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest

from pipelines.cli import main


def test_catalog_units_and_names():
    from evaluation.catalog import CATALOG, file_name, group_label, higher_is_better
    from evaluation.report import unit_name

    assert file_name("lost_work_total") == unit_name("lost_work_total") == "lost_work_total_s"
    assert file_name("jct_p99.9") == "jct_p99.9_s" and file_name("gpu_utilisation") == "gpu_utilisation_frac"
    assert file_name("size/le8/wait_mean") == "size/le8/wait_mean_s"
    assert file_name("cell_wall_s") == "cell_wall_s" and file_name("decision_p99_ms") == "decision_p99_ms"
    assert file_name("preemptions") == "preemptions" and file_name("sim_seconds") == "sim_seconds"
    assert higher_is_better("gpu_utilisation") and not higher_is_better("jct_mean")
    assert group_label("<=8 GPUs") == "le8" and group_label(">8 GPUs") == "gt8" and group_label("spot") == "spot"
    # every summary key evaluation.metrics produces is in the catalog (so it has a unit and a direction)
    from evaluation.metrics import summarize

    jobs = pd.DataFrame({"jct": [1.0], "wait": [0.0], "futile": [0.0], "preemptions": [0], "load": [0.0],
                         "end": [1.0], "submit": [0.0], "slowdown": [1.0], "status": ["done"], "failures": [0],
                         "lost_work": [0.0]})
    assert set(summarize(jobs)) <= set(CATALOG)
    from pipelines.experiment import _BASE_METRICS  # what a spec may list / rank by

    assert _BASE_METRICS <= set(CATALOG)


def test_size_groups_get_clean_metric_names():
    from pipelines.tracking import summary_metrics

    by_size = pd.DataFrame({"size": ["<=8 GPUs", ">8 GPUs"], "jobs": [3, 1], "jct_mean": [5.0, 9.0]})
    m = summary_metrics({"jobs": 4}, {"by_size": by_size})
    assert m["size/le8/jct_mean"] == 5.0 and m["size/gt8/jobs"] == 1.0
    assert not any("__" in k or "<" in k for k in m)


def test_load_reached_and_top_share():
    from evaluation.metrics import top_share, utilisation_between

    class Cluster:
        gpus = 10

    class Result:
        alloc_times = np.array([0.0, 10.0, 20.0]).tobytes()
        alloc_used = alloc_held = np.array([5.0, 10.0, 0.0]).tobytes()
        workload = type("W", (), {"cluster": Cluster})

    assert utilisation_between(Result, 0.0, 20.0) == pytest.approx(0.75)
    assert utilisation_between(Result, 5.0, 15.0) == pytest.approx((5 * 5 + 5 * 10) / 100)
    jobs = pd.DataFrame({"duration": [100.0] + [1.0] * 10, "gpus": [1] * 11})
    assert top_share(jobs, 5) == pytest.approx(104 / 110)


def test_simulate_prints_load_dominance_unused_predictor_and_a_timing_line_that_adds_up(tmp_path, capsys):
    assert main(["simulate", "--synthetic", "demo", "--jobs", "300", "--policy", "fifo", "sjf", "--predictor",
                 "noisy:0.5", "--no-plots", "--no-progress", "--out", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    assert "note: --predictor noisy:0.5 is not used: none of the policies (fifo, sjf) uses predictions" in out
    load = re.search(r"load: +offered ([0-9.]+); reached: fifo ([0-9.]+), sjf", out)
    assert load, out
    assert float(load.group(2)) < float(load.group(1))  # 300 demo jobs: long jobs run on past the window
    from evaluation.catalog import LOAD_MEANING

    assert LOAD_MEANING in out  # the two loads are defined where they are printed, and in meta.json
    meta = json.loads((tmp_path / "o" / "meta.json").read_text())
    assert meta["load_meaning"] == LOAD_MEANING and set(meta["load_reached"]) == {"fifo", "sjf"}
    assert meta["load_reached"]["fifo"] == pytest.approx(float(load.group(2)), abs=0.006)
    assert re.search(r"warning: the 5 largest jobs hold \d+% of the measured GPU-seconds", out)
    timing = re.search(r"time: ([0-9.]+) s in this command \((.*)\)", out)
    parts = [float(v) for v in re.findall(r" ([0-9.]+)(?:,|$)", timing.group(2))]
    assert "start-up and other" in timing.group(2)
    assert sum(parts) == pytest.approx(float(timing.group(1)), abs=0.03)
    summary = pd.read_csv(tmp_path / "o" / "summary.csv")
    assert {"lost_work_total_s", "load_reached_frac", "top5_gpu_share_frac"} <= set(summary.columns)
    assert "lost_work_total" not in summary.columns


def test_predictions_everywhere_used_print_no_note(tmp_path, capsys):
    assert main(["simulate", "--synthetic", "demo", "--jobs", "100", "--policy", "spjf", "--predictor",
                 "noisy:0.5", "--no-plots", "--no-progress", "--out", str(tmp_path / "o")]) == 0
    assert "is not used" not in capsys.readouterr().out


def test_spinner_only_in_a_terminal(monkeypatch, capsys):
    import io
    import sys

    from pipelines.progress import step

    with step("quiet work"):
        pass
    assert capsys.readouterr().err == ""

    class Tty(io.StringIO):
        def isatty(self):
            return True

    fake = Tty()
    monkeypatch.setattr(sys, "stderr", fake)
    with step("training demand (orglinear)"):
        pass
    assert "training demand (orglinear)" in fake.getvalue() and " s" in fake.getvalue()


def _copy_store(template, folder):
    import shutil

    (folder / "mlruns").mkdir(parents=True, exist_ok=True)
    shutil.copy(template, folder / "mlruns" / "mlflow.db")


@pytest.fixture()
def default_store(tmp_path, monkeypatch, empty_store_db):
    """./mlruns/mlflow.db in a fresh working directory with `duration` version 1 (a constant model) as
    champion, logged through schedcast's own registry code (so its version tags are schedcast's)."""
    import warnings

    import mlflow
    import mlflow.pyfunc

    monkeypatch.chdir(tmp_path)
    _copy_store(empty_store_db, tmp_path)
    for var in ("MLFLOW_TRACKING_URI", "MLFLOW_REGISTRY_URI"):
        monkeypatch.delenv(var, raising=False)
    from models.registry import _register, configure

    uri = configure(None)

    class ConstantModel(mlflow.pyfunc.PythonModel):
        def predict(self, context, model_input, params=None):
            return np.full(len(model_input), 900.0)

    with warnings.catch_warnings(), mlflow.start_run() as run:
        warnings.simplefilter("ignore")
        info = mlflow.pyfunc.log_model(name="model", python_model=ConstantModel(),
                                       pip_requirements=["mlflow"])  # named: no ~4 s inference subprocess
    metrics = {"log_mae": 1.2, "mae": 300.0, "rmse": 900.0, "baseline.user-median.log_mae": 1.4}
    _register(info.model_uri, "duration", run.info.run_id, "champion", False, metrics, "constant",
              {"code_version": "abc1234", "algorithm": "constant", "primary_metric": "log_mae",
               "best_baseline": "user-median 1.4", "data": "x", "data.sha256": "0" * 64})
    for var in ("MLFLOW_TRACKING_URI", "MLFLOW_REGISTRY_URI"):  # set by configure: a fresh command has neither
        monkeypatch.delenv(var, raising=False)
    return uri


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_registry_predictor_without_track_writes_no_run_and_with_track_runs_are_complete(default_store, tmp_path,
                                                                                         capsys, monkeypatch):
    from mlflow import MlflowClient

    from pipelines.tracking import EXPERIMENT

    client = MlflowClient(default_store, default_store)
    tags = client.get_model_version("duration", "1").tags
    assert set(tags) == {"run_id", "code_version", "algorithm", "primary_metric", "best_baseline", "data",
                         "data.sha256", "metric.log_mae"}  # not one metric.* tag per metric
    args = ["simulate", "--synthetic", "demo", "--jobs", "120", "--policy", "spjf", "fifo", "--predictor",
            "models:/duration@champion", "--no-plots", "--no-progress"]
    assert main([*args, "--out", str(tmp_path / "a")]) == 0
    out = capsys.readouterr().out
    assert "MLflow:" not in out
    assert client.get_experiment_by_name(EXPERIMENT) is None  # nothing tracked: no --track, no URI

    assert main([*args, "--out", str(tmp_path / "b"), "--track"]) == 0
    out = capsys.readouterr().out
    assert "MLflow: parent run" in out
    # the UI link of the parent run, on the UI `schedcast server` starts for this (default) store
    assert re.search(r"MLflow UI: http://127\.0\.0\.1:5000/#/experiments/\d+/runs/[0-9a-f]+\?workflowType=machine_learning "
                     r"\(start the UI with `schedcast server`\)", out), out
    assert re.search(r"time: .*\(load [0-9.]+, model [0-9.]+, replay and scoring [0-9.]+, .*MLflow [0-9.]+", out)

    import io
    import sys

    class Tty(io.StringIO):
        def isatty(self):
            return True

    fake = Tty()
    for var in ("MLFLOW_TRACKING_URI", "MLFLOW_REGISTRY_URI"):  # as a fresh command: not tracked
        monkeypatch.delenv(var, raising=False)
    saved, sys.stderr = sys.stderr, fake  # a terminal: loading the registered model shows a spinner
    try:
        assert main([a for a in args if a != "--no-progress"] + ["--out", str(tmp_path / "c")]) == 0
    finally:
        sys.stderr = saved
    assert re.search(r"asking models:/duration@champion for 120 predictions: [0-9.]+ s", fake.getvalue())
    exp = client.get_experiment_by_name(EXPERIMENT)
    runs = client.search_runs([exp.experiment_id])
    parent = next(r for r in runs if "mlflow.parentRunId" not in r.data.tags)
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
    assert len(children) == 2
    assert parent.data.metrics["spjf/jct_mean_s"] > 0 and "fifo/gpu_utilisation_frac" in parent.data.metrics
    for run in (parent, *children):
        assert run.data.tags["mlflow.user"] and run.data.tags["mlflow.source.name"]
        assert run.data.tags["mlflow.source.type"] == "LOCAL"
    for run in children:
        names = set(run.data.metrics)
        assert {"jct_mean_s", "wait_p99_s", "lost_work_total_s", "gpu_utilisation_frac", "jobs"} <= names
        assert not {"jct_mean", "lost_work_total", "gpu_utilisation"} & names
        assert not any("__" in n for n in names)


@pytest.mark.slow
def test_retrain_decision_run_logs_parameters(tmp_path, monkeypatch, empty_store_db):
    import mlflow

    from models.registry import configure
    from pipelines.retrain import Decision, _log_decision

    monkeypatch.chdir(tmp_path)
    _copy_store(empty_store_db, tmp_path)
    configure(f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}")
    decision = Decision("duration", True, "first", "log_mae", "1", None, None, 1.2, None, 0.02, holdout="first",
                        holdout_rows=500, min_holdout=200)
    _log_decision(mlflow, "duration", decision)
    run = mlflow.search_runs(output_format="list")[0]
    assert run.data.params["margin"] == "0.02" and run.data.params["metric"] == "log_mae"
    assert run.data.params["holdout"] == "first" and run.data.params["challenger_version"] == "1"
    assert run.data.metrics["challenger_score_log_s"] == 1.2  # the primary metric's unit in the name
    assert decision.details["decision_run_id"] == run.info.run_id  # `retrain` prints its UI link
    from models.store import EXPERIMENT

    exp = mlflow.MlflowClient().get_experiment_by_name(EXPERIMENT)
    assert EXPERIMENT == "schedcast-training" and "Model training" in exp.tags["mlflow.note.content"]


def test_training_metric_names_carry_their_units():
    from pipelines.train import TASKS, metric_name

    units = TASKS["duration"].units
    assert metric_name("log_mae", units) == "log_mae_log_s" and metric_name("mae", units) == "mae_s"
    assert metric_name("baseline.median.log_mae", units) == "baseline.median.log_mae_log_s"
    assert metric_name("unseen_share", units) == "unseen_share_frac"
    assert metric_name("r2", units) == "r2" and metric_name("train_seconds", units) == "train_seconds"
    assert metric_name("mae", TASKS["throughput"].units) == "mae_jobs_per_10min"
    assert metric_name("ql_0.9", TASKS["demand"].units) == "ql_0.9_gpus"
    assert metric_name("accuracy", TASKS["packing"].units) == "accuracy_frac"
