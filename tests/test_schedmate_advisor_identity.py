"""The repository's identity as evidence for the model (issue 41, item 3): a one-method repository's name, where a
class of that name is defined and built by the entry, answers the model (and agreement lifts an answer); toolboxes,
training methods around a given encoder, unbuilt classes and commands that size the network do not. Fixtures are
small hand-written repositories."""
from __future__ import annotations

from features.schedmate_text.evidence import MIN_CONFIDENCE
from features.schedmate_text.identity import (AGREEMENT_CONFIDENCE, IDENTITY_CONFIDENCE, normalise_identity,
                                              repository_identity, toolbox_reason)
from features.schedmate_text.vocab import canonical_model, known_model
from models.schedmate.extract import extract_metadata

_NET = "import torch.nn as nn\n\n\nclass Flowy(nn.Module):\n    def __init__(self, args):\n        super().__init__()\n"
_TRAIN = ("import argparse\nfrom core.flowy import Flowy\n\np = argparse.ArgumentParser()\n"
          "p.add_argument('--num_steps', type=int, default=1000)\np.add_argument('--model')\n"
          "p.add_argument('--depth', type=int, default=12)\nargs = p.parse_args()\nmodel = Flowy(args)\n")
_README = "# Flowy\n\nRecurrent updates for optical flow estimation.\n"


def _repo(**extra: str) -> dict[str, str]:
    files = {"core/flowy.py": _NET, "train.py": _TRAIN, "README.md": _README}
    files.update(extra)
    return files


def _advise(files: dict[str, str], command: str = "python train.py --num_steps 500", name: str | None = "me+Flowy-pytorch"):
    return extract_metadata(command, files, min_confidence=MIN_CONFIDENCE, repo_name=name)


def test_names_are_normalised_and_generic_ones_are_none():
    assert normalise_identity("SASRec.pytorch") == "sasrec"
    assert normalise_identity("owner+Informer2020") == "informer"
    assert normalise_identity("dreamerv3-torch") == "dreamerv3"
    assert normalise_identity("PyTorch-YOLOv3") == "yolov3"
    assert normalise_identity("nerf-pytorch") == "nerf"
    assert normalise_identity("pytorch-cifar") is None  # a dataset's name says nothing about the method
    assert normalise_identity("PyTorch-GAN") is None


def test_a_one_method_repository_names_its_model_and_task():
    md = _advise(_repo())
    assert md.model == "flowy"
    ev = md.evidence["model"]
    assert ev["kind"] == "identity" and ev["confidence"] == IDENTITY_CONFIDENCE
    assert ev["evidence"].startswith("core/flowy.py:")
    assert md.task == "optical-flow"  # the repository's description of its one method


def test_without_the_name_or_a_class_of_that_name_nothing_is_answered():
    untitled = _repo(**{"README.md": "Recurrent updates for optical flow estimation.\n"})
    assert _advise(untitled, name=None).model is None  # no name at all (folder, package or README title)
    assert _advise(_repo(), name=None).model == "flowy"  # the README's title names it
    assert _advise(untitled, name="me+other-thing").model is None  # no class `OtherThing`
    files = _repo()
    files["train.py"] = files["train.py"].replace("from core.flowy import Flowy", "import core.flowy").replace(
        "model = Flowy(args)", "model = None")
    assert _advise(files).model is None  # defined but never built by the entry


def test_a_toolbox_with_a_model_registry_gives_no_identity():
    reg = "".join(f"@MODELS.register_module()\nclass Net{i}:\n    pass\n\n" for i in range(6))
    files = _repo(**{"core/registry.py": reg})
    assert toolbox_reason(files) is not None
    assert repository_identity(files, "Flowy") is None
    assert _advise(files).model is None


def test_a_training_method_around_a_given_encoder_is_not_the_architecture():
    files = _repo(**{"core/flowy.py": _NET.replace("def __init__(self, args)", "def __init__(self, base_encoder)")})
    assert _advise(files).model is None


def test_a_command_that_sizes_the_network_abstains():
    md = _advise(_repo(), command="python train.py --depth 16")
    assert md.model is None


def test_an_answer_that_agrees_with_the_identity_is_lifted():
    md = extract_metadata("python train.py --model flowy_large", _repo(), repo_name="me+Flowy-pytorch")
    assert md.model.startswith("flowy-large")
    assert md.evidence["model"]["confidence"] >= AGREEMENT_CONFIDENCE
    assert "identity agrees" in md.evidence["model"]["rule"]
    untitled = _repo(**{"README.md": "Recurrent updates for optical flow estimation.\n"})
    without = extract_metadata("python train.py --model flowy_large", untitled, repo_name=None)
    assert without.evidence["model"]["confidence"] < AGREEMENT_CONFIDENCE


def test_the_readme_gives_the_version_of_the_method():
    files = _repo(**{"README.md": "# flowy.pytorch\n\nImplementation of Flowy2 for optical flow.\n"})
    assert _advise(files).model == "flowy2"


def test_run_together_detr_variants_have_one_spelling():
    assert canonical_model("dabdetr") == "dab-detr"
    assert canonical_model("ConditionalDETR") == "conditional-detr"
    assert known_model("dabdetr") is None  # the spelling only: the calibration's value groups are unchanged


def test_a_weak_task_is_lifted_only_by_an_independent_signal():
    from types import SimpleNamespace

    from features.schedmate_text.evidence import corroborate_task
    from features.schedmate_text.metadata import JobMetadata

    def md_with(task_rule: str, model: str | None, dataset: str | None) -> JobMetadata:
        md = JobMetadata(task="language-modeling", model=model, dataset=dataset)
        md.evidence = {"task": {"value": "language-modeling", "kind": "name", "confidence": 0.40, "rule": task_rule}}
        if model:
            md.evidence["model"] = {"value": model, "kind": "config", "confidence": 0.45, "rule": "config x"}
        if dataset:
            md.evidence["dataset"] = {"value": dataset, "kind": "argument", "confidence": 0.95, "rule": "argv x"}
        return md

    ex = SimpleNamespace(entry="train.py", programs=[], _repo=SimpleNamespace())
    lifted = corroborate_task(md_with("dataset alpaca", "qwen3-4b", "alpaca"), ex)
    assert lifted.evidence["task"]["confidence"] == 0.6 and "(the model agrees)" in lifted.evidence["task"]["rule"]
    # the model family is the answer's own source: not a second signal
    alone = corroborate_task(md_with("model family of qwen3-4b", "qwen3-4b", None), ex)
    assert alone.evidence["task"]["confidence"] == 0.40
    # an unrelated model confirms nothing
    other = corroborate_task(md_with("dataset alpaca", "resnet50", "alpaca"), ex)
    assert other.evidence["task"]["confidence"] == 0.40


def test_a_class_with_a_role_suffix_or_without_the_version_corroborates():
    files = _repo(**{"core/flowy.py": _NET.replace("class Flowy(", "class Flowy_Net(")})
    files["train.py"] = files["train.py"].replace("Flowy", "Flowy_Net")
    assert _advise(files).model == "flowy"
    assert _advise(_repo(), name="me+flowyv2-torch").model == "flowyv2"  # class Flowy, the repository flowyv2


def test_a_stated_method_among_those_a_name_lists_agrees():
    files = _repo(**{"README.md": "Some words.\n"})
    md = extract_metadata("python train.py --model gail", files, repo_name="me+pytorch-ppo-gail")
    assert md.model == "gail" and md.evidence["model"]["confidence"] >= 0.75
    md = extract_metadata("python train.py --model trpo", files, repo_name="me+pytorch-ppo-gail")
    assert md.evidence["model"]["confidence"] < 0.75  # not one the name lists


def test_a_bare_architecture_name_never_answers_alone():
    files = {"unet/model.py": "class UNet:\n    pass\n",
             "train.py": "from unet.model import UNet\nNETS = {'u': UNet}\nnet = NETS['u']()\n"}
    md = _advise(files, command="python train.py", name="me+Pytorch-UNet")
    assert md.model is None and md.evidence.get("model") is None
    method = {k: v.replace("UNet", "Flowy").replace("unet", "flowy") for k, v in files.items()}
    method = {k.replace("unet", "flowy"): v for k, v in method.items()}
    # the same shape with a method's name answers (the architecture word alone is what abstains)
    assert _advise(method, command="python train.py", name="me+Pytorch-Flowy").model == "flowy"
