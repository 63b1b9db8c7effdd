"""Cluster-level coordination: decisions that span partitions (GFS quotas per pool, Lucid's profiler
borrowing idle VC nodes), taken by one coordinator plug-in per replay instead of partition 0 acting as
leader or policies writing into each other's queues.

A policy class opts in with ``coordinator_class = MyCoordinator``; the engine makes one instance per
replay, binds it to a :class:`ClusterContext` and calls its hooks: ``on_start`` once before the first
event, ``on_timer(payload)`` for its own timers, ``after_schedule`` once per instant after the
partitions that saw events were scheduled (partitions its actions touch are scheduled again in the
same instant), ``on_end`` once after the last event, ``stats`` for the results. Policies reach it as
``ctx.coordinator``. It sees partitions through read-only :class:`PartitionView` objects and acts
through the few actions of the ClusterContext.
"""
from __future__ import annotations

from typing import Any

from sim.errors import SimulationError
from sim.states import QUEUED, STATE_NAMES


class Coordinator:
    """Base coordinator: does nothing. Subclass and override the hooks you need."""

    cctx: "ClusterContext"

    def bind(self, cctx: "ClusterContext") -> None:
        self.cctx = cctx

    def on_start(self) -> None:
        """Called once before the first event (set initial timers here)."""

    def on_timer(self, payload: Any) -> None:
        """A timer this coordinator set has fired."""

    def after_schedule(self) -> None:
        """Called once per instant, after the partitions that saw events were scheduled."""

    def on_end(self) -> None:
        """Called once after the last event."""

    def stats(self) -> dict[str, Any]:
        return {}


class PartitionView:
    """Read-only view of one partition for a coordinator."""

    __slots__ = ("_engine", "_p")

    def __init__(self, engine: Any, p: int):
        self._engine, self._p = engine, p

    @property
    def name(self) -> str:
        return self._engine.workload.cluster.partitions[self._p].name

    @property
    def index(self) -> int:
        return self._p

    @property
    def free_gpus(self) -> int:
        return self._engine.contexts[self._p].pool.total_free

    @property
    def capacity(self) -> int:
        """GPUs it has now (nodes lent out or down are not counted)."""
        return self._engine.contexts[self._p].pool.total_capacity

    @property
    def nominal_capacity(self) -> int:
        """GPUs it was configured with."""
        return self._engine.workload.cluster.partitions[self._p].gpus

    def idle_nodes(self) -> list[int]:
        return self._engine.contexts[self._p].pool.idle_nodes()

    def waiting(self) -> int:
        """Jobs waiting in its policy (the policy's ``waiting_count()``)."""
        policy = self._engine.policies[self._p]
        count = getattr(policy, "waiting_count", None)
        if count is not None:
            return int(count())
        queue = getattr(policy, "queue", None)
        return len(queue) if queue is not None else 0

    @property
    def running(self) -> frozenset[int]:
        """Jobs holding GPUs here (loading, running or saving)."""
        return frozenset(self._engine.contexts[self._p].running)

    def gpu_types(self) -> dict[str | None, int]:
        """GPUs per GPU model of the nodes it has now."""
        pool = self._engine.contexts[self._p].pool
        out: dict[str | None, int] = {}
        for cap, t in zip(pool.capacity, pool.gpu_type):
            if cap:
                out[t] = out.get(t, 0) + cap
        return out


class ClusterContext:
    """What a coordinator may see and do across partitions. Every action is validated at once."""

    __slots__ = ("_engine", "_views")

    def __init__(self, engine: Any):
        self._engine = engine
        self._views = [PartitionView(engine, p) for p in range(len(engine.contexts))]

    @property
    def now(self) -> float:
        return self._engine.now

    @property
    def partitions(self) -> list[str]:
        return [p.name for p in self._engine.workload.cluster.partitions]

    @property
    def jobs(self):
        """The workload (read it, never change it)."""
        return self._engine.workload

    @property
    def unfinished(self) -> int:
        """Jobs not yet finished (nor failed for good): periodic timers stop when it reaches 0."""
        return self._engine.unfinished

    @property
    def seed(self) -> int:
        return self._engine.seed

    def rng(self, stream: str):
        """A generator for the coordinator's own randomness (deterministic per run seed and stream)."""
        return self._engine.rng(stream, -1)

    def state(self, job: int) -> int:
        return self._engine.state[job]

    def partition_of(self, job: int) -> int:
        return self._engine.partition_of[job]

    def view(self, p: int | str) -> PartitionView:
        return self._views[self._engine.partition_index(p)]

    def move_node(self, node: int, src: int | str, dst: int | str) -> int:
        """Move an idle node from ``src`` to ``dst``; returns its number in ``dst``."""
        e = self._engine
        return e.contexts[e.partition_index(src)].move_node(node, dst)

    def cordon(self, p: int | str, node: int) -> None:
        """Stop new placements on a node (to drain it before a move)."""
        e = self._engine
        i = e.partition_index(p)
        e.contexts[i].cordon(node)
        e.mark_dirty(i)

    def transfer(self, job: int, dst: int | str) -> bool:
        """Move a waiting job to partition ``dst``: its policy gives it up (``release``), the
        destination's gets ``on_transfer``. False if the source policy does not release it."""
        e = self._engine
        if e.state[job] != QUEUED:
            raise SimulationError(f"t={e.now}: only a waiting job can move, job {job} is "
                                  f"{STATE_NAMES[e.state[job]]}")
        src = e.partition_of[job]
        policy = e.policies[src]
        release = getattr(policy, "release", None)
        if release is None:
            raise SimulationError(f"policy of partition {src} cannot release jobs (no release method)")
        if not release(job):
            return False
        e.mark_dirty(src)
        e.contexts[src].transfer(job, dst)
        return True

    def set_timer(self, at: float, payload: Any = None) -> None:
        """Call the coordinator's on_timer(payload) at time ``at`` (>= now)."""
        self._engine.set_timer(at, payload, self._engine.COORDINATOR)

    def reschedule(self, p: int | str) -> None:
        """Have partition ``p``'s policy schedule again in this instant."""
        e = self._engine
        e.mark_dirty(e.partition_index(p))
