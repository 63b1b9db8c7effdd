"""Hand-written job material modelled on public training code (pytorch/examples ImageNet, nanoGPT, timm,
fairseq, Hugging Face no-trainer scripts, mmdetection's slurm launcher, LightningCLI, torchtune,
DeepSpeed-Chat, CleanRL; then Swin's official repo, YOLOv5, detectron2), not produced by the generator:
a check of the extractor on layouts its rules were not derived from. The first measurement of the first
ten (before the rules were extended for them) found 61 of 80 fields, of the last three 12 of 24; see
benchmarks/results/schedmate/text.md. Truth uses the extractor's canonical
ids; a model or dataset the vocabulary does not know is its normalised name; None = not knowable from
the material (pytorch/examples spawns one process per visible GPU, a count the command does not say).
"""
from __future__ import annotations

HAND: list[tuple[str, str, dict[str, str], dict]] = []


def case(name: str, command: str, files: dict[str, str], **truth) -> None:
    HAND.append((name, command, files, truth))


case("pytorch-examples-imagenet",
     "python main.py -a resnet50 --dist-url 'tcp://127.0.0.1:23456' --dist-backend 'nccl' --multiprocessing-distributed --world-size 1 --rank 0 -b 256 /data/imagenet",
     {"main.py": '''import argparse
import torchvision.models as models
model_names = sorted(name for name in models.__dict__ if name.islower())
parser = argparse.ArgumentParser(description='PyTorch ImageNet Training')
parser.add_argument('data', metavar='DIR', nargs='?', default='imagenet', help='path to dataset (default: imagenet)')
parser.add_argument('-a', '--arch', metavar='ARCH', default='resnet18', choices=model_names, help='model architecture')
parser.add_argument('-j', '--workers', default=4, type=int)
parser.add_argument('--epochs', default=90, type=int, metavar='N', help='number of total epochs to run')
parser.add_argument('-b', '--batch-size', default=256, type=int, help='mini-batch size (default: 256), this is the total batch size of all GPUs')
parser.add_argument('--lr', '--learning-rate', default=0.1, type=float, dest='lr')
parser.add_argument('--world-size', default=-1, type=int)
parser.add_argument('--rank', default=-1, type=int)
parser.add_argument('--dist-url', default='tcp://224.66.41.62:23456', type=str)
parser.add_argument('--dist-backend', default='nccl', type=str)
parser.add_argument('--multiprocessing-distributed', action='store_true')

def main():
    args = parser.parse_args()
    model = models.__dict__[args.arch]()

if __name__ == '__main__':
    main()
'''}, model="resnet50", task="image-classification", dataset="imagenet", iterations=90, iteration_unit="epochs", batch_size=256, gpus=None, nodes=1)

case("nanogpt",
     "torchrun --standalone --nproc_per_node=8 train.py config/train_gpt2.py",
     {"train.py": '''import os
import torch
from model import GPTConfig, GPT
out_dir = 'out'
dataset = 'openwebtext'
gradient_accumulation_steps = 5 * 8
batch_size = 12
block_size = 1024
n_layer = 12
n_head = 12
n_embd = 768
max_iters = 600000
init_from = 'scratch'
config_keys = [k for k,v in globals().items() if not k.startswith('_') and isinstance(v, (int, float, bool, str))]
exec(open('configurator.py').read())
model = GPT(GPTConfig(n_layer=n_layer, n_head=n_head, n_embd=n_embd))
''', "config/train_gpt2.py": '''# config for training GPT-2 (124M) down to very nice loss of ~2.85 on 1 node of 8X A100 40GB
wandb_log = True
wandb_project = 'owt'
wandb_run_name='gpt2-124M'
batch_size = 12
block_size = 1024
gradient_accumulation_steps = 5 * 8
max_iters = 600000
lr_decay_iters = 600000
eval_interval = 1000
eval_iters = 200
log_interval = 10
weight_decay = 1e-1
''', "config/eval_gpt2_xl.py": "batch_size = 8\neval_iters = 500\ninit_from = 'gpt2-xl'\n", "model.py": "class GPT: pass\n"},
     model="gpt2", task="language-modeling", dataset="openwebtext", iterations=600000, iteration_unit="steps", batch_size=12, gpus=8, nodes=1)

case("timm-distributed",
     "./distributed_train.sh 4 --data-dir /data/imagenet --model seresnet34 --sched cosine --epochs 150 --warmup-epochs 5 --lr 0.4 --reprob 0.5 --remode pixel --batch-size 256 --amp -j 4",
     {"distributed_train.sh": '#!/bin/bash\nNUM_PROC=$1\nshift\ntorchrun --nproc_per_node=$NUM_PROC train.py "$@"\n',
      "train.py": '''import argparse
import timm
parser = argparse.ArgumentParser(description='PyTorch ImageNet Training')
group = parser.add_argument_group('Dataset parameters')
group.add_argument('--data-dir', metavar='DIR', help='path to dataset (root dir)')
group.add_argument('--dataset', metavar='NAME', default='', help='dataset type + name')
group = parser.add_argument_group('Model parameters')
group.add_argument('--model', default='resnet50', type=str, metavar='MODEL', help='Name of model to train (default: "resnet50")')
group.add_argument('-b', '--batch-size', type=int, default=128, metavar='N', help='Input batch size for training (default: 128)')
group.add_argument('--epochs', type=int, default=300, metavar='N', help='number of epochs to train (default: 300)')

def main():
    args = parser.parse_args()
    model = timm.create_model(args.model, pretrained=False)

if __name__ == '__main__':
    main()
'''}, model="seresnet34", task="image-classification", dataset="imagenet", iterations=150, iteration_unit="epochs", batch_size=256, gpus=4, nodes=1)

case("fairseq-transformer",
     "fairseq-train data-bin/wmt16_en_de_bpe32k --arch transformer_vaswani_wmt_en_de_big --share-all-embeddings --optimizer adam --lr 0.0005 --max-tokens 3584 --max-update 300000 --fp16",
     {"README.md": "# wmt16 en-de\n"},
     model="transformer-big", task="translation", dataset="wmt16-en-de", iterations=300000, iteration_unit="steps", batch_size=3584, gpus=1, nodes=1)  # tokens per GPU (--max-tokens)

case("hf-run-glue-accelerate",
     "accelerate launch --num_processes 4 run_glue_no_trainer.py --model_name_or_path roberta-large --task_name mnli --max_length 128 --per_device_train_batch_size 32 --learning_rate 2e-5 --num_train_epochs 3 --output_dir /tmp/mnli/",
     {"run_glue_no_trainer.py": '''import argparse
from transformers import AutoModelForSequenceClassification
def parse_args():
    parser = argparse.ArgumentParser(description="Finetune a transformers model on a text classification task")
    parser.add_argument("--task_name", type=str, default=None)
    parser.add_argument("--model_name_or_path", type=str, required=True)
    parser.add_argument("--per_device_train_batch_size", type=int, default=8)
    parser.add_argument("--num_train_epochs", type=int, default=3)
    parser.add_argument("--max_train_steps", type=int, default=None)
    return parser.parse_args()
def main():
    args = parse_args()
    model = AutoModelForSequenceClassification.from_pretrained(args.model_name_or_path)
if __name__ == "__main__":
    main()
'''}, model="roberta-large", task="text-classification", dataset="glue-mnli", iterations=3, iteration_unit="epochs", batch_size=32, gpus=4, nodes=1)

case("mmdet-slurm",
     "GPUS=16 ./tools/slurm_train.sh dev mask_rcnn configs/mask_rcnn/mask-rcnn_r50_fpn_1x_coco.py work_dirs/mask_rcnn",
     {"tools/slurm_train.sh": '''#!/usr/bin/env bash
set -x
PARTITION=$1
JOB_NAME=$2
CONFIG=$3
WORK_DIR=$4
GPUS=${GPUS:-8}
GPUS_PER_NODE=${GPUS_PER_NODE:-8}
CPUS_PER_TASK=${CPUS_PER_TASK:-5}
PY_ARGS=${@:5}
srun -p ${PARTITION} \\
    --job-name=${JOB_NAME} \\
    --gres=gpu:${GPUS_PER_NODE} \\
    --ntasks=${GPUS} \\
    --ntasks-per-node=${GPUS_PER_NODE} \\
    --cpus-per-task=${CPUS_PER_TASK} \\
    --kill-on-bad-exit=1 \\
    python -u tools/train.py ${CONFIG} --work-dir=${WORK_DIR} --launcher="slurm" ${PY_ARGS}
''', "tools/train.py": "import argparse\n", "configs/mask_rcnn/mask-rcnn_r50_fpn_1x_coco.py": "_base_ = ['../_base_/models/mask-rcnn_r50_fpn.py', '../_base_/datasets/coco_instance.py', '../_base_/schedules/schedule_1x.py']\n",
      "configs/_base_/models/mask-rcnn_r50_fpn.py": "model = dict(type='MaskRCNN', backbone=dict(type='ResNet', depth=50))\n",
      "configs/_base_/datasets/coco_instance.py": "dataset_type = 'CocoDataset'\ntrain_dataloader = dict(batch_size=2, dataset=dict(type=dataset_type))\n",
      "configs/_base_/schedules/schedule_1x.py": "train_cfg = dict(type='EpochBasedTrainLoop', max_epochs=12, val_interval=1)\n"},
     model="mask-rcnn-r50", task="object-detection", dataset="coco", iterations=12, iteration_unit="epochs", batch_size=2, gpus=16, nodes=2)

case("lightning-cli-yaml",
     "python main.py fit --config configs/vit.yaml --trainer.max_epochs 20",
     {"main.py": "from lightning.pytorch.cli import LightningCLI\nfrom model import LitViT\nfrom data import CIFARData\n\ndef cli_main():\n    LightningCLI(LitViT, CIFARData)\n\nif __name__ == '__main__':\n    cli_main()\n",
      "configs/vit.yaml": "trainer:\n  devices: 4\n  num_nodes: 1\n  max_epochs: 100\n  precision: 16-mixed\nmodel:\n  model_name: vit_base_patch16_224\n  lr: 0.001\ndata:\n  dataset: cifar100\n  batch_size: 128\n"},
     model="vit-base", task="image-classification", dataset="cifar100", iterations=20, iteration_unit="epochs", batch_size=128, gpus=4, nodes=1)

case("torchtune",
     "tune run --nnodes 1 --nproc_per_node 8 full_finetune_distributed --config llama2/7B_full batch_size=4 epochs=3",
     {"README.md": "torchtune recipes\n"},
     model="llama-2-7b", task="language-modeling", dataset=None, iterations=3, iteration_unit="epochs", batch_size=4, gpus=8, nodes=1)

case("deepspeed-chat-sft",
     "deepspeed --num_gpus 8 main.py --data_path Dahoas/rm-static --model_name_or_path facebook/opt-1.3b --per_device_train_batch_size 8 --num_train_epochs 16 --zero_stage 2 --deepspeed --output_dir ./output",
     {"main.py": "import argparse\nfrom transformers import AutoModelForCausalLM\n\ndef parse_args():\n    parser = argparse.ArgumentParser()\n    parser.add_argument('--data_path', nargs='*', default=['Dahoas/rm-static'])\n    parser.add_argument('--model_name_or_path', type=str, required=True)\n    parser.add_argument('--per_device_train_batch_size', type=int, default=16)\n    parser.add_argument('--num_train_epochs', type=int, default=1)\n    return parser.parse_args()\n\ndef main():\n    args = parse_args()\n    model = AutoModelForCausalLM.from_pretrained(args.model_name_or_path)\n\nif __name__ == '__main__':\n    main()\n"},
     model="opt-1-3b", task="language-modeling", dataset="rm-static", iterations=16, iteration_unit="epochs", batch_size=8, gpus=8, nodes=1)

case("cleanrl-ppo",
     "python cleanrl/ppo_atari.py --env-id BreakoutNoFrameskip-v4 --total-timesteps 10000000 --seed 1",
     {"cleanrl/ppo_atari.py": "import tyro\nfrom dataclasses import dataclass\n\n@dataclass\nclass Args:\n    env_id: str = 'BreakoutNoFrameskip-v4'\n    total_timesteps: int = 10000000\n    num_envs: int = 8\n    num_steps: int = 128\n\nif __name__ == '__main__':\n    args = tyro.cli(Args)\n"},
     model="ppo", task="reinforcement-learning", dataset="atari-breakout", iterations=10000000, iteration_unit="steps", batch_size=None, gpus=1, nodes=1)

# second batch, measured before the rules were extended for it: 12 of 24 fields
case("swin-official",
     "python -m torch.distributed.launch --nproc_per_node 8 --master_port 12345 main.py --cfg configs/swin/swin_base_patch4_window7_224.yaml --data-path /datasets/imagenet --batch-size 128",
     {"main.py": '''import argparse
from config import get_config
from models import build_model

def parse_option():
    parser = argparse.ArgumentParser('Swin Transformer training and evaluation script', add_help=False)
    parser.add_argument('--cfg', type=str, required=True, metavar="FILE", help='path to config file', )
    parser.add_argument("--opts", help="Modify config options by adding 'KEY VALUE' pairs. ", default=None, nargs='+')
    parser.add_argument('--batch-size', type=int, help="batch size for single GPU")
    parser.add_argument('--data-path', type=str, help='path to dataset')
    args, unparsed = parser.parse_known_args()
    config = get_config(args)
    return args, config

def main(config):
    model = build_model(config)

if __name__ == '__main__':
    args, config = parse_option()
    main(config)
''', "configs/swin/swin_base_patch4_window7_224.yaml": "MODEL:\n  TYPE: swin\n  NAME: swin_base_patch4_window7_224\n  DROP_PATH_RATE: 0.5\n  SWIN:\n    EMBED_DIM: 128\n    DEPTHS: [ 2, 2, 18, 2 ]\n",
      "config.py": "from yacs.config import CfgNode as CN\n_C = CN()\n_C.DATA = CN()\n_C.DATA.BATCH_SIZE = 128\n_C.DATA.DATASET = 'imagenet'\n_C.TRAIN = CN()\n_C.TRAIN.EPOCHS = 300\n_C.MODEL = CN()\n_C.MODEL.NAME = 'swin_tiny_patch4_window7_224'\n"},
     model="swin-base", task="image-classification", dataset="imagenet", iterations=300, iteration_unit="epochs", batch_size=128, gpus=8, nodes=1)

case("yolov5",
     "python -m torch.distributed.run --nproc_per_node 2 train.py --img 640 --batch 64 --epochs 300 --data coco.yaml --weights '' --cfg yolov5s.yaml",
     {"train.py": '''import argparse
def parse_opt(known=False):
    parser = argparse.ArgumentParser()
    parser.add_argument("--weights", type=str, default="yolov5s.pt", help="initial weights path")
    parser.add_argument("--cfg", type=str, default="", help="model.yaml path")
    parser.add_argument("--data", type=str, default="data/coco128.yaml", help="dataset.yaml path")
    parser.add_argument("--epochs", type=int, default=100, help="total training epochs")
    parser.add_argument("--batch-size", type=int, default=16, help="total batch size for all GPUs, -1 for autobatch")
    parser.add_argument("--imgsz", "--img", "--img-size", type=int, default=640, help="train, val image size (pixels)")
    return parser.parse_known_args()[0] if known else parser.parse_args()

if __name__ == "__main__":
    opt = parse_opt()
''', "data/coco.yaml": "path: ../datasets/coco\ntrain: train2017.txt\nval: val2017.txt\nnames:\n  0: person\n"},
     model="yolov5s", task="object-detection", dataset="coco", iterations=300, iteration_unit="epochs", batch_size=32, gpus=2, nodes=1)  # --batch is the total over both GPUs (its help says so): 32 per device

case("detectron2",
     "python tools/train_net.py --config-file configs/COCO-Detection/faster_rcnn_R_50_FPN_1x.yaml --num-gpus 8 SOLVER.IMS_PER_BATCH 16 SOLVER.BASE_LR 0.02",
     {"tools/train_net.py": "from detectron2.engine import default_argument_parser, launch\n\ndef main(args):\n    pass\n\nif __name__ == '__main__':\n    args = default_argument_parser().parse_args()\n    launch(main, args.num_gpus, num_machines=args.num_machines)\n",
      "configs/COCO-Detection/faster_rcnn_R_50_FPN_1x.yaml": "_BASE_: \"../Base-RCNN-FPN.yaml\"\nMODEL:\n  WEIGHTS: \"detectron2://ImageNetPretrained/MSRA/R-50.pkl\"\n  RESNETS:\n    DEPTH: 50\n",
      "configs/Base-RCNN-FPN.yaml": "MODEL:\n  META_ARCHITECTURE: \"GeneralizedRCNN\"\nDATASETS:\n  TRAIN: (\"coco_2017_train\",)\n  TEST: (\"coco_2017_val\",)\nSOLVER:\n  IMS_PER_BATCH: 16\n  BASE_LR: 0.02\n  STEPS: (60000, 80000)\n  MAX_ITER: 90000\n"},
     model="faster-rcnn-r50", task="object-detection", dataset="coco", iterations=90000, iteration_unit="steps", batch_size=2, gpus=8, nodes=1)


# ------------------------------------------------------------------------------------------------
# progress logs in formats modelled on public tools' output (nanoGPT, fairseq, detectron2, Keras,
# YOLOv5, torchtune, a Hugging Face bar with an NCCL error glued on): (name, lines, step, total steps,
# seconds per step, hints). The first measurement (before the tracker learnt these formats) read 3 of 7.
HAND_LOGS: list[tuple[str, list[str], int, int, float, dict]] = []


def add(name: str, lines: list[str], step: int, total: int, st: float, **hints) -> None:
    HAND_LOGS.append((name, lines, step, total, st, hints))


add("nanogpt", [f"iter {i}: loss {4.5 - i/2000:.4f}, time {130 + (i % 3):.2f}ms, mfu 31.20%" for i in range(0, 2010, 10)],
    2000, 600000, 0.131, iterations=600000, unit="steps")
add("fairseq", [f"2024-03-01 10:{i//60:02d}:{i%60:02d} | INFO | train_inner | epoch 003:    {i*100:>4d} / 1102 loss=5.123, nll_loss=3.9, ppl=14.9, wps=51234, ups=2.5, wpb=20480, bsz=640, num_updates={2204 + i*100}, lr=0.0005, gnorm=0.8, train_wall=40, gb_free=10.1, wall=1234" for i in range(1, 11)],
    3204, 300000, 0.4, iterations=300000, unit="steps")
add("detectron2", [f"[11/22 10:{i//60:02d}:{i%60:02d} d2.utils.events]:  eta: 5:12:34  iter: {i*20 - 1}  total_loss: 2.1  loss_cls: 0.3  time: 0.4012  last_time: 0.3998  data_time: 0.0210  last_data_time: 0.02  lr: 0.0004  max_mem: 3000M" for i in range(1, 30)],
    579, 90000, 0.4012, iterations=90000, unit="steps")
add("keras", ["Epoch 3/10"] + [f"{i}/1563 [==>...........................] - ETA: {(1563 - i) // 10 // 60}:{(1563 - i) // 10 % 60:02d} - loss: 1.2000 - accuracy: 0.6000" for i in range(100, 1100, 100)],
    2 * 1563 + 1000, 15630, 0.1)
add("yolov5", ["      Epoch    GPU_mem   box_loss   obj_loss   cls_loss  Instances       Size"] +
    [f"      5/299      3.62G    0.04610    0.06120    0.02110        211        640:  {p:>3d}%|██▍       | {n}/7393 [{n//4//60:02d}:{n//4%60:02d}<28:09,  4.03it/s]" for n, p in ((1000, 13), (1500, 20), (2000, 27))],
    5 * 7393 + 2000, 300 * 7393, 1 / 4.03)
add("torchtune", [f"1|{i}|Loss: 1.{i%9}23:   3%|▎         | {i}/1617 [01:{i%60:02d}<28:20,  1.05s/it]" for i in range(40, 53)],
    52, 1617, 1.05)
add("hf-llamafactory-glued", [f"  1%|          | {i}/1752 [00:{i*3:02d}<1:22:01,  2.8{i%9}s/it]" for i in range(10, 24)] +
    ["  1%|▏         | 24/1752 [01:08<1:22:56,  2.88s/it][rank5]:[E602 11:17:52.185053341 ProcessGroupNCCL.cpp:632] [Rank 5] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE) ran for 600010 milliseconds before timing out."],
    24, 1752, 2.84)


# ------------------------------------------------------------------------------------------------
# failed logs with root-cause lines worded as public issue reports word them (paraphrased): (name,
# lines, index of the root line, kind, component). Each sits after normal progress lines and before a
# short cascade.
HAND_FAILURES: list[tuple[str, list[str], int, str, str]] = []

_OK = [f"[2024-05-02 10:{i // 60:02d}:{i % 60:02d}] step {i * 10}/50000 loss {3 - i / 100:.3f} time/step=410ms" for i in range(60)]
_CASCADE = ["W0502 10:31:00.1 139 torch/distributed/elastic/multiprocessing/api.py:858] Sending process 4242 closing signal SIGTERM",
            "E0502 10:31:01.2 139 torch/distributed/elastic/multiprocessing/api.py:833] failed (exitcode: 1) local_rank: 0 (pid: 4241)",
            "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
            "Root Cause (first observed failure):", "  exitcode  : 1 (pid: 4241)"]


def fail(name: str, root: list[str], offset: int, kind: str, component: str) -> None:
    HAND_FAILURES.append((name, _OK + root + _CASCADE, len(_OK) + offset, kind, component))


fail("nccl-system-error", ["Traceback (most recent call last):", '  File "train.py", line 88, in <module>',
                           "    dist.barrier()",
                           "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1691, "
                           "unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.19.3"],
     3, "infrastructure", "NCCL")
fail("rendezvous-timeout", ["torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients. 1/2 clients joined."],
     0, "infrastructure", "node")
fail("disk-quota", ["Traceback (most recent call last):", '  File "train.py", line 120, in save',
                    "    torch.save(state, path)", "OSError: [Errno 122] Disk quota exceeded"], 3, "infrastructure", "storage")
fail("illegal-access", ["Traceback (most recent call last):", '  File "model.py", line 41, in forward',
                        "    out = self.attn(q, k, v)",
                        "RuntimeError: CUDA error: an illegal memory access was encountered"], 3, "framework", "model")
fail("nccl-cuda-oom", ["node-3:4242:4300 [0] include/alloc.h:103 NCCL WARN Cuda failure 'out of memory'"], 0, "framework", "memory")
fail("batch-mismatch", ["Traceback (most recent call last):", '  File "train.py", line 77, in step',
                        "    loss = criterion(out, target)",
                        "ValueError: Expected input batch_size (64) to match target batch_size (32)."], 3, "script", "data")
fail("gloo-peer-closed", ["RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed by peer [10.0.0.7]:36213"],
     0, "infrastructure", "network")
fail("host-oom-killer", ["[2024-05-02 10:30:59] kernel: Out of memory: Killed process 4241 (python) total-vm:98765432kB",
                         "Killed"], 0, "framework", "host memory")
fail("cuda-oom", ["Traceback (most recent call last):", '  File "train.py", line 61, in <module>', "    loss.backward()",
                  "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1024.00 MiB. GPU 0 has a total capacity of 79.10 GiB"],
     3, "framework", "memory")
fail("ecc", ["RuntimeError: CUDA error: uncorrectable ECC error encountered"], 0, "infrastructure", "GPU")
fail("dataloader-shm", ["ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).",
                        "RuntimeError: DataLoader worker (pid 5123) is killed by signal: Bus error."], 0, "framework", "dataloader")
fail("missing-module", ["Traceback (most recent call last):", '  File "train.py", line 3, in <module>', "    import flash_attn",
                        "ModuleNotFoundError: No module named 'flash_attn'"], 3, "script", "import")
