"""How prediction quality turns into scheduling quality on Philly.

    python benchmarks/bench_prediction_scheduling.py              # philly-pool (108 x 8 GPUs), ~2 min
    python benchmarks/bench_prediction_scheduling.py --nodes 40   # a busier 40 x 8 pool

Models are trained on the Philly jobs before the last 30 days (about Sep-Oct) and replayed on the last
30 days (about Nov) on philly-pool. Every job's features come from the full trace's past, so the replayed
jobs see the same history a live scheduler would. Predictors: the oracle, noisy oracles
(multiplicative log-normal error, sigma 0.25 / 0.5 / 1 / 2) and each real model. Policies: QSSF (with the
predictor instead of its history estimate), SPJF, SPWF, WCS-Duration. Writes
benchmarks/results/prediction_scheduling/{table.csv,report.md}.
"""
from __future__ import annotations

import logging
import os
import time
import warnings
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
warnings.filterwarnings("ignore")
logging.disable(logging.WARNING)

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
import sys  # noqa: E402
if str(ROOT) not in sys.path:  # this checkout's packages, not an installed copy's
    sys.path.insert(0, str(ROOT))

from evaluation.scores import duration_scores  # noqa: E402
from features.duration import duration_features  # noqa: E402
from features.paths import data_dir  # noqa: E402
from features.traces import load_trace  # noqa: E402
from pipelines import train as T  # noqa: E402
from pipelines.replay import ReplaySpec, prepare_replay, run_replay  # noqa: E402  (the one replay path)
from sim.cluster import load_cluster  # noqa: E402
from sim.predictors import NoisyOraclePredictor  # noqa: E402
from sim.workload import build_workload  # noqa: E402

POLICIES = ["qssf:history=False", "spjf", "spwf", "wcs-duration"]


class Fixed:
    """Predictions made beforehand, looked up by job id."""

    def __init__(self, name: str, by_id: pd.Series):
        self.name, self.by_id = name, by_id

    def predict(self, jobs: pd.DataFrame) -> np.ndarray:
        return self.by_id.reindex(jobs["job_id"].astype(str)).to_numpy(dtype=float)


def main() -> None:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=108, help="8-GPU nodes in the pool (108 = philly-pool); fewer "
                    "nodes make queues, and so predictions, matter more")
    args = ap.parse_args()
    out = ROOT / "benchmarks" / "results" / f"prediction_scheduling_{args.nodes}nodes"
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    table = load_trace(data_dir() / "philly" / "philly_jobs_2017-09-04_2017-11-30.csv.gz")
    frame = table.frame
    X = duration_features(table)
    train, test = T.duration_split(frame, 30.0)
    y = frame["duration"].to_numpy(dtype=float)
    ids = frame["job_id"].astype(str)
    predictors = {"oracle": None}
    for sigma in (0.25, 0.5, 1.0, 2.0):
        predictors[f"noisy sigma={sigma:g}"] = NoisyOraclePredictor(sigma, seed=0)
    for algo in ("lightgbm", "ebm", "rf"):
        model = T.make_duration_model(algo, fast=True).fit(X.loc[train, X.columns[X.notna().any()]], y[train])
        cols = model.columns_
        predictors[f"model {algo}"] = Fixed(algo, pd.Series(model.predict(X[cols]), index=ids))
    for unseen in ("zero", "fallback"):
        from models.tabular import IterationForest

        m = IterationForest(unseen=unseen).fit(X.loc[train, ["group_id", "user"]], y[train])
        predictors[f"A-SRPT RF ({unseen})"] = Fixed(unseen, pd.Series(m.predict(X[["group_id", "user"]]), index=ids))

    test_table = frame[test].reset_index(drop=True)
    from sim.cluster import Cluster, Partition

    pool = load_cluster("philly-pool") if args.nodes == 108 else Cluster(
        f"philly-{args.nodes}x8", [Partition("default", [8] * args.nodes, ["P100"] * args.nodes)])
    w = build_workload(test_table, pool)
    rows = []
    for pname, pred in predictors.items():
        acc = {}
        if pred is not None:
            p = pred.predict(w.frame)
            acc = duration_scores(np.asarray(w.duration), p)
        # failures="none": the Philly table carries failed attempts, which a replay would otherwise inject
        base = ReplaySpec(failures="none")
        prepared = prepare_replay(base, built=(None, w), predictor=pred)  # pred None: the oracle
        for policy in POLICIES:
            s = run_replay(base.with_policy(policy), prepared).summary  # evaluated, identities checked
            rows.append({"predictor": pname, "policy": policy.split(":")[0], "avg JCT h": s["jct_mean"] / 3600,
                         "P95 JCT h": s["jct_p95"] / 3600, "avg wait h": s["wait_mean"] / 3600,
                         "P95 wait h": s["wait_p95"] / 3600, "spearman": acc.get("spearman", 1.0),
                         "log MAE": acc.get("log_mae", 0.0)})
        print(f"{pname:<24} done", flush=True)
    res = pd.DataFrame(rows)
    res.to_csv(out / "table.csv", index=False)
    text = res.to_string(index=False, float_format=lambda v: f"{v:.3f}")
    (out / "report.md").write_text(f"# Prediction quality -> scheduling quality (Philly, last 30 days, "
                                   f"{len(w):,} jobs, {pool.describe()})\n\n```\n{text}\n```\n")
    print(text)
    print(f"\n{time.perf_counter() - t0:.0f} s; wrote {out}/")


if __name__ == "__main__":
    main()
