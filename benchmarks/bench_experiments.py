"""Experiment sweeps (issue 15): throughput with 1 and 2 workers, and the per-cell overhead of
distribution and MLflow tracking against a Philly SJF replay.

    python benchmarks/bench_experiments.py                      # both parts (~2 min on 2 quiet cores)
    python benchmarks/bench_experiments.py --only throughput --jobs 2000 --seeds 2   # a tiny grid
    python benchmarks/bench_experiments.py --only overhead --philly-cells 4
    python benchmarks/bench_experiments.py --browser            # also screenshot the leaderboard (chromium)

Throughput: one grid (synthetic ``--preset`` at ``--jobs`` jobs and offered load 0.9; fifo, sjf, tiresias,
srtf x ``--seeds`` seeds) run serially in this process and on a loopback Dask LocalCluster with 1 and 2
workers; cells per minute with and without the cluster's start-up, and CPU seconds (this process plus
the workers' cells) beside the wall time: on a shared machine wall time depends on the neighbours.

Overhead: ``--philly-cells`` SJF cells on the Philly trace (philly-pool; the seed only reaches the
policy, so each worker builds the workload once). Per cell: the replay and scoring alone (sim.simulate +
evaluation.metrics.evaluate, timed in the worker), the result folder (write_results, the files
`schedcast simulate` writes too), the distribution (driver-observed time per cell minus the worker's
own time) and the MLflow tracking (the driver's time to log the cell's nested run and files to a sqlite
store). The issue's budget: distribution + tracking < 10 % of the replay.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MPLBACKEND", "Agg")

ROOT = Path(__file__).resolve().parents[1]
import sys  # noqa: E402
if str(ROOT) not in sys.path:  # this checkout's packages, not an installed copy's
    sys.path.insert(0, str(ROOT))

from pipelines.experiment import expand, parse_spec, run_experiment  # noqa: E402

PHILLY = "philly/philly_jobs_2017-09-04_2017-11-30.csv.gz"


def _cpu_of_cells(out: Path) -> float:
    total = 0.0
    for p in (out / "cells").glob("*.json"):
        rec = json.loads(p.read_text())
        total += float(rec.get("cpu_s") or 0.0)
    return total


def _records(out: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((out / "cells").glob("*.json"))]


def throughput(args, tmp: Path) -> list[dict]:
    spec = parse_spec({"name": "bench-throughput",
                       "workloads": [{"name": args.preset, "synthetic": args.preset, "jobs": args.jobs,
                                      "offered_load": 0.9}],
                       "policies": ["fifo", "sjf", "tiresias", "srtf"], "seeds": args.seeds})
    n = len(expand(spec))
    rows = []
    configs = [("serial", None)] + [("dask", w) for w in args.workers]
    for engine, workers in configs:
        out = tmp / f"tp-{engine}-{workers}"
        c0 = time.process_time()
        t0 = time.perf_counter()
        res = run_experiment(spec, out, engine=engine, workers=workers, report=False)
        wall = time.perf_counter() - t0
        driver_cpu = time.process_time() - c0
        info = json.loads((out / "run.json").read_text())
        start = float(info.get("engine_start_s") or 0.0)
        cells_cpu = _cpu_of_cells(out)
        rows.append({"engine": engine if workers is None else f"dask x{workers}", "cells": n, "ok": res.ok,
                     "wall_s": wall, "start_s": start, "cells_per_min": n / wall * 60,
                     "cells_per_min_after_start": n / max(wall - start, 1e-9) * 60,
                     # serial: the cells ran in this process (its CPU already counts them)
                     "cpu_s": driver_cpu + (cells_cpu if engine != "serial" else 0.0)})
        print(f"  {rows[-1]['engine']:<9} {n} cells in {wall:6.1f} s wall (start-up {start:4.1f} s), "
              f"{rows[-1]['cells_per_min']:6.1f} cells/min, CPU {rows[-1]['cpu_s']:6.1f} s", flush=True)
    return rows


def overhead(args, tmp: Path) -> dict:
    seeds = list(range(args.philly_cells))
    base = {"name": "bench-overhead", "workloads": [{"name": "philly", "trace": PHILLY, "cluster": "philly-pool"}],
            "policies": ["sjf"], "seeds": seeds}
    spec = parse_spec(base)
    out = {}
    for label, engine, workers, track in (("serial", "serial", None, False), ("dask x1", "dask", 1, False),
                                          ("dask x1 + MLflow", "dask", 1, True)):
        folder = tmp / f"oh-{label.replace(' ', '_').replace('+', '')}"
        uri = f"sqlite:///{tmp / ('mlruns-' + folder.name) / 'mlflow.db'}" if track else None
        if track:  # the store's first connection creates its tables (seconds): not a per-cell cost
            from pipelines.tracking import Tracker

            Tracker(uri)
        t0 = time.perf_counter()
        run_experiment(spec, folder, engine=engine, workers=workers, tracking_uri=uri, report=False)
        wall = time.perf_counter() - t0
        info = json.loads((folder / "run.json").read_text())
        recs = [r for r in _records(folder) if r["status"] == "ok"]
        warm = [r for r in recs if r.get("workload_cached")] or recs  # the first cell builds the workload
        replay = statistics.median(r["replay_s"] for r in warm)
        write = statistics.median(r["write_s"] for r in warm)
        worker = statistics.median(r["wall_s"] for r in warm)
        per_cell_driver = (info["cells_s"] - info.get("tracking_wait_s", 0.0)) / len(recs)
        mean_worker = statistics.mean(r["wall_s"] for r in recs)
        out[label] = {"cells": len(recs), "wall_s": wall, "start_s": info.get("engine_start_s", 0.0),
                      "replay_s": replay, "write_s": write, "worker_cell_s": worker,
                      "distribution_s": max(per_cell_driver - mean_worker, 0.0) if engine == "dask" else 0.0,
                      "tracking_s": info.get("tracking_s", 0.0) / len(recs),
                      "tracking_cpu_s": info.get("tracking_cpu_s", 0.0) / len(recs),
                      "sweep_per_cell_s": info["cells_s"] / len(recs),
                      "load_s": max(r["load_s"] for r in recs)}
        o = out[label]
        print(f"  {label:<17} replay+score {o['replay_s']:.3f} s  files {o['write_s']:.3f} s  distribution "
              f"{o['distribution_s']:.3f} s  tracking (driver thread) {o['tracking_s']:.3f} s  sweep "
              f"{o['sweep_per_cell_s']:.3f} s per cell (workload build {o['load_s']:.2f} s once per worker)", flush=True)
    if "dask x1" in out and "dask x1 + MLflow" in out:
        a, b = out["dask x1"], out["dask x1 + MLflow"]
        b["tracking_wall_s"] = b["sweep_per_cell_s"] - a["sweep_per_cell_s"]
    return out


def browser(tmp: Path) -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if exe is None:
        return "no chromium on PATH (Debian: apt-get install -y chromium)"
    folder = tmp / "tp-dask-2" if (tmp / "tp-dask-2").exists() else next(tmp.glob("tp-*"), None)
    if folder is None:
        return "no run folder to render"
    from pipelines.experiment import build_report

    page = build_report(folder)["html"]
    shot = ROOT / "benchmarks" / "results" / "experiments" / "leaderboard_screenshot.png"
    shot.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    f"--user-data-dir={tmp / 'chromium'}", "--window-size=1200,1600", f"--screenshot={shot}",
                    page.as_uri()], capture_output=True, timeout=120)
    return f"screenshot {shot} ({shot.stat().st_size:,} bytes)" if shot.exists() else "chromium wrote no screenshot"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", choices=["throughput", "overhead"])
    ap.add_argument("--preset", default="earth")
    ap.add_argument("--jobs", type=int, default=5000, help="jobs per synthetic cell (throughput grid; 5,000: about "
                    "a second per cell, so the grid measures replays rather than scheduling overhead)")
    ap.add_argument("--seeds", type=int, default=3, help="seeds of the throughput grid (cells = 4 x seeds)")
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--philly-cells", type=int, default=4, help="SJF cells on Philly for the overhead")
    ap.add_argument("--browser", action="store_true", help="render the throughput run's leaderboard in chromium")
    ap.add_argument("--keep", action="store_true", help="keep the temporary run folders")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-experiments-"))
    load0 = os.getloadavg()[0]
    t0, c0 = time.perf_counter(), time.process_time()
    tp = oh = None
    try:
        if args.only in (None, "throughput"):
            print(f"throughput: {args.preset} x {args.jobs:,} jobs at load 0.9, 4 policies x {args.seeds} seeds", flush=True)
            tp = throughput(args, tmp)
        if args.only in (None, "overhead"):
            print(f"overhead: {args.philly_cells} SJF cells on Philly (philly-pool)", flush=True)
            oh = overhead(args, tmp)
        shot = browser(tmp) if args.browser else None
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    print("\n== summary ==")
    print(f"machine: {os.cpu_count()} CPUs, {platform.python_implementation()} {platform.python_version()}, "
          f"load average {load0:.1f} at start, {os.getloadavg()[0]:.1f} at end")
    if tp:
        print(f"{'engine':<10} {'cells':>5} {'wall s':>8} {'start s':>8} {'cells/min':>10} {'(after start)':>14} {'CPU s':>8}")
        for r in tp:
            print(f"{r['engine']:<10} {r['cells']:>5} {r['wall_s']:>8.1f} {r['start_s']:>8.1f} {r['cells_per_min']:>10.1f} "
                  f"{r['cells_per_min_after_start']:>14.1f} {r['cpu_s']:>8.1f}")
        by = {r["engine"]: r for r in tp}
        if "dask x1" in by and "dask x2" in by:
            print(f"speed-up 2 vs 1 workers: {by['dask x1']['wall_s'] / by['dask x2']['wall_s']:.2f}x wall, "
                  f"{by['dask x1']['cells_per_min_after_start'] and by['dask x2']['cells_per_min_after_start'] / by['dask x1']['cells_per_min_after_start']:.2f}x after start-up")
    if oh:
        print(f"{'Philly SJF cell':<18} {'replay+score s':>14} {'files s':>8} {'distrib. s':>10} {'tracking s':>10} "
              f"{'sweep s/cell':>12} {'overhead %':>10}")
        for label, o in oh.items():
            pct = 100 * (o["distribution_s"] + o["tracking_s"]) / o["replay_s"]
            print(f"{label:<18} {o['replay_s']:>14.3f} {o['write_s']:>8.3f} {o['distribution_s']:>10.3f} "
                  f"{o['tracking_s']:>10.3f} {o['sweep_per_cell_s']:>12.3f} {pct:>9.1f}%")
        print("overhead % = (distribution + tracking) / replay+score, per cell (medians of warm cells); tracking = "
              "the driver's logging thread, busy while the workers replay; files = the result folder every run "
              "writes (also `schedcast simulate`)")
        if "tracking_wall_s" in oh.get("dask x1 + MLflow", {}):
            b = oh["dask x1 + MLflow"]
            print(f"tracking thread: {b['tracking_s']:.3f} s busy per cell, of which {b['tracking_cpu_s']:.3f} s CPU "
                  "(the rest waits on the store's commits)")
            print(f"tracking's effect on the sweep's wall time: {b['tracking_wall_s']:+.3f} s per cell "
                  f"({100 * b['tracking_wall_s'] / b['replay_s']:+.1f} % of a replay; noise on a shared machine)")
    if args.browser:
        print(f"browser: {shot}")
    print(f"bench time {time.perf_counter() - t0:.1f} s wall, {time.process_time() - c0:.1f} s CPU in this process")


if __name__ == "__main__":
    main()
