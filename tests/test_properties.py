"""Property tests over random traces: invariants on every event, identities, determinism."""
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evaluation.metrics import check_identities, job_table
from sim import simulate
from sim.policies import POLICIES
from tests.helpers import workload

jobs_strategy = st.lists(
    st.tuples(st.integers(0, 200), st.integers(0, 120), st.sampled_from([1, 1, 1, 2, 4, 8, 12])),
    min_size=1, max_size=25,
)
PARAMS = {"periodic-srtf": ":interval=17", "tiresias": ":thresholds=[30,200]",
          "tiresias-rounds": ":thresholds=[30,200],interval=17"}
# Random clusters are too small to carve a profiler out of: Lucid variants get an added one.
PARAMS.update({name: ":profiler_from=extra" for name in POLICIES if name.startswith("lucid")})
ALL = sorted(POLICIES)


def _run(rows, policy, costs):
    rows = sorted(rows, key=lambda r: r[0])
    n = len(rows)
    load = [3.0 * (i % 3) for i in range(n)] if costs else None
    save = [2.0 * (i % 2) for i in range(n)] if costs else None
    w = workload(rows, nodes=2, gpus=8, load=load, save=save)
    return w, simulate(w, policy + PARAMS.get(policy, ""), predictor="noisy:0.5", check_invariants=True)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=jobs_strategy, policy=st.sampled_from(ALL), costs=st.booleans())
def test_invariants_hold_for_every_policy(rows, policy, costs):
    w, result = _run(rows, policy, costs)
    jobs = job_table(result)
    check_identities(jobs)  # JCT = wait + load + train + save, per job
    assert np.isfinite(jobs["end"]).all()  # every job completed (exactly once: DONE is final)
    # GPU-seconds of training equal the trace's work (speed 1 unless packed: train time = duration).
    assert np.allclose(result.work_done, w.duration)
    if not result.policy_stats.get("lucid_packs"):
        assert np.allclose(jobs["train"], jobs["duration"], atol=1e-6)
    assert (jobs["first_start"] >= jobs["submit"]).all()
    assert (jobs["futile"] <= jobs["load"] + 1e-9).all()
    if not POLICIES[policy].preemptive:
        assert (jobs["preemptions"] == 0).all()
    if not costs:
        assert (jobs["futile"] == 0).all()


@settings(max_examples=10, deadline=None)
@given(rows=jobs_strategy, policy=st.sampled_from(ALL))
def test_same_input_same_output(rows, policy):
    _, a = _run(rows, policy, True)
    _, b = _run(rows, policy, True)
    assert a.end == b.end and a.wait == b.wait and a.preemptions == b.preemptions
