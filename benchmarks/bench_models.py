"""Train and evaluate every model on the shared data with time-based splits; print accuracy and time.

    python benchmarks/bench_models.py                    # about 8-10 minutes on 2 cores (DeepAR ~5 of them)
    python benchmarks/bench_models.py --deepar-epochs 10 # quicker, DeepAR under-trained
    python benchmarks/bench_models.py --register         # also log / register every model in MLflow

Splits (relative to each data set's end): Philly jobs of the last 30 days (about Nov) vs before; Venus
throughput last 31 days (Aug) vs Apr-Jul; Earth demand last 7 days vs the 14 before; packing profiles
by leave-one-model-out. Writes benchmarks/results/models/ (CSV tables, report.md).
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
import time
import warnings
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
warnings.filterwarnings("ignore")
logging.disable(logging.WARNING)

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # this checkout's packages, not an installed copy's
    sys.path.insert(0, str(ROOT))

from features.paths import data_dir  # noqa: E402
from features.series import load_demand, load_throughput  # noqa: E402
from features.traces import load_trace  # noqa: E402
from pipelines import train as T  # noqa: E402


def _row(task, model, metrics, keys, secs, **extra):
    return {"task": task, "model": model, **{k: metrics.get(k, np.nan) for k in keys}, "train_s": secs, **extra}


def durations(data: Path, register) -> pd.DataFrame:
    table = load_trace(data / "philly" / "philly_jobs_2017-09-04_2017-11-30.csv.gz")
    keys = ["mae", "log_mae", "spearman", "r2"]
    rows = []
    for algo, params, fast in (("lightgbm", {}, True), ("rf", {}, True), ("ebm", {"interactions": 5, "outer_bags": 4},
                                                                          True)):
        r = T.train_duration(table, algo=algo, fast=fast, **params)
        register(r)
        rows.append(_row("duration (Philly, last 30 d)", algo, r.metrics, keys, r.train_seconds))
        if algo == "lightgbm":
            for name, base in r.baselines.items():
                rows.append(_row("duration (Philly, last 30 d)", f"baseline: {name}", base, keys, 0.0))
    for unseen in ("zero", "fallback"):
        r = T.train_iterations(table, unseen=unseen)
        register(r)
        rows.append(_row("duration (Philly, last 30 d)", f"A-SRPT RF, unseen={unseen}", r.metrics, keys,
                         r.train_seconds, unseen_share=r.metrics["unseen_share"]))
    out = pd.DataFrame(rows)
    out["mae"] = out["mae"] / 3600.0
    return out.rename(columns={"mae": "mae_h"})


def throughput(data: Path, register) -> pd.DataFrame:
    series = load_throughput(data=data)
    keys = ["mae", "rmse", "r2"]
    rows = []
    for horizon in (1, 6):
        for algo in ("ebm", "lightgbm", "rf"):
            params = {"interactions": 5, "outer_bags": 4} if algo == "ebm" else {}
            r = T.train_throughput(series, algo=algo, horizon=horizon, **params)
            if horizon == 1:
                register(r)
            rows.append(_row(f"throughput (Venus Aug, +{horizon * 10} min)", algo, r.metrics, keys, r.train_seconds))
        for name, base in r.baselines.items():
            rows.append(_row(f"throughput (Venus Aug, +{horizon * 10} min)", f"baseline: {name}", base, keys, 0.0))
    return pd.DataFrame(rows)


def packing(data: Path, register) -> pd.DataFrame:
    rows = []
    for labels in ("solo", "pairs"):
        r = T.train_packing(data, labels=labels)
        if labels == "solo":
            register(r)
        rows.append({"task": "packing", "model": f"tree, {labels} labels", **{k: r.metrics[k] for k in (
            "accuracy", "macro_f1", "random_split_accuracy", "train_accuracy", "ccp_alpha")}, "train_s": r.train_seconds})
    return pd.DataFrame(rows)


def demand(data: Path, register, deepar_epochs: int, seeds: int) -> pd.DataFrame:
    d, attrs = load_demand(data=data, freq="10min")
    keys = ["mae", "ql_0.9", "ql_0.95", "maqe_0.9", "maqe_0.95", "coverage_0.9", "coverage_0.95", "crps"]
    rows = []
    for algo in ("orglinear", "dlinear", "seasonal-naive", "gfs-e", "deepar"):
        params = {"max_epochs": deepar_epochs} if algo == "deepar" else {}
        runs = []
        for seed in range(seeds if algo in ("orglinear", "dlinear") else 1):
            if algo in ("orglinear", "dlinear", "deepar"):
                params["seed"] = seed
            runs.append(T.train_demand(d, attrs, algo=algo, **params))
        register(runs[0])
        metrics = {k: float(np.mean([r.metrics.get(k, np.nan) for r in runs])) for k in keys}
        secs = float(np.mean([r.train_seconds for r in runs]))
        rows.append(_row("demand (Earth, last 7 d, 10 min, +6 h)", algo + (f" (mean of {len(runs)} seeds)"
                         if len(runs) > 1 else ""), metrics, keys, secs))
    out = pd.DataFrame(rows)
    deepar_s = out.loc[out["model"].str.startswith("deepar"), "train_s"].iloc[0]
    out["train_%_of_deepar"] = 100 * out["train_s"] / deepar_s
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir")
    ap.add_argument("--deepar-epochs", type=int, default=100, help="GluonTS' default is 100")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--register", action="store_true")
    ap.add_argument("--tracking-uri")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "models"))
    args = ap.parse_args()
    data = data_dir(args.data_dir)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    def register(result):
        if args.register:
            from models.registry import configure

            configure(args.tracking_uri)
            T.log_result(result)

    t0 = time.perf_counter()
    sections = {}
    for name, fn in (("durations", lambda: durations(data, register)), ("throughput", lambda: throughput(data, register)),
                     ("packing", lambda: packing(data, register)),
                     ("demand", lambda: demand(data, register, args.deepar_epochs, args.seeds))):
        ts = time.perf_counter()
        frame = fn()
        sections[name] = frame
        frame.to_csv(out / f"{name}.csv", index=False)
        print(f"\n## {name} ({time.perf_counter() - ts:.0f} s)\n" + frame.to_string(index=False, float_format=lambda v: f"{v:.4g}"),
              flush=True)
    total = time.perf_counter() - t0
    lines = ["# Model benchmark", "", f"Command: `{' '.join(sys.argv)}`; total {total:.0f} s.", ""]
    for name, frame in sections.items():
        lines += [f"## {name}", "", "```", frame.to_string(index=False, float_format=lambda v: f"{v:.4g}"), "```", ""]
    (out / "report.md").write_text("\n".join(lines))
    print(f"\ntotal {total:.0f} s; wrote {out}/")


if __name__ == "__main__":
    main()
