"""Lucid on Philly as the paper ran it: the test-week generator, the pre-trained estimator's wiring, the
baseline's checkpoint cost and the binder's fast path (the same decisions as the generic rules)."""
import random

import numpy as np
import pytest

from evaluation.metrics import job_table
from sim.engine import Engine
from sim.interference import InterferenceModel
from sim.policies import get_policy
from sim.policies.lucid import Lucid, attach_profiles, with_profiler
from sim.policies.lucid.orchestrator import Horus
from sim.policies.preemptive import TiresiasRounds
from tests.helpers import workload


@pytest.fixture(scope="module")
def interference(shared_data):
    return InterferenceModel.load(shared_data)


def test_philly_window_is_the_papers_test_week(shared_data):
    from features.traces.lucid_synthetic import philly_window

    t = philly_window({"data_dir": str(shared_data)}, 0, None)
    f = t.frame
    assert len(f) == 10_639  # the paper's extract has 12,389 (lucid.txt:283)
    assert f["submit_time"].min() == 0.0 and f["submit_time"].max() < 7 * 86400
    assert f["submit_ts"].min().strftime("%Y-%m-%d") == "2017-10-01"
    assert f["submit_ts"].max().strftime("%Y-%m-%d") == "2017-10-07"
    assert f["job_id"].str.startswith("philly-").all()  # the trace's ids: models trained on other weeks match them
    assert len(philly_window({"data_dir": str(shared_data)}, 0, 100).frame) == 100
    with pytest.raises(ValueError, match="unknown parameter"):
        philly_window({"weeks": 2}, 0, None)
    with pytest.raises(ValueError, match="no job"):
        philly_window({"data_dir": str(shared_data), "start": "2019-01-01", "end": "2019-01-02"}, 0, None)


def test_pretrained_predictor_is_registered_and_checks_its_parameters():
    from sim.policies.lucid.pretrained import LucidPretrained, scores
    from sim.predictors import make_predictor

    p = make_predictor("lucid-pretrained:split=earlier,algo=lightgbm")  # nothing is fitted until predict
    assert isinstance(p, LucidPretrained) and (p.split, p.algo) == ("earlier", "lightgbm")
    with pytest.raises(ValueError, match="split"):
        LucidPretrained(split="after")
    with pytest.raises(ValueError, match="algo"):
        LucidPretrained(algo="xgboost")
    y = np.array([10.0, 100.0, 1000.0])
    assert scores(y, y)["r2"] == 1.0 and scores(y, y)["mae_s"] == 0.0
    assert scores(y, np.full(3, y.mean()))["r2"] == pytest.approx(0.0)


def _rounds(ckpt):
    # One 4-GPU node. j0 (1 GPU x 40,000 s) runs from 0 and passes the 18,000 GPU-s threshold at 18,000 s;
    # j1 (4 GPUs) arrives at 20,000: the quota rule puts it ahead of the demoted j0, which is preempted.
    w = workload([(0, 40_000, 1), (20_000, 1_000, 4)], nodes=1, gpus=4)
    eng = Engine(w, lambda: TiresiasRounds(rule="quota", ckpt_cost=ckpt), check_invariants=True)
    return job_table(eng.run())


def test_tiresias_rounds_charges_the_checkpoint_cost_per_preemption():
    free, paid = _rounds(0.0), _rounds(62.0)
    assert int(free["preemptions"].iloc[0]) == int(paid["preemptions"].iloc[0]) == 1
    assert paid["jct"].iloc[0] == pytest.approx(free["jct"].iloc[0] + 62.0)
    assert paid["load"].iloc[0] == pytest.approx(62.0)
    with pytest.raises(ValueError, match="ckpt_cost"):
        TiresiasRounds(ckpt_cost=-1)


class _GenericRules(Lucid):
    """Lucid with the binder's pair rule read through _can_share (the generic path, as Horus takes)."""

    def _can_share(self, job, host):
        return Lucid._can_share(self, job, host)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_binder_fast_path_takes_the_same_decisions_as_the_generic_rules(interference, seed):
    rnd = random.Random(seed)
    rows = sorted((rnd.uniform(0, 4000), rnd.lognormvariate(7, 1.2), rnd.choice([1, 1, 1, 2, 4]))
                  for _ in range(80))
    spec = "lucid:update_interval=0,dynamic=False,min_remaining=60"
    tables = []
    for cls in (Lucid, _GenericRules):
        info, factory, params = get_policy(spec)
        w = attach_profiles(workload(rows, nodes=3, gpus=4), interference, seed=seed)
        w = with_profiler(w, nodes=1, gpus_per_node=4)
        eng = Engine(w, (lambda c=cls, p=params: c(**p)), predictions=list(w.duration), check_invariants=True,
                     coordinator=info.cls.coordinator_class)
        result = eng.run()
        tables.append((job_table(result), eng.coordinator.packs))
    (a, packs_a), (b, packs_b) = tables
    assert packs_a == packs_b and packs_a > 0  # packing happened
    assert a["end"].tolist() == b["end"].tolist() and a["wait"].tolist() == b["wait"].tolist()


class _GenericHorus(Horus):
    def _can_share(self, job, host):
        return Horus._can_share(self, job, host)


def test_horus_fast_path_takes_the_same_decisions_as_its_rule(interference):
    fast, generic, spec = Horus, _GenericHorus, "horus:min_remaining=60"
    rnd = random.Random(5)
    rows = sorted((rnd.uniform(0, 2000), rnd.lognormvariate(7, 1.2), 1) for _ in range(80))
    info, _, params = get_policy(spec)
    out = []
    for cls in (fast, generic):
        w = attach_profiles(workload(rows, nodes=2, gpus=4), interference, seed=5)
        eng = Engine(w, (lambda c=cls, p=params: c(**p)), predictions=list(w.duration), check_invariants=True,
                     coordinator=info.cls.coordinator_class)
        out.append((job_table(eng.run())["end"].tolist(), eng.coordinator.packs))
    assert out[0] == out[1] and out[0][1] > 0
