"""`schedcast experiment run SPEC` and `schedcast experiment report RUN|SPEC`: flags parsed, results printed."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from pipelines.experiments.spec import default_out, load_spec, one_line


def _workers_arg(text: str) -> int:
    """argparse type: local workers, 1 .. 4 x the CPU cores (at least 8): 100,000 would fork until the
    machine stops."""
    from pipelines.simulate import positive_int

    value = positive_int(text)
    limit = max(8, 4 * (os.cpu_count() or 1))
    if value > limit:
        raise argparse.ArgumentTypeError(f"at most {limit} local workers on this machine (4 x its CPU cores), "
                                         f"got {value}")
    return value


def _tracking_uri_arg(text: str) -> str:
    from pipelines.simulate import tracking_uri_arg

    return tracking_uri_arg(text)


def cmd_run(args: argparse.Namespace) -> int:
    from pipelines.experiments.cells import expand
    from pipelines.experiments.runner import run_experiment
    from pipelines.experiments.spec import check_resources
    from pipelines.experiments.store import collect
    from pipelines.tracking import tracking_destination

    spec = load_spec(args.spec)
    out = Path(args.out) if args.out else default_out(spec)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} is a file")
    from evaluation.outdir import check_run_folder

    check_run_folder(out, "experiment")  # before any work: a user's folder is never written into
    check_resources(spec, args.data_dir, source=str(args.spec), load=not args.dry_run)
    cells = expand(spec, args.data_dir)
    if args.dry_run:
        for cell in cells:
            print(f"{cell.id}  {cell.describe()}")
        print(f"{len(cells)} cells")
        return 0
    if args.executor == "serial" and (args.dask_scheduler or args.ray_address):
        raise ValueError("--dask-scheduler / --ray-address need --executor dask / ray")
    if args.ray_address and args.executor != "ray":
        raise ValueError("--ray-address needs --executor ray")
    if args.dask_scheduler and args.executor != "dask":
        raise ValueError("--dask-scheduler needs --executor dask")
    uri = tracking_destination(args.track, args.tracking_uri)
    print(f"experiment {spec.name}: {len(cells)} cells ({len(spec.workloads)} workloads) -> {out}/"
          + (f"; tracking in {uri}" if uri else ""), flush=True)
    outcome = run_experiment(spec, out, executor=args.executor, workers=args.workers, scheduler=args.dask_scheduler,
                             ray_address=args.ray_address, data_dir=args.data_dir, tracking_uri=uri,
                             rerun=args.rerun, progress=not args.no_progress and sys.stderr.isatty(),
                             spec_text=Path(args.spec).read_text(),
                             trust_local=bool(getattr(args, "trust_local_models", False)))
    rate = outcome.ran / outcome.wall_s * 60 if outcome.wall_s > 0 else float("nan")
    print(f"\n{outcome.ok + outcome.reused} ok ({outcome.reused} reused from earlier runs), {outcome.skipped} skipped, "
          f"{outcome.failed} failed of {outcome.cells} cells; {outcome.wall_s:.1f} s wall ({rate:.1f} cells/min)")
    if outcome.report:
        top = outcome.report.get("top")
        if top is not None and top.exists():  # the top of each workload's leaderboard, not only file paths
            print("\n" + top.read_text(encoding="utf-8").rstrip())
        print("report: " + ", ".join(str(p) for p in outcome.report.values()))
    if outcome.parent_run_id:
        from pipelines.tracking import ui_link

        print(f"MLflow: parent run {outcome.parent_run_id} in {uri}\nMLflow UI: {ui_link(uri, outcome.parent_run_id)}")
    if outcome.cells and outcome.ok + outcome.reused == 0:
        first = next((r.get("error") for r in collect(out, spec) if r.get("status") in ("skipped", "failed")), None)
        print(f"schedcast: error: no cell of {spec.name} succeeded ({outcome.skipped} skipped, {outcome.failed} "
              f"failed)" + (f"; first: {one_line(first)[:300]}" if first else ""), file=sys.stderr)
        return 1 if outcome.failed else 2
    return 0 if outcome.failed == 0 else 1


def cmd_report(args: argparse.Namespace) -> int:
    target = Path(args.target)
    spec = None
    if target.is_file():
        spec = load_spec(target)
        out = Path(args.out) if args.out else default_out(spec)
    else:
        out = target
    from pipelines.experiments.store import build_report

    if not (out / "cells").is_dir():
        raise ValueError(f"{out} is not an experiment run folder (no cells/); run `schedcast experiment run` first")
    from evaluation.outdir import check_run_folder

    check_run_folder(out, "experiment")  # results.csv / leaderboard.html of a user's folder are never replaced
    paths = build_report(out, spec)
    print("report: " + ", ".join(str(p) for p in paths.values()))
    return 0


def add_parsers(sub) -> None:
    """Register `experiment run` and `experiment report`."""
    p = sub.add_parser("experiment", help="run a grid of replays from a spec (Dask / Ray), rebuild its report",
                       description="Experiments: a spec (configs/experiments/*.yaml) expands into cells "
                       "(workload x policy x parameters x predictor x seed), run in parallel, resumable, "
                       "tracked in MLflow, summarised in a leaderboard (CSV + static HTML).")
    esub = p.add_subparsers(dest="experiment_command", required=True, metavar="ACTION")
    r = esub.add_parser("run", help="run a spec's cells (finished cells in --out are skipped)",
                        description="Run every cell of SPEC not already finished in --out (same cell hash and "
                        "code version), on a Dask LocalCluster bound to 127.0.0.1 by default.")
    r.add_argument("spec", help="experiment spec (YAML), e.g. configs/experiments/leaderboard.yaml")
    r.add_argument("--out", metavar="DIR", help="run folder (default results/experiments/<spec name>); "
                   "reused: finished cells are skipped")
    r.add_argument("--executor", choices=["dask", "ray", "serial"], default="dask",
                   help="where the cells run: dask (default), ray, or serial (in this process)")
    r.add_argument("--engine", dest="executor", choices=["dask", "ray", "serial"],
                   help="deprecated alias of --executor")
    r.add_argument("--workers", type=_workers_arg, metavar="N", help="local workers (default: CPU cores)")
    r.add_argument("--dask-scheduler", metavar="ADDR", help="an existing Dask scheduler, e.g. tcp://HOST:8786: "
                   "its workers need schedcast installed, the data (--data-dir) and --out on a file system they "
                   "share with this machine, at the same paths")
    r.add_argument("--ray-address", metavar="ADDR", help="an existing Ray cluster (auto, ray://HOST:10001); same "
                   "needs as --dask-scheduler, plus `pip install 'ray[default]'` everywhere")
    r.add_argument("--data-dir", help="shared data directory (default $SCHEDCAST_DATA or ../shared/data)")
    r.add_argument("--track", action=argparse.BooleanOptionalAction, default=None,
                   help="log to MLflow (default: only when --tracking-uri or $MLFLOW_TRACKING_URI is set)")
    r.add_argument("--tracking-uri", type=_tracking_uri_arg, help="MLflow tracking URI (runs and models:/ predictors)")
    r.add_argument("--trust-local-models", action="store_true", help="allow models from a local path or from a "
                   "tracking store the spec names other than the configured one (a model is a pickle: it runs its code)")
    r.add_argument("--rerun", action="store_true", help="run every cell again, even finished ones")
    r.add_argument("--dry-run", action="store_true", help="list the cells and stop")
    r.add_argument("--no-progress", action="store_true", help="one line per cell instead of a progress bar")
    r.set_defaults(func=cmd_run)
    rep = esub.add_parser("report", help="rebuild results.csv and the leaderboard of a run",
                          description="Rebuild results.csv, leaderboard.csv and leaderboard.html from a run "
                          "folder (or from a spec: its default or --out folder).")
    rep.add_argument("target", metavar="RUN_DIR|SPEC")
    rep.add_argument("--out", metavar="DIR", help="with a SPEC: its run folder (default results/experiments/<name>)")
    rep.set_defaults(func=cmd_report)
