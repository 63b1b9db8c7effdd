"""The profile catalog: what traces lack about a job's model, filled from measured profiles.

Parameter bytes are measured where the shared profiles have them (PipeDream per-layer parameter bytes,
summed per model); solo GPU utilisation and memory are measured on RTX 3090 by Lucid (single_data.csv).
Where no measurement exists, a documented estimate of the model's parameter count is used (the
published size of the model's standard variant, cited in PARAMETER_ESTIMATES). Each profile says which.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from features.paths import resolve_data_path

#: Parameter counts (millions) of standard variants, from the models' papers / torchvision / timm
#: model cards. Used only where no measured parameter bytes exist.
PARAMETER_ESTIMATES: dict[str, tuple[float, str]] = {
    # Lazer's workload (DAC '26 §5): ConvNeXt, EfficientNet, VGG19, ViT, Swin, Conformer, TNT.
    "ConvNeXt": (88.6, "ConvNeXt-B, Liu et al. CVPR'22"),
    "EfficientNet": (66.3, "EfficientNet-B7, Tan & Le ICML'19"),
    "VGG19": (143.7, "VGG-19, torchvision"),
    "ViT": (304.3, "ViT-L/16, Dosovitskiy et al. ICLR'21"),
    "SwinTransformer": (87.8, "Swin-B, Liu et al. ICCV'21"),
    "Conformer": (118.8, "Conformer-L, Gulati et al. Interspeech'20"),
    "TNT": (65.6, "TNT-B, Han et al. NeurIPS'21"),
    # Lucid's models (single_data.csv) without a PipeDream measurement.
    "BERT": (110.0, "BERT-base, Devlin et al. NAACL'19"),
    "DCGAN": (3.6, "DCGAN 64x64 G+D, Radford et al. ICLR'16"),
    "LSTM": (28.9, "2-layer 650-unit word LSTM on Wikitext-2 (PyTorch example)"),
    "MobileNetV2": (3.5, "torchvision mobilenet_v2"),
    "MobileNetV3": (5.5, "torchvision mobilenet_v3_large"),
    "NeuMF": (1.0, "NeuMF on MovieLens-1M, He et al. WWW'17 (order of magnitude)"),
    "PPO": (0.1, "PPO MLP policy (order of magnitude)"),
    "PointNet": (3.5, "PointNet classification, Qi et al. CVPR'17"),
    "TD3": (0.1, "TD3 MLP actor-critic (order of magnitude)"),
    "Transformer": (65.0, "Transformer-base, Vaswani et al. NeurIPS'17"),
    "VGG": (138.4, "VGG-16, torchvision"),
}

#: Lucid model name -> PipeDream profile with measured parameter bytes (same architecture).
MEASURED_ALIASES = {"ResNet18": "resnet18", "ResNet50": "resnet50", "VGG": "vgg16"}

CATALOGS = {
    "lazer": ["ConvNeXt", "EfficientNet", "VGG19", "ViT", "SwinTransformer", "Conformer", "TNT"],
    "lucid": ["BERT", "DCGAN", "EfficientNet", "LSTM", "MobileNetV2", "MobileNetV3", "NeuMF", "PPO",
              "PointNet", "ResNet18", "ResNet50", "TD3", "Transformer", "VGG"],
}


@dataclass(frozen=True)
class ModelProfile:
    name: str
    param_bytes: float
    param_source: str  # "measured: ..." or "estimate: ..."
    gpu_util: float | None = None  # solo, percent
    gmem_mb: float | None = None  # solo, MB
    gmem_util: float | None = None


class CostModel(BaseModel):
    """Load time l and pause-and-save time p of a job from its model's checkpoint size.

    l = startup_s + checkpoint_bytes / read bandwidth (GPU memory allocation, container and framework
    start-up, then reading parameters and optimizer state from shared storage); p = checkpoint_bytes /
    write bandwidth. checkpoint_bytes = param_bytes x (1 + optimizer_copies) (Adam keeps two moments).
    Defaults put multi-GB checkpoints at minutes, as Lazer describes for shared storage under load.
    """

    model_config = ConfigDict(extra="forbid")
    read_bandwidth_mb_s: float = Field(25.0, gt=0)
    write_bandwidth_mb_s: float = Field(25.0, gt=0)
    startup_s: float = Field(30.0, ge=0)
    optimizer_copies: float = Field(2.0, ge=0)

    def checkpoint_bytes(self, param_bytes: np.ndarray) -> np.ndarray:
        return np.asarray(param_bytes, dtype=float) * (1.0 + self.optimizer_copies)

    def load_time(self, param_bytes: np.ndarray) -> np.ndarray:
        return self.startup_s + self.checkpoint_bytes(param_bytes) / (self.read_bandwidth_mb_s * 1e6)

    def save_time(self, param_bytes: np.ndarray) -> np.ndarray:
        return self.checkpoint_bytes(param_bytes) / (self.write_bandwidth_mb_s * 1e6)


class ProfileCatalog:
    """Model profiles by name, built from the measured files in the data directory."""

    def __init__(self, profiles: list[ModelProfile], name: str = "custom"):
        if not profiles:
            raise ValueError("a profile catalog needs at least one model")
        self.name = name
        self.profiles = sorted(profiles, key=lambda p: p.param_bytes)
        self.by_name = {p.name: p for p in self.profiles}

    def __len__(self) -> int:
        return len(self.profiles)

    @staticmethod
    def input_files(data: str | Path | None = None) -> tuple[Path, Path]:
        """The measured-profile files :meth:`build` reads from the data dir (when they exist)."""
        return (resolve_data_path("profiles/pipedream/layers.csv", data),
                resolve_data_path("profiles/lucid/single_data.csv", data))

    @classmethod
    def build(cls, which: str = "lazer", data: str | Path | None = None) -> "ProfileCatalog":
        """``which`` is a key of CATALOGS. Measured values are read from profiles/ in the data dir; when
        that is missing, estimates are used and each profile says so."""
        if which not in CATALOGS:
            raise ValueError(f"unknown catalog {which!r}; known: {', '.join(CATALOGS)}")
        measured_bytes: dict[str, float] = {}
        solo: dict[str, tuple[float, float, float]] = {}
        layers, single = cls.input_files(data)
        import pandas as pd

        if layers.exists():
            measured_bytes = pd.read_csv(layers).groupby("model")["parameter_bytes"].sum().to_dict()
        if single.exists():
            s = pd.read_csv(single).groupby("model")[["gpu_util", "gmem", "gmem_util"]].mean()
            solo = {m: tuple(map(float, row)) for m, row in s.iterrows()}
        profiles = []
        for model in CATALOGS[which]:
            alias = MEASURED_ALIASES.get(model, model.lower())
            if alias in measured_bytes:
                pb, src = float(measured_bytes[alias]), f"measured: PipeDream {alias} parameter bytes"
            else:
                millions, cite = PARAMETER_ESTIMATES[model]
                pb, src = millions * 1e6 * 4.0, f"estimate: {cite}, fp32"
            util = solo.get(model)
            profiles.append(ModelProfile(model, pb, src, *(util if util else (None, None, None))))
        return cls(profiles, name=which)

    def assign(self, work: np.ndarray, seed: int, strength: float = 1.0) -> np.ndarray:
        """Draw a model index per job; larger work (GPU-seconds) leans towards larger models.

        Job j with work quantile q_j in [0, 1] picks model m with probability proportional to
        exp(strength * (q_j - 0.5) * z_m), z_m the standardised log parameter size. strength = 0 is
        uniform. Seeded: the same work and seed give the same models.
        """
        rng = np.random.default_rng(seed)
        n, k = len(work), len(self.profiles)
        if n == 0:
            return np.zeros(0, dtype=int)
        logsize = np.log([p.param_bytes for p in self.profiles])
        z = (logsize - logsize.mean()) / (logsize.std() or 1.0)
        q = (np.argsort(np.argsort(work, kind="stable"), kind="stable") + 0.5) / n
        logits = strength * np.outer(q - 0.5, z) * 2.0
        probs = np.exp(logits - logits.max(axis=1, keepdims=True))
        probs /= probs.sum(axis=1, keepdims=True)
        u = rng.random(n)
        choice = (probs.cumsum(axis=1) < u[:, None]).sum(axis=1)
        return np.minimum(choice, k - 1)
