"""Where configs and shared data live. The data directory is the user's choice; tests use ../shared/data."""
from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


def configs_dir() -> Path:
    """The YAML configs shipped with schedcast (override with SCHEDCAST_CONFIGS)."""
    return Path(os.environ.get("SCHEDCAST_CONFIGS", REPO_ROOT / "configs"))


def data_dir(explicit: str | Path | None = None) -> Path:
    """Resolve the data directory: explicit argument, then $SCHEDCAST_DATA, then ../shared/data."""
    if explicit is not None:
        return Path(explicit)
    if "SCHEDCAST_DATA" in os.environ:
        return Path(os.environ["SCHEDCAST_DATA"])
    return REPO_ROOT.parent / "shared" / "data"


def resolve_data_path(path: str | Path, data: str | Path | None = None) -> Path:
    """A relative path in a config is relative to the data directory; absolute paths are kept."""
    path = Path(path)
    return path if path.is_absolute() else data_dir(data) / path
