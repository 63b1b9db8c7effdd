"""Traces -> canonical JobTable -> feature frames and series. Imports neither sim nor pipelines.

The package's names are imported on first use (PEP 562): ``import features.plugins`` or a SchedMate text
tool does not pay for pandas (features.jobtable) unless it reads a trace."""
from typing import TYPE_CHECKING

__all__ = ["JobTable", "LoadReport", "TraceError"]

if TYPE_CHECKING:  # pragma: no cover
    from features.jobtable import JobTable, LoadReport, TraceError


def __getattr__(name: str):
    if name in __all__:
        from features import jobtable

        return getattr(jobtable, name)
    raise AttributeError(f"module 'features' has no attribute {name!r}")
