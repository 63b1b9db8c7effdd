"""SchedMate's replay caches are exact: each fast path gives what the plain computation gives.

- The hash embedder sums cached per-segment features; its vectors equal the one-feature-at-a-time
  reference bit for bit.
- A fresh Advisor warmed with a text set already warmed in the process installs that warm-up; its
  candidate lists, vectors and every advice equal those of an Advisor that scored the texts itself.
- The disk cache of job texts and readings is keyed by the code that makes them, extraction included.
- A replay with SchedMate gives the same schedule whether its warm-up came from the cache or not.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from models.schedmate import advisor as advisor_module
from models.schedmate.advisor import SchedulingAdvisor
from models.schedmate.embed import FIELD_WEIGHTS, HashEmbedder, get_embedder
from models.schedmate.extract import JobMetadata

ROOT = Path(__file__).resolve().parents[1]
MODELS = ["resnet50", "resnet101", "bert-base", "bert-large", "gpt2", "vgg16", "llama-7b", "vit-b16"]
DATASETS = ["imagenet", "cifar10", "wikitext-103", "c4"]


def _texts() -> list[str]:
    out = []
    for i, m in enumerate(MODELS):
        for e in (10, 90, 300):
            for g in (1, 8, 16):
                out.append(JobMetadata(model=m, task="image-classification", dataset=DATASETS[i % 4], iterations=e,
                                       iteration_unit="epochs", batch_size=64 * (1 + i % 3), gpus=g,
                                       nodes=max(1, g // 8)).canonical_text())
    out.append("free text without fields: python train.py --lr 0.1")  # a text that is not canonical metadata
    return out


def test_segment_cache_gives_the_reference_vectors_bit_for_bit():
    texts = _texts()
    fast = HashEmbedder()._encode_new(texts)
    again = HashEmbedder()
    again._encode_new(texts[:5])  # segments cached by other texts first
    assert np.array_equal(fast, HashEmbedder().encode_plain(texts))
    assert np.array_equal(again._encode_new(texts), fast)
    assert len(again._segment_cache) < sum(t.count(";") + 1 for t in texts)  # segments are shared


def test_segment_cache_is_used_only_where_sums_are_exact(monkeypatch):
    emb = HashEmbedder()
    monkeypatch.setitem(FIELD_WEIGHTS, "model", 0.1)  # not a multiple of 1/4: the reference path
    texts = _texts()[:6]
    assert np.array_equal(emb._encode_new(texts), HashEmbedder().encode_plain(texts))
    assert not emb._segment_cache


def _replay(adv: SchedulingAdvisor, texts: list[str], seed: int) -> list:
    rng = np.random.default_rng(seed)
    n = 600
    pick = rng.integers(0, len(texts), n)
    submit = np.cumsum(rng.exponential(30.0, n))
    dur = rng.lognormal(6.0, 1.0, n).round(0)
    events = sorted([(submit[i] + dur[i], 0, i) for i in range(n)] + [(submit[i], 1, i) for i in range(n)])
    out = []
    for at, kind, i in events:
        if kind == 0:
            adv.observe(f"j{i}", texts[pick[i]], float(dur[i]), float(at), float(i % 97))
        else:
            out.append(adv.advise(texts[pick[i]], float(at)))
    return out


def test_a_second_warm_up_of_the_same_texts_is_installed_and_answers_alike(monkeypatch):
    monkeypatch.setattr(advisor_module, "_WARM_CACHE", {})
    emb = HashEmbedder()
    texts = _texts()
    order = [texts[i % len(texts)] for i in range(0, 5 * len(texts), 7)]
    first = SchedulingAdvisor(t_score=0.8, embedder=emb)
    first.warm(order)
    second = SchedulingAdvisor(t_score=0.8, embedder=emb)
    second.warm(order)
    assert first.n_warm_cached == 0 and second.n_warm_cached == 1 and second.n_scored == 0
    assert second._cands == first._cands and second._rev == first._rev
    assert np.array_equal(second._matrix[: second._rows], first._matrix[: first._rows])
    assert _replay(second, texts, 3) == _replay(first, texts, 3)
    # the installed lists are the advisor's own: a replay of one does not change the cached copy
    third = SchedulingAdvisor(t_score=0.8, embedder=emb)
    third.warm(order)
    plain = SchedulingAdvisor(t_score=0.8, embedder=HashEmbedder())
    plain.warm(order)
    assert third.n_warm_cached == 1 and plain.n_warm_cached == 0
    assert _replay(third, texts, 3) == _replay(plain, texts, 3)


def test_warm_cache_is_keyed_by_threshold_embedder_and_texts(monkeypatch):
    monkeypatch.setattr(advisor_module, "_WARM_CACHE", {})
    emb = HashEmbedder()
    texts = _texts()
    SchedulingAdvisor(t_score=0.8, embedder=emb).warm(texts)
    for adv, ts in ((SchedulingAdvisor(t_score=0.9, embedder=emb), texts),  # another threshold
                    (SchedulingAdvisor(t_score=0.8, embedder=HashEmbedder()), texts),  # another embedder
                    (SchedulingAdvisor(t_score=0.8, embedder=emb), texts[1:]),  # other texts
                    (SchedulingAdvisor(t_score=0.8, embedder=emb), texts[::-1])):  # another order
        adv.warm(ts)
        assert adv.n_warm_cached == 0
    used = SchedulingAdvisor(t_score=0.8, embedder=emb)
    used.observe("a", texts[0], 10.0, 1.0)  # not fresh: scored as before
    used.warm(texts)
    assert used.n_warm_cached == 0


def test_disk_cache_key_covers_the_extraction_code():
    """Job texts come from features.schedmate_text's extraction: a change there must not serve old texts."""
    from sim.policies import schedmate_material as me

    roots = [ROOT / r for r in me._CORPUS_CODE]
    for src in sorted((ROOT / "features" / "schedmate_text").rglob("*.py")):
        assert any(src == r or r in src.parents for r in roots), src


@pytest.mark.parametrize("policy", ["schedmate-sjf:host=history", "schedmate-sjf:host=history,t_score=0.8"])
def test_replay_schedule_is_the_same_with_a_cached_warm_up(monkeypatch, policy):
    from sim import simulate
    from sim.failures import failures_from_spec
    from pipelines.simulate import build_source
    from sim.policies import schedmate_material as me

    monkeypatch.setenv("SCHEDCAST_TRACE_CACHE", "0")
    me.clear_text_cache()
    monkeypatch.setattr(advisor_module, "_WARM_CACHE", {})
    monkeypatch.setattr(advisor_module, "WARM_CACHE_SIZE", 0)  # the plain path: every replay scores
    w = build_source(synthetic="helios-failures", jobs=250, seed=0, offered_load=1.3)[1]
    failures, rule = failures_from_spec("trace", w, 0)
    runs = []
    for size in (0, 4, 4):  # plain, then filling the cache, then from the cache
        monkeypatch.setattr(advisor_module, "WARM_CACHE_SIZE", size)
        r = simulate(w, policy, failures=failures, restart=rule, seed=1)
        stats = {k: v for k, v in r.policy_stats.items()  # work counters of the process caches aside
                 if k not in ("schedmate_texts_built", "schedmate_logs_read")}
        runs.append((list(r.first_start), list(r.end), list(r.preemptions), stats))
    assert len(advisor_module._WARM_CACHE) == 1
    assert runs[0] == runs[1] == runs[2]
    assert get_embedder("hash") is get_embedder("hash")
    me.clear_text_cache()


def test_job_texts_are_stored_per_workload_and_read_back_without_building(monkeypatch, tmp_path):
    import pandas as pd

    from features.traces import cache
    from sim.policies import schedmate_material as me

    monkeypatch.setenv("SCHEDCAST_TRACE_CACHE", str(tmp_path / "cache"))
    me.clear_text_cache()

    def frame(groups, n):
        return pd.DataFrame({"group_id": [f"g{i % groups}" for i in range(n)], "num_gpus": [1 + i % 4 for i in range(n)],
                             "duration": [600.0 * (1 + i % 5) for i in range(n)]})

    a, b = frame(4, 24), frame(6, 30)
    ta = me.JobTexts(a, a["num_gpus"].tolist(), seed=0)
    texts_a = ta.all()
    assert ta.built > 0
    tb = me.JobTexts(b, b["num_gpus"].tolist(), seed=0)
    tb.all()
    assert ta.disk_key() != tb.disk_key()
    # each workload's entry holds its own texts only: the store does not grow with the workloads of a seed
    assert cache.get_value(ta.disk_key()) == texts_a
    me.clear_text_cache()  # a new process: read back, nothing built, the same texts
    again = me.JobTexts(a, a["num_gpus"].tolist(), seed=0)
    assert again.all() == texts_a and again.built == 0
    assert [again.text(j) for j in range(len(a))] == texts_a
    me.clear_text_cache()


def test_every_replay_the_ledger_asks_for_is_a_valid_policy(tmp_path, monkeypatch):
    """The claims runner's replays stubbed; each policy spec it asks for must parse (a cause whose spec
    named a parameter twice stopped a full ledger run after half an hour)."""
    from evaluation.claims import ReproduceContext
    from pipelines.papers import schedmate as runner
    from sim.policies import get_policy

    for full in (False, True):
        monkeypatch.setattr(runner, "QUICK", {**(runner.FULL if full else runner.QUICK), "jobs": 60})
        asked = set()

        def fake(self, name, policy, seed, oracle=False):
            get_policy(policy)  # raises on a bad spec
            asked.add(policy)
            return {"jct": 1000.0 + len(policy), "wait": 100.0, "stats": {}, "wall_s": 0.0}

        monkeypatch.setattr(runner._Replays, "run", fake)
        monkeypatch.setattr(runner, "fig12_generated", lambda rep, seed: "stub")
        monkeypatch.setattr(runner, "table4", lambda cfg: ({}, {"recall": 0.5, "false_alarm_framework": 0.0,
                                                                 "false_alarm_script": 0.1}))
        monkeypatch.setattr(runner, "tracker", lambda cfg: ({}, 0.8))
        ctx = ReproduceContext(quick=True, out=tmp_path, seeds=[0], data_dir=ROOT.parent / "shared" / "data")
        got = runner.run(ctx)
        assert runner.LUCID in asked and "qssf" in asked and "f11_fh_gain@acme" in got
        assert "f10d_lucid_over_lucid_sm@acme-table2-t65" in got and "f13c_gain_at_half@acme" in got
        assert runner.LUCID + f",gpu_memory_mb={runner.A800_MB:g}" in asked  # Table 2's setting: A800 memory
        assert any("detection=0.8" in p for p in asked)  # the measured rate drives the replay
