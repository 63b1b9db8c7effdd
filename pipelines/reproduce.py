"""`schedcast reproduce PAPER`: run a paper's evaluation and write its claims ledger.

The paper's folder ``configs/experiments/papers/<paper>/`` holds ``claims.yaml`` (each headline claim: where
it is in the paper, the statement, the paper's number, the measure and the threshold at which it holds)
and the experiment specs its runner (``pipelines.papers``) replays. The ledger (``claims.json``,
``claims.md``, ``claims.html`` plus the runner's tables and plots) is written whole or not at all into
``--out`` (default ``results/reproduce/<paper>[-quick]``; ``--force`` replaces only schedcast's own output,
evaluation.outdir); experiment cells are kept in
``results/reproduce/.cells/`` so a second run reuses the finished ones. With ``--track`` the ledger is also
an MLflow run (a metric per claim, the verdict counts, the pages as artifacts).
"""
from __future__ import annotations

import argparse
import math
import os
import platform
import sys
import time
from pathlib import Path

RESULTS = Path("results") / "reproduce"


def _finite(value) -> float | None:
    return float(value) if value is not None and math.isfinite(float(value)) else None


def _machine() -> str:
    return f"{platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}"


def reproduce(paper: str, *, quick: bool = False, out: str | Path | None = None, seeds: list[int] | None = None,
              data_dir: str | None = None, workers: int = 1, force: bool = False, tracking_uri: str | None = None,
              progress=None, command: str = "", skip: list[str] | None = None) -> tuple[Path, list]:
    """Run ``paper``'s runner, judge its claims, write the ledger; returns (folder, verdicts)."""
    from evaluation.claims import ReproduceContext, counts, judge_all, load_claims, write_ledger
    from evaluation.outdir import check_output, replace_folder
    from features.paths import data_dir as resolve_data_dir
    from pipelines.papers import paper_dir, parts, runner
    from pipelines.tracking import code_version

    run = runner(paper)  # an unknown paper fails here, before anything is written
    unknown = sorted(set(skip or ()) - set(parts(paper)))
    if unknown:
        known = ", ".join(parts(paper)) or "none"
        raise ValueError(f"--skip: {paper} has no part {', '.join(map(repr, unknown))} (its parts: {known})")
    claims = load_claims(paper_dir(paper) / "claims.yaml")
    out = Path(out) if out else RESULTS / (paper + ("-quick" if quick else ""))
    check_output(out, force)  # before any replay: a file, a foreign folder, an earlier ledger without --force
    data = Path(resolve_data_dir(data_dir))
    work = RESULTS / ".cells" / (paper + ("-quick" if quick else ""))
    say = progress or (lambda message: None)
    t0 = time.perf_counter()
    code = code_version()  # the code that runs: read before the replays (edits made meanwhile are not it)

    def fill(tmp: Path):
        ctx = ReproduceContext(quick=quick, out=tmp, seeds=list(seeds) if seeds else [0], data_dir=data,
                               progress=say, workers=max(1, int(workers)), work=work, seeds_given=bool(seeds),
                               skip=frozenset(skip or ()))
        measurements = run(ctx)
        verdicts = judge_all(claims, measurements, quick=quick)
        meta = {"paper": paper, "quick": quick, "seeds": ctx.seeds, "code_version": code,
                "machine": _machine(), "wall_s": time.perf_counter() - t0, "command": command,
                "data_dir": str(data), "skipped": sorted(set(skip or ())),
                "settings": ctx.settings,
                "measures": {k: _finite(m.value) for k, m in measurements.items() if m.value is not None}}
        write_ledger(tmp, claims, verdicts, meta)
        return verdicts, meta

    verdicts, meta = replace_folder(out, fill, kind="reproduce", force=force)
    if tracking_uri:
        _track(tracking_uri, paper, quick, out, verdicts, meta, counts(verdicts))
    return out, verdicts


def _track(uri: str, paper: str, quick: bool, out: Path, verdicts, meta, tally) -> str:
    from pipelines.tracking import Tracker

    tracker = Tracker(uri, experiment="schedcast-reproduce")
    metrics = {f"claim/{v.claim}": v.measured for v in verdicts if v.measured is not None}
    metrics.update({"claims_hold": tally["holds"], "claims_do_not_hold": tally["does not hold"],
                    "claims_not_testable": tally["not testable"]})
    run = tracker.start(f"reproduce {paper}{' (quick)' if quick else ''}",
                        params={"paper": paper, "quick": quick, "seeds": meta["seeds"],
                                "code_version": meta["code_version"]},
                        tags={"schedcast.kind": "reproduce", "schedcast.code_version": meta["code_version"],
                              **{f"verdict.{v.claim}": v.verdict for v in verdicts}},
                        metrics=metrics)
    tracker.artifacts(run, [out / "claims.json", out / "claims.md", out / "claims.html"])
    tracker.end(run, "FINISHED")
    return run


def _print(paper: str, out: Path, verdicts, quick: bool = False) -> None:
    from rich.console import Console
    from rich.table import Table

    from evaluation.claims import DIRECTION, HOLDS, MISSES, SMOKE, UNTESTABLE, counts, ours_cell, paper_cell

    console = Console(highlight=False)
    if quick:
        console.print(f"[bold yellow]{SMOKE}[/]")
    table = Table(title=f"{paper}: claims ledger", show_lines=False)
    for col in ("claim", "setting", "paper [cite]", "schedcast: mean [95 % interval]", "verdict"):
        table.add_column(col, overflow="fold")
    style = {HOLDS: "green", DIRECTION: "yellow", MISSES: "red"}
    for v in verdicts:
        for i, s in enumerate(v.settings):
            label = s.verdict + (" (1 seed)" if s.one_seed and s.verdict != UNTESTABLE else "")
            table.add_row(v.claim if i == 0 else "", s.setting or "–", paper_cell(s, v.unit), ours_cell(s, v.unit),
                          f"[{style.get(s.verdict, 'dim')}]{label}[/]")
    console.print(table)
    tally = counts(verdicts)
    console.print(f"{tally[HOLDS]} hold, {tally[DIRECTION]} hold in direction, {tally[MISSES]} do not hold, "
                  f"{tally[UNTESTABLE]} not testable. Ledger: {out / 'claims.html'} (also claims.md, claims.json)")


def cmd_reproduce(args: argparse.Namespace) -> int:
    from pipelines.papers import RUNNERS
    from pipelines.tracking import tracking_destination

    if args.list:
        for name in sorted(RUNNERS):
            print(name)
        return 0
    if not args.paper:
        raise ValueError(f"name a paper: one of {', '.join(sorted(RUNNERS))}")
    uri = tracking_destination(args.track, args.tracking_uri)
    interactive = sys.stderr.isatty()

    def say(message: str) -> None:
        print(("· " if interactive else "") + message, file=sys.stderr, flush=True)

    out, verdicts = reproduce(args.paper, quick=args.quick, out=args.out, seeds=args.seeds, data_dir=args.data_dir,
                              workers=args.workers, force=args.force, tracking_uri=uri, progress=say,
                              command="schedcast " + " ".join(getattr(args, "argv", []) or []), skip=args.skip)
    _print(args.paper, out, verdicts, quick=args.quick)
    return 0


def _workers(text: str) -> int:
    from pipelines.simulate import positive_int

    value = positive_int(text)
    if value > 256:
        raise argparse.ArgumentTypeError(f"at most 256 workers, got {value}")
    return value


def add_parsers(sub) -> None:
    """Register `reproduce`."""
    from pipelines.simulate import non_negative_int

    p = sub.add_parser("reproduce", help="run a paper's evaluation and judge its claims (the claims ledger)",
                       description="Run the evaluation of PAPER (configs/experiments/papers/PAPER/) and give each "
                       "of its headline claims a verdict: holds, does not hold (with the gap and the measured "
                       "causes) or not testable here (with the reason). Writes claims.json, claims.md and "
                       "claims.html. A claim that does not hold is a finding: the exit code is 0 when every "
                       "claim got a verdict.")
    p.add_argument("paper", nargs="?", help="lazer, lucid, gfs, asrpt, schedmate (see --list)")
    p.add_argument("--list", action="store_true", help="list the papers and stop")
    p.add_argument("--quick", action="store_true", help="small replays (about a minute): a smoke test of the "
                   "ledger, not evidence; claims marked full-only are 'not testable' in this mode")
    p.add_argument("--out", metavar="DIR", help="ledger folder (default results/reproduce/PAPER[-quick]); "
                   "replaced only with --force and only if it holds an earlier ledger")
    p.add_argument("--force", action="store_true", help="replace an earlier ledger in --out")
    p.add_argument("--seeds", type=non_negative_int, nargs="+", metavar="N", help="seeds of the synthetic workloads "
                   "(default: the paper's spec)")
    p.add_argument("--workers", type=_workers, default=1, metavar="N",
                   help="run experiment cells on a local Dask cluster of N workers (default 1: in this process)")
    p.add_argument("--data-dir", help="shared data directory (default $SCHEDCAST_DATA or ../shared/data)")
    p.add_argument("--skip", nargs="+", metavar="PART", default=[],
                   help="leave out named parts of the evaluation; their claims are 'not testable' in the ledger "
                   "(gfs: forecasting, the §4.2 model comparison that takes most of the full run)")
    p.add_argument("--track", action=argparse.BooleanOptionalAction, default=None,
                   help="log the ledger as an MLflow run (default: only when --tracking-uri or "
                   "$MLFLOW_TRACKING_URI is set)")
    p.add_argument("--tracking-uri", help="MLflow tracking URI")
    p.set_defaults(func=cmd_reproduce)
