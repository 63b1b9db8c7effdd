"""The retraining gate (issue 10 items 1-4): a trustworthy common holdout, a non-negative margin, a minimum
holdout, and compare-and-set promotion under concurrency. Small synthetic data, real sqlite MLflow stores."""
import threading

import pandas as pd
import pytest

from pipelines.cli import main
from tests.test_mlflow import store  # noqa: F401 - fixture

SMALL = ["--param", "n_estimators=20"]


def write_helios(path, preset="demo", seed=1, jobs=1500):
    """A Helios-format trace file from a synthetic table (the champion's 'real' data in these tests)."""
    from features.traces.synthetic import generate_preset

    f = generate_preset(preset, seed=seed, jobs=jobs).frame
    pd.DataFrame({"job_id": f["job_id"], "user": f["user"], "vc": f["org"], "gpu_num": f["num_gpus"],
                  "submit_time": f["submit_ts"].dt.tz_convert("Asia/Shanghai").dt.strftime("%Y-%m-%d %H:%M:%S"),
                  "duration": f["duration"]}).to_csv(path, index=False)
    return path


def test_negative_margin_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["retrain", "duration", "--synthetic", "demo", "--margin", "-1"])
    assert exc.value.code == 2
    assert "must be a finite number >= 0" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["train", "duration", "--synthetic", "demo", "--jobs", "-5"])
    assert exc.value.code == 2


def test_a_tiny_holdout_is_refused_before_registering(store, capsys):
    from models.registry import configure, list_models

    # 300 jobs, a 0.02-day holdout: a handful of jobs -- below the minimum of 100.
    code = main(["retrain", "duration", "--synthetic", "demo", "--jobs", "300", "--test-days", "0.02", *SMALL])
    out = capsys.readouterr().out
    assert code == 5, out
    assert "REFUSED (exit 5)" in out and "minimum of 100" in out
    configure(store)
    assert list_models(store) == []  # nothing registered


def test_gate_scores_on_the_champions_lineage_or_refuses(store, tmp_path, capsys):
    import json

    import mlflow

    from models.registry import alias_version, configure

    trace = write_helios(tmp_path / "cluster_log.csv")
    assert main(["train", "duration", "--trace", str(trace), "--format", "helios", "--test-days", "0.3",
                 "--param", "n_estimators=1", "learning_rate=0.001"]) == 0
    configure(store)
    client = mlflow.MlflowClient()
    champion_run = client.get_run(client.get_model_version("duration", "1").run_id)
    capsys.readouterr()

    # A challenger on other (synthetic) data is judged on the champion's own holdout, not on its own.
    code = main(["retrain", "duration", "--synthetic", "uranus", "--jobs", "2000", "--test-days", "1", *SMALL])
    out = capsys.readouterr().out
    assert code in (0, 3), out
    assert "champion's holdout on its own data" in out and "SHA-256 verified" in out
    decision_run = mlflow.search_runs(filter_string="tags.`schedcast.kind` = 'retrain-decision'",
                                      output_format="list")[0]
    decision = json.loads(open(mlflow.artifacts.download_artifacts(
        run_id=decision_run.info.run_id, artifact_path="decision.json")).read())
    assert decision["holdout"] == "champion-lineage"
    # Same rows as the champion's training holdout: the champion's score is exactly its training score.
    assert decision["champion_score"] == pytest.approx(champion_run.data.metrics["log_mae_log_s"], rel=1e-9)
    assert decision["champion_version_before"] == "1"
    versions_before = {str(v.version) for v in client.search_model_versions("name='duration'")}

    # The champion's data changes: the comparison cannot be trusted -> refused, exit 4, nothing registered.
    with open(trace, "a") as fh:
        fh.write("extra-job,u9,vc9,1,2020-05-01 00:00:00,100\n")
    code = main(["retrain", "duration", "--synthetic", "uranus", "--jobs", "2000", "--test-days", "1", *SMALL])
    out = capsys.readouterr().out
    assert code == 4, out
    assert "REFUSED (exit 4)" in out and "has changed since" in out
    trace.unlink()
    code = main(["retrain", "duration", "--synthetic", "uranus", "--jobs", "2000", "--test-days", "1", *SMALL])
    assert code == 4 and "cannot be reloaded" in capsys.readouterr().out
    assert {str(v.version) for v in client.search_model_versions("name='duration'")} == versions_before
    assert alias_version("duration", "champion") in versions_before


def test_concurrent_retrains_promote_at_most_one(store, capsys):
    """Two retrains compare against version 1 at the same time; only the first to promote may move the
    alias, the other stops with exit 1 and its decision names the version it compared against."""
    from models.registry import alias_version, configure
    from pipelines.retrain import FAILED, retrain
    from pipelines.train import DataSource, TASKS

    base = ["--synthetic", "demo", "--jobs", "1500", "--test-days", "0.3"]
    assert main(["train", "duration", *base, "--param", "n_estimators=1", "learning_rate=0.001",
                 "--allow-worse-than-baseline"]) == 0  # a deliberately weak first champion
    configure(store)
    data = TASKS["duration"].load(DataSource("synthetic", preset="demo", seed=0, jobs=1500))
    both_scored = threading.Barrier(2, timeout=300)

    def hold(who, score):
        if who == "champion":
            both_scored.wait()  # both have compared against version 1 before either promotes

    decisions, errors = [], []
    one_at_a_time = threading.Lock()  # training (matplotlib) is not what races here

    def train():
        with one_at_a_time:
            return TASKS["duration"].train(data, algo="lightgbm", test_days=0.3, n_estimators=30)

    def run():
        try:
            decisions.append(retrain("duration", train, margin=0.0, score_hook=hold))
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(600)
    assert not errors, errors
    codes = sorted(d.exit_code for d in decisions)
    assert codes == [0, FAILED], [d.reason for d in decisions]
    winner = next(d for d in decisions if d.exit_code == 0)
    loser = next(d for d in decisions if d.exit_code == FAILED)
    assert winner.champion_version_before == loser.champion_version_before == "1"
    assert "moved from version 1 to" in loser.reason and not loser.promoted
    assert alias_version("duration", "champion") == winner.challenger_version


def test_tag_lease_serialises_alias_changes(store):
    """The lease used on stores without a shared file system (a tracking server): two holders never
    overlap, and the lease tag is gone afterwards."""
    import time

    import mlflow

    from models.registry import LEASE_TAG, alias_lock, configure

    configure(store)
    mlflow.MlflowClient().create_registered_model("leased")
    spans, errors = [], []

    def hold():
        try:
            with alias_lock("leased", timeout=60, lease=True):
                t0 = time.monotonic()
                time.sleep(0.5)
                spans.append((t0, time.monotonic()))
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=hold) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors and len(spans) == 2
    (a0, a1), (b0, b1) = sorted(spans)
    assert a1 <= b0  # no overlap
    assert LEASE_TAG not in mlflow.MlflowClient().get_registered_model("leased").tags
