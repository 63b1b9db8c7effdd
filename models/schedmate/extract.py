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
"""
from __future__ import annotations

import ast
import json
import re
import shlex
from dataclasses import asdict, dataclass, field
from pathlib import PurePosixPath
from typing import Any

from models.schedmate.vocab import (DATASET_TASK, MODEL_TASK, canonical_dataset, canonical_model, known_model, norm,
                                    task_from_signals)

FIELDS = ("model", "task", "dataset", "iterations", "iteration_unit", "batch_size", "gpus", "nodes")

# source priorities: a value from a higher one is kept
P_ARGV, P_OVERRIDE, P_CONFIG, P_CODE_KW, P_DEFAULT, P_CODE, P_LAUNCH = 100, 95, 80, 70, 60, 50, 90

_MODEL_KEYS = {"arch", "model", "model_name", "model_type", "network", "net", "backbone",
               "model_name_or_path", "pretrained_model_name_or_path", "model_id", "model_path", "tokenizer_model"}
_DATA_KEYS = {"dataset", "dataset_name", "data", "data_path", "data_dir", "data_root", "dataset_type", "task_name",
              "env", "env_id", "env_name", "train_file", "root", "dataset_config_name", "name"}
_EPOCH_KEYS = {"epochs", "num_epochs", "max_epochs", "num_train_epochs", "n_epochs", "epoch", "nepochs", "train_epochs"}
_STEP_KEYS = {"max_update", "max_updates", "max_steps", "total_steps", "train_iters", "iters", "max_iters", "num_steps", "total_timesteps",
              "num_iterations", "max_iter", "train_steps", "max_train_steps", "steps"}
_BATCH_KEYS = {"batch_size", "per_device_train_batch_size", "train_micro_batch_size_per_gpu", "micro_batch_size",
               "b", "bs", "mini_batch_size", "train_batch_size_per_gpu", "samples_per_gpu", "per_gpu_train_batch_size"}
_GLOBAL_BATCH_KEYS = {"ims_per_batch", "global_batch_size", "total_batch_size"}
_GPU_ARG_KEYS = {"num_gpus", "ngpus", "n_gpus", "gpus", "nproc_per_node", "world_size_per_node"}
_NAMED_DATA_KEYS = {"dataset", "dataset_name", "data_path", "dataset_path", "env_id", "env_name", "train_file"}
_EVAL_PATH = re.compile(r"(^|[._])(val|valid|validation|eval|test)([._]|$)|eval_|_eval")


@dataclass
class JobMetadata:
    """What a job says about itself. None = not found. `sources` names the rule behind each value."""

    model: str | None = None
    task: str | None = None
    dataset: str | None = None
    iterations: int | None = None
    iteration_unit: str | None = None
    batch_size: int | None = None
    gpus: int | None = None
    nodes: int | None = None
    entry: str | None = None
    sources: dict[str, str] = field(default_factory=dict)

    def canonical_text(self) -> str:
        """One line in a fixed order and vocabulary: what the Advisor embeds."""
        def v(x):
            return "unknown" if x is None else str(x)
        it = "unknown" if self.iterations is None else f"{self.iterations} {self.iteration_unit or 'iterations'}"
        task = v(self.task).replace("-", " ")
        return (f"model: {v(self.model)}; task: {task}; dataset: {v(self.dataset)}; iterations: {it}; "
                f"batch size: {v(self.batch_size)}; gpus: {v(self.gpus)}; nodes: {v(self.nodes)}")

    def to_dict(self) -> dict:
        return asdict(self)


# ---------------------------------------------------------------------------------------------
# settings: flat key -> (value, priority, source)


class _Settings:
    def __init__(self) -> None:
        self.items: list[tuple[str, Any, int, str]] = []

    def put(self, key: str, value: Any, prio: int, source: str) -> None:
        if value is None:
            return
        self.items.append((key.replace("-", "_").lstrip("+"), value, prio, source))

    def put_tree(self, tree: Any, prio: int, source: str, prefix: str = "") -> None:
        if isinstance(tree, dict):
            for k, v in tree.items():
                self.put_tree(v, prio, source, f"{prefix}.{k}" if prefix else str(k))
        else:
            self.put(prefix, tree, prio, source)

    def ranked(self) -> list[tuple[str, Any, int, str]]:
        # stable: the later insertion wins among equal priorities (overrides come after)
        order = sorted(range(len(self.items)), key=lambda i: (-self.items[i][2], -i))
        return [self.items[i] for i in order]


def _last(key: str) -> str:
    return key.split(".")[-1].lower()


def _as_int(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, str):
        s = v.strip().replace(",", "").replace("_", "")
        if re.fullmatch(r"[+]?\d+", s):
            return int(s)
        if re.fullmatch(r"\d+(\.0+)?|\d+(\.\d+)?e\+?\d+", s, re.I):
            f = float(s)
            return int(f) if f.is_integer() else None
    return None


# ---------------------------------------------------------------------------------------------
# shell


def _join_continuations(text: str) -> str:
    return re.sub(r"\\\r?\n", " ", text)


def _expand(s: str, env: dict[str, str], pos: list[str]) -> str:
    def repl(m: re.Match) -> str:
        name = m.group(1) or m.group(3) or m.group(4)
        default = m.group(2)
        if name.isdigit():
            i = int(name)
            return pos[i - 1] if 0 < i <= len(pos) else (default or "")
        if name == "@":
            return shlex.join(pos)
        val = env.get(name)
        return val if val not in (None, "") else (default or "")
    s = re.sub(r'"\$(?:@|\{@\})"', lambda m: shlex.join(pos), s)  # "$@": each argument one word
    s = re.sub(r'"?\$\{@:(\d+)\}"?', lambda m: shlex.join(pos[int(m.group(1)) - 1:]), s)
    return re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*|\d+|@)(?::?-([^}]*))?\}|\$\{(\d+)\}|\$([A-Za-z_][A-Za-z0-9_]*|\d|@)",
                  repl, s)


_ASSIGN = re.compile(r"^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.S)
_LAUNCH_WORDS = ("python", "python3", "torchrun", "deepspeed", "accelerate", "srun", "mpirun", "bash", "sh")


def _shell_statements(text: str) -> list[str]:
    """Statements of a shell script: continuations joined, multi-line quoted values kept whole."""
    text = _join_continuations(text)
    out, buf, quote = [], "", None
    for line in text.splitlines():
        if quote is None and not buf and line.strip().startswith("#"):
            out.append(line.strip())
            continue
        buf = f"{buf}\n{line}" if buf else line
        for ch in line:
            if ch in "\"'" and (quote is None or quote == ch):
                quote = None if quote == ch else ch
        if quote is None:
            out.append(buf.strip())
            buf = ""
    if buf:
        out.append(buf.strip())
    return [s for s in out if s]


def _unquote(v: str) -> str:
    v = v.strip()
    if len(v) >= 2 and v[0] == v[-1] and v[0] in "\"'":
        return v[1:-1]
    return v


# ---------------------------------------------------------------------------------------------
# the extractor


class _Extractor:
    def __init__(self, files: dict[str, str]) -> None:
        self.files = {str(PurePosixPath(k)).lstrip("./") if k.startswith("./") else str(PurePosixPath(k)): v
                      for k, v in files.items()}
        self.s = _Settings()
        self.gpus: tuple[int, int, str] | None = None  # (gpus per node, prio, source)
        self.nodes: tuple[int, int, str] | None = None
        self.total_gpus: tuple[int, int, str] | None = None
        self.entry: str | None = None
        self.argv: list[str] = []
        self.task_text: list[str] = []
        self.loaded: set[str] = set()
        self.depth = 0
        self.cwd = ""  # relative to the repository root, moved by `cd DIR &&`

    # -- files ---------------------------------------------------------------------------------
    def _file(self, path: str, rel_to: str | None = None) -> str | None:
        p = path.strip().strip("'\"")
        cands = ([_join_rel(self.cwd, p)] if self.cwd else []) + [p, p.lstrip("./"), p.lstrip("/")]
        if rel_to:
            cands.append(str(PurePosixPath(rel_to).parent / p))
        for c in cands:
            c2 = str(PurePosixPath(c)) if c else c
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
        if n and (self.total_gpus is None or prio > self.total_gpus[1]):
            self.total_gpus = (n, prio, src)

    # -- command -------------------------------------------------------------------------------
    def command(self, cmd: str, env: dict[str, str] | None = None) -> None:
        self.depth += 1
        if self.depth > 8:
            return
        env = dict(env or {})
        try:
            toks = shlex.split(_join_continuations(cmd), comments=True)
        except ValueError as exc:
            raise ValueError(f"cannot parse the command: {exc}") from None
        toks = self._pick_segment([t for t in toks if t not in ("\n",)])
        while toks and _ASSIGN.match(toks[0]) and not toks[0].startswith("-"):
            k, v = _ASSIGN.match(toks[0]).groups()
            env[k] = v
            toks = toks[1:]
        while toks and toks[0] in ("env", "exec", "time", "nohup", "stdbuf", "numactl"):
            toks = toks[1:]
            while toks and toks[0].startswith("-"):
                toks = toks[1:]
        if "CUDA_VISIBLE_DEVICES" in env:
            devs = [d for d in env["CUDA_VISIBLE_DEVICES"].split(",") if d.strip()]
            self._set_gpn(len(devs), 40, "CUDA_VISIBLE_DEVICES")
        if not toks:
            return
        head = PurePosixPath(toks[0]).name
        if head in ("bash", "sh", "sbatch", "zsh") or toks[0].endswith(".sh"):
            args = toks[1:] if head in ("bash", "sh", "sbatch", "zsh") else toks
            while args and args[0].startswith("-"):
                args = args[1:]
            if args:
                self.script(args[0], args[1:], env, sbatch=head == "sbatch")
            return
        self.launcher(toks, env)

    _SEPARATORS = ("&&", "||", ";", "|", "&")
    _REDIRECT = re.compile(r"^(?:\d?>>?|&>>?|<)(?:&\d)?$")
    _REDIRECT_JOINED = re.compile(r"^(?:\d?>>?|&>>?|<)\S+$|^\d?>&\d$")
    _RUNNERS = ("python", "python3", "torchrun", "deepspeed", "accelerate", "srun", "mpirun", "bash", "sh",
                "sbatch", "zsh")

    def _pick_segment(self, toks: list[str]) -> list[str]:
        """`cd src && nohup python train.py ... > log 2>&1 &` -> the launching segment without its
        redirections; `cd DIR` moves where later paths are looked up."""
        split: list[str] = []
        for t in toks:  # "src;" -> "src", ";" (shlex keeps a glued separator in the word)
            if len(t) > 1 and t.endswith(";"):
                split += [t[:-1], ";"]
            else:
                split.append(t)
        segs, cur = [], []
        for t in split:
            if t in self._SEPARATORS:
                segs.append(cur)
                cur = []
            else:
                cur.append(t)
        segs.append(cur)
        chosen: list[str] = []
        for seg in segs:
            clean, skip = [], False
            for t in seg:
                if skip:
                    skip = False
                    continue
                if self._REDIRECT.match(t):
                    skip = not t.endswith(tuple("0123456789")) or ">&" not in t
                    continue
                if self._REDIRECT_JOINED.match(t):
                    continue
                clean.append(t)
            if not clean:
                continue
            if clean[0] == "cd" and len(clean) > 1:
                self.cwd = _join_rel(self.cwd, clean[1])
                continue
            words = [w for w in clean if not _ASSIGN.match(w)]
            words = [w for w in words if w not in ("env", "exec", "time", "nohup", "stdbuf", "numactl")]
            head = PurePosixPath(words[0]).name if words else ""
            if head in self._RUNNERS or head.endswith((".sh", ".py")):
                chosen = clean
        return chosen or (segs[0] if len(segs) == 1 else next((g for g in segs if g and g[0] != "cd"), []))

    def script(self, path: str, pos: list[str], env: dict[str, str], sbatch: bool = False) -> None:
        name = self._file(path)
        if name is None:
            return
        here = str(PurePosixPath(name).parent)
        text = re.sub(r"\$\(dirname \"?\$0\"?\)|`dirname \"?\$0\"?`|\$\(dirname \"?\$\{0\}\"?\)",
                      "" if here == "." else here, self.files[name])
        env = dict(env)
        last_launch = None
        for stmt in _shell_statements(text):
            if stmt.startswith("#SBATCH"):
                self._sbatch(stmt[len("#SBATCH"):].strip())
                continue
            if stmt.startswith("#"):
                continue
            try:
                words_q = shlex.split(stmt)
            except ValueError:
                words_q = stmt.split()
            m = _ASSIGN.match(stmt) if len(words_q) == 1 else None
            if m:
                k, v = m.groups()
                v = _unquote(v)
                if k not in env or not k.isupper() or not env.get(k):
                    env[k] = _expand(v, env, pos)
                continue
            words = stmt.split()
            if not words:
                continue
            if words[0] == "shift":
                n = _as_int(words[1]) if len(words) > 1 else 1
                pos = pos[(n or 1):]
                continue
            first = words[0]
            while _ASSIGN.match(first) and len(words) > 1:
                words = words[1:]
                first = words[0]
            if PurePosixPath(first).name in _LAUNCH_WORDS or first.endswith(".py"):
                last_launch = _expand(stmt, env, pos)
        if last_launch:
            self.command(last_launch, env)

    def _sbatch(self, spec: str) -> None:
        m = re.match(r"(?:--nodes[= ]|-N\s*)(\d+)", spec)
        if m:
            self._set_nodes(int(m.group(1)), 85, "#SBATCH --nodes")
        m = re.match(r"--gpus-per-node[= ](?:\w+:)?(\d+)", spec) or re.match(r"--gres[= ]gpu(?::\w+)?:(\d+)", spec)
        if m:
            self._set_gpn(int(m.group(1)), 85, "#SBATCH gpus per node")

    def launcher(self, toks: list[str], env: dict[str, str]) -> None:
        head = PurePosixPath(toks[0]).name
        rest = toks[1:]
        if head in ("python", "python3") and len(rest) >= 2 and rest[0] == "-m" and rest[1] in (
                "torch.distributed.run", "torch.distributed.launch"):
            head, rest = "torchrun", rest[2:]
        if head in ("python", "python3"):
            while rest and rest[0].startswith("-") and rest[0] not in ("-m",):
                rest = rest[1:]
            if rest and rest[0] == "-m":
                mod = rest[1] if len(rest) > 1 else ""
                self.entry_script(mod.replace(".", "/") + ".py", rest[2:])
                return
            if rest:
                self.entry_script(rest[0], rest[1:])
            return
        if head == "tune" and rest and rest[0] == "run":  # torchtune: torchrun options, then a recipe
            head, rest = "torchrun", rest[1:]
        elif head not in ("torchrun", "deepspeed", "accelerate", "srun", "mpirun"):
            self.entry_script(toks[0], rest)  # a console script (fairseq-train, ...): its argv is the job's
            return
        opts, script, args = self._split_launcher(rest)
        if head == "torchrun":
            self._set_gpn(_as_int(opts.get("nproc_per_node")), P_LAUNCH, "torchrun --nproc_per_node")
            nn = str(opts.get("nnodes", "") or "")
            self._set_nodes(_as_int(nn.split(":")[-1]) if nn else None, P_LAUNCH, "torchrun --nnodes")
        elif head == "deepspeed":
            self._set_gpn(_as_int(opts.get("num_gpus")), P_LAUNCH, "deepspeed --num_gpus")
            self._set_nodes(_as_int(opts.get("num_nodes")), P_LAUNCH, "deepspeed --num_nodes")
            inc = opts.get("include")
            if isinstance(inc, str) and ":" in inc:
                self._set_gpn(len(inc.split(":")[1].split(",")), P_LAUNCH, "deepspeed --include")
        elif head == "accelerate":
            if script == "launch" or (args and script is None):
                opts, script, args = self._split_launcher(rest[1:] if rest and rest[0] == "launch" else rest)
            self._set_total(_as_int(opts.get("num_processes")), P_LAUNCH, "accelerate --num_processes")
            self._set_nodes(_as_int(opts.get("num_machines")), P_LAUNCH, "accelerate --num_machines")
        elif head == "srun":
            self._set_nodes(_as_int(opts.get("nodes") or opts.get("N")), P_LAUNCH, "srun --nodes")
            g = _as_int(opts.get("gpus_per_node")) or _as_int(opts.get("ntasks_per_node"))
            self._set_gpn(g, P_LAUNCH, "srun gpus/tasks per node")
            if opts.get("gres"):
                m = re.search(r"gpu(?::\w+)?:(\d+)", str(opts["gres"]))
                if m:
                    self._set_gpn(int(m.group(1)), P_LAUNCH, "srun --gres")
            total = _as_int(opts.get("ntasks") or opts.get("n"))
            self._set_total(total, 85, "srun --ntasks")
            per = _as_int(opts.get("ntasks_per_node"))
            if total and per and not (opts.get("nodes") or opts.get("N")):
                self._set_nodes(-(-total // per), 85, "srun --ntasks / --ntasks-per-node")
            if script in ("python", "python3") or (script and script.endswith(("torchrun", "python"))):
                self.launcher([script] + args, env)
                return
        elif head == "mpirun":
            self._set_total(_as_int(opts.get("np") or opts.get("n")), P_LAUNCH, "mpirun -np")
            if script in ("python", "python3"):
                self.launcher([script] + args, env)
                return
        if script:
            if PurePosixPath(script).name in ("python", "python3", "torchrun"):
                self.launcher([script] + args, env)
            else:
                self.entry_script(script, args)

    @staticmethod
    def _split_launcher(rest: list[str]) -> tuple[dict[str, Any], str | None, list[str]]:
        """Launcher options up to the first positional (the script)."""
        opts: dict[str, Any] = {}
        i = 0
        flags = {"standalone", "use_env", "multi_gpu", "no_python", "no_local_rank", "exclusive", "mpi"}
        while i < len(rest):
            t = rest[i]
            if t == "launch" and i == 0:
                i += 1
                continue
            if not t.startswith("-"):
                return opts, t, rest[i + 1:]
            key = t.lstrip("-")
            if "=" in key:
                k, v = key.split("=", 1)
                opts[k.replace("-", "_")] = v
                i += 1
                continue
            k = key.replace("-", "_")
            if k in flags or i + 1 >= len(rest) or (rest[i + 1].startswith("-") and not re.fullmatch(r"-\d+", rest[i + 1])):
                opts[k] = True
                i += 1
            else:
                if len(key) > 1 and key[0] in "Nn" and key[1:].isdigit() and t.startswith("-") and not t.startswith("--"):
                    opts[key[0]] = key[1:]
                    i += 1
                    continue
                opts[k] = rest[i + 1]
                i += 2
        return opts, None, []

    # -- entry script --------------------------------------------------------------------------
    def entry_script(self, script: str, argv: list[str]) -> None:
        name = self._file(script)
        self.entry = name or script
        self.argv = list(argv)
        self.task_text.append(PurePosixPath(script).name)
        tree = None
        if name and name.endswith(".py"):
            try:
                tree = ast.parse(self.files[name])
            except SyntaxError:
                tree = None
        info = _analyse_python(tree) if tree is not None else _PyInfo()
        # HfArgumentParser with one JSON argument
        if info.hf_parser and len(argv) == 1 and argv[0].endswith(".json"):
            f = self._file(argv[0])
            if f:
                self.config_file(f, P_ARGV, f"json args {f}")
            argv = []
        parsed, positionals, hydra = _parse_argv(argv, info)
        for k, v in parsed.items():
            self.s.put(k, v, P_ARGV, f"argv --{k}")
        for dest, default in info.defaults.items():
            if dest not in parsed:
                self.s.put(dest, default, P_DEFAULT, f"argparse default {dest}")
        # config files named by the resolved arguments (argv first, then defaults)
        resolved = {**{d: v for d, v in info.defaults.items()}, **parsed}
        for k, v in resolved.items():
            if isinstance(v, str) and re.search(r"\.(json|ya?ml|py)$", v) and not k.startswith("output"):
                f = self._file(v)
                if f and f != name:
                    self.config_file(f, P_CONFIG, f"config {f}")
        rest_pos = []
        i = 0
        while i < len(positionals):  # detectron2 / yacs opts: "SOLVER.MAX_ITER 90000" pairs
            p = positionals[i]
            if re.fullmatch(r"[A-Z][A-Z0-9_]*(\.[A-Z0-9_]+)+", p) and i + 1 < len(positionals):
                self.s.put(p, _yaml_value(positionals[i + 1]), P_OVERRIDE, f"opts {p}")
                i += 2
                continue
            rest_pos.append(p)
            i += 1
        positionals = rest_pos
        for p in positionals:
            f = self._file(p)
            if f and re.search(r"\.(json|ya?ml|py)$", f):
                self.config_file(f, P_CONFIG, f"config {f}")
            elif re.fullmatch(r"\d+", p):
                pass
        if "cfg_options" in parsed:
            for item in str(parsed["cfg_options"]).split():
                if "=" in item:
                    k, v = item.split("=", 1)
                    self.s.put(k, _yaml_value(v), P_OVERRIDE, f"--cfg-options {k}")
        if info.hydra is not None:
            self.hydra(name or script, info.hydra, hydra)
        elif hydra:
            for k, v in hydra:
                self.s.put(k, _yaml_value(v), P_OVERRIDE, f"override {k}")
        for key, value in info.keywords:
            self.s.put(key, value, P_CODE_KW, f"code {key}")
        for key, value in info.fields.items():
            if key not in parsed:
                self.s.put(key, value, P_DEFAULT - 5, f"dataclass field default {key}")
        for key, value in info.consts.items():
            self.s.put(key, value, P_CODE, f"module constant {key}")
        for mod in info.imports:
            f = self._file(mod.replace(".", "/") + ".py", rel_to=name) or self._file(mod.replace(".", "/") + ".py")
            if f and f != name:
                for key, value in _attribute_defaults(self.files[f]).items():
                    self.s.put(key, value, P_DEFAULT - 10, f"config defaults {f}")
        self.s.put("hint.entry", PurePosixPath(script).stem, P_CODE - 20, f"entry name {script}")
        for k in ("config", "cfg", "config_name", "config_file"):
            v = parsed.get(k)
            if isinstance(v, str) and not self._file(v):
                self.s.put("hint.config", v, P_CODE - 20, f"config name {v}")
        if name is None:  # a console script: positionals are data paths more often than not
            for p in positionals:
                self.s.put("positional", p, P_ARGV - 5, f"argv positional {p}")
        for value in info.model_literals:
            self.s.put("code.model", value, P_CODE, "code model constructor")
        for value in info.dataset_literals:
            self.s.put("code.dataset", value, P_CODE, "code dataset call")
        self.task_text.extend(info.task_words)

    def hydra(self, script: str, spec: tuple[str | None, str | None], overrides: list[tuple[str, str]]) -> None:
        cpath, cname = spec
        base = str(PurePosixPath(script).parent / (cpath or "."))
        base = base.lstrip("./") if base.startswith("./") else base
        base = "" if base == "." else base

        def path(*parts: str) -> str:
            return "/".join(p for p in (base, *parts) if p)

        groups: dict[str, str] = {}
        cfg: dict = {}
        main = self._yaml(path((cname or "config") + ".yaml"))
        if main is None:
            return
        for d in main.get("defaults", []) or []:
            if isinstance(d, dict):
                for k, v in d.items():
                    k2 = str(k).replace("optional ", "").replace("override ", "").strip().lstrip("/")
                    if v is not None:
                        groups[k2] = str(v)
        set_overrides = []
        for k, v in overrides:
            k2 = k.lstrip("+")
            if "." not in k2 and any(f.startswith(path(k2) + "/") for f in self.files):
                groups[k2] = v
            else:
                set_overrides.append((k2, v))
        for g, opt in groups.items():
            sub = self._yaml(path(g, opt + ".yaml"))
            if isinstance(sub, dict):
                if sub.get("_global_") or "# @package _global_" in self.files.get(path(g, opt + ".yaml"), ""):
                    _merge(cfg, {k: v for k, v in sub.items() if k != "defaults"})
                else:
                    _merge(cfg, {g: sub})
        _merge(cfg, {k: v for k, v in main.items() if k != "defaults"})
        self.s.put_tree(cfg, P_CONFIG, "hydra config")
        for k, v in set_overrides:
            self.s.put(k, _yaml_value(v), P_OVERRIDE, f"hydra override {k}")
        self._hydra_devices(cfg, set_overrides)

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
        import yaml

        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError:
            return None
        return data if isinstance(data, dict) else None

    def config_file(self, name: str, prio: int, source: str) -> None:
        if name in self.loaded:
            return
        self.loaded.add(name)
        text = self.files[name]
        self.task_text.append(PurePosixPath(name).name)
        if name.endswith(".json"):
            try:
                data = json.loads(text)
            except json.JSONDecodeError:
                return
            self.s.put_tree(data, prio, source)
        elif name.endswith((".yaml", ".yml")):
            data = self._yaml(name)
            if data is not None:
                base = data.pop("_BASE_", None) or data.pop("_base_", None)
                for b in ([base] if isinstance(base, str) else base if isinstance(base, list) else []):
                    f = self._file(str(b), rel_to=name)
                    if f:
                        self.config_file(f, prio - 1, f"config {f}")
                self.s.put_tree(data, prio, source)
            self.s.put("config.filename", PurePosixPath(name).stem, prio - 30, f"config name {name}")
        elif name.endswith(".py"):
            data, bases = _python_config(text)
            for b in bases:
                f = self._file(b, rel_to=name)
                if f:
                    self.config_file(f, prio - 1, f"config {f}")
            self.s.put_tree(data, prio, source)
            self.s.put("config.filename", PurePosixPath(name).stem, prio - 30, f"config name {name}")
            self.task_text.append(json.dumps(data, default=str))

    # -- resolve -------------------------------------------------------------------------------
    def resolve(self) -> JobMetadata:
        md = JobMetadata(entry=self.entry)
        ranked = self.s.ranked()
        # model: known names first (by priority), then any model-key string
        model_cands = [(k, v, p, s) for k, v, p, s in ranked if isinstance(v, str) and v.strip() and
                       (_last(k) in _MODEL_KEYS or k in ("code.model", "config.filename", "hint.entry", "hint.config")
                        or _last(k) in ("weights", "cfg")
                        or (k.lower().startswith("model.") and _last(k) in ("name", "type", "arch", "model_name"))) and
                       not _EVAL_PATH.search(k.lower())]
        mm = self._mm_model()
        known = [(k, v, p, s, known_model(v) or (known_model(v, strip=False) if k.startswith("hint.") else None))
                 for k, v, p, s in model_cands]
        first_known = next((c for c in known if c[4]), None)
        explicit = [c for c in model_cands if not c[0].startswith(("hint.", "config.filename", "code.model"))
                    and _last(c[0]) not in ("weights", "cfg") and not str(c[1]).startswith(("/", "./"))]
        if explicit and (first_known is None or explicit[0][2] > first_known[2]) and \
                (not mm or explicit[0][2] > P_CONFIG):
            k, v, p, src = explicit[0]  # the user named a model we do not know: keep their name
            md.model, md.sources["model"] = canonical_model(v), src
        elif first_known is not None and (not mm or first_known[2] > P_CONFIG - 30 + 1):
            md.model, md.sources["model"] = first_known[4], first_known[3]
        if md.model is None and mm:
            md.model, md.sources["model"] = mm
        if md.model is None and first_known is not None:
            md.model, md.sources["model"] = first_known[4], first_known[3]
        if md.model is None:
            dims = self._dims_model()
            if dims:
                md.model, md.sources["model"] = dims, "architecture dims (layers, hidden size)"
        if md.model is None and model_cands and not model_cands[0][0].startswith("hint."):
            md.model, md.sources["model"] = canonical_model(model_cands[0][1]), model_cands[0][3]
        # dataset
        glue_task = None
        for k, v, p, s in ranked:
            if _EVAL_PATH.search(k.lower()) or not isinstance(v, str):
                continue
            lk = _last(k)
            segs = k.lower().split(".")[:-1]
            if lk in _DATA_KEYS or k in ("code.dataset", "positional") or "data" in lk or any(
                    sg in ("data", "dataset", "datasets") for sg in segs):
                ds = canonical_dataset(v)
                if ds:
                    md.dataset, md.sources["dataset"] = ds, s
                    break
                if lk == "task_name" and v.lower() in ("sst2", "mnli", "cola", "qnli", "rte", "mrpc", "qqp", "stsb"):
                    glue_task = (v.lower(), s)
        if md.dataset is None and glue_task:
            md.dataset, md.sources["dataset"] = f"glue-{glue_task[0]}", glue_task[1]
        if md.dataset is None:  # a dataset we do not know: keep the user's name (last path segment)
            for k, v, p, s in ranked:
                if isinstance(v, str) and _last(k) in _NAMED_DATA_KEYS and p >= P_DEFAULT and v.strip("/ "):
                    seg = [x for x in re.split(r"[/\\]", v.strip()) if x][-1]
                    md.dataset, md.sources["dataset"] = norm(seg), s
                    break
        # iterations: steps win over epochs when both set at the same priority (HF: max_steps > 0 overrides)
        best = None
        for k, v, p, s in ranked:
            if _EVAL_PATH.search(k.lower()):
                continue
            lk = _last(k)
            n = _as_int(v)
            if n is None or n <= 0:
                continue
            unit = "epochs" if lk in _EPOCH_KEYS else "steps" if lk in _STEP_KEYS else None
            if unit is None:
                continue
            if best is None or (p == best[2] and unit == "steps" and best[1] == "epochs"):
                best = (n, unit, p, s)
            elif p < best[2]:
                break
        if best:
            md.iterations, md.iteration_unit, md.sources["iterations"] = best[0], best[1], best[3]
        for k, v, p, s in ranked:
            if _EVAL_PATH.search(k.lower()):
                continue
            if _last(k) in _GLOBAL_BATCH_KEYS and not any(_last(x[0]) in _BATCH_KEYS for x in ranked):
                n = _as_int(v)
                if n and n > 0:
                    md.batch_size, md.sources["batch_size"] = n, s + " (global, divided by GPUs below)"
                    self._global_batch = n
                    break
            if _last(k) in _BATCH_KEYS:
                n = _as_int(v)
                if n and n > 0:
                    md.batch_size, md.sources["batch_size"] = n, s
                    break
        # GPUs and nodes
        nodes = self.nodes[0] if self.nodes else None
        code_nodes = self._code_int({"num_nodes"})
        code_dev = self._code_int({"devices", "gpus", "n_gpu", "num_gpus"})
        if code_dev is None:
            for k, v, p, s in ranked:
                if _last(k) in _GPU_ARG_KEYS and p >= P_DEFAULT and "." not in k:
                    n = _as_int(v)
                    if n and n > 0:
                        code_dev = (n, s)
                        break
        if nodes is None and code_nodes:
            nodes = code_nodes[0]
            md.sources["nodes"] = code_nodes[1]
        elif self.nodes:
            md.sources["nodes"] = self.nodes[2]
        nodes = nodes or 1
        md.nodes = nodes
        md.sources.setdefault("nodes", "default 1")
        if self.total_gpus:
            md.gpus, md.sources["gpus"] = self.total_gpus[0], self.total_gpus[2]
            if not self.nodes and not code_nodes:
                md.nodes = 1
        elif self.gpus and (self.gpus[1] >= 40 or not code_dev):
            md.gpus, md.sources["gpus"] = self.gpus[0] * nodes, self.gpus[2]
        elif code_dev:
            md.gpus, md.sources["gpus"] = code_dev[0] * nodes, code_dev[1]
        elif self.gpus:
            md.gpus, md.sources["gpus"] = self.gpus[0] * nodes, self.gpus[2]
        else:
            md.gpus, md.sources["gpus"] = nodes, "default 1 per node"
        if getattr(self, "_global_batch", None) and md.gpus:
            md.batch_size = max(1, self._global_batch // md.gpus)
        # task: code signals, then dataset, then model
        sig = task_from_signals(" ".join(self.task_text))
        if sig:
            md.task, md.sources["task"] = sig, "code signal (class / script / config type)"
        if md.task is None and md.dataset in DATASET_TASK:
            md.task, md.sources["task"] = DATASET_TASK[md.dataset], f"dataset {md.dataset}"
        if md.task is None and md.model in MODEL_TASK:
            md.task, md.sources["task"] = MODEL_TASK[md.model], f"model {md.model}"
        if md.task == "summarization" and md.dataset == "wmt14-en-de":
            md.task = "translation"
        if md.task is None and md.model:
            md.task, md.sources["task"] = "image-classification", "vision model default"
            if not known_model(md.model):
                md.task, md.sources["task"] = None, "unknown"
        if md.task is None:
            md.sources.pop("task", None)
        return md

    def _code_int(self, keys: set[str]) -> tuple[int, str] | None:
        for k, v, p, s in self.s.ranked():
            if _last(k) in keys and (k.startswith(("trainer.", "code.")) or p == P_CODE_KW):
                n = _as_int(v)
                if n:
                    return n, s
        return None

    def _mm_model(self) -> tuple[str, str] | None:
        vals = {k: v for k, v, p, s in reversed(self.s.ranked())}
        t = vals.get("model.type")
        if not isinstance(t, str):
            return None
        depth = vals.get("model.backbone.depth")
        head = str(vals.get("model.decode_head.type", ""))
        fname = vals.get("config.filename")
        if isinstance(fname, str) and known_model(fname):
            return known_model(fname), "mmengine config name"
        if "Segformer" in head:
            return "segformer-b2", "mmengine decode_head"
        name = f"{t}-r{depth}" if depth else t
        return canonical_model(name), "mmengine model.type"

    def _dims_model(self) -> str | None:
        vals = {k: v for k, v, p, s in reversed(self.s.ranked())}
        layers = _as_int(vals.get("num_layers", vals.get("n_layer")))
        hidden = _as_int(vals.get("hidden_size", vals.get("n_embd")))
        table = {(12, 768): "gpt2", (24, 1024): "gpt2-medium", (32, 4096): "llama-2-7b", (40, 5120): "llama-2-13b"}
        return table.get((layers, hidden)) if layers and hidden else None


def _join_rel(base: str, path: str) -> str:
    """base/path with . and .. resolved, relative to the repository root ("" = the root)."""
    parts: list[str] = [] if path.startswith("/") else [p for p in base.split("/") if p]
    for seg in path.split("/"):
        if seg in ("", "."):
            continue
        if seg == "..":
            if parts:
                parts.pop()
            continue
        parts.append(seg)
    return "/".join(parts)


def _merge(dst: dict, src: dict) -> None:
    for k, v in src.items():
        if isinstance(v, dict) and isinstance(dst.get(k), dict):
            _merge(dst[k], v)
        else:
            dst[k] = v


def _yaml_value(v: str) -> Any:
    import yaml

    try:
        return yaml.safe_load(v)
    except yaml.YAMLError:
        return v


# ---------------------------------------------------------------------------------------------
# python analysis


@dataclass
class _PyInfo:
    defaults: dict[str, Any] = field(default_factory=dict)        # argparse dest -> default
    options: dict[str, tuple[str, bool]] = field(default_factory=dict)  # option string -> (dest, takes value)
    hf_parser: bool = False
    hydra: tuple[str | None, str | None] | None = None
    keywords: list[tuple[str, Any]] = field(default_factory=list)
    model_literals: list[str] = field(default_factory=list)
    consts: dict[str, Any] = field(default_factory=dict)   # module-level str/int/float constants
    fields: dict[str, Any] = field(default_factory=dict)   # @dataclass field defaults
    imports: list[str] = field(default_factory=list)       # modules imported (local ones may hold defaults)
    dataset_literals: list[str] = field(default_factory=list)
    task_words: list[str] = field(default_factory=list)


def _lit(node: ast.AST, consts: dict[str, Any]) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        pass
    if isinstance(node, ast.Name) and node.id in consts:
        return consts[node.id]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict":
        return {kw.arg: _lit(kw.value, consts) for kw in node.keywords if kw.arg}
    if isinstance(node, ast.List):
        return [_lit(e, consts) for e in node.elts]
    if isinstance(node, ast.Dict):
        return {(_lit(k, consts) if k is not None else None): _lit(v, consts) for k, v in zip(node.keys, node.values)}
    return None


def _call_name(node: ast.Call) -> str:
    f = node.func
    parts = []
    while isinstance(f, ast.Attribute):
        parts.append(f.attr)
        f = f.value
    if isinstance(f, ast.Name):
        parts.append(f.id)
    return ".".join(reversed(parts))


_TV_MODELS = re.compile(r"^(torchvision\.)?models\.([a-z0-9_]+)$")


def _analyse_python(tree: ast.Module) -> _PyInfo:
    info = _PyInfo()
    consts: dict[str, Any] = {}
    funcs: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            v = _lit(node.value, consts)
            if isinstance(v, (str, int, float)):
                consts[node.targets[0].id] = v
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            funcs[node.name] = node
    # reachable code: the __main__ block and module-level statements, then called functions/classes
    roots: list[ast.AST] = [n for n in tree.body if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                                         ast.ClassDef, ast.Import, ast.ImportFrom))]
    seen: set[str] = set()
    todo = list(roots)
    reach: list[ast.AST] = []
    while todo:
        node = todo.pop()
        reach.append(node)
        for sub in ast.walk(node):
            name = None
            if isinstance(sub, ast.Call):
                if isinstance(sub.func, ast.Name):
                    name = sub.func.id
                elif isinstance(sub.func, ast.Attribute) and isinstance(sub.func.value, ast.Name) and \
                        sub.func.value.id == "self":
                    name = sub.func.attr
            if name and name in funcs and name not in seen:
                seen.add(name)
                todo.append(funcs[name])
    if not reach or all(isinstance(n, ast.Expr) and isinstance(getattr(n, "value", None), ast.Constant) for n in roots):
        reach = [tree]
    for top in reach:
        for node in ast.walk(top):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node is not top:
                continue
            if isinstance(node, ast.FunctionDef):
                for dec in node.decorator_list:
                    if isinstance(dec, ast.Call) and _call_name(dec).endswith("hydra.main") or (
                            isinstance(dec, ast.Call) and _call_name(dec) == "main" and False):
                        kw = {k.arg: _lit(k.value, consts) for k in dec.keywords}
                        info.hydra = (kw.get("config_path"), kw.get("config_name"))
            if not isinstance(node, ast.Call):
                continue
            name = _call_name(node)
            last = name.split(".")[-1]
            if last == "add_argument":
                _argparse_arg(node, consts, info)
            elif last == "HfArgumentParser":
                info.hf_parser = True
                info.task_words.append("hfargumentparser")
            elif last in ("TrainingArguments", "Seq2SeqTrainingArguments", "Trainer", "TrainingArgs"):
                for kw in node.keywords:
                    v = _lit(kw.value, consts)
                    if kw.arg and isinstance(v, (int, float, str)) and not isinstance(v, bool):
                        info.keywords.append((f"{'trainer' if last == 'Trainer' else 'training_args'}.{kw.arg}", v))
            elif last in ("from_pretrained", "create_model", "get_model") or _TV_MODELS.match(name):
                info.task_words.append(name)
                if _TV_MODELS.match(name) and last not in ("get_model",):
                    info.model_literals.append(last)
                elif node.args:
                    v = _lit(node.args[0], consts)
                    if isinstance(v, str):
                        info.model_literals.append(v)
                for kw in node.keywords:
                    if kw.arg in ("model_name", "pretrained_model_name_or_path", "name"):
                        v = _lit(kw.value, consts)
                        if isinstance(v, str):
                            info.model_literals.append(v)
            elif "data" in last.lower():
                for a in node.args:
                    v = _lit(a, consts)
                    if isinstance(v, str):
                        info.dataset_literals.append(v)
                for kw in node.keywords:
                    if kw.arg in ("path", "name", "dataset", "dataset_name", "root"):
                        v = _lit(kw.value, consts)
                        if isinstance(v, str):
                            info.dataset_literals.append(v)
                if last == "load_dataset" and len(node.args) >= 2:
                    a, b = (_lit(node.args[0], consts), _lit(node.args[1], consts))
                    if a == "glue" and isinstance(b, str):
                        info.dataset_literals.insert(0, f"glue/{b}")
    for v in consts.values():
        if isinstance(v, str) and known_model(v):
            info.model_literals.append(v)
    info.consts = {k: v for k, v in consts.items() if isinstance(v, (str, int, float)) and not isinstance(v, bool)}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            info.imports.append(node.module)
        elif isinstance(node, ast.Import):
            info.imports += [a.name for a in node.names]
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and any("dataclass" in ast.unparse(d) for d in node.decorator_list):
            for item in node.body:
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) and item.value is not None:
                    v = _lit(item.value, consts)
                    if isinstance(v, (str, int, float)) and not isinstance(v, bool):
                        info.fields[item.target.id] = v
    return info


def _argparse_arg(node: ast.Call, consts: dict, info: _PyInfo) -> None:
    opts = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    if not opts:
        return
    kw = {k.arg: k.value for k in node.keywords if k.arg}
    longs = [o for o in opts if o.startswith("--")]
    if "dest" in kw:
        dest = _lit(kw["dest"], consts)
    elif longs:
        dest = longs[0][2:]
    elif opts[0].startswith("-"):
        dest = opts[0][1:]
    else:
        dest = opts[0]
    dest = str(dest).replace("-", "_")
    action = _lit(kw["action"], consts) if "action" in kw else None
    takes = action not in ("store_true", "store_false", "count", "store_const")
    for o in opts:
        if o.startswith("-"):
            info.options[o] = (dest, takes)
    if "default" in kw:
        v = _lit(kw["default"], consts)
        if v is not None:
            info.defaults[dest] = v


def _parse_argv(argv: list[str], info: _PyInfo) -> tuple[dict[str, Any], list[str], list[tuple[str, str]]]:
    """argv -> ({dest: value}, positionals, hydra-style overrides)."""
    parsed: dict[str, Any] = {}
    pos: list[str] = []
    hydra: list[tuple[str, str]] = []
    i = 0
    while i < len(argv):
        t = argv[i]
        if t.startswith("-") and not re.fullmatch(r"-\d+(\.\d+)?", t):
            if "=" in t:
                o, v = t.split("=", 1)
                dest = info.options.get(o, (o.lstrip("-").replace("-", "_"), True))[0]
                if o not in info.options and o.startswith("--"):
                    dests = {info.options[x][0] for x in info.options if x.startswith(o)}
                    dest = dests.pop() if len(dests) == 1 else dest
                parsed[dest] = _yaml_value(v) if not isinstance(v, str) or not v.startswith("/") else v
                i += 1
                continue
            opt = info.options.get(t)
            if opt is None and t.startswith("--"):  # argparse accepts unique prefixes: --batch -> --batch-size
                dests = {info.options[o] for o in info.options if o.startswith(t)}
                opt = dests.pop() if len(dests) == 1 else None
            dest, takes = opt or (t.lstrip("-").replace("-", "_"), None)
            if takes is None:  # unknown option: takes a value unless the next token is an option
                takes = i + 1 < len(argv) and not (argv[i + 1].startswith("-") and not re.fullmatch(r"-\d+(\.\d+)?", argv[i + 1]))
            if takes and i + 1 < len(argv):
                vals = [argv[i + 1]]
                j = i + 2
                if dest == "cfg_options":
                    while j < len(argv) and not argv[j].startswith("-"):
                        vals.append(argv[j])
                        j += 1
                v = " ".join(vals)
                parsed[dest] = v if dest == "cfg_options" else _scalar(v)
                i = j
            else:
                parsed[dest] = True
                i += 1
        elif "=" in t and re.match(r"^\+{0,2}[A-Za-z_][\w.\-/]*=", t):
            k, v = t.split("=", 1)
            hydra.append((k, v))
            i += 1
        else:
            pos.append(t)
            i += 1
    return parsed, pos, hydra


def _scalar(v: str) -> Any:
    if re.fullmatch(r"[+-]?\d+", v):
        return int(v)
    if re.fullmatch(r"[+-]?(\d+\.\d*|\.\d+|\d+)(e[+-]?\d+)?", v, re.I):
        return float(v)
    return v


def _attribute_defaults(text: str) -> dict[str, Any]:
    """yacs-style defaults of a config module: `_C.TRAIN.EPOCHS = 300` -> {"TRAIN.EPOCHS": 300}."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return {}
    out: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Attribute):
            parts, t = [], node.targets[0]
            while isinstance(t, ast.Attribute):
                parts.append(t.attr)
                t = t.value
            if len(parts) >= 2:
                v = _lit(node.value, {})
                if isinstance(v, (str, int, float)) and not isinstance(v, bool):
                    out[".".join(reversed(parts))] = v
    return out


def _python_config(text: str) -> tuple[dict, list[str]]:
    """mmengine-style Python config: module-level literal assignments (dict(...) calls, names of
    earlier assignments) and `_base_` files."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return {}, []
    out: dict[str, Any] = {}
    consts: dict[str, Any] = {}
    bases: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            v = _lit(node.value, consts)
            if name == "_base_":
                bases = [v] if isinstance(v, str) else [b for b in (v or []) if isinstance(b, str)]
                continue
            consts[name] = v
            out[name] = v
    return out, bases


# ---------------------------------------------------------------------------------------------


def extract_metadata(command: str, files: dict[str, str]) -> JobMetadata:
    """Model, task, iterations (+ unit), dataset, per-device batch size, total GPUs and nodes of a job,
    from its launch command and its repository files ({relative path: text}). Fields that no rule
    finds are None (GPUs and nodes default to 1)."""
    if not isinstance(command, str) or not command.strip():
        raise ValueError("the command is empty")
    ex = _Extractor(dict(files))
    ex.command(command)
    return ex.resolve()


READ_SUFFIXES = (".py", ".sh", ".yaml", ".yml", ".json", ".cfg", ".toml", ".txt", ".md", ".ini", ".slurm")


def read_repository(folder: str, max_bytes: int = 1_000_000, max_files: int = 2000) -> dict[str, str]:
    """{relative path: text} of a repository's text files (hidden folders and large files skipped)."""
    from pathlib import Path

    root = Path(folder)
    if not root.exists():
        raise FileNotFoundError(f"{folder}: no such repository folder")
    if not root.is_dir():
        raise NotADirectoryError(f"{folder}: not a folder")
    out: dict[str, str] = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root)
        if any(part.startswith(".") or part in ("__pycache__", "node_modules") for part in rel.parts):
            continue
        if p.is_file() and p.suffix in READ_SUFFIXES and p.stat().st_size <= max_bytes:
            try:
                out[rel.as_posix()] = p.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue
            if len(out) >= max_files:
                break
    return out
