"""Small training repositories in the styles people write, rendered from a JobSpec.

Styles: argparse script, Hydra configs, JSON config, Hugging Face (HfArgumentParser / TrainingArguments),
Lightning Trainer, torchrun / deepspeed / srun launcher scripts, Megatron-style shell scripts and
mmengine Python configs. Each repository carries decoys: other model names in comments and help
texts, an unused builder, an eval config naming another model and dataset, a README.
Returns (files: {path: text}, command: str).
"""
from __future__ import annotations

import json
import random

from features.jobcorpus.spec import JobSpec, stable_seed

_TASK_WORDS = {
    "image-classification": "image classification", "text-classification": "sequence classification",
    "question-answering": "extractive question answering", "language-modeling": "causal language modelling",
    "summarization": "summarization", "translation": "machine translation",
    "image-generation": "image generation", "recommendation": "recommendation",
    "reinforcement-learning": "reinforcement learning", "point-cloud-classification": "point cloud classification",
    "speech-recognition": "speech recognition", "object-detection": "object detection",
    "semantic-segmentation": "semantic segmentation",
}

_MODEL_CODE = {
    "tv": "torchvision.models.get_model({name}, weights=None, num_classes={ncls})",
    "timm": "timm.create_model({name}, pretrained=False, num_classes={ncls})",
    "hf": "AutoModel.from_pretrained({name})",
    "plain": "build_network({name})",
}
_NUM_CLASSES = {"imagenet": 1000, "cifar10": 10, "cifar100": 100, "modelnet40": 40}


def _gpn(spec: JobSpec) -> int:
    return spec.truth.gpus // spec.truth.nodes


def launch_prefix(spec: JobSpec, script: str, rng: random.Random) -> str:
    """The launcher part of a command that runs `script` on the job's GPUs and nodes."""
    t = spec.truth
    gpn, nodes = _gpn(spec), t.nodes
    kind = spec.launcher
    if kind == "python" or (t.gpus == 1 and kind not in ("cuda_visible", "srun")):
        return f"python {script}"
    if kind == "cuda_visible":
        devs = ",".join(str(i) for i in range(gpn)) if gpn > 1 else str(rng.randrange(8))
        if gpn == 1:
            return f"CUDA_VISIBLE_DEVICES={devs} python {script}"
        return f"CUDA_VISIBLE_DEVICES={devs} torchrun --standalone --nproc_per_node={gpn} {script}"
    if kind == "dist_launch":
        return f"python -m torch.distributed.launch --nproc_per_node {gpn} --use_env {script}"
    if kind == "deepspeed":
        nn = f" --num_nodes {nodes} --hostfile /etc/mpi/hostfile" if nodes > 1 else ""
        return f"deepspeed --num_gpus {gpn}{nn} {script}"
    if kind == "accelerate":
        mm = f" --num_machines {nodes} --machine_rank $NODE_RANK --main_process_ip $MASTER_ADDR" if nodes > 1 else ""
        return f"accelerate launch --multi_gpu --num_processes {t.gpus}{mm} {script}"
    if kind == "srun":
        return (f"srun --nodes={nodes} --ntasks-per-node={gpn} --gpus-per-node={gpn} --cpus-per-task=8 "
                f"python {script}")
    # torchrun
    if nodes > 1:
        return (f"torchrun --nnodes={nodes} --nproc_per_node={gpn} --rdzv_backend=c10d "
                f"--rdzv_endpoint=$MASTER_ADDR:29500 {script}")
    sep = "=" if rng.random() < 0.5 else " "
    return f"torchrun --nproc_per_node{sep}{gpn} {script}"


def _readme(spec: JobSpec, title: str) -> str:
    d = spec.decoys
    return (f"# {title}\n\nTraining code for our {_TASK_WORDS[spec.truth.task]} experiments.\n\n"
            f"Supported backbones: {', '.join((spec.model_surface,) + d)}.\n"
            f"We also report results of {d[0] if d else 'a baseline'} from the paper (not trained here).\n\n"
            "## Usage\nSee `scripts/` for the commands we use on the cluster.\n")


def _iter_flag(spec: JobSpec, rng: random.Random) -> str:
    if spec.truth.iteration_unit == "epochs":
        return rng.choice(["--epochs", "--num-epochs", "--max-epochs"])
    return rng.choice(["--max-steps", "--total-steps", "--train-iters", "--iters"])


def render_argparse(spec: JobSpec, rng: random.Random) -> tuple[dict[str, str], str]:
    t = spec.truth
    itf = _iter_flag(spec, rng)
    model_flag = rng.choice(["--arch", "--model", "--network"])
    data_flag = rng.choice(["--dataset", "--data"])
    bs_flag = rng.choice(["--batch-size", "--batch_size", "-b"])
    other_iter = t.iterations * 2 if t.iterations < 1000 else t.iterations // 2
    other_bs = t.batch_size * 2
    cli = spec.on_cli
    default_model = spec.decoys[0] if ("model" in cli and spec.decoys) else spec.model_surface
    default_data = spec.decoy_dataset if "dataset" in cli else spec.dataset_surface
    default_iter = other_iter if "iterations" in cli else t.iterations
    default_bs = other_bs if "batch_size" in cli else t.batch_size
    itf_dest = itf.lstrip("-").replace("-", "_")
    imp = {"tv": "import torchvision", "timm": "import timm", "hf": "from transformers import AutoModel",
           "plain": "from models import build_network"}[spec.source]
    ncls = _NUM_CLASSES.get(t.dataset, 10)
    model_expr = _MODEL_CODE[spec.source].format(name="args." + model_flag.lstrip("-"), ncls=ncls)
    decoy_fn = ""
    if spec.decoys and spec.variant % 2 == 0:
        decoy_fn = (f"\n\ndef build_teacher():\n    # distillation teacher, only used with --distill (off by default)\n"
                    f"    return {_MODEL_CODE[spec.source].format(name=repr(spec.decoys[-1]), ncls=ncls)}\n")
    loop = ("    for epoch in range(args.{d}):\n        train_one_epoch(model, loader, optimizer, epoch, args)\n"
            "        evaluate(model, args)\n" if t.iteration_unit == "epochs" else
            "    step = 0\n    while step < args.{d}:\n        for batch in loader:\n"
            "            loss = train_step(model, batch, optimizer)\n            step += 1\n"
            "            if step >= args.{d}:\n                break\n").format(d=itf_dest)
    train = f'''"""Train a {_TASK_WORDS[t.task]} model. Example: {spec.decoys[-1] if spec.decoys else "resnet18"} on {spec.decoy_dataset}."""
import argparse
import os

import torch
import torch.distributed as dist
{imp}

from data import make_loader
from engine import evaluate, train_one_epoch, train_step


def get_args():
    parser = argparse.ArgumentParser(description="{_TASK_WORDS[t.task]} training")
    parser.add_argument("{model_flag}", type=str, default={default_model!r},
                        help="model name, e.g. {", ".join(spec.decoys) or "resnet18"}")
    parser.add_argument("{data_flag}", type=str, default={default_data!r})
    parser.add_argument("{itf}", type=int, default={default_iter})
    parser.add_argument("{bs_flag}", type=int, default={default_bs}, help="batch size per GPU")
    parser.add_argument("--lr", type=float, default={spec.lr})
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--seed", type=int, default={spec.seed})
    parser.add_argument("--distill", action="store_true")
    parser.add_argument("--output-dir", default="./output")
    return parser.parse_args()
{decoy_fn}

def main():
    args = get_args()
    if "LOCAL_RANK" in os.environ:
        dist.init_process_group("nccl")
        torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    model = {model_expr}.cuda()
    # TODO: try {spec.decoys[0] if spec.decoys else "vit"} once the new nodes arrive
    loader = make_loader(args.{data_flag.lstrip("-")}, args.{bs_flag.lstrip("-").replace("-", "_") if bs_flag != "-b" else "batch_size"}, args.workers)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
{loop}

if __name__ == "__main__":
    main()
'''
    if bs_flag == "-b":
        train = train.replace(f'parser.add_argument("-b", type=int', 'parser.add_argument("-b", "--batch-size", type=int')
    files = {
        "train.py": train,
        "data.py": f"import torch\n\nDATASETS = {{'cifar10': 50000, '{spec.decoy_dataset}': 0}}\n\n\n"
                   "def make_loader(name, batch_size, workers):\n    raise NotImplementedError(name)\n",
        "engine.py": "def train_one_epoch(model, loader, optimizer, epoch, args):\n    pass\n\n\n"
                     "def train_step(model, batch, optimizer):\n    return 0.0\n\n\n"
                     "def evaluate(model, args):\n    pass\n",
        "README.md": _readme(spec, f"{t.task} baselines"),
    }
    args = []
    if "model" in cli:
        args.append(f"{model_flag} {spec.model_surface}")
    if "dataset" in cli:
        args.append(f"{data_flag} {spec.dataset_surface}")
    if "iterations" in cli:
        args.append(f"{itf} {t.iterations}" if rng.random() < 0.7 else f"{itf}={t.iterations}")
    if "batch_size" in cli:
        args.append(f"{bs_flag} {t.batch_size}")
    args.append(f"--lr {spec.lr}")
    rng.shuffle(args)
    cmd = launch_prefix(spec, "train.py", rng) + " " + " ".join(args)
    if spec.variant == 3 or t.nodes > 1:
        files["scripts/train.sh"] = (f"#!/bin/bash\nset -euo pipefail\n# {spec.decoys[0] if spec.decoys else ''} run: see scripts/old.sh\n"
                                     f"export OMP_NUM_THREADS=8\n{cmd} \"$@\"\n")
        return files, "bash scripts/train.sh"
    return files, cmd


def _yaml_scalar(v) -> str:
    return json.dumps(v) if isinstance(v, str) and (" " in v or ":" in v) else str(v)


def render_hydra(spec: JobSpec, rng: random.Random) -> tuple[dict[str, str], str]:
    t = spec.truth
    cli = spec.on_cli
    mkey = spec.model_surface.replace("/", "_").replace(" ", "_").lower()
    dkey = spec.dataset_surface.strip("/").split("/")[-1].lower()
    decoy_keys = [d.replace("/", "_").replace(" ", "_").lower() for d in spec.decoys]
    default_model = decoy_keys[0] if ("model" in cli and decoy_keys) else mkey
    ddkey = spec.decoy_dataset
    default_data = ddkey if "dataset" in cli else dkey
    itkey = "max_epochs" if t.iteration_unit == "epochs" else "max_steps"
    other_iter = t.iterations * 2 if t.iterations < 1000 else t.iterations // 2
    files: dict[str, str] = {}
    files["conf/config.yaml"] = (f"defaults:\n  - model: {default_model}\n  - dataset: {default_data}\n"
                                 f"  - trainer: default\n  - optional experiment: null\n  - _self_\n\n"
                                 f"seed: {spec.seed}\noptim:\n  lr: {spec.lr}\n  weight_decay: 0.05\n"
                                 f"output_dir: ${{hydra:runtime.output_dir}}\n")
    for key, surface in [(mkey, spec.model_surface)] + list(zip(decoy_keys, spec.decoys)):
        files[f"conf/model/{key}.yaml"] = f"name: {_yaml_scalar(surface)}\npretrained: false\ndrop_path: 0.1\n"
    bs_default = t.batch_size * 2 if "batch_size" in cli else t.batch_size
    files[f"conf/dataset/{dkey}.yaml"] = (f"name: {_yaml_scalar(spec.dataset_surface)}\nroot: /datasets/{dkey}\n"
                                          f"batch_size: {bs_default}\nnum_workers: 8\n")
    files[f"conf/dataset/{ddkey}.yaml"] = f"name: {ddkey}\nroot: /datasets/{ddkey}\nbatch_size: 512\nnum_workers: 4\n"
    gpn = t.gpus // t.nodes
    files["conf/trainer/default.yaml"] = (f"{itkey}: {other_iter if 'iterations' in cli else t.iterations}\n"
                                          + (f"devices: {gpn}\nnum_nodes: {t.nodes}\n" if spec.launcher == "python" else "")
                                          + f"precision: bf16\nlog_every_n_steps: {spec.log_every}\n")
    files["conf/experiment/ablation.yaml"] = (f"# @package _global_\ndefaults:\n  - override /model: "
                                              f"{decoy_keys[-1] if decoy_keys else mkey}\ntrainer:\n  {itkey}: 10\n")
    files["train.py"] = f'''import logging

import hydra
from omegaconf import DictConfig

from src.models import build_model
from src.loop import fit

log = logging.getLogger(__name__)


@hydra.main(version_base="1.3", config_path="conf", config_name="config")
def main(cfg: DictConfig) -> None:
    log.info("building %s", cfg.model.name)
    model = build_model(cfg.model.name, drop_path=cfg.model.drop_path)
    fit(model, cfg)


if __name__ == "__main__":
    main()
'''
    files["src/models.py"] = (f"# registry: {', '.join(spec.decoys)}\n\n\ndef build_model(name, drop_path=0.0):\n"
                              "    raise NotImplementedError(name)\n")
    files["src/loop.py"] = "def fit(model, cfg):\n    pass\n"
    files["README.md"] = _readme(spec, "hydra experiments")
    overrides = []
    if "model" in cli:
        overrides.append(f"model={mkey}")
    if "dataset" in cli:
        overrides.append(f"dataset={dkey}")
    if "iterations" in cli:
        overrides.append(f"trainer.{itkey}={t.iterations}")
    if "batch_size" in cli:
        overrides.append(f"dataset.batch_size={t.batch_size}")
    overrides.append(f"optim.lr={spec.lr}")
    rng.shuffle(overrides)
    return files, launch_prefix(spec, "train.py", rng) + " " + " ".join(overrides)


def render_json(spec: JobSpec, rng: random.Random) -> tuple[dict[str, str], str]:
    t = spec.truth
    itkey = "epochs" if t.iteration_unit == "epochs" else rng.choice(["max_steps", "total_steps"])
    cfg = {
        "experiment": f"{t.task}-{spec.variant}",
        "model": {"name": spec.model_surface, "dropout": 0.1},
        "data": {"dataset": spec.dataset_surface, "root": f"/datasets/{t.dataset}", "batch_size": t.batch_size,
                 "num_workers": 8},
        "optimizer": {"type": "AdamW", "lr": spec.lr, "weight_decay": 0.05},
        "train": {itkey: t.iterations, "log_interval": spec.log_every, "amp": True},
    }
    if spec.variant % 2:
        cfg["train"]["batch_size"] = cfg["data"].pop("batch_size")
    ev = {"model": {"name": spec.decoys[0] if spec.decoys else "baseline"},
          "data": {"dataset": spec.decoy_dataset, "batch_size": 1024}, "checkpoint": "best.pth"}
    name = f"configs/{spec.model_surface.split('/')[-1].lower().replace(' ', '_')}_{t.dataset}.json"
    files = {
        name: json.dumps(cfg, indent=2) + "\n",
        "configs/eval.json": json.dumps(ev, indent=2) + "\n",
        "train.py": f'''import argparse
import json

from lib.trainer import Trainer


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("-c", "--config", default="configs/eval.json")
    p.add_argument("--resume", default=None)
    return p.parse_args()


def main():
    args = parse()
    with open(args.config) as f:
        cfg = json.load(f)
    Trainer(cfg).fit()


if __name__ == "__main__":
    main()
''',
        "lib/trainer.py": "class Trainer:\n    def __init__(self, cfg):\n        self.cfg = cfg\n\n"
                          "    def fit(self):\n        pass\n",
        "README.md": _readme(spec, "config-driven trainer"),
    }
    flag = rng.choice(["-c", "--config"])
    return files, launch_prefix(spec, "train.py", rng) + f" {flag} {name}"


_HF_SCRIPT = {
    "text-classification": "run_glue.py", "question-answering": "run_qa.py", "language-modeling": "run_clm.py",
    "summarization": "run_summarization.py", "image-classification": "run_image_classification.py",
    "image-generation": "train_text_to_image.py", "speech-recognition": "run_speech_recognition_ctc.py",
}
_HF_AUTO = {
    "text-classification": "AutoModelForSequenceClassification", "question-answering": "AutoModelForQuestionAnswering",
    "language-modeling": "AutoModelForCausalLM", "summarization": "AutoModelForSeq2SeqLM",
    "image-classification": "AutoModelForImageClassification", "image-generation": "UNet2DConditionModel",
    "speech-recognition": "AutoModelForCTC",
}


def render_hf(spec: JobSpec, rng: random.Random) -> tuple[dict[str, str], str]:
    t = spec.truth
    script = _HF_SCRIPT.get(t.task, "run_train.py")
    auto = _HF_AUTO.get(t.task, "AutoModel")
    ds = spec.dataset_surface
    ds_args = (f"--dataset_name glue --task_name {ds.split('/')[-1].lower()}" if t.dataset.startswith("glue")
               else f"--dataset_name {ds}")
    it = (f"--num_train_epochs {t.iterations}" if t.iteration_unit == "epochs" else f"--max_steps {t.iterations}")
    if spec.variant in (0, 1):  # HfArgumentParser, everything on the command line
        files = {script: f'''"""Fine-tuning the library models for {_TASK_WORDS[t.task]} (adapted from transformers/examples)."""
import logging
import sys
from dataclasses import dataclass, field
from typing import Optional

import datasets
import transformers
from transformers import {auto}, AutoTokenizer, HfArgumentParser, Trainer, TrainingArguments

logger = logging.getLogger(__name__)


@dataclass
class ModelArguments:
    model_name_or_path: str = field(metadata={{"help": "e.g. {spec.decoys[0] if spec.decoys else 'bert-base-uncased'}"}})
    cache_dir: Optional[str] = field(default=None)


@dataclass
class DataTrainingArguments:
    dataset_name: Optional[str] = field(default=None)
    task_name: Optional[str] = field(default=None)
    max_seq_length: int = field(default=512)


def main():
    parser = HfArgumentParser((ModelArguments, DataTrainingArguments, TrainingArguments))
    if len(sys.argv) == 2 and sys.argv[1].endswith(".json"):
        model_args, data_args, training_args = parser.parse_json_file(json_file=sys.argv[1])
    else:
        model_args, data_args, training_args = parser.parse_args_into_dataclasses()
    raw = datasets.load_dataset(data_args.dataset_name, data_args.task_name)
    model = {auto}.from_pretrained(model_args.model_name_or_path)
    trainer = Trainer(model=model, args=training_args, train_dataset=raw["train"])
    trainer.train()


if __name__ == "__main__":
    main()
''', "README.md": _readme(spec, "fine-tuning scripts"), "requirements.txt": "transformers>=4.40\ndatasets\naccelerate\n"}
        argv = (f"--model_name_or_path {spec.model_surface} {ds_args} --do_train --do_eval "
                f"--per_device_train_batch_size {t.batch_size} --learning_rate {spec.lr} {it} "
                f"--output_dir /checkpoints/{t.model}-{spec.variant} --bf16 --logging_steps {spec.log_every}")
        if spec.launcher == "deepspeed":
            files["ds_config.json"] = json.dumps({"train_micro_batch_size_per_gpu": "auto", "zero_optimization": {"stage": 2},
                                                  "bf16": {"enabled": "auto"}}, indent=2)
            argv += " --deepspeed ds_config.json"
        if spec.variant == 1:
            payload = {"model_name_or_path": spec.model_surface, "dataset_name": ds if not t.dataset.startswith("glue") else "glue",
                       "per_device_train_batch_size": t.batch_size, "learning_rate": spec.lr, "do_train": True,
                       "output_dir": f"/checkpoints/{t.model}", "logging_steps": spec.log_every}
            if t.dataset.startswith("glue"):
                payload["task_name"] = ds.split("/")[-1].lower()
            payload["num_train_epochs" if t.iteration_unit == "epochs" else "max_steps"] = t.iterations
            files["args/train.json"] = json.dumps(payload, indent=2) + "\n"
            return files, launch_prefix(spec, script, rng) + " args/train.json"
        return files, launch_prefix(spec, script, rng) + " " + argv
    # TrainingArguments written in the script
    it_kw = (f"num_train_epochs={t.iterations}" if t.iteration_unit == "epochs" else f"max_steps={t.iterations}")
    dsload = (f'load_dataset("glue", "{ds.split("/")[-1].lower()}")' if t.dataset.startswith("glue")
              else f'load_dataset("{ds}")')
    files = {"train.py": f'''import os

from datasets import load_dataset
from transformers import {auto}, AutoTokenizer, Trainer, TrainingArguments

MODEL_NAME = "{spec.model_surface}"
# MODEL_NAME = "{spec.decoys[0] if spec.decoys else 'gpt2'}"  # too slow on our nodes


def main():
    tokenizer = AutoTokenizer.from_pretrained(MODEL_NAME)
    model = {auto}.from_pretrained(MODEL_NAME)
    data = {dsload}
    args = TrainingArguments(
        output_dir="out/{t.model}",
        per_device_train_batch_size={t.batch_size},
        per_device_eval_batch_size={t.batch_size * 2},
        learning_rate={spec.lr},
        {it_kw},
        logging_steps={spec.log_every},
        save_steps=1000,
        bf16=True,
        report_to="none",
    )
    Trainer(model=model, args=args, train_dataset=data["train"], tokenizer=tokenizer).train()


if __name__ == "__main__":
    main()
''', "README.md": _readme(spec, "quick fine-tune")}
    return files, launch_prefix(spec, "train.py", rng)


def render_lightning(spec: JobSpec, rng: random.Random) -> tuple[dict[str, str], str]:
    t = spec.truth
    gpn = t.gpus // t.nodes
    src = spec.source if spec.source in ("timm", "tv", "hf") else "timm"
    builder = {"timm": "timm.create_model(self.hparams.model_name, num_classes=self.hparams.num_classes)",
               "tv": "torchvision.models.get_model(self.hparams.model_name, num_classes=self.hparams.num_classes)",
               "hf": f"{_HF_AUTO.get(t.task, 'AutoModel')}.from_pretrained(self.hparams.model_name)"}[src]
    imp = {"timm": "import timm", "tv": "import torchvision",
           "hf": f"from transformers import {_HF_AUTO.get(t.task, 'AutoModel')}"}[src]
    it_kw = f"max_epochs={t.iterations}" if t.iteration_unit == "epochs" else f"max_steps={t.iterations}"
    cli = spec.on_cli
    model_default = spec.decoys[0] if ("model" in cli and spec.decoys) else spec.model_surface
    bs_default = t.batch_size * 2 if "batch_size" in cli else t.batch_size
    train = f'''import argparse

import lightning as L
import torch
{imp}

from datamodules import make_datamodule


class LitClassifier(L.LightningModule):
    def __init__(self, model_name: str, num_classes: int = {_NUM_CLASSES.get(t.dataset, 2)}, lr: float = {spec.lr}):
        super().__init__()
        self.save_hyperparameters()
        self.net = {builder}

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = torch.nn.functional.cross_entropy(self.net(x), y)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=self.hparams.lr)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default={model_default!r})
    parser.add_argument("--batch-size", type=int, default={bs_default})
    args = parser.parse_args()
    dm = make_datamodule({spec.dataset_surface!r}, batch_size=args.batch_size)
    model = LitClassifier(args.model)
    trainer = L.Trainer(
        accelerator="gpu",
        devices={gpn},
        num_nodes={t.nodes},
        strategy="ddp",
        {it_kw},
        precision="bf16-mixed",
        log_every_n_steps={spec.log_every},
    )
    trainer.fit(model, datamodule=dm)


if __name__ == "__main__":
    main()
'''
    files = {"train.py": train,
             "datamodules.py": f"# also supports {spec.decoy_dataset}\n\n\ndef make_datamodule(name, batch_size):\n"
                               "    raise NotImplementedError(name)\n",
             "README.md": _readme(spec, "lightning baselines")}
    args = []
    if "model" in cli:
        args.append(f"--model {spec.model_surface}")
    if "batch_size" in cli:
        args.append(f"--batch-size {t.batch_size}")
    prefix = launch_prefix(spec, "train.py", rng) if spec.launcher == "srun" else "python train.py"
    return files, (prefix + " " + " ".join(args)).strip()


def render_launcher(spec: JobSpec, rng: random.Random) -> tuple[dict[str, str], str]:
    t = spec.truth
    gpn = t.gpus // t.nodes
    entry = rng.choice(["pretrain.py", "finetune.py", "main.py"])
    it_flag = "--epochs" if t.iteration_unit == "epochs" else rng.choice(["--train-iters", "--max-steps"])
    files: dict[str, str] = {}
    ds_cfg = {"train_micro_batch_size_per_gpu": t.batch_size,
              "gradient_accumulation_steps": 1,
              "optimizer": {"type": "AdamW", "params": {"lr": spec.lr}},
              "zero_optimization": {"stage": rng.choice([1, 2, 3])}, "bf16": {"enabled": True},
              "steps_per_print": spec.log_every}
    files["configs/ds_config.json"] = json.dumps(ds_cfg, indent=2) + "\n"
    files["configs/ds_config_eval.json"] = json.dumps({"train_micro_batch_size_per_gpu": 64}, indent=2) + "\n"
    files[entry] = f'''import argparse

import deepspeed
import torch

from modeling import build


def get_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model-name", default="{spec.decoys[0] if spec.decoys else 'gpt2'}")
    parser.add_argument("--data-path", required=True)
    parser.add_argument("{it_flag}", type=int, default=1000)
    parser.add_argument("--local_rank", type=int, default=-1)
    parser = deepspeed.add_config_arguments(parser)
    return parser.parse_args()


def main():
    args = get_args()
    model = build(args.model_name)
    engine, _, _, _ = deepspeed.initialize(args=args, model=model, model_parameters=model.parameters())


if __name__ == "__main__":
    main()
'''
    files["modeling.py"] = f"# supported: {', '.join(spec.decoys)}\n\n\ndef build(name):\n    raise NotImplementedError(name)\n"
    nodes_line = f"NNODES=${{NNODES:-{t.nodes}}}"
    body_args = (f"--model-name $MODEL --data-path $DATA {it_flag} {t.iterations} "
                 f"--deepspeed --deepspeed_config configs/ds_config.json")
    if spec.launcher == "deepspeed":
        nn = " --num_nodes $NNODES --hostfile hostfile" if t.nodes > 1 else ""
        run = f"deepspeed --num_gpus $GPUS_PER_NODE{nn} {entry} \\\n    {body_args}"
    elif spec.launcher == "srun":
        run = (f"srun --nodes=$NNODES --ntasks-per-node=$GPUS_PER_NODE --gpus-per-node=$GPUS_PER_NODE \\\n"
               f"    python {entry} \\\n    {body_args}")
    else:
        run = (f"torchrun --nnodes $NNODES --nproc_per_node $GPUS_PER_NODE \\\n    --rdzv_endpoint $MASTER_ADDR:$MASTER_PORT "
               f"{entry} \\\n    {body_args}")
    sbatch = ""
    if spec.launcher == "srun":
        sbatch = (f"#SBATCH --job-name={t.model}\n#SBATCH --nodes={t.nodes}\n#SBATCH --gpus-per-node={gpn}\n"
                  f"#SBATCH --time=72:00:00\n")
    files["scripts/run.sh"] = f'''#!/bin/bash
{sbatch}# launcher for {t.task}; the old {spec.decoys[-1] if spec.decoys else 'baseline'} runs used scripts/legacy.sh
set -x
GPUS_PER_NODE={gpn}
{nodes_line}
MASTER_PORT=${{MASTER_PORT:-6000}}
MODEL={spec.model_surface}
DATA={"/datasets/" + t.dataset if rng.random() < 0.5 else spec.dataset_surface}
export NCCL_IB_DISABLE=0
export NCCL_DEBUG=INFO

{run} "$@"
'''
    files["scripts/legacy.sh"] = (f"#!/bin/bash\n# not used any more\npython {entry} --model-name {spec.decoys[-1] if spec.decoys else 'x'} "
                                  f"--data-path /datasets/{spec.decoy_dataset} {it_flag} 10\n")
    files["README.md"] = _readme(spec, "distributed launcher")
    cmd = rng.choice(["bash scripts/run.sh", "sh scripts/run.sh", "./scripts/run.sh"])
    if spec.launcher == "srun":
        cmd = "sbatch scripts/run.sh"
    return files, cmd


_MEGATRON_DIMS = {"gpt2": (12, 768, 12), "gpt2-medium": (24, 1024, 16), "llama-2-7b": (32, 4096, 32)}


def render_megatron(spec: JobSpec, rng: random.Random) -> tuple[dict[str, str], str]:
    t = spec.truth
    gpn = t.gpus // t.nodes
    layers, hidden, heads = _MEGATRON_DIMS.get(t.model, (24, 1024, 16))
    gbs = t.batch_size * t.gpus
    name_line = f"# {spec.model_surface} pre-training\n" if spec.variant % 2 else ""
    tok = ("--tokenizer-type Llama2Tokenizer --tokenizer-model /models/Llama-2-7b-hf/tokenizer.model"
           if t.model.startswith("llama") else "--vocab-file gpt2-vocab.json --merge-file gpt2-merges.txt")
    files = {f"examples/pretrain_{t.model.split('-')[0]}.sh": f'''#!/bin/bash
{name_line}# Runs the model on {t.nodes} node(s); 13B config is in examples/pretrain_13b.sh
export CUDA_DEVICE_MAX_CONNECTIONS=1
GPUS_PER_NODE={gpn}
NNODES={t.nodes}
NODE_RANK=${{NODE_RANK:-0}}
CHECKPOINT_PATH=/checkpoints/{t.model}
DATA_PATH=/data/{t.dataset}/{t.dataset}_text_document

DISTRIBUTED_ARGS="--nproc_per_node $GPUS_PER_NODE --nnodes $NNODES --node_rank $NODE_RANK --master_addr $MASTER_ADDR --master_port 6000"

GPT_ARGS="
    --num-layers {layers}
    --hidden-size {hidden}
    --num-attention-heads {heads}
    --seq-length 2048
    --max-position-embeddings 2048
    --micro-batch-size {t.batch_size}
    --global-batch-size {gbs}
    --lr {spec.lr}
    --train-iters {t.iterations}
    --lr-decay-style cosine
    --bf16
"

DATA_ARGS="
    --data-path $DATA_PATH
    {tok}
    --split 949,50,1
"

OUTPUT_ARGS="--log-interval {spec.log_every} --save-interval 5000 --eval-interval 1000 --eval-iters 10"

torchrun $DISTRIBUTED_ARGS pretrain_gpt.py $GPT_ARGS $DATA_ARGS $OUTPUT_ARGS --save $CHECKPOINT_PATH --load $CHECKPOINT_PATH
''', "examples/pretrain_13b.sh": "#!/bin/bash\n# GPT 13B\nGPT_ARGS=\"--num-layers 40 --hidden-size 5120 --micro-batch-size 1 --train-iters 10\"\n",
        "pretrain_gpt.py": "from megatron.training import pretrain\n\n\nif __name__ == '__main__':\n    pretrain()\n",
        "README.md": _readme(spec, "megatron pre-training")}
    return files, f"bash examples/pretrain_{t.model.split('-')[0]}.sh"


def render_mmengine(spec: JobSpec, rng: random.Random) -> tuple[dict[str, str], str]:
    t = spec.truth
    gpn = t.gpus // t.nodes
    if t.model.startswith("faster-rcnn"):
        sched = {12: "1x", 24: "2x", 36: "3x"}.get(t.iterations, f"{t.iterations}e")
        path = f"configs/faster_rcnn/faster-rcnn_r50_fpn_{sched}_coco.py"
        model = ("model = dict(\n    type='FasterRCNN',\n    backbone=dict(type='ResNet', depth=50, num_stages=4,\n"
                 "                  init_cfg=dict(type='Pretrained', checkpoint='torchvision://resnet50')),\n"
                 "    neck=dict(type='FPN', in_channels=[256, 512, 1024, 2048], out_channels=256),\n"
                 "    rpn_head=dict(type='RPNHead'), roi_head=dict(type='StandardRoIHead'))\n")
        loop = f"train_cfg = dict(type='EpochBasedTrainLoop', max_epochs={t.iterations}, val_interval=1)\n"
        ds = "dataset_type = 'CocoDataset'\ndata_root = 'data/coco/'\n"
        decoy = "configs/retinanet/retinanet_r101_fpn_1x_coco.py"
        decoy_text = "model = dict(type='RetinaNet', backbone=dict(type='ResNet', depth=101))\ntrain_cfg = dict(max_epochs=12)\n"
    else:
        k = t.iterations // 1000
        path = f"configs/segformer/segformer_mit-b2_8xb{t.batch_size}-{k}k_ade20k-512x512.py"
        model = ("model = dict(\n    type='EncoderDecoder',\n    backbone=dict(type='MixVisionTransformer', embed_dims=64,\n"
                 "                  num_layers=[3, 4, 6, 3]),\n    decode_head=dict(type='SegformerHead', num_classes=150))\n")
        loop = f"train_cfg = dict(type='IterBasedTrainLoop', max_iters={t.iterations}, val_interval=16000)\n"
        ds = "dataset_type = 'ADE20KDataset'\ndata_root = 'data/ade/ADEChallengeData2016'\n"
        decoy = "configs/deeplabv3/deeplabv3_r50-d8_4xb4-80k_ade20k-512x512.py"
        decoy_text = "model = dict(type='EncoderDecoder', backbone=dict(type='ResNetV1c', depth=50))\ntrain_cfg = dict(max_iters=80000)\n"
    cfg = (f"_base_ = ['../_base_/default_runtime.py']\n\n{model}\n{ds}\n"
           f"train_dataloader = dict(\n    batch_size={t.batch_size},\n    num_workers=2,\n"
           f"    dataset=dict(type=dataset_type, data_root=data_root))\n\n{loop}"
           f"optim_wrapper = dict(optimizer=dict(type='AdamW', lr={spec.lr}, weight_decay=0.01))\n"
           f"default_hooks = dict(logger=dict(type='LoggerHook', interval={spec.log_every}))\n")
    files = {path: cfg, decoy: decoy_text, "configs/_base_/default_runtime.py": "default_scope = 'mmdet'\nlog_level = 'INFO'\n",
             "tools/dist_train.sh": '''#!/usr/bin/env bash
CONFIG=$1
GPUS=$2
NNODES=${NNODES:-1}
NODE_RANK=${NODE_RANK:-0}
PORT=${PORT:-29500}
MASTER_ADDR=${MASTER_ADDR:-"127.0.0.1"}

PYTHONPATH="$(dirname $0)/..":$PYTHONPATH \\
torchrun --nnodes=$NNODES --node_rank=$NODE_RANK --master_addr=$MASTER_ADDR \\
    --nproc_per_node=$GPUS --master_port=$PORT \\
    $(dirname "$0")/train.py $CONFIG --launcher pytorch ${@:3}
''', "tools/train.py": "import argparse\n\nfrom mmengine.config import Config\nfrom mmengine.runner import Runner\n\n\n"
                       "def main():\n    parser = argparse.ArgumentParser()\n    parser.add_argument('config')\n"
                       "    parser.add_argument('--launcher', default='none')\n    args = parser.parse_args()\n"
                       "    Runner.from_cfg(Config.fromfile(args.config)).train()\n\n\nif __name__ == '__main__':\n    main()\n",
             "README.md": _readme(spec, "openmmlab experiments")}
    if gpn == 1:
        return files, f"python tools/train.py {path}"
    env = f"NNODES={t.nodes} " if t.nodes > 1 else ""
    return files, f"{env}bash tools/dist_train.sh {path} {gpn}"


RENDERERS = {"argparse": render_argparse, "hydra": render_hydra, "json": render_json, "hf": render_hf,
             "lightning": render_lightning, "launcher": render_launcher, "megatron": render_megatron,
             "mmengine": render_mmengine}


def render_repo(spec: JobSpec, group_key: str, seed: int) -> tuple[dict[str, str], str]:
    """The job's repository and command. The layout comes from the group (same rng for every job of
    the group), so recurring jobs share a template; values come from the job's spec."""
    rng = random.Random(stable_seed("repo", group_key, seed))
    return RENDERERS[spec.truth.style](spec, rng)
