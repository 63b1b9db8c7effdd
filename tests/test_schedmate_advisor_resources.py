"""The Advisor's resource fields on the shapes of batches 27-29 (issue 41, item 3): device-id ranges, JSON option
files with comments, yacs overrides with lower-case leaves, a launcher line whose script a document put on the
next line, integer tests in launcher scripts, sweeps that are not stages, signature CLIs behind a project's own
wrapper, per-GPU batch keys under DataParallel, and dataset aliases. Small synthetic repositories."""
from __future__ import annotations

from features.schedmate_text.shell import _expand, _join_continuations
from features.schedmate_text.vocab import canonical_dataset
from models.schedmate.extract import extract_metadata


def _read(md, field):
    """The value the rules read (the answer, or the guess the calibration held back)."""
    v = getattr(md, field)
    return v if v is not None else (md.evidence.get(field) or {}).get("guess")


_DP_TRAIN = ("import argparse, torch\nfrom torch.nn.parallel import DataParallel\n"
             "p = argparse.ArgumentParser()\np.add_argument('--gpus', default='0-3', help='gpus to use, e.g. 0-3')\n"
             "p.add_argument('--epochs', type=int, default=5)\nargs = p.parse_args()\n"
             "def parse_devices(s):\n    a, b = s.split('-')\n    return list(range(int(a), int(b) + 1))\n"
             "gpus = parse_devices(args.gpus)\nmodel = DataParallel(torch.nn.Linear(2, 2), device_ids=gpus)\n"
             "for epoch in range(args.epochs):\n    pass\n")


def test_a_range_of_device_ids_counts_every_device():
    md = extract_metadata("python train.py --gpus 0-7", {"train.py": _DP_TRAIN})
    assert _read(md, "gpus") == 8
    md = extract_metadata("python train.py", {"train.py": _DP_TRAIN})
    assert _read(md, "gpus") == 4  # the option's default range
    md = extract_metadata("python train.py --gpus 3", {"train.py": _DP_TRAIN})
    assert _read(md, "gpus") == 3  # a plain count is still a count


def test_a_json_options_file_with_comments_is_read():
    train = ("import argparse, json, torch\nfrom torch.nn.parallel import DataParallel\n"
             "p = argparse.ArgumentParser()\np.add_argument('--opt', type=str)\nargs = p.parse_args()\n"
             "text = ''.join(l.split('//')[0] for l in open(args.opt))\nopt = json.loads(text)\n"
             "model = DataParallel(torch.nn.Linear(2, 2))\n")
    opts = ('{\n  "task": "sr_x2"   // the run name\n  , "gpu_ids": [0,1,2,3,4,5,6,7]\n'
            '  , "url": "http://example.org/a//b" /* a block comment */\n}\n')
    md = extract_metadata("python main_train.py --opt options/train_sr.json",
                          {"main_train.py": train, "options/train_sr.json": opts})
    assert _read(md, "gpus") == 8


def test_yacs_overrides_with_lower_case_leaves_override_the_config():
    train = ("import argparse\nfrom config import cfg\np = argparse.ArgumentParser()\n"
             "p.add_argument('--cfg', default='config/base.yaml')\n"
             "p.add_argument('opts', default=None, nargs=argparse.REMAINDER)\nargs = p.parse_args()\n"
             "cfg.merge_from_file(args.cfg)\ncfg.merge_from_list(args.opts)\n"
             "for epoch in range(cfg.TRAIN.num_epoch):\n    pass\n")
    files = {"train.py": train, "config/base.yaml": "TRAIN:\n  num_epoch: 20\n  batch_size_per_gpu: 2\n",
             "config/__init__.py": "cfg = None\n"}
    assert _read(extract_metadata("python train.py", files), "iterations") == 20
    md = extract_metadata("python train.py TRAIN.num_epoch 10", files)
    assert _read(md, "iterations") == 10
    # a file name is not an override key
    md = extract_metadata("python train.py --cfg config/base.yaml README.md x", files)
    assert _read(md, "iterations") == 20


def test_a_per_gpu_batch_key_stays_per_device_under_data_parallel():
    train = _DP_TRAIN.replace("p.add_argument('--epochs', type=int, default=5)",
                              "p.add_argument('--batch_size_per_gpu', type=int, default=2)\n"
                              "p.add_argument('--epochs', type=int, default=5)")
    md = extract_metadata("python train.py --gpus 0-7 --batch_size_per_gpu 2", {"train.py": train})
    assert _read(md, "batch_size") == 2
    assert _read(md, "batch_scope") == "per-device"


def test_a_launcher_line_whose_script_is_on_the_next_line_is_one_command():
    assert _join_continuations("torchrun --nproc_per_node 4 --master_port 1234\ntrain.py --a 1") == \
        "torchrun --nproc_per_node 4 --master_port 1234 train.py --a 1"
    # a launcher that names its script is complete: the next line is another command
    assert "\n" in _join_continuations("torchrun --nproc_per_node 4 train.py\neval.py --a 1")
    assert _join_continuations("pip install x\npython train.py") == "pip install x\npython train.py"
    train = "import argparse\np = argparse.ArgumentParser()\np.add_argument('--local_rank', type=int)\n"
    md = extract_metadata("python -m torch.distributed.launch --nproc_per_node=8\ntrain.py \\\n  --local_rank 0",
                          {"train.py": train})
    assert _read(md, "gpus") == 8


def test_nested_shell_defaults_expand_inner_first():
    assert _expand("${GPUS_PER_NODE:-${MAX_GPUS:-8}}", {}, []) == "8"
    assert _expand("${A:-${B:-8}}", {"B": "4"}, []) == "4"
    assert _expand("${A:-${B:-8}}", {"A": "2"}, []) == "2"
    assert _expand("${X:-1} ${Y}", {"Y": "3"}, []) == "1 3"


def test_an_integer_test_in_a_launcher_script_picks_its_branch():
    run = ("#!/usr/bin/env bash\nGPUS=$1\nif [ $GPUS -lt ${MAX_GPUS:-8} ]; then\n"
           "    GPUS_PER_NODE=${GPUS_PER_NODE:-$GPUS}\nelse\n    GPUS_PER_NODE=${GPUS_PER_NODE:-${MAX_GPUS:-8}}\nfi\n"
           "python3 -m torch.distributed.launch --nproc_per_node=$GPUS_PER_NODE main.py ${@:2}\n")
    main = "import argparse\np = argparse.ArgumentParser()\np.add_argument('--epochs', type=int, default=100)\n"
    files = {"run.sh": run, "main.py": main}
    assert _read(extract_metadata("./run.sh 16 --epochs 800", files), "gpus") == 8
    assert _read(extract_metadata("./run.sh 4 --epochs 800", files), "gpus") == 4


def _sweep(chain: bool) -> str:
    lines = []
    for i, h in enumerate((96, 192, 336)):
        restore = f" --restore_ckpt ckpt/run{i - 1}.pth" if chain and i else ""
        lines.append(f"python -u run.py --pred_len {h} --train_epochs 3{restore}")
    return "\n\n".join(lines) + "\n"


def test_independent_runs_of_a_sweep_are_not_summed_as_stages():
    run = ("import argparse\np = argparse.ArgumentParser()\np.add_argument('--train_epochs', type=int, default=10)\n"
           "p.add_argument('--pred_len', type=int, default=96)\np.add_argument('--restore_ckpt', default=None)\n"
           "args = p.parse_args()\nfor epoch in range(args.train_epochs):\n    pass\n")
    md = extract_metadata("bash scripts/sweep.sh", {"run.py": run, "scripts/sweep.sh": _sweep(chain=False)})
    assert _read(md, "iterations") == 3
    md = extract_metadata("bash scripts/stages.sh", {"run.py": run, "scripts/stages.sh": _sweep(chain=True)})
    assert _read(md, "iterations") == 9  # each stage restores the last: the job is the stages together


def test_a_projects_own_signature_cli_wrapper_gives_the_function_defaults():
    main = ("from mylib.utils import logging\n\n"
            "def main(task: str = 'PongNoFrameskip-v4', epoch: int = 50, batch_size: int = 256) -> None:\n"
            "    for e in range(epoch):\n        pass\n\n"
            "if __name__ == '__main__':\n    logging.run_cli(main)\n")
    lib = "from dataclasses import dataclass\n@dataclass\nclass TrainerParams:\n    batch_size: int = 64\n    max_epochs: int = 100\n"
    md = extract_metadata("python atari_x.py --task Ant-v3", {"atari_x.py": main, "mylib/trainer.py": lib,
                                                               "mylib/utils/logging.py": "def run_cli(f): pass\n"})
    assert _read(md, "batch_size") == 256
    assert _read(md, "iterations") == 50


def test_dataset_aliases_by_the_datasets_own_names():
    assert canonical_dataset("ml-100k") == "movielens-100k"
    assert canonical_dataset("ML-1M") == "movielens-1m"
    assert canonical_dataset("movielens-20m") == "movielens-20m"
    assert canonical_dataset("html-1m") is None  # not a MovieLens code inside another word
    assert canonical_dataset("huggan/flowers-102-categories") == "oxford-flowers"
    assert canonical_dataset("dataset/illness/national_illness.csv") == "ili"
    assert canonical_dataset("qm9_second_half") == "qm9"
    assert canonical_dataset("mili") is None


def test_a_use_gpu_switch_left_off_runs_on_the_cpu():
    train = ("import argparse, torch\np = argparse.ArgumentParser()\n"
             "p.add_argument('--use-gpu', action='store_true', default=False)\n"
             "p.add_argument('--nepochs', type=int, default=1)\nargs = p.parse_args()\n"
             "device = torch.device('cuda' if args.use_gpu else 'cpu')\n")
    assert _read(extract_metadata("python train.py --nepochs 2", {"train.py": train}), "gpus") == 0
    assert _read(extract_metadata("python train.py --use-gpu", {"train.py": train}), "gpus") == 1


def test_a_quality_level_alone_is_not_a_dataset_name():
    train = ("import argparse\np = argparse.ArgumentParser()\np.add_argument('--env', default='hopper')\n"
             "p.add_argument('--dataset', default='medium')\nargs = p.parse_args()\n"
             "path = f'data/{args.env}-{args.dataset}-v2.pkl'\n")
    assert _read(extract_metadata("python experiment.py --env hopper --dataset medium", {"experiment.py": train}),
                 "dataset") != "medium"
    assert _read(extract_metadata("python experiment.py --dataset ETTh2", {"experiment.py": train}), "dataset") == "etth2"


def test_a_step_count_that_sizes_the_data_is_not_the_run_length():
    train = ("import argparse\np = argparse.ArgumentParser()\np.add_argument('--epochs', type=int, default=5)\n"
             "p.add_argument('--num_steps', type=int, default=500000)\nargs = p.parse_args()\n"
             "obss, actions = create_dataset(args.num_buffers, args.num_steps, args.game)\n"
             "for epoch in range(args.epochs):\n    pass\n")
    md = extract_metadata("python run.py --epochs 5 --num_steps 500000", {"run.py": train})
    assert (_read(md, "iterations"), _read(md, "iteration_unit")) == (5, "epochs")
    trains = train.replace("create_dataset(args.num_buffers, args.num_steps, args.game)", "load(args.game)") \
        .replace("for epoch in range(args.epochs):", "for step in range(args.num_steps):")
    md = extract_metadata("python run.py --epochs 5 --num_steps 500000", {"run.py": trains})
    assert _read(md, "iteration_unit") == "steps"  # the loop's own steps are the run's
