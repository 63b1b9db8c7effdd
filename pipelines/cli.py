"""The `schedcast` command line: a thin parser over the command modules (pipelines.simulate, .info,
.modelops, .server). Heavy libraries are imported inside the commands that need them."""
from __future__ import annotations

import argparse
import sys
from typing import Sequence

from pipelines import info, modelops, server, simulate
from pipelines.simulate import DEFAULT_POLICIES  # noqa: F401 - public name


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="schedcast", description="GPU-cluster scheduling lab: replay "
                                     "traces under scheduling policies and score them.")
    sub = parser.add_subparsers(dest="command", required=True)
    for module in (simulate, info, modelops, server):
        module.add_parsers(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from features.jobtable import TraceError
    from sim.engine import SimulationError

    try:
        return args.func(args)
    except (TraceError, SimulationError, ValueError, FileNotFoundError) as exc:
        print(f"schedcast: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("schedcast: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
