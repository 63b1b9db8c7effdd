"""Evidence and confidence for every field the extractor answers, and the abstention rule ("unknown"
below a threshold) that lets the Advisor say when it does not know (issue 41, item 3).

Confidence comes from the KIND of evidence behind a value, never from the example it came from:

| kind       | what it is                                                                  | confidence |
|------------|-----------------------------------------------------------------------------|------------|
| argument   | an explicit argument of the command (`--epochs 90`, `trainer.devices=4`)     | 0.95       |
| launcher   | a launcher's option or directive (`torchrun --nproc_per_node 8`, `#SBATCH`)  | 0.95       |
| config     | a value in a config file the command names (YAML / JSON / Python config)     | 0.85       |
| code       | a literal in the code the entry runs (`Trainer(max_steps=...)`, a constant)  | 0.75       |
| default    | a default in code (argparse / dataclass / function default)                 | 0.70       |
| derived    | computed from other values (architecture dims -> a model size)              | 0.60       |
| class      | the class a config or the code builds, named by its words (measured: 4 of   | 0.45       |
|            | 20 right at first sight on batches 18-21, so below the threshold)           |            |
| signal     | the task from a code signal (an auto class, a script / config type)         | 0.60       |
| objective  | the task from the training code's objective identifiers (loss, sampler, env)| 0.60       |
| entry      | the task from the entry's / config's own name (cyclegan.py)                  | 0.55       |
| description| the task the README's first paragraph names (alone: below the threshold;    | 0.45       |
|            | agreeing with another kind: +0.2; contradicting a weak kind: it replaces it)  |            |
| name       | a name-based guess: a model named after a config / entry file or a          | 0.30-0.45  |
|            | sub-module, a dataset guessed from a path, the task from the dataset name   |            |
| assumed    | nothing read: GPUs / nodes defaulted to 1                                   | 0.20-0.80  |
| identity   | the model as the repository's own name where a class of that name is built  | 0.60       |
|            | by the entry's code (not in toolboxes); its family's / description's task   |            |
|            | (features.schedmate_text.identity; in-sample: 21 of 21 and 25 of 25 right)  |            |
| mechanism  | a batch's scope from how the code spreads it (DataParallel in one process,  | 0.60-0.70  |
|            | a sampler / one loader per process, a division): MECHANISM_CONFIDENCE       |            |

Modifiers, each a general mechanism: a value that is an unexpanded shell variable (`$DATA_DIR`) is no value
(confidence 0); GPUs defaulted to 1 while the job's launcher or code sets the device count where we did not
read it (a launcher without a process count, `accelerate --config_file` we could not read, `DataParallel` /
`device_count()` in the entry) are low; a value computed from an assumption is no more certain than it.

Plausibility (`plausibility`): a model or dataset stated by an argument, launcher, config, code or default is
also judged by its VALUE and KEY: the kind's confidence times the key's specificity (`KEY_SPECIFICITY`: `--arch`
1.0, `--net` 0.9, `name` 0.85), times `UNKNOWN_VALUE_FACTOR` when the vocabulary knows no architecture family /
dataset of that name, capped at `IMPLAUSIBLE_CAP` (below the threshold) for a size / variant code as the model or a
classification backbone while the code builds a detector or segmenter (calibrated on the tuned batches' first-sight
misses: `--model H`, `--backbone_name tiny`, `--net vgg16` around Faster R-CNN).

Calibration from first sight (`FIRST_SIGHT_COUNTS`, `calibration_cap`): how often each (field, kind) -- models and
datasets also by the value's shape, a batch scope also by whether anything states it (`argument/presumed`: a bare
`--batch_size` read as per device because nothing divides it) and by the code's mechanism (`code/global`: a
DataParallel wrapper, `code/per-device`: a multiplication by the device count) -- was right on command batches 18-31
with the code each batch first met; a group right less than `CALIBRATION_FLOOR` of the time is capped at
`CALIBRATED_CAP` (below the threshold), so it answers only where another signal confirms it: the data's usual task or
the repository's description agreeing with the objective identifiers; for a model named by an argument, the code
building what the option names (`models.__dict__[args.arch]()`, `_selects_network`) unless the command sizes the
network with options the name lacks (`--depth 28`); for a per-device scope presumed from a bare option or read from a
config, code that never handles several processes or devices (`_PARALLEL`), or a config key that says per device. `python benchmarks/schedmate_first_sight.py
calibrate` refits the table and prints the leave-one-batch-out estimate of fresh first-sight performance (batches
18-31, floor 0.85: 50.2 % answered, 4.0 % confidently wrong; the confirmations are code mechanisms the first-sight
records cannot replay, so they are not in that estimate).

Corroboration (features.schedmate_text.identity, `corroborate_task` here): a model answer that starts with the
repository's corroborated identity, or a STATED model value (argument / config / code / default) that starts with the
repository's own name, stands at 0.75 (in-sample: 35 of 35 and 45 of 45 right on the 458 commands); a task answer
below the threshold that an independent signal names too (the description, the data's usual task, the model's family)
gains 0.2 (9 of 9). Disagreement lowers nothing: the confident answers that disagreed with an identity were all right.

`MIN_CONFIDENCE` is THE threshold: a field below it is answered None, with the reason in
`JobMetadata.unknown[field]` and the guess kept in `JobMetadata.evidence[field]["guess"]`.
"""
from __future__ import annotations

import re
from typing import Any

from features.schedmate_text.follow import imported_modules, sampler_per_process, single_process, total_by_code
from features.schedmate_text.metadata import JobMetadata

__all__ = ["MIN_CONFIDENCE", "KIND_CONFIDENCE", "EVIDENCE_FIELDS", "KEY_SPECIFICITY", "attach_evidence", "abstain",
           "plausibility"]

#: the one abstention threshold: a field whose evidence is less certain than this is answered "unknown"
MIN_CONFIDENCE: float = 0.5

KIND_CONFIDENCE: dict[str, float] = {"argument": 0.95, "launcher": 0.95, "config": 0.85, "code": 0.75,
                                     "default": 0.70, "derived": 0.60, "class": 0.45, "signal": 0.55,
                                     "name": 0.40, "assumed": 0.60, "description": 0.55, "objective": 0.60,
                                     "none": 0.0}

#: how often each (field, kind) of evidence was RIGHT at first sight: the Advisor's answers on command batches
#: 18-31, each run with the code that first met the batch (benchmarks/schedmate_first_sight.py FIRST_SIGHT_COMMITS),
#: before anything was tuned for it
#: (benchmarks/realsets/first_sight_commands.json; `python benchmarks/schedmate_first_sight.py calibrate` refits
#: and checks this table): (answered, right)
FIRST_SIGHT_COUNTS: dict[tuple[str, str], tuple[int, int]] = {
    ('batch_scope', 'argument'): (33, 30), ('batch_scope', 'argument/presumed'): (73, 59),
    ('batch_scope', 'code/global'): (22, 14), ('batch_scope', 'code/per-device'): (4, 4),
    ('batch_scope', 'config'): (67, 57), ('batch_scope', 'default'): (5, 5),
    ('batch_scope', 'default/presumed'): (73, 68), ('batch_scope', 'mechanism/global'): (6, 5),
    ('batch_scope', 'name'): (17, 4), ('batch_size', 'argument'): (90, 83), ('batch_size', 'code'): (1, 1),
    ('batch_size', 'config'): (69, 66), ('batch_size', 'default'): (84, 77), ('dataset', 'argument/known'): (92, 79),
    ('dataset', 'argument/unknown'): (33, 32), ('dataset', 'code/known'): (14, 11),
    ('dataset', 'config/known'): (36, 21), ('dataset', 'default/known'): (25, 18),
    ('dataset', 'default/unknown'): (4, 1), ('dataset', 'name/known'): (1, 1), ('dataset', 'name/unknown'): (20, 6),
    ('gpus', 'argument'): (32, 29), ('gpus', 'assumed'): (187, 165), ('gpus', 'code'): (1, 1),
    ('gpus', 'config'): (7, 6), ('gpus', 'default'): (6, 3), ('gpus', 'launcher'): (97, 95),
    ('iteration_unit', 'argument'): (90, 89), ('iteration_unit', 'code'): (1, 1),
    ('iteration_unit', 'config'): (76, 72), ('iteration_unit', 'default'): (121, 113),
    ('iterations', 'argument'): (90, 83), ('iterations', 'code'): (1, 0), ('iterations', 'config'): (76, 71),
    ('iterations', 'default'): (13, 4), ('iterations', 'default/argparse'): (108, 98),
    ('model', 'argument/known'): (56, 43), ('model', 'argument/size'): (5, 0),
    ('model', 'argument/unknown'): (55, 37), ('model', 'class/known'): (4, 1), ('model', 'class/unknown'): (81, 11),
    ('model', 'code/known'): (1, 0), ('model', 'code/unknown'): (1, 0), ('model', 'config/known'): (16, 2),
    ('model', 'config/unknown'): (36, 14), ('model', 'default/known'): (18, 17),
    ('model', 'default/unknown'): (16, 10), ('model', 'identity/unknown'): (3, 2), ('model', 'name/known'): (14, 14),
    ('model', 'name/unknown'): (19, 0), ('nodes', 'argument'): (11, 11), ('nodes', 'assumed'): (382, 380),
    ('nodes', 'config'): (10, 10), ('nodes', 'default'): (7, 7), ('nodes', 'launcher'): (5, 5),
    ('task', 'code'): (7, 6), ('task', 'description'): (15, 11), ('task', 'entry'): (2, 0),
    ('task', 'identity'): (8, 3), ('task', 'name'): (72, 48), ('task', 'objective/generic'): (55, 27),
    ('task', 'objective/specific'): (48, 44), ('task', 'signal'): (76, 62)
}
#: a kind of evidence right less often than this at first sight (smoothed: (right + 1.6) / (answered + 2), at least
#: 5 answers) is capped below the threshold: its answers stand only where another signal confirms them. 0.85: the
#: share of right answers the targets need (<= 3 % wrong at >= 80 % answered is >= 96 % right overall); the
#: leave-one-batch-out estimate of each floor is printed by the calibrate command
CALIBRATION_FLOOR: float = 0.85
#: the fewest first-sight answers a kind needs before its record can cap it
MIN_ANSWERS: int = 5
#: the confidence a capped kind keeps (below MIN_CONFIDENCE; a confirmation adds 0.2 and lifts it above)
CALIBRATED_CAP: float = 0.45
#: what an independent signal naming the same value adds to an answer's confidence, and the most it lifts it to
CONFIRMATION_GAIN: float = 0.2
CONFIRMED_MAX: float = 0.75


def confirmed(conf: float) -> float:
    """The confidence of an answer an independent signal confirms (never lower than it was)."""
    return max(conf, min(conf + CONFIRMATION_GAIN, CONFIRMED_MAX))
#: batch scopes read from the code's MECHANISM (kind `mechanism`, groups `mechanism/global` and `mechanism/per-device`;
#: no first-sight record yet, so the basis is in-sample, over all 458 labelled commands of benchmarks/realsets):
#: `data-parallel`: DataParallel in a single process (no process group anywhere the entry imports) -> the total, or
#: per device where the command makes one device visible: right 32 of 32 (in-sample);
#: `sampler`: a DistributedSampler (any `Distributed*Sampler`, or a BatchSampler over one) and the option handed
#: undivided to the DataLoader -> per device: 19 of 19;
#: `process-loader`: a launcher that starts one process per device (torchrun, deepspeed, accelerate, mpirun, srun), a
#: process group in the code and the option handed undivided to the DataLoader -> per device: 11 of 11 (12 before the
#: guard against an option the code names the global batch, `GLOBAL_BATCH_SIZE, value=args.mini_batch_size`, was
#: added for DLRM's model-parallel loader);
#: `divided`: the code divides the option by the process count, or hands it to detectron2 as IMS_PER_BATCH /
#: total_batch_size, names the option the global batch, or builds accelerate's Accelerator(split_batches=True) -> the
#: total: 13 of 13.
#: (Counted over the 227 commands whose scope is labelled, on the rules that were written looking at them: an upper
#: bound, so the confidences stay well below it.)
MECHANISM_CONFIDENCE: dict[str, float] = {"data-parallel": 0.60, "sampler": 0.70, "process-loader": 0.60,
                                           "divided": 0.70}


#: a rule text that states the batch's scope: the option's name (per device / per GPU / micro) or the code's division
_STATED_SCOPE = re.compile(r"per_?(?:device|gpu)|micro|divided|documented|global|total", re.I)

#: tasks whose objective identifiers (features.schedmate_text.vocab.OBJECTIVE_SIGNALS) other tasks' code shares
_GENERIC_OBJECTIVES = {"image-classification", "image-generation"}


def calibration_group(field: str, kind: str, value: Any, rule: str = "") -> tuple[str, str]:
    """The calibration group of an answer: its field and evidence kind (with `rule`, the kind the rule text has
    today: the task's objective identifiers `objective`, by the task they name, the entry's own name `entry`); for the model and the
    dataset also the value's shape -- a name the vocabulary knows (`known`), a size / variant code (`size`, models),
    or another name (`unknown`): `--arch resnet50` and `--model resnet` are one kind but not equally reliable.
    (A finer `backbone` shape for bare family names was tried: leave-one-batch-out 64.9 % / 3.6 % instead of
    63.4 % / 3.4 %, and 4 more wrong model answers on batches 1-15 (the current rules); not kept.)"""
    if field == "task" and rule.startswith("objective in the training code"):
        kind = "objective"
    elif field == "task" and rule.startswith(("entry name", "config name")):
        kind = "entry"
    if field == "task" and kind == "objective" and value is not None:
        # boxes and anchors, environment loops and next-token losses are specific to their task; a cross-entropy
        # with an accuracy, a generator with a discriminator belong to many tasks' code (a translator, a text
        # recogniser, a segmenter; a vocoder, an image translator): two groups, not one per task (too few answers)
        return field, "objective/generic" if value in _GENERIC_OBJECTIVES else "objective/specific"
    if field == "batch_scope" and value == "per-device" and kind in ("argument", "default") and \
            not _STATED_SCOPE.search(rule):
        # a bare batch option (`--batch_size`, `--bs`) read as per device because nothing divides or multiplies it: a
        # presumption, not a statement (right 50 of 50 times at first sight on batches 18-23, 8 of 16 on 24-25)
        return field, f"{kind}/presumed"
    if field == "batch_scope" and kind == "mechanism":  # (no first-sight record: MECHANISM_CONFIDENCE's in-sample basis)
        return field, f"mechanism/{value}"
    if field == "batch_scope" and kind == "code" and value in ("global", "per-device"):
        # the code's wrapper (DataParallel: the total) and the code's multiplication (per device) are two mechanisms
        return field, f"code/{value}"
    if field == "iterations" and kind == "default":
        # an argparse option's default (the script's own documented setting) and a library dataclass field's default
        # (a trainer's, which the entry's own settings often replace) are not equally reliable
        # (the other defaults keep the group's old name: capped by the committed record before and after a refit)
        return field, "default/argparse" if rule.startswith("argparse default") else "default"
    if field not in ("model", "dataset") or value is None:
        return field, kind
    from features.schedmate_text.vocab import canonical_dataset, family_task, known_model

    text = str(value)
    if field == "model":
        shape = "known" if known_model(text) or family_task(text) else "size" if _SIZE_CODE.match(text) else "unknown"
    else:
        shape = "known" if canonical_dataset(text) else "unknown"
    return field, f"{kind}/{shape}"


def calibration_cap(field: str, kind: str, counts: dict | None = None, floor: float | None = None) -> float | None:
    """The cap on a calibration group's confidence (`kind` as calibration_group gives it) from its first-sight
    record, or None (not capped)."""
    n, ok = (FIRST_SIGHT_COUNTS if counts is None else counts).get((field, kind), (0, 0))
    fl = CALIBRATION_FLOOR if floor is None else floor
    return CALIBRATED_CAP if n >= MIN_ANSWERS and (ok + 1.6) / (n + 2) < fl else None

#: the fields that carry evidence (iteration_unit follows iterations, batch_scope follows batch_size)
EVIDENCE_FIELDS = ("gpus", "nodes", "model", "task", "dataset", "iterations", "iteration_unit", "batch_size",
                   "batch_scope")  # (GPUs first: a batch total divided by them is no more certain than they are)

# rule texts (JobMetadata.sources) -> kind, confidence; first match wins
_RULES: list[tuple[re.Pattern, str, float]] = [(re.compile(p), k, c) for p, k, c in (
    # the README's first paragraph / the parser's description: right for 45 of 54 repositories of batches 1-23 (83 %),
    # too few alone; it refines a code signal it specialises and moves another kind's confidence (attach_evidence)
    (r"^repository description \(refines", "description", 0.60),
    (r"^repository description", "description", 0.45),
    (r"^accelerate config", "config", 0.85),
    (r"^(torchrun|deepspeed|accelerate|srun|mpirun|composer|lightning|#SBATCH|NNODES|NUM_NODES|NPROC_PER_NODE)",
     "launcher", 0.95),
    (r"^CUDA_VISIBLE_DEVICES", "launcher", 0.85),
    (r"^argv positional", "argument", 0.90),
    (r"^(argv|opts |--cfg-options|override |hydra override|config argument)", "argument", 0.95),
    (r"^(config name|entry name)", "name", 0.35),
    # (measured: class-word models were right 4 times in 20 at first sight on batches 18-21, so below the threshold)
    (r"model target|^hydra _target_|^code network class", "class", 0.45),
    (r"^mmengine config name", "name", 0.45),
    (r"^mmengine", "config", 0.80),
    (r"^(config |json args|default config|hydra config|ml_collections config|hyperparameter table|config function|"
     r"hydra trainer)", "config", 0.85),
    (r"^the config's one dataset section", "config", 0.70),
    (r"^code dataset call in an imported module", "code", 0.50),
    (r"^(code (?!signal)|module constant|epoch loop range|training DataLoader)", "code", 0.75),
    (r"^(argparse default|dataclass field default|config defaults)", "default", 0.70),
    (r"^architecture dims", "derived", 0.60),
    (r"code run in mode", "signal", 0.70),
    (r"^objective in the training code", "objective", 0.60),  # generic identifiers of a loss / sampler / loop
    (r"^(code signal|downstream run|classification objective on)", "signal", 0.60),
    (r"^classification identifiers on", "name", 0.45),  # generic classifier identifiers, the task from the data
    (r"^environment ", "signal", 0.75),
    (r"^dataset ", "name", 0.40),  # the task inferred from the dataset's usual task
    (r"^model family of|^model ", "name", 0.45),  # the task inferred from the model's family
    (r"^vision model default", "name", 0.30),
    (r"^default 1", "assumed", 0.60),
)]

# a shell variable (`$DATA`, `${DATA}`, `${DATA:-x}`), not a config interpolation (`${paths.data_dir}`, `${oc.env:X}`)
_UNEXPANDED = re.compile(r"\$(?:\{[A-Za-z_]\w*(?:(?::?[-=+?])[^}]*)?\}|[A-Za-z_]\w*)")
_FIELD_KEYS = {"model": r"model|arch|net|backbone|alg|name|type|base|init|path|cfg|weights|config",
               "dataset": r"data|env|file|root|name|task|path|train|input|ann",
               "iterations": r"epoch|step|iter|update|ep|duration|timestep",
               "batch_size": r"batch|bs|^b$|per_gpu|per_device|tokens|samples|imgs|ims|videos|clips",
               "gpus": r"gpu|device|proc|world|node", "nodes": r"node|machine|world"}


#: a dataset override that means generated inputs (`--dataset synthetic`, `--data fake`): the job names no dataset
_SYNTHETIC = re.compile(r"^(?:synthetic|synth|dummy|fake|random|noise|toy)(?:[-_ ]?(?:data|dataset|inputs?|images?))?$",
                        re.I)


def _sized_by_options(ex) -> bool:
    """The command sets a network size of its own (`--depth 28`, `--widen-factor 10`, `--layers 50`)."""
    from features.schedmate_text.settings import P_OVERRIDE

    return any(p >= P_OVERRIDE and re.fullmatch(r"(?:model_|arch_|net_)?(?:depth|widen_factor|width|wf|layers|"
                                               r"num_layers|n_layers)", k.rsplit(".", 1)[-1].lower().replace("-", "_"))
               for k, v, p, s in ex.s.ranked())


def _selects_network(code: str, key: str) -> bool:
    """The code builds the network its option names: a registry or factory called with the option itself
    (`models.__dict__[args.arch]()`, `timm.create_model(args.model, ...)`, `getattr(models, opt.net)(...)`,
    `importlib.import_module(args.model)`, `MODELS[cfg.model]`)."""
    leaf = key.rsplit(".", 1)[-1].replace("-", "_")
    if not re.fullmatch(r"\w+", leaf or ""):
        return False
    opt = r"(?:args|opt|opts|cfg|config|FLAGS|hparams|params|hp|conf)\." + re.escape(leaf) + r"\b"
    return re.search(r"(?:__dict__\[\s*|getattr\(\s*[\w.]+\s*,\s*|create_model\(\s*|import_module\(\s*|"
                     r"[A-Z_]{3,}\[\s*|(?:build|get|load)_?(?:model|network|net|arch)\(\s*(?:name\s*=\s*)?)" + opt,
                     code) is not None


#: an entry that submits the job to a cluster (its own defaults request the GPUs)
_SUBMITTER = re.compile(r"(?:^|[/._])(?:submit\w*|stool|slurm\w*|run_with_submitit)\.py$", re.I)
#: any handling of several processes or devices (the scope of a batch can then differ from the option's)
_PARALLEL = re.compile(r"DataParallel|world_size|device_count|init_process_group|Accelerator|accelerate|lightning|"
                       r"deepspeed|horovod|xla|local_rank|LOCAL_RANK|nproc|torch\.distributed|ddp|spawn\(|num_gpus|n_gpu|"
                       r"ngpu|gpu_ids|device_ids|multi_gpu|Trainer\(")
#: DataParallel (not the distributed one) outside a comment
_DATA_PARALLEL = re.compile(r"(?m)^(?!\s*#)[^\n#]*(?<!Distributed)DataParallel\(")
#: the batch option scaled by the device count (`opt.batch_size = opt.batch_size * opt.num_gpu`)
_SCALED_BY_DEVICES = re.compile(r"(?m)^(?!\s*#)[^\n#]*batch_?size\w*\s*(?:\*=\s*[\w.()]*(?:gpu|device)|=\s*[\w.]*batch_?size\w*"
                                r"\s*\*\s*[\w.()]*(?:gpu|device))", re.I)


def _multi_gpu_off(ranked) -> bool:
    from features.schedmate_text.resolve import _multi_gpu_off as off

    return off(ranked)


def _rule_of(field: str, md: JobMetadata) -> str:
    return md.sources.get("iterations" if field == "iteration_unit" else
                          "batch_size" if field == "batch_scope" else field, "")


def _setting(ex, field: str, rule: str, value: Any = None):
    """The gathered setting behind a field's rule (the one showing `value` among those of the rule's
    source): (key, raw value) or None."""
    if ex is None or not rule:
        return None
    value_text = "" if value is None else str(value).lower().split("-")[0]
    pat = _FIELD_KEYS.get("iterations" if field == "iteration_unit" else "batch_size" if field == "batch_scope"
                          else field)
    best = None
    for k, v, p, s in ex.s.ranked():
        if not s or not rule.startswith(s):
            continue
        leaf = k.rsplit(".", 1)[-1].lower()
        fits = pat is None or re.search(pat, leaf) is not None
        shown = str(v).lower() if isinstance(v, (str, int, float)) else ""
        exact = leaf.replace("-", "_") in _field_keys(field)
        score = (len(s), bool(value_text) and (value_text in shown or shown == value_text), exact, fits)
        if best is None or score > best[0]:
            best = (score, k, v)
    return None if best is None else (best[1], best[2])


def _locate(text: str, key: str, value: Any) -> int | None:
    """The 1-based line of `text` that sets `key` (its last segment), preferring one that shows `value`."""
    leaf = key.rsplit(".", 1)[-1]
    if not leaf or not re.fullmatch(r"[\w-]+", leaf):
        return None
    pat = re.compile(rf"(?<![\w]){re.escape(leaf).replace('_', '[_-]')}(?![\w])", re.I)
    shown = str(value).strip() if isinstance(value, (str, int, float)) and not isinstance(value, bool) else ""
    first = None
    for i, line in enumerate(text.splitlines(), 1):
        if pat.search(line):
            if shown and shown in line:
                return i
            if first is None:
                first = i
    return first


def _file_of(ex, rule: str) -> str | None:
    """The repository file a rule text names (`config configs/a.yaml`, `entry name train.py`, ...)."""
    if ex is None:
        return None
    for word in re.split(r"[\s\[\]()]+", rule):
        w = word.split(":")[0].strip("'\",")
        if w and w in ex.files:
            return w
    return None


def _where(ex, field: str, rule: str, kind: str, command: str, value: Any = None) -> str | None:
    """file:line (or the command's argument) that states a field's value."""
    hit = _setting(ex, field, rule, value)
    if kind in ("argument", "launcher"):
        if hit is not None:
            key, value = hit
            if key == "positional":
                return f"command argument {value}"
            leaf = key.rsplit(".", 1)[-1]
            return f"command argument {leaf}={value}"
        m = re.match(r"^(\S+)\s+(--?[\w-]+)", rule)
        return f"command: {rule}" if m is None else f"command argument {m.group(2)} ({m.group(1)})"
    f = _file_of(ex, rule)
    if f is None and kind in ("default", "code", "class", "name", "signal") and ex is not None and ex.entry in ex.files:
        f = ex.entry
    if f is None:
        return None
    line = _locate(ex.files[f], hit[0], hit[1]) if hit is not None else None
    if line is None and kind == "class":
        cls = rule.rsplit(" ", 1)[-1].rsplit(".", 1)[-1]
        line = _locate(ex.files[f], cls, cls)
    return f"{f}:{line}" if line else f


def _reachable_code(ex, depth: int = 2, limit: int = 40) -> str:
    """The entry's source and that of the repository modules it imports, `depth` levels deep (the device
    handling often lives in a helper module: `models/utils.py` wrapping the network in DataParallel)."""
    entry = getattr(ex, "entry", None)
    if entry is None or entry not in ex.files:
        return "\n".join(getattr(ex, "code_texts", []))
    cache = ex._repo.__dict__.setdefault("reachable", {})
    if entry not in cache:
        cache[entry] = "\n".join(ex.files[f] for f in imported_modules(ex.files, entry, depth, limit))
    return cache[entry]


def _launcher_sets_devices(ex) -> str | None:
    """A reason to doubt a GPU count of 1 that nothing stated: the job's launcher or code decides it where
    we did not read it."""
    for head, opts in getattr(ex, "launches", []):
        keys = {k.lower() for k in opts}
        if head == "accelerate" and not keys & {"num_processes", "cpu", "use_cpu", "_config_read"}:
            return "accelerate's process count comes from its config file" + (
                f" ({opts.get('config_file')}, not read)" if opts.get("config_file") else " (not read)")
        if head == "deepspeed" and not keys & {"num_gpus", "include", "num_nodes"}:
            return "deepspeed without --num_gpus runs on every visible GPU"
        if head in ("srun", "mpirun", "mpiexec", "composer") and not keys & {"n", "np", "ntasks", "nproc",
                                                                               "world_size", "gres", "gpus_per_node"}:
            return f"{head}'s process count comes from the cluster allocation"
    for a in getattr(ex, "unexpanded", []):
        if re.search(r"gpu|nproc|devices|world|num_processes", a, re.I):
            return f"the device count is an unexpanded shell variable ({a})"
    if getattr(ex, "entry", None) is None or ex.entry not in ex.files:
        return "the job's entry point was not followed, so its device count was not read"
    code = _reachable_code(ex)  # the entry and the repository modules it imports
    if _SUBMITTER.search(ex.entry) or re.search(r"(?m)^\s*(?:import submitit|from submitit\b)", code):
        # (a cluster submitter: `python -m lingua.stool ...`, `tools/submit.py`, a submitit job: its own defaults ask
        # for the GPUs)
        return f"the job is submitted to a cluster by {ex.entry}, whose GPU request was not read"
    if re.search(r"DataParallel\(|device_count\(\)", code):
        return "the entry spreads over every visible GPU (DataParallel / device_count / world size)"
    return None


def _field_keys(field: str) -> set[str]:
    """The setting names (last segment) that state a field."""
    from features.schedmate_text.settings import (_BATCH_KEYS, _DATA_KEYS, _EPOCH_KEYS, _GLOBAL_BATCH_KEYS,
                                                  _GPU_ARG_KEYS, _MODEL_KEYS, _NAMED_DATA_KEYS, _NODE_KEYS, _STEP_KEYS)

    return {"model": _MODEL_KEYS, "dataset": _DATA_KEYS | _NAMED_DATA_KEYS, "iterations": _EPOCH_KEYS | _STEP_KEYS,
            "iteration_unit": _EPOCH_KEYS | _STEP_KEYS, "batch_size": _BATCH_KEYS | _GLOBAL_BATCH_KEYS,
            "batch_scope": _BATCH_KEYS | _GLOBAL_BATCH_KEYS, "gpus": _GPU_ARG_KEYS, "nodes": _NODE_KEYS}.get(field, set())


def _unexpanded_argument(ex, field: str) -> str | None:
    """A command argument for this field whose value is an unexpanded shell variable."""
    from features.schedmate_text.settings import P_ARGV, P_OVERRIDE

    keys = _field_keys(field)
    if not keys:
        return None
    for word in getattr(ex, "unexpanded", []):  # `--batch_size=$BS`, `--nproc_per_node $GPUS`
        m = re.match(r"--?([\w.-]+)[= ]\S*\$", word)
        if m and m.group(1).replace("-", "_").rsplit(".", 1)[-1].lower() in keys:
            return word
    for k, v, p, s in ex.s.ranked():
        if p < P_OVERRIDE:
            break
        if p <= P_ARGV and isinstance(v, str) and k.rsplit(".", 1)[-1].lower() in keys and _UNEXPANDED.search(v):
            return f"{k}={v}"
    return None


_VALUE_KINDS = ("argument", "launcher", "config", "code", "default")

#: how specifically a setting's name (last segment) states the field: the share of its kind's confidence it
#: keeps (`--arch` names the network trained; `--net` / `--network` often a component of it; `name` / `type`
#: anything). A key not listed keeps 0.9.
KEY_SPECIFICITY: dict[str, dict[str, float]] = {
    "model": {"arch": 1.0, "architecture": 1.0, "model": 1.0, "model_name": 1.0, "modelname": 1.0, "model_type": 1.0,
              "model_id": 1.0, "alg": 1.0, "algo": 1.0, "algorithm": 1.0, "policy": 1.0,
              "model_name_or_path": 0.95, "pretrained_model_name_or_path": 0.95, "init_from": 0.9, "base_model": 0.9,
              "model_path": 0.9, "network": 0.9, "net": 0.9, "tokenizer_model": 0.8, "name": 0.85, "type": 0.85},
    "dataset": {"dataset": 1.0, "dataset_name": 1.0, "data": 1.0, "task_name": 1.0, "env": 1.0, "env_id": 1.0,
                "env_name": 1.0, "dataset_type": 0.95, "dataset_config_name": 0.9, "name": 0.85, "root": 0.85,
                "data_dir": 0.85, "data_path": 0.85, "data_root": 0.85, "train_file": 0.85},
}
#: a value the vocabulary does not know (no architecture family / dataset name): this share of the confidence
UNKNOWN_VALUE_FACTOR = 0.85
#: the cap for a value that cannot be what the field asks (a size code as the model, a backbone of a detector)
IMPLAUSIBLE_CAP = 0.40

# a size or variant code, not an architecture: `H`, `tiny`, `base`, `b0`, `r50`, `7b`, `xl`
_SIZE_CODE = re.compile(r"^(?:[a-z]{1,2}|[a-z]?\d{1,3}|\d+(?:\.\d+)?[kmbt]|tiny|small|base|medium|large|huge|"
                        r"giant|mini|nano|micro|xxl)$", re.I)
# classification backbones (what a detector or segmenter is built around)
_BACKBONE = re.compile(r"^(?:vgg|res(?:net)?(?:[-_]?v?\d|$)|resnext|wide[-_]?resnet|mobilenet|densenet|efficientnet|"
                       r"inception|xception|darknet|cspdarknet|regnet|convnext|swin|hrnet|mit[-_]b|shufflenet)", re.I)
# a detector or segmenter built by the code the entry runs
_DETECTOR = re.compile(r"faster[_\s-]?r[_-]?cnn|mask[_\s-]?r[_-]?cnn|retina[_-]?net|\bRoI[_-]?(?:Pool|Align)|"
                       r"\broi_(?:pool|align)|\b_?RPN\b|RegionProposal|\bDeepLab|\bPSPNet|UperNet|SegFormer|"
                       r"\bFCN\b|anchor_generator|\bnms\(", re.I)


def _builds_detector(ex) -> str | None:
    """The detector / segmenter words in the entry and the modules it imports (None when none)."""
    if getattr(ex, "entry", None) is None:
        return None
    m = _DETECTOR.search(ex.entry) or _DETECTOR.search(_reachable_code(ex))
    return None if m is None else m.group(0)


def plausibility(field: str, value: Any, key: str, detector: str | None = None) -> tuple[float, float, str | None]:
    """How plausible a value stated by an argument / config / code is for its field, from the VALUE (is it a
    known architecture family or dataset? a size code? a backbone while the code builds a detector?) and the
    KEY's specificity: (factor on the kind's confidence, cap, reason or None)."""
    from features.schedmate_text.vocab import canonical_dataset, known_model

    leaf = key.rsplit(".", 1)[-1].lower().replace("-", "_") if key else ""
    spec = KEY_SPECIFICITY.get(field, {}).get(leaf, 0.9 if leaf else 1.0)
    text = str(value).strip()
    if field == "model":
        known = known_model(text)
        if known is None and _SIZE_CODE.match(text):
            return spec, IMPLAUSIBLE_CAP, f"a size or variant code ({text}), not an architecture"
        if detector and _BACKBONE.match(text) and not _DETECTOR.search(known or text):
            return spec, IMPLAUSIBLE_CAP, f"a classification backbone ({text}) while the code builds a detector / " \
                                          f"segmenter ({detector})"
        if known is None:
            return spec * UNKNOWN_VALUE_FACTOR, 1.0, None
        return spec, 1.0, None
    if field == "dataset" and canonical_dataset(text) is None:
        return spec * UNKNOWN_VALUE_FACTOR, 1.0, None
    return spec, 1.0, None


def attach_evidence(md: JobMetadata, ex=None, command: str = "") -> JobMetadata:
    """Fill `md.evidence[field]` = {"evidence": file:line or the argument, "kind", "confidence", "rule"} for
    every answered field (in place; returns md)."""
    out: dict[str, dict] = {}
    gpu_doubt = _launcher_sets_devices(ex) if ex is not None else None
    scope_of_batch = 0.0
    for f in EVIDENCE_FIELDS:
        value = getattr(md, f)
        if value is None:
            shadow = _unexpanded_argument(ex, f) if ex is not None else None
            if shadow is not None:  # no value at all: say why
                md.unknown[f] = f"the command sets it with an unexpanded shell variable ({shadow})"
            continue
        rule = _rule_of(f, md)
        kind, conf = "none", 0.0
        for pat, k, c in _RULES:
            if pat.search(rule):
                kind, conf = k, c
                break
        else:
            if rule:  # a rule text we do not classify: treat as a name-based guess (never confidently)
                kind, conf = "name", KIND_CONFIDENCE["name"]
        reason = None
        hit = _setting(ex, f, rule, value)
        raw = hit[1] if hit is not None else None
        shadow = _unexpanded_argument(ex, f) if ex is not None else None
        if shadow is not None:  # `--batch_size=$BS` over a config's value: the run uses the user's value
            conf, reason = 0.0, f"the command sets it with an unexpanded shell variable ({shadow})"
        elif isinstance(raw, str) and _UNEXPANDED.search(raw):
            conf, reason = 0.0, f"the value is an unexpanded shell variable ({raw})"
        elif f == "dataset" and _SYNTHETIC.match(str(value)):
            conf, reason = min(conf, 0.30), f"the job trains on generated data ({value}): no dataset to name"
        elif f == "dataset" and isinstance(raw, str) and ("/" in raw or "\\" in raw):
            from features.schedmate_text.vocab import canonical_dataset

            if canonical_dataset(raw) is None:  # the user's folder, named by its last segment
                kind, conf = "name", min(conf, 0.40)
                reason = f"a dataset guessed from a path ({raw})"
            else:
                conf = min(conf, 0.80)
        elif f == "model" and re.search(r"(^|\.)(backbone|encoder|trunk|decoder|head|neck)(\.|$)",
                                         (hit[0] if hit else "").lower()):
            conf = min(conf, 0.45)
            reason = "a model named after a sub-module"
        if f == "dataset" and "(a family of variants;" in rule:  # (resolve.FAMILY_UNRESOLVED: `kinetics`, no count)
            conf, reason = min(conf, 0.40), f"{value} is a family of datasets (versions, class sets); which one " \
                                            f"the job uses is not said"
        if f == "iterations" and "stages)" in rule and "(the last of" in rule:
            conf, reason = min(conf, 0.40), "the script runs several training stages; this is the last one's length"
        if f in ("model", "dataset") and kind in _VALUE_KINDS and reason is None and ex is not None:
            detector = _builds_detector(ex) if f == "model" and _BACKBONE.match(str(value)) else None
            factor, cap, why = plausibility(f, value, hit[0] if hit else "", detector)
            conf = min(conf * factor, cap)
            reason = why
        if f in ("model", "task") and rule.startswith(("config name", "entry name")):
            from features.schedmate_text.vocab import known_model

            if f == "task" or known_model(str(value)):  # a file named after a model we know (mask_rcnn_R_50_...)
                conf = 0.50 if f == "model" else 0.55
            if f == "task":
                kind = "entry"  # the entry's / config's own name names the task (cyclegan.py, classifier_train.py)
        grp = calibration_group(f, kind, value, rule)
        cap = calibration_cap(*grp) if f != "batch_scope" else None  # (the scope's cap: below, once its kind is known)
        if cap is not None and grp in (("model", "argument/known"), ("model", "argument/unknown")) and reason is None \
                and hit is not None and ex is not None and _selects_network(_reachable_code(ex), hit[0]) and \
                not (not re.search(r"\d", str(value)) and _sized_by_options(ex)):  # (`--arch wrn --depth 28`: a size
            # the name lacks is not confirmed)
            cap = None  # confirmed: the code builds the network the option names (`models.__dict__[args.arch]()`)
        if cap is not None and conf > cap:  # a kind often wrong at first sight: it stands only where confirmed
            conf = cap
            reason = reason or f"{grp[1]} evidence for the {f} was right {FIRST_SIGHT_COUNTS[grp][1]} times in " \
                               f"{FIRST_SIGHT_COUNTS[grp][0]} at first sight"
        if f == "task" and rule.startswith("model family of") and ("(the training objective agrees)" in rule or (
                "model" in out and out["model"]["confidence"] >= MIN_CONFIDENCE)):
            kind, conf = "signal", 0.60  # the architecture built, named with confidence or confirmed by the objective
        if f == "task":  # two independent signals name one task: each agreeing one adds 0.2 (at most 0.75)
            for agrees in ("(the data agrees)", "(the repository description agrees)"):
                if agrees in rule:
                    conf = confirmed(conf)
                    if conf >= MIN_CONFIDENCE and reason and "at first sight" in reason:
                        reason = None  # confirmed
        if f == "task" and "(the repository description says" in rule:
            conf, reason = min(conf, 0.40), "the repository's description names another task: " + rule.rsplit("says ", 1)[-1].rstrip(")")
        if f in ("gpus", "nodes") and kind == "assumed":
            if f == "gpus":
                # (measured at first sight on batches 18-23: a GPU count of 1 next to DataParallel / device_count()
                # in the entry was right 17 times in 17 where the documentation's run was labelled; a launcher or an
                # entry we did not read, 1 in 3): only the unread launcher is a doubt
                if gpu_doubt and gpu_doubt.startswith("the entry spreads"):
                    conf, reason = 0.60, gpu_doubt + " (a documented single-process run: 1)"
                else:
                    conf, reason = (0.20, gpu_doubt) if gpu_doubt else (0.60, None)
            else:
                conf = 0.75 if not re.search(r"submitit|sbatch|srun|slurm", command.lower()) else 0.40
        scope_conf = conf
        if f == "batch_size" and "divided" in rule:
            g = out.get("gpus")
            if g is not None:
                conf = min(conf, g["confidence"])  # a total divided by a guessed GPU count
        if f == "batch_scope" and value == "per-device" and ex is not None and not getattr(ex, "launches", None) and \
                not re.search(r"per_?(?:device|gpu)|micro", rule + " " + str(getattr(ex, "_batch_key", "") or ""), re.I) \
                and _DATA_PARALLEL.search(_reachable_code(ex)) \
                and not _multi_gpu_off(ex.s.ranked()):  # (a wrapper behind a multi-GPU switch left off wraps nothing)
            # DataParallel splits the loader's batch over every visible GPU: the batch is the total, unless the code
            # multiplies it by the device count first (then the option is per device)
            if _SCALED_BY_DEVICES.search(_reachable_code(ex)):
                kind, conf = "code", 0.70
                reason = "the code multiplies the batch by the device count before DataParallel splits it"
            else:
                value = "global"
                md.batch_scope = "global"
                if md.batch_size is not None:
                    md.global_batch = md.batch_size
                kind, conf = "code", 0.60
                reason = "the code wraps the model in DataParallel, which splits this batch over the visible GPUs"
                g = out.get("gpus")
                if g is not None and g["value"] == 1 and g["kind"] in ("launcher", "argument"):
                    # (the command makes one device visible: DataParallel splits nothing, the batch is that device's)
                    value = md.batch_scope = "per-device"  # (its total is the same batch: md.global_batch)
                    kind, conf = "mechanism", MECHANISM_CONFIDENCE["data-parallel"]
                    reason = f"DataParallel over the one device the command makes visible ({g['evidence']})"
                elif single_process(_reachable_code(ex)):  # (no process group: the one process's loader is the total)
                    kind, conf = "mechanism", MECHANISM_CONFIDENCE["data-parallel"]
                    reason += " in a single process (nothing starts or joins a process group)"
                    if g is not None and g["kind"] in ("launcher", "argument") and isinstance(g["value"], int) and \
                            g["value"] > 1 and md.batch_size and "batch_size" in out:
                        # the command lists the devices it splits over (`--gpu_ids 0,...,7`): each gets its share
                        md.batch_size = max(1, md.batch_size // g["value"])
                        out["batch_size"].update(value=md.batch_size, note=f"the total {md.global_batch} split by "
                                                 f"DataParallel over the {g['value']} devices the command lists")
        elif f == "batch_scope" and "batch_size" in out:  # (a total's scope is known even when the GPUs are not)
            conf = scope_of_batch * (1.0 if value == "global" or "per_gpu" in rule or
                                                      "per_device" in rule or "micro" in rule else 0.9)
            kind = out["batch_size"]["kind"]
        if f == "batch_scope":  # the scope's own first-sight record (a presumed per-device scope is its own group)
            grp = calibration_group(f, kind, value, rule)
            cap = calibration_cap(*grp)
            single = ex is not None and getattr(ex, "entry", None) in getattr(ex, "files", {}) and \
                not getattr(ex, "launches", None) and not _PARALLEL.search(_reachable_code(ex))
            if cap is not None and (grp[1].endswith("/presumed") or grp == ("batch_scope", "config")) and \
                    value == "per-device" and single:
                cap = None  # confirmed: code that never spreads over processes or devices has one batch, the process's
            if cap is not None and grp == ("batch_scope", "config") and value == "per-device" and ex is not None:
                bk = _setting(ex, "batch_size", rule, md.batch_size)
                if bk is not None and re.search(r"per_?(?:device|gpu)|samples_per_gpu|imgs_per_gpu", bk[0], re.I):
                    cap = None  # confirmed: the config's own key says per device (per_device_train_batch_size)
            bk = getattr(ex, "_batch_key", None) if ex is not None else None
            if cap is not None and value == "global" and bk:
                why = total_by_code(_reachable_code(ex), bk)
                if why is not None:  # the mechanism states it: the code (or detectron2) divides the option
                    kind, conf, cap, reason = "mechanism", min(conf, MECHANISM_CONFIDENCE["divided"]), None, why
            if cap is not None and value == "per-device" and bk:
                code = _reachable_code(ex)
                several = any(h in ("torchrun", "deepspeed", "accelerate", "mpirun", "mpiexec", "srun") for h, o in
                              getattr(ex, "launches", []))  # (a launcher that starts one process per device)
                if sampler_per_process(code, bk):
                    # the mechanism states it: a DistributedSampler shards the data and each process's DataLoader gets
                    # the option undivided
                    kind, conf, cap = "mechanism", min(conf, MECHANISM_CONFIDENCE["sampler"]), None
                    reason = "each process draws its own batch (a DistributedSampler; the DataLoader gets the option " \
                             "undivided)"
                elif several and sampler_per_process(code, bk, processes=True):
                    kind, conf, cap = "mechanism", min(conf, MECHANISM_CONFIDENCE["process-loader"]), None
                    reason = "each process the launcher starts joins a process group and builds its own DataLoader " \
                             "with the option undivided"
            if cap is not None and conf > cap:
                conf = cap
                record = f"{grp[1]} evidence for the batch scope was right {FIRST_SIGHT_COUNTS[grp][1]} times in " \
                         f"{FIRST_SIGHT_COUNTS[grp][0]} at first sight"
                reason = f"{reason}; but {record}" if reason else record
        if f == "iteration_unit" and "iterations" in out:
            conf, kind = out["iterations"]["confidence"], out["iterations"]["kind"]
        lead = {"iteration_unit": "iterations", "batch_scope": "batch_size"}.get(f)
        where = out[lead]["evidence"] if lead in out else \
            _where(ex, f, rule, kind, command, value) if ex is not None else None
        if f in ("iterations", "iteration_unit") and "(summed over the script's" in rule:
            where = "the script's stages: " + rule  # not the last stage's line alone
        out[f] = {"value": value, "evidence": where, "kind": kind, "confidence": round(conf, 3), "rule": rule}
        if f == "batch_size":
            scope_of_batch = round(scope_conf, 3)  # the batch_scope's own certainty (not the GPU count's)
        if reason:
            out[f]["note"] = reason
    md.evidence = out
    return md


def abstain(md: JobMetadata, min_confidence: float = MIN_CONFIDENCE) -> JobMetadata:
    """Answer None for every field whose confidence is below `min_confidence` (in place; returns md): the
    reason goes to `md.unknown[field]`, the guess stays in `md.evidence[field]["guess"]`."""
    if not 0.0 <= min_confidence <= 1.0:
        raise ValueError(f"min_confidence must be in [0, 1], got {min_confidence}")
    for f, ev in list(md.evidence.items()):
        if ev["confidence"] >= min_confidence:
            continue
        ev["guess"], ev["value"] = ev["value"], None
        md.unknown[f] = ev.get("note") or f"{ev['kind']} evidence ({ev['rule']}): confidence {ev['confidence']:.2f} " \
                                         f"< {min_confidence:.2f}"
        setattr(md, f, None)
        if f == "batch_size":
            md.global_batch = None
        if f == "gpus":
            md.global_batch = None
    return md


#: where a weak task answer's own source is (the rule text's start) -> the signal it already is (not independent)
_TASK_SOURCE_SIGNAL = (("dataset ", "data"), ("classification identifiers on", "data"), ("model family of", "model"),
                       ("model ", "model"), ("repository description", "description"))


def corroborate_task(md: JobMetadata, ex=None) -> JobMetadata:
    """Two independent kinds of evidence that name one task lift a weak task answer (in place; returns md): the
    repository's description (describe.task_from_description), the data's usual task (vocab.DATASET_TASK of the
    dataset read) and the model's family task (vocab.family_task / MODEL_TASK of the model read), each counted only
    where it is not the answer's own source; an answer below the threshold that one of them confirms gains 0.2 (at
    most 0.75, as "(the data agrees)" does). A task answered as the vision default is never lifted (no evidence of
    its own). In-sample basis: IDENTITY_RECORD in features/schedmate_text/identity.py (9 of 9 lifted answers right
    on the 458 commands)."""
    ev = md.evidence.get("task")
    if ev is None or ev["confidence"] >= MIN_CONFIDENCE or ev["confidence"] < 0.3 or ex is None:
        return md
    rule = ev.get("rule") or ""
    if rule.startswith("vision model default") or "description says" in rule or "unknown" in rule:
        return md
    own = next((sig for head, sig in _TASK_SOURCE_SIGNAL if rule.startswith(head)), None)
    from features.schedmate_text.vocab import DATASET_TASK, MODEL_TASK, family_task

    signals: dict[str, str | None] = {}
    model = md.evidence.get("model", {}).get("value")
    if model:
        from features.schedmate_text.resolve import _LM_FAMILY

        signals["model"] = family_task(str(model)) or MODEL_TASK.get(str(model)) or (
            "language-modeling" if _LM_FAMILY.match(str(model)) else None)  # (a decoder LM's family: gpt, llama, qwen)
    data = md.evidence.get("dataset", {}).get("value")
    if data:
        signals["data"] = DATASET_TASK.get(str(data))
    cache = ex._repo.__dict__.get("description_task", {})
    signals["description"] = cache.get((ex.entry, tuple(getattr(ex, "programs", []))))
    agree = [s for s, t in signals.items() if s != own and t == ev["value"]]
    if agree:
        ev["confidence"] = round(confirmed(ev["confidence"]), 3)
        ev["rule"] = rule + f" (the {agree[0]} agrees)"
        ev.pop("note", None)
        md.unknown.pop("task", None)
    return md
