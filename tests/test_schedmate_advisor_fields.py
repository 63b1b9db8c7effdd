"""Advisor fields from the code's mechanisms (issue 41, item 3), on hand-written fixtures: the batch's scope from how
the code spreads it (DataParallel in one process, a DistributedSampler with an undivided loader, a division by the
process count or detectron2's total), and the other fields of engineer B's round."""
from __future__ import annotations

from features.schedmate_text.evidence import calibration_group
from features.schedmate_text.follow import sampler_per_process, single_process, total_by_code
from models.schedmate.extract import extract_metadata

_ARGS = ("import argparse\nimport torch\n"
         "p = argparse.ArgumentParser()\np.add_argument('--batch-size', type=int, default=128)\n"
         "p.add_argument('--epochs', type=int, default=30)\nargs = p.parse_args()\n")
_LOADER = "loader = torch.utils.data.DataLoader(ds, batch_size=args.batch_size, shuffle=True)\n"


def test_sampler_with_an_undivided_loader_is_per_process():
    code = ("sampler = torch.utils.data.distributed.DistributedSampler(ds)\n"
            "loader = DataLoader(ds, batch_size=args.batch_size, sampler=sampler)\n")
    assert sampler_per_process(code, "batch_size")
    assert sampler_per_process(code, "batch-size")
    assert not sampler_per_process(code.replace("DistributedSampler", "RandomSampler"), "batch_size")
    divided = code + "per = args.batch_size // dist.get_world_size()\n"
    assert not sampler_per_process(divided, "batch_size")  # the code divides it: a total
    assert not sampler_per_process(code.replace("batch_size=args.batch_size", "batch_size=args.batch_size // 2"),
                                   "batch_size")
    # a commented-out sampler does not count
    assert not sampler_per_process("# DistributedSampler(ds)\n" + code.split("\n", 1)[1], "batch_size")


def test_single_process_and_code_totals():
    assert single_process("model = torch.nn.DataParallel(model)\n")
    assert not single_process("torch.distributed.init_process_group('nccl')\nmodel = nn.DataParallel(model)\n")
    assert not single_process("mp.spawn(main, nprocs=4)\n")
    assert total_by_code("bs = cfg.SOLVER.IMS_PER_BATCH // comm.get_world_size()\n", "SOLVER.IMS_PER_BATCH")
    d2 = "from detectron2.engine import DefaultTrainer\n"
    assert total_by_code(d2, "SOLVER.IMS_PER_BATCH") and total_by_code(d2, "dataloader.train.total_batch_size")
    assert total_by_code("import torch\n", "SOLVER.IMS_PER_BATCH") is None  # not detectron2: not known
    assert total_by_code(d2, "batch_size") is None


def test_data_parallel_in_one_process_is_the_total(monkeypatch):
    # the mechanism under test, not its calibration: the group's first-sight record (refit as batches are scored)
    # decides whether the answer stands, so the group is left uncapped here
    from features.schedmate_text import evidence
    monkeypatch.delitem(evidence.FIRST_SIGHT_COUNTS, ("batch_scope", "mechanism/global"), raising=False)
    files = {"train.py": _ARGS + "model = torch.nn.DataParallel(net).cuda()\n" + _LOADER}
    md = extract_metadata("python train.py --batch-size 256", files)
    ev = md.evidence["batch_scope"]
    assert md.batch_scope == "global" and ev["kind"] == "mechanism" and ev["confidence"] >= 0.5
    assert calibration_group("batch_scope", ev["kind"], "global") == ("batch_scope", "mechanism/global")
    # a process group beside the wrapper: not the single-process mechanism (its first-sight group keeps its cap)
    files = {"train.py": _ARGS + "torch.distributed.init_process_group('nccl')\n"
                                 "model = torch.nn.DataParallel(net).cuda()\n" + _LOADER}
    md = extract_metadata("python train.py --batch-size 256", files)
    assert md.evidence["batch_scope"]["kind"] != "mechanism"


def test_data_parallel_over_one_visible_device_is_per_device():
    files = {"train.py": _ARGS + "model = torch.nn.DataParallel(net).cuda()\n" + _LOADER}
    md = extract_metadata("CUDA_VISIBLE_DEVICES=0 python train.py --batch-size 256", files, min_confidence=0.5)
    assert md.gpus == 1 and md.batch_scope == "per-device" and md.batch_size == 256


def test_distributed_sampler_states_a_per_device_batch():
    code = (_ARGS + "torch.distributed.init_process_group('nccl')\n"
            "sampler = torch.utils.data.distributed.DistributedSampler(ds)\n"
            "loader = torch.utils.data.DataLoader(ds, batch_size=args.batch_size, sampler=sampler)\n"
            "model = torch.nn.parallel.DistributedDataParallel(net)\n")
    md = extract_metadata("torchrun --nproc_per_node 4 train.py --batch-size 64", {"train.py": code}, min_confidence=0.5)
    ev = md.evidence["batch_scope"]
    assert md.batch_scope == "per-device" and ev["kind"] == "mechanism" and md.batch_size == 64 and md.gpus == 4
    # the same option divided by the world size before the loader: the total, never per device by this mechanism
    md = extract_metadata("torchrun --nproc_per_node 4 train.py --batch-size 64",
                          {"train.py": code + "args.batch_size = args.batch_size // dist.get_world_size()\n"})
    assert md.batch_scope == "global"


def test_detectron2_ims_per_batch_is_the_total():
    files = {"train_net.py": "from detectron2.engine import DefaultTrainer, launch\nfrom detectron2.config import "
                             "get_cfg\nimport argparse\np = argparse.ArgumentParser()\n"
                             "p.add_argument('--config-file')\np.add_argument('--num-gpus', type=int, default=1)\n"
                             "args = p.parse_args()\n",
             "configs/base.yaml": "SOLVER:\n  IMS_PER_BATCH: 16\n  MAX_ITER: 90000\nDATASETS:\n  TRAIN: "
                                  "(\"coco_2017_train\",)\n"}
    md = extract_metadata("python train_net.py --num-gpus 8 --config-file configs/base.yaml", files,
                          min_confidence=0.5)
    # (the config kind or the mechanism answers it, by the config kind's first-sight record as refit)
    assert md.batch_scope == "global" and md.evidence["batch_scope"]["kind"] in ("mechanism", "config")
    assert md.batch_size == 2 and md.gpus == 8


_VIDEO = ("import argparse\nfrom data_config import return_dataset\np = argparse.ArgumentParser()\n"
          "p.add_argument('dataset', type=str)\np.add_argument('--epochs', type=int, default=50)\n"
          "p.add_argument('--batch-size', type=int, default=8)\np.add_argument('--n_classes', type=int, default=None)\n"
          "args = p.parse_args()\nnum_class, train_list = return_dataset(args.dataset)\n")
_DATA_CONFIG = ("def return_clips(): \n    return 'clips/v1/categories.txt', 'clips/train.txt'\n\n"
                "def return_kinetics():\n    categories = 600\n    return categories, 'kinetics/labels/train.txt'\n\n"
                "def return_something():\n    categories = 'something/v1/category.txt'\n"
                "    return categories, 'something/v1/20bn-something-something-v1/train.txt'\n\n"
                "def return_somethingv2():\n    return 'something/v2/category.txt', 'something/v2/train.txt'\n\n"
                "def return_dataset(name):\n    return {'kinetics': return_kinetics, 'something': return_something,\n"
                "            'somethingv2': return_somethingv2}[name]()\n")


def test_a_dataset_family_resolved_from_the_code_that_handles_its_name():
    files = {"main.py": _VIDEO, "data_config.py": _DATA_CONFIG}
    md = extract_metadata("python main.py kinetics --epochs 50", files, min_confidence=0.5)
    assert md.dataset == "kinetics-600"  # the family's block counts 600 classes
    md = extract_metadata("python main.py something --epochs 50", files, min_confidence=0.5)
    assert md.dataset == "something-something-v1"  # its block's paths name the version
    # the job's own class count names the variant first
    md = extract_metadata("python main.py kinetics --n_classes 700", files, min_confidence=0.5)
    assert md.dataset == "kinetics-700"


def test_an_unresolved_dataset_family_is_unknown_not_the_parent():
    files = {"main.py": _VIDEO.replace("from data_config import return_dataset\n", "").replace(
        "num_class, train_list = return_dataset(args.dataset)\n", "")}
    md = extract_metadata("python main.py kinetics --epochs 50", files, min_confidence=0.5)
    assert md.dataset is None and md.evidence["dataset"]["guess"] == "kinetics"
    assert "family" in md.unknown["dataset"]
    md = extract_metadata("python main.py kinetics400 --epochs 50", files, min_confidence=0.5)
    assert md.dataset == "kinetics-400"  # the name says the variant


def test_iterations_from_the_setting_the_epoch_loop_is_bounded_by():
    train = ("import yaml, argparse\np = argparse.ArgumentParser()\np.add_argument('--config_path')\n"
             "args = p.parse_args()\nconfig = yaml.safe_load(open(args.config_path))\n"
             "epochs = config.get('epochs_1st', 200)\nbatch_size = config.get('batch_size', 10)\n"
             "for epoch in range(0, epochs):\n    pass\n")
    cfg = ("epochs_1st: 120\nepochs_2nd: 60\nbatch_size: 16\n"
           "adv_params:\n  iter: 10\n  min_len: 400\n")
    md = extract_metadata("python train_first.py --config_path configs/config.yml",
                          {"train_first.py": train, "configs/config.yml": cfg}, min_confidence=0.5)
    assert (md.iterations, md.iteration_unit) == (120, "epochs")  # not the discriminator's `iter: 10`
    assert "epochs_1st" in md.sources["iterations"]


def test_gpus_from_a_config_device_tuple_and_nodes_from_the_option_a_submitter_names():
    train = ("import argparse\np = argparse.ArgumentParser()\np.add_argument('--cfg')\nargs = p.parse_args()\n"
             "config = load(args.cfg)\ngpus = list(config.GPUS)\nmodel = nn.DataParallel(model, device_ids=gpus)\n")
    cfg = "GPUS: (0,1,2,3)\nTRAIN:\n  BATCH_SIZE_PER_GPU: 3\n  END_EPOCH: 484\n"
    md = extract_metadata("python tools/train.py --cfg exp/a.yaml", {"tools/train.py": train, "exp/a.yaml": cfg})
    assert md.gpus == 4
    submit = ("import argparse\nimport submitit\np = argparse.ArgumentParser()\n"
              "p.add_argument('--num_shards', type=int, default=1)\np.add_argument('--cfg')\nargs = p.parse_args()\n"
              "nodes = args.num_shards\nexecutor.update_parameters(nodes=nodes, gpus_per_node=8)\n")
    md = extract_metadata("python tools/submit.py --cfg c.yaml --num_shards 4",
                          {"tools/submit.py": submit, "c.yaml": "NUM_GPUS: 8\nNUM_SHARDS: 1\n"})
    assert md.nodes == 4 and md.gpus == 32


def test_one_loader_per_launched_process_and_an_option_named_the_global_batch():
    code = (_ARGS + "torch.distributed.init_process_group('nccl')\n" + _LOADER +
            "model = torch.nn.parallel.DistributedDataParallel(net)\n")
    md = extract_metadata("torchrun --nproc_per_node 8 train.py --batch-size 32", {"train.py": code},
                          min_confidence=0.5)
    assert md.batch_scope == "per-device" and md.evidence["batch_scope"]["kind"] == "mechanism"
    assert "launcher" in md.evidence["batch_scope"]["note"]
    # the same code logging the option as the global batch (a model-parallel loader): never per device by mechanism
    logged = code + "log(key=constants.GLOBAL_BATCH_SIZE, value=args.batch_size)\n"
    md = extract_metadata("torchrun --nproc_per_node 8 train.py --batch-size 32", {"train.py": logged})
    assert md.evidence["batch_scope"]["kind"] != "mechanism"
    # a BatchSampler over a distributed sampler takes the option positionally
    detr = ("sampler = torch.utils.data.DistributedSampler(ds)\n"
            "batch_sampler = torch.utils.data.BatchSampler(sampler, args.batch_size, drop_last=True)\n")
    assert sampler_per_process(detr, "batch_size")


def test_an_epoch_loop_bounded_by_a_sum_of_settings_and_its_config_default():
    train = ("import argparse\nfrom config import config, update_config\np = argparse.ArgumentParser()\n"
             "p.add_argument('--cfg')\nargs = p.parse_args()\nupdate_config(config, args)\n\ndef main():\n"
             "    end_epoch = config.TRAIN.END_EPOCH + config.TRAIN.EXTRA_EPOCH\n"
             "    for epoch in range(config.TRAIN.BEGIN_EPOCH, end_epoch):\n        pass\n\nmain()\n")
    defaults = "from yacs.config import CfgNode as CN\n_C = CN()\n_C.TRAIN = CN()\n_C.TRAIN.END_EPOCH = 100\n" \
               "_C.TRAIN.EXTRA_EPOCH = 0\n"
    files = {"tools/train.py": train, "lib/config/default.py": defaults,
             "exp/a.yaml": "TRAIN:\n  BEGIN_EPOCH: 0\n  END_EPOCH: 484\n  BATCH_SIZE_PER_GPU: 3\n"}
    md = extract_metadata("python tools/train.py --cfg exp/a.yaml", files, min_confidence=0.5)
    assert (md.iterations, md.iteration_unit) == (484, "epochs")
    files["exp/a.yaml"] += "  EXTRA_EPOCH: 16\n"
    md = extract_metadata("python tools/train.py --cfg exp/a.yaml", files, min_confidence=0.5)
    assert md.iterations == 500


def test_a_step_cap_the_command_sets_is_not_replaced_by_the_defaulted_epoch_loop():
    train = ("import argparse\np = argparse.ArgumentParser()\np.add_argument('--num_train_epochs', type=int, default=3)\n"
             "p.add_argument('--max_train_steps', type=int, default=None)\nargs = p.parse_args()\n"
             "for epoch in range(args.num_train_epochs):\n    if step >= args.max_train_steps:\n        break\n")
    md = extract_metadata("python train.py --max_train_steps 1000", {"train.py": train})
    assert (md.iterations, md.iteration_unit) == (1000, "steps")
    md = extract_metadata("python train.py", {"train.py": train})
    assert (md.iterations, md.iteration_unit) == (3, "epochs")


def test_an_entry_that_dispatches_over_several_datasets_names_none():
    train = ("import argparse, json, torchvision\np = argparse.ArgumentParser()\np.add_argument('--config')\n"
             "args = p.parse_args()\ncfg = json.load(open(args.config))['dataset']\n"
             "if cfg['type'] == 'cifar10':\n    ds = torchvision.datasets.CIFAR10('data', train=True)\n"
             "elif cfg['type'] == 'mnist':\n    ds = torchvision.datasets.MNIST('data', train=True)\n"
             "elif cfg['type'] == 'huggingface':\n    ds = load_dataset(cfg['location'])\n")
    files = {"train.py": train, "configs/flowers.json": '{"dataset": {"type": "huggingface", "location": '
                                                        '"someone/oxford-flowers"}}'}
    md = extract_metadata("python train.py --config configs/flowers.json", files)
    assert md.dataset not in ("mnist", "cifar10")
    one = {"train.py": train.split("elif cfg['type'] == 'mnist'")[0]}
    md = extract_metadata("python train.py", one)
    assert md.dataset == "cifar10"  # one dataset called: it is the job's


def test_a_child_config_pointing_its_base_at_other_data():
    base = ("data_root = 'data/coco/'\ntrain_ann_file = 'annotations/instances_train2017.json'\n"
            "train_dataloader = dict(batch_size=16, dataset=dict(type='CocoDataset', data_root=data_root, "
            "ann_file=train_ann_file))\nmodel = dict(type='YOLODetector')\nmax_epochs = 300\n")
    child = ("_base_ = 'det_coco.py'\ndata_root = './data/cat/'\nclass_name = ('cat', )\nmax_epochs = 40\n"
             "train_dataloader = dict(batch_size=12, dataset=dict(data_root=data_root, "
             "ann_file='annotations/trainval.json'))\n")
    files = {"tools/train.py": "import argparse\np = argparse.ArgumentParser()\np.add_argument('config')\n"
                               "args = p.parse_args()\nfrom mmengine.config import Config\ncfg = Config.fromfile("
                               "args.config)\n",
             "configs/det_coco.py": base, "configs/det_cat.py": child}
    md = extract_metadata("python tools/train.py configs/det_cat.py", files)
    assert md.dataset == "cat" and md.iterations == 40
    md = extract_metadata("python tools/train.py configs/det_coco.py", files)
    assert md.dataset == "coco"


def test_data_parallel_over_listed_devices_gives_each_its_share_and_a_named_global_batch_is_divided():
    code = (_ARGS + "p.add_argument('--gpu_ids', type=str, default='0')\n"
            "model = torch.nn.DataParallel(net, device_ids=[int(x) for x in args.gpu_ids.split(',')])\n" + _LOADER)
    md = extract_metadata("python train.py --batch-size 8 --gpu_ids 0,1,2,3,4,5,6,7", {"train.py": code})
    assert (md.gpus, md.batch_scope, md.batch_size, md.global_batch) == (8, "global", 1, 8)
    logged = (_ARGS + "torch.distributed.init_process_group('nccl')\n" + _LOADER +
              "mlperf_log(key=constants.GLOBAL_BATCH_SIZE, value=args.batch_size)\n")
    md = extract_metadata("torchrun --nproc_per_node 8 train.py --batch-size 2048", {"train.py": logged})
    assert (md.batch_scope, md.batch_size, md.gpus) == ("global", 256, 8)


def test_gpus_and_nodes_from_a_deepspeed_hostfile():
    files = {"train.py": _ARGS + "import deepspeed\n", "hostfile": "# hosts\nworker-1 slots=8\nworker-2 slots=8\n"}
    md = extract_metadata("deepspeed --hostfile=hostfile train.py --batch-size 4", files)
    assert (md.nodes, md.gpus) == (2, 16)
    md = extract_metadata("deepspeed --hostfile=hostfile --include worker-1:0,1 train.py", files)
    assert md.gpus == 2


def test_a_gpus_option_with_an_id_list_counts_the_ids():
    t = _ARGS + "p.add_argument('--gpus', type=str, default='0')\n"
    for cmd, n in (("python t.py --gpus 0,1", 2), ("python t.py --gpus 0,1,2,3", 4), ("python t.py --gpus 4", 4)):
        assert extract_metadata(cmd, {"t.py": t}).gpus == n  # (`0,1` is two ids, not the number 1 nor 01)


def test_accelerate_split_batches_makes_the_option_the_total():
    code = (_ARGS + "from accelerate import Accelerator\n"
            "accelerator = Accelerator(project_dir='x', split_batches=True)\n" + _LOADER)
    md = extract_metadata("accelerate launch --num_processes 4 train.py --batch-size 32", {"train.py": code})
    assert (md.batch_scope, md.batch_size, md.gpus) == ("global", 8, 4)
    plain = code.replace("split_batches=True", "split_batches=False")
    md = extract_metadata("accelerate launch --num_processes 4 train.py --batch-size 32", {"train.py": plain})
    assert (md.batch_scope, md.batch_size) == ("per-device", 32)
