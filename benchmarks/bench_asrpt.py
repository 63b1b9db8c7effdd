"""A-SRPT speed benchmark (issue 21's performance targets) and the accuracy of the iteration predictions;
the paper's claims themselves (total JCT, Table II's gaps) are the ledger's: ``schedcast reproduce asrpt``
(pipelines/papers/asrpt.py).

    python benchmarks/bench_asrpt.py                          # everything (Fig. 6 sweep up to 150k jobs)
    python benchmarks/bench_asrpt.py --only fig6 --procs 2    # the Fig. 6 sweep alone, sizes over 2 processes
    python benchmarks/bench_asrpt.py --sizes 37500 --scale 0.05 --policies a-srpt spjf  # a look

Measures, on the ledger's own workloads (pipelines.papers.asrpt.make_case: the PAI shape at the paper's
setting, N consecutive jobs at the PAI trace's rate, N / 12,430 days, on pai-250), every replay through the one replay path
(pipelines.replay.run_replay, as the ledger's):

- **Fig. 6 sweep time**: every policy (``--policies``, default the seven of Fig. 6) on every size
  (``--sizes``, default 37.5k-150k): engine seconds per replay, and the sweep's wall time in all
  (building the workloads, the predictions ``--pred``, default group-median, the replays and their
  evaluation). Target: <= 5 min for the whole sweep on 2 cores: ``--procs 2`` replays the sizes in two
  processes (largest with smallest), each size's seven policies in one (they share its workload, its
  predictions and its alpha caches).
- **Heavy-Edge per job at 64 GPUs**: the mapping of every profiled model on 64 GPUs over random free
  GPUs (12 servers of 8), paper and refined variant. Target: <= 10 ms (the paper's).
- **Decision time**: every scheduling pass of A-SRPT and of WCS-Duration timed with the number of jobs
  waiting; P99 over passes with >= 2,000 waiting. Target: < 1 ms.
- **Prediction accuracy** (``--pred rf``): mean |predicted - true| / true iterations of the causal forest.

Writes benchmarks/results/asrpt/speed.json and prints a summary. Timings depend on the machine and its load.
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # `python benchmarks/bench_asrpt.py` from a checkout
    sys.path.insert(0, str(ROOT))

from pipelines.papers import asrpt as A  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "asrpt"


def heavy_edge_64(seed: int = 0, cases: int = 20) -> dict[str, dict[str, float]]:
    from sim.asrpt.iteration import Bandwidth
    from sim.asrpt.jobs import shared_catalog
    from sim.placement.heavy_edge import heavy_edge_map

    cat, bw, out = shared_catalog(), Bandwidth(), {}
    rng = np.random.default_rng(seed)
    for model in cat.models():
        cfg = cat.config(model, 64)
        if cfg is None:
            continue
        for refine in (False, True):
            times, cpu = [], []
            for _ in range(cases):
                free = [int(v) for v in rng.integers(1, 9, size=12)]
                while sum(free) < 64:
                    free[int(rng.integers(len(free)))] = 8
                t0, c0 = time.perf_counter(), time.thread_time()
                heavy_edge_map(cfg, free, bw, refine=refine)
                times.append((time.perf_counter() - t0) * 1e3)
                cpu.append((time.thread_time() - c0) * 1e3)  # on a loaded machine wall time has waits
            out[f"{model}{'+refine' if refine else ''}"] = {"ms_median": float(np.median(times)),
                                                             "ms_mean": float(np.mean(times)),
                                                             "ms_max": float(np.max(times)),
                                                             "cpu_ms_max": float(np.max(cpu))}
    return out


class _Ctx:
    def progress(self, message: str) -> None:
        print("  " + message, flush=True)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=list(A.FULL["fig6"]))
    ap.add_argument("--policies", nargs="+", default=list(A.POLICIES))
    ap.add_argument("--pred", default="median", choices=["median", "mean", "rf", "perfect"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--scale", type=float, default=1.0, help="replay this share of each size (same span: lower load)")
    ap.add_argument("--servers", type=int, default=250, help="servers of 8 GPUs (with --scale 0.1 --servers 25 "
                    "the offered load of each size is kept, as the ledger's quick mode does)")
    ap.add_argument("--only", choices=["all", "fig6", "heavy-edge", "decisions"], default="all",
                    help="one part (fig6: the Fig. 6 sweep alone)")
    ap.add_argument("--procs", type=int, default=1, help="processes for the Fig. 6 sweep (sizes split over them)")
    ap.add_argument("--skip-heavy-edge", action="store_true")
    ap.add_argument("--skip-decisions", action="store_true")
    args = ap.parse_args(argv)
    if args.procs < 1:
        ap.error(f"--procs must be >= 1, got {args.procs}")
    print(f"CPU {platform.processor() or platform.machine()}, Python {platform.python_version()}", flush=True)
    report: dict = {"sizes": args.sizes, "policies": args.policies, "pred": args.pred}

    if not args.skip_heavy_edge and args.only in ("all", "heavy-edge"):
        print("Heavy-Edge at 64 GPUs (ms per job):", flush=True)
        he = heavy_edge_64(args.seed)
        worst = max(v["ms_median"] for k, v in he.items() if "+refine" not in k)
        worst_max = max(v["ms_max"] for k, v in he.items() if "+refine" not in k)
        worst_cpu = max(v["cpu_ms_max"] for k, v in he.items() if "+refine" not in k)
        print(f"  paper Heavy-Edge: largest median {worst:.2f} ms, largest single {worst_max:.2f} ms wall, "
              f"{worst_cpu:.2f} ms CPU; median per "
              "model: " + ", ".join(f"{k} {v['ms_median']:.2f}" for k, v in he.items()), flush=True)
        report["heavy_edge_64"] = he

    cases: dict = {}
    if args.only in ("all", "fig6"):
        print("Fig. 6 sweep (engine seconds per replay):", flush=True)
        wall0, cpu0 = time.perf_counter(), time.process_time()
        if args.procs > 1:
            from concurrent.futures import ProcessPoolExecutor

            groups = _split(args.sizes, args.procs)
            with ProcessPoolExecutor(len(groups)) as pool:
                parts = list(pool.map(_sweep, groups, [args] * len(groups)))
            sweep = [r for part, _ in parts for r in part]
            child_cpu = sum(c for _, c in parts)
        else:
            sweep, _cpu = _sweep(args.sizes, args, cases)
            child_cpu = 0.0
        wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0 + child_cpu
        engine_s = sum(r["replay_s"] for r in sweep)
        cpu_s = sum(r["scored_cpu_s"] for r in sweep)
        report.update(sweep=sweep, sweep_engine_s=engine_s, sweep_wall_s=wall, sweep_cpu_s=cpu, replays_cpu_s=cpu_s,
                      procs=args.procs)
        print(f"  sweep: {wall:.0f} s wall in all ({engine_s:.0f} s in the engine); {cpu:.0f} s CPU in all "
              f"({cpu_s:.0f} s replaying and scoring; {args.procs} process(es))", flush=True)

    if not args.skip_decisions and args.only in ("all", "decisions"):
        print("Decision time with >= 2,000 waiting (largest size):", flush=True)
        case = cases.get(max(args.sizes))
        if case is None:
            case = A.make_case(max(args.sizes), args.seed, args.scale, label="decisions", servers=args.servers)
            A.predictions(case, args.pred, A.FULL, args.seed)
        report["decisions"] = {}
        for pol in ("a-srpt", "wcs-duration"):
            deep = _deep_passes(case, pol, args.pred)
            report["decisions"][pol] = deep
            print(f"  {pol}: {deep}", flush=True)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "speed.json").write_text(json.dumps(report, indent=1, default=float))
    print(f"wrote {OUT / 'speed.json'}")


def _split(sizes: list[int], procs: int) -> list[list[int]]:
    """Sizes dealt largest first to the process with the fewest jobs so far (the work grows with size)."""
    groups: list[list[int]] = [[] for _ in range(min(procs, len(sizes)))]
    for n in sorted(sizes, reverse=True):
        min(groups, key=sum).append(n)
    return [g for g in groups if g]


def _sweep(sizes: list[int], args, cases: dict | None = None) -> tuple[list[dict], float]:
    """Every policy on every size of ``sizes`` (one process): the rows and the CPU seconds it took."""
    c0, rows = time.process_time(), []
    for n in sizes:
        case = A.make_case(n, args.seed, args.scale, label=f"fig6-{n}", servers=args.servers)
        if cases is not None:
            cases[n] = case
        A.predictions(case, args.pred, A.FULL, args.seed)
        if args.pred == "rf":
            print(f"  {n:>7,} causal RF: mean iteration error {100 * A.prediction_error(case, 'rf'):.0f} %", flush=True)
        for pol in args.policies:
            pred = "perfect" if pol == "a-srpt-perfect" else args.pred
            r = A.replay(case, pol, A.FULL, pred=pred)
            rows.append({k: r[k] for k in ("policy", "jobs", "replay_s", "scored_s", "scored_cpu_s", "total_jct_h",
                                           "makespan_h")})
            print(f"  {n:>7,} {pol:15s} {r['replay_s']:6.1f} s (scored {r['scored_s']:.1f} s wall, "
                  f"{r['scored_cpu_s']:.1f} s CPU) total JCT {r['total_jct_h']:,.0f} h, makespan "
                  f"{r['makespan_h']:,.0f} h", flush=True)
    return rows, time.process_time() - c0


def _timed(base: str):
    """A registered copy of policy ``base`` that times each scheduling pass with the jobs waiting, reported
    as lists in its stats (the engine concatenates list stats), so it replays through run_replay."""
    from sim.policies import POLICIES, get_policy, register

    name = f"bench-timed-{base}"
    if name not in POLICIES:
        cls = get_policy(base)[0].cls

        class Timed(cls):  # type: ignore[misc, valid-type]
            def bind(self, ctx) -> None:
                super().bind(ctx)
                self.timings: list[tuple[int, float]] = []

            def schedule(self) -> None:
                waiting = self.waiting_count()
                t0 = time.perf_counter()
                super().schedule()
                self.timings.append((waiting, time.perf_counter() - t0))

            def stats(self):
                return {**super().stats(), "pass_waiting": [w for w, _ in self.timings],
                        "pass_s": [t for _, t in self.timings]}

        Timed.__name__ = f"Timed{cls.__name__}"
        register(Timed, name)
    return name


def _deep_passes(case, policy: str, pred: str) -> dict[str, float]:
    """``policy`` with every scheduling pass timed together with the number of jobs waiting."""
    from pipelines.replay import prepare_replay, run_replay

    spec = A.replay_spec(_timed(policy))
    rr = run_replay(spec, prepare_replay(spec, built=(None, case.w), extras=A.replay_inputs(case, A.FULL, pred)))
    waiting = np.array(rr.policy_stats["pass_waiting"])
    secs = np.array(rr.policy_stats["pass_s"]) * 1e3
    deep = secs[waiting >= 2000]
    out = {"passes": len(secs), "p99_ms": float(np.percentile(secs, 99)) if len(secs) else float("nan"),
           "max_waiting": int(waiting.max()) if len(waiting) else 0, "deep_passes": len(deep)}
    if len(deep):
        out.update(deep_p50_ms=float(np.percentile(deep, 50)), deep_p99_ms=float(np.percentile(deep, 99)))
    return out


if __name__ == "__main__":
    main()
