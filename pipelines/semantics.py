"""`schedcast advise`, `track`, `diagnose` and `corpus`: SchedMate's job semantics on a user's own
repository, command and log files (offline; the hash embedder by default, MiniLM on request).

Errors are one line, exit 2 (a missing repository or log, a bad history file, a bad argument).
"""
from __future__ import annotations

import argparse
import csv
import gzip
import json
import math
from pathlib import Path

from pipelines.simulate import non_negative_int, positive_int

#: Most jobs `corpus` writes (each is a repository, commands and a log: 1e14 would fill any disk).
MAX_CORPUS_JOBS = 100_000


def _corpus_jobs(text: str) -> int:
    value = positive_int(text)
    if value > MAX_CORPUS_JOBS:
        raise argparse.ArgumentTypeError(f"at most {MAX_CORPUS_JOBS:,} jobs, got {value:,}")
    return value


def _log_encoding(p: Path, gz: bool) -> str:
    """The log's text encoding from its byte-order mark (UTF-32 / UTF-16 / UTF-8 with BOM, as Windows
    tools write logs), else UTF-8 (bad bytes replaced)."""
    try:
        with (gzip.open(p, "rb") if gz else open(p, "rb")) as f:
            head = f.read(4)
    except (OSError, EOFError):
        return "utf-8"
    if head.startswith((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")):
        return "utf-32"
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "utf-16"
    if head.startswith(b"\xef\xbb\xbf"):
        return "utf-8-sig"
    return "utf-8"


def _read_log(path: str) -> list[str]:
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"{path}: no such log file")
    if p.is_dir():
        raise IsADirectoryError(f"{path}: is a folder, not a log file")
    if not p.is_file():  # a FIFO blocks for ever, /dev/zero fills the memory
        raise ValueError(f"{path}: is not a regular file (a FIFO, device or socket); give a log file")
    gz = p.read_bytes()[:2] == b"\x1f\x8b"
    opener = gzip.open if gz else open
    try:
        with opener(p, "rt", encoding=_log_encoding(p, gz), errors="replace") as f:
            return f.read().splitlines()
    except (OSError, EOFError) as exc:
        raise ValueError(f"{path}: cannot read the log ({exc})") from None


def _iter_log(path: str, max_line: int = 65536):
    """The lines of a log file, read one at a time (plain or gzip): memory stays bounded on logs of
    any size; a line longer than `max_line` characters is cut into pieces. Only regular files: a FIFO
    or a device (/dev/zero) would never end."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"{path}: no such log file")
    if p.is_dir():
        raise IsADirectoryError(f"{path}: is a folder, not a log file")
    if not p.is_file():
        raise ValueError(f"{path}: not a regular file (a FIFO or a device is not a log)")
    with open(p, "rb") as f:
        gz = f.read(2) == b"\x1f\x8b"
    opener = gzip.open if gz else open
    try:
        with opener(p, "rt", encoding=_log_encoding(p, gz), errors="replace") as f:
            while True:
                line = f.readline(max_line)
                if not line:
                    return
                yield line.rstrip("\r\n")
    except (OSError, EOFError) as exc:
        raise ValueError(f"{path}: cannot read the log ({exc})") from None


def _fmt_s(sec: float | None) -> str:
    if sec is None or not math.isfinite(sec):
        return "unknown"
    if sec < 120:
        return f"{sec:.3g} s"
    if sec < 7200:
        return f"{sec / 60:.1f} min"
    return f"{sec / 3600:.2f} h"


def _history(path: str):
    """History records from CSV or JSON lines: key, duration (s), finished_at (s), optional
    submitted_at, gpu_util, and either `text` (a canonical text) or metadata columns (model, task,
    dataset, iterations, iteration_unit, batch_size, gpus, nodes) from which the text is built."""
    from models.schedmate.advisor import HistoryRecord
    from features.schedmate_text.extract import JobMetadata

    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"{path}: no such history file")
    if p.is_dir():
        raise IsADirectoryError(f"{path}: is a folder, not a history file")
    text = p.read_text(encoding="utf-8", errors="replace")
    rows: list[dict] = []
    if p.suffix in (".jsonl", ".json") or text.lstrip().startswith("{"):
        for i, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise ValueError(f"{path}: line {i} is not JSON ({exc.msg})") from None
    else:
        rows = list(csv.DictReader(text.splitlines()))
    if not rows:
        raise ValueError(f"{path}: no history records")
    out = []
    fields = ("model", "task", "dataset", "iterations", "iteration_unit", "batch_size", "gpus", "nodes")
    for i, r in enumerate(rows, 1):
        if not isinstance(r, dict):
            raise ValueError(f"{path}: record {i} is not an object")
        try:
            dur, fin = float(r["duration"]), float(r["finished_at"])
        except KeyError as exc:
            raise ValueError(f"{path}: record {i} lacks {exc.args[0]!r} (needs key, duration, finished_at and "
                             "text or metadata columns)") from None
        except (TypeError, ValueError):
            raise ValueError(f"{path}: record {i}: duration and finished_at must be numbers (seconds)") from None
        if not (math.isfinite(dur) and dur >= 0 and math.isfinite(fin)):
            raise ValueError(f"{path}: record {i}: duration must be >= 0 and times finite")
        if r.get("text"):
            txt = str(r["text"])
        else:
            def val(k):
                v = r.get(k)
                if v in (None, ""):
                    return None
                return int(float(v)) if k in ("iterations", "batch_size", "gpus", "nodes") else str(v)
            try:
                txt = JobMetadata(**{k: val(k) for k in fields}).canonical_text()
            except ValueError:
                raise ValueError(f"{path}: record {i}: iterations, batch_size, gpus, nodes must be integers") from None
            if all(r.get(k) in (None, "") for k in fields):
                raise ValueError(f"{path}: record {i} has neither `text` nor metadata columns")
        num = lambda k: None if r.get(k) in (None, "") else float(r[k])  # noqa: E731
        try:
            out.append(HistoryRecord(str(r.get("key", i)), txt, dur, fin, num("submitted_at"), num("gpu_util")))
        except ValueError:
            raise ValueError(f"{path}: record {i}: submitted_at and gpu_util must be numbers") from None
    return out


def _min_confidence_default() -> float:
    from features.schedmate_text.evidence import MIN_CONFIDENCE

    return MIN_CONFIDENCE


def _confidence(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0.0 <= v <= 1.0:
        raise argparse.ArgumentTypeError(f"{text} is not in [0, 1]")
    return v


def cmd_advise(args: argparse.Namespace) -> int:
    import sys

    from features.schedmate_text.extract import FIELDS, extract_metadata, read_repository

    files = read_repository(args.repo)
    if args.llm_endpoint:
        from models.schedmate.llm import LLMExtractor, OpenAIBackend

        backend = OpenAIBackend(args.llm_endpoint, model=args.llm_model, timeout=args.llm_timeout)
        md = LLMExtractor(backend, mode=args.llm_mode).extract(args.command, files)
        if str(md.sources.get("llm", "")).startswith("unavailable"):
            print(f"note: the LLM endpoint {args.llm_endpoint} did not answer ({md.sources['llm']}); fell back to "
                  "the static extraction", file=sys.stderr)
    else:
        import os

        # the folder's name as cloned is the repository's identity (evidence for the model where its code agrees)
        md = extract_metadata(args.command, files, repo_name=os.path.basename(os.path.abspath(args.repo)))
    from features.schedmate_text.evidence import abstain
    from features.schedmate_text.metadata import BATCH_FIELDS

    match_text = md.canonical_text()  # the advice matches the whole reading, as the history's texts were built
    abstain(md, args.min_confidence)  # below the threshold a field is "unknown", with the reason
    result: dict = {"metadata": {f: getattr(md, f) for f in FIELDS + BATCH_FIELDS}, "sources": md.sources,
                    "evidence": md.evidence, "unknown": md.unknown, "min_confidence": args.min_confidence,
                    "canonical_text": md.canonical_text(), "advice": None}
    if args.history:
        from models.schedmate.advisor import SchedulingAdvisor  # numpy: only with a history to match against

        hist = _history(args.history)
        adv = SchedulingAdvisor(t_score=args.t_score if args.t_score is not None else 0.9, k=args.k,
                                embedder=args.embedder)
        if args.t_score is None and len(hist) >= 2:
            try:
                adv.calibrate(hist)
            except ValueError:
                pass  # too little history overlapping in time: keep the default
        for r in hist:
            adv.observe(r.key, r.text, r.duration, r.finished_at, r.gpu_util)
        now = args.now if args.now is not None else math.inf
        a = adv.advise(match_text, now=now)
        result["t_score"] = adv.t_score
        result["history"] = len(hist)
        if a is not None:
            result["advice"] = {"duration_s": a.duration, "gpu_util": a.gpu_util, "matches": list(a.matches),
                                "scores": list(a.scores)}
    if args.json:
        print(json.dumps(result, indent=2, default=str))
        return 0
    print(f"repository: {args.repo} ({len(files)} text files)   entry: {md.entry or 'unknown'}")
    w = max(map(len, FIELDS))
    for f in FIELDS:
        v = getattr(md, f)
        ev = md.evidence.get(f) or {}
        if v is None and f in md.unknown:  # a guess below the threshold: unknown, and why
            print(f"  {f:<{w}}  unknown   (guess {ev.get('guess')}: {md.unknown[f]})")
            continue
        where = ev.get("evidence") or md.sources.get("iterations" if f == "iteration_unit" else f, "")
        conf = f" [{ev['kind']} {ev['confidence']:.2f}]" if ev else ""
        print(f"  {f:<{w}}  {'unknown' if v is None else v}" + (f"   <- {where}{conf}" if where else conf))
    print(f"canonical text: {md.canonical_text()}")
    if args.history:
        a = result["advice"]
        if a is None:
            print(f"advice: no finished job with cosine >= {result['t_score']:.2f} among {result['history']} "
                  "history records: the scheduler keeps its own estimate")
        else:
            util = "unknown" if a["gpu_util"] is None else f"{a['gpu_util']:.0f} %"
            print(f"advice: duration {_fmt_s(a['duration_s'])}, GPU utilisation {util} (mean of "
                  f"{len(a['matches'])}: {', '.join(a['matches'])}; best cosine {a['scores'][0]:.3f} >= "
                  f"T_score {result['t_score']:.2f})")
    return 0


def cmd_track(args: argparse.Namespace) -> int:
    from models.schedmate.tracker import MetricTracker

    lines = _read_log(args.logfile)
    hints: dict = {}
    if args.repo or args.command:
        if not (args.repo and args.command):
            raise ValueError("--repo and --command go together (they give the iterations the log may not print)")
        from features.schedmate_text.extract import extract_metadata, read_repository

        md = extract_metadata(args.command, read_repository(args.repo))
        hints = {"iterations": md.iterations, "iteration_unit": md.iteration_unit}
    if args.iterations is not None:
        hints = {"iterations": args.iterations, "iteration_unit": args.unit}
    p = MetricTracker(window=args.window).track(lines, **hints)
    if args.json:
        print(json.dumps(p.to_dict(), indent=2))
        return 0
    if p.step is None:
        print(f"{args.logfile}: no training progress found in {len(lines)} lines")
        return 0
    frac = f" ({100 * p.fraction:.1f} %)" if p.fraction is not None else ""
    print(f"step            {p.step} / {p.total_steps if p.total_steps else 'unknown'}{frac}"
          + (f"   epoch {p.epoch}" if p.epoch is not None else ""))
    print(f"step time       {_fmt_s(p.step_time)}   (mean of the last {p.lines_used} progress lines, outliers removed)")
    print(f"remaining       {_fmt_s(p.remaining)}")
    print(f"loss            {'unknown' if p.loss is None else f'{p.loss:.4g}'}"
          + ("   (diverged: the loss is no longer finite)" if p.diverged else ""))
    print(f"throughput      {'unknown' if p.throughput is None else f'{p.throughput:.1f} samples/s'}")
    return 0


def cmd_diagnose(args: argparse.Namespace) -> int:
    import sys

    from models.schedmate.failures import FailureHandler

    llm = None
    if args.llm_endpoint:
        from models.schedmate.llm import OpenAIBackend

        llm = OpenAIBackend(args.llm_endpoint, model=args.llm_model, timeout=args.llm_timeout)
    method = "tail" if args.tail_only else args.method
    # streamed, one pass in bounded memory: a 200 MB log is never held whole
    d = FailureHandler(tail=args.tail, llm=llm).diagnose_stream(_iter_log(args.logfile), method=method)
    if llm is not None and "llm unavailable" in d.note:
        print(f"note: the LLM endpoint {args.llm_endpoint} did not answer ({d.note.split('(')[-1].split(')')[0]}); "
              "fell back to the rule-based diagnosis", file=sys.stderr)
    if args.json:
        print(json.dumps(d.to_dict(), indent=2))
        return 0
    if d.line_index is None:
        print(f"{args.logfile}: no failure evidence found in {d.lines_read} lines")
        return 0
    print(f"root cause      line {d.line_index + 1}: {d.line.strip()[:300]}")
    print(f"type            {d.kind}   component: {d.component}   cause: {d.cause or 'unknown'}")
    how = {"locator": f"one streamed pass over {d.lines_read} lines, final failure episode",
           "tail": f"last {args.tail} lines only", "scan": "first error line of the whole log"}.get(
        d.method.split("+")[0], d.method)
    print(f"found by        {how}; classified by {d.note}")
    if d.kind == "infrastructure":
        print("recovery        cordon the node for repair; restart the job from its last checkpoint")
    elif d.kind == "unknown":
        print("recovery        unknown cause: read the lines around the root-cause line")
    elif d.kind is not None:
        print("recovery        a job error: resubmitting will fail again until the code or config is fixed")
    return 0


def cmd_corpus(args: argparse.Namespace) -> int:
    from evaluation.outdir import check_output, replace_folder
    from features.jobcorpus import write_corpus

    if args.jobs < 1:
        raise ValueError("--jobs must be >= 1")
    # Refused before any work: a file, a non-empty folder without --force, or (with --force) a folder that
    # is not an earlier corpus / schedcast output; written whole-or-nothing through a sibling folder.
    check_output(args.out, args.force)
    paths = replace_folder(args.out, lambda tmp: write_corpus(tmp, args.jobs, args.seed, logs=not args.no_logs),
                           kind="corpus", force=args.force)
    print(f"wrote {len(paths)} jobs to {args.out} (seed {args.seed}; synthetic: repositories, command.sh, "
          f"{'logs/, ' if not args.no_logs else ''}truth.json per job; index.json)")
    return 0


def _time_s(v: str) -> float:
    """A time in seconds for --now: finite and >= 0 (NaN and negatives are refused, exit 2)."""
    try:
        x = float(v)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {v!r}") from None
    if not math.isfinite(x) or x < 0:
        raise argparse.ArgumentTypeError(f"a time in seconds is finite and >= 0, got {v}")
    return x


def _timeout_s(v: str) -> float:
    """--llm-timeout: finite and > 0 seconds."""
    x = _time_s(v)
    if x <= 0:
        raise argparse.ArgumentTypeError(f"a timeout is > 0 seconds, got {v}")
    return x


def _cosine(v: str) -> float:
    try:
        x = float(v)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {v!r}") from None
    if not -1 <= x <= 1:
        raise argparse.ArgumentTypeError(f"a cosine is in [-1, 1], got {x}")
    return x


def add_parsers(sub) -> None:
    """Register `advise`, `track`, `diagnose` and `corpus`."""
    p = sub.add_parser("advise", help="SchedMate: job metadata from a repository + command, and duration advice "
                       "from similar finished jobs (--history)")
    p.add_argument("--repo", required=True, help="the job's repository folder")
    p.add_argument("--command", required=True, help="the launch command, e.g. \"torchrun --nproc_per_node 8 "
                   "train.py --epochs 90\" (shell scripts in the repository are followed)")
    p.add_argument("--history", help="finished jobs, CSV or JSON lines: key, duration (s), finished_at (s), "
                   "[submitted_at, gpu_util], and text or metadata columns")
    p.add_argument("--now", type=_time_s, help="only jobs finished by this time count (default: all)")
    p.add_argument("--t-score", type=_cosine, help="cosine threshold (default: calibrated on the history, else 0.9)")
    p.add_argument("--k", type=positive_int, default=3, help="matches averaged (default 3)")
    p.add_argument("--embedder", choices=("hash", "minilm"), default="hash",
                   help="hash (default, no torch) or minilm (all-MiniLM-L6-v2, offline)")
    p.add_argument("--llm-endpoint", help="OpenAI-compatible endpoint asked for the metadata too; its answer is "
                   "validated and a bad one leaves the static extraction as it is")
    p.add_argument("--llm-model", default="default", help="model name sent to the endpoint")
    p.add_argument("--llm-mode", choices=("fill", "override"), default="fill",
                   help="fill: the LLM only fills fields the static extractor missed (default); override: it wins")
    p.add_argument("--llm-timeout", type=_timeout_s, default=30.0)
    p.add_argument("--min-confidence", type=_confidence, default=_min_confidence_default(),
                   help="a field whose evidence is less certain than this is answered unknown, with the reason "
                   "(default %(default)s; 0 keeps every guess; see docs/schedmate.md)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_advise)

    p = sub.add_parser("track", help="SchedMate: where a running job is (step, total, step time, remaining, loss) "
                       "from its log")
    p.add_argument("logfile")
    p.add_argument("--window", type=positive_int, default=20, help="progress lines read from the end (default 20)")
    p.add_argument("--iterations", type=positive_int, help="total iterations when the log does not print them")
    p.add_argument("--unit", choices=("epochs", "steps"), default="steps", help="unit of --iterations")
    p.add_argument("--repo", help="the job's repository (with --command: iterations from the code)")
    p.add_argument("--command", help="the job's launch command")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_track)

    p = sub.add_parser("diagnose", help="SchedMate: root cause of a failed job's log (line, type, component)")
    p.add_argument("logfile")
    p.add_argument("--tail-only", action="store_true", help="read only the last --tail lines (the baseline)")
    p.add_argument("--method", choices=("locator", "tail", "scan"), default="locator",
                   help="locator: binary search over chunks (default); scan: first error line of the log")
    p.add_argument("--tail", type=positive_int, default=500,
                   help="lines the tail reader sees (default 500, the paper's baseline)")
    p.add_argument("--llm-endpoint", help="OpenAI-compatible endpoint (e.g. http://127.0.0.1:8000/v1); its answer "
                   "is validated and a bad one falls back to the rules")
    p.add_argument("--llm-model", default="default", help="model name sent to the endpoint")
    p.add_argument("--llm-timeout", type=_timeout_s, default=30.0)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_diagnose)

    p = sub.add_parser("corpus", help="write a seeded synthetic job corpus (repositories, commands, logs, truth)")
    p.add_argument("--out", required=True, help="output folder (refused when not empty unless --force)")
    p.add_argument("--jobs", type=_corpus_jobs, default=20)
    p.add_argument("--seed", type=non_negative_int, default=0)
    p.add_argument("--no-logs", action="store_true", help="repositories and truth only")
    p.add_argument("--force", action="store_true", help="replace --out when it is a corpus schedcast wrote "
                   "earlier (never another folder or a file)")
    p.set_defaults(func=cmd_corpus)
