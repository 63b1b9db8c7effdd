"""Predictors say what they are; meta.json records the registry version an alias resolved to."""
import json
import os

import numpy as np
import pytest

from pipelines.cli import main
from sim.predictors import ModelPredictor, NoisyOraclePredictor, OraclePredictor, RestPredictor, make_predictor


def test_simple_predictors_describe_themselves():
    assert OraclePredictor().describe() == {"kind": "oracle"}
    assert NoisyOraclePredictor(0.5, seed=3).describe() == {"kind": "noisy-oracle", "sigma": 0.5, "seed": 3}
    assert RestPredictor("http://127.0.0.1:5001").describe()["url"] == "http://127.0.0.1:5001/invocations"
    assert make_predictor("models:/duration/4").parts == {"name": "duration", "version": "4"}


@pytest.fixture(scope="module")
def registry(tmp_path_factory, empty_store_db):
    """A local registry with two versions of `duration` (runs of a constant model); champion -> 1."""
    import shutil
    import warnings

    import mlflow
    import mlflow.pyfunc

    saved = {k: v for k, v in os.environ.items() if k.startswith("MLFLOW_")}  # set_tracking_uri writes them
    root = tmp_path_factory.mktemp("registry")
    shutil.copy(empty_store_db, root / "mlflow.db")  # migrated once per worker
    uri = f"sqlite:///{root / 'mlflow.db'}"
    client = mlflow.MlflowClient(uri, uri)
    experiment = client.create_experiment("t", artifact_location=(root / "artifacts").as_uri())
    mlflow.set_tracking_uri(uri)
    mlflow.set_registry_uri(uri)

    class ConstantModel(mlflow.pyfunc.PythonModel):
        """One duration for every job (what it predicts does not matter here)."""

        def __init__(self, value):
            self.value = value

        def predict(self, context, model_input, params=None):
            return np.full(len(model_input), self.value)

    runs = []
    for value in (600.0, 1200.0):
        with warnings.catch_warnings(), mlflow.start_run(experiment_id=experiment) as run:
            warnings.simplefilter("ignore")
            mlflow.pyfunc.log_model("model", python_model=ConstantModel(value), registered_model_name="duration",
                                    pip_requirements=["mlflow"])  # named: no ~4 s inference subprocess
        runs.append(run.info.run_id)
    client.set_registered_model_alias("duration", "champion", "1")
    yield uri, client, runs
    # later test files on this worker must not inherit this module's store (it would turn tracking on)
    for k in [k for k in os.environ if k.startswith("MLFLOW_")]:
        del os.environ[k]
    os.environ.update(saved)


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_meta_records_the_resolved_model_version(registry, tmp_path, capsys):
    uri, client, runs = registry
    out = tmp_path / "o"
    code = main(["simulate", "--synthetic", "demo", "--jobs", "200", "--policy", "spjf", "--predictor",
                 "models:/duration@champion", "--tracking-uri", uri, "--out", str(out), "--no-progress",
                 "--no-plots"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    # the console names the version the alias resolved to, as meta.json does
    assert f"predictor:  models:/duration@champion = duration version 1 (run {runs[0][:8]}) in {uri}" in captured.out
    meta = json.loads((out / "meta.json").read_text())
    resolved = meta["predictor_resolved"]
    assert resolved["name"] == "duration" and resolved["alias"] == "champion"
    assert resolved["version"] == "1" and resolved["run_id"] == runs[0]
    assert meta["predictor"] == "models:/duration@champion"
    # The alias moves: a new predictor resolves (and loads) the new version.
    client.set_registered_model_alias("duration", "champion", "2")
    p = ModelPredictor("models:/duration@champion", uri)
    assert p.describe()["version"] == "2" and p.describe()["run_id"] == runs[1]
    assert ModelPredictor("models:/duration/1", uri).describe()["version"] == "1"


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_unknown_alias_is_named(registry, tmp_path, capsys):
    uri, _, _ = registry
    code = main(["simulate", "--synthetic", "demo", "--jobs", "200", "--policy", "spjf", "--predictor",
                 "models:/duration@nope", "--tracking-uri", uri, "--out", str(tmp_path / "o"), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "models:/duration@nope is not available" in err


def test_predictor_is_the_shorthand_of_predict_duration(tmp_path, capsys):
    """--predictor SPEC and --predict duration=SPEC are one code path: the same numbers (before, the
    second drew its own noise and reached every policy), and two different predictors are refused."""
    common = ["simulate", "--synthetic", "demo", "--jobs", "300", "--offered-load", "1.5", "--policy", "spjf", "fifo", "--no-plots",
              "--no-progress", "--no-track", "--seed", "4"]
    assert main([*common, "--predictor", "noisy:0.8", "--out", str(tmp_path / "a")]) == 0
    assert main([*common, "--predict", "duration=noisy:0.8", "--out", str(tmp_path / "b")]) == 0
    assert main([*common, "--out", str(tmp_path / "c")]) == 0
    a, b, c = ((tmp_path / x / "summary.csv").read_text() for x in "abc")
    assert a == b and a != c
    assert json.loads((tmp_path / "b" / "meta.json").read_text())["predictor"] == "noisy:0.8"
    capsys.readouterr()
    assert main([*common, "--predictor", "oracle", "--predict", "duration=noisy:0.8",
                 "--out", str(tmp_path / "d")]) == 2
    err = capsys.readouterr().err
    assert "disagree" in err and len(err.strip().splitlines()) == 1 and not (tmp_path / "d").exists()
