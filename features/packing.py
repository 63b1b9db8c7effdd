"""Profile and interference data for Lucid's packing decisions (Affine-jobpair Binder).

Solo profiles (Lucid, RTX 3090): gpu_util, gmem_util, gmem (MB), amp and Lucid's sharing label
(0 tiny, 1 medium, 2 jumbo). Pair labels follow the paper's speed thresholds: a job is *tiny* if the
jobs it shares a GPU with keep >= 0.95 of their solo speed on average, *medium* if >= 0.85, else
*jumbo*. Gavel's space-sharing throughputs give a second, independent set of measured pairs.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from features.jobtable import TraceError
from features.paths import resolve_data_path

SOLO = "profiles/lucid/single_data.csv"
PAIRS = "profiles/lucid/colocate_info.csv"
GAVEL = "profiles/gavel/simulation_throughputs_flat.csv"
FEATURES = ["gpu_util", "gmem_util", "gmem", "amp"]
TINY, MEDIUM = 0.95, 0.85


def _read(rel: str, data) -> pd.DataFrame:
    path = resolve_data_path(rel, data)
    if not path.exists():
        raise TraceError(path, "file not found")
    return pd.read_csv(path)


def load_solo(data: str | Path | None = None) -> pd.DataFrame:
    """One row per (model, dataset, batch size, amp) with solo features and Lucid's label."""
    solo = _read(SOLO, data)
    solo["job_key"] = solo["model"] + "|" + solo["batchsize"].astype(str) + "|" + solo["amp"].astype(str)
    return solo


def pair_labels(data: str | Path | None = None) -> pd.DataFrame:
    """Per solo job: mean speed its partners keep when sharing a GPU with it, and the label from the
    0.95 / 0.85 thresholds. Jobs never measured in a pair are absent."""
    pairs = _read(PAIRS, data)
    a = pd.DataFrame({"job_key": pairs["model1"] + "|" + pairs["batchsize1"].astype(str) + "|" +
                      pairs["amp1"].astype(str), "partner_speed": pairs["speed2"]})
    b = pd.DataFrame({"job_key": pairs["model2"] + "|" + pairs["batchsize2"].astype(str) + "|" +
                      pairs["amp2"].astype(str), "partner_speed": pairs["speed1"]})
    both = pd.concat([a, b])
    agg = both.groupby("job_key")["partner_speed"].agg(["mean", "count"]).rename(
        columns={"mean": "partner_speed", "count": "pairs"})
    agg["pair_label"] = np.where(agg["partner_speed"] >= TINY, 0, np.where(agg["partner_speed"] >= MEDIUM, 1, 2))
    return agg.reset_index()


def packing_dataset(data: str | Path | None = None, labels: str = "solo") -> pd.DataFrame:
    """Features + label per profiled job; labels='solo' (Lucid's column) or 'pairs' (thresholds)."""
    solo = load_solo(data)
    if labels == "solo":
        solo["target"] = solo["label"].astype(int)
        return solo
    if labels == "pairs":
        merged = solo.merge(pair_labels(data), on="job_key", how="inner")
        merged["target"] = merged["pair_label"].astype(int)
        return merged
    raise ValueError("labels must be 'solo' or 'pairs'")


def load_gavel_pairs(data: str | Path | None = None) -> pd.DataFrame:
    """Gavel pairs with normalised speeds (pair throughput / solo throughput, same GPU type)."""
    g = _read(GAVEL, data)
    solo = g[g["job_b"].isna()].set_index(["gpu_type", "job_a", "scale_a"])["throughput_a"]
    pairs = g[g["job_b"].notna()].copy()
    pairs["solo_a"] = [solo.get((t, a, s), np.nan) for t, a, s in zip(pairs.gpu_type, pairs.job_a, pairs.scale_a)]
    pairs["solo_b"] = [solo.get((t, b, s), np.nan) for t, b, s in zip(pairs.gpu_type, pairs.job_b, pairs.scale_b)]
    pairs["speed_a"] = pairs["throughput_a"] / pairs["solo_a"]
    pairs["speed_b"] = pairs["throughput_b"] / pairs["solo_b"]
    return pairs.dropna(subset=["speed_a", "speed_b"])
