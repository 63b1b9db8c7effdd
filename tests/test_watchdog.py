"""Issue 43, item 2: the engine's watchdog. A replay whose simulated time stops advancing, or whose events
outrun what the workload explains, stops within seconds with ReplayStalled naming the policy and the
simulated time: a one-line exit 2 from `simulate`, a failed cell (the sweep goes on) in `experiment run`.
Legitimate replays are untouched (same events, same numbers)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from features import plugins
from features.paths import REPO_ROOT
from sim import engine as E
from sim import simulate
from sim.engine import Engine, ReplayStalled, SimulationError
from sim.policies import POLICIES, get_policy
from sim.policies.queueing import Fifo
from tests.helpers import workload

SPIN_MODULE = '''
"""A plug-in policy whose timer re-arms itself ``step`` s later: 0 stops time, 1e-9 floods it."""
from sim.policies import register
from sim.policies.queueing import Fifo


class Spin(Fifo):
    name = "test-spin"
    summary = "FIFO with a timer that re-arms itself step s later"
    citation = "schedcast's watchdog test"

    def __init__(self, step: float = 0.0, at: float = 1.0):
        super().__init__()
        self.step, self.at = step, at

    def on_start(self):
        super().on_start()
        self.ctx.set_timer(self.ctx.now + self.at, "spin")

    def on_timer(self, payload):
        self.ctx.set_timer(self.ctx.now + self.step, "spin")


if "test-spin" not in __import__("sim.policies").policies.POLICIES._items:
    register(Spin)
'''


@pytest.fixture(scope="module")
def spin():
    namespace: dict = {}
    exec(compile(SPIN_MODULE, "spin_policies", "exec"), namespace)
    yield namespace["Spin"]
    POLICIES.unregister("test-spin")


def _jobs(n: int = 30):
    return workload([(i * 10.0, 100.0 + 7 * i, 1 + i % 4) for i in range(n)])


def test_time_that_stops_advancing_is_stopped_within_seconds(spin):
    t0 = time.perf_counter()
    with pytest.raises(ReplayStalled) as err:
        simulate(_jobs(), "test-spin:step=0,at=250")
    assert time.perf_counter() - t0 < 5.0
    text = str(err.value)
    assert "\n" not in text and text.startswith("policy 'test-spin:step=0,at=250': simulated time stopped advancing "
                                                "at t=250 s"), text


def test_events_that_outrun_the_workload_are_stopped_within_seconds(spin):
    for step in (1e-9, 1e-3):
        t0 = time.perf_counter()
        with pytest.raises(ReplayStalled) as err:
            simulate(_jobs(), f"test-spin:step={step}")
        assert time.perf_counter() - t0 < 10.0
        assert "events by simulated time t=" in str(err.value) and "test-spin" in str(err.value)


class _NanTimer(Fifo):
    def on_start(self):
        super().on_start()
        self.ctx.set_timer(float("nan"), "x")  # periodic-srtf:interval=inf made one (ceil(t / inf) * inf)


def test_a_nan_timer_is_refused_at_once():
    with pytest.raises(SimulationError, match="policy 'nan-timer' set a timer at nan s, not a time"):
        Engine(_jobs(), _NanTimer, policy_name="nan-timer").run()


def test_the_bounds_come_from_the_workload(spin):
    """A larger workload may take more events at one instant (every job arriving at once) and more events in
    all; a slow timer of a long replay is well inside the bound."""
    w = _jobs(200)
    engine = Engine(w, get_policy("fifo")[1])
    engine._watch_start()
    assert engine._stall_limit == E.STALL_EVENTS + E.STALL_PER_JOB * 200
    assert engine._events_rate == E.EVENTS_PER_PARTITION * 2 + 4
    assert engine._idle_limit == E.IDLE_FACTOR * 3 * max(w.duration) + E.IDLE_BASE


def test_timers_that_run_on_with_nothing_to_do_are_stopped(spin):
    """One timer a simulated second is a pace the workload explains, but it re-arms for ever after every job
    ended: the replay would never end."""
    t0 = time.perf_counter()
    with pytest.raises(ReplayStalled) as err:
        simulate(_jobs(30), "test-spin:step=1")
    assert time.perf_counter() - t0 < 10.0
    assert "nothing but its timers from t=" in str(err.value) and "with 0 of 30 jobs unfinished" in str(err.value)


@pytest.mark.parametrize("policy", ["fifo", "tiresias", "periodic-srtf:interval=1", "lazer:deferral=5", "srtf"])
def test_a_legitimate_replay_is_unchanged(policy):
    w1, w2 = _jobs(40), _jobs(40)
    on = Engine(w1, get_policy(policy)[1], policy_name=policy, fast_path=False).run()
    off = Engine(w2, get_policy(policy)[1], policy_name=policy, fast_path=False, watchdog=False).run()
    assert on.events == off.events and list(on.end) == list(off.end)


def _env() -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg"}
    env.pop(plugins.ENV_VAR, None)
    return env


def test_simulate_cli_stops_a_stalled_replay_with_one_line_and_exit_2(tmp_path):
    (tmp_path / "spin_policies.py").write_text(SPIN_MODULE)
    out = tmp_path / "out"
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pipelines.cli", "--plugin", "spin_policies", "simulate",
                           "--synthetic", "demo", "--jobs", "20", "--policy", "test-spin:step=0", "--no-plots",
                           "--no-progress", "--no-track", "--out", str(out)],
                          cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=120)
    assert time.perf_counter() - t0 < 30.0
    assert done.returncode == 2, done.stdout + done.stderr
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("schedcast: error: policy 'test-spin:step=0': simulated time stopped advancing at t=")
    assert not out.exists() or not any(out.iterdir())  # nothing written half-way


def test_a_sweep_reports_the_stalled_cell_as_failed_and_completes_the_rest(spin, tmp_path):
    from pipelines.experiment import parse_spec, run_experiment

    spec = parse_spec({"name": "watch", "workloads": [{"name": "demo", "synthetic": "demo", "jobs": 25}],
                       "policies": ["fifo", "test-spin:step=0", "sjf"], "seeds": 1})
    t0 = time.perf_counter()
    outcome = run_experiment(spec, tmp_path / "run", executor="serial", report=False)
    assert time.perf_counter() - t0 < 60.0
    assert outcome.ok == 2 and outcome.failed == 1, outcome
    records = [json.loads(p.read_text()) for p in (tmp_path / "run" / "cells").glob("*.json")]
    failed = [r for r in records if r["status"] == "failed"]
    assert len(failed) == 1 and failed[0]["stage"] == "replay"
    assert failed[0]["error"].startswith("ReplayStalled: policy 'test-spin:step=0': simulated time stopped advancing")
    assert sorted(r["status"] for r in records) == ["failed", "ok", "ok"]


def test_experiment_run_cli_fails_the_stalled_cell_and_finishes_the_sweep(tmp_path):
    (tmp_path / "spin_policies.py").write_text(SPIN_MODULE)
    (tmp_path / "spec.yaml").write_text("name: watch\nworkloads:\n  - {name: demo, synthetic: demo, jobs: 20}\n"
                                        "policies: [fifo, 'test-spin:step=0', sjf]\nseeds: 1\n")
    done = subprocess.run([sys.executable, "-m", "pipelines.cli", "--plugin", "spin_policies", "experiment", "run",
                           "spec.yaml", "--executor", "serial", "--out", "run", "--no-progress", "--no-track"],
                          cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]  # some cell failed, the sweep ended
    assert "2 ok" in done.stdout and "1 failed of 3 cells" in done.stdout, done.stdout
    records = [json.loads(p.read_text()) for p in (tmp_path / "run" / "cells").glob("*.json")]
    failed = [r for r in records if r["status"] == "failed"]
    assert len(failed) == 1 and "ReplayStalled: policy 'test-spin:step=0': simulated time stopped" in failed[0]["error"]


class _Ticker(Fifo):
    """Ticks every minute until its jobs are done (as Lucid's scaling tick or GFS' sampling do)."""

    def on_start(self):
        super().on_start()
        self.left = len(self.ctx.jobs.duration)
        self.ctx.set_timer(self.ctx.now + 60.0, "tick")

    def on_finish(self, job):
        super().on_finish(job)
        self.left -= 1

    def on_timer(self, payload):
        if self.left:
            self.ctx.set_timer(self.ctx.now + 60.0, "tick")


def test_a_long_gap_between_submissions_is_not_idle():
    """30 days without a job between two 10-s jobs: 43,200 ticks with nothing running, far past the idle
    limit (~1 day here), but an arrival is still to come, so the replay is not stopped."""
    w = workload([(0.0, 10.0, 1), (30 * 86400.0, 10.0, 1)])
    result = Engine(w, _Ticker, policy_name="ticker").run()
    assert result.events > 43_000 and list(result.end) == [10.0, 30 * 86400.0 + 10.0]


class _HoldForAWeek(Fifo):
    """Starts nothing until 8 days have passed (a quota from a week of history), a timer every minute."""

    def on_start(self):
        super().on_start()
        self.ctx.set_timer(60.0, "tick")

    def on_timer(self, payload):
        if self.ctx.now < 9 * 86400.0:  # then it stops, as a policy's timers do once its work is done
            self.ctx.set_timer(self.ctx.now + 60.0, "tick")

    def schedule(self):
        if self.ctx.now >= 8 * 86400.0:
            super().schedule()


class _HoldWithMemory(_HoldForAWeek):
    memory_s = 8 * 86400.0


def test_a_policy_that_remembers_a_week_may_hold_jobs_that_long():
    """GFS' quota rests on the past week's demand, so its spot tasks may wait a week with only its timers
    running (issue 40's GFS-e): the idle bound adds the policy's ``memory_s``; without it that is a stall."""
    with pytest.raises(ReplayStalled, match="nothing but its timers"):
        Engine(_jobs(5), _HoldForAWeek, policy_name="hold").run()
    engine = Engine(_jobs(5), _HoldWithMemory, policy_name="hold-with-memory")
    engine.run()
    assert engine.unfinished == 0
