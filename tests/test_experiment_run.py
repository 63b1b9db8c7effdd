"""Running experiment cells: Dask LocalCluster (2 workers) gives the serial numbers, resume skips
finished cells, a crashing cell is recorded and isolated, the ray path explains a missing install, the
CLI runs and reports."""
from __future__ import annotations

import json
import sys

import pandas as pd
import pytest

from pipelines import experiment as E
from pipelines.experiment import expand, parse_spec, run_experiment

TINY = {
    "name": "tiny",
    "workloads": [{"name": "demo", "synthetic": "demo", "jobs": 120, "offered_load": 0.9},
                  {"name": "demo-b", "synthetic": "demo", "jobs": 90}],
    "policies": ["fifo", "sjf", {"name": "tiresias", "grid": {"thresholds": [600, 3600]}}, "spjf"],
    "predictors": ["oracle", "noisy:0.5"],
    "seeds": 2,
}
NUMBERS = ["jct_mean_s", "jct_p99_s", "wait_mean_s", "gpu_utilisation_frac", "events", "preemptions", "makespan_s"]


def crashing_generator(params, seed, jobs):
    """A workload generator that crashes (not a user error): the cell must be recorded as failed."""
    raise RuntimeError("generator exploded on purpose")


def _numbers(out) -> pd.DataFrame:
    frame = pd.read_csv(out / "results.csv")
    return frame.sort_values("cell").set_index("cell")


def test_serial_and_dask_two_workers_agree(tmp_path):
    spec = parse_spec(TINY)
    serial = run_experiment(spec, tmp_path / "serial", engine="serial")
    dask = run_experiment(spec, tmp_path / "dask", engine="dask", workers=2)
    n = len(expand(spec))
    assert serial.ok == dask.ok == n == 2 * 2 * (1 + 1 + 2 + 2)
    a, b = _numbers(tmp_path / "serial"), _numbers(tmp_path / "dask")
    assert list(a.index) == list(b.index)
    pd.testing.assert_frame_equal(a[NUMBERS], b[NUMBERS])
    # two worker processes took part, and cells of a workload reused what their worker built
    records = [json.loads(p.read_text()) for p in (tmp_path / "dask" / "cells").glob("*.json")]
    assert len({r["pid"] for r in records}) == 2
    assert sum(r["workload_cached"] for r in records) >= n - 2 * 4  # at most one build per (workload, seed) per worker
    # noisy predictions change the numbers, oracle spjf = sjf order on this workload is not required
    assert (a["status"] == "ok").all()


def test_resume_skips_finished_cells_and_reruns_on_new_code(tmp_path, monkeypatch):
    # a fixed code version: other edits to the working tree during the test must not defeat the resume
    monkeypatch.setattr("pipelines.tracking.code_version", lambda: "test-version")
    spec = parse_spec({**TINY, "workloads": TINY["workloads"][:1], "seeds": 1})
    out = tmp_path / "run"
    first = run_experiment(spec, out, engine="serial")
    assert first.ran == first.ok == len(expand(spec)) and first.reused == 0
    stamp = {p.name: p.stat().st_mtime_ns for p in (out / "cells").glob("*.json")}
    again = run_experiment(spec, out, engine="serial")
    assert again.ran == 0 and again.reused == first.ok
    assert stamp == {p.name: p.stat().st_mtime_ns for p in (out / "cells").glob("*.json")}
    # a cell whose result folder is incomplete runs again; the others stay
    victim = sorted((out / "cells").glob("*.json"))[0]
    (out / "cells" / victim.stem / "meta.json").unlink()
    third = run_experiment(spec, out, engine="serial")
    assert third.ran == 1 and third.reused == first.ok - 1
    # another code version: everything runs again
    monkeypatch.setattr("pipelines.tracking.code_version", lambda: "other-version")
    fourth = run_experiment(spec, out, engine="serial")
    assert fourth.ran == first.ok
    # a grown spec runs only the new cells
    bigger = parse_spec({**TINY, "workloads": TINY["workloads"][:1], "seeds": [0, 1]})
    fifth = run_experiment(bigger, out, engine="serial", progress=True)  # the rich bar (on stderr) too
    assert fifth.ran == fifth.cells - first.ok and fifth.reused == first.ok


def test_crashing_and_impossible_cells_are_isolated(tmp_path, monkeypatch):
    from features.traces import synthetic

    monkeypatch.setattr("pipelines.tracking.code_version", lambda: "test-version")
    monkeypatch.setitem(synthetic._REGISTERED, "crashing-test", crashing_generator)  # shipped to the workers
    spec = parse_spec({
        "name": "crash",
        "workloads": [{"name": "good", "synthetic": "demo", "jobs": 80},
                      {"name": "boom", "generator": "crashing-test", "cluster": "demo"},
                      # passes the spec's checks, cannot run: demo has no failure columns
                      {"name": "noperf", "synthetic": "demo", "jobs": 80, "failures": "trace"}],
        "policies": ["fifo", "sjf"], "seeds": 1})
    out = tmp_path / "run"
    res = run_experiment(spec, out, engine="dask", workers=2)
    assert (res.ok, res.failed, res.skipped) == (2, 2, 2)
    frame = pd.read_csv(out / "results.csv")
    boom = frame[frame["workload"] == "boom"]
    assert (boom["status"] == "failed").all() and boom["error"].str.contains("generator exploded").all()
    noperf = frame[frame["workload"] == "noperf"]
    assert (noperf["status"] == "skipped").all() and noperf["error"].str.contains("no failure columns").all()
    record = json.loads(next((out / "cells").glob("boom-fifo-*.json")).read_text())
    assert "RuntimeError" in record["traceback"]
    html = (out / "leaderboard.html").read_text()
    assert "Cells not run" in html and "generator exploded" in html
    # failed cells are retried on resume, finished ones are not
    again = run_experiment(spec, out, engine="serial")
    assert again.reused == 2 and again.ran == 4


def test_ray_engine_without_ray_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError, whether or not it is installed
    with pytest.raises(ValueError, match=r"--executor ray needs Ray \(pip install 'ray\[default\]'"):
        E.make_engine("ray")
    with pytest.raises(ValueError, match="unknown executor"):
        E.make_engine("spark")


def test_unreachable_dask_scheduler_is_a_clear_error():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ValueError, match="cannot reach the Dask scheduler"):
        E.DaskEngine(scheduler=f"tcp://127.0.0.1:{port}", connect_timeout=2)


def test_cli_run_dry_run_and_report(tmp_path, capsys):
    import yaml

    from pipelines.cli import main

    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump({**TINY, "workloads": TINY["workloads"][:1], "seeds": 1}))
    assert main(["experiment", "run", str(path), "--dry-run"]) == 0
    assert "6 cells" in capsys.readouterr().out
    out = tmp_path / "run"
    assert main(["experiment", "run", str(path), "--out", str(out), "--engine", "serial", "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert "6 ok (0 reused" in text and "leaderboard.html" in text
    (out / "leaderboard.html").unlink()
    assert main(["experiment", "report", str(out)]) == 0
    assert (out / "leaderboard.html").exists()
    assert main(["experiment", "report", str(path), "--out", str(out)]) == 0
    assert main(["experiment", "report", str(tmp_path)]) == 2
    assert "not an experiment run folder" in capsys.readouterr().err
    assert main(["experiment", "run", str(path), "--engine", "serial", "--ray-address", "auto"]) == 2


def test_a_cell_on_a_spot_workload_has_the_hp_spot_metrics(tmp_path):
    """Cells replay through pipelines.replay.run_replay, as simulate does: a GFS-shaped workload's cell
    reports the HP / spot metrics (eviction rates), which before lived only in `simulate`; and they equal
    what `simulate`'s path computes for the same replay."""
    from pipelines.replay import ReplaySpec, WorkloadSource, run_replay

    gfs = {"name": "gfs", "generator": "gfs", "cluster": "gfs-a100-small",
           "params": {"spot_multiplier": 2, "cluster_gpus": 432, "days": 0.25, "warmup_hours": 2}}
    spec = parse_spec({"name": "spot", "workloads": [gfs], "policies": ["yarn-cs"], "rank_by": "evict_rate_runs"})
    res = run_experiment(spec, tmp_path / "run", executor="serial", report=True)
    assert res.ok == 1
    record = json.loads(next((tmp_path / "run" / "cells").glob("*.json")).read_text())
    for key in ("hp_jobs", "spot_jobs", "evictions", "evict_rate_runs", "evict_rate_hours"):
        assert key in record["summary"] and key in record["metrics"], key
    direct = run_replay(ReplaySpec(workload=WorkloadSource(generator="gfs", cluster="gfs-a100-small",
                                                           params=gfs["params"]), policy="yarn-cs"))
    assert direct.summary["evict_rate_runs"] == record["summary"]["evict_rate_runs"]
    assert direct.summary["jct_mean"] == record["summary"]["jct_mean"]
    assert "evict_rate_runs" in pd.read_csv(tmp_path / "run" / "results.csv").columns


def test_executor_flag_and_the_deprecated_engine_alias(tmp_path, capsys):
    import yaml

    from pipelines.cli import main

    path = tmp_path / "one.yaml"
    path.write_text(yaml.safe_dump({"name": "one", "workloads": [{"name": "demo", "synthetic": "demo", "jobs": 60}],
                                    "policies": ["fifo"]}))
    assert main(["experiment", "run", str(path), "--out", str(tmp_path / "a"), "--executor", "serial",
                 "--no-progress"]) == 0
    assert json.loads((tmp_path / "a" / "run.json").read_text())["executor"] == "serial"
    assert main(["experiment", "run", str(path), "--executor", "serial", "--dask-scheduler", "tcp://x:1"]) == 2
    assert "--executor dask" in capsys.readouterr().err
    with pytest.raises(ValueError, match="disagree"):
        run_experiment(parse_spec(yaml.safe_load(path.read_text())), tmp_path / "b", executor="serial", engine="dask")
