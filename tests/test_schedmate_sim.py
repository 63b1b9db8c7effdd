"""SchedMate in the simulator: failures from a spec, workloads with failures, the Failure Handler's
restart rule, tracker-cancelled packings, retrieval without the future (hand-worked where possible)."""
import importlib.util

import numpy as np
import pytest

from evaluation.metrics import check_identities, job_table
from features.traces.failures import FailureWorkloadSpec, generate_failures, generate_from_preset, load_acme_failures
from sim import simulate
from sim.engine import Engine
from sim.failures import (Failure, RestartRule, failure_category, failures_from_spec, parse_failure_spec,
                          rate_failures, trace_failures)
from sim.policies import get_policy
from sim.workload import build_workload
from tests.helpers import cluster, workload

TRACE_TEXT = "text_source=trace"


# -- failures from a spec ---------------------------------------------------------------------------
def test_spec_none_gives_nothing():
    w = workload([(0, 10, 1)], nodes=1, gpus=1)
    assert failures_from_spec("none", w, 0) == ([], None)
    assert failures_from_spec("", w, 0) == ([], None)


@pytest.mark.parametrize("spec, field", [
    ("rate=abc", "'rate'"), ("rate=1,repair=-5", "'repair'"), ("rate=1,mix=1/2", "'mix'"),
    ("rate=1,bogus=3", "'bogus'"), ("repair=60", "'rate'"), ("trace,rate=2", "'rate'"),
    ("rate=1,attempts=0", "'attempts'"), ("rate=1,rate=2", "'rate'"), ("rate", "'rate'"),
])
def test_bad_specs_are_one_line_errors_naming_the_field(spec, field):
    with pytest.raises(ValueError) as exc:
        parse_failure_spec(spec)
    text = str(exc.value)
    assert "\n" not in text and field in text and text.startswith("--failures")


def test_parametric_spec_sets_rule_checkpoints_and_draws_by_gpu_count():
    w = workload([(0, 50_000, 1)], nodes=2, gpus=8)
    w.cluster.partitions[0].capacities[1] = 1  # node 0: 8 GPUs, node 1: 1 GPU
    failures, rule = failures_from_spec("rate=20,repair=900,checkpoint=600,reaction=300,mix=1/0/0,attempts=4", w, 3)
    assert rule == RestartRule(delay=300.0, max_attempts=4)
    assert w.checkpoint == [600.0]
    assert failures and all(f.repair == 900 and f.cause.startswith("infrastructure/") for f in failures)
    nodes = [f.node for f in failures]
    assert nodes.count(0) > 3 * nodes.count(1)  # 8:1 by GPUs
    again, _ = failures_from_spec("rate=20,repair=900,mix=1/0/0", w, 3)
    other, _ = failures_from_spec("rate=20,repair=900,mix=1/0/0", w, 4)
    assert [f.time for f in again] == [f.time for f in failures] != [f.time for f in other]


def test_framework_and_script_failures_leave_the_node_up():
    w = workload([(0, 50_000, 1)], nodes=2, gpus=8)
    failures = rate_failures(w, rate_per_hour=10, repair_s=900, mix=(0, 1, 1), seed=0)
    assert failures and all(f.repair == 0 and failure_category(f.cause) in ("framework", "script") for f in failures)


# -- failure / recovery accounting in the engine ------------------------------------------------------
def test_parametric_failures_lose_work_back_to_the_checkpoint_with_invariants_on():
    table = generate_failures(FailureWorkloadSpec(jobs=120, mean_interarrival=60), seed=1)
    w = build_workload(table, cluster(8, 8))
    failures, rule = failures_from_spec("rate=3,repair=1200,checkpoint=300,reaction=600", w, 0)
    result = simulate(w, "fifo", failures=failures, restart=rule, check_invariants=True)
    jobs = job_table(result)
    check_identities(jobs)
    assert sum(result.failures) > 0
    assert sum(result.lost_work) > 0
    for j in range(len(w)):
        # never more than one checkpoint interval (its own, else the spec's 300 s) lost per failure
        assert w.checkpoint[j] in (300.0, 1800.0)
        assert result.lost_work[j] <= result.failures[j] * w.checkpoint[j] + 1e-6
        assert result.work_done[j] == pytest.approx(w.duration[j])


# -- workloads with failures ------------------------------------------------------------------------------
def test_generator_states_and_columns():
    t = generate_from_preset({"state_mix": {"completed": 1, "killed": 1, "failed": 2}}, seed=5, jobs=600)
    f = t.frame
    assert t.synthetic and len(f) == 600
    share = f["final_state"].value_counts(normalize=True)
    assert share["failed"] == pytest.approx(0.5, abs=0.07)
    failed = f[f["final_state"] == "failed"]
    assert failed["fail_time"].notna().all() and f.loc[f["final_state"] != "failed", "fail_time"].isna().all()
    assert failed["failure_cause"].str.split("/").str[0].isin(["infrastructure", "framework", "script"]).all()
    gone = failed[~failed["resubmitted"]]
    assert (gone["duration"] == gone["fail_time"]).all()  # failed for good: it ends at its failure
    again = failed[failed["resubmitted"]]
    assert (again["duration"] == again["full_duration"]).all()  # linked resubmission: the whole work
    killed = f[f["final_state"] == "killed"]
    assert (killed["duration"] < killed["full_duration"]).all()
    # a group shares its GPU count, but for the members asking twice or half of it (about 10 %)
    mode = f.groupby("group_id")["num_gpus"].transform(lambda g: g.mode().iloc[0])
    changed = f["num_gpus"] != mode
    assert 0.03 < changed.mean() < 0.2
    assert set((f.loc[changed, "num_gpus"] / mode[changed]).round(2)) <= {0.5, 2.0}
    assert generate_from_preset({}, 5, 50).frame.equals(generate_from_preset({}, 5, 50).frame)


def test_generator_refuses_a_bad_field_by_name():
    with pytest.raises(ValueError, match="'state_mix'"):
        generate_from_preset({"state_mix": {"done": 1}}, 0, 10)


def test_trace_failures_are_linked_to_their_jobs_and_hit_when_nothing_waits():
    table = generate_failures(FailureWorkloadSpec(jobs=300, mean_interarrival=120), seed=2)
    w = build_workload(table, cluster(64, 8))  # far more GPUs than needed: every job starts at once
    failures, rule = failures_from_spec("trace,reaction=900", w, 0)
    assert rule.delay == 900 and failures
    f = w.frame
    for x in failures:
        assert f["resubmitted"].iloc[x.job] and x.cause == f["failure_cause"].iloc[x.job]
        assert x.time == pytest.approx(w.submit[x.job] + f["fail_time"].iloc[x.job])
    result = simulate(w, "fifo", failures=failures, restart=rule, check_invariants=True, record_events=True)
    check_identities(job_table(result))
    assert sum(result.failures) == len(failures)
    for x in failures:  # restarted reaction-time later, then completed its whole work
        restarts = [t for t, k, j, _ in result.event_log if k == "restart" and j == x.job]
        assert restarts == [pytest.approx(x.time + 900)]
        assert result.end[x.job] > x.time + 900 and not result.failed[x.job]


def test_trace_spec_on_a_workload_without_failure_columns_is_refused():
    with pytest.raises(ValueError, match="fail_time"):
        failures_from_spec("trace", workload([(0, 10, 1)]), 0)


def test_acme_loader_merges_a_resubmission_into_the_failed_job(tmp_path):
    p = tmp_path / "trace_seren.csv"
    p.write_text(
        "job_id,user,node_num,gpu_num,cpu_num,type,state,submit_time,start_time,fail_time,duration,queue\n"
        "a,u1,1,8,16,pretrain,FAILED,2023-03-01 00:00:00,2023-03-01 00:00:10,2023-03-01 00:05:10,300,10\n"
        "b,u1,1,8,16,pretrain,COMPLETED,2023-03-01 00:20:00,2023-03-01 00:20:00,,3600,0\n"
        "c,u2,1,1,4,eval,CANCELLED,2023-03-01 00:30:00,2023-03-01 00:30:00,,60,0\n"
        "d,u2,1,1,4,eval,NODE_FAIL,2023-03-01 00:40:00,2023-03-01 00:40:00,,90,0\n")
    t = load_acme_failures(p)
    f = t.frame.set_index("job_id")
    assert list(f.index) == ["a", "c", "d"]
    assert f.loc["a", "resubmitted"] and f.loc["a", "duration"] == 3600 and f.loc["a", "fail_time"] == 300
    assert f.loc["a", "final_state"] == "completed"
    assert f.loc["c", "final_state"] == "killed" and not f.loc["d", "resubmitted"]
    assert f.loc["d", "failure_cause"] == "infrastructure/node"
    assert t.report.rejected["resubmission merged into its failed job"] == 1


# -- the Failure Handler's restart rule (hand-worked) ------------------------------------------------------
def _one_failure(policy, cause, nodes=1, extra=(), repair_rule=600.0):
    w = workload([(0, 1000, 1), *extra], nodes=nodes, gpus=1)
    result = simulate(w, policy, failures=[Failure(100, job=0, cause=cause)],
                      restart=RestartRule(delay=repair_rule), check_invariants=True, record_events=True)
    check_identities(job_table(result))
    return result


@pytest.mark.parametrize("policy, cause, end", [
    # recognised infrastructure failure: restart after diagnosis 60 + recovery 120 -> 280, end 1280
    (f"schedmate-sjf-fh:{TRACE_TEXT},recall=1,precision=1,repair=0", "infrastructure/gpu", 1280),
    # no handler, or not recognised: the human's 600 s -> 700, end 1700
    (f"schedmate-sjf:{TRACE_TEXT}", "infrastructure/gpu", 1700),
    (f"schedmate-sjf-fh:{TRACE_TEXT},recall=0,precision=1", "infrastructure/gpu", 1700),
    # a script error is the human's to fix
    (f"schedmate-sjf-fh:{TRACE_TEXT},recall=1,precision=1", "script/import", 1700),
    # false alarm (precision 0.5 at recall 1, half infrastructure: always): auto-restart fails again,
    # then the human: 60 + 120 + 600 -> restart 880, end 1880
    (f"schedmate-sjf-fh:{TRACE_TEXT},recall=1,precision=0.5,infra_share=0.5", "script/import", 1880),
])
def test_failure_handler_restart_delay(policy, cause, end):
    result = _one_failure(policy, cause)
    assert result.end[0] == pytest.approx(end)
    assert result.lost_work[0] == pytest.approx(100)


def test_recognised_job_failure_cordons_its_node_for_the_repair_time():
    # j0 on node 0 fails at 100 (infrastructure); j1 holds node 1 from 50 to 2050. With repair 500 node 0
    # is cordoned until 600: j0 (restart due at 280) waits for it, ends at 1600; without, at 1280.
    cordoned = _one_failure(f"schedmate-sjf-fh:{TRACE_TEXT},recall=1,precision=1,repair=500",
                            "infrastructure/nvlink", nodes=2, extra=[(50, 2000, 1)])
    assert cordoned.end[0] == pytest.approx(1600)
    assert cordoned.policy_stats["schedmate_fh_cordoned"] == 1
    free = _one_failure(f"schedmate-sjf-fh:{TRACE_TEXT},recall=1,precision=1,repair=0",
                        "infrastructure/nvlink", nodes=2, extra=[(50, 2000, 1)])
    assert free.end[0] == pytest.approx(1280)


def test_detection_is_drawn_from_the_run_seed():
    table = generate_failures(FailureWorkloadSpec(jobs=200, mean_interarrival=60,
                                                  cause_mix={"infrastructure": 1, "framework": 0, "script": 0}),
                              seed=3)
    w = build_workload(table, cluster(16, 8))
    failures, rule = failures_from_spec("trace,reaction=1800", w, 0)
    pol = f"schedmate-sjf-fh:{TRACE_TEXT},recall=0.5,precision=1"
    a = simulate(w, pol, failures=failures, restart=rule, seed=1).policy_stats
    b = simulate(w, pol, failures=failures, restart=rule, seed=1).policy_stats
    assert a == b
    assert 0 < a["schedmate_fh_recognised"] < a["schedmate_fh_infrastructure"]


# -- retrieval never sees the future ---------------------------------------------------------------------
def test_advice_only_uses_jobs_finished_before_the_decision(monkeypatch):
    from models.schedmate.advisor import SchedulingAdvisor

    asked = []
    advise = SchedulingAdvisor.advise

    def recording(self, text, now, exclude_key=None):
        adv = advise(self, text, now, exclude_key)
        asked.append((now, adv))
        return adv

    monkeypatch.setattr(SchedulingAdvisor, "advise", recording)
    table = generate_failures(FailureWorkloadSpec(jobs=250, mean_interarrival=40), seed=4)
    w = build_workload(table, cluster(4, 8))
    info, factory, _ = get_policy(f"schedmate-sjf:{TRACE_TEXT},t_score=0.5")
    engine = Engine(w, factory, predictions=list(w.duration), check_invariants=True, policy_name="schedmate-sjf")
    result = engine.run()
    assert len(engine.coordinator.advice_s) > 50
    answers = [(now, adv) for now, adv in asked if adv is not None]
    assert len(answers) == engine.coordinator.matched > 50
    for now, adv in answers:
        for m in adv.matches:  # advised at the decision time: its matches had ended by then
            assert result.end[int(m)] <= now + 1e-9
        assert adv.duration == pytest.approx(np.mean([w.duration[int(m)] for m in adv.matches]))
    for job, seconds in engine.coordinator.advice_s.items():  # the last advice, at or after its arrival
        assert any(adv.duration == seconds and now >= w.submit[job] for now, adv in answers)


def test_sjf_orders_by_the_advisors_estimate():
    # Recurring names: 'resnet_train' jobs run 100 s, 'bert_sweep' 10,000 s, one 'gpt_pretrain' job. The host
    # estimate (1e9 for jobs 4 and 5) would run job 4 first (ties by index); the Advisor knows job 5
    # ('resnet_train', 100 s) and not job 4 (a new name): job 5 goes first.
    rows = [(0, 100, 1), (0, 10_000, 1), (200, 100, 1), (20_000, 10_000, 1), (20_001, 5, 1), (20_002, 100, 1)]
    names = ["resnet_train", "bert_sweep", "resnet_train", "bert_sweep", "gpt_pretrain", "resnet_train"]
    w = workload(rows, nodes=1, gpus=1, job_name=names)
    host = [1.0, 1.0, 1.0, 1.0, 1e9, 1e9]
    info, factory, _ = get_policy(f"schedmate-sjf:{TRACE_TEXT},t_score=0.99")
    engine = Engine(w, factory, predictions=host, check_invariants=True)
    res = engine.run()
    assert 4 not in engine.coordinator.advice_s and engine.coordinator.advice_s[5] == pytest.approx(100)
    assert res.first_start[5] < res.first_start[4]
    plain = simulate(w, "spjf", predictions=host)
    assert plain.first_start[4] < plain.first_start[5]


# -- Lucid + SchedMate ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def busy():
    from pipelines.simulate import build_source

    return build_source(synthetic="helios-failures", jobs=250, seed=0, offered_load=1.3)[1]


def test_tracker_cancels_bad_packings_and_never_packs_the_guest_again(busy):
    common = f"lucid-schedmate:{TRACE_TEXT},failure_handler=false,initial=history,tracker=oracle,tracker_error=0"
    res = simulate(busy, common + ",theta=1.0,track_after=45", record_events=True, check_invariants=True)
    stats = res.policy_stats
    assert stats["schedmate_cancelled_packings"] > 0
    packs = {}
    for t, kind, job, _ in res.event_log:
        if kind == "pack":
            packs.setdefault(job, []).append(t)
    evicted = [(t, j) for t, kind, j, _ in res.event_log if kind == "evict"]
    assert len(evicted) == stats["schedmate_cancelled_packings"]
    for t, j in evicted:  # each cancellation comes track_after s after that guest was packed, once
        assert any(t == pytest.approx(p + 45) for p in packs[j]) and len(packs[j]) == 1
    none = simulate(busy, common + ",theta=0.0", check_invariants=True).policy_stats
    assert none["schedmate_cancelled_packings"] == 0 and none["lucid_evictions"] == 0


def test_lucid_schedmate_skips_profiling_for_known_jobs(busy):
    on = simulate(busy, f"lucid-schedmate:{TRACE_TEXT},initial=history", check_invariants=True).policy_stats
    off = simulate(busy, f"lucid-schedmate:{TRACE_TEXT},initial=history,skip_profiling=false",
                   check_invariants=True).policy_stats
    assert on["schedmate_skipped_profiling"] == on["schedmate_matched"] > 0
    assert off["schedmate_skipped_profiling"] == 0
    assert on["lucid_profiled_then_moved"] < off["lucid_profiled_then_moved"]


@pytest.mark.parametrize("policy", ["schedmate-sjf", "schedmate-sjf-fh", "lucid-schedmate"])
def test_policies_run_with_failures_and_invariants(busy, policy):
    failures, rule = failures_from_spec("rate=2,repair=1800,checkpoint=1200,reaction=900", busy, 0)
    res = simulate(busy, f"{policy}:{TRACE_TEXT},recall=0.9,precision=0.9", failures=failures, restart=rule,
                   check_invariants=True, seed=3)
    check_identities(job_table(res))
    assert sum(res.failures) > 0 and not any(res.failed)


def test_bad_parameters_are_refused_by_name():
    with pytest.raises(ValueError, match="'theta'"):
        get_policy("lucid-schedmate:theta=abc")
    with pytest.raises(ValueError, match="recall"):
        get_policy("schedmate-sjf-fh:recall=1.5")


_CORPUS = (importlib.util.find_spec("features.jobcorpus") is not None
           and importlib.util.find_spec("models.schedmate.evaluate") is not None)


def _cli(capsys, tmp_path, *policies):
    from pipelines.cli import main

    code = main(["simulate", "--synthetic", "helios-failures", "--jobs", "300", "--failures", "trace",
                 "--policy", *policies, "--no-plots", "--no-progress", "--out", str(tmp_path / "o")])
    text = capsys.readouterr().out
    assert code == 0, text
    return text


@pytest.mark.skipif(not _CORPUS, reason="SchedMate's corpus / evaluation modules are not in this tree yet")
def test_cli_replays_the_schedmate_policies_on_trace_failures(tmp_path, capsys):
    text = _cli(capsys, tmp_path, "schedmate-sjf", "schedmate-sjf-fh:recall=0.9,precision=0.95",
                "lucid-schedmate:recall=0.9,precision=0.95")
    assert "failure events injected (trace" in text
    for name in ("schedmate-sjf", "schedmate-sjf-fh", "lucid-schedmate"):
        assert name in text


@pytest.mark.slow
@pytest.mark.skipif(not _CORPUS, reason="SchedMate's corpus / evaluation modules are not in this tree yet")
def test_cli_with_the_failure_handlers_measured_rates(tmp_path, capsys):
    text = _cli(capsys, tmp_path, "schedmate-sjf", "schedmate-sjf-fh", "lucid-schedmate")
    for name in ("schedmate-sjf", "schedmate-sjf-fh", "lucid-schedmate"):
        assert name in text


# -- relative failures ("after N s of work"): active once the engine understands Failure.after --------------
_RELATIVE = getattr(Engine, "RELATIVE_FAILURES", False)


def test_trace_failures_carry_their_work_offset():
    table = generate_failures(FailureWorkloadSpec(jobs=200), seed=6)
    w = build_workload(table, cluster(64, 8))
    failures = trace_failures(w)
    assert failures
    assert all(f.after == pytest.approx(w.frame["fail_time"].iloc[f.job]) and f.after < w.duration[f.job]
               for f in failures)
    with pytest.raises(ValueError, match="after"):
        Failure(10, node=0, after=5)


@pytest.mark.skipif(not _RELATIVE, reason="engine without Failure.after (see the SchedMate-sim report's patch)")
def test_relative_failure_strikes_after_its_work_wherever_the_job_runs():
    # 1 GPU: j0 holds it 0-100; j1 (50 s, fails after 20 s of work) starts at 100, fails at 120, restarts
    # at 130 (delay 10) from scratch and ends at 180.
    w = workload([(0, 100, 1), (0, 50, 1)], nodes=1, gpus=1)
    r = simulate(w, "fifo", failures=[Failure(0, job=1, after=20, cause="script/key")],
                 restart=RestartRule(delay=10), check_invariants=True)
    check_identities(job_table(r))
    assert r.end == pytest.approx([100, 180]) and r.failures == [0, 1] and r.lost_work[1] == pytest.approx(20)


@pytest.mark.skipif(not _RELATIVE, reason="engine without Failure.after (see the SchedMate-sim report's patch)")
def test_relative_failure_fires_once_and_keeps_the_checkpoint():
    # checkpoints every 10 s: failing after 35 s keeps 30, restarts at once, 70 s left: ends at 105
    w = workload([(0, 100, 1)], nodes=1, gpus=1, checkpoint_interval=[10.0])
    r = simulate(w, "fifo", failures=[Failure(0, job=0, after=35)], check_invariants=True)
    assert r.end == pytest.approx([105]) and r.failures == [1]


@pytest.mark.skipif(not _RELATIVE, reason="engine without Failure.after (see the SchedMate-sim report's patch)")
def test_every_trace_failure_hits_under_load(busy):
    failures, rule = failures_from_spec("trace,reaction=600", busy, 0)
    for pol in ("fifo", "tiresias", f"schedmate-sjf-fh:{TRACE_TEXT},recall=0.9,precision=0.9"):
        r = simulate(busy, pol, failures=failures, restart=rule, check_invariants=True)
        check_identities(job_table(r))
        assert sum(r.failures) == len(failures), pol


def test_service_order_weighs_the_advice_by_gpus():
    # 4 GPUs. 'resnet_train' (4 GPUs) runs 100 s, 'bert_sweep' (1 GPU) 300 s; a 1,000 s job holds the GPUs
    # 400-1,400 while one job of each name waits (advised 100 s and 300 s). SJF by duration starts the
    # 4-GPU job first; by service (GPUs x s: 400 vs 300) the 1-GPU job.
    rows = [(0, 100, 4), (0, 300, 1), (200, 1000, 4), (1001, 100, 4), (1002, 300, 1)]
    names = ["resnet_train", "bert_sweep", "gpt_pretrain", "resnet_train", "bert_sweep"]
    w = workload(rows, nodes=1, gpus=4, job_name=names)
    sjf = simulate(w, f"schedmate-sjf:{TRACE_TEXT},t_score=0.99", predictions=[1.0] * 5, check_invariants=True)
    svc = simulate(w, f"schedmate-sjf:{TRACE_TEXT},t_score=0.99,priority=service", predictions=[1.0] * 5,
                   check_invariants=True)
    assert sjf.first_start[3] == pytest.approx(1400) and sjf.first_start[4] == pytest.approx(1500)
    assert svc.first_start[4] == pytest.approx(1400) and svc.first_start[3] == pytest.approx(1700)
