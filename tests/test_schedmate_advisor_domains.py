"""Tasks and models on new domains (issue 41, item 3): the repository's description as an open-set veto on a task
answered from generic code signals; fixtures are small hand-written repositories."""
from __future__ import annotations

from features.schedmate_text.describe import disagreeing_task_phrase, task_phrases
from features.schedmate_text.evidence import MIN_CONFIDENCE
from models.schedmate.extract import extract_metadata

# a one-method repository: its name is a class the entry builds (the identity mechanism answers its model and
# the task its description names)
_NET = "import torch.nn as nn\n\n\nclass MemSeg(nn.Module):\n    def __init__(self, args):\n        super().__init__()\n"
_TRAIN = ("import argparse\nfrom model.network import MemSeg\n\np = argparse.ArgumentParser()\n"
          "p.add_argument('--iterations', type=int, default=1000)\nargs = p.parse_args()\nnet = MemSeg(args)\n")


def _advise(readme: str, name: str = "someone+MemSeg"):
    files = {"model/network.py": _NET, "train.py": _TRAIN, "README.md": readme}
    return extract_metadata("python train.py --iterations 500", files, min_confidence=MIN_CONFIDENCE, repo_name=name)


def test_phrases_are_read_open_ended_up_to_a_function_word():
    ph = task_phrases("Memory networks for long-term video object segmentation and multi-object tracking.")
    assert (("long", "term", "video", "object"), "segmentation", "long-term video object segmentation") in ph
    assert any(noun == "tracking" and "object" in qual for qual, noun, _ in ph)  # (a task outside the vocabulary)


def test_a_phrase_on_another_modality_or_of_another_task_disagrees():
    assert disagreeing_task_phrase("Long-term video object segmentation", "semantic-segmentation")
    assert disagreeing_task_phrase("E(3) diffusion for molecule generation in 3D", "image-generation")
    assert disagreeing_task_phrase("A strong multi-object tracker", "object-detection")
    assert disagreeing_task_phrase("Representation learning for human pose estimation", "object-detection")
    assert disagreeing_task_phrase("High-fidelity audio compression with a GAN", "image-generation")


def test_agreeing_generic_or_bare_phrases_do_not_veto():
    assert disagreeing_task_phrase("Semantic segmentation on ADE20K (scene parsing)", "semantic-segmentation") is None
    assert disagreeing_task_phrase("Objects as points: object detection, 3D detection, pose estimation",
                                   "object-detection") is None  # one phrase agrees
    assert disagreeing_task_phrase("Photorealistic text-to-image synthesis", "image-generation") is None
    assert disagreeing_task_phrase("Natural TTS generation", "speech-synthesis") is None
    assert disagreeing_task_phrase("Action recognition toolbox", "video-classification") is None
    assert disagreeing_task_phrase("Fast, accurate detection", "object-detection") is None  # no specific qualifier
    assert disagreeing_task_phrase("Linear classification on ImageNet", "image-classification") is None
    assert disagreeing_task_phrase("Advanced video generation", "video-autoencoding") is None


def test_the_advisor_abstains_where_the_description_names_a_finer_task():
    plain = _advise("# MemSeg\n\nSemantic segmentation of street scenes.\n")
    assert plain.model == "memseg" and plain.task == "semantic-segmentation"  # the identity's task stands
    md = _advise("# MemSeg\n\nSpace-time memory for efficient video object segmentation.\n")
    assert md.model == "memseg"
    assert md.task is None  # "segmentation" alone would say semantic segmentation; the phrase says video objects


# -- toolboxes: a repository that runs one of many methods is never named as the model -------------------------------
_NS_NET = "import torch.nn as nn\n\n\nclass Radiant(nn.Module):\n    pass\n"
_NS_TRAIN = ("import argparse\nfrom radiant.core import Radiant\n\np = argparse.ArgumentParser()\n"
             "p.add_argument('method')\np.add_argument('--max_iters', type=int, default=3000)\nargs = p.parse_args()\n"
             "net = Radiant()\n")


def _toolbox(**extra: str) -> dict[str, str]:
    files = {"radiant/core.py": _NS_NET, "train.py": _NS_TRAIN, "README.md": "# Radiant\n\nA modular framework.\n"}
    files.update(extra)
    return files


def _run(files):
    return extract_metadata("python train.py fieldy --max_iters 10", files, min_confidence=MIN_CONFIDENCE,
                            repo_name="lab+radiant")


def test_a_table_of_named_presets_makes_a_toolbox():
    from features.schedmate_text.identity import toolbox_reason

    assert _run(_toolbox()).model == "radiant"  # a one-method repository: its name is the model
    table = "from radiant.cfg import Cfg\n\nmethods = {}\n" + "".join(
        f'methods["{m}"] = Cfg(name="{m}", steps={i})\n' for i, m in enumerate(("fieldy", "fieldy-big", "grid", "plain", "sparse")))
    files = _toolbox(**{"radiant/methods.py": table})
    assert "named presets" in (toolbox_reason(files) or "")
    assert _run(files).model != "radiant"
    few = _toolbox(**{"radiant/methods.py": table.split('methods["plain"]')[0]})  # three presets: not a toolbox
    assert toolbox_reason(few) is None


def test_many_models_on_one_base_class_make_a_toolbox():
    from features.schedmate_text.identity import toolbox_reason

    base = "import torch.nn as nn\n\n\nclass BaseVoiceModel(nn.Module):\n    pass\n"
    mods = {f"radiant/models/{m}.py": f"from radiant.models.base import BaseVoiceModel\n\n\nclass {m.title()}(BaseVoiceModel):\n    pass\n"
            for m in ("alpha", "beta", "gamma", "delta", "epsilon")}
    files = _toolbox(**{"radiant/models/base.py": base}, **mods)
    assert "base class BaseVoiceModel" in (toolbox_reason(files) or "")
    assert _run(files).model != "radiant"
    del files["radiant/models/epsilon.py"]
    assert toolbox_reason(files) is None  # four: a method with variants, not a toolbox


# -- name collisions: a short name the vocabulary expands to an image architecture, read where the data are audio ----
def _voice_repo(audio: bool) -> dict[str, str]:
    keys = ("p.add_argument('--sample_rate', type=int, default=22050)\np.add_argument('--n_mels', type=int, default=80)\n"
            if audio else "p.add_argument('--image_size', type=int, default=224)\n")
    train = ("import argparse\n\np = argparse.ArgumentParser()\np.add_argument('--model', default='vits')\n" + keys +
             "p.add_argument('--epochs', type=int, default=100)\nargs = p.parse_args()\n")
    return {"train.py": train}


def test_a_vision_expansion_is_not_taken_on_audio_data():
    md = extract_metadata("python train.py --model vits", _voice_repo(audio=True), repo_name="lab+voices")
    assert md.model == "vits"  # the speech synthesiser, as written
    assert "image architecture" in md.sources["model"]
    md = extract_metadata("python train.py --model vits", _voice_repo(audio=False), repo_name="lab+voices")
    assert md.model == "vit-small"  # on images the vocabulary's expansion stands


# -- detectors trained with instance masks: object detection or instance segmentation, not told apart ----------------
_DET_TRAIN = ("import argparse\nimport yaml\n\np = argparse.ArgumentParser()\np.add_argument('--config-file')\n"
              "args = p.parse_args()\ncfg = yaml.safe_load(open(args.config_file))\n"
              "def losses(pred, gt_boxes, anchors):\n    return box_loss(pred, gt_boxes) + focal_loss(pred, anchors)\n")


def _detector(mask_on: bool):
    cfg = "MODEL:\n  META_ARCHITECTURE: OneStage\n" + ("  MASK_ON: True\n" if mask_on else "") + \
          "DATASETS:\n  TRAIN: (coco_2017_train,)\nSOLVER:\n  MAX_ITER: 90000\n  IMS_PER_BATCH: 16\n"
    files = {"tools/train_net.py": _DET_TRAIN, "configs/one_stage/R_50_1x.yaml": cfg}
    return extract_metadata("python tools/train_net.py --config-file configs/one_stage/R_50_1x.yaml", files,
                            min_confidence=MIN_CONFIDENCE, repo_name="lab+detbox")


def test_masks_switched_on_leave_the_task_unknown():
    from features.schedmate_text.resolve import P_CONFIG, _instance_masks

    assert _instance_masks(None, [("MODEL.MASK_ON", True, P_CONFIG, "configs/x.yaml")]) is not None
    assert _instance_masks(None, [("MODEL.MASK_ON", False, P_CONFIG, "configs/x.yaml")]) is None
    assert _detector(False).task == "object-detection"  # boxes and anchors, no masks
    assert _detector(True).task is None


def test_a_container_method_is_never_the_model():
    train = ("import argparse\n\np = argparse.ArgumentParser()\np.add_argument('--epochs', type=int, default=5)\n"
             "args = p.parse_args()\nmodels = [load_saved()]\nmodel = models.pop()\n")
    md = extract_metadata("python train.py", {"train.py": train}, repo_name="lab+stuff")
    assert md.model != "pop"


def test_a_command_that_selects_another_mode_leaves_the_task_unknown():
    from features.schedmate_text.resolve import P_ARGV, P_DEFAULT, _task_mode

    assert _task_mode([("data_type", "structure", P_ARGV, "argv")], "object-detection") == "--data_type structure"
    assert _task_mode([("data_type", "detection", P_ARGV, "argv")], "object-detection") is None
    assert _task_mode([("task", "ctdet", P_ARGV, "argv")], "object-detection") is None  # an abbreviation agrees
    assert _task_mode([("task", "translation", P_ARGV, "argv")], "translation") is None
    assert _task_mode([("data_type", "structure", P_DEFAULT, "default")], "object-detection") is None  # not stated
