"""Failures in the job lifecycle: timed failure events (trace-driven or a seeded generator) and the
restart rule.

A :class:`Failure` at time ``time`` hits a job (``job``: index or job id), a node (``node`` of
``partition``) or both. A job hit while loading or running stops at once: its GPUs free now, the
training since its last checkpoint is lost (``checkpoint_interval`` s of training between checkpoints,
per job; none: the whole attempt, i.e. everything since it last started, is lost), and the
:class:`RestartRule` decides: requeue after ``delay`` s (the job waits meanwhile), or, after
``max_attempts`` failures, give up: the job ends in the terminal FAILED state. A job that is saving
when hit keeps its checkpoint (it is written to remote storage) and is requeued as after a normal
save. Queued or finished jobs are not affected. A node failure fails every job holding GPUs on the
node, takes the node down (no placements, its GPUs out of the totals) and brings it back ``repair``
seconds later. A failure may carry a ``cause`` (what the policy sees through ``ctx.failure_cause``) and
its own ``restart_delay``; a policy's ``on_failure(job)`` may also return a delay (seconds) that then
wins: e.g. SchedMate's failure handler restarts a recognised infrastructure failure after diagnosis and
recovery instead of after a human's reaction time.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from features.plugins import Registry, new_registry, parse_spec
from sim.profiler_partition import with_profiler


@dataclass(frozen=True)
class Failure:
    """One failure event. ``node`` numbers a node of ``partition`` (index or name); ``repair`` is how
    long a failed node stays down (s)."""

    time: float
    job: int | str | None = None
    node: int | None = None
    partition: int | str = 0
    repair: float = 0.0
    cause: str = ""  # e.g. "infrastructure/nccl": policies read it as ctx.failure_cause(job)
    restart_delay: float | None = None  # overrides the RestartRule's delay for the jobs it fails
    # A job failure that strikes when the job has done ``after`` s of work (at speed 1), wherever and
    # whenever it runs (a trace's failed attempt), once. Engines that know it (``Engine.RELATIVE_FAILURES``)
    # ignore ``time`` for it; older ones fail the job at ``time`` (the trace's wall-clock estimate).
    after: float | None = None

    def __post_init__(self) -> None:
        if not math.isfinite(self.time) or self.time < 0:
            raise ValueError(f"failure time must be a finite number >= 0, got {self.time}")
        if self.job is None and self.node is None:
            raise ValueError("a failure names a job, a node or both")
        if self.repair < 0 or not math.isfinite(self.repair):
            raise ValueError(f"repair time must be finite and >= 0, got {self.repair}")
        if self.restart_delay is not None and (self.restart_delay < 0 or not math.isfinite(self.restart_delay)):
            raise ValueError(f"restart delay must be finite and >= 0, got {self.restart_delay}")
        if self.after is not None and (self.job is None or not math.isfinite(self.after) or self.after < 0):
            raise ValueError(f"a failure 'after' N s of work names a job and N >= 0, got {self.after}")


@dataclass(frozen=True)
class RestartRule:
    """Requeue a failed job after ``delay`` s; after ``max_attempts`` failures (None: never) it fails
    for good."""

    delay: float = 0.0
    max_attempts: int | None = None

    def __post_init__(self) -> None:
        if self.delay < 0 or not math.isfinite(self.delay):
            raise ValueError(f"restart delay must be finite and >= 0, got {self.delay}")
        if self.max_attempts is not None and self.max_attempts < 1:
            raise ValueError("max_attempts must be >= 1 (or None for always restart)")

    def restart(self, failures_so_far: int) -> bool:
        return self.max_attempts is None or failures_so_far < self.max_attempts


def node_failures(nodes: Sequence[tuple[int | str, int]], rate_per_hour: float, repair_s: float,
                  horizon_s: float, seed: int = 0, start_s: float = 0.0) -> list[Failure]:
    """A seeded parametric generator: each (partition, node) fails as a Poisson process of
    ``rate_per_hour`` while up, stays down ``repair_s`` seconds, until ``horizon_s``. Sorted by time."""
    if rate_per_hour < 0 or repair_s < 0 or horizon_s < start_s:
        raise ValueError("rate, repair time and horizon must be >= 0 (horizon after start)")
    out: list[Failure] = []
    if rate_per_hour == 0:
        return out
    rng = np.random.default_rng(seed)
    mean_up = 3600.0 / rate_per_hour
    for partition, node in nodes:
        t = start_s
        while True:
            t += float(rng.exponential(mean_up))
            if t >= horizon_s:
                break
            out.append(Failure(time=t, node=node, partition=partition, repair=repair_s))
            t += repair_s
    out.sort(key=lambda f: (f.time, str(f.partition), f.node))
    return out


def cluster_nodes(cluster) -> list[tuple[int, int]]:
    """Every (partition index, node) of a built cluster, for :func:`node_failures`."""
    return [(p, n) for p, part in enumerate(cluster.partitions) for n in range(len(part.capacities))]


# -- failures from a spec string (--failures SPEC) -------------------------------------------------
#: failure categories and their components (the Failure Handler's classes); a cause reads "category/component"
CATEGORIES: dict[str, tuple[str, ...]] = {
    "infrastructure": ("gpu", "nvlink", "network", "nccl", "node", "storage"),
    "framework": ("oom", "dataloader", "shape"),
    "script": ("import", "key", "type", "syntax", "file"),
}
DEFAULT_MIX = (0.5, 0.3, 0.2)  # infrastructure / framework / script shares of parametric failures
_TRACE_KEYS = ("reaction", "attempts", "checkpoint")
_RATE_KEYS = ("rate", "repair", "checkpoint", "reaction", "mix", "attempts", "horizon")
#: failure models by name (features.plugins; entry-point group ``schedcast.failures``). The built-ins
#: (None here) are parsed below; a plug-in is ``function(workload, seed, **params) -> (failures, RestartRule
#: | None)``, named as ``--failures NAME[:key=value,...]``.
FAILURES: Registry = new_registry("failures", noun="failure model")
for _name in ("none", "trace", "rate"):
    FAILURES.register(_name, None)


def failure_category(cause: str) -> str:
    """'infrastructure/nccl' -> 'infrastructure'; '' or a node label -> 'infrastructure' when a node
    failed ('node N of partition P'), else 'unknown'."""
    head = cause.split("/", 1)[0].strip().lower()
    if head in CATEGORIES:
        return head
    return "infrastructure" if cause.startswith("node ") else "unknown"


#: Bounds checked before any failure is drawn: ``rate=1e12`` would draw ~1e13 events (memory, hours).
MAX_RATE_PER_HOUR = 10_000.0
MAX_FAILURE_EVENTS = 5_000_000
#: Largest time field (repair, checkpoint, reaction, horizon): 100 years in seconds.
MAX_SECONDS = 100 * 365 * 86_400.0
_MAXIMA = {"rate": MAX_RATE_PER_HOUR, "attempts": 1_000_000.0}


def _number(field: str, text: str, *, minimum: float = 0.0, integer: bool = False) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"--failures: bad field {field!r}: expected a number, got {text!r}") from None
    if not math.isfinite(value) or value < minimum or (integer and value != int(value)):
        kind = "a whole number" if integer else "a number"
        raise ValueError(f"--failures: bad field {field!r}: expected {kind} >= {minimum:g}, got {text!r}")
    maximum = _MAXIMA.get(field, MAX_SECONDS)
    if value > maximum:
        raise ValueError(f"--failures: bad field {field!r}: at most {maximum:g}, got {text!r}")
    return value


def _plugin_spec(text: str) -> tuple[str, dict[str, object]]:
    """A plug-in failure model's ``name[:key=value,...]``: the name looked up, each number checked against
    the domain the model's typed parameters declare (features.plugins.Domain; else finite)."""
    name, params = parse_spec(text, "--failures")
    FAILURES.check_params(name, params)
    return name, params


def parse_failure_spec(spec: str) -> tuple[str, dict[str, object]]:
    """'none' | 'trace[,reaction=S,attempts=N,checkpoint=S]' |
    'rate=R,repair=S,checkpoint=S,reaction=S[,mix=I/F/S,attempts=N,horizon=S]' -> (mode, fields).

    Every error is one ValueError line naming the bad field."""
    text = (spec or "").strip()
    if text.lower() in ("", "none"):
        return "none", {}
    name, colon, rest = text.partition(":")
    if colon and not set(name) & set("=,"):  # the one grammar, name:key=value,...
        name = name.strip().lower() if name.strip().lower() in ("trace", "rate") else name.strip()
        if name == "rate":
            text = rest
        elif name == "trace":
            text = "trace," + rest
        else:
            FAILURES.lookup(name)
            return _plugin_spec(text)
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if "=" not in parts[0] and parts[0].lower() not in ("trace", "rate"):  # a plug-in's name, or a typo
        FAILURES.lookup(parts[0].partition(":")[0].strip())
        return _plugin_spec(text)
    mode = "trace" if parts[0].lower() == "trace" else "rate"
    if mode == "trace":
        parts = parts[1:]
    allowed = _TRACE_KEYS if mode == "trace" else _RATE_KEYS
    fields: dict[str, object] = {}
    for part in parts:
        key, eq, value = part.partition("=")
        key = key.strip().lower()
        if not eq:
            raise ValueError(f"--failures: bad field {key!r}: expected key=value (spec {spec!r}); use none, "
                             "trace[,reaction=S] or rate=R,repair=S,checkpoint=S,reaction=S")
        if key not in allowed:
            raise ValueError(f"--failures: unknown field {key!r} for {mode} failures; valid: {', '.join(allowed)}")
        if key in fields:
            raise ValueError(f"--failures: field {key!r} given twice")
        value = value.strip()
        if key == "mix":
            shares = value.split("/")
            if len(shares) != 3:
                raise ValueError(f"--failures: bad field 'mix': expected three shares "
                                 f"infrastructure/framework/script, e.g. 0.5/0.3/0.2, got {value!r}")
            mix = tuple(_number("mix", s) for s in shares)
            if sum(mix) <= 0:
                raise ValueError("--failures: bad field 'mix': the shares must not all be 0")
            fields["mix"] = tuple(m / sum(mix) for m in mix)
        elif key == "attempts":
            fields[key] = int(_number(key, value, minimum=1, integer=True))
        else:
            fields[key] = _number(key, value)
    if mode == "rate" and "rate" not in fields:
        raise ValueError(f"--failures: missing field 'rate' (failures per hour, cluster-wide) in {spec!r}; "
                         "use none, trace or rate=R,repair=S,checkpoint=S,reaction=S")
    return mode, fields


def failures_from_spec(spec: str, workload, seed: int) -> tuple[list[Failure], RestartRule | None]:
    """The failures of a replay from ``--failures SPEC`` (see :func:`parse_failure_spec`).

    - ``none``: no failures, no restart rule.
    - ``trace``: from the workload frame's failure columns (features.traces.failures): every job whose
      failed attempt was resubmitted (``fail_time`` set, ``resubmitted`` true) fails ``fail_time`` s
      after it started in the trace (``submit + queue_time + fail_time``; queue_time 0 when the trace
      has none) with its recorded ``failure_cause``, and restarts as the same job (the resubmission is
      linked to it). Jobs that failed for good or were killed early already end early (their trace
      duration). Each failure also carries ``after`` = ``fail_time``: an engine with relative failures
      (``Engine.RELATIVE_FAILURES``) fails the job when it has done that much work, wherever the replay
      scheduled it; an engine without them fails it at the absolute ``time``, and a job the replay has
      not started by then (or already finished) is spared (the replay's ``failures`` say how many hit).
    - ``rate=R,...``: R failures per hour over the whole cluster, a Poisson process until ``horizon`` s
      (default: the last submission plus twice the time the cluster needs for all the work); each hits
      a node drawn with probability proportional to its GPUs (so a job's chance grows with its GPU
      count) and fails every job on it. Its cause is drawn from ``mix`` (infrastructure / framework /
      script shares); an infrastructure failure takes the node down for ``repair`` s (default 3,600),
      the others leave it up. Nodes that Lucid's profiler would carve out are never picked, so every
      policy sees the same failures.
    - ``checkpoint=S`` gives every job without its own checkpoint interval one of S s (the workload's
      ``checkpoint`` list is updated in place); ``reaction=S`` is the human reaction time before a
      failed job is resubmitted (default 600 s), ``attempts=N`` ends a job in FAILED after N failures.
    """
    mode, f = parse_failure_spec(spec)
    if mode == "none":
        return [], None
    if mode not in ("trace", "rate"):  # a plug-in failure model
        return FAILURES.lookup(mode)(workload, seed, **f)
    rule = RestartRule(delay=float(f.get("reaction", 600.0)), max_attempts=f.get("attempts"))  # type: ignore[arg-type]
    if "checkpoint" in f:
        c = float(f["checkpoint"])  # type: ignore[arg-type]
        if c > 0:
            workload.checkpoint[:] = [c if not math.isfinite(x) else x for x in workload.checkpoint]
    if mode == "trace":
        return trace_failures(workload), rule
    return rate_failures(workload, rate_per_hour=float(f["rate"]), repair_s=float(f.get("repair", 3600.0)),
                         mix=f.get("mix", DEFAULT_MIX), horizon_s=f.get("horizon"), seed=seed), rule  # type: ignore[arg-type]


def trace_failures(workload) -> list[Failure]:
    """Job failures from the frame's ``fail_time`` / ``resubmitted`` / ``failure_cause`` columns."""
    frame = workload.frame
    if "fail_time" not in frame:
        raise ValueError("--failures trace: the workload has no failure columns (fail_time); use a preset "
                         "with failures (--synthetic helios-failures or acme-failures) or --format acme-failures")
    fail = np.asarray(frame["fail_time"].astype("Float64").fillna(np.nan).to_numpy(dtype=float))
    if "resubmitted" in frame:
        again = frame["resubmitted"].astype("boolean").fillna(False).to_numpy(dtype=bool)
    else:
        again = np.isfinite(fail)
    queue = (frame["queue_time"].astype("Float64").fillna(0.0).to_numpy(dtype=float)
             if "queue_time" in frame else np.zeros(len(frame)))
    causes = (frame["failure_cause"].astype("string").fillna("").tolist() if "failure_cause" in frame
              else [""] * len(frame))
    out = []
    for j in np.flatnonzero(np.isfinite(fail) & again & (fail >= 0)):
        j = int(j)
        if fail[j] >= workload.duration[j]:
            continue  # it would have finished first
        out.append(Failure(time=float(workload.submit[j] + max(queue[j], 0.0) + fail[j]), job=j,
                           cause=causes[j] or "unknown", after=float(fail[j])))
    out.sort(key=lambda x: (x.time, x.job))
    return out


def _failure_nodes(workload) -> list[tuple[str, int, int]]:
    """(partition name, node, GPUs) of every node that stays in its partition when Lucid carves its
    profiler (auto size) out of the cluster, so that failures name the same nodes under every policy."""
    cluster = workload.cluster
    keep = [len(p.capacities) for p in cluster.partitions]
    try:
        carved = with_profiler(workload, nodes="auto", carve=True).cluster
        keep = [len(p.capacities) for p in carved.partitions[: len(keep)]]
    except ValueError:
        pass
    return [(p.name, n, int(p.capacities[n])) for p, k in zip(cluster.partitions, keep) for n in range(k)
            if p.capacities[n] > 0]


def rate_failures(workload, *, rate_per_hour: float, repair_s: float = 3600.0,
                  mix: Sequence[float] = DEFAULT_MIX, horizon_s: float | None = None,
                  seed: int = 0) -> list[Failure]:
    """Cluster-wide Poisson failures on nodes drawn by GPU count (see :func:`failures_from_spec`)."""
    if rate_per_hour < 0 or repair_s < 0:
        raise ValueError("rate and repair time must be >= 0")
    if rate_per_hour == 0 or len(workload) == 0:
        return []
    nodes = _failure_nodes(workload)
    if not nodes:
        return []
    if horizon_s is None:
        total_gpus = sum(g for _, _, g in nodes)
        work = float(np.dot(workload.duration, workload.gpus))
        horizon_s = max(workload.submit) + 2.0 * max(work / max(total_gpus, 1), max(workload.duration))
    rng = np.random.default_rng(np.random.SeedSequence([int(seed) & 0xFFFFFFFF, 0x5C4ED]))
    expected = rate_per_hour * horizon_s / 3600.0
    if not math.isfinite(expected) or expected > MAX_FAILURE_EVENTS:
        raise ValueError(f"--failures: rate={rate_per_hour:g} per hour over {horizon_s:,.0f} s is "
                         f"~{expected:.3g} failures, more than the {MAX_FAILURE_EVENTS:,} a replay may have")
    count = int(rng.poisson(expected))
    times = np.sort(rng.uniform(0.0, horizon_s, size=count))
    weights = np.asarray([g for _, _, g in nodes], dtype=float)
    which = rng.choice(len(nodes), size=count, p=weights / weights.sum())
    mix_arr = np.asarray(mix, dtype=float)
    cats = rng.choice(3, size=count, p=mix_arr / mix_arr.sum())
    names = list(CATEGORIES)
    out = []
    for t, w, c in zip(times, which, cats):
        category = names[int(c)]
        component = CATEGORIES[category][int(rng.integers(len(CATEGORIES[category])))]
        part, node, _ = nodes[int(w)]
        out.append(Failure(time=float(t), node=node, partition=part,
                           repair=repair_s if category == "infrastructure" else 0.0,
                           cause=f"{category}/{component}"))
    return out
