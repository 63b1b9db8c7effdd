"""A-SRPT's placement-dependent speed as an Engine v2 performance model (sim.performance hook).

A job with a stage profile (its ``model`` names a profile of :class:`~sim.asrpt.profiles.StageCatalog`)
runs ``n_i`` iterations of ``alpha_i(x)`` seconds (sim.asrpt.iteration, Eq. 4-7), x being its stages
mapped by Heavy-Edge onto the per-node GPU counts of the placement chosen at its start (fixed while it
runs). The engine counts work in the trace's seconds, so the model returns
``speed = duration_i / (n_i * alpha_i(x))`` and the wall time is exactly ``n_i * alpha_i(x)``.

``n_i``: the given ``iterations`` per job, else ``duration_i / alpha~_min_i`` — the trace duration is
read as the run time on the best (fewest-servers) placement, so a job placed that way runs at speed 1
and a spread one slower. Jobs without a profile, fractional jobs and jobs whose GPU count has no plan
keep speed 1, so every other policy and golden replay is unchanged.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from sim.asrpt.iteration import Bandwidth, alpha, fewest_servers
from sim.asrpt.profiles import StageCatalog
from sim.performance import PerformanceModel
from sim.placement.heavy_edge import heavy_edge_map

if TYPE_CHECKING:
    from sim.engine import Engine


class IterationSpeed(PerformanceModel):
    """Speed from the per-iteration model. ``inter_gbit`` (Gb/s) / ``intra_gbyte`` (GB/s) override the
    cluster's bandwidths; ``allreduce`` is ``ring`` or ``tree``."""

    name = "asrpt"

    def __init__(self, catalog: StageCatalog | None = None, iterations: Sequence[float] | None = None,
                 inter_gbit: float | None = None, intra_gbyte: float | None = None,
                 allreduce: str = "ring", gpus_per_server: int | None = None):
        self.catalog = catalog if catalog is not None else StageCatalog()
        self.iterations = iterations
        self.inter_gbit, self.intra_gbyte, self.allreduce = inter_gbit, intra_gbyte, allreduce
        self.gpus_per_server = gpus_per_server
        self.bw = Bandwidth(allreduce=allreduce) if inter_gbit is None and intra_gbyte is None else \
            Bandwidth(inter=(inter_gbit or 10.0) * 1e9 / 8, intra=(intra_gbyte or 300.0) * 1e9, allreduce=allreduce)
        self._alpha: dict[tuple, float] = {}
        self.model: list[str | None] = []
        self.gpus: list[int] = []
        self.duration: list[float] = []

    def bind(self, engine: "Engine") -> None:
        super().bind(engine)
        w = engine.workload
        self.bw = Bandwidth.from_cluster(w.cluster, self.inter_gbit, self.intra_gbyte, self.allreduce)
        if self.gpus_per_server is None:
            self.gpus_per_server = max(max(p.capacities) for p in w.cluster.partitions)
        self.model, self.gpus, self.duration = list(w.model), list(w.gpus), list(w.duration)
        if self.iterations is not None and len(self.iterations) != len(w):
            raise ValueError(f"{len(self.iterations)} iteration counts for {len(w)} jobs")

    def alpha_of(self, model: str | None, gpus: int, counts: tuple[int, ...]) -> float | None:
        """Seconds per iteration of ``model`` on ``gpus`` GPUs split over servers as ``counts``."""
        key = (model, gpus, counts)
        a = self._alpha.get(key)
        if a is None and key not in self._alpha:
            cfg = self.catalog.config(model, gpus)
            a = None if cfg is None else alpha(cfg, heavy_edge_map(cfg, list(counts), self.bw), self.bw)
            self._alpha[key] = a
        return a

    def alpha_min(self, model: str | None, gpus: int) -> float | None:
        return self.alpha_of(model, gpus, tuple(fewest_servers(gpus, self.gpus_per_server or 8)))

    def speed(self, job: int, placement: list[tuple], colocated: Sequence[int]) -> float:
        model = self.model[job] if job < len(self.model) else None
        if model is None or not placement or len(placement[0]) != 2:
            return 1.0
        g = self.gpus[job]
        counts = tuple(sorted((n for _, n in placement), reverse=True))
        if sum(counts) != g:
            return 1.0
        a = self.alpha_of(model, g, counts)
        if a is None:
            return 1.0
        if self.iterations is not None:
            n = float(self.iterations[job])
            if n <= 0:
                return 1.0
            return max(1e-9, self.duration[job] / (n * a))
        return max(1e-9, self.alpha_min(model, g) / a)
