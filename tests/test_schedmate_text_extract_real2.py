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
