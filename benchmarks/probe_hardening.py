"""Fault and security probe of the `schedcast` command line (issue 20's categories), end to end.

    python benchmarks/probe_hardening.py                # every case, a table per category
    python benchmarks/probe_hardening.py --only serving # one category
    python benchmarks/probe_hardening.py --list

Each case runs the real console script in a fresh folder (its own trace cache, no MLflow store unless the
case makes one) and is classified: **clean** (what a user should see: exit 2 with a one-line reason, or
the right answer), **traceback** (a Python traceback reached the user), **wrong exit** (an exit code other
than the expected one), **hang** (still running at the case's time limit), **silent wrong** (exit 0 with
a wrong answer, or code that ran when it must not) and **data lost** (a file the user had is gone or
changed). Writes benchmarks/results/probe/report.md. Everything runs on loopback; nothing leaves the
machine.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("SCHEDCAST_DATA", ROOT.parent / "shared" / "data"))
PHILLY = DATA / "philly" / "philly_jobs_2017-09-04_2017-11-30.csv.gz"
COLUMNS = ("cases", "clean", "traceback", "wrong exit", "hang", "silent wrong", "data lost")


@dataclass
class Case:
    category: str
    name: str
    argv: list[str] | None = None  # schedcast arguments (None: ``run`` does the work)
    expect: int = 2
    setup: Callable[[Path], None] | None = None
    #: returns "" when the outcome is right, else why it is wrong (silent wrong / data lost)
    check: Callable[[Path, subprocess.CompletedProcess], str] | None = None
    run: Callable[[Path], tuple[str, str]] | None = None  # custom case: (category of outcome, detail)
    timeout: float = 120.0
    one_line: bool = True
    losing: bool = False  # a failed check means data lost (else silent wrong)


def schedcast(argv: list[str], cwd: Path, timeout: float, env: dict | None = None) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg", "HF_HUB_OFFLINE": "1",
                "SCHEDCAST_TRACE_CACHE": str(cwd / ".cache"), "SCHEDCAST_DATA": str(DATA), **(env or {})}
    full_env.pop("MLFLOW_TRACKING_URI", None)
    full_env.pop("SCHEDCAST_TRUST_LOCAL_MODELS", None)
    return subprocess.run([sys.executable, "-m", "pipelines.cli", *argv], cwd=cwd, env=full_env, timeout=timeout,
                          capture_output=True, text=True, stdin=subprocess.DEVNULL)


def classify(case: Case, folder: Path) -> tuple[str, str]:
    if case.run is not None:
        return case.run(folder)
    try:
        r = schedcast(case.argv, folder, case.timeout)
    except subprocess.TimeoutExpired:
        return "hang", f"still running after {case.timeout:.0f} s"
    if "Traceback (most recent call last)" in r.stderr or "Traceback (most recent call last)" in r.stdout:
        return "traceback", r.stderr.strip().splitlines()[-1][:200] if r.stderr.strip() else "traceback on stdout"
    if case.check is not None:
        why = case.check(folder, r)
        if why:
            return ("data lost" if case.losing else "silent wrong"), why
    if r.returncode != case.expect:
        return "wrong exit", f"exit {r.returncode} (expected {case.expect}): {r.stderr.strip()[-200:]}"
    if case.expect == 2 and case.one_line:
        lines = [ln for ln in r.stderr.strip().splitlines() if ln.strip()]
        if len(lines) != 1:
            return "wrong exit", f"{len(lines)} lines on stderr (expected one): {r.stderr.strip()[:200]}"
    return "clean", (r.stderr.strip().splitlines() or [""])[-1][:160]


# -- case helpers -----------------------------------------------------------------------------------
def write(path: str, text: str) -> Callable[[Path], None]:
    def setup(folder: Path) -> None:
        p = folder / path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return setup


def no_file(name: str) -> Callable[[Path, subprocess.CompletedProcess], str]:
    def check(folder: Path, r) -> str:
        hits = list(folder.rglob(name)) + ([Path("/tmp") / name] if (Path("/tmp") / name).exists() else [])
        return f"{name} was created: code ran" if hits else ""
    return check


def files_kept(*names: str) -> Callable[[Path, subprocess.CompletedProcess], str]:
    def check(folder: Path, r) -> str:
        gone = [n for n in names if not (folder / n).is_file() or (folder / n).read_text() != f"keep {n}"]
        return f"lost or changed: {', '.join(gone)}" if gone else ""
    return check


def keep_files(*names: str) -> Callable[[Path], None]:
    def setup(folder: Path) -> None:
        for n in names:
            p = folder / n
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(f"keep {n}")
    return setup


SENTINEL = "schedcast_probe_sentinel"
EVIL_PRESET = (f"generator: \"subprocess:call\"\nparams: {{}}\nargs: [\"touch\", \"{SENTINEL}\"]\n"
               f"cluster: demo\njobs: 10\n")
TINY = "workloads:\n  - {name: d, synthetic: demo, jobs: 50}\npolicies: [fifo]\n"


def spec(name: str, body: str) -> Callable[[Path], None]:
    return write(f"{name}.yaml", f"name: {name}\n{body}")


def cases() -> list[Case]:
    trace = str(PHILLY)
    out: list[Case] = []
    # -- code execution ------------------------------------------------------------------------------
    evil_spec = (f"workloads:\n  - {{name: x, generator: \"subprocess:call\", cluster: demo, "
                 f"params: {{args: [touch, {SENTINEL}]}}}}\npolicies: [fifo]\n")
    for engine in ("serial", "dask"):
        out.append(Case("code execution", f"spec generator subprocess:call ({engine})",
                        ["experiment", "run", "evil.yaml", "--engine", engine, "--out", "r"],
                        setup=spec("evil", evil_spec), check=no_file(SENTINEL), timeout=180))
    out.append(Case("code execution", "spec generator subprocess:call (--dry-run)",
                    ["experiment", "run", "evil.yaml", "--dry-run"], setup=spec("evil", evil_spec),
                    check=no_file(SENTINEL)))
    out.append(Case("code execution", "--synthetic /abs/path preset", ["simulate", "--synthetic", "EVIL", "--policy",
                    "fifo", "--no-plots", "--out", "r"], setup=write("p/evil.yaml", EVIL_PRESET),
                    check=no_file(SENTINEL)))
    out[-1].argv[2] = "__ABS__/p/evil"
    out.append(Case("code execution", "--synthetic ../ path", ["simulate", "--synthetic", "../evil", "--policy", "fifo",
                    "--no-plots"], check=no_file(SENTINEL)))
    out.append(Case("code execution", "train --synthetic path", ["train", "duration", "--synthetic", "p/evil",
                    "--no-register"], setup=write("p/evil.yaml", EVIL_PRESET), check=no_file(SENTINEL)))
    out.append(Case("code execution", "policy parameter naming another store",
                    ["simulate", "--synthetic", "demo", "--jobs", "50", "--no-plots", "--policy",
                     "lucid:packing_model=models:/packing@champion,tracking_uri=sqlite:////tmp/elsewhere/evil.db"]))
    out.append(Case("code execution", "spec policy parameter naming another store",
                    ["experiment", "run", "s.yaml", "--engine", "serial", "--out", "r"],
                    setup=spec("s", "workloads:\n  - {name: d, synthetic: demo, jobs: 50}\npolicies:\n  - {name: lucid, "
                               "params: {packing_model: 'models:/packing@champion', tracking_uri: "
                               "'sqlite:////tmp/elsewhere/evil.db'}}\n")))
    out.append(Case("code execution", "YAML !!python tag in a spec", ["experiment", "run", "s.yaml", "--dry-run"],
                    setup=write("s.yaml", f"name: !!python/object/apply:os.system ['touch {SENTINEL}']\n" + TINY),
                    check=no_file(SENTINEL)))
    # -- data loss -----------------------------------------------------------------------------------
    out.append(Case("data loss", "corpus --out . --force", ["corpus", "--out", ".", "--force", "--jobs", "5"],
                    setup=keep_files("thesis.tex", "data/a.csv"), check=files_kept("thesis.tex", "data/a.csv"),
                    losing=True))
    out.append(Case("data loss", "corpus --out FILE --force", ["corpus", "--out", "notes.txt", "--force", "--jobs", "5"],
                    setup=keep_files("notes.txt"), check=files_kept("notes.txt"), losing=True))
    out.append(Case("data loss", "simulate --out foreign --force", ["simulate", "--synthetic", "demo", "--jobs", "50",
                    "--policy", "fifo", "--no-plots", "--out", "mine", "--force"],
                    setup=keep_files("mine/paper.md"), check=files_kept("mine/paper.md"), losing=True))
    out.append(Case("data loss", "demo --out foreign --force", ["demo", "--jobs", "50", "--no-plots", "--out", "mine",
                    "--force"], setup=keep_files("mine/paper.md"), check=files_kept("mine/paper.md"), losing=True))
    out.append(Case("data loss", "reproduce --out foreign --force", ["reproduce", "lazer", "--quick", "--out", "mine",
                    "--force"], setup=keep_files("mine/paper.md"), check=files_kept("mine/paper.md"), losing=True))
    out.append(Case("data loss", "trace cache beside unrelated pickles", run=_cache_keeps_pickles))
    out.append(Case("silent wrong answers", "corrupt trace-cache entry", run=_corrupt_cache_entry))
    # -- silent wrong answers ------------------------------------------------------------------------
    out.append(Case("silent wrong answers", "diagnose a long noisy log", run=_long_log))
    out.append(Case("silent wrong answers", "summary.csv byte-identical across runs", run=_identical_summaries))
    for field_name, body in (
            ("failures: bogus", TINY + "failures: bogus\n"),
            ("placement: bogus", TINY + "placement: bogus\n"),
            ("unreadable cluster", "workloads:\n  - {name: t, trace: nowhere.csv, cluster: no-such-cluster}\n"
                                   "policies: [fifo]\n"),
            ("missing trace", f"workloads:\n  - {{name: t, trace: missing.csv, cluster: philly-pool}}\npolicies: [fifo]\n"),
            ("missing generator", "workloads:\n  - {name: g, generator: no-such-generator, cluster: demo}\n"
                                  "policies: [fifo]\n"),
            ("seeds: [-1]", TINY + "seeds: [-1]\n"),
            ("rank_by: bogus", TINY + "rank_by: bogus\n"),
            ("window [0, inf]", "workloads:\n  - {name: d, synthetic: demo, jobs: 50, window: [0, .inf]}\n"
                                "policies: [fifo]\n")):
        for mode in ("--dry-run", "run"):
            argv = ["experiment", "run", "s.yaml"] + (["--dry-run"] if mode == "--dry-run" else
                                                      ["--engine", "serial", "--out", "r"])
            out.append(Case("silent wrong answers", f"spec {field_name} ({mode})", argv, setup=spec("s", body)))
    # -- hangs, runaway resources, exit codes --------------------------------------------------------
    wide = ",".join(f"c{i}" for i in range(100_000))
    out.append(Case("hangs and exit codes", "100,000-column CSV header", ["data", "check", "wide.csv"],
                    setup=write("wide.csv", wide + "\n" + ",".join("1" for _ in range(100_000)) + "\n"), timeout=60))
    for name, argv in (
            ("--offered-load 1e-300", ["simulate", "--synthetic", "demo", "--offered-load", "1e-300", "--policy", "fifo"]),
            ("--failures rate=1e12", ["simulate", "--synthetic", "demo", "--jobs", "50", "--failures",
                                      "rate=1e12,repair=60,checkpoint=600,reaction=60", "--policy", "fifo"]),
            ("demo --jobs 1e11", ["demo", "--jobs", "100000000000"]),
            ("corpus --jobs 99999999999999", ["corpus", "--out", "c", "--jobs", "99999999999999"]),
            ("experiment --workers 100000", ["experiment", "run", "s.yaml", "--workers", "100000", "--out", "r"]),
            ("--tracking-uri sqlite:////DIR", ["simulate", "--synthetic", "demo", "--jobs", "50", "--policy", "fifo",
                                               "--no-plots", "--track", "--tracking-uri", "sqlite:////tmp"]),
            ("train --param bogus=1", ["train", "iterations", "--synthetic", "pai", "--jobs", "300", "--param",
                                       "bogus=1", "--no-register"]),
            ("--tracking-uri bogus://", ["train", "iterations", "--synthetic", "pai", "--jobs", "300",
                                         "--tracking-uri", "bogus://x"]),
            ("sqlite URI at a non-database", ["train", "iterations", "--synthetic", "pai", "--jobs", "300",
                                              "--tracking-uri", "sqlite:///notes.txt"]),
            ("models:/duration/99999999999999999999", ["serve", "models:/duration/99999999999999999999",
                                                       "--tracking-uri", "sqlite:///s.db"]),
            ("serve --host 'not a host'", ["serve", "models:/duration@champion", "--host", "not a host"]),
            ("server --workers 0", ["server", "--workers", "0"]),
            ("train --seed -1", ["train", "iterations", "--synthetic", "pai", "--jobs", "300", "--seed", "-1"]),
            ("corpus --seed nan", ["corpus", "--out", "c", "--jobs", "5", "--seed", "nan"]),
            ("advise --now -1", ["advise", "--repo", ".", "--command", "python train.py", "--now", "-1"]),
            ("advise --llm-timeout nan", ["advise", "--repo", ".", "--command", "python train.py", "--llm-timeout",
                                          "nan"]),
            ("a FIFO as a trace", ["data", "check", "fifo.csv"]),
            ("/dev/zero as a trace", ["data", "check", "/dev/zero"]),
            ("/dev/zero as a log", ["diagnose", "/dev/zero"]),
            ("a FIFO as a log", ["diagnose", "fifo.log"]),
            ("malformed experiment status file", ["experiment", "report", "r"]),
    ):
        setup = None
        if "FIFO" in name:
            target = "fifo.csv" if "trace" in name else "fifo.log"
            setup = (lambda t: (lambda folder: os.mkfifo(folder / t)))(target)
        elif "workers" in name and "experiment" in argv:
            setup = spec("s", TINY)
        elif "non-database" in name:
            setup = keep_files("notes.txt")
        elif "status file" in name:
            setup = write("r/cells/x.json", "{not json")
        check = files_kept("notes.txt") if "non-database" in name else None
        out.append(Case("hangs and exit codes", name, argv, setup=setup, check=check, timeout=60,
                        losing="non-database" in name))
    # -- serving input -------------------------------------------------------------------------------
    out.append(Case("serving input", "bad records over HTTP", run=_serving))
    return out


# -- custom cases -----------------------------------------------------------------------------------
def _outcome(ok: bool, bad: str, detail: str) -> tuple[str, str]:
    return ("clean", detail) if ok else (bad, detail)


def _cache_keeps_pickles(folder: Path) -> tuple[str, str]:
    cache = folder / ".cache"
    cache.mkdir()
    for i in range(40):
        (cache / f"mine_{i}.pkl").write_bytes(b"keep" * 10)
    r1 = schedcast(["simulate", "--trace", str(PHILLY), "--cluster", "philly-pool", "--jobs", "2000", "--policy", "fifo", "--no-plots", "--out", "a"],
                   folder, 180)
    r2 = schedcast(["data", "cache", "--clear"], folder, 60)
    kept = sum(1 for i in range(40) if (cache / f"mine_{i}.pkl").is_file())
    if "Traceback" in r1.stderr + r2.stderr:
        return "traceback", "traceback"
    if r1.returncode or r2.returncode:
        return "wrong exit", f"exit {r1.returncode} / {r2.returncode}"
    return _outcome(kept == 40, "data lost", f"{kept}/40 unrelated pickles kept after simulate + data cache --clear")


def _corrupt_cache_entry(folder: Path) -> tuple[str, str]:
    argv = ["simulate", "--trace", str(PHILLY), "--cluster", "philly-pool", "--jobs", "3000", "--policy", "sjf", "--no-plots", "--out"]
    r0 = schedcast(argv + ["a"], folder, 180)
    entries = [p for p in (folder / ".cache").rglob("*") if p.is_file() and p.stat().st_size > 10_000]
    if r0.returncode or not entries:
        return "wrong exit", f"first run exit {r0.returncode}, {len(entries)} cache entries"
    for p in entries:
        data = bytearray(p.read_bytes())
        for at in range(len(data) // 3, len(data) - 64, max(1, len(data) // 50)):
            data[at] ^= 0x5A
        p.write_bytes(bytes(data))
    r1 = schedcast(argv + ["b"], folder, 180)
    if "Traceback" in r1.stderr:
        return "traceback", r1.stderr.strip().splitlines()[-1][:200]
    if r1.returncode:
        return "wrong exit", f"exit {r1.returncode}: {r1.stderr.strip()[-200:]}"
    same = (folder / "a" / "summary.csv").read_bytes() == (folder / "b" / "summary.csv").read_bytes()
    noted = "cache" in r1.stderr.lower()
    return _outcome(same and noted, "silent wrong", f"results equal to the first run: {same}; one-line note: {noted}")


def _long_log(folder: Path) -> tuple[str, str]:
    noise = ["2026-01-01 10:00:00 | INFO | step {i} loss 2.31 lr 0.0003",
             "[rank1]: UserWarning: TypedStorage is deprecated",
             "NCCL WARN Call to connect returned Connection refused, retrying",
             "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (recovered: batch halved)",
             "Traceback (most recent call last):", "  File \"train.py\", line 10, in <module>",
             "ValueError: bad sample 17, skipping", "W0101 socket.cpp:558] [c10d] The server socket has failed to "
             "listen on [::]:29500 (errno: 98 - Address already in use).", "Retrying in 5 s"]
    lines = []
    for rep in range(30):
        for i, line in enumerate(noise):
            lines.append(line.format(i=rep * 100 + i))
        lines += [f"step {rep * 100 + i} loss 1.{i:02d}" for i in range(200)]
    lines += ["Traceback (most recent call last):", "  File \"train.py\", line 88, in <module>",
              "    main()", "  File \"train.py\", line 80, in main", "    loss.backward()",
              "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error "
              "(run with NCCL_DEBUG=INFO for details), NCCL version 2.18.1"]
    (folder / "job.log").write_text("\n".join(lines) + "\n")
    fatal = len(lines)  # 1-based line number of the final error
    r = schedcast(["diagnose", "job.log", "--json"], folder, 120)
    if "Traceback (most recent call last)" in r.stderr:
        return "traceback", r.stderr.strip().splitlines()[-1][:200]
    if r.returncode != 0:
        return "wrong exit", f"exit {r.returncode}: {r.stderr.strip()[-200:]}"
    try:
        doc = json.loads(r.stdout)
    except ValueError:
        return "silent wrong", f"not JSON: {r.stdout[:200]}"
    text = json.dumps(doc)
    ok = "DistBackendError" in text and "recovered" not in json.dumps(doc.get("root_cause", doc))
    return _outcome(ok, "silent wrong", f"root cause: {str(doc.get('root_cause', doc))[:140]} (fatal line {fatal})")


def _identical_summaries(folder: Path) -> tuple[str, str]:
    argv = ["simulate", "--synthetic", "demo", "--jobs", "300", "--policy", "fifo", "sjf", "--no-plots", "--seed", "3",
            "--out"]
    r1, r2 = schedcast(argv + ["a"], folder, 120), schedcast(argv + ["b"], folder, 120)
    if r1.returncode or r2.returncode:
        return "wrong exit", f"exit {r1.returncode} / {r2.returncode}"
    same = (folder / "a" / "summary.csv").read_bytes() == (folder / "b" / "summary.csv").read_bytes()
    return _outcome(same, "silent wrong", f"summary.csv byte-identical: {same}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serving(folder: Path) -> tuple[str, str]:
    store = f"sqlite:///{folder / 's.db'}"
    r = schedcast(["train", "duration", "--trace", str(PHILLY), "--algo", "lightgbm", "--tracking-uri", store,
                   "--allow-worse-than-baseline"], folder, 600)
    if r.returncode:
        return "wrong exit", f"train exit {r.returncode}: {r.stderr.strip()[-200:]}"
    port = _free_port()
    env = {**os.environ, "OMP_NUM_THREADS": "1", "SCHEDCAST_TRACE_CACHE": str(folder / ".cache")}
    proc = subprocess.Popen([sys.executable, "-m", "pipelines.cli", "serve", "models:/duration@champion",
                             "--tracking-uri", store, "--port", str(port)], cwd=folder, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    bad: list[str] = []
    try:
        deadline = time.time() + 180
        while time.time() < deadline:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/ping", timeout=2).read()
                break
            except OSError:
                if proc.poll() is not None:
                    return "wrong exit", f"serve exited {proc.returncode}: {proc.stderr.read()[-200:]}"
                time.sleep(0.5)
        else:
            return "hang", "serve never answered /ping"
        good = {"job_id": "x", "submit_time": 0, "user": "u1", "vc": "vc1", "num_gpus": 8}
        for value in (-8, 0, "eight", 1.5, True, 1e6, 1e308, "Infinity"):
            body = json.dumps({"records": [{**good, "num_gpus": value}]}).encode()
            req = urllib.request.Request(f"http://127.0.0.1:{port}/invocations", data=body,
                                         headers={"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(req, timeout=10) as resp:
                    bad.append(f"num_gpus={value!r}: HTTP {resp.status}")
            except urllib.error.HTTPError as err:
                text = err.read().decode(errors="replace")
                if err.code != 400 or "Traceback" in text or len(text.strip().splitlines()) > 3:
                    bad.append(f"num_gpus={value!r}: HTTP {err.code} {text[:80]!r}")
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
    return _outcome(not bad, "silent wrong", "; ".join(bad) or "8 bad records: HTTP 400 with a one-line reason each")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", help="one category (substring)")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "probe"))
    args = ap.parse_args()
    todo = [c for c in cases() if not args.only or args.only in c.category]
    if args.list:
        for c in todo:
            print(f"{c.category:24} {c.name}")
        return 0
    rows, table = [], {}
    t0 = time.perf_counter()
    for c in todo:
        folder = Path(tempfile.mkdtemp(prefix="probe-"))
        try:
            if c.setup:
                c.setup(folder)
            if c.argv:
                c.argv = [a.replace("__ABS__", str(folder)) for a in c.argv]
            outcome, detail = classify(c, folder)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
            Path("/tmp", SENTINEL).unlink(missing_ok=True)
        rows.append((c.category, c.name, outcome, detail))
        counts = table.setdefault(c.category, dict.fromkeys(COLUMNS, 0))
        counts["cases"] += 1
        counts[outcome] += 1
        print(f"{outcome:13} {c.category:22} {c.name}: {detail}", flush=True)
    total = dict.fromkeys(COLUMNS, 0)
    for counts in table.values():
        for k in COLUMNS:
            total[k] += counts[k]
    lines = ["# Hardening probe", "", f"`python benchmarks/probe_hardening.py`; {len(rows)} cases in "
             f"{time.perf_counter() - t0:.0f} s.", "", "| category | " + " | ".join(COLUMNS) + " |",
             "|---|" + "---|" * len(COLUMNS)]
    for cat, counts in [*table.items(), ("all", total)]:
        lines.append(f"| {cat} | " + " | ".join(str(counts[k]) for k in COLUMNS) + " |")
    lines += ["", "| category | case | outcome | detail |", "|---|---|---|---|"]
    lines += [f"| {a} | {b} | {o} | {d.replace('|', '/')} |" for a, b, o, d in rows]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.md").write_text("\n".join(lines) + "\n")
    print("\n" + "\n".join(lines[4:5 + len(table) + 1]))
    print(f"\nwrote {out / 'report.md'}")
    return 0 if all(total[k] == 0 for k in COLUMNS[2:]) else 1


if __name__ == "__main__":
    sys.exit(main())
