"""Extractor rules that follow a job past its first entry point: a program that runs another program
(a repository's own copy of a distributed launcher taking a training script), and hyper-parameters kept
in Python objects the command names (an experiment class file, a config function in a registry).

A mixin of the extractor (features.schedmate_text.extract._Extractor): it uses the extractor's file
lookups and settings; kept apart so that each concern stays readable.
"""
from __future__ import annotations

import json
import re
import shlex
from functools import lru_cache
from pathlib import PurePosixPath
from typing import Any

from features.schedmate_text.pyconfig import (class_attributes, class_config, config_functions, function_config,
                                              python_name)

# folders whose Python files are experiment / config objects rather than code
_CONFIG_FOLDER = re.compile(r"(^|/)(exps?|experiments?|configs?|cfgs?|recipes?)(/|$)", re.I)
# modules that hold config builders (a registry of named configs)
_CONFIG_MODULE = re.compile(r"(config|registry|exps?|experiments?|presets?)", re.I)
# an entry's positional that is the program it runs (`launch.py ... training_script args`)
_PROGRAM_DEST = re.compile(r"(script|program|command|cmd|entry)", re.I)
# keys whose value may name a Python config object
_OBJECT_KEYS = ("config", "cfg", "config_name", "exp", "experiment", "exp_name", "name", "exp_file", "preset")


# the process count a batch is divided by (`world_size`, `dist.get_world_size()`, `cfg.NUM_GPUS`, `ext_dist.my_size`)
_WORLD = r"(?:[\w.]+\.)?(?:get_)?(?:world_size|num_gpus|n_gpus|ngpus|num_devices|num_processes|ngpus_per_node|" \
         r"num_gpus_per_node|gpus_per_node|my_size|nprocs)\b"
_DIVIDED = re.compile(r"\b(\w*batch\w*|bs)\s*(?:=\s*\1\s*)?//=?\s*\(?\s*" + _WORLD, re.I)
# `bs / world_size`, `bs / args.ac / dist.get_world_size()` (other divisors between), `BATCH_SIZE / max(1, NUM_GPUS)`
_DIVISION = re.compile(r"\b(?:\w+\.)?(\w*batch\w*|bs)\s*(?://|/)(?:\s*[\w.]+(?:\(\))?\s*(?://|/))*\s*\(?\s*"
                       r"(?:max\(\s*1\s*,\s*)?" + _WORLD, re.I)


def divided_batches(text: str) -> set[str]:
    """Batch options the code divides by the number of processes (`batch_size = batch_size //
    dist.get_world_size()`, `round(args.bs / args.ac / dist.get_world_size())`, `int(cfg.TRAIN.BATCH_SIZE /
    max(1, cfg.NUM_GPUS))`): the command's value is the total over all GPUs."""
    if "/" not in text:
        return set()
    # (`int(h.batch_size / h.num_gpus)` too: a true division made whole)
    return {m.group(1) for m in _DIVISION.finditer(text)} | {m.group(1) for m in _DIVIDED.finditer(text)}


# a batch option whose comment says it is the total (`bs: int = 768  # global batch size`,
# `parser.add_argument('--bs', type=int)  # total batch size over all GPUs`)
_COMMENTED_TOTAL = re.compile(r"(?m)^\s*(?:(\w*batch\w*|bs)\s*:\s*[\w\[\]., ]+=|[\w.]*add_argument\(\s*['\"]--?"
                              r"(\w*batch[\w-]*|bs)['\"])[^#\n]*#[^\n]*\b(?:total|global)\s+batch", re.I)


def commented_global_batches(text: str) -> set[str]:
    """Batch options documented as the total by their comment (the help text is read by pyast)."""
    if "#" not in text:
        return set()
    return {(m.group(1) or m.group(2)).replace("-", "_") for m in _COMMENTED_TOTAL.finditer(text)}


_IMPORT = re.compile(r"^\s*(?:from\s+(\.*[\w.]*)\s+import\s+\(?([\w, ]+)|import\s+([\w.]+))", re.M)


def imported_modules(files: dict[str, str], entry: str, depth: int = 2, limit: int = 40) -> list[str]:
    """The repository modules `entry` imports, `depth` levels deep (at most `limit` files, the entry first): where a
    batch option's division by the process count often lives (a loader builder, an argument post-processor)."""
    seen, frontier = [entry], [entry]
    for _ in range(depth):
        nxt = []
        for f in frontier:
            base = f.rpartition("/")[0]
            for m in _IMPORT.finditer(files.get(f, "")):
                mods = [m.group(3)] if m.group(3) else \
                    [m.group(1)] + [f"{m.group(1)}.{n.split()[0]}" for n in m.group(2).split(",") if n.strip()]
                for mod in mods:
                    dots = len(mod) - len(mod.lstrip("."))
                    rel = mod.lstrip(".").replace(".", "/")
                    root = base
                    for _ in range(max(0, dots - 1)):
                        root = root.rpartition("/")[0]
                    for cand in ((f"{root}/{rel}" if root else rel) if dots else rel, f"{base}/{rel}" if base else rel):
                        g = next((c for c in (cand + ".py", cand + "/__init__.py") if c in files), None)
                        if g and g not in seen and len(seen) < limit:
                            seen.append(g)
                            nxt.append(g)
        frontier = nxt
    return seen


_UNDIVIDED = re.compile(r"\bbatch_size\s*=\s*(?:\w+\.)+(\w*batch\w*)\b(?!\s*(?://|/|\*))")


def undivided_batches(text: str) -> set[str]:
    """Config batch keys the code passes straight to its data loader (`batch_size=config.train_batch_size`):
    one process's batch, whatever the key's name suggests."""
    return {m.group(1) for m in _UNDIVIDED.finditer(text)} if "batch_size" in text else set()


def option_leaf(key: str) -> str:
    """An option's last name part, as code spells it: `train.batch-size` -> `batch_size`."""
    return key.rsplit(".", 1)[-1].replace("-", "_").lower()


# how the code spreads a batch over devices (issue 41, item 3: the batch's scope from the mechanism, not the name)
_CODE_LINE = r"(?m)^(?!\s*#)[^\n#]*"  # (a line that is not a comment, up to a trailing comment)
#: a sampler that gives each process its own shard: one DataLoader per process
_SAMPLER = re.compile(_CODE_LINE + r"Distributed\w*Sampler\(")
#: anything that starts or joins a process group (several processes, each with its own loader)
_PROCESS_GROUP = re.compile(_CODE_LINE + r"(?:DistributedDataParallel\(|init_process_group\(|\bspawn\()")
#: a DataLoader (or sampler) handed a batch option as it is: `batch_size=args.batch_size`, `batch_size=bs`
_LOADER_BATCH = re.compile(r"(?:\bbatch_size\s*=\s*|(?:BatchSampler|Distributed\w*Sampler)\(\s*[\w.]+\s*,\s*)"
                           r"(?:[\w]+\.)*(\w*batch\w*|bs)\b(?!\s*(?:[-+*/%\[(]))", re.I)


@lru_cache(maxsize=1024)  # (a repository's code text is one string: its hash is cached)
def sampler_per_process(code: str, key: str, processes: bool = False) -> bool:
    """Each process draws its own batch of `key`: the code shards the data with a DistributedSampler (or, with
    `processes`, runs as several processes that each build their own loader: a launcher or a process group) and hands
    the option undivided to its DataLoader (`DataLoader(ds, batch_size=args.batch_size, sampler=...)`), and nothing
    divides it by the process count: the option is the per-device batch."""
    leaf = option_leaf(key)
    if not leaf or not (_SAMPLER.search(code) if not processes else _PROCESS_GROUP.search(code)):
        return False
    if leaf in {k.lower() for k in divided_batches(code)} or named_total(code, leaf) or splits_batches(code):
        return False
    return any(m.group(1).lower() == leaf for m in _LOADER_BATCH.finditer(code))


#: detectron2's solver / LazyConfig batch keys: the total over all workers (the library divides it by the world size)
_DETECTRON2_TOTAL = {"ims_per_batch", "total_batch_size"}
_IMPORTS_DETECTRON2 = re.compile(r"(?m)^\s*(?:from|import)\s+detectron2\b")


#: the code names the option itself the global / total batch (`total_batch_size = args.bs`,
#: `log(key=GLOBAL_BATCH_SIZE, value=args.mini_batch_size)`), not a product of it
_NAMED_TOTAL = re.compile(r"(?i)(?:global|total)_?batch_?size\w*['\"]?\s*[,:=]\s*(?:value\s*=\s*)?(?:\w+\.)+"
                          r"(\w*batch\w*|bs)\b(?!\s*[-+*/%(\[])")


@lru_cache(maxsize=1024)  # (a repository's code text is one string: its hash is cached)
def named_total(code: str, key: str) -> bool:
    """The code calls the option itself the global (total) batch."""
    leaf = option_leaf(key)
    return any(m.group(1).lower() == leaf for m in _NAMED_TOTAL.finditer(code)) if leaf else False


#: accelerate's `Accelerator(split_batches=True)`: each loader batch is split over the processes (the option is the total)
_SPLIT_BATCHES = re.compile(_CODE_LINE + r"Accelerator\([^)]*\bsplit_batches\s*=\s*True")


def splits_batches(code: str) -> bool:
    """The code builds its Accelerator with `split_batches=True`: the loader's batch is the total over all processes."""
    return "split_batches" in code and _SPLIT_BATCHES.search(code) is not None


@lru_cache(maxsize=1024)  # (a repository's code text is one string: its hash is cached)
def total_by_code(code: str, key: str) -> str | None:
    """Why the code makes `key` the total over all processes, or None: it divides the option by the process count
    itself (`batch_size // world_size`), or it hands it to detectron2, whose SOLVER.IMS_PER_BATCH /
    `dataloader.train.total_batch_size` is the batch of all workers together."""
    leaf = option_leaf(key)
    if not leaf:
        return None
    if leaf in {k.lower() for k in divided_batches(code)}:
        return f"the code divides {leaf} by the process count"
    if named_total(code, leaf):
        return f"the code names {leaf} the global batch"
    if splits_batches(code):
        return "accelerate splits each loader batch over the processes (Accelerator(split_batches=True))"
    if leaf in _DETECTRON2_TOTAL and _IMPORTS_DETECTRON2.search(code):
        return f"detectron2's {leaf} is the total over all workers (the library divides it by the world size)"
    return None


@lru_cache(maxsize=1024)  # (a repository's code text is one string: its hash is cached)
def single_process(code: str) -> bool:
    """The code never starts or joins a process group (no DistributedDataParallel, init_process_group, spawn): one
    process drives every device it uses."""
    return _PROCESS_GROUP.search(code) is None


class FollowMixin:
    files: dict[str, str]
    depth: int
    global_batch: set[str]

    # -- a program that runs a program --------------------------------------------------------
    def _follow_program(self, name: str | None, argv: list[str], positionals: list[str], dests: list[str]) -> bool:
        """`python tools/launch.py --nproc_per_node 8 ./configs/x.sh ARGS`: the entry is a launcher whose
        positional is a script of the repository (a shell script, or a Python file the launcher's own
        parser calls a script/program); the launcher's options stay (GPUs, nodes) and the launched script
        is followed with the arguments after it. True when followed."""
        if name is None or self.depth > 6:
            return False
        for i, p in enumerate(positionals):
            f = self._file(p)
            if f is None or f == name or not f.endswith((".sh", ".py")):
                continue
            dest = dests[i] if i < len(dests) else ""
            if f.endswith(".py") and not _PROGRAM_DEST.search(dest):
                continue  # `train.py configs/x.py`: a config, not a program
            if p not in argv:
                continue
            rest = argv[argv.index(p) + 1:]
            cmd = shlex.join(([] if f.endswith(".sh") else ["python"]) + [f] + rest)
            self.command(cmd, {})
            return True
        return False

    # -- Python config objects -----------------------------------------------------------------
    def _config_function_index(self) -> dict[str, str]:
        """{function name: module} of the zero-argument config builders in config/registry modules,
        built once per repository."""
        repo = self._repo
        idx = getattr(repo, "config_functions", None)
        if idx is None:
            idx = {}
            for k, text in self.files.items():
                if k.endswith(".py") and _CONFIG_MODULE.search(PurePosixPath(k).stem) and "def " in text:
                    for fn in config_functions(text):
                        idx.setdefault(fn, k)
            repo.config_functions = idx
        return idx

    def _python_object(self, value: str, prio: int) -> bool:
        """A config the command names that is a Python object: `-n yolox-s` -> `exps/**/yolox_s.py` (its
        experiment class, with inherited attributes), `--config llama3_8b` -> `def llama3_8b()` in a
        config registry (the nested constructor keywords it returns). True when one was read."""
        if not isinstance(value, str) or not re.fullmatch(r"[\w.-]+", value) or len(value) < 3:
            return False
        ident = python_name(value)
        if self._by_name is None:
            self._module_file("__none__")  # builds the file-name index
        files = [k for k in (self._by_name or {}).get(ident + ".py", []) if _CONFIG_FOLDER.search(k.rpartition("/")[0])]
        if files:
            self.config_file(min(files, key=len), prio, f"experiment file for {value}")
            return True
        module = self._config_function_index().get(ident)
        if module is None:
            return False
        data = function_config(self.files[module], ident)
        if not data:
            return False
        self.s.put_tree(data, prio, f"config function {module}:{ident}")
        self.s.put("config.filename", ident, prio - 30, f"config function {ident}")
        self.task_names.append(ident)
        self.task_text.append(json.dumps(data, default=str))
        return True

    def _class_file_config(self, name: str, prio: int) -> dict[str, Any]:
        """The experiment class of a Python file (`self.max_epoch = 300`), its bases' attributes first
        (a subclass overrides them): bases found through the file's imports, three levels deep."""
        merged: dict[str, Any] = {}
        attrs, bases = class_config(self.files[name])
        chain = [(name, attrs, bases)]
        for _ in range(3):
            nxt = []
            for fname, _a, bs in chain[-1:]:
                for module, cls, level in bs:
                    found = self._find_class(fname, module, cls, level, 3)
                    if found:
                        nxt.append(found)
            if not nxt:
                break
            chain.append(nxt[0])
        for f, a, _b in reversed(chain):
            merged.update(a)
            self.global_batch |= divided_batches(self.files[f])
        return merged

    def _find_class(self, here: str, module: str, cls: str, level: int, depth: int):
        """(file, attributes, bases) of class `cls` imported into `here` from `module` (relative with
        `level` dots), following re-exports of a package's __init__."""
        if depth <= 0:
            return None
        if module == "" and level == 0:
            cands = [here]
        else:
            rel = module.replace(".", "/")
            if level:
                base = PurePosixPath(here).parent
                for _ in range(level - 1):
                    base = base.parent
                rel = str(base / rel) if rel else str(base)
            cands = [c for c in (self._file(rel + ".py"), self._file(rel + "/__init__.py"),
                                 self._file("src/" + rel + ".py"), self._file("src/" + rel + "/__init__.py")) if c]
        for f in cands:
            got = class_attributes(self.files[f], cls)
            if got is not None:
                return (f, got[0], got[1])
            m = re.search(rf"^from\s+(\.*)([\w.]*)\s+import\s+[^\n]*\b{re.escape(cls)}\b", self.files[f], re.M)
            if m:
                return self._find_class(f, m.group(2), cls, len(m.group(1)), depth - 1)
        return None
