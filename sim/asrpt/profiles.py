"""Stage profiles and pipeline configurations for A-SRPT jobs.

Sources
-------
- **Measured** (14 CNN/RNN models): PipeDream's profiler output, ``profiles/pipedream/layers.csv`` and
  ``graphs/<model>.graph.txt`` of the shared data (per-layer forward/backward ms on one GPU for one
  minibatch, output activation bytes, parameter bytes). Layers are put in a topological order of the
  layer DAG (Kahn, ties by node number) and treated as a chain, the way PipeDream's planner cuts a
  model into consecutive stages. The activation sent from one stage to the next is the output
  activation of the stage's last layer in that order (an approximation for branchy DAGs such as
  Inception or NASNet, where several tensors may cross a cut).
- **Derived** (``source == "derived"``, not measurements): transformer models the paper uses, from
  analytic per-layer FLOPs and bytes at a documented V100 throughput :data:`V100_TFLOPS` (40 TFLOP/s
  effective fp16, about 32 % of the 125 TFLOP/s tensor-core peak, in line with the utilisation that
  Megatron-LM reports on V100). Per transformer layer with hidden size h, sequence s and microbatch b:
  forward FLOPs ``24 b s h^2 + 4 b s^2 h``, backward twice the forward, parameters ``12 h^2`` (fp16
  gradients, 2 bytes each), activation ``b s h`` fp16 values. Decoder layers (T5) add cross-attention:
  ``32 b s h^2 + 8 b s^2 h`` FLOPs and ``16 h^2`` parameters. Embeddings are left out. GPT 6.7B / 13B /
  175B are few-layer slices (8, 8 and 4 of their 32, 40 and 96 layers) so that they fit the GPU
  counts of a PAI-like trace; BERT-large has 24 layers, T5-large 12 encoder + 12 decoder layers.

Coarsening
----------
Models with many layers (NASNet: 1,251) are merged into at most ``max_blocks`` (default 16) blocks of
consecutive layers with roughly equal compute (cut when the running compute passes the next multiple of
total / max_blocks); a block's activation is that of its last layer, its parameters the sum.

Planner (PipeDream-style dynamic programme)
-------------------------------------------
For a model of L blocks and G GPUs, ``A(j, m)`` is the smallest bottleneck (slowest stage) time of the
first j blocks on m GPUs::

    A(j, m) = min( T(1..j, m),
                   min_{1 <= i < j, 1 <= m' < m} max( A(i, m - m'), C(i), T(i+1..j, m') ) )
    T(i..j, m) = comp(i..j) / m + 2 (m - 1) / m * params(i..j) / B      (ring AllReduce, m replicas)
    C(i)       = 2 * act(i) / B                                          (forward activations + gradients)

with B the planner's bandwidth (default :data:`PLANNER_BANDWIDTH`, 10 Gb/s, the paper's default NIC:
the plan must be good when stages land on different servers). This is PipeDream's recurrence (SOSP '19,
section 3.1) with the per-iteration terms of :mod:`sim.asrpt.iteration` instead of PipeDream's
``1/m max(compute, 4 (m-1) |w| / (m B))``, so the planner and the time model agree. Ties keep the plan
with fewer stages. The result for (model, G) is a :class:`PipelineConfig`: S stages of consecutive
blocks, k_s replicas each, ``sum k_s == G``.
"""
from __future__ import annotations

import csv
import functools
import heapq
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

#: where the PipeDream profiles live (shared data; never copied into the repository)
PIPEDREAM_DIR = Path("/work/shared/data/profiles/pipedream")
#: effective V100 fp16 throughput for derived transformer profiles (FLOP/s)
V100_TFLOPS = 40.0
#: planner bandwidth in bytes/s (10 Gb/s)
PLANNER_BANDWIDTH = 10e9 / 8


@dataclass(frozen=True, slots=True)
class Layer:
    """One layer (or merged block): ms per minibatch on one GPU, bytes."""

    name: str
    forward_ms: float
    backward_ms: float
    activation_bytes: float
    parameter_bytes: float

    @property
    def compute_ms(self) -> float:
        return self.forward_ms + self.backward_ms


@dataclass(frozen=True, slots=True)
class ModelProfile:
    """A model as a chain of layers; ``source`` is ``measured`` (PipeDream) or ``derived`` (analytic)."""

    name: str
    layers: tuple[Layer, ...]
    source: str = "measured"

    @property
    def compute_ms(self) -> float:
        return sum(l.compute_ms for l in self.layers)

    @property
    def parameter_bytes(self) -> float:
        return sum(l.parameter_bytes for l in self.layers)


@dataclass(frozen=True, slots=True)
class Stage:
    """Consecutive blocks ``first..last`` run by ``replicas`` data-parallel GPUs.

    ``compute_s``: forward + backward seconds of one minibatch on one GPU; ``activation_bytes``: what the
    stage sends to the next one per minibatch (0 for the last stage); ``parameter_bytes``: AllReduced."""

    first: int
    last: int
    replicas: int
    compute_s: float
    activation_bytes: float
    parameter_bytes: float


@dataclass(frozen=True, slots=True)
class PipelineConfig:
    """How a job of ``model`` runs on ``gpus`` GPUs: its stages (sum of replicas == gpus)."""

    model: str
    gpus: int
    stages: tuple[Stage, ...]

    @property
    def num_stages(self) -> int:
        return len(self.stages)

    @property
    def replicas(self) -> tuple[int, ...]:
        return tuple(s.replicas for s in self.stages)


# -- loading ---------------------------------------------------------------------------------------
_NUM = re.compile(r"(\d+)$")


def _node_key(name: str) -> tuple[int, str]:
    m = _NUM.search(name)
    return (int(m.group(1)) if m else 1 << 30, name)


def _topological(nodes: list[str], edges: list[tuple[str, str]]) -> list[str]:
    """Kahn's order, ties by node number (deterministic)."""
    known = set(nodes)
    indeg = {n: 0 for n in nodes}
    out: dict[str, list[str]] = {n: [] for n in nodes}
    for a, b in edges:
        if a in known and b in known:
            out[a].append(b)
            indeg[b] += 1
    heap = [(_node_key(n), n) for n in nodes if indeg[n] == 0]
    heapq.heapify(heap)
    order = []
    while heap:
        _, n = heapq.heappop(heap)
        order.append(n)
        for b in out[n]:
            indeg[b] -= 1
            if indeg[b] == 0:
                heapq.heappush(heap, (_node_key(b), b))
    if len(order) != len(nodes):  # a cycle (should not happen): append the rest by number
        seen = set(order)
        order += sorted((n for n in nodes if n not in seen), key=_node_key)
    return order


def load_pipedream(directory: Path | str = PIPEDREAM_DIR) -> dict[str, ModelProfile]:
    """All measured models of the PipeDream profiles, each as a topologically ordered layer chain."""
    directory = Path(directory)
    rows: dict[str, dict[str, Layer]] = {}
    with open(directory / "layers.csv", newline="") as fh:
        for r in csv.DictReader(fh):
            rows.setdefault(r["model"], {})[r["node"]] = Layer(
                r["node"], float(r["forward_ms"]), float(r["backward_ms"]), float(r["activation_bytes"]),
                float(r["parameter_bytes"]))
    out = {}
    for model, layers in sorted(rows.items()):
        edges: list[tuple[str, str]] = []
        graph = directory / "graphs" / f"{model}.graph.txt"
        if graph.exists():
            for line in graph.read_text().splitlines():
                if line.startswith("\t"):
                    a, _, b = line.strip().partition(" -- ")
                    edges.append((a.strip(), b.strip()))
        order = _topological(sorted(layers, key=_node_key), edges)
        out[model] = ModelProfile(model, tuple(layers[n] for n in order), "measured")
    return out


def transformer_profile(name: str, layers: int, hidden: int, seq: int, batch: int,
                        decoder_layers: int = 0, tflops: float = V100_TFLOPS) -> ModelProfile:
    """A derived transformer profile (see module docstring for the formulas)."""
    rate = tflops * 1e12
    h, s, b = float(hidden), float(seq), float(batch)
    act = b * s * h * 2.0
    out = []
    for i in range(layers + decoder_layers):
        dec = i >= layers
        fwd = (32 * b * s * h * h + 8 * b * s * s * h) if dec else (24 * b * s * h * h + 4 * b * s * s * h)
        params = (16 if dec else 12) * h * h * 2.0
        out.append(Layer(f"{'dec' if dec else 'layer'}{i}", fwd / rate * 1e3, 2 * fwd / rate * 1e3, act, params))
    return ModelProfile(name, tuple(out), "derived")


#: the derived transformer models (name -> transformer_profile arguments)
TRANSFORMERS: dict[str, dict] = {
    "bert-large": dict(layers=24, hidden=1024, seq=512, batch=8),
    "gpt-6.7b": dict(layers=8, hidden=4096, seq=2048, batch=1),
    "gpt-13b": dict(layers=8, hidden=5120, seq=2048, batch=1),
    "gpt-175b": dict(layers=4, hidden=12288, seq=2048, batch=1),
    "t5-large": dict(layers=12, hidden=1024, seq=512, batch=8, decoder_layers=12),
}


@functools.lru_cache(maxsize=4)
def all_profiles(directory: str = str(PIPEDREAM_DIR)) -> dict[str, ModelProfile]:
    """Measured (if the shared data is there) and derived model profiles by name."""
    out: dict[str, ModelProfile] = {}
    if (Path(directory) / "layers.csv").exists():
        out.update(load_pipedream(directory))
    for name, kw in TRANSFORMERS.items():
        out[name] = transformer_profile(name, **kw)
    return out


def coarsen(profile: ModelProfile, max_blocks: int = 16) -> ModelProfile:
    """Merge consecutive layers into at most ``max_blocks`` blocks of about equal compute."""
    layers = profile.layers
    if len(layers) <= max_blocks:
        return profile
    total = profile.compute_ms or 1.0
    blocks, cur, acc, cut = [], [], 0.0, 1
    for i, layer in enumerate(layers):
        cur.append(layer)
        acc += layer.compute_ms
        left_layers = len(layers) - i - 1
        left_blocks = max_blocks - len(blocks) - 1
        if left_blocks > 0 and left_layers >= left_blocks and (acc >= total * cut / max_blocks or left_layers == left_blocks):
            blocks.append(cur)
            cur, cut = [], cut + 1
            while cut <= max_blocks and acc >= total * cut / max_blocks:
                cut += 1
    if cur:
        blocks.append(cur)
    merged = tuple(Layer(f"{b[0].name}..{b[-1].name}", sum(l.forward_ms for l in b), sum(l.backward_ms for l in b),
                         b[-1].activation_bytes, sum(l.parameter_bytes for l in b)) for b in blocks)
    return ModelProfile(profile.name, merged, profile.source)


# -- planner -----------------------------------------------------------------------------------------
def plan_all(profile: ModelProfile, max_gpus: int, bandwidth: float = PLANNER_BANDWIDTH,
             max_blocks: int = 16) -> dict[int, PipelineConfig]:
    """The DP of the module docstring for every GPU count 1..max_gpus (one DP gives them all)."""
    prof = coarsen(profile, max_blocks)
    L, G = len(prof.layers), int(max_gpus)
    comp = np.array([l.compute_ms / 1e3 for l in prof.layers])
    par = np.array([l.parameter_bytes for l in prof.layers])
    act = np.array([l.activation_bytes for l in prof.layers])
    ccomp = np.concatenate([[0.0], np.cumsum(comp)])
    cpar = np.concatenate([[0.0], np.cumsum(par)])
    ms = np.arange(1, G + 1, dtype=float)

    def T(i: int, j: int) -> np.ndarray:  # blocks i..j-1 on m = 1..G replicas -> array indexed m-1
        return (ccomp[j] - ccomp[i]) / ms + 2.0 * (ms - 1.0) / ms * (cpar[j] - cpar[i]) / bandwidth

    inf = np.inf
    A = np.full((L + 1, G + 1), inf)
    back_i = np.zeros((L + 1, G + 1), dtype=int)  # 0: one stage
    back_m = np.zeros((L + 1, G + 1), dtype=int)
    for j in range(1, L + 1):
        A[j, 1:] = T(0, j)
        for i in range(1, j):
            c = 2.0 * act[i - 1] / bandwidth
            tail = T(i, j)
            for mp in range(1, G):
                m = np.arange(mp + 1, G + 1)
                cand = np.maximum(np.maximum(A[i, m - mp], c), tail[mp - 1])
                better = cand < A[j, m] * (1 - 1e-12)
                if better.any():
                    idx = m[better]
                    A[j, idx] = cand[better]
                    back_i[j, idx] = i
                    back_m[j, idx] = mp
    out = {}
    for g in range(1, G + 1):
        spans, j, m = [], L, g
        while True:
            i, mp = int(back_i[j, m]), int(back_m[j, m])
            if i == 0:
                spans.append((0, j, m))
                break
            spans.append((i, j, mp))
            j, m = i, m - mp
        spans.reverse()
        stages = []
        for k, (i, j, reps) in enumerate(spans):
            stages.append(Stage(int(i), int(j) - 1, int(reps), float(ccomp[j] - ccomp[i]),
                                float(act[j - 1]) if k < len(spans) - 1 else 0.0, float(cpar[j] - cpar[i])))
        out[g] = PipelineConfig(prof.name, g, tuple(stages))
    return out


class StageCatalog:
    """Pipeline configurations by (model, GPU count), planned lazily and cached per model.

    ``config(model, gpus)`` is None for a model without a profile (such jobs keep speed 1)."""

    def __init__(self, profiles: dict[str, ModelProfile] | None = None, max_gpus: int = 64,
                 bandwidth: float = PLANNER_BANDWIDTH, max_blocks: int = 16):
        self.profiles = dict(all_profiles()) if profiles is None else dict(profiles)
        self.max_gpus, self.bandwidth, self.max_blocks = int(max_gpus), float(bandwidth), int(max_blocks)
        self._plans: dict[str, dict[int, PipelineConfig]] = {}

    def models(self) -> list[str]:
        return sorted(self.profiles)

    def config(self, model: str | None, gpus: int) -> PipelineConfig | None:
        if model is None or model not in self.profiles or gpus < 1:
            return None
        plans = self._plans.get(model)
        if plans is None or gpus > len(plans):
            plans = plan_all(self.profiles[model], max(self.max_gpus, int(gpus)), self.bandwidth, self.max_blocks)
            self._plans[model] = plans
        return plans[int(gpus)]
