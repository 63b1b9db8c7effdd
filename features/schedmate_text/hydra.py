"""Hydra's composition, read statically: the primary config, its defaults list (groups chosen by the
config, overridden by `group=option` on the command line), each option's own defaults (`defaults:
[default]` inside `trainer/gpu.yaml`), `# @package _global_` options (an `experiment=` file) whose
`override /group: option` entries change other groups' choices, and `_self_`'s place in the list.

Why not Hydra's compose API: it needs the config folder on disk and imports `_target_` plug-ins for
some searchpaths; the extractor reads a repository given as {path: text} and must never import it. This
follows the documented order (Hydra 1.1+: `_self_` last unless the list places it) for what launch
commands use; interpolations are resolved afterwards with OmegaConf by the caller."""
from __future__ import annotations

import copy
from typing import Any, Callable

from features.schedmate_text.settings import _merge

_Loader = Callable[[str], "dict | None"]


def _strip(name: str) -> str:
    return name[:-5] if name.endswith(".yaml") else name[:-4] if name.endswith(".yml") else name


def _entries(defaults: Any) -> list[tuple[str | None, str | None, bool]]:
    """(group, option, override) of a defaults list; (None, name, False) for a plain entry ("_self_",
    "default")."""
    out: list[tuple[str | None, str | None, bool]] = []
    for d in defaults or []:
        if isinstance(d, str):
            out.append((None, _strip(d), False))
        elif isinstance(d, dict):
            for k, v in d.items():
                key = str(k)
                override = key.startswith("override ")
                g = key.replace("optional ", "").replace("override ", "").strip().lstrip("/")
                out.append((g, None if v is None else _strip(str(v)), override))
    return out


def compose(load: _Loader, is_global: Callable[[str], bool], has_group: Callable[[str], bool], base: str,
            cname: str, overrides: list[tuple[str, str]]) -> tuple[dict | None, list[tuple[str, str]]]:
    """The composed config of `cname` under `base` with the command's overrides, and the overrides that
    set values (`a.b=v`) rather than choose a group option. `load(path)` gives a YAML mapping or None."""
    def path(*parts: str) -> str:
        return "/".join(p for p in (base, *parts) if p)

    main = load(path(_strip(cname or "config") + ".yaml"))
    if main is None and any("." not in k.lstrip("+") and has_group(path(k.lstrip("+"))) for k, _ in overrides):
        main = {}  # the primary config is a structured one (ConfigStore, no YAML); the chosen group files still apply
    if main is None:
        return None, []
    entries = _entries(main.get("defaults"))
    order: list[str] = []  # groups in defaults-list order; "_self_" marks the primary config's place
    choices: dict[str, str | None] = {}
    for g, opt, _ in entries:
        if g is None:
            if opt == "_self_":
                order.append("_self_")
            continue
        order.append(g)
        choices[g] = opt
    if "_self_" not in order:
        order.append("_self_")
    set_overrides = []
    for k, v in overrides:
        k2 = k.lstrip("+")
        if "." not in k2 and has_group(path(k2)):
            if k2 not in order:
                order.insert(order.index("_self_") if "_self_" in order else len(order), k2)
            choices[k2] = _strip(v)
        else:
            set_overrides.append((k2, v))
    # global-package options (experiment files) may override other groups' choices
    for g in list(order):
        opt = choices.get(g)
        if g == "_self_" or not opt:
            continue
        sub = load(path(g, opt + ".yaml"))
        if isinstance(sub, dict) and is_global(path(g, opt + ".yaml")):
            for g2, opt2, override in _entries(sub.get("defaults")):
                if g2 is not None and override and opt2:
                    choices[g2] = opt2
    cfg: dict = {}
    for g in order:
        if g == "_self_":
            _merge(cfg, {k: v for k, v in main.items() if k != "defaults"})
            continue
        opt = choices.get(g)
        if not opt:
            continue
        sub = _option(load, path, g, opt, 0)
        if sub is None:
            continue
        if is_global(path(g, opt + ".yaml")):
            _merge(cfg, sub)
        else:
            _merge(cfg, {g: sub})
    return cfg, set_overrides


def _option(load: _Loader, path: Callable[..., str], group: str, opt: str, depth: int) -> dict | None:
    """A group option with its own defaults list applied (`defaults: [default]` = the same group's
    default.yaml first, then this file; `_self_` placed where the list says)."""
    sub = load(path(group, opt + ".yaml"))
    if not isinstance(sub, dict) or depth > 4:
        return sub if isinstance(sub, dict) else None
    sub = copy.deepcopy(sub)
    out: dict = {}
    self_done = False
    for g, name, _ in _entries(sub.pop("defaults", None)):
        if g is None and name == "_self_":
            _merge(out, sub)
            self_done = True
        elif g is None and name:
            base = _option(load, path, group, name, depth + 1)
            if base:
                _merge(out, base)
    if not self_done:
        _merge(out, sub)
    return out
