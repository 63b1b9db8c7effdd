"""The table of registered model versions (`schedcast models`): version, aliases, algorithm, primary
metric beside the best baseline's, data and date, read from a sqlite store with plain SQL, from an http(s)
server's REST API or through the MLflow client. Re-exported by :mod:`models.registry`."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from models.store import check_tracking_uri, resolve_tracking_uri, sqlite_path

MODEL_COLUMNS = ("model", "version", "aliases", "algorithm", "primary", "data", "created")


def list_models(tracking_uri: str | None = None) -> list[dict[str, Any]]:
    """One row per registered model version (newest first per model): version, aliases, algorithm,
    primary metric (with the best baseline's), data and date. A sqlite store is read with plain SQL
    (read-only; no mlflow import: `schedcast models` answers in well under 2 s), an http(s) server through
    its REST API, anything else through the MLflow client."""
    uri = check_tracking_uri(resolve_tracking_uri(tracking_uri))
    db = sqlite_path(uri)
    if db is not None:
        return _list_sqlite(db)
    if uri.startswith(("http://", "https://")):
        return _list_rest(uri)
    return _list_client(uri)


def _row(name: str, version: str, aliases: list[str], tags: dict[str, str], created_ms: int | None,
         description: str | None) -> dict[str, Any]:
    import datetime as dt

    primary = tags.get("primary_metric")
    value = tags.get(f"metric.{primary}") if primary else None
    base = tags.get("best_baseline")
    prim = f"{primary} {value}" if primary and value else ""
    if prim and base:
        prim += f" (baseline {base})"
        if loses_to_baseline(value, base):
            prim += " WORSE THAN BASELINE"
    created = (dt.datetime.fromtimestamp(created_ms / 1000, dt.timezone.utc).strftime("%Y-%m-%d %H:%M")
               if created_ms else "")
    return {"model": name, "version": str(version), "aliases": ",".join(sorted(aliases)),
            "algorithm": tags.get("algorithm", ""), "primary": prim, "data": tags.get("data", ""),
            "created": created, "description": description or ""}


def loses_to_baseline(value: str | float | None, best_baseline: str | None) -> bool:
    """Whether a version's primary metric (lower is better for every task) is worse than its best
    baseline's, from the version tags ``metric.<primary>`` and ``best_baseline`` ("<name> <value>")."""
    try:
        return float(value) > float(str(best_baseline).split()[-1])  # type: ignore[arg-type]
    except (TypeError, ValueError, IndexError):
        return False


def _list_sqlite(db: Path) -> list[dict[str, Any]]:
    import sqlite3

    if not db.exists():
        return []
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        tables = {r[0] for r in con.execute("select name from sqlite_master where type='table'")}
        if "model_versions" not in tables:
            return []
        aliases: dict[tuple[str, str], list[str]] = {}
        if "registered_model_aliases" in tables:
            for name, alias, version in con.execute("select name, alias, version from registered_model_aliases"):
                aliases.setdefault((name, str(version)), []).append(alias)
        tags: dict[tuple[str, str], dict[str, str]] = {}
        for name, version, key, value in con.execute("select name, version, key, value from model_version_tags"):
            tags.setdefault((name, str(version)), {})[key] = value
        rows = []
        for name, version, created, desc, stage in con.execute(
                "select name, version, creation_time, description, current_stage from model_versions "
                "order by name, version desc"):
            if stage == "Deleted_Internal":
                continue
            key = (name, str(version))
            rows.append(_row(name, str(version), aliases.get(key, []), tags.get(key, {}), created, desc))
        return rows
    finally:
        con.close()


def _list_rest(uri: str) -> list[dict[str, Any]]:
    import urllib.parse
    import urllib.request

    def get(path: str, **query) -> dict:
        url = f"{uri.rstrip('/')}/api/2.0/mlflow/{path}?{urllib.parse.urlencode(query)}"
        with urllib.request.urlopen(url, timeout=10) as r:
            return json.loads(r.read())

    rows = []
    for rm in get("registered-models/search", max_results=1000).get("registered_models", []):
        by_version: dict[str, list[str]] = {}
        for a in rm.get("aliases", []):
            by_version.setdefault(str(a["version"]), []).append(a["alias"])
        versions = get("model-versions/search", filter=f"name='{rm['name']}'", max_results=1000)
        for mv in sorted(versions.get("model_versions", []), key=lambda v: -int(v["version"])):
            tags = {t["key"]: t["value"] for t in mv.get("tags", [])}
            rows.append(_row(rm["name"], mv["version"], by_version.get(str(mv["version"]), []), tags,
                             int(mv.get("creation_timestamp", 0)) or None, mv.get("description")))
    return rows


def _list_client(uri: str) -> list[dict[str, Any]]:
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=uri, registry_uri=uri)
    rows = []
    for rm in client.search_registered_models():
        by_version: dict[str, list[str]] = {}
        for a, v in (rm.aliases or {}).items():
            by_version.setdefault(str(v), []).append(a)
        for mv in sorted(client.search_model_versions(f"name='{rm.name}'"), key=lambda v: -int(v.version)):
            rows.append(_row(rm.name, str(mv.version), by_version.get(str(mv.version), []), dict(mv.tags or {}),
                             mv.creation_timestamp, mv.description))
    return rows
