"""sim.kernel_compiled: the compiled strict single-pool loop gives the Python kernel's replay exactly (start and
end of every job, the allocation series, events, the engine's clock and progress reports), and runs only
where it applies and pays."""
from __future__ import annotations

import numpy as np
import pytest

from sim import kernel_compiled
from sim.cluster import load_cluster
from sim.workload import build_workload
from tests.helpers import workload
from tests.test_engine_kernel import _bench, _replay, assert_same

pytest.importorskip("numba")


@pytest.fixture
def compiled_always(monkeypatch):
    """The compiled loop for any size (it normally starts at MIN_JOBS)."""
    monkeypatch.setattr(kernel_compiled, "MIN_JOBS", 0)
    monkeypatch.delenv("SCHEDCAST_COMPILED_KERNEL", raising=False)


def _both(w, policy: str, monkeypatch, placement: str = "first-fit"):
    """(compiled engine and result, Python-kernel engine and result) of one replay."""
    compiled = _replay(w, policy, placement, True)
    monkeypatch.setenv("SCHEDCAST_COMPILED_KERNEL", "0")
    python = _replay(w, policy, placement, True)
    monkeypatch.delenv("SCHEDCAST_COMPILED_KERNEL")
    return compiled, python


def _assert_equal_replays(compiled, python) -> None:
    (c_engine, c), (p_engine, p) = compiled, python
    assert c_engine.loop == "compiled-kernel" and p_engine.loop == "kernel"
    assert c_engine.now == p_engine.now and c_engine.unfinished == p_engine.unfinished
    assert_same(c, p)
    assert list(c_engine.since) == list(p_engine.since) and type(c_engine.since) is type(p_engine.since)


@pytest.fixture(scope="module")
def philly(philly_file):
    from features.traces import load_trace

    return build_workload(load_trace(philly_file), load_cluster("philly-pool"), limit=12_000)


@pytest.mark.parametrize("policy", ["fifo", "sjf", "spjf"])
def test_compiled_loop_equals_the_python_kernel_on_real_philly(philly, policy, compiled_always, monkeypatch):
    _assert_equal_replays(*_both(philly, policy, monkeypatch))


@pytest.mark.parametrize("policy", ["fifo", "sjf"])
def test_compiled_loop_equals_the_python_kernel_and_the_minimal_loop_on_the_reference(tmp_path, policy,
                                                                                     compiled_always, monkeypatch):
    from features.traces import load_trace

    bench = _bench()
    jobs = bench.reference_workload(20_000)
    trace = bench.write_reference_trace(tmp_path / "cluster_log.csv", jobs)
    (tmp_path / "ref.yaml").write_text("name: ref-pool\ngpu_type: V100\ngpus_per_node: 8\nnodes: 125\n")
    w = build_workload(load_trace(trace, "helios", cache=False), load_cluster(str(tmp_path / "ref.yaml")))
    compiled, python = _both(w, policy, monkeypatch)
    _assert_equal_replays(compiled, python)
    if policy == "sjf":
        start, _ = bench.minimal_sjf(jobs["submit"], jobs["duration"], jobs["gpus"], 1000)
        assert np.array_equal(np.asarray(compiled[1].first_start), np.asarray(start, dtype=float))


def test_ties_zero_durations_and_a_full_cluster_replay_alike(compiled_always, monkeypatch):
    """Equal submissions, equal keys (ties by job index), zero-length jobs (which finish in a second pass at
    the same instant and free GPUs for more starts then), jobs of the whole cluster, whole-second ints."""
    rng = np.random.default_rng(3)
    rows = [(int(t), int(d), int(g)) for t, d, g in zip(np.sort(rng.integers(0, 40, 300)), rng.choice([0, 0, 5, 10, 30], 300),
                                                       rng.choice([1, 2, 4, 8, 16], 300))]
    w = workload(rows, nodes=2, gpus=8)
    for policy in ("fifo", "sjf", "spjf"):
        _assert_equal_replays(*_both(w, policy, monkeypatch))


def test_progress_is_reported_as_the_python_kernel_reports_it(philly, compiled_always, monkeypatch):
    from sim.engine import Engine
    from sim.policies import get_policy

    def calls(compiled: bool) -> list[tuple[int, int]]:
        monkeypatch.setenv("SCHEDCAST_COMPILED_KERNEL", "1" if compiled else "0")
        seen: list[tuple[int, int]] = []
        _, factory, _ = get_policy("sjf")
        engine = Engine(philly, factory, placement="first-fit", policy_name="sjf",
                        progress=lambda done, total: seen.append((done, total)))
        engine.run()
        assert engine.loop == ("compiled-kernel" if compiled else "kernel")
        return seen

    compiled = calls(True)
    assert len(compiled) > 100 and compiled == calls(False)


def test_the_compiled_loop_runs_only_where_it_applies_and_pays(philly, monkeypatch):
    monkeypatch.delenv("SCHEDCAST_COMPILED_KERNEL", raising=False)
    assert len(philly) < kernel_compiled.MIN_JOBS
    assert _replay(philly, "sjf", "first-fit", True)[0].loop == "kernel"  # too small to pay for numba
    monkeypatch.setattr(kernel_compiled, "MIN_JOBS", 0)
    assert _replay(philly, "sjf", "first-fit", True)[0].loop == "compiled-kernel"
    assert _replay(philly, "sjf", "consolidate", True)[0].loop == "kernel"  # places on nodes: Python kernel
    assert _replay(philly, "spwf", "first-fit", True)[0].loop == "kernel"  # a key it does not order
    monkeypatch.setenv("SCHEDCAST_COMPILED_KERNEL", "off")
    assert _replay(philly, "sjf", "first-fit", True)[0].loop == "kernel"
    monkeypatch.delenv("SCHEDCAST_COMPILED_KERNEL")
    monkeypatch.setattr(kernel_compiled, "_COMPILED", [None])  # numba not installed
    assert _replay(philly, "sjf", "first-fit", True)[0].loop == "kernel"


def test_values_a_float64_cannot_hold_exactly_keep_the_python_loop():
    assert kernel_compiled.exact_floats(np.array([1, 2, 2 ** 53])) is not None
    assert kernel_compiled.exact_floats(np.array([1, 2 ** 53 + 1])) is None
    assert kernel_compiled.exact_floats(np.array([1.0, np.inf])) is None
    assert kernel_compiled.exact_floats(np.array(["1"])) is None
    assert kernel_compiled.exact_floats(np.array([0.5, 3.0])).dtype == np.float64


def test_a_numba_that_refuses_the_module_leaves_the_python_loop(monkeypatch):
    """numba raises at import when it has nowhere to cache the code (no writable folder): the replay goes on
    in the Python loop."""
    import sys
    import types

    class Refusing(types.ModuleType):
        def __getattr__(self, name):
            raise RuntimeError("cannot cache function 'run_chunk': no locator available")

    monkeypatch.setitem(sys.modules, "sim._kernel_numba", Refusing("sim._kernel_numba"))
    monkeypatch.setattr(kernel_compiled, "_COMPILED", [])
    assert kernel_compiled.compiled() is None


@pytest.mark.parametrize("skip", [True, False])
def test_numba_loads_without_scipys_blas_probe_only_when_asked(skip):
    """skip_blas_probe: numba's array functions load without importing scipy.linalg (its BLAS probe), which
    stays importable, and numba's linear algebra still finds it; without the request the probe runs as numba
    ships it (the reason for the request: if a numba stops probing, this test skips and says so)."""
    import subprocess
    import sys

    code = f"""
import sys
from sim import kernel_compiled as kc
if {skip}:
    kc.skip_blas_probe()
assert kc.compiled() is not None
import numba.np.arraymath
print("scipy.linalg" in sys.modules, kc.BLAS_PROBE_MODULE in sys.modules)
import scipy.linalg.cython_blas
from numba.np.linalg import ensure_blas
ensure_blas()
print("blas ok")
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    if not skip and out[0] == "False False":
        pytest.skip("this numba no longer imports SciPy's BLAS when it loads: skip_blas_probe has nothing to skip")
    assert out[:2] == (["False False"] if skip else ["True True"]) + ["blas ok"]


@pytest.mark.parametrize("policy", ["sjf", "spjf", "fifo"])
def test_a_compiled_replay_reads_no_workload_list(philly_file, compiled_always, policy):
    """The compiled loop and the scoring read the workload's arrays: its deferred lists (submit, duration:
    sim.workload.DEFERRED_LISTS) are never made."""
    from evaluation.metrics import evaluate
    from features.traces import load_trace
    from sim import simulate

    w = build_workload(load_trace(philly_file), load_cluster("philly-pool"), limit=3000)
    result = simulate(w, policy, placement="first-fit")
    evaluate(result)
    assert result.loop == "compiled-kernel"
    assert "submit" not in w.__dict__ and "duration" not in w.__dict__
