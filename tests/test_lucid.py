"""Lucid (ASPLOS'23) mechanics on small hand-made workloads."""
import numpy as np
import pytest

from evaluation.metrics import check_identities, job_table
from sim import simulate
from sim.engine import Engine
from sim.interference import InterferenceModel
from sim.policies import get_policy
from sim.policies.lucid import PROFILER, LucidCoordinator, attach_profiles, with_profiler
from tests.helpers import workload


@pytest.fixture(scope="module")
def interference(shared_data):
    return InterferenceModel.load(shared_data)


def forced(profiled=(), scores=None):
    """A Lucid coordinator whose jobs count as profiled and whose sharing scores are forced."""

    class Forced(LucidCoordinator):
        def on_start(self):
            self.profiled.update(profiled)
            if scores is not None:
                self.scores[:] = scores
            super().on_start()

    return Forced


def lucid_engine(w, spec="lucid", profiler_nodes=1, keys=None, interference=None, coordinator=None):
    info, factory, params = get_policy(spec)
    w = attach_profiles(w, interference)
    if keys is not None:
        solo = interference.solo
        w.frame["profile_key"] = keys
        for col in ("gpu_util", "gmem_util", "gmem", "amp", "label"):
            w.frame[f"profile_{col}"] = solo.loc[keys, col].to_numpy()
    if params.get("profiler", True) and profiler_nodes:
        w = with_profiler(w, nodes=profiler_nodes, gpus_per_node=w.cluster.partitions[0].capacities[0])
    return Engine(w, factory, predictions=list(w.duration), check_invariants=True, coordinator=coordinator)


def test_interference_measured_and_fitted(interference):
    a, b = "ResNet18|32|0", "MobileNetV3|32|0"
    assert interference.measured(b, a)
    s1, s2 = interference.speeds(b, a)
    assert 0 < s1 <= 1.2 and 0 < s2 <= 1.2
    assert interference.coef[1] < 0  # more summed utilisation -> slower
    # An unmeasured pair falls back on the fitted line.
    keys = list(interference.solo.index)
    unmeasured = next((x, y) for x in keys for y in keys if not interference.measured(x, y))
    s = interference.speeds(*unmeasured)[0]
    util = (interference.solo.at[unmeasured[0], "gpu_util"] + interference.solo.at[unmeasured[1], "gpu_util"]) / 100
    assert s == pytest.approx(float(np.clip(interference.coef[0] + interference.coef[1] * util, 0.2, 1.0)))


def test_profiler_filters_short_jobs_and_carries_long_ones(interference):
    # 1 VC node of 4 GPUs + a 1-node profiler. j0 (100 s) ends inside T_prof=200: done in profiling.
    # j1 (1000 s) is profiled for 200 s, then moves to its VC with 800 s left.
    w = workload([(0, 100, 1), (0, 1000, 1)], nodes=1, gpus=4)
    engine = lucid_engine(w, "lucid:update_interval=0,dynamic=False", interference=interference)
    result = engine.run()
    jobs = job_table(result)
    check_identities(jobs)
    assert jobs["end"].tolist() == pytest.approx([100, 1000])
    shared = engine.coordinator
    assert shared.finished_in_profiler == 1 and shared.profiled_then_moved == 1
    assert result.preemptions == [0, 1]  # the pause that ends profiling
    assert engine.partition_of[1] == 0 and w.cluster.index.get(PROFILER) is None


def test_space_aware_profiling_takes_least_gpus_first(interference):
    # Profiler: one 4-GPU node, busy with j0 (4 GPUs) until 200. Then j1 (4 GPUs) and j2 (1 GPU) wait;
    # space-aware order starts j2 first; FIFO order starts j1 first.
    rows = [(0, 1000, 4), (1, 1000, 4), (2, 1000, 1)]
    starts = {}
    for spec in ("lucid:update_interval=0,dynamic=False", "lucid-nospace:update_interval=0,dynamic=False"):
        w = workload(rows, nodes=2, gpus=4)
        engine = lucid_engine(w, spec, interference=interference)
        starts[spec.split(":")[0]] = engine.run().first_start
    assert starts["lucid"][2] < starts["lucid"][1]
    assert starts["lucid-nospace"][1] < starts["lucid-nospace"][2]


def packed_pair(interference, keys, scores, host=5000, spec="lucid:profiler=False,dynamic=False,update_interval=0"):
    """One 1-GPU node: j0 (host) runs from 0; j1 (3000 s) arrives at 10 and can only be packed. Both
    count as profiled; their sharing scores are forced to ``scores``."""
    w = workload([(0, host, 1), (10, 3000, 1)], nodes=1, gpus=1)
    return lucid_engine(w, spec, keys=keys, interference=interference, profiler_nodes=0,
                        coordinator=forced({0, 1}, scores))


def test_binder_rules_one_by_one(interference):
    solo = interference.solo
    tiny = solo.index[(solo["label"] == 0) & (solo["gmem"] < 4000)][:2].tolist()
    big = solo.index[solo["gmem"] > interference.gpu_memory_mb / 2][:1].tolist()  # two do not fit one GPU
    # Build the engine, then mark both jobs profiled before running.
    def run(keys, **kw):
        engine = packed_pair(interference, keys, kw.get("scores", [0, 0]), host=kw.get("host", 5000),
                             spec=kw.get("spec", "lucid:profiler=False,dynamic=False,update_interval=0"))
        result = engine.run()
        check_identities(job_table(result))
        return result.first_start[1] < 100, engine.coordinator

    ok, shared = run(tiny, scores=[0, 0])
    assert ok and shared.packs == 1                       # two tiny jobs share
    assert run(tiny, scores=[1, 1])[0]                    # 1 + 1 <= G_SS = 2
    assert run(tiny, scores=[0, 2])[0]                    # a jumbo shares with a tiny job only
    assert not run(tiny, scores=[1, 2])[0]                # 1 + 2 > G_SS
    assert not run(tiny, scores=[1, 1], spec="lucid:profiler=False,dynamic=False,update_interval=0,g_ss=1")[0]
    assert not run(tiny, scores=[0, 0], host=1410)[0]     # guest (3000 s) > 2 x the host's 1400 s left
    assert big and not run([big[0], big[0]], scores=[0, 0])[0]  # GPU memory hard limit
    assert not run(tiny, scores=[0, 0], host=400)[0]      # host has < min_remaining left
    assert not run(tiny, scores=[0, 0], spec="lucid-noshare:profiler=False,dynamic=False,update_interval=0")[0]
    assert run(tiny, scores=[1, 1], spec="lucid-nobinder:profiler=False,dynamic=False,update_interval=0")[0]


def test_binder_shares_before_exclusive_placement(interference):
    # Alg. 2: with sharing on, a job is packed on an affine running job even when a GPU is free.
    solo = interference.solo
    tiny = solo.index[(solo["label"] == 0) & (solo["gmem"] < 4000)][:2].tolist()
    for spec, packed in (("lucid", True), ("lucid-noshare", False)):
        w = workload([(0, 5000, 1), (10, 3000, 1)], nodes=2, gpus=1)
        engine = lucid_engine(w, spec + ":profiler=False,dynamic=False,update_interval=0", keys=tiny,
                              interference=interference, profiler_nodes=0, coordinator=forced({0, 1}, 0))
        engine.event_log = []
        result = engine.run()
        assert any(e[1] == "pack" for e in engine.event_log) is packed
        assert result.first_start[1] == 10


def test_packing_stretches_both_jobs_by_the_pair_speed(interference):
    keys = ["ResNet18|32|0", "MobileNetV3|32|0"]
    result = packed_pair(interference, keys, [0, 0],
                         spec="lucid:profiler=False,dynamic=False,update_interval=0,unstable_speed=0").run()
    s_guest, s_host = interference.speeds(keys[1], keys[0])
    guest_end = 10 + 3000 / s_guest
    assert result.end[1] == pytest.approx(guest_end)
    # Host: 10 s alone, then at s_host until the guest leaves, then alone again.
    done = 10 + (guest_end - 10) * s_host
    assert result.end[0] == pytest.approx(guest_end + (5000 - done))
    assert result.work_done == pytest.approx([5000, 3000])
    # One physical GPU held throughout; two job-GPUs on it while packed.
    from evaluation.metrics import sharing_factor, utilisation

    host_end = result.end[0]
    assert utilisation(result) == pytest.approx(1.0)
    assert sharing_factor(result) == pytest.approx((host_end + guest_end - 10) / host_end)


def test_time_aware_scaling_on_a_burst(interference):
    # Quiet hours, then a burst: the tick halves T_prof and profiles only 1-GPU jobs during it.
    rows = [(h * 3600.0, 50, 1) for h in range(12)] + [(12 * 3600 + i, 50, 1) for i in range(60)]
    w = workload(rows, nodes=2, gpus=4)
    engine = lucid_engine(w, "lucid:update_interval=0", interference=interference)
    seen = []
    original = LucidCoordinator._tick

    def spy(self):
        original(self)
        seen.append((self.cctx.now, self.burst, self.t_prof, self.n_prof))

    LucidCoordinator._tick = spy
    try:
        engine.run()
    finally:
        LucidCoordinator._tick = original
    burst = [x for x in seen if x[1]]
    assert burst and burst[0][2] == 100.0 and burst[0][3] == 1
    assert any(not b and t == 200.0 for _, b, t, _ in seen)


def test_time_aware_scaling_borrows_idle_vc_nodes_and_gives_them_back(interference):
    # Quiet hours, then a burst of short 1-GPU jobs (every 10 s, 90 s each) that a 1-node profiler
    # cannot keep up with. The profiler borrows the VC's second idle node during the burst; an 8-GPU
    # job arriving in the burst makes the VC reclaim it (the node drains within T_prof and goes back).
    quiet = [(h * 3600.0, 50, 1) for h in range(12)]
    burst = [(12 * 3600.0 + 10 * i, 90, 1) for i in range(300)]
    big_at = 12 * 3600.0 + 1500.5
    rows = sorted(quiet + burst + [(big_at, 400, 8)])
    w = workload(rows, nodes=2, gpus=4)

    def run(spec):
        engine = lucid_engine(w, spec, interference=interference)
        engine.event_log = []
        result = engine.run()
        return engine, result

    engine, result = run("lucid:update_interval=0")
    s = engine.coordinator
    moves = [e for e in engine.event_log if e[1] == "move-node"]
    assert s.borrowed >= 1 and s.returned == s.borrowed and not s.loans
    assert len(moves) == 2 * s.borrowed
    for ctx, part in zip(engine.contexts, w.cluster.partitions):  # every node is home again
        assert ctx.pool.total_capacity == sum(part.capacities)
    big = rows.index((big_at, 400, 8))
    lent_at = moves[0][0]
    assert lent_at < big_at and result.first_start[big] - big_at <= 100.0 + 1e-6  # reclaimed within T_prof
    check_identities(job_table(result))
    # Borrowing shortens the burst's queue at the profiler.
    _, alone = run("lucid:update_interval=0,borrow_nodes=0")
    burst_jobs = [i for i, r in enumerate(rows) if r[0] >= 12 * 3600 and r[2] == 1]
    assert np.mean([result.wait[i] for i in burst_jobs]) < np.mean([alone.wait[i] for i in burst_jobs])


def test_update_engine_trains_on_the_past_only(interference):
    from features.traces.synthetic import generate_preset
    from sim.cluster import load_cluster
    from sim.workload import build_workload

    w = build_workload(generate_preset("demo", seed=1, jobs=600), load_cluster("demo"))
    engine = lucid_engine(w, "lucid:update_interval=20000,initial=history", interference=interference,
                          profiler_nodes=1)
    result = engine.run()
    updates = engine.coordinator.updates
    assert updates, "no update happened"
    for u in updates:
        finished_by_then = sum(1 for e in result.end if e <= u["time"])
        assert u["trained_on"] == finished_by_then
    check_identities(job_table(result))


def test_throughput_model_is_trained_on_past_bins_and_drives_the_forecast(interference):
    # 12 days of arrivals with a daily cycle; the update engine (every 2 days) can train the throughput
    # model from day 9 on, on completed 10-minute bins only, and uses it while it beats the last value.
    rng = np.random.default_rng(0)
    times = np.sort(np.concatenate([h * 3600 + rng.uniform(0, 3600, size=1 + (h % 24 > 8) * 4)
                                    for h in range(12 * 24)]))
    w = workload([(float(t), 300, 1) for t in times], nodes=2, gpus=4)
    engine = lucid_engine(w, "lucid:update_interval=172800", interference=interference)
    result = engine.run()
    s = engine.coordinator
    assert s.tp_updates and any(u["used"] for u in s.tp_updates)  # the daily cycle beats the last value
    for u in s.tp_updates:  # rows = complete bins minus a week of lags minus the horizon
        assert u["time"] >= 9 * 86400
        assert u["used"] == (u["throughput_mae"] < u["throughput_mae_last_value"])
        assert u["throughput_rows"] == int(u["time"] // 600) - 7 * 144 - 3
    assert s.forecast_by["model"] > 0 and s.forecast_by["trend"] > 0
    assert "lucid_throughput_mae" in result.policy_stats
    trend = lucid_engine(w, "lucid:update_interval=172800,forecast=trend", interference=interference)
    trend.run()
    assert trend.coordinator.throughput.updater.fitted_ is None and trend.coordinator.forecast_by["model"] == 0


@pytest.fixture(scope="module")
def philly_vc(philly_file):
    from features.traces import load_trace
    from sim.cluster import load_cluster
    from sim.workload import build_workload

    return build_workload(load_trace(philly_file), load_cluster("philly-vc"), limit=800)


@pytest.mark.parametrize("spec", ["lucid", "lucid-nobinder", "lucid-noshare", "lucid-noestimator",
                                  "lucid-nospace", "horus"])
def test_every_lucid_variant_and_horus_run_on_philly(philly_vc, spec):
    """One test per variant, so that pytest-xdist spreads the six replays over the cores."""
    r = simulate(philly_vc, spec, check_invariants=True)
    check_identities(job_table(r))
    assert np.isfinite(r.end).all()


def test_rolling_levels_give_np_percentiles_bits():
    """The per-tick fast path (a sorted window) returns scaling.levels' numbers bit for bit: windows of
    1..1,008 values with ties, zeros, denormal-small and non-integer counts, while the window slides."""
    import random

    from sim.policies.lucid.scaling import RollingLevels, levels

    rng = random.Random(0)
    for window in (1, 2, 3, 7, 50, 1008):
        fast, seen = RollingLevels(window), []
        for _ in range(1300 if window == 1008 else 200):
            x = rng.choice([float(rng.randint(0, 40)), rng.random() * 1e3, rng.choice([0.0, 1.0, 1e-300, 7.3])])
            fast.add(x)
            seen.append(x)
            assert [np.float64(v).tobytes() for v in fast.levels()] == \
                [np.float64(v).tobytes() for v in levels(seen[-window:])]
    nan = RollingLevels(4)
    for x in (1.0, float("nan"), 2.0):
        nan.add(x)
    assert np.isnan(nan.levels()).all()  # numpy's NaN rule, through the reference


def test_lucid_replay_is_the_same_with_the_reference_levels(philly_vc, monkeypatch):
    """A whole Lucid replay on real Philly jobs (~10,000 ticks: the window fills and slides) is job for job
    the one the np.percentile path gives."""
    from sim.policies.lucid import scaling

    ticks = []
    monkeypatch.setattr(scaling.RollingLevels, "add", lambda self, x, add=scaling.RollingLevels.add: (
        ticks.append(x), add(self, x))[1])
    fast = simulate(philly_vc, "lucid")
    assert len(ticks) > scaling.WINDOW_HOURS
    monkeypatch.setattr(scaling.RollingLevels, "levels", lambda self: scaling.levels(list(self.recent)))
    slow = simulate(philly_vc, "lucid")
    assert job_table(fast).equals(job_table(slow)) and fast.alloc_times == slow.alloc_times
    assert fast.alloc_used == slow.alloc_used and fast.events == slow.events
    timing = [k for k in fast.policy_stats if "second" in k]  # wall-clock timings differ run to run
    assert {k: v for k, v in fast.policy_stats.items() if k not in timing} == \
        {k: v for k, v in slow.policy_stats.items() if k not in timing}
