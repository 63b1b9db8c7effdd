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
    """The metrics of an experiment's ok cells, by (workload, label): per seed (``samples``) and their
    mean (``get``)."""

    def __init__(self, records: list[dict[str, Any]]) -> None:
        self.cells: dict[tuple[str, str], list[dict[str, float]]] = {}
        self.errors: dict[tuple[str, str], str] = {}
        #: (workload, label) -> {seed: metrics}
        self.by_seed: dict[tuple[str, str], dict[int, dict[str, float]]] = {}
        for r in records:
            cell = r.get("cell") or {}
            key = (cell.get("workload", "?"), cell.get("label", "?"))
            if r.get("status") == "ok":
                metrics = dict(r.get("metrics") or {})
                self.cells.setdefault(key, []).append(metrics)
                seed = cell.get("seed")
                seeds = self.by_seed.setdefault(key, {})
                seeds[int(seed) if seed is not None else len(seeds)] = metrics
            else:
                self.errors[key] = r.get("error", r.get("status", "missing"))

    def seeds(self, workload: str, label: str) -> list[int]:
        """The seeds of the ok cells of (workload, label), in order."""
        return sorted(self.by_seed.get((workload, label), {}))

    def samples(self, workload: str, label: str, metric: str, seeds: list[int] | None = None) -> list[float]:
        """``metric`` per seed (in seed order; NaN for a seed whose cell failed or lacks the metric)."""
        rows = self.by_seed.get((workload, label), {})
        out = []
        for seed in (seeds if seeds is not None else sorted(rows)):
            value = (rows.get(seed) or {}).get(metric)
            out.append(float(value) if value is not None else float("nan"))
        return out

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


def ratio_samples(a: list[float], b: list[float]) -> list[float]:
    """Seed by seed a / b (the lists pair seeds); NaN where either is missing or b is 0 (0/0 is no evidence)."""
    if len(a) != len(b):
        raise ValueError(f"ratio_samples pairs seeds: {len(a)} values against {len(b)}")
    return [ratio(x, y) for x, y in zip(a, b)]


def reduction_samples(ours: list[float], theirs: list[float]) -> list[float]:
    """Seed by seed 1 - ours / theirs (> 0: ours lower); NaN where theirs is 0 or missing."""
    return [1.0 - r if math.isfinite(r) else float("nan") for r in ratio_samples(ours, theirs)]


def ratio(a: float, b: float) -> float:
    """a / b, NaN when either is missing or b is 0."""
    if not (math.isfinite(a) and math.isfinite(b)) or b == 0:
        return float("nan")
    return a / b


def write_policy_table(ctx, res: Results, workload: str, name: str) -> str:
    """One row per policy label of ``workload``: each metric's mean over seeds and the seeds, as CSV at
    ``ctx.out / name``; returns ``name`` (for ``ctx.settings[...]['tables']``)."""
    import csv

    labels = sorted(label for w, label in res.cells if w == workload)
    metrics = sorted({m for label in labels for row in res.cells[(workload, label)] for m in row})
    path = Path(ctx.out) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["policy", "seeds", *metrics])
        for label in labels:
            writer.writerow([label, " ".join(map(str, res.seeds(workload, label))),
                             *(f"{res.get(workload, label, m):.6g}" for m in metrics)])
    return name


def quantile_interval(samples: list[float], q: float, level: float = 0.95) -> tuple[float, float] | None:
    """A distribution-free interval for the ``q`` quantile of many samples (order statistics at the normal
    approximation of the binomial ranks, the upper rank capped at the largest sample); None with fewer than
    20 samples."""
    n = len(samples)
    if n < 20:
        return None
    from statistics import NormalDist

    z = NormalDist().inv_cdf(0.5 + level / 2)
    half = z * math.sqrt(n * q * (1 - q))
    lo, hi = math.floor(n * q - half), math.ceil(n * q + half)
    lo, hi = max(lo, 0), min(hi, n - 1)
    ordered = sorted(samples)
    return float(ordered[lo]), float(ordered[hi])
