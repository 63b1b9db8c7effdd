"""Advisor mechanisms from the first-sight misses of batches 24-25 (issue 41), on hand-written fixtures: a batch
option divided by the process count in a module the entry imports is the total over all GPUs; a presumed per-device
scope is its own calibration group and the scope's first-sight cap applies; a family name keeps its generation
digit; the first-sight script knows which code each batch met and keeps the other batches' records."""
from __future__ import annotations

from pathlib import Path

from features.schedmate_text.evidence import calibration_group
from features.schedmate_text.follow import divided_batches, imported_modules
from features.schedmate_text.vocab import known_model
from models.schedmate.extract import extract_metadata
from tests.helpers import first_sight_script

ROOT = Path(__file__).resolve().parents[1]


def test_division_with_other_divisors_between_and_a_guarded_count():
    assert divided_batches("per = round(args.bs / args.ac / dist.get_world_size())") == {"bs"}
    assert divided_batches("n = int(cfg.SOLVER.BATCH_SIZE / max(1, cfg.NUM_GPUS))") == {"BATCH_SIZE"}
    assert divided_batches("b = opt.mini_batch_size // comm.my_size") == {"mini_batch_size"}
    assert divided_batches("steps = len(ds) / args.batch_size") == set()
    assert divided_batches("lr = args.lr * args.batch_size / 256") == set()


def test_imported_modules_two_levels_deep():
    files = {"tools/run.py": "from tools.train import fit\n", "tools/train.py": "import pkg.data.build as b\n",
             "pkg/data/build.py": "x = 1\n", "pkg/other.py": ""}
    assert imported_modules(files, "tools/run.py") == ["tools/run.py", "tools/train.py", "pkg/data/build.py"]
    assert imported_modules(files, "tools/run.py", depth=1) == ["tools/run.py", "tools/train.py"]


_ENTRY = ("import argparse\nfrom helpers import setup\n"
          "p = argparse.ArgumentParser()\np.add_argument('--bs', type=int, default=64)\n"
          "p.add_argument('--ep', type=int, default=10)\nargs = p.parse_args()\nsetup(args)\n"
          "for epoch in range(args.ep):\n    pass\n")
_HELPER = "import torch.distributed as dist\n\ndef setup(args):\n    args.per = round(args.bs / 2 / dist.get_world_size())\n"


def test_batch_divided_in_an_imported_module_is_global():
    files = {"train.py": _ENTRY, "helpers.py": _HELPER}
    md = extract_metadata("torchrun --nproc_per_node 4 train.py --bs 256", files)
    assert md.batch_scope == "global"
    alone = extract_metadata("torchrun --nproc_per_node 4 train.py --bs 256",
                             {"train.py": _ENTRY, "helpers.py": "def setup(args):\n    pass\n"}, min_confidence=0.0)
    assert alone.batch_scope == "per-device"


def test_yacs_key_divided_by_its_last_segment():
    entry = ("from lib.config import get_cfg\nfrom lib.loader import build\ncfg = get_cfg()\n"
             "cfg.merge_from_list(__import__('sys').argv[1:])\nbuild(cfg)\n")
    loader = "def build(cfg):\n    return int(cfg.TRAIN.BATCH_SIZE / max(1, cfg.NUM_GPUS))\n"
    config = "from yacs.config import CfgNode\n_C = CfgNode()\n_C.TRAIN = CfgNode()\n_C.TRAIN.BATCH_SIZE = 64\n" \
             "_C.NUM_GPUS = 1\ndef get_cfg():\n    return _C.clone()\n"
    files = {"run.py": entry, "lib/loader.py": loader, "lib/config.py": config, "lib/__init__.py": ""}
    md = extract_metadata("python run.py TRAIN.BATCH_SIZE 16 NUM_GPUS 8", files, min_confidence=0.0)
    assert md.batch_scope == "global"


def test_presumed_per_device_scope_is_its_own_group():
    assert calibration_group("batch_scope", "argument", "per-device", "argv --batch_size") == \
        ("batch_scope", "argument/presumed")
    assert calibration_group("batch_scope", "argument", "per-device", "argv --per_device_train_batch_size") == \
        ("batch_scope", "argument")
    assert calibration_group("batch_scope", "argument", "global", "argv --batch_size (global, divided by GPUs below)") \
        == ("batch_scope", "argument")
    assert calibration_group("batch_scope", "config", "per-device", "config a.yaml") == ("batch_scope", "config")


def test_family_keeps_its_generation_digit():
    assert known_model("pointnet2_cls_ssg") == "pointnet2"
    assert known_model("pointnet_cls") == "pointnet"
    assert known_model("resnet50") == "resnet50"


_script = first_sight_script


def test_first_sight_code_commit_holds_the_labels():
    fs = _script()
    assert fs.FIRST_SIGHT_COMMITS[24] == fs.FIRST_SIGHT_COMMITS[25] == "cbd93ac"
    assert fs.LABEL_COMMITS[24] == "d1acabf"
    assert set(fs.LABEL_COMMITS) <= set(fs.FIRST_SIGHT_COMMITS)


def test_building_blocks_and_side_parts_are_never_the_model():
    from features.schedmate_text.resolve import _GENERIC_CLASS, _ROLE_PATH, _class_name_words

    for cls in ("AttnBlock", "ChanNorm", "MultiHeadAttn", "YOLOv8DetDataPreprocessor", "HifiVocoder"):
        assert _GENERIC_CLASS.match(_class_name_words(cls)), cls
    for cls in ("ResNet", "UNet", "DeepSpeech", "GIN"):
        assert not _GENERIC_CLASS.match(_class_name_words(cls)), cls
    assert _ROLE_PATH.search("vocoder") and _ROLE_PATH.search("model.data_preprocessor")
    assert not _ROLE_PATH.search("model") and not _ROLE_PATH.search("model.backbone")
    # a TTS config naming its vocoder: the vocoder is not the model trained
    files = {"train.py": "import yaml\nimport argparse\np = argparse.ArgumentParser()\n"
                         "p.add_argument('-m', '--model_config', type=str)\nargs = p.parse_args()\n"
                         "cfg = yaml.load(open(args.model_config))\n",
             "config/model.yaml": "transformer:\n  encoder_layer: 4\nvocoder:\n  model: HiFi-GAN\n"}
    md = extract_metadata("python train.py -m config/model.yaml", files, min_confidence=0.0)
    assert md.model != "hifi-gan"


_DEVICES = ("import argparse\np = argparse.ArgumentParser()\np.add_argument('--data', type=str, default='ETTx1')\n"
            "p.add_argument('--data_path', type=str, default='ETTx1.csv')\n"
            "p.add_argument('--batch_size', type=int, default=32)\n"
            "p.add_argument('--use_multi_gpu', action='store_true', default=False)\n"
            "p.add_argument('--devices', type=str, default='0,1,2,3')\nargs = p.parse_args()\n"
            "if args.use_multi_gpu:\n    model = nn.DataParallel(model, device_ids=args.devices)\n")


def test_a_device_list_behind_a_multi_gpu_switch_left_off_counts_no_gpus():
    md = extract_metadata("python run.py --data ETTx2", {"run.py": _DEVICES}, min_confidence=0.0)
    assert md.gpus == 1 and md.batch_scope == "per-device"
    md = extract_metadata("python run.py --data ETTx2 --use_multi_gpu", {"run.py": _DEVICES}, min_confidence=0.0)
    assert md.gpus == 4


def test_the_commands_bare_dataset_name_beats_another_keys_default_path():
    md = extract_metadata("python run.py --data ETTx2", {"run.py": _DEVICES}, min_confidence=0.0)
    assert md.dataset == "ettx2" and md.sources["dataset"] == "argv --data"
    md = extract_metadata("python run.py", {"run.py": _DEVICES}, min_confidence=0.0)
    assert md.dataset != "ettx2"


_TRAIN = ("import argparse\np = argparse.ArgumentParser()\np.add_argument('--num_steps', type=int, default=1000)\n"
          "p.add_argument('--stage')\np.add_argument('--batch_size', type=int, default=4)\nargs = p.parse_args()\n"
          "for step in range(args.num_steps):\n    pass\n")


def test_a_multi_stage_script_sums_its_stages_or_abstains():
    script = ("#!/bin/bash\npython -u train.py --stage a --num_steps 100 --batch_size 8\n"
              "python -u train.py --stage b --num_steps 50 --batch_size 8\n")
    md = extract_metadata("bash stages.sh", {"train.py": _TRAIN, "stages.sh": script})
    assert md.iterations == 150 and "2 stages" in md.sources["iterations"]
    partial = script.replace(" --num_steps 100", "")  # the first stage runs the default length: not summed
    md = extract_metadata("bash stages.sh", {"train.py": _TRAIN, "stages.sh": partial}, min_confidence=0.5)
    assert md.iterations is None and "stages" in md.unknown["iterations"]
    one = "#!/bin/bash\npython -u train.py --stage a --num_steps 100\n"
    assert extract_metadata("bash one.sh", {"train.py": _TRAIN, "one.sh": one}).iterations == 100


def test_a_known_model_argument_stands_where_the_code_builds_what_the_option_names():
    from features.schedmate_text.evidence import _selects_network

    assert _selects_network("model = models.__dict__[args.arch](pretrained=False)", "arch")
    assert _selects_network("net = timm.create_model(args.model, num_classes=10)", "model")
    assert _selects_network("MODEL = importlib.import_module(args.model)", "model")
    assert not _selects_network("print(args.arch)", "arch")
    head = ("import argparse\nimport torchvision.models as models\np = argparse.ArgumentParser()\n"
            "p.add_argument('--arch', default='resnet18')\np.add_argument('--epochs', type=int, default=90)\n"
            "args = p.parse_args()\n")
    built = extract_metadata("python main.py --arch resnet50", {"main.py": head + "model = models.__dict__[args.arch]()\n"},
                             min_confidence=0.5)
    assert built.model == "resnet50"
    printed = extract_metadata("python main.py --arch resnet50", {"main.py": head + "print(args.arch)\n"},
                               min_confidence=0.5)
    assert printed.model is None and printed.evidence["model"]["guess"] == "resnet50"  # (capped: 25 of 31 at first sight)


def test_a_presumed_per_device_scope_stands_in_single_process_code_only():
    single = ("import argparse\np = argparse.ArgumentParser()\np.add_argument('--batch_size', type=int, default=8)\n"
              "args = p.parse_args()\nloader = DataLoader(ds, batch_size=args.batch_size)\n")
    md = extract_metadata("python train.py --batch_size 16", {"train.py": single}, min_confidence=0.5)
    assert md.batch_scope == "per-device"
    multi = single + "torch.distributed.init_process_group('nccl')\n"
    md = extract_metadata("python train.py --batch_size 16", {"train.py": multi}, min_confidence=0.5)
    assert md.batch_scope is None and md.evidence["batch_scope"]["guess"] == "per-device"


def test_a_cluster_submitter_decides_the_gpus_so_an_assumed_one_abstains():
    train = "import argparse\np = argparse.ArgumentParser()\np.add_argument('--epochs', type=int, default=3)\n"
    files = {"tools/submit.py": train + "import submitit\n", "pkg/stool.py": train, "pkg/__init__.py": "",
             "train.py": train}
    for cmd in ("python tools/submit.py --epochs 2", "python -m pkg.stool --epochs 2"):
        md = extract_metadata(cmd, files, min_confidence=0.5)
        assert md.gpus is None and "submitted to a cluster" in md.unknown["gpus"], cmd
    assert extract_metadata("python train.py --epochs 2", files, min_confidence=0.5).gpus == 1


def test_hydra_group_option_over_a_structured_primary_config():
    entry = ("import hydra\nfrom hydra.core.config_store import ConfigStore\nfrom dataclasses import dataclass\n\n"
             "@dataclass\nclass TrainCfg:\n    max_epochs: int = 1000\n    batch_size: int = 64\n\n"
             "cs = ConfigStore.instance()\ncs.store(name='config', node=TrainCfg)\n\n"
             "@hydra.main(config_path='.', config_name='config')\ndef main(cfg):\n    pass\n\n"
             "if __name__ == '__main__':\n    main()\n")
    group = "# @package _global_\ndata:\n  batch_size: 8\ntrainer:\n  max_epochs: 70\n"
    md = extract_metadata("python train.py +configs=small", {"train.py": entry, "configs/small.yaml": group})
    assert (md.iterations, md.batch_size) == (70, 8)
    md = extract_metadata("python train.py", {"train.py": entry, "configs/small.yaml": group})
    assert md.iterations != 70


def test_omegaconf_cli_config_file_is_read():
    entry = ("from dataclasses import dataclass\nfrom omegaconf import OmegaConf\n\n@dataclass\nclass Args:\n"
             "    steps: int = 10\n    batch_size: int = 2\n\n"
             "def main():\n    cli = OmegaConf.from_cli()\n    cfg = OmegaConf.merge(OmegaConf.structured(Args()), "
             "OmegaConf.load(cli.config), cli)\n\nif __name__ == '__main__':\n    main()\n")
    files = {"app/train.py": entry, "app/__init__.py": "", "app/configs/small.yaml": "steps: 500\nbatch_size: 32\n"}
    md = extract_metadata("python -m app.train config=app/configs/small.yaml", files)
    assert (md.iterations, md.batch_size) == (500, 32)
    assert md.sources["batch_size"] == "config app/configs/small.yaml"


def test_a_script_branch_chosen_by_its_positional_argument():
    script = ("#!/bin/bash\nif [[ $1 == 'train' ]]; then\n    python train.py --num_steps 300\n"
              "elif [[ $1 == 'eval' ]]; then\n    python evaluate.py --num_steps 7\nelse\n    echo 'unknown'\nfi\n")
    files = {"train.py": _TRAIN, "evaluate.py": _TRAIN, "run.sh": script}
    md = extract_metadata("bash run.sh train --work_dir x", files)
    assert md.iterations == 300 and md.entry == "train.py"
    assert extract_metadata("bash run.sh eval", files).iterations == 7
    other = script.replace("[[ $1 == 'train' ]]", "[ -d data ]").replace("elif [[ $1 == 'eval' ]]", "elif true")
    assert extract_metadata("bash run.sh train", {**files, "run.sh": other}).iterations == 7  # untestable: as before


def test_a_config_batch_scope_stands_where_its_key_says_per_device(monkeypatch):
    # the confirmation under test lifts a CAPPED config scope: the group's record is pinned below the floor (as over
    # batches 18-28: 45 right of 54) so the test does not follow the table's refits
    from features.schedmate_text import evidence
    monkeypatch.setitem(evidence.FIRST_SIGHT_COUNTS, ("batch_scope", "config"), (54, 45))
    entry = ("import argparse\nimport yaml\nimport torch.distributed as dist\np = argparse.ArgumentParser()\n"
             "p.add_argument('--config')\nargs = p.parse_args()\ncfg = yaml.safe_load(open(args.config))\n"
             "dist.init_process_group('nccl')\n")
    for key, scope in (("per_device_train_batch_size", "per-device"), ("batch_size", None)):
        files = {"train.py": entry, "cfg.yaml": f"{key}: 16\nnum_train_epochs: 3\n"}
        md = extract_metadata("torchrun --nproc_per_node 2 train.py --config cfg.yaml", files, min_confidence=0.5)
        assert md.batch_size == 16 and md.batch_scope == scope, key


def test_an_unknown_model_argument_stands_where_the_code_builds_it_unless_options_size_it():
    head = ("import argparse\np = argparse.ArgumentParser()\np.add_argument('--model', default='mlp')\n"
            "p.add_argument('--depth', type=int, default=0)\nargs = p.parse_args()\n")
    built = {"main.py": head + "model = MODEL_REGISTRY[args.model]()\n"}
    md = extract_metadata("python main.py --model zorbnet", built, min_confidence=0.5)
    assert md.model == "zorbnet"
    md = extract_metadata("python main.py --model zorbnet --depth 28", built, min_confidence=0.5)
    assert md.model is None  # a size the name lacks: not confirmed
    md = extract_metadata("python main.py --model zorbnet", {"main.py": head + "run_dir = args.model\n"},
                          min_confidence=0.5)
    assert md.model is None and md.evidence["model"]["guess"] == "zorbnet"


def test_a_batch_option_commented_as_the_total_is_global():
    from features.schedmate_text.follow import commented_global_batches

    assert commented_global_batches("    bs: int = 768  # global batch size") == {"bs"}
    assert commented_global_batches("p.add_argument('--batch-size', type=int)  # total batch size, all GPUs") == \
        {"batch_size"}
    assert commented_global_batches("    bs: int = 8  # batch size per gpu") == set()
    entry = ("import argparse\np = argparse.ArgumentParser()\n"
             "p.add_argument('--bs', type=int, default=64)  # global batch size\nargs = p.parse_args()\n")
    md = extract_metadata("torchrun --nproc_per_node 4 train.py --bs 256", {"train.py": entry}, min_confidence=0.0)
    assert md.batch_scope == "global"
