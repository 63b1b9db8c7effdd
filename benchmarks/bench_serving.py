"""Serving latency of a freshly trained duration champion: over HTTP against `schedcast serve` on loopback,
and in process (models.serving's fast path); checks the answers against training's on the way.

    python benchmarks/bench_serving.py                  # about 2-3 minutes on 2 shared cores
    python benchmarks/bench_serving.py --mlflow         # also `schedcast serve --engine mlflow` (MLflow's server)
    python benchmarks/bench_serving.py --requests 500   # more one-job requests
    python benchmarks/bench_serving.py --before 849586b # also the server of that commit, same model, same run
    python benchmarks/bench_serving.py --extra none     # only the champion (no EBM / RF / iterations models)
    python benchmarks/bench_serving.py --stall 10000 --stall-only   # issue 44: one-job queries while another
                                                        # client sends 10,000 out-of-order finished records

Steps: `schedcast train duration` on the Philly trace into a temporary sqlite store (the champion is what a
user gets); the holdout (last 30 days) as raw job records: the in-process predictions must equal
training's features + estimator bit for bit; `schedcast serve models:/duration@champion` on a free
127.0.0.1 port; after a warm-up, N sequential one-job requests on one keep-alive connection (what a
scheduler's client does) and on a new connection each, and 1,000-job batches; P50 / P99 of each. The
1,000-job batch also record by record in process (the path every request took before the columnar one)
and, with --before REV, over HTTP against `schedcast serve` of commit REV (git archive into a temporary
folder; the same registered model; batches sent to the two servers in turn, so both see the same load).
--extra: the EBM and RF duration models and A-SRPT's iterations forest, trained in process on the same
split, checked bit for bit against their estimators on the holdout, then one job and 1,000 in process.
The client encodes with orjson when it is installed (as the server does). Targets (issue 22): one job
P50 <= 5 ms, P99 <= 20 ms over HTTP, <= 1 ms in process; 1,000 jobs <= 50 ms.
--stall N (issue 44): a fresh `schedcast serve`, a second client process sending N finished records newest
first (each ends before the jobs already known for its keys: the out-of-order case that used to replay
every later entry, 3,000 records = a 32 s stall), in requests of 100, while this process sends one-job
queries on its own connection until the sender is done; P50 / P99 / max of those queries (target P99 <= 20 ms).
Writes benchmarks/results/serving/report.md (git-ignored) and prints the table.
"""
from __future__ import annotations

import argparse
import gc
import http.client
import json
import logging
import os
import platform
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import warnings
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
warnings.filterwarnings("ignore")
logging.disable(logging.WARNING)

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "serving"
TARGETS = {"one job during out-of-order finished records, HTTP": (None, 20.0), "one job, HTTP": (5.0, 20.0), "one job, in process": (1.0, None), "1,000 jobs": (None, 50.0),
           "finished job, in process": (None, None)}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def percentiles(ms: list[float]) -> tuple[float, float]:
    return float(np.percentile(ms, 50)), float(np.percentile(ms, 99))


def timed(fn, n: int, warmup: int) -> list[float]:
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1e3)
    return out


try:  # the client's codec: orjson when installed, as the server's
    import orjson

    dumps, loads, CODEC = orjson.dumps, orjson.loads, "orjson"
except ImportError:  # pragma: no cover - the ml extra installs it
    dumps, loads, CODEC = (lambda obj: json.dumps(obj).encode()), json.loads, "json"


def _checkout(rev: str) -> Path:
    """The tree of git commit ``rev`` in a temporary folder (git archive: the checkout is not touched)."""
    out = Path(tempfile.mkdtemp(prefix="bench_serving_before_"))
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], capture_output=True)
    if archive.returncode != 0:
        raise SystemExit(f"--before {rev}: {archive.stderr.decode().strip().splitlines()[-1]}")
    subprocess.run(["tar", "-x", "-C", str(out)], input=archive.stdout, check=True)
    return out


def _extra_model(name: str, table, test, one: list, batch: list, args, rows: list, notes: list,
                 test_days: float = 30.0) -> bool:
    """Train ``name`` (ebm / rf duration, or the iterations forest) on the champion's split, check the
    raw-record predictions on the holdout against its estimator bit for bit, and time one job and 1,000
    in process. Returns whether the predictions were identical."""
    from models.serving import raw_record_model, to_records
    from pipelines.train import train_duration, train_iterations

    t0 = time.perf_counter()
    result = (train_iterations(table, test_days=test_days) if name == "iterations"
              else train_duration(table, algo=name, test_days=test_days))
    train_s = time.perf_counter() - t0
    model = raw_record_model(result.task, result.estimator, table.frame)[0].prepare()
    same = bool(np.array_equal(model.predict_records(to_records(table.frame[test])),
                               result.estimator.predict(result.holdout[0])))
    label = "iterations (A-SRPT RF)" if name == "iterations" else f"{name} duration"
    notes.append(f"{label}: trained in {train_s:.0f} s; holdout predictions {'equal' if same else 'DIFFER FROM'} "
                 f"its estimator's bit for bit; matrix fast path (booster / trees): {model._matrix is not None}")
    i = iter(range(10 ** 9))
    ms = timed(lambda: model.predict_records(one[next(i) % len(one)]), args.requests, 30)
    rows.append(("one job, in process", label, len(ms), *percentiles(ms)))
    ms = timed(lambda: model.predict_records(batch), args.batches, 2)
    rows.append(("1,000 jobs", f"{label}, in process", len(ms), *percentiles(ms)))
    return same


SENDER = r"""
import http.client, json, sys, time
recs = json.load(open(sys.argv[2]))
conn = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=600)
t0 = time.perf_counter()
for i in range(0, len(recs), 100):
    conn.request("POST", "/invocations", body=json.dumps({"dataframe_records": recs[i:i + 100]}),
                 headers={"Content-Type": "application/json"})
    resp = conn.getresponse()
    data = resp.read()
    assert resp.status == 200, data[:300]
print(f"{time.perf_counter() - t0:.3f}")
"""


def _stall(n: int, frame, test, holdout: list, tracking: str, work: Path, rows: list, notes: list) -> None:
    """One-job queries over HTTP while a second client process sends ``n`` out-of-order finished records."""
    from features.duration import _end_times
    from models.serving import to_records

    ends = frame.assign(_end=_end_times(frame)).sort_values("_end", kind="stable")
    picked = ends.iloc[[k % len(ends) for k in range(len(ends) - 1, len(ends) - 1 - n, -1)]]
    late = to_records(picked, finished=True)  # newest first: each ends before the ones sent before it
    for k, rec in enumerate(late):
        rec["job_id"] = f"late-{k}"
    path = work / "late.json"
    path.write_text(json.dumps(late))
    served = Served("models:/duration@champion", tracking, "schedcast", work)
    try:
        one = [[r] for r in holdout]
        for k in range(30):
            served.post(one[k % len(one)])
        idle = timed(lambda: served.post(one[0]), 500, 0)  # the same query, nothing else sent: this load's floor
        rows.append(("one job, HTTP", "schedcast, no other client (same server, just before)", len(idle),
                     *percentiles(idle)))
        # this client's own heap (the trace, the trained model, MLflow) is frozen out of its garbage collector: a
        # full collection here stopped this loop for up to ~2 s on a loaded machine and was counted as the server's
        gc.collect()
        gc.freeze()
        pauses = _GcPauses()
        load0 = os.getloadavg()[0]
        sender = subprocess.Popen([sys.executable, "-c", SENDER, str(served.port), str(path)], stdout=subprocess.PIPE,
                                  text=True)
        ms, k = [], 0
        while sender.poll() is None:
            t0 = time.perf_counter()
            served.post(one[k % len(one)])
            ms.append((time.perf_counter() - t0) * 1e3)
            k += 1
        out = sender.communicate()[0].strip()
        load1 = os.getloadavg()[0]
        pauses.stop()
        gc.unfreeze()
        if sender.returncode != 0:
            raise RuntimeError(f"the sender failed (exit {sender.returncode})")
    finally:
        served.stop()
    rows.append(("one job during out-of-order finished records, HTTP",
                 f"schedcast, while {n:,} records arrive in {out} s", len(ms), *percentiles(ms)))
    p50, p99 = percentiles(ms)
    notes.append(f"out-of-order finished records: {n:,} in requests of 100 took {out} s to send (ingest); {len(ms):,} "
                 f"one-job queries meanwhile: P50 {p50:.1f} ms, P99 {p99:.1f} ms, max {max(ms):.1f} ms; load average "
                 f"(1 min, {os.cpu_count()} CPUs) {load0:.2f} when the sender started, {load1:.2f} when it ended; with "
                 f"no other client P50 {percentiles(idle)[0]:.2f} ms, P99 {percentiles(idle)[1]:.2f} ms, max {max(idle):.1f} ms; "
                 f"this client's own garbage collections meanwhile: {pauses.count}, longest {pauses.longest:.1f} ms")


class _GcPauses:
    """This process's garbage collections (count, longest in ms) from creation to ``stop``."""

    def __init__(self) -> None:
        self.count, self.longest, self._t0 = 0, 0.0, None
        gc.callbacks.append(self._callback)

    def _callback(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._t0 = time.perf_counter()
        elif self._t0 is not None:
            self.count += 1
            self.longest = max(self.longest, (time.perf_counter() - self._t0) * 1e3)

    def stop(self) -> None:
        gc.callbacks.remove(self._callback)


class Served:
    """`schedcast serve` as a child process (its own session), stopped at the end."""

    def __init__(self, uri: str, tracking: str, engine: str, cwd: Path):
        self.port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
        self.proc = subprocess.Popen([sys.executable, "-m", "pipelines.cli", "serve", uri, "--port", str(self.port),
                                      "--tracking-uri", tracking, "--engine", engine], cwd=cwd, env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                     start_new_session=True)
        self.lines: list[str] = []
        threading.Thread(target=lambda: self.lines.extend(iter(self.proc.stdout.readline, "")), daemon=True).start()
        t0 = time.monotonic()
        while not any("/invocations" in line and "ready after" in line for line in self.lines):
            if self.proc.poll() is not None or time.monotonic() - t0 > 300:
                self.stop()
                raise RuntimeError("schedcast serve did not start:\n" + "".join(self.lines[-30:]))
            time.sleep(0.2)
        self.ready_s = time.monotonic() - t0
        self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)

    def post(self, records: list[dict], keep_alive: bool = True) -> list[float]:
        body = dumps({"dataframe_records": records})
        headers = {"Content-Type": "application/json"}
        if keep_alive:
            self.conn.request("POST", "/invocations", body=body, headers=headers)
            resp = self.conn.getresponse()
            data = resp.read()
            status = resp.status
        else:
            req = urllib.request.Request(f"http://127.0.0.1:{self.port}/invocations", data=body, headers=headers)
            with urllib.request.urlopen(req, timeout=60) as r:
                data, status = r.read(), r.status
        if status != 200:
            raise RuntimeError(f"HTTP {status}: {data[:300]!r}")
        return loads(data)["predictions"]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, 9)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=300, help="sequential one-job requests (after 30 warm-up)")
    ap.add_argument("--batches", type=int, default=20, help="1,000-job batches")
    ap.add_argument("--mlflow", action="store_true", help="also measure `schedcast serve --engine mlflow`")
    ap.add_argument("--before", metavar="REV", help="also time the 1,000-job batch against the server of git "
                    "commit REV (before/after in one run)")
    ap.add_argument("--extra", default="ebm,rf,iterations",
                    help="other models timed in process: a comma list of ebm, rf, iterations, or none")
    ap.add_argument("--stall", type=int, default=0, metavar="N",
                    help="also: one-job queries while another client sends N out-of-order finished records")
    ap.add_argument("--stall-only", action="store_true", help="with --stall: skip the other measurements")
    args = ap.parse_args(argv)
    if args.requests < 200 or args.batches < 1:
        ap.error("--requests must be >= 200 and --batches >= 1")
    extra = [] if args.extra == "none" else [m.strip() for m in args.extra.split(",") if m.strip()]
    if any(m not in ("ebm", "rf", "iterations") for m in extra):
        ap.error(f"--extra: choose from ebm, rf, iterations or none, not {args.extra!r}")
    before = _checkout(args.before) if args.before else None

    import mlflow

    from features.duration import duration_features
    from features.paths import data_dir
    from features.traces import load_trace
    from models.serving import to_records
    from pipelines.cli import main as cli
    from pipelines.train import duration_split

    trace = data_dir() / "philly" / "philly_jobs_2017-09-04_2017-11-30.csv.gz"
    work = Path(tempfile.mkdtemp(prefix="bench_serving_"))
    tracking = f"sqlite:///{work / 'mlflow.db'}"
    rows, notes = [], []
    t0 = time.perf_counter()
    if cli(["train", "duration", "--trace", str(trace), "--tracking-uri", tracking]) != 0:
        raise SystemExit("training failed")
    train_s = time.perf_counter() - t0
    mlflow.set_tracking_uri(tracking)
    mlflow.set_registry_uri(tracking)
    t0 = time.perf_counter()
    loaded = mlflow.pyfunc.load_model("models:/duration@champion")
    load_s = time.perf_counter() - t0
    model = loaded.unwrap_python_model()
    table = load_trace(trace)
    frame = table.frame
    _, test = duration_split(frame, 30.0)
    holdout = to_records(frame[test])
    expected = model.estimator.predict(duration_features(frame)[model.columns][test])
    # a fresh copy per check: finished records would change the state (none are sent here)
    got = model.predict_records(holdout)
    identical = bool(np.array_equal(got, expected))
    notes.append(f"Philly holdout ({len(holdout):,} jobs as raw records): in-process predictions "
                 f"{'equal' if identical else 'DIFFER FROM'} training's features + estimator bit for bit; "
                 f"fast matrix path: {model._matrix is not None}")

    one = [[r] for r in holdout]
    if args.stall:
        _stall(args.stall, frame, test, holdout, tracking, work, rows, notes)
        if args.stall_only:
            return _report(rows, notes, identical, train_s, load_s, len(frame))
    i = iter(range(10 ** 9))
    ms = timed(lambda: model.predict_records(one[next(i) % len(one)]), max(1000, args.requests), 100)
    rows.append(("one job, in process", "predict_records", len(ms), *percentiles(ms)))
    batch = [holdout[k % len(holdout)] for k in range(1000)]
    ms = timed(lambda: model.predict_records(batch), args.batches, 2)
    rows.append(("1,000 jobs", "in process", len(ms), *percentiles(ms)))

    def record_by_record() -> None:
        with model._lock:
            values = [list(c) for c in zip(*model._rows(batch))]
        model._predict_values(values, len(batch))

    ms = timed(record_by_record, args.batches, 2)
    rows.append(("1,000 jobs", "in process, record by record (before)", len(ms), *percentiles(ms)))

    # finished jobs reported one per call as they end (what a scheduler does), to a model whose history
    # ends at the holdout start: the O(1) appends (a job ending before a still-running history job of
    # its key replays the entries after it)
    from models.serving import raw_record_model

    train = ~test
    t0 = time.perf_counter()
    grown = raw_record_model("duration", model.estimator, frame[train])[0].prepare()
    build_s = time.perf_counter() - t0
    from features.duration import _end_times

    ends = frame[test].assign(_end=_end_times(frame[test]))
    fin = [[r] for r in to_records(ends.sort_values("_end", kind="stable"), finished=True)]
    k = iter(range(len(fin)))
    ms = timed(lambda: grown.predict_records(fin[next(k)]), len(fin), 0)
    rows.append(("finished job, in process", f"predict_records, {len(fin):,} in end order", len(ms), *percentiles(ms)))
    same = bool(np.array_equal(grown.predict_records(holdout), expected))
    notes.append(f"after those {len(fin):,} finished jobs, the train-history model's holdout predictions "
                 f"{'equal' if same else 'DIFFER FROM'} training's bit for bit; its state took {build_s:.1f} s to "
                 f"build from {int(train.sum()):,} jobs")
    identical = identical and same

    engines = ["schedcast"] + (["mlflow"] if args.mlflow else [])
    for engine in engines:
        served = Served("models:/duration@champion", tracking, engine, work)
        old = None
        try:
            notes.append(f"`schedcast serve --engine {engine}`: ready after {served.ready_s:.1f} s")
            remote = served.post(holdout)
            same = bool(np.array_equal(np.asarray(remote, dtype=float), got))
            notes.append(f"--engine {engine}: the holdout over HTTP {'equals' if same else 'DIFFERS FROM'} the "
                         "in-process predictions" + ("" if same else
                                                     f" (max rel. diff {np.max(np.abs(np.asarray(remote) / got - 1)):.2e})"))
            j = iter(range(10 ** 9))
            ms = timed(lambda: served.post(one[next(j) % len(one)]), args.requests, 30)
            rows.append(("one job, HTTP", f"{engine}, keep-alive", len(ms), *percentiles(ms)))
            ms = timed(lambda: served.post(one[next(j) % len(one)], keep_alive=False), 200, 10)
            rows.append(("one job, HTTP", f"{engine}, new connection each", len(ms), *percentiles(ms)))
            if engine == "schedcast" and before is not None:
                old = Served("models:/duration@champion", tracking, engine, before)
                same = bool(np.array_equal(np.asarray(old.post(holdout), dtype=float), got))
                notes.append(f"`schedcast serve` of {args.before} (before): the holdout over HTTP "
                             f"{'equals' if same else 'DIFFERS FROM'} the in-process predictions")
                identical = identical and same
                pair = {"now": [], "before": []}
                for _ in range(2):
                    served.post(batch)
                    old.post(batch)
                for _ in range(args.batches):  # in turn: both servers see the same load
                    pair["now"] += timed(lambda: served.post(batch), 1, 0)
                    pair["before"] += timed(lambda: old.post(batch), 1, 0)
                rows.append(("1,000 jobs", f"{engine}, HTTP", len(pair["now"]), *percentiles(pair["now"])))
                rows.append(("1,000 jobs", f"{engine} of {args.before}, HTTP (before)", len(pair["before"]),
                             *percentiles(pair["before"])))
            else:
                ms = timed(lambda: served.post(batch), args.batches, 2)
                rows.append(("1,000 jobs", f"{engine}, HTTP", len(ms), *percentiles(ms)))
        finally:
            served.stop()
            if old is not None:
                old.stop()

    for name in extra:
        identical = _extra_model(name, table, test, one, batch, args, rows, notes) and identical

    return _report(rows, notes, identical, train_s, load_s, len(frame))


def _report(rows: list, notes: list, identical: bool, train_s: float, load_s: float, n_jobs: int) -> int:
    """Print and write the table; 0 when every bit-for-bit check held."""

    def verdict(case: str, p50: float, p99: float) -> str:
        lim50, lim99 = TARGETS[case]
        if lim50 is None and lim99 is None:
            return "(no target)"
        ok = (lim50 is None or p50 <= lim50) and (lim99 is None or p99 <= lim99)
        want = " / ".join(f"{n} <= {v:g} ms" for n, v in (("P50", lim50), ("P99", lim99)) if v is not None)
        return f"{'met' if ok else 'MISSED'} ({want})"

    lines = ["| case | how | n | P50 ms | P99 ms | target |", "|---|---|---:|---:|---:|---|"]
    lines += [f"| {c} | {h} | {n} | {p50:.3f} | {p99:.3f} | {verdict(c, p50, p99)} |" for c, h, n, p50, p99 in rows]
    header = (f"Serving latency, duration champion trained on Philly ({n_jobs:,} jobs; train {train_s:.0f} s, "
              f"model load {load_s:.1f} s). Machine: {platform.machine()}, {os.cpu_count()} CPUs (shared, loaded: "
              f"load average {os.getloadavg()[0]:.1f} at the end), Python {platform.python_version()}; client "
              f"codec {CODEC}.")
    text = "\n".join([f"# {header}", "", *lines, "", *[f"- {n}" for n in notes], ""])
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "report.md").write_text(text)
    print(text)
    print(f"wrote {OUT / 'report.md'}")
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
