"""Issue 41: Lucid's warm-up mis-profiling (a new Lucid parameter), the mis-packings it causes, the
SM-utilisation errors both sides report, and the Failure Handler's per-type coin (rates measured on
real logs)."""
from __future__ import annotations

import numpy as np
import pytest

from sim import simulate
from sim.policies import get_policy as _get


def get_policy(spec: str):
    return _get(spec)[1]()  # a policy instance, made by the registry's factory

TRACE_TEXT = "text_source=trace"


@pytest.fixture(scope="module")
def busy():
    from pipelines.simulate import build_source

    return build_source(synthetic="helios-failures", jobs=250, seed=0, offered_load=1.3)[1]


def test_warmup_error_is_validated_and_defaults_to_exact_profiles():
    assert get_policy("lucid").warmup_error == 0.0
    with pytest.raises(ValueError, match="warmup_error"):
        get_policy("lucid:warmup_error=1.5")
    assert get_policy("lucid-schedmate:warmup_error=0.2").warmup_error == pytest.approx(0.2)


def test_warmup_profiles_read_low_and_cause_mispackings(busy):
    # every job profiled (no bypass, whose retrieval has errors of its own)
    base = f"lucid-schedmate:{TRACE_TEXT},initial=history,failure_handler=false,tracker=oracle,tracker_error=0"
    exact = simulate(busy, base + ",skip_profiling=false", check_invariants=True).policy_stats
    warm = simulate(busy, base + ",skip_profiling=false,warmup_error=0.193", check_invariants=True).policy_stats
    bypass = simulate(busy, base + ",warmup_error=0.193", check_invariants=True).policy_stats
    # exact profiles: every packing is one the steady-state scores allow; no profiler error reported
    assert exact["schedmate_mispacks"] == 0 and "lucid_profile_util_rel_error" not in exact
    # warm-up profiles: the measured relative error is the parameter's mean (exponential, clipped at 0.9)
    assert warm["lucid_profile_util_rel_error"] == pytest.approx(0.193, abs=0.04)
    assert warm["schedmate_mispacks"] > 0
    # the bypass's estimate is the matches' steady state: its error is measured, not the profiler's
    assert "schedmate_util_rel_error" not in warm
    assert bypass["schedmate_skipped_profiling"] > 0 and 0.0 <= bypass["schedmate_util_rel_error"] < 5.0


def test_per_type_false_alarms_drive_the_coin():
    pol = get_policy("schedmate-sjf-fh:recall=0.5,false_alarm_framework=0,false_alarm_script=1")
    assert (pol.false_alarm_framework, pol.false_alarm_script) == (0.0, 1.0)
    with pytest.raises(ValueError, match="need recall"):
        get_policy("schedmate-sjf-fh:false_alarm_script=0.1")
    with pytest.raises(ValueError, match="false_alarm_framework"):
        get_policy("schedmate-sjf-fh:recall=1,false_alarm_framework=2")

    from sim.policies.schedmate import SchedMateParts

    parts = SchedMateParts()
    parts.sm, parts.fh_rng, parts.fh = pol, np.random.default_rng(0), {"no_answer": 0}
    calls = {c: [parts._called_infrastructure(None, 0, "", c) for _ in range(400)]
             for c in ("infrastructure", "framework", "script")}
    assert not any(calls["framework"]) and all(calls["script"])
    assert 0.4 < np.mean(calls["infrastructure"]) < 0.6


def test_lucid_reports_its_packings_speeds_and_mispacks_only_when_misprofiling(busy):
    plain = simulate(busy, "lucid:initial=history", check_invariants=True).policy_stats
    assert "lucid_mispacks" not in plain and "lucid_pack_host_speeds" not in plain  # Lucid's own stats unchanged
    warm = simulate(busy, "lucid:initial=history,unstable_speed=0,warmup_error=0.193", check_invariants=True).policy_stats
    speeds = warm["lucid_pack_host_speeds"]
    assert len(speeds) == warm["lucid_packs"] > 0 and all(0.0 < s < 2.0 for s in speeds)  # measured pairs reach 1.5
    assert len(warm["lucid_pack_pair_throughputs"]) == len(speeds) and min(warm["lucid_pack_pair_throughputs"]) > 0.4
    assert 0 <= warm["lucid_mispacks"] <= warm["lucid_packs"]
    # Lucid+SchedMate counts its mis-packings in the same place (once per packing)
    sm = simulate(busy, f"lucid-schedmate:{TRACE_TEXT},initial=history,failure_handler=false,skip_profiling=false,"
                        "warmup_error=0.193", check_invariants=True).policy_stats
    assert sm["schedmate_mispacks"] == sm["lucid_mispacks"] <= sm["lucid_packs"]


def test_table2_workloads_by_gpu_request_with_measured_proxies():
    from pipelines.papers import schedmate as runner
    from sim.interference import InterferenceModel

    assert [runner.table2_scale(g) for g in (1, 2, 3, 4, 7, 8, 64)] == \
        ["small"] * 3 + ["medium"] * 2 + ["large"] * 2  # schedmate.txt:292
    im = InterferenceModel.load()
    gpus = [1, 2, 4, 8, 16] * 40
    models, keys = runner.table2_keys(gpus, im, np.random.default_rng(0))
    again = runner.table2_keys(gpus, im, np.random.default_rng(0))
    assert (models, keys) == again  # seeded
    proxy = {m: p for rows in runner.TABLE2.values() for m, p in rows}
    for g, m, k in zip(gpus, models, keys):
        assert m in dict(runner.TABLE2[runner.table2_scale(g)])  # the job's scale's models only
        assert k in im.solo.index and im.solo.at[k, "model"] == proxy[m]  # a measured row of its proxy
    assert {"LLaMA-3 8B", "Qwen-2.5 14B"} == {m for g, m in zip(gpus, models) if g >= 8}


def test_speed_summary_counts_the_slow_packings():
    from pipelines.papers.schedmate import speed_summary

    text = speed_summary([0.45, 0.6, 0.7, 0.9, 1.0])
    assert text.startswith("5 packings") and "below 0.5 / 0.65 / 0.75: 1 / 2 / 3" in text
    assert speed_summary([]) == "no packing"
