"""The documented quick ledgers, run as a user runs them, timed and checked.

    python benchmarks/bench_reproduce.py              # lazer (the documented `schedcast reproduce lazer --quick`)
    python benchmarks/bench_reproduce.py lazer lucid

Runs ``schedcast reproduce PAPER --quick`` in a temporary folder (the paper's own spec-quick.yaml, the full
Philly trace for Lazer), prints wall and CPU seconds, and checks the ledger: every claim of the paper's
claims file has a verdict and a finite (or no) measure, and, for Lazer, SRTF's futile preemption time on
Philly is above 0.5 h (0.71 h measured). The test suite runs the same command path on the first 10,000
Philly jobs (tests/test_reproduce.py); the full trace's figure is checked here. Exit 1 if a check fails.
"""
from __future__ import annotations

import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: claim id -> the least measured value the documented quick run must show
FLOORS = {"lazer": {"f4-srtf-futile": 0.5}}


def _check(paper: str, out: Path) -> list[str]:
    sys.path.insert(0, str(ROOT))
    from evaluation.claims import HOLDS, VERDICTS, load_claims
    from pipelines.papers import paper_dir

    doc = json.loads((out / "claims.json").read_text())
    got = {c["claim"]: c for c in doc["claims"]}
    wanted = {c.id for c in load_claims(paper_dir(paper) / "claims.yaml").claims}
    problems = [f"no verdict for {c}" for c in sorted(wanted - set(got))]
    problems += [f"{c['claim']}: verdict {c['verdict']!r}" for c in doc["claims"]
                 if c["verdict"] not in VERDICTS]
    problems += [f"{c['claim']}: measured {c['measured']}" for c in doc["claims"]
                 if c["measured"] is not None and not math.isfinite(c["measured"])]
    for claim, floor in FLOORS.get(paper, {}).items():
        c = got.get(claim, {})
        if c.get("verdict") != HOLDS or not (c.get("measured") or 0) > floor:
            problems.append(f"{claim}: {c.get('verdict')} {c.get('measured')}, expected to hold above {floor}")
    return problems


def main(argv: list[str]) -> int:
    papers = argv or ["lazer"]
    failed = False
    for paper in papers:
        with tempfile.TemporaryDirectory(prefix=f"bench-reproduce-{paper}-") as tmp:
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "pipelines.cli", "reproduce", paper, "--quick", "--out",
                                   str(Path(tmp) / "ledger")], cwd=tmp, env={**os.environ, "PYTHONPATH": str(ROOT)},
                                  capture_output=True, text=True)
            wall = time.perf_counter() - t0
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            problems = [f"exit {done.returncode}: {done.stderr.strip()[-500:]}"] if done.returncode else \
                _check(paper, Path(tmp) / "ledger")
        print(f"{paper}: reproduce --quick {wall:.1f} s wall, {cpu:.1f} s CPU: "
              + ("ok" if not problems else "; ".join(problems)))
        failed |= bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
