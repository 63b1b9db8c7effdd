"""A-SRPT speed benchmark and Table II timing (the paper's claims themselves are the ledger's:
``schedcast reproduce asrpt``, pipelines/papers/asrpt.py).

    python benchmarks/bench_asrpt.py                          # everything (Fig. 6 sweep up to 150k jobs)
    python benchmarks/bench_asrpt.py --sizes 37500 --scale 0.05 --policies a-srpt spjf --skip-table2  # a look

Measures, on the ledger's own workloads (pipelines.papers.asrpt.make_case: the PAI shape at the paper's
scale, N jobs over 60 days x N / 150,000 on pai-250):

- **Fig. 6 sweep time**: every policy (``--policies``, default the seven of Fig. 6) on every size
  (``--sizes``, default 37.5k-150k); replay seconds (engine, speeds, placement) apart from building the
  workload and the causal random-forest predictions (``--pred``; default group-median, no training).
  Target: <= 5 min for the whole sweep on 2 cores.
- **Heavy-Edge per job at 64 GPUs**: the mapping of every profiled model on 64 GPUs over random free
  GPUs (8 x 8-GPU servers), paper and refined variant. Target: <= 10 ms.
- **Decision time**: A-SRPT's every scheduling pass timed with the number of jobs waiting (virtual +
  real queue); P99 over passes with >= 2,000 waiting. Target: < 1 ms.
- **Table II timing**: Heavy-Edge vs the exact ILP (gap and ms), as the ledger computes it.

Writes benchmarks/results/asrpt/speed.json and prints a summary. Timings depend on the machine and its load.
"""
from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

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
            times = []
            for _ in range(cases):
                free = [int(v) for v in rng.integers(1, 9, size=12)]
                while sum(free) < 64:
                    free[int(rng.integers(len(free)))] = 8
                t0 = time.perf_counter()
                heavy_edge_map(cfg, free, bw, refine=refine)
                times.append((time.perf_counter() - t0) * 1e3)
            out[f"{model}{'+refine' if refine else ''}"] = {"ms_median": float(np.median(times)),
                                                             "ms_mean": float(np.mean(times)),
                                                             "ms_max": float(np.max(times))}
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
    ap.add_argument("--skip-table2", action="store_true")
    args = ap.parse_args(argv)
    print(f"CPU {platform.processor() or platform.machine()}, Python {platform.python_version()}", flush=True)
    report: dict = {"sizes": args.sizes, "policies": args.policies, "pred": args.pred}

    print("Heavy-Edge at 64 GPUs (ms per job):", flush=True)
    he = heavy_edge_64(args.seed)
    worst = max(v["ms_median"] for k, v in he.items() if "+refine" not in k)
    print(f"  paper Heavy-Edge: largest median {worst:.2f} ms; median per model: "
          + ", ".join(f"{k} {v['ms_median']:.2f}" for k, v in he.items()), flush=True)
    report["heavy_edge_64"] = he

    print("Fig. 6 sweep (replay seconds):", flush=True)
    sweep, total, build = [], 0.0, 0.0
    for n in args.sizes:
        t0 = time.perf_counter()
        case = A.make_case(n, args.seed, args.scale, label=f"fig6-{n}")
        A.predictions(case, args.pred, A.FULL, args.seed)
        build += time.perf_counter() - t0
        for pol in args.policies:
            pred = "perfect" if pol == "a-srpt-perfect" else args.pred
            r = A.replay(case, pol, A.FULL, pred=pred, time_decisions=pol == "a-srpt")
            total += r["replay_s"]
            sweep.append({k: v for k, v in r.items() if not isinstance(v, (list, np.ndarray))})
            print(f"  {n:>7,} {pol:15s} {r['replay_s']:6.1f} s  total JCT {r['total_jct_h']:12,.0f} h", flush=True)
    report.update(sweep=sweep, sweep_replay_s=total, sweep_build_s=build)
    print(f"  sweep: {total:.0f} s of replays + {build:.0f} s building workloads and predictions", flush=True)

    print("Decision time with >= 2,000 waiting (A-SRPT, largest size):", flush=True)
    deep = _deep_passes(A.make_case(max(args.sizes), args.seed, args.scale, label="deep"), args.pred)
    report["decisions"] = deep
    print(f"  {deep}", flush=True)

    if not args.skip_table2:
        print("Table II (Heavy-Edge vs the exact ILP):", flush=True)
        t2 = A.table2(A.FULL, args.seed)
        report["table2"] = t2
        for m, r in t2.items():
            print(f"  {m:11s} gap {100 * r['gap']:.1f} % (max {100 * r['gap_max']:.1f} %), refined "
                  f"{100 * r['gap_refine']:.1f} %; Heavy-Edge {r['ms']:.2f} ms, refined {r['ms_refine']:.2f} ms, "
                  f"ILP {r['ilp_ms']:.0f} ms", flush=True)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "speed.json").write_text(json.dumps(report, indent=1, default=float))
    print(f"wrote {OUT / 'speed.json'}")


def _deep_passes(case, pred: str) -> dict[str, float]:
    """A-SRPT with every scheduling pass timed together with the number of jobs waiting."""
    from sim.engine import Engine
    from sim.placement.heavy_edge import HeavyEdge
    from sim.policies.asrpt import ASrpt

    class Timed(ASrpt):
        def __init__(self):
            super().__init__()
            self.timings: list[tuple[int, float]] = []

        def schedule(self) -> None:
            waiting = len(self.virtual) + len(self.real)
            t0 = time.perf_counter()
            super().schedule()
            self.timings.append((waiting, time.perf_counter() - t0))

    perf = A.performance(case)
    it = A.predictions(case, pred, A.FULL)
    amin = [(perf.alpha_min(m, g) or 1.0) if m is not None else 1.0 for m, g in zip(perf.model, case.w.gpus)]
    preds = {"iterations": it.tolist(), "duration": [float(p * a) for p, a in zip(it, amin)]}
    engine = Engine(case.w, Timed, placement=HeavyEdge(), predictions=preds, performance=perf)
    engine.run()
    timings = [t for p in engine.policies for t in p.timings]
    deep = np.array([s for w, s in timings if w >= 2000]) * 1e3
    allp = np.array([s for _, s in timings]) * 1e3
    out = {"passes": len(allp), "p99_ms": float(np.percentile(allp, 99)) if len(allp) else float("nan"),
           "max_waiting": max((w for w, _ in timings), default=0), "deep_passes": len(deep)}
    if len(deep):
        out.update(deep_p50_ms=float(np.percentile(deep, 50)), deep_p99_ms=float(np.percentile(deep, 99)))
    return out


if __name__ == "__main__":
    main()
