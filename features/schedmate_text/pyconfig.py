"""Python configuration objects read with `ast`, never executed: an experiment class that sets its
hyper-parameters on `self` in `__init__` (and inherits the rest from a base class in another module),
and a config function that returns nested constructor calls (`Config(training=Training(steps=1000))`).

Why: many repositories keep their hyper-parameters in code rather than in YAML/argparse, and name the
object on the command line (`-n yolox-s`, `-f exps/x.py`, `--config llama3_8b`). Reading the literal
keyword/attribute values gives the same dotted keys a YAML file would, so the rest of the extractor
(key vocabularies, priorities) needs no special case. Values that are not literals are left out: an
unknown is better than a guess.
"""
from __future__ import annotations

import ast
import re
from functools import lru_cache
from typing import Any

__all__ = ["class_config", "function_config", "config_functions", "python_name"]


def python_name(value: str) -> str:
    """A command-line name as a Python identifier: `yolox-s` -> `yolox_s`, `Llama3-8B` -> `llama3_8b`."""
    return re.sub(r"[^0-9a-zA-Z_]", "_", value.strip()).lower()


@lru_cache(maxsize=1024)
def _tree(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return None


def _value(node: ast.AST, local: dict[str, Any], depth: int = 0) -> Any:
    """A literal, a nested constructor call as a dict of its keywords, a registry lookup by a literal
    name (`DATASETS["c4"]` -> "c4"), or a local variable holding one of these; None otherwise."""
    if depth > 12:
        return None
    try:
        v = ast.literal_eval(node)
        return v if isinstance(v, (str, int, float, bool)) or v is None else None
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        pass
    if isinstance(node, ast.Name):
        return local.get(node.id)
    if isinstance(node, ast.Subscript):
        key = node.slice
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            return key.value
        return None
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Add)):
        a, b = _value(node.left, local, depth + 1), _value(node.right, local, depth + 1)
        if all(isinstance(x, int) and not isinstance(x, bool) for x in (a, b)):
            return a * b if isinstance(node.op, ast.Mult) else a + b
        return None
    if isinstance(node, ast.Call):
        out = {}
        for kw in node.keywords:
            if kw.arg:
                v = _value(kw.value, local, depth + 1)
                if v is not None and v != {}:
                    out[kw.arg] = v
        return out
    if isinstance(node, ast.Dict):
        out = {}
        for k, v in zip(node.keys, node.values):
            if isinstance(k, ast.Constant) and isinstance(k.value, str):
                val = _value(v, local, depth + 1)
                if val is not None and val != {}:
                    out[k.value] = val
        return out
    return None


@lru_cache(maxsize=1024)
def config_functions(text: str) -> frozenset[str]:
    """Names of the module-level functions that return a call or a dict (candidate config builders)."""
    tree = _tree(text)
    if tree is None:
        return frozenset()
    names = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and not node.args.args:
            ret = next((n for n in ast.walk(node) if isinstance(n, ast.Return)), None)
            if ret is not None and isinstance(ret.value, (ast.Call, ast.Dict, ast.Name)):
                names.add(node.name)
    return frozenset(names)


@lru_cache(maxsize=1024)
def _function_config(text: str, func: str) -> dict[str, Any] | None:
    return function_config_uncached(text, func)


def function_config(text: str, func: str) -> dict[str, Any] | None:
    """`function_config_uncached`, cached per (text, function); a copy the caller may modify."""
    import copy

    return copy.deepcopy(_function_config(text, func))


def function_config_uncached(text: str, func: str) -> dict[str, Any] | None:
    """The config a module-level function without arguments returns, as nested dicts of the literal
    keyword values of its constructor calls; locals assigned before the return are followed."""
    tree = _tree(text)
    if tree is None:
        return None
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == func), None)
    if fn is None:
        return None
    local: dict[str, Any] = {}
    for stmt in fn.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            v = _value(stmt.value, local)
            if v is not None:
                local[stmt.targets[0].id] = v
        elif isinstance(stmt, ast.Return) and stmt.value is not None:
            v = _value(stmt.value, local)
            return v if isinstance(v, dict) and v else None
    return None


@lru_cache(maxsize=1024)
def class_config(text: str) -> tuple[dict[str, Any], list[tuple[str, str, int]]]:
    """The `self.<name> = <literal>` assignments of the `__init__` of the module's configuration class
    (the class with the most such assignments; the last one on a tie: a subclass follows its base), and
    that class's bases as (module, class name, relative-import level) from the module's imports
    (module "" for a base defined in the same file)."""
    tree = _tree(text)
    if tree is None:
        return {}, []
    imports: dict[str, tuple[str, str, int]] = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            for a in node.names:
                imports[a.asname or a.name] = (node.module or "", a.name, node.level)
    best: tuple[int, dict[str, Any], list[tuple[str, str, int]]] = (0, {}, [])
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    for cls in classes.values():
        init = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
        attrs: dict[str, Any] = {}
        for stmt in (ast.walk(init) if init is not None else ()):
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                t = stmt.targets[0]
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                    v = _value(stmt.value, {})
                    if v is not None and not isinstance(v, dict):
                        attrs[t.attr] = v
        bases = []
        for b in cls.bases:
            name = b.id if isinstance(b, ast.Name) else b.attr if isinstance(b, ast.Attribute) else None
            if name in imports:
                bases.append(imports[name])
            elif name in classes:
                bases.append(("", name, 0))
        if attrs and len(attrs) >= best[0]:
            best = (len(attrs), attrs, bases)
    return best[1], best[2]


@lru_cache(maxsize=1024)
def class_attributes(text: str, name: str) -> tuple[dict[str, Any], list[tuple[str, str, int]]] | None:
    """`class_config` for one named class of the module (a base class found by its import), or None
    when the module does not define it. Cached per (text, class): a warm Advisor answers many jobs of one
    repository (callers do not modify the result)."""
    tree = _tree(text)
    if tree is None or not any(isinstance(n, ast.ClassDef) and n.name == name for n in tree.body):
        return None
    only = "\n".join(ast.get_source_segment(text, n) or "" for n in tree.body
                     if isinstance(n, (ast.ClassDef, ast.ImportFrom)) and (not isinstance(n, ast.ClassDef) or n.name == name))
    return class_config(only)
