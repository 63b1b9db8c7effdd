"""The shaped queue of the ordered queue policies (sim.policies.base.ShapedQueue, issue 21): a
work-conserving pass looks at the head of each request shape instead of every waiting job, and starts
the same jobs in the same order as the job-by-job pass over one sorted list."""
from __future__ import annotations

import random
from types import SimpleNamespace

import pytest

from sim.placement import Consolidate
from sim.placement.heavy_edge import HeavyEdge
from sim.placement.pool import NodePool
from sim.policies.base import ShapedQueue, SortedQueue, misfits_stay, start_in_order


class CountingList(list):
    """A list that counts item reads (how many jobs a pass looked at)."""

    reads = 0

    def __getitem__(self, i):
        CountingList.reads += 1
        return super().__getitem__(i)


def fake_ctx(gpus: list[int], nodes: list[int], placement=None):
    """Just enough of a Context for start_in_order: a real pool and placement, starts recorded."""
    pool = NodePool(nodes)
    placement = placement or Consolidate()
    started: list[int] = []
    held: dict[int, list] = {}

    def try_start(job: int) -> bool:
        got = placement.place(pool, gpus[job])
        if got is None:
            return False
        pool.allocate(got, job)
        started.append(job)
        held[job] = got
        return True

    def finish(job: int) -> None:
        pool.release(held.pop(job), job)

    jobs = SimpleNamespace(gpus=gpus, simple=True)
    return SimpleNamespace(jobs=jobs, pool=pool, placement=placement, try_start=try_start, started=started,
                           finish=finish, held=held)


def fill(queue, keys, gpus):
    for job, key in enumerate(keys):
        if isinstance(queue, ShapedQueue):
            queue.add(key, job, gpus[job])
        else:
            queue.add(key, job)


@pytest.mark.parametrize("placement", [Consolidate(), Consolidate(strict=False), HeavyEdge(),
                                       HeavyEdge(most_free=False)])
@pytest.mark.parametrize("work_conserving", [True, False])
def test_shaped_pass_starts_what_the_list_pass_starts(placement, work_conserving):
    rng = random.Random(7)
    for trial in range(40):
        n = rng.randint(1, 300)
        gpus = [rng.choice([1, 1, 1, 2, 3, 4, 8, 8, 12, 16, 24]) for _ in range(n)]
        keys = [rng.choice([rng.random(), 1.0, 2.0]) for _ in range(n)]  # ties break by job index
        nodes = [8] * rng.randint(1, 12)
        busy = [(node, rng.randint(0, 8)) for node in range(len(nodes))]
        out = []
        for queue in (SortedQueue(), ShapedQueue()):
            ctx = fake_ctx(gpus, nodes, placement)
            for node, used in busy:
                if used:
                    ctx.pool.allocate([(node, used)], -1 - node)
            fill(queue, keys, gpus)
            for _ in range(4):  # a few passes, with the oldest running job finishing in between
                start_in_order(ctx, queue, work_conserving=work_conserving)
                if ctx.held:
                    ctx.finish(min(ctx.held))
            out.append((list(ctx.started), [j for _, j in queue.items], len(queue)))
        assert out[0] == out[1], (trial, placement, work_conserving)


def test_a_work_conserving_pass_looks_at_shapes_not_jobs():
    # 2,000 waiting 8-GPU jobs and one 1-GPU job at the back, 3 GPUs free: the job-by-job pass read
    # every job's GPU count (2,001 reads); the shaped pass reads the head of each shape.
    n = 2001
    gpus = CountingList([8] * (n - 1) + [1])
    ctx = fake_ctx(gpus, [8, 8])
    ctx.pool.allocate([(0, 8)], -1)
    ctx.pool.allocate([(1, 5)], -2)
    queue = ShapedQueue()
    fill(queue, list(range(n)), list(gpus))
    CountingList.reads = 0
    start_in_order(ctx, queue, work_conserving=True)
    assert ctx.started == [n - 1]
    assert CountingList.reads <= 10
    assert len(queue) == n - 1 and [j for _, j in queue.items][:2] == [0, 1]


def test_misfits_stay_only_for_placements_known_to_keep_them():
    pool = NodePool([8, 8])
    assert misfits_stay(SimpleNamespace(placement=Consolidate(), pool=pool))
    assert misfits_stay(SimpleNamespace(placement=HeavyEdge(), pool=pool))

    class Scored(HeavyEdge):  # a subclass may place otherwise: not assumed
        pass

    assert not misfits_stay(SimpleNamespace(placement=Scored(), pool=pool))
    typed = NodePool([8, 8], ["A100", "V100"])
    assert not misfits_stay(SimpleNamespace(placement=Consolidate(), pool=typed))


def test_shaped_queue_add_remove_and_items():
    q = ShapedQueue()
    for job, (key, shape) in enumerate([(3.0, 1), (1.0, 8), (2.0, 1), (1.0, None), (0.5, 8)]):
        q.add(key, job, shape)
    assert [j for _, j in q.items] == [4, 1, 3, 2, 0] and len(q) == 5
    assert q.remove(2) and not q.remove(2) and len(q) == 4
    q.items = [e for e in q.items if e[1] != 4]  # assigning refiles the jobs under their shapes
    assert [j for _, j in q.items] == [1, 3, 0] and set(q.shapes) == {1, 8, ("job", 3)}
    from sim.policies.base import Policy

    p = Policy()
    p.queue = q
    assert p.release(1) and p.waiting_count() == 2 and not p.release(1)


class ListQueue(SortedQueue):
    """One sorted list (the job-by-job pass), taking the shaped queue's ``add`` signature."""

    def add(self, key, job, shape=None) -> None:
        super().add(key, job)


def _schedules(workload, policies, placement=None):
    from sim import simulate

    # fast_path=False: the general loop, where the policies' own queues decide (sim.kernel replays the
    # plain static-key queues with a list of its own)
    return {p: (r.first_start, r.end) for p in policies
            for r in [simulate(workload, p, placement=placement, predictor="noisy:0.5", seed=1, fast_path=False)]}


@pytest.mark.slow
def test_queue_policies_replay_as_with_one_sorted_list(philly_file, monkeypatch):
    # The real trace (Philly, 1,500 jobs on philly-pool sized for an offered load of 1.5): every ordered
    # queue policy gives the same schedule with the shaped queue and with the job-by-job list.
    import sim.policies.queueing as Q
    from features.traces import load_trace
    from sim.cluster import load_cluster
    from sim.sizing import sized_for_load
    from sim.workload import build_workload

    names = ["fifo", "sjf", "spjf", "spwf", "wcs-duration", "wcs-workload", "wcs-subtime", "qssf"]
    table = load_trace(philly_file, "philly")
    cluster = sized_for_load(table.frame.iloc[:1500], load_cluster("philly-pool"), 1.5)  # jobs queue
    philly = build_workload(table, cluster, limit=1500)
    shaped = {pl: _schedules(philly, names, pl) for pl in (None, "heavy-edge")}
    with monkeypatch.context() as m:
        m.setattr(Q, "ShapedQueue", ListQueue)
        listed = {pl: _schedules(philly, names, pl) for pl in (None, "heavy-edge")}
    assert shaped == listed
    shaped = shaped[None]
    assert shaped["wcs-duration"] != shaped["spjf"]  # the trace queues: work conservation changes the schedule
