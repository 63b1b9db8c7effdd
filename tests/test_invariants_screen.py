"""The invariant checker's screen (sim/invariants.py) changes how fast a checked replay runs, not what it
catches: every kind of violation the node-by-node walk raises is injected into a replay (behind the pool's
and the engine's back, as a bug would) and the screened check must raise the same violation (invariant,
time, job, node, partition, detail) as the walk alone (the checker before the screen)."""
import pytest

import sim.invariants as invariants
from sim.engine import Engine, InvariantViolation
from sim.states import QUEUED
from tests.helpers import workload
from tests.test_engine_v2_requests import Greedy

# j0: 2 GPUs on one node; j1: 6 GPUs over two nodes; j2, j3: halves and a quarter of one shared GPU;
# j4: a short job, done at t=6; j5 arrives at t=2 (a change the check looks at); node 3 stays free.
ROWS = [(0, 100, 2), (0, 100, 6), (0, 100, 1), (0, 100, 1), (1, 5, 1), (2, 100, 1)]
FRACTION = [None, None, 0.5, 0.25, None, None]


def _shared(e):
    pool = e.contexts[0].pool
    node = next(iter(pool.shares))
    return pool, node, next(iter(pool.shares[node]))


def _node_of(e, job):
    return e.alloc[job][0][0][0]


def _free_node_taken_quietly(e, total: bool = True):  # a GPU that no job holds leaves a free node
    pool = e.contexts[0].pool
    node = next(n for n, h in enumerate(pool.holders) if not h and n not in pool.shares)
    f = pool.free[node]
    pool.buckets[f].discard(node)
    pool.buckets[f - 1].add(node)
    pool.free[node] -= 1
    pool.total_free -= total  # (without: the node's count and the total disagree, allocated = recorded)


def _free_moved_between_busy_nodes(e):  # totals and buckets in sync, two nodes' counts not
    pool = e.contexts[0].pool
    busy = [n for n, h in enumerate(pool.holders) if h]
    a = next(n for n in busy if pool.free[n] > 0)
    b = next(n for n in busy if n != a and pool.free[n] < pool.capacity[n])
    for node, step in ((a, -1), (b, 1)):
        pool.buckets[pool.free[node]].discard(node)
        pool.free[node] += step
        pool.buckets[pool.free[node]].add(node)


def _job_swapped_on_its_node(e, job):  # the node's count stays right, the job's does not
    pool = e.contexts[0].pool
    node, count = e.alloc[job][0][-1]
    pool.holders[node][job] -= 1
    pool.holders[node][99] = 1


#: name -> (how the state is corrupted at t=2, or at j4's finish with "finish:", the invariant expected)
CORRUPTIONS = {
    "free above capacity": (lambda e: e.contexts[0].pool.free.__setitem__(3, 9), "no node over-allocated"),
    "negative free": (lambda e: e.contexts[0].pool.free.__setitem__(3, -1), "no node over-allocated"),
    "a GPU shared beyond 1000 milli": (lambda e: (lambda p, n, g: p.shares[n][g].__setitem__(2, 900))(*_shared(e)),
                                       "no GPU over its capacity"),
    "a share of zero": (lambda e: (lambda p, n, g: p.shares[n][g].__setitem__(77, 0))(*_shared(e)),
                        "no GPU over its capacity"),
    "a down node holding a job": (lambda e: e.contexts[0].pool.down.__setitem__(_node_of(e, 0), False),
                                  "a down node holds nothing"),
    "a node holding more than allocated": (lambda e: e.contexts[0].pool.holders[_node_of(e, 0)].__setitem__(0, 3),
                                           "GPUs held by jobs equal GPUs allocated"),
    "free GPUs moved between two busy nodes": (_free_moved_between_busy_nodes, "GPUs held by jobs equal GPUs allocated"),
    "a shared GPU not allocated": (lambda e: (lambda p, n, g: p.shares[n].__setitem__(3, {2: 10}))(*_shared(e)),
                                   None),
    "free total out of sync": (lambda e: setattr(e.contexts[0].pool, "total_free", e.contexts[0].pool.total_free + 1),
                               "free GPU total in sync"),
    "free total not updated": (lambda e: _free_node_taken_quietly(e, total=False), "free GPU total in sync"),
    "capacity total out of sync": (lambda e: setattr(e.contexts[0].pool, "total_capacity", 1),
                                   "GPU capacity total in sync"),
    "a node in the wrong bucket": (lambda e: e.contexts[0].pool.buckets[1].add(3), "buckets in sync"),
    "a cordoned node offered": (lambda e: e.contexts[0].pool.cordoned.add(3), "a cordoned node is offered for placement"),
    "a node in no bucket": (lambda e: e.contexts[0].pool.buckets[4].discard(3), "every node is in the buckets"),
    "a queued job holding GPUs": (lambda e: e.state.__setitem__(0, QUEUED), "only active jobs hold GPUs"),
    "a running job without a record": (lambda e: e.alloc.__setitem__(0, None), "a running job has an allocation"),
    "a running job outside its record": (lambda e: e.alloc[1][1].discard(1), "a running job has an allocation"),
    "a share the pool lost": (lambda e: (lambda p, n, g: p.shares[n][g].__setitem__(2, 100))(*_shared(e)),
                              "the pool records every share a job holds"),
    "a one-node job's GPUs swapped": (lambda e: _job_swapped_on_its_node(e, 0), "the pool records the GPUs each job holds"),
    "a two-node job's GPUs swapped": (lambda e: _job_swapped_on_its_node(e, 1), "the pool records the GPUs each job holds"),
    "a GPU allocated to nobody": (_free_node_taken_quietly, "GPUs held by jobs equal GPUs allocated"),
    "engine's GPU count off": (lambda e: setattr(e, "held_gpus", e.held_gpus + 1), "physical GPUs held in sync"),
    "finish:a finished job requeued": (lambda e: e.state.__setitem__(4, QUEUED), "a finished job stays done"),
    "finish:two completions": (lambda e: e.completions.__setitem__(4, 2), "each job completes at most once"),
    "finish:work lost": (lambda e: e.work_done.__setitem__(4, 4.0), "GPU-seconds conserved: a finished job did exactly its work"),
}


def _replay(name: str):
    corrupt, _ = CORRUPTIONS[name]
    at_finish = name.startswith("finish:")

    class Corrupting(Greedy):
        def schedule(self):
            super().schedule()
            if not at_finish and self.ctx.now == 2:
                corrupt(self.ctx._engine)  # deliberately behind the Context's back

        def on_finish(self, job):
            if at_finish and job == 4:
                corrupt(self.ctx._engine)

    w = workload(ROWS, nodes=4, gpus=4, gpu_fraction=FRACTION)
    with pytest.raises(InvariantViolation) as info:
        Engine(w, Corrupting, check_invariants=True).run()
    e = info.value
    return e.invariant, e.time, e.job, e.node, e.partition, e.detail


@pytest.mark.parametrize("name", list(CORRUPTIONS))
def test_the_screen_catches_what_the_walk_catches(name, monkeypatch):
    screened = _replay(name)
    monkeypatch.setattr(invariants, "_screen", lambda engine: False)  # every check walks: the old checker
    walked = _replay(name)
    assert screened == walked
    expected = CORRUPTIONS[name][1]
    assert expected is None or screened[0] == expected, screened
    assert screened[1] == (6 if name.startswith("finish:") else 2)  # at the event that did it


def test_a_clean_replay_passes_the_screen_without_walking(monkeypatch):
    walks = []
    monkeypatch.setattr(invariants, "_walk", lambda engine: walks.append(engine.now))
    w = workload(ROWS, nodes=4, gpus=4, gpu_fraction=FRACTION)
    Engine(w, Greedy, check_invariants=True).run()
    assert walks == []  # the screen's false alarms would walk (still correct, only slower)


#: corruptions of partition b, which no event changes after t=0 (its pool passed then and is not screened
#: again while it equals what passed): a change made behind its back is still caught at the next check
PARTITION_B = {
    "free above capacity": lambda pool: pool.free.__setitem__(1, 9),
    "a node in the wrong bucket": lambda pool: pool.buckets[0].add(1),
    "a job's GPUs moved in the pool": lambda pool: pool.holders[0].__setitem__(99, pool.holders[0].pop(1)),
    "free total out of sync": lambda pool: setattr(pool, "total_free", pool.total_free - 1),
    "an idle node's GPU held by a job that is not running": lambda pool: pool.holders[1].__setitem__(99, 1),
    "a node cordoned": lambda pool: pool.cordoned.add(1),
}


@pytest.mark.parametrize("name", list(PARTITION_B))
def test_an_unchanged_partition_corrupted_later_is_caught_at_the_next_check(name, monkeypatch):
    from sim.workload import build_workload
    from tests.helpers import cluster, table

    class Corrupting(Greedy):
        def schedule(self):
            super().schedule()
            if self.ctx.now == 2 and self.ctx.partition == 0:  # j2 starts on a; b is corrupted behind its back
                PARTITION_B[name](self.ctx._engine.contexts[1].pool)

    def replay():
        t = table([(0, 100, 2), (0, 100, 2), (2, 100, 1)], org=["a", "b", "a"])
        w = build_workload(t, cluster(gpus=4, partitions={"a": 2, "b": 2}))
        with pytest.raises(InvariantViolation) as info:
            Engine(w, Corrupting, check_invariants=True).run()
        e = info.value
        return e.invariant, e.time, e.job, e.node, e.partition, e.detail

    screened = replay()
    monkeypatch.setattr(invariants, "_screen", lambda engine: False)
    assert screened == replay()
    assert screened[1] == 2 and screened[4] == 1, screened
