"""Lucid's Venus-shaped setting as a registered workload generator (``generator: venus-shaped``).

Synthetic Helios-like jobs (a preset of configs/workloads/, default ``earth``) spread over the virtual
clusters of a partitioned cluster config (default ``venus``: Helios Venus' real VCs) in proportion to their
GPUs: each generated VC is mapped to a VC drawn by size, seeded. Use it with ``cluster: venus``; jobs
larger than their VC are rejected (and counted) by the workload layer.

It lived in the experiment runner (pipelines/) until the generators became one registry; here, in
``features``, it may not import the simulator (the layers: features <- models <- sim), so it reads the VC
sizes from the cluster config itself (:func:`partition_gpus`, the two partitioned shapes a cluster config
can take), which gives the same partitions, in the same order, as ``sim.cluster.build_cluster``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from features.jobtable import JobTable


def partition_gpus(cluster: str, data_dir: str | None = None) -> list[tuple[str, int]]:
    """(name, GPUs) of each partition of the cluster config ``cluster`` (configs/clusters/NAME.yaml or a
    path), for configs with ``partitions`` or ``partitions_from_csv``; a one-line ValueError otherwise."""
    import pandas as pd
    import yaml

    from features.paths import configs_dir, resolve_data_path

    path = Path(cluster)
    if not path.suffix:
        path = configs_dir() / "clusters" / f"{cluster}.yaml"
    if not path.is_file():
        raise ValueError(f"venus-shaped: unknown cluster {cluster!r}")
    config = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    per_node = int(config.get("gpus_per_node", 8))
    if config.get("partitions"):
        return [(str(p["name"]), int(p.get("gpus_per_node") or per_node) * int(p["nodes"]))
                for p in config["partitions"]]
    src = config.get("partitions_from_csv")
    if not src:
        raise ValueError(f"venus-shaped: cluster {cluster!r} has no partitions (VCs) to spread jobs over")
    csv = resolve_data_path(src["file"], data_dir)
    if not Path(csv).exists():
        raise FileNotFoundError(f"cluster config refers to {csv}, which does not exist (set --data-dir)")
    frame = pd.read_csv(csv)

    def column(col: str | int):
        return frame.iloc[:, col] if isinstance(col, int) else frame[col]

    return [(str(n), per_node * int(c)) for n, c in zip(column(src["name_column"]), column(src["nodes_column"]))
            if int(c) > 0]


def venus_shaped(params: dict[str, Any], seed: int, jobs: int | None) -> JobTable:
    """Helios-like jobs (preset ``params['preset']``, default earth) on the VCs of ``params['cluster']``
    (default venus), each generated VC mapped to a real one drawn by size (seeded). A generator:
    ``function(params, seed, jobs) -> JobTable``."""
    import numpy as np

    from features.traces.synthetic import generate, load_preset

    check_venus_params(params)
    parts = partition_gpus(params.get("cluster", "venus"), params.get("data_dir"))
    spec = load_preset(params.get("preset", "earth"), jobs=jobs or params.get("jobs"), num_vcs=len(parts))
    table = generate(spec, seed=seed)
    sizes = np.array([gpus for _, gpus in parts], dtype=float)
    rng = np.random.default_rng(seed)
    vc_of_org = {f"vc{i:02d}": parts[k][0]
                 for i, k in enumerate(rng.choice(len(sizes), size=spec.num_vcs, p=sizes / sizes.sum()))}
    table.frame["org"] = table.frame["org"].map(vc_of_org).astype("string")
    return table


__all__ = ["partition_gpus", "philly_window", "philly_window_rows", "venus_shaped"]


#: Lucid's Philly test week (lucid.txt:312): jobs submitted October 1-7 2017, the weeks after train its models.
PHILLY_TRACE = "philly/philly_jobs_2017-09-04_2017-11-30.csv.gz"
PHILLY_TEST = ("2017-10-01", "2017-10-08")


def philly_window_rows(frame, start: str, end: str):
    """A boolean mask of the rows of a loaded Philly table submitted in [start, end) (dates in the
    trace's own clock: the loader labels its local wall-clock times with its zone)."""
    import pandas as pd

    ts = frame["submit_ts"]
    tz = getattr(ts.dt, "tz", None)
    lo, hi = pd.Timestamp(start, tz=tz), pd.Timestamp(end, tz=tz)
    if hi <= lo:
        raise ValueError(f"philly-window: end {end!r} must be after start {start!r}")
    return ((ts >= lo) & (ts < hi)).to_numpy()


def philly_window(params: dict[str, Any], seed: int, jobs: int | None) -> JobTable:
    """The real Philly jobs submitted in [``start``, ``end``) (default October 1-7 2017, Lucid's test
    week, lucid.txt:312), time zero at the first of them; job ids stay the trace's (``philly-<row>``), so
    a model trained on other weeks of the same file can be matched to them. ``trace``: the Philly CSV
    (default the shared extract); ``jobs``: keep the first N only. No randomness (``seed`` unused)."""
    from features.jobtable import LoadReport, finalize
    from features.paths import resolve_data_path
    from features.traces import load_trace

    _check_window_params(params)
    start, end = str(params.get("start", PHILLY_TEST[0])), str(params.get("end", PHILLY_TEST[1]))
    path = resolve_data_path(str(params.get("trace", PHILLY_TRACE)), params.get("data_dir"))
    full = load_trace(path, "philly")
    frame = full.frame[philly_window_rows(full.frame, start, end)]
    if jobs:
        frame = frame.iloc[:int(jobs)]
    if not len(frame):
        raise ValueError(f"philly-window: no job of {path} was submitted in [{start}, {end})")
    report = LoadReport(source=str(path), format="philly-window", rows_read=len(frame))
    report.notes.append(f"Philly jobs submitted in [{start}, {end}) of {len(full.frame):,} loaded")
    return finalize(frame.assign(submit_time=float("nan")), report, path=str(path))

#: The parameters venus_shaped reads (anything else was silently ignored: refused now, issue 44).
VENUS_PARAMS = ("preset", "cluster", "data_dir", "jobs")


def check_venus_params(params: dict[str, Any]) -> None:
    unknown = sorted(str(k) for k in params if k not in VENUS_PARAMS)
    if unknown:
        raise ValueError(f"venus-shaped: unknown parameter(s) {', '.join(unknown)}; it takes {', '.join(VENUS_PARAMS)}")


venus_shaped.check_params = check_venus_params  # type: ignore[attr-defined]


def _check_window_params(params: dict[str, Any]) -> None:
    unknown = sorted(str(k) for k in set(params) - {"trace", "start", "end", "data_dir"})
    if unknown:
        raise ValueError(f"philly-window: unknown parameter(s) {', '.join(unknown)}; it takes trace, start, end")


philly_window.check_params = _check_window_params  # type: ignore[attr-defined]
