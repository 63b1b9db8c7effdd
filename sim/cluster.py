"""Cluster configs (YAML, validated) and the built cluster: partitions (VCs) of nodes with GPUs.

A partition schedules independently (Helios / Lucid virtual clusters); a cluster without partitions is
one pool. Each node has a GPU model; a partition whose nodes have several models (node lists read with
``type_column``, or ``node_groups``) keeps one sub-pool per model, and a job runs on one model (the
one its trace names, if any; see sim.workload and sim.engine). Node lists and VC sizes can be read from CSV files in the data directory instead of being
copied into configs, so that the configs never hold subsets of the shared data.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator, model_validator

from features.paths import configs_dir, data_dir

#: Bounds checked before anything is built: a config with more (``nodes: 1e11``,
#: ``gpus_per_node: 99999999999``) would exhaust the memory building its node lists instead of failing.
MAX_NODES = 1_000_000
MAX_GPUS_PER_NODE = 1024


def check_nodes(nodes: int, where: str) -> int:
    """``nodes`` if within :data:`MAX_NODES`, else a one-line ValueError naming ``where``."""
    if nodes > MAX_NODES:
        raise ValueError(f"{where}: {nodes:,} nodes is more than the {MAX_NODES:,} a cluster may have")
    return nodes


class NodesFromCsv(BaseModel):
    """One node per CSV row; GPUs per node from a column. Rows with zero GPUs are skipped."""

    model_config = ConfigDict(extra="forbid")
    file: str
    gpus_column: str
    type_column: str | None = None


class PartitionsFromCsv(BaseModel):
    """One partition (VC) per CSV row with a node count; every node has gpus_per_node GPUs."""

    model_config = ConfigDict(extra="forbid")
    file: str
    name_column: str | int = 0
    nodes_column: str | int = 1


class NodesFromSummary(BaseModel):
    """Node count = ceil(GPUs / gpus_per_node) for one cluster row of a summary CSV."""

    model_config = ConfigDict(extra="forbid")
    file: str
    cluster: str
    id_column: str = "id"
    gpus_column: str = "gpu_num"


def _whole_number(value):
    """A YAML boolean is not a count (``nodes: true`` used to be read as 1 node)."""
    if isinstance(value, bool):
        raise ValueError(f"expected a whole number, got {str(value).lower()}")
    return value


class NodeGroup(BaseModel):
    """``count`` nodes of ``gpus_per_node`` GPUs of one GPU model (heterogeneous clusters inline)."""

    model_config = ConfigDict(extra="forbid")
    count: int = Field(ge=1, le=MAX_NODES)
    gpus_per_node: int = Field(ge=1, le=MAX_GPUS_PER_NODE)
    gpu_type: str

    _counts = field_validator("count", "gpus_per_node", mode="before")(_whole_number)


class PartitionConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    nodes: int = Field(ge=1, le=MAX_NODES)
    gpus_per_node: int | None = Field(None, ge=1, le=MAX_GPUS_PER_NODE)

    _counts = field_validator("nodes", "gpus_per_node", mode="before")(_whole_number)


class ClusterConfig(BaseModel):
    """A modelled GPU cluster. Exactly one way of giving nodes must be used."""

    model_config = ConfigDict(extra="forbid")
    name: str
    description: str = ""
    gpu_type: str = "unknown"
    gpus_per_node: int = Field(8, ge=1, le=MAX_GPUS_PER_NODE)
    nodes: int | None = Field(None, ge=1, le=MAX_NODES)
    partitions: list[PartitionConfig] | None = None
    partitions_from_csv: PartitionsFromCsv | None = None
    nodes_from_csv: NodesFromCsv | None = None
    nodes_from_summary: NodesFromSummary | None = None
    node_groups: list[NodeGroup] | None = None
    intra_node_bandwidth_gbps: float = Field(300.0, gt=0, description="NVLink-class, GB/s")
    inter_node_bandwidth_gbps: float = Field(12.5, gt=0, description="100 Gb/s Ethernet/IB, GB/s")
    unknown_org: Literal["reject", "largest"] | str = Field(
        "reject", description="jobs whose org names no partition: reject (counted), send to the largest "
                              "partition, or name a partition")

    #: The folder of the YAML file the config was read from (its CSV files may live there).
    _folder: Path | None = PrivateAttr(default=None)

    _counts = field_validator("nodes", "gpus_per_node", mode="before")(_whole_number)

    @model_validator(mode="after")
    def _one_source(self) -> "ClusterConfig":
        given = [x for x in (self.nodes, self.partitions, self.partitions_from_csv, self.nodes_from_csv,
                             self.nodes_from_summary, self.node_groups) if x is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of nodes, partitions, partitions_from_csv, nodes_from_csv, "
                             "nodes_from_summary, node_groups")
        total = sum(p.nodes for p in self.partitions or []) + sum(g.count for g in self.node_groups or [])
        if total > MAX_NODES:
            raise ValueError(f"{total:,} nodes in all is more than the {MAX_NODES:,} a cluster may have")
        return self


@dataclass
class Partition:
    name: str
    capacities: list[int]  # GPUs per node
    gpu_types: list[str]

    @property
    def gpus(self) -> int:
        return sum(self.capacities)


@dataclass
class Cluster:
    name: str
    partitions: list[Partition]
    gpu_type: str = "unknown"
    intra_node_bandwidth_gbps: float = 300.0
    inter_node_bandwidth_gbps: float = 12.5
    unknown_org: str = "reject"
    index: dict[str, int] = field(init=False)

    def __post_init__(self) -> None:
        self.index = {p.name: i for i, p in enumerate(self.partitions)}

    @property
    def partitioned(self) -> bool:
        return len(self.partitions) > 1

    @property
    def gpus(self) -> int:
        return sum(p.gpus for p in self.partitions)

    @property
    def nodes(self) -> int:
        return sum(len(p.capacities) for p in self.partitions)

    def describe(self) -> str:
        kinds = ", ".join(sorted({t for p in self.partitions for t in p.gpu_types}))
        return (f"{self.name}: {self.nodes} nodes, {self.gpus} GPUs ({kinds}), "
                f"{len(self.partitions)} partition(s)")


def csv_source(config: ClusterConfig, data: str | Path | None = None) -> tuple[str, Path] | None:
    """(field, resolved path) of the CSV file a config reads, or None. A relative ``file`` is looked up in
    the data directory, then in the config's own folder; the path (".." removed) must lie inside one of
    those two: ``nodes_from_csv: {file: /etc/passwd}`` or ``../../x`` is refused, naming the file and the
    field, before anything is read."""
    for name in ("partitions_from_csv", "nodes_from_csv", "nodes_from_summary"):
        src = getattr(config, name)
        if src is not None:
            break
    else:
        return None
    field = f"{name}.file"
    import os

    roots = [Path(os.path.abspath(data_dir(data)))]
    if config._folder is not None:
        roots.append(Path(os.path.abspath(config._folder)))
    given = Path(src.file)
    candidates = [given] if given.is_absolute() else [root / given for root in roots]
    where = " or ".join(str(r) for r in roots)
    for candidate in candidates:
        real = Path(os.path.abspath(candidate))  # '..' removed; links the user made in their data dir are kept
        if not any(real == root or root in real.parents for root in roots):
            raise ValueError(f"cluster {config.name!r}: field {field!r}: {src.file!r} is outside the data directory "
                             f"and the config's folder ({where}); give a CSV file inside them")
        if real.exists():
            if not real.is_file():
                raise ValueError(f"cluster {config.name!r}: field {field!r}: {src.file!r} is not a regular file")
            return field, real
    raise ValueError(f"cluster {config.name!r}: field {field!r}: {src.file!r} does not exist in {where} "
                     "(set --data-dir)")


def _read_csv(config: ClusterConfig, data: str | Path | None):
    import pandas as pd

    field, path = csv_source(config, data)
    try:
        return pd.read_csv(path)
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        raise ValueError(f"cluster {config.name!r}: field {field!r}: {path} is not a readable CSV file ({reason})") \
            from None


def cluster_input_files(name_or_path: str | Path, data: str | Path | None = None) -> list[Path]:
    """The files a cluster reads: its YAML config and the CSV it names (for content hashes of inputs)."""
    config = load_cluster_config(name_or_path)
    files = [Path(config._folder) / Path(name_or_path).name if Path(name_or_path).suffix
             else configs_dir() / "clusters" / f"{name_or_path}.yaml"]
    src = csv_source(config, data)
    return files + ([src[1]] if src else [])


def _column(frame, col: str | int):
    return frame.iloc[:, col] if isinstance(col, int) else frame[col]


def build_cluster(config: ClusterConfig, data: str | Path | None = None) -> Cluster:
    """Turn a validated config into partitions of nodes, reading referenced CSVs from the data dir."""
    per_node, gpu_type = config.gpus_per_node, config.gpu_type
    parts: list[Partition]
    if config.nodes is not None:
        parts = [Partition("default", [per_node] * config.nodes, [gpu_type] * config.nodes)]
    elif config.partitions is not None:
        parts = [Partition(p.name, [p.gpus_per_node or per_node] * p.nodes, [gpu_type] * p.nodes)
                 for p in config.partitions]
    elif config.partitions_from_csv is not None:
        src = config.partitions_from_csv
        frame = _read_csv(config, data)
        names, counts = _column(frame, src.name_column), _column(frame, src.nodes_column)
        check_nodes(int(sum(max(int(c), 0) for c in counts)), f"cluster {config.name!r} ({src.file})")
        parts = [Partition(str(n), [per_node] * int(c), [gpu_type] * int(c)) for n, c in zip(names, counts)
                 if int(c) > 0]
    elif config.node_groups is not None:
        caps = [(g.gpus_per_node, g.gpu_type) for g in config.node_groups for _ in range(g.count)]
        parts = [Partition("default", [c for c, _ in caps], [t for _, t in caps])]
    elif config.nodes_from_csv is not None:
        src = config.nodes_from_csv
        frame = _read_csv(config, data)
        gpus = frame[src.gpus_column].fillna(0).astype(int)
        types = frame[src.type_column].astype(str) if src.type_column else [gpu_type] * len(frame)
        caps = [(int(g), str(t)) for g, t in zip(gpus, types) if int(g) > 0]
        check_nodes(len(caps), f"cluster {config.name!r} ({src.file})")
        if any(c > MAX_GPUS_PER_NODE for c, _ in caps):
            raise ValueError(f"cluster {config.name!r} ({src.file}): a node with more than {MAX_GPUS_PER_NODE} GPUs")
        parts = [Partition("default", [c for c, _ in caps], [t for _, t in caps])]
    else:
        src = config.nodes_from_summary
        frame = _read_csv(config, data)
        row = frame[frame[src.id_column].astype(str) == src.cluster]
        if row.empty:
            raise ValueError(f"cluster {src.cluster!r} not found in {src.file}")
        gpus = float(row[src.gpus_column].iloc[0])
        if not math.isfinite(gpus) or gpus < 0:
            raise ValueError(f"cluster {src.cluster!r} in {src.file}: bad GPU count {gpus!r}")
        n = check_nodes(math.ceil(gpus / per_node), f"cluster {config.name!r} ({src.file})")
        parts = [Partition("default", [per_node] * n, [gpu_type] * n)]
    if not parts or not any(p.capacities for p in parts):
        raise ValueError(f"cluster {config.name!r} has no GPU nodes")
    return Cluster(config.name, parts, gpu_type, config.intra_node_bandwidth_gbps,
                   config.inter_node_bandwidth_gbps, config.unknown_org)


def cluster_names() -> list[str]:
    return sorted(p.stem for p in (configs_dir() / "clusters").glob("*.yaml"))


def load_cluster_config(name_or_path: str | Path) -> ClusterConfig:
    """A built-in name (configs/clusters/<name>.yaml) or a path to a YAML file.

    Every problem with the file is a ValueError of one line naming the file (and the field): missing
    file, YAML syntax error (with its line), YAML tags (``!!python/...``: only plain YAML is read,
    with yaml.safe_load), a document that is not a mapping, or a field that fails validation."""
    path = Path(name_or_path)
    if not path.suffix:
        path = configs_dir() / "clusters" / f"{name_or_path}.yaml"
        if not path.exists():
            raise ValueError(f"unknown cluster {name_or_path!r}; built-in: {', '.join(cluster_names())}")
    if not path.is_file():
        raise ValueError(f"cluster config {path}: not found" if not path.exists()
                         else f"cluster config {path}: not a file")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cluster config {path}: cannot be read ({exc.__class__.__name__}: {exc})") from None
    from features.yamlio import DuplicateKeyError, load_yaml

    try:
        data = load_yaml(text)
    except DuplicateKeyError as exc:
        raise ValueError(f"cluster config {path} (line {exc.problem_mark.line + 1}): {exc.problem}") from None
    except yaml.constructor.ConstructorError as exc:
        mark = exc.problem_mark
        line = f" (line {mark.line + 1})" if mark is not None else ""
        raise ValueError(f"cluster config {path}{line}: YAML tags such as !!python/... are not allowed; "
                         "write plain values") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ValueError(f"cluster config {path}: YAML syntax error at{line or ' an unknown place'}: {problem}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ValueError(f"cluster config {path}: expected a mapping of fields (name: ..., nodes: ...), "
                         f"got a {type(data).__name__}")
    try:
        config = ClusterConfig(**{str(k): v for k, v in data.items()})
        config._folder = path.parent
        return config
    except ValidationError as exc:
        errors = exc.errors()
        first = errors[0]
        field_name = ".".join(str(x) for x in first.get("loc", ())) or "(config)"
        more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
        msg = str(first.get("msg", "invalid")).replace("\n", " ")
        raise ValueError(f"cluster config {path}: field {field_name!r}: {msg}{more}") from None


def load_cluster(name_or_path: str | Path, data: str | Path | None = None) -> Cluster:
    return build_cluster(load_cluster_config(name_or_path), data)
