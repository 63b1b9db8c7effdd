"""Job profiles and GPU-sharing interference for packing policies (Lucid, ASPLOS '23).

:class:`PairInterference` is the same data as a performance model (sim.performance) for jobs that
share GPUs by fraction.

Every job gets a workload profile (model, batch size, AMP) from Lucid's solo measurements
(profiles/lucid/single_data.csv: GPU utilisation, GPU memory utilisation, GPU memory, sharing label).
When two jobs share GPUs each runs at the measured normalised speed of that pair
(profiles/lucid/colocate_info.csv). Pairs never measured get a speed from a model fitted on the
measured pairs: speed = a + b x (summed GPU utilisation / 100), by least squares, clipped to [0.2, 1]
(Lucid Fig. 2a: interference grows with the pair's combined utilisation).

Hierarchical sampling: a job's model is drawn with larger (GPU-time) jobs leaning to heavier models
(larger GPU memory: BERT, ResNet-50, Transformer), then its batch size / AMP uniformly among that model's
measured rows. Seeded.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from features.jobtable import TraceError
from features.paths import resolve_data_path
from sim.speed import PerformanceModel


@dataclass
class InterferenceModel:
    solo: pd.DataFrame  # indexed by job_key: model, batchsize, amp, gpu_util, gmem_util, gmem, label
    pairs: dict[tuple[str, str], tuple[float, float]]
    coef: tuple[float, float]  # a, b of the fallback speed model
    gpu_memory_mb: float = 24576.0  # RTX 3090, where the profiles were measured

    @classmethod
    def load(cls, data: str | Path | None = None) -> "InterferenceModel":
        """Read and fit once per data directory (a Lucid replay asks for it when preparing the workload
        and again when the policy starts); callers get their own copy, so they may change it."""
        from copy import copy

        return copy(_load_cached(str(resolve_data_path("profiles/lucid", data))))

    @classmethod
    def _read(cls, data: str | Path | None = None) -> "InterferenceModel":
        solo_path = resolve_data_path("profiles/lucid/single_data.csv", data)
        pair_path = resolve_data_path("profiles/lucid/colocate_info.csv", data)
        for p in (solo_path, pair_path):
            if not p.exists():
                raise TraceError(p, "file not found (Lucid profiles are needed for packing policies)")
        solo = pd.read_csv(solo_path)
        solo["job_key"] = solo["model"] + "|" + solo["batchsize"].astype(str) + "|" + solo["amp"].astype(str)
        solo = solo.drop_duplicates("job_key").set_index("job_key")
        raw = pd.read_csv(pair_path)
        k1 = raw["model1"] + "|" + raw["batchsize1"].astype(str) + "|" + raw["amp1"].astype(str)
        k2 = raw["model2"] + "|" + raw["batchsize2"].astype(str) + "|" + raw["amp2"].astype(str)
        pairs: dict[tuple[str, str], tuple[float, float]] = {}
        for a, b, s1, s2 in zip(k1, k2, raw["speed1"], raw["speed2"]):
            pairs.setdefault((a, b), (float(s1), float(s2)))
            pairs.setdefault((b, a), (float(s2), float(s1)))
        # Fallback: both jobs' speeds against the pair's summed utilisation.
        x = np.concatenate([raw["gpu_util"].to_numpy(), raw["gpu_util"].to_numpy()]) / 100.0
        y = np.concatenate([raw["speed1"].to_numpy(), raw["speed2"].to_numpy()])
        b, a = np.polyfit(x, y, 1)
        return cls(solo, pairs, (float(a), float(b)))

    def speeds(self, key_a: str, key_b: str) -> tuple[float, float]:
        """Normalised speeds (job a, job b) when a and b share GPUs."""
        if (key_a, key_b) in self.pairs:
            return self.pairs[(key_a, key_b)]
        util = (self.solo.at[key_a, "gpu_util"] + self.solo.at[key_b, "gpu_util"]) / 100.0
        s = float(np.clip(self.coef[0] + self.coef[1] * util, 0.2, 1.0))
        return s, s

    def measured(self, key_a: str, key_b: str) -> bool:
        return (key_a, key_b) in self.pairs

    def assign(self, work: np.ndarray, seed: int, strength: float = 1.0) -> list[str]:
        """A profile key per job: models by size (GPU memory) weighted towards large jobs, then a
        uniformly drawn measured (batch size, AMP) row of that model."""
        rng = np.random.default_rng(seed)
        models = self.solo.groupby("model")["gmem"].mean().sort_values()
        z = np.log(models.to_numpy())
        z = (z - z.mean()) / (z.std() or 1.0)
        n = len(work)
        q = (np.argsort(np.argsort(work, kind="stable"), kind="stable") + 0.5) / max(n, 1)
        logits = strength * np.outer(q - 0.5, z) * 2.0
        probs = np.exp(logits - logits.max(axis=1, keepdims=True))
        probs /= probs.sum(axis=1, keepdims=True)
        u = rng.random(n)
        choice = np.minimum((probs.cumsum(axis=1) < u[:, None]).sum(axis=1), len(models) - 1)
        rows = {m: self.solo.index[self.solo["model"] == m].tolist() for m in models.index}
        pick = rng.random(n)
        names = models.index.to_numpy()
        return [rows[names[c]][int(p * len(rows[names[c]]))] for c, p in zip(choice, pick)]


@lru_cache(maxsize=4)
def _load_cached(profiles_dir: str) -> InterferenceModel:
    return InterferenceModel._read(Path(profiles_dir).parents[1])


class PairInterference(PerformanceModel):
    """Lucid's pair interference as a performance model (sim.performance): a job sharing its GPUs
    with one other job runs at the measured (or fitted) speed of that pair; with several sharers the
    pair speeds multiply (an approximation: Lucid never packs more than two); alone, speed 1.
    ``keys`` are the jobs' profile keys (``model|batchsize|amp``, see sim.policies.lucid)."""

    name = "pair-interference"

    def __init__(self, model: InterferenceModel, keys: list[str]):
        self.model, self.keys = model, keys

    def speed(self, job: int, placement: list[tuple], colocated) -> float:
        speed = 1.0
        for other in colocated:
            speed *= self.model.speeds(self.keys[job], self.keys[other])[0]
        return speed
