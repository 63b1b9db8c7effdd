"""SchedMate metadata extraction on the kinds of misses found on real training repositories (issue 25,
item 1). Each repository here is a few lines written in the shape of a public project's launch path
(our own code and names): command-line variables, `python -m` entries, console scripts, a submitit-style
wrapper, nanoGPT-style configurator overrides, fire / dataclass defaults, per-environment YAML with
anchors, Hydra's --config-name and fairseq-hydra-train, the batch model, node counts, device detection,
task from the objective and the model instead of its wrapper."""
from __future__ import annotations

from features.schedmate_text.extract import extract_metadata

ARGPARSE_TRAIN = '''import argparse
p = argparse.ArgumentParser()
p.add_argument("--arch", default="resnet18")
p.add_argument("--epochs", type=int, default=10)
p.add_argument("--batch-size", type=int, default=32)
p.add_argument("--device", default="cuda")
args = p.parse_args()
'''


def test_variables_set_on_the_command_line_are_expanded():
    md = extract_metadata("MODEL=resnet50 EPOCHS=90 python train.py --arch $MODEL --epochs ${EPOCHS}",
                          {"train.py": ARGPARSE_TRAIN})
    assert (md.model, md.iterations, md.iteration_unit) == ("resnet50", 90, "epochs")
    md = extract_metadata("export BS=64; python train.py --batch-size $BS", {"train.py": ARGPARSE_TRAIN})
    assert md.batch_size == 64


def test_module_entries_and_console_scripts_are_followed():
    files = {"src/trainer/run.py": ARGPARSE_TRAIN.replace('"resnet18"', '"vgg16"'),
             "src/trainer/__init__.py": ""}
    assert extract_metadata("python -m trainer.run --epochs 5", files).model == "vgg16"
    files2 = {"tool/__main__.py": ARGPARSE_TRAIN.replace('default=10', 'default=33')}
    assert extract_metadata("python -m tool", files2).iterations == 33
    files3 = {"setup.py": "setup(name='x', entry_points={'console_scripts': ['mytrain = mypkg.cli:main']})",
              "mypkg/cli.py": ARGPARSE_TRAIN.replace('default=10', 'default=44')}
    assert extract_metadata("mytrain --arch resnet50", files3).iterations == 44


PRETRAIN = '''import argparse
def get_args_parser():
    parser = argparse.ArgumentParser("pretraining", add_help=False)
    parser.add_argument("--batch_size", default=64, type=int)
    parser.add_argument("--epochs", default=400, type=int)
    parser.add_argument("--accum_iter", default=1, type=int)
    parser.add_argument("--model", default="mae_vit_large_patch16", type=str)
    parser.add_argument("--mask_ratio", default=0.75, type=float)
    parser.add_argument("--data_path", default="/datasets01/imagenet_full_size/061417/", type=str)
    return parser
def main(args):
    pass
if __name__ == "__main__":
    args = get_args_parser().parse_args()
    main(args)
'''
SUBMITIT = '''import argparse
import main_pretrain as trainer
def parse_args():
    parser = argparse.ArgumentParser("submitit", parents=[trainer.get_args_parser()])
    parser.add_argument("--ngpus", default=8, type=int)
    parser.add_argument("--nodes", default=2, type=int)
    parser.add_argument("--timeout", default=4320, type=int)
    return parser.parse_args()
def main():
    args = parse_args()
if __name__ == "__main__":
    main()
'''


def test_submitit_wrapper_gives_nodes_gpus_and_the_wrapped_scripts_defaults():
    files = {"main_pretrain.py": PRETRAIN, "submitit_pretrain.py": SUBMITIT}
    md = extract_metadata("python submitit_pretrain.py --nodes 4 --model mae_vit_base_patch16 --accum_iter 2", files)
    assert (md.nodes, md.gpus) == (4, 32)
    assert (md.iterations, md.iteration_unit, md.batch_size) == (400, "epochs", 64)
    assert md.model == "mae-vit-base" and md.task == "self-supervised-pretraining"  # an MAE, not a plain ViT
    assert (md.batch_scope, md.grad_accum, md.global_batch) == ("per-device", 2, 64 * 32 * 2)


def test_node_counts_from_every_launcher():
    files = {"train.py": ARGPARSE_TRAIN}
    assert extract_metadata("torchrun --nnodes=2 --nproc_per_node=8 train.py", files).nodes == 2
    assert extract_metadata("python train.py --num_nodes 3", files).nodes == 3
    assert extract_metadata("python train.py --nnodes 5", files).nodes == 5
    md = extract_metadata("python train.py --world-size 2 --rank 0 --dist-url tcp://h:23456 "
                          "--multiprocessing-distributed", files)
    assert md.nodes == 2


def test_cpu_runs_have_no_gpus():
    files = {"train.py": ARGPARSE_TRAIN}
    assert extract_metadata("python train.py --device cpu", files).gpus == 0
    assert extract_metadata("python train.py", {"train.py": ARGPARSE_TRAIN.replace('"cuda"', '"cpu"')}).gpus == 0
    assert extract_metadata("python train.py", files).gpus == 1


NANOGPT = '''batch_size = 12
max_iters = 600000
gradient_accumulation_steps = 40
dataset = 'openwebtext'
init_from = 'scratch'
n_layer = 12
n_embd = 768
device = 'cuda'
config_keys = [k for k, v in globals().items() if not k.startswith('_')]
exec(open('configurator.py').read())
'''


def test_nanogpt_style_config_file_and_overrides_apply_to_every_key():
    files = {"train.py": NANOGPT, "configurator.py": "import sys\n",
             "config/train_small.py": "dataset = 'shakespeare_char'\nbatch_size = 64\nmax_iters = 5000\n"
                                      "gradient_accumulation_steps = 1\nn_layer = 6\n"}
    md = extract_metadata("python train.py config/train_small.py --batch_size=32 --max_iters=2000", files)
    assert (md.batch_size, md.iterations, md.iteration_unit, md.grad_accum) == (32, 2000, "steps", 1)
    assert md.dataset == "shakespeare-char"
    md = extract_metadata("python train.py --device=cpu --compile=False", files)
    assert md.gpus == 0 and md.grad_accum == 40
    md = extract_metadata("torchrun --standalone --nproc_per_node=8 train.py", files)
    assert (md.gpus, md.batch_size, md.global_batch, md.model) == (8, 12, 12 * 8 * 40, "gpt2")


FIRE = '''import fire
def train(base_model: str = "", data_path: str = "yahma/alpaca-cleaned", batch_size: int = 128,
          micro_batch_size: int = 4, num_epochs: int = 3, learning_rate: float = 3e-4):
    gradient_accumulation_steps = batch_size // micro_batch_size
if __name__ == "__main__":
    fire.Fire(train)
'''


def test_fire_defaults_and_dataclass_fields_are_read():
    md = extract_metadata("python finetune.py --base_model 'huggyllama/llama-7b' --num_epochs=2", {"finetune.py": FIRE})
    assert (md.iterations, md.iteration_unit, md.dataset) == (2, "epochs", "alpaca")
    assert (md.batch_size, md.global_batch) == (4, 128)
    args = '''from dataclasses import dataclass, field
@dataclass
class Args:
    model_name_or_path: str = field(default="gpt2-medium")
    num_train_epochs: int = field(default=7)
'''
    main = "from transformers import HfArgumentParser\nfrom myargs import Args\nparser = HfArgumentParser((Args,))\n"
    md = extract_metadata("python run.py", {"run.py": main, "myargs.py": args})
    assert (md.model, md.iterations) == ("gpt2-medium", 7)


def test_per_environment_yaml_with_anchors():
    cfg = "base: &base\n  model: resnet50\n  epochs: 100\n  batch_size: 256\nprod:\n  <<: *base\n  epochs: 300\n"
    train = ('import argparse, yaml\np = argparse.ArgumentParser()\np.add_argument("--config", default="config.yaml")\n'
             'p.add_argument("--env", default="base")\nargs = p.parse_args()\ncfg = yaml.safe_load(open(args.config))[args.env]\n')
    md = extract_metadata("python train.py --env prod", {"train.py": train, "config.yaml": cfg})
    assert (md.model, md.iterations, md.batch_size) == ("resnet50", 300, 256)


def test_hydra_config_name_override_and_fairseq_hydra_train():
    files = {"train.py": '@hydra.main(config_path="conf", config_name="config")\ndef main(cfg):\n    pass\n'
                         'if __name__ == "__main__":\n    main()\n',
             "conf/config.yaml": "trainer:\n  max_epochs: 10\nmodel:\n  name: resnet18\n",
             "conf/big.yaml": "trainer:\n  max_epochs: 50\nmodel:\n  name: resnet50\n"}
    md = extract_metadata("python train.py --config-name=big trainer.max_epochs=20", files)
    assert (md.model, md.iterations) == ("resnet50", 20)
    fs = {"examples/w2v/config/pretraining/base_960h.yaml":
          "task:\n  _name: audio_pretraining\n  data: ???\ndataset:\n  max_tokens: 1400000\n"
          "optimization:\n  max_update: 400000\n  update_freq: [1]\nmodel:\n  _name: wav2vec2\n"
          "distributed_training:\n  distributed_world_size: 64\n"}
    md = extract_metadata("fairseq-hydra-train task.data=/data/libri distributed_training.distributed_world_size=32 "
                          "+optimization.update_freq='[2]' --config-dir examples/w2v/config/pretraining "
                          "--config-name base_960h", fs)
    assert (md.model, md.iterations, md.iteration_unit, md.gpus) == ("wav2vec2", 400000, "steps", 32)
    assert (md.batch_size, md.batch_unit, md.grad_accum) == (1400000, "tokens", 2)
    assert md.task == "self-supervised-pretraining"


def test_batch_in_tokens_and_global_batch_keys():
    md = extract_metadata("fairseq-train data-bin/wmt14_en_de --arch transformer_wmt_en_de --max-tokens 4096 "
                          "--update-freq 8 --max-update 300000", {})
    assert (md.batch_size, md.batch_unit, md.grad_accum, md.batch_scope) == (4096, "tokens", 8, "per-device")
    train = ('import argparse\np = argparse.ArgumentParser()\np.add_argument("--train_batch_size", type=int, default=32)\n'
             'p.add_argument("--gradient_accumulation_steps", type=int, default=1)\nargs = p.parse_args()\n')
    md = extract_metadata("torchrun --nproc_per_node 8 run_pretraining.py --train_batch_size 256 "
                          "--gradient_accumulation_steps 2", {"run_pretraining.py": train})
    assert (md.batch_scope, md.global_batch, md.batch_size) == ("global", 256, 16)


def test_model_not_the_wrapper_and_task_from_the_model():
    cfg = ("model = dict(type='ImageClassifier', backbone=dict(type='ResNet', depth=50), neck=dict(type='GlobalAveragePooling'),"
           " head=dict(type='LinearClsHead', num_classes=1000))\ntrain_cfg = dict(max_epochs=100)\n")
    md = extract_metadata("python tools/train.py configs/resnet/my_r50.py", {"tools/train.py": "", "configs/resnet/my_r50.py": cfg})
    assert md.model == "resnet50" and md.task == "image-classification"
    seg = ("model = dict(type='EncoderDecoder', backbone=dict(type='ResNetV1c', depth=101), decode_head=dict(type='ASPPHead'))\n"
           "dataset_type = 'CocoStuff164kDataset'\ntrain_cfg = dict(max_iters=80000)\n")
    md = extract_metadata("python tools/train.py configs/deeplab.py", {"tools/train.py": "", "configs/deeplab.py": seg})
    assert md.task == "semantic-segmentation" and md.model == "deeplabv3-r101"


def test_init_from_names_the_model_and_its_family_gives_the_task():
    files = {"train.py": NANOGPT, "configurator.py": "", "config/ft.py": "init_from = 'gpt2-xl'\nmax_iters = 20\n"}
    md = extract_metadata("python train.py config/ft.py", files)
    assert (md.model, md.task, md.iterations) == ("gpt2-xl", "language-modeling", 20)
    assert extract_metadata("python train.py", files).model == "gpt2"  # 'scratch' is not a model: the dims are


def test_llama_one_is_not_llama_two_and_per_gpu_batch_key():
    md = extract_metadata("python finetune.py --base_model 'someorg/llama-7b-hf'", {"finetune.py": FIRE})
    assert md.model == "llama-7b"
    dino = ('import argparse\ndef get_args_parser():\n    p = argparse.ArgumentParser("x", add_help=False)\n'
            '    p.add_argument("--arch", default="vit_small")\n    p.add_argument("--batch_size_per_gpu", default=48, type=int)\n'
            '    p.add_argument("--epochs", default=100, type=int)\n    return p\n'
            'if __name__ == "__main__":\n    get_args_parser().parse_args()\n')
    wrap = SUBMITIT.replace("main_pretrain", "main_selfsup_dino")
    md = extract_metadata("python run_with_submitit.py --nodes 1 --ngpus 4",
                          {"main_selfsup_dino.py": dino, "run_with_submitit.py": wrap})
    assert (md.batch_size, md.task, md.gpus) == (48, "self-supervised-pretraining", 4)


def test_masked_lm_objective_is_language_modeling():
    fs = {"conf/pre/base.yaml": "task:\n  _name: masked_lm\ndataset:\n  batch_size: 16\noptimization:\n  max_update: 1000\n"
                                "model:\n  _name: roberta\n"}
    md = extract_metadata("fairseq-hydra-train --config-dir conf/pre --config-name base", fs)
    assert (md.task, md.model, md.batch_size, md.iterations) == ("language-modeling", "roberta", 16, 1000)


def test_the_old_module_names_still_import_the_moved_extraction():
    """The extraction moved from models/ to features/ (issue 23): the old import paths stay working."""
    import features.schedmate_text.vocab as vocab
    import models.schedmate.extract as old
    import models.schedmate.vocab as old_vocab

    assert old.extract_metadata is extract_metadata and old_vocab.canonical_model is vocab.canonical_model
