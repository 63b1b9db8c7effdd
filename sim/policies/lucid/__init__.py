"""Lucid (ASPLOS '23): non-intrusive profiling, interference-aware packing, interpretable estimates,
as plug-ins on the shared engine (Lucid's own simulator steps time by one second per policy file).

Layout:
- :mod:`.workload`: workload preparation (the profiling partition, carved out of the cluster by
  default or added with ``profiler_from=extra``; the jobs' workload profiles, drawn from the run seed).
- :mod:`.profiler`: the Non-intrusive Job Profiler's rules (§3.2, Alg. 1), pure functions.
- :mod:`.binder`: the Affine-jobpair Binder's rules (§3.3), pure functions.
- :mod:`.scaling`: the dynamic strategy (G_SS from the throughput forecast) and time-aware scaling.
- :mod:`.orchestrator`: the policy (Resource Orchestrator, Alg. 2, in VC partitions; the profiler's
  queue in the profiling partition) and Horus.
- :mod:`.coordinator`: what spans partitions (profiles, estimates and the Update Engine, the throughput
  forecast, borrowed nodes), one per replay.
Forecasts live in :mod:`sim.forecasts`; in-replay retraining in :mod:`models.update`.
Ablations: ``binder=False`` (naive bin-packing), ``sharing=False``, ``estimator=False`` (FIFO order),
``space_aware=False`` (profiler FIFO), ``profiler=False``.
"""
from sim.policies.lucid.coordinator import LucidCoordinator
from sim.policies.lucid.orchestrator import Horus, Lucid
from sim.policies.lucid.workload import PROFILER, attach_profiles, profiler_size, with_profiler

__all__ = ["PROFILER", "Horus", "Lucid", "LucidCoordinator", "attach_profiles", "profiler_size", "with_profiler"]
