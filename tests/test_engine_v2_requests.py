"""Engine v2, items 1-3: typed requests (gangs, fractions, GPU models), the node pool that knows what
is where, placement plug-ins that see the request, would_fit. Hand-worked golden traces."""
import copy
import random

import pytest

from evaluation.metrics import allocation, check_identities, job_table, utilisation
from sim import simulate
from sim.engine import Engine, SimulationError
from sim.placement import Consolidate, FirstFit, NodePool, make_placement
from sim.policies.base import Policy
from sim.workload import Request, build_workload
from tests.helpers import cluster, table, workload


class Greedy(Policy):
    """Starts waiting jobs in arrival order whenever they fit (work-conserving, no quick checks)."""

    def __init__(self):
        self.waiting = []

    def on_arrival(self, job):
        self.waiting.append(job)

    def schedule(self):
        self.waiting[:] = [j for j in self.waiting if not (self.ctx.may_fit(j) and self.ctx.try_start(j))]


def starts(result):
    return {job: extra for _, kind, job, extra in result.event_log if kind == "start"}


# -- item 1: the request ---------------------------------------------------------------------------
def test_request_from_optional_columns_and_defaults():
    w = workload([(0, 10, 4), (1, 10, 4), (2, 10, 1), (3, 10, 2)], nodes=2, gpus=4,
                 num_pods=[None, 2, None, None], gpus_per_pod=[None, 2, None, None],
                 gpu_fraction=[None, None, 0.25, None], job_class=["hp", None, "spot", "spot"],
                 checkpoint_interval=[None, 30.0, None, None], stages=[None, None, None, 2],
                 replicas=[None, None, None, 1])
    assert w.request(0) == Request(1, 4, 0, None, "hp", None, spread=True)  # today's job: one spreadable pod
    assert w.request(1) == Request(2, 2, 0, None, None, None, spread=False)  # a gang of 2 x 2 GPUs
    r = w.request(2)
    assert (r.pods, r.milli, r.fraction, r.gpus, r.whole_gpus, r.job_class) == (1, 250, 0.25, 0.25, 1, "spot")
    assert w.request(3).stages == (2, 1)
    assert w.checkpoint[1] == 30.0 and w.checkpoint[0] == float("inf")
    assert w.gpu_demand == [4, 4, 0.25, 2] and w.gpus == [4, 4, 1, 2]
    assert not w.simple
    plain = workload([(0, 10, 4)])
    assert plain.simple and plain.request(0) == Request(1, 4)

    class Ask(Greedy):
        seen = {}

        def on_arrival(self, job):
            Ask.seen[job] = self.ctx.request(job)
            super().on_arrival(job)

    Engine(w, Ask).run()
    assert Ask.seen[1].pods == 2 and Ask.seen[2].milli == 250


def test_bad_pod_columns_are_rejected_and_counted():
    w = workload([(0, 10, 4), (1, 10, 4), (2, 10, 8)], nodes=2, gpus=4,
                 num_pods=[3, 2, 1], gpus_per_pod=[None, 2, 8])
    # 4 GPUs in 3 pods does not divide; a pod of 8 GPUs fits no 4-GPU node.
    assert w.report["rejected"] == {"num_pods x gpus_per_pod does not match num_gpus": 1,
                                    "a pod needs more GPUs than any node has": 1}
    assert w.job_id == ["j1"]


def test_limit_must_be_positive():
    t = table([(0, 1, 1), (1, 1, 1), (2, 1, 1)])
    for bad in (0, -5, 1.5, True):
        with pytest.raises(ValueError, match="limit"):
            build_workload(t, cluster(), limit=bad)
    assert len(build_workload(t, cluster(), limit=2)) == 2


# -- gangs -----------------------------------------------------------------------------------------
def test_golden_gang_all_or_nothing():
    # 2 nodes x 4 GPUs, FIFO, consolidate. j0 (3 GPUs) 0-10 on node 0 (1 GPU left). j1 = 2 pods x 2 GPUs
    # at 1: both pods on node 1, 1-6. j2 = 2 pods x 3 GPUs at 2: at 6 node 1 has 4 free, enough for one
    # pod only: the gang waits for node 0 too and runs 10-14 on both nodes. j3 (1 GPU) at 3 waits behind
    # j2 (strict FIFO) and runs 10-12 on the one GPU left of node 0... which j2's pod leaves: 4-3 = 1.
    w = workload([(0, 10, 3), (1, 5, 4), (2, 4, 6), (3, 2, 1)], nodes=2, gpus=4,
                 num_pods=[None, 2, 2, None], gpus_per_pod=[None, 2, 3, None])
    result = simulate(w, "fifo", check_invariants=True, record_events=True)
    jobs = job_table(result)
    check_identities(jobs)
    assert jobs["jct"].tolist() == pytest.approx([10, 5, 12, 9])
    placed = starts(result)
    assert placed[1] == [(1, 4)] and placed[2] == [(0, 3), (1, 3)]


def test_gang_versus_spreadable_job():
    # j2 needs 5 GPUs at 2; at 6 node 1 has 4 free and node 0 has 1. As one spreadable pod, best-fit
    # spreads it over both nodes; as 5 single-GPU pods it takes the same GPUs; as a gang of 2 pods of
    # 2 and 3 GPUs... (not expressible: pods are equal) -- as a single 5-GPU pod that must sit on one
    # node (num_pods=1) it cannot fit a 4-GPU node and is rejected when the workload is built.
    spread = workload([(0, 10, 3), (1, 5, 4), (2, 4, 5)], nodes=2, gpus=4)
    gang = workload([(0, 10, 3), (1, 5, 4), (2, 4, 5)], nodes=2, gpus=4,
                    num_pods=[None, None, 5], gpus_per_pod=[None, None, 1])
    a = job_table(simulate(spread, "fifo", placement="best-fit", check_invariants=True))
    b = job_table(simulate(gang, "fifo", placement="best-fit", check_invariants=True))
    assert a["first_start"].tolist() == [0, 1, 6]        # 4 + 1 GPUs over two nodes
    assert b["first_start"].tolist() == [0, 1, 6]        # 5 single-GPU pods: any nodes, same result
    one_pod = workload([(0, 10, 3), (2, 4, 5)], nodes=2, gpus=4, num_pods=[None, 1])
    assert one_pod.report["rejected"] == {"a pod needs more GPUs than any node has": 1}


# -- fractions -------------------------------------------------------------------------------------
def test_golden_fractions_share_one_gpu():
    # 1 node x 1 GPU. j0 (0.5) 0-10 opens GPU 0; j1 (0.5) at 2 shares it, 2-12; j2 (0.6) at 3 fits only
    # when the GPU is empty again: at 12, runs 12-17. The GPU is held all along: utilisation 1;
    # job-GPUs used: 0.5 (0-2), 1.0 (2-10), 0.5 (10-12), 0.6 (12-17).
    w = workload([(0, 10, 1), (2, 10, 1), (3, 5, 1)], nodes=1, gpus=1, gpu_fraction=[0.5, 0.5, 0.6])
    result = Engine(w, Greedy, check_invariants=True, record_events=True).run()
    jobs = job_table(result)
    check_identities(jobs)
    assert jobs["end"].tolist() == pytest.approx([10, 12, 17])
    assert starts(result) == {0: [(0, 0, 500)], 1: [(0, 0, 500)], 2: [(0, 0, 600)]}
    alloc = allocation(result)
    assert alloc["gpus_used"].tolist() == pytest.approx([0.5, 1.0, 0.5, 0.6, 0.0])
    assert alloc["gpus_held"].tolist() == pytest.approx([1, 1, 1, 1, 0])
    assert utilisation(result) == pytest.approx(1.0)
    assert result.work_done == pytest.approx(w.duration)   # GPU-seconds conserved


def test_two_half_pods_of_one_job_on_one_gpu():
    w = workload([(0, 10, 2)], nodes=1, gpus=1, gpu_fraction=[0.5], num_pods=[2])
    result = Engine(w, Greedy, check_invariants=True, record_events=True).run()
    assert starts(result)[0] == [(0, 0, 500), (0, 0, 500)]
    assert result.end == [10]


def test_fractional_pool_accounting():
    pool = NodePool([2])
    pool.allocate_shares([(0, 0, 300), (0, 0, 300)], job=7)
    pool.allocate_shares([(0, 0, 400)], job=8)
    assert pool.total_free == 1 and pool.shared_free(0) == {0: 0}
    assert pool.jobs_on(0) == pytest.approx({7: 0.6, 8: 0.4})
    with pytest.raises(RuntimeError, match="over-allocation"):
        pool.allocate_shares([(0, 0, 1)], job=9)
    pool.check()
    pool.release_shares([(0, 0, 600)], job=7)
    pool.release_shares([(0, 0, 400)], job=8)
    assert pool.total_free == 2 and not pool.shares
    pool.check()


# -- GPU models ------------------------------------------------------------------------------------
def test_golden_job_waits_for_its_gpu_model():
    # node 0: model A, node 1: model B (4 GPUs each); work-conserving by submission. j0 (A, 4) 0-10;
    # j1 (A, 2) at 1 waits for node 0 although node 1 is idle: 10-15. j2 (any, 4) at 2 runs on node 1,
    # 2-5. j3 (any, 6) fits no single model: rejected; j4 (model C) too.
    w = workload([(0, 10, 4), (1, 5, 2), (2, 3, 4), (3, 1, 6), (4, 1, 1)], nodes=2, gpus=4, types=["A", "B"],
                 gpu_type=["A", "A", None, None, "C"])
    assert w.report["rejected"] == {"no node of its GPU model in its partition": 1,
                                    "needs more GPUs of one model than its partition has": 1}
    result = simulate(w, "wcs-subtime", check_invariants=True, record_events=True)
    jobs = job_table(result)
    check_identities(jobs)
    assert jobs["jct"].tolist() == pytest.approx([10, 14, 3])
    assert starts(result) == {0: [(0, 4)], 1: [(0, 2)], 2: [(1, 4)]}


def test_untyped_job_stays_on_one_model():
    pool = NodePool([4, 4, 4], ["A", "B", "B"])
    pool.allocate([(1, 2)])
    req = Request(1, 6)  # spreadable, any model: only the two B nodes can hold 6 together
    assert Consolidate(strict=False).place(pool, req) == [(2, 4), (1, 2)]
    assert FirstFit().place(pool, req) == [(1, 2), (2, 4)]
    assert Consolidate(strict=False).place(pool, Request(1, 6, gpu_type="A")) is None
    assert Consolidate().place(pool, 6) == [(2, 4), (1, 2)]   # a bare count in a typed pool: same rule


def test_heterogeneous_cluster_from_node_groups(tmp_path):
    from sim.cluster import load_cluster

    path = tmp_path / "mixed.yaml"
    path.write_text("name: mixed\nnode_groups:\n  - {count: 2, gpus_per_node: 8, gpu_type: A100}\n"
                    "  - {count: 3, gpus_per_node: 4, gpu_type: T4}\n")
    c = load_cluster(path)
    assert c.gpus == 28 and c.partitions[0].gpu_types == ["A100"] * 2 + ["T4"] * 3
    pool = NodePool(c.partitions[0].capacities, c.partitions[0].gpu_types)
    assert pool.typed and pool.type_max == {"A100": 8, "T4": 4}


def test_alibaba_node_lists_are_heterogeneous(shared_data):
    from sim.cluster import load_cluster

    for name, models in (("alibaba-v2023", 7), ("alibaba-spot-2026", 6)):
        part = load_cluster(name, shared_data).partitions[0]
        assert len(set(part.gpu_types)) == models


# -- item 2: what is where -------------------------------------------------------------------------
def test_pool_knows_jobs_and_classes_on_nodes():
    w = workload([(0, 10, 2), (0, 10, 1), (0, 10, 4)], nodes=2, gpus=4, job_class=["hp", "spot", "spot"])

    class Probe(Greedy):
        seen = None

        def schedule(self):
            super().schedule()
            pool = self.ctx.pool
            if self.ctx.now == 0:
                Probe.seen = ({n: pool.jobs_on(n) for n in range(2)}, {n: pool.classes_on(n) for n in range(2)})

    Engine(w, Probe, check_invariants=True).run()
    jobs_on, classes = Probe.seen
    assert jobs_on == {0: {0: 2, 1: 1}, 1: {2: 4}}
    assert classes == {0: {"hp": 1, "spot": 1}, 1: {"spot": 1}}


# -- item 3: placements ----------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["first-fit", "consolidate", "best-fit"])
def test_request_path_equals_count_path(name):
    # A plain Request must place exactly like the bare GPU count (the hot path) on random pools.
    rnd = random.Random(3)
    placement = make_placement(name)
    for _ in range(300):
        caps = [rnd.choice([2, 4, 8]) for _ in range(rnd.randint(1, 6))]
        pool = NodePool(caps)
        for node, cap in enumerate(caps):
            used = rnd.randint(0, cap)
            if used:
                pool.allocate([(node, used)])
        g = rnd.randint(1, 20)
        assert placement.place(pool, g) == placement.place(pool, Request(1, g))


def _snapshot(pool):
    return copy.deepcopy((pool.free, pool.buckets, pool.holders, pool.shares, pool.total_free, pool.cordoned))


def test_would_fit_is_side_effect_free():
    # 1 node x 4 GPUs: j0 2 GPUs, j1 2 GPUs running; j2 needs 3.
    w = workload([(0, 100, 2), (0, 100, 2), (1, 10, 3)], nodes=1, gpus=4)

    class Ask(Greedy):
        answers = []

        def schedule(self):
            super().schedule()
            if self.ctx.now == 1:
                before = _snapshot(self.ctx.pool)
                Ask.answers = [self.ctx.would_fit(2), self.ctx.would_fit(2, [0]), self.ctx.would_fit(2, [0, 1])]
                assert _snapshot(self.ctx.pool) == before

    Engine(w, Ask, check_invariants=True).run()
    assert Ask.answers == [None, None, [(0, 3)]]


def test_explicit_start_is_validated_against_the_request():
    w = workload([(0, 10, 4), (0, 10, 2)], nodes=2, gpus=4, types=["A", "B"], num_pods=[2, None],
                 gpus_per_pod=[2, None])

    class Bad(Policy):
        def on_arrival(self, job):
            pass

        def schedule(self):
            self.ctx.start(0, [(0, 3), (1, 1)])

    with pytest.raises(SimulationError, match="splits a pod"):
        Engine(w, Bad).run()

    class Mixed(Bad):
        def schedule(self):
            self.ctx.start(0, [(0, 2), (1, 2)])

    with pytest.raises(SimulationError, match="one GPU model"):
        Engine(w, Mixed).run()


def test_placement_per_policy_default_and_override():
    class Spread(Greedy):
        default_placement = "first-fit"

    from sim.policies import POLICIES, register

    register(Spread, "test-spread-default")
    try:
        w = workload([(0, 10, 1), (0, 10, 1)], nodes=2, gpus=4)
        # first-fit puts both on node 0; an override to scored:least_allocated spreads them.
        a = simulate(w, "test-spread-default", record_events=True)
        b = simulate(w, "test-spread-default", placement="scored:least_allocated=1", record_events=True)
        assert starts(a) == {0: [(0, 1)], 1: [(0, 1)]}
        assert starts(b) == {0: [(0, 1)], 1: [(1, 1)]}
    finally:
        POLICIES.pop("test-spread-default")
