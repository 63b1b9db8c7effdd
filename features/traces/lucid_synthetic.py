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


__all__ = ["partition_gpus", "venus_shaped"]


#: The parameters venus_shaped reads (anything else was silently ignored: refused now, issue 44).
VENUS_PARAMS = ("preset", "cluster", "data_dir", "jobs")


def check_venus_params(params: dict[str, Any]) -> None:
    unknown = sorted(str(k) for k in params if k not in VENUS_PARAMS)
    if unknown:
        raise ValueError(f"venus-shaped: unknown parameter(s) {', '.join(unknown)}; it takes {', '.join(VENUS_PARAMS)}")


venus_shaped.check_params = check_venus_params  # type: ignore[attr-defined]
