"""SchedMate text side: Metric Tracker (formats, outliers, noise), Failure Handler (locator on
cascaded logs, classifier on held-out generated logs, tail baseline) and the LLM back-end replayed from
recorded answers (over a loopback HTTP server too), including invalid answers that fall back."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from features.jobcorpus import CAUSES, iter_corpus, material_for_job
from models.schedmate.failures import Diagnosis, FailureHandler, is_failure_line
from models.schedmate.llm import ANSWER_SCHEMA, OpenAIBackend, RecordedBackend
from models.schedmate.tracker import MetricTracker, parse_progress

# ------------------------------------------------------------------------------------------- tracker


@pytest.mark.parametrize("line,step,total,st", [
    (" [2024-01-01 10:00:00] iteration     1200/   50000 | consumed samples: 614400 | elapsed time per iteration (ms): "
     "812.4 | learning rate: 1.5E-04 | global batch size:   512 | lm loss: 3.21E+00 |", 1200, 50000, 0.8124),
    ("2024/01/01 10:00:00 - mmengine - INFO - Iter(train) [ 4000/160000]  lr: 6e-05  eta: 1 day, 2:03:04  time: 0.4012  "
     "data_time: 0.01  loss: 0.9", 4000, 160000, 0.4012),
    (" 45%|████▌     | 450/1000 [02:15<02:45,  3.33it/s]", 450, 1000, 1 / 3.33),
    (" 45%|████▌     | 450/1000 [02:15<02:45,  2.50s/it]", 450, 1000, 2.5),
    ("[2024-01-01 10:00:00] step 300/9000 loss=2.1 lr=1e-4 time/step=250ms", 300, 9000, 0.25),
])
def test_progress_formats(line, step, total, st):
    r = parse_progress(line)
    assert r.step == step and r.total == total
    assert (r.step_time or r.rate_time) == pytest.approx(st, rel=1e-3)


def test_not_progress_lines():
    for line in ("INFO:root:checkpoint manager: 35 checkpoints kept, oldest step 3219",
                 "Validation DataLoader 0:  32%|███▏      | 16/50 [00:16<00:10, 12.82it/s]",
                 "Test: [  98/196]  Time: 0.210 (0.210)  Loss:  1.2 (1.3)  Acc@1: 76.0",
                 "[2024-01-01] heartbeat ok (rank 2, host node-24)"):
        assert parse_progress(line) is None, line


def test_epochs_from_header_and_outliers_removed():
    lines = ["Namespace(batch_size=64, epochs=10, lr=0.1)", "world_size=4"]
    for i in range(1, 31):
        st = 5.0 if i == 20 else 0.5  # one stalled window (a checkpoint) is an outlier
        lines.append(f"Train: 2 [{(i - 1) * 10:>4d}/1000 ({i}%)]  Loss: 1.5 (1.6)  Time: {st:.3f}s,  512.00/s  "
                     f"(0.5s, 512/s)  LR: 1e-3  Data: 0.01 (0.01)")
        lines.append("[rank3]: Train: 2 [   0/1000 (0%)]  Loss: 9.9 (9.9)  Time: 9.000s,  1.00/s")
    p = MetricTracker(window=20).track(lines)
    assert p.step == 2 * 1000 + 291 and p.total_steps == 10 * 1000
    assert p.step_time == pytest.approx(0.5) and p.throughput == pytest.approx(512.0)
    assert p.loss == 1.5 and p.epoch == 3 and p.remaining == pytest.approx((10000 - 2291) * 0.5)


def test_lightning_counts_epochs_from_zero_and_uses_the_iterations_hint():
    lines = [f"Epoch {e}: {50 * s // 100:3d}%|█| {s}/200 [00:10<00:10, 4.00it/s, v_num=0, train_loss=0.5]"
             for e in range(3) for s in (100, 200)]
    lines.append("Epoch 3:  50%|█| 100/200 [00:10<00:10, 4.00it/s, v_num=0, train_loss=0.4]\rEpoch 3:  55%|█| 110/200 "
                 "[00:10<00:10, 4.00it/s, v_num=0, train_loss=0.39]")
    p = MetricTracker().track(lines, iterations=20, iteration_unit="epochs")
    assert (p.step, p.total_steps, p.loss) == (3 * 200 + 110, 4000, 0.39)
    assert p.step_time == pytest.approx(0.25)
    assert MetricTracker().track(["nothing here"]).step is None


def test_tracker_on_generated_clean_and_noisy_logs():
    from models.schedmate.evaluate import tracker_scores

    s = tracker_scores(40, seed=17)
    for half in ("clean", "noisy"):
        assert s[half]["success"] >= 0.9, s[half]
        assert s[half]["rmsre_step_time"] < 0.1


def test_throughput_drop_after_packing_is_visible():
    m = material_for_job("dave/bert", 2, 4)
    before, _ = m.runtime_log(progress=0.5)
    after, _ = m.runtime_log(progress=0.5, speed_changes=[(0.3, 1.6)])
    tr = MetricTracker()
    ratio = tr.track(after).step_time / tr.track(before).step_time
    assert ratio == pytest.approx(1.6, rel=0.1)


def test_line_classifier_categories():
    tr = MetricTracker()
    assert tr.classify(" 45%|████▌     | 450/1000 [02:15<02:45,  3.33it/s]") == "progress"
    assert tr.classify("Validation DataLoader 0: 100%|██| 50/50 [00:50<00:10, 16.41it/s]") == "eval"
    assert tr.classify("torch.OutOfMemoryError: CUDA out of memory.") == "error"
    assert tr.classify("[2024] Saving checkpoint to /ckpt/epoch_3.pth") == "checkpoint"
    assert tr.classify("eval metrics: error_rate=0.12") != "error"
    assert tr.classify("wandb: Syncing run amber-dawn-3") in ("other", "init")


# ------------------------------------------------------------------------------------------ failures


def test_benign_lines_are_not_failures():
    for line in ("[2024] eval metrics: error_rate=0.0312 top1_err=0.1", "[W socket.cpp:464] [c10d] The server socket "
                 "has failed to bind to [::]:29500 (errno: 98 - Address already in use).",
                 "UserWarning: This DataLoader will create 16 worker processes", "node-0 NCCL INFO Connected all rings"):
        assert not is_failure_line(line), line
    assert is_failure_line("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB")


def test_locator_finds_the_root_cause_before_the_cascade_and_tail_is_misled():
    m = next(x for x in iter_corpus(60, 5) if x.truth.gpus >= 4)
    lines, truth = m.failure_log("cuda_oom", noisy=True)
    fh = FailureHandler()
    d = fh.diagnose(lines)
    assert truth.span[0] <= d.line_index <= truth.span[1]
    assert (d.kind, d.component, d.cause) == ("framework", "memory", "cuda_oom")
    assert d.chunks_read < 30 and d.lines_read < len(lines) / 2  # binary search reads a few chunks
    # a tail shorter than the cascade only sees the cascade (the paper's 500-line tail reaches the root of
    # these short generated logs: see the ledger's Table 4 claims)
    tail = FailureHandler(tail=50).diagnose(lines, tail_only=True)
    assert tail.line_index > truth.line_index + 5
    assert tail.kind != "framework" or tail.component != "memory"


def test_classifier_on_held_out_generated_logs():
    # seed 424242 was never used while writing the rules
    fh = FailureHandler()
    mats = list(iter_corpus(45, 424242))
    ok = kind_ok = 0
    causes = sorted(CAUSES)
    for i, m in enumerate(mats):
        lines, t = m.failure_log(causes[i % len(causes)], noisy=bool(i % 2))
        d = fh.diagnose(lines)
        ok += (d.kind, d.component) == (t.kind, t.component)
        kind_ok += d.kind == t.kind
    assert kind_ok / len(mats) >= 0.9 and ok / len(mats) >= 0.85


def test_failure_handler_scores_locator_beats_tail():
    from models.schedmate.evaluate import failure_handler_scores

    loc = failure_handler_scores(45, seed=1, locator=True)
    tail = failure_handler_scores(45, seed=1, locator=False)
    assert set(loc) >= {"precision", "recall", "f1", "accuracy"}
    # the tail baseline reads the paper's 500 lines: on short generated logs it may see the whole log, so the
    # locator must be at least as good everywhere and better somewhere (root cause, type or component)
    keys = ("f1", "precision", "accuracy", "component_accuracy")
    assert all(loc[k] >= tail[k] for k in keys) and any(loc[k] > tail[k] for k in keys), (loc, tail)
    assert failure_handler_scores(45, seed=1, locator=True) is loc  # cached for replays


def test_no_failure_in_a_clean_log():
    lines, _ = material_for_job("erin/x", 0, 0).runtime_log()
    d = FailureHandler().diagnose(lines)
    assert d.kind is None and d.line_index is None
    with pytest.raises(ValueError):
        FailureHandler().diagnose(lines, method="guess")


def test_prototype_fallback_for_unknown_lines():
    fh = FailureHandler()
    d = fh.diagnose(["step 1 loss 2.0 time 0.1"] * 40 + ["FATAL: the whole node went away, host lost"])
    assert d.line_index == 40 and d.kind == "infrastructure" and d.note in ("rule", "prototype")


# ----------------------------------------------------------------------------------------------- llm


def _failed_log():
    m = next(x for x in iter_corpus(60, 9) if x.truth.gpus >= 2)
    return m.failure_log("ib_error", noisy=False)


def test_llm_recorded_answer_is_used_when_valid():
    lines, truth = _failed_log()
    ans = json.dumps({"line": truth.line_index, "kind": "infrastructure", "component": "network",
                      "explanation": "IB completion error"})
    backend = RecordedBackend([ans])
    d = FailureHandler(llm=backend).diagnose(lines)
    assert (d.kind, d.component, d.line_index, d.note) == ("infrastructure", "network", truth.line_index, "llm")
    assert d.method == "locator+llm" and len(backend.calls) == 1
    assert str(truth.line_index) in backend.calls[0][1]["content"]  # the window shown holds the root line
    assert "kind" in ANSWER_SCHEMA["properties"]


@pytest.mark.parametrize("answer,reason", [
    ("not json at all", "invalid"),
    (json.dumps({"line": 3, "kind": "hardware", "component": "GPU"}), "invalid"),
    (json.dumps({"line": 3, "kind": "script", "component": "NVLink"}), "invalid"),
    (json.dumps({"line": 10**7, "kind": "infrastructure", "component": "network"}), "outside"),
])
def test_llm_invalid_answer_falls_back_to_rules(answer, reason):
    lines, truth = _failed_log()
    default = FailureHandler().diagnose(lines)
    d = FailureHandler(llm=RecordedBackend([answer])).diagnose(lines)
    assert (d.kind, d.component, d.line_index) == (default.kind, default.component, default.line_index)
    assert reason in d.note and "rules kept" in d.note


class _Recorded(BaseHTTPRequestHandler):
    answers: list = []
    bodies: list = []

    def do_POST(self):  # noqa: N802 - http.server API
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).bodies.append(body)
        content = type(self).answers.pop(0)
        payload = json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


def test_openai_backend_against_a_loopback_server_with_recorded_answers():
    lines, truth = _failed_log()
    _Recorded.answers = [json.dumps({"line": truth.line_index, "kind": "infrastructure", "component": "network"}),
                         "```json\n{\"line\": 1, \"kind\": \"framework\"}\n```"]
    _Recorded.bodies = []
    server = HTTPServer(("127.0.0.1", 0), _Recorded)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        backend = OpenAIBackend(f"http://127.0.0.1:{server.server_address[1]}/v1", model="recorded", timeout=5)
        d = FailureHandler(llm=backend).diagnose(lines)
        assert (d.component, d.note) == ("network", "llm")
        assert _Recorded.bodies[0]["temperature"] == 0 and _Recorded.bodies[0]["model"] == "recorded"
        d2 = FailureHandler(llm=backend).diagnose(lines)  # missing component -> schema error -> rules
        assert "invalid" in d2.note and d2.kind == "infrastructure"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
    # nothing listens any more: the handler keeps its own answer
    d3 = FailureHandler(llm=OpenAIBackend(f"http://127.0.0.1:{server.server_address[1]}/v1", timeout=2)).diagnose(lines)
    assert "unavailable" in d3.note and d3.kind == "infrastructure"
    with pytest.raises(ValueError):
        OpenAIBackend("ftp://x")


def test_diagnosis_dict_round_trip():
    d = Diagnosis("script", "key", 3, "KeyError: 'x'", "key_error")
    assert d.to_dict()["component"] == "key" and not d.infrastructure


def test_llm_metadata_agent_fills_validates_and_falls_back():
    from models.schedmate.llm import METADATA_SCHEMA, LLMExtractor

    files = {"train.py": "import torch\n"}
    good = json.dumps({"model": "ResNet-50", "task": "image-classification", "dataset": "ILSVRC2012",
                       "iterations": 90, "iteration_unit": "epochs", "batch_size": 64, "gpus": 2})
    md = LLMExtractor(RecordedBackend([good])).extract("python train.py --epochs 3", files)
    # fill mode: the static extractor's iterations (argv) and GPUs stay, the rest comes from the LLM
    assert (md.model, md.dataset, md.batch_size, md.iterations, md.gpus) == ("resnet50", "imagenet", 64, 3, 1)
    assert md.sources["model"] == "llm" and md.sources["iterations"].startswith("argv")
    md = LLMExtractor(RecordedBackend([good]), mode="override").extract("python train.py --epochs 3", files)
    assert (md.iterations, md.gpus) == (90, 2)
    for bad in ("nope", json.dumps({"iterations": 5}), json.dumps({"gpus": 0}), json.dumps({"iteration_unit": "hours",
                                                                                          "iterations": 3})):
        md = LLMExtractor(RecordedBackend([bad])).extract("python train.py --epochs 3", files)
        assert md.model is None and md.iterations == 3 and "static kept" in md.sources["llm"]
    assert "iteration_unit" in METADATA_SCHEMA["properties"]
    with pytest.raises(ValueError):
        LLMExtractor(RecordedBackend([]), mode="maybe")


def test_xid_codes_and_illegal_access_are_told_apart():
    fh = FailureHandler()
    ok = ["step 1 loss 2.0 time 0.1"] * 30
    app = ok + ["[2024] node-3 kernel: NVRM: Xid (PCI:0000:3b:00): 31, pid=99, name=python, Ch 00000008, MMU Fault",
                "RuntimeError: CUDA error: an illegal memory access was encountered"]
    hw = ok + ["[2024] node-3 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=99, GPU has fallen off the bus.",
               "RuntimeError: CUDA error: unspecified launch failure"]
    link = ok + ["[2024] node-3 kernel: NVRM: Xid (PCI:0000:3b:00): 74, pid=99, NVLink: fatal error detected on link 2"]
    assert (fh.diagnose(app).kind, fh.diagnose(app).component) == ("framework", "model")
    assert (fh.diagnose(hw).kind, fh.diagnose(hw).component) == ("infrastructure", "GPU")
    assert fh.diagnose(link).component == "NVLink"


def test_degenerate_inputs():
    fh, tr = FailureHandler(), MetricTracker()
    assert fh.diagnose([]).kind is None and fh.diagnose([""] * 5).kind is None
    assert tr.track([]).step is None
    junk = ["\x00\x01\ufffd" * 50, "x" * 100000, "%|||| 3/0 [", "Epoch 5/0 step 3/0 loss nan"]
    tr.track(junk)
    fh.diagnose(junk)
    md = __import__("models.schedmate.extract", fromlist=["x"]).extract_metadata(
        "python broken.py --epochs 4", {"broken.py": "def f(:\n"})
    assert md.iterations == 4  # a script that does not parse still gives its argv


def test_line_classifier_against_generated_categories():
    from models.schedmate.evaluate import line_classifier_scores

    m = material_for_job("fay/x", 0, 2)
    lines, labels = m.labelled_log(noisy=True)
    assert len(lines) == len(labels) and set(labels) <= {"progress", "eval", "checkpoint", "error", "warning", "init",
                                                         "other"}
    s = line_classifier_scores(6, seed=123, per_log=150)
    assert s["accuracy"] > 0.9 and s["per_category"]["progress"] > 0.95


def test_tracker_on_hand_written_logs_of_public_tools():
    from features.jobcorpus.handwritten import HAND_LOGS

    tr = MetricTracker()
    for name, lines, step, total, st, hints in HAND_LOGS:
        p = tr.track(lines, iterations=hints.get("iterations"), iteration_unit=hints.get("unit"))
        assert (p.step, p.total_steps) == (step, total), name
        assert p.step_time == pytest.approx(st, rel=0.05), name


def test_failure_handler_on_hand_written_root_causes():
    from features.jobcorpus.handwritten import HAND_FAILURES

    fh = FailureHandler()
    for name, lines, idx, kind, component in HAND_FAILURES:
        d = fh.diagnose(lines)
        assert (d.line_index, d.kind, d.component) == (idx, kind, component), name
        assert fh.diagnose(lines, tail_only=True).line_index != idx or len(lines) - idx <= fh.tail
