"""Training runs as an operator sees them (issue 10 items 5, 6, 13; issue 9 items 5, 8): concurrent first
trains on a new store, a killed train, --jobs on traces, data lineage and descriptions, the trust model
for local model paths, and one-line errors for unregistered models."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipelines.cli import main
from tests.test_mlflow import store  # noqa: F401 - fixture
from tests.test_retrain_gate import write_helios

ROOT = Path(__file__).resolve().parents[1]
SYN = ["--synthetic", "demo", "--jobs", "800", "--test-days", "0.2", "--param", "n_estimators=5"]


def _env(uri: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
    env.update(MLFLOW_TRACKING_URI=uri, OMP_NUM_THREADS="1", MPLBACKEND="Agg", PYTHONPATH=str(ROOT))
    return env


def _script(body: str) -> list[str]:
    return [sys.executable, "-c", body]


@pytest.mark.slow
def test_two_first_trains_on_a_new_store_both_succeed(tmp_path):
    """Both processes connect to a brand-new sqlite store at the same moment (a start file releases
    them after their imports): table creation is serialised, both register, one champion."""
    uri = f"sqlite:///{tmp_path / 'new' / 'mlflow.db'}"
    go = tmp_path / "go"
    body = (f"import pathlib, sys, time; from pipelines.cli import main; import mlflow\n"
            f"pathlib.Path(sys.argv[1]).touch()\n"
            f"while not pathlib.Path({str(go)!r}).exists(): time.sleep(0.01)\n"
            f"sys.exit(main(['train', 'duration', *{SYN!r}, '--allow-worse-than-baseline']))")
    procs = [subprocess.Popen(_script(body) + [str(tmp_path / f"ready{i}")], env=_env(uri), cwd=tmp_path,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for i in range(2)]
    deadline = time.time() + 300
    while not all((tmp_path / f"ready{i}").exists() for i in range(2)) and time.time() < deadline:
        time.sleep(0.05)
    go.touch()
    outs = [p.communicate(timeout=600)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    from models.registry import alias_version, configure, list_models

    configure(uri)
    assert sorted(r["version"] for r in list_models(uri) if r["model"] == "duration") == ["1", "2"]
    assert alias_version("duration", "champion") in ("1", "2")


@pytest.mark.slow
def test_killed_first_train_leaves_a_failed_run_and_no_half_version(tmp_path, empty_store_db, capsys, monkeypatch):
    """SIGTERM after the version exists but before its aliases are set: the run ends FAILED and the version
    is rolled back, so no alias-less version and no half champion remain; asking for the champion then
    fails in one line (exit 2)."""
    import shutil

    shutil.copy(empty_store_db, tmp_path / "mlflow.db")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    marker = tmp_path / "registered"
    body = ("import pathlib, sys, time, mlflow\n"
            "from pipelines.cli import main\n"
            "real = mlflow.MlflowClient.set_registered_model_alias\n"
            "def slow(self, *a, **k):\n"
            f"    pathlib.Path({str(marker)!r}).touch(); time.sleep(120); return real(self, *a, **k)\n"
            "mlflow.MlflowClient.set_registered_model_alias = slow\n"
            f"sys.exit(main(['train', 'duration', *{SYN!r}, '--allow-worse-than-baseline']))")
    proc = subprocess.Popen(_script(body), env=_env(uri), cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 300
    while not marker.exists() and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert marker.exists(), proc.communicate()
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, (out, err)
    assert "terminated" in err and "Traceback" not in err

    import mlflow

    from models.registry import configure, list_models

    configure(uri)
    runs = mlflow.search_runs(output_format="list")
    assert runs and all(r.info.status == "FAILED" for r in runs), [r.info.status for r in runs]
    assert list_models(uri) == []  # the version was rolled back
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert main(["evaluate", "duration", "--synthetic", "demo", "--jobs", "800", "--test-days", "0.2"]) == 2
    err = capsys.readouterr().err
    assert "models:/duration@champion is not registered" in err and len(err.strip().splitlines()) == 1


def test_jobs_lineage_description_and_evaluate_reproduces(store, tmp_path, capsys):
    """--jobs keeps the first N jobs of a trace and is logged; the run has training and holdout dataset
    inputs with the full SHA-256, rows, dates and split; the version has a description and tags; the
    iterations task has baselines and plots; `evaluate` reproduces the holdout score exactly."""
    import mlflow

    from models.registry import configure, file_fingerprint

    trace = write_helios(tmp_path / "cluster_log.csv", jobs=1500)
    args = ["--trace", str(trace), "--format", "helios", "--jobs", "1000", "--test-days", "0.3"]
    assert main(["train", "duration", *args, "--param", "n_estimators=10"]) == 0
    assert main(["train", "iterations", *args, "--algo", "fallback", "--param", "n_estimators=10"]) == 0
    configure(store)
    client = mlflow.MlflowClient()
    sha = file_fingerprint(trace)
    assert len(sha) == 64
    for task in ("duration", "iterations"):
        mv = client.get_model_version(task, "1")
        run = client.get_run(mv.run_id)
        assert run.data.params["fingerprint.data_rows"] == "1000"
        assert run.data.tags["schedcast.data.rows"] == "1000" and '"jobs": 1000' in run.data.tags["schedcast.data.source"]
        inputs = {d.dataset.name: d for d in run.inputs.dataset_inputs}
        assert set(inputs) == {f"{task}-train", f"{task}-holdout"}
        tags = {t.key: t.value for t in inputs[f"{task}-holdout"].tags}
        assert tags["sha256"] == sha and tags["rows"] == "1000" and tags["holdout_start"] and tags["train_end"]
        assert tags["mlflow.data.context"] == "holdout"
        assert mv.description.startswith(f"{task} model") and "vs baseline" in mv.description
        assert mv.tags["algorithm"] and mv.tags["data.sha256"] == sha and mv.tags["code_version"]
        assert mv.tags["primary_metric"] == "log_mae" and "best_baseline" in mv.tags
        assert float(mv.tags["metric.log_mae"]) > 0  # `schedcast models` shows it (logged names carry units)
        arts = {a.path for a in client.list_artifacts(run.info.run_id, "plots")}
        assert "plots/importances.png" in arts and "plots/predicted_vs_actual.png" in arts
    it = client.get_run(client.get_model_version("iterations", "1").run_id).data.metrics
    assert "baseline.group_median.log_mae_log_s" in it and "baseline.median.log_mae_log_s" in it
    capsys.readouterr()
    assert main(["evaluate", "duration", *args]) == 0
    printed = capsys.readouterr().out
    logged = client.get_run(client.get_model_version("duration", "1").run_id).data.metrics["log_mae_log_s"]
    line = next(ln for ln in printed.splitlines() if ln.strip().startswith("log_mae"))
    assert float(line.split()[-1]) == pytest.approx(logged, rel=1e-3)


def test_local_model_paths_need_explicit_trust(store, tmp_path, capsys, monkeypatch):
    import mlflow

    from models.registry import TRUST_ENV, UntrustedModelError, configure, load

    assert main(["train", "duration", *SYN]) == 0
    configure(store)
    local = mlflow.artifacts.download_artifacts(artifact_uri="models:/duration/1", dst_path=str(tmp_path / "copy"))
    capsys.readouterr()
    ev = ["evaluate", "duration", "--synthetic", "demo", "--jobs", "800", "--test-days", "0.2", "--model", local]
    assert main(ev) == 2
    err = capsys.readouterr().err
    assert "refusing to load the model" in err and "--trust-local-models" in err and len(err.strip().splitlines()) == 1
    assert main(ev + ["--trust-local-models"]) == 0
    assert "runs code from its pickle" in capsys.readouterr().err
    assert main(ev + ["--trust-local-models"]) == 0
    assert "runs code from its pickle" not in capsys.readouterr().err  # warned once per process
    with pytest.raises(UntrustedModelError):
        load("file://" + local)
    monkeypatch.setenv(TRUST_ENV, "1")
    assert load(local) is not None  # e.g. lucid:packing_model=DIR goes through the same load
