"""Static metadata extraction from a job's launch command and repository.

Rules, applied in this order (a later source does not overwrite a higher-priority one):
1. the command: environment prefixes (CUDA_VISIBLE_DEVICES, NNODES), launchers (torchrun,
   torch.distributed.launch/run, deepspeed, accelerate, srun, mpirun), shell scripts from the repo
   (variables, ${VAR:-default}, positional $1.., line continuations, #SBATCH directives) followed to
   the line that runs Python;
2. argv of the entry script (--key value, --key=value, flags; Hydra overrides key=value, group=option,
   +key, ++key; mmengine --cfg-options);
3. config files named by the resolved arguments (JSON / YAML / mmengine Python configs with `_base_`),
   Hydra's config_path/config_name with its defaults list merged, DeepSpeed configs;
4. the entry script's AST: argparse defaults (overridden by argv), HfArgumentParser (argv or a JSON
   file), literal keywords of TrainingArguments(...) / Trainer(...), model constructors
   (from_pretrained, timm.create_model, torchvision.models.*) and dataset calls (load_dataset, make_*)
   in code reachable from the entry point (an unused teacher builder is not), module constants.
Comments, README text and unreferenced configs are never read, which is what defeats the decoys.
The shell and launcher rules live in launch.py, the rules that follow a job past its first entry point
(launched scripts, Python config objects) in follow.py; both are mixins of the extractor here.
"""
from __future__ import annotations

import copy
import json
import re
from functools import lru_cache
from pathlib import PurePosixPath
from typing import Any

from features.schedmate_text.follow import _OBJECT_KEYS, FollowMixin, commented_global_batches, divided_batches, imported_modules, undivided_batches
from features.schedmate_text.hydra import compose as _hydra_compose
from features.schedmate_text.launch import LaunchMixin
from features.schedmate_text.metadata import FIELDS, JobMetadata
from features.schedmate_text.pyast import (_analysis_of, _attribute_defaults, _parse_argv, _PyInfo, analyse_source,
                                           _python_config, function_cli, ml_collections_config, subcommand_target)
from features.schedmate_text.resolve import resolve as _resolve
from features.schedmate_text.settings import (P_ARGV, P_CODE, P_CODE_KW, P_CONFIG, P_DEFAULT,
                                              P_OVERRIDE, _as_int, _merge, _Settings, _yaml_value)
from features.schedmate_text.shell import _join_rel
from features.schedmate_text.vocab import canonical_dataset, known_model

__all__ = ["FIELDS", "JobMetadata", "extract_metadata", "read_repository"]



class _Repository:
    """A repository's files with their paths normalised, and the indexes the extractor builds lazily
    (file name -> paths, folder -> default configs, every folder)."""

    def __init__(self, files: dict[str, str]) -> None:
        self.files = {(_norm_path(k) if ("./" in k or "//" in k or k.endswith("/")) else k): v
                      for k, v in files.items()}
        self.by_name: dict[str, list[str]] | None = None
        self.defaults: dict[str, list[str]] | None = None
        self.folders: set[str] | None = None
        # (cwd, path, relative-to) -> the file it names: the same lookups recur for every job of a repository
        self.found: dict[tuple[str | None, str, str | None], str | None] = {}
        self.package_fields: dict[str, dict] = {}  # entry -> the config dataclass defaults its package gives


_REPOS: dict[tuple[int, int], tuple[dict, dict, _Repository]] = {}


def _repository(files: dict[str, str]) -> _Repository:
    """The normalised, indexed form of `files`, reused while the caller passes the same dict with the
    same entries (checked entry by entry against a snapshot: a warm Advisor answering many jobs of one
    repository pays for the indexes once; a dict changed in place is read afresh)."""
    key = (id(files), len(files))
    hit = _REPOS.get(key)
    if hit is not None and hit[0] is files and len(hit[1]) == len(files) and \
            all(hit[1].get(k, _REPOS) is v for k, v in files.items()):
        return hit[2]
    repo = _Repository(files)
    if len(_REPOS) >= 128:  # a scheduler interleaves jobs of many repositories (entries share the file texts)
        _REPOS.pop(next(iter(_REPOS)))
    _REPOS[key] = (files, dict(files), repo)
    return repo


# top-level config keys that pick the training program (`app: vjepa`, `method: simclr`)
_DISPATCH_KEYS = ("app", "method", "algorithm", "framework", "objective", "trainer", "pipeline")
_EVAL_VALUE = re.compile(r"val|eval|test|out|log|save|ckpt|checkpoint|resume|load|init|pretrain", re.I)


#: a function that builds the run's hyper-parameters by its name (create_hparams, get_config, default_args)
_HPARAM_BUILDER = re.compile(r"hparam|config|cfg|args|options|params|settings|defaults", re.I)


class _Extractor(LaunchMixin, FollowMixin):
    def __init__(self, files: dict[str, str]) -> None:
        repo = _repository(files)
        self.files = repo.files  # shared, read-only: the same repository is normalised and indexed once
        self._by_name = repo.by_name
        self._defaults = repo.defaults
        self._folders = repo.folders
        self._repo = repo
        self.s = _Settings()
        self.gpus: tuple[int, int, str] | None = None  # (gpus per node, prio, source)
        self.nodes: tuple[int, int, str] | None = None
        self.total_gpus: tuple[int, int, str] | None = None
        self.entry: str | None = None
        self.argv: list[str] = []
        self.task_text: list[str] = []
        self.task_names: list[str] = []  # entry script and config file names: the first task signals read
        self.code_texts: list[str] = []  # the entry's source and its training-loop modules': the objective
        self.loaded: set[str] = set()
        self.depth = 0
        self.cwd = ""  # relative to the repository root, moved by `cd DIR &&`
        self.global_batch: set[str] = set()  # batch options the code documents as the total over all GPUs
        self.per_process_batch: set[str] = set()  # batch keys the code hands to its DataLoader undivided
        self.programs: list[str] = []  # the entry's ArgumentParser names ("DETR training and evaluation script")
        self.launches: list[tuple[str, dict]] = []  # (launcher, its options): what decides the device count
        self.stages: list[str] = []  # a script's launch statements of one program, run one after another
        self.unexpanded: list[str] = []  # command words with a shell variable nothing sets (`$DATA_DIR`)
        self.console_function: str | None = None  # the function a console script entry point names

    # -- files ---------------------------------------------------------------------------------
    def _file(self, path: str, rel_to: str | None = None) -> str | None:
        key = (self.cwd, path, rel_to)
        found = self._repo.found
        if key not in found:
            found[key] = self._find_file(path, rel_to)
        return found[key]

    def _find_file(self, path: str, rel_to: str | None = None) -> str | None:
        p = re.sub(r"^(\$\(pwd\)|\$\{?PWD\}?|`pwd`)/", "", path.strip().strip("'\""))  # $(pwd)/x: x here
        cands = ([_join_rel(self.cwd, p)] if self.cwd else []) + [p, p.lstrip("./"), p.lstrip("/")]
        if rel_to:
            cands.append(str(PurePosixPath(rel_to).parent / p))
        for c in cands:
            if c in self.files:  # the common case, without building a path object
                return c
            if c and ("//" in c or "/." in c or c.startswith("./") or c.endswith("/")):
                c2 = str(PurePosixPath(c))
                if c2 in self.files:
                    return c2
        # normalise ../ segments
        if rel_to:
            c = _join_rel("", str(PurePosixPath(rel_to).parent) + "/" + p)
            if c in self.files:
                return c
        return None

    def _set_gpn(self, n: int | None, prio: int, src: str) -> None:
        if n and (self.gpus is None or prio > self.gpus[1]):
            self.gpus = (n, prio, src)

    def _set_nodes(self, n: int | None, prio: int, src: str) -> None:
        if n and (self.nodes is None or prio > self.nodes[1]):
            self.nodes = (n, prio, src)

    def _set_total(self, n: int | None, prio: int, src: str) -> None:
        if n is not None and n >= 0 and (self.total_gpus is None or prio > self.total_gpus[1]):
            self.total_gpus = (n, prio, src)

    def _module_file(self, mod: str) -> str | None:
        """The file `python -m mod` runs: mod.py or mod/__main__.py, at the root, under src/ or under
        the current folder."""
        rel = mod.replace(".", "/")
        for cand in (rel + ".py", rel + "/__main__.py", "src/" + rel + ".py", "src/" + rel + "/__main__.py"):
            f = self._file(cand)
            if f:
                return f
        if self._by_name is None:  # basename -> paths, built once: a repository may hold thousands of files
            self._by_name = self._repo.by_name = {}
            for k in self.files:
                self._by_name.setdefault(k.rsplit("/", 1)[-1], []).append(k)
        leaf = rel.rsplit("/", 1)[-1]
        ends = [k for k in self._by_name.get(leaf + ".py", []) if k.endswith("/" + rel + ".py")] + \
            [k for k in self._by_name.get("__main__.py", []) if k.endswith("/" + rel + "/__main__.py")]
        if ends:
            return min(ends, key=len)
        parts = rel.split("/")
        for i in range(1, len(parts) - 1):
            # an import hook or a package_dir mapping (`yolox.tools.train` -> tools/train.py): the module's
            # trailing path, at least a folder and a file, at the root
            f = self._file("/".join(parts[i:]) + ".py")
            if f:
                return f
        return None

    _CONSOLE = re.compile(r"""["']?([\w.-]+)["']?\s*=\s*["']?([\w.]+):(\w+)""")

    _IMPORT_FROM = re.compile(r"^[ \t]*from[ \t]+([\w.]+)[ \t]+import[ \t]+([\w, \t]+?)[ \t]*$", re.M)
    _IMPORT_AS = re.compile(r"^[ \t]*import[ \t]+([\w.]+)(?:[ \t]+as[ \t]+(\w+))?[ \t]*$", re.M)

    def _imported_constants(self, name: str) -> None:
        """A settings module the entry imports and reads by attribute (`import config as cf` ...
        `num_epochs = cf.num_epochs`): its module-level constants that the entry reads are the run's values."""
        text = self.files[name]
        for m in self._IMPORT_AS.finditer(text):
            mod, alias = m.group(1), m.group(2) or m.group(1)
            f = self._file(mod.replace(".", "/") + ".py", rel_to=name) or self._file(mod.replace(".", "/") + ".py")
            if not f or f == name:
                continue
            info = analyse_source(self.files[f])
            if info is None:
                continue
            used = set(re.findall(rf"(?<![\w.]){re.escape(alias)}\.(\w+)", text))
            for key, value in info.consts.items():
                if key in used:
                    self.s.put(key, value, P_CODE - 5, f"module constant {key} ({f})")
        # a hyper-parameter builder the entry imports and calls (`from hparams import create_hparams`, then
        # `hparams = create_hparams(args.hparams)`): the literal keywords of what it builds are the defaults
        for m in self._IMPORT_FROM.finditer(text):
            mod = m.group(1)
            for fn in (n.strip().split(" as ")[0] for n in m.group(2).split(",")):
                if not _HPARAM_BUILDER.search(fn) or not re.search(rf"(?<![\w.]){re.escape(fn)}\(", text):
                    continue
                f = self._file(mod.replace(".", "/") + ".py", rel_to=name) or self._file(mod.replace(".", "/") + ".py")
                if not f or f == name:
                    continue
                from features.schedmate_text.pyconfig import function_config

                data = function_config(self.files[f], fn)
                if isinstance(data, dict) and sum(not isinstance(v, dict) for v in data.values()) >= 3:
                    self.s.put_tree(data, P_DEFAULT - 5, f"config defaults {f}:{fn}")

    def _console_script(self, name: str) -> str | None:
        """The module behind a console script, from setup.py / setup.cfg / pyproject.toml entry points."""
        for meta in ("setup.py", "setup.cfg", "pyproject.toml"):
            text = self.files.get(meta)
            if not text:
                continue
            for m in self._CONSOLE.finditer(text):
                if m.group(1) == name or m.group(1).rsplit(".", 1)[-1] == name:  # `scripts.litgpt = "..."`
                    self.console_function = m.group(3)  # the function the script calls: its signature / decorators
                    return self._module_file(m.group(2))
        return None

    # -- entry script --------------------------------------------------------------------------
    def entry_script(self, script: str, argv: list[str], console: str | None = None) -> None:
        name = self._file(script)
        self.entry = name or script
        self.argv = list(argv)
        self.task_text.append(console or PurePosixPath(script).name)
        self.task_names.append(name or script)  # the entry's own name speaks before its options do
        parsed_info = analyse_source(self.files[name]) if name and name.endswith(".py") else None
        info = parsed_info if parsed_info is not None else _PyInfo()
        if name is not None and parsed_info is not None:
            self._follow_wrapped(name, info)
        self.task_text.extend(info.defaults)  # option names say the objective (--mask_ratio, --mlm)
        self.task_text.extend(info.fields)  # so do dataclass fields (vision_tower: a vision-language model)
        self.programs = list(info.programs)
        self.task_text.extend(info.programs)  # "Barlow Twins Training"
        if name:
            self.task_text.append(name)  # and the package path (a `dinov2/run/train/train.py` entry)
        func = getattr(self, "console_function", None) if console else None
        if name is not None and func and parsed_info is not None:
            # a console script runs one function of its module: its click / typer / signature options and their
            # defaults are the job's CLI (the module's own argparse options, if any, come first)
            fi = function_cli(self.files[name], func)
            if fi is not None:
                for k, v in fi.options.items():
                    info.options.setdefault(k, v)
                for k, v in fi.defaults.items():
                    info.defaults.setdefault(k, v)
                if not info.positionals:
                    info.positionals = list(fi.positionals)
                self.task_text.append(func)
        if name is not None and argv and re.fullmatch(r"[a-z][\w-]*", argv[0]) and parsed_info is not None:
            sub = self._subcommand(name, argv[0])
            if sub is not None:  # `litgpt finetune ...`: the dispatched function's signature is the CLI
                info, argv = sub, argv[1:]
        # HfArgumentParser with one JSON argument
        if info.hf_parser and len(argv) == 1 and argv[0].endswith(".json"):
            f = self._file(argv[0])
            if f:
                self.config_file(f, P_ARGV, f"json args {f}")
            argv = []
        parsed, positionals, hydra = _parse_argv(argv, info)
        launched = list(positionals)  # before yacs pairs are taken out: a launcher's program is one of them
        for k, v in parsed.items():
            self.s.put(k, v, P_ARGV, f"argv --{k}")
        self.global_batch |= info.global_batch
        if name is not None and parsed_info is not None:
            for mod in imported_modules(self.files, name):  # `batch_size // world_size` in the entry or a module
                self.global_batch |= divided_batches(self.files[mod])  # it imports (a loader builder, an args hook)
                self.global_batch |= commented_global_batches(self.files[mod])  # `bs: int = 768  # global batch`
            self.per_process_batch |= undivided_batches(self.files[name])
        for dest, value in zip(info.positionals, [p for p in positionals if not re.fullmatch(r"[A-Z][A-Z0-9_.]+", p)]):
            self.s.put(dest, value, P_ARGV, f"argv positional {dest}")  # `main.py -a resnet18 /data/imagenet`
        for dest, default in info.defaults.items():
            if dest not in parsed:
                self.s.put(dest, default, P_DEFAULT, f"argparse default {dest}")
        # config files named by the resolved arguments (argv first, then defaults)
        resolved = {**{d: v for d, v in info.defaults.items()}, **parsed}
        for k, v in resolved.items():
            mlc = re.fullmatch(r"(.+\.py):(.*)", v) if isinstance(v, str) else None
            if mlc and self._file(mlc.group(1)):  # ml_collections: `--config=configs/vit.py:b16,cifar10`
                self.ml_config(self._file(mlc.group(1)), mlc.group(2))
                continue
            if isinstance(v, str) and re.search(r"\.(json|ya?ml|py)$", v) and not k.startswith("output"):
                f = self._file(v)
                if f and f != name:
                    if f.endswith(".py") and "def get_config" in self.files[f]:
                        self.ml_config(f, "")
                    else:
                        self.config_file(f, P_CONFIG, f"config {f}")
        for k, v in hydra:  # OmegaConf.from_cli(): `config=apps/main/configs/debug.yaml` names the run's config file
            if k.lstrip("+") in ("config", "cfg", "config_file", "config_path") and isinstance(v, str) and \
                    re.search(r"\.(json|ya?ml)$", v):
                f = self._file(v)
                if f and f != name:
                    self.config_file(f, P_CONFIG, f"config {f}")
        rest_pos = []
        i = 0
        while i < len(positionals):  # detectron2 / yacs opts: "SOLVER.MAX_ITER 90000" pairs
            p = positionals[i]
            if (re.fullmatch(r"[A-Z][A-Z0-9_]*(\.[A-Z0-9_]+)+", p) or re.fullmatch(r"[A-Z][A-Z0-9]*_[A-Z0-9_]+", p) or
                    re.fullmatch(r"[A-Z][A-Z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+", p) and  # TRAIN.num_epoch 10: a yacs
                    not re.search(r"\.(ya?ml|json|py|md|txt|sh|cfg|ini|toml)$", p, re.I)) \
                    and i + 1 < len(positionals):  # NUM_GPUS 2 too: a top-level yacs key (section upper, leaf any)
                self.s.put(p, _yaml_value(positionals[i + 1]), P_OVERRIDE, f"opts {p}")
                i += 2
                continue
            rest_pos.append(p)
            i += 1
        positionals = rest_pos
        if self._folders is None:
            self._folders = self._repo.folders = {k.rpartition("/")[0] for k in self.files}
            self._folders |= {f.rsplit("/", n)[0] for f in list(self._folders) for n in range(1, f.count("/") + 1)}
        dirs = [str(v) for v in parsed.values() if isinstance(v, str) and v.strip("./") and
                _join_rel(self.cwd, v).rstrip("/") in self._folders]
        for p in positionals:
            # a config named relative to a folder the command gives (`deepy.py train.py -d configs a.yml`)
            f = self._file(p) or next((g for d in dirs for g in [self._file(_join_rel(d, p))] if g), None)
            if f and re.search(r"\.(json|ya?ml|py)$", f):
                self.config_file(f, P_CONFIG, f"config {f}")
            elif re.fullmatch(r"\d+", p):
                pass
        for k in ("config", "cfg", "config_file"):
            v = parsed.get(k)
            if isinstance(v, str) and self._file(v) and v.endswith(".txt") and not k.startswith("output"):
                self.config_file(self._file(v), P_CONFIG, f"config {self._file(v)}")  # configargparse `key = value`
                continue
            if isinstance(v, str) and not self._file(v) and re.fullmatch(r"[\w./-]+", v) and not v.endswith(".py"):
                f = self._named_config(v)
                if f:
                    self.config_file(f, P_CONFIG, f"config {f}")
        for k in _OBJECT_KEYS:  # a Python experiment class / config function the command names
            v = parsed.get(k)
            if isinstance(v, str) and not self._file(v) and not re.search(r"\.(ya?ml|json|py)$", v):
                if self._python_object(v, P_CONFIG):
                    break
        self._hyperparameter_table(parsed)
        if "cfg_options" in parsed:
            for item in str(parsed["cfg_options"]).split():
                if "=" in item:
                    k, v = item.split("=", 1)
                    self.s.put(k, _yaml_value(v), P_OVERRIDE, f"--cfg-options {k}")
        cli_name = parsed.get("config_name") or parsed.get("cn")
        cli_dir = parsed.get("config_dir") or parsed.get("config_path") or parsed.get("cp")
        if info.hydra is not None:
            cpath, cname = info.hydra
            self.hydra(name or script, (cpath, str(cli_name) if cli_name else cname), hydra,
                       config_dir=str(cli_dir) if parsed.get("config_dir") else None)
        elif cli_name and cli_dir:  # fairseq-hydra-train and other Hydra console scripts
            self.hydra("", (None, str(cli_name)), hydra, config_dir=str(cli_dir))
        elif hydra:
            for k, v in hydra:
                self.s.put(k, _yaml_value(v), P_OVERRIDE, f"override {k}")
                if k.lstrip("+") in _OBJECT_KEYS and re.fullmatch(r"[\w./-]+", v):
                    # `config=pretrain/swav/swav_8node`: a project composing its own YAML (no @hydra.main)
                    f = self._named_config(v)
                    if f:
                        self.config_file(f, P_CONFIG, f"config {f}")
        for key, value in info.keywords:
            self.s.put(key, value, P_CODE_KW, f"code {key}")
        for key, value in info.fields.items():
            if key not in parsed:
                self.s.put(key, value, P_DEFAULT - 5, f"dataclass field default {key}")
        for key, value in info.consts.items():  # a constant computed from others is derived: the literal one first
            self.s.put(key, value, P_CODE - (3 if key in info.derived else 0), f"module constant {key}")
        if info.loop_epochs:
            self.s.put("loop.epochs", info.loop_epochs, P_CODE - 10, f"epoch loop range({info.loop_epochs})")
        if info.loader_batch:
            self.s.put("dataloader.batch_size", info.loader_batch, P_CODE - 10, "training DataLoader batch_size")
        for mod in info.imports:
            f = self._file(mod.replace(".", "/") + ".py", rel_to=name) or self._file(mod.replace(".", "/") + ".py")
            if f and f != name:
                for key, value in _attribute_defaults(self.files[f]).items():
                    self.s.put(key, value, P_DEFAULT - 10, f"config defaults {f}")
                # yacs defaults documented as totals: `# Total mini-batch size.` above `_C.TRAIN.BATCH_SIZE = 64`
                for m in re.finditer(r"#[^\n]*\btotal\b[^\n]*\n\s*_?[A-Za-z]+\.([\w.]*batch[\w.]*)\s*=",
                                     self.files[f], re.I):
                    self.global_batch.add(m.group(1))
        if name is not None and parsed_info is not None:
            self._imported_constants(name)
        self.s.put("hint.entry", PurePosixPath(script).stem, P_CODE - 20, f"entry name {script}")
        for k in ("config", "cfg", "config_name", "config_file"):
            v = parsed.get(k)
            if isinstance(v, str) and not self._file(v):
                self.s.put("hint.config", v, P_CODE - 20, f"config name {v}")
        if name is None:  # a console script: positionals are data paths more often than not
            for p in positionals:
                self.s.put("positional", p, P_ARGV - 5, f"argv positional {p}")
            for k, v in parsed.items():  # and so are its path-valued options (`./train_gpt2cu -i data/x/*.bin`)
                if isinstance(v, str) and "/" in v and not _EVAL_VALUE.search(k):
                    self.s.put("positional", v, P_ARGV - 6, f"argv path --{k}")
        for value in info.model_literals:
            self.s.put("code.model", value, P_CODE, "code model constructor")
        for value in info.dataset_literals:
            self.s.put("code.dataset", value, P_CODE, "code dataset call")
        self.task_text.extend(info.task_words)
        self._code_signals(name, info)
        self._follow_program(name, argv, launched, list(info.positionals))

    def _code_signals(self, name: str | None, info: _PyInfo) -> None:
        """The network class the entry instantiates; where a thin entry (an absl/argparse main) leaves
        the training loop to a local module it imports, that module's network class and its one named
        dataset (several: a dispatcher over datasets, which names none). Low priority: any option,
        config or known model name says more."""
        local: list[_PyInfo] = []
        if name:
            self.code_texts.append(self.files.get(name, ""))
            for mod in info.imports + info.submodules:
                if re.search(r"model|net|layer|block|util|common", mod, re.I):
                    continue  # the classes a network module builds are its layers, not the job's network
                rel = mod.replace(".", "/") + ".py"
                f = self._file(rel, rel_to=name) or self._file(rel)
                if not f or f == name or f.endswith("__init__.py"):
                    continue
                self.code_texts.append(self.files[f])
                sub = _analysis_of(self.files[f], True)
                if sub is not None:
                    local.append(sub)
        classes = info.model_classes or [c for sub in local for c in sub.model_classes]
        if classes:
            self.s.put("code.model_class", classes[0], P_CODE - 25, f"code network class {classes[0]}")
        if not info.dataset_literals:
            named = {canonical_dataset(v) for sub in local for v in sub.dataset_literals} - {None}
            if len(named) == 1:
                value = named.pop()
                self.s.put("code.dataset", value, P_CODE - 15, f"code dataset call in an imported module ({value})")

    def _named_config(self, name: str) -> str | None:
        """`--config llama3_1/8B_full`: a config named without its folder or suffix, found as
        `<...>/configs/llama3_1/8B_full.yaml` (a recipe registry's naming)."""
        leaf = name.rsplit("/", 1)[-1]
        if self._by_name is None:
            self._module_file("__none__")  # builds the file-name index
        if re.search(r"\.(ya?ml|json|txt)$", leaf):  # `--config anneal.yml` that the code opens from configs/
            cands = [k for k in (self._by_name or {}).get(leaf, []) if k.endswith("/" + name) and
                     re.search(r"(^|/)(configs?|conf)/", k)]
            return min(cands, key=len) if cands else None
        for ext in (".yaml", ".yml"):
            cands = [k for k in (self._by_name or {}).get(leaf + ext, []) if k.endswith("/" + name + ext) and
                     "config" in k]
            if cands:
                return min(cands, key=len)
        return None

    def _hyperparameter_table(self, parsed: dict) -> None:
        """RL Zoo style: `--algo sac --env HalfCheetahBulletEnv-v0` reads `hyperparams/sac.yml`, the section
        named by the environment. A YAML file named by one argument value whose top-level keys include
        another argument value gives that section's values."""
        vals = [v for v in parsed.values() if isinstance(v, str) and re.fullmatch(r"[\w.-]+", v)]
        if len(vals) < 2:
            return
        if self._by_name is None:
            self._module_file("__none__")
        for v in vals:
            for ext in (".yml", ".yaml"):
                for f in (self._by_name or {}).get(v + ext, []):
                    data = self._yaml(f)
                    if not isinstance(data, dict):
                        continue
                    key = next((w for w in vals if w != v and isinstance(data.get(w), dict)), None)
                    if key is not None:
                        self.s.put_tree(data[key], P_CONFIG, f"hyperparameter table {f} [{key}]")
                        return

    def ml_config(self, name: str, arg: str) -> None:
        """An ml_collections config and the words after its `:` (a model or dataset they name counts
        when the config builds its values in code we do not follow)."""
        data = ml_collections_config(self.files[name], arg, self._config_function_resolver(name, arg))
        self.task_names.append(PurePosixPath(name).name)
        if data:
            self.s.put_tree(data, P_CONFIG, f"ml_collections config {name}")
        self.s.put("config.filename", PurePosixPath(name).stem, P_CONFIG - 30, f"config name {name}")
        for w in re.split(r"[,=]", arg):
            if known_model(w):
                self.s.put("config_arg.model", w, P_CONFIG - 5, f"config argument {w}")
            elif canonical_dataset(w):
                self.s.put("config_arg.dataset", w, P_CONFIG - 5, f"config argument {w}")

    def _config_function_resolver(self, name: str, arg: str, depth: int = 0):
        """For a config module: fn name -> the values of the function it imports under that name
        (`from configs.default_cifar10_configs import get_default_configs`), read the same way."""
        text = self.files[name]

        def resolve(fn: str) -> dict | None:
            m = re.search(rf"^from\s+([\w.]+)\s+import\s+[^\n]*\b{re.escape(fn)}\b", text, re.M)
            if m is None or depth >= 3:
                return None
            rel = m.group(1).replace(".", "/") + ".py"
            f = self._file(rel) or self._file(rel, rel_to=name)
            if f is None:
                return None
            return ml_collections_config(self.files[f], arg, self._config_function_resolver(f, arg, depth + 1), fn)
        return resolve

    def _subcommand(self, name: str, word: str) -> _PyInfo | None:
        found = subcommand_target(self.files[name], word)
        if found is None:
            return None
        f = self._module_file(found[0])
        if f is None:
            return None
        self.task_names.append(f)
        return function_cli(self.files[f], found[1])

    def _follow_wrapped(self, name: str, info: _PyInfo) -> None:
        """A wrapper (a submitit launcher, a thin main) that builds its parser from another local
        module's (`parents=[trainer.get_args_parser()]`) or parses a dataclass defined there
        (HfArgumentParser): that module's options, defaults and fields count as the entry's own
        (the entry's win where both define one)."""
        text = self.files[name]
        # a parser built elsewhere: parents=[...], get_args_parser(), or no option of its own while a
        # local module it imports defines them (`from pkg.params import parse_args`)
        own_options = bool(info.options)
        wraps = re.search(r"get_args_parser|get_parser|parents\s*=|add_args\(", text) is not None or not own_options
        if not (wraps or info.hf_parser or "dataclass" in text):
            return
        for mod in info.imports:
            f = self._module_file(mod) or self._file(mod.replace(".", "/") + ".py", rel_to=name)
            if not f or f == name or not f.endswith(".py"):
                continue
            sub = _analysis_of(self.files[f], True)
            if sub is None:
                continue
            if wraps and sub.options:
                for k, v in sub.options.items():
                    info.options.setdefault(k, v)
                for k, v in sub.defaults.items():
                    info.defaults.setdefault(k, v)
                info.task_words.extend(sub.task_words)
                info.model_literals.extend(sub.model_literals)
                info.global_batch |= sub.global_batch
                info.programs.extend(sub.programs)
                info.positionals.extend(d for d in sub.positionals if d not in info.positionals)
                self.task_text.append(PurePosixPath(f).name)
            if info.hf_parser or "dataclass" in text or not own_options:
                for k, v in sub.fields.items():
                    info.fields.setdefault(k, v)
        if not own_options and not info.options and re.search(r"\b(fire|jsonargparse|tyro|typer)\b", text):
            self._package_fields(name, info)

    def _package_fields(self, name: str, info: _PyInfo, depth: int = 3, limit: int = 40) -> None:
        """A thin entry that hands its argv to a function of an installed package (`fire.Fire(main)` with
        `main` imported from `pkg.finetuning`): that function updates config dataclasses by keyword, so the
        dataclass defaults of the modules it imports (packages followed through their `__init__.py`,
        relative imports included, up to `depth` levels) are the job's defaults."""
        memo = self._repo.package_fields
        if name in memo:
            for k, v in memo[name].items():
                info.fields.setdefault(k, v)
            return
        before = dict(info.fields)
        self._walk_package(name, info, depth, limit)
        memo[name] = {k: v for k, v in info.fields.items() if k not in before}

    def _walk_package(self, name: str, info: _PyInfo, depth: int, limit: int) -> None:
        seen, frontier = {name}, [(name, info)]
        for _ in range(depth):
            nxt = []
            for f, fi in frontier:
                base = PurePosixPath(f).parent
                mods = [m.replace(".", "/") for m in fi.imports + fi.submodules]
                for r in fi.relative:
                    level = len(r) - len(r.lstrip("."))
                    up = base
                    for _ in range(level - 1):
                        up = up.parent
                    mods.append(str(up / r.lstrip(".").replace(".", "/")) if r.lstrip(".") else str(up))
                for m in mods:
                    g = next((c for c in (self._file(m + ".py", rel_to=f) or self._file(m + ".py"),
                                          self._file(m + "/__init__.py"), self._file("src/" + m + ".py"),
                                          self._file("src/" + m + "/__init__.py")) if c), None)
                    if g is None or g in seen or len(seen) >= limit:
                        continue
                    seen.add(g)
                    sub = _analysis_of(self.files[g], True)
                    if sub is None:
                        continue
                    for k, v in sub.fields.items():
                        info.fields.setdefault(k, v)
                    nxt.append((g, sub))
            frontier = nxt

    def hydra(self, script: str, spec: tuple[str | None, str | None], overrides: list[tuple[str, str]],
              config_dir: str | None = None) -> None:
        cpath, cname = spec
        if config_dir is not None:  # --config-dir on the command line: relative to where it runs
            base = _join_rel(self.cwd, config_dir)
        else:  # config_path is relative to the script's folder ("../configs" from src/train.py)
            base = _join_rel(str(PurePosixPath(script).parent), cpath or ".")

        def is_global(p: str) -> bool:
            text = self.files.get(p, "")
            return "# @package _global_" in text or bool((self._yaml(p) or {}).get("_global_"))

        cfg, set_overrides = _hydra_compose(
            self._yaml, is_global, lambda d: any(f.startswith(d + "/") for f in self.files), base,
            cname or "config", overrides)
        if cfg is None:
            return
        cfg = _resolve_interpolations(cfg)
        self.s.put_tree(cfg, P_CONFIG, "hydra config")
        self._hydra_targets(cfg)
        task = cfg.get("task")
        if isinstance(task, dict) and isinstance(task.get("_name"), str):
            self.task_text.append(task["_name"])
        for k, v in set_overrides:
            self.s.put(k, _yaml_value(v), P_OVERRIDE, f"hydra override {k}")
        self._hydra_devices(cfg, set_overrides)

    def _config_model_class(self, data: dict, prio: int, name: str) -> None:
        """`model: {target: ldm.models.diffusion.ddpm.LatentDiffusion}` (OmegaConf instantiate_from_config,
        jsonargparse class_path): the class a config builds names the model, and says the objective."""
        model = data.get("model") if isinstance(data.get("model"), dict) else {}
        target = next((model[k] for k in ("target", "_target_", "class_path", "_component_")
                       if isinstance(model.get(k), str)), None)
        if target and "." in target:
            words = _class_words(target)
            self.s.put("hydra.model_class", words, prio - 1, f"config {name} model target {target}")
            self.task_names.append(words)

    def _hydra_targets(self, cfg: dict) -> None:
        """`_target_` classes say what Hydra instantiates: the network under the model config is the
        model (the LightningModule around it is a wrapper); a data module that divides `batch_size` by
        the world size takes a global batch."""
        model = cfg.get("model") if isinstance(cfg.get("model"), dict) else {}
        nets = [v.get("_target_") for k, v in model.items() if isinstance(v, dict) and isinstance(v.get("_target_"), str)
                and k in ("net", "network", "backbone", "model", "encoder", "arch")]
        for target in nets + [model.get("_target_")]:
            if isinstance(target, str):
                self.s.put("hydra.model_class", _class_words(target), P_CONFIG - 1, f"hydra _target_ {target}")
                break
        data = cfg.get("data") if isinstance(cfg.get("data"), dict) else cfg.get("datamodule")
        target = data.get("_target_") if isinstance(data, dict) else None
        if isinstance(target, str) and "." in target:
            f = self._module_file(target.rsplit(".", 1)[0])
            if f and re.search(r"batch_size\s*//\s*[\w.]*world_size", self.files[f]):
                self.global_batch.add("data.batch_size")
                self.global_batch.add("datamodule.batch_size")

    def _hydra_devices(self, cfg: dict, overrides: list[tuple[str, str]]) -> None:
        tr = cfg.get("trainer") if isinstance(cfg.get("trainer"), dict) else {}
        dev = _as_int(dict(overrides).get("trainer.devices", tr.get("devices")))
        nn = _as_int(dict(overrides).get("trainer.num_nodes", tr.get("num_nodes")))
        self._set_gpn(dev, 30, "hydra trainer.devices")
        self._set_nodes(nn, 30, "hydra trainer.num_nodes")

    def _yaml(self, path: str) -> dict | None:
        text = self.files.get(path)
        if text is None:
            return None
        data = _yaml_text(text)
        return copy.deepcopy(data) if data is not None else None  # callers pop keys from it

    def config_file(self, name: str, prio: int, source: str) -> None:
        if name in self.loaded:
            return
        self.loaded.add(name)
        text = self.files[name]
        self.task_text.append(PurePosixPath(name).name)
        self.task_names.append(PurePosixPath(name).name)
        if name.endswith(".json"):
            try:
                data = json.loads(text)
            except json.JSONDecodeError:
                data = _json_with_comments(text)
                if data is None:
                    return
            self.s.put_tree(data, prio, source)
        elif name.endswith((".yaml", ".yml")):
            data = self._yaml(name)
            if data is not None and data and all(isinstance(v, dict) for v in data.values()):
                # per-environment sections (`base: &base`, `prod: {<<: *base}`): the one the job names
                env = next((str(v) for k, v, p, src in self.s.ranked() if isinstance(v, str) and v in data
                            and p >= P_DEFAULT), None)
                if env is not None:
                    data = dict(data[env])
            if data is not None:
                default = self._default_config(name, data)
                if default is not None:
                    self.config_file(default, prio - 2, f"default config {default}")
                base = data.pop("_BASE_", None) or data.pop("_base_", None)
                for b in ([base] if isinstance(base, str) else base if isinstance(base, list) else []):
                    f = self._file(str(b), rel_to=name)
                    if f:
                        self.config_file(f, prio - 1, f"config {f}")
                self.s.put_tree(data, prio, source)
                self._config_model_class(data, prio, name)
                for key in _DISPATCH_KEYS:  # `app: vjepa`: the entry dispatches on it to the training code
                    if isinstance(data.get(key), str) and len(data[key]) <= 40:
                        self.task_text.append(data[key])
            self.s.put("config.filename", PurePosixPath(name).stem, prio - 30, f"config name {name}")
        elif name.endswith(".txt"):  # configargparse / absl flagfile style: `key = value` lines
            pairs = [re.match(r"\s*-{0,2}([A-Za-z_][\w.-]*)\s*[=:]?\s*(.*?)\s*$", ln) for ln in text.splitlines()
                     if ln.strip() and not ln.lstrip().startswith("#")]
            if pairs and all(m is not None and m.group(2) for m in pairs):
                self.s.put_tree({m.group(1): _yaml_value(m.group(2)) for m in pairs}, prio, source)
                self.s.put("config.filename", PurePosixPath(name).stem, prio - 30, f"config name {name}")
        elif name.endswith(".py"):
            data, bases = _python_config(text)
            for b in bases:
                f = self._file(b, rel_to=name)
                if f:
                    self.config_file(f, prio - 1, f"config {f}")
            self.s.put_tree(data, prio, source)
            attrs = self._class_file_config(name, prio)  # an experiment class: `self.max_epoch = 300`
            if attrs:
                self.s.put_tree(attrs, prio, f"{source} (class attributes)")
                self.task_text.append(json.dumps(attrs, default=str))
            self.s.put("config.filename", PurePosixPath(name).stem, prio - 30, f"config name {name}")
            self.task_text.append(json.dumps(data, default=str))

    # -- resolve -------------------------------------------------------------------------------

    def _default_config(self, name: str, data: dict) -> str | None:
        """The project's default config that a partial config overrides (OmegaConf-style setups merge
        `ssl_default_config.yaml` under `train/vitl16.yaml` in code): a YAML whose name says "default",
        in the config's folder or one of its parents up to the repository's config root, whose sections
        include every section of this one."""
        keys = {k for k in data if not str(k).startswith("_")}
        if not keys or "default" in PurePosixPath(name).name:
            return None
        if self._defaults is None:  # {folder: default-named YAML files in it}, built once
            self._defaults = self._repo.defaults = {}
            for k in self.files:
                folder_k, _, leaf = k.rpartition("/")
                if "default" in leaf and leaf.endswith((".yaml", ".yml")):
                    self._defaults.setdefault(folder_k, []).append(k)
        folder = name.rpartition("/")[0]
        for _ in range(3):
            for c in sorted(self._defaults.get(folder, [])):
                d = self._yaml(c) if c != name else None
                if isinstance(d, dict) and keys <= set(d):
                    return c
            if folder.rpartition("/")[2] in ("configs", "config", "conf", "") or not folder:
                break
            folder = folder.rpartition("/")[0]
        return None

    # -- resolve -------------------------------------------------------------------------------
    def resolve(self) -> JobMetadata:
        return _resolve(self)




@lru_cache(maxsize=512)
def _yaml_text(text: str) -> dict | None:
    """A YAML mapping parsed once per distinct text (PyYAML is slow; configs repeat across jobs)."""
    import yaml

    try:
        data = yaml.load(text, Loader=_tolerant_loader())  # noqa: S506 - a SafeLoader that skips python tags
    except yaml.YAMLError:
        return None
    return data if isinstance(data, dict) else None


@lru_cache(maxsize=1)
def _tolerant_loader():
    """PyYAML's SafeLoader, except that a value tagged for Python (`!!python/object/apply:eval [...]`, as
    detectron2-style configs write computed sizes) or any other unknown tag reads as None instead of
    failing the whole file (nothing is constructed or run)."""
    import yaml

    class Tolerant(yaml.SafeLoader):
        pass

    Tolerant.add_multi_constructor("tag:yaml.org,2002:python/", lambda loader, suffix, node: None)
    Tolerant.add_multi_constructor("!", lambda loader, suffix, node: None)
    return Tolerant


def _class_words(target: str) -> str:
    """`pkg.models.SimpleDenseNet` -> "simple-dense-net" (a class name's words)."""
    leaf = re.sub(r"^(q?lora|dora|adapter)_", "", target.rsplit(".", 1)[-1])  # lora_llama3_1_8b: the base model
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "-", leaf).lower()


def _norm_path(k: str) -> str:
    return str(PurePosixPath(k)).lstrip("./") if k.startswith("./") else str(PurePosixPath(k))


def _resolve_interpolations(cfg: dict) -> dict:
    """${a.b} interpolations resolved with OmegaConf when it is installed (the ml extra); a config it
    cannot resolve (a missing ??? value, an unknown resolver) is kept as merged. Hydra's own `hydra:`
    section (run folders, launcher settings) says nothing about the job and is left out; the result is
    cached per distinct composed config (OmegaConf takes ~0.1 s on a large one)."""
    cfg = {k: v for k, v in cfg.items() if k != "hydra"}
    key = json.dumps(cfg, sort_keys=True, default=str)
    if "${" not in key:
        return cfg
    return copy.deepcopy(_resolved(key))


@lru_cache(maxsize=256)
def _resolved(key: str) -> dict:
    cfg = json.loads(key)
    try:
        from omegaconf import OmegaConf
    except ImportError:
        return cfg
    try:
        conf = OmegaConf.create(cfg)
        out = OmegaConf.to_container(conf, resolve=True, throw_on_missing=False)
    except Exception:  # noqa: BLE001 - any OmegaConf failure: section by section, keep what fails as merged
        try:
            conf = OmegaConf.create(cfg)
        except Exception:  # noqa: BLE001
            return cfg
        out = {}
        for k in cfg:
            try:
                node = conf[k]
                out[k] = OmegaConf.to_container(node, resolve=True) if OmegaConf.is_config(node) else node
            except Exception:  # noqa: BLE001 - a resolver the job's code registers (`${hydra:...}`)
                out[k] = cfg[k]
    return out if isinstance(out, dict) else cfg


def extract_metadata(command: str, files: dict[str, str], min_confidence: float | None = None,
                     repo_name: str | None = None) -> JobMetadata:
    """Model, task, iterations (+ unit), dataset, per-device batch size, total GPUs and nodes of a job,
    from its launch command and its repository files ({relative path: text}). Fields that no rule
    finds are None (GPUs and nodes default to 1). Every answered field carries its evidence (file:line or
    the command's argument), its kind and a confidence in `md.evidence`; with `min_confidence` (the
    Advisor's threshold is features.schedmate_text.evidence.MIN_CONFIDENCE) a field below it is answered
    None and `md.unknown[field]` says why. Without it every guess is kept (the rules' raw answer). `repo_name`: the
    repository's name as cloned (a folder name; `owner+name` reads as name), whose identity, where its code
    corroborates it, is evidence for the model (features.schedmate_text.identity)."""
    if not isinstance(command, str) or not command.strip():
        raise ValueError("the command is empty")
    from features.schedmate_text.evidence import abstain, attach_evidence

    ex = _Extractor(files)  # never written to: the normalised, indexed copy is cached per repository
    ex.command(command)
    md = attach_evidence(ex.resolve(), ex, command)
    from features.schedmate_text.identity import apply_identity

    apply_identity(md, ex, repo_name)
    from features.schedmate_text.evidence import corroborate_task

    corroborate_task(md, ex)
    return md if min_confidence is None else abstain(md, min_confidence)


READ_SUFFIXES = (".py", ".sh", ".yaml", ".yml", ".json", ".cfg", ".toml", ".txt", ".md", ".ini", ".slurm")


def read_repository(folder: str, max_bytes: int = 1_000_000, max_files: int = 2000) -> dict[str, str]:
    """{relative path: text} of a repository's text files (hidden folders and large files skipped)."""
    from pathlib import Path

    root = Path(folder)
    if not root.exists():
        raise FileNotFoundError(f"{folder}: no such repository folder")
    if not root.is_dir():
        raise NotADirectoryError(f"{folder}: not a folder")
    cands = []
    real_root = root.resolve()
    for p in root.rglob("*"):
        rel = p.relative_to(root)
        if any(part.startswith(".") or part in ("__pycache__", "node_modules") for part in rel.parts):
            continue
        if p.suffix in READ_SUFFIXES and p.is_file() and p.stat().st_size <= max_bytes:
            if p.is_symlink() or any(q.is_symlink() for q in p.parents if q != root and root in q.parents):
                real = p.resolve()  # a link is followed only within the repository (issue 44)
                if real_root not in real.parents:
                    continue
            cands.append((rel.as_posix(), p))
    if len(cands) > max_files:
        # a large repository (several sub-projects): launch scripts and configs first, then code by depth,
        # docs, tests and data lists last -- not the alphabetical first `max_files` (a sub-project named
        # `video_classification` would lose its entry point to `image_classification`'s third-party copies)
        def rank(item: tuple[str, Any]) -> tuple[int, int, str]:
            rel = item[0]
            low = rel.lower()
            doc = low.endswith((".md", ".txt", ".json")) or (low.endswith(".py") and re.search(
                r"(^|/)(tests?|docs?|third_party)/", low) is not None)  # (configs under a test/ folder stay)
            kind = 0 if low.endswith((".sh", ".slurm", ".yaml", ".yml", ".toml", ".cfg", ".ini")) else 1
            return (2 if doc else kind, rel.count("/"), rel)
        cands = sorted(cands, key=rank)[:max_files]
    out: dict[str, str] = {}
    for rel, p in sorted(cands):
        try:
            out[rel] = p.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
    return out


_JSON_COMMENT = re.compile(r'("(?:\\.|[^"\\])*")|//[^\n]*|/\*.*?\*/', re.S)


def _json_with_comments(text: str):
    """A JSON options file with `//` and `/* */` comments (the JSONC many training repositories use, read by
    their own loaders after dropping comments): the data, or None when it still is not JSON."""
    try:
        return json.loads(_JSON_COMMENT.sub(lambda m: m.group(1) or "", text))
    except json.JSONDecodeError:
        return None
