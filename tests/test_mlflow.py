"""MLflow: logging and registry on a local sqlite store; retraining decisions; model-backed predictors."""
import numpy as np
import pytest

from pipelines.cli import main


@pytest.fixture()
def store(tmp_path, monkeypatch, empty_store_db):
    import shutil

    shutil.copy(empty_store_db, tmp_path / "mlflow.db")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    monkeypatch.chdir(tmp_path)
    return uri


SMALL = ("--param", "n_estimators=20")  # a small booster: these tests check the registry, not accuracy
#: a small booster on the first 15,000 Philly jobs with a 7-day holdout: registry and serving plumbing only
PLUMBING = ("--jobs", "15000", "--test-days", "7", *SMALL)
#: the retrain gate's data: the first 15,000 Philly jobs with a 3-day holdout. With a 7-day holdout (9,722 of the
#: 15,000 jobs) SMALL scored worse than the one-round booster (log-MAE 2.17 vs 2.12); here 1.25 vs 1.91.
GATE_JOBS = ("--jobs", "15000", "--test-days", "3")


def _train(philly_file, *extra):
    return main(["train", "duration", "--trace", str(philly_file), "--algo", "lightgbm", *extra])


def test_train_registers_and_simulator_uses_champion(store, philly_file, tmp_path, capsys):
    from features.traces import load_trace
    from models.registry import alias_version, configure, load, unwrap
    from sim import simulate
    from sim.cluster import load_cluster
    from sim.predictors import ModelPredictor
    from sim.workload import build_workload

    assert _train(philly_file, "--param", "n_estimators=30") == 0
    configure(store)
    assert alias_version("duration", "champion") == "1" and alias_version("duration", "challenger") == "1"
    import mlflow

    run = mlflow.get_run(mlflow.MlflowClient().get_model_version("duration", "1").tags["run_id"])
    assert run.data.params["fingerprint.data_rows"] == "74110" and "fingerprint.data_file_sha256" in run.data.params
    assert "log_mae_log_s" in run.data.metrics and run.data.tags["schedcast.code_version"]
    arts = [a.path for a in mlflow.MlflowClient().list_artifacts(run.info.run_id, "plots")]
    assert "plots/importances.png" in arts
    model = load("models:/duration@champion")
    assert model.metadata.get_input_schema() is not None

    w = build_workload(load_trace(philly_file), load_cluster("philly-pool"), limit=3000)
    pred = ModelPredictor("models:/duration@champion").predict(w.frame)
    from features.duration import duration_features
    direct = unwrap(model).predict(duration_features(w.frame))
    assert np.allclose(pred, direct)
    result = simulate(w, "spjf", predictor="models:/duration@champion")
    assert np.isfinite(result.end).all()


def test_retrain_promotes_refuses_and_survives_a_crash(store, philly_file, monkeypatch, capsys):
    from models.registry import alias_version, configure

    # The gate's decisions, not the model's accuracy, are under test: every train and retrain here takes the
    # first 15,000 jobs (GATE_JOBS), so each challenger's data is the champion's and the gate scores both on
    # the same holdout (the full trace made this the suite's second-slowest test).
    retrain = ["retrain", "duration", "--trace", str(philly_file), *GATE_JOBS]
    # A deliberately weak first champion (one tiny boosting round).
    assert _train(philly_file, *GATE_JOBS, "--param", "n_estimators=1", "learning_rate=0.001",
                  "--allow-worse-than-baseline") == 0
    configure(store)
    assert alias_version("duration", "champion") == "1"
    # A real model (20 rounds: small, yet far better) beats it by far more than 2 %: promoted (exit 0).
    assert main([*retrain, "--margin", "0.02", *SMALL]) == 0
    assert alias_version("duration", "champion") == "2"
    out = capsys.readouterr().out
    assert "PROMOTED" in out and "challenger's holdout" in out
    # The same model again cannot be 50 % better: refused (exit 3), champion unchanged.
    assert main([*retrain, "--margin", "0.5", *SMALL]) == 3
    assert alias_version("duration", "champion") == "2"
    assert "KEPT CHAMPION" in capsys.readouterr().out

    # A crash after the challenger is registered but before the comparison ends: exit 1, champion intact.
    import pipelines.retrain as R

    calls = {"n": 0}
    real = R.evaluate_on_holdout

    def crash_on_champion(task, predictor, holdout):
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("disk full while scoring the champion")
        return real(task, predictor, holdout)

    monkeypatch.setattr(R, "evaluate_on_holdout", crash_on_champion)
    assert main([*retrain, "--margin", "0.0", *SMALL]) == 1
    err = capsys.readouterr().err
    assert "FAILED, champion untouched" in err and "disk full" in err
    assert alias_version("duration", "champion") == "2"
    assert alias_version("duration", "challenger") == "4"


def test_other_tasks_train_and_register(store, shared_data, capsys):
    from models.registry import alias_version, configure, load

    first = "--allow-worse-than-baseline"  # each first version is champion here, whatever its baselines
    assert main(["train", "packing", "--data-dir", str(shared_data), first]) == 0
    assert main(["train", "throughput", "--algo", "lightgbm", "--data-dir", str(shared_data),
                 "--param", "n_estimators=50", first]) == 0
    assert main(["train", "iterations", "--trace", str(shared_data / "philly/philly_jobs_2017-09-04_2017-11-30.csv.gz"),
                 "--algo", "fallback", first]) == 0
    assert main(["train", "demand", "--algo", "seasonal-naive", "--data-dir", str(shared_data), "--freq", "1h",
                 first]) == 0
    out = capsys.readouterr().out
    assert "last_value" in out and "seasonal_day" in out and "majority_class" in out
    configure(store)
    import mlflow

    client = mlflow.MlflowClient()
    for task in ("packing", "throughput", "iterations", "demand"):
        assert alias_version(task, "champion") == "1"
        mv = client.get_model_version(task, "1")
        run = client.get_run(mv.run_id)
        # Lineage for every task: the full SHA-256 and rows, as run tags and as dataset inputs.
        assert len(run.data.tags["schedcast.data.sha256"]) == 64 and int(run.data.tags["schedcast.data.rows"]) > 0
        assert run.inputs.dataset_inputs, task
        assert mv.description and mv.tags["primary_metric"] and mv.tags.get("best_baseline"), task
    demand = load("models:/demand@champion")
    import pandas as pd

    from features.series import load_demand

    d, _ = load_demand(data=shared_data, freq="1h")
    history = d.iloc[-48:].rename_axis("time").reset_index().melt(id_vars="time", var_name="org",
                                                                  value_name="demand")
    fc = demand.predict(history)
    assert set(fc.columns) == {"org", "time", "mean", "q0.9", "q0.95"} and len(fc) == 16 * 6
    assert main(["evaluate", "packing", "--data-dir", str(shared_data)]) == 0
    assert main(["models"]) == 0
    assert "packing" in capsys.readouterr().out
    del pd


def test_lucid_runs_with_registry_models(store, shared_data, philly_file, capsys):
    from features.traces import load_trace
    from models.registry import alias_version, configure
    from sim import simulate
    from sim.cluster import load_cluster
    from sim.workload import build_workload

    assert main(["train", "packing", "--data-dir", str(shared_data), "--allow-worse-than-baseline"]) == 0
    # the first 15,000 jobs are enough for a registry model (this test checks the plumbing, not accuracy)
    assert _train(philly_file, *PLUMBING, "--allow-worse-than-baseline") == 0
    configure(store)
    w = build_workload(load_trace(philly_file), load_cluster("philly-vc"), limit=2500)
    spec = (f"lucid:packing_model=models:/packing@champion,tracking_uri={store},update_interval=200000,"
            "profiler_nodes=1")
    # invariants are checked on the four ablation replays below (and in the golden tests): on this one they
    # were 40 % of the test's time
    r = simulate(w, spec, predictor="models:/duration@champion")
    assert np.isfinite(r.end).all()
    assert r.policy_stats["lucid_updates"] >= 1
    assert "lucid_tuner_log_mae_monotone" in r.policy_stats
    # A replay logs its update-engine fits as runs but never writes registry versions (issue 11 item 7).
    import mlflow

    assert alias_version("duration", "champion") == "1" and alias_version("duration", "challenger") == "1"
    assert [str(v.version) for v in mlflow.MlflowClient().search_model_versions("name='duration'")] == ["1"]
    assert mlflow.search_runs(filter_string="tags.`schedcast.update_engine` = 'lucid'", output_format="list")
    # Every ablation takes the same registry models (the packing tree and the duration champion).
    small = build_workload(load_trace(philly_file), load_cluster("philly-vc"), limit=600)
    for ablation in ("lucid-nobinder", "lucid-noshare", "lucid-noestimator", "lucid-nospace"):
        r = simulate(small, spec.replace("lucid:", f"{ablation}:").replace(f",tracking_uri={store}", "")
                     .replace("update_interval=200000", "update_interval=0"),
                     predictor="models:/duration@champion", check_invariants=True)
        assert np.isfinite(r.end).all(), ablation
