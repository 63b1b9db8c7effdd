"""Rules built for the misses of the ninth real-command batch (issue 25, item 1; batch 9 is `tuned` since):
the task read from the training objective in the code rather than from the dataset's name, the entry's
name for vision-language downstream tasks, device lists and Lightning / Slurm process counts, derived
module constants, epoch loops and DataLoader batches of parser-less scripts, RL run lengths and algorithm
names, `<family>_depth` options and network factories. Our own short fixtures, in the shape of public code."""
from __future__ import annotations

from features.schedmate_text.extract import extract_metadata

DIFFUSION = '''import argparse
from diffusion import create_diffusion
from torchvision.datasets import ImageFolder
def main(args):
    diffusion = create_diffusion(timestep_respacing="")
    x = vae.encode(x)
    loss = diffusion.training_losses(model, x, t)
if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--data-path", type=str, required=True)
    p.add_argument("--num-classes", type=int, default=1000)
    p.add_argument("--epochs", type=int, default=100)
    main(p.parse_args())
'''


def test_a_diffusion_objective_on_imagenet_is_generation_not_classification():
    md = extract_metadata("python train.py --data-path /data/imagenet/train", {"train.py": DIFFUSION})
    assert md.dataset == "imagenet" and md.task == "image-generation"


CONTRASTIVE = '''from absl import flags, app
flags.DEFINE_string("dataset", "imagenet2012", "data")
flags.DEFINE_enum("train_mode", "pretrain", ["pretrain", "finetune"], "mode")
flags.DEFINE_integer("num_classes", 10, "n")
def main(_):
    loss = add_contrastive_loss(hiddens, projection_head_out)
app.run(main)
'''


def test_contrastive_objective_is_pretraining_and_its_finetune_mode_is_classification():
    files = {"run.py": CONTRASTIVE}
    assert extract_metadata("python run.py --dataset=cifar10", files).task == "self-supervised-pretraining"
    assert extract_metadata("python run.py --dataset=cifar10 --train_mode=finetune", files).task == "image-classification"


def test_the_entry_name_says_captioning():
    code = 'import argparse\np = argparse.ArgumentParser()\np.add_argument("--config", default="c.yaml")\n'
    md = extract_metadata("python train_caption.py", {"train_caption.py": code, "c.yaml": "dataset: coco\n"})
    assert md.task == "image-captioning"


DEVICES = '''import argparse
p = argparse.ArgumentParser()
p.add_argument("--fname", type=str)
p.add_argument("--devices", type=str, nargs="+", default=["cuda:0"])
p.add_argument("--tasks-per-node", type=int, default=1)
p.add_argument("--nodes", type=int, default=1)
'''


def test_device_lists_and_tasks_per_node_count_gpus():
    files = {"main.py": DEVICES}
    md = extract_metadata("python main.py --fname a.yaml --devices cuda:0 cuda:1 cuda:2", files)
    assert md.gpus == 3
    md = extract_metadata("python main.py --fname a.yaml --nodes 2 --tasks-per-node 8", files)
    assert (md.gpus, md.nodes) == (16, 2)


TINY = '''model_name = "tiny_LLaMA_1b"
name = "tinyllama_1b"
global_batch_size = 512
micro_batch_size = 8
num_of_devices = 8
max_step = 1000 * 2
batch_size = global_batch_size // num_of_devices
max_iters = max_step * (batch_size // micro_batch_size)
def setup(devices: int = 8):
    pass
'''


def test_lightning_launcher_and_derived_constants():
    cmd = ("lightning run model --node-rank=0 --main-address=10.0.0.1 --accelerator=cuda --devices=8 "
           "--num-nodes=2 pretrain/tiny.py --devices 8")
    md = extract_metadata(cmd, {"pretrain/tiny.py": TINY})
    assert (md.gpus, md.nodes) == (16, 2)
    assert (md.iterations, md.iteration_unit, md.batch_size) == (2000, "steps", 8)
    assert md.model.startswith("tiny-llama-1b")


SBATCH = '''#!/bin/bash
#SBATCH --nodes=4
#SBATCH --gpus=32
#SBATCH --ntasks-per-node=8
DATASET_PATH="/data/imagenet/train"
srun --output=%j.out --label python -u main.py --data_path $DATASET_PATH --epochs 5
'''


def test_sbatch_total_gpus_and_a_flag_before_the_program():
    main = 'import argparse\np = argparse.ArgumentParser()\np.add_argument("--data_path")\np.add_argument("--epochs", type=int)\n'
    md = extract_metadata("sbatch ./scripts/run.sh", {"scripts/run.sh": SBATCH, "main.py": main})
    assert md.entry == "main.py" and (md.gpus, md.nodes, md.dataset, md.iterations) == (32, 4, "imagenet", 5)


CIFAR = '''import argparse
import torchvision
from models import *
parser = argparse.ArgumentParser()
parser.add_argument("--lr", default=0.1, type=float)
args = parser.parse_args()
trainset = torchvision.datasets.CIFAR10(root="./data", train=True)
trainloader = torch.utils.data.DataLoader(trainset, batch_size=96, shuffle=True)
testloader = torch.utils.data.DataLoader(testset, batch_size=100, shuffle=False)
net = TinyDLA()
def train(epoch):
    pass
for epoch in range(start_epoch, start_epoch + 150):
    train(epoch)
'''


def test_parserless_loop_loader_and_star_imported_class():
    md = extract_metadata("python main.py", {"main.py": CIFAR, "models/__init__.py": ""})
    assert (md.iterations, md.iteration_unit, md.batch_size) == (150, "epochs", 96)
    assert md.model == "tiny-dla"


RL = '''import tyro
from dataclasses import dataclass
@dataclass
class Args:
    env_id: str = "CartPole-v1"
    total_timesteps: int = 500000
    num_envs: int = 4
    num_steps: int = 128
class QNetwork(nn.Module):
    pass
if __name__ == "__main__":
    args = tyro.cli(Args)
    envs = gym.vector.SyncVectorEnv([])
    q_network = QNetwork(envs)
'''


def test_rl_run_length_algorithm_from_the_script_and_env_without_version():
    md = extract_metadata("python rl/c51.py --env-id CartPole-v1", {"rl/c51.py": RL})
    assert (md.iterations, md.iteration_unit) == (500000, "steps")
    assert (md.model, md.dataset, md.task) == ("c51", "cartpole", "reinforcement-learning")


def test_family_depth_option_and_a_factory_from_a_model_module():
    code = CONTRASTIVE.replace('flags.DEFINE_integer("num_classes"', 'flags.DEFINE_integer("resnet_depth", 50, "d")\nflags.DEFINE_integer("num_classes"')
    assert extract_metadata("python run.py --resnet_depth=18", {"run.py": code}).model == "resnet18"
    blip = '''import argparse
from models.blip import blip_decoder
p = argparse.ArgumentParser()
p.add_argument("--config", default="./configs/caption_coco.yaml")
args = p.parse_args()
model = blip_decoder(pretrained="x")
'''
    md = extract_metadata("python train.py", {"train.py": blip, "configs/caption_coco.yaml": "batch_size: 32\n"})
    assert md.model.startswith("blip")


# --- batch 10's misses (batch 10 is `tuned` since) ---------------------------------------------------

MPI = '''import argparse
def create_argparser():
    defaults = dict(data_dir="", global_batch_size=2048, total_training_steps=600000, lr=1e-4)
    p = argparse.ArgumentParser()
    for k, v in defaults.items():
        p.add_argument(f"--{k}", default=v, type=type(v))
    return p
def main():
    args = create_argparser().parse_args()
if __name__ == "__main__":
    main()
'''


def test_mpiexec_is_a_launcher_and_a_global_batch_is_divided():
    md = extract_metadata("cd scripts && mpiexec -n 8 python cm_train.py --total_training_steps 600000 "
                          "--global_batch_size 2048 --lr 1e-5",
                          {"scripts/cm_train.py": MPI})
    assert md.entry == "scripts/cm_train.py"
    assert (md.gpus, md.batch_size, md.iterations, md.iteration_unit) == (8, 256, 600000, "steps")


CLICK_TOTAL = '''import click
@click.command()
@click.option("--data", type=str, required=True)
@click.option("--batch", help="Total batch size", type=int, default=512)
def main(data, batch):
    pass
if __name__ == "__main__":
    main()
'''


def test_a_click_batch_documented_as_total_is_per_gpu_after_division():
    md = extract_metadata("torchrun --standalone --nproc_per_node=8 train.py --data=datasets/ffhq-64x64.zip",
                          {"train.py": CLICK_TOTAL})
    assert (md.batch_size, md.gpus, md.dataset, md.task) == (64, 8, "ffhq", "image-generation")


THIN_FIRE = '''import fire
from cookbook.finetuning import main
if __name__ == "__main__":
    fire.Fire(main)
'''
PKG_MAIN = '''from cookbook.configs import train_config
def main(**kwargs):
    update_config(train_config, **kwargs)
'''
PKG_INIT = "from .training import train_config\n"
PKG_TRAINING = '''from dataclasses import dataclass
@dataclass
class train_config:
    model_name: str = "PATH/to/Model"
    batch_size_training: int = 4
    num_epochs: int = 3
    dataset = "samsum_dataset"
'''


def test_fire_entry_into_an_installed_package_reads_its_config_dataclass():
    files = {"recipes/finetuning.py": THIN_FIRE, "src/cookbook/finetuning.py": PKG_MAIN,
             "src/cookbook/configs/__init__.py": PKG_INIT, "src/cookbook/configs/training.py": PKG_TRAINING}
    md = extract_metadata("torchrun --nnodes 1 --nproc_per_node 4 recipes/finetuning.py --use_peft", files)
    assert (md.iterations, md.iteration_unit, md.batch_size, md.dataset, md.gpus) == (3, "epochs", 4, "samsum", 4)
    # `python -m finetuning.py` as a doc writes it: the file
    md = extract_metadata("cd recipes && python -m finetuning.py --dataset alpaca_dataset", files)
    assert md.entry == "recipes/finetuning.py" and (md.dataset, md.iterations) == ("alpaca", 3)


JSONARG = '''from pathlib import Path
learning_rate = 3e-4
micro_batch_size = 4
def main(data_dir: str = "data/alpaca", out_dir: str = "out/lora"):
    pass
if __name__ == "__main__":
    from jsonargparse.cli import CLI
    CLI(main)
'''


def test_a_cli_imported_in_the_main_block_exposes_the_function_defaults():
    md = extract_metadata("python finetune/lora.py", {"finetune/lora.py": JSONARG})
    assert (md.dataset, md.batch_size) == ("alpaca", 4)


def test_a_versioned_model_name_is_not_read_as_a_gym_environment():
    """The gym-id rule (CartPole-v1 -> cartpole) took `model=mobilenet_v2` of a Hydra app for the dataset
    and overrode the dataset group's imagenet (synthetic held-out corpus: dataset 100 % -> 98 %)."""
    from features.schedmate_text.vocab import canonical_dataset

    assert canonical_dataset("CartPole-v1") == "cartpole" and canonical_dataset("pong-v5") == "pong"
    for model in ("mobilenet_v2", "efficientnet-v2", "resnet_v1", "shufflenet-v2"):
        assert canonical_dataset(model) is None, model


def test_dataset_names_in_the_code_are_not_an_objective():
    """A translation script whose argparse default (and a loader table) names glue-sst2, launched on wmt14:
    dataset names are not the training objective, so the task stays the model's (translation)."""
    from features.schedmate_text.vocab import task_from_objective

    code = ('parser.add_argument("--dataset", default="glue-sst2")\n'
            "DATASETS = {'cifar10': 50000, 'glue-sst2': 0}\n")
    assert task_from_objective([code]) is None
    assert task_from_objective([code + "model = AutoModelForSequenceClassification(num_labels=2)\n"]) == \
        ("text-classification", 2)
