"""General mechanisms added before the fresh held-out command batch (issue 25, item 1): click options
read like argparse ones, datasets named by their loader call (tfds / torchvision / keras), and the
network class the code instantiates when no option or config names the model, also where a thin main
leaves the training loop to a local module. Our own fixtures in the shape of public training code."""
from __future__ import annotations

from features.schedmate_text.extract import extract_metadata

CLICK_TRAIN = '''import click
@click.command()
@click.option("--outdir", required=True)
@click.option("--batch", "batch_size", type=int, default=48)
@click.option("--kimg", type=int, default=2500)
@click.option("--mirror", is_flag=True)
@click.option("--gpus", type=int, default=1)
def main(outdir, batch_size, kimg, mirror, gpus):
    pass
if __name__ == "__main__":
    main()
'''


def test_click_options_give_defaults_and_argv_overrides():
    md = extract_metadata("python train.py --outdir=runs --mirror --gpus=4", {"train.py": CLICK_TRAIN})
    assert md.batch_size == 48 and md.gpus == 4
    md = extract_metadata("python train.py --outdir runs --batch 16", {"train.py": CLICK_TRAIN})
    assert md.batch_size == 16


THIN_MAIN = '''from absl import app, flags
import train
FLAGS = flags.FLAGS
flags.DEFINE_string("workdir", None, "where to write")
def main(argv):
    train.train_and_evaluate(FLAGS.workdir)
if __name__ == "__main__":
    app.run(main)
'''
LOOP = '''import tensorflow_datasets as tfds
from flax import linen as nn
Array = object
class ConvNet(nn.Module):
    def __call__(self, x):
        return nn.Dense(10)(x)
def get_datasets():
    return tfds.load("fashion_mnist", split="train")
def train_and_evaluate(workdir):
    ds = get_datasets()
    model = ConvNet()
'''


def test_a_thin_main_takes_network_and_dataset_from_the_loop_it_imports():
    md = extract_metadata("python main.py --workdir=/tmp/w", {"main.py": THIN_MAIN, "train.py": LOOP})
    assert md.model == "conv-net" and md.dataset is not None and "mnist" in md.dataset
    assert md.task == "image-classification"


TV_TRAIN = '''import argparse
import torchvision
from models import *
parser = argparse.ArgumentParser()
parser.add_argument("--lr", default=0.1, type=float)
args = parser.parse_args()
trainset = torchvision.datasets.CIFAR10(root="./data", train=True, download=True)
net = ResNet18()
for epoch in range(200):
    pass
'''


def test_torchvision_dataset_class_and_star_imported_network():
    md = extract_metadata("python main.py --lr 0.01", {"main.py": TV_TRAIN, "models/__init__.py": ""})
    assert md.dataset == "cifar10" and md.model == "resnet18"


GENERIC = '''import argparse
from models.yolo import Model
parser = argparse.ArgumentParser()
parser.add_argument("--cfg", default="")
args = parser.parse_args()
model = Model(args.cfg)
'''
LAYERS = '''import torch.nn as nn
class Detect(nn.Module):
    pass
class Model(nn.Module):
    def __init__(self, cfg):
        self.m = Detect()
'''


def test_a_class_called_model_and_a_network_modules_layers_name_nothing():
    md = extract_metadata("python train.py --cfg cfg/yolov7.yaml", {"train.py": GENERIC, "models/yolo.py": LAYERS,
                                                                    "cfg/yolov7.yaml": "nc: 80\n"})
    assert md.model.startswith("yolov7")


def test_model_families_are_known_with_a_size_and_not_without():
    from features.schedmate_text.vocab import known_model
    assert known_model("resnet101") == "resnet101" and known_model("densenet121") == "densenet121"
    assert known_model("wide_resnet50_2") == "wide-resnet50-2"  # not ResNet-50
    assert known_model("meta-llama/Meta-Llama-3-8B") == "llama-3-8b" and known_model("Qwen/Qwen2-7B") == "qwen2-7b"
    assert known_model("DiT-XL/2") == "dit-xl-2" and known_model("yolo11n.pt") == "yolo11n"
    # a bare family names no model the Advisor can compare (a config's `type: ResNet`, `--network mlp`)
    assert known_model("resnet") is None and known_model("convnext") is None and known_model("llama3") is None
    assert known_model("default") is None and known_model("mlp") is None


def test_an_absolute_entry_path_ends_the_readme_search_at_the_root():
    # a launcher script's `$CURDIR/main.py` with CURDIR unknown leaves an absolute entry `/main.py`: the walk up its
    # folders must stop at "/" (its own parent) instead of looping and growing without end
    import threading

    from features.schedmate_text.describe import repository_description
    files = {"README.md": "# Tool\n\nAn object detector.\n", "run.sh": "python $CURDIR/main.py --epochs 3\n",
             "main.py": "import argparse\np = argparse.ArgumentParser()\np.add_argument('--epochs', type=int)\n"}
    out: list = []
    worker = threading.Thread(target=lambda: out.append(repository_description(files, entry="/opt/job/main.py")),
                              daemon=True)
    worker.start()
    worker.join(5)
    assert out == ["Tool An object detector."]
    done: list = []
    worker = threading.Thread(target=lambda: done.append(extract_metadata("./run.sh", files)), daemon=True)
    worker.start()
    worker.join(20)
    assert done and done[0].iterations == 3
