"""Lazer's claims (Table 2): the replays of ``configs/experiments/papers/lazer/spec[-quick].yaml`` reduced
to per-trace, per-seed measures (``<measure>@<trace>``), with the named Lazer variants as causes."""
from __future__ import annotations

import math

from evaluation.claims import Measurement, ReproduceContext
from pipelines.papers import Results, ratio_samples, run_spec, spec_path, write_policy_table

BASELINES = ("SJF", "SRTF", "Pollux", "Muri", "Optimus")
VARIANTS = ("Lazer+PL", "Lazer+WQ", "Lazer+PL+WQ")


def _mean(xs: list[float]) -> float:
    xs = [x for x in xs if math.isfinite(x)]
    return sum(xs) / len(xs) if xs else float("nan")


def _best(res: Results, w: str, metric: str) -> str | None:
    """The baseline with the lowest mean ``metric`` on trace ``w``."""
    means = {b: res.get(w, b, metric) for b in BASELINES if res.has(w, b)}
    means = {b: v for b, v in means.items() if math.isfinite(v)}
    return min(means, key=means.get) if means else None


def _vs_best(res: Results, w: str, metric: str, label: str, speedup: bool) -> tuple[list[float], str]:
    """Per seed: best baseline / label (speedup) or label / best baseline; 0/0 is NaN (no evidence)."""
    best = _best(res, w, metric)
    if best is None or not res.has(w, label):
        return [], ""
    seeds = res.seeds(w, label)
    mine, base = res.samples(w, label, metric, seeds), res.samples(w, best, metric, seeds)
    return (ratio_samples(base, mine) if speedup else ratio_samples(mine, base)), best


def run(ctx: ReproduceContext) -> dict[str, Measurement]:
    overrides = {"seeds": ctx.seeds} if ctx.seeds_given else None
    spec = spec_path("lazer", "spec-quick" if ctx.quick else "spec")
    records = run_spec(ctx, spec, overrides=overrides)
    res = Results(records)
    out: dict[str, Measurement] = {}
    for w in res.workloads():
        table = write_policy_table(ctx, res, w, f"{w}/policies.csv")
        ctx.settings[w] = {"trace": w, "cluster": next((r["cell"].get("cluster") for r in records
                                                        if (r.get("cell") or {}).get("workload") == w), None),
                           "seeds": res.seeds(w, "Lazer"), "tables": [table]}
        for metric, key, speedup in (("jct_p50", "jct_p50_speedup", True), ("jct_p95", "jct_p95_speedup", True),
                                     ("wait_p50", "wait_p50_vs_best", False), ("wait_p95", "wait_p95_vs_best", False)):
            samples, best = _vs_best(res, w, metric, "Lazer", speedup)
            if not samples:
                out[f"{key}@{w}"] = Measurement(None, not_testable=f"no Lazer or baseline cell on {w}")
                continue
            causes = {v: _mean(_vs_best(res, w, metric, v, speedup)[0]) for v in VARIANTS if res.has(w, v)}
            out[f"{key}@{w}"] = Measurement(samples=samples, causes=causes, detail=(
                f"{'best baseline / Lazer' if speedup else 'Lazer / best baseline'} on {w}; best baseline {best}"
                f" ({metric} {res.get(w, best, metric):.1f} s vs Lazer {res.get(w, 'Lazer', metric):.1f} s)"))
        seeds = res.seeds(w, "Lazer")
        srtf = res.samples(w, "SRTF", "futile_total", seeds)
        out[f"futile_vs_srtf@{w}"] = Measurement(
            samples=ratio_samples(res.samples(w, "Lazer", "futile_total", seeds), srtf),
            causes={v: _mean(ratio_samples(res.samples(w, v, "futile_total", seeds), srtf))
                    for v in VARIANTS if res.has(w, v)},
            detail=f"Lazer / SRTF total futile time on {w} (SRTF {_mean(srtf) / 3600:.2f} h)")
        out[f"srtf_futile_h@{w}"] = Measurement(samples=[s / 3600.0 for s in res.samples(w, "SRTF", "futile_total")],
                                                detail=f"SRTF total futile time on {w} (h)")
        if res.has(w, "Optimus"):
            event = [p for p in ("SJF", "SRTF", "Lazer") if res.has(w, p)]
            per_seed = []
            for s in res.seeds(w, "Optimus"):
                vals = [res.samples(w, p, "wait_p50", [s])[0] for p in event]
                vals = [v for v in vals if math.isfinite(v)]
                per_seed.append(res.samples(w, "Optimus", "wait_p50", [s])[0] - min(vals) if vals else float("nan"))
            out[f"periodic_wait_over_event_driven@{w}"] = Measurement(
                samples=per_seed, detail=f"Optimus-600 P50 wait minus the best of {', '.join(event)} on {w}")
        else:
            out[f"periodic_wait_over_event_driven@{w}"] = Measurement(None, not_testable=f"Optimus not replayed on {w}")
    return out
