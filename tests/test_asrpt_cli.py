"""A-SRPT through the CLI's entry points: --performance specs (sim.performance.make_performance), --predict
kinds (sim.predictors.predict_kind), group keys and model assignment for traces without them (Philly),
the PAI preset generator, the work-conserving variant and engine invariants with placement-dependent
speeds."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from evaluation.metrics import check_identities, job_table
from sim.asrpt.jobs import assign_model, group_keys, job_models, true_iterations
from sim.asrpt.performance import IterationSpeed
from sim.engine import Engine
from sim.performance import ConstantSpeed, make_performance
from sim.placement.heavy_edge import HeavyEdge
from sim.policies.asrpt import ASrpt
from sim.predictors import group_statistic, predict_kind
from tests.helpers import cluster, table, workload


# -- --performance ---------------------------------------------------------------------------------
def test_performance_specs_build_typed_models():
    assert make_performance("none", None) is None and make_performance(None) is None
    m = make_performance("asrpt:inter_gbps=1,allreduce=tree,assign=false,ref_gbps=25", None)
    assert isinstance(m, IterationSpeed)
    assert (m.inter_gbit, m.allreduce, m.assign, m.ref_gbit) == (1.0, "tree", False, 25.0)
    w = workload([(0, 10, 2)], nodes=2, gpus=4)
    m.bind_workload(w)
    assert m.bw.inter == pytest.approx(1e9 / 8) and m.bw.intra == pytest.approx(w.cluster.intra_node_bandwidth_gbps * 1e9)
    # defaults: the cluster's bandwidths, models assigned per group, reference NIC 10 Gb/s
    d = make_performance("asrpt", w)
    assert d.bw.inter == pytest.approx(w.cluster.inter_node_bandwidth_gbps * 1e9) and d.assign and d.ref_gbit == 10.0
    assert d.model[0] is not None
    c = make_performance("constant:solo=0.5", None)
    assert isinstance(c, ConstantSpeed) and c.solo == 0.5


@pytest.mark.parametrize("spec, field", [
    ("asrpt:inter_gbps=0", "inter_gbps"), ("asrpt:inter_gbps=fast", "inter_gbps"),
    ("asrpt:allreduce=star", "allreduce"), ("asrpt:assign=maybe", "assign"), ("asrpt:bogus=1", "bogus"),
    ("asrpt:inter_gbps", "key=value"), ("asrpt:ref_gbps=1,ref_gbps=2", "ref_gbps"), ("asrpt:seed=1", "seed"),
    ("warp", "warp"),
    ("constant:solo=-1", "solo"),
])
def test_performance_spec_errors_are_one_line_naming_the_field(spec, field):
    with pytest.raises(ValueError) as exc:
        make_performance(spec, None)
    msg = str(exc.value)
    assert "\n" not in msg and field in msg and spec in msg


# -- --predict ---------------------------------------------------------------------------------------
def _frame():
    """Hand-worked: group a: jobs end at 10 (x=100) and 30 (x=300); group b: one job ending at 40."""
    return pd.DataFrame({
        "job_id": [f"j{i}" for i in range(6)],
        "submit_time": [0.0, 0.0, 5.0, 30.0, 31.0, 40.0],
        "duration": [10.0, 40.0, 25.0, 1.0, 1.0, 1.0],
        "num_gpus": [1, 1, 1, 1, 1, 1],
        "group_id": ["a", "b", "a", "a", "a", "b"],
        "iterations": [100.0, 400.0, 300.0, 7.0, 9.0, 11.0],
    })


def test_group_median_and_mean_use_finished_jobs_only_and_unseen_is_zero():
    f = _frame()
    # j0-j2: nothing finished yet -> 0. j3 at t=30: a's j0 (end 10) finished, j2 ends at 30 = not before.
    # j4 at 31: a's j0, j2 finished (and j3 ended at 31: not before) -> median/mean of 100, 300 = 200.
    # j5 at 40: b's j1 ends at 40 -> still unseen -> 0.
    med = predict_kind("iterations", "group-median", f)
    assert med == [0.0, 0.0, 0.0, 100.0, 200.0, 0.0]
    assert predict_kind("iterations", "group-mean", f) == med
    assert predict_kind("duration", "group-median", f)[3:] == [10.0, 17.5, 0.0]
    # median, not mean, of an odd count
    keys = ["g"] * 4
    assert group_statistic(keys, [0, 0, 0, 10], [1, 2, 3, 10], [1.0, 2.0, 30.0, 0.0], "median")[3] == 2.0
    assert group_statistic(keys, [0, 0, 0, 10], [1, 2, 3, 10], [1.0, 2.0, 30.0, 0.0], "mean")[3] == 11.0


def test_oracle_noisy_and_kinds():
    f = _frame()
    assert predict_kind("iterations", "oracle", f) == f["iterations"].tolist()
    assert predict_kind("iterations", "perfect", f) == f["iterations"].tolist()
    assert predict_kind("duration", "oracle", f) == f["duration"].tolist()
    a = predict_kind("iterations", "noisy:0.3", f, seed=1)
    assert a == predict_kind("iterations", "noisy:0.3", f, seed=1) != predict_kind("iterations", "noisy:0.3", f, seed=2)
    assert a != f["iterations"].tolist() and all(v > 0 for v in a)
    assert predict_kind("iterations", "noisy:0", f) == f["iterations"].tolist()


@pytest.mark.parametrize("kind, spec, words", [
    ("speed", "oracle", "unknown kind"), ("iterations", "crystal-ball", "unknown spec"),
    ("iterations", "noisy:-1", "noisy:SIGMA"), ("iterations", "noisy:x", "noisy:SIGMA"),
    ("group_id", "models:/x@champion", "models predict"),
])
def test_predict_kind_errors_are_one_line(kind, spec, words):
    with pytest.raises(ValueError) as exc:
        predict_kind(kind, spec, _frame())
    assert "\n" not in str(exc.value) and words in str(exc.value) and f"--predict {kind}={spec}" in str(exc.value)


def test_a_missing_registry_is_one_line(tmp_path):
    with pytest.raises(ValueError) as exc:
        predict_kind("iterations", "models:/iterations@champion", _frame(),
                     tracking_uri=f"sqlite:///{tmp_path / 'none.db'}")
    assert "\n" not in str(exc.value) and "no model registry" in str(exc.value)


# -- Philly: groups (VC, GPUs), a model per group, iterations from durations ---------------------------
def _philly_like():
    rows = [(0, 3600, 4), (10, 1800, 4), (20, 600, 1), (30, 7200, 4)]
    return table(rows, org=["vc1", "vc1", "vc1", "vc2"]).frame


def test_philly_group_key_is_vc_and_gpus():
    keys = group_keys(_philly_like())
    assert keys[0] == keys[1] and len({keys[0], keys[2], keys[3]}) == 3  # (vc1,4) (vc1,1) (vc2,4)
    # a group_id column wins where present
    f = _philly_like().assign(group_id=["x", None, "x", "y"])
    k = group_keys(f)
    assert k[0] == k[2] == "x" and k[3] == "y" and k[1] == keys[1]


def test_models_per_group_are_seeded_and_order_free():
    f = _philly_like()
    m = job_models(f)
    assert m[0] == m[1] and all(x is not None for x in m)
    assert job_models(f.iloc[::-1].reset_index(drop=True))[::-1] == m  # row order does not matter
    many = [f"g{i}" for i in range(40)]
    assert [assign_model(k, 0) for k in many] != [assign_model(k, 1) for k in many]
    assert job_models(f, assign=False) == [None] * 4
    assert job_models(f.assign(dl_model=["gnmt", None, None, None]), assign=False) == ["gnmt", None, None, None]


def test_iterations_are_duration_over_alpha_min_at_the_reference_nic():
    from sim.asrpt.iteration import Bandwidth, alpha_min
    from sim.asrpt.jobs import shared_catalog

    f = _philly_like()
    models = ["gnmt", "gnmt", None, "vgg16"]
    it = true_iterations(f, models)
    cfg = shared_catalog().config("gnmt", 4)
    assert it[0] == pytest.approx(3600 / alpha_min(cfg, Bandwidth(inter=10e9 / 8, intra=300e9), 8))
    assert it[2] == 600  # no profile: alpha = 1
    # the trace's own column wins
    assert true_iterations(f.assign(iterations=[5.0, np.nan, 1.0, 2.0]), models)[[0, 2, 3]].tolist() == [5, 1, 2]


def test_philly_csv_replays_with_assigned_models(tmp_path):
    """The processed Philly format through the loader, make_performance and A-SRPT: 4-GPU jobs of one
    (VC, GPUs) group share a model; on one 8-GPU server at the reference NIC they run exactly their
    trace duration (best placement, speed 1)."""
    from features.traces import load_trace
    from sim.cluster import Cluster, Partition
    from sim.workload import build_workload

    path = tmp_path / "philly.csv"
    path.write_text("timestamp,duration,num_gpus,gpu_time,cluster\n"
                    "2017-10-01 00:00:00,3600,4,14400,vcA\n2017-10-01 00:00:10,1800,4,7200,vcA\n"
                    "2017-10-01 00:00:20,600,1,600,vcB\n")
    tab = load_trace(path, "philly")
    c = Cluster("one", [Partition("default", [8], ["V100"])], "V100", 300.0, 1.25)
    w = build_workload(tab, c)
    perf = make_performance("asrpt", w)
    assert perf.model[0] == perf.model[1] is not None
    res = Engine(w, ASrpt, placement=HeavyEdge(), performance=perf, predictions={"duration": list(w.duration)},
                 check_invariants=True).run()
    check_identities(job_table(res))
    runs = [e - s for e, s in zip(res.end, res.first_start)]
    assert runs == pytest.approx([3600, 1800, 600])


# -- the PAI preset -------------------------------------------------------------------------------------
def test_pai_preset_generator():
    from sim.asrpt.pai_workload import generate_from_preset
    from features.traces.synthetic import build_preset

    tab, cl = build_preset("pai", seed=2, jobs=300)
    f = tab.frame
    assert cl == "pai-250" and len(f) == 300 and {"group_id", "user", "dl_model", "iterations"} <= set(f)
    assert (f["num_gpus"] == 1).mean() > 0.6
    again = generate_from_preset({"single_gpu_share": 0.0, "models": ["gnmt"]}, 2, 50).frame
    assert (again["num_gpus"] > 1).all() and set(again["dl_model"]) == {"gnmt"}
    for params, field in (({"jobz": 1}, "jobz"), ({"single_gpu_share": 2}, "single_gpu_share"),
                          ({"models": ["nope"]}, "models")):
        with pytest.raises(ValueError) as exc:
            generate_from_preset(params, 0, 10)
        assert field in str(exc.value) and "\n" not in str(exc.value)


# -- the work-conserving variant ------------------------------------------------------------------------
def test_work_conserving_variant_lets_a_later_job_start_beside_a_blocked_head():
    # As test_strict_order_head_blocks: j0 (3 GPUs) runs from 0.75; j1 (2 GPUs) is the head and waits for
    # j0; j2 (1 GPU) enters the real queue at 2.75 (virtual SRPT: sizes 0.75, 1, 1, ties by arrival) and,
    # work-conserving, starts beside j0 at once instead of at 10.75.
    w = workload([(0, 10, 3), (0, 5, 2), (0, 5, 1)], nodes=1, gpus=4)
    res = Engine(w, lambda: ASrpt(work_conserving=True), placement=HeavyEdge(),
                 predictions={"iterations": [1.0, 2.0, 4.0]}, check_invariants=True, record_events=True).run()
    st = {j: t for t, kind, j, _ in res.event_log if kind == "start"}
    assert st[0] == pytest.approx(0.75) and st[2] == pytest.approx(2.75) and st[1] == pytest.approx(10.75)


# -- engine invariants with placement-dependent speeds ------------------------------------------------------
@pytest.mark.parametrize("policy", ["a-srpt", "a-srpt-wc", "wcs"])
def test_invariants_and_run_times_with_placement_dependent_speed(policy):
    """A small PAI-shaped burst on 4 x 8 GPUs: invariants after every event, and every job's run time
    is its true iterations x alpha of the placement it got (Heavy-Edge mapping on its per-node GPUs)."""
    from sim.asrpt.pai_workload import PaiSpec, generate_pai
    from sim.policies.queueing import WcsDuration
    from sim.workload import build_workload

    tab = generate_pai(PaiSpec(jobs=120, single_gpu_share=0.4, mean_interarrival=5.0,
                               multi_gpu_mix={2: 0.3, 4: 0.3, 8: 0.2, 16: 0.2}, models=("gnmt", "vgg16", "gpt-6.7b"),
                               median_iterations=300), seed=4)
    c = cluster(4, 8)
    w = build_workload(tab, c)
    perf = make_performance("asrpt:inter_gbps=5", w)
    factory = {"a-srpt": ASrpt, "a-srpt-wc": lambda: ASrpt(work_conserving=True), "wcs": WcsDuration}[policy]
    res = Engine(w, factory, placement=HeavyEdge(), performance=perf, check_invariants=True, record_events=True,
                 predictions={"iterations": predict_kind("iterations", "oracle", w.frame),
                              "duration": list(w.duration)}).run()
    check_identities(job_table(res))
    spread = 0
    for t, kind, j, placement in res.event_log:
        if kind != "start":
            continue
        counts = tuple(sorted((n for _, n in placement), reverse=True))
        spread += len(counts) > 1
        a = perf.alpha_of(perf.model[j], w.gpus[j], counts)
        assert res.end[j] - t == pytest.approx(perf.true_iterations[j] * a, rel=1e-6)
    assert spread > 0  # some jobs did span servers, so speeds differed from 1


def test_eager_variant_starts_jobs_still_on_the_virtual_machine():
    # One 4-GPU server, no profiles (alpha = 1). j0 (t=0, 4 GPUs, n=10 -> p=10, 20 s); j1 (t=1, 2 GPUs,
    # n=2 -> p=1, 3 s). Paper's rule: j0 waits on the virtual machine until 11 (j1 preempts it there from
    # 1 to 2), j1 runs 2-5, j0 11-31. Eager: the idle cluster takes j0 at 0 (it leaves the virtual
    # machine); j1 completes there at 2 and runs after j0, 20-23.
    w = workload([(0, 20, 4), (1, 3, 2)], nodes=1, gpus=4)
    runs = {}
    for eager in (False, True):
        eng = Engine(w, lambda: ASrpt(eager=eager), placement=HeavyEdge(), predictions={"iterations": [10.0, 2.0]},
                     check_invariants=True, record_events=True)
        res = eng.run()
        check_identities(job_table(res))
        runs[eager] = (res.end, eng.policies[0].stats())
    assert runs[False][0] == pytest.approx([31.0, 5.0]) and runs[False][1]["eager_starts"] == 0
    assert runs[False][1]["virtual_delay_h"] == pytest.approx((11 + 1) / 3600)  # j0 11 s, j1 1 s
    assert runs[True][0] == pytest.approx([20.0, 23.0]) and runs[True][1]["eager_starts"] == 1


def test_head_of_line_blocking_is_measured():
    # test_strict_order_head_blocks again: j1 (2 GPUs) is the head from 1.75 to 10.75 while one GPU is free.
    w = workload([(0, 10, 3), (0, 5, 2), (0, 5, 1)], nodes=1, gpus=4)
    stats = {}
    for wc in (False, True):
        eng = Engine(w, lambda: ASrpt(work_conserving=wc), placement=HeavyEdge(),
                     predictions={"iterations": [1.0, 2.0, 4.0]})
        eng.run()
        stats[wc] = eng.policies[0].stats()
    assert stats[False]["real_queue_idle_gpu_h"] == pytest.approx(9.0 / 3600)
    # work-conserving: j2 fills the free GPU from 2.75 to 7.75; free 1.75-2.75 and 7.75-10.75
    assert stats[True]["real_queue_idle_gpu_h"] == pytest.approx(4.0 / 3600)


def test_size_ordered_real_queue():
    # One 4-GPU server, alpha = 1. j0 (t=0, n=0: p=0) runs 0-10. j1 (t=1, n=4: p=4) completes virtually at 5,
    # j2 (t=6, n=1: p=1) at 7; both wait for j0. The paper's real queue keeps that order (j1 10-15, j2
    # 15-20); order=size puts the smaller virtual size first (j2 10-15, j1 15-20).
    w = workload([(0, 10, 4), (1, 5, 4), (6, 5, 4)], nodes=1, gpus=4)
    ends = {}
    for order in ("virtual", "size"):
        res = Engine(w, lambda: ASrpt(order=order), placement=HeavyEdge(), check_invariants=True,
                     predictions={"iterations": [0.0, 4.0, 1.0]}).run()
        ends[order] = res.end
    assert ends["virtual"] == pytest.approx([10, 15, 20]) and ends["size"] == pytest.approx([10, 20, 15])
    with pytest.raises(ValueError, match="order"):
        ASrpt(order="random")
