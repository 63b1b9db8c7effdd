"""Lucid's claims (Table 4, Fig. 11, §4.4 latency): the replays of ``configs/experiments/papers/lucid/
spec[-quick].yaml`` reduced to the ratios its claims file tests, plus the scheduling-latency measurement
(``decision_latency``, also used by benchmarks/bench_lucid.py)."""
from __future__ import annotations

import math
import time

from evaluation.claims import Measurement, ReproduceContext
from pipelines.papers import Results, quantile_interval, ratio_samples, run_spec, spec_path, write_policy_table

LUCID = "lucid"
BASELINES = ("fifo", "sjf", "qssf", "horus", "tiresias")
ABLATIONS = ("lucid-nobinder", "lucid-noshare", "lucid-noestimator", "lucid-nospace")


def _label(res: Results, workload: str, name: str) -> str | None:
    """The label of policy ``name`` in a workload (labels carry the parameters: 'lucid:initial=...';
    an explicit label such as 'lucid+extra-profiler' is matched whole)."""
    for w, label in res.cells:
        if w == workload and (label == name or (":" in label and label.split(":")[0] == name)):
            return label
    return None


def _get(res: Results, w: str, name: str, metric: str) -> float:
    label = _label(res, w, name)
    return res.get(w, label, metric) if label else float("nan")


def setting_name(workload: str) -> str:
    """The ledger's name of a spec workload ('earth@load0.9' -> 'earth-load0.9': '@' separates measure and
    setting in a measurement key)."""
    return workload.replace("@", "-")


def _paired(res: Results, w: str, a: str, b: str, metric: str) -> list[float]:
    """Per seed of ``b``'s cells: a's metric / b's (NaN where a cell is missing or b's value is 0)."""
    la, lb = _label(res, w, a), _label(res, w, b)
    if not la or not lb:
        return []
    seeds = res.seeds(w, lb)
    return ratio_samples(res.samples(w, la, metric, seeds), res.samples(w, lb, metric, seeds))


def _best_label(res: Results, w: str, metric: str) -> str | None:
    means = {b: _get(res, w, b, metric) for b in BASELINES}
    means = {b: v for b, v in means.items() if math.isfinite(v)}
    return min(means, key=means.get) if means else None


def _mean(xs: list[float]) -> float:
    xs = [x for x in xs if math.isfinite(x)]
    return sum(xs) / len(xs) if xs else float("nan")


def _ablation_causes(res: Results, w: str, metric: str) -> dict[str, float | str]:
    """What each deviation is worth on this metric in setting ``w``, as variant / Lucid (mean over seeds):
    the profiler as extra nodes (the paper's separate profiling cluster) and each mechanism switched off."""
    out: dict[str, float | str] = {}
    for a in ("lucid+extra-profiler", *ABLATIONS):
        value = _mean(_paired(res, w, a, LUCID, metric))
        if math.isfinite(value):
            out[f"{a} / lucid"] = value
    return out


def run(ctx: ReproduceContext) -> dict[str, Measurement]:
    overrides = {"seeds": ctx.seeds} if ctx.seeds_given else None
    records = run_spec(ctx, spec_path("lucid", "spec-quick" if ctx.quick else "spec"), overrides=overrides)
    res = Results(records)
    out: dict[str, Measurement] = {}
    for w in res.workloads():
        s = setting_name(w)
        lucid_label = _label(res, w, LUCID)
        cell = next(((r.get("cell") or {}) for r in records if (r.get("cell") or {}).get("workload") == w), {})
        ctx.settings[s] = {"trace": w, "cluster": cell.get("cluster"),
                           "seeds": res.seeds(w, lucid_label) if lucid_label else [],
                           "tables": [write_policy_table(ctx, res, w, f"{s}/policies.csv")]}
        for key, metric in (("jct", "jct_mean"), ("queue", "wait_mean"), ("p999_queue", "wait_p99.9")):
            samples = _paired(res, w, "tiresias", LUCID, metric)
            out[f"tiresias_over_lucid_{key}@{s}"] = Measurement(
                samples=samples, detail=f"Tiresias / Lucid, {metric}, on {w}",
                not_testable=None if samples else f"no Tiresias and Lucid cells on {w}",
                causes=_ablation_causes(res, w, metric))
        best = _best_label(res, w, "jct_mean")
        samples = _paired(res, w, best, LUCID, "jct_mean") if best else []
        out[f"best_baseline_over_lucid_jct@{s}"] = Measurement(
            samples=samples, detail=f"best baseline ({best}) / Lucid, average JCT, on {w}",
            not_testable=None if samples else f"no baseline and Lucid cells on {w}",
            causes=_ablation_causes(res, w, "jct_mean"))
        for a in ABLATIONS:
            for key, metric in (("jct", "jct_mean"), ("queue", "wait_mean")):
                samples = _paired(res, w, a, LUCID, metric)
                out[f"{a}_over_lucid_{key}@{s}"] = Measurement(
                    samples=samples, detail=f"{a} / Lucid, {metric}, on {w}",
                    not_testable=None if samples else f"{a} was not replayed on {w} in this mode")
        samples = _paired(res, w, "qssf", "lucid-noshare", "wait_mean")
        out[f"qssf_over_lucid-noshare_queue@{s}"] = Measurement(
            samples=samples, detail=f"QSSF / Lucid w/o sharing, average queueing delay, on {w}",
            not_testable=None if samples else f"QSSF or lucid-noshare was not replayed on {w} in this mode")
    if ctx.wants("s44-latency"):
        queued = 512 if ctx.quick else 2048
        ctx.progress(f"decision latency (CPU time) with >= {queued:,} jobs queued (one VC of 64 x 8 GPUs, binder on)")
        lat = decision_latency(queued=queued)
        out["decision_p99_ms"] = Measurement(lat["P99 ms"], interval=lat["P99 interval ms"], n=lat["passes"], detail=(
            f"CPU time per scheduling pass: P50 {lat['P50 ms']:.3f} ms, P99 {lat['P99 ms']:.3f} ms, max "
            f"{lat['max ms']:.2f} ms over {lat['passes']} passes with >= {lat['queued >=']:,} queued; interval: "
            "distribution-free 95 % interval of the P99"))
    return out


def decision_latency(queued: int = 2048, nodes: int = 64, seed: int = 0) -> dict:
    """Lucid's orchestrator + binder decision time with ``queued`` jobs waiting in one VC (the paper
    claims < 3 ms at 2,048). The cluster is filled with long jobs at t=0, then ``queued`` more arrive;
    every later completion triggers a scheduling pass over the whole queue (try start, then pack; at most
    ``Lucid.MAX_FAILED_PACKS`` failed packing attempts per pass). Times one pass per completion."""
    import numpy as np
    import pandas as pd

    from features.jobtable import LoadReport, finalize
    from pipelines.replay import ReplaySpec, prepare_replay, run_replay
    from sim.cluster import Cluster, Partition
    from sim.policies.lucid import Lucid
    from sim.workload import build_workload

    rng = np.random.default_rng(seed)
    fill = nodes  # one 8-GPU job per node, ending at spread times
    n = fill + queued + 256
    gpus = np.concatenate([np.full(fill, 8), rng.choice([1, 2, 4, 8], size=n - fill, p=[.6, .2, .1, .1])])
    submit = np.concatenate([np.zeros(fill), np.sort(rng.uniform(1, 100, size=n - fill))])
    duration = np.concatenate([rng.uniform(3600, 7 * 86400, size=fill), rng.lognormal(8, 1.5, size=n - fill)])
    frame = pd.DataFrame({"job_id": [f"j{i}" for i in range(n)], "submit_time": submit, "submit_ts": pd.NaT,
                          "duration": duration, "num_gpus": gpus})
    table = finalize(frame, LoadReport(source="latency", format="synthetic", rows_read=n), path="latency")
    w = build_workload(table, Cluster("latency", [Partition("vc", [8] * nodes, ["x"] * nodes)]))
    seen: list[tuple[int, float]] = []
    original = Lucid.schedule

    def timed(self):
        size = len(self.queue) if not self.is_profiler else -1
        t0 = time.thread_time()
        original(self)
        seen.append((size, time.thread_time() - t0))

    Lucid.schedule = timed
    try:
        # A profiler as large as the VC profiles the whole queue quickly, so the binder sees profiled jobs.
        spec = ReplaySpec(policy=f"lucid:profiler_nodes={nodes},profiler_from=extra,update_interval=0,dynamic=False",
                          failures="none")
        r = run_replay(spec, prepare_replay(spec, built=(table, w))).result
    finally:
        Lucid.schedule = original
    at = np.array([sec for size, sec in seen if size >= queued]) * 1e3
    if not len(at):
        return {"queued >=": queued, "passes": 0, "packs": 0, "P50 ms": float("nan"), "P99 ms": float("nan"),
                "max ms": float("nan"), "P99 interval ms": None}
    return {"queued >=": queued, "passes": len(at), "packs": r.policy_stats.get("lucid_packs", 0),
            "P50 ms": float(np.percentile(at, 50)), "P99 ms": float(np.percentile(at, 99)), "max ms": float(at.max()),
            "P99 interval ms": quantile_interval(list(at), 0.99)}
