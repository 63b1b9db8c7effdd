"""`schedcast simulate` and `schedcast demo`: build a workload, replay it under policies, write results.

Everything a user can get wrong is checked before the replay starts (argument types, the output folder,
the trace path, the measurement window against the trace, the predictor), and reported on one line
with exit status 2. Results are written whole or not at all (evaluation.report.write_results).

The replays themselves go through pipelines.replay (ReplaySpec -> prepare_replay / run_replay ->
ReplayResult), the one path experiment cells, `reproduce` and the benchmarks use too: this module parses
the flags, prints and writes.
"""
from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipelines.replay import build_source, trace_path

if TYPE_CHECKING:
    from pipelines.replay import ReplaySpec

DEFAULT_POLICIES = ["fifo", "sjf", "srtf", "tiresias", "pollux-60"]
DEMO_OUT = "results/demo"
_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(text: str) -> float:
    """Seconds from '3600', '90m', '12h' or '2d' (ValueError otherwise)."""
    text = text.strip().lower()
    if text and text[-1] in _UNITS:
        return float(text[:-1]) * _UNITS[text[-1]]
    return float(text)


def duration_arg(text: str) -> float:
    """argparse type: a time like 3600, 90m, 12h or 2d (seconds), finite and >= 0."""
    try:
        value = parse_duration(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid time {text!r} (use seconds, or a number with s, m, h "
                                         "or d, e.g. 12h or 1.5d)") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"invalid time {text!r}: must be finite and >= 0")
    return value


def positive_int(text: str) -> int:
    """argparse type: a whole number >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def non_negative_int(text: str) -> int:
    """argparse type: a whole number >= 0 (seeds)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value


#: Most jobs a synthetic workload or `demo` builds (``--jobs 99999999999`` would run out of memory).
MAX_JOBS = 10_000_000


def jobs_arg(text: str) -> int:
    """argparse type: a job count, 1 .. MAX_JOBS."""
    value = positive_int(text)
    if value > MAX_JOBS:
        raise argparse.ArgumentTypeError(f"at most {MAX_JOBS:,} jobs, got {value:,}")
    return value


def preset_arg(text: str) -> str:
    """argparse type: a synthetic preset *name* (configs/workloads/NAME.yaml), never a path."""
    from features.traces.synthetic import check_preset_name

    try:
        return check_preset_name(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


#: The URI schemes MLflow's tracking and registry stores take (checked before any work is done).
TRACKING_SCHEMES = ("sqlite", "file", "http", "https", "postgresql", "mysql", "mssql", "databricks",
                    "databricks-uc", "uc")


def tracking_uri_arg(text: str) -> str:
    """argparse type: an MLflow tracking URI; a sqlite URI must name a database file, not a folder."""
    text = text.strip()
    if not text:
        raise argparse.ArgumentTypeError("empty tracking URI")
    m = re.match(r"([A-Za-z][A-Za-z0-9+.\-]*):", text)
    scheme = m.group(1).split("+")[0].lower() if m and len(m.group(1)) > 1 else ""
    if scheme and scheme not in TRACKING_SCHEMES:
        raise argparse.ArgumentTypeError(f"{text!r}: unsupported scheme {scheme!r}; use one of "
                                         f"{', '.join(s + ':' for s in TRACKING_SCHEMES)} or a folder path")
    if text.startswith("sqlite:///"):
        db = Path(text[len("sqlite:///"):])
        if db.is_dir():
            raise argparse.ArgumentTypeError(f"{text} names a folder; give a database file, e.g. "
                                             f"sqlite:///{db / 'mlflow.db'}")
        if db.exists() and not db.is_file():
            raise argparse.ArgumentTypeError(f"{text} is not a regular file")
    return text


#: The longest policy label (it names files, MLflow runs and leaderboard rows).
MAX_LABEL = 255


def check_label(label: str) -> str:
    """A policy label: 1 to MAX_LABEL characters, no control characters (a NUL cannot name a file)."""
    if not label or len(label) > MAX_LABEL:
        raise ValueError(f"a policy label has 1 to {MAX_LABEL} characters, got {len(label)}")
    bad = next((ch for ch in label if ord(ch) < 32 or ord(ch) == 127), None)
    if bad is not None:
        raise ValueError(f"a policy label may not hold control characters (got {bad!r})")
    return label


def policy_label_arg(text: str) -> str:
    """argparse type: a policy (its text is its label: 1-255 characters, no control characters)."""
    try:
        return check_label(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def load_arg(text: str) -> float:
    """argparse type: an offered load, a number > 0 (0.9 = the cluster would need 90 % of its GPUs)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value) or value < 1e-3 or value > 10:  # 1e-300 would ask for ~1e300 nodes
        raise argparse.ArgumentTypeError(f"must be in [0.001, 10], got {text}")
    return value


def predictor_arg(text: str) -> str:
    """argparse type: the predictor spec's syntax (the model itself is looked up before the replay)."""
    from sim.predictors import make_predictor

    if text.startswith(("http://", "https://", "models:/", "runs:/")):
        if text.startswith(("models:/", "runs:/")):
            from sim.predictors import parse_model_uri

            try:
                parse_model_uri(text)
            except ValueError as exc:
                raise argparse.ArgumentTypeError(str(exc)) from None
        return text
    try:
        make_predictor(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _add_workload_args(p: argparse.ArgumentParser) -> None:
    src = p.add_mutually_exclusive_group()
    src.add_argument("--trace", metavar="FILE", help="trace file (format guessed from the name unless --format)")
    src.add_argument("--synthetic", metavar="PRESET", type=preset_arg, help="seeded synthetic trace preset (earth, saturn, "
                     "uranus, demo: configs/workloads/)")
    p.add_argument("--format", help="trace format (see `schedcast data formats`)")
    p.add_argument("--jobs", type=jobs_arg, metavar="N", help="synthetic: number of jobs (same arrival "
                   "rate as the preset); trace: keep the first N jobs by submission")
    p.add_argument("--cluster", help="built-in cluster name or YAML path (see `schedcast clusters`); a "
                   "synthetic preset has its own default")
    p.add_argument("--offered-load", type=load_arg, metavar="X", help="resize the cluster (node count; per "
                   "VC for partitioned clusters) so that the jobs' GPU-seconds / (submission span x GPUs) = X, "
                   "e.g. 0.9 for a contended cluster. The workload line always prints the offered load")
    p.add_argument("--costs", default="none", metavar="CATALOG",
                   help="'none' (load/save times 0) or a profile catalog (lazer, lucid) giving each job a "
                        "model, load and pause-and-save times")
    p.add_argument("--default-gpus", type=positive_int, metavar="N", help="GPU count for jobs whose trace "
                   "has none (else they are rejected)")
    p.add_argument("--data-dir", help="shared data directory (default $SCHEDCAST_DATA or ../shared/data)")
    p.add_argument("--seed", type=non_negative_int, default=0, help="run seed: synthetic traces, job "
                   "profiles, noisy predictors and policies' own random draws (default 0)")


def read_trace_ahead(argv: list[str]) -> bool:
    """Start reading the trace of a `simulate` command line (``--trace FILE`` or ``--trace=FILE``, with its
    ``--format``) before the parser is built: building it imports the simulator (0.4 s of Python), which
    then runs beside pyarrow's parse on a second core (features.traces.read_trace_ahead). Whatever is
    wrong with the command line is still found by the parser; a command that stops before loading only
    drops the read. Whether a read was started."""
    values: dict[str, str] = {}
    for i, word in enumerate(argv):
        for flag in ("--trace", "--format"):
            if word == flag and i + 1 < len(argv):
                values[flag] = argv[i + 1]
            elif word.startswith(flag + "="):
                values[flag] = word.split("=", 1)[1]
    if not values.get("--trace"):
        return False
    from features.traces import read_trace_ahead as start

    return start(values["--trace"], values.get("--format"))


def _build_workload(args: argparse.Namespace):
    return build_source(synthetic=args.synthetic, trace=args.trace, format=args.format, jobs=args.jobs,
                        cluster=args.cluster, offered_load=getattr(args, "offered_load", None),
                        costs=args.costs, default_gpus=args.default_gpus, data_dir=args.data_dir,
                        seed=args.seed)


def replay_spec(args: argparse.Namespace, policy: str, window: tuple[float, float] | None) -> "ReplaySpec":
    """The ReplaySpec of one policy of a `simulate` invocation (the workload itself is built once)."""
    from pipelines.replay import ReplaySpec, WorkloadSource

    source = WorkloadSource(trace=args.trace, synthetic=args.synthetic, format=args.format, jobs=args.jobs,
                            cluster=args.cluster, offered_load=getattr(args, "offered_load", None),
                            costs=args.costs, default_gpus=args.default_gpus, data_dir=args.data_dir)
    return ReplaySpec(workload=source, policy=policy, placement=args.placement, predictor=args.predictor,
                      predict=tuple(getattr(args, "predict", None) or ()), failures=getattr(args, "failures", None),
                      performance=getattr(args, "performance", None), seed=args.seed, window=window,
                      check_invariants=args.check_invariants, tracking_uri=getattr(args, "tracking_uri", None))


def predict_arg(text: str) -> tuple[str, str]:
    """KIND=SPEC for --predict (e.g. iterations=models:/iterations@champion)."""
    kind, eq, spec = text.partition("=")
    if not eq or not kind.strip() or not spec.strip():
        raise argparse.ArgumentTypeError(f"expected KIND=SPEC (e.g. iterations=group-median), got {text!r}")
    return kind.strip(), spec.strip()


class _Progress:
    """A transient rich progress bar on stderr, one task per policy (jobs finished / jobs)."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

        self.progress = Progress(TextColumn("{task.description}"), BarColumn(),
                                 TextColumn("{task.completed:,.0f}/{task.total:,.0f} jobs"), TimeElapsedColumn(),
                                 TimeRemainingColumn(), transient=True, console=Console(stderr=True))

    def track(self, label: str, total: int):
        """(update(done, total), stop()) for one replay."""
        task = self.progress.add_task(label, total=max(int(total), 1))
        self.progress.start()

        def update(done: int, total: int) -> None:
            self.progress.update(task, completed=done, total=max(int(total), 1))

        def stop() -> None:
            self.progress.stop()
            self.progress.remove_task(task)

        return update, stop


def _show_progress(args: argparse.Namespace) -> bool:
    return not args.no_progress and sys.stderr.isatty()


def _check_window(window: tuple[float, float] | None, workload) -> int | None:
    """Measured job count; a window holding no job, or reversed / empty, is an error."""
    if window is None:
        return None
    start, end = window
    if end <= start:
        raise ValueError(f"--window: END ({end:g} s) must be after START ({start:g} s)")
    import numpy as np

    submit = np.asarray(workload.submit, dtype=float)
    measured = int(np.count_nonzero((submit >= start) & (submit < end)))
    if measured == 0:
        raise ValueError(f"--window {start:g}-{end:g} s holds no job: jobs were submitted from "
                         f"{submit.min():g} s to {submit.max():g} s ({submit.max() / 86400:.2f} d)")
    return measured


def _policies_using_predictions(policies: list[str]) -> list[str]:
    from sim.policies import get_policy

    out = []
    for name in policies:
        info, _, params = get_policy(name)
        if info.uses_predictions or params.get("history") is False:
            out.append(name)
    return out


def model_line(info: dict[str, Any]) -> str:
    """``models:/duration@champion = duration version 3 (run 1a2b3c4d) in sqlite:///mlruns/mlflow.db``."""
    text = info.get("uri", "?")
    if info.get("version"):
        text += f" = {info.get('name')} version {info['version']}"
    if info.get("run_id"):
        text += f" (run {str(info['run_id'])[:8]})"
    return text + (f" in {info['tracking_uri']}" if info.get("tracking_uri") else "")


def _terminal_width() -> int | None:
    """The terminal's columns when stdout is one (tables are cut to fit), else None (logs keep whole lines)."""
    import shutil

    try:
        if not sys.stdout.isatty():
            return None
    except (AttributeError, ValueError):
        return None
    return shutil.get_terminal_size((100, 24)).columns


#: Share of the measured GPU-seconds above which the 5 largest jobs are said to dominate a run.
DOMINANT_TOP5_SHARE = 0.20


def _print_load(runs: dict[str, dict[str, Any]], offered: float, sizing: dict | None) -> None:
    """The load each replay reached over the measured submission window beside the offered load (and
    the --offered-load target), and a warning when the 5 largest jobs hold most of the work."""
    from evaluation.catalog import LOAD_MEANING

    reached = ", ".join(f"{p} {r['summary'].get('load_reached', float('nan')):.2f}" for p, r in runs.items())
    target = f" (--offered-load target {sizing['target']:g})" if sizing else ""
    print(f"load:       offered {offered:.2f}{target}; reached: {reached}\n            ({LOAD_MEANING})")
    top = max((r["summary"].get("top5_gpu_share", 0.0) for r in runs.values()), default=0.0)
    if top > DOMINANT_TOP5_SHARE:
        print(f"warning: the 5 largest jobs hold {top:.0%} of the measured GPU-seconds: the load and the ranking "
              "rest on a handful of jobs (more --jobs or a longer window spread them)")


def forecaster_info(stats: dict[str, Any]) -> dict[str, Any] | None:
    """Which demand forecaster drove a policy's quotas (GFS's SQA: ``sqa_*`` stats), for meta.json, the
    terminal and the MLflow run; None for a policy without one."""
    if not stats.get("sqa_estimator"):
        return None
    return {"estimator": stats["sqa_estimator"], "model_version": stats.get("sqa_model_version"),
            "model_fits": int(stats.get("sqa_model_fits") or 0),
            "model_forecasts": int(stats.get("sqa_model_forecasts") or 0),
            "fit_cpu_seconds": round(float(stats.get("sqa_fit_cpu_seconds") or 0.0), 3)}


def describe_forecaster(fc: dict[str, Any]) -> str:
    """One line: ``orglinear (trained in the replay: 18 fits, 402 model forecasts)`` or the registry version."""
    est, ver = fc["estimator"], fc.get("model_version")
    if ver:
        how = f"version {ver}"
    elif fc.get("model_fits"):
        how = f"trained in the replay: {fc['model_fits']} fits"
    else:
        how = "no learned model"
    return f"{est} ({how}, {fc.get('model_forecasts', 0):,} model forecasts)"


def _trace_name(table, args: argparse.Namespace) -> str:
    if args.synthetic:
        return f"synthetic {args.synthetic}"
    return Path(str(table.report.source)).name


def cmd_simulate(args: argparse.Namespace) -> int:
    from evaluation.report import check_output

    t0 = time.perf_counter()
    out = Path(args.out or f"results/simulate-{time.strftime('%Y%m%d-%H%M%S')}")
    force = bool(getattr(args, "force", False))
    check_output(out, force)  # before any work: a file, a non-empty folder without --force, no write access
    if args.trace:
        trace_path(args.trace)
    window = tuple(args.window) if args.window else None
    if window is not None and window[1] <= window[0]:
        raise ValueError(f"--window: END ({window[1]:g} s) must be after START ({window[0]:g} s)")
    from sim.policies import get_policy

    for name in args.policy:  # unknown names or parameters stop here, before anything is loaded
        get_policy(name)
    if args.placement is not None:
        from sim.placement import make_placement

        make_placement(args.placement)
    from pipelines.replay import duration_source
    from pipelines.tracking import tracking_destination
    from sim.predictors import describe_predictor, make_predictor

    # --predictor SPEC is the shorthand of --predict duration=SPEC: one duration predictor from either
    args.predictor, predict = duration_source(getattr(args, "predictor", None), getattr(args, "predict", None) or ())
    args.predict = list(predict)
    # Decided before anything touches MLflow: resolving a models:/ predictor calls mlflow.set_tracking_uri,
    # which writes $MLFLOW_TRACKING_URI, and that must not turn tracking on (no --track, no URI given).
    args.track_destination = tracking_destination(getattr(args, "track", None), getattr(args, "tracking_uri", None))
    predictor = make_predictor(args.predictor, seed=args.seed, tracking_uri=getattr(args, "tracking_uri", None))
    predicted = _policies_using_predictions(args.policy)
    if not predicted and args.predictor != "oracle":
        print(f"note: --predictor {args.predictor} is not used: none of the policies ({', '.join(args.policy)}) "
              "uses predictions")
    predictor_info = describe_predictor(predictor) if predicted else {"kind": "unused", "spec": args.predictor}
    if predictor_info.get("kind") == "mlflow-model":  # which model drove the policies: the console says it too
        print(f"predictor:  {model_line(predictor_info)}")
    plotter = _start_plotter() if getattr(args, "plots", True) else None
    try:
        return _run(args, t0, out, force, window, predictor, predicted, predictor_info, plotter)
    finally:
        if plotter is not None:
            plotter.close()


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask: `taskset`, a container's cpuset), else the
    machine's count."""
    import os

    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def _start_plotter():
    """A PlotWorker drawing the plots beside the replay, where a second CPU can run it; None: draw in this
    process (SCHEDCAST_PLOT_WORKER=0, or one usable CPU, where a second interpreter would only add its
    start-up: 1.75 M jobs pinned to one core, 0.56 s for plots drawn by the worker against 0.30 s here)."""
    import os

    if os.environ.get("SCHEDCAST_PLOT_WORKER", "1") == "0" or usable_cpus() < 2:
        return None
    from evaluation.report import PlotWorker

    try:
        return PlotWorker()
    except (OSError, ValueError):  # no interpreter to start: draw in this process
        return None


def _run(args, t0, out, force, window, predictor, predicted, predictor_info, plotter) -> int:
    from evaluation.report import HP_SPOT_COLUMNS, JobsParquet, render_table, write_results
    from sim.sizing import offered_load

    kind = getattr(args, "kind", "simulate")
    t_load = time.perf_counter()
    table, workload = _build_workload(args)
    t_load = time.perf_counter() - t_load
    print(table.report.render())
    rep = workload.report
    sizing = rep.get("sizing")
    if sizing:
        print(f"cluster:    {workload.cluster.describe()} (resized from {sizing['nodes_before']} nodes for "
              f"offered load {sizing['target']:g}; was {sizing['load_before']:.2f})")
    else:
        print(f"cluster:    {workload.cluster.describe()}")
    if not len(workload):
        raise ValueError("no job is left to simulate")
    load = offered_load(workload, workload.cluster.gpus)
    print(f"workload:   {rep['jobs_kept']:,} jobs simulated, {rep['jobs_rejected']:,} rejected "
          f"{rep['rejected'] if rep['rejected'] else ''}".rstrip() + f"; offered load {load:.2f}")
    for note in rep["notes"]:
        print(f"note: {note}")
    if load < 0.2 and not sizing:
        print(f"note: offered load {load:.2f}: the cluster is mostly idle, so jobs barely wait and policies "
              "tie; --offered-load 0.9 sizes the cluster for contention")
    measured = _check_window(window, workload)
    from pipelines.replay import prepare_replay, run_replay

    base = replay_spec(args, args.policy[0], window)
    prepared = prepare_replay(base, built=(table, workload), predictor=predictor, announce=print)
    args.failures = prepared.failures
    t_model = t_track = 0.0
    if predicted and hasattr(predictor, "_predict"):
        # A model server or registry model is asked now, so that an unreachable or broken model stops
        # the command before any replay (the answer is reused by every policy).
        from pipelines.progress import step
        from sim.predictors import predict_durations

        t_model = time.perf_counter()
        with step(f"asking {args.predictor} for {len(workload):,} predictions", enabled=_show_progress(args)):
            predict_durations(predictor, workload.frame)
        t_model = time.perf_counter() - t_model
    progress = _Progress() if _show_progress(args) else None
    has_spot = prepared.has_spot
    runs: dict[str, dict[str, Any]] = {}
    encoded: dict[str, JobsParquet] = {}  # each policy's job file, encoded beside the scoring and later replays
    forecasters: dict[str, dict[str, Any]] = {}
    replay_times: dict[str, tuple[float, float]] = {}  # epoch (start, end) per replay: MLflow runs' durations
    replayed = None
    t_replay = time.perf_counter()
    for policy in args.policy:
        update, stop = progress.track(f"{policy:>14}", len(workload)) if progress else (None, lambda: None)
        try:
            def encode(jobs, policy=policy) -> None:
                encoded[policy] = JobsParquet(jobs, window)

            began = time.time()
            replayed = run_replay(base.with_policy(policy), prepared, progress=update, on_jobs=encode)
            replay_times[policy] = (began, time.time())
        finally:
            stop()
        runs[policy] = replayed.evaluation
        fc = forecaster_info(replayed.result.policy_stats)
        if fc:
            forecasters[policy] = fc
        print(f"  {policy}: {replayed.result.events:,} events in {replayed.result.wall_seconds:.2f} s"
              + (f"; quotas from {describe_forecaster(fc)}" if fc else ""))
    t_replay = time.perf_counter() - t_replay
    trace_name = _trace_name(table, args)
    title = f"\n{workload.cluster.name} | {trace_name} | "
    if window:
        title += (f"{measured:,} of {len(workload):,} jobs measured (submitted in {window[0]:g}-{window[1]:g} s); "
                  "util % over the whole replay")
    else:
        title += f"{len(workload):,} jobs"
    print(render_table([r["summary"] for r in runs.values()], title, width=_terminal_width()))
    _print_load(runs, load, sizing)
    if has_spot:
        warmup = "warmup" in workload.frame and bool(workload.frame["warmup"].fillna(False).astype(bool).any())
        scope = ("measured window" if window else "tasks after the HP-only warm-up" if warmup else "all tasks")
        print(render_table([r["summary"] for r in runs.values()],
                           f"\nHP / spot tasks ({scope}; JQT = sum of all waits; evict/run = evictions / spot runs)",
                           HP_SPOT_COLUMNS, width=_terminal_width()))
    import shlex

    from pipelines.replay import ordered_meta

    meta = ordered_meta({"kind": kind, "command": shlex.join(["schedcast", *getattr(args, "argv", sys.argv[1:])]),
            **replayed.meta, "trace_name": trace_name, "offered_load": load, "policies": args.policy,
            "load_reached": {p: r["summary"].get("load_reached") for p, r in runs.items()},
            "predictor_resolved": predictor_info, "failures": getattr(args, "failures", "none"),
            "measured_jobs": measured or len(workload), **({"forecasters": forecasters} if forecasters else {})})
    plots = getattr(args, "plots", True)
    t_write = time.perf_counter()
    write_results(out, runs, meta, force=force, plots=plots, plotter=plotter, encoded=encoded)
    t_write = time.perf_counter() - t_write
    from pipelines.tracking import tracking_destination

    uri = (args.track_destination if hasattr(args, "track_destination")
           else tracking_destination(getattr(args, "track", None), getattr(args, "tracking_uri", None)))
    if uri:
        from pipelines.tracking import track_simulation

        t_track = time.perf_counter()
        parent = track_simulation(out, runs, meta, uri, times=replay_times,
                                  started=time.time() - (time.perf_counter() - t0))
        t_track = time.perf_counter() - t_track
        from pipelines.tracking import ui_link

        print(f"MLflow: parent run {parent} with one nested run per policy in {uri} ({t_track:.2f} s)\n"
              f"MLflow UI: {ui_link(uri, parent)}")
    files = "summary.csv, jobs_*.parquet, allocation_*.parquet, breakdowns, meta.json"
    files += ", jct_cdf.png, gpu_allocation.png" if plots else " (no plots: --no-plots)"
    total = time.perf_counter() - t0
    parts = [("load", t_load), ("model", t_model), ("replay and scoring", t_replay),
             (f"files{' and plots' if plots else ''}", t_write), ("MLflow", t_track)]
    parts.append(("start-up and other", max(0.0, total - sum(v for _, v in parts))))
    print(f"\nresults in {out}/ ({files})\ntime: {total:.2f} s in this command ("
          + ", ".join(f"{k} {v:.2f}" for k, v in parts if v > 0 or k in ("load", "replay and scoring")) + ")")
    return 0


def _is_demo_folder(path: Path) -> bool:
    """True for a folder holding an earlier `schedcast demo` result (which the demo may replace): schedcast's
    marker of kind demo, with the id its meta.json records (evaluation.outdir); a meta.json alone is not enough."""
    from evaluation.outdir import is_own_output

    if not is_own_output(path):
        return False
    try:
        return json.loads((path / "meta.json").read_text()).get("kind") == "demo"
    except (OSError, ValueError, AttributeError):
        return False


def cmd_demo(args: argparse.Namespace) -> int:
    out = Path(args.out or DEMO_OUT)
    # The demo's own folder is replaced on every run; any other folder follows --force like simulate.
    force = args.force or (args.out is None and _is_demo_folder(out))
    ns = argparse.Namespace(
        trace=None, synthetic="demo", format=None, jobs=args.jobs, cluster=None, costs="none",
        default_gpus=None, data_dir=None, seed=args.seed, policy=DEFAULT_POLICIES, placement=None,
        predictor="oracle", window=None, out=str(out), no_progress=args.no_progress, force=force,
        check_invariants=False, tracking_uri=None, offered_load=None, plots=args.plots, kind="demo",
        argv=getattr(args, "argv", sys.argv[1:]))
    print("schedcast demo: a seeded SYNTHETIC Helios-like workload on a 16x8-GPU cluster "
          "(no external data needed)\n")
    return cmd_simulate(ns)


def add_parsers(sub) -> None:
    """Register `simulate` and `demo`."""
    p = sub.add_parser("simulate", help="replay a trace under one or more policies",
                       description="Replay a trace (or a seeded synthetic preset) under one or more policies, "
                       "print a comparison table and write a result folder (summary.csv, per-job parquet, "
                       "breakdowns, meta.json, plots). Everything is checked before the replay starts.")
    _add_workload_args(p)
    p.add_argument("--policy", nargs="+", type=policy_label_arg, default=DEFAULT_POLICIES, metavar="POLICY",
                   help="registry names (see `schedcast policies -v`), optionally name:key=value,... "
                   f"(default: {' '.join(DEFAULT_POLICIES)})")
    from sim.placement import PLACEMENTS  # every placement, from the placement table
    from sim.placement.scored import SCORES

    p.add_argument("--placement", default=None, help=f"one of {', '.join(PLACEMENTS)}, optionally name:key=value,... "
                   f"(scored:SCORE=WEIGHT,... weighs the scores {', '.join(SCORES)}); default: the policy's own, "
                   "else consolidate")
    p.add_argument("--predictor", default=None, type=predictor_arg,
                   help="the duration predictor of prediction-based policies, the shorthand of --predict "
                   "duration=SPEC: oracle (default), noisy:SIGMA, models:/NAME@ALIAS (MLflow registry; the "
                   "resolved version is recorded in meta.json) or an `mlflow models serve` URL")
    p.add_argument("--tracking-uri", type=tracking_uri_arg, help="MLflow tracking URI for models:/ predictors and for --track (default "
                   "$MLFLOW_TRACKING_URI or sqlite:///mlruns/mlflow.db); naming one turns tracking on")
    p.add_argument("--trust-local-models", action="store_true", help="allow models from a local path or from a "
                   f"tracking store other than the configured one (a model is a pickle: it runs its code)")
    p.add_argument("--track", action=argparse.BooleanOptionalAction, default=None,
                   help="log the replays to MLflow: a parent run and one nested run per policy (params, metrics, "
                   "files, model lineage). Default: on when --tracking-uri or $MLFLOW_TRACKING_URI is set; "
                   "--track alone uses ./mlruns/mlflow.db; --no-track turns it off")
    p.add_argument("--failures", default=None, metavar="SPEC",
                   help="failure events: trace (the trace's own failures; the default for a workload that "
                   "carries them, such as the *-failures presets), none (the default otherwise), or "
                   "rate=R,repair=S,... (parametric; see docs/concepts.md, Failures)")
    p.add_argument("--performance", default=None, metavar="SPEC",
                   help="placement-dependent speed model, e.g. asrpt or asrpt:inter_gbps=1 (default: "
                   "speed 1 everywhere)")
    p.add_argument("--predict", action="append", type=predict_arg, metavar="KIND=SPEC",
                   help="per-job estimates by kind for policies that read them, e.g. "
                   "iterations=models:/iterations@champion or iterations=group-median (repeatable); "
                   "duration=SPEC with a predictor SPEC (oracle, noisy:S, models:/..., a URL) is --predictor SPEC")
    p.add_argument("--window", nargs=2, metavar=("START", "END"), type=duration_arg,
                   help="measure only jobs submitted in [START, END) (seconds, or e.g. 1d 20d); the replay "
                   "is unchanged, job tables mark measured jobs (in_window) and the JCT plot shows only them")
    p.add_argument("--out", metavar="DIR", help="output folder (default results/simulate-<time>); written "
                   "whole or not at all")
    p.add_argument("--force", action="store_true", help="replace --out if it is a result folder schedcast "
                   "wrote earlier (never another folder or a file)")
    p.add_argument("--plots", action=argparse.BooleanOptionalAction, default=True,
                   help="write jct_cdf.png and gpu_allocation.png (default: yes; --no-plots saves ~0.3 s)")
    p.add_argument("--check-invariants", action="store_true", help="check invariants after every event "
                   "(slow)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar (it is shown only when "
                   "stderr is a terminal)")
    p.set_defaults(func=cmd_simulate, fast_exit=True)

    p = sub.add_parser("demo", help="a first run on a seeded synthetic workload (no data needed)",
                       description="Replay a seeded synthetic Helios-like workload (2,000 jobs, 16 x 8 GPUs) "
                       f"under {', '.join(DEFAULT_POLICIES)}; print the comparison and write {DEMO_OUT}/ "
                       "(replaced on every run).")
    p.add_argument("--jobs", type=jobs_arg, default=None, metavar="N", help="number of jobs (default 2,000)")
    p.add_argument("--seed", type=non_negative_int, default=0)
    p.add_argument("--out", metavar="DIR", help=f"output folder (default {DEMO_OUT}, replaced on every run)")
    p.add_argument("--force", action="store_true", help="replace --out if it exists and is not empty")
    p.add_argument("--plots", action=argparse.BooleanOptionalAction, default=True,
                   help="write the plots (default: yes)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_demo, fast_exit=True)
