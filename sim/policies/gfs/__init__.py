"""GFS (Duan et al., "GFS: A Preemption-aware Scheduling Framework for GPU Clusters with Predictive Spot
Instance Management", ASPLOS '26), its ablations and the baselines it is compared with, on Engine v2.

Task model (sim.engine / sim.workload): ``job_class`` "spot" (also lp / be) marks spot tasks, anything else
is HP. HP tasks are never evicted once started (only spot tasks are ever victims; the property test checks
it). Spot tasks carry ``checkpoint_interval`` (3,600 s of run time by default, set by the loaders and the
generator); an eviction loses only the work since the last checkpoint and the task's next start loads 40 s
longer (60 s above 8 GPUs); the HP task whose start evicted others loads 40 s longer. Evicted spot tasks
re-queue; their queueing time is the sum of all their waits (the engine's ``wait``).

Pools: each GPU model of a partition is its own pool with its own HP and spot queues, quota and statistics
(jobs without a GPU model share the pool "*" of their partition).

Our readings where the paper leaves details open (each a parameter where it matters):
- SQA (sqa.py; its docstring has Eq. 9-11 and the readings in full): the spot quota of each pool is set every
  300 s from the 0.9 quantile of the HP demand forecast for the next H hours (Eq. 9, the organisations'
  Gaussians summed per step). Eq. 10: the default ``eq10=additive`` is Q_H = f eta + S_a (S_a the spot GPUs
  guaranteed >= H h), NOT the printed min(f eta, S_0 + S_a) (gfs.txt:208), which is ``eq10=printed``;
  ``held-idle`` is min(f eta, spot held + idle); ``released`` is the released simulator's f eta. The spot GPUs
  held are checked against the quota with every pod counted (``quota_count=pods``); ``quota_count=gang-as-pod``
  counts one pod per running spot task, and ``hp_count=gang-as-pod`` one pod per HP task in the sampled HP demand,
  as the released simulator does (the parameter docs cite its lines; docs/gfs_differential.md measures them). Eq. 11: eta starts at 1 and is cut by eps / e when the
  eviction rate e (evictions / spot runs of the pool over the past H hours, see below) exceeds 1.5 eps,
  raised by (1.5 - e / eps) when e < eps / 2 and a spot task waited longer than theta = 3,600 s over the past
  H hours, and never exceeds 1 (``eta_max=1``, the default): the reading the paper's runs had, since the released
  simulator's raise (Sjtucitlab/Spot policy/policy.py around lines 103-113) is negative for e < eps / 2 and
  divides by zero at e = 0 (and its feedback never runs at all: eta stays 1 there, see sqa.py).
  ``eta_max=inf`` is Eq. 11 as printed; it winds eta up while f = 0 or every GPU is taken (1e35-1e112
  measured) and then admits every spot task at once.
  ``eta_raise=binding`` (raise only while the quota holds spot back) and ``eta_min`` / ``eta_max`` (the
  first reading's clamp [0.05, 4]) are further named readings; ``window_hours`` sets e's window (default:
  the past H hours, as printed). e is evictions / runs (gfs.txt:387) over the window: the spot runs alive in it
  (running, or ended in it by an eviction, a finish or a failure; ``e_runs=live``, the default). ``e_runs=starts``
  (the old reading) divides by the spot starts in the window instead: the runs an eviction ends mostly started
  before the window, so e was about 3x the rate over the runs (measured on the differential traces) and rose
  with no new eviction as starts left the window or a cut held them back. HP demand is sampled every 60 s per
  organisation from the simulation's own allocation; hourly maxima feed the estimator (default ``orglinear``,
  models.forecast.OrgLinear trained causally in the replay; ``models:/demand@champion`` the registered model;
  ``persistence``: the last hourly maximum with the spread of h-hour changes; ``seasonal``: hour-of-day mean
  over the last week; GFS-e ``prev-week-peak``). Until the first complete hour the forecast is the demand held
  now; the forecast for an hour is never below what the organisations already hold in it.
- PTS (pts.py): queue order (GPU request, pod count, submission), ascending: small tasks first (``queue_order``:
  ``fifo``, or ``large-first``: GPUs per pod descending, then pods and submission, as the released simulator
  sorts both queues), with
  backfilling (a task that does not fit does not block later ones; a failed shape is not retried in the
  same pass). Score1 packing = allocated share after placement; Score2 = share of the node's allocated
  GPUs held by the task's class; Score3 = 1 / (1 + gamma e_1h + (1 - gamma) e_24h / 24), spot only; the
  breaker closes a node to spot pods at m = 3 evictions in the last hour. Eq. 19 cost = beta x (victims'
  waste / (pod GPUs x 1 h)) + (1 - beta) x (victims' GPUs / pod GPUs), beta = 0.5. A one-pod fractional
  HP task (v2023) frees room on one GPU: the spot shares of one shared GPU in waste order, or one spot task
  holding a whole GPU, whichever wastes least; multi-pod fractional HP tasks wait. Score1 ranks nodes by
  their free count (the tightest feasible bucket first: the same order as the score for whole-GPU pods), so
  only the nodes of one bucket are scored for the tie-breaks. A queue pass is skipped when neither the pool
  nor the quota changed and nothing arrived since the last pass that left tasks waiting (the breaker's hour
  window expiring alone does not trigger a pass).
- Baselines: YARN-CS = FIFO per class, best fit, HP preempts the newest-started spot tasks on the node
  needing the fewest victims, no quota. Chronus = FIFO, best fit, spot leases of 5 min (HP 20 min: HP is
  never preempted here, so its lease only matters for the paper's deadline scheduling): an HP task that
  does not fit marks victims (fewest, newest) that are evicted when their current lease ends, never
  inside one; while victims drain, the pool's spot room is zero (the GPUs they free are held for the HP
  task, which pays the 40 s preemption overhead when it starts; without the hold the replay could livelock,
  see :class:`Chronus`). Lyra = FIFO, best fit, victims of least preemption cost (GPUs x run time since start, the
  work at risk without checkpoint knowledge), no quota. FGD = FIFO, FGD placement (score_fgd: the
  fragmentation gradient against the workload's own request distribution), YARN's preemption; ``fgd``
  with ``preempt=false`` is FGD alone (as evaluated on the v2023 trace).
- Ablations: gfs-e (prev-week-peak), gfs-d (eta fixed at its start value), gfs-s (packing-only placement,
  no co-location / eviction score, no breaker), gfs-p (random victims on a random feasible node), gfs-sp
  (both); H (hours of the quota horizon) is a parameter of every GFS variant (``gfs:H=1``).
"""
from __future__ import annotations

import math
from typing import Annotated, Any, Callable

from features.plugins import FRACTION, PERIOD, SECONDS, Domain

from sim.placement import Placement
from sim.placement.fgd import FgdPlacement
from sim.placement.gfs import GfsPlacement
from sim.placement.pool import Placement_t
from sim.policies.gfs.pts import HpSpotPolicy
from sim.states import LOADING, RUNNING
from sim.policies.gfs.sqa import SpotQuotaAllocator

# The ablations (gfs-e, gfs-d, gfs-s, gfs-p, gfs-sp) are Gfs registered with other defaults (ABLATIONS).
__all__ = ["Gfs", "ABLATIONS", "YarnCs", "Chronus", "Lyra", "Fgd", "FgdPlacement", "GfsPlacement", "register_policies"]


#: GFS' quota period (Eq. 11, 300 s in the paper): each update forecasts every pool's demand (~1 ms), so a
#: floor of a minute keeps a month-long replay's updates to seconds.
QUOTA_PERIOD = Domain(ge=60.0, le=366 * 86400.0, why="seconds between quota updates")


class Gfs(HpSpotPolicy):
    """GFS: SQA quotas for spot + PTS (Alg. 1 placement, Alg. 2 preemption for HP)."""

    name = "gfs"
    summary = "GFS: forecast-driven spot quotas (SQA) + preemption-aware HP/spot placement (PTS)"
    citation = "Duan et al., ASPLOS '26"
    coordinator_class = SpotQuotaAllocator
    order = "gfs"
    #: each numeric parameter's domain (features.plugins.Domain; periods and eta_max: on their types)
    param_domains = {"H": Domain(ge=1, le=168, integer=True), "p": Domain(gt=0.0, lt=1.0), "beta": FRACTION,
                     "gamma": FRACTION, "m": Domain(ge=1, le=100, integer=True), "eta0": Domain(ge=0.0), "window_hours": Domain(ge=0.0, le=8784.0),
                     "eta_min": Domain(ge=0.0), "spread_hours": Domain(ge=0, le=87840, integer=True)}
    param_docs = {"H": "quota horizon (hours; Table 4: 1)", "p": "forecast confidence (target eviction rate 1 - p; Table 4: 0.9)",
                  "estimator": "orglinear (default, trained in the replay) | models:/demand@champion | persistence | "
                               "seasonal | prev-week-peak",
                  "adapt_eta": "Eq. 11 feedback on eta", "summed": "summed-Gaussian per-step inventory (default; "
                                                                    "false: per-organisation quantiles added up)",
                  "placement_mode": "pts (Alg. 1) or best-fit", "preemption": "gfs (Alg. 2) or random",
                  "beta": "Eq. 19 weight (Table 4: 0.5)", "gamma": "Eq. 15 weight (Table 4: 0.8)",
                  "m": "Score3 penalty base / circuit breaker (Table 4: 3)",
                  "quota": "apply the spot quota", "retrain_hours": "estimator retraining period",
                  "window_hours": "trailing window of e in Eq. 11 (default: the past H hours; old reading 1)",
                  "eq19": "paper (victim count term (F+|T|)/(G+F+|T|), waste per victim GPU-hour) | gpus (old)",
                  "score3": "paper (max(0, 1 - 0.01 m^e_bar), HP to the most-evicted node, breaker at 0) | inverse (old)",
                  "eq10": "additive (default, our reading: Q = f eta + S_a, S_a spot GPUs guaranteed >= H h) | printed "
                                  "(min(f eta, S_0 + S_a), S_0 idle GPUs: gfs.txt:208) | held-idle (min(f eta, spot held + idle)) "
                                  "| released (Q = f eta with f from the floored quantile: GFS's released simulator, "
                                  "Sjtucitlab/Spot policy/policy.py:99-100, 118)",
                  "quota_count": "spot GPUs held, as checked against the quota: pods (default: every pod's GPUs) | "
                                 "gang-as-pod (one pod's GPUs per spot task, as GFS's released simulator: "
                                 "Sjtucitlab/Spot policy/spot.py:158 adds gpu_request on a start, :49 and :169 take "
                                 "it off at the end and on an eviction, while :105-107 checks held + the new task's "
                                 "gpu_request x worker_num <= quota; a running gang uses up one pod's share)",
                  "hp_count": "HP GPUs per organisation sampled for the demand forecast: pods (default) | "
                              "gang-as-pod (one pod's GPUs per HP task, as GFS's released simulator: "
                              "Sjtucitlab/Spot policy/policy.py:130-134 and policy/spot.py:53 keep guar_request_dict "
                              "per pod, and policy/recorder/recorder.py:58-59 feeds it to the forecaster)",
                  "wait": "window (Eq. 11's l: longest spot wait over the past H hours) | current (old)",
                  "queue_order": "gfs (GPU request, pods, submission: small first) | fifo (submission) | large-first "
                                 "(GPUs per pod descending, pods, submission: GFS's released simulator)",
                  "eta_raise": "always (Eq. 11 as printed) | binding (raise eta only while the quota holds spot back)",
                  "inventory_floor": "Eq. 9's HP quantile rounded down to whole GPUs (default, as the released "
                                     "simulator) | false: exact",
                  "eta_cut": "new-evidence (default: Eq. 11's cut only at an update that saw a new eviction) | "
                             "each-update (every 300 s while e is high: one eviction cuts eta up to 12 times per hour)",
                  "e_runs": "Eq. 11's e: evictions in the past H hours / live (default: the spot runs alive in them, "
                            "running or ended there; gfs.txt:387's evictions / runs) | starts (old: the spot starts "
                            "in them)",
                  "eta_min": "eta floor (as printed: 0; old 0.05)",
                  "eta_max": "eta ceiling (default 1: eta only cut below its start, the released simulator's "
                             "behaviour; inf: Eq. 11's raise as printed, which winds up; old 4)",
                  "spread_hours": "persistence / seasonal: hours of history of the spread (default 168; 0: all, old)",
                  "calendar": "OrgLinear calendar embeddings: concat (Eq. 3) | sum (old)",
                  "scale_input": "OrgLinear Eq. 7 scale input: cyc (as printed) | abs (old)"}

    def __init__(self, H: int = 1, p: float = 0.9, estimator: str = "orglinear", adapt_eta: bool = True,
                 summed: bool = True, placement_mode: str = "pts", preemption: str = "gfs", beta: float = 0.5,
                 gamma: float = 0.8, m: int = 3, quota: bool = True,
                 retrain_hours: Annotated[float, Domain(ge=0.25, le=8784.0, why="hours between retrainings")] = 24.0,
                 eta0: float = 1.0, period_s: Annotated[float, QUOTA_PERIOD] = 300.0, sample_s: Annotated[float, PERIOD] = 60.0,
                 eta_max: Annotated[float, Domain(gt=0.0, finite=False, why="inf: no ceiling")] = 1.0,
                 window_hours: float = 0.0, eq19: str = "paper", score3: str = "paper", eq10: str = "additive",
                 wait: str = "window", eta_min: float = 0.0, spread_hours: int = 168, calendar: str = "concat",
                 scale_input: str = "cyc", eta_raise: str = "always", eta_cut: str = "new-evidence", e_runs: str = "live",
                 inventory_floor: bool = True,
                 queue_order: str = "gfs", quota_count: str = "pods", hp_count: str = "pods"):
        super().__init__(preempt=True)
        if H < 1:
            raise ValueError("H must be >= 1 hour")
        if not 0 < p < 1:
            raise ValueError("p must be in (0, 1)")
        if placement_mode not in ("pts", "best-fit"):
            raise ValueError("placement_mode must be pts or best-fit")
        if preemption not in ("gfs", "random"):
            raise ValueError("preemption must be gfs or random")
        for name, value, allowed in (("eq19", eq19, ("paper", "gpus")), ("score3", score3, ("paper", "inverse")),
                                     ("eq10", eq10, ("additive", "printed", "held-idle", "released")), ("wait", wait, ("window", "current")),
                                     ("calendar", calendar, ("concat", "sum")),
                                     ("scale_input", scale_input, ("cyc", "abs")),
                                     ("eta_raise", eta_raise, ("always", "binding")),
                                     ("eta_cut", eta_cut, ("new-evidence", "each-update")),
                                     ("e_runs", e_runs, ("starts", "live")),
                                     ("queue_order", queue_order, ("gfs", "fifo", "large-first")),
                                     ("quota_count", quota_count, ("pods", "gang-as-pod")),
                                     ("hp_count", hp_count, ("pods", "gang-as-pod"))):
            if value not in allowed:
                raise ValueError(f"{name} must be one of {', '.join(allowed)}, got {value!r}")
        if window_hours < 0 or spread_hours < 0 or eta_min < 0 or eta_max <= 0:
            raise ValueError("window_hours, spread_hours and eta_min must be >= 0, eta_max > 0")
        self.H, self.p, self.estimator, self.adapt_eta, self.summed = H, p, estimator, adapt_eta, summed
        self.placement_mode, self.preemption, self.beta, self.gamma, self.m = placement_mode, preemption, beta, gamma, m
        self.use_quota, self.retrain_hours, self.eta0 = quota, retrain_hours, eta0
        self.period_s, self.sample_s, self.eta_max, self.eta_min = period_s, sample_s, eta_max, eta_min
        self.window_hours = window_hours
        self.eq19, self.score3, self.eq10, self.wait = eq19, score3, eq10, wait
        self.spread_hours, self.calendar, self.scale_input = spread_hours, calendar, scale_input
        self.eta_raise, self.eta_cut, self.inventory_floor = eta_raise, eta_cut, inventory_floor
        self.e_runs = e_runs
        self.order = queue_order  # PTS's queue order (HpSpotPolicy.key / _schedule_spot read it)
        self.quota_count, self.hp_count = quota_count, hp_count  # (HpSpotPolicy._hp_counted reads hp_count)
        # the quota rests on the demand of the past spread_hours (0: all of it) and e's window: the watchdog
        # lets GFS hold spot tasks that long with nothing but its quota timers running
        self.memory_s = math.inf if spread_hours == 0 else 3600.0 * max(spread_hours, window_hours, H)

    def make_placement(self) -> Placement:
        if self.placement_mode == "best-fit":
            return GfsPlacement(self.history, lambda: self.ctx.now, colocation=False, eviction=False, breaker=False)
        return GfsPlacement(self.history, lambda: self.ctx.now, gamma=self.gamma, m=self.m, score3=self.score3)

    def on_start(self) -> None:
        super().on_start()
        coord = self.coordinator
        if isinstance(coord, SpotQuotaAllocator) and not coord._started:
            coord._started = True
            coord.configure(p=self.p, H=self.H, summed=self.summed, adapt_eta=self.adapt_eta,
                            estimator_spec=self.estimator, retrain_s=self.retrain_hours * 3600.0, eta0=self.eta0,
                            period_s=self.period_s, sample_s=self.sample_s, enabled=self.use_quota,
                            eta_max=self.eta_max, eta_min=self.eta_min,
                            window_s=self.window_hours * 3600.0 if self.window_hours > 0 else None,
                            eq10=self.eq10, wait_mode=self.wait, eta_raise=self.eta_raise, eta_cut=self.eta_cut,
                            e_runs=self.e_runs,
                            inventory_floor=self.inventory_floor,
                            estimator_params={"spread_hours": self.spread_hours or None, "calendar": self.calendar,
                                              "scale_input": self.scale_input})
        # Register every pool of this partition now (the coordinator's on_start comes after ours).
        w = self.ctx.jobs
        for j in range(len(w)):
            if w.partition[j] == self.ctx.partition:
                self._queues(self.pool_key(j))

    def on_new_pool(self, pool: str) -> None:
        coord = self.coordinator
        if isinstance(coord, SpotQuotaAllocator) and self.use_quota:
            orgs = sorted({o for j, o in enumerate(self.org) if self.ctx.jobs.partition[j] == self.ctx.partition
                           and self.pool_key(j) == pool and not self.spot[j]})
            coord.register_pool((self.ctx.partition, pool), self.pool_capacity(pool), orgs, self)

    def quota_room(self, pool: str) -> float:
        if not self.use_quota or self.coordinator is None:
            return math.inf
        held = self.spot_pod_held[pool] if self.quota_count == "gang-as-pod" else self.spot_held[pool]
        return self.coordinator.quota_of((self.ctx.partition, pool)) - held

    def victim_order(self):
        if self.preemption == "random":
            rng = self.ctx.rng("gfs-p")
            return lambda jobs: [jobs[i] for i in rng.permutation(len(jobs))]
        return None

    def node_order(self):
        if self.preemption == "random":
            rng = self.ctx.rng("gfs-p-nodes")
            return lambda nodes: [nodes[i] for i in rng.permutation(len(nodes))]
        return None

    @property
    def victim_cost(self) -> str:  # type: ignore[override]
        return "first" if self.preemption == "random" else "gfs"

    def stats(self) -> dict[str, Any]:
        return super().stats()


#: GFS's ablations (Tables 8-10): the same policy with one part swapped, registered with their defaults
#: (as Lucid's ablations are), so every variant takes every GFS parameter.
ABLATIONS: dict[str, tuple[str, dict[str, Any]]] = {
    "gfs-e": ("GFS with the previous-week-peak demand estimate (production heuristic)",
              {"estimator": "prev-week-peak"}),
    "gfs-d": ("GFS with eta fixed (no eviction-rate feedback)", {"adapt_eta": False}),
    "gfs-s": ("GFS with best-fit placement instead of PTS Alg. 1", {"placement_mode": "best-fit"}),
    "gfs-p": ("GFS with random preemption instead of Alg. 2", {"preemption": "random"}),
    "gfs-sp": ("GFS with best-fit placement and random preemption",
               {"placement_mode": "best-fit", "preemption": "random"}),
}


# --- baselines -------------------------------------------------------------------------------------------------
class YarnCs(HpSpotPolicy):
    """YARN Capacity Scheduler: FIFO per class, best fit, HP preempts the newest spot tasks."""

    name = "yarn-cs"
    summary = "YARN-CS: FIFO, best fit, HP preempts the newest spot containers (no quota)"
    citation = "Apache Hadoop YARN CapacityScheduler"
    order = "fifo"
    victim_cost = "count"

    def __init__(self, preempt: bool = True):
        super().__init__(preempt)

    def make_placement(self) -> Placement:
        return GfsPlacement(self.history, lambda: self.ctx.now, colocation=False, eviction=False, breaker=False)

    def victim_order(self):
        started = self.started_at
        return lambda jobs: sorted(jobs, key=lambda j: (-started.get(j, 0.0), j))


class Lyra(YarnCs):
    """Lyra (EuroSys '23) preemption: victims of least preemption cost (GPUs x run time since start)."""

    name = "lyra"
    summary = "Lyra: FIFO, best fit, HP preempts the spot tasks of least preemption cost"
    citation = "Li et al., EuroSys '23"
    victim_cost = "value"

    def victim_value(self, job: int) -> float:
        since = self.started_at.get(job, self.ctx.now)
        return self.ctx.jobs.gpu_demand[job] * (self.ctx.now - since)

    def victim_order(self):
        return None


class Chronus(YarnCs):
    """Chronus (SoCC '21) leases: spot tasks are evicted only at the end of a 5-minute lease.

    An HP task that does not fit marks victims; they are evicted at the end of their current lease and the
    HP task starts once they are gone. Meanwhile the pool's spot room is zero (the freed GPUs are held for
    the HP task). Why: without this hold, the GPUs of a victim evicted at its lease end went back to the
    spot queue in the same instant (the evicted task itself, often), the HP task still did not fit, marked
    the next victim, and so on forever: on tests/test_gfs_speed.py's busy workload (seed 0) the replay never
    ended (simulated time past 20 days for 40,000 s of arrivals) and with seed 1 it made 2,062 evictions
    against 30 for YARN-CS."""

    name = "chronus"
    summary = "Chronus: lease-based (spot 5 min, HP 20 min); victims evicted when their lease ends"
    citation = "Gao et al., SoCC '21"
    param_domains = {"spot_lease": Domain(gt=0.0, le=SECONDS.le), "hp_lease": Domain(gt=0.0, le=SECONDS.le)}

    def __init__(self, preempt: bool = True, spot_lease: float = 300.0, hp_lease: float = 1200.0):
        super().__init__(preempt)
        if spot_lease <= 0 or hp_lease <= 0:
            raise ValueError("leases must be > 0 s")
        self.spot_lease, self.hp_lease = spot_lease, hp_lease

    def on_start(self) -> None:
        super().on_start()
        self.draining: dict[int, int] = {}  # marked victim -> the HP task it drains for
        self.marks: dict[int, set[int]] = {}  # HP task -> its victims still draining
        self.drained: dict[int, int] = {}  # HP task -> victims evicted for it so far
        self.draining_in: dict[str, int] = {}  # pool -> victims draining there
        self.lease_evictions = 0

    def lease_end(self, job: int) -> float:
        start = self.started_at.get(job, self.ctx.now)
        k = math.floor((self.ctx.now - start) / self.spot_lease) + 1
        return start + k * self.spot_lease

    def _unmark(self, v: int) -> int | None:
        hp = self.draining.pop(v, None)
        if hp is not None:
            self._touch(self.placed.get(v, ()))  # v is evictable again: its nodes' rooms change
            self.marks[hp].discard(v)
            pool = self.pool_key(v)
            self.draining_in[pool] -= 1
        return hp

    def evictable(self, job: int) -> bool:
        return job not in self.draining and super().evictable(job)

    def quota_room(self, pool: str) -> float:
        return 0.0 if self.draining_in.get(pool, 0) > 0 else math.inf

    def _execute(self, job: int, victims: set[int], placement: Placement_t | None) -> bool:
        if not victims:
            return super()._execute(job, victims, placement)
        marks = self.marks.setdefault(job, set())
        for v in sorted(victims):  # evict at the end of each victim's current lease, never inside it
            if v in self.draining:
                continue
            self.draining[v] = job
            self._touch(self.placed.get(v, ()))
            marks.add(v)
            pool = self.pool_key(v)
            self.draining_in[pool] = self.draining_in.get(pool, 0) + 1
            self.ctx.set_timer(self.lease_end(v), ("lease", v, self.started_at.get(v)))
        return False

    def try_preempt(self, job: int) -> bool:
        if self.marks.get(job):
            return False  # its victims are still draining: wait for them
        return super().try_preempt(job)

    def _start(self, job: int, placement: Placement_t) -> None:
        if not self.spot[job]:
            for v in sorted(self.marks.get(job, ())):  # started before all its victims drained: keep them
                self._unmark(v)
            self.marks.pop(job, None)
            if self.drained.pop(job, 0):  # its start needed evictions: it pays the preemption overhead
                self.ctx.add_overhead(job, self.preempt_overhead)
                self.n_preempting += 1
        super()._start(job, placement)

    def on_timer(self, payload: Any) -> None:
        if isinstance(payload, tuple) and payload[0] == "lease":
            _, v, started = payload
            if v in self.draining and self.started_at.get(v) == started and self.ctx.state(v) in (LOADING, RUNNING):
                hp = self._unmark(v)
                self.drained[hp] = self.drained.get(hp, 0) + 1
                self.lease_evictions += 1
                self.evict(v)

    def _forget(self, job: int) -> None:
        super()._forget(job)
        self._unmark(job)

    def stats(self) -> dict[str, Any]:
        return {**super().stats(), "lease_evictions": self.lease_evictions}


class Fgd(YarnCs):
    """FGD (ATC '23): fragmentation-gradient placement against the workload's request distribution."""

    name = "fgd"
    summary = "FGD: fragmentation gradient descent placement (FIFO, YARN-style preemption of spot)"
    citation = "Weng et al., ATC '23"

    def make_placement(self) -> Placement:
        return FgdPlacement()  # the workload's request mix: bound in on_start


def register_policies(register: Callable[..., None]) -> None:
    """Called by sim/policies/__init__.py: every GFS variant and baseline."""
    for cls in (Gfs, YarnCs, Chronus, Lyra, Fgd):
        register(cls)
    for name, (summary, defaults) in ABLATIONS.items():
        register(Gfs, name, summary, **defaults)
