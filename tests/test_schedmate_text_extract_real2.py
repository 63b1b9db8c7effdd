"""Extraction rules built for the misses of the fourth real-command batch (issue 25, item 1): commands
pasted as several lines, documentation placeholders, `torchrun -m`, accelerate's own flags, literal
config dicts, batch options documented as the total over all GPUs, absl flags, checkpoint folders named
by shape, dataset subsets and data-file names. The fixtures are our own few lines in the shape of what
public training repositories do; no repository text."""
from __future__ import annotations

from features.schedmate_text.extract import extract_metadata

IMAGE_TRAIN = '''import argparse
def defaults():
    return dict(data_dir="", lr=1e-4, batch_size=1, image_size=64)
def main():
    parser = argparse.ArgumentParser()
    for k, v in defaults().items():
        parser.add_argument(f"--{k}", default=v, type=type(v))
    parser.add_argument("--steps", type=int, default=0)
    args = parser.parse_args()
if __name__ == "__main__":
    main()
'''


def test_a_command_pasted_as_several_lines_runs_like_a_script():
    # FLAGS="--a 1 --b 2" on one line, then `python x.py $FLAGS`: the shell splits the value into words
    cmd = 'TRAIN_FLAGS="--lr 1e-4 --batch_size 96"\nSTEP_FLAGS="--steps 5000"\npython train.py $TRAIN_FLAGS $STEP_FLAGS'
    md = extract_metadata(cmd, {"train.py": IMAGE_TRAIN})
    assert (md.batch_size, md.iterations, md.iteration_unit) == (96, 5000, "steps")
    # `export` lines and a `cd` line before the launch
    cmd = "export CKPT=/models/cased_L-24_H-1024_A-16\ncd tools\npython train.py --init_checkpoint=$CKPT/model.ckpt"
    md = extract_metadata(cmd, {"tools/train.py": IMAGE_TRAIN})
    assert md.entry == "tools/train.py" and md.model == "bert-large"


SSL_MAIN = '''import argparse
parser = argparse.ArgumentParser()
parser.add_argument("data", metavar="DIR", help="path to dataset")
parser.add_argument("-a", "--arch", default="resnet18")
parser.add_argument("-b", "--batch-size", default=256, type=int,
                    help="this is the total batch size of all GPUs on the current node")
parser.add_argument("--epochs", default=100, type=int)
args = parser.parse_args()
'''


def test_placeholders_stay_one_argument_and_positionals_fill_their_argparse_dest():
    md = extract_metadata("python main.py -a resnet50 --epochs 20 [your imagenet-folder with train and val folders]",
                          {"main.py": SSL_MAIN})
    assert (md.model, md.dataset, md.iterations) == ("resnet50", "imagenet", 20)


def test_a_batch_documented_as_the_total_over_all_gpus_is_divided_by_them():
    md = extract_metadata("torchrun --nproc_per_node 4 main.py -b 512 /data/imagenet", {"main.py": SSL_MAIN})
    assert (md.gpus, md.batch_size, md.global_batch, md.batch_scope) == (4, 128, 512, "global")
    md = extract_metadata("python main.py -b 64 /data/imagenet", {"main.py": SSL_MAIN})
    assert (md.gpus, md.batch_size) == (1, 64)


NLP_EXAMPLE = '''import argparse
from datasets import load_dataset
from transformers import AutoModelForSequenceClassification
def training_function(config, args):
    datasets = load_dataset("some-org/glue", "rte")
    model = AutoModelForSequenceClassification.from_pretrained("bert-base-cased")
def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cpu", action="store_true")
    args = parser.parse_args()
    config = {"lr": 2e-5, "num_epochs": 4, "seed": 1, "batch_size": 24}
    training_function(config, args)
if __name__ == "__main__":
    main()
'''


def test_accelerate_cpu_flag_a_literal_config_dict_and_a_dataset_subset():
    md = extract_metadata("cd examples && accelerate launch --cpu ./nlp.py", {"examples/nlp.py": NLP_EXAMPLE})
    assert md.entry == "examples/nlp.py"
    assert (md.gpus, md.iterations, md.iteration_unit, md.batch_size) == (0, 4, "epochs", 24)
    assert (md.model, md.dataset, md.task) == ("bert-base", "glue-rte", "text-classification")


def test_torchrun_module_entry_under_the_current_folder():
    files = {"src/pkg_train/main.py": "from pkg_train.params import parse_args\nargs = parse_args()\n",
             "src/pkg_train/params.py": ARGS_MODULE}
    md = extract_metadata("cd src\ntorchrun --nproc_per_node 2 -m pkg_train.main --train-data '/d/cc12m/s-{0..9}.tar' "
                          "--epochs 7", files)
    assert md.entry == "src/pkg_train/main.py"
    assert (md.gpus, md.iterations, md.batch_size, md.dataset) == (2, 7, 48, "cc12m")


def test_a_data_file_names_the_dataset_without_its_extension():
    md = extract_metadata("python finetune.py --data_path ./data/my_mix_665k.json", {"finetune.py": ""})
    assert md.dataset == "my-mix-665k"


ARGS_MODULE = '''import argparse
def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--train-data", type=str, default=None)
    parser.add_argument("--epochs", type=int, default=32)
    parser.add_argument("--batch-size", type=int, default=48)
    return parser.parse_args()
'''

ABSL_SCRIPT = '''from absl import flags
flags.DEFINE_integer("train_batch_size", 32, "Total batch size for training.")
flags.DEFINE_integer("num_train_steps", 100000, "Number of training steps.")
flags.DEFINE_string("bert_config_file", None, "The config json file.")
FLAGS = flags.FLAGS
'''


def test_absl_flags_defaults_and_step_keys():
    md = extract_metadata("python run_pre.py --bert_config_file=/ckpt/uncased_L-12_H-768_A-12/bert_config.json",
                          {"run_pre.py": ABSL_SCRIPT})
    assert (md.iterations, md.iteration_unit, md.batch_size, md.model) == (100000, "steps", 32, "bert-base")


LIT_TRAIN = ('import hydra\n@hydra.main(version_base="1.3", config_path="../configs", config_name="train.yaml")\n'
             'def main(cfg):\n    pass\nif __name__ == "__main__":\n    main()\n')
LIT_FILES = {
    "src/train.py": LIT_TRAIN,
    "configs/train.yaml": "defaults:\n  - _self_\n  - data: digits\n  - model: small\n  - trainer: default\n"
                          "  - experiment: null\nseed: 1\n",
    "configs/data/digits.yaml": "_target_: src.data.digits_datamodule.MNISTDataModule\nbatch_size: 96\n",
    "configs/model/small.yaml": "_target_: src.models.lit.LitModule\nnet:\n  _target_: src.models.parts.TinyConvNet\n",
    "configs/trainer/default.yaml": "max_epochs: 5\naccelerator: cpu\ndevices: 1\n",
    "configs/trainer/gpu.yaml": "defaults:\n  - default\naccelerator: gpu\n",
    "configs/trainer/ddp.yaml": "defaults:\n  - default\naccelerator: gpu\nstrategy: ddp\ndevices: 2\n",
    "configs/experiment/long.yaml": "# @package _global_\ndefaults:\n  - override /trainer: gpu\n"
                                    "trainer:\n  max_epochs: 40\ndata:\n  batch_size: 32\n",
    "src/data/digits_datamodule.py": "class MNISTDataModule:\n    def setup(self):\n"
                                     "        self.per_device = self.hparams.batch_size // self.trainer.world_size\n",
}


def test_hydra_composition_relative_config_path_group_defaults_and_global_experiments():
    md = extract_metadata("python src/train.py trainer=gpu", LIT_FILES)
    # trainer/gpu.yaml's own defaults bring max_epochs; the network under the model config is the model
    assert (md.model, md.dataset, md.task) == ("tiny-conv-net", "mnist", "image-classification")
    assert (md.iterations, md.iteration_unit, md.batch_size, md.gpus, md.nodes) == (5, "epochs", 96, 1, 1)
    md = extract_metadata("python src/train.py trainer.max_epochs=9", LIT_FILES)
    assert (md.iterations, md.gpus) == (9, 0)  # the default trainer runs on the CPU
    md = extract_metadata("python src/train.py experiment=long", LIT_FILES)
    assert (md.iterations, md.batch_size, md.gpus) == (40, 32, 1)  # the experiment overrides the trainer group
    # the data module divides batch_size by the world size: 96 over 2 x 2 devices is 24 per device
    md = extract_metadata("python src/train.py trainer=ddp trainer.num_nodes=2", LIT_FILES)
    assert (md.gpus, md.nodes, md.batch_size, md.global_batch) == (4, 2, 24, 96)


def test_launcher_wrappers_read_nodes_from_the_environment():
    files = {"pkg/cli.py": "import argparse\n", "setup.py": "entry_points={'console_scripts': ['pkg-cli = pkg.cli:main']}"}
    md = extract_metadata("NNODES=3 NODE_RANK=0 pkg-cli train cfg.yaml", files)
    assert md.nodes == 3


def test_a_partial_config_sits_on_the_projects_default_config_and_a_config_folder_option():
    files = {"run/train.py": "import argparse\np = argparse.ArgumentParser()\np.add_argument('--config-file')\n"
                             "p.add_argument('--ngpus', '--gpus', default=4, type=int)\np.add_argument('--nodes', default=1, type=int)\n",
             "cfgs/ssl_default_config.yaml": "student:\n  arch: vit_small\ntrain:\n  batch_size_per_gpu: 64\n"
                                             "optim:\n  epochs: 100\n",
             "cfgs/train/big.yaml": "student:\n  arch: vit_large\ntrain:\n  batch_size_per_gpu: 32\n"}
    md = extract_metadata("python run/train.py --nodes 2 --config-file cfgs/train/big.yaml", files)
    assert (md.model, md.batch_size, md.iterations, md.iteration_unit) == ("vit-large", 32, 100, "epochs")
    assert (md.gpus, md.nodes) == (8, 2)
    files = {"launch.py": "import sys\n", "train.py": "", "cfgs/small.yml": "{\n  \"train_iters\": 1000,\n"
             "  \"train_micro_batch_size_per_gpu\": 8,\n}\n", "cfgs/data.yml": "{\"data_path\": \"data/enwik8/text\"}\n"}
    md = extract_metadata("python launch.py train.py -d cfgs small.yml data.yml", files)
    assert (md.iterations, md.batch_size, md.dataset, md.task) == (1000, 8, "enwik8", "language-modeling")


def test_unset_variables_keep_their_name_and_objective_signals():
    files = {"run_qa_tf.py": "import argparse\np = argparse.ArgumentParser()\np.add_argument('--train_file')\n"
                             "p.add_argument('--epochs', type=int, default=2)\n"}
    md = extract_metadata("python run_qa_tf.py --train_file=$SQUAD_DIR/train-v1.1.json", files)
    assert md.dataset == "squad"
    detector = ("import argparse\ndef get_args_parser():\n    p = argparse.ArgumentParser('Set detector', add_help=False)\n"
                "    p.add_argument('--backbone', default='resnet50')\n    p.add_argument('--dataset_file', default='coco')\n"
                "    return p\nif __name__ == '__main__':\n"
                "    parser = argparse.ArgumentParser('DETX training script', parents=[get_args_parser()])\n")
    md = extract_metadata("python main.py", {"main.py": detector})
    assert (md.model, md.task) == ("detx-resnet50", "object-detection")  # the backbone is a part of DETX
    md = extract_metadata("python main.py --dataset_file coco_panoptic", {"main.py": detector})
    assert md.task == "panoptic-segmentation"


# ---- batch 5 kinds: bash arrays, ml_collections configs, Composer, a subcommand CLI over function
# signatures, config model targets, mmengine algorithms around a backbone, functions handed to spawn


ARRAY_SCRIPT = '''#!/bin/bash
GPUS_PER_NODE=4
NUM_NODES=1
DATA=$1 # <path to the data prefix>
DIST=(
    --nproc_per_node $GPUS_PER_NODE
    --nnodes $NUM_NODES
)
MODEL_ARGS=(
    --num-layers 24
    --hidden-size 1024 # see the table (large)
)
TRAIN_ARGS=(
    --micro-batch-size 2
    --train-iters 3000
    --data-path $DATA
)
torchrun ${DIST[@]} pretrain_bert_like.py ${MODEL_ARGS[@]} ${TRAIN_ARGS[@]}
'''
MEGA_ARGS = ('import argparse\np = argparse.ArgumentParser()\n'
             'p.add_argument("--num-layers-per-virtual-pipeline-stage", type=int)\np.add_argument("--data-path")\n'
             'args = p.parse_args()\n')


def test_bash_arrays_and_comments_in_a_launch_script():
    files = {"run.sh": ARRAY_SCRIPT, "pretrain_bert_like.py": MEGA_ARGS}
    md = extract_metadata("bash run.sh /data/wikitext-103/text", files)
    assert (md.gpus, md.nodes, md.batch_size, md.iterations, md.iteration_unit) == (4, 1, 2, 3000, "steps")
    # --num-layers is its own option, not an abbreviation of --num-layers-per-...; 24 x 1024 in a BERT entry
    assert (md.model, md.task, md.dataset) == ("bert-large", "language-modeling", "wikitext-103")


MLC_CONFIG = '''import ml_collections as mlc
def get_config(mode=None):
  config = mlc.ConfigDict()
  config.total_epochs = 300
  config.input = dict()
  config.input.data = dict(name='imagenet2012', split='train')
  config.input.batch_size = 4096
  config.model_name = 'vit'
  config.model = dict(variant='B/16', pool_type='tok')
  if mode == 'gpu8':
    config.total_epochs = 30
    config.input.batch_size = 256
  return config
'''


def test_ml_collections_config_with_a_mode_argument():
    files = {"proj/train.py": "from absl import flags\n", "proj/configs/vit_i1k.py": MLC_CONFIG}
    md = extract_metadata("python3 -m proj.train --config proj/configs/vit_i1k.py --workdir /tmp/w", files)
    assert (md.model, md.dataset, md.task, md.iterations, md.iteration_unit) == (
        "vit-base", "imagenet", "image-classification", 300, "epochs")
    md = extract_metadata("python3 -m proj.train --config=$(pwd)/proj/configs/vit_i1k.py:gpu8 --workdir /tmp/w", files)
    assert md.iterations == 30
    # the words after ':' name a model and a dataset when the config builds the rest in code
    files["proj/configs/other.py"] = "def get_config(arg):\n  model, ds = arg.split(',')\n  return build(model, ds)\n"
    md = extract_metadata("python -m proj.train --config=proj/configs/other.py:s16,cifar100", files)
    assert (md.model, md.dataset) == ("vit-small", "cifar100")


COMPOSER_YAML = '''model:
  name: mpt_causal_lm
  d_model: 768
  n_layers: 12
train_loader:
  dataset:
    local: ./my-copy-c4
max_duration: 4800ba
global_train_batch_size: 256
device_train_microbatch_size: 16
'''


def test_composer_launcher_durations_and_micro_batches():
    files = {"scripts/train/train.py": "import sys\n", "scripts/train/yamls/mpt.yaml": COMPOSER_YAML}
    md = extract_metadata("cd scripts/train && composer --world_size 16 --node_rank 0 train.py yamls/mpt.yaml", files)
    assert (md.model, md.dataset, md.task) == ("mpt-125m", "c4", "language-modeling")
    assert (md.iterations, md.iteration_unit, md.batch_size, md.gpus) == (4800, "steps", 16, 16)
    md = extract_metadata("cd scripts\ncomposer train/train.py train/yamls/mpt.yaml max_duration=10ba", files)
    assert (md.iterations, md.entry) == (10, "scripts/train/train.py")


CLI_MAIN = '''from jsonargparse import CLI
from tool.finetune.lora import setup as finetune_fn
from tool.pretrain import setup as pretrain_fn
PARSER_DATA = {"finetune": finetune_fn, "pretrain": pretrain_fn}
def main():
    CLI(PARSER_DATA)
'''
CLI_LORA = '''from dataclasses import dataclass
def setup(checkpoint_dir, out_dir="out", devices=1, num_nodes=1,
          train=TrainArgs(global_batch_size=16, micro_batch_size=2, epochs=4)):
    pass
'''


def test_a_subcommand_cli_over_function_signatures():
    files = {"tool/__main__.py": CLI_MAIN, "tool/finetune/lora.py": CLI_LORA, "tool/pretrain.py": "def setup(model_name, out_dir=None):\n    pass\n",
             "pyproject.toml": '[project]\nscripts.tool = "tool.__main__:main"\n'}
    md = extract_metadata("tool finetune microsoft/phi-2 --data JSON --out_dir out/x", files)
    assert (md.model, md.task, md.iterations, md.iteration_unit, md.batch_size) == (
        "phi-2", "language-modeling", 4, "epochs", 2)
    md = extract_metadata("tool pretrain EleutherAI/pythia-410m", files)
    assert md.model == "pythia-410m"


def test_config_model_targets_mmengine_algorithms_and_spawned_workers():
    ldm = ("model:\n  target: gen.models.diffusion.LatentDiffusion\n  params:\n    unet_config:\n"
           "      target: gen.modules.UNetModel\ndata:\n  params:\n    batch_size: 24\n    train:\n"
           "      target: gen.data.faces.CelebAHQTrain\n")
    md = extract_metadata("CUDA_VISIBLE_DEVICES=0 python main.py --base configs/ldm.yaml -t",
                          {"main.py": "import argparse\np = argparse.ArgumentParser()\np.add_argument('--base', nargs='*')\n",
                           "configs/ldm.yaml": ldm})
    assert (md.model, md.task, md.dataset, md.batch_size) == ("latent-diffusion", "image-generation", "celeba-hq", 24)
    byol = ("model = dict(type='BYOL', backbone=dict(type='ResNet', depth=50))\ntrain_dataloader = dict(batch_size=32)\n"
            "train_cfg = dict(max_epochs=200)\n")
    md = extract_metadata("python tools/train.py configs/byol_resnet50_8xb32_in1k.py",
                          {"tools/train.py": "import argparse\np = argparse.ArgumentParser()\np.add_argument('config')\n",
                           "configs/byol_resnet50_8xb32_in1k.py": byol})
    assert md.model == "byol-r50"
    spawn = ("import argparse, torch, torchvision\np = argparse.ArgumentParser(description='Barlow Twins Training')\n"
             "p.add_argument('data')\np.add_argument('--epochs', type=int, default=10)\n"
             "def main():\n    args = p.parse_args()\n    torch.multiprocessing.spawn(main_worker, (args,), 2)\n"
             "def main_worker(gpu, args):\n    model = torchvision.models.resnet50()\n"
             "if __name__ == '__main__':\n    main()\n")
    md = extract_metadata("python main.py /data/imagenet/", {"main.py": spawn})
    assert (md.model, md.task) == ("resnet50", "self-supervised-pretraining")


def test_the_per_repository_cache_gives_what_a_fresh_read_gives():
    files = {"run.sh": ARRAY_SCRIPT, "pretrain_bert_like.py": MEGA_ARGS}
    first = extract_metadata("bash run.sh /data/wikitext-103/text", files)
    again = extract_metadata("bash run.sh /data/wikitext-103/text", files)  # cached indexes
    fresh = extract_metadata("bash run.sh /data/wikitext-103/text", dict(files))  # a new dict: read afresh
    assert first.to_dict() == again.to_dict() == fresh.to_dict()
    files["pretrain_bert_like.py"] = MEGA_ARGS.replace('"--data-path"', '"--data-path", default="x"')
    files["cfg/new.yaml"] = "a: 1\n"  # the caller changed its dict: the cache must not serve the old one
    assert extract_metadata("bash run.sh /data/wikitext-103/text", files).to_dict() == \
        extract_metadata("bash run.sh /data/wikitext-103/text", dict(files)).to_dict()


def test_a_file_changed_in_place_is_read_afresh():
    files = {"train.py": MEGA_ARGS.replace('"--data-path"', '"--data-path", default="/d/cifar10"')}
    for i in range(60):
        files[f"pad/f{i}.txt"] = "x"
    assert extract_metadata("python train.py", files).dataset == "cifar10"
    files["train.py"] = MEGA_ARGS.replace('"--data-path"', '"--data-path", default="/d/mnist"')  # same length
    assert extract_metadata("python train.py", files).dataset == "mnist"


# ---- batch 6 kinds: RL launchers (algorithm as the model, gym ids as the environment, timesteps),
# hyperparameter tables keyed by the job's arguments, recipes and configs named without their path


RL_RUN = "from rlpkg.common.cmd_util import common_arg_parser\nargs = common_arg_parser().parse_args()\n"
RL_ARGS = ('import argparse\ndef common_arg_parser():\n    p = argparse.ArgumentParser()\n'
           '    p.add_argument("--env", default="Reacher-v2")\n    p.add_argument("--alg", default="ppo2")\n'
           '    p.add_argument("--num_timesteps", type=float, default=1e6)\n    p.add_argument("--network")\n    return p\n')


def test_rl_launchers_the_algorithm_is_the_model_and_the_gym_id_the_environment():
    files = {"rlpkg/run.py": RL_RUN, "rlpkg/common/cmd_util.py": RL_ARGS}
    md = extract_metadata("python -m rlpkg.run --alg=deepq --env=BreakoutNoFrameskip-v4 --network=cnn --num_timesteps=5e6",
                          files)
    assert (md.model, md.dataset, md.task, md.iterations, md.iteration_unit) == (
        "dqn", "atari-breakout", "reinforcement-learning", 5_000_000, "steps")
    md = extract_metadata("python -m rlpkg.run --env=Hopper-v3", files)
    assert (md.model, md.dataset, md.iterations) == ("ppo", "mujoco-hopper", 1_000_000)


def test_a_hyperparameter_table_keyed_by_the_jobs_arguments():
    files = {"train.py": "import argparse\np = argparse.ArgumentParser()\np.add_argument('--algo')\np.add_argument('--env')\n",
             "hyperparams/td3.yml": "AntBulletEnv-v0:\n  n_timesteps: !!float 2e6\n  batch_size: 100\n"
                                    "Pendulum-v1:\n  n_timesteps: 20000\n  batch_size: 64\n"}
    md = extract_metadata("python train.py --algo td3 --env AntBulletEnv-v0", files)
    assert (md.model, md.dataset, md.iterations, md.batch_size) == ("td3", "pybullet-ant", 2_000_000, 100)


def test_a_recipe_and_its_config_named_without_their_paths():
    cfg = ("model:\n  _component_: tt.models.llama3_1.lora_llama3_1_8b\ncheckpointer:\n  model_type: LLAMA3\n"
           "dataset:\n  _component_: tt.datasets.alpaca_cleaned_dataset\nbatch_size: 4\nepochs: 2\ndevice: cuda\n"
           "profiler:\n  cpu: True\n")
    files = {"recipes/lora_finetune_single_device.py": "def recipe_main(cfg):\n    pass\n",
             "recipes/configs/llama3_1/8B_lora.yaml": cfg}
    md = extract_metadata("tune run lora_finetune_single_device --config llama3_1/8B_lora", files)
    assert md.entry == "recipes/lora_finetune_single_device.py"
    assert (md.model, md.dataset, md.task, md.iterations, md.batch_size, md.gpus) == (
        "llama3-1-8b", "alpaca", "language-modeling", 2, 4, 1)


# ---- batch 7 kinds: yacs top-level keys and totals documented in a comment, arch beside a model name,
# video datasets, sampler step counts that are not the training's length


def test_yacs_total_batch_top_level_keys_and_arch_beside_the_model_name():
    defaults = ("from fvcore.common.config import CfgNode\n_C = CfgNode()\n_C.TRAIN = CfgNode()\n"
                "# Total mini-batch size.\n_C.TRAIN.BATCH_SIZE = 64\n_C.NUM_GPUS = 1\n_C.SOLVER = CfgNode()\n"
                "_C.SOLVER.MAX_EPOCH = 300\n")
    files = {"tools/run.py": "from vid.config.defaults import get_cfg\nimport argparse\np = argparse.ArgumentParser()\n"
                             "p.add_argument('--cfg', dest='cfg_file')\np.add_argument('opts', nargs='*')\n",
             "vid/config/defaults.py": defaults,
             "configs/K/C2D.yaml": "TRAIN:\n  DATASET: kinetics\nSOLVER:\n  MAX_EPOCH: 100\nMODEL:\n  ARCH: c2d\n"
                                   "  MODEL_NAME: ResNet\nNUM_GPUS: 8\n"}
    md = extract_metadata("python tools/run.py --cfg configs/K/C2D.yaml NUM_GPUS 4 TRAIN.BATCH_SIZE 32", files)
    assert (md.model, md.dataset, md.task) == ("c2d", "kinetics", "video-classification")
    assert (md.iterations, md.iteration_unit, md.gpus, md.batch_size, md.global_batch) == (100, "epochs", 4, 8, 32)


def test_a_samplers_steps_are_not_the_training_length():
    cfg = ("model:\n  target: gen.models.diffusion.DiffusionEngine\n  params:\n    sampler_config:\n"
           "      params:\n        num_steps: 50\nlightning:\n  trainer:\n    max_epochs: 12\n")
    md = extract_metadata("python main.py --base configs/toy.yaml",
                          {"main.py": "import argparse\np = argparse.ArgumentParser()\np.add_argument('--base', nargs='*')\n",
                           "configs/toy.yaml": cfg})
    assert (md.iterations, md.iteration_unit, md.task) == (12, "epochs", "image-generation")
