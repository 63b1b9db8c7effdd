"""The policy registry's typed parameters and configs, Lucid's rules one by one, seeds reaching Lucid,
forecasts that see only the past, and in-replay retraining that never registers versions."""
import inspect

import numpy as np
import pytest

from sim import simulate
from sim.forecasts import EventSeries, ThroughputForecast
from sim.policies import POLICIES, get_policy, load_policy_config, params_model, policy_spec
from sim.policies.lucid import binder, profiler, scaling
from tests.helpers import workload

CONFIGS = sorted((__import__("pathlib").Path(__file__).resolve().parents[1] / "configs" / "policies").glob("*.yaml"))


# -- typed parameters -------------------------------------------------------------------------------
def test_strings_are_coerced_by_type():
    assert get_policy("lazer:respect_wq=false,deferral=15")[2]["respect_wq"] is False
    assert get_policy("lazer:respect_wq=true,deferral=15")[2]["respect_wq"] is True
    assert get_policy("lucid:n_prof=4,t_prof=100")[2] == {"n_prof": 4, "t_prof": 100.0}
    assert get_policy("tiresias:thresholds=[30,200]")[2]["thresholds"] == [30.0, 200.0]
    assert get_policy("lucid:profiler_nodes=auto")[2]["profiler_nodes"] == "auto"


@pytest.mark.parametrize("spec, field", [("lucid:bogus=1", "bogus"), ("lucid:n_prof=abc", "n_prof"),
                                         ("fifo:work_conserving=maybe", "work_conserving"),
                                         ("lucid:forecast=magic", "forecast"), ("tiresias:thresholds=x", "thresholds"),
                                         ("lucid:profiler_from=nowhere", "profiler_from"),
                                         ("horus:update_interval=5", "update_interval")])
def test_unknown_or_mistyped_parameters_are_refused_in_one_line(spec, field):
    name = spec.split(":")[0]
    with pytest.raises(ValueError) as err:
        get_policy(spec)
    msg = str(err.value)
    assert "\n" not in msg and repr(name) in msg and repr(field) in msg and "valid parameters:" in msg


def test_every_policy_has_a_typed_signature_without_kwargs():
    for name, info in POLICIES.items():
        assert params_model(info.cls).model_config.get("extra") == "forbid", name
        info.validate({})  # the registry's own defaults (pollux-60's interval, say) are valid parameters
        init = info.cls.__init__
        if init is not object.__init__:
            for p in list(inspect.signature(init).parameters.values())[1:]:
                assert p.annotation is not inspect.Parameter.empty, (name, p.name)


def test_parameter_table_lists_defaults_with_entry_overrides():
    rows = {r[0]: r for r in POLICIES["lucid-nobinder"].parameters()}
    assert rows["binder"][1:3] == ("bool", False)
    assert rows["t_prof"][1:3] == ("float", 200.0)
    assert rows["forecast"][1] == "'model' | 'trend'" and rows["forecast"][3]
    assert {r[0] for r in POLICIES["pollux-60"].parameters()} == {"interval", "backfill"}
    assert dict((r[0], r[2]) for r in POLICIES["pollux-60"].parameters())["interval"] == 60.0
    assert POLICIES["fifo-backfill"].parameters() == []


def test_preemptive_flag_means_may_stop_a_started_job():
    assert POLICIES["lucid"].preemptive and POLICIES["horus"].preemptive  # profiler pause, unstable-pair eviction
    assert not POLICIES["fifo"].preemptive and not POLICIES["qssf"].preemptive
    assert POLICIES["srtf"].preemptive and POLICIES["tiresias-rounds"].preemptive


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_shipped_policy_configs_validate_and_run(path):
    name, params = load_policy_config(path)
    assert name in POLICIES
    info, _, checked = get_policy(str(path))
    assert info.name == name and checked == params
    assert get_policy(policy_spec(name, params))[2] == params  # the spec string round-trips


def test_bad_policy_configs_are_refused(tmp_path):
    cases = {"unknown.yaml": "policy: nope\n", "field.yaml": "policy: lucid\nparams:\n  t_prof: soon\n",
             "extra.yaml": "policy: fifo\nparamz: {}\n", "list.yaml": "- fifo\n", "tag.yaml": "policy: !!python/none x\n"}
    for fname, text in cases.items():
        (tmp_path / fname).write_text(text)
        with pytest.raises(ValueError) as err:
            load_policy_config(tmp_path / fname)
        assert fname in str(err.value) and "\n" not in str(err.value)


# -- Lucid's rules, one by one ----------------------------------------------------------------------
def test_binder_rules():
    assert binder.stable(False) and not binder.stable(True)
    assert binder.fits_one_node(8, 8) and not binder.fits_one_node(9, 8)
    assert binder.score_within(2, 2) and not binder.score_within(3, 2)
    assert binder.enough_work(300, 300) and not binder.enough_work(299, 300)
    assert binder.memory_fits(10, 14, 24) and not binder.memory_fits(10, 15, 24)
    assert binder.ratio_ok(2000, 1000, 2.0) and not binder.ratio_ok(2001, 1000, 2.0)
    assert binder.host_solo(1, True) and not binder.host_solo(2, True) and not binder.host_solo(1, False)
    common = dict(never_pack=False, gpus=1, largest_node=8, was_profiled=True, score=1, g_ss=2)
    assert binder.guest_ok(binder=True, **common)
    assert not binder.guest_ok(binder=True, **{**common, "was_profiled": False})
    assert binder.guest_ok(binder=False, **{**common, "was_profiled": False, "score": 9})  # naive packing
    assert not binder.guest_ok(binder=False, **{**common, "never_pack": True})
    host = dict(members=1, running=True, never_pack=False, was_profiled=True, estimate=500, min_remaining=300)
    assert binder.host_ok(binder=True, **host) and not binder.host_ok(binder=True, **{**host, "estimate": 100})
    assert binder.host_ok(binder=False, **{**host, "estimate": 100, "was_profiled": False})
    pair = dict(score_guest=1, score_host=1, g_ss=2, gmem_guest=4, gmem_host=4, gpu_memory=24, est_guest=900,
                est_host=500, pair_ratio=2.0)
    assert binder.pair_rank(binder=True, **pair) == (2, 8)
    assert binder.pair_rank(binder=True, **{**pair, "score_host": 2}) is None
    assert binder.pair_rank(binder=True, **{**pair, "est_guest": 1001}) is None
    assert binder.pair_rank(binder=True, **{**pair, "gmem_host": 21}) is None
    assert binder.pair_rank(binder=False, **{**pair, "score_host": 2, "est_guest": 1e9}) == (0, 0)
    assert binder.horus_rank(util_guest=40, util_host=60, gmem_guest=1, gmem_host=1, gpu_memory=24, host=3) == (100, 3)
    assert binder.horus_rank(util_guest=41, util_host=60, gmem_guest=1, gmem_host=1, gpu_memory=24, host=3) is None


def test_profiler_rules():
    kw = dict(gpus=2, n_prof=8, node_gpus=8, was_profiled=False, profiler_on=True, has_profiler=True)
    assert profiler.goes_to_profiler(**kw)
    assert not profiler.goes_to_profiler(**{**kw, "n_prof": 1})  # burst: only 1-GPU jobs
    assert not profiler.goes_to_profiler(**{**kw, "node_gpus": 1})
    assert not profiler.goes_to_profiler(**{**kw, "was_profiled": True})
    assert not profiler.goes_to_profiler(**{**kw, "has_profiler": False})
    assert profiler.queue_key(4, 7, True) < profiler.queue_key(8, 3, True)  # least GPUs first
    assert profiler.queue_key(8, 3, False) < profiler.queue_key(4, 7, False)  # FIFO
    assert profiler.profile_ends(100, 200, 30) == 330
    # Partitions (index, waiting, idle nodes): only idle-rich partitions with nothing waiting lend,
    # keeping one idle node; most idle first.
    parts = [(0, 0, [1, 2]), (1, 3, [0, 1, 2, 3]), (2, 0, [4, 5, 6]), (3, 0, [9])]
    assert profiler.lenders(parts, 2) == [(2, 5), (2, 6)]
    assert profiler.lenders(parts, 5) == [(2, 5), (2, 6), (0, 2)]
    assert profiler.lenders(parts, 0) == []
    loans = [[0, 10, False], [2, 11, True], [2, 12, False]]
    assert profiler.recall(loans, None) == [[0, 10, False], [2, 12, False]]
    assert profiler.recall(loans, 2) == [[2, 12, False]]


def test_scaling_rules():
    assert scaling.sharing_mode(10, 5, 5, quiet=2, busy=8) == 2
    assert scaling.sharing_mode(5, 5, 5, quiet=2, busy=8) == 1
    assert scaling.sharing_mode(1, 1, 5, quiet=2, busy=8) == 0
    assert scaling.sharing_mode(1, 6, 5, quiet=2, busy=8) == 1  # quiet forecast but the last hour rose
    assert scaling.is_burst(20, top=15, median=8) and not scaling.is_burst(15, top=15, median=8)
    assert not scaling.is_burst(0, top=0, median=0)
    assert scaling.profiler_limits(True, 200, 8) == (100, 1) and scaling.profiler_limits(False, 200, 8) == (200, 8)
    quiet, median, busy, top = scaling.levels([float(x) for x in range(1, 101)])
    assert quiet < median < busy < top


# -- seeds reach Lucid ------------------------------------------------------------------------------
def _seeded_lucid(seed, shared_data):
    del shared_data
    rng = np.random.default_rng(3)
    rows = sorted((float(t), float(d), int(g)) for t, d, g in zip(
        rng.uniform(0, 4000, 60), rng.lognormal(7, 1, 60), rng.choice([1, 1, 2, 4], 60)))
    w = workload(rows, nodes=2, gpus=4)
    return simulate(w, "lucid:profiler_from=extra,profiler_nodes=1,update_interval=0,dynamic=False",
                    seed=seed, check_invariants=True)


def test_run_seed_reaches_lucids_profiles(shared_data):
    a, b, c = (_seeded_lucid(s, shared_data) for s in (0, 0, 7))
    assert a.end == b.end and a.wait == b.wait and a.policy_stats == b.policy_stats  # same seed, same run
    assert a.end != c.end  # another seed draws other profiles: other packing
    assert a.policy_stats["lucid_packs"] > 0


# -- forecasts see only the past --------------------------------------------------------------------
def test_event_series_never_reads_the_future():
    s = EventSeries(600.0)
    for t in (10, 599, 600, 1300, 2000):
        s.observe(t)
    assert s.total(0, 600) == 3 and s.total(599, 1300) == 2  # (start, stop]
    assert s.bins(0, 2, now=1300).tolist() == [2, 1]
    with pytest.raises(ValueError):
        s.bins(0, 3, now=1300)  # bin 2 ends at 1800 > now: incomplete
    with pytest.raises(ValueError):
        s.observe(5)  # time goes forward only


def test_throughput_forecast_at_t_ignores_later_observations():
    import pandas as pd

    rng = np.random.default_rng(0)
    times = np.sort(rng.uniform(0, 5 * 3600, 400))
    full = ThroughputForecast(pd.Timestamp("2020-01-06"), mode="trend")
    for t in times:
        full.observe(float(t))
    for now in (3600.0, 7200.0, 9000.5, 14400.0):
        past = ThroughputForecast(pd.Timestamp("2020-01-06"), mode="trend")
        for t in times[times <= now]:
            past.observe(float(t))
        assert full.forecast(now) == past.forecast(now)  # what comes later changes nothing
        assert full.hours(now) == past.hours(now)
        last = float(np.sum((times > now - 3600) & (times <= now)))
        before = float(np.sum((times > now - 7200) & (times <= now - 3600)))
        assert full.forecast(now) == pytest.approx(last + 0.5 * (last - before))


def test_throughput_model_forecast_uses_complete_past_bins_only():
    import pandas as pd

    # 10 days of a daily cycle; train at day 10, then ask at a time inside a bin: changing every
    # observation after the last complete bin must not change the forecast.
    rng = np.random.default_rng(1)
    base = np.sort(np.concatenate([h * 3600 + rng.uniform(0, 3600, 1 + 4 * (h % 24 > 8)) for h in range(10 * 24 + 3)]))
    now = 10 * 86400 + 1234.0
    answers = []
    for extra in (0, 50):
        f = ThroughputForecast(pd.Timestamp("2020-01-06"), mode="model")
        late = np.linspace(int(now // 600) * 600 + 1, now + 7200, extra)  # the current bin and the future
        for t in np.sort(np.concatenate([base[base < int(now // 600) * 600], late])):
            f.observe(float(t))
        f.update(10 * 86400.0)
        answers.append((f.forecast(now), f.source))
    assert answers[0] == answers[1] and answers[0][1] == "model"


# -- in-replay retraining ---------------------------------------------------------------------------
def _updater(n=200, **kw):
    import pandas as pd

    from models.update import DurationUpdater

    rng = np.random.default_rng(0)
    X = pd.DataFrame({"num_gpus": rng.choice([1, 2, 4, 8], n).astype(float), "hour": rng.integers(0, 24, n).astype(float)})
    y = 100 * X["num_gpus"].to_numpy() * rng.lognormal(0, 0.3, n)
    return DurationUpdater(X, model="rf", monotone=False, **kw), y


def test_updater_trains_on_finished_jobs_only_and_refuses_the_future():
    from models.update import FinishedJobs

    up, y = _updater()
    jobs = np.arange(100, 200)
    assert np.isnan(up.predict(jobs)).all()  # no fit yet
    up.update(10.0, FinishedJobs(np.arange(20), y[:20], np.full(20, 5.0)))
    assert not up.records  # fewer than min_jobs
    done = np.arange(80)
    up.update(100.0, FinishedJobs(done, y[done], np.linspace(1, 100, 80)))
    assert up.records[-1]["trained_on"] == 80 and np.isfinite(up.predict(jobs)).all()
    up.update(200.0, FinishedJobs(done, y[done], np.linspace(1, 100, 80)))
    assert len(up.records) == 1  # nothing new finished: no refit
    with pytest.raises(ValueError, match="future"):
        up.update(50.0, FinishedJobs(np.arange(90), y[:90], np.linspace(1, 100, 90)))


def test_updater_logs_runs_but_never_registers_versions(monkeypatch):
    import models.registry as registry
    from models.update import FinishedJobs

    calls = []

    class Logged:
        run_id = "r1"

    def fake_log(estimator, **kw):
        calls.append(kw)
        return Logged()

    monkeypatch.setattr(registry, "log_estimator", fake_log)
    monkeypatch.setattr(registry, "configure", lambda uri: None)
    up, y = _updater(tracking_uri="sqlite:///unused.db")
    up.update(100.0, FinishedJobs(np.arange(80), y[:80], np.linspace(1, 100, 80)))
    assert calls and all(c["register_as"] is None and c["alias"] is None for c in calls)
    assert up.records[-1]["run_id"] == "r1"


# -- tiresias-rounds: the round rule of Lucid's released simulator -----------------------------------
def test_tiresias_rounds_quota_rule_lets_any_waiting_job_displace_worse_running_ones():
    # One 8-GPU node, one threshold at 40 GPU-s, rounds every 4 s. A (0, 200 s, 4 GPUs) starts at 0 and
    # drops to the low queue at 10; B (12, 100, 4) starts at 12 (high queue until 22). C (13, 50, 8) and
    # D (14, 10, 2) wait for the round at 16. Head rule: C heads the queue but cannot be placed even by
    # preempting A (B ranks better), so nothing moves and D waits for GPUs. Quota rule: walking B, C, D,
    # A against 8 GPUs, B keeps 4, C (8) does not fit the rest, D takes 2, A (4) no longer fits and is
    # preempted: D starts at 16 on A's GPUs.
    rows = [(0, 200, 4), (12, 100, 4), (13, 50, 8), (14, 10, 2)]
    spec = "tiresias-rounds:thresholds=[40],interval=4"
    head = simulate(workload(rows, nodes=1, gpus=8), spec, check_invariants=True)
    quota = simulate(workload(rows, nodes=1, gpus=8), spec + ",rule=quota", check_invariants=True)
    assert quota.first_start[3] == 16 and head.first_start[3] > 16
    assert quota.first_start[:2] == head.first_start[:2] == [0, 12]
    assert quota.preemptions[0] >= 1


def test_tiresias_rounds_demotion_timer_of_a_job_loading_its_checkpoint_cost_does_not_stall():
    # Regression (the Saturn-shaped Lucid setting stalled the replay watchdog): a restarted job's demotion
    # timer counted its load time but not the ckpt_cost the preemption added to that load, so it fired while
    # the job was still loading, found nothing attained and re-armed itself at the same instant for ever.
    # One GPU, thresholds 100 and 150 GPU-s, rounds every 60 s, 62 s per restart. A (0, 1000 s) runs 0-120
    # (drops at 100, preempted at 120 for B); B (10, 500 s) runs 120-240 (drops at 220, preempted at 240);
    # A reloads 240-302 and crosses 150 at 332 (the stalled timer fired at 270, mid-load), preempted at 360
    # with 178 GPU-s; B reloads 360-422, crosses 150 at 452, preempted at 480 with 178; A reloads 480-542 and
    # ends at 542 + 822 = 1364; B starts at the round of 1380 and ends at 1380 + 62 + 322 = 1764.
    rows = [(0, 1000, 1), (10, 500, 1)]
    spec = "tiresias-rounds:thresholds=[100,150],interval=60,rule=quota,ckpt_cost=62"
    res = simulate(workload(rows, nodes=1, gpus=1), spec, check_invariants=True)
    assert res.first_start == [0, 120]
    assert res.end == [1364, 1764]
    assert res.preemptions == [2, 2]


def test_base_policy_waiting_count_and_release():
    from sim.policies.base import Policy, SortedQueue

    p = Policy()
    assert p.waiting_count() == 0 and p.release(3) is False  # no queue
    p.queue = SortedQueue()
    for job in (5, 2, 9):
        p.queue.add(job * 10, job)
    assert p.waiting_count() == 3
    assert p.release(2) is True and p.release(2) is False
    assert [j for _, j in p.queue.items] == [5, 9]


def test_plain_ebm_duration_model_can_drop_the_monotone_constraint():
    # Was: TypeError "got multiple values for keyword argument 'monotone_increasing'" whenever the System
    # Tuner (or DurationUpdater(model="ebm", monotone=False)) asked for the plain GA2M.
    from models.tabular import make_duration_model

    assert make_duration_model("ebm", fast=True, monotone_increasing=()).monotone_increasing == ()
    assert make_duration_model("ebm", fast=True).monotone_increasing == ("num_gpus",)


def test_a_registered_default_that_is_not_a_parameter_is_refused_at_registration_and_at_replay():
    """register() checks at once; schedcast's own entries are checked when a replay asks for one."""
    from sim.policies import _register_builtin, register
    from sim.policies.queueing import Fifo

    with pytest.raises(ValueError, match="unknown parameter 'no_such'"):
        register(Fifo, "fifo-bad-default", no_such=1)
    assert "fifo-bad-default" not in POLICIES  # nothing registered half-way
    _register_builtin(Fifo, "fifo-bad-builtin", no_such=1)
    try:
        with pytest.raises(ValueError, match="unknown parameter 'no_such'"):
            get_policy("fifo-bad-builtin")
    finally:
        POLICIES._items.pop("fifo-bad-default", None)
        POLICIES._items.pop("fifo-bad-builtin", None)
