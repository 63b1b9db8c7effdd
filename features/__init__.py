"""Traces -> canonical JobTable -> feature frames and series. Imports neither sim nor pipelines."""
from features.jobtable import JobTable, LoadReport, TraceError

__all__ = ["JobTable", "LoadReport", "TraceError"]
