"""The shell side of a launch command, as extractor rules: statements and variables of a pasted command
or a repository script, `cd`, redirections, `let` arithmetic, SLURM directives, and the launchers
(torchrun, deepspeed, accelerate, srun, mpirun/mpiexec, composer, Lightning Fabric, console scripts)
followed to the entry script.

A mixin of the extractor (features.schedmate_text.extract._Extractor), split out of extract.py by
concern: it uses the extractor's file lookups, its GPU/node setters and `entry_script`.
"""
from __future__ import annotations

import re
import shlex
from functools import lru_cache
from pathlib import PurePosixPath
from typing import Any

from features.schedmate_text.settings import P_LAUNCH, _as_int
from features.schedmate_text.shell import (_ASSIGN, _LAUNCH_WORDS, _NOT_LAUNCH, _arith, _expand, _join_continuations,
                                           _join_rel, _shell_statements, _strip_comment, _unquote)

__all__ = ["LaunchMixin"]

# a documentation placeholder with spaces, `[your imagenet-folder with train and val folders]` or
# `<path to data>`: one argument the user replaces, so it stays one word
_PLACEHOLDER = re.compile(r"(?<![\w$\[])\[[A-Za-z][^\]\[\n$\"'=]*\s+[A-Za-z][^\]\[\n$\"'=]*\]|"
                          r"<[A-Za-z][^<>\n$\"'=|&;]*\s+[A-Za-z][^<>\n$\"'=|&;]*>")


@lru_cache(maxsize=8192)
def _words(stmt: str) -> list[str]:
    """A script statement's words (shlex is slow; scripts repeat across jobs). Callers do not modify it."""
    try:
        return shlex.split(stmt)
    except ValueError:
        return stmt.split()


_POS_TEST = re.compile(r"^(?:el)?if\s+\[\[?\s*\"?\$\{?(\d)\}?\"?\s*==?\s*[\'\"]?([\w.:-]*)[\'\"]?\s*\]\]?\s*;?\s*(?:then\b.*)?$",
                       re.S)


_INT_TEST = re.compile(r"^(?:el)?if\s+\[\[?\s*(\S+)\s+-(lt|le|gt|ge|eq|ne)\s+(\S+)\s*\]\]?\s*;?\s*(?:then\b.*)?$", re.S)
_INT_OPS = {"lt": int.__lt__, "le": int.__le__, "gt": int.__gt__, "ge": int.__ge__, "eq": int.__eq__, "ne": int.__ne__}


def _int_test(stmt: str, env: dict[str, str] | None, pos: list[str]) -> bool | None:
    """`if [ $GPUS -lt ${MAX_GPUS:-8} ]`: the comparison when both sides expand to integers, else None."""
    m = _INT_TEST.match(stmt.strip()) if env is not None else None
    if not m:
        return None
    a, b = (_unquote(_expand(x, env, pos)).strip() for x in (m.group(1), m.group(3)))
    if not (re.fullmatch(r"-?\d+", a) and re.fullmatch(r"-?\d+", b)):
        return None
    return _INT_OPS[m.group(2)](int(a), int(b))


def _branch(stmt: str, head: str, branches: list[list], pos: list[str], env: dict[str, str] | None = None) -> None:
    """Follow `if` / `elif` / `else` / `fi` over a test of a positional argument against a literal (`if [[ $1 ==
    'train' ]]`): the branch the command's arguments take is active, the others are skipped; any other test keeps
    every branch (as before)."""
    m = _POS_TEST.match(stmt.strip())
    cond = None
    if m:
        i = int(m.group(1)) - 1
        cond = 0 <= i < len(pos) and pos[i] == m.group(2) if i >= 0 else None
    else:  # (an integer comparison of expanded variables: the script's own device arithmetic)
        cond = _int_test(stmt, env, pos)
    if head == "if":
        branches.append([cond is not None, bool(cond), True if cond is None else bool(cond)])
    elif head == "elif" and branches:
        b = branches[-1]
        if b[0] and cond is not None:
            b[2] = not b[1] and bool(cond)
            b[1] = b[1] or bool(cond)
        else:
            b[2] = True
    elif head.startswith("else") and branches:
        b = branches[-1]
        b[2] = not b[1] if b[0] else True
    elif head.startswith("fi") and branches:
        branches.pop()


def _program_of(stmt: str) -> str | None:
    """The Python program a launch statement runs (`python -u train.py ...` -> train.py), or None."""
    m = re.search(r"(?:^|\s)(\S+\.py)(?:\s|$)", stmt)
    return m.group(1) if m else None


class LaunchMixin:
    files: dict[str, str]
    depth: int
    cwd: str

    # -- command -------------------------------------------------------------------------------
    def command(self, cmd: str, env: dict[str, str] | None = None) -> None:
        self.depth += 1
        if self.depth > 8:
            return
        env = dict(env or {})
        cmd = _PLACEHOLDER.sub(lambda m: re.sub(r"\s+", "-", m.group(0)), cmd)
        if self.depth == 1 and len([s for s in _shell_statements(cmd) if not s.startswith("#")]) > 1 and \
                "\n" in _join_continuations(cmd).strip():
            # a command pasted as several lines (`export DIR=...` lines, then the launch): a small script
            self._run_statements(cmd, [], env, inline=True)
            return
        try:
            toks = shlex.split(_join_continuations(cmd), comments=True)
        except ValueError as exc:
            raise ValueError(f"cannot parse the command: {exc}") from None
        toks = self._pick_segment([t for t in toks if t not in ("\n",)], env)
        while toks and _ASSIGN.match(toks[0]) and not toks[0].startswith("-"):
            k, v = _ASSIGN.match(toks[0]).groups()
            env[k] = _expand(v, env, [])
            toks = toks[1:]
        for i, t in enumerate(toks):  # a variable nothing in the command or script sets: the user's value
            if any(m.group(1) not in env for m in re.finditer(r"\$\{?([A-Za-z_]\w*)", t)):
                self.unexpanded.append(f"{toks[i - 1]} {t}" if i and toks[i - 1].startswith("-") else t)
        if any("$" in t for t in toks):  # MODEL=x python train.py --model $MODEL: the shell expands it
            toks = [_expand(t, env, [], keep_unset=self.depth == 1) if "$" in t else t for t in toks]
        while toks and toks[0] in ("env", "exec", "time", "nohup", "stdbuf", "numactl"):
            toks = toks[1:]
            while toks and toks[0].startswith("-"):
                toks = toks[1:]
        for var in ("NNODES", "NUM_NODES"):  # launcher wrappers that read the node count from the environment
            if var in env:
                self._set_nodes(_as_int(env[var]), 45, var)
        if "NPROC_PER_NODE" in env:
            self._set_gpn(_as_int(env["NPROC_PER_NODE"]), 45, "NPROC_PER_NODE")
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
    _REDIRECT_JOINED = re.compile(r"^(?:\d?>>?|&>>?|<(?![A-Za-z][^<>]*>$))\S+$|^\d?>&\d$")  # <your-path>: a value
    _RUNNERS = ("python", "python3", "torchrun", "deepspeed", "accelerate", "srun", "mpirun", "mpiexec", "composer", "bash", "sh",
                "sbatch", "zsh")

    def _pick_segment(self, toks: list[str], env: dict[str, str] | None = None) -> list[str]:
        """`cd src && nohup python train.py ... > log 2>&1 &` -> the launching segment without its
        redirections; `cd DIR` moves where later paths are looked up; `export BS=64;` and `BS=64 &&`
        before it set variables (into `env`)."""
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
                self.cwd = self._cd(clean[1])
                continue
            if env is not None and not chosen:
                words = clean[1:] if clean[0] == "export" else clean
                if words and all(_ASSIGN.match(w) for w in words):
                    for w in words:
                        k, v = _ASSIGN.match(w).groups()
                        env[k] = _expand(v, env, [])
                    continue
            words = [w for w in clean if not _ASSIGN.match(w)]
            words = [w for w in words if w not in ("env", "exec", "time", "nohup", "stdbuf", "numactl")]
            head = PurePosixPath(words[0]).name if words else ""
            if head in self._RUNNERS or head.endswith((".sh", ".py")):
                chosen = clean
        return chosen or (segs[0] if len(segs) == 1 else next((g for g in segs if g and g[0] != "cd"), []))

    def _cd(self, path: str) -> str:
        """Where `cd path` leads, relative to the repository root. A documented `cd <path_to_repo>/vim` names
        the checkout by a placeholder: the longest tail of the path that is a folder of the repository."""
        target = _join_rel(self.cwd, path)
        if self._folders is None:
            self._folders = self._repo.folders = {k.rpartition("/")[0] for k in self.files}
            self._folders |= {f.rsplit("/", n)[0] for f in list(self._folders) for n in range(1, f.count("/") + 1)}
        if target in self._folders or not target:
            return target
        parts = target.split("/")
        tail = next(("/".join(parts[i:]) for i in range(1, len(parts)) if "/".join(parts[i:]) in self._folders), None)
        if tail is not None:
            return tail
        if re.search(r"(^|/)path/to/|<|\byour\b|\$", path, re.I) or re.match(r"/?path/to/", target):
            return ""  # `cd /path/to/code/metaformer`: the checkout itself, named by a placeholder
        return target

    def script(self, path: str, pos: list[str], env: dict[str, str], sbatch: bool = False) -> None:
        name = self._file(path)
        if name is None:
            return
        here = str(PurePosixPath(name).parent)
        text = re.sub(r"\$\(dirname \"?\$0\"?\)|`dirname \"?\$0\"?`|\$\(dirname \"?\$\{0\}\"?\)",
                      "" if here == "." else here, self.files[name])
        self._run_statements(text, pos, env)

    def _run_statements(self, text: str, pos: list[str], env: dict[str, str], inline: bool = False) -> None:
        """Run the statements of a script (or of a command pasted as several lines, `inline`): variable
        assignments and exports set the environment, `shift` moves the positionals, the last statement that
        launches something is followed. Expansion happens on the statement's text before it is split into
        words, as the shell does: `python x.py $FLAGS` gives FLAGS's words, not one word. Inline `cd DIR`
        lines move where later paths are looked up (a script's own `cd` is relative to where it was run)."""
        env = dict(env)
        last_launch = None
        launches: list[str] = []
        branches: list[list] = []  # [evaluable, taken, active] per open `if`: `if [[ $1 == 'train' ]]` picks a branch
        for stmt in _shell_statements(text):
            head = stmt.split(None, 1)[0] if stmt.strip() else ""
            if head in ("if", "elif", "else", "else;", "fi", "fi;", "then"):
                _branch(stmt, head, branches, pos, env)
                rest = re.split(r";\s*then\b", stmt, maxsplit=1)
                if head in ("if", "elif") and len(rest) == 2 and rest[1].strip():
                    stmt = rest[1].strip()  # `if ...; then python x.py`: the branch's first statement follows
                else:
                    continue
            if not all(b[2] for b in branches):
                continue  # a branch the script's positional arguments do not take
            if stmt.startswith("#SBATCH"):
                self._sbatch(stmt[len("#SBATCH"):].strip())
                continue
            if stmt.startswith("#"):
                continue
            stmt = _strip_comment(stmt).strip()  # `DATA=$5 # <path>`: the comment is not part of the value
            if not stmt:
                continue
            words_q = _words(stmt)
            arr = re.match(r"^(?:export\s+|declare\s+-a\s+|local\s+)?([A-Za-z_][A-Za-z0-9_]*)=\((.*)\)\s*$", stmt, re.S)
            if arr:  # ARGS=(--a 1 --b 2): the words, expanded now
                env[arr.group(1)] = _expand(arr.group(2), env, pos, keep_unset=inline)
                continue
            if words_q and words_q[0] == "let":  # let "NNODES=GPUS/GPUS_PER_NODE": integer arithmetic
                for w in words_q[1:]:
                    k, _, expr = w.partition("=")
                    val = _arith(expr, env, pos) if expr and re.fullmatch(r"[A-Za-z_]\w*", k) else None
                    if val is not None:
                        env[k] = val
                continue
            single = len(words_q) == 1 or (len(words_q) == 2 and words_q[0] == "export")
            m = _ASSIGN.match(stmt) if single else None
            if m:
                k, v = m.groups()
                v = _unquote(v)
                arith = re.fullmatch(r"\$\(\((.*)\)\)", v.strip(), re.S)
                if arith:  # N=$((GPUS / PER_NODE))
                    v = _arith(arith.group(1), env, pos) or ""
                if k not in env or not k.isupper() or not env.get(k):
                    env[k] = _expand(v, env, pos)
                continue
            m_cd = re.match(r"cd\s+(\S+)\s*&&\s*(.+)$", stmt, re.S)
            if m_cd and last_launch is None:  # `cd $CODE_PATH && sh train.sh ...`: move, then the launch
                target = self._cd(_unquote(_expand(m_cd.group(1), env, pos)))
                if inline or target in (self._folders or ()) or target == "":
                    self.cwd = target
                stmt = m_cd.group(2)
            words = stmt.split()
            if not words:
                continue
            if words[0] == "cd" and len(words) == 2 and last_launch is None:
                target = self._cd(_unquote(words[1].rstrip(";")))
                if inline or target in (self._folders or ()):  # a script's `cd vim;` into a folder it has
                    self.cwd = target
                continue
            if words[0] == "shift":
                n = _as_int(words[1]) if len(words) > 1 else 1
                pos = pos[(n or 1):]
                continue
            first = words[0]
            while _ASSIGN.match(first) and len(words) > 1:
                words = words[1:]
                first = words[0]
            if PurePosixPath(first).name in _LAUNCH_WORDS or first.endswith(".py") or \
                    (inline and first not in _NOT_LAUNCH and not _ASSIGN.match(first)):
                last_launch = _expand(stmt, env, pos, keep_unset=inline)
                launches.append(last_launch)
        if last_launch:
            prog = _program_of(last_launch)
            stages = [x for x in launches if prog and _program_of(x) == prog]
            if len(stages) > 1 and not inline:  # one script runs the same program as several training stages
                self.stages = stages
            self.command(last_launch, env)

    def _sbatch(self, spec: str) -> None:
        m = re.match(r"(?:--nodes[= ]|-N\s*)(\d+)", spec)
        if m:
            self._set_nodes(int(m.group(1)), 85, "#SBATCH --nodes")
        m = re.match(r"--gpus-per-node[= ](?:\w+:)?(\d+)", spec) or re.match(r"--gres[= ]gpu(?::\w+)?:(\d+)", spec)
        if m:
            self._set_gpn(int(m.group(1)), 85, "#SBATCH gpus per node")
        m = re.match(r"(?:--gpus|-G)[= ](?:\w+:)?(\d+)\s*$", spec)
        if m:  # --gpus: the job's GPUs in all
            self._set_total(int(m.group(1)), 85, "#SBATCH --gpus")

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
                if mod.endswith(".py") and self._file(mod):  # `python -m finetuning.py`: the doc means the file
                    self.entry_script(mod, rest[2:])
                    return
                self.entry_script(self._module_file(mod) or mod.replace(".", "/") + ".py", rest[2:])
                return
            if rest:
                self.entry_script(rest[0], rest[1:])
            return
        if head == "tune" and rest and rest[0] == "run":  # torchtune: torchrun options, then a recipe
            head, rest = "torchrun", rest[1:]
        elif head in ("lightning", "fabric") and rest[:2] in (["run", "model"], ["run", "app"]) or \
                head == "fabric" and rest[:1] == ["run"]:
            # Lightning Fabric's launcher: --devices per node, --num-nodes, then the script
            opts, script, args = self._split_launcher(rest[2:] if rest[1:2] == ["model"] else rest[1:])
            if str(opts.get("accelerator", "")).lower() == "cpu":
                self._set_total(0, P_LAUNCH, "lightning --accelerator cpu")
            else:
                self._set_gpn(_as_int(opts.get("devices")), P_LAUNCH, "lightning run --devices")
            self._set_nodes(_as_int(opts.get("num_nodes")), P_LAUNCH, "lightning run --num-nodes")
            if script:
                self.entry_script(script, args)
            return
        elif head not in ("torchrun", "deepspeed", "accelerate", "srun", "mpirun", "mpiexec", "composer"):
            # a console script (fairseq-train, a project's own entry point): its argv is the job's; its
            # module comes from the repository's packaging metadata when the repository declares it
            target = self._console_script(head)
            self.entry_script(target or toks[0], rest, console=head)
            return
        opts, script, args = self._split_launcher(rest)
        self.launches.append((head, opts))
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
            hosts = self._hostfile(opts.get("hostfile") or opts.get("H"))
            if hosts is not None and not inc:  # `worker-1 slots=8` a line: the nodes and each one's GPUs
                self._set_nodes(_as_int(opts.get("num_nodes")) or len(hosts), P_LAUNCH - 5, "deepspeed --hostfile hosts")
                if len(set(hosts)) == 1 and not _as_int(opts.get("num_gpus")):
                    self._set_gpn(hosts[0], P_LAUNCH - 5, "deepspeed --hostfile slots")
        elif head == "accelerate":
            if script == "launch" or (args and script is None):
                opts, script, args = self._split_launcher(rest[1:] if rest and rest[0] == "launch" else rest)
            self.launches[-1] = (head, opts)
            self._accelerate_config(opts)
            self._set_total(_as_int(opts.get("num_processes")), P_LAUNCH, "accelerate --num_processes")
            if opts.get("cpu") is True or opts.get("use_cpu") is True:  # accelerate launch --cpu: no GPU
                self._set_total(0, P_LAUNCH, "accelerate --cpu")
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
        elif head == "composer":  # MosaicML's launcher: one process per device, --world_size in all
            self._set_gpn(_as_int(opts.get("nproc") or opts.get("n")), P_LAUNCH, "composer --nproc")
            self._set_total(_as_int(opts.get("world_size")), P_LAUNCH, "composer --world_size")
        elif head in ("mpirun", "mpiexec"):
            self._set_total(_as_int(opts.get("np") or opts.get("n")), P_LAUNCH, "mpirun -np")
            if script in ("python", "python3"):
                self.launcher([script] + args, env)
                return
        if script == "-m" and args:
            self.entry_script(self._module_file(args[0]) or args[0].replace(".", "/") + ".py", args[1:])
            return
        if script:
            if PurePosixPath(script).name in ("python", "python3", "torchrun"):
                self.launcher([script] + args, env)
            else:
                if self._file(script) is None and re.fullmatch(r"[\w-]+", script):
                    # a recipe named without its path (`tune run lora_finetune_single_device`)
                    script = self._module_file(script) or script
                self.entry_script(script, args)

    _PROGRAMS = ("python", "python3", "torchrun", "deepspeed", "accelerate", "bash", "sh")

    def _hostfile(self, name: Any) -> list[int] | None:
        """A deepspeed / MPI hostfile in the repository (`worker-1 slots=8` a line): each host's slots, or None."""
        if not isinstance(name, str) or not name.strip():
            return None
        f = self._file(name.strip())
        if f is None:
            return None
        slots = [int(m.group(1)) for line in self.files[f].splitlines() if not line.strip().startswith("#")
                 for m in [re.match(r"\s*\S+\s+slots\s*=\s*(\d+)\s*$", line)] if m]
        return slots or None

    def _accelerate_config(self, opts: dict[str, Any]) -> None:
        """`accelerate launch --config_file F`: the launcher's YAML gives the processes (all GPUs of all
        machines), the machines and a CPU run; the command's own options still win (set after)."""
        name = opts.get("config_file")
        f = self._file(str(name)) if isinstance(name, str) else None
        if f is None or not f.endswith((".yaml", ".yml", ".json")):
            return
        data = self._yaml(f) if f.endswith((".yaml", ".yml")) else None
        if f.endswith(".json"):
            import json

            try:
                data = json.loads(self.files[f])
            except ValueError:
                data = None
        if not isinstance(data, dict):
            return
        src = f"accelerate config {f}"
        if data.get("use_cpu") is True or str(data.get("distributed_type", "")).upper() == "NO" and \
                data.get("use_cpu"):
            self._set_total(0, P_LAUNCH - 5, src + " use_cpu")
        elif _as_int(data.get("num_processes")):
            self._set_total(_as_int(data.get("num_processes")), P_LAUNCH - 5, src + " num_processes")
        if _as_int(data.get("num_machines")):
            self._set_nodes(_as_int(data.get("num_machines")), P_LAUNCH - 5, src + " num_machines")
        opts["_config_read"] = True  # (the launcher's device count is no longer unknown)

    @staticmethod
    def _split_launcher(rest: list[str]) -> tuple[dict[str, Any], str | None, list[str]]:
        """Launcher options up to the first positional (the script)."""
        opts: dict[str, Any] = {}
        i = 0
        flags = {"standalone", "use_env", "multi_gpu", "no_python", "no_local_rank", "exclusive", "mpi", "cpu",
                 "use_cpu", "use_deepspeed", "use_fsdp", "use_megatron_lm", "tpu", "debug", "quiet", "q"}
        while i < len(rest):
            t = rest[i]
            if t == "launch" and i == 0:
                i += 1
                continue
            if not t.startswith("-"):
                return opts, t, rest[i + 1:]
            if t in ("-m", "--module") and i + 1 < len(rest):  # torchrun -m pkg.module: a module entry
                return opts, "-m", rest[i + 1:]
            key = t.lstrip("-")
            if "=" in key:
                k, v = key.split("=", 1)
                opts[k.replace("-", "_")] = v
                i += 1
                continue
            k = key.replace("-", "_")
            nxt = rest[i + 1] if i + 1 < len(rest) else ""
            if k in flags or i + 1 >= len(rest) or (nxt.startswith("-") and not re.fullmatch(r"-\d+", nxt)) or \
                    PurePosixPath(nxt).name in LaunchMixin._PROGRAMS or nxt.endswith(".py"):
                # a value that is a program or a script is where the launcher's options end: the option
                # before it is a flag (`srun --label python -u train.py`)
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
