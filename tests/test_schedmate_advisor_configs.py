"""Config systems the Advisor follows (issue 41, item 3): console-script entry points to the FUNCTION they run
and its click / typer / signature defaults plus the plan file it is given; detectron2-style lazy Python configs
(`L(Model)(...)`, attribute overrides, inheritance through relative imports and `get_config`) and mmengine-style
`_base_` configs. Hand-written fixtures in the shape of public repositories (nothing copied)."""
from __future__ import annotations

from features.schedmate_text.pyast import _python_config, function_cli
from models.schedmate.extract import extract_metadata

_PYPROJECT = ('[project]\nname = "trainkit"\n[project.scripts]\ntrainkit-train = "trainkit.cli:train"\n'
              'trainkit-eval = "trainkit.cli:evaluate"\n')
_CLICK = '''import click
import yaml

@click.command()
@click.option("--epochs", default=1)
def evaluate(epochs):
    pass

@click.command()
@click.argument("plan")
@click.option("--epochs", "-e", default=90, help="training epochs")
@click.option("--batch-size", default=256)
@click.option("--arch", default="resnet50")
def train(plan, epochs, batch_size, arch):
    cfg = yaml.safe_load(open(plan))
'''
_TYPER = '''import typer

def evaluate(epochs: int = typer.Option(1)):
    pass

def train(plan: str = typer.Argument(...), epochs: int = typer.Option(90), batch_size: int = typer.Option(64),
          model: str = "vit_base_patch16_224"):
    pass
'''


def _console_repo(cli: str) -> dict[str, str]:
    return {"pyproject.toml": _PYPROJECT, "src/trainkit/__init__.py": "", "src/trainkit/cli.py": cli,
            "plans/imagenet.yaml": "dataset: imagenet\nnum_classes: 1000\n"}


def test_click_console_script_resolves_to_its_function_defaults_and_plan_file():
    md = extract_metadata("trainkit-train plans/imagenet.yaml", _console_repo(_CLICK))
    assert (md.model, md.dataset, md.iterations, md.iteration_unit, md.batch_size) == \
        ("resnet50", "imagenet", 90, "epochs", 256)  # train's --epochs default, not evaluate's
    md = extract_metadata("trainkit-train plans/imagenet.yaml -e 30", _console_repo(_CLICK))
    assert md.iterations == 30


def test_typer_console_script_defaults_and_positional_plan():
    md = extract_metadata("trainkit-train plans/imagenet.yaml", _console_repo(_TYPER))
    assert (md.model, md.dataset, md.iterations, md.batch_size) == ("vit-base", "imagenet", 90, 64)
    info = function_cli(_TYPER, "train")
    assert info.positionals == ["plan"] and info.defaults["epochs"] == 90


def test_setup_py_console_scripts_are_followed_too():
    files = _console_repo(_TYPER)
    del files["pyproject.toml"]
    files["setup.py"] = ("from setuptools import setup\nsetup(name='trainkit', entry_points={'console_scripts': "
                         "['trainkit-train=trainkit.cli:train', 'trainkit-eval=trainkit.cli:evaluate']})\n")
    md = extract_metadata("trainkit-train plans/imagenet.yaml --epochs 12", files)
    assert (md.iterations, md.batch_size) == (12, 64)


_LAZY_ENTRY = '''import argparse
from detectron2.config import LazyConfig, instantiate

def main(args):
    cfg = LazyConfig.load(args.config_file)
    model = instantiate(cfg.model)
    for it in range(cfg.train.max_iter):
        pass

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--config-file", default="")
    parser.add_argument("--num-gpus", type=int, default=1)
    main(parser.parse_args())
'''


def _lazy_repo() -> dict[str, str]:
    return {
        "tools/lazy_train.py": _LAZY_ENTRY,
        "configs/common/train.py": "train = dict(output_dir='./output', max_iter=90000, checkpointer=dict(period=5000))\n",
        "configs/common/models/retinanet.py": (
            "from detectron2.config import LazyCall as L\nfrom detectron2.modeling import RetinaNet, FPN, ResNet\n"
            "model = L(RetinaNet)(backbone=L(FPN)(bottom_up=L(ResNet)(depth=50)), num_classes=80)\n"),
        "configs/common/data/coco.py": (
            "from detectron2.config import LazyCall as L\ndataloader = dict()\n"
            "dataloader.train = L(build_detection_train_loader)(dataset=L(get_detection_dataset_dicts)("
            "names='coco_2017_train'), total_batch_size=16)\n"),
        "configs/COCO/retina_1x.py": (
            "from ..common.models.retinanet import model\nfrom ..common.data.coco import dataloader\n"
            "from ..common.train import train\n\ndataloader.train.total_batch_size = 32\ntrain.max_iter = 45000\n"),
        "configs/COCO/retina_3x.py": (
            "from detectron2 import model_zoo\nfrom .retina_1x import model, dataloader\n"
            "train = model_zoo.get_config('common/train.py').train\ntrain.max_iter = 270000\n"),
    }


def test_lazy_config_values_and_inheritance_through_relative_imports():
    md = extract_metadata("python tools/lazy_train.py --config-file configs/COCO/retina_1x.py --num-gpus 8", _lazy_repo())
    assert (md.model, md.task, md.dataset, md.iterations, md.iteration_unit, md.gpus) == \
        ("retinanet", "object-detection", "coco", 45000, "steps", 8)
    assert md.global_batch == 32 and md.batch_scope == "global"  # the child's override of the base's 16


def test_lazy_config_get_config_base_and_chained_child():
    md = extract_metadata("python tools/lazy_train.py --config-file configs/COCO/retina_3x.py --num-gpus 8", _lazy_repo())
    assert (md.model, md.iterations, md.global_batch) == ("retinanet", 270000, 32)


def test_python_config_reads_lazy_calls_as_types():
    data, bases = _python_config("from detectron2.config import LazyCall as LC\nfrom ..a.b import model\n"
                                 "net = LC(Mod)(backbone=LC(Res)(depth=101), n=3)\nmodel.head.num_classes = 10\n"
                                 "_base_ = ['../_base_/x.py']\n")
    assert data["net"] == {"type": "Mod", "backbone": {"type": "Res", "depth": 101}, "n": 3}
    assert data["model"] == {"head": {"num_classes": 10}}
    assert bases == ["../a/b.py", "../_base_/x.py"]


def test_mmengine_base_config_child_overrides_dataset_and_schedule():
    files = {
        "tools/train.py": "import argparse\np = argparse.ArgumentParser()\np.add_argument('config')\nargs = p.parse_args()\n",
        "configs/_base_/models/faster-rcnn_r50_fpn.py": "model = dict(type='FasterRCNN', backbone=dict(type='ResNet', depth=50))\n",
        "configs/_base_/datasets/coco_detection.py": "dataset_type = 'CocoDataset'\ndata_root = 'data/coco/'\n"
                                                    "train_dataloader = dict(batch_size=2, dataset=dict(type=dataset_type))\n",
        "configs/_base_/schedules/schedule_1x.py": "train_cfg = dict(type='EpochBasedTrainLoop', max_epochs=12)\n",
        "configs/faster_rcnn/faster-rcnn_r50_fpn_voc.py": (
            "_base_ = ['../_base_/models/faster-rcnn_r50_fpn.py', '../_base_/datasets/coco_detection.py',\n"
            "          '../_base_/schedules/schedule_1x.py']\n"
            "dataset_type = 'VOCDataset'\ndata_root = 'data/VOCdevkit/'\ntrain_cfg = dict(max_epochs=4)\n"),
    }
    md = extract_metadata("python tools/train.py configs/faster_rcnn/faster-rcnn_r50_fpn_voc.py", files)
    assert (md.task, md.iterations, md.iteration_unit) == ("object-detection", 4, "epochs")
    assert md.dataset == "pascal-voc" and md.model.startswith("faster-rcnn")


def test_python2_era_script_is_still_read():
    # `x.cuda(async=True)` and a `print x` statement are not Python 3: those lines are skipped, the options read
    code = ("import argparse\nparser = argparse.ArgumentParser()\nparser.add_argument('-d', '--dataset', default='cifar10')\n"
            "parser.add_argument('--arch', '-a', default='resnet20')\nparser.add_argument('--depth', type=int, default=29)\n"
            "parser.add_argument('--epochs', default=300, type=int)\nargs = parser.parse_args()\n"
            "def train(loader):\n    for x, y in loader:\n        x, y = x.cuda(), y.cuda(async=True)\n"
            "        print 'loss', 1\n")
    md = extract_metadata("python cifar.py -a resnet --depth 110 --epochs 164", {"cifar.py": code})
    assert (md.model, md.dataset, md.iterations) == ("resnet110", "cifar10", 164)  # the family and its --depth
    md = extract_metadata("python cifar.py -a alexnet", {"cifar.py": code})
    assert md.model == "alexnet" and md.iterations == 300


def test_settings_module_read_by_attribute():
    files = {"config.py": "start_epoch = 1\nnum_epochs = 200\nbatch_size = 128\nunused_steps = 5\n",
             "main.py": ("import argparse\nimport torch\nimport config as cf\np = argparse.ArgumentParser()\n"
                         "p.add_argument('--net_type', default='wide-resnet')\nargs = p.parse_args()\n"
                         "num_epochs, batch_size = cf.num_epochs, cf.batch_size\n"
                         "for epoch in range(cf.start_epoch, cf.start_epoch + num_epochs):\n    pass\n")}
    md = extract_metadata("python main.py", files)
    assert (md.iterations, md.iteration_unit, md.batch_size) == (200, "epochs", 128)
    assert md.sources["batch_size"].startswith("module constant batch_size (config.py)")


def test_iteration_keys_written_as_itrs_and_float_literals():
    code = ("import argparse\np = argparse.ArgumentParser()\np.add_argument('--total_itrs', type=int, default=30e3)\n"
            "p.add_argument('--train-batch', type=int, default=16)\nargs = p.parse_args()\n")
    md = extract_metadata("python main.py", {"main.py": code})
    assert (md.iterations, md.iteration_unit, md.batch_size) == (30000, "steps", 16)


def test_hyperparameter_builder_the_entry_imports_and_calls():
    files = {"hparams.py": ("import tensorflow as tf\n\ndef create_hparams(hparams_string=None, verbose=False):\n"
                            "    hparams = tf.contrib.training.HParams(epochs=500, seed=1234,\n"
                            "        training_files='filelists/ljs_audio_text_train_filelist.txt', batch_size=64)\n"
                            "    if hparams_string:\n        hparams.parse(hparams_string)\n    return hparams\n"),
             "train.py": ("import argparse\nfrom hparams import create_hparams\np = argparse.ArgumentParser()\n"
                          "p.add_argument('--output_directory')\nargs = p.parse_args()\nhparams = create_hparams()\n"
                          "for epoch in range(hparams.epochs):\n    pass\n")}
    md = extract_metadata("python train.py --output_directory=out", files)
    assert (md.iterations, md.iteration_unit, md.batch_size, md.dataset) == (500, "epochs", 64, "ljspeech")
    assert md.sources["iterations"] == "config defaults hparams.py:create_hparams"


def test_tolerant_parse_repairs_python2_files_in_one_pass_and_gives_up_on_garbage():
    import pytest

    from features.schedmate_text.pyast import tolerant_parse

    src = "import argparse\n" + "\n".join(
        f"def f{i}(x):\n    try:\n        pass\n    except ValueError, e:\n        print 'bad', e\n"
        f"    return x.cuda(async=True)\n" for i in range(100))
    assert len(tolerant_parse(src).body) == 101  # 300 offending lines, repaired without one parse per line
    with pytest.raises(SyntaxError):
        tolerant_parse("\n".join("def (" for _ in range(50)))
