"""A command line that names its sub-command builds only that command's parsers (the simulator is not
imported to start `schedcast models`), and each of them is the very parser the whole CLI has."""
from __future__ import annotations

import subprocess
import sys

import pytest

from pipelines import cli


def _commands(parser) -> dict:
    return next(a for a in parser._actions if a.dest == "command").choices


def _shape(parser) -> list:
    """Every option string, destination, default and choice of a (sub-)parser, nested ones included."""
    out = []
    for action in parser._actions:
        out.append((tuple(action.option_strings), action.dest, repr(action.default),
                    tuple(action.choices) if isinstance(action.choices, (list, tuple)) else None))
        if hasattr(action, "choices") and isinstance(action.choices, dict):
            out += [(name, _shape(sub)) for name, sub in sorted(action.choices.items())]
    return out


def test_every_command_has_one_module_and_builds_the_same_parser_alone():
    whole = _commands(cli.build_parser())
    assert sorted(whole) == sorted(cli.COMMAND_MODULES)
    for command in cli.COMMAND_MODULES:
        alone = _commands(cli.build_parser(command))
        assert command in alone
        assert _shape(alone[command]) == _shape(whole[command]), command


@pytest.mark.parametrize("argv, command", [
    (["simulate", "--policy", "sjf"], "simulate"),
    (["--debug", "--plugin", "my_policies", "models"], "models"),
    (["--plugin=my_policies", "train", "duration"], "train"),
    (["--plug", "simulate", "train"], "train"),  # an abbreviated --plugin takes its value too
    (["--p", "simulate", "models"], "models"),
    (["--help"], None),
    ([], None),
])
def test_command_of_skips_the_global_options(argv, command):
    assert cli.command_of(argv) == command


def test_an_unknown_command_still_lists_every_command(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["simulat"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.count("\n") == 1
    assert "invalid choice: 'simulat'" in err
    for command in ("simulate", "models", "reproduce", "diagnose"):
        assert command in err


def test_models_help_does_not_import_the_simulator():
    code = ("import sys\nfrom pipelines.cli import main\ntry:\n    main(['models', '--help'])\n"
            "except SystemExit:\n    pass\nprint('sim.engine' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "False"
