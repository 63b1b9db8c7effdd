"""Raw-record serving (models.serving): a scheduler sends job fields, the model computes the duration
features inside from its training history (plus finished jobs sent along), exactly as training did;
logged with MLflow and served for real by `schedcast serve`."""
from __future__ import annotations

import json
import signal
import time
import urllib.error
import urllib.request
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.test_serving_processes import READY_S, CliProcess, bare_env, free_port, process_tree

TEST_DAYS = 0.5


@pytest.fixture(scope="module")
def trained():
    """3,000 synthetic jobs (users, VCs, names, groups: all 35 duration features), a small LightGBM
    duration model and A-SRPT's iteration forest, trained by the training pipeline itself."""
    from features.traces.synthetic import generate_preset
    from pipelines.train import duration_split, train_duration, train_iterations

    table = generate_preset("saturn", seed=0, jobs=3000)
    duration = train_duration(table, algo="lightgbm", test_days=TEST_DAYS, n_estimators=30)
    iterations = train_iterations(table, test_days=TEST_DAYS, n_estimators=10)
    train, test = duration_split(table.frame, TEST_DAYS)
    return table.frame, train, test, duration, iterations


def records(rows: pd.DataFrame, *, ts: bool = True, seconds: bool = False, org: str = "org") -> pd.DataFrame:
    """Rows as a scheduler sends them: raw fields only, times as ISO strings (or trace seconds)."""
    out = pd.DataFrame({"job_id": rows["job_id"].astype(str).to_numpy(),
                        "num_gpus": rows["num_gpus"].astype(float).to_numpy(),
                        "num_nodes": rows["num_nodes"].astype(float).to_numpy(),
                        "user": rows["user"].astype(str).to_numpy(), org: rows["org"].astype(str).to_numpy(),
                        "job_name": rows["job_name"].astype(str).to_numpy(),
                        "group_id": rows["group_id"].astype(str).to_numpy()})
    if ts:
        out["submit_ts"] = rows["submit_ts"].dt.strftime("%Y-%m-%dT%H:%M:%S.%fZ").to_numpy()
    if seconds:
        out["submit_time"] = rows["submit_time"].to_numpy()
    return out


def finished(rows: pd.DataFrame) -> pd.DataFrame:
    return records(rows).assign(finished=True, duration=rows["duration"].to_numpy())


def test_raw_records_give_the_training_features_and_predictions(trained):
    """Holdout jobs as raw records (ISO times): the features equal the training pipeline's engineered
    features column by column, and the predictions equal the estimator's on those features, bit for bit."""
    from models.serving import raw_record_model

    frame, _, test, result, _ = trained
    X_test, _ = result.holdout
    model, _ = raw_record_model("duration", result.estimator, frame)
    raw = records(frame[test])
    X = model.features(raw)
    assert len(X.columns) == 35 and list(X.columns) == list(X_test.columns)
    pd.testing.assert_frame_equal(X.reset_index(drop=True), X_test.reset_index(drop=True), check_dtype=False)
    np.testing.assert_array_equal(model.predict(None, raw), result.estimator.predict(X_test))


def test_finished_jobs_sent_along_extend_the_history(trained):
    """A model whose history ends at the holdout start sees the holdout's finished jobs only once they are
    reported: with them, predictions equal training's; without (a fresh model), most of them differ. The
    finished records are kept: later requests without them still see them."""
    from models.serving import raw_record_model

    frame, train, test, result, _ = trained
    expected = result.estimator.predict(result.holdout[0])
    stale = raw_record_model("duration", result.estimator, frame[train])[0].predict(None, records(frame[test]))
    assert (stale != expected).mean() > 0.5
    model, _ = raw_record_model("duration", result.estimator, frame[train])
    request = pd.concat([finished(frame[test]), records(frame[test])], ignore_index=True)
    np.testing.assert_array_equal(model.predict(None, request), expected)
    np.testing.assert_array_equal(model.predict(None, records(frame[test])), expected)  # kept
    one = [model.predict_records(to_dicts(records(frame[test]).iloc[[i]]))[0] for i in range(0, int(test.sum()), 7)]
    np.testing.assert_array_equal(one, expected[::7])  # one job per call, as a scheduler asks


def test_a_cached_history_state_is_each_models_own(trained):
    """Models of the same history share one build (process cache, by content) but never the state: a
    model's finished records do not reach another model loaded from the same history, and a cache hit
    predicts exactly what a fresh build does."""
    import models.serving as S

    frame, train, test, result, _ = trained
    S._STATE_CACHE.clear()
    first, _ = S.raw_record_model("duration", result.estimator, frame[train])
    stale = first.predict(None, records(frame[test]))
    assert len(S._STATE_CACHE) == 1
    updated, _ = S.raw_record_model("duration", result.estimator, frame[train])
    updated.predict(None, finished(frame[test]))  # its history now holds the holdout's finished jobs
    np.testing.assert_array_equal(updated.predict(None, records(frame[test])),
                                  result.estimator.predict(result.holdout[0]))
    again, _ = S.raw_record_model("duration", result.estimator, frame[train])  # a cache hit, still stale
    np.testing.assert_array_equal(again.predict(None, records(frame[test])), stale)
    np.testing.assert_array_equal(first.predict(None, records(frame[test])), stale)
    assert len(S._STATE_CACHE) == 1
    S._STATE_CACHE.clear()  # a fresh build gives the same
    np.testing.assert_array_equal(S.raw_record_model("duration", result.estimator, frame[train])[0]
                                  .predict(None, records(frame[test])), stale)


def to_dicts(frame: pd.DataFrame) -> list[dict]:
    return [{k: v for k, v in rec.items() if not (isinstance(v, float) and np.isnan(v))}
            for rec in frame.to_dict(orient="records")]


def test_finished_record_replaces_the_history_job_with_its_id(trained):
    """Finished records whose job_id is in the history replace those jobs: sending the holdout again
    with ten times its durations gives what training's features give on a trace with those durations."""
    from features.duration import duration_features
    from models.serving import raw_record_model

    frame, _, test, result, _ = trained
    model, _ = raw_record_model("duration", result.estimator, frame)
    same = pd.concat([finished(frame[test]), records(frame[test])], ignore_index=True)
    np.testing.assert_array_equal(model.predict(None, same), result.estimator.predict(result.holdout[0]))
    longer = frame.copy()
    longer.loc[test, "duration"] = longer.loc[test, "duration"] * 10
    X = duration_features(longer)[result.columns][test]
    got = model.predict(None, pd.concat([finished(longer[test]), records(frame[test])], ignore_index=True))
    np.testing.assert_array_equal(got, result.estimator.predict(X))
    assert (got != result.estimator.predict(result.holdout[0])).mean() > 0.5


def test_trace_seconds_and_vc_alias(trained):
    """submit_time (seconds on the training clock) instead of submit_ts, and `vc` for the org."""
    from models.serving import raw_record_model

    frame, _, test, result, _ = trained
    model, _ = raw_record_model("duration", result.estimator, frame)
    raw = records(frame[test], ts=False, seconds=True, org="vc")
    np.testing.assert_array_equal(model.predict(None, raw), result.estimator.predict(result.holdout[0]))


def test_to_records_is_what_the_model_takes(trained):
    """models.serving.to_records: JSON-ready records (no nulls, ISO times) giving training's predictions."""
    from models.serving import raw_record_model, to_records

    frame, train, test, result, _ = trained
    model, _ = raw_record_model("duration", result.estimator, frame[train])
    recs = to_records(frame[test], finished=True) + to_records(frame[test])
    json.dumps(recs)  # plain JSON types only
    assert "submit_time" not in recs[0] and recs[0]["finished"] is True and "finished" not in recs[-1]
    np.testing.assert_array_equal(model.predict(None, pd.DataFrame(recs)),
                                  result.estimator.predict(result.holdout[0]))


def test_iterations_task_and_feature_frames_pass_through(trained):
    from models.serving import raw_record_model

    frame, _, test, duration, iterations = trained
    model, example = raw_record_model("iterations", iterations.estimator, frame)
    assert len(model.history) == 0  # its features (group, user) read no history
    np.testing.assert_array_equal(model.predict(None, records(frame[test])),
                                  iterations.estimator.predict(iterations.holdout[0]))
    dmodel, _ = raw_record_model("duration", duration.estimator, frame)
    X_test = duration.holdout[0]
    np.testing.assert_array_equal(dmodel.predict(None, X_test), duration.estimator.predict(X_test))
    assert example["finished"].tolist() == [False, False, False, True]  # the format, shown in the example


def test_unusable_records_are_named(trained):
    from mlflow.exceptions import MlflowException

    from models.serving import raw_record_model

    frame, _, test, result, _ = trained
    model, _ = raw_record_model("duration", result.estimator, frame)
    raw = records(frame[test].head(3))
    with pytest.raises(MlflowException, match="record 0: num_gpus: missing GPU count"):
        model.predict(None, raw.drop(columns="num_gpus"))
    with pytest.raises(MlflowException, match="record 1: submit_ts 'soon' is not a time"):
        model.predict(None, raw.assign(submit_ts=[raw["submit_ts"][0], "soon", raw["submit_ts"][2]]))
    with pytest.raises(MlflowException, match="submit_ts .* or submit_time"):
        model.predict(None, raw.drop(columns="submit_ts"))
    with pytest.raises(MlflowException, match="record 0: finished record: duration: missing or negative duration"):
        model.predict(None, raw.assign(finished=[True, False, False]))
    assert model.predict(None, raw.assign(finished=True, duration=5.0)).shape == (0,)


#: (value, the loaders' reason) for num_gpus: issue 20 item 14's cases
BAD_GPUS = [(-8, "negative GPU count"), (0, "no GPU requested (CPU-only job)"), ("eight", "GPU count not a number"),
            (1.5, "fractional GPU count"), (True, "GPU count not a number (a JSON boolean)"),
            (1e6, "implausible GPU count (> 100000)"), (1e308, "implausible GPU count (> 100000)"),
            (float("inf"), "implausible GPU count (> 100000)"), (None, "missing GPU count"),
            (float("nan"), "missing GPU count"), ([8], "GPU count not a number")]


def test_bad_records_get_the_loaders_reasons_one_line_each(trained):
    """Every bad record of a request is named on its own line with the trace loaders' reason (the same
    REASONS texts; the loaders' rule functions decide), the request is refused whole and nothing of it
    (not even its valid finished records) is applied."""
    from features.jobtable import REASONS, LoadReport, gpu_rejects
    from models.serving import RecordError, raw_record_model

    frame, _, test, result, _ = trained
    model, _ = raw_record_model("duration", result.estimator, frame)
    good = to_dicts(records(frame[test].head(1)))[0]
    before = model.predict_records([good])
    for value, reason in BAD_GPUS:
        if not isinstance(value, bool):  # the loaders' rule itself gives this reason
            rep = LoadReport("x", "x")
            assert not gpu_rejects(pd.Series([value], dtype=object), rep).iloc[0]
            assert reason == next(iter(rep.rejected))
        with pytest.raises(RecordError) as err:
            model.predict_records([good, {**good, "num_gpus": value}])
        assert err.value.lines == [f"record 1: num_gpus{' ' + repr(value) if value is not None else ''}: {reason}"] \
            or err.value.lines == [f"record 1: num_gpus: {reason}"], err.value.lines
    cases = {"submit_ts": ["soon", 5, "1999-12-31T00:00:00Z", "9999-01-01T00:00:00Z", None],
             "duration": [-1, "long", float("inf"), 1e308, None]}
    bad = [{**good, "submit_ts": v} for v in cases["submit_ts"]] + \
          [{**good, "finished": True, "duration": v} for v in cases["duration"]]
    fin = {**good, "job_id": "new-finished", "finished": True, "duration": 1e6}
    with pytest.raises(RecordError) as err:
        model.predict_records([fin] + bad)
    lines = err.value.lines
    assert len(lines) == len(bad) and all(line.startswith(f"record {i + 1}: ") for i, line in enumerate(lines))
    assert all("\n" not in line and "Traceback" not in line for line in lines)
    assert REASONS["submit_range"] in lines[2] and REASONS["submit_range"] in lines[3]
    assert "missing submit time" in lines[4]
    assert REASONS["duration_missing"] in lines[5] and REASONS["duration_text"] in lines[6]
    assert REASONS["duration_huge"] in lines[7] and REASONS["duration_huge"] in lines[8]
    np.testing.assert_array_equal(model.predict_records([good]), before)  # the finished record was not applied
    assert "new-finished" not in model._state.by_id
    # what the loaders accept, the model accepts: "8" (text of a number), 8.0
    assert len(model.predict_records([{**good, "num_gpus": "8"}, {**good, "num_gpus": 8.0}])) == 2


def test_incremental_state_matches_pandas_on_random_series():
    """_Accumulator's O(1) updates give pandas' groupby cumsum / cumcount and rolling(10) mean / median
    bit for bit (Kahan sums, the equal-values rule, ties, zeros, huge and tiny values)."""
    from models.serving import _Accumulator

    rng = np.random.default_rng(1)
    for trial in range(200):
        n = int(rng.integers(1, 50))
        x = [rng.lognormal(5, 3, n), rng.integers(0, 4, n) * 10.0 ** rng.integers(-2, 7), rng.random(n) * 1e7,
             np.round(rng.lognormal(8, 2, n))][trial % 4]
        s = pd.Series(x)
        g = s.groupby(np.zeros(n))
        ref = np.column_stack([g.cumcount() + 1, g.cumsum() / (g.cumcount() + 1),
                               g.transform(lambda v: v.rolling(10, min_periods=1).mean()),
                               g.transform(lambda v: v.rolling(10, min_periods=1).median())])
        acc = _Accumulator()
        got = np.array([acc.add(float(v)) for v in x])
        np.testing.assert_array_equal(got, ref)


def test_out_of_order_and_replaced_jobs_give_the_in_order_statistics():
    """_Series: jobs added in any order (an insert, then a repair of the entries after the insertion point,
    from the last checkpoint) and removed by id end with the statistics of the same jobs appended in
    training's order."""
    from models.serving import _Series

    rng = np.random.default_rng(2)
    for trial in range(20):
        n = int(rng.integers(1, 400))
        jobs = [(float(rng.integers(0, 50)), float(rng.integers(0, 5)), seq, float(rng.lognormal(4, 2)))
                for seq in range(n)]
        shuffled = [jobs[i] for i in rng.permutation(n)]
        s = _Series()
        for job in shuffled:
            s.add(*job)
        gone = set(rng.choice(n, size=n // 5, replace=False).tolist())
        for seq in gone:
            s.remove(seq)
        ref = _Series()
        for job in sorted(j for j in jobs if j[2] not in gone):
            ref.add(*job)
        assert list(s.seqs) == list(ref.seqs)
        # before the repair (a concurrent query's view): count and rolling median exact, means to rounding
        for i in range(1, len(ref) + 1):
            got, want = s.stats_at(i), ref.stats_at(i)
            assert got[0] == want[0] and got[3] == want[3]
            np.testing.assert_allclose(got[1:3], want[1:3], rtol=1e-12)
        s.repair(10 ** 9)  # what the request that reported the jobs does before it answers
        assert list(s.stats) == list(ref.stats)
        assert len(s.checkpoints) == len(ref.checkpoints)


def test_a_request_does_no_pandas_work_and_a_finished_job_is_an_append(trained):
    """The latency contract, checked by the work done rather than by a clock: after load, a one-job
    request and a finished record call nothing in pandas (a profiler hook sees every Python and C call),
    and a finished job that ends after its keys' last job is one O(1) append per key (no rebuild)."""
    import sys

    from models.serving import _Series, raw_record_model

    frame, _, test, result, _ = trained
    model, _ = raw_record_model("duration", result.estimator, frame)
    model.prepare()
    assert model._matrix is not None  # LightGBM: the booster on a float matrix
    good = to_dicts(records(frame[test].tail(1)))[0]
    last = frame[test].tail(1)
    def day(n: int) -> str:
        return (last["submit_ts"].iloc[0] + pd.Timedelta(days=n)).strftime("%Y-%m-%dT%H:%M:%SZ")

    done = {**good, "submit_ts": day(60), "job_id": "just-finished", "finished": True, "duration": 3600.0}
    later = {**good, "submit_ts": day(61)}
    pandas_dir = str(Path(pd.__file__).parent)
    calls: list[str] = []

    def hook(frame_, event, arg):
        if event == "call" and frame_.f_code.co_filename.startswith(pandas_dir):
            calls.append(f"{frame_.f_code.co_filename}:{frame_.f_code.co_name}")
        elif event == "c_call" and getattr(arg, "__module__", None) and str(arg.__module__).startswith("pandas"):
            calls.append(f"{arg.__module__}.{arg.__name__}")

    sizes = {name: {k: len(s) for k, s in series.items()} for name, series in model._state.series.items()}
    rebuilt = []
    original = _Series._invalidate
    _Series._invalidate = lambda self, *a, **kw: (rebuilt.append(a[0]), original(self, *a, **kw))[1]
    sys.setprofile(hook)
    try:
        first = model.predict_records([later])
        model.predict_records([done])
        second = model.predict_records([later])
    finally:
        sys.setprofile(None)
        _Series._invalidate = original
    assert calls == [], calls[:10]
    assert rebuilt == []  # appends only
    grown = [(name, k) for name, series in model._state.series.items() for k, s in series.items()
             if len(s) != sizes[name].get(k, 0)]
    assert len(grown) == 6 and all(len(model._state.series[n][k]) == sizes[n].get(k, 0) + 1 for n, k in grown)
    assert first[0] != second[0]  # the finished job is seen by the next request


def _log(result, history, root, uri: str, name: str, artifact: bool):
    """Log the raw-record model to the sqlite store ``uri`` and register it (no models.registry);
    the type-hint warnings MLflow gave while logging."""
    import mlflow

    from models.registry import PIP_REQUIREMENTS
    from models.serving import history_artifacts, raw_record_model

    exp = mlflow.create_experiment(name, artifact_location=(root / name).as_uri())
    model, example = raw_record_model(result.task, result.estimator, history)
    artifacts = history_artifacts(model, root / f"{name}-snapshot") if artifact else None
    with warnings.catch_warnings(record=True) as caught, mlflow.start_run(experiment_id=exp):
        warnings.simplefilter("always")
        info = mlflow.pyfunc.log_model(name="model", python_model=model, artifacts=artifacts,
                                       signature=model.signature, input_example=example,
                                       registered_model_name=name, pip_requirements=PIP_REQUIREMENTS)
    return info, [str(w.message) for w in caught if "type hint" in str(w.message)]


@pytest.fixture(scope="module")
def store(trained, tmp_path_factory, empty_store_db):
    """One sqlite store with two versions: 'duration-raw' (history up to the holdout, as a parquet
    artifact) and 'duration-raw-pickled' (all jobs, inside the pickle)."""
    import os
    import shutil

    import mlflow

    frame, train, _, result, _ = trained
    root = tmp_path_factory.mktemp("store")
    shutil.copy(empty_store_db, root / "mlflow.db")  # migrated once per worker
    uri = f"sqlite:///{root / 'mlflow.db'}"
    saved = {k: v for k, v in os.environ.items() if k.startswith("MLFLOW_")}
    mlflow.set_tracking_uri(uri)
    mlflow.set_registry_uri(uri)
    logged = {"duration-raw": _log(result, frame[train], root, uri, "duration-raw", artifact=True),
              "duration-raw-pickled": _log(result, frame, root, uri, "duration-raw-pickled", artifact=False)}
    for k in [k for k in os.environ if k.startswith("MLFLOW_")]:
        del os.environ[k]
    os.environ.update(saved)
    return uri, logged


def test_logged_model_round_trip(trained, store):
    """Logged with the history as a parquet artifact and, separately, inside the pickle: both load
    and predict raw records as before; every input column is optional; no type-hint warning."""
    import mlflow

    frame, train, test, result, _ = trained
    uri, logged = store
    mlflow.set_tracking_uri(uri)
    expected = result.estimator.predict(result.holdout[0])
    info, hints = logged["duration-raw"]
    assert hints == []
    local = Path(mlflow.artifacts.download_artifacts(info.model_uri))
    assert [p.name for p in (local / "artifacts").iterdir()] == ["history.parquet"]
    assert len(pd.read_parquet(local / "artifacts" / "history.parquet")) == train.sum()
    loaded = mlflow.pyfunc.load_model(info.model_uri)
    request = pd.concat([finished(frame[test]), records(frame[test])], ignore_index=True)
    np.testing.assert_array_equal(loaded.predict(request), expected)
    assert not any(c.required for c in loaded.metadata.get_input_schema().inputs)
    np.testing.assert_array_equal(loaded.predict(result.holdout[0]), expected)  # feature frames too

    from models.serving import to_records

    loaded2 = mlflow.pyfunc.load_model(logged["duration-raw-pickled"][0].model_uri)
    np.testing.assert_array_equal(loaded2.predict(records(frame[test]).head(50)), expected[:50])
    ints = pd.DataFrame(to_records(frame[test]))  # integer GPUs / nodes, as a Python client builds them
    assert ints["num_gpus"].dtype == np.int64
    np.testing.assert_array_equal(loaded2.predict(ints), expected)


def post(url: str, body: dict) -> tuple[int, dict]:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"{}")


@pytest.mark.slow
def test_schedcast_serve_answers_raw_records_and_stops_clean(trained, store, tmp_path):
    """`schedcast serve models:/duration-raw/1` (no interpreter on PATH: uvicorn must still be found)
    answers a curl-style JSON request of raw records with training's predictions; a finished record
    changes later predictions; a bad record is a 400 with a message; SIGTERM leaves nothing behind."""
    frame, train, test, result, _ = trained
    expected = result.estimator.predict(result.holdout[0])
    uri, _ = store
    port = free_port()
    cli = CliProcess(["serve", "models:/duration-raw/1", "--port", str(port), "--tracking-uri", uri,
                      "--ready-timeout", str(READY_S)], tmp_path, bare_env())
    tree: dict[int, str] = {}
    try:
        t0 = time.monotonic()
        cli.wait_for(f"at http://127.0.0.1:{port}/invocations", READY_S + 30)
        ready = time.monotonic() - t0
        tree = process_tree(cli.proc.pid)
        url = f"http://127.0.0.1:{port}/invocations"
        body = pd.concat([finished(frame[test]), records(frame[test])], ignore_index=True)
        body = json.loads(body.to_json(orient="records"))
        body = [{k: v for k, v in rec.items() if v is not None} for rec in body]  # as written by hand: no nulls
        status, reply = post(url, {"dataframe_records": body})
        assert status == 200, reply
        np.testing.assert_allclose(reply["predictions"], expected, rtol=1e-12)
        status, reply = post(url, {"dataframe_records": [{"submit_ts": "2020-04-03T12:00:00Z", "user": "u0001"}]})
        assert status == 400 and reply["message"] == "record 0: num_gpus: missing GPU count", reply
        assert "Starting" not in cli.output().split("starting:")[0]  # nothing of the child before its start line
        stop = cli.terminate_and_check(port, tree, signal.SIGTERM)
        assert cli.proc.returncode == 128 + signal.SIGTERM
        print(f"schedcast serve: ready after {ready:.1f} s, stopped in {stop:.1f} s")
    finally:
        cli.kill_all(tree)


@pytest.fixture(scope="module")
def scoring(trained, store):
    """schedcast's scoring server (pipelines.server.make_scoring_server) in a thread on a free loopback
    port, serving 'duration-raw' (history up to the holdout) loaded as `schedcast serve` loads it."""
    import os
    import threading

    import mlflow

    from pipelines.server import Scorer, make_scoring_server

    uri, logged = store
    saved = {k: v for k, v in os.environ.items() if k.startswith("MLFLOW_")}
    mlflow.set_tracking_uri(uri)
    mlflow.set_registry_uri(uri)
    try:
        scorer = Scorer(logged["duration-raw"][0].model_uri)
    finally:
        for k in [k for k in os.environ if k.startswith("MLFLOW_")]:
            del os.environ[k]
        os.environ.update(saved)
    port = free_port()
    server = make_scoring_server(scorer, "127.0.0.1", port)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{port}", scorer
    server.shutdown()
    server.server_close()


def post_raw(url: str, body: bytes) -> tuple[int, dict]:
    req = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"{}")


def test_scoring_server_answers_like_training_and_refuses_bad_records(trained, scoring):
    """Over HTTP on loopback (keep-alive and not): the holdout after its finished jobs equals training's
    predictions; issue 20 item 14's num_gpus values, 1e308 / Infinity / NaN in JSON, a bad time and a
    missing duration are HTTP 400 with one line per bad record and no stack trace; feature frames
    (the simulator's RestPredictor) still work."""
    import http.client

    frame, train, test, result, _ = trained
    url, scorer = scoring
    expected = result.estimator.predict(result.holdout[0])
    fin = to_dicts(finished(frame[test]))
    queries = to_dicts(records(frame[test]))
    status, reply = post(f"{url}/invocations", {"dataframe_records": fin + queries})
    assert status == 200, reply
    np.testing.assert_array_equal(reply["predictions"], expected)  # JSON floats round-trip exactly
    host, port = url[len("http://"):].split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    for i in range(0, len(queries), 25):  # one job per request on one connection, as a scheduler's client
        conn.request("POST", "/invocations", body=json.dumps({"dataframe_records": [queries[i]]}),
                     headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        assert resp.status == 200
        assert json.loads(resp.read())["predictions"] == [expected[i]]
    conn.close()
    good = queries[0]
    bad = [{**good, "num_gpus": v} for v, _ in BAD_GPUS if not (isinstance(v, float) and not np.isfinite(v))]
    status, reply = post(f"{url}/invocations", {"dataframe_records": [good] + bad})
    assert status == 400 and reply["error_code"] == "INVALID_PARAMETER_VALUE", reply
    lines = reply["message"].splitlines()
    assert len(lines) == len(bad) and all(line.startswith(f"record {i + 1}: num_gpus") for i, line in enumerate(lines))
    assert "negative GPU count" in lines[0] and "Traceback" not in reply["message"] and "stack_trace" not in reply
    text = json.dumps(good)[:-1]
    for literal in ("1e308", "Infinity", "-Infinity", "NaN"):
        status, reply = post_raw(f"{url}/invocations", ('{"dataframe_records": [' + text + ', "num_gpus": ' + literal
                                                        + '}]}').encode())
        assert status == 400 and reply["message"].startswith("record 0: num_gpus") and "\n" not in reply["message"], \
            (literal, reply)
    status, reply = post(f"{url}/invocations", {"dataframe_records": [{**good, "submit_ts": "soon"},
                                                                      {**good, "finished": True}]})
    assert status == 400 and reply["message"].splitlines() == [
        "record 0: submit_ts 'soon' is not a time", "record 1: finished record: duration: missing or negative duration"]
    status, reply = post_raw(f"{url}/invocations", b"{not json")
    assert status == 400 and "not JSON" in reply["message"]
    X = result.holdout[0].head(20)
    status, reply = post(f"{url}/invocations", {"dataframe_split": json.loads(X.to_json(orient="split", index=False))})
    assert status == 200 and np.allclose(reply["predictions"], result.estimator.predict(X), rtol=1e-9), reply
    with urllib.request.urlopen(f"{url}/ping", timeout=10) as resp:
        assert resp.status == 200
    assert scorer.raw is not None and scorer.raw._matrix is not None


@pytest.mark.slow
def test_philly_holdout_is_bit_identical_one_job_at_a_time(philly_file):
    """Philly (74k jobs, no users: org x GPU keys): the holdout's jobs as raw records, in one request and
    one job per call, give training's predictions bit for bit (finished jobs reported along: the
    synthetic tests above; their cost on Philly: benchmarks/bench_serving.py)."""
    from features.traces import load_trace
    from models.serving import raw_record_model, to_records
    from pipelines.train import duration_split, train_duration

    table = load_trace(philly_file)
    result = train_duration(table, algo="lightgbm", test_days=30.0, n_estimators=5)
    frame = table.frame
    _, test = duration_split(frame, 30.0)
    expected = result.estimator.predict(result.holdout[0])
    model, _ = raw_record_model("duration", result.estimator, frame)
    holdout = to_records(frame[test])
    np.testing.assert_array_equal(model.predict_records(holdout), expected)
    step = max(1, len(holdout) // 500)
    np.testing.assert_array_equal([model.predict_records([holdout[i]])[0] for i in range(0, len(holdout), step)],
                                  expected[::step])


# -- a 1,000-job request (issue 22 item 1): columns, not records; orjson where it reads what json reads --
SERVING = str(Path(__file__).resolve().parents[1] / "models")


def _per_record(model, recs: list[dict]) -> pd.DataFrame:
    """The features of the record-by-record path (what every request took before the columnar one)."""
    rows = model._rows(recs)
    return model._frame([list(c) for c in zip(*rows)], len(rows))


@pytest.mark.parametrize("variant", ["iso", "seconds+vc", "floats, gaps"])
def test_columnar_batch_equals_the_per_record_path_and_training(trained, variant):
    """The holdout as one batch takes the columnar path and gives the per-record path's features and
    training's predictions bit for bit: ISO times; trace seconds with the `vc` alias; float GPU / node
    counts with nodes, users and orgs left out of some records."""
    from models.serving import raw_record_model
    from models.serving_records import parse_columns

    frame, _, test, result, _ = trained
    model, _ = raw_record_model("duration", result.estimator, frame)
    model.prepare()
    if variant == "iso":
        recs = to_dicts(records(frame[test]))
        recs = [{**r, "num_gpus": int(r["num_gpus"]), "num_nodes": int(r["num_nodes"])} for r in recs]
    elif variant == "seconds+vc":
        recs = to_dicts(records(frame[test], ts=False, seconds=True, org="vc"))
    else:
        recs = to_dicts(records(frame[test]))
        for i, r in enumerate(recs):
            for k in ("num_nodes", "user", "org", "group_id")[: i % 5]:
                r.pop(k, None)
    assert parse_columns(recs, model._clock) is not None
    fast = model.features(recs)
    pd.testing.assert_frame_equal(fast, _per_record(model, recs))
    if variant != "floats, gaps":
        np.testing.assert_array_equal(model.predict_records(recs), result.estimator.predict(result.holdout[0]))


def test_a_batch_costs_a_fixed_number_of_python_calls(trained):
    """The latency contract of a batch, by the work done rather than by a clock: the Python functions of
    models/serving*.py called for a 1,000-job request are as many as for a 100-job one (columns, not
    records; comprehensions and generators aside). Record by record, it was ten times as many."""
    import sys

    from models.serving import raw_record_model

    frame, _, test, result, _ = trained
    model, _ = raw_record_model("duration", result.estimator, frame)
    model.prepare()
    recs = to_dicts(records(frame[test]))
    big = [recs[i % len(recs)] for i in range(1000)]
    model.predict_records(big)  # warm the recurring-group cache

    def calls(batch: list[dict]) -> int:
        seen: list[str] = []

        def hook(frame_, event, arg):
            code = frame_.f_code
            if event == "call" and code.co_filename.startswith(SERVING) and not code.co_name.startswith("<"):
                seen.append(code.co_name)

        sys.setprofile(hook)
        try:
            model.predict_records(batch)
        finally:
            sys.setprofile(None)
        return len(seen)

    small = calls(big[:100])
    assert 0 < small == calls(big) < 60


def test_one_bad_record_in_a_batch_is_named_and_nothing_applied(trained):
    """A batch with one bad record among good ones (and a finished one) leaves the columnar path: the
    record is named on one line with the loaders' reason, and the finished record is not applied."""
    from models.serving import RecordError, raw_record_model

    frame, _, test, result, _ = trained
    model, _ = raw_record_model("duration", result.estimator, frame)
    recs = to_dicts(records(frame[test]))
    before = model.predict_records(recs)
    bad = [dict(r) for r in recs]
    bad[7]["num_gpus"] = 2.5
    bad.append({**recs[0], "job_id": "new-finished", "finished": True, "duration": 10.0})
    with pytest.raises(RecordError) as err:
        model.predict_records(bad)
    assert err.value.lines == ["record 7: num_gpus 2.5: fractional GPU count"]
    np.testing.assert_array_equal(model.predict_records(recs), before)


@pytest.mark.parametrize("body", [b'{"a": NaN, "b": -Infinity}', b'{"a": 1e400}',
                                  b'{"a": 123456789012345678901234567890}', b'{"a": "\\ud83d\\ude00"}',
                                  b'{"a": [1.5, 0.1, 1e-7, 1e16, -0.0, 18446744073709551615]}', "{\"a\": \"é\"}".encode()])
def test_request_json_reads_as_the_standard_library_reads_it(body):
    """The scoring server's parse (orjson where it agrees) gives json.loads' values, types included."""
    from pipelines.server import _loads

    got, want = _loads(body), json.loads(body)
    assert repr(got) == repr(want)


def test_scorer_answers_the_same_with_and_without_orjson(trained, monkeypatch):
    """Same predictions (as values) from the orjson and the json encoders; a 30-digit GPU count is
    refused with the number as Python's json reads it, orjson or not."""
    import pipelines.server as server
    from models.serving import raw_record_model

    frame, _, test, result, _ = trained
    model, _ = raw_record_model("duration", result.estimator, frame)
    scorer = server.Scorer.__new__(server.Scorer)
    scorer.raw, scorer.pyfunc = model, None
    recs = to_dicts(records(frame[test]))
    body = json.dumps({"dataframe_records": recs}).encode()
    huge = json.dumps({"dataframe_records": [{**recs[0], "num_gpus": 10 ** 30}]}).encode()
    fast, fast_bad = scorer.score(body), scorer.score(huge)
    monkeypatch.setattr(server, "_orjson", lambda: None)
    slow, slow_bad = scorer.score(body), scorer.score(huge)
    assert fast[0] == slow[0] == 200
    assert json.loads(fast[1]) == json.loads(slow[1])
    np.testing.assert_array_equal(json.loads(fast[1])["predictions"], result.estimator.predict(result.holdout[0]))
    assert fast_bad == slow_bad and fast_bad[0] == 400
    assert json.loads(fast_bad[1])["message"].startswith(f"record 0: num_gpus {10 ** 30}:")


@pytest.mark.parametrize("kind", ["rf", "iterations-zero", "iterations-fallback"])
def test_forests_take_their_trees_directly_with_the_same_numbers(trained, kind):
    """scikit-learn forests (the RF duration model, A-SRPT's iteration forest with either unseen rule)
    are evaluated tree by tree on a float32 matrix, not through the estimator's pandas / joblib predict
    (hundreds of ms for one job): chosen at load and bit-identical to the estimator on the holdout,
    unseen groups included."""
    from models.serving import raw_record_model
    from pipelines.train import train_duration, train_iterations

    frame, _, test, _, _ = trained
    if kind == "rf":
        result = train_duration(trained_table(frame), algo="rf", test_days=TEST_DAYS, n_estimators=10)
    else:
        result = train_iterations(trained_table(frame), unseen=kind.split("-")[1], test_days=TEST_DAYS,
                                  n_estimators=10)
    model, _ = raw_record_model(result.task, result.estimator, frame)
    model.prepare()
    assert model._matrix is not None
    recs = to_dicts(records(frame[test]))
    X = result.holdout[0].copy().reset_index(drop=True)
    if kind != "rf":  # the forest's only features: a new group and user (a duration model's history moves too)
        recs[0] = {**recs[0], "group_id": "a group never seen", "user": "a new user"}
        X.loc[0, "group_id"], X.loc[0, "user"] = "a group never seen", "a new user"
    np.testing.assert_array_equal(model.predict_records(recs), result.estimator.predict(X))
    np.testing.assert_array_equal(model.predict_records(recs[:1]), result.estimator.predict(X.head(1)))


def trained_table(frame: pd.DataFrame):
    """The trained fixture's jobs as a JobTable again (the training entry points take one)."""
    from features.traces.synthetic import generate_preset

    table = generate_preset("saturn", seed=0, jobs=3000)
    assert table.frame["job_id"].equals(frame["job_id"])
    return table
