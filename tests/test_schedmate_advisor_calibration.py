"""The Advisor's per-kind calibration from first-sight answers (issue 41, item 3): the table in evidence.py is
the one the committed first-sight records give, a kind often wrong at first sight is capped below the threshold
unless another signal confirms it, and the leave-one-batch-out estimate fits on the other batches only."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from features.schedmate_text.evidence import (CALIBRATED_CAP, FIRST_SIGHT_COUNTS, MIN_CONFIDENCE, calibration_cap,
                                              calibration_group)
from models.schedmate.extract import extract_metadata
from tests.helpers import first_sight_script

ROOT = Path(__file__).resolve().parents[1]


_script = first_sight_script


def test_table_is_the_one_the_committed_first_sight_records_give():
    fs = _script()
    recs = json.loads(fs.RECORDS.read_text())
    assert {r["batch"] for r in recs} == set(fs.FIRST_SIGHT_COMMITS)
    assert fs.fit(recs) == {k: tuple(v) for k, v in FIRST_SIGHT_COUNTS.items()}


def test_groups_split_models_and_datasets_by_the_value_shape():
    assert calibration_group("model", "argument", "resnet50") == ("model", "argument/known")
    assert calibration_group("model", "argument", "H") == ("model", "argument/size")
    assert calibration_group("model", "argument", "mynet") == ("model", "argument/unknown")
    assert calibration_group("dataset", "argument", "c10") == ("dataset", "argument/known")
    objective = "objective in the training code (3 signals)"
    assert calibration_group("task", "signal", "object-detection", objective) == ("task", "objective/specific")
    assert calibration_group("task", "signal", "image-classification", objective) == ("task", "objective/generic")
    assert calibration_group("task", "signal", "cyclegan", "entry name cyclegan.py") == ("task", "entry")
    assert calibration_group("iterations", "default", 90, "argparse default epochs") == ("iterations", "default/argparse")
    assert calibration_group("iterations", "default", 90, "dataclass field default max_epochs") == \
        ("iterations", "default")


def test_cap_from_counts_and_floor():
    counts = {("task", "objective/generic"): (20, 12), ("task", "signal"): (20, 20), ("model", "class/unknown"): (3, 0)}
    assert calibration_cap("task", "objective/generic", counts, 0.85) == CALIBRATED_CAP < MIN_CONFIDENCE
    assert calibration_cap("task", "signal", counts, 0.85) is None
    assert calibration_cap("model", "class/unknown", counts, 0.85) is None  # too few answers to judge
    assert calibration_cap("task", "objective/generic", counts, 0.5) is None


_GEN = ("import torch\nfrom torch import nn\nD = Discriminator()\nG = Generator()\n"
        "z = torch.randn(8, 100)\nfake = G(z)\nloss = adversarial(D(fake))\nfid = compute_fid(fake)\n")


def test_objective_identifiers_alone_abstain_and_a_confirmation_answers():
    md = extract_metadata("python train.py", {"train.py": _GEN, "README.md": "# Code\n\nSome code.\n"},
                          min_confidence=MIN_CONFIDENCE)
    assert md.task is None and "at first sight" in md.unknown["task"]
    assert md.evidence["task"]["guess"] == "image-generation"
    md = extract_metadata("python train.py", {"train.py": _GEN, "README.md": "# GAN\n\nA generative adversarial network.\n"},
                          min_confidence=MIN_CONFIDENCE)
    assert md.task == "image-generation" and md.evidence["task"]["confidence"] >= MIN_CONFIDENCE


def test_leave_one_batch_out_fits_on_the_other_batches_only():
    fs = _script()

    def rec(batch, right, kind="objective"):
        return {"batch": batch, "field": "task", "value": "image-generation", "right": right, "kind": "signal",
                "confidence": 0.6,
                "rule": "objective in the training code (2 signals)" if kind == "objective" else "code signal"}
    # the objective kind is wrong in batches 1 and 2 but right in batch 3: held-out batch 3 is capped by 1-2's record,
    # held-out 1 and 2 are not (the other two batches together are right half the time: capped too at floor 0.85)
    recs = [rec(1, False)] * 5 + [rec(2, False)] * 5 + [rec(3, True)] * 5 + [rec(b, True, "signal") for b in (1, 2, 3)]
    res = fs.leave_one_batch_out(recs, 0.85)
    assert res["per_batch"][3] == {"fields": 6, "answered": 1, "wrong": 0}
    assert res["pooled"]["wrong"] == 0
    assert fs.leave_one_batch_out(recs, 0.0)["pooled"]["wrong"] == 10  # no calibration: every wrong answer stands


def test_records_command_rejects_an_unknown_batch(capsys):
    assert _script().main(["records", "--real", "/nonexistent", "--batch", "99"]) == 2
    assert "batch 99" in capsys.readouterr().err
