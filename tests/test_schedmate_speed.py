"""SchedMate's Advisor is fast by construction, and the fast path answers like the plain retrieval.

Fast: warm() embeds the distinct job texts in one batch and scores them against each other once, so the
work grows with the distinct texts, not the jobs; answers are kept per text until a similar job
finishes. Same answers: every advice equals a brute-force retrieval written here from the definition
(cosine >= t_score, only jobs finished by now, best text first with ties to the text observed first,
newest jobs first, top k). Counters, not timings: these tests cannot flake on a busy machine.
"""
from __future__ import annotations

import numpy as np
import pytest

from models.schedmate import advisor as advisor_module
from models.schedmate.advisor import SchedulingAdvisor
from models.schedmate.embed import HashEmbedder
from models.schedmate.extract import JobMetadata

MODELS = ["resnet50", "resnet101", "bert-base", "bert-large", "gpt2", "vgg16"]


class CountingEmbedder(HashEmbedder):
    """The hash embedder, counting how often and how many texts it really embeds."""

    def __init__(self) -> None:
        super().__init__()
        self.batches = self.texts = 0

    def _encode_new(self, texts: list[str]) -> np.ndarray:
        self.batches += 1
        self.texts += len(texts)
        return super()._encode_new(texts)


def _text(model: str, epochs: int = 90, gpus: int = 8, upper: bool = False) -> str:
    t = JobMetadata(model=model, task="image-classification", dataset="imagenet", iterations=epochs,
                    iteration_unit="epochs", batch_size=256, gpus=gpus, nodes=1).canonical_text()
    return t.upper() if upper else t  # upper case: another text with the same embedding (an exact tie)


def _jobs(n: int, texts: list[str], seed: int) -> list[tuple[str, str, float, float, float | None]]:
    """(key, text, submit s, duration s, GPU util) for n jobs drawing from ``texts``."""
    rng = np.random.default_rng(seed)
    submit = np.cumsum(rng.exponential(60.0, n))
    dur = rng.lognormal(6.0, 1.2, n).round(1)  # rounded: some jobs finish at the same instant
    pick = rng.integers(0, len(texts), n)
    util = rng.uniform(10, 100, n)
    return [(f"j{i}", texts[pick[i]], float(submit[i]), float(dur[i]), None if i % 4 == 0 else float(util[i]))
            for i in range(n)]


def _replay(adv: SchedulingAdvisor, jobs) -> list:
    """Jobs advised at submission, observed at finish, in time order (finishes first at an instant)."""
    events = [(sub + dur, 0, i) for i, (_, _, sub, dur, _) in enumerate(jobs)]
    events += [(sub, 1, i) for i, (_, _, sub, _, _) in enumerate(jobs)]
    answers = []
    for at, kind, i in sorted(events):
        key, text, sub, dur, util = jobs[i]
        if kind == 0:
            adv.observe(key, text, dur, at, util)
        else:
            answers.append(adv.advise(text, at))
    return answers


TEXTS = [_text(m, e) for m in MODELS for e in (90, 120)]  # 12 distinct texts


@pytest.mark.parametrize("n", [300, 1200])
def test_warm_replay_work_grows_with_distinct_texts_not_jobs(n):
    emb = CountingEmbedder()
    adv = SchedulingAdvisor(t_score=0.8, embedder=emb)
    jobs = _jobs(n, TEXTS, seed=1)
    d = adv.warm(text for _, text, *_ in jobs)
    assert d == len(TEXTS) and emb.batches == 1 and emb.texts == d  # one batch, each text once
    assert adv.n_scored == d * d  # one (texts x texts) product
    answers = _replay(adv, jobs)
    assert adv.n_advised == n and sum(a is not None for a in answers) > n // 2
    # the replay added no embedding and no similarity: every job's advice walked a kept list
    assert emb.batches == 1 and adv.n_embedded == d and adv.n_scored == d * d and adv.n_fallbacks == 0
    assert adv.n_kept > 0  # and some were answered from the answer kept for their text


def test_without_warm_each_text_pair_is_scored_at_most_once():
    emb = CountingEmbedder()
    adv = SchedulingAdvisor(t_score=0.8, embedder=emb)
    jobs = _jobs(800, TEXTS, seed=2)
    _replay(adv, jobs)
    d = len(TEXTS)
    assert emb.texts == adv.n_embedded == d
    assert 0 < adv.n_scored <= d * d and adv.n_fallbacks == 0


def _brute(history, first_seen, emb, text, now, t_score, k, exclude=None):
    """The definition, written out: every observed job finished by ``now`` (not ``exclude``), texts
    with cosine >= t_score (float64 product rounded to float32, as the advisor scores), best first,
    ties to the text observed first; within a text the newest first (equal finish times: the later
    observed first); mean of the top k."""
    q = emb.encode(text).astype(np.float64)
    by_text: dict[str, list] = {}
    for order, (key, tx, dur, fin, util) in enumerate(history):
        if fin <= now and key != exclude:
            by_text.setdefault(tx, []).append((fin, order, key, dur, util))
    ranked = []
    for tx in by_text:
        s = float(np.float32(emb.encode(tx).astype(np.float64) @ q))
        if s >= t_score - 1e-6:
            ranked.append((-s, first_seen[tx], tx))
    picks = []
    for neg, _, tx in sorted(ranked):
        for fin, order, key, dur, util in sorted(by_text[tx], reverse=True):
            picks.append((-neg, key, dur, util))
            if len(picks) == k:
                break
        if len(picks) == k:
            break
    if not picks:
        return None
    total = usum = 0.0
    un = 0
    for _, _, dur, util in picks:
        total += dur
        if util is not None:
            usum += util
            un += 1
    return (total / len(picks), usum / un if un else None, tuple(p[1] for p in picks), picks[0][0],
            tuple(p[0] for p in picks))


@pytest.mark.parametrize("candidates", [64, 2])
@pytest.mark.parametrize("warm", [True, False])
def test_fast_path_gives_the_brute_force_answer(monkeypatch, candidates, warm):
    # candidates=2 cuts the lists short, so queries whose top texts have no finished job fall back to
    # scoring everything; upper-case twins give exact ties; some queries look back in time or leave a
    # job out, which must bypass the kept answers.
    monkeypatch.setattr(advisor_module, "CANDIDATES", candidates)
    texts = [_text(m, e, g) for m in MODELS for e in (90, 100, 300) for g in (8, 16)]
    texts += [t.upper() for t in texts[::5]]
    emb = HashEmbedder()
    adv = SchedulingAdvisor(t_score=0.5, k=3, embedder=emb)
    jobs = _jobs(700, texts, seed=7)
    if warm:
        adv.warm(text for _, text, *_ in jobs)
    rng = np.random.default_rng(3)
    events = sorted([(sub + dur, 0, i) for i, (_, _, sub, dur, _) in enumerate(jobs)]
                    + [(sub, 1, i) for i, (_, _, sub, _, _) in enumerate(jobs)])
    history, first_seen, compared = [], {}, 0
    for step, (at, kind, i) in enumerate(events):
        key, text, sub, dur, util = jobs[i]
        if kind == 0:
            adv.observe(key, text, dur, at, util)
            history.append((key, text, dur, at, util))
            first_seen.setdefault(text, len(first_seen))
            continue
        queries = [(text, at, None)]
        if step % 7 == 0:
            queries.append((texts[int(rng.integers(len(texts)))], at - float(rng.uniform(0, 5000)), None))
        if step % 5 == 0 and history:
            queries.append((text, at, history[int(rng.integers(len(history)))][0]))
        for q, now, exclude in queries:
            want = _brute(history, first_seen, emb, q, now, adv.t_score, adv.k, exclude)
            got = adv.advise(q, now, exclude_key=exclude)
            assert (None if got is None else tuple(got)) == want, (q, now, exclude)
            plain = adv.advise_plain(q, now, exclude_key=exclude)
            assert (None if plain is None else tuple(plain)) == want
            compared += want is not None
    assert compared > 500 and adv.n_kept > 50
    if candidates == 2:
        assert adv.n_fallbacks > 0
    else:
        assert adv.n_fallbacks == 0


def test_a_kept_answer_is_dropped_when_a_job_of_a_text_ranked_above_its_last_match_finishes():
    adv = SchedulingAdvisor(t_score=0.5, k=2, embedder=HashEmbedder())
    best, other = _text("resnet50"), _text("resnet50", 100)
    adv.warm([best, other])  # (a text first seen later drops every kept answer: the lists miss it)
    for i in range(2):
        adv.observe(f"b{i}", best, 100.0, float(i))
    first = adv.advise(best, now=10.0)
    assert first.matches == ("b1", "b0") and adv.n_kept == 0
    adv.observe("o0", other, 1e6, 11.0)  # ranked below both matches' text: the kept answer stands
    assert adv.advise(best, now=12.0) is first and adv.n_kept == 1
    adv.observe("b2", best, 400.0, 13.0)  # the best text's newest job: the answer changes
    again = adv.advise(best, now=14.0)
    assert again.matches == ("b2", "b1") and again.duration == 250.0 and adv.n_kept == 1
    assert adv.advise(best, now=12.5).matches == ("b1", "b0")  # looking back: no kept answer used
    adv.t_score = 0.99999  # a new threshold drops lists and kept answers
    assert adv.advise(other, now=20.0).matches == ("o0",)


def test_replay_advice_equals_the_plain_retrieval(monkeypatch):
    """Every advice in a small seeded replay (trace texts, low threshold: many candidates) equals the
    plain retrieval, and a replay answered by the plain retrieval alone decides the same."""
    from pipelines.simulate import build_source
    from sim import simulate
    from sim.failures import failures_from_spec

    w = build_source(synthetic="helios-failures", jobs=300, seed=1, offered_load=1.3)[1]
    policy = "schedmate-sjf-fh:text_source=trace,t_score=0.6,recall=0.9,precision=0.9"
    failures, rule = failures_from_spec("trace,reaction=1800", w, 0)
    fast = SchedulingAdvisor.advise
    seen = []

    def checked(self, text, now, exclude_key=None):
        got = fast(self, text, now, exclude_key)
        assert got == self.advise_plain(text, now, exclude_key)
        seen.append(got is not None)
        return got

    monkeypatch.setattr(SchedulingAdvisor, "advise", checked)
    a = simulate(w, policy, failures=failures, restart=rule, seed=0, check_invariants=True)
    assert len(seen) >= len(w) and sum(seen) > len(w) // 3

    def plain(self, text, now, exclude_key=None):
        self.n_advised += 1
        return self.advise_plain(text, now, exclude_key)

    monkeypatch.setattr(SchedulingAdvisor, "advise", plain)
    b = simulate(w, policy, failures=failures, restart=rule, seed=0)
    assert list(a.end) == list(b.end) and list(a.first_start) == list(b.first_start)
    assert a.policy_stats == b.policy_stats


def test_replay_embeds_and_scores_each_distinct_text_once():
    from pipelines.simulate import build_source
    from sim.engine import Engine
    from sim.policies import get_policy

    w = build_source(synthetic="helios-failures", jobs=400, seed=2, offered_load=1.0)[1]
    _, factory, _ = get_policy("schedmate-sjf:text_source=trace,t_score=0.8")
    engine = Engine(w, factory, predictions=list(w.duration), policy_name="schedmate-sjf")
    engine.run()
    c = engine.coordinator
    d = len(set(c.job_text))
    adv = c.advisor
    assert d < len(w) and adv.n_advised >= len(w) and adv.n_observed == len(w)
    assert adv.n_embedded == d and adv.n_scored == d * d and adv.n_fallbacks == 0


def test_job_texts_and_failure_handler_rates_are_kept_on_disk_for_the_next_process(tmp_path, monkeypatch):
    """A later process reads the texts (about 3 ms each to extract) and the Failure Handler's measured
    rates (about 1.3 s) from the disk cache; changed corpus or reader code builds them afresh."""
    import pandas as pd

    from models.schedmate import evaluate
    from sim.policies import schedmate as sm
    from sim.policies import schedmate_material as me

    monkeypatch.setenv("SCHEDCAST_TRACE_CACHE", str(tmp_path / "cache"))
    frame = pd.DataFrame({"user": ["u1", "u1", "u2", "u3"], "job_name": ["a", "a", "b", "c"],
                          "num_gpus": [1, 1, 8, 2], "duration": [3600.0, 3600.0, 600.0, 86400.0]})
    sm.clear_text_cache()
    first = sm.JobTexts(frame, [1, 1, 8, 2], seed=5)
    texts = first.all()
    assert 3 <= first.built <= 4  # one extraction per distinct material (u1/a's two jobs may share one)
    sm.clear_text_cache()  # as a new process: nothing in memory
    again = sm.JobTexts(frame, [1, 1, 8, 2], seed=5)
    assert again.all() == texts and again.built == 0
    sm.clear_text_cache()
    sm.use_disk_cache(False)
    try:
        off = sm.JobTexts(frame, [1, 1, 8, 2], seed=5)
        assert off.all() == texts and off.built == first.built
    finally:
        sm.use_disk_cache(True)
    sm.clear_text_cache()
    monkeypatch.setattr(me, "_CORPUS_CODE", ("models/schedmate/embed.py",))  # other code: another key
    fresh = sm.JobTexts(frame, [1, 1, 8, 2], seed=5)
    assert fresh.all() == texts and fresh.built == first.built

    calls = []

    def scores(n, seed, locator=True):
        calls.append((n, seed))
        return {"recall": 0.9, "precision": 0.8}

    monkeypatch.setattr(evaluate, "failure_handler_scores", scores)
    assert sm.measured_failure_handler(7, 1) == {"recall": 0.9, "precision": 0.8}
    sm.clear_text_cache()
    assert sm.measured_failure_handler(7, 1)["recall"] == 0.9 and calls == [(7, 1)]
    monkeypatch.setenv("SCHEDCAST_TRACE_CACHE", "0")  # cache off: measured again
    sm.clear_text_cache()
    sm.measured_failure_handler(7, 1)
    assert calls == [(7, 1), (7, 1)]
    sm.clear_text_cache()
