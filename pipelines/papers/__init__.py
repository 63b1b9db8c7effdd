"""Paper runners for `schedcast reproduce PAPER`: each measures what its paper's claims file names.

``RUNNERS`` is a fixed table (paper name -> module): a paper name from the command line or a file only
ever selects one of these modules, it never becomes an import path of its own. A runner module exposes
``run(ctx: evaluation.claims.ReproduceContext) -> dict[str, Measurement]``; its claims file and experiment
specs live in ``configs/experiments/papers/<paper>/``.

The helpers below are what runners share: run an experiment spec from the paper's folder (resumable,
serial or on a Dask LocalCluster) and read a metric of a (workload, policy label) pair from its cells.
"""
from __future__ import annotations

import importlib
import math
from pathlib import Path
from typing import Any, Callable

RUNNERS: dict[str, str] = {
    "asrpt": "pipelines.papers.asrpt",
    "gfs": "pipelines.papers.gfs",
    "lazer": "pipelines.papers.lazer",
    "lucid": "pipelines.papers.lucid",
    "schedmate": "pipelines.papers.schedmate",
}

PAPERS_DIR = Path(__file__).resolve().parents[2] / "configs" / "experiments" / "papers"


def paper_dir(paper: str) -> Path:
    return PAPERS_DIR / paper


def runner(paper: str) -> Callable[..., dict[str, Any]]:
    """The registered runner of ``paper`` (a one-line error listing the papers otherwise)."""
    if paper not in RUNNERS:
        raise ValueError(f"unknown paper {paper!r}; choose one of: {', '.join(sorted(RUNNERS))}")
    return importlib.import_module(RUNNERS[paper]).run


def parts(paper: str) -> tuple[str, ...]:
    """The parts of ``paper``'s evaluation a user may leave out with ``--skip`` (a runner's ``PARTS``)."""
    runner(paper)
    return tuple(getattr(importlib.import_module(RUNNERS[paper]), "PARTS", ()))


def run_spec(ctx, path: str | Path, *, overrides: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Run the experiment spec at ``path`` (see ``spec_path``) into ``ctx.work / <spec name>`` and return
    the cells' status records (finished cells from an earlier run of the same code are reused).

    ``overrides`` replaces top-level spec keys (e.g. ``seeds``) before the run."""
    import yaml

    from pipelines.experiments import collect, parse_spec, run_experiment

    path = Path(path)
    data = yaml.safe_load(path.read_text())
    data.update(overrides or {})
    spec = parse_spec(data, source=str(path))
    out = Path(ctx.work or Path(ctx.out) / "experiments") / spec.name
    executor = "dask" if ctx.workers > 1 else "serial"
    ctx.progress(f"experiment {spec.name}: running its cells ({executor}) in {out}")
    outcome = run_experiment(spec, out, executor=executor, workers=ctx.workers if ctx.workers > 1 else None,
                             data_dir=str(ctx.data_dir), report=True, spec_text=yaml.safe_dump(data))
    ctx.progress(f"experiment {spec.name}: {outcome.ok + outcome.reused} ok, {outcome.skipped} skipped, "
                 f"{outcome.failed} failed of {outcome.cells} cells ({outcome.wall_s:.0f} s)")
    records = collect(out, spec)
    bad = [r for r in records if r.get("status") != "ok"]
    if bad and len(bad) == len(records):
        first = bad[0]
        raise RuntimeError(f"experiment {spec.name}: no cell succeeded (first: {first.get('id')}: "
                           f"{first.get('error', first.get('status'))})")
    return records


def spec_path(paper: str, name: str) -> Path:
    """``configs/experiments/papers/<paper>/<name>.yaml``."""
    path = paper_dir(paper) / f"{name}.yaml"
    if not path.is_file():
        raise ValueError(f"{path}: no such experiment spec")
    return path


class Results:
    """The metrics of an experiment's ok cells, by (workload, label), averaged over seeds."""

    def __init__(self, records: list[dict[str, Any]]) -> None:
        self.cells: dict[tuple[str, str], list[dict[str, float]]] = {}
        self.errors: dict[tuple[str, str], str] = {}
        for r in records:
            cell = r.get("cell") or {}
            key = (cell.get("workload", "?"), cell.get("label", "?"))
            if r.get("status") == "ok":
                self.cells.setdefault(key, []).append(dict(r.get("metrics") or {}))
            else:
                self.errors[key] = r.get("error", r.get("status", "missing"))

    def has(self, workload: str, label: str) -> bool:
        return (workload, label) in self.cells

    def get(self, workload: str, label: str, metric: str) -> float:
        """Mean over seeds of ``metric`` (NaN when the cell failed or lacks the metric)."""
        rows = self.cells.get((workload, label))
        if not rows:
            return float("nan")
        values = [float(r[metric]) for r in rows if metric in r and r[metric] is not None]
        values = [v for v in values if math.isfinite(v)]
        return sum(values) / len(values) if values else float("nan")

    def workloads(self) -> list[str]:
        return sorted({w for w, _ in self.cells})

    def why_missing(self, workload: str, label: str) -> str:
        return self.errors.get((workload, label), "not run")


def ratio(a: float, b: float) -> float:
    """a / b, NaN when either is missing or b is 0."""
    if not (math.isfinite(a) and math.isfinite(b)) or b == 0:
        return float("nan")
    return a / b
