"""`schedcast policies`, `clusters` and `data`: what the lab knows about (registry, configs, traces)."""
from __future__ import annotations

import argparse


def _parameters(info) -> list[tuple[str, str, object, str]]:
    """(name, type, default, description) rows of a policy's typed parameters (none if the registry
    cannot say)."""
    rows = getattr(info, "parameters", None)
    return list(rows()) if callable(rows) else [(k, type(v).__name__, v, "") for k, v in info.defaults.items()]


def cmd_policies(args: argparse.Namespace) -> int:
    from sim.policies import POLICIES

    names = args.names or sorted(POLICIES)
    unknown = [n for n in names if n not in POLICIES]
    if unknown:
        raise ValueError(f"unknown policy {unknown[0]!r}; known: {', '.join(sorted(POLICIES))}")
    verbose = args.verbose or bool(args.names)
    width = max(map(len, names))
    for name in names:
        info = POLICIES[name]
        flags = ("P" if info.preemptive else "-") + ("M" if info.uses_predictions else "-")
        print(f"{name:<{width}}  {flags}  {info.summary}")
        if verbose:
            pad = " " * (width + 6)
            print(f"{pad}{info.citation}")
            rows = _parameters(info)
            if rows:
                w = max(len(r[0]) for r in rows)
                for pname, ptype, default, desc in rows:
                    print(f"{pad}  {pname:<{w}}  {ptype} = {default!r}" + (f"  {desc}" if desc else ""))
            else:
                print(f"{pad}  (no parameters)")
    print("\nflags: P preemptive, M uses a duration predictor (--predictor). Parameters: "
          "--policy 'name:key=value,...', e.g. periodic-srtf:interval=120" + ("" if verbose else
          "; `schedcast policies -v` or `schedcast policies NAME` lists them"))
    return 0


def cmd_clusters(args: argparse.Namespace) -> int:
    from sim.cluster import cluster_names, load_cluster, load_cluster_config

    for name in cluster_names():
        cfg = load_cluster_config(name)
        try:
            desc = load_cluster(name, args.data_dir).describe()
        except (FileNotFoundError, ValueError) as exc:
            desc = f"{name}: unavailable ({exc})"
        print(f"{desc}\n    {cfg.description}")
    return 0


def cmd_data_check(args: argparse.Namespace) -> int:
    import json

    from features.traces import load_trace

    table = load_trace(args.path, args.format, cache=False)  # a check parses the file itself
    if args.json:
        print(json.dumps(table.report.as_dict(), indent=2))
    else:
        print(table.report.render())
        f = table.frame
        if len(f):
            print(f"jobs:       {len(f):,}; span {f['submit_time'].max() / 86400:.1f} days; "
                  f"mean duration {f['duration'].mean() / 3600:.2f} h; "
                  f"GPUs/job mean {f['num_gpus'].astype(float).mean():.2f}, max {f['num_gpus'].max()}")
    return 0


def cmd_data_formats(args: argparse.Namespace) -> int:
    from features.traces import FORMATS

    for name, (_, desc) in FORMATS.items():
        print(f"{name:<14} {desc}")
    print(f"{'synthetic':<14} seeded generator: `schedcast simulate --synthetic PRESET` (presets in "
          "configs/workloads/)")
    return 0


def cmd_data_cache(args: argparse.Namespace) -> int:
    from features.traces import cache

    folder = cache.cache_dir()
    if folder is None:
        print("trace cache: off (SCHEDCAST_TRACE_CACHE=0)")
        return 0
    if args.clear:
        print(f"trace cache: removed {cache.clear()} entries from {folder}")
        return 0
    entries = cache.entries()  # the cache's own entries only (its subfolder and name pattern)
    size = sum(e.stat().st_size for e in entries)
    values = sum(1 for e in entries if "-" in e.stem)  # value_key entries: "<kind>-<digest>"
    print(f"trace cache: {folder}: {len(entries) - values} parsed traces and {values} computed values "
          f"(SchedMate's job texts and rates), {size / 2**20:.1f} MiB (at most "
          f"{cache.MAX_ENTRIES} kept; --clear empties it; SCHEDCAST_TRACE_CACHE=0 turns it off)")
    return 0


def add_parsers(sub) -> None:
    """Register `policies`, `clusters` and `data`."""
    p = sub.add_parser("policies", help="list every registered policy (flags, summary; -v: citation and "
                       "typed parameters with defaults)")
    p.add_argument("names", nargs="*", metavar="NAME", help="show only these policies, with their parameters")
    p.add_argument("-v", "--verbose", action="store_true", help="also print the citation and every parameter "
                   "(name, type, default)")
    p.set_defaults(func=cmd_policies)

    p = sub.add_parser("clusters", help="list built-in cluster configs (nodes, GPUs, partitions)")
    p.add_argument("--data-dir", help="shared data directory for configs that read CSV files (default "
                   "$SCHEDCAST_DATA or ../shared/data)")
    p.set_defaults(func=cmd_clusters)

    data = sub.add_parser("data", help="inspect traces").add_subparsers(dest="data_command", required=True)
    p = data.add_parser("check", help="load a trace and print its load report")
    p.add_argument("path", help="trace file")
    p.add_argument("--format", help="trace format (default: guessed from the name; see `schedcast data formats`)")
    p.add_argument("--json", action="store_true", help="print the load report as JSON")
    p.set_defaults(func=cmd_data_check)
    p = data.add_parser("formats", help="list trace formats")
    p.set_defaults(func=cmd_data_formats)
    p = data.add_parser("cache", help="where parsed traces are cached, how many, how large (--clear)")
    p.add_argument("--clear", action="store_true", help="remove every cached trace")
    p.set_defaults(func=cmd_data_cache)
