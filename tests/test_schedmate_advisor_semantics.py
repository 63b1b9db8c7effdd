"""The Advisor's job semantics from general mechanisms (issue 41, item 3): the task from the repository's own
description and the architecture rather than from generic identifiers or the dataset's name, abstaining when they
conflict; well-known datasets by their short forms; dataset overrides with their meaning. Hand-written fixtures in
the shape of public repositories (nothing copied)."""
from __future__ import annotations

import pytest

from features.schedmate_text.describe import (compatible_tasks, repository_description, specialisations,
                                              task_from_description)
from features.schedmate_text.evidence import MIN_CONFIDENCE
from features.schedmate_text.vocab import DATASET_TASK, canonical_dataset, family_task
from models.schedmate.extract import extract_metadata

# a classifier-shaped training loop: cross-entropy, num_classes, accuracy (what a translator, a text recogniser and
# a segmenter share with an image classifier)
_LOOP = '''import argparse
import torch
import torch.nn as nn

def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dataset", default="{dataset}")
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument("--num_classes", type=int, default=37)
    args = parser.parse_args()
    criterion = nn.CrossEntropyLoss()
    correct = 0
    for epoch in range(args.epochs):
        for x, y in loader:
            loss = criterion(model(x), y)
            correct += (model(x).argmax(1) == y).sum()
    accuracy = correct / total
    print("accuracy", accuracy)

if __name__ == "__main__":
    main()
'''


def _repo(readme: str, dataset: str = "lmdb_data") -> dict[str, str]:
    return {"README.md": readme, "train.py": _LOOP.replace("{dataset}", dataset)}


def test_description_reads_title_and_first_paragraph_only():
    readme = ("# TextReader\n[![build](https://x/badge.svg)](https://x)\n\nA PyTorch implementation of scene text "
              "recognition models.\n\n## Results\nWe also compare with object detection and image classification "
              "baselines.\n")
    d = repository_description({"README.md": readme})
    assert "scene text recognition" in d and "object detection" not in d and "badge" not in d
    assert task_from_description(d) == "text-recognition"


def test_description_nearest_readme_to_the_entry_wins():
    files = {"README.md": "# Toolbox\n\nObject detection toolbox.\n", "seg/README.md": "# Seg\n\nSemantic segmentation.\n",
             "seg/train.py": "print(1)\n"}
    assert task_from_description(repository_description(files, "seg/train.py")) == "semantic-segmentation"
    assert task_from_description(repository_description(files, "train.py")) == "object-detection"


@pytest.mark.parametrize("text, task", [
    ("Unpaired image-to-image translation with a GAN", "image-to-image-translation"),  # not also "translation"
    ("Neural machine translation with attention", "translation"),
    ("A vocoder: generative adversarial networks for speech synthesis", "speech-synthesis"),
    ("Deep Q-network agents for Atari with reinforcement learning", "reinforcement-learning"),
    ("Contrastive learning of sentence embeddings", "sentence-embedding"),  # the specialisation wins
    ("A toolbox for object detection, semantic segmentation and image classification", None),  # several: no task
    ("Utilities for training networks", None),
])
def test_task_from_description(text, task):
    assert task_from_description(text) == task


def test_compatible_tasks_and_specialisations():
    assert compatible_tasks("image-generation", "image-to-image-translation")
    assert not compatible_tasks("image-classification", "translation")
    assert "image-to-image-translation" in specialisations("image-generation")


def test_classifier_identifiers_in_a_text_recogniser_repository_are_not_image_classification():
    files = _repo("# OCR bench\n\nScene text recognition: what is wrong with model comparisons.\n")
    md = extract_metadata("python train.py", files)
    assert md.task == "text-recognition" and md.sources["task"].startswith("repository description (over")
    assert md.evidence["task"]["kind"] == "description"


def test_description_alone_is_not_enough_to_answer():
    files = {"README.md": "# Seg\n\nSemantic segmentation of street scenes.\n", "train.py": "print('hello')\n"}
    md = extract_metadata("python train.py", files, min_confidence=MIN_CONFIDENCE)
    assert md.task is None and md.evidence["task"]["guess"] == "semantic-segmentation"


def test_agreeing_description_raises_a_dataset_named_task_above_the_threshold():
    files = {"README.md": "# LM toolkit\n\nLSTM language models.\n",
             "main.py": "import argparse\np = argparse.ArgumentParser()\np.add_argument('--data', default='data/wikitext-2')\n"
                        "p.add_argument('--epochs', type=int, default=40)\nargs = p.parse_args()\n"}
    md = extract_metadata("python main.py --data data/wikitext-2", files, min_confidence=MIN_CONFIDENCE)
    assert md.task == "language-modeling" and "agrees" in md.evidence["task"]["rule"]
    files["README.md"] = "# Toolkit\n\nTraining utilities.\n"
    md = extract_metadata("python main.py --data data/wikitext-2", files, min_confidence=MIN_CONFIDENCE)
    assert md.task is None  # the dataset's usual task alone stays below the threshold


def test_conflicting_description_disputes_a_strong_code_signal():
    files = {"README.md": "# Detectors\n\nReal-time object detection.\n",
             "run_glue.py": "from transformers import AutoModelForSequenceClassification\nprint(1)\n"}
    md = extract_metadata("python run_glue.py", files, min_confidence=MIN_CONFIDENCE)
    assert md.task is None and "another task" in md.unknown["task"]


def test_architecture_family_says_the_task_before_generic_identifiers():
    files = _repo("# Nets\n\nSome networks.\n", dataset="cityscapes")
    files["train.py"] = files["train.py"].replace('parser.add_argument("--dataset"',
                                                  'parser.add_argument("--model", default="deeplabv3plus_resnet101")\n'
                                                  '    parser.add_argument("--dataset"')
    md = extract_metadata("python train.py --model deeplabv3plus_resnet101", files)
    assert md.task == "semantic-segmentation" and md.sources["task"].startswith("model family")
    assert family_task("deeplabv3plus") == "semantic-segmentation"


def test_classification_identifiers_on_translation_data_take_the_data_task():
    md = extract_metadata("python train.py --dataset m30k", _repo("# Attention\n\nA reimplementation.\n", "m30k"))
    assert md.dataset == "multi30k" and md.task == "translation"
    assert md.evidence["task"]["confidence"] < MIN_CONFIDENCE  # the data's usual task alone: not enough


@pytest.mark.parametrize("written, canonical", [
    ("c10", "cifar10"), ("C100", "cifar100"), ("voc", "pascal-voc"), ("VOC2012", "pascal-voc"),
    ("datasets/VOCdevkit", "pascal-voc"), ("pascal", "pascal-voc"), ("ptb", "penn-treebank"),
    ("char_penn", "penn-treebank-char"), ("m30k", "multi30k"), ("FashionMNIST", "fashion-mnist"),
    ("tiny-imagenet-200", "tiny-imagenet"), ("gs://bucket/imagenet/train", "imagenet"), ("wmt17", "wmt17"),
    ("wmt16_en_de", "wmt16-en-de"), ("vocab", None), ("feature_maps", None), ("my_data", None),
])
def test_dataset_registry_short_forms(written, canonical):
    assert canonical_dataset(written) == canonical


def test_registry_datasets_have_their_usual_task():
    assert DATASET_TASK["penn-treebank"] == "language-modeling" and DATASET_TASK["multi30k"] == "translation"
    assert "pascal-voc" not in DATASET_TASK  # detection and segmentation both: the data does not say


def test_dataset_short_form_on_the_command_is_answered_canonically():
    md = extract_metadata("python train.py --dataset c10", _repo("# x\n\ny\n", "c10"), min_confidence=MIN_CONFIDENCE)
    assert md.dataset == "cifar10"


@pytest.mark.parametrize("value", ["synthetic", "dummy", "fake_data", "random"])
def test_synthetic_dataset_override_abstains(value):
    md = extract_metadata(f"python train.py --dataset {value}", _repo("# x\n\ny\n", "imagenet"),
                          min_confidence=MIN_CONFIDENCE)
    assert md.dataset is None and "generated data" in md.unknown["dataset"]


@pytest.mark.parametrize("written, canonical", [
    ("acgan", "acgan"), ("AC_GAN", "acgan"), ("wgan_gp", "wgan-gp"), ("pix2pixHD", "pix2pixhd"),
    ("stargan_v2", "stargan-v2"), ("BetaTCVAE", "beta-tc-vae"), ("vq-vae", "vq-vae"), ("alexnet", "alexnet"),
    ("cut", None), ("generator", None),
])
def test_model_registry_named_methods(written, canonical):
    from features.schedmate_text.vocab import known_model

    assert known_model(written) == canonical


def test_entry_script_named_after_a_known_method_names_the_model():
    files = {"implementations/acgan/acgan.py": "import argparse\np = argparse.ArgumentParser()\n"
                                               "p.add_argument('--n_epochs', type=int, default=200)\nopt = p.parse_args()\n"}
    md = extract_metadata("cd implementations/acgan/ && python3 acgan.py", files, min_confidence=MIN_CONFIDENCE)
    assert md.model == "acgan"  # (the argparse default's epochs: answered or kept as the guess, by its calibration)
    assert (md.iterations if md.iterations is not None else md.evidence["iterations"]["guess"]) == 200
