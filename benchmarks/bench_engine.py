"""Engine benchmark: real Philly replay, synthetic scaling to Saturn size, decision latency.

    python benchmarks/bench_engine.py                  # everything (about 4-6 minutes on 2 cores)
    python benchmarks/bench_engine.py --quick          # Philly + 10k/100k only
    python benchmarks/bench_engine.py --sizes 10000 1750000 --policies sjf
    python benchmarks/bench_engine.py --commands-only  # whole `schedcast simulate` commands only
    python benchmarks/bench_engine.py --reference-only # the minimal heap SJF loop vs schedcast, 1.75 M jobs
    python benchmarks/bench_engine.py --reference-only --reference-rounds 6 --tree ../old  # interleaved, medians
    python benchmarks/bench_engine.py --reference-only --reference-rounds 6 --pin 1  # all on one core
    python benchmarks/bench_engine.py --instructions 200000 --tree ../old  # in instructions (valgrind)
    python benchmarks/bench_engine.py --tiresias-rounds 8   # Tiresias vs SJF on Philly, interleaved CPU seconds

The reference (issue 23): a minimal heap SJF loop on its own 1.75 M-job workload (one pool of 125 x 8
GPUs), the same workload written as a Helios trace and replayed by the Engine and by the whole
`schedcast simulate --policy sjf` command; targets: replay <= 1.5x the loop, command <= 2.5x, loading <= 3 s.

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
import pandas as pd

from features.paths import data_dir
from features.traces import load_trace
from features.traces.synthetic import generate, load_preset
from sim import simulate
from sim.cluster import load_cluster
from sim.engine import Engine
from sim.policies import get_policy
from sim.workload import build_workload

ROOT = Path(__file__).resolve().parents[1]

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


def bench_tiresias(path: Path, rounds: int) -> list[dict]:
    """Tiresias against SJF on Philly (issue 23: within 2x of SJF), ``rounds`` interleaved rounds of CPU
    seconds, on the pool and on its virtual clusters, each with the loop that replays it by default (the SJF
    kernel, the Tiresias kernel), plus the general loop's Tiresias once per round; the Tiresias kernel's
    results must equal the general loop's (checked on every round)."""
    import statistics

    table = load_trace(path)
    rows = []
    for cluster in ("philly-pool", "philly-vc"):
        w = build_workload(table, load_cluster(cluster))
        times: dict[str, list[float]] = {"sjf": [], "tiresias": [], "tiresias-general": []}
        for _ in range(rounds):
            for name, policy, fast in (("sjf", "sjf", None), ("tiresias", "tiresias", None),
                                       ("tiresias-general", "tiresias", False)):
                c0 = time.process_time()
                r = simulate(w, policy, fast_path=fast)
                times[name].append(time.process_time() - c0)
                if name == "tiresias":
                    kernel = r
                elif name == "tiresias-general":
                    same = (r.events == kernel.events and r.policy_stats == kernel.policy_stats and all(
                        list(getattr(r, f)) == list(getattr(kernel, f)) for f in ("first_start", "end", "preemptions")))
                    assert same and kernel.loop == "tiresias-kernel", "the Tiresias kernel differs from the general loop"
        ratios = [t / s for s, t in zip(times["sjf"], times["tiresias"])]
        med = {k: statistics.median(v) for k, v in times.items()}
        print(f"\nTiresias vs SJF on Philly ({cluster}, {len(w.cluster.partitions)} partition(s)), {rounds} interleaved "
              f"rounds, CPU s: SJF {min(times['sjf']):.2f}-{max(times['sjf']):.2f} (median {med['sjf']:.2f}), Tiresias "
              f"{min(times['tiresias']):.2f}-{max(times['tiresias']):.2f} (median {med['tiresias']:.2f}; general loop "
              f"median {med['tiresias-general']:.2f}); Tiresias / SJF per round {min(ratios):.2f}-{max(ratios):.2f}x, "
              f"median {statistics.median(ratios):.2f}x (goal <= 2x); kernel results equal the general loop's")
        rows.append({"trace": "philly", "cluster": cluster, "rounds": rounds, **{f"{k}_cpu_s": v for k, v in times.items()},
                     "ratio_median": statistics.median(ratios)})
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
    """The 24k-job "Lucid-shaped" FIFO setting of the parity check (`--cluster venus --policy fifo`) as a
    Lucid-format (Helios ``cluster_log.csv``) trace, as Lucid's simulator reads it. The jobs come from the
    registered ``venus-shaped`` generator (the one experiment specs name), not from a copy of it here."""
    from features.traces.synthetic import call_generator

    f = call_generator("venus-shaped", {"cluster": "venus", "data_dir": data}, seed, jobs).frame
    out = {"job_id": f["job_id"], "user": f["user"], "vc": f["org"], "gpu_num": f["num_gpus"],
           "cpu_num": 4, "node_num": np.ceil(f["num_gpus"].astype(float) / 8).astype(int), "state": "COMPLETED",
           "submit_time": f["submit_ts"].dt.tz_convert("Asia/Shanghai").dt.strftime("%Y-%m-%d %H:%M:%S"),
           "duration": f["duration"]}
    pd.DataFrame(out).to_csv(path, index=False)
    return path


# --- The reference: a minimal heap SJF loop and the same workload through schedcast ------------------------
#: The reference cluster: one pool of REF_NODES x 8 GPUs; jobs take whole GPUs from one free count.
REF_NODES, REF_GPUS_PER_NODE = 125, 8
#: GPU counts of the reference workload and their shares (Helios-like: mostly 1-8 GPUs, a thin tail).
REF_GPU_MIX = {1: 0.60, 2: 0.10, 4: 0.12, 8: 0.14, 16: 0.03, 32: 0.008, 64: 0.002}
REF_START = pd.Timestamp("2020-01-01 00:00:00")


def reference_workload(jobs: int, seed: int = 0, load: float = 0.8) -> dict[str, np.ndarray]:
    """The minimal loop's own workload: whole-second submissions (Poisson arrivals at offered ``load`` on the
    reference cluster), whole-second log-normal durations (median 10 min) and whole GPU counts. Integers
    only, so the trace written from it reads back to exactly these numbers."""
    rng = np.random.default_rng(seed)
    sizes = np.array(list(REF_GPU_MIX))
    gpus = rng.choice(sizes, size=jobs, p=np.array(list(REF_GPU_MIX.values())))
    duration = np.maximum(1, np.rint(rng.lognormal(np.log(600.0), 1.5, size=jobs))).astype(np.int64)
    duration = np.minimum(duration, 30 * 86400)
    gap = float((gpus * duration).mean()) / (load * REF_NODES * REF_GPUS_PER_NODE)
    submit = np.floor(np.cumsum(rng.exponential(gap, size=jobs))).astype(np.int64)
    return {"submit": submit - submit[0], "duration": duration, "gpus": gpus.astype(np.int64)}


def minimal_sjf(submit, duration, gpus, capacity: int) -> tuple[list[int], int]:
    """Non-preemptive strict SJF on one pool of ``capacity`` GPUs with two heaps, nothing else: at each
    time, finishes first, then arrivals (submission order), then start the shortest waiting jobs while the
    shortest fits (ties by submission order), as schedcast's engine orders events. Returns the start time
    of every job and the most jobs that waited at once."""
    import heapq

    submit, duration, gpus = submit.tolist(), duration.tolist(), gpus.tolist()
    n, free, ai = len(submit), capacity, 0
    start = [0] * n
    waiting: list[tuple[int, int]] = []
    running: list[tuple[int, int]] = []
    push, pop = heapq.heappush, heapq.heappop
    most = 0
    while ai < n or running:
        now = submit[ai] if ai < n else running[0][0]
        if running and running[0][0] < now:
            now = running[0][0]
        while running and running[0][0] == now:
            free += gpus[pop(running)[1]]
        while ai < n and submit[ai] == now:
            push(waiting, (duration[ai], ai))
            ai += 1
        if len(waiting) > most:
            most = len(waiting)
        while waiting and gpus[waiting[0][1]] <= free:
            job = pop(waiting)[1]
            free -= gpus[job]
            start[job] = now
            push(running, (now + duration[job], job))
    return start, most


#: Calls after which CPython 3.11 specialises a function's bytecode (its adaptive interpreter's warm-up:
#: 8 calls; 3.12 and later specialise inside the first call's loop).
SPECIALISE_AFTER = 8


def fresh_copy(fn):
    """``fn`` with a code object of its own, which CPython has not specialised yet: its first call runs the
    loop as a script that calls it once does (the bench otherwise calls ``minimal_sjf`` round after round,
    and from the 8th call on it ran 1.5x faster: 1.07 s against 1.6 s on this project's VM)."""
    import types

    return types.FunctionType(fn.__code__.replace(), fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)


def specialised_copy(fn, capacity: int):
    """A :func:`fresh_copy` of the loop called :data:`SPECIALISE_AFTER` times on a 50-job workload, so that
    its next call runs specialised bytecode (what Python 3.12+ gives a loop from its first call)."""
    warm = fresh_copy(fn)
    tiny = reference_workload(50)
    for _ in range(SPECIALISE_AFTER):
        warm(tiny["submit"], tiny["duration"], tiny["gpus"], capacity)
    return warm


def write_reference_trace(path: Path, w: dict[str, np.ndarray]) -> Path:
    """The reference workload as a Helios ``cluster_log.csv`` (one VC, clock in Asia/Shanghai: no DST)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pacsv

    n = len(w["submit"])
    stamps = pa.array(np.datetime64(REF_START.to_datetime64(), "s") + w["submit"].astype("timedelta64[s]"))
    text = pc.strftime(stamps, format="%Y-%m-%d %H:%M:%S")
    table = pa.table({"job_id": pc.binary_join_element_wise("ref-", pc.cast(pa.array(np.arange(n)), pa.string()), ""),
                      "user": pa.repeat("u0", n), "vc": pa.repeat("pool", n), "gpu_num": w["gpus"],
                      "cpu_num": np.full(n, 4), "node_num": -(-w["gpus"] // REF_GPUS_PER_NODE),
                      "state": pa.repeat("COMPLETED", n), "submit_time": text, "duration": w["duration"]})
    with open(path, "wb") as fh:  # the layout pandas writes (unquoted header), several times faster
        fh.write((",".join(table.column_names) + "\n").encode())
        pacsv.write_csv(table, fh, write_options=pacsv.WriteOptions(include_header=False, quoting_style="none"))
    return path


def _command_times(stdout: str) -> dict[str, float]:
    """The `time: ... (load a, replay and scoring b, files c, ...)` line of `schedcast simulate`."""
    m = re.search(r"time: ([\d.]+) s in this command \((.*)\)", stdout)
    if not m:
        return {}
    parts = {"command_total": float(m.group(1))}
    for item in m.group(2).split(", "):
        name, _, value = item.rpartition(" ")
        parts[name] = float(value)
    return parts


def bench_reference(jobs: int, placement: str = "first-fit", command: bool = True, rounds: int = 1,
                    tree: Path | None = None) -> list[dict]:
    """The minimal heap SJF loop against schedcast on the same ``jobs``-job workload (REF_NODES x 8 GPUs):
    the engine's replay through the API, the trace's loading (parse, then workload), and the whole
    `schedcast simulate --policy sjf` command on the workload written as a trace. ``first-fit`` spreads a job
    over nodes whenever enough GPUs are free, i.e. the minimal loop's single free count, so every start
    time must agree (checked); ``consolidate`` (the default) may refuse a fragmented fit. ``rounds`` > 1 adds
    that many interleaved rounds of the loop and the command (and ``tree``'s command): see _reference_rounds."""
    w = reference_workload(jobs)
    capacity = REF_NODES * REF_GPUS_PER_NODE
    t0, c0 = time.perf_counter(), time.process_time()
    ref_start, most = fresh_copy(minimal_sjf)(w["submit"], w["duration"], w["gpus"], capacity)  # as a script runs it
    t_min, c_min = time.perf_counter() - t0, time.process_time() - c0
    print(f"\nReference: {jobs:,} jobs on {REF_NODES}x{REF_GPUS_PER_NODE} GPUs, strict SJF "
          f"(offered load {float((w['gpus'] * w['duration']).sum()) / (capacity * w['submit'][-1]):.2f}, "
          f"up to {most:,} waiting)")
    print(f"minimal heap loop:        {t_min:8.2f} s   (CPU {c_min:.2f} s; on a loaded machine the CPU ratios "
          "are the steadier ones)")
    tmp = Path(tempfile.mkdtemp(prefix="bench_ref_"))
    row: dict = {"trace": "reference", "policy": "sjf", "jobs": jobs, "placement": placement, "minimal_s": t_min,
                 "minimal_cpu_s": c_min}
    try:
        trace = write_reference_trace(tmp / "cluster_log.csv", w)
        cluster_yaml = tmp / "ref-pool.yaml"
        cluster_yaml.write_text(f"name: ref-pool\ndescription: reference pool\ngpu_type: V100\n"
                                f"gpus_per_node: {REF_GPUS_PER_NODE}\nnodes: {REF_NODES}\n")
        # The commands first, while this process holds only the workload: after its own replay below it holds
        # about 2 GB (until it is collected), and on this project's VM every command timed then ran slower
        # (3 rounds: median 6.27 s against 4.89 s, with 21 GB free; the cause lies outside the command)
        if command:
            wall, cpu, parts = _reference_command(trace, cluster_yaml, placement, tmp / "out")
            row["command_s"], row["command_cpu_s"] = wall, cpu
            row.update({f"command_{k.replace(' ', '_')}_s": v for k, v in parts.items()})
            print(f"whole command (no cache): {row['command_s']:8.2f} s   = {row['command_s'] / t_min:.2f}x the minimal "
                  f"loop (CPU {row['command_cpu_s']:.2f} s = {row['command_cpu_s'] / c_min:.2f}x; target <= 2.5x)")
            print("  its own split:          " + ", ".join(f"{k} {v:.2f} s" for k, v in parts.items()))
            if rounds > 1:
                row["rounds"] = _reference_rounds(w, capacity, trace, cluster_yaml, placement, tmp, rounds, tree)
        t0, c0 = time.perf_counter(), time.process_time()
        table = load_trace(trace, "helios", cache=False)
        row["parse_s"], row["parse_cpu_s"] = time.perf_counter() - t0, time.process_time() - c0
        t0, c0 = time.perf_counter(), time.process_time()
        workload = build_workload(table, load_cluster(str(cluster_yaml)))
        row["build_s"], row["build_cpu_s"] = time.perf_counter() - t0, time.process_time() - c0
        del table
        assert len(workload) == jobs, f"{jobs - len(workload)} reference jobs lost on the way"
        c0 = time.process_time()
        r = simulate(workload, "sjf", placement=placement)
        row["engine_s"], row["engine_cpu_s"] = r.wall_seconds, time.process_time() - c0
        row["loop"] = getattr(r, "loop", "general")  # older trees have one loop
        row["same_starts"] = bool(np.array_equal(np.asarray(r.first_start, dtype=float),
                                                 np.asarray(ref_start, dtype=float)))
        del workload, r
        print(f"parse trace (no cache):   {row['parse_s']:8.2f} s   (CPU {row['parse_cpu_s']:.2f} s; target <= 3 s with "
              "the workload)")
        print(f"build workload:           {row['build_s']:8.2f} s   (CPU {row['build_cpu_s']:.2f} s)")
        print(f"engine replay ({placement}, {row['loop']} loop): {row['engine_s']:8.2f} s   = {row['engine_s'] / t_min:.2f}x the minimal loop"
              f" (CPU {row['engine_cpu_s']:.2f} s = {row['engine_cpu_s'] / c_min:.2f}x; target <= 1.5x; start times "
              f"{'equal' if row['same_starts'] else 'DIFFER'})")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return [row]


def _reference_command(trace: Path, cluster_yaml: Path, placement: str, out: Path,
                       tree: Path | None = None) -> tuple[float, float, dict[str, float]]:
    """One whole `schedcast simulate --policy sjf` process on the reference trace (no trace cache): wall and
    CPU seconds and the command's own split. ``tree``: another checkout's command (python -m pipelines.cli
    run there), e.g. a `git worktree` of an older commit."""
    env = {**os.environ, "SCHEDCAST_TRACE_CACHE": "0"}
    if tree is not None:
        base = [sys.executable, "-c", "import sys; sys.argv = ['schedcast'] + sys.argv[1:]; "
                "from pipelines.cli import entry; entry()"]  # the console script's path (its fast exit), in `tree`
        env["PYTHONPATH"] = str(tree)
    else:
        exe = Path(sys.executable).with_name("schedcast")
        base = [str(exe)] if exe.exists() else [sys.executable, "-m", "pipelines.cli"]
    shutil.rmtree(out, ignore_errors=True)
    argv = base + ["simulate", "--trace", str(trace), "--format", "helios", "--cluster", str(cluster_yaml),
                   "--policy", "sjf", "--placement", placement, "--out", str(out), "--no-progress"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tree)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode:
        raise SystemExit(f"reference command{f' in {tree}' if tree else ''}: exit {proc.returncode}: "
                         f"{proc.stderr[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), _command_times(proc.stdout)


def _reference_rounds(w: dict, capacity: int, trace: Path, cluster_yaml: Path, placement: str, tmp: Path,
                      rounds: int, tree: Path | None) -> list[dict]:
    """``rounds`` interleaved rounds of the minimal loop, the whole command (and ``tree``'s command): each
    round's ratio, then the medians. Why: on a VM whose speed drifts within minutes (this project's ran the
    same loop in 3.1-5.8 s), a loop timed once and a command timed later give ratios that say more about the
    drift than about the code; a loop and the commands timed side by side, many times, do not."""
    out = []
    print(f"\n{rounds} interleaved rounds: the minimal loop (a fresh copy: its first call, unspecialised; then a "
          "copy specialised by 8 calls), then the whole command" + (f", then the command of {tree}" if tree else ""))
    for i in range(rounds):
        first_call = fresh_copy(minimal_sjf)
        t0 = time.perf_counter()
        first_call(w["submit"], w["duration"], w["gpus"], capacity)
        loop = time.perf_counter() - t0
        warm = specialised_copy(minimal_sjf, capacity)
        t0 = time.perf_counter()
        warm(w["submit"], w["duration"], w["gpus"], capacity)
        special = time.perf_counter() - t0
        wall, cpu, parts = _reference_command(trace, cluster_yaml, placement, tmp / "out")
        entry = {"loop_s": loop, "specialised_loop_s": special, "command_s": wall, "command_cpu_s": cpu,
                 "ratio": wall / loop, "specialised_ratio": wall / special, "split": parts}
        line = (f"round {i + 1}: loop {loop:.2f} s (specialised {special:.2f} s), command {wall:.2f} s = "
                f"{wall / loop:.2f}x ({wall / special:.2f}x the specialised loop; "
                + ", ".join(f"{k} {v:.2f}" for k, v in parts.items() if k != "command_total") + ")")
        if tree is not None:
            twall, tcpu, _ = _reference_command(trace, cluster_yaml, placement, tmp / "out", tree)
            entry.update(tree_command_s=twall, tree_command_cpu_s=tcpu, tree_ratio=twall / loop)
            line += f"; {tree.name}: {twall:.2f} s = {twall / loop:.2f}x"
        print(line, flush=True)
        out.append(entry)
    med = {k: float(np.median([e[k] for e in out])) for k in out[0] if k != "split"}
    print(f"medians: loop {med['loop_s']:.2f} s, command {med['command_s']:.2f} s, ratio {med['ratio']:.2f}x "
          f"(per round {min(e['ratio'] for e in out):.2f}-{max(e['ratio'] for e in out):.2f}x; target <= 2.5x); "
          f"against the specialised loop ({med['specialised_loop_s']:.2f} s) {med['specialised_ratio']:.2f}x"
          + (f"; {tree.name}: {med['tree_command_s']:.2f} s, ratio {med['tree_ratio']:.2f}x" if tree else ""))
    return out


def _instructions(argv: list[str], cwd: Path | None = None, env: dict | None = None) -> int:
    """User-space instructions of one process and every process it starts (valgrind's callgrind, all
    threads): a count that does not drift with the VM's speed, as seconds do."""
    with tempfile.TemporaryDirectory(prefix="bench_cg_") as tmp:
        cmd = ["valgrind", "--tool=callgrind", "--trace-children=yes",
               f"--callgrind-out-file={tmp}/cg.%p.out", *argv]
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env=env)
        if proc.returncode:
            raise SystemExit(f"{' '.join(argv[:4])} ...: exit {proc.returncode} under valgrind: {proc.stderr[-1500:]}")
        counts = re.findall(r"==\d+== Collected : (\d+)", proc.stderr)
        if not counts:
            raise SystemExit("valgrind printed no instruction count")
        return sum(int(c) for c in counts)


def bench_instructions(jobs: int, tree: Path | None = None) -> list[dict]:
    """The reference in instructions instead of seconds: the minimal loop (a process that builds the
    workload and runs the loop, less one that only builds it) against the whole `simulate` command (and
    ``tree``'s), both under callgrind. Instructions leave out what seconds include and a CPU counter does
    not see here: memory stalls and the kernel's page-fault time (2-4 s of the 1.75 M-job command on this
    VM). Slow: valgrind runs about 50 times slower than the process itself."""
    if shutil.which("valgrind") is None:
        raise SystemExit("--instructions needs valgrind on PATH (apt install valgrind)")
    w = reference_workload(jobs)
    tmp = Path(tempfile.mkdtemp(prefix="bench_ins_"))
    row: dict = {"trace": "reference", "policy": "sjf", "jobs": jobs, "unit": "instructions"}
    try:
        trace = write_reference_trace(tmp / "cluster_log.csv", w)
        cluster_yaml = tmp / "ref-pool.yaml"
        cluster_yaml.write_text(f"name: ref-pool\ndescription: reference pool\ngpu_type: V100\n"
                                f"gpus_per_node: {REF_GPUS_PER_NODE}\nnodes: {REF_NODES}\n")
        loop = ("import sys; sys.path.insert(0, sys.argv[1]); import bench_engine as b; "
                "w = b.reference_workload(int(sys.argv[2])); "
                "sys.argv[3] == 'run' and b.minimal_sjf(w['submit'], w['duration'], w['gpus'], "
                "b.REF_NODES * b.REF_GPUS_PER_NODE)")
        here = str(Path(__file__).resolve().parent)
        setup = _instructions([sys.executable, "-c", loop, here, str(jobs), "setup"])
        run = _instructions([sys.executable, "-c", loop, here, str(jobs), "run"])
        row["minimal_instructions"] = run - setup
        print(f"\nReference in instructions: {jobs:,} jobs; minimal loop {row['minimal_instructions'] / 1e9:.2f} G")
        trees = [("this tree", None)] + ([(tree.name, tree)] if tree is not None else [])
        for label, where in trees:
            env = {**os.environ, "SCHEDCAST_TRACE_CACHE": "0"}
            if where is not None:
                env["PYTHONPATH"] = str(where)
            out = tmp / "out"
            shutil.rmtree(out, ignore_errors=True)
            count = _instructions([sys.executable, "-m", "pipelines.cli", "simulate", "--trace", str(trace),
                                   "--format", "helios", "--cluster", str(cluster_yaml), "--policy", "sjf",
                                   "--placement", "first-fit", "--out", str(out), "--no-progress"],
                                  cwd=where or ROOT, env=env)
            key = "command_instructions" if where is None else "tree_command_instructions"
            row[key] = count
            print(f"whole command ({label}): {count / 1e9:.2f} G = {count / row['minimal_instructions']:.2f}x the "
                  "minimal loop (target <= 2.5x, in seconds)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return [row]


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
    ap.add_argument("--reference-jobs", type=int, default=1_750_000,
                    help="jobs of the minimal-loop reference (issue 23: 1.75 M; 0 skips it)")
    ap.add_argument("--reference-only", action="store_true", help="only the minimal-loop reference")
    ap.add_argument("--reference-rounds", type=int, default=1,
                    help="interleaved rounds of the minimal loop and the whole command, with medians (a VM whose "
                         "speed drifts needs several; with --tree the other checkout's command runs in each round)")
    ap.add_argument("--reference-placement", default="first-fit",
                    help="placement of the reference replays (first-fit: the minimal loop's schedule exactly)")
    ap.add_argument("--tiresias-rounds", type=int, default=0,
                    help="only Tiresias against SJF on Philly (pool and VCs), this many interleaved rounds")
    ap.add_argument("--instructions", type=int, metavar="JOBS",
                    help="only the reference in instructions (valgrind), on a workload of JOBS jobs, with --tree's "
                         "command beside it: a measure this VM's drifting speed does not move")
    ap.add_argument("--pin", type=int, metavar="CPU",
                    help="run everything on this one CPU (the bench and every command it starts inherit the "
                         "affinity): the issue's own method, where a command's background threads add to its "
                         "time instead of running on a second core")
    args = ap.parse_args()
    sizes = [10_000, 100_000] if args.quick else args.sizes
    if args.pin is not None:
        os.sched_setaffinity(0, {args.pin})
    print(f"machine: {machine()}" + (f"; pinned to CPU {args.pin}" if args.pin is not None else ""))
    rows = []
    if args.instructions:
        rows = bench_instructions(args.instructions, args.tree)
        out = ROOT / "benchmarks" / "results"
        out.mkdir(parents=True, exist_ok=True)
        (out / "engine_instructions.json").write_text(json.dumps({"machine": machine(), "rows": rows}, indent=2))
        print(f"\nwrote {out / 'engine_instructions.json'}")
        return
    if args.tiresias_rounds:
        rows += bench_tiresias(data_dir(args.data_dir) / "philly" / "philly_jobs_2017-09-04_2017-11-30.csv.gz",
                               args.tiresias_rounds)
        out = ROOT / "benchmarks" / "results"
        out.mkdir(parents=True, exist_ok=True)
        (out / "engine_tiresias.json").write_text(json.dumps({"machine": machine(), "rows": rows}, indent=2))
        print(f"\nwrote {out / 'engine_tiresias.json'}")
        return
    if args.reference_jobs > 0 and not args.commands_only:
        rows += bench_reference(args.reference_jobs if not args.quick else 100_000, args.reference_placement,
                                rounds=args.reference_rounds, tree=args.tree)
    if args.reference_only:
        out = ROOT / "benchmarks" / "results"
        out.mkdir(parents=True, exist_ok=True)
        (out / "engine_reference.json").write_text(json.dumps({"machine": machine(), "rows": rows}, indent=2))
        print(f"\nwrote {out / 'engine_reference.json'}")
        return
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
