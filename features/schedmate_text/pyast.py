"""What a Python file says about a job, read with `ast` (never imported or run): argparse options and
defaults, dataclass fields, fire entry points, Trainer keywords, model and dataset calls, yacs-style
and mmengine-style config modules."""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

from features.schedmate_text.settings import _yaml_value
from features.schedmate_text.vocab import known_model



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
    submodules: list[str] = field(default_factory=list)    # `from pkg import mod`: pkg.mod (maybe a module)
    relative: list[str] = field(default_factory=list)      # `from .configs import x`: ".configs" (dots = level)
    cli_functions: list[str] = field(default_factory=list)  # functions whose signature is the CLI (fire & co.)
    dataset_literals: list[str] = field(default_factory=list)
    task_words: list[str] = field(default_factory=list)
    positionals: list[str] = field(default_factory=list)   # argparse positional dests, in order
    multi: set[str] = field(default_factory=set)           # dests with nargs "+" / "*" (take every value)
    global_batch: set[str] = field(default_factory=set)    # batch options whose help says "total" / "all GPUs"
    programs: list[str] = field(default_factory=list)      # ArgumentParser prog / description texts
    pos_lines: dict[str, int] = field(default_factory=dict)  # positional dest -> source line (for their order)
    model_classes: list[str] = field(default_factory=list)  # network classes the reachable code instantiates
    derived: set[str] = field(default_factory=set)         # constants computed from other names (batch = g // n)
    loop_epochs: int | None = None                         # `for epoch in range(start, start + 200)`
    loop_key: str | None = None                            # `for epoch in range(args.epochs_1st)`: the setting it bounds
    loader_batch: int | None = None                        # `DataLoader(trainset, batch_size=128)`


def _lit(node: ast.AST, consts: dict[str, Any]) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        pass
    if isinstance(node, ast.Name) and node.id in consts:
        return consts[node.id]
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Pow)):
        a, b = _lit(node.left, consts), _lit(node.right, consts)  # `max_step = 715256 * 2`, `B = 2**4`
        nums = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (a, b))
        if not nums or (isinstance(node.op, ast.Pow) and abs(b) > 64):
            return None
        try:
            if isinstance(node.op, ast.Add):
                return a + b
            if isinstance(node.op, ast.Sub):
                return a - b
            if isinstance(node.op, ast.Mult):
                return a * b
            return a // b if isinstance(node.op, ast.FloorDiv) else a ** b
        except (ZeroDivisionError, OverflowError):
            return None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict":
        return {kw.arg: _lit(kw.value, consts) for kw in node.keywords if kw.arg}
    if isinstance(node, ast.List):
        return [_lit(e, consts) for e in node.elts]
    if isinstance(node, ast.Dict):
        return {(_lit(k, consts) if k is not None else None): _lit(v, consts) for k, v in zip(node.keys, node.values)}
    return None


#: how many lines tolerant_parse may blank out before it gives up on a file
MAX_REPAIRS = 20
_PY2_PRINT = re.compile(r"^(\s*)print(?:\s+[^\s(=.][^\n]*|\s*)$")  # `print x`, `print` (not `print(x)`)
_PY2_ASYNC_KW = re.compile(r"(?<=[(,\s])async\s*=(?!=)")  # `x.cuda(async=True)` (a keyword before Python 3.7)
_PY2_EXCEPT = re.compile(r"(\bexcept\s+[\w.]+)\s*,\s*\w+\s*:")  # `except E, e:`


@lru_cache(maxsize=4096)
def tolerant_parse(text: str) -> ast.Module:
    """`ast.parse`, and where the source is not valid Python 3 (a Python 2 `print x`, `except E, e:`,
    `x.cuda(async=True)` of older PyTorch), the same source with each line the parser rejects replaced by `pass`
    at its indentation (at most MAX_REPAIRS lines): the argparse options and config literals of an old training
    script are still read. Raises SyntaxError when the source cannot be repaired that way."""
    try:
        return ast.parse(text)
    except SyntaxError as first:
        err: SyntaxError = first
    # the common Python 2 statements in one pass (a file full of `print x` needs one parse, not one per line)
    fixed = _PY2_ASYNC_KW.sub("async_=", _PY2_EXCEPT.sub(r"\1:", text))
    lines = [_PY2_PRINT.sub(r"\1pass", ln) for ln in fixed.split("\n")]
    try:
        return ast.parse("\n".join(lines))
    except SyntaxError as e:
        err = e
    for _ in range(MAX_REPAIRS):
        n = (err.lineno or 0) - 1
        if not 0 <= n < len(lines) or lines[n].strip() == "pass":
            raise err
        indent = re.match(r"\s*", lines[n]).group(0)
        lines[n] = indent + "pass"
        try:
            return ast.parse("\n".join(lines))
        except SyntaxError as e:
            err = e
    raise err


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


def _analyse_python(tree: ast.Module, whole: bool = False) -> _PyInfo:
    info = _PyInfo()
    consts: dict[str, Any] = {}
    funcs: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            v = _lit(node.value, consts)
            if isinstance(v, (str, int, float)):
                consts[node.targets[0].id] = v
                if any(isinstance(n, ast.Name) for n in ast.walk(node.value)):
                    info.derived.add(node.targets[0].id)
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
            names = [name] if name else []
            if isinstance(sub, ast.Call):  # a function handed to another to run: spawn(main_worker, ...), target=fn
                names += [a.id for a in list(sub.args) + [k.value for k in sub.keywords] if isinstance(a, ast.Name)]
            for name in names:
                if name in funcs and name not in seen:
                    seen.add(name)
                    todo.append(funcs[name])
    if whole or not reach or all(isinstance(n, ast.Expr) and isinstance(getattr(n, "value", None), ast.Constant)
                                 for n in roots):
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
            elif name in ("click.option", "option") and node.args:
                _click_option(node, consts, info)
            elif _DATA_CALL.match(name):
                _dataset_call(node, name, consts, info)
            elif name.startswith("flags.DEFINE_") or name.startswith("absl.flags.DEFINE_"):
                _absl_flag(node, last, consts, info)
            elif last == "ArgumentParser":
                texts = [_lit(a, consts) for a in node.args[:1]] + [_lit(k.value, consts) for k in node.keywords
                                                                     if k.arg in ("prog", "description")]
                info.programs += [t for t in texts if isinstance(t, str)]
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
                    if isinstance(a, str) and isinstance(b, str):  # load_dataset("nyu-mll/glue", "mrpc"): the subset
                        info.dataset_literals.insert(0, f"{a.split('/')[-1]}/{b}")
        for node in ast.walk(top):
            # `config = {"lr": 2e-5, "num_epochs": 3, "batch_size": 16}` in reachable code: the job's
            # hyper-parameters written as a literal dict (accelerate's examples, many notebooks turned scripts)
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict) and len(node.targets) == 1:
                d = _lit(node.value, consts)
                if isinstance(d, dict) and d and all(isinstance(k, str) for k in d):
                    target = node.targets[0].id if isinstance(node.targets[0], ast.Name) else "config"
                    info.keywords += [(f"{target}.{k}", v) for k, v in d.items()
                                      if isinstance(v, (int, float, str)) and not isinstance(v, bool)]
    info.model_classes = _model_classes(tree, reach, funcs)
    _loop_and_loader(reach, consts, info)
    if any(isinstance(n, (ast.Import, ast.ImportFrom)) and re.search(r"\b(fire|jsonargparse|tyro|typer)\b", ast.unparse(n))
           or _cli_of_function(n, funcs) for n in ast.walk(tree)):  # often imported inside the `__main__` block
        _fire_defaults(tree, funcs, consts, info)
    if not any(k.lower() in ("model_name", "model", "arch", "model_type", "model_id") for k in consts):
        for v in consts.values():
            if isinstance(v, str) and known_model(v):
                info.model_literals.append(v)
    info.consts = {k: v for k, v in consts.items() if isinstance(v, (str, int, float)) and not isinstance(v, bool)}
    if any(isinstance(n, (ast.Import, ast.ImportFrom)) and re.search(r"\btimm\b", ast.unparse(n)) for n in tree.body):
        info.task_words.append("timm")  # timm's models are image classifiers unless another signal says otherwise
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level:
            info.relative += ["." * node.level + (node.module or "")]
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            info.imports.append(node.module)
            info.submodules += [f"{node.module}.{a.name}" for a in node.names if a.name != "*"]
        elif isinstance(node, ast.Import):
            info.imports += [a.name for a in node.names]
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and any("dataclass" in ast.unparse(d) for d in node.decorator_list):
            for item in node.body:
                if isinstance(item, ast.Assign) and len(item.targets) == 1 and isinstance(item.targets[0], ast.Name):
                    v = _lit(item.value, consts)  # an unannotated default in a config dataclass (`dataset = "x"`)
                    if isinstance(v, (str, int, float)) and not isinstance(v, bool):
                        info.fields.setdefault(item.targets[0].id, v)
                    continue
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) and item.value is not None:
                    val = item.value
                    if isinstance(val, ast.Call) and _call_name(val).split(".")[-1] == "field":
                        val = next((k.value for k in val.keywords if k.arg == "default"), None)
                        if val is None:
                            continue
                    v = _lit(val, consts)
                    if isinstance(v, (str, int, float)) and not isinstance(v, bool):
                        info.fields[item.target.id] = v
    return info


#: dataset calls that name the data by their function or class: tfds.load("mnist"), tfds.builder(...),
#: torchvision.datasets.CIFAR10(...), datasets.MNIST(...) (the "data" in a loader's own name is handled apart)
_DATA_CALL = re.compile(r"^(tfds\.(load|builder|data_source)|(torchvision\.)?datasets\.[A-Z][A-Za-z0-9]*|"
                        r"(keras\.)?datasets\.[a-z0-9_]+\.load_data)$")
_GENERIC_DATA_CLASSES = {"ImageFolder", "DatasetFolder", "VisionDataset", "Dataset", "FakeData"}


def _dataset_call(node: ast.Call, name: str, consts: dict, info: _PyInfo) -> None:
    """A named public dataset: tfds takes its name as the first argument, torchvision / keras name it
    by the class or module (a generic folder loader names nothing)."""
    parts = name.split(".")
    if parts[0] == "tfds":
        v = _lit(node.args[0], consts) if node.args else next(
            (_lit(k.value, consts) for k in node.keywords if k.arg == "name"), None)
        if isinstance(v, str):
            info.dataset_literals.append(v.split(":")[0].split("/")[0])
    elif parts[-1] == "load_data":
        info.dataset_literals.append(parts[-2])
    elif parts[-1] not in _GENERIC_DATA_CLASSES:
        info.dataset_literals.append(parts[-1])


def _click_option(node: ast.Call, consts: dict, info: _PyInfo) -> None:
    """`@click.option("--batch", "batch_size", type=int, default=64)`: click's parameter name is the
    argument without dashes, else the longest option; flags (`is_flag=True`) take no value."""
    opts = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    named = [o for o in opts if not o.startswith("-")]
    dashed = [o for o in opts if o.startswith("-")]
    if not dashed:
        return
    dest = (named[0] if named else max(dashed, key=len).lstrip("-")).replace("-", "_")
    kw = {k.arg: k.value for k in node.keywords if k.arg}
    takes = not (_lit(kw["is_flag"], consts) if "is_flag" in kw else False)
    for o in dashed:
        info.options[o.split("/")[0]] = (dest, takes)
    if "default" in kw:
        v = _lit(kw["default"], consts)
        if v is not None:
            info.defaults[dest] = v
    help_text = _lit(kw["help"], consts) if "help" in kw else None
    if isinstance(help_text, str) and "batch" in dest and _TOTAL_HELP.search(help_text):
        info.global_batch.add(dest)


_BUILTIN_CALLS = set(dir(__builtins__)) if isinstance(__builtins__, dict) else set(dir(__builtins__))
_MODEL_MODULE = re.compile(r"(^|[._])(models?|nets?|networks?|archs?|modeling\w*|backbones?)$|model|net", re.I)
_NOT_MODEL_CLASS = re.compile(r"DataParallel|Optimizer|Loss|Scheduler|Config|Args|Dataset|Loader|Sampler|Tokenizer|"
                              r"Trainer|Writer|Logger|Meter|Metric|Scaler|Transform", re.I)


def _loop_and_loader(reach: list[ast.AST], consts: dict, info: _PyInfo) -> None:
    """A script with no option for them: the epoch loop's bound (`for epoch in range(start, start+200)`,
    `range(200)`) and the training DataLoader's literal `batch_size=` (the first loader not over a
    test / validation set)."""
    loops, loaders, keys = [], [], []
    reach = list(reach)
    assigned: dict[str, ast.AST] = {}  # `epochs = config.get('epochs_1st', 200)`: a local name's setting
    for top in reach:
        for node in ast.walk(top):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                assigned.setdefault(node.targets[0].id, node.value)
    for top in reach:
        for node in ast.walk(top):
            if isinstance(node, ast.For) and isinstance(node.target, ast.Name) and "epoch" in node.target.id.lower() \
                    and isinstance(node.iter, ast.Call) and _call_name(node.iter) == "range" and node.iter.args:
                end = node.iter.args[1] if len(node.iter.args) > 1 else node.iter.args[0]
                key = _setting_key(assigned.get(end.id) if isinstance(end, ast.Name) else end)
                if key:
                    keys.append((node.lineno, key))
                v = _lit(end, consts)
                if v is None and isinstance(end, ast.BinOp) and isinstance(end.op, ast.Add) and \
                        len(node.iter.args) > 1 and ast.dump(end.left) == ast.dump(node.iter.args[0]):
                    v = _lit(end.right, consts)  # range(start_epoch, start_epoch + 200), not range(1, EPOCH + 1)
                if isinstance(v, int) and not isinstance(v, bool) and v > 0:
                    loops.append((node.lineno, v))
            elif isinstance(node, ast.Call) and _call_name(node).split(".")[-1] == "DataLoader":
                first = ast.unparse(node.args[0]).lower() if node.args else ""
                if re.search(r"test|val|eval", first):
                    continue
                v = next((_lit(k.value, consts) for k in node.keywords if k.arg == "batch_size"), None)
                if isinstance(v, int) and not isinstance(v, bool) and v > 0:
                    loaders.append((node.lineno, v))
    info.loop_epochs = min(loops)[1] if loops else None
    info.loader_batch = min(loaders)[1] if loaders else None
    info.loop_key = min(keys)[1] if keys else None


def _setting_key(node: ast.AST | None) -> str | None:
    """The setting an expression reads: `config.get('epochs_1st', 200)`, `config['epochs']`, `args.n_epochs`,
    `cfg.train.max_epoch` (its last segment), or None."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" and node.args \
            and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
        return node.args[0].value
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
        return node.slice.value
    if isinstance(node, ast.Attribute) and isinstance(node.value, (ast.Name, ast.Attribute)):
        return node.attr
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):  # END_EPOCH + EXTRA_EPOCH: the run is their sum
        a, b = _setting_key(node.left), _setting_key(node.right)
        return f"{a}+{b}" if a and b else None
    return None


def _model_classes(tree: ast.Module, reach: list[ast.AST], funcs: dict[str, ast.AST]) -> list[str]:
    """Network classes the reachable code instantiates, first in source order: a class defined here on a
    `*.Module` base (torch nn.Module, flax nnx/linen Module, LightningModule), a name imported from a
    model-like module (`from models import ResNet18`, `from .nets import UNet`), or an attribute of
    such a module (`models.CNN(...)`). What the job trains when no option or config names it."""
    local = {n for n, d in funcs.items() if isinstance(d, ast.ClassDef) and
             any(ast.unparse(b).split(".")[-1].endswith("Module") for b in d.bases)}
    imported: set[str] = set()
    modules: set[str] = set()
    star = False
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module and any(_MODEL_MODULE.search(p) for p in node.module.split(".")):
            imported |= {a.asname or a.name for a in node.names if a.name != "*" and (a.name[:1].isupper() or
                         not re.match(r"(create|build|get|load|init|make|set|save|check|convert|count|is)_", a.name))}
            star = star or any(a.name == "*" for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            modules |= {a.asname or a.name for a in node.names if _MODEL_MODULE.search(a.name)}
        elif isinstance(node, ast.Import):
            modules |= {a.asname or a.name.split(".")[-1] for a in node.names
                        if _MODEL_MODULE.search(a.name.split(".")[-1]) and a.name.split(".")[0] != "torch"}
    found: list[tuple[int, str]] = []
    for top in reach:
        for sub in ast.walk(top):
            if not isinstance(sub, ast.Call):
                continue
            f = sub.func
            if isinstance(f, ast.Name) and (f.id in local or f.id in imported or
                                            (star and f.id not in funcs and f.id not in _BUILTIN_CALLS and
                                             (f.id[:1].isupper() or known_model(f.id)))):
                found.append((sub.lineno, f.id))
            elif isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in modules and \
                    f.attr[:1].isupper():
                found.append((sub.lineno, f.attr))
    # a class called Model / Net names nothing (yolov7's Model(cfg) is built from the config it reads)
    return [n for _, n in sorted(set(found)) if not _NOT_MODEL_CLASS.search(n) and
            not re.fullmatch(r"(Base|My|Simple)?(Model|Net|Network|Module|Wrapper)\d*", n)]


def _cli_of_function(node: ast.AST, funcs: dict[str, ast.AST]) -> bool:
    """A project's own wrapper of a signature CLI (`logging.run_cli(main)`, `auto_cli(train)`): a call whose name
    ends in `cli` handed a function of this module, whose keyword defaults are then the job's options."""
    return isinstance(node, ast.Call) and bool(node.args) and isinstance(node.args[0], ast.Name) and \
        node.args[0].id in funcs and re.search(r"(^|_)cli$", _call_name(node).split(".")[-1], re.I) is not None


def _fire_defaults(tree: ast.Module, funcs: dict[str, ast.AST], consts: dict, info: _PyInfo) -> None:
    """`fire.Fire(train)`: the keyword defaults of `train` are the job's options (`--num_epochs=2`)."""
    for node in ast.walk(tree):
        # fire.Fire(main), jsonargparse's CLI(main), tyro.cli(main), typer.run(main): the signature is the CLI
        if not (isinstance(node, ast.Call) and (_call_name(node).split(".")[-1] in ("Fire", "CLI", "cli", "run")
                                                or _cli_of_function(node, funcs)) and node.args):
            continue
        target = node.args[0]
        fn = funcs.get(target.id) if isinstance(target, ast.Name) else None
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        a = fn.args
        pos = a.posonlyargs + a.args
        pairs = list(zip(pos[len(pos) - len(a.defaults):], a.defaults)) + \
            [(k, d) for k, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None]
        for arg, d in pairs:
            info.options.setdefault(f"--{arg.arg}", (arg.arg, True))
            v = _lit(d, consts)
            if v is not None and v != "" and not isinstance(v, bool):
                info.defaults.setdefault(arg.arg, v)
        info.task_words.append("fire")
        info.cli_functions.append(fn.name)


_TOTAL_HELP = re.compile(r"total batch|batch size (for|of|across) all|all (gpus|devices|processes)|global batch|"
                         r"across (all )?(gpus|devices|nodes)", re.I)


def _absl_flag(node: ast.Call, last: str, consts: dict, info: _PyInfo) -> None:
    """absl / tf.flags: `flags.DEFINE_integer("train_batch_size", 32, "Total batch size")`."""
    args = [_lit(a, consts) for a in node.args[:3]]
    kw = {k.arg: _lit(k.value, consts) for k in node.keywords if k.arg}
    name = args[0] if args else kw.get("name")
    if not isinstance(name, str):
        return
    default = args[1] if len(args) > 1 else kw.get("default")
    takes = last != "DEFINE_bool" and last != "DEFINE_boolean"
    info.options[f"--{name}"] = (name, takes)
    if default is not None:
        info.defaults[name] = default
    help_text = args[2] if len(args) > 2 else kw.get("help")
    if isinstance(help_text, str) and "batch" in name and _TOTAL_HELP.search(help_text):
        info.global_batch.add(name)


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
    if "nargs" in kw and _lit(kw["nargs"], consts) in ("+", "*"):
        info.multi.add(dest)
    for o in opts:
        if o.startswith("-"):
            info.options[o] = (dest, takes)
    if not opts[0].startswith("-") and dest not in info.positionals:
        info.positionals.append(dest)
        info.pos_lines[dest] = getattr(node, "lineno", 0)
        info.positionals.sort(key=lambda d: info.pos_lines.get(d, 0))  # the walk is not in source order
    help_text = _lit(kw["help"], consts) if "help" in kw else None
    if isinstance(help_text, str) and "batch" in dest and _TOTAL_HELP.search(help_text):
        info.global_batch.add(dest)
    if "default" in kw:
        v = _lit(kw["default"], consts)
        if v is not None:
            info.defaults[dest] = v
    elif action in ("store_true", "store_false") and opts[0].startswith("-"):
        info.defaults[dest] = action == "store_false"  # argparse's implicit default (`--cuda` off unless given)


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
                if o not in info.options and o.startswith("--") and "-" not in o[2:] and "_" not in o[2:]:
                    dests = {info.options[x][0] for x in info.options if x.startswith(o)}
                    dest = dests.pop() if len(dests) == 1 else dest
                parsed[dest] = _yaml_value(v) if not isinstance(v, str) or not v.startswith("/") else v
                i += 1
                continue
            opt = info.options.get(t)
            if opt is None and t.startswith("--") and "-" not in t[2:] and "_" not in t[2:]:
                # argparse accepts unique prefixes (--batch -> --batch-size); with a parser we know only in
                # part, only a one-word prefix is taken for one (--num-layers is its own option)
                dests = {info.options[o] for o in info.options if o.startswith(t)}
                opt = dests.pop() if len(dests) == 1 else None
            dest, takes = opt or (t.lstrip("-").replace("-", "_"), None)
            if takes is None:  # unknown option: takes a value unless the next token is an option
                takes = i + 1 < len(argv) and not (argv[i + 1].startswith("-") and not re.fullmatch(r"-\d+(\.\d+)?", argv[i + 1]))
            if takes and i + 1 < len(argv):
                vals = [argv[i + 1]]
                j = i + 2
                if dest in info.multi:  # nargs="+": every value up to the next option
                    while j < len(argv) and not argv[j].startswith("-"):
                        vals.append(argv[j])
                        j += 1
                    parsed[dest] = [_scalar(x) for x in vals] if len(vals) > 1 else _scalar(vals[0])
                    i = j
                    continue
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


@lru_cache(maxsize=512)
def _attribute_defaults(text: str) -> dict[str, Any]:
    """yacs-style defaults of a config module: `_C.TRAIN.EPOCHS = 300` -> {"TRAIN.EPOCHS": 300}."""
    try:
        tree = tolerant_parse(text)
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


def _lazy(node: ast.AST, consts: dict[str, Any], lazy: set[str], depth: int = 0) -> Any:
    """A value of a lazy config: `L(Model)(a=1, b=L(Sub)(...))` (detectron2's LazyCall, any alias of it) as
    {"type": "Model", "a": 1, "b": {...}} -- the mmengine shape, so that the class the config builds reads as
    `model.type` -- a `dict(type=...)`, or a literal."""
    if depth > 12:
        return None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Call) and isinstance(node.func.func, ast.Name) and \
            node.func.func.id in lazy and len(node.func.args) == 1:
        target = _call_name(ast.Call(func=node.func.args[0], args=[], keywords=[])) or ""
        out: dict[str, Any] = {"type": target.rsplit(".", 1)[-1]} if target else {}
        for kw in node.keywords:
            if kw.arg:
                v = _lazy(kw.value, consts, lazy, depth + 1)
                if v is not None:
                    out[kw.arg] = v
        if "dataset" in target.lower() and isinstance(out.get("names"), (str, list)):
            out["dataset_name"] = out["names"]  # `get_detection_dataset_dicts(names="coco_2017_train")`
        return out
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict":
        return {kw.arg: _lazy(kw.value, consts, lazy, depth + 1) for kw in node.keywords if kw.arg}
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Call):  # `get_config("x.py").train`
        return None
    return _lit(node, consts)


def _config_path_call(node: ast.AST) -> str | None:
    """The config file a call loads: `model_zoo.get_config("common/train.py")`, `LazyConfig.load("x.py")`."""
    while isinstance(node, ast.Attribute):
        node = node.value
    if isinstance(node, ast.Call) and _call_name(node).rsplit(".", 1)[-1] in ("get_config", "load", "load_config") \
            and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str) \
            and node.args[0].value.endswith(".py"):
        return node.args[0].value
    return None


def _python_config(text: str) -> tuple[dict, list[str]]:
    """Python configs read without running them: module-level literal assignments (dict(...) calls, names of
    earlier assignments) and `_base_` files (mmengine); detectron2-style lazy configs: `L(Model)(...)` calls as
    {"type": "Model", ...}, attribute assignments (`train.max_iter = 90000`,
    `model.backbone.bottom_up.depth = 101`) as dotted keys, and the configs they inherit from -- relative
    imports of names (`from ..common.models.mask_rcnn_fpn import model`) and `get_config("...py")` calls --
    as bases (the caller reads them first, at a lower priority)."""
    try:
        tree = tolerant_parse(text)
    except SyntaxError:
        return {}, []
    out: dict[str, Any] = {}
    consts: dict[str, Any] = {}
    bases: list[str] = []
    lazy = {"L", "LazyCall"}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            for a in node.names:
                if a.name == "LazyCall":
                    lazy.add(a.asname or a.name)
            if node.level and node.module is not None:  # `from ..common.data.coco import dataloader`
                rel = "../" * (node.level - 1) + node.module.replace(".", "/") + ".py"
                bases.append(rel if node.level > 1 else "./" + rel)
            continue
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        path = _config_path_call(node.value)
        if path and path not in bases:
            bases.extend([path, "../" + path])  # (relative to the package's configs folder: one level up)
        t = node.targets[0]
        if isinstance(t, ast.Name):
            name = t.id
            v = _lazy(node.value, consts, lazy)
            if v is None and path:  # `train = get_config("common/train.py").train`: the base's value stands
                continue
            if name == "_base_":
                bases.extend([v] if isinstance(v, str) else [b for b in (v or []) if isinstance(b, str)])
                continue
            consts[name] = v
            out[name] = v
        elif isinstance(t, ast.Attribute):  # `dataloader.train.total_batch_size = 64`
            parts = []
            while isinstance(t, ast.Attribute):
                parts.append(t.attr)
                t = t.value
            if not isinstance(t, ast.Name):
                continue
            keys = [t.id] + list(reversed(parts))
            v = _lazy(node.value, consts, lazy)
            if v is None:
                continue
            d = out
            for k in keys[:-1]:
                if not isinstance(d.get(k), dict):
                    d[k] = {}
                d = d[k]
            if isinstance(v, dict) and isinstance(d.get(keys[-1]), dict):
                d[keys[-1]].update(v)
            else:
                d[keys[-1]] = v
    return out, bases


def ml_collections_config(text: str, arg: str, base: Any = None, fn_name: str = "get_config") -> dict | None:
    """An ml_collections config module (`--config=configs/vit.py:b16,cifar10`): the `config.a.b = literal`
    assignments of its get_config(), in order; an `if mode == "gpu8":` block counts when "gpu8" is one of
    the `:arg` words, other conditions are skipped (unknown without running it). Section aliases count
    (`training = config.training; training.n_iters = 5`, `config.model = model = ConfigDict()`), and a config
    built by another module's function (`config = get_default_configs()`) starts from that function's
    values when `base(name)` gives them (the caller resolves the import)."""
    try:
        tree = tolerant_parse(text)
    except (SyntaxError, ValueError):
        return None
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == fn_name), None)
    if fn is None:
        return None
    words = {w.strip() for w in re.split(r"[,=]", arg or "") if w.strip()}
    params = {a.arg for a in fn.args.args}
    out: dict = {}
    aliases: dict[str, list[str]] = {}  # local name -> the config path it stands for ([] = the config itself)

    def chain(t: ast.AST) -> list[str] | None:
        parts = []
        while isinstance(t, ast.Attribute):
            parts.append(t.attr)
            t = t.value
        if not isinstance(t, ast.Name):
            return None
        if t.id in aliases:
            path = aliases[t.id] + list(reversed(parts))
            return path or None
        return list(reversed(parts)) if parts else None

    def alias(st: ast.Assign) -> bool:
        """`x = config.a.b` / `config.a = x = ConfigDict()` / `config = base_fn()`: names, not values."""
        names = [t.id for t in st.targets if isinstance(t, ast.Name)]
        attrs = [t for t in st.targets if isinstance(t, ast.Attribute)]
        if not names:
            return False
        if isinstance(st.value, ast.Call) and not attrs:
            f = st.value.func
            fname = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
            if fname != "ConfigDict" and base is not None and not st.value.args:
                got = base(fname)
                if isinstance(got, dict):
                    for k, v in got.items():
                        put([k], v)
            for n in names:
                aliases[n] = []
            return True
        if attrs:
            path = chain(attrs[0])
            if path:
                for n in names:
                    aliases[n] = path
            return True
        path = chain(st.value) if isinstance(st.value, ast.Attribute) else \
            (aliases.get(st.value.id) if isinstance(st.value, ast.Name) else None)
        if path is not None:
            for n in names:
                aliases[n] = list(path)
            return True
        return False

    def put(path: list[str], v: Any) -> None:
        d = out
        for k in path[:-1]:
            d = d.setdefault(k, {}) if isinstance(d.get(k, {}), dict) else d.setdefault(k + "_", {})
        if isinstance(v, dict) and isinstance(d.get(path[-1]), dict):
            d[path[-1]].update(v)
        else:
            d[path[-1]] = v

    def holds(test: ast.AST) -> bool | None:
        if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq) and \
                isinstance(test.comparators[0], ast.Constant):
            left = test.left
            root = left.value if isinstance(left, ast.Attribute) else left
            if isinstance(root, ast.Name) and root.id in params | {"arg", "mode"}:
                return str(test.comparators[0].value) in words
        return None

    def walk(body: list[ast.stmt]) -> None:
        for st in body:
            if isinstance(st, ast.Assign) and alias(st):
                continue
            if isinstance(st, ast.Assign) and len(st.targets) == 1:
                path = chain(st.targets[0])
                if path:
                    v = _lit(st.value, {})
                    if isinstance(v, (str, int, float, dict)) and not isinstance(v, bool):
                        put(path, v)
            elif isinstance(st, ast.If):
                h = holds(st.test)
                if h is True:
                    walk(st.body)
                elif h is False:
                    walk(st.orelse)
    walk(fn.body)
    return out


def subcommand_target(text: str, word: str) -> tuple[str, str] | None:
    """A CLI that dispatches its first argument through a dict of imported functions
    (`PARSER_DATA = {"finetune": finetune_fn}` with `from pkg.finetune import setup as finetune_fn`): the
    (module, function) that `word` runs."""
    try:
        tree = tolerant_parse(text)
    except (SyntaxError, ValueError):
        return None
    target = None
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values):
                if isinstance(k, ast.Constant) and k.value == word and isinstance(v, ast.Name):
                    target = v.id
    if target is None:
        return None
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                if (a.asname or a.name) == target:
                    return node.module, a.name
    return None


def function_cli(text: str, func: str) -> _PyInfo | None:
    """The options a function-signature CLI (jsonargparse's CLI(fn), fire) gives: each parameter an
    option with its default; a default built by a call (`train: TrainArgs = TrainArgs(epochs=5)`) gives
    `train.epochs`; parameters without a default are the positionals, in order. Parsed once per
    (source, function); callers get a private copy (they merge into it)."""
    info = _function_cli(text, func)
    return None if info is None else replace(info, options=dict(info.options), defaults=dict(info.defaults),
                                                 positionals=list(info.positionals), task_words=list(info.task_words))


@lru_cache(maxsize=2048)
def _function_cli(text: str, func: str) -> _PyInfo | None:
    try:
        tree = tolerant_parse(text)
    except (SyntaxError, ValueError):
        return None
    fn = next((n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == func), None)
    if fn is None:
        return None
    info = _PyInfo()
    for dec in fn.decorator_list:  # click: `@click.option("--epochs", "-e", default=10)`, `@click.argument("plan")`
        if not isinstance(dec, ast.Call):
            continue
        kind = _call_name(dec).rsplit(".", 1)[-1]
        names = [x.value for x in dec.args if isinstance(x, ast.Constant) and isinstance(x.value, str)]
        if kind == "option" and names:
            longs = [n for n in names if n.startswith("--")] or names
            dest = next((n for n in names if not n.startswith("-")), longs[0].split("/")[0].lstrip("-")).replace("-", "_")
            for n in names:
                if n.startswith("-"):
                    info.options[n.split("/")[0]] = (dest, True)
            d = next((_lit(kw.value, {}) for kw in dec.keywords if kw.arg == "default"), None)
            if d is not None and not isinstance(d, bool):
                info.defaults[dest] = d
        elif kind == "argument" and names:
            info.positionals.append(names[0].replace("-", "_"))
    a = fn.args
    params = a.posonlyargs + a.args
    defaults = [None] * (len(params) - len(a.defaults)) + list(a.defaults)
    pairs = list(zip(params, defaults)) + list(zip(a.kwonlyargs, a.kw_defaults))
    for arg, d in pairs:
        name = arg.arg
        if name in ("self", "cls"):
            continue
        info.options[f"--{name}"] = (name, True)
        if d is None:
            if arg in params:
                info.positionals.append(name)
            continue
        if isinstance(d, ast.Call) and _call_name(d).rsplit(".", 1)[-1] in ("Option", "Argument"):
            # typer: `epochs: int = typer.Option(10)`, `plan: str = typer.Argument(...)` (`...`: required)
            first = d.args[0] if d.args else next((kw.value for kw in d.keywords if kw.arg == "default"), None)
            v = _lit(first, {}) if first is not None else None
            if v is Ellipsis or first is None or (isinstance(first, ast.Constant) and first.value is Ellipsis):
                if _call_name(d).endswith("Argument"):
                    info.positionals.append(name)
            elif v is not None and not isinstance(v, bool):
                info.defaults[name] = v
            continue
        if isinstance(d, ast.Call):
            for kw in d.keywords:
                v = _lit(kw.value, {})
                if kw.arg and isinstance(v, (int, float, str)) and not isinstance(v, bool):
                    info.defaults[f"{name}.{kw.arg}"] = v
            continue
        v = _lit(d, {})
        if v is not None and not isinstance(v, bool):
            info.defaults[name] = v
    info.task_words.append(func)
    return info


@lru_cache(maxsize=8192)
def _analysis_of(text: str, whole: bool = False) -> _PyInfo | None:
    """The analysis of a Python source (None: not Python), computed once per distinct text: a warm
    process (the Advisor answering many jobs of one repository) parses each file once. `whole`: every
    function counts (a module another script builds its parser from: nothing in it runs by itself)."""
    try:
        return _analyse_python(tolerant_parse(text), whole)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def analyse_source(text: str) -> _PyInfo | None:
    """A private copy of the cached analysis of `text` (callers merge into it)."""
    info = _analysis_of(text)
    if info is None:
        return None
    return replace(info, defaults=dict(info.defaults), options=dict(info.options), keywords=list(info.keywords),
                   model_literals=list(info.model_literals), consts=dict(info.consts), fields=dict(info.fields),
                   imports=list(info.imports), dataset_literals=list(info.dataset_literals),
                   task_words=list(info.task_words), positionals=list(info.positionals),
                   global_batch=set(info.global_batch), programs=list(info.programs), multi=set(info.multi), submodules=list(info.submodules), relative=list(info.relative), cli_functions=list(info.cli_functions), derived=set(info.derived),
                   model_classes=list(info.model_classes))
