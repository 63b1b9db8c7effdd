"""Issue 43, items 1 and 3: every numeric parameter of every registered plug-in has a domain
(features.plugins.Domain on its typed parameter; a number without one must be finite), checked when the
spec is parsed: a value just outside is one line naming the plug-in and the parameter (exit 2 from the
CLI, in well under a second), a value just inside is taken and its replay of a small workload ends."""
from __future__ import annotations

import dataclasses
import math
import os
import subprocess
import sys
import time
from typing import Annotated, Any

import pytest
from annotated_types import Ge
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from features import plugins
from features.paths import REPO_ROOT
from pydantic import Field

from features.plugins import FINITE, PERIOD, Domain, check_domains, parameter_domains
from sim.performance import PERFORMANCE, make_performance
from sim.placement import PLACEMENTS, make_placement
from sim.policies import POLICIES, get_policy
from sim.predictors import PREDICTORS, make_predictor

# -- the issue's cases -------------------------------------------------------------------------------------
ISSUE_CASES = [
    ("periodic-srtf:interval=inf", "interval"),  # ran for ever (a NaN timer)
    ("periodic-srtf:interval=nan", "interval"),  # "cannot convert float NaN to integer", no name
    ("periodic-srtf:interval=0", "interval"),
    ("lucid:tick=0", "tick"),  # ran for ever
    ("lucid:update_interval=1", "update_interval"),  # a retraining every simulated second
    ("gfs:period_s=0", "period_s"),  # ran for ever
    ("gfs:sample_s=0", "sample_s"),
    ("tiresias:thresholds=[-5]", "thresholds"),  # replayed with exit 0
    ("tiresias:thresholds=nan", "thresholds"),
    ("tiresias:thresholds=[]", "thresholds"),
    ("tiresias:thresholds=[36000,3600]", "thresholds"),
    ("tiresias-rounds:thresholds=[600,600]", "thresholds"),
    ("lazer:deferral=-1", "deferral"),
    ("lazer:deferral=nan", "deferral"),
    ("lucid-schedmate:tick=0", "tick"),
]


@pytest.mark.parametrize("spec,param", ISSUE_CASES)
def test_the_issue_cases_are_one_line_naming_policy_and_parameter(spec, param):
    name = spec.split(":")[0]
    t0 = time.perf_counter()
    with pytest.raises(ValueError) as err:
        get_policy(spec)
    assert time.perf_counter() - t0 < 1.0
    text = str(err.value)
    assert "\n" not in text
    assert text.startswith(f"bad parameters for policy {name!r}: {param} must be "), text


def test_values_inside_the_domains_are_taken():
    for spec in ("periodic-srtf:interval=1", "lucid:update_interval=0", "lucid:update_interval=3600",
                 "gfs:eta_max=inf", "gfs:period_s=60", "tiresias:thresholds=[600,3600]", "tiresias:thresholds=60",
                 "lazer:deferral=0", "lazer:deferral=bo", "lazer:deferral=15"):
        get_policy(spec)


def _cli(args: list[str], cwd) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg"}
    env.pop(plugins.ENV_VAR, None)
    return subprocess.run([sys.executable, "-m", "pipelines.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize("spec,fragment", [
    ("periodic-srtf:interval=inf", "bad parameters for policy 'periodic-srtf': interval must be a finite number"),
    ("tiresias:thresholds=[-5]", "bad parameters for policy 'tiresias': thresholds must be"),
])
def test_cli_refuses_before_the_replay_with_exit_2(spec, fragment, tmp_path):
    out = tmp_path / "out"
    done = _cli(["simulate", "--synthetic", "demo", "--jobs", "20", "--policy", spec, "--no-plots", "--no-progress",
                 "--no-track", "--out", str(out)], tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("schedcast: error: ") and fragment in lines[0], done.stderr
    assert not out.exists() or not any(out.iterdir())


# -- the mechanism -----------------------------------------------------------------------------------------
def test_domain_rules_and_messages():
    thresholds = Domain(gt=0.0, nonempty=True, increasing=True, max_len=3)
    assert thresholds.problem([1, 2]) is None and thresholds.problem(5.0) is None
    for bad in ([-5], [], [2, 1], [1, 1], [1, 2, 3, 4], [1, float("nan")], float("inf"), 0):
        assert thresholds.problem(bad) is not None, bad
    off = Domain(ge=3600.0, allow=(0,))
    assert off.problem(0) is None and off.problem(3600) is None and "(or 0)" in off.problem(5)
    assert Domain(gt=0, finite=False).problem(math.inf) is None
    assert Domain(gt=0, finite=False).problem(math.nan) is not None
    assert FINITE.problem("bo") is None and FINITE.problem(None) is None and FINITE.problem(True) is None
    assert FINITE.problem("nan") is not None  # a number given as text to a str | float parameter
    assert Domain(ge=1, integer=True).problem(2.5) is not None


def test_an_entry_point_style_plugin_gets_the_checks_from_its_types():
    """A third-party factory declares domains with Domain, with pydantic's Field or annotated-types, or
    not at all (then every number must be finite), and **kwargs too."""
    def factory(a: Annotated[float, Domain(gt=0)] = 1.0, b: Annotated[float, Field(ge=2)] = 2.0,
                c: Annotated[int, Ge(3)] = 3, d: float = 0.0, e: str = "x", **weights: Annotated[float, Domain(ge=0)]):
        return None

    declared, var_kw = parameter_domains(factory)
    assert declared["a"].gt == 0 and declared["b"].ge == 2 and declared["c"].ge == 3 and "d" not in declared
    assert var_kw is not None and var_kw.ge == 0
    check_domains("score", "demo", factory, {"a": 2, "b": 2, "c": 3, "d": -1e9, "e": "nan?", "w": 0})
    for key, value in (("a", 0), ("b", 1.5), ("c", 2), ("d", math.nan), ("d", math.inf), ("w", -1)):
        with pytest.raises(ValueError, match=rf"^bad parameters for score 'demo': {key} must be "):
            check_domains("score", "demo", factory, {key: value})


# -- the property test over every registered plug-in ------------------------------------------------------
def _numeric_default(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _policy_params() -> list[tuple[str, str, Domain]]:
    """(policy, parameter, domain) of every numeric parameter of every policy class: the declared domain,
    else FINITE for a parameter whose default is a number."""
    out, seen = [], set()
    for name in POLICIES.names():
        info = POLICIES.lookup(name)
        if info.cls in seen:
            continue  # a named setting of a class already here (pollux-60, lucid-nobinder): the same domains
        seen.add(info.cls)
        declared, _ = parameter_domains(info.cls)
        for param, _type, default, _doc in info.parameters():
            if param in info.defaults:
                continue  # fixed by the registry entry (pollux-60's interval)
            if param in declared:
                out.append((name, param, declared[param]))
            elif _numeric_default(default):
                out.append((name, param, FINITE))
    return out


POLICY_PARAMS = _policy_params()


def _factory_params(registry, names) -> list[tuple[str, str, Domain]]:
    out = []
    for name in names:
        target = registry.params_target(name)
        declared, _ = parameter_domains(target)
        try:
            import inspect

            sig = inspect.signature(target.__init__ if isinstance(target, type) else target)
        except (TypeError, ValueError):
            continue
        for param, p in sig.parameters.items():
            if param in declared:
                out.append((name, param, declared[param]))
            elif _numeric_default(p.default):
                out.append((name, param, FINITE))
    return out


def test_every_policy_period_tick_and_threshold_declares_a_domain():
    """The parameters that decide how many events a replay makes are bounded, not merely finite."""
    declared = {(n, p): d for n, p, d in POLICY_PARAMS}
    for key in (("periodic-srtf", "interval"), ("tiresias-rounds", "interval"), ("tiresias", "thresholds"),
                ("lucid", "tick"), ("lucid", "update_interval"), ("gfs", "period_s"), ("gfs", "sample_s"),
                ("lucid-schedmate", "tick"), ("lucid-schedmate", "update_interval"), ("lazer", "deferral")):
        d = declared[key]
        assert d is not FINITE and (d.gt is not None or d.ge is not None), key
    assert len(POLICY_PARAMS) > 60  # every policy's numbers take part (a sanity floor, not a target)
    assert all(d is not FINITE for _, _, d in POLICY_PARAMS), [(n, p) for n, p, d in POLICY_PARAMS if d is FINITE]


def _outside(domain: Domain) -> st.SearchStrategy:
    """Values just outside ``domain``."""
    options = [st.just(math.nan)]
    if domain.finite:
        options += [st.just(math.inf), st.just(-math.inf)]
    low, high = domain.gt if domain.gt is not None else domain.ge, domain.lt if domain.lt is not None else domain.le
    allowed = {float(a) for a in domain.allow}
    if low is not None:
        below = st.floats(min_value=low - max(1.0, abs(low)), max_value=low, allow_nan=False,
                          exclude_max=domain.ge is not None)
        options.append(below.filter(lambda v: v not in allowed))
    if high is not None:
        options.append(st.floats(min_value=high, max_value=high + max(1.0, abs(high)), allow_nan=False,
                                 exclude_min=domain.le is not None))
    if domain.takes_lists:
        inside = _inside(domain)
        options.append(st.lists(inside, min_size=2, max_size=4, unique=True).map(lambda v: sorted(v, reverse=True)))
        if domain.nonempty:
            options.append(st.just([]))
    return st.one_of(options)


def _inside(domain: Domain) -> st.SearchStrategy:
    """Values just inside ``domain`` (near its bounds, where the replay's event count is largest)."""
    low = domain.gt if domain.gt is not None else domain.ge
    high = domain.lt if domain.lt is not None else domain.le
    if low is None and high is None:
        return st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)
    lo = low if low is not None else high - 1e6
    hi = high if high is not None else lo + max(1e3, abs(lo))
    hi = min(hi, lo + max(1e3, abs(lo)))  # near the lower bound
    strategy = st.floats(min_value=lo, max_value=hi, exclude_min=domain.gt is not None,
                         exclude_max=domain.lt is not None, allow_nan=False)
    return strategy.map(lambda v: round(v) if domain.integer else v).filter(lambda v: domain.problem(v) is None)


@settings(max_examples=8, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_policy_parameter_refuses_values_just_outside_its_domain(data):
    """Each example draws a value just outside the domain of every numeric parameter of every policy."""
    for name, param, domain in POLICY_PARAMS:
        value = data.draw(_outside(domain), label=f"{name}:{param}")
        t0 = time.perf_counter()
        with pytest.raises(ValueError) as err:
            get_policy(f"{name}:{param}={value!r}")
        text = str(err.value)
        assert "\n" not in text and text.startswith(f"bad parameters for policy {name!r}: "), text
        assert param in text, text
        assert time.perf_counter() - t0 < 1.0


@settings(max_examples=8, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_policy_parameter_takes_values_just_inside_its_domain(data):
    """... and a value just inside it (near the bound where a replay's events are most): the policy's own
    checks agree with its declared domain."""
    for name, param, domain in POLICY_PARAMS:
        value = data.draw(_inside(domain), label=f"{name}:{param}")
        if domain.takes_lists and data.draw(st.booleans()):
            value = sorted(set(data.draw(st.lists(_inside(domain), min_size=1, max_size=5))))
        get_policy(f"{name}:{param}={value!r}" + COMPANIONS.get(param, ""))


#: Parameters that are only meaningful beside another one (the policy refuses them alone, by design).
COMPANIONS = {"false_alarm_framework": ",recall=0.9", "false_alarm_script": ",recall=0.9"}


OTHER_PARAMS = ([("placement", n, p, d) for n, p, d in _factory_params(PLACEMENTS, PLACEMENTS.names())]
                + [("predictor", n, p, d) for n, p, d in _factory_params(PREDICTORS, ["noisy"])])


@settings(max_examples=60, deadline=None, derandomize=True)
@given(data=st.data())
def test_other_kinds_refuse_values_just_outside(data):
    """Placements (scored's weights are **kwargs: float) and predictors, through their own parsers."""
    kind, name, param, domain = data.draw(st.sampled_from(OTHER_PARAMS + [("placement", "scored", "best_fit", FINITE)]))
    value = data.draw(st.sampled_from([math.inf, -math.inf, 1e400]) if domain is FINITE else _outside(domain))
    with pytest.raises(ValueError) as err:
        (make_placement if kind == "placement" else make_predictor)(f"{name}:{param}={value!r}".replace("inf", "1e400"))
    assert "\n" not in str(err.value) and name in str(err.value)


def test_performance_models_check_their_typed_specs():
    for spec in ("constant:solo=inf", "constant:shared=nan", "asrpt:ref_gbps=inf", "constant:per_extra_node=1"):
        with pytest.raises(ValueError) as err:
            make_performance(spec)
        assert "\n" not in str(err.value)
    assert make_performance("constant:solo=2") is not None
    assert PERFORMANCE.noun == "performance model"


# -- values just inside finish ---------------------------------------------------------------------------
#: The floor (and ceiling) of every domain that sets a timer's pace, on a small workload: the replay ends,
#: well within the watchdog's bound, in a few seconds.
EXTREMES = ["periodic-srtf:interval=1", "periodic-srtf:interval=31622400", "tiresias-rounds:interval=1",
            "tiresias:thresholds=[1e-6,2e-6,3e-6,4e-6,5e-6,6e-6,7e-6,8e-6]", "tiresias:thresholds=1e-9",
            "lazer:deferral=0", "lazer:deferral=3162240000", "gfs:period_s=60,sample_s=1",
            "lucid:tick=1,update_interval=0"]  # (a retraining every hour: seconds each, not a hang)


@pytest.fixture(scope="module")
def small():
    from features.traces.synthetic import build_preset
    from sim.cluster import load_cluster
    from sim.workload import build_workload

    table, cluster = build_preset("demo", seed=0, jobs=15)
    return lambda: build_workload(table, load_cluster(cluster))


@pytest.mark.parametrize("spec", EXTREMES)
def test_values_at_the_bounds_finish_on_a_small_workload(spec, small):
    from sim import simulate

    t0 = time.perf_counter()
    result = simulate(small(), spec)
    assert time.perf_counter() - t0 < 30.0
    assert len(result.end) == 15 and all(math.isfinite(e) for e in result.end)


def test_period_is_a_reusable_domain():
    assert dataclasses.replace(PERIOD, ge=60.0).problem(30) is not None


def test_failure_model_and_generator_plugins_get_the_checks():
    from features.traces.synthetic import call_generator
    from sim.failures import FAILURES, parse_failure_spec

    def storms(workload, seed, every: Annotated[float, PERIOD] = 3600.0, scale: float = 1.0):
        return [], None

    FAILURES.register("test-storms", storms)
    try:
        assert parse_failure_spec("test-storms:every=7200,scale=2") == ("test-storms", {"every": 7200, "scale": 2})
        for spec, fragment in (("test-storms:every=0", "every must be a finite number >= 1"),
                               ("test-storms:scale=1e400", "scale must be a finite number, got inf")):
            with pytest.raises(ValueError, match=f"^bad parameters for failure model 'test-storms': {fragment}"):
                parse_failure_spec(spec)
    finally:
        FAILURES.unregister("test-storms")
    with pytest.raises(ValueError, match="^bad parameters for generator 'gfs': hp_share must be a finite number"):
        call_generator("gfs", {"hp_share": math.nan}, 0, 10)
