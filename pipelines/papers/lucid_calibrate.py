"""Fit Lucid's Venus- and Saturn-shaped workloads on the BASELINES of Table 4 (never on Lucid's own numbers).

    python -m pipelines.papers.lucid_calibrate                        # both traces: target / reached / parameters
    python -m pipelines.papers.lucid_calibrate --trace venus --fit    # grid search of the free parameters
    python -m pipelines.papers.lucid_calibrate --trace saturn --fit --grid arrival_scale=0.5,0.7 vc_power=1,1.5

Targets (Table 4, lucid.txt:337-344): the average queueing delay of FIFO, SJF, QSSF and Tiresias (the paper's
baselines as its simulator runs them: Tiresias in 60-s rounds with 62 s per preemption, lucid.txt:462; QSSF
ordering by a LightGBM trained on a separate generated training period, as Lucid's own model is) and the
baselines' mean run time, JCT - queue (the same 3.27 h for every Venus baseline and 1.60 h for every Saturn
one: Table 4's JCT minus its queue). Horus' queue, the P99.9 queues and the mix's mean GPUs per job (against
Helios' summary of the whole trace) are shown, not fitted. ``--table2`` checks Table 2's average durations
(``duration_check``).

Free parameters of a preset (configs/workloads/lucid-<trace>.yaml, ``generator: helios-shaped``):
``arrival_scale`` (arrival rate x this), ``large_scale`` (the weight of jobs of 8 GPUs or more), ``mean_duration``
(the duration scale), ``vc_power`` (how jobs spread over the VCs: weight ~ VC GPUs^vc_power), ``user_share``
(how much of a job's log-duration its user explains: what QSSF's model can learn) and ``size_duration_corr``
(how much longer large jobs run; 0, independent, unless a preset sets it). Everything else comes from the
paper's Table 2 and the Helios data (features/traces/helios_shaped.py). The fit minimises the sum of
|log2(reached / paper)| over the targets; a target is met within a factor of 2, and the fit first maximises the
targets met, then minimises that error. The chosen values are written into the presets by hand, with the fit's
output in the preset's comment; the ledger (`schedcast reproduce lucid`) reports the same targets from its own
baseline cells.
"""
from __future__ import annotations

import argparse
import sys
from typing import Any

import numpy as np

from pipelines.papers.calibration import Target, TraceFits, grid_search, parse_grid, print_fit

TRACES = ("venus", "saturn")
TIRESIAS = "tiresias-rounds:rule=quota,interval=60,ckpt_cost=62"
#: calibration label -> the policy spec the paper's simulator runs (QSSF: with the generated-period model)
BASELINES = {"fifo": "fifo", "sjf": "sjf", "qssf": "qssf:history=false", "horus": "horus", "tiresias": TIRESIAS}


def _targets(row_jct: int, row_q: int, row_tail: int, jct: tuple, queue: tuple, tail: tuple,
             helios: tuple[str, float]) -> list[Target]:
    """Table 4's columns: FIFO, SJF, QSSF, Horus, Tiresias (hours); ``helios``: the trace's row of
    helios/cluster_summary.csv and its mean GPUs per GPU job (avg_gpu_num), shown beside the preset's mix."""
    fifo, sjf, qssf, horus, tiresias = queue
    c = f"lucid.txt:{row_q}"
    return [Target("fifo_queue_h", "FIFO average queueing delay, h", fifo, c),
            Target("sjf_queue_h", "SJF average queueing delay, h", sjf, c),
            Target("qssf_queue_h", "QSSF average queueing delay, h", qssf, c),
            Target("tiresias_queue_h", "Tiresias average queueing delay, h", tiresias, c),
            Target("run_h", "baselines' mean run time (JCT - queue), h", round(jct[0] - fifo, 2),
                   f"lucid.txt:{row_jct}, {row_q}"),
            Target("horus_queue_h", "Horus average queueing delay, h (shown, not fitted)", horus, c, 0.0),
            Target("fifo_p999_h", "FIFO P99.9 queueing delay, h (shown, not fitted)", tail[0], f"lucid.txt:{row_tail}", 0.0),
            Target("tiresias_p999_h", "Tiresias P99.9 queueing delay, h (shown, not fitted)", tail[4],
                   f"lucid.txt:{row_tail}", 0.0),
            Target("mean_gpus", "mean GPUs per job of the mix (shown, not fitted)", helios[1],
                   f"helios/cluster_summary.csv: {helios[0]} avg_gpu_num", 0.0)]


TARGETS: dict[str, list[Target]] = {
    "venus": _targets(337, 340, 343, (18.57, 5.86, 5.15, 4.41, 4.09), (15.30, 2.59, 1.88, 1.14, 0.82),
                      (163.07, 89.47, 352.89, 58.80, 55.39), ("Venus", 6.736)),
    "saturn": _targets(338, 341, 344, (14.21, 2.36, 2.41, 2.13, 1.89), (12.61, 0.76, 0.80, 0.53, 0.28),
                       (56.39, 39.20, 137.82, 36.03, 26.62), ("Saturn", 4.01)),
}
FREE = ("arrival_scale", "large_scale", "mean_duration", "vc_power", "user_share", "size_duration_corr", "jobs")


def preset(trace: str) -> str:
    if trace not in TRACES:
        raise ValueError(f"unknown trace {trace!r}; choose one of: {', '.join(TRACES)}")
    return f"lucid-{trace}"


def preset_params(trace: str) -> tuple[dict[str, Any], str]:
    """(the generator's parameters, the cluster) of the trace's preset."""
    from features.traces.synthetic import read_preset

    data = dict(read_preset(preset(trace)))
    cluster = data.pop("cluster")
    for key in ("name", "generator", "source"):
        data.pop(key, None)
    return data, cluster


def mean_gpus(params: dict[str, Any]) -> float:
    """The mean GPUs per job of a preset's mix (after ``large_scale``): the ``mean_gpus`` row."""
    from features.traces.helios_shaped import HeliosShapedSpec

    return HeliosShapedSpec(**params).mean_gpus


def figures(summaries: dict[str, dict[str, Any]]) -> dict[str, float]:
    """The targets' measures (hours) from the baselines' replay summaries."""
    h = 3600.0
    out = {f"{b}_queue_h": s["wait_mean"] / h for b, s in summaries.items()}
    out["run_h"] = (summaries["fifo"]["jct_mean"] - summaries["fifo"]["wait_mean"]) / h
    out["fifo_p999_h"] = summaries["fifo"]["wait_p99.9"] / h
    out["tiresias_p999_h"] = summaries["tiresias"]["wait_p99.9"] / h
    return out


def measure(trace: str, params: dict[str, Any], seeds: list[int], cluster: str, data_dir: str | None = None,
            algo: str = "lightgbm") -> dict[str, float]:
    """The baselines' figures on the generated trace, averaged over ``seeds`` (QSSF's model trained once, on
    the generated training period of these parameters)."""
    from pipelines.replay import ReplaySpec, WorkloadSource, prepare_replay, run_replay
    from sim.policies.lucid.generated import LucidGenerated

    model = LucidGenerated(params=dict(params), algo=algo)
    rows = []
    for seed in seeds:
        src = WorkloadSource(generator="helios-shaped", params=dict(params), cluster=cluster, data_dir=data_dir)
        built = src.build(seed=seed)
        summaries = {}
        for label, policy in BASELINES.items():
            spec = ReplaySpec(workload=src, policy=policy, seed=seed)
            prepared = prepare_replay(spec, built=built, predictor=model if label == "qssf" else None)
            summaries[label] = run_replay(spec, prepared).summary
        rows.append(figures(summaries))
    return {**{k: float(np.mean([r[k] for r in rows])) for k in rows[0]}, "mean_gpus": mean_gpus(params)}


#: error / met / table of a fit on one trace (calibration.TraceFits)
_FITS = TraceFits(TARGETS)
error, met, table = _FITS.error, _FITS.met, _FITS.table


#: Table 2's "Avg. Duration" (s) as printed (lucid.txt:281-282)
TABLE2_DURATION = {"saturn": (13_006.0, "lucid.txt:281"), "venus": (5_419.0, "lucid.txt:282")}


def duration_check(data_dir: str | None = None) -> dict[str, dict[str, float]]:
    """Table 2's average durations against what else says how long Venus' and Saturn's GPU jobs run (s):
    Table 4's baselines' JCT - queue (``table4``: the same trace replayed, lucid.txt:337-341), Helios' own
    summary of the full traces (``helios_summary``: helios/cluster_summary.csv, avg_run_time_gpu, Apr-Sep 2020)
    and, for Venus, Little's law on its real series (``little_lower_bound``: the submission series of Apr-Aug
    2020 in helios/, the running GPU jobs counted from the starts and ends, at least 0 at the emptiest instant,
    over the jobs started per second: a lower bound of the mean run time)."""
    import pandas as pd

    from features.paths import resolve_data_path
    from features.traces.helios_shaped import SERIES_BIN_S, SERIES_FILE

    h = 3600.0
    paths = {name: resolve_data_path(name, data_dir) for name in ("helios/cluster_summary.csv", SERIES_FILE)}
    for name, path in paths.items():
        if not path.exists():
            raise FileNotFoundError(f"{name} not found ({path}; set --data-dir)")
    summary = pd.read_csv(paths["helios/cluster_summary.csv"]).set_index("id")
    series = pd.read_csv(paths[SERIES_FILE], usecols=["start_gpu_job", "end_gpu_job"])
    running = (series["start_gpu_job"] - series["end_gpu_job"]).cumsum().to_numpy(dtype=float)
    rate = series["start_gpu_job"].sum() / (len(series) * SERIES_BIN_S)
    out = {}
    for trace in TRACES:
        run = {t.key: t.paper for t in TARGETS[trace]}["run_h"]
        out[trace] = {"table2": TABLE2_DURATION[trace][0], "table4": run * h,
                      "helios_summary": float(summary.loc[trace.capitalize(), "avg_run_time_gpu"])}
    out["venus"]["little_lower_bound"] = float((running - running.min()).mean() / rate)
    return out


def _default(key: str) -> Any:
    from features.traces.helios_shaped import HeliosShapedSpec

    return HeliosShapedSpec.model_fields[key].default


def _parse_grid(items: list[str]) -> dict[str, list[float]]:
    return parse_grid(items, FREE)


DEFAULT_GRID = {"arrival_scale": [0.5, 0.75, 1.0], "vc_power": [1.0, 1.5, 2.0]}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m pipelines.papers.lucid_calibrate", description=__doc__.split("\n")[0])
    p.add_argument("--trace", choices=TRACES, action="append", help="default: both")
    p.add_argument("--fit", action="store_true", help="grid-search the free parameters")
    p.add_argument("--grid", nargs="*", default=[], metavar="KEY=V1,V2")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    p.add_argument("--data-dir", default=None)
    p.add_argument("--table2", action="store_true", help="only check Table 2's average durations against Table 4, "
                   "Helios' summary and Venus' series (duration_check; no replay)")
    args = p.parse_args(argv)
    if args.table2:
        try:
            check = duration_check(args.data_dir)
        except FileNotFoundError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        print("Table 2's average durations (s) against the other evidence:")
        for trace, row in check.items():
            print(f"  {trace:7s} " + ", ".join(f"{k} {v:,.0f}" for k, v in row.items()))
        return 0
    try:
        grid = _parse_grid(args.grid) or DEFAULT_GRID
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for trace in args.trace or TRACES:
        base, cluster = preset_params(trace)
        if args.fit:
            base, reached = grid_search(trace, TARGETS[trace], grid, base,
                                        lambda params: measure(trace, params, args.seeds, cluster, data_dir=args.data_dir))
        else:
            reached = measure(trace, base, args.seeds, cluster, data_dir=args.data_dir)
        print(f"\n{trace} (seeds {args.seeds}; preset lucid-{trace} on {cluster}: "
              + ", ".join(f"{k} {base.get(k, _default(k))}" for k in FREE) + ")")
        print_fit(table(trace, reached), width=52, paper_digits=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
