"""Settings -> JobMetadata: which of the gathered values answers each field (model, task, dataset,
iterations, batch size and its scope, GPUs, nodes), by priority and meaning."""
from __future__ import annotations

import re
from pathlib import PurePosixPath

from features.schedmate_text.follow import named_total, splits_batches
from features.schedmate_text.metadata import JobMetadata
from features.schedmate_text.settings import (_ACCUM_KEYS, _CPU_FLAGS, _MICRO_BATCH_KEYS, _NODE_KEYS,
                                              _TOKEN_BATCH_KEYS, _TOTAL_GPU_KEYS, P_CODE, P_LAUNCH, _BATCH_KEYS, _DATA_KEYS, _EPOCH_KEYS, _EVAL_PATH, _GLOBAL_BATCH_KEYS,
                                              _GPU_ARG_KEYS, _MODEL_KEYS, _NAMED_DATA_KEYS, _STEP_KEYS, P_CODE_KW,
                                              P_ARGV, P_CONFIG, P_DEFAULT, P_OVERRIDE, _as_int, _last)
from features.schedmate_text.vocab import (DATASET_FAMILIES, DATASET_TASK, MODEL_TASK, canonical_dataset, family_task, canonical_model, known_model,
                                           task_from_names, task_from_objective,
                                           norm, task_from_signals)


#: methods of containers and modules a "model constructor" call may be (`model = models.pop()`, `net = net.cuda()`):
#: they name no architecture
_CONTAINER_METHODS = frozenset({"pop", "popleft", "popitem", "get", "copy", "deepcopy", "setdefault", "cuda", "cpu", "to",
                                "eval", "train", "half", "float", "double", "bfloat16", "module", "unwrap_model",
                                "prepare", "compile", "load", "load_state_dict", "state_dict"})


def resolve(ex) -> JobMetadata:
    md = JobMetadata(entry=ex.entry)
    ranked = ex.s.ranked()
    # model: known names first (by priority), then any model-key string
    model_cands = [(k, v, p, s) for k, v, p, s in ranked if isinstance(v, str) and v.strip() and
                   v.strip().lower() not in _GENERIC_VALUES and not _PLACEHOLDER_VALUE.search(v) and
                   (len(v.strip()) > 2 or known_model(v) is not None) and  # `--model H`: a variant letter
                   not (_last(k) in ("alg", "algo", "algorithm") and "." in k) and  # training.algo: 'dsm' is a loss
                   not (re.search(r"\.(pth?|pt|ckpt|bin|safetensors|h5|npz|tar)$", v.strip().lower()) and
                        not known_model(v)) and  # a checkpoint file (`results/128_0.5_model.pth`) names no model
                   not v.strip().lower().startswith("build_") and
                   not (k == "code.model" and v.strip() in _CONTAINER_METHODS) and  # `model = models.pop()`
                   not _ROLE_PATH.search(k.lower().rsplit(".", 1)[0] if "." in k else "") and
                   (_last(k) in _MODEL_KEYS or k in ("code.model", "config.filename", "hint.entry", "hint.config", "hydra.model_class",
                                                       "config_arg.model")
                    or _last(k) in _WEAK_MODEL_KEYS
                    or (k.lower().startswith("model.") and _last(k) in ("name", "_name", "type", "arch", "model_name")
                        and not _PART.search(k.lower().rsplit(".", 1)[0]))
                    or _model_section_name(k)) and
                   not _EVAL_PATH.search(k.lower())]
    mm = _mm_model(ex)
    known = [(k, v, p, s, known_model(v) or (known_model(v, strip=False) if k.startswith("hint.") else None))
             for k, v, p, s in model_cands]
    first_known = next((c for c in known if c[4]), None)
    explicit = [c for c in model_cands if not c[0].startswith(("hint.", "config.filename", "code.model"))
                and _last(c[0]) not in _WEAK_MODEL_KEYS and not str(c[1]).startswith(("/", "./"))]
    # reinforcement learning: the algorithm is the model (its --network is a part of it)
    # and a network's own name before its backbone's (modelname 'dino' beside backbone 'resnet50')
    explicit.sort(key=lambda c: (-c[2], _last(c[0]) not in ("alg", "algo", "algorithm"), _last(c[0]) == "backbone",
                                 _last(c[0]) in ("model_type", "type") and not known_model(c[1])))
    part_known = first_known is not None and _last(first_known[0]) == "backbone" and explicit and \
        _last(explicit[0][0]) != "backbone" and explicit[0][2] >= first_known[2]  # the network around a known backbone
    if explicit and (first_known is None or explicit[0][2] > first_known[2] or part_known) and \
            (not mm or explicit[0][2] > P_CONFIG):
        k, v, p, src = explicit[0]  # the user named a model we do not know: keep their name
        section = k.rsplit(".", 1)[0] if "." in k else ""
        arch = next((c for c in explicit[1:] if _last(c[0]) == "arch" and _last(k) in ("model_name", "name") and
                     (c[0].rsplit(".", 1)[0] if "." in c[0] else "") == section and c[2] >= p - 1), None)
        if arch is not None:  # MODEL.MODEL_NAME: ResNet with MODEL.ARCH: c2d -- the arch names the network
            k, v, p, src = arch
        general = canonical_model(v) or ""
        finer = next((c for c in explicit[1:] if c[2] >= p - 1 and (canonical_model(c[1]) or "").startswith(general + "-")),
                     None)
        if finer is not None:  # model_type LLAMA3 beside the model's own llama3_1_8b: the specific one
            k, v, p, src = finer
        md.model, md.sources["model"] = canonical_model(v), src
        _domain_check_model(md, v, ranked)
    elif first_known is not None and (not mm or first_known[2] > P_CONFIG - 30 + 1):
        md.model, md.sources["model"] = first_known[4], first_known[3]
        _domain_check_model(md, first_known[1], ranked)
    if md.model is None and mm:
        md.model, md.sources["model"] = mm
    if md.model is None and first_known is not None:
        md.model, md.sources["model"] = first_known[4], first_known[3]
    variant = next((v for k, v, p, s in ranked if _last(k) == "variant" and isinstance(v, str) and
                    k.lower().startswith(("model.", "variant"))), None)
    if variant is None and md.model and not re.search(r"\d", md.model):
        # model.classification.name: vit with model.classification.vit.mode: base -- the size beside the name
        variant = next((v for k, v, p, s in ranked if _last(k) in ("mode", "size", "variant") and isinstance(v, str)
                        and re.fullmatch(r"(x?x?small|tiny|base|large|huge|giant|nano|[stmblxh])", v.lower())
                        and f".{md.model.split('-')[0]}." in f".{k.lower()}" and k.lower().startswith("model.")), None)
    if md.model and variant and not re.search(r"\d", md.model):  # model_name "vit" + variant "S/16": ViT-S/16
        md.model, md.sources["model"] = canonical_model(f"{md.model}-{variant}"), md.sources.get("model", "") + " + variant"
    depth = next(((m.group(1), _as_int(v), s) for k, v, p, s in ranked if p >= P_DEFAULT
                  for m in [re.fullmatch(r"(resnet|resnext|wide_resnet|vgg|densenet|wrn)_?depth", _last(k))] if m and _as_int(v)),
                 None)
    if depth is None and md.model and re.fullmatch(_DEPTH_FAMILY, md.model):
        # MODEL.TRUNK.NAME: resnet with MODEL.TRUNK.RESNETS.DEPTH: 50 -- the family and its depth, apart
        section = md.sources.get("model", "")
        depth = next(((md.model, _as_int(v), s) for k, v, p, s in ranked if p >= P_DEFAULT and _as_int(v) and
                      ((_last(k) == "depth" and re.search(r"(^|\.)(model|trunk|backbone|encoder)\.", k.lower())) or
                       (_last(k) in ("model_depth", "arch_depth", "net_depth", "depth") and "." not in k))), None)
        # (a top-level `--depth` beside `--arch resnet`: the family needs a depth, so the option names it)
        if depth and section.startswith(("config name", "entry name")):
            depth = None
        if depth:
            md.model, md.sources["model"] = canonical_model(f"{depth[0]}{depth[1]}"), section + f" + {depth[2]} depth"
            depth = None
    if depth and (md.model is None or md.sources.get("model", "").startswith(("config name", "entry name"))):
        # `--resnet_depth=18`: the family's option names the depth (TF SimCLR, many CIFAR repos)
        md.model, md.sources["model"] = canonical_model(f"{depth[0]}{depth[1]}"), depth[2]
    cls = next((c for c in ranked if c[0] == "code.model_class" and not _GENERIC_CLASS.match(_class_name_words(c[1]))),
               None)
    if cls is not None and (md.model is None or md.sources.get("model", "").startswith(("config name", "entry name"))
                            and not known_model(md.model)):
        # the network class the code builds (`model = CNN(...)`) beats an unknown name guessed from a
        # file name (`configs/default.py`); a known one (`yolov7.yaml`) stays
        name = cls[1] if known_model(cls[1]) else re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "-", cls[1])
        if min(len(w) for w in name.split("-")) < 2:  # LLaMA, QNetwork: not words run together
            name = cls[1]
        md.model, md.sources["model"] = canonical_model(name), cls[3]  # SimpleDLA -> simple-dla
    dims = _dims_model(ex, md.model)
    if dims and (md.model is None or not md.sources.get("model", "").startswith(("argv", "hydra override"))
                 and (md.sources.get("model", "").startswith(("entry name", "config name")) or
                      not re.search(r"\d", md.model))):
        # layers x hidden size of a known family beat a name guessed from a file name
        md.model, md.sources["model"] = dims, "architecture dims (layers, hidden size)"
    if md.model is None and model_cands and not model_cands[0][0].startswith("hint.") and \
            _last(model_cands[0][0]) not in ("weights", "init_checkpoint", "checkpoint_dir", "policy"):
        md.model, md.sources["model"] = canonical_model(model_cands[0][1]), model_cands[0][3]
    if md.model and _last(md.sources.get("model", "").split()[-1]) == "backbone":
        arch = _program_model(ex)
        if arch:  # `--backbone resnet50` names a part: the program says what it is part of (DETR)
            md.model, md.sources["model"] = f"{arch}-{md.model}", md.sources["model"] + f" inside {arch} (parser name)"
    # dataset
    ds_raw = None
    glue_task = None
    # the entry calls several datasets' constructors (`if cfg.type == 'mnist': ... elif ...`): a dispatcher over
    # datasets names none of them (as for an imported module's, extract._code_signals)
    dispatch = len({canonical_dataset(v) for k, v, p, s in ranked if k == "code.dataset" and isinstance(v, str)}
                   - {None}) >= 2
    for k, v, p, s in ranked:
        if dispatch and k == "code.dataset":
            continue
        if isinstance(v, list) and len(v) == 1 and isinstance(v[0], str):
            v = v[0]  # DATASET_NAMES: [imagenet1k_folder] -- one dataset, in a list
        elif isinstance(v, list) and len(v) == 1 and isinstance(v[0], dict):
            v = next((v[0][x] for x in ("path", "name", "dataset") if isinstance(v[0].get(x), str)), None)  # axolotl
        if isinstance(v, str) and re.search(r"(^|/)(train|training|dev|val|test|all)(_data)?\.(jsonl?|csv|tsv|txt|parquet)$", v) \
                and "/" in v.strip("/"):
            v = v.strip("/").rsplit("/", 2)[-2]  # AdvertiseGen/train.json: the folder names the data
        if _EVAL_PATH.search(k.lower()) or not isinstance(v, str):
            continue  # (a placeholder may still name a known dataset: `[your imagenet-folder]`)
        lk = _last(k)
        segs = k.lower().split(".")[:-1]
        if lk in _DATA_KEYS or k in ("code.dataset", "positional") or "data" in lk or _ANN_KEY.search(lk) or \
                lk.startswith(("input_", "train_bin", "train_path")) or any(
                sg in ("data", "dataset", "datasets") for sg in segs):
            ds = canonical_dataset(v)
            if ds:
                md.dataset, md.sources["dataset"], ds_raw = ds, s, v
                break
            if lk == "task_name" and v.lower() in ("sst2", "mnli", "cola", "qnli", "rte", "mrpc", "qqp", "stsb"):
                glue_task = (v.lower(), s)
    named = next(((v, p, s) for k, v, p, s in ranked if isinstance(v, str) and _last(k) in _NAMED_DATA_KEYS
                  and p >= P_DEFAULT and v.strip("/ ") and not _EVAL_PATH.search(k.lower())), None)
    if md.dataset is not None and named is not None and canonical_dataset(named[0]) is None:
        known_prio = next((p for k, v, p, s in ranked if s == md.sources.get("dataset")), 0)
        if named[1] > known_prio:  # the user's own dataset, named above a default we happen to know
            if _name_of_path(named[0]):
                md.dataset, md.sources["dataset"] = _name_of_path(named[0]), named[2]
    if md.dataset is not None and md.sources.get("dataset", "").startswith("config "):
        # a child config overriding its base's data folder (`_base_` = a COCO config; `data_root = './data/cat/'`): the
        # child's folder names the data, not the base's annotations it inherits
        known_prio = next((p for k, v, p, s in ranked if s == md.sources.get("dataset")), 0)
        child = next(((v, s) for k, v, p, s in ranked if p > known_prio and s.startswith("config ") and
                      _last(k) in _DATA_FOLDER_KEYS and isinstance(v, str) and not _EVAL_PATH.search(k.lower()) and
                      canonical_dataset(v) is None), None)
        name = _name_of_path(child[0]) if child else None
        if name and name not in ("data", "dataset", "datasets", "images", "train", "root"):
            md.dataset, md.sources["dataset"], ds_raw = name, child[1] + " (overrides its base config's data)", child[0]
    if md.dataset is None:  # `datasets: {coco_caption: {...}}`: the one section under datasets names the data
        sections = {k.split(".")[1] for k, v, p, s in ranked if p >= P_CONFIG - 5 and k.lower().startswith(("datasets.", "dataset."))
                    and k.count(".") >= 2}
        if len(sections) == 1 and canonical_dataset(next(iter(sections))):
            md.dataset, md.sources["dataset"] = canonical_dataset(next(iter(sections))), "the config's one dataset section"
    if md.dataset is None and glue_task:
        md.dataset, md.sources["dataset"] = f"glue-{glue_task[0]}", glue_task[1]
    if md.dataset is None:  # a dataset we do not know: the command's own bare name for it (`--data ETTh2`) beats a
        # default path of another key (`data_path='ETTh1.csv'`): the user chose it
        for k, v, p, s in ranked:
            if p < P_ARGV:
                break
            if isinstance(v, str) and _last(k) in ("data", "dataset", "dataset_name", "data_name", "dset") and \
                    "." not in k and \
                    re.fullmatch(r"[A-Za-z][\w-]{1,40}", v.strip()) and \
                    not re.fullmatch(r"(data|dataset|datasets|custom|train|none|true|false|default|all)", v.strip().lower()) \
                    and not _PART_WORD.fullmatch(v.strip().lower()):
                # (a size or quality level alone -- `--env hopper --dataset medium` -- names a part of a dataset)
                md.dataset, md.sources["dataset"] = norm(v.strip()), s
                break
    if md.dataset is None:  # a dataset we do not know: keep the user's name (last path segment)
        for k, v, p, s in ranked:
            if isinstance(v, list) and len(v) == 1 and isinstance(v[0], str):
                v = v[0]  # dataset_name_or_paths: ["naver-clova-ix/cord-v2"]
            if isinstance(v, str) and _last(k) in _NAMED_DATA_KEYS and p >= P_DEFAULT and v.strip("/ "):
                if _name_of_path(v):
                    md.dataset, md.sources["dataset"] = _name_of_path(v), s
                    break
    if md.dataset in DATASET_FAMILIES:  # `kinetics`, `something`: which variant (classes, version)?
        _resolve_family(ex, md, ranked, ds_raw)
    # iterations: steps win over epochs when both set at the same priority (HF: max_steps > 0 overrides)
    best = None
    for k, v, p, s in ranked:
        if _EVAL_PATH.search(k.lower()) or (_NOT_TRAINING_LENGTH.search(k.lower()) and _last(k) not in _EPOCH_KEYS):
            continue  # (a sampler's steps are not the run's; an LR scheduler's max_epochs is)
        lk = _last(k)
        n = _as_int(v)
        unit = None
        if lk in ("max_duration", "duration") and isinstance(v, str):  # Composer: "4800ba", "10ep"
            m = re.fullmatch(r"\s*([\d_]+)\s*(ba|ep)\s*", v)
            if m:
                n, unit = int(m.group(1).replace("_", "")), "steps" if m.group(2) == "ba" else "epochs"
        if n is None or n <= 0:
            continue
        unit = unit or ("epochs" if lk in _EPOCH_KEYS else "steps" if lk in _STEP_KEYS or
                        (lk == "iterations" and "." not in k) else None)  # (a script's own --iterations)
        if unit is None:
            continue
        if unit == "steps" and _sizes_data(ex, lk):
            continue  # (`create_dataset(args.num_buffers, args.num_steps, ...)`: how much data is loaded, not the run)
        whole = lk.startswith(("total_", "max_", "num_train", "train_"))  # the run's length, not a rollout's
        if best is None or (p == best[2] and unit == "steps" and best[1] == "epochs") or \
                (p == best[2] and unit == best[1] and whole and not best[4]):
            best = (n, unit, p, s, whole)
        elif p < best[2]:
            break
    if best and best[1] == "steps" and _last(next((k for k, v, p, s in ranked if s == best[3]), "")) in _ROLLOUT_KEYS:
        # an on-policy script's rollout length (`--num-steps 128`) is no run length, whatever its priority, when
        # the run's own length is set, even by a default (`--num-env-steps` 10e6)
        run = next(((n, "steps", p, s, True) for k, v, p, s in ranked if p >= P_DEFAULT and _last(k) in _RUN_STEP_KEYS
                    for n in [_as_int(v)] if n and n > 0), None)
        if run is not None:
            best = run
    if best and best[1] == "steps" and getattr(ex, "code_texts", None):
        # a config may carry both a step cap and an epoch count (`n_iters` beside `n_epochs`): the one the
        # training code never reads by its name is not the run's length
        code = "\n".join(ex.code_texts)
        key = next((k for k, v, p, s in ranked if s == best[3] and _as_int(v) == best[0] and _last(k) in _STEP_KEYS), None)
        other = next(((_as_int(v), "epochs", p, s, False) for k, v, p, s in ranked if p == best[2] and
                      _last(k) in _EPOCH_KEYS and _as_int(v) and _uses(code, _last(k))), None)
        if key and other and not _uses(code, _last(key)):
            best = other
    loop = _loop_bound(ex, ranked)
    if loop is not None and (best is None or loop[2] >= best[2] and _last(next(
            (k for k, v, p, s in ranked if s == best[3] and _as_int(v) == best[0]), "")) != _last(loop[5])):
        # (not over a count the job sets with more authority: `--max_train_steps 1000` on the command line beside an
        # epoch loop over a defaulted `num_train_epochs` stops the loop early)
        best = loop[:5]  # the setting the training code's epoch loop is bounded by, not another key's count
    pair = _decay_pair(ranked)
    if pair is not None and (best is None or pair[2] >= best[2]):
        best = pair  # pix2pix-family epoch counters: the run is `niter` + `niter_decay` epochs
    if best:
        md.iterations, md.iteration_unit, md.sources["iterations"] = best[0], best[1], best[3]
        _sum_stages(ex, md)
    batch_key = None
    for k, v, p, s in ranked:
        if _EVAL_PATH.search(k.lower()):
            continue
        per_process = getattr(ex, "per_process_batch", set()) | _loader_batches(ex)
        if _last(k) in _GLOBAL_BATCH_KEYS and not any(_last(x[0]) in _BATCH_KEYS for x in ranked) and \
                _last(k) not in per_process:
            n = _as_int(v)
            if n and n > 0:
                md.batch_size, md.sources["batch_size"] = n, s + " (global, divided by GPUs below)"
                ex._global_batch = n
                batch_key = k
                break
        if _last(k) in _BATCH_KEYS or (_last(k) in per_process and _last(k) in _GLOBAL_BATCH_KEYS):
            # (a "global"-sounding key the code hands to its DataLoader undivided is per process)
            n = _as_int(v[0] if isinstance(v, list) and len(v) == 1 else v)  # train_batch_sizes: [8]
            if n and n > 0:
                md.batch_size, md.sources["batch_size"] = n, s
                batch_key = k
                gb = getattr(ex, "global_batch", ())
                loop_code = "\n".join(getattr(ex, "code_texts", []))
                if named_total(loop_code, k) or splits_batches(loop_code):
                    gb = {*gb, k}  # (the code names the option the global batch: `GLOBAL_BATCH_SIZE, value=args.bs`;
                    # accelerate splits each loader batch over the processes: `Accelerator(split_batches=True)`)
                if k in gb or ("." in k and _last(k) in {x.lower() for x in gb if "." not in x}):
                    # the script's help: "total batch size for all GPUs"; the code divides it by the process count
                    # (`cfg.TRAIN.BATCH_SIZE / cfg.NUM_GPUS`: a yacs key by its last segment)
                    ex._global_batch = n
                    md.sources["batch_size"] = s + " (documented as the total over all GPUs, divided below)"
                break
    _batch_model(ex, md, ranked, batch_key)
    ex._batch_key = batch_key  # (the option the batch was read from: its scope's mechanism is looked up by it)
    # GPUs and nodes
    nodes = ex.nodes[0] if ex.nodes else None
    code_nodes = _code_int(ex, {"num_nodes"})
    code_dev = _code_int(ex, {"devices", "gpus", "n_gpu", "num_gpus"})
    if code_dev is None:
        for k, v, p, s in ranked:
            if (_last(k) in _GPU_ARG_KEYS or _last(k) in _DEVICE_LIST_KEYS) and p >= P_DEFAULT and \
                    ("." not in k or (_last(k).endswith("per_node") and "distributed" in k.lower())):
                # a config's DISTRIBUTED.NUM_PROC_PER_NODE too (a per-node count cannot mean anything else)
                listed = isinstance(v, (list, tuple)) or (isinstance(v, str) and re.search(r"[,\s]", v.strip()))
                n = _as_int(v) if _last(k) in _GPU_ARG_KEYS and not listed else None  # (`--gpus 0,1`: two ids, not 1)
                n = n or _device_count(v)
                if n and n > 1 and p < P_OVERRIDE and _multi_gpu_off(ranked):
                    continue  # a defaulted device list used only behind a multi-GPU switch the command leaves off
                if n and n > 0:
                    code_dev = (n, s)
                    break
    if nodes is None and code_nodes:
        nodes = code_nodes[0]
        md.sources["nodes"] = code_nodes[1]
    elif ex.nodes:
        md.sources["nodes"] = ex.nodes[2]
    if nodes is None and not code_nodes:
        found = _argv_nodes(ranked, ex)
        if found:
            nodes, md.sources["nodes"] = found
    nodes = nodes or 1
    md.nodes = nodes
    md.sources.setdefault("nodes", "default 1")
    if ex.total_gpus:
        md.gpus, md.sources["gpus"] = ex.total_gpus[0], ex.total_gpus[2]
        if not ex.nodes and not code_nodes:
            md.nodes = 1
    elif ex.gpus and (ex.gpus[1] >= 40 or not code_dev):
        md.gpus, md.sources["gpus"] = ex.gpus[0] * nodes, ex.gpus[2]
    elif code_dev:
        md.gpus, md.sources["gpus"] = code_dev[0] * nodes, code_dev[1]
    elif ex.gpus:
        md.gpus, md.sources["gpus"] = ex.gpus[0] * nodes, ex.gpus[2]
    else:
        md.gpus, md.sources["gpus"] = nodes, "default 1 per node"
    if not ex.total_gpus and not (ex.gpus and ex.gpus[1] >= P_LAUNCH):
        world = _first_int(ranked, _TOTAL_GPU_KEYS)
        if world:  # fairseq's distributed_world_size: every GPU of the job
            md.gpus, md.sources["gpus"] = world
        cpu = _cpu_device(ranked)
        if cpu:
            md.gpus, md.sources["gpus"] = 0, cpu
    accum = md.grad_accum or 1
    if getattr(ex, "_global_batch", None) and md.gpus:
        md.batch_size = max(1, ex._global_batch // (md.gpus * accum))
    if md.batch_size is not None:
        if md.global_batch is None:
            md.global_batch = md.batch_size * max(1, md.gpus or 1) * accum
        elif getattr(ex, "_global_batch", None) is None and md.batch_scope == "global" and md.gpus:
            pass
    # task: code signals, then dataset, then model
    # the entry's and configs' names first (pretrain_gpt.py), then everything the code says (a large
    # shared parser may define options of other objectives: Megatron's DINO options)
    sig = task_from_signals(" ".join(ex.task_names)) or task_from_signals(" ".join(ex.task_text))
    code_obj = task_from_objective(ex.code_texts)
    prog = _program_task(ex)
    fam_sig = family_task(md.model)
    if sig == "image-classification" and fam_sig and fam_sig != sig:
        sig = fam_sig  # a timm-built detector or restorer: the family says more than "timm" does
    if sig and prog and prog != sig:
        sig = prog  # the parser's own description ("Set transformer detector") over a word in a file name
    if sig:
        md.task, md.sources["task"] = sig, "code signal (class / script / config type)"
    entry_path = str(PurePosixPath(str(ex.task_names[0])).with_suffix("")) if ex.task_names else ""
    named = task_from_names(entry_path)
    if named is None and len(ex.task_names) > 1:  # a generic train.py: the config's name (caption_coco_ft.yaml)
        named = task_from_names(" ".join(str(PurePosixPath(str(n)).stem) for n in ex.task_names[1:3]))
    sig_from_names = task_from_signals(" ".join(ex.task_names)) is not None
    if named == "segmentation":  # a `segment/train.py` entry: instance masks on detection data, else per pixel
        named = "instance-segmentation" if (md.dataset == "coco" or (code_obj and code_obj[0] == "object-detection")) \
            else "semantic-segmentation"
    if named in ("image-generation", "image-autoencoding") and _video_data(ranked):
        named = named.replace("image-", "video-")  # a diffusion model or an autoencoder trained on video clips
    if named and (sig is None or sig in ("image-classification", "object-detection") or
                  (named.endswith("segmentation") and not sig_from_names) or
                  (not sig_from_names and named == "image-classification" and sig == "image-generation")):
        # (the entry's own name, `classifier_train.py`, over option names it shares with a generator's code)
        # (an option name such as `--mask-ratio` says less than a `segment/` entry folder)
        md.task, md.sources["task"] = named, f"entry name {ex.task_names[0]}"
    fam = family_task(md.model) if md.task is None else None
    if fam:  # the architecture built says the task before the generic objective identifiers (a DeepLab classifies
        # pixels with a cross-entropy loss and `num_classes`: it segments)
        md.task, md.sources["task"] = fam, f"model family of {md.model}" + (
            " (the training objective agrees)" if code_obj and code_obj[0] == fam else "")
    obj = code_obj if md.task is None else None
    if obj:
        md.task, md.sources["task"] = obj[0], f"objective in the training code ({obj[1]} signals)"
        if DATASET_TASK.get(md.dataset or "") == obj[0]:  # the data's usual task is the same: two signals agree
            md.sources["task"] += " (the data agrees)"
        modes = {str(v).lower() for k, v, p, s in ranked if p >= P_ARGV - 5 and "mode" in _last(k)}
        mode = next(iter(modes & {"finetune", "fine_tune", "linear", "lincls", "linear_eval", "eval_linear"}), "")
        if obj[0] == "self-supervised-pretraining" and mode:
            # the same pretraining program run to fit a classifier on the features (SimCLR's finetune mode)
            md.task, md.sources["task"] = "image-classification", f"{obj[0]} code run in mode {mode}"
    fam = family_task(md.model) if md.task is None else None
    if fam:
        md.task, md.sources["task"] = fam, f"model family of {md.model}"
    if md.task == "self-supervised-pretraining" and md.sources.get("task", "").startswith("code signal") and \
            _DOWNSTREAM.search(" ".join([*map(str, ex.task_names), *[a for a in ex.argv if a.startswith("--")]]).lower()):
        # a method's name (SimMIM, MSN) on its fine-tuning or linear-evaluation entry: a classifier is trained
        md.task, md.sources["task"] = "image-classification", "downstream run of a self-supervised method (entry / flag)"
    if md.task is None and md.dataset and md.dataset.startswith(("atari-", "mujoco-", "pybullet-", "gym-")):
        md.task, md.sources["task"] = "reinforcement-learning", f"environment {md.dataset}"
    if md.task is None and md.dataset in DATASET_TASK:
        md.task, md.sources["task"] = DATASET_TASK[md.dataset], f"dataset {md.dataset}"
    elif obj and obj[0] == "image-classification" and DATASET_TASK.get(md.dataset, "").endswith("-classification"):
        # a classifier's objective on clips or point clouds: the data says which kind of classification
        md.task, md.sources["task"] = DATASET_TASK[md.dataset], f"classification objective on {md.dataset}"
    if md.task is None and md.model in MODEL_TASK:
        md.task, md.sources["task"] = MODEL_TASK[md.model], f"model {md.model}"
    if md.task is None and md.model and _LM_FAMILY.match(md.model):  # a size we do not list (gpt2-xl, opt-1.3b)
        md.task, md.sources["task"] = "language-modeling", f"model family of {md.model}"
    if md.task == "image-generation" and _text_data(ranked) and not md.sources.get("task", "").startswith(
            ("entry name", "model")):
        # generator / discriminator signals on text (ELECTRA's replaced-token detection): not an image generator,
        # and which text task is not said: unknown
        md.task = None
        md.sources["task"] = "unknown (generative signals on text data)"
    if md.task == "image-generation" and _translation_setup(ranked):
        # a generator trained to map images between domains (cycle / domain / direction / label-map settings)
        md.task, md.sources["task"] = "image-to-image-translation", md.sources.get("task", "") + " with domain-translation settings"
    if md.task == "image-generation" and _audio_data(ranked):
        # a generator (a GAN vocoder, a diffusion model) whose data configuration is audio: speech synthesis
        md.task, md.sources["task"] = "speech-synthesis", md.sources.get("task", "") + " on audio data"
    if md.task == "object-detection" and ds_raw and "panoptic" in ds_raw.lower():
        md.task = "panoptic-segmentation"  # COCO's panoptic annotations: the same images, another task
    if md.task == "summarization" and md.dataset == "wmt14-en-de":
        md.task = "translation"
    if md.task == "image-classification" and md.sources.get("task", "").startswith("objective in the training code"):
        # classifier identifiers (a cross-entropy loss, `num_classes`, an accuracy) belong to every supervised task:
        # on data whose usual task is another modality's, the data says which; on text data, nothing says
        data_task = DATASET_TASK.get(md.dataset or "")
        if data_task and not data_task.endswith("classification") and data_task not in _VISION_DENSE:
            md.task, md.sources["task"] = data_task, f"classification identifiers on {md.dataset} data"
        elif data_task is None and _text_data(ranked):
            md.task, md.sources["task"] = None, "unknown (classification identifiers on text data)"
    if md.task is None and md.model:
        md.task, md.sources["task"] = "image-classification", "vision model default"
        if not known_model(md.model):
            md.task, md.sources["task"] = None, "unknown"
    _check_description(ex, md)
    mode = _task_mode(ranked, md.task) if md.task is not None else None
    if mode:
        # the command picks the job's task by a mode option whose value shares no word with the task answered
        # (`--data_type structure` in a repository whose code detects boxes): another task of the same code
        md.task, md.sources["task"] = None, f"unknown (the command selects the task {mode})"
    masks = _instance_masks(ex, ranked) if md.task == "object-detection" and "object-detection" not in (
        MODEL_TASK.get(md.model or ""), family_task(md.model)) else None
    if masks:
        # a detector trained with instance masks: object detection and instance segmentation share every code signal
        # (boxes, anchors, COCO); not told apart -> unknown. (A model the vocabulary files as a detector, Mask R-CNN,
        # keeps its convention: its documented jobs are labelled object detection as often as not.)
        md.task, md.sources["task"] = None, f"unknown (a detector trained with instance masks: {masks})"
    if md.task is None:
        md.sources.pop("task", None)
    return md

#: a config's data folder (a child config pointing its base's dataset at other data)
_DATA_FOLDER_KEYS = {"data_root", "root", "data_dir", "data_path", "dataset_root", "root_dir", "img_dir"}
#: settings that count the classes of the data (the variant of a family: Kinetics-400 / 600 / 700)
_CLASS_COUNT_KEYS = {"num_classes", "n_classes", "num_class", "n_class", "nb_classes", "number_classes", "classes"}
#: family-variant marker in a dataset's rule text (features.schedmate_text.evidence lowers such an answer)
FAMILY_UNRESOLVED = " (a family of variants; which one the job uses is not said)"


def _resolve_family(ex, md: JobMetadata, ranked, raw: str | None) -> None:
    """A dataset family's variant (`kinetics` -> kinetics-400): from a class-count setting of the job whose value is
    one variant's (`MODEL.NUM_CLASSES: 400`, `--n_classes 700`), else from the code that handles the family's name (a
    `return_kinetics()` / `if dataset == 'something':` block naming a variant's path or class count); left a family,
    the rule text says so and the answer is lowered below the threshold."""
    family = md.dataset
    variants = DATASET_FAMILIES.get(family, {})
    for k, v, p, s in ranked:
        if p >= P_DEFAULT and _last(k).lower() in _CLASS_COUNT_KEYS and not _EVAL_PATH.search(k.lower()):
            n = _as_int(v)
            if n in variants:
                md.dataset = variants[n]
                md.sources["dataset"] = md.sources.get("dataset", "") + f" + {s} {_last(k)}={n} (the variant's classes)"
                return
            break  # (the job's own class count names no variant: the code's table is not asked)
    leaf = (raw or family).strip().lower().rsplit("/", 1)[-1]
    name = "|".join(re.escape(x) for x in {leaf, family.replace("-", "_")} if re.fullmatch(r"[\w-]+", x)) or "$^"
    name = f"(?:{name})"
    code = "\n".join(getattr(ex, "code_texts", []))
    head = re.compile(rf"(?im)^[^\n#]*(?:def\s+\w*?_{name}\s*\(|==\s*['\"]{name}['\"]\s*:)")
    found = set()
    for m in head.finditer(code):
        block = code[m.end():].split("\n")[1:13]
        block = block[:next((i for i, line in enumerate(block) if re.match(r"\s*(def |elif |else)", line) and
                             i > 0), len(block))]
        text = "\n".join(block)
        for q in re.findall(r"['\"]([^'\"\n]{3,80})['\"]", text):
            c = canonical_dataset(q)
            if c and c.startswith(family + "-"):
                found.add(c)
        for n in re.findall(r"\b(\d{3})\b", text):
            if int(n) in variants:
                found.add(variants[int(n)])
    if len(found) == 1:
        md.dataset = found.pop()
        md.sources["dataset"] = md.sources.get("dataset", "") + f" + the code's {family} block (its variant)"
        return
    md.sources["dataset"] = md.sources.get("dataset", "") + FAMILY_UNRESOLVED


# keys whose value names a model only when it is a name we know (a weights file, a checkpoint folder
# such as BERT's uncased_L-12_H-768_A-12, a model config file)
_WEAK_MODEL_KEYS = ("weights", "cfg", "init_checkpoint", "bert_config_file", "model_config_file", "model_config",
                    "checkpoint_dir", "policy")  # (`--policy TD3` names an RL algorithm; `--policy Gaussian` does not)
_FILE_EXT = re.compile(r"\.(jsonl?|csv|tsv|txt|parquet|arrow|tar|tar\.gz|tgz|zip|npz|h5|hdf5|pkl|tfrecords?)$", re.I)


#: a size or quality level alone (a part of a dataset: D4RL's `medium`, a `small` subset), no dataset's name
_PART_WORD = re.compile(r"tiny|mini|small|medium|large|expert|replay|mixed|full|sample")  # (`random`: generated data)


def _name_of_path(v: str) -> str | None:
    """The name a data path gives: its last segment without a data-file extension (None for a bare
    variable name a documented command leaves for the user to set, `DATA_PATH`)."""
    bare = v.strip().strip("/")
    if re.fullmatch(r"[A-Z][A-Z0-9]*_[A-Z0-9_]+|[A-Z]+(PATH|DIR|ROOT|FOLDER|FILE)", bare) or _PLACEHOLDER_VALUE.search(v):
        # (`DATA_PATH` is a variable the doc leaves to the user; `STL10`, `MNIST` are dataset names)
        return None  # (`<path_to_IN1K_dataset>`, `your_path_to_data`: the user's path names nothing)
    segs = [x for x in re.split(r"[/\\]", v.strip()) if x]
    if not segs or len(segs) == 1 and _PART_WORD.fullmatch(segs[0].lower()):
        return None  # (`--dataset medium` beside `--env hopper`: a size or quality level names a part, not the data)
    seg = segs[-1]
    if len(segs) > 1 and re.fullmatch(r"(train|training|dev|val|test|all)(_data)?", _FILE_EXT.sub("", seg).lower()):
        seg = segs[-2]  # AdvertiseGen/train.json: the folder names the data, the file a split
    return norm(_FILE_EXT.sub("", seg))


# step counts that are not the training's length: a sampler's or a discretization's steps, a scheduler's
_NOT_TRAINING_LENGTH = re.compile(r"(^|\.)[a-z_]*(sampler|sampling|discretization|guider|scheduler|warmup)[a-z_]*\.")
_LM_FAMILY = re.compile(r"(?:^|.*-)(gpt|llama|opt-|bloom|falcon|mistral|mixtral|qwen|pythia|gemma|phi-|olmo|mpt-|stablelm|vicuna|"
                        r"chatglm|glm-|baichuan|internlm|deepseek|yi-\d)")


# a documentation placeholder the user replaces (`<your_path_to_hf_converted_llama>`, `/path/to/model`):
# it names no model, so it is no answer (unknown beats a confident wrong value)
_PLACEHOLDER_VALUE = re.compile(r"^[<\[{].*[>\]}]$|(^|[-_/<\[ ])(your|path[-_ ]?to|xxx+|todo)([-_/>\] ]|$)", re.I)
# a wrapper class named for its role, not its architecture (SegmentationModel, DetectionModel, BaseModel)
_GENERIC_CLASS = re.compile(r"^(segmentation|detection|classification|keypoint|pose|base|my|custom)-?(model|network|module|wrapper)$|"
                            # a bare role (Generator, Discriminator) or a training utility (EMA, a scaler), not a network
                            r"^(generator|discriminator|encoder|decoder|model|net|network|module|critic|actor)$|"
                            r"^.*(moving-?average|ema|scaler|optimizer|scheduler|logger|writer|meter|sampler|loader|"
                            r"dataset|trainer|loss|criterion|checkpointer|helper|path|config|args|parser|timer|registry|"
                            r"q-?network|value-?network|policy|policy-?network|actor-?critic|critic|replay-?(buffer|memory)|"
                            # a building block or a side part (AttnBlock, ChanNorm, MultiHeadAttn, a data preprocessor,
                            # a vocoder): what a network is made of or fed by, never the network trained
                            r"block|layer|norm|attn|attention|embedding|preprocessor|vocoder|residual|upsample|"
                            r"downsample)$")


def _class_name_words(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "-", str(name)).lower()


# config sections of a part that is never the model trained: the data preprocessor, the vocoder that turns a TTS
# model's spectrograms into audio, the tokenizer, the EMA copy, the loss, a distillation teacher, a GAN's discriminator
_ROLE_PATH = re.compile(r"(^|[._])(\w*preprocessor|vocoder|tokenizer|ema|loss|criterion|teacher|discriminator|net_d)([._]|$)")
#: an option by which one run starts from another's weights (a chain of stages, not a sweep of runs)
_CONTINUES = re.compile(r"--?[\w-]*(restore|resume|ckpt|checkpoint|pretrain|init[-_]from|load|weights|finetune_from)[\w-]*[= ]",
                        re.I)


def _sum_stages(ex, md) -> None:
    """A script that runs its training program several times in a row (pre-train, then fine-tune stages, each
    restoring the last): the job's length is the stages' lengths together when every stage states it with the
    option the last stage's was read from; otherwise the last stage's length is no answer (marked for the evidence
    layer)."""
    stages = getattr(ex, "stages", None) or []
    src = md.sources.get("iterations", "")
    if len(stages) < 2 or not src.startswith("argv --"):
        return
    key = src[len("argv --"):].split()[0]
    opt = re.compile(r"(?:^|\s)--?" + re.escape(key).replace("_", "[-_]") + r"(?:=|\s+)(\d+)(?:\s|$)")
    values = [opt.search(x) for x in stages]
    if all(values) and not any(_CONTINUES.search(x) for x in stages[1:]) and \
            len({m.group(1) for m in values}) == 1:
        # no run restores another's weights: independent runs of one sweep (horizons, seeds), each this long
        md.sources["iterations"] = f"{src} (each of the script's {len(stages)} independent runs: none restores another)"
    elif all(values):
        md.iterations = sum(int(m.group(1)) for m in values)
        md.sources["iterations"] = f"{src} (summed over the script's {len(stages)} stages: " + \
            " + ".join(m.group(1) for m in values) + ")"
    else:
        md.sources["iterations"] = f"{src} (the last of the script's {len(stages)} stages)"


# a switch that turns on the use of several GPUs (`--use_multi_gpu`, `--multi_gpu`, `--multigpu`)
_MULTI_GPU_SWITCH = re.compile(r"^(use_)?multi_?gpus?$|^use_multiple_gpus?$")


def _multi_gpu_off(ranked) -> bool:
    """The job's settings hold a multi-GPU switch that is off: its own flag, not the command's, decides whether a
    device list is used (`--devices 0,1,2,3` is read only `if args.use_multi_gpu`)."""
    for k, v, p, s in ranked:
        if "." not in k and _MULTI_GPU_SWITCH.match(_last(k)):
            return v in (False, 0) or (isinstance(v, str) and v.strip().lower() in ("false", "0", "no", ""))
    return False


# sections that configure a part of the network (MODEL.SEM_SEG_HEAD.NAME: MaskFormerHead), not the network
_PART = re.compile(r"head|decoder|neck|loss|criterion|matcher|pixel|roi|proposal|rpn|anchor|postprocess|normali[sz]ation|"
                   r"activation|(^|\.)(norm|act|layer)(\.|$)")
_DEPTH_FAMILY = r"resnet|preresnet|preact-?resnet|pyramidnet|resnext|wide-resnet|vgg|densenet|regnet|efficientnet|mobilenet"


def _model_section_name(k: str) -> bool:
    """`config.MODEL.TRUNK.NAME`: the name of a model section's network (its trunk / backbone / encoder)."""
    segs = k.lower().split(".")
    return len(segs) >= 2 and segs[-1] in ("name", "_name", "type", "arch", "model_name") and \
        segs[-2] in ("model", "trunk", "backbone", "encoder", "network", "network_g", "net_g", "generator")


_ANN_KEY = re.compile(r"(^|_)ann(otation)?s?(_(file|path))?(_|$)")  # train_ann, ann_file: the annotation file names the data
_GENERIC_PROGRAM = {"pytorch", "tensorflow", "imagenet", "pytorch-lightning", "jax", "keras", "cuda", "gpu", "ddp"}


def _program_model(ex) -> str | None:
    """The architecture an ArgumentParser's name starts with, when it is written as a model's name is
    (DETR, ConvNeXt, DeiT: two or more capitals, not a framework's name)."""
    for text in getattr(ex, "programs", []):
        words = []
        for w in text.split():  # the leading capitalised words: `Deformable DETR Detector` -> deformable-detr
            if not w[:1].isupper():
                break
            words.append(w)
        while words and words[-1].lower() in _PROGRAM_ROLE:
            words.pop()
        if words and len(words) <= 3 and any(re.fullmatch(r"[A-Z][A-Za-z0-9-]*[A-Z][A-Za-z0-9-]*", w) and
                                             w.lower() not in _GENERIC_PROGRAM for w in words):
            return norm("-".join(words))
    return None


_DOWNSTREAM = re.compile(r"(^|[/_ .-])(finetune|fine_tune|fine-tune|lincls|linear[_-]?eval|lineval|linear[_-]?probe)")


_AUDIO_KEYS = re.compile(r"^(sampling_rate|sample_rate|n_mels|num_mels|n_mel_channels|hop_size|hop_length|win_size|"
                         r"win_length|n_fft|filter_length|mel_fmin|mel_fmax|fmax_for_loss)$")


_TEXT_KEYS = re.compile(r"^(vocab_size|max_seq_length|max_seq_len|tokenizer|vocab_file|tokenizer_name|do_lower_case|"
                        r"max_predictions_per_seq|mask_prob)$")


def _text_data(ranked) -> bool:
    """The configuration says text: at least two of its keys are tokenizer / sequence settings."""
    return len({_last(k) for k, v, p, s in ranked if p >= P_CODE and _TEXT_KEYS.match(_last(k))}) >= 2


#: model-key values that name no network (`model.type: simple`, `--model default`, `scratch`)
_GENERIC_VALUES = {"scratch", "resume", "none", "null", "", "simple", "default", "base", "custom", "standard", "basic"}


#: per-update rollout lengths of on-policy RL scripts, and the keys that give an RL run's whole length
_ROLLOUT_KEYS = {"num_steps", "n_steps", "nsteps", "rollout_length", "num_rollout_steps"}
_RUN_STEP_KEYS = {"num_env_steps", "total_timesteps", "max_timesteps", "total_env_steps", "num_timesteps",
                  "num_timesteps_total"}


_TRANSLATION_KEYS = re.compile(r"^(lambda_cyc|lambda_cycle|lambda_rec|num_domains|c_dim|c2_dim|direction|which_direction|"
                               r"label_nc|semantic_nc|dataset_mode|lambda_idt|lambda_identity|cut_mode|selected_attrs)$")


def _translation_setup(ranked) -> bool:
    """The options say image-to-image translation: at least two domain / cycle / direction / label-map settings."""
    return len({_last(k) for k, v, p, s in ranked if p >= P_DEFAULT and _TRANSLATION_KEYS.match(_last(k).lower())}) >= 2


def _sizes_data(ex, key: str) -> bool:
    """The entry hands this step option to a function that builds or loads the data (`create_dataset(...,
    args.num_steps, ...)`, `load_replay_buffer(args.num_steps)`) and to nothing else: a data size, not the run's length."""
    text = getattr(ex, "files", {}).get(getattr(ex, "entry", None) or "") or ""
    uses = [m for m in re.finditer(rf"\b(?:args|opt|config|cfg|FLAGS)\.{re.escape(key)}\b", text)]
    if not uses:
        return False
    data_call = re.compile(r"\b\w*(?:create|make|build|load|get)_?\w*(?:data|dataset|buffer|replay)\w*\s*\([^()]*$", re.I)
    return all(data_call.search(text[max(0, m.start() - 200):m.start()].split("\n")[-1]) for m in uses)


def _loop_bound(ex, ranked):
    """The setting the entry's epoch loop is bounded by (`epochs = config.get('epochs_1st', 200)` ... `for epoch in
    range(start_epoch, epochs)`): (n, "epochs", priority, source, True, key) from the job's value of that setting."""
    from features.schedmate_text.pyast import analyse_source

    text = getattr(ex, "files", {}).get(getattr(ex, "entry", None) or "")
    info = analyse_source(text) if text else None
    key = getattr(info, "loop_key", None)
    if not key:
        return None
    found = []
    for part in key.split("+"):  # (`END_EPOCH + EXTRA_EPOCH`: every part must be the job's setting)
        hit = next(((n, p, s, k) for k, v, p, s in ranked for n in [_as_int(v)] if _last(k) == part.lower() and
                    p >= P_DEFAULT and n is not None and n >= 0 and not _EVAL_PATH.search(k.lower())), None)
        if hit is None and len(key.split("+")) > 1:  # a part the job leaves at its config default (yacs:
            # `_C.TRAIN.EXTRA_EPOCH = 0` in the defaults module): one literal default in the repository's code
            vals = {int(m.group(1)) for f, t in getattr(ex, "files", {}).items() if f.endswith(".py") and part in t
                    for m in re.finditer(rf"(?m)^\s*[\w.]*\.{re.escape(part)}\s*=\s*(\d+)\s*(?:#.*)?$", t)}
            if len(vals) == 1:
                hit = (vals.pop(), P_DEFAULT, f"config default {part}", part)
        if hit is None:
            return None
        found.append(hit)
    n = sum(h[0] for h in found)
    if n <= 0:
        return None
    top = max(found, key=lambda h: h[1])
    return n, "epochs", top[1], top[2] + f" (the entry's epoch loop is bounded by {key.replace('+', ' + ')})", True, \
        found[0][3] if len(found) == 1 else key


def _decay_pair(ranked):
    """`niter` + `niter_decay` (`n_epochs` + `n_epochs_decay`): the pix2pix / CycleGAN family's epoch counters, whose
    sum is the run's length in epochs."""
    vals: dict[str, tuple] = {}
    for k, v, p, s in ranked:
        lk = _last(k)
        if lk in ("niter", "niter_decay", "n_epochs", "n_epochs_decay") and lk not in vals and _as_int(v) is not None \
                and p >= P_DEFAULT and "." not in k:
            vals[lk] = (_as_int(v), p, s)
    for a in ("niter", "n_epochs"):
        if a in vals and a + "_decay" in vals:
            n = vals[a][0] + vals[a + "_decay"][0]
            if n > 0:
                hi = max((vals[a], vals[a + "_decay"]), key=lambda x: x[1])
                return (n, "epochs", hi[1], f"{vals[a][2]} + {a}_decay", True)
    return None


def _loader_batches(ex) -> set[str]:
    """Batch keys the entry's imported modules hand undivided to a DataLoader (a data module's
    `batch_size=self.train_batch_size`): per process, whatever their name says."""
    from features.schedmate_text.follow import undivided_batches

    return undivided_batches("\n".join(getattr(ex, "code_texts", [])[1:]))


def _uses(code: str, key: str) -> bool:
    """The code reads a setting by this name (`cfg.training.n_iters`, `config["n_iters"]`, `args.n_iters`)."""
    return re.search(rf"\.{re.escape(key)}\b|[\"']{re.escape(key)}[\"']", code) is not None


#: image architectures whose short names other domains' models share (`vits`: ViT-S and the VITS speech synthesiser)
_IMAGE_FAMILY = re.compile(r"^(?:vit|deit|swin|beit|resnet|resnext|convnext|efficientnet|mobilenet|regnet|vgg|densenet|"
                           r"dla)(?:$|-|\d)")


def _domain_check_model(md: JobMetadata, written, ranked) -> None:
    """A name read from text that the vocabulary expands to an image architecture (`vits` -> vit-small) is checked
    against the data the code reads: on audio or text data the expansion is a name collision, and the name stays as
    written (the VITS speech synthesiser is not a ViT-S)."""
    from features.schedmate_text.vocab import _strip_org

    raw = norm(_strip_org(str(written))) if written is not None else None
    if not md.model or not raw or raw == md.model or not _IMAGE_FAMILY.match(md.model) or raw.startswith(md.model):
        return
    domain = "audio" if _audio_data(ranked) else "text" if _text_data(ranked) else None
    if domain:
        md.sources["model"] = md.sources.get("model", "") + f" (as written: {md.model} is an image architecture, " \
                                                            f"the data are {domain})"
        md.model = raw


_TASK_MODE_KEYS = frozenset({"task", "task_name", "task_type", "data_type", "problem", "problem_type"})


def _task_mode(ranked, task: str) -> str | None:
    """`--<mode key> value` stated by the command (not a default) whose value's words share none with the task's name
    (its nouns in any form: detector / detection; an abbreviation holding a word's first three letters: `ctdet`);
    None when it agrees or names a dataset or a model."""
    from features.schedmate_text.describe import _TASK_NOUNS

    words = {_TASK_NOUNS.get(w, w) for w in task.split("-")}
    for k, v, p, s in ranked:
        if p < P_OVERRIDE or _last(k).lower() not in _TASK_MODE_KEYS or not isinstance(v, str) or not v.strip():
            continue
        vals = {_TASK_NOUNS.get(w, w) for w in re.split(r"[^a-z0-9]+", v.lower()) if w}
        stems = {w[:3] for w in words if len(w) >= 4}  # abbreviations: `ctdet` (detection), `semseg`
        if vals & words or any(st in x for st in stems for x in vals) or canonical_dataset(v) or known_model(v) or vals <= {"train", "training", "finetune", "pretrain"}:
            return None
        return f"--{_last(k)} {v}"
    return None


_MASK_KEYS = re.compile(r"^(?:mask_on|with_mask|masks|use_mask|with_seg)$", re.I)
_MASK_PATH = re.compile(r"instance[-_ ]?seg|ins[-_]seg|(?:^|[/_-])(?:mask[-_]?rcnn|cond[-_]?inst|solo|blend[-_]?mask)",
                        re.I)


def _instance_masks(ex, ranked) -> str | None:
    """Where the job's settings switch instance masks on (`MODEL.MASK_ON: True`, `with_mask=True`, `--masks`) or
    its config file names an instance-segmentation setup; None otherwise."""
    for k, v, p, s in ranked:
        if p >= P_CONFIG - 30 and _MASK_KEYS.match(_last(k)) and v is True or str(v).lower() == "true" and \
                p >= P_CONFIG - 30 and _MASK_KEYS.match(_last(k)):
            return f"{k} = {v} ({s})"
    for f in sorted(getattr(ex, "loaded", ()) or ()):
        if _MASK_PATH.search(f):
            return f"config {f}"
    return None


def _audio_data(ranked) -> bool:
    """The data configuration says audio: at least two of its keys are spectrogram / sampling settings."""
    return len({_last(k) for k, v, p, s in ranked if p >= P_CODE and _AUDIO_KEYS.match(_last(k))}) >= 2


def _video_data(ranked) -> bool:
    """The data configuration says video (a `video_text` dataset type, frame counts)."""
    return any(isinstance(v, str) and re.search(r"(^|_)video(_|$)", v.lower()) and ("data" in k.lower() or _last(k) == "type")
               for k, v, p, s in ranked if p >= P_CONFIG - 5)  # (a base config counts)


#: dense vision tasks a classification objective's identifiers may also come from (not overridden by the data)
_VISION_DENSE = {"object-detection", "semantic-segmentation", "panoptic-segmentation", "instance-segmentation"}
#: task sources that are weak evidence: the code's generic identifiers, the data's usual task, a default
_WEAK_TASK_SOURCES = ("objective in the training code", "dataset ", "vision model default", "classification identifiers on",
                      "model ")
#: what a repository of a pretraining or generative method describes, while one of its entries trains the downstream or
#: auxiliary classifier (a linear evaluation, a guidance classifier): no contradiction
_STAGE_TASKS = {"self-supervised-pretraining", "image-generation", "image-text-pretraining"}


def _check_description(ex, md: JobMetadata) -> None:
    """The repository's own description (features.schedmate_text.describe) against the task inferred: it answers
    when nothing else did, replaces a weak inference it contradicts, marks a strong one it contradicts as disputed
    (the evidence then abstains) and one it agrees with as confirmed."""
    from features.schedmate_text.describe import repository_description, task_from_description

    cache = ex._repo.__dict__.setdefault("description_task", {})
    texts = ex._repo.__dict__.setdefault("description_text", {})
    key = (ex.entry, tuple(getattr(ex, "programs", [])))
    if key not in texts:
        texts[key] = repository_description(ex.files, ex.entry, getattr(ex, "programs", []))
    if key not in cache:
        cache[key] = task_from_description(texts[key])
    _description_task(md, cache[key])
    other = description_veto(texts[key], md.task, md.sources.get("task", ""))
    if other:
        md.sources["task"] += f" (the repository description says {other})"


def description_veto(text: str, task: str | None, src: str) -> str | None:
    """An open-set veto: the task phrase of the repository's description (even one outside the vocabulary: "video
    object segmentation", "multi-object tracking") that the answered task's name does not cover while no phrase of
    the description agrees with it (features.schedmate_text.describe.disagreeing_task_phrase); None where the task
    stands. The evidence then holds the task below the threshold."""
    from features.schedmate_text.describe import disagreeing_task_phrase

    if task is None or "(the repository description says" in src:
        return None
    return disagreeing_task_phrase(text, task)


def _description_task(md: JobMetadata, desc: str | None) -> None:
    """The one vocabulary task the description names (or None) against the task inferred."""
    from features.schedmate_text.describe import compatible_tasks, specialisations as _specialisations

    if desc is None:
        return
    src = md.sources.get("task", "")
    if md.task is None:
        if not src.startswith("unknown"):  # (a task withdrawn for a reason stays unknown)
            md.task, md.sources["task"] = desc, "repository description"
        return
    if desc == md.task:
        md.sources["task"] = src + " (the repository description agrees)"
    elif compatible_tasks(md.task, desc) and desc in _specialisations(md.task):
        md.task, md.sources["task"] = desc, f"repository description (refines {src})"  # a GAN that translates images
    elif compatible_tasks(desc, md.task):
        pass  # the code's task is the finer one (an autoencoder in a repository of generative models)
    elif src.startswith(_WEAK_TASK_SOURCES) and not src.startswith("model family"):
        md.task, md.sources["task"] = desc, f"repository description (over {src})"
    elif not (md.task == "image-classification" and desc in _STAGE_TASKS):
        md.sources["task"] = src + f" (the repository description says {desc})"


def _program_task(ex) -> str | None:
    """The task an ArgumentParser's description names: a detector / detection, a segmenter."""
    for text in getattr(ex, "programs", []):
        t = text.lower()
        if re.search(r"\bdetect(or|ion)\b", t):
            return "object-detection"
    return None


# a parser name's trailing role words (not part of the architecture's name)
_PROGRAM_ROLE = {"detector", "training", "trainer", "model", "script", "evaluation", "pretraining", "finetuning",
                 "fine-tuning", "args", "arguments", "parser", "train", "options", "config"}


def _first_int(ranked, keys: set[str], min_prio: int = P_DEFAULT) -> tuple[int, str] | None:
    """The highest-priority positive integer among settings named by `keys` (a list counts by its first
    element: fairseq's update_freq: [2])."""
    for k, v, p, s in ranked:
        if _last(k) in keys and p >= min_prio and not _EVAL_PATH.search(k.lower()):
            n = _as_int(v[0] if isinstance(v, list) and v else v)
            if n and n > 0:
                return n, s
    return None


def _batch_model(ex, md: JobMetadata, ranked, batch_key: str | None) -> None:
    """Scope, unit and accumulation of the batch: a plain `batch_size` next to a smaller micro batch is
    the global one (alpaca-lora style: micro x accumulation = batch); fairseq's --max-tokens is a
    per-GPU batch in tokens; `train_batch_size` (DeepSpeed, BERT scripts) and `ims_per_batch` are global."""
    acc = _first_int(ranked, _ACCUM_KEYS, P_CODE)
    if acc:
        md.grad_accum, md.sources["grad_accum"] = acc
    md.batch_scope, md.batch_unit = ("global" if getattr(ex, "_global_batch", None) else "per-device"), "samples"
    if batch_key is not None and _last(batch_key) in _MICRO_BATCH_KEYS:
        plain = _first_int(ranked, {"batch_size"})
        if plain and plain[0] > (md.batch_size or 0):
            md.global_batch, md.batch_scope = plain[0], "global"
    if batch_key is not None and _last(batch_key) in ("batch_size", "bs", "b"):
        micro = _first_int(ranked, _MICRO_BATCH_KEYS)
        if micro and micro[0] < (md.batch_size or 0):
            md.global_batch, md.batch_size = md.batch_size, micro[0]
            md.sources["batch_size"] = micro[1] + " (micro batch; batch_size is the global one)"
            md.batch_scope = "global"
            if md.grad_accum is None and md.global_batch % micro[0] == 0:
                md.grad_accum = None  # derived at run time from the GPU count
    if md.batch_size is None:
        tok = _first_int(ranked, _TOKEN_BATCH_KEYS)
        if tok:
            md.batch_size, md.sources["batch_size"] = tok[0], tok[1] + " (tokens per GPU)"
            md.batch_unit, md.batch_scope = "tokens", "per-device"
    if md.batch_size is None:
        md.batch_scope = md.batch_unit = None


#: options that name the devices (or processes) of one node: `--devices cuda:0 cuda:1`, `--gpu_ids 0,1`,
#: submitit / Slurm `--tasks-per-node 8` (one task per GPU)
_DEVICE_LIST_KEYS = {"devices", "gpu_ids", "gpu_id_list", "device_ids", "tasks_per_node", "ntasks_per_node", "gpus_per_node"}


def _device_count(v) -> int | None:
    """How many devices a value names: a count, or a list of device ids (`cuda:0 cuda:1`, `0,1,2`)."""
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v if v > 0 else None
    items = v if isinstance(v, (list, tuple)) else re.split(r"[\s,]+", str(v).strip().strip("()[]").strip()) \
        if isinstance(v, str) else []  # (`GPUS: (0,1,2,3)`: a YAML string of a tuple)
    items = [str(x).strip() for x in items if str(x).strip()]
    if len(items) == 1 and (r := re.fullmatch(r"(\d+)-(\d+)", items[0])) and int(r.group(1)) < int(r.group(2)):
        return int(r.group(2)) - int(r.group(1)) + 1  # a range of device ids (`--gpus 0-7`: eight devices)
    if len(items) == 1 and re.fullmatch(r"\d+", items[0]):
        return int(items[0]) or None
    if items and all(re.fullmatch(r"(cuda:|gpu:)?\d+", x, re.I) for x in items):
        return len(items)
    return None


def _argv_nodes(ranked, ex=None) -> tuple[int, str] | None:
    """Nodes from the job's own arguments: --nodes (submitit), --num_nodes, --nnodes, and --world-size
    where the script's distributed mode counts nodes by it (PyTorch's ImageNet example)."""
    found = _first_int(ranked, _NODE_KEYS)
    if found and ex is not None and found[1].startswith("config ") and any(
            p >= P_ARGV - 5 and (_last(k) in _DEVICE_LIST_KEYS or _last(k) in _GPU_ARG_KEYS) for k, v, p, s in ranked):
        # the command lists this machine's devices and the node count comes from a config file that the
        # entry's code never reads by that name (`nodes:` for a SLURM launcher beside a local entry): not this run
        key = next((_last(k) for k, v, p, s in ranked if s == found[1] and _last(k) in _NODE_KEYS), "")
        code = "\n".join(getattr(ex, "code_texts", []))
        if key and not re.search(rf"[\"']{re.escape(key)}[\"']|\.{re.escape(key)}\b", code, re.I):
            return None
    if found:
        return found
    text = getattr(ex, "files", {}).get(getattr(ex, "entry", None) or "", "") if ex is not None else ""
    m = _NODES_FROM_OPTION.search(text)
    if m:  # `nodes = args.num_shards` / `update_parameters(nodes=args.num_shards)`: the option the job's nodes are
        hit = _first_int(ranked, {m.group(1).lower()})
        if hit:
            return hit[0], hit[1] + f" (the entry asks for {m.group(1)} nodes)"
    keys = {_last(k) for k, v, p, s in ranked if p >= P_CONFIG}
    if keys & {"multiprocessing_distributed", "dist_url"}:
        return _first_int(ranked, {"world_size"}, P_CONFIG)
    return None


#: the entry names its node count after an option (a submitit / cluster request: `nodes = args.num_shards`)
_NODES_FROM_OPTION = re.compile(r"(?m)^(?!\s*#)[^\n#]*\b(?:nodes|num_nodes|nnodes)\s*=\s*(?:args|opt|opts|cfg|config|"
                                r"self\.args|FLAGS)\.(\w+)\b(?!\s*[*/+-])")


def _cpu_device(ranked) -> str | None:
    """The job runs on CPU: --device cpu (or a CPU default the command keeps), --no-cuda / --cpu flags,
    a Lightning accelerator "cpu"."""
    for k, v, p, s in ranked:
        lk = _last(k)
        if lk in _CPU_FLAGS and v is True and p >= P_DEFAULT and "." not in k:  # not profiler.cpu: True
            return s
        if lk in ("cuda", "use_cuda", "use_gpu") and v is False and p >= P_DEFAULT and "." not in k:
            return s + " (a --cuda flag left off: the script runs on the CPU unless asked)"
    for k, v, p, s in ranked:
        if _last(k) in ("device", "accelerator") and p >= P_CODE and k.count(".") <= 1 and isinstance(v, str):
            return s + " (cpu)" if v.strip().lower().startswith("cpu") else None
    return None


def _code_int(ex, keys: set[str]) -> tuple[int, str] | None:
    for k, v, p, s in ex.s.ranked():
        if _last(k) in keys and (k.startswith(("trainer.", "code.")) or p == P_CODE_KW):
            n = _as_int(v)
            if n:
                return n, s
    return None

def _mm_model(ex) -> tuple[str, str] | None:
    vals = {k: v for k, v, p, s in reversed(ex.s.ranked())}
    t = vals.get("model.type")
    if not isinstance(t, str) or t.strip().lower() in _GENERIC_VALUES:  # `model: type: simple` names no network
        return None
    depth = vals.get("model.backbone.depth")
    head = str(vals.get("model.decode_head.type", ""))
    fname = vals.get("config.filename")
    btype = str(vals.get("model.backbone.type", ""))
    arch = vals.get("model.backbone.arch")
    backbone = known_model(f"{btype}{depth or ''}") if btype else None
    if isinstance(fname, str) and known_model(fname):
        if t not in _MM_WRAPPERS and backbone and known_model(fname) == backbone and t.lower() not in btype.lower():
            # byol_resnet50_...: the file names the backbone; the model is the algorithm around it
            return canonical_model(f"{t}-r{depth}" if depth else t), "mmengine model.type around its backbone"
        return known_model(fname), "mmengine config name"
    if "Segformer" in head or "SegFormer" in head:  # the MiT backbone gives the size (mit_b1 -> SegFormer-B1)
        m = re.search(r"mit[_-]?(b\d)", str(vals.get("model.backbone.type", "")), re.I)
        return (f"segformer-{m.group(1).lower()}" if m else "segformer-b2"), "mmengine decode_head and its MiT backbone"
    if t in _MM_WRAPPERS:  # the wrapper names the pipeline, not the model: the head or backbone does
        for key, name in _MM_HEADS:
            if head == key:
                return (f"{name}-r{depth}" if depth else name), "mmengine decode_head"
        if isinstance(arch, str) and re.search(r"[a-z]{2,}.*-", arch):  # arch='deit-tiny' is a whole model name
            return canonical_model(arch), "mmengine backbone arch"
        if btype:
            name = f"{btype}{depth or ''}" + (f"-{arch}" if isinstance(arch, str) else "")
            return canonical_model(name), "mmengine backbone of " + t
    name = f"{t}-r{depth}" if depth else t
    return canonical_model(name), "mmengine model.type"

_MM_WRAPPERS = {"ImageClassifier", "EncoderDecoder", "CascadeEncoderDecoder", "Recognizer2D", "Recognizer3D"}
_MM_HEADS = (("DepthwiseSeparableASPPHead", "deeplabv3plus"), ("ASPPHead", "deeplabv3"), ("UPerHead", "upernet"),
             ("FCNHead", "fcn"), ("PSPHead", "pspnet"), ("DAHead", "danet"))


_SIZES = {(12, 768): "125m", (24, 1024): "350m", (24, 2048): "1.3b", (32, 2560): "2.7b", (32, 4096): "7b",
          (40, 5120): "13b", (44, 6144): "20b", (96, 12288): "175b"}


def _dims_model(ex, named: str | None = None) -> str | None:
    """A model from its shape (layers x hidden size) within the family its name, entry or config says:
    BERT 12x768 is bert-base, GPT 96x12288 is GPT-3 175B, an MPT config 12x768 is mpt-125m."""
    vals = {_last(k): v for k, v, p, s in reversed(ex.s.ranked()) if not _EVAL_PATH.search(k.lower())}
    layers = _as_int(vals.get("num_layers", vals.get("n_layer", vals.get("n_layers"))))
    hidden = _as_int(vals.get("hidden_size", vals.get("n_embd", vals.get("d_model"))))
    if not (layers and hidden):
        return None
    words = " ".join([named or ""] + [str(x) for x in getattr(ex, "task_names", [])]).lower()
    if re.search(r"(?<![a-z])mpt", words) and (layers, hidden) in _SIZES:
        return f"mpt-{_SIZES[(layers, hidden)]}"
    if "bert" in words and not re.search(r"roberta", words):
        return {(12, 768): "bert-base", (24, 1024): "bert-large"}.get((layers, hidden))
    if (layers, hidden) == (96, 12288):
        return "gpt3-175b"
    table = {(12, 768): "gpt2", (24, 1024): "gpt2-medium", (32, 4096): "llama-2-7b", (40, 5120): "llama-2-13b"}
    return table.get((layers, hidden))
