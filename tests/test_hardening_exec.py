"""Issue 20, "code execution, spec validation and bounds": no string from a file or flag becomes an import
or opens a store the user did not configure; a spec is validated whole before any cell runs; bounds are
checked up front. Bad input: exit 2, one line on stderr, nothing written."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from features.paths import REPO_ROOT
from tests.helpers import assert_one_line_error, run_main

ENV = {**os.environ, "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg", "HF_HUB_OFFLINE": "1"}


def _cli(args: list[str], cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    """The real `schedcast` entry point in a child process."""
    return subprocess.run([sys.executable, "-c", "from pipelines.cli import entry; entry()", *args], cwd=cwd,
                          env={**ENV, "PYTHONPATH": str(REPO_ROOT)}, capture_output=True, text=True,
                          timeout=timeout)


def _files(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


def _spec(tmp_path: Path, **changes) -> Path:
    data = {"name": "t", "workloads": [{"name": "d", "synthetic": "demo", "jobs": 40}], "policies": ["fifo"]}
    data.update(changes)
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


# -- 1. generators are registered names, never import paths ------------------------------------------
def nontable_generator(params, seed, jobs):
    return [1, 2, 3]


def test_spec_naming_an_import_path_as_generator_is_refused(tmp_path, capsys):
    spec = _spec(tmp_path, workloads=[{"name": "x", "generator": "subprocess:call", "cluster": "demo",
                                       "params": {"args": "touch pwned"}}])
    before = _files(tmp_path)
    rc, err = run_main(["experiment", "run", str(spec), "--engine", "serial", "--out", str(tmp_path / "run"),
                     "--dry-run"], capsys)
    assert_one_line_error(rc, err, "workloads[0].generator", "import path")
    assert _files(tmp_path) == before and not (tmp_path / "pwned").exists()


def test_preset_naming_an_import_path_is_refused_and_a_registered_one_runs(tmp_path, monkeypatch, capsys):
    from features.traces import synthetic

    root = tmp_path / "configs"
    shutil.copytree(REPO_ROOT / "configs" / "clusters", root / "clusters")
    (root / "workloads").mkdir()
    (root / "workloads" / "evil.yaml").write_text('generator: "os:system"\ncluster: demo\n')
    (root / "workloads" / "plain.yaml").write_text("generator: gfs\ncluster: demo\n")
    monkeypatch.setenv("SCHEDCAST_CONFIGS", str(root))
    with pytest.raises(ValueError, match="import path"):
        synthetic.build_preset("evil")
    assert synthetic.check_generator_name("gfs") == "gfs"
    with pytest.raises(ValueError, match="unknown generator 'nope'"):
        synthetic.check_generator_name("nope")

    # an installed plug-in (entry point group schedcast.generators) is found by name
    class FakeEntryPoint:
        name = "plugin-gen"

        def load(self):
            return nontable_generator

    from features import plugins

    monkeypatch.setattr(plugins, "entry_points_of",
                        lambda group: {"plugin-gen": FakeEntryPoint()} if group == "schedcast.generators" else {})
    monkeypatch.setattr(synthetic.GENERATORS, "_items", {})
    assert synthetic.get_generator("plugin-gen") is nontable_generator
    assert "plugin-gen" in synthetic.generator_names()


def test_a_generator_returning_a_non_table_is_exit_2(tmp_path, monkeypatch, capsys):
    from features.traces import synthetic

    root = tmp_path / "configs"
    shutil.copytree(REPO_ROOT / "configs" / "clusters", root / "clusters")
    (root / "workloads").mkdir()
    (root / "workloads" / "bad.yaml").write_text("generator: nontable-test\ncluster: demo\n")
    monkeypatch.setenv("SCHEDCAST_CONFIGS", str(root))
    monkeypatch.setitem(synthetic._REGISTERED, "nontable-test", nontable_generator)
    out = tmp_path / "out"
    rc, err = run_main(["simulate", "--synthetic", "bad", "--policy", "fifo", "--no-plots", "--no-progress",
                     "--out", str(out)], capsys)
    assert_one_line_error(rc, err, "not a JobTable")
    assert not out.exists()


# -- 2. --synthetic takes preset names only ----------------------------------------------------------
@pytest.mark.parametrize("command", ["simulate", "train"])
def test_synthetic_refuses_paths(tmp_path, capsys, monkeypatch, command):
    evil = tmp_path / "elsewhere" / "evil.yaml"
    evil.parent.mkdir()
    shutil.copy(REPO_ROOT / "configs" / "workloads" / "demo.yaml", evil)  # a valid preset, outside configs/
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    for text in (str(evil.with_suffix("")), "../../elsewhere/evil", "demo/../demo", ""):
        args = (["simulate", "--synthetic", text, "--policy", "fifo", "--no-plots", "--out", str(work / "o")]
                if command == "simulate" else ["train", "duration", "--synthetic", text])
        rc, err = run_main(args, capsys)
        assert_one_line_error(rc, err, "preset")
        assert _files(work) == set(), text  # no result folder, no mlruns


# -- 3. a store the user did not configure is untrusted ----------------------------------------------
class _EvilModel:
    """What a hostile store holds: a pyfunc whose loading runs code (writes a marker file)."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def load_context(self, context) -> None:
        Path(self.marker).write_text("code ran")

    def predict(self, context, model_input, params=None):
        return [0] * len(model_input)


@pytest.fixture()
def evil_store(tmp_path, migrated_store):
    """A sqlite store elsewhere whose registered 'packing' champion runs code when loaded."""
    import mlflow
    import mlflow.pyfunc

    class Model(_EvilModel, mlflow.pyfunc.PythonModel):
        pass

    db = tmp_path / "elsewhere" / "evil.db"
    uri = migrated_store(db)
    marker = tmp_path / "marker"
    client = mlflow.MlflowClient(tracking_uri=uri, registry_uri=uri)
    exp = client.create_experiment("evil", artifact_location=(db.parent / "art").as_uri())
    mlflow.set_tracking_uri(uri)
    mlflow.set_registry_uri(uri)
    with mlflow.start_run(experiment_id=exp):
        info = mlflow.pyfunc.log_model(name="model", python_model=Model(str(marker)),
                                       pip_requirements=["mlflow"])  # named: no ~4 s inference subprocess
    mv = mlflow.register_model(info.model_uri, "packing")
    client.set_registered_model_alias("packing", "champion", mv.version)
    marker.unlink(missing_ok=True)  # MLflow loads the model once while logging it
    os.environ.pop("MLFLOW_TRACKING_URI", None)  # nothing configured by the user (conftest restores the env)
    os.environ.pop("MLFLOW_REGISTRY_URI", None)
    return uri, marker


@pytest.mark.slow  # an MLflow sqlite store (schema migration) or child processes
def test_simulate_refuses_a_policy_parameter_naming_another_store(evil_store, tmp_path, monkeypatch, capsys):
    uri, marker = evil_store
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    policy = f"lucid:packing_model=models:/packing@champion,tracking_uri={uri}"
    rc, err = run_main(["simulate", "--synthetic", "demo", "--jobs", "30", "--policy", policy, "--no-plots",
                     "--no-progress", "--out", str(work / "o")], capsys)
    assert_one_line_error(rc, err, "refusing", "--trust-local-models")
    assert not marker.exists() and _files(work) == set()


@pytest.mark.slow  # an MLflow sqlite store (schema migration) or child processes
def test_experiment_refuses_it_in_the_spec_and_in_a_cell(evil_store, tmp_path, monkeypatch, capsys):
    from pipelines import experiment as E

    uri, marker = evil_store
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    entry = {"name": "lucid", "params": {"packing_model": "models:/packing@champion", "tracking_uri": uri}}
    spec = _spec(work, policies=[entry])
    rc, err = run_main(["experiment", "run", str(spec), "--engine", "serial", "--out", str(work / "run")], capsys)
    assert_one_line_error(rc, err, "policies[0]", "refusing")
    assert not marker.exists() and not (work / "run").exists()
    # a worker refuses it too (a cell built without the driver's checks, as a Dask worker receives it)
    source = {"synthetic": "demo", "trace": None, "format": None, "jobs": 30, "cluster": None,
              "offered_load": None, "costs": "none", "default_gpus": None, "data_dir": None}
    cell = E.Cell(workload="d", policy=f"lucid:packing_model='models:/packing@champion',tracking_uri='{uri}'",
                  label="lucid", seed=0, predictor="unused", source=source)
    record = E.run_cell(cell, str(work / "cell"), code="test")
    assert record["status"] != "ok" and "refusing" in record["error"] and not marker.exists()
    # the user's explicit trust lets it through (and the pickle's code runs: that is what trust means)
    E.run_cell(cell, str(work / "cell2"), code="test", trust_local=True)
    assert marker.exists()


def test_trust_scope_does_not_outlive_its_command():
    from models.registry import UntrustedModelError, check_store, trust_scope

    with trust_scope("sqlite:////tmp/configured.db"):
        check_store("sqlite:////tmp/configured.db", "store")
        with pytest.raises(UntrustedModelError):
            check_store("sqlite:////tmp/other.db", "store")
    with trust_scope(None, trust_local=True):
        check_store("sqlite:////tmp/other.db", "store")
    with pytest.raises(UntrustedModelError):
        check_store("sqlite:////tmp/configured.db", "store")


# -- 9. the whole spec is validated before any cell runs ---------------------------------------------
@pytest.mark.parametrize("changes, field", [
    ({"failures": "bogus"}, "field failures"),
    ({"placement": "bogus"}, "field placement"),
    ({"performance": "bogus"}, "field performance"),
    ({"workloads": [{"name": "d", "synthetic": "demo", "jobs": 40, "failures": "rate=x"}]}, "workloads[0].failures"),
    ({"policies": [{"name": "fifo", "placement": "bogus"}]}, "policies[0].placement"),
    ({"workloads": [{"name": "d", "trace": "no/such/trace.csv", "cluster": "demo"}]}, "workloads[0].trace"),
    ({"workloads": [{"name": "d", "trace": "TRACE_DIR", "cluster": "demo"}]}, "workloads[0].trace"),
    ({"workloads": [{"name": "d", "synthetic": "demo", "cluster": "no-such-cluster"}]}, "workloads[0].cluster"),
    ({"workloads": [{"name": "d", "synthetic": "demo", "cluster": "BAD_CLUSTER"}]}, "workloads[0].cluster"),
    ({"workloads": [{"name": "d", "generator": "missing-gen", "cluster": "demo"}]}, "workloads[0].generator"),
    ({"workloads": [{"name": "d", "generator": "no.such.module:gen", "cluster": "demo"}]}, "workloads[0].generator"),
    ({"seeds": [-1]}, "field seeds"),
    ({"workloads": [{"name": "d", "synthetic": "demo", "seeds": [-5]}]}, "workloads[0].seeds"),
    ({"rank_by": "bogus"}, "field rank_by"),
    ({"workloads": [{"name": "d", "synthetic": "demo", "window": [0, float("inf")]}]}, "workloads[0].window"),
    ({"workloads": [{"name": "d", "synthetic": "demo", "window": [float("nan"), 5]}]}, "workloads[0].window"),
])
def test_spec_mistakes_fail_before_any_cell_and_in_dry_run(tmp_path, capsys, changes, field):
    text = json.dumps(changes).replace('"TRACE_DIR"', json.dumps(str(tmp_path)))
    bad_cluster = tmp_path / "bad-cluster.yaml"
    bad_cluster.write_text("name: bad\nnodes: [not, a, number]\n")
    text = text.replace('"BAD_CLUSTER"', json.dumps(str(bad_cluster)))
    spec = _spec(tmp_path, **json.loads(text))
    for extra in (["--dry-run"], []):
        rc, err = run_main(["experiment", "run", str(spec), "--engine", "serial", "--out", str(tmp_path / "run"),
                         *extra], capsys)
        assert_one_line_error(rc, err, field)
        assert not (tmp_path / "run").exists()


def test_a_run_where_no_cell_succeeded_exits_non_zero(tmp_path, capsys):
    spec = _spec(tmp_path, failures="trace")  # valid, but demo has no failure columns: every cell skipped
    rc, err = run_main(["experiment", "run", str(spec), "--engine", "serial", "--out", str(tmp_path / "run"),
                     "--no-progress"], capsys)
    assert rc != 0 and "no cell of t succeeded" in err


# -- 11. bounds, checked up front ---------------------------------------------------------------------
def test_wide_headers_are_refused_or_checked_in_linear_time(tmp_path):
    from features.jobtable import TraceError
    from features.traces._io import MAX_COLUMNS, read_csv

    wide = tmp_path / "wide.csv"  # the quadratic duplicate-column check ran > 5 min on 100,000 columns
    wide.write_text(",".join(f"c{i}" for i in range(100_000)) + "\n" + ",".join("1" for _ in range(100_000)) + "\n")
    t0 = time.perf_counter()
    with pytest.raises(TraceError, match="100,000 fields"):
        read_csv(wide)
    assert time.perf_counter() - t0 < 10
    assert MAX_COLUMNS >= 1000
    names = [f"c{i}" for i in range(2999)] + ["c7"]  # within the bound, with one repeated name
    dup = tmp_path / "dup.csv"
    dup.write_text(",".join(names) + "\n" + ",".join("1" for _ in names) + "\n")
    with pytest.raises(TraceError, match=r"repeated column name\(s\) \['c7'\]"):
        read_csv(dup)
    from collections import Counter  # noqa: F401 - the check itself: one pass (Counter), not list.count per name
    import inspect

    from features.traces import _io

    assert ".count(c)" not in inspect.getsource(_io.read_csv)


@pytest.mark.parametrize("args, words", [
    (["simulate", "--synthetic", "demo", "--offered-load", "1e-300"], "--offered-load"),
    (["simulate", "--synthetic", "demo", "--cluster", "HUGE_GPUS"], "gpus_per_node"),
    (["simulate", "--synthetic", "demo", "--cluster", "HUGE_NODES"], "nodes"),
    (["simulate", "--synthetic", "demo", "--cluster", "HUGE_PARTS"], "nodes"),
    (["simulate", "--synthetic", "demo", "--jobs", "200", "--failures", "rate=1e12"], "rate"),
    (["simulate", "--synthetic", "demo", "--jobs", "99999999999"], "--jobs"),
    (["demo", "--jobs", "100000000000"], "--jobs"),
    (["corpus", "--jobs", "99999999999999"], "--jobs"),
    (["simulate", "--synthetic", "demo", "--tracking-uri", "sqlite:///DIR"], "folder"),
    (["simulate", "--trace", "/dev/zero", "--cluster", "demo"], "not a regular file"),
])
def test_bounds_are_one_line_exit_2_and_write_nothing(tmp_path, capsys, monkeypatch, args, words):
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    clusters = {"HUGE_GPUS": "name: h\ngpus_per_node: 99999999999\nnodes: 2\n",
                "HUGE_NODES": "name: h\nnodes: 100000000000\n",
                "HUGE_PARTS": "name: h\npartitions:\n" + "".join(f"  - {{name: p{i}, nodes: 900000}}\n" for i in range(3))}
    args = [a.replace("DIR", f"/{tmp_path}") for a in args]
    for key, text in clusters.items():
        if key in args:
            (tmp_path / f"{key}.yaml").write_text(text)
            args[args.index(key)] = str(tmp_path / f"{key}.yaml")
    out = ["--out", str(work / "o")] if args[0] in ("simulate", "demo", "corpus") else []
    extra = ["--no-plots", "--no-progress", "--policy", "fifo"] if args[0] == "simulate" else []
    t0 = time.perf_counter()
    rc, err = run_main([*args, *extra, *out], capsys)
    assert_one_line_error(rc, err, words)
    assert _files(work) == set() and time.perf_counter() - t0 < 30


def test_experiment_workers_and_tracking_uri_are_bounded(tmp_path, capsys):
    spec = _spec(tmp_path)
    for extra, words in ((["--workers", "100000"], "--workers"),
                         (["--tracking-uri", f"sqlite:///{tmp_path}"], "folder")):
        rc, err = run_main(["experiment", "run", str(spec), "--out", str(tmp_path / "run"), *extra], capsys)
        assert_one_line_error(rc, err, words)
        assert not (tmp_path / "run").exists()


@pytest.mark.slow  # an MLflow sqlite store (schema migration) or child processes
def test_non_regular_files_are_refused_without_reading_them(tmp_path):
    from features.jobtable import TraceError
    from features.traces._io import check_path

    with pytest.raises(TraceError, match="not a regular file"):
        check_path("/dev/zero")
    fifo = tmp_path / "trace.csv"
    os.mkfifo(fifo)
    for args in (["simulate", "--trace", str(fifo), "--cluster", "demo", "--policy", "fifo", "--no-plots",
                  "--out", str(tmp_path / "o")], ["diagnose", str(fifo)]):
        try:  # a FIFO nobody writes to blocked the reader for ever
            done = _cli(args, tmp_path, timeout=60)
        except subprocess.TimeoutExpired:
            pytest.fail(f"{args[0]} blocked on a FIFO")
        assert_one_line_error(done.returncode, done.stderr, "regular file")
    assert not (tmp_path / "o").exists()


# -- 12. input at fault: exit 2 with the reason, not "internal error" -------------------------------
@pytest.mark.parametrize("content", ["[1, 2]", '{"id": "x", "status": 5}', "{not json"])
def test_a_malformed_status_file_is_exit_2(tmp_path, capsys, content):
    from evaluation.outdir import write_marker

    run = tmp_path / "run"
    (run / "cells").mkdir(parents=True)
    write_marker(run, "experiment")  # a run folder of ours (issue 44: a user's folder is refused first)
    (run / "cells" / "x.json").write_text(content)
    rc, err = run_main(["experiment", "report", str(run)], capsys)
    assert_one_line_error(rc, err, "x.json", "malformed cell status file")


# -- 13. spec.yaml whole or not at all; what a killed run left is tidied -----------------------------
def test_spec_yaml_is_written_atomically(tmp_path, monkeypatch):
    import errno
    import pathlib

    from pipelines.experiment import parse_spec, run_experiment

    from evaluation.outdir import write_marker

    out = tmp_path / "run"
    (out / "cells").mkdir(parents=True)
    write_marker(out, "experiment")  # a run folder of ours (issue 44: a user's folder is refused first)
    (out / "spec.yaml").write_text("old spec\n")
    real = pathlib.Path.write_text

    def full_disk(self, data, *a, **k):
        if "spec.yaml" in self.name:
            real(self, data[: len(data) // 2], *a, **k)
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(self, data, *a, **k)

    monkeypatch.setattr(pathlib.Path, "write_text", full_disk)
    spec = parse_spec({"name": "t", "workloads": [{"name": "d", "synthetic": "demo", "jobs": 30}], "policies": ["fifo"]})
    with pytest.raises(OSError):
        run_experiment(spec, out, engine="serial", spec_text="name: t\n" * 100, report=False)
    monkeypatch.setattr(pathlib.Path, "write_text", real)
    assert (out / "spec.yaml").read_text() == "old spec\n"
    assert not list(out.glob(".spec.yaml.*"))


@pytest.mark.slow  # an MLflow sqlite store (schema migration) or child processes
def test_stale_partials_are_cleaned_and_an_orphaned_parent_run_is_failed(tmp_path, monkeypatch,
                                                                         migrated_store):
    import mlflow

    from pipelines.experiment import parse_spec, run_experiment
    from pipelines.tracking import Tracker

    monkeypatch.chdir(tmp_path)
    uri = migrated_store(tmp_path / "mlflow.db")
    from evaluation.outdir import write_marker

    out = tmp_path / "run"
    (out / "cells" / ".d-fifo-s0-abc.xyz.partial").mkdir(parents=True)
    write_marker(out, "experiment")  # a run folder of ours (issue 44: a user's folder is refused first)
    (out / "cells" / ".d-fifo-s0-abc.xyz.partial" / "summary.csv").write_text("half")
    (out / "cells" / ".d.json.4242.tmp").write_text("{")
    (out / "cells" / "user-notes.partial.txt").write_text("not ours")  # left alone
    tracker = Tracker(uri)
    orphan = tracker.start("experiment t", params={"spec": "t"})  # a run killed with -9: still RUNNING
    (out / "run.json").write_text(json.dumps({"state": "running", "parent_run_id": orphan, "tracking_uri": uri}))
    spec = parse_spec({"name": "t", "workloads": [{"name": "d", "synthetic": "demo", "jobs": 30}], "policies": ["fifo"]})
    res = run_experiment(spec, out, engine="serial", tracking_uri=uri, report=False)
    assert res.ok == 1
    assert not list((out / "cells").glob(".*.partial")) and not list((out / "cells").glob(".*.tmp"))
    assert (out / "cells" / "user-notes.partial.txt").exists()
    client = mlflow.MlflowClient(tracking_uri=uri)
    assert client.get_run(orphan).info.status == "FAILED"
    assert client.get_run(res.parent_run_id).info.status == "FINISHED"
    assert json.loads((out / "run.json").read_text())["state"] == "finished"


# -- audit: the trace cache's pickles are read only from a folder private to the user ----------------
def test_a_world_writable_trace_cache_is_not_read(tmp_path, monkeypatch, capsys):
    from features.traces import cache

    monkeypatch.setenv("SCHEDCAST_TRACE_CACHE", str(tmp_path / "cache"))
    key = cache.value_key("test", 1)
    cache.put_value(key, {"answer": 42})
    assert cache.get_value(key) == {"answer": 42}
    folder = cache.entries_dir()
    folder.chmod(0o777)  # anyone could plant a pickle here
    try:
        assert cache.get_value(key) is None
        assert "not private" in capsys.readouterr().err
    finally:
        folder.chmod(0o755)
