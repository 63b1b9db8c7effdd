"""A-SRPT stage profiles: loading order, derived transformer numbers, and the PipeDream-style planner
checked against brute force on tiny models."""
from __future__ import annotations

import itertools

import pytest

from sim.asrpt.profiles import (Layer, ModelProfile, StageCatalog, coarsen, load_pipedream, plan_all,
                                transformer_profile)

B = 1e9  # planner bandwidth in the tests (bytes/s)


def _bottleneck(stages, bw=B):
    worst = 0.0
    for k, (comp, par, act, m) in enumerate(stages):
        worst = max(worst, comp / m + 2 * (m - 1) / m * par / bw)
        if k < len(stages) - 1:
            worst = max(worst, 2 * act / bw)
    return worst


def _brute(profile: ModelProfile, g: int, bw=B) -> float:
    L = len(profile.layers)
    best = float("inf")
    for ncut in range(0, min(L - 1, g - 1) + 1):
        for cuts in itertools.combinations(range(1, L), ncut):
            bounds = (0, *cuts, L)
            S = len(bounds) - 1
            for reps in itertools.product(range(1, g + 1), repeat=S):
                if sum(reps) != g:
                    continue
                st = []
                for s in range(S):
                    ls = profile.layers[bounds[s]:bounds[s + 1]]
                    st.append((sum(l.compute_ms for l in ls) / 1e3, sum(l.parameter_bytes for l in ls),
                               ls[-1].activation_bytes, reps[s]))
                best = min(best, _bottleneck(st, bw))
    return best


def _tiny(seed: int) -> ModelProfile:
    import random

    rnd = random.Random(seed)
    layers = tuple(Layer(f"l{i}", rnd.uniform(5, 50), rnd.uniform(10, 100), rnd.choice([1e6, 5e7, 2e8]),
                         rnd.choice([0.0, 1e7, 3e8])) for i in range(4))
    return ModelProfile(f"tiny{seed}", layers)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_planner_matches_brute_force_and_sums_to_gpus(seed):
    prof = _tiny(seed)
    plans = plan_all(prof, 5, bandwidth=B)
    for g, cfg in plans.items():
        assert sum(cfg.replicas) == g
        assert cfg.stages[0].first == 0 and cfg.stages[-1].last == len(prof.layers) - 1
        for a, b in zip(cfg.stages, cfg.stages[1:]):
            assert b.first == a.last + 1
        got = _bottleneck([(s.compute_s, s.parameter_bytes, s.activation_bytes, s.replicas) for s in cfg.stages])
        assert got == pytest.approx(_brute(prof, g), rel=1e-9)


def test_pipeline_is_chosen_when_parameters_are_heavy():
    # Two equal layers with huge parameters and tiny activations: 2 GPUs -> two stages, not data parallel.
    layers = (Layer("a", 50, 50, 1e3, 1e9), Layer("b", 50, 50, 1e3, 1e9))
    cfg = plan_all(ModelProfile("m", layers), 2, bandwidth=B)[2]
    assert cfg.replicas == (1, 1)
    # Parameter-free layers: pure data parallelism (one stage, 2 replicas) is as good and has fewer stages.
    layers = (Layer("a", 50, 50, 1e9, 0.0), Layer("b", 50, 50, 1e9, 0.0))
    assert plan_all(ModelProfile("m", layers), 2, bandwidth=B)[2].replicas == (2,)


def test_derived_transformer_numbers():
    p = transformer_profile("t", layers=2, hidden=1000, seq=10, batch=2, tflops=1.0)
    fwd = 24 * 2 * 10 * 1000 ** 2 + 4 * 2 * 100 * 1000  # FLOPs
    assert p.source == "derived" and len(p.layers) == 2
    assert p.layers[0].forward_ms == pytest.approx(fwd / 1e12 * 1e3)
    assert p.layers[0].backward_ms == pytest.approx(2 * fwd / 1e12 * 1e3)
    assert p.layers[0].parameter_bytes == pytest.approx(12 * 1000 ** 2 * 2)
    assert p.layers[0].activation_bytes == pytest.approx(2 * 10 * 1000 * 2)


def test_pipedream_loader_orders_layers_topologically(tmp_path):
    (tmp_path / "graphs").mkdir()
    (tmp_path / "layers.csv").write_text(
        "model,node,op,forward_ms,backward_ms,activation_bytes,parameter_bytes\n"
        "m,node3,C,1,1,30,0\nm,node1,A,1,1,10,5\nm,node2,B,1,1,20,0\n")
    (tmp_path / "graphs" / "m.graph.txt").write_text(
        "node3 -- C -- x\nnode1 -- A -- x\n\tnode3 -- node2\n\tnode1 -- node3\n")
    prof = load_pipedream(tmp_path)["m"]
    assert [l.name for l in prof.layers] == ["node1", "node3", "node2"]


def test_coarsen_keeps_totals():
    prof = transformer_profile("t", layers=40, hidden=512, seq=128, batch=4)
    c = coarsen(prof, 7)
    assert len(c.layers) == 7
    assert c.compute_ms == pytest.approx(prof.compute_ms)
    assert c.parameter_bytes == pytest.approx(prof.parameter_bytes)


def test_catalog_real_profiles_when_shared_data_is_present():
    cat = StageCatalog()
    if "vgg16" not in cat.profiles:
        pytest.skip("shared PipeDream profiles not available")
    assert {"bert-large", "gpt-175b", "t5-large"} <= set(cat.models())
    for g in (1, 3, 8, 16):
        assert sum(cat.config("vgg16", g).replicas) == g
    assert cat.config("unknown-model", 4) is None
