"""Small builders for tests: hand-written job tables and clusters."""
from __future__ import annotations

import pandas as pd

from features.jobtable import JobTable, LoadReport, finalize
from sim.cluster import Cluster, Partition
from sim.workload import Workload, build_workload


def table(rows: list[tuple], org: list[str] | None = None, **columns: list) -> JobTable:
    """rows: (submit_time, duration, num_gpus); ``columns``: optional job-table columns by name
    (num_pods, gpus_per_pod, gpu_fraction, gpu_type, job_class, checkpoint_interval, ...)."""
    frame = pd.DataFrame({
        "job_id": [f"j{i}" for i in range(len(rows))],
        "submit_time": [float(r[0]) for r in rows],
        "submit_ts": pd.NaT,
        "duration": [float(r[1]) for r in rows],
        "num_gpus": [int(r[2]) for r in rows],
    })
    if org is not None:
        frame["org"] = org
    for name, values in columns.items():
        frame[name] = values
    rep = LoadReport(source="test", format="test", rows_read=len(rows))
    return finalize(frame, rep, path="test", sort=False)


def cluster(nodes: int = 1, gpus: int = 4, partitions: dict[str, int] | None = None,
            types: list[str] | None = None) -> Cluster:
    """``types``: one GPU model per node (a heterogeneous single partition)."""
    if partitions:
        return Cluster("test", [Partition(n, [gpus] * k, ["x"] * k) for n, k in partitions.items()])
    return Cluster("test", [Partition("default", [gpus] * nodes, list(types) if types else ["x"] * nodes)])


def workload(rows, nodes=1, gpus=4, load=None, save=None, types=None, **columns) -> Workload:
    w = build_workload(table(rows, **columns), cluster(nodes, gpus, types=types))
    if load is not None:
        w.load_time = [float(x) for x in load]
    if save is not None:
        w.save_time = [float(x) for x in save]
    return w


def run_main(args: list[str], capsys) -> tuple[int, str]:
    """``schedcast ARGS`` in-process (argparse errors exit via SystemExit): (exit code, stderr)."""
    from pipelines.cli import main

    try:
        rc = main(args)
    except SystemExit as exc:
        rc = exc.code
    return rc, capsys.readouterr().err


def assert_one_line_error(rc: int, err: str, *words: str) -> None:
    """Exit 2 and exactly one non-blank line on stderr, holding every one of ``words``."""
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert rc == 2 and len(lines) == 1, err
    for w in words:
        assert w in lines[0], lines[0]


def first_sight_script():
    """benchmarks/schedmate_first_sight.py as a module (benchmarks/ is not a package)."""
    import importlib.util
    from pathlib import Path
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "schedmate_first_sight.py"
    spec = importlib.util.spec_from_file_location("schedmate_first_sight", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
