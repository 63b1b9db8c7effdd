"""The shape of the code (issue 23, item 4): the layer and no-cycle contracts of pyproject's
``[tool.importlinter]`` hold, policies see the replay only through a Context without an ``engine``,
and the preemption search's shortcut (one placement question instead of one per victim) gives the
same answers."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sim.context import Context
from sim.engine import Engine
from sim.placement import Consolidate
from sim.policies.preemptive import Srtf
from tests.helpers import workload

ROOT = Path(__file__).resolve().parents[1]

def _lint_imports() -> subprocess.CompletedProcess:
    exe = shutil.which("lint-imports") or str(Path(sys.executable).with_name("lint-imports"))
    if not Path(exe).exists():
        pytest.skip("import-linter is not installed (pip install -e '.[test]')")
    return subprocess.run([exe, "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_layer_and_cycle_contracts_hold():
    run = _lint_imports()
    out = run.stdout + run.stderr
    assert "Contracts:" in out, out[-2000:]
    assert run.returncode == 0, f"import contracts broken:\n{out[-3000:]}"


def test_pai_generator_is_declared_from_above():
    """features' generator registry knows `pai` (it lives in sim) without features importing sim."""
    from features.traces.synthetic import generator_names

    assert "pai" in generator_names()


def test_context_has_no_engine_attribute():
    w = workload([(0, 10, 1)], nodes=1, gpus=2)
    engine = Engine(w, Srtf)
    ctx = engine.contexts[0]
    assert isinstance(ctx, Context)
    assert not hasattr(ctx, "engine") and "engine" not in Context.__slots__
    # what policies read through the engine before, they now ask the Context
    engine.run()
    assert ctx.placement_of(0) is None and ctx.sharing(0) == frozenset() and ctx.speed(0) == 1.0
    assert ctx.restart_delay >= 0 and ctx.performance is None


class _Counting(Consolidate):
    """The same rule as Consolidate, counting its questions; not known to be monotone (another type), so
    the engine asks it prefix by prefix as before."""

    calls = 0

    def place(self, pool, request):
        type(self).calls += 1
        return super().place(pool, request)


def _blocked_head_workload():
    # 4 nodes x 8 GPUs. Each node gets (one second apart) a shorter 1-GPU job and seven long ones; at
    # t=10 an 8-GPU job whose remaining time lies between them waits: SRTF may preempt only the 28 long
    # jobs, and even all of them would leave 7 free GPUs per node (strict consolidation: no fit).
    rows = []
    for t in range(4):
        rows.append((t, 500, 1))
        rows += [(t, 5000, 1)] * 7
    rows.append((10, 1000, 8))
    return workload(rows, nodes=4, gpus=8)


def test_preemption_search_asks_a_monotone_placement_once_when_nothing_fits(monkeypatch):
    calls = {"n": 0}
    original = Consolidate.place

    def counted(self, pool, request):
        if type(self) is Consolidate:
            calls["n"] += 1
        return original(self, pool, request)

    monkeypatch.setattr(Consolidate, "place", counted)
    fast = Engine(_blocked_head_workload(), Srtf, placement=Consolidate(), check_invariants=True).run()
    _Counting.calls = 0
    slow = Engine(_blocked_head_workload(), Srtf, placement=_Counting(), check_invariants=True).run()
    # same decisions
    assert (fast.first_start, fast.end, fast.preemptions) == (slow.first_start, slow.end, slow.preemptions)
    assert fast.preemptions[-1] == 0 and sum(fast.preemptions) > 0
    # the failing search at t=10 asked once per victim from the 8th on before (21 questions); now the
    # eager prefixes up to 8 and one question for all 28 victims
    assert slow.policy_stats == fast.policy_stats
    assert calls["n"] < _Counting.calls - 15, (calls["n"], _Counting.calls)
