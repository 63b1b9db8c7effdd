"""Property: over random HP / spot traces (gangs, fractions, checkpoints), no policy of the GFS family ever
evicts an HP task, invariants hold on every event, every task finishes, and evicted spot tasks keep the
JCT identity (wait + load + train + save)."""
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evaluation.metrics import check_identities, job_table
from sim import simulate
from tests.helpers import workload

POLICIES = ["gfs", "gfs-p", "gfs-sp", "gfs:summed=true,H=1", "gfs-e", "yarn-cs", "chronus", "lyra", "fgd"]

task = st.tuples(
    st.integers(0, 20_000),                    # submit (s)
    st.integers(60, 30_000),                   # duration (s)
    st.sampled_from([1, 2, 4, 8]),             # GPUs per pod
    st.sampled_from([1, 1, 1, 2]),             # pods
    st.booleans(),                             # spot?
    st.sampled_from([None, None, 0.5, 0.25]),  # fraction (1-pod tasks only)
    st.sampled_from(["a", "b", "c"]),          # organisation
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(task, min_size=1, max_size=25), st.sampled_from(POLICIES), st.integers(0, 3))
def test_hp_is_never_evicted(tasks, policy, seed):
    tasks = sorted(tasks, key=lambda x: x[0])
    rows, pods, gpp, frac, cls, org, ckpt = [], [], [], [], [], [], []
    for submit, dur, g, p, spot, f, o in tasks:
        if f is not None:
            p, g = 1, 1
        rows.append((submit, dur, g * p))
        pods.append(p)
        gpp.append(g)
        frac.append(f)
        cls.append("spot" if spot else "hp")
        org.append(o)
        ckpt.append(1800.0 if spot else None)
    w = workload(rows, nodes=3, gpus=8, org=org, num_pods=pods, gpus_per_pod=gpp, gpu_fraction=frac,
                 job_class=cls, checkpoint_interval=ckpt)
    r = simulate(w, policy, check_invariants=True, seed=seed)
    for j, c in enumerate(w.job_class):
        if c != "spot":
            assert r.evictions[j] == 0, (policy, j)
    assert all(e < float("inf") for e in r.end)
    check_identities(job_table(r))
