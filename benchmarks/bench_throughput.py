"""Rolling-origin evaluation of the throughput forecast (Venus GPU-job submissions, next 10 minutes).

    python benchmarks/bench_throughput.py                  # months and weeks, every model (~5-10 min on 2 cores)
    python benchmarks/bench_throughput.py --no-weeks       # monthly origins only
    python benchmarks/bench_throughput.py --models lightgbm-l1 blend-last

Why: one holdout month is a noisy judge (the GA2M beat the last value on August and lost to it on the
unseen September). For every origin (each month, and each week, with at least ``--min-history`` of
feature rows before it) every model is trained on all rows before the origin and scored on the
origin's rows, next to the naive baselines (last value, same time yesterday). The default is the model
with the lowest mean MAE over the monthly origins; the weekly origins check that the choice is stable.
Writes benchmarks/results/throughput/: report.md, per_origin.csv (one row per origin and model),
summary.csv and mae_by_origin.png.
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Callable

os.environ.setdefault("OMP_NUM_THREADS", "1")
warnings.filterwarnings("ignore")
logging.disable(logging.WARNING)

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # this checkout's packages, not an installed copy's
    sys.path.insert(0, str(ROOT))

from features.series import load_throughput, rolling_origins, throughput_features  # noqa: E402
from models.tabular import make_throughput_model  # noqa: E402

BASELINES = {"last value": "lag_0", "same time yesterday": "lag_1d"}
# name -> (make_throughput_model algo, params, what it is)
MODELS: dict[str, tuple[str, dict, str]] = {
    "ebm": ("ebm", {}, "GA2M, least squares (old default)"),
    "lightgbm": ("lightgbm", {}, "LightGBM, least squares"),
    "rf": ("rf", {}, "random forest, least squares"),
    "lightgbm-l1": ("lightgbm-l1", {}, "LightGBM, L1 loss (median)"),
    "lightgbm-q50": ("lightgbm-l1", {"objective": "quantile", "alpha": 0.5}, "LightGBM, quantile 0.5 loss"),
    "rf-log": ("rf-log", {}, "bounded random forest on log1p counts"),
    "blend-last": ("blend-last", {}, "w x lightgbm-l1 + (1 - w) x last value, w by inner rolling origins"),
}
MEAN_OF = {"mean(lightgbm-l1, rf-log)": ("lightgbm-l1", "rf-log")}


def evaluate(X: pd.DataFrame, y: pd.Series, origins: list[tuple[str, np.ndarray, np.ndarray]], kind: str,
             models: list[str], log: Callable[[str], None] = print) -> pd.DataFrame:
    """MAE of every model and baseline on every origin (each model trained on the rows before it)."""
    rows = []
    yv = y.to_numpy(dtype=float)
    for label, train, test in origins:
        base = {"origin": label, "kind": kind, "train_rows": int(train.sum()), "test_rows": int(test.sum()),
                "test_mean": float(yv[test].mean())}
        here = []
        for name, col in BASELINES.items():
            here.append({**base, "model": name, "mae": float(np.mean(np.abs(yv[test] - X[col].to_numpy()[test]))),
                         "train_cpu_s": 0.0, "weight": np.nan})
        preds, secs = {}, {}
        for name in models:
            algo, params, _ = MODELS[name]
            t0 = time.process_time()
            model = make_throughput_model(algo, True, **params).fit(X[train], yv[train])
            secs[name] = time.process_time() - t0
            preds[name] = np.asarray(model.predict(X[test]), dtype=float)
            here.append({**base, "model": name, "mae": float(np.mean(np.abs(yv[test] - preds[name]))),
                         "train_cpu_s": secs[name], "weight": getattr(model, "weight_", np.nan)})
        for name, parts in MEAN_OF.items():
            if all(q in preds for q in parts):
                p = np.mean([preds[q] for q in parts], axis=0)
                here.append({**base, "model": name, "mae": float(np.mean(np.abs(yv[test] - p))),
                             "train_cpu_s": sum(secs[q] for q in parts), "weight": np.nan})
        best = min(here, key=lambda r: r["mae"])
        log(f"{kind} {label}: last value {here[0]['mae']:.3f}, best {best['model']} {best['mae']:.3f}")
        rows += here
    return pd.DataFrame(rows)


def summarise(results: pd.DataFrame) -> pd.DataFrame:
    """Per model: mean MAE over monthly and weekly origins, wins over the last value, mean rank."""
    out = {}
    for kind, frame in results.groupby("kind"):
        table = frame.pivot(index="origin", columns="model", values="mae")
        out[f"mean_mae_{kind}"] = table.mean()
        out[f"worst_gap_to_last_{kind}"] = (table.sub(table["last value"], axis=0)).max()
        out[f"beats_last_{kind}"] = (table.lt(table["last value"], axis=0)).sum().astype(int)
        out[f"ratio_to_last_{kind}"] = table.div(table["last value"], axis=0).mean()
        out[f"mean_rank_{kind}"] = table.rank(axis=1).mean()
    summary = pd.DataFrame(out)
    summary["train_cpu_s"] = results.groupby("model")["train_cpu_s"].mean()
    return summary.sort_values(summary.columns[0])


def choose(candidates: pd.DataFrame) -> str:
    """The default: lowest mean MAE over the monthly origins (to 3 decimals: closer is a tie), ties broken
    by the mean over the weekly origins, then by training time."""
    keys = [candidates["mean_mae_month"].round(3)]
    if "mean_mae_week" in candidates:
        keys.append(candidates["mean_mae_week"].round(3))
    keys.append(candidates["train_cpu_s"])
    order = pd.DataFrame({f"k{i}": k for i, k in enumerate(keys)}).sort_values([f"k{i}" for i in range(len(keys))])
    return str(order.index[0])


def stability(results: pd.DataFrame, summary: pd.DataFrame, chosen: str) -> str:
    """One sentence: how the chosen model ranks on each kind of origin and how often it beats the last value."""
    parts = []
    for kind, frame in results.groupby("kind", sort=False):
        table = frame.pivot(index="origin", columns="model", values="mae")
        means = table.mean().sort_values()
        best_share = int((table.idxmin(axis=1) == chosen).sum())
        parts.append(f"{kind}ly origins ({len(table)}): rank {list(means.index).index(chosen) + 1} of {len(means)} "
                     f"by mean MAE ({means[chosen]:.3f}; best {means.index[0]} {means.iloc[0]:.3f}), best on "
                     f"{best_share}, beats the last value on {int(summary.at[chosen, f'beats_last_{kind}'])}")
    return "; ".join(parts) + "."


def full_fit_seconds(X: pd.DataFrame, y: pd.Series, name: str) -> tuple[float, float]:
    """(CPU s, wall s) to train ``name`` on every row of the series (what a training run costs)."""
    algo, params, _ = MODELS[name]
    t0, w0 = time.process_time(), time.perf_counter()
    make_throughput_model(algo, True, **params).fit(X, y)
    return time.process_time() - t0, time.perf_counter() - w0


def plot(results: pd.DataFrame, models: list[str], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kinds = [k for k in ("month", "week") if k in set(results["kind"])]
    fig, axes = plt.subplots(1, len(kinds), figsize=(6.5 * len(kinds), 4.2), squeeze=False)
    for ax, kind in zip(axes[0], kinds):
        table = results[results["kind"] == kind].pivot(index="origin", columns="model", values="mae")
        for name in [*BASELINES, *models]:
            if name in table:
                style = "--" if name in BASELINES else "-"
                ax.plot(table.index, table[name], style, marker="o", ms=3, label=name,
                        lw=2.2 if name == "last value" else 1.2)
        ax.set_title(f"next-10-min MAE by {kind}ly origin (trained on all before)")
        ax.set_xlabel(f"origin ({kind} scored)")
        ax.set_ylabel("MAE (GPU jobs / 10 min)")
        ax.tick_params(axis="x", rotation=45)
        ax.grid(alpha=0.3)
    axes[0][-1].legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def report(results: pd.DataFrame, summary: pd.DataFrame, chosen: str, fit_secs: dict, args, path: Path) -> None:
    def table(frame: pd.DataFrame, digits: int = 3) -> str:
        frame = frame.copy()
        cols = [str(c) for c in frame.columns]
        lines = ["| " + " | ".join([frame.index.name or ""] + cols) + " |", "|" + "---|" * (len(cols) + 1)]
        ints = {c for c in frame.columns if pd.api.types.is_integer_dtype(frame[c])}
        for idx in frame.index:
            cells = [str(int(frame.at[idx, c])) if c in ints else f"{frame.at[idx, c]:.{digits}f}" for c in frame.columns]
            lines.append("| " + " | ".join([str(idx)] + cells) + " |")
        return "\n".join(lines)

    order = [*BASELINES, *[m for m in summary.index if m not in BASELINES]]
    text = [
        "# Throughput forecast: rolling-origin evaluation",
        "",
        f"Command: `{' '.join(['python benchmarks/bench_throughput.py', *sys.argv[1:]])}`",
        "",
        f"Series: Venus GPU-job submissions per 10 minutes ({args.data}), target `submit_gpu_job` "
        f"{args.horizon} bin(s) ahead. Each origin trains on every feature row before it (at least "
        f"{args.min_history} of history) and scores the origin's rows. MAE in GPU jobs per 10 minutes.",
        "",
        f"**Chosen default: `{chosen}`** ({MODELS[chosen][2]}): lowest mean MAE over the monthly origins (ties to 3 decimals broken by the weekly mean, then training time). "
        f"{stability(results, summary, chosen)} Training on the whole series: "
        f"{fit_secs[chosen][0]:.1f} s CPU ({fit_secs[chosen][1]:.1f} s wall on this machine, 1 thread).",
        "",
        "## Per month (trained on all months before)",
        "",
    ]
    for kind in ("month", "week"):
        frame = results[results["kind"] == kind]
        if frame.empty:
            continue
        if kind == "week":
            text += ["## Per week (trained on all weeks before)", ""]
        t = frame.pivot(index="origin", columns="model", values="mae")
        t = t[[c for c in order if c in t.columns]]
        t.loc["mean"] = t.mean()
        t.index.name = "origin"
        text += [table(t), ""]
        if "blend-last" in set(frame["model"]):
            w = frame[frame["model"] == "blend-last"].set_index("origin")["weight"]
            text += [f"blend-last weight on the model per origin: {', '.join(f'{k} {v:.1f}' for k, v in w.items())}",
                     ""]
    s = summary.copy()
    s.index.name = "model"
    text += ["## Summary (mean over origins; beats_last = origins where the model's MAE < last value's)", "",
             table(s), "",
             "Full-series training time (CPU s, wall s): " + ", ".join(
                 f"{k} {v[0]:.1f} / {v[1]:.1f}" for k, v in fit_secs.items()), ""]
    path.write_text("\n".join(text))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default=None, help="data directory (default: ../shared/data or $SCHEDCAST_DATA)")
    p.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    p.add_argument("--horizon", type=int, default=1)
    p.add_argument("--min-history", default="50D", help="feature rows needed before an origin (pandas offset)")
    p.add_argument("--no-weeks", action="store_true", help="monthly origins only")
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "throughput")
    args = p.parse_args(argv)

    series = load_throughput(data=args.data)
    args.data = args.data or "shared data"
    X, y = throughput_features(series, horizon=args.horizon)
    frames = [evaluate(X, y, rolling_origins(X.index, "MS", args.min_history), "month", args.models)]
    if not args.no_weeks:
        frames.append(evaluate(X, y, rolling_origins(X.index, "W-MON", args.min_history, min_test_rows=500),
                               "week", args.models))
    results = pd.concat(frames, ignore_index=True)
    summary = summarise(results)
    candidates = summary.drop(index=[b for b in BASELINES if b in summary.index])
    candidates = candidates[candidates.index.isin(args.models)]
    chosen = choose(candidates)
    fit_secs = {name: full_fit_seconds(X, y, name) for name in dict.fromkeys([chosen, *args.models])}
    args.out.mkdir(parents=True, exist_ok=True)
    results.to_csv(args.out / "per_origin.csv", index=False)
    summary.to_csv(args.out / "summary.csv", index_label="model")
    plot(results, args.models, args.out / "mae_by_origin.png")
    report(results, summary, chosen, fit_secs, args, args.out / "report.md")
    pd.set_option("display.width", 200)
    print(summary.round(3).to_string())
    print(f"chosen default: {chosen}; report: {args.out / 'report.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
