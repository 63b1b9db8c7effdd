"""What a scheduler pays per SchedMate text call (issue 41, item 5), as whole-process timings.

- cold: one `python -m models.schedmate.batch diagnose LOG` process per log (start-up included), and
  `schedcast diagnose LOG` / `track LOG` / `advise --repo R --command C` (the product's command line), each
  median of --runs runs, and the bare interpreter (`python -c pass`) at the same moment;
- batch: one process for N logs (JSON lines out): wall time per log;
- served: `python -m models.schedmate.batch serve` on a loopback port, then POST /diagnose and POST
  /track per log: client-side round trip per log (P50 / P95), logs of <= --max-lines lines.

Logs: generated failed / running logs (features.jobcorpus), cut to at most --max-lines lines, written to
a temporary folder. Usage: python benchmarks/bench_schedmate_calls.py [--logs 40] [--runs 7]
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _logs(folder: Path, n: int, max_lines: int) -> tuple[list[Path], list[Path]]:
    sys.path.insert(0, str(ROOT))
    from features.jobcorpus import iter_corpus
    from models.schedmate.evaluate import CAUSES_ORDER

    failed, running = [], []
    for i, m in enumerate(iter_corpus(n, 11)):
        lines, _ = m.failure_log(CAUSES_ORDER[i % len(CAUSES_ORDER)], noisy=bool(i % 2))
        p = folder / f"f{i}.log"
        p.write_text("\n".join(lines[-max_lines:]) + "\n")
        failed.append(p)
        q = folder / f"r{i}.log"
        q.write_text("\n".join(lines[:max_lines]) + "\n")  # the run before it failed: a progress log
        running.append(q)
    return failed, running


def _timed(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _post(port: int, tool: str, lines: list[str]) -> dict:
    req = urllib.request.Request(f"http://127.0.0.1:{port}/{tool}", data=json.dumps({"lines": lines}).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--logs", type=int, default=40)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--max-lines", type=int, default=2000)
    args = ap.parse_args(argv)
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        failed, running = _logs(Path(tmp), args.logs, args.max_lines)
        sizes = [len(p.read_text().splitlines()) for p in failed + running]
        res: dict = {"logs": len(failed) + len(running), "lines_median": statistics.median(sizes),
                     "lines_max": max(sizes)}
        cold = [_timed([py, "-m", "models.schedmate.batch", "diagnose", str(failed[i % len(failed)])])
                for i in range(args.runs)]
        repo = Path(tmp) / "repo"  # a one-file repository for `advise`
        repo.mkdir()
        (repo / "train.py").write_text("import argparse\np = argparse.ArgumentParser()\n"
                                       "p.add_argument('--model', default='resnet50')\n"
                                       "p.add_argument('--epochs', type=int, default=90)\nargs = p.parse_args()\n")
        full = {"diagnose": lambda i: ["diagnose", str(failed[i % len(failed)])],
                "track": lambda i: ["track", str(running[i % len(running)])],
                "advise": lambda i: ["advise", "--repo", str(repo), "--command", f"python train.py --epochs {i + 1}"]}
        cold_cli = {tool: [] for tool in full}
        for i in range(args.runs):  # the three commands in turn: each sees the same load
            for tool, words in full.items():
                cold_cli[tool].append(_timed([py, "-m", "pipelines.cli", *words(i)]))
        base = [_timed([py, "-c", "pass"]) for _ in range(args.runs)]
        res["python_startup_s_median"] = statistics.median(base)  # the interpreter alone, same machine, same moment
        res["cold_batch_module_s_median"] = statistics.median(cold)
        for tool, secs in cold_cli.items():
            res[f"cold_schedcast_{tool}_s_median"] = statistics.median(secs)
        batch = [_timed([py, "-m", "models.schedmate.batch", "diagnose", *map(str, failed)]) for _ in range(3)]
        res["batch_s_per_log_median"] = statistics.median(batch) / len(failed)
        port = _free_port()
        srv = subprocess.Popen([py, "-m", "models.schedmate.batch", "serve", "--port", str(port)], cwd=ROOT,
                               env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for _ in range(100):
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1).read()
                    break
                except OSError:
                    time.sleep(0.05)
            per = {"diagnose": [], "track": []}
            for rep in range(2):  # the first pass warms the readers' caches; the second is timed
                for tool, paths in (("diagnose", failed), ("track", running)):
                    for p in paths:
                        lines = p.read_text().splitlines()
                        t0 = time.perf_counter()
                        _post(port, tool, lines)
                        if rep:
                            per[tool].append((time.perf_counter() - t0) * 1000)
        finally:
            srv.terminate()
            srv.wait(timeout=10)
        for tool, ms in per.items():
            ms.sort()
            res[f"served_{tool}_ms_p50"] = statistics.median(ms)
            res[f"served_{tool}_ms_p95"] = ms[int(0.95 * (len(ms) - 1))]
    res["load_average"] = os.getloadavg()[0]  # 1 min, at the end
    print(json.dumps(res, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
