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
