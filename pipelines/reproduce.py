"""`schedcast reproduce PAPER`: run a paper's evaluation and write its claims ledger.

The paper's folder ``configs/experiments/papers/<paper>/`` holds ``claims.yaml`` (each headline claim as the
paper states it, its numbers per setting with ``paper.txt:LINE``, the measure, preconditions; format in
``evaluation.claims``) and the experiment specs its runner (``pipelines.papers``) replays.

Everything a run makes lives under ``--out`` (default ``results/reproduce/<paper>[-quick]``): the ledger
(``claims.json``, ``claims.md``, ``claims.html``), the runner's per-policy tables (CSV, one per setting) and
plots, and the experiment cells (``cells/``, reused by the next run into the same folder with ``--force``;
``--cache DIR`` shares one cell folder between ledgers instead). The folder is written whole or not at all
(evaluation.outdir). ``--claim ID`` re-runs one claim's settings into ``OUT/claim-ID`` with OUT's cells.
Full ledgers run seeds 0 1 2 by default (a verdict needs an interval); ``--quick`` is a smoke test and says
so on the first line of every file. ``--all`` runs every paper into ``OUT/<paper>`` with one index page;
``--summary DIR...`` prints one markdown table per paper from finished ledgers (docs/ledgers.md). With
``--track`` each paper's ledger is also an MLflow run (settings as params, a metric per claim and setting,
verdict tags, the ledger and the tables as artifacts).
"""
from __future__ import annotations

import argparse
import html
import json
import math
import os
import platform
import shutil
import sys
import time
from pathlib import Path
from typing import Any

RESULTS = Path("results") / "reproduce"
FULL_SEEDS = [0, 1, 2]
QUICK_SEEDS = [0]


def _finite(value) -> float | None:
    return float(value) if value is not None and math.isfinite(float(value)) else None


def _machine() -> str:
    return f"{platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}"


def _claim_folder(ids: list[str]) -> str:
    return "claim-" + "+".join(ids)


def _measure(paper: str, folder: Path, *, quick: bool, seeds: list[int] | None, data: Path, workers: int,
             work: Path, say, command: str, skip: list[str], claim_ids: list[str] | None, t0: float, code: str):
    """Run the runner into ``folder`` (a fresh, private folder), judge, write the ledger; (verdicts, meta)."""
    from evaluation.claims import ReproduceContext, judge_all, load_claims, write_ledger
    from pipelines.papers import paper_dir, runner

    claims = load_claims(paper_dir(paper) / "claims.yaml")
    if claim_ids:
        claims = claims.only(set(claim_ids))
    settings = None
    if claim_ids:
        named = [pv.setting for c in claims.claims for pv in c.values]
        settings = None if None in named else frozenset(named)
    ctx = ReproduceContext(quick=quick, out=folder, seeds=list(seeds) if seeds else list(QUICK_SEEDS if quick else FULL_SEEDS),
                           data_dir=data, progress=say, workers=max(1, int(workers)), work=work,
                           seeds_given=bool(seeds), skip=frozenset(skip or ()),
                           claims=frozenset(claim_ids) if claim_ids else None, only_settings=settings)
    measurements = runner(paper)(ctx)
    verdicts = judge_all(claims, measurements, quick=quick)
    meta = {"paper": paper, "quick": quick, "seeds": ctx.seeds, "code_version": code, "machine": _machine(),
            "wall_s": time.perf_counter() - t0, "command": command, "data_dir": str(data),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "skipped": sorted(set(skip or ())), "claims_selected": sorted(claim_ids) if claim_ids else None,
            "settings": ctx.settings,
            "measures": {k: _finite(m.value) for k, m in measurements.items() if m.value is not None}}
    write_ledger(folder, claims, verdicts, meta)
    return verdicts, meta


def _check_paper(paper: str, skip: list[str] | None, claim_ids: list[str] | None) -> None:
    from evaluation.claims import load_claims
    from pipelines.papers import paper_dir, parts, runner

    runner(paper)  # an unknown paper fails here, before anything is written
    unknown = sorted(set(skip or ()) - set(parts(paper)))
    if unknown:
        known = ", ".join(parts(paper)) or "none"
        raise ValueError(f"--skip: {paper} has no part {', '.join(map(repr, unknown))} (its parts: {known})")
    claims = load_claims(paper_dir(paper) / "claims.yaml")
    if claim_ids:
        claims.only(set(claim_ids))  # one-line error naming unknown ids


def reproduce(paper: str, *, quick: bool = False, out: str | Path | None = None, seeds: list[int] | None = None,
              data_dir: str | None = None, workers: int = 1, force: bool = False, tracking_uri: str | None = None,
              progress=None, command: str = "", skip: list[str] | None = None, claims: list[str] | None = None,
              cache: str | Path | None = None) -> tuple[Path, list]:
    """Run ``paper``'s runner, judge its claims, write the ledger; returns (folder, verdicts).

    With ``claims`` (ids) the ledger of only those claims goes to ``out/claim-ID`` and reuses ``out/cells``."""
    from evaluation.outdir import check_output, replace_folder
    from features.paths import data_dir as resolve_data_dir
    from pipelines.tracking import code_version

    _check_paper(paper, skip, claims)
    base = Path(out) if out else RESULTS / (paper + ("-quick" if quick else ""))
    target = base / _claim_folder(sorted(claims)) if claims else base
    if claims:
        if base.exists() and not base.is_dir():
            raise ValueError(f"--out {base} is a file, not a folder")
    made = bool(claims) and not base.exists()
    check_output(target, force)  # before any replay: a file, a foreign folder, an earlier ledger without --force
    data = Path(resolve_data_dir(data_dir))
    say = progress or (lambda message: None)
    t0 = time.perf_counter()
    code = code_version()  # the code that runs: read before the replays (edits made meanwhile are not it)

    def fill(tmp: Path):
        if cache:
            work = Path(cache)
        elif claims:
            work = base / "cells"  # the paper ledger's cells: only missing ones run
        else:
            work = tmp / "cells"
            if (base / "cells").is_dir():  # --force over an earlier ledger: keep its finished cells
                shutil.copytree(base / "cells", work)
        return _measure(paper, tmp, quick=quick, seeds=seeds, data=data, workers=workers, work=work, say=say,
                        command=command, skip=skip or [], claim_ids=claims, t0=t0, code=code)

    if claims:
        base.mkdir(parents=True, exist_ok=True)
    try:
        verdicts, meta = replace_folder(target, fill, kind="reproduce", force=force)
    except BaseException:
        if made:  # a --claim run into a new folder leaves nothing behind when it fails
            shutil.rmtree(base, ignore_errors=True)
        raise
    if tracking_uri:
        _track(tracking_uri, paper, quick, target, verdicts, meta)
    return target, verdicts


def reproduce_all(*, quick: bool = False, out: str | Path | None = None, force: bool = False, progress=None,
                  tracking_uri: str | None = None, command: str = "", **kw) -> tuple[Path, dict[str, Any]]:
    """Every paper into ``out/<paper>`` and one index page (``index.html``, ``index.md``); a paper whose
    runner fails is listed with its error and the others still run. Returns (folder, {paper: verdicts|error})."""
    from evaluation.outdir import replace_folder
    from features.paths import data_dir as resolve_data_dir
    from pipelines.papers import RUNNERS
    from pipelines.tracking import code_version

    base = Path(out) if out else RESULTS / ("all-quick" if quick else "all")
    say = progress or (lambda message: None)
    data = Path(resolve_data_dir(kw.pop("data_dir", None)))
    code = code_version()
    results: dict[str, Any] = {}

    def fill(tmp: Path):
        for paper in sorted(RUNNERS):
            say(f"== {paper}")
            t0 = time.perf_counter()
            folder = tmp / paper
            folder.mkdir()
            work = Path(kw["cache"]) / paper if kw.get("cache") else folder / "cells"
            if not kw.get("cache") and (base / paper / "cells").is_dir():
                shutil.copytree(base / paper / "cells", work)
            try:
                results[paper] = _measure(paper, folder, quick=quick, seeds=kw.get("seeds"), data=data,
                                          workers=kw.get("workers", 1), work=work, say=say, command=command,
                                          skip=[], claim_ids=None, t0=t0, code=code)
            except Exception as exc:  # noqa: BLE001 - one paper's failure is reported, the others still run
                results[paper] = f"{type(exc).__name__}: {' '.join(str(exc).split())}"
                say(f"{paper} failed: {results[paper]}")
        _write_index(tmp, results, quick, code)

    replace_folder(base, fill, kind="reproduce", force=force)
    if tracking_uri:
        for paper, r in results.items():
            if not isinstance(r, str):
                _track(tracking_uri, paper, quick, base / paper, r[0], r[1])
    return base, results


def _write_index(folder: Path, results: dict[str, Any], quick: bool, code: str) -> None:
    from evaluation.claims import SMOKE, VERDICTS, counts, load_claims
    from pipelines.papers import paper_dir

    rows = []
    for paper, r in results.items():
        title = load_claims(paper_dir(paper) / "claims.yaml").title
        if isinstance(r, str):
            rows.append((paper, title, "failed: " + r, None))
        else:
            tally = counts(r[0])
            rows.append((paper, title, ", ".join(f"{tally[v]} {v}" for v in VERDICTS) + f"; {r[1]['wall_s']:.0f} s", paper))
    head = [f"**{SMOKE}**", ""] if quick else []
    md = head + ["# schedcast: the papers' claims ledgers", "",
                 f"code {code}; {_machine()}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}", "",
                 "| paper | title | verdicts |", "|---|---|---|"]
    md += [f"| {f'[{p}]({link}/claims.md)' if link else p} | {t} | {s} |" for p, t, s, link in rows]
    (folder / "index.md").write_text("\n".join(md) + "\n")
    e = html.escape
    smoke = f"<p style='background:#fff3cd;padding:8px'><b>{e(SMOKE)}</b></p>" if quick else ""
    body = "".join(f"<tr><td>{f'<a href={chr(39)}{e(link)}/claims.html{chr(39)}>{e(p)}</a>' if link else e(p)}</td>"
                   f"<td>{e(t)}</td><td>{e(s)}</td></tr>" for p, t, s, link in rows)
    (folder / "index.html").write_text(
        f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>schedcast claims ledgers</title></head>"
        f"<body style='font-family:system-ui,sans-serif;margin:2em'>{smoke}<h1>The papers' claims ledgers</h1>"
        f"<p>code {e(code)}; {e(_machine())}</p><table border='1' cellpadding='4' style='border-collapse:collapse'>"
        f"<tr><th>paper</th><th>title</th><th>verdicts</th></tr>{body}</table></body></html>\n")


def _flat_settings(settings: dict[str, dict]) -> dict[str, Any]:
    """Settings as MLflow params: setting.<name>.<key> (lists and tables as text)."""
    out = {}
    for name, s in (settings or {}).items():
        for key, value in (s or {}).items():
            if value is None:
                continue
            if key == "calibration":
                for c in value or []:
                    out[f"setting.{name}.calibration.{c.get('target', '?')}"] = (
                        f"paper {c.get('paper')} ({c.get('cite', '')}), reached {c.get('reached')}")
            else:
                out[f"setting.{name}.{key}"] = value if not isinstance(value, (list, tuple, dict)) else json.dumps(value, default=str)
    return out


def _track(uri: str, paper: str, quick: bool, out: Path, verdicts, meta) -> str:
    from evaluation.claims import DIRECTION, HOLDS, MISSES, UNTESTABLE, counts
    from pipelines.tracking import LEDGER_EXPERIMENT, Tracker, ui_link

    tally = counts(verdicts)
    tracker = Tracker(uri, experiment=LEDGER_EXPERIMENT)
    metrics: dict[str, float] = {}
    tags = {"schedcast.kind": "reproduce", "schedcast.code_version": meta["code_version"],
            "schedcast.smoke_test": str(bool(quick))}
    for v in verdicts:
        tags[f"verdict.{v.claim}"] = v.verdict
        if v.measured is not None:
            metrics[f"claim/{v.claim}"] = v.measured
        for s in v.settings:
            if s.setting and len(v.settings) > 1:
                tags[f"verdict.{v.claim}.{s.setting}"] = s.verdict
            suffix = f"/{s.setting}" if s.setting else ""
            for name, value in (("", s.mean), ("/lo", s.lo), ("/hi", s.hi)):
                if value is not None and math.isfinite(value) and (suffix or name):
                    metrics[f"claim/{v.claim}{suffix}{name}"] = value
    metrics.update({"claims_hold": tally[HOLDS], "claims_hold_in_direction": tally[DIRECTION],
                    "claims_do_not_hold": tally[MISSES], "claims_not_testable": tally[UNTESTABLE]})
    params = {"paper": paper, "quick": quick, "seeds": meta["seeds"], "code_version": meta["code_version"],
              "machine": meta.get("machine", ""), **_flat_settings(meta.get("settings") or {})}
    run = tracker.start(f"reproduce {paper}{' (quick)' if quick else ''}", params=params, tags=tags, metrics=metrics)
    files = [p for p in sorted(out.iterdir()) if p.name != "cells" and not p.name.startswith(".")]
    for p in files:
        tracker.artifacts(run, [p], artifact_path=p.name if p.is_dir() else None)
    tracker.end(run, "FINISHED")
    print(f"MLflow run: {ui_link(uri, run)}", file=sys.stderr)
    return run


def _print(paper: str, out: Path, verdicts, quick: bool = False) -> None:
    """The ledger's table on stdout: rich in a terminal (whole words, cut into column blocks when wider than
    the terminal), one plain line per row elsewhere (pipelines.console)."""
    from evaluation.claims import DIRECTION, HOLDS, MISSES, SMOKE, UNTESTABLE, counts, ours_cell, paper_cell
    from pipelines.console import print_table

    if quick:
        print(SMOKE)
    rows = []
    for v in verdicts:
        for i, s in enumerate(v.settings):
            label = s.verdict + (" (1 seed)" if s.one_seed and s.verdict != UNTESTABLE else "")
            rows.append([v.claim if i == 0 else "", s.setting or "–", paper_cell(s, v.unit), ours_cell(s, v.unit), label])
    print_table(("claim", "setting", "paper [cite]", "schedcast: mean [95 % interval]", "verdict"), rows,
                title=f"{paper}: claims ledger")
    tally = counts(verdicts)
    print(f"{tally[HOLDS]} hold, {tally[DIRECTION]} hold in direction, {tally[MISSES]} do not hold, "
          f"{tally[UNTESTABLE]} not testable. Ledger: {out / 'claims.html'} (also claims.md, claims.json)")


# -- the docs table ---------------------------------------------------------------------------------
def _ledgers(dirs: list[str]) -> list[tuple[Path, dict]]:
    """claims.json of each DIR (a paper's ledger) or of each DIR/<paper>/ (an --all folder)."""
    found = []
    for d in dirs:
        d = Path(d)
        paths = [d / "claims.json"] if (d / "claims.json").is_file() else sorted(d.glob("*/claims.json"))
        if not paths:
            raise ValueError(f"--summary: {d} holds no claims.json (a ledger folder, or an --all folder)")
        for p in paths:
            try:
                found.append((p, json.loads(p.read_text())))
            except (OSError, ValueError) as exc:
                raise ValueError(f"--summary: {p}: not a claims ledger ({' '.join(str(exc).split())})") from None
    return found


def summary_markdown(dirs: list[str]) -> str:
    """One table per paper (claim, setting, paper + cite, ours ± interval, verdict) from finished ledgers,
    each headed by its date, code version, machine, seeds and mode."""
    from evaluation.claims import SMOKE, SettingVerdict, ours_cell, paper_cell

    lines = ["# The papers' claims ledgers", "",
             "Generated by `schedcast reproduce --summary DIR...` from the ledgers' claims.json; do not edit by "
             "hand. Per setting: the paper's number and line, our mean with its 95 % Student-t interval over "
             "seeds (n), and the verdict (holds / holds in direction / does not hold / not testable).", ""]
    ledgers = _ledgers(dirs)
    quick = [doc.get("paper", str(path)) for path, doc in ledgers if (doc.get("meta") or {}).get("quick")]
    if quick:
        who = "Every ledger below is" if len(quick) == len(ledgers) else f"The ledgers of {', '.join(quick)} are"
        lines += [f"**{who} a quick smoke test (--quick): small replays (one seed unless --seeds says more); it shows that the ledger runs, "
                  "not whether a claim holds.**", ""]
    for path, doc in ledgers:
        meta = doc.get("meta") or {}
        quick = bool(meta.get("quick"))
        lines += [f"## {doc.get('title', doc.get('paper'))}", ""]
        if quick:
            lines += [f"**{SMOKE}**", ""]
        c = doc.get("counts") or {}
        lines += [f"{'Quick (smoke test)' if quick else 'Full'} ledger of {meta.get('date', '?')}; code "
                  f"{meta.get('code_version', '?')}; {meta.get('machine', '?')}; seeds {meta.get('seeds')}; "
                  f"{float(meta.get('wall_s', 0)):.0f} s wall; " + ", ".join(f"{n} {k}" for k, n in c.items())
                  + f". Command: `{meta.get('command', '')}`.", "",
                  "| claim | setting | paper [cite] | ours: mean [95 % interval] (n) | verdict |",
                  "|---|---|---|---|---|"]
        for claim in doc.get("claims", []):
            unit = claim.get("unit", "")
            for i, s in enumerate(claim.get("settings") or []):
                sv = SettingVerdict(**{k: s.get(k) for k in ("setting", "verdict", "paper_value", "cite")},
                                    paper_text=s.get("paper_text", ""), mean=s.get("mean"), lo=s.get("lo"),
                                    hi=s.get("hi"), n=s.get("n") or 0, one_seed=bool(s.get("one_seed")))
                verdict = sv.verdict + (" (1 seed)" if sv.one_seed and sv.verdict != "not testable" else "")
                if sv.verdict == "not testable" and s.get("reason"):
                    verdict += f": {s['reason']}"
                cells = [claim["claim"] if i == 0 else "", sv.setting or "–", paper_cell(sv, unit),
                         ours_cell(sv, unit), verdict]
                lines.append("| " + " | ".join(str(x).replace("|", "/").replace("\n", " ") for x in cells) + " |")
        lines.append("")
    return "\n".join(lines)


def cmd_reproduce(args: argparse.Namespace) -> int:
    from pipelines.papers import RUNNERS
    from pipelines.tracking import tracking_destination

    if args.list:
        from evaluation.claims import load_claims
        from pipelines.papers import paper_dir

        for name in sorted(RUNNERS):
            try:
                cf = load_claims(paper_dir(name) / "claims.yaml")
            except ValueError as exc:
                print(f"{name:<10} (its claims file does not load: {exc})")
                continue
            print(f"{name:<10} {cf.title}  ({len(cf.claims)} claims)")
        return 0
    if args.summary:
        print(summary_markdown(args.summary), end="")
        return 0
    if args.all and args.paper:
        raise ValueError("give a paper or --all, not both")
    if args.all and (args.claim or args.skip):
        raise ValueError("--claim and --skip name one paper's claims or parts: not with --all")
    if not args.paper and not args.all:
        raise ValueError(f"name a paper: one of {', '.join(sorted(RUNNERS))} (or --all, --list, --summary DIR)")
    uri = tracking_destination(args.track, args.tracking_uri)
    interactive = sys.stderr.isatty()

    def say(message: str) -> None:
        print(("· " if interactive else "") + message, file=sys.stderr, flush=True)

    command = "schedcast " + " ".join(getattr(args, "argv", []) or [])
    if args.all:
        out, results = reproduce_all(quick=args.quick, out=args.out, force=args.force, progress=say,
                                     tracking_uri=uri, command=command, seeds=args.seeds, workers=args.workers,
                                     data_dir=args.data_dir, cache=args.cache)
        for paper, r in results.items():
            if isinstance(r, str):
                print(f"{paper}: FAILED ({r})")
            else:
                _print(paper, out / paper, r[0], quick=args.quick)
        print(f"Index: {out / 'index.html'}")
        return 1 if any(isinstance(r, str) for r in results.values()) else 0
    out, verdicts = reproduce(args.paper, quick=args.quick, out=args.out, seeds=args.seeds, data_dir=args.data_dir,
                              workers=args.workers, force=args.force, tracking_uri=uri, progress=say,
                              command=command, skip=args.skip, claims=args.claim, cache=args.cache)
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
                       "of its headline claims, per setting, a verdict on the 95 %% interval over seeds: holds, "
                       "holds in direction, does not hold, or not testable here (with the reason). Writes "
                       "claims.json, claims.md, claims.html, per-policy tables and the cells under --out. A claim "
                       "that does not hold is a finding: the exit code is 0 when every claim got a verdict.")
    p.add_argument("paper", nargs="?", help="lazer, lucid, gfs, asrpt, schedmate (see --list)")
    p.add_argument("--list", action="store_true", help="list the papers (name, title, claims) and stop")
    p.add_argument("--all", action="store_true", help="run every paper into OUT/PAPER and write OUT/index.html")
    p.add_argument("--claim", nargs="+", metavar="ID", help="re-run only these claims' settings into "
                   "OUT/claim-ID, reusing OUT's cells (the ledger shows only these claims)")
    p.add_argument("--summary", nargs="+", metavar="DIR", help="print one markdown table per paper from the "
                   "ledgers in DIR... (a paper's --out or an --all folder) and stop, e.g. > docs/ledgers.md")
    p.add_argument("--quick", action="store_true", help="small replays, one seed unless --seeds: a smoke test of the ledger, not "
                   "evidence (every file says so); claims marked full-only are 'not testable' in this mode")
    p.add_argument("--out", metavar="DIR", help="ledger folder (default results/reproduce/PAPER[-quick]); "
                   "replaced only with --force and only if it holds an earlier ledger")
    p.add_argument("--cache", metavar="DIR", help="keep experiment cells in DIR (shared between ledgers) instead "
                   "of OUT/cells")
    p.add_argument("--force", action="store_true", help="replace an earlier ledger in --out (its cells are reused)")
    p.add_argument("--seeds", type=non_negative_int, nargs="+", metavar="N", help="seeds (default: 0 1 2 in a full "
                   "run, 0 in --quick; a verdict needs >= 2)")
    p.add_argument("--workers", type=_workers, default=1, metavar="N",
                   help="run experiment cells on a local Dask cluster of N workers (default 1: in this process)")
    p.add_argument("--data-dir", help="shared data directory (default $SCHEDCAST_DATA or ../shared/data)")
    p.add_argument("--skip", nargs="+", metavar="PART", default=[],
                   help="leave out named parts of the evaluation; their claims are 'not testable' in the ledger "
                   "(gfs: forecasting, the §4.2 model comparison that takes most of the full run)")
    p.add_argument("--track", action=argparse.BooleanOptionalAction, default=None,
                   help="log each ledger as an MLflow run (default: only when --tracking-uri or "
                   "$MLFLOW_TRACKING_URI is set)")
    p.add_argument("--tracking-uri", help="MLflow tracking URI")
    p.set_defaults(func=cmd_reproduce)
