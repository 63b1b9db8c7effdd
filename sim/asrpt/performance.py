"""A-SRPT's placement-dependent speed as an Engine v2 performance model (sim.performance hook).

A job with a stage profile runs ``n_i`` iterations of ``alpha_i(x)`` seconds (sim.asrpt.iteration,
Eq. 4-7), x being its stages mapped by Heavy-Edge onto the per-node GPU counts of the placement chosen at
its start (fixed while it runs). The engine counts work in the trace's seconds, so the model returns
``speed = duration_i / (n_i * alpha_i(x))`` and the wall time is exactly ``n_i * alpha_i(x)``.

- **Model per job** (sim.asrpt.jobs.job_models): the trace's ``dl_model`` column, else
  ``Workload.model``, else (``assign=True``, what ``--performance asrpt`` does) one model per recurring
  group by a seeded hash; a job left without a profile keeps speed 1.
- **Iterations** ``n_i``: the given ``iterations``, else the trace's ``iterations`` column, else
  ``duration_i / alpha~_min_i`` at the reference bandwidths: ``ref_gbit`` Gb/s between servers, 300 GB/s
  inside, ring AllReduce (``--performance asrpt`` uses 10 Gb/s, as sim.asrpt.jobs; None: the model's own
  bandwidths, so a fewest-servers placement runs at speed 1 whatever the NIC) — the trace duration is
  read as the run time on the best placement of the reference cluster.

- **NIC** (``nic``): ``share`` (the paper: x/g of the NIC per stage's replicas on a server, g the
  server's GPUs) or ``whole`` (schedcast's first reading); see sim.asrpt.iteration.
- **Mapping** (``refine``): the paper's Heavy-Edge, or the refined variant; None (default) follows the
  replay's ``heavy-edge`` placement (``heavy-edge:refine=true``) when there is one.

Fractional jobs and jobs whose GPU count has no plan keep speed 1, so every other policy and golden
replay is unchanged.
"""
from __future__ import annotations

from typing import Sequence

from sim.asrpt.iteration import Bandwidth, alpha, fewest_servers, heavy_edge_map, spread_mapping
from sim.asrpt.profiles import StageCatalog
from sim.speed import PerformanceModel


class IterationSpeed(PerformanceModel):
    """Speed from the per-iteration model. ``inter_gbit`` (Gb/s) / ``intra_gbyte`` (GB/s) override the
    cluster's bandwidths; ``allreduce`` is ``ring`` or ``tree``; ``assign`` / ``seed``: models for jobs
    without one (per group); ``ref_gbit``: reference NIC for iterations derived from durations."""

    name = "asrpt"

    def __init__(self, catalog: StageCatalog | None = None, iterations: Sequence[float] | None = None,
                 inter_gbit: float | None = None, intra_gbyte: float | None = None,
                 allreduce: str = "ring", gpus_per_server: int | None = None, assign: bool = False,
                 seed: int = 0, ref_gbit: float | None = None, nic: str = "share", refine: bool | None = None):
        if catalog is None:
            from sim.asrpt.jobs import shared_catalog

            catalog = shared_catalog()
        self.catalog = catalog
        self.iterations = iterations
        self.inter_gbit, self.intra_gbyte, self.allreduce = inter_gbit, intra_gbyte, allreduce
        self.gpus_per_server = gpus_per_server
        self.assign, self.seed, self.ref_gbit = bool(assign), int(seed), ref_gbit
        self.nic, self.refine = nic, refine
        per = int(gpus_per_server or 8)
        self.bw = Bandwidth(allreduce=allreduce, nic=nic, server_gpus=per) \
            if inter_gbit is None and intra_gbyte is None else \
            Bandwidth(inter=(inter_gbit or 10.0) * 1e9 / 8, intra=(intra_gbyte or 300.0) * 1e9, allreduce=allreduce,
                      nic=nic, server_gpus=per)
        self._alpha: dict[tuple, float | None] = {}
        self._amax: dict[tuple, float | None] = {}
        self.model: list[str | None] = []
        self.gpus: list[int] = []
        self.duration: list[float] = []
        self.true_iterations: list[float] = []

    def bind(self, workload, placements=()) -> None:
        super().bind(workload, placements)
        if self.refine is None:  # refined mappings when a partition places with heavy-edge:refine=true
            self.refine = any(getattr(p, "name", None) == "heavy-edge" and getattr(p, "refine", False) is True
                              for p in placements)
            self._alpha.clear()
        self.bind_workload(workload)

    def bind_workload(self, w) -> None:
        """Read models, GPU counts, durations and true iterations of a workload (also without an engine)."""
        from sim.asrpt.jobs import job_models, true_iterations

        if getattr(self, "_bound", None) is w:  # the same workload again (one replay per policy)
            return
        self._bound = w
        if self.gpus_per_server is None:
            self.gpus_per_server = max(max(p.capacities) for p in w.cluster.partitions)
        self.bw = Bandwidth.from_cluster(w.cluster, self.inter_gbit, self.intra_gbyte, self.allreduce, self.nic,
                                         self.gpus_per_server)
        self._alpha.clear()
        self._amax.clear()
        self.model = job_models(w.frame, w.model, assign=self.assign, seed=self.seed) if len(w.frame) == len(w) \
            else list(w.model)
        self.gpus, self.duration = list(w.gpus), list(w.duration)
        if self.iterations is not None:
            if len(self.iterations) != len(w):
                raise ValueError(f"{len(self.iterations)} iteration counts for {len(w)} jobs")
            self.true_iterations = [float(v) for v in self.iterations]
            return
        if self.ref_gbit is None:
            ref = self.bw
        else:
            from sim.asrpt.jobs import REF_INTRA_GBYTE

            ref = Bandwidth(self.ref_gbit * 1e9 / 8, REF_INTRA_GBYTE * 1e9,  # ring, as sim.asrpt.jobs
                            nic=self.nic, server_gpus=self.gpus_per_server or 8)
        frame = w.frame if len(w.frame) == len(w) else None
        if frame is None:
            import pandas as pd

            frame = pd.DataFrame({"duration": self.duration, "num_gpus": self.gpus})
        else:
            frame = frame.assign(duration=self.duration)
        self.true_iterations = true_iterations(frame, self.model, self.gpus, self.catalog, ref,
                                               self.gpus_per_server or 8).tolist()

    def alpha_of(self, model: str | None, gpus: int, counts: tuple[int, ...]) -> float | None:
        """Seconds per iteration of ``model`` on ``gpus`` GPUs split over servers as ``counts``."""
        key = (model, gpus, counts)
        a = self._alpha.get(key)
        if a is None and key not in self._alpha:
            cfg = self.catalog.config(model, gpus)
            a = None if cfg is None else alpha(cfg, heavy_edge_map(cfg, list(counts), self.bw, refine=bool(self.refine)),
                                               self.bw)
            self._alpha[key] = a
        return a

    def alpha_min(self, model: str | None, gpus: int) -> float | None:
        return self.alpha_of(model, gpus, tuple(fewest_servers(gpus, self.gpus_per_server or 8)))

    def alpha_max(self, model: str | None, gpus: int) -> float | None:
        """Fully spread (one GPU per server)."""
        key = (model, gpus)
        if key not in self._amax:
            cfg = self.catalog.config(model, gpus)
            self._amax[key] = None if cfg is None else alpha(cfg, spread_mapping(cfg), self.bw)
        return self._amax[key]

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
        n = float(self.true_iterations[job])
        if n <= 0:
            return 1.0
        return max(1e-9, self.duration[job] / (n * a))
