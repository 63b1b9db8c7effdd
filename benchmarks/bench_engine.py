"""Engine benchmark: real Philly replay, synthetic scaling to Saturn size, decision latency.

    python benchmarks/bench_engine.py                  # everything (about 4-6 minutes on 2 cores)
    python benchmarks/bench_engine.py --quick          # Philly + 10k/100k only
    python benchmarks/bench_engine.py --sizes 10000 1750000 --policies sjf
    python benchmarks/bench_engine.py --commands-only  # whole `schedcast simulate` commands only

Prints tables and writes benchmarks/results/engine.json (git-ignored). Figures depend on the machine:
quote them with its description (the script prints CPU and Python).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from features.paths import data_dir  # noqa: E402
from features.traces import load_trace  # noqa: E402
from features.traces.synthetic import generate, load_preset  # noqa: E402
from sim import simulate  # noqa: E402
from sim.cluster import load_cluster  # noqa: E402
from sim.engine import Engine  # noqa: E402
from sim.policies import get_policy  # noqa: E402
from sim.workload import build_workload  # noqa: E402

PHILLY_POLICIES = ["fifo", "sjf", "srtf", "tiresias", "pollux-60"]


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import os

    return f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}"


def bench_philly(path: Path) -> list[dict]:
    t0 = time.perf_counter()
    table = load_trace(path)
    t_load = time.perf_counter() - t0
    t0 = time.perf_counter()
    w = build_workload(table, load_cluster("philly-pool"))
    t_build = time.perf_counter() - t0
    rows = []
    print(f"\nPhilly ({len(w):,} jobs, philly-pool 108x8 GPUs): load {t_load:.2f} s, workload {t_build:.2f} s")
    print(f"{'policy':<12}{'sim s':>8}{'events':>10}{'events/s':>12}{'jobs/s':>10}{'total s':>9}")
    for policy in PHILLY_POLICIES:
        r = simulate(w, policy)
        total = t_load + t_build + r.wall_seconds
        rows.append({"trace": "philly", "policy": policy, "jobs": len(w), "sim_s": r.wall_seconds,
                     "events": r.events, "load_s": t_load, "build_s": t_build, "total_s": total})
        print(f"{policy:<12}{r.wall_seconds:8.2f}{r.events:10,}{r.events / r.wall_seconds:12,.0f}"
              f"{len(w) / r.wall_seconds:10,.0f}{total:9.2f}")
    return rows


def bench_scaling(sizes: list[int], policies: list[str]) -> list[dict]:
    rows = []
    print("\nSynthetic Saturn-shaped traces on the saturn cluster (260x8 GPUs)")
    print(f"{'jobs':>10}{'policy':>8}{'gen s':>8}{'build s':>9}{'sim s':>8}{'events/s':>12}{'jobs/s':>10}")
    for n in sizes:
        t0 = time.perf_counter()
        table = generate(load_preset("saturn", jobs=n), seed=0)
        t_gen = time.perf_counter() - t0
        t0 = time.perf_counter()
        w = build_workload(table, load_cluster("saturn"))
        t_build = time.perf_counter() - t0
        del table
        for policy in policies:
            r = simulate(w, policy)
            rows.append({"trace": "saturn-synthetic", "policy": policy, "jobs": n, "sim_s": r.wall_seconds,
                         "events": r.events, "gen_s": t_gen, "build_s": t_build})
            print(f"{n:>10,}{policy:>8}{t_gen:8.2f}{t_build:9.2f}{r.wall_seconds:8.2f}"
                  f"{r.events / r.wall_seconds:12,.0f}{n / r.wall_seconds:10,.0f}")
        del w
    for policy in policies:
        pts = [(r["jobs"], r["sim_s"]) for r in rows if r["policy"] == policy]
        if len(pts) >= 2:
            x, y = np.log([p[0] for p in pts]), np.log([p[1] for p in pts])
            slope = float(np.polyfit(x, y, 1)[0])
            print(f"scaling {policy}: sim time ~ jobs^{slope:.2f} (1.00 = linear)")
            rows.append({"trace": "scaling", "policy": policy, "exponent": slope})
    return rows


def bench_decisions(queued: int = 2048) -> list[dict]:
    """Time every schedule() call while at least `queued` jobs wait.

    Workload: 2 x `queued` jobs submitted within 60 s onto a 16x8-GPU cluster (demo), so the queue
    holds thousands of jobs for most of the run; durations from the demo preset.
    """
    spec = load_preset("demo", jobs=2 * queued, mean_interarrival=60.0 / (2 * queued), diurnal=False)
    w = build_workload(generate(spec, seed=1), load_cluster("demo"))
    rows = []
    print(f"\nDecision latency with >= {queued:,} queued jobs (16x8 GPUs), per schedule() call")
    print(f"{'policy':<14}{'decisions':>10}{'P50 ms':>9}{'P99 ms':>9}{'max ms':>9}")
    for policy in ["fifo", "sjf", "srtf", "tiresias", "pollux-60", "wcs-duration", "qssf"]:
        info, factory, _ = get_policy(policy)
        samples: list[float] = []

        def timed_factory(factory=factory, samples=samples):
            p = factory()
            inner = p.schedule

            def schedule():
                n = len(p.queue)
                t0 = time.perf_counter()
                inner()
                if n >= queued:
                    samples.append(time.perf_counter() - t0)

            p.schedule = schedule
            return p

        preds = list(w.duration) if info.uses_predictions else None
        Engine(w, timed_factory, predictions=preds, policy_name=policy).run()
        d = np.asarray(samples) * 1e3
        row = {"policy": policy, "queued_at_least": queued, "decisions": len(d),
               "p50_ms": float(np.percentile(d, 50)) if len(d) else math.nan,
               "p99_ms": float(np.percentile(d, 99)) if len(d) else math.nan,
               "max_ms": float(d.max()) if len(d) else math.nan}
        rows.append(row)
        print(f"{policy:<14}{row['decisions']:>10,}{row['p50_ms']:9.3f}{row['p99_ms']:9.3f}{row['max_ms']:9.3f}")
    return rows


def venus_shaped_csv(path: Path, jobs: int = 24_000, seed: int = 0, data=None) -> Path:
    """A Lucid-format (Helios ``cluster_log.csv``) trace of ``jobs`` synthetic Helios-like jobs on Venus'
    real VC sizes (each job's VC drawn in proportion to the VC's GPUs), as Lucid's simulator reads it:
    the 24k-job "Lucid-shaped" FIFO setting of the parity check (`--cluster venus --policy fifo`)."""
    cluster = load_cluster("venus", data)
    spec = load_preset("earth", jobs=jobs, num_vcs=len(cluster.partitions))
    f = generate(spec, seed=seed).frame
    sizes = np.array([p.gpus for p in cluster.partitions], dtype=float)
    rng = np.random.default_rng(seed)
    vc_of_org = {f"vc{i:02d}": cluster.partitions[k].name
                 for i, k in enumerate(rng.choice(len(sizes), size=spec.num_vcs, p=sizes / sizes.sum()))}
    out = {"job_id": f["job_id"], "user": f["user"], "vc": f["org"].map(vc_of_org), "gpu_num": f["num_gpus"],
           "cpu_num": 4, "node_num": np.ceil(f["num_gpus"].astype(float) / 8).astype(int), "state": "COMPLETED",
           "submit_time": f["submit_ts"].dt.tz_convert("Asia/Shanghai").dt.strftime("%Y-%m-%d %H:%M:%S"),
           "duration": f["duration"]}
    import pandas as pd

    pd.DataFrame(out).to_csv(path, index=False)
    return path


def _timed_process(cmd: list[str], cwd: Path | None = None, env: dict | None = None) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds (user + sys of the child) and exit code of one whole process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=cwd, env=env)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode:
        print(proc.stderr[-2000:])
    return wall, cpu, proc.returncode


def bench_commands(philly: Path | None, repeats: int = 3, data=None, tree: Path | None = None,
                   only: str | None = None) -> list[dict]:
    """Whole `schedcast simulate` processes (imports, loading, replay, table, result files and plots),
    timed from outside: the installed console script (the one beside this interpreter), or
    ``python -m pipelines.cli`` run inside ``tree`` (another checkout, e.g. to time an older commit).
    Best of ``repeats`` wall and CPU seconds."""
    exe = Path(sys.executable).with_name("schedcast")
    env = None
    if tree is not None:
        base = [sys.executable, "-m", "pipelines.cli"]
        env = {**os.environ, "PYTHONPATH": str(tree)}
    else:
        base = [str(exe)] if exe.exists() else [sys.executable, "-m", "pipelines.cli"]
    import compileall

    # Bytecode as a regular `pip install` leaves it; with PYTHONDONTWRITEBYTECODE set (as here) an editable
    # tree would otherwise recompile every module on every run (~0.08 s).
    compileall.compile_dir(str(tree or ROOT), quiet=1, rx=re.compile(r"[/\\](\.git|tests|benchmarks|\.venv)[/\\]"))
    tmp = Path(tempfile.mkdtemp(prefix="bench_cmd_"))
    cases = {"venus-shaped 24k FIFO (venus)": ["--trace", str(venus_shaped_csv(tmp / "venus24k.csv", data=data)),
                                              "--format", "helios", "--cluster", "venus", "--policy", "fifo"]}
    if philly is not None:
        cases["Philly SJF (philly-pool)"] = ["--trace", str(philly), "--cluster", "philly-pool", "--policy", "sjf"]
        cases["Philly 5 policies (philly-pool)"] = ["--trace", str(philly), "--cluster", "philly-pool"]
    variants = {"plots": []}
    probe = subprocess.run(base + ["simulate", "--help"], capture_output=True, text=True, cwd=tree, env=env)
    if "--no-plots" in probe.stdout:
        variants["no plots"] = ["--no-plots"]
    if only:
        cases = {k: v for k, v in cases.items() if only.lower() in k.lower()}
    if data is not None:
        cases = {k: v + ["--data-dir", str(data)] for k, v in cases.items()}
    rows = []
    print(f"\nWhole commands ({' '.join(base)} simulate ...; wall and CPU seconds; 'cold': the first run, "
          f"trace not yet in the trace cache; then best of {repeats} warm runs)")
    print(f"{'command':<34}{'variant':>10}{'cold s':>8}{'wall s':>8}{'cpu s':>8}")
    for label, argv in cases.items():
        for variant, extra in variants.items():
            run_env = {**(env or os.environ), "SCHEDCAST_TRACE_CACHE": str(tmp / f"cache-{len(rows)}")}
            walls, cpus = [], []
            for i in range(repeats + 1):
                out = tmp / f"out{i}"
                shutil.rmtree(out, ignore_errors=True)
                wall, cpu, rc = _timed_process(base + ["simulate", *argv, *extra, "--out", str(out), "--no-progress"],
                                              cwd=tree, env=run_env)
                if rc:
                    raise SystemExit(f"{label}: exit {rc}")
                walls.append(wall)
                cpus.append(cpu)
            rows.append({"command": label, "variant": variant, "cold_wall_s": walls[0], "wall_s": min(walls[1:]),
                         "cpu_s": min(cpus[1:]), "walls": walls})
            print(f"{label:<34}{variant:>10}{walls[0]:8.2f}{min(walls[1:]):8.2f}{min(cpus[1:]):8.2f}")
    shutil.rmtree(tmp, ignore_errors=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000, 1_750_000])
    ap.add_argument("--policies", nargs="+", default=["sjf", "srtf"])
    ap.add_argument("--data-dir")
    ap.add_argument("--commands-only", action="store_true", help="only the whole-command timings")
    ap.add_argument("--repeats", type=int, default=3, help="whole-command runs per case (best is kept)")
    ap.add_argument("--only", help="whole commands whose label contains this text (e.g. SJF, FIFO)")
    ap.add_argument("--tree", type=Path, help="time the commands of another checkout (python -m pipelines.cli "
                    "run there), e.g. `git worktree` of an older commit")
    args = ap.parse_args()
    sizes = [10_000, 100_000] if args.quick else args.sizes
    print(f"machine: {machine()}")
    rows = []
    philly = data_dir(args.data_dir) / "philly" / "philly_jobs_2017-09-04_2017-11-30.csv.gz"
    rows += bench_commands(philly if philly.exists() else None, args.repeats, data_dir(args.data_dir), args.tree,
                           args.only)
    if not args.commands_only:
        if philly.exists():
            rows += bench_philly(philly)
        else:
            print(f"(Philly file not found at {philly}; skipped)")
        rows += bench_scaling(sizes, args.policies)
        rows += bench_decisions()
    out = ROOT / "benchmarks" / "results"
    out.mkdir(parents=True, exist_ok=True)
    name = "engine_commands.json" if args.commands_only else "engine.json"
    (out / name).write_text(json.dumps({"machine": machine(), "rows": rows}, indent=2))
    print(f"\nwrote {out / name}")


if __name__ == "__main__":
    main()
