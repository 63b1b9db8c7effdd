"""One registry shape and one spec grammar for every pluggable kind of schedcast.

Policies, placements, scores, performance models, predictors, failure models, trace formats, workload
generators and training tasks each live in a :class:`Registry`. A registry knows three sources of
entries, and nothing else can become one:

- what code registers (``@REGISTRY.register("name")`` or ``REGISTRY.register("name", obj)``): schedcast's
  own entries, a test's, a module imported with ``--plugin`` / ``SCHEDCAST_PLUGINS``;
- built-ins named by ``module:attribute`` *in code* (:meth:`Registry.register_lazy`), imported on first
  use so that heavy modules stay off the start-up path;
- Python entry points of an installed distribution, group ``schedcast.<kind>`` (e.g. a package's
  ``[project.entry-points."schedcast.policies"]``). They are loaded only for a name somebody asked for,
  or when the names are listed: an installed package is trusted like any installed package.

No string from a config file or a flag is ever imported as a module path: a name that is none of the
above is a one-line :class:`UnknownName` listing the known names.

Every kind takes parameters in the same grammar, parsed by :func:`parse_spec`:
``name`` or ``name:key=value,key=value`` (values are Python literals when they parse as one, ``true`` /
``false`` in any case are booleans, anything else is a string that the entry's typed parameters coerce;
commas inside ``[...]`` / ``(...)`` do not split).

Every numeric parameter has a domain (:class:`Domain`), declared on its type —
``interval: Annotated[float, PERIOD] = 60.0``, ``thresholds: Annotated[float | list[float], Domain(gt=0,
nonempty=True, increasing=True)]`` — or read from pydantic / annotated-types constraints; a number without
one must be finite. The registries check each parsed value against it (:meth:`Registry.check_params`,
:func:`check_domains`) before anything runs: ``bad parameters for policy 'tiresias': thresholds must be
..., got [-5]``. Entry-point plug-ins get the same checks from their own typed parameters.

This module sits in the lowest layer (features) so that every layer above can use it; it imports
nothing from schedcast.
"""
from __future__ import annotations

import ast
import importlib
import inspect
import math
import numbers
import os
import re
import sys
import typing
from dataclasses import dataclass
from typing import Any, Callable, Generic, Iterator, Mapping, TypeVar

T = TypeVar("T")

#: Environment variable naming plug-in modules to import (comma-separated). ``--plugin`` sets it, so
#: that processes started afterwards (Dask LocalCluster workers, subprocesses) import the same modules.
ENV_VAR = "SCHEDCAST_PLUGINS"
#: Entry-point groups are ``schedcast.<kind>``.
GROUP_PREFIX = "schedcast."
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}")
_MODULE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


class UnknownName(ValueError, KeyError):
    """A name no registry entry has: a ValueError (the CLI's exit 2) and a KeyError (a Mapping miss)."""

    __str__ = BaseException.__str__


class PluginError(ValueError):
    """A plug-in module or entry point that cannot be imported or registered (one line, exit 2)."""


# -- the one grammar ---------------------------------------------------------------------------------
def split_params(text: str) -> list[str]:
    """Split ``k=v,k=v`` on commas outside brackets, parentheses and quotes."""
    parts, depth, cur, quote = [], 0, "", ""
    for ch in text:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        if ch == "," and depth == 0 and not quote:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    return [p for p in (*parts, cur) if p.strip()]


def parse_value(text: str) -> Any:
    """A parameter value: ``true``/``false`` (any case) as booleans, a Python literal when it parses as
    one (numbers, lists, quoted strings), else the text itself (the entry's types coerce it)."""
    text = text.strip()
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text


def parse_spec(spec: str, what: str = "spec", *, positional: str | None = None,
               raw: bool = False) -> tuple[str, dict[str, Any]]:
    """``'name'`` or ``'name:key=value,...'`` -> (name, params). ``positional`` names the parameter a lone
    first value stands for (``noisy:0.5`` is ``noisy:sigma=0.5``); ``raw`` keeps values as stripped strings.
    A malformed item or a key given twice is a one-line ValueError naming ``what``."""
    name, _, rest = str(spec).strip().partition(":")
    params: dict[str, Any] = {}
    for i, item in enumerate(split_params(rest)):
        key, eq, value = item.partition("=")
        if not eq:
            if i == 0 and positional is not None:
                key, value = positional, item
            else:
                raise ValueError(f"{what} {spec!r}: parameter {item.strip()!r} is not key=value")
        key = key.strip()
        if not key:
            raise ValueError(f"{what} {spec!r}: parameter {item.strip()!r} has no name")
        if key in params:
            raise ValueError(f"{what} {spec!r}: parameter {key!r} given twice")
        params[key] = value.strip() if raw else parse_value(value)
    return name.strip(), params


def format_spec(name: str, params: Mapping[str, Any]) -> str:
    """The inverse of :func:`parse_spec` (values written as Python literals)."""
    return name + (":" + ",".join(f"{k}={v!r}" for k, v in params.items()) if params else "")


# -- parameter domains ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Domain:
    """The values a numeric parameter may take, declared on the parameter's type:
    ``interval: Annotated[float, Domain(ge=1.0)] = 60.0``.

    Every numeric parameter value is checked against its domain when a spec is parsed (one-line error
    naming the plug-in and the parameter; the CLI's exit 2). A parameter that declares none (a plain
    ``float`` or ``int``, an entry point's typed parameter, ``**weights: float``) still gets
    :data:`FINITE`: a number must be finite. Strings, booleans and None are left to the parameter's type
    (the domain of a ``str | float`` parameter applies to its numbers only).

    - ``gt`` / ``ge`` / ``lt`` / ``le``: bounds. A period, a tick, an interval or a size is > 0; one whose
      small values make the replay's event count explode has a floor instead (``ge=1.0`` s).
    - ``finite=False`` lets ``inf`` through (``eta_max=inf``: no cap); NaN is never a value.
    - ``allow``: values taken even outside the bounds (``allow=(0,)``: 0 means off).
    - ``integer``: a whole number (2.0 is taken).
    - a list value (``float | list[float]``) must hold numbers, each in the bounds; ``nonempty``,
      ``increasing`` (strictly) and ``max_len`` constrain the list itself.
    - ``why``: a few words printed after the rule (``"0 would never advance time"``).

    pydantic / annotated-types constraints (``Annotated[float, Field(gt=0)]``, ``annotated_types.Ge(1)``)
    are read as a Domain too, and a class may list its domains beside its ``param_docs`` as
    ``param_domains = {"n_prof": COUNT0, ...}`` (merged over its bases)."""

    gt: float | None = None
    ge: float | None = None
    lt: float | None = None
    le: float | None = None
    finite: bool = True
    allow: tuple = ()
    integer: bool = False
    nonempty: bool = False
    increasing: bool = False
    max_len: int | None = None
    why: str = ""

    @property
    def takes_lists(self) -> bool:
        return self.nonempty or self.increasing or self.max_len is not None

    def describe(self) -> str:
        """``'a finite number > 0 and <= 100'``; for a list domain ``'... , or a non-empty, strictly
        increasing list of them (at most 64)'``."""
        one = ("a finite " if self.finite else "a ") + ("whole number" if self.integer else "number")
        bounds = [f"{op} {_num(v)}" for op, v in ((">", self.gt), (">=", self.ge), ("<", self.lt), ("<=", self.le))
                  if v is not None]
        if bounds:
            one += " " + " and ".join(bounds)
        if self.allow:
            one += " (or " + " or ".join(_num(a) for a in self.allow) + ")"
        if not self.takes_lists:
            return one
        shape = ", ".join(w for w in ("non-empty" if self.nonempty else "",
                                      "strictly increasing" if self.increasing else "") if w)
        text = f"{one}, or a{'n' if shape[:1] in 'aeiou' and shape else ''} {shape + ' ' if shape else ''}list of them"
        return text + (f" (at most {self.max_len})" if self.max_len is not None else "")

    def _scalar_ok(self, value: Any) -> bool:
        v = float(value)
        if math.isnan(v):
            return False
        if v in self.allow:
            return True
        if (self.finite and math.isinf(v)) or (self.integer and math.isfinite(v) and v != int(v)):
            return False
        return ((self.gt is None or v > self.gt) and (self.ge is None or v >= self.ge)
                and (self.lt is None or v < self.lt) and (self.le is None or v <= self.le))

    def problem(self, value: Any) -> str | None:
        """None if ``value`` is in the domain (or is no number: its type decides), else the rule broken
        (``'must be a finite number > 0, got nan'``)."""
        if isinstance(value, str):  # a number given as text to a ``str | float`` parameter ('nan', '1e3')
            try:
                value = float(value)
            except ValueError:
                return None  # a name ('bo'): the parameter's type and the plug-in decide
        if value is None or isinstance(value, (bool, bytes)):
            return None
        if isinstance(value, numbers.Real):
            return None if self._scalar_ok(value) else f"must be {self.describe()}, got {value!r}"
        if isinstance(value, (list, tuple)):
            ok = all(isinstance(v, numbers.Real) and not isinstance(v, bool) and self._scalar_ok(v) for v in value)
            ok = ok and not (self.nonempty and not value)
            ok = ok and not (self.max_len is not None and len(value) > self.max_len)
            ok = ok and not (self.increasing and any(float(b) <= float(a) for a, b in zip(value, value[1:])))
            return None if ok else f"must be {self.describe()}, got {list(value)!r}"
        return None


def _num(v: Any) -> str:
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e15:
        return str(int(v))
    return f"{v:g}" if isinstance(v, float) else repr(v)


#: The domain of a numeric parameter that declares none: a finite number.
FINITE = Domain()
#: Common domains (use them as they are, or ``dataclasses.replace(PERIOD, ge=60.0)``).
#: A timer's period, tick or interval, in seconds: 0 would never advance simulated time and below a second
#: the timer events of a long replay explode; above a year the replay's clock loses the jobs' seconds.
PERIOD = Domain(ge=1.0, le=366 * 86400.0, why="a timer's period in seconds")
#: A retraining interval in seconds, 0 for never: each update retrains a model, so at least an hour.
UPDATE_INTERVAL = Domain(ge=3600.0, le=366 * 86400.0, allow=(0,), why="seconds between model updates; 0: never")
#: A length of time in seconds (a delay, a duration, a lease): >= 0, at most 100 years.
SECONDS = Domain(ge=0.0, le=100 * 366 * 86400.0)
#: A size, a rate or a scale that must be > 0.
POSITIVE = Domain(gt=0.0)
#: A share or a probability.
FRACTION = Domain(ge=0.0, le=1.0)
#: A count of at least one (nodes, GPUs, samples).
COUNT = Domain(ge=1, integer=True)
#: A count that may be 0.
COUNT0 = Domain(ge=0, integer=True)


def _domain_in(annotation: Any) -> Domain | None:
    """The Domain an annotation declares: ``Annotated[T, Domain(...)]`` (also inside ``Optional`` or a
    union), or annotated-types / pydantic constraints (``Annotated[float, Field(gt=0)]``, ``Gt(0)``)."""
    if typing.get_origin(annotation) is typing.Annotated:
        base, *meta = typing.get_args(annotation)
        for m in meta:
            if isinstance(m, Domain):
                return m
        found = _constraints(meta)
        return found if found is not None else _domain_in(base)
    for arg in typing.get_args(annotation):
        found = _domain_in(arg)
        if found is not None:
            return found
    return None


_BOUND_TYPES = {"Gt": "gt", "Ge": "ge", "Lt": "lt", "Le": "le"}


def _constraints(meta: list) -> Domain | None:
    """A Domain from annotated-types constraints (what ``pydantic.Field(gt=...)`` carries), if any."""
    found: dict[str, Any] = {}
    for m in meta:
        for item in getattr(m, "metadata", None) or [m]:  # a pydantic FieldInfo carries its constraints
            kind = type(item).__name__
            if kind in _BOUND_TYPES:
                found[_BOUND_TYPES[kind]] = getattr(item, _BOUND_TYPES[kind])
            elif kind == "Interval":
                found.update({k: getattr(item, k) for k in ("gt", "ge", "lt", "le") if getattr(item, k) is not None})
            elif kind == "MinLen" and item.min_length > 0:
                found["nonempty"] = True
            elif kind == "MaxLen":
                found["max_len"] = item.max_length
    return Domain(**found) if found else None


_DOMAINS: dict[Any, tuple[dict[str, Domain], Domain | None]] = {}


def parameter_domains(target: Any) -> tuple[dict[str, Domain], Domain | None]:
    """(name -> declared Domain, the Domain of ``**kwargs`` or None) of a plug-in's parameters: a class's
    ``__init__`` (or its pydantic ``Params`` model, or its own fields when it is a pydantic model), a
    function's signature; a class may also list them as ``param_domains = {name: Domain}`` (merged over its
    bases, as ``param_docs``). Parameters that declare none are absent (they get :data:`FINITE`)."""
    try:
        return _DOMAINS[target]
    except (KeyError, TypeError):
        pass
    found: dict[str, Domain] = {}
    var_kw: Domain | None = None
    fields = getattr(target, "model_fields", None) if isinstance(target, type) else None
    declared = getattr(target, "Params", None)
    if fields is None and isinstance(declared, type) and isinstance(getattr(declared, "model_fields", None), dict):
        fields = declared.model_fields
    if isinstance(fields, dict):  # a pydantic model: each field's annotation and constraints
        for name, info in fields.items():
            d = _domain_in(info.annotation) or _constraints(list(info.metadata))
            if d is not None:
                found[name] = d
    else:
        fn = target.__init__ if isinstance(target, type) else target
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError):
            sig = None
        try:
            hints = typing.get_type_hints(fn, include_extras=True)
        except Exception:  # noqa: BLE001 - one unresolvable hint: resolve the others one by one
            hints = _hints_one_by_one(fn)
        for name, p in (sig.parameters.items() if sig is not None else ()):
            d = _domain_in(hints.get(name))
            if p.kind is p.VAR_KEYWORD:
                var_kw = d
            elif d is not None:
                found[name] = d
    if isinstance(target, type):  # ``param_domains = {name: Domain}`` of the class and its bases (as param_docs)
        listed: dict[str, Domain] = {}
        for klass in reversed(target.__mro__):
            listed.update(klass.__dict__.get("param_domains") or {})
        found = {**listed, **found}  # a domain on the parameter's own type wins
    out = (found, var_kw)
    try:
        _DOMAINS[target] = out
    except TypeError:
        pass
    return out


def _hints_one_by_one(fn: Any) -> dict[str, Any]:
    """The annotations of ``fn`` that resolve (a string one is evaluated in the function's module); those
    that do not are left out, so their numbers are checked as :data:`FINITE`."""
    out = {}
    namespace = dict(getattr(fn, "__globals__", {}))
    for name, annotation in getattr(fn, "__annotations__", {}).items():
        if isinstance(annotation, str):
            try:
                annotation = eval(annotation, namespace)  # noqa: S307 - the plug-in's own annotation, in its module
            except Exception:  # noqa: BLE001
                continue
        out[name] = annotation
    return out


def check_domains(noun: str, name: str, target: Any, params: Mapping[str, Any]) -> None:
    """Check each value of ``params`` against the domain ``target`` declares for it
    (:func:`parameter_domains`; :data:`FINITE` where none): for the first value outside, a one-line
    ValueError ``bad parameters for NOUN 'NAME': KEY must be ..., got VALUE``."""
    if not params:
        return
    declared, var_kw = parameter_domains(target) if target is not None else ({}, None)
    named: Any = ()
    if var_kw is not None:  # the domain of **kwargs is for names the signature does not list
        try:
            named = inspect.signature(target.__init__ if isinstance(target, type) else target).parameters
        except (TypeError, ValueError):
            named = ()
    for key, value in params.items():
        domain = declared.get(key) or (var_kw if var_kw is not None and key not in named else None) or FINITE
        problem = domain.problem(value)
        if problem is not None:
            why = f" ({domain.why})" if domain.why else ""
            raise ValueError(f"bad parameters for {noun} {name!r}: {key} {problem}{why}")


# -- plug-in modules (--plugin, SCHEDCAST_PLUGINS) ---------------------------------------------------
_LOADED: list[str] = []


def plugin_names_from_env(environ: Mapping[str, str] | None = None) -> list[str]:
    text = (os.environ if environ is None else environ).get(ENV_VAR, "")
    return [n.strip() for n in text.split(",") if n.strip()]


def load_plugins(names: "list[str] | tuple[str, ...]", *, export: bool = False) -> list[str]:
    """Import each module of ``names`` once (a module registers what it adds when imported). A module not
    found on ``sys.path`` is looked for in the current directory, as ``python -m`` would. ``export``
    adds them to ``SCHEDCAST_PLUGINS`` (and the current directory to ``PYTHONPATH`` when it was needed),
    so that worker processes started later import the same plug-ins. Returns the modules imported now.
    A bad name or a module that fails to import is a one-line :class:`PluginError`."""
    done = []
    for name in names:
        name = str(name).strip()
        if not _MODULE.fullmatch(name):
            raise PluginError(f"plug-in {name!r} is not a module name (such as my_policies or pkg.module)")
        if name in _LOADED:
            continue
        used_cwd = False
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:
            cwd = os.getcwd()
            if exc.name != name.split(".")[0] or cwd in sys.path:
                raise PluginError(f"plug-in {name!r} cannot be imported: {exc}") from None
            sys.path.insert(0, cwd)
            used_cwd = True
            try:
                importlib.import_module(name)
            except ModuleNotFoundError:
                sys.path.remove(cwd)
                raise PluginError(f"plug-in module {name!r} not found (not on the Python path nor in "
                                  f"{cwd})") from None
            except Exception as inner:  # noqa: BLE001 - the plug-in's own code failed
                raise PluginError(f"plug-in {name!r} failed to import: {type(inner).__name__}: {inner}") from None
        except PluginError:
            raise
        except Exception as exc:  # noqa: BLE001 - the plug-in's own code failed
            raise PluginError(f"plug-in {name!r} failed to import: {type(exc).__name__}: {exc}") from None
        _LOADED.append(name)
        done.append(name)
        if export:
            _export(name, os.getcwd() if used_cwd else None)
    return done


def _export(name: str, path: str | None) -> None:
    listed = plugin_names_from_env()
    if name not in listed:
        os.environ[ENV_VAR] = ",".join([*listed, name])
    if path is not None:
        parts = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        if path not in parts:
            os.environ["PYTHONPATH"] = os.pathsep.join([path, *parts])


def load_env_plugins() -> list[str]:
    """Import the modules named by ``SCHEDCAST_PLUGINS`` (once each). Registries call this before they
    answer "unknown name" or list their names, so a worker process needs no extra set-up."""
    return load_plugins(plugin_names_from_env())


# -- entry points --------------------------------------------------------------------------------------
_EP_CACHE: dict[tuple[str, tuple[str, ...]], dict[str, Any]] = {}


def entry_points_of(group: str) -> dict[str, Any]:
    """name -> EntryPoint of ``group`` among the installed distributions (nothing is imported). Cached per
    ``sys.path``; broken metadata of some other package means no plug-ins, not a crash."""
    key = (group, tuple(sys.path))
    if key not in _EP_CACHE:
        from importlib.metadata import entry_points

        try:
            found = {ep.name: ep for ep in entry_points(group=group)}
        except Exception:  # noqa: BLE001 - a broken distribution elsewhere on the path
            found = {}
        _EP_CACHE[key] = found
    return _EP_CACHE[key]


# -- the registry ----------------------------------------------------------------------------------------
_MISSING = object()
#: kind -> name -> 'module:attribute': built-ins that a HIGHER layer declares for a registry of a lower one
#: (the PAI generator draws jobs with the simulator's models; features may not import sim, so sim and the
#: CLI's package declare it here). Absorbed by the registry of that kind on its next lookup or listing.
_DECLARED: dict[str, dict[str, str]] = {}


def declare(kind: str, name: str, target: str) -> None:
    """Declare the lazy built-in ``name`` (``'module:attribute'``, written in code) of registry ``kind``,
    whether or not that registry exists yet; declaring the same target again is a no-op."""
    known = _DECLARED.setdefault(kind, {})
    if known.get(name, target) != target:
        raise PluginError(f"{kind} {name!r} declared twice with different targets")
    known[name] = target



class Registry(Mapping[str, T], Generic[T]):
    """Named entries of one kind (``policies``, ``trace_formats``, ...), entry-point group ``schedcast.<kind>``.

    A read-only Mapping: ``name in R``, ``R[name]`` (loads a lazy built-in or an entry point on demand),
    iteration over :meth:`names` (registration order, then entry-point names; iterating lists, so it also
    imports ``SCHEDCAST_PLUGINS``). :meth:`lookup` is ``R[name]`` with the one-line error.

    ``adapt(name, obj)`` turns what is registered (a class, a function) into the stored entry (e.g. a
    policy's PolicyInfo); ``noun`` is how errors call an entry ("policy", "trace format")."""

    def __init__(self, kind: str, *, noun: str | None = None,
                 adapt: Callable[[str, Any], T] | None = None, sort_names: bool = False) -> None:
        self.kind = kind
        self.group = GROUP_PREFIX + kind
        self.noun = noun or kind
        self._adapt = adapt
        self._sort = sort_names
        self._items: dict[str, T] = {}
        self._lazy: dict[str, tuple[str, str]] = {}

    # registering -----------------------------------------------------------------------------------
    def register(self, name: str, obj: Any = _MISSING, *, replace: bool = False) -> Any:
        """Register ``obj`` as ``name``; without ``obj``, a decorator. Names are letters, digits and
        ``_.+-``; a name registered twice is an error unless ``replace``. Returns ``obj``."""
        if obj is _MISSING:
            return lambda target: self.register(name, target, replace=replace)
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise PluginError(f"{self.noun} name {name!r}: letters, digits, '_', '.', '+' and '-' (at most 64)")
        if not replace and (name in self._items or name in self._lazy):
            if self._items.get(name) is not obj:
                raise PluginError(f"{self.noun} {name!r} registered twice")
        self._items[name] = self._adapt(name, obj) if self._adapt is not None else obj
        return obj

    def register_lazy(self, name: str, target: str) -> None:
        """A built-in imported on first use: ``target`` is ``'module:attribute'``, written in code."""
        if name in self._items or name in self._lazy:
            raise PluginError(f"{self.noun} {name!r} registered twice")
        module, _, attr = target.partition(":")
        self._lazy[name] = (module, attr)

    def unregister(self, name: str) -> None:
        """Remove ``name`` (tests)."""
        self._items.pop(name, None)
        self._lazy.pop(name, None)

    # looking up ------------------------------------------------------------------------------------
    def _absorb_declared(self) -> None:
        for name, target in _DECLARED.get(self.kind, {}).items():
            if name not in self._lazy and name not in self._items:
                module, _, attr = target.partition(":")
                self._lazy[name] = (module, attr)

    def builtin(self, name: str) -> bool:
        """Whether ``name`` is a lazy built-in (named in code, loaded or not)."""
        self._absorb_declared()
        return name in self._lazy

    def _known_now(self, name: str) -> bool:
        self._absorb_declared()
        return name in self._items or name in self._lazy

    def _resolve(self, name: str) -> bool:
        """Make ``name`` a stored entry if any source has it (lazy built-in, plug-in module, entry point)."""
        if name in self._items:
            return True
        self._absorb_declared()
        if name in self._lazy:
            module, attr = self._lazy[name]
            self.register(name, getattr(importlib.import_module(module), attr), replace=True)
            return True
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            return False
        load_env_plugins()
        if self._known_now(name):
            return self._resolve(name)
        ep = entry_points_of(self.group).get(name)
        if ep is None:
            return False
        try:
            obj = ep.load()
        except Exception as exc:  # noqa: BLE001 - an installed plug-in that does not import
            raise PluginError(f"{self.noun} {name!r} (entry point {ep.value!r} of an installed package, group "
                              f"{self.group}) cannot be loaded: {type(exc).__name__}: {exc}") from None
        self.register(name, obj, replace=True)
        return True

    def lookup(self, name: str) -> T:
        """The entry ``name``, or a one-line :class:`UnknownName` listing the known names."""
        if not self._resolve(name):
            raise UnknownName(self.unknown_message(name))
        return self._items[name]

    def params_target(self, name: str) -> Any:
        """What declares the parameters of entry ``name``: the entry itself (a class, a function), or
        the class a stored record wraps (a policy's PolicyInfo.cls)."""
        entry = self.lookup(name)
        return getattr(entry, "cls", entry)

    def check_params(self, name: str, params: Mapping[str, Any], target: Any = _MISSING) -> None:
        """Check ``params`` of entry ``name`` against the domains its typed parameters declare
        (:class:`Domain`; a number without one must be finite): a one-line ValueError ``bad parameters
        for NOUN 'NAME': KEY must be ..., got VALUE``. ``target`` overrides what declares them."""
        check_domains(self.noun, name, self.params_target(name) if target is _MISSING else target, params)

    def parse(self, spec: str, what: str | None = None, *, positional: str | None = None) -> tuple[str, dict[str, Any]]:
        """:func:`parse_spec` of ``'name:key=value,...'``, the name looked up (one-line UnknownName) and
        the values checked against the entry's domains (:meth:`check_params`)."""
        name, params = parse_spec(spec, what or self.noun, positional=positional)
        self.check_params(name, params)
        return name, params

    def unknown_message(self, name: Any) -> str:
        return f"unknown {self.noun} {name!r}; known: {', '.join(sorted(self.names()))}"

    def names(self) -> list[str]:
        """Every name: registered and built-in ones, modules of ``SCHEDCAST_PLUGINS``, and installed entry
        points (listed, not imported)."""
        load_env_plugins()
        self._absorb_declared()
        out = list(self._items)
        out += [n for n in self._lazy if n not in self._items]
        out += [n for n in entry_points_of(self.group) if n not in self._items and n not in self._lazy]
        return sorted(out) if self._sort else out

    def loaded(self) -> dict[str, T]:
        """Every entry, loading lazy built-ins and entry points (listing commands)."""
        return {n: self.lookup(n) for n in self.names()}

    # Mapping -----------------------------------------------------------------------------------------
    def __getitem__(self, name: str) -> T:
        try:  # the hot path (a score per node per decision): one dict lookup
            return self._items[name]
        except (KeyError, TypeError):
            return self.lookup(name)

    def __contains__(self, name: object) -> bool:
        if isinstance(name, str) and self._known_now(name):
            return True
        return isinstance(name, str) and self._resolve(name)

    # dict habits of the tables this replaces (tests register and remove entries) --------------------
    def __setitem__(self, name: str, obj: Any) -> None:
        self.register(name, obj, replace=True)

    def __delitem__(self, name: str) -> None:
        if name not in self._items and name not in self._lazy:
            raise KeyError(name)
        self.unregister(name)

    def pop(self, name: str, *default: Any) -> Any:
        if name in self._items or name in self._lazy:
            value = self._items.get(name)
            self.unregister(name)
            return value
        if default:
            return default[0]
        raise KeyError(name)

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {len(self._items) + len(self._lazy)} entries)"


#: Every registry by kind, recorded as the modules that own them are imported (the lowest layer cannot
#: import them itself: callers import the owner, e.g. ``sim.policies`` for ``policies``).
REGISTRIES: dict[str, Registry] = {}
#: The kinds, each an entry-point group ``schedcast.<kind>``.
KINDS = ("policies", "placements", "scores", "performance", "predictors", "failures", "trace_formats",
         "generators", "tasks")


def new_registry(kind: str, **options: Any) -> Registry:
    """Create and record the registry of ``kind`` (one per kind per process)."""
    if kind not in KINDS:
        raise ValueError(f"unknown registry kind {kind!r}; known: {', '.join(KINDS)}")
    if kind in REGISTRIES:
        raise ValueError(f"registry {kind!r} created twice")
    REGISTRIES[kind] = registry = Registry(kind, **options)
    return registry


__all__ = ["COUNT", "COUNT0", "Domain", "ENV_VAR", "FINITE", "FRACTION", "PERIOD", "POSITIVE", "SECONDS", "UPDATE_INTERVAL", "KINDS", "PluginError", "REGISTRIES", "Registry", "UnknownName", "entry_points_of",
           "check_domains", "format_spec", "load_env_plugins", "load_plugins", "new_registry", "parameter_domains", "parse_spec", "parse_value",
           "plugin_names_from_env", "split_params"]
