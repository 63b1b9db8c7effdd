"""The `schedcast` command line: a thin parser over the command modules (pipelines.simulate, .info,
.modelops, .server). Heavy libraries are imported inside the commands that need them.

Errors are one line on stderr: exit 2 for what the user can fix (arguments, files, traces, configs,
models, disk and network), exit 1 for an internal error. `--debug` (or SCHEDCAST_DEBUG=1) shows the traceback instead.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import NoReturn, Sequence

#: Commands whose process needs neither the simulator nor pandas / numpy / pyarrow (SchedMate's text tools on
#: a user's repository, command and logs): the parser of their module only, no plug-in commands, and no
#: pyarrow allocator set-up at start (pipelines.memory_pages). A cold `schedcast diagnose LOG` is then the
#: interpreter, argparse and the reader (tests/test_hardening_round2.py checks what such a process imports).
LIGHT_COMMANDS = frozenset({"advise", "track", "diagnose"})


def __getattr__(name: str):
    """The command modules (``cli.simulate``, ...) and ``DEFAULT_POLICIES``, imported on first use: a
    command imports only the module that adds it (see COMMAND_MODULES)."""
    import importlib

    if name in ("info", "modelops", "server", "simulate"):
        return importlib.import_module(f"pipelines.{name}")
    if name == "DEFAULT_POLICIES":
        return importlib.import_module("pipelines.simulate").DEFAULT_POLICIES
    raise AttributeError(f"module 'pipelines.cli' has no attribute {name!r}")


class Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors (the full usage is one `--help` away)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


#: The module that adds each sub-command. A command line that names one builds only that module's
#: parsers: building them all imports the simulator (simulate's policy and placement names), 0.35 s of
#: every other command's start. Anything else (no command, --help, a typo) builds them all.
COMMAND_MODULES = {
    "simulate": "pipelines.simulate", "demo": "pipelines.simulate",
    "policies": "pipelines.info", "clusters": "pipelines.info", "data": "pipelines.info",
    "train": "pipelines.modelops", "evaluate": "pipelines.modelops", "retrain": "pipelines.modelops",
    "models": "pipelines.modelops",
    "server": "pipelines.server", "serve": "pipelines.server",
    "experiment": "pipelines.experiment",
    "advise": "pipelines.semantics", "track": "pipelines.semantics", "diagnose": "pipelines.semantics",
    "corpus": "pipelines.semantics",
    "reproduce": "pipelines.reproduce",
}


def command_of(argv: Sequence[str]) -> str | None:
    """The sub-command ``argv`` names: its first word after the global options (``--plugin`` and any
    abbreviation of it take a value), or None."""
    i = 0
    while i < len(argv):
        word = argv[i]
        if not word.startswith("-"):
            return word
        name = word.split("=", 1)[0]
        i += 2 if "=" not in word and len(name) >= 3 and "--plugin".startswith(name) else 1
    return None


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole parser, or with ``command`` (a key of :data:`COMMAND_MODULES`) one whose sub-commands are
    those of that command's module."""
    parser = Parser(prog="schedcast", description="GPU-cluster scheduling lab: replay traces under "
                    "scheduling policies, train and serve the models behind them, and score both.",
                    epilog="Errors are one line (exit 2: fix the input; exit 1: internal error). --debug or "
                    "SCHEDCAST_DEBUG=1 prints tracebacks.")
    parser.add_argument("--debug", action="store_true", help="show the traceback of any error")
    parser.add_argument("--plugin", action="append", default=[], metavar="MODULE",
                        help="import MODULE first (repeatable; also SCHEDCAST_PLUGINS=mod1,mod2): a module name (looked "
                        "for on the Python path, in the working folder, then beside the command's YAML spec) or a "
                        "path such as plugins/my_policies.py; it registers policies, placements, scores, trace "
                        "formats, ... (docs/plugins.md); experiment workers import it too")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    import importlib

    if command in COMMAND_MODULES:
        modules = [importlib.import_module(COMMAND_MODULES[command])]
    else:
        modules = [importlib.import_module(f"pipelines.{name}") for name in ("simulate", "info", "modelops", "server")]
        modules += _plugin_command_modules()
    for module in modules:
        module.add_parsers(sub)
    return parser


_PLUGIN_COMMANDS = ("pipelines.experiment", "pipelines.semantics", "pipelines.reproduce")


def _plugin_command_modules() -> list:
    """Command modules that add their own sub-commands (experiment; advise / track / diagnose); each
    keeps heavy imports inside its commands."""
    import importlib

    return [importlib.import_module(name) for name in _PLUGIN_COMMANDS]


def _load_plugins(argv: list[str]) -> None:
    """Import the ``--plugin`` modules of ``argv`` (global options, before the command) and those of
    SCHEDCAST_PLUGINS; ``--plugin`` ones are added to SCHEDCAST_PLUGINS so that worker processes started
    later (experiment cells on a Dask LocalCluster) import them too."""
    from features.plugins import load_env_plugins, load_plugins

    names, i = [], 0
    while i < len(argv) and argv[i].startswith("-"):
        if argv[i] == "--plugin" and i + 1 < len(argv):
            names.append(argv[i + 1])
            i += 2
            continue
        if argv[i].startswith("--plugin="):
            names.append(argv[i].partition("=")[2])
        i += 1
    load_env_plugins()
    load_plugins([_plugin_module(name, argv) for name in names], export=True)


def _plugin_module(name: str, argv: list[str]) -> str:
    """The module name of a ``--plugin`` value. A path (``plugins/my_policies.py``, ``../x/my_policies``)
    names a file or package folder: its parent folder goes on ``sys.path`` (and ``PYTHONPATH``, for the
    experiment workers) and its stem is the module. A module name found neither on the Python path nor in
    the working folder is looked for beside the YAML files the command names (an experiment spec's own
    folder)."""
    import importlib.util
    from pathlib import Path

    text = str(name).strip()
    if text.endswith(".py") or "/" in text or os.sep in text:
        path = Path(text).expanduser()
        target = path if path.suffix == ".py" or path.is_dir() else path.with_suffix(".py")
        if not target.exists():
            raise ValueError(f"plug-in {text!r}: no such file or package folder")
        _add_path(str(target.resolve().parent))
        return target.stem if target.suffix == ".py" else target.name
    top = text.split(".")[0]
    if not top.isidentifier() or importlib.util.find_spec(top) is not None or Path(top + ".py").exists() \
            or Path(top).is_dir():
        return text
    for word in argv:
        if word.endswith((".yaml", ".yml")) and Path(word).is_file():
            folder = Path(word).resolve().parent
            if (folder / f"{top}.py").is_file() or (folder / top).is_dir():
                _add_path(str(folder))
                break
    return text


def _add_path(folder: str) -> None:
    """``folder`` first on ``sys.path`` and on ``PYTHONPATH`` (worker processes inherit it)."""
    if folder not in sys.path:
        sys.path.insert(0, folder)
    parts = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if folder not in parts:
        os.environ["PYTHONPATH"] = os.pathsep.join([folder, *parts])


def _user_errors() -> tuple[type[BaseException], ...]:
    """Exceptions that mean "the input or the environment is wrong" (exit 2: a bad argument, file, trace,
    config or model; a full disk or a refused connection), imported lazily."""
    import yaml

    from features.jobtable import TraceError
    from sim.engine import SimulationError

    return (TraceError, SimulationError, ValueError, OSError, yaml.YAMLError)


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:  # before the parser is built, so that --help and the name lists show what the plug-ins register
        _load_plugins(argv)
    except ValueError as exc:
        print(f"schedcast: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    command = command_of(argv)
    if command == "simulate":
        from pipelines import simulate

        simulate.read_trace_ahead(argv)  # the trace is read while the parser imports the simulator
    args = build_parser(command).parse_args(argv)
    args.argv = argv  # recorded in result folders (meta.json "command")
    if _CONSOLE[0] and getattr(args, "fast_exit", False):  # a batch command in its own process: it exits when done
        from pipelines.memory_pages import keep_freed_memory
        from sim.kernel_compiled import skip_blas_probe

        keep_freed_memory()
        skip_blas_probe()  # one replay at a time in this process: numba loads without SciPy's BLAS probe
    debug = args.debug or os.environ.get("SCHEDCAST_DEBUG", "") not in ("", "0")
    try:
        if command in LIGHT_COMMANDS:  # no model store is read (models.registry imports MLflow's helpers)
            rc = args.func(args)
        else:
            from models.registry import trust_scope

            # --tracking-uri names the store this command trusts; --trust-local-models trusts any (models are
            # pickles)
            with trust_scope(getattr(args, "tracking_uri", None), bool(getattr(args, "trust_local_models", False))):
                rc = args.func(args)
        _FAST_EXIT[0] = bool(getattr(args, "fast_exit", False)) and rc == 0
        return rc
    except KeyboardInterrupt:
        print("schedcast: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `schedcast policies -v | head`: the reader left; say nothing more
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except Exception as exc:
        if debug:
            raise
        if isinstance(exc, _user_errors()):
            print(f"schedcast: error: {_one_line(exc)}", file=sys.stderr)
            return 2
        print(f"schedcast: internal error: {type(exc).__name__}: {_one_line(exc)} (please report it; "
              "--debug or SCHEDCAST_DEBUG=1 shows the traceback)", file=sys.stderr)
        return 1


def entry() -> NoReturn:
    """The `schedcast` console script: :func:`main`, then exit. Commands that hold nothing needing
    cleanup at exit (``fast_exit`` set by their parser: simulate, demo) end with ``os._exit`` once their
    output is flushed, skipping the interpreter's teardown of a large heap (~0.1 s of a 1 s command);
    tests call :func:`main`, which always returns. The process first asks for small pages where huge
    ones would stall on compaction: numpy's huge-page marking off, pyarrow on jemalloc (or the system
    allocator); such a batch command also keeps the memory it frees for reuse (pipelines.memory_pages) and
    loads numba without its SciPy-BLAS probe (sim.kernel_compiled.skip_blas_probe: it replays one policy at a
    time)."""
    from pipelines.memory_pages import avoid_huge_page_stalls

    argv = sys.argv[1:]
    avoid_huge_page_stalls(arrow=command_of(argv) not in LIGHT_COMMANDS)
    _CONSOLE[0] = True
    rc = main(argv)
    if _FAST_EXIT[0]:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except (OSError, ValueError):  # a closed pipe: the normal exit path reports nothing either
            pass
        else:
            os._exit(rc)
    sys.exit(rc)


_FAST_EXIT = [False]  # set by main() for a finished command whose parser allows it
_CONSOLE = [False]  # set by entry(): main() runs in the console script's own process


if __name__ == "__main__":
    entry()
