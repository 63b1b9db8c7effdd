"""Simulations in MLflow (a real sqlite store in tmp_path): nested runs carry params, metrics, artifacts
and the lineage of the registry model that drove them; experiments log one nested run per cell."""
from __future__ import annotations

import subprocess
import sys

import pytest

from pipelines.tracking import summary_metrics, tracking_destination

pytest.importorskip("mlflow")


def _store(tmp_path, migrated_store) -> str:
    """./mlruns/mlflow.db under tmp_path, a copy of the migrated template (table creation is not tested here)."""
    return migrated_store(tmp_path / "mlruns" / "mlflow.db")


def test_tracking_destination(monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    assert tracking_destination(None, None) is None
    assert tracking_destination(False, "sqlite:///x.db") is None
    assert tracking_destination(None, "sqlite:///x.db") == "sqlite:///x.db"
    assert tracking_destination(True, None).endswith("mlruns/mlflow.db")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "sqlite:///env.db")
    assert tracking_destination(None, None) == "sqlite:///env.db"
    assert tracking_destination(False, None) is None


def test_tracking_modules_import_no_mlflow_or_dask():
    code = ("import sys, pipelines.tracking, pipelines.experiment, evaluation.leaderboard; "
            "print(sorted(m for m in ('mlflow', 'distributed', 'dask', 'ray') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_summary_metrics_groups_only_when_more_than_one():
    import pandas as pd

    s = {"policy": "sjf", "jct_mean": 10.0, "jct_p99.9": float("nan"), "jobs": 3, "flag": True}
    parts = pd.DataFrame({"partition": ["vc a", "vc/b"], "jobs": [1, 2], "jct_mean": [5.0, 12.5]})
    one = pd.DataFrame({"job_class": ["all"], "jobs": [3], "jct_mean": [10.0]})
    m = summary_metrics(s, {"by_partition": parts, "by_class": one})
    assert m == {"jct_mean": 10.0, "jobs": 3.0, "partition/vc a/jobs": 1.0, "partition/vc a/jct_mean": 5.0,
                 "partition/vc/b/jobs": 2.0, "partition/vc/b/jct_mean": 12.5}


def _registered_duration_model(uri: str) -> tuple[str, str]:
    """A real pyfunc duration model (constant 1 h) registered as duration@champion: (training run id, version)."""
    import mlflow
    import mlflow.pyfunc

    class OneHour(mlflow.pyfunc.PythonModel):
        def predict(self, context, model_input, params=None):
            return [3600.0] * len(model_input)

    mlflow.set_tracking_uri(uri)
    mlflow.set_registry_uri(uri)
    mlflow.set_experiment("training")
    with mlflow.start_run() as run:
        info = mlflow.pyfunc.log_model(name="model", python_model=OneHour(), pip_requirements=["mlflow"],
                                       registered_model_name="duration")
    client = mlflow.MlflowClient(uri, uri)
    version = client.search_model_versions("name='duration'")[0].version
    client.set_registered_model_alias("duration", "champion", version)
    assert info.model_id
    return run.info.run_id, str(version)


def test_track_simulation_params_metrics_artifacts_lineage(tmp_path, migrated_store):
    import mlflow

    from evaluation.metrics import evaluate
    from evaluation.report import write_results
    from pipelines.simulate import build_source
    from pipelines.tracking import EXPERIMENT, track_simulation
    from sim import simulate
    from sim.predictors import describe_predictor, make_predictor

    uri = _store(tmp_path, migrated_store)
    train_run, version = _registered_duration_model(uri)
    table, workload = build_source(synthetic="demo", jobs=150, seed=3)
    predictor = make_predictor("models:/duration@champion", tracking_uri=uri)
    runs = {p: evaluate(simulate(workload, p, predictor=predictor, seed=3)) for p in ("fifo", "spjf")}
    meta = {"kind": "simulate", "command": "schedcast simulate ...", "trace": table.report.as_dict(),
            "trace_name": "synthetic demo", "cluster": workload.cluster.describe(), "cluster_name": workload.cluster.name,
            "cluster_gpus": workload.cluster.gpus, "placement": "policy default", "predictor": "models:/duration@champion",
            "predictor_resolved": describe_predictor(predictor), "seed": 3, "jobs": len(workload),
            "workload_fingerprint": workload.fingerprint}
    out = tmp_path / "out"
    write_results(out, runs, meta, plots=False)
    parent = track_simulation(out, runs, meta, uri)

    client = mlflow.MlflowClient(uri)
    exp = client.get_experiment_by_name(EXPERIMENT)
    children = client.search_runs([exp.experiment_id], f"tags.mlflow.parentRunId = '{parent}'")
    assert len(children) == 2
    by_policy = {r.data.params["policy"]: r for r in children}
    spjf, fifo = by_policy["spjf"], by_policy["fifo"]
    for run in (spjf, fifo):
        p = run.data.params
        assert p["seed"] == "3" and p["trace.fingerprint"] == workload.fingerprint
        assert p["cluster"] == workload.cluster.name and p["code_version"]
        assert run.data.metrics["jobs"] == 150
        assert run.info.status == "FINISHED"
    # logged names carry their unit (evaluation.catalog): jct_mean -> jct_mean_s
    assert spjf.data.metrics["jct_mean_s"] == pytest.approx(runs["spjf"]["summary"]["jct_mean"])
    assert fifo.data.metrics["wait_mean_s"] == pytest.approx(runs["fifo"]["summary"]["wait_mean"])
    # lineage: the resolved version and its training run, for the policy that used predictions only
    assert spjf.data.params["predictor.version"] == version
    assert spjf.data.params["predictor.run_id"] == train_run
    assert spjf.data.tags["schedcast.model_run_id"] == train_run
    assert fifo.data.params["predictor"] == "unused" and "predictor.run_id" not in fifo.data.params
    linked = [m.model_id for m in (client.get_run(spjf.info.run_id).inputs.model_inputs or [])]
    mv = client.get_model_version("duration", version)
    assert linked and linked[0] in (mv.model_id, mv.source.removeprefix("models:/"))
    files = {a.path for a in client.list_artifacts(spjf.info.run_id)}
    assert {"summary.csv", "jobs_spjf.parquet", "allocation_spjf.parquet", "by_partition_spjf.csv"} <= files
    top = client.get_run(parent)
    assert top.data.params["policies"] == "fifo,spjf" and top.info.status == "FINISHED"
    assert {"summary.csv", "meta.json"} <= {a.path for a in client.list_artifacts(parent)}


def test_experiment_run_logs_nested_runs_and_the_leaderboard(tmp_path, monkeypatch, migrated_store):
    import mlflow

    # a fixed code version: other edits to the working tree during the test must not defeat the resume
    monkeypatch.setattr("pipelines.tracking.code_version", lambda: "test-version")

    from pipelines.experiment import expand, parse_spec, run_experiment
    from pipelines.tracking import EXPERIMENT, SWEEP_EXPERIMENT

    import pipelines.replay as replay

    # a cell that fails at set-up (specs are validated whole before any cell runs, so the failure is
    # injected where a real one would happen: a model store or a file that went away meanwhile)
    extras = replay.replay_extras

    def failing_extras(spec, workload, failures, announce=None):
        if spec.label == "bad":
            raise ValueError("performance model 'nope' went away")
        return extras(spec, workload, failures, announce)

    monkeypatch.setattr(replay, "replay_extras", failing_extras)
    uri = _store(tmp_path, migrated_store)
    spec = parse_spec({"name": "tracked", "workloads": [{"name": "demo", "synthetic": "demo", "jobs": 80}],
                       "policies": ["fifo", "sjf", {"name": "fifo", "label": "bad", "params": {"work_conserving": True}}],
                       "seeds": 2})
    res = run_experiment(spec, tmp_path / "run", engine="serial", tracking_uri=uri)
    assert res.parent_run_id and (res.ok, res.skipped) == (4, 2)
    client = mlflow.MlflowClient(uri)
    exp = client.get_experiment_by_name(SWEEP_EXPERIMENT)  # sweeps have their own experiment
    assert client.get_experiment_by_name(EXPERIMENT) is None
    assert "nested run per cell" in exp.tags["mlflow.note.content"]  # described in the UI
    children = client.search_runs([exp.experiment_id], f"tags.mlflow.parentRunId = '{res.parent_run_id}'")
    assert len(children) == len(expand(spec)) == 6
    import json

    for r in children:  # a cell run lasts as long as its cell did, not as long as logging it took
        record = json.loads((tmp_path / "run" / "cells" / f"{r.data.params['cell']}.json").read_text())
        assert (r.info.end_time - r.info.start_time) / 1000 == pytest.approx(record["wall_s"], abs=0.002)
    ok = [r for r in children if r.info.status == "FINISHED"]
    bad = [r for r in children if r.info.status == "FAILED"]
    assert len(ok) == 4 and len(bad) == 2
    assert all("nope" in r.data.tags["schedcast.error"] for r in bad)
    assert all({"experiment", "workload", "cell_key", "seed", "policy.name"} <= set(r.data.params) for r in ok)
    assert all("jct_mean_s" in r.data.metrics and "jct_mean" not in r.data.metrics for r in ok)
    parent_files = {a.path for a in client.list_artifacts(res.parent_run_id)}
    assert {"leaderboard.html", "leaderboard.csv", "results.csv", "spec.yaml"} <= parent_files
    # a resumed invocation logs only the cells it ran
    again = run_experiment(spec, tmp_path / "run", engine="serial", tracking_uri=uri)
    rerun = client.search_runs([exp.experiment_id], f"tags.mlflow.parentRunId = '{again.parent_run_id}'")
    assert again.reused == 4 and len(rerun) == 2


def _simulate_has_track_flag() -> bool:
    from pipelines.cli import build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "command")
    return any("--track" in a.option_strings for a in sub.choices["simulate"]._actions)


def test_plain_simulate_does_not_import_mlflow(tmp_path):
    import os

    code = ("import sys; from pipelines.cli import main; "
            f"rc = main(['simulate', '--synthetic', 'demo', '--jobs', '60', '--policy', 'fifo', 'sjf', '--no-plots', "
            f"'--out', {str(tmp_path / 'out')!r}]); "
            "print('RC', rc, 'MLFLOW', 'mlflow' in sys.modules)")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path,
                         timeout=300).stdout
    assert "RC 0 MLFLOW False" in out, out[-2000:]


def test_simulate_track_logs_nested_runs(tmp_path, migrated_store):
    """`schedcast simulate --track --tracking-uri URI`: one parent run, one nested run per policy."""
    if not _simulate_has_track_flag():
        pytest.skip("simulate --track is not wired in pipelines/simulate.py yet")
    import mlflow

    from pipelines.cli import main
    from pipelines.tracking import EXPERIMENT

    uri = _store(tmp_path, migrated_store)
    assert main(["simulate", "--synthetic", "demo", "--jobs", "80", "--policy", "fifo", "spjf", "--no-plots",
                 "--out", str(tmp_path / "out"), "--track", "--tracking-uri", uri]) == 0
    client = mlflow.MlflowClient(uri)
    runs = client.search_runs([client.get_experiment_by_name(EXPERIMENT).experiment_id])
    parents = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parents[0].info.run_id]
    assert len(parents) == 1 and sorted(r.data.params["policy"] for r in children) == ["fifo", "spjf"]
    assert all(r.data.metrics["jobs"] == 80 for r in children)
    # a replay run lasts as long as the replay: it ended before the result folder was written (logging
    # comes after), and the two replays ran one after the other
    written = (tmp_path / "out" / "meta.json").stat().st_mtime
    ordered = sorted(children, key=lambda r: r.info.start_time)
    assert all(r.info.end_time / 1000 <= written + 0.01 for r in children)
    assert ordered[0].info.end_time <= ordered[1].info.start_time
    parent = parents[0]
    assert parent.info.end_time - parent.info.start_time >= max(r.info.end_time - r.info.start_time for r in children)
    assert min(r.info.start_time for r in children) >= parent.info.start_time
    exp = client.get_experiment_by_name(EXPERIMENT)
    assert "duration is the replay's" in exp.tags["mlflow.note.content"]
    assert main(["simulate", "--synthetic", "demo", "--jobs", "80", "--policy", "fifo", "--no-plots",
                 "--out", str(tmp_path / "out2"), "--no-track", "--tracking-uri", uri]) == 0
    assert len(client.search_runs([client.get_experiment_by_name(EXPERIMENT).experiment_id])) == len(runs)
