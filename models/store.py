"""The tracking store: where it is, whether it can be used, how it is locked and configured, and which
stores (and local model paths) the user trusts.

Split out of :mod:`models.registry` (which re-exports every name here) so that each file holds one
concern: this module knows stores and trust; ``registry`` logs, registers and loads models;
``versions`` lists registered versions; ``provenance`` fingerprints data and code. See the registry's
docstring for the trust model and the concurrency rules these functions implement.
"""
from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import Iterator

#: The MLflow experiment of each kind of run schedcast logs, and what the UI says about it.
EXPERIMENT = "schedcast-training"
EXPERIMENTS = {
    "training": EXPERIMENT,
    "simulations": "schedcast-simulations",
    "sweeps": "schedcast-sweeps",
    "ledgers": "schedcast-reproduce",
}
EXPERIMENT_DESCRIPTIONS = {
    EXPERIMENT: "Model training (`schedcast train`, `retrain`): one run per trained model with its data lineage, "
                "metrics beside the baselines' (unit in each name) and the registered version; retraining "
                "decisions are runs named retrain-TASK.",
    "schedcast-simulations": "Replays (`schedcast simulate --track`): a parent run per command, one nested run per "
                             "policy with its parameters, summary metrics (unit in each name), result files and the "
                             "models that drove it. A run's duration is the replay's.",
    "schedcast-sweeps": "Experiment specs (`schedcast experiment run --track`): a parent run per invocation, one "
                        "nested run per cell (workload x policy x predictor x seed); the leaderboard is the parent's "
                        "artifact. A cell's duration is the cell's.",
    "schedcast-reproduce": "Claims ledgers (`schedcast reproduce PAPER --track`): one run per ledger, a metric per "
                           "claim and a tag per verdict.",
}
#: Environment variable that trusts models addressed by a local path or a direct artifact URI.
TRUST_ENV = "SCHEDCAST_TRUST_LOCAL_MODELS"
#: Seconds a process waits for a store or alias lock before giving up (exit 1 from the CLI).
LOCK_TIMEOUT_S = 120.0


class ModelNotFoundError(ValueError):
    """The model URI names nothing in the configured store (the CLI prints one line, exit 2)."""


class UntrustedModelError(ValueError):
    """A model addressed by a local path / direct URI without the user's explicit trust (exit 2)."""


class LockTimeout(RuntimeError):
    """Another process held the store or alias lock for longer than LOCK_TIMEOUT_S."""


class TrackingStoreError(ValueError):
    """The tracking store cannot be used: an unknown URI scheme, a file that is not a database, a full
    disk or a read-only store (the CLI prints one line, exit 2)."""


#: URI schemes MLflow keeps runs and registered models in (``postgresql+psycopg2`` counts as postgresql).
STORE_SCHEMES = ("sqlite", "http", "https", "file", "postgresql", "mysql", "mssql", "databricks", "databricks-uc",
                 "uc")
_SQLITE_MAGIC = b"SQLite format 3\x00"
#: Largest model version a store can hold (a 64-bit integer): bigger numbers name nothing.
MAX_VERSION = 2**63 - 1


def check_tracking_uri(uri: str) -> str:
    """``uri`` if a tracking store can live there, else TrackingStoreError naming why: an unknown scheme
    (``bogus://``), or a sqlite URI at a folder or at a file that is not an SQLite database (MLflow would
    fail deep inside SQLAlchemy). A new or empty sqlite file is fine: the store is created there."""
    scheme = uri.split("://", 1)[0].split("+", 1)[0].lower() if "://" in uri else ""
    if scheme and scheme not in STORE_SCHEMES:
        raise TrackingStoreError(f"tracking URI {uri}: unsupported scheme {scheme!r} (use sqlite:///PATH, "
                                 "http(s)://HOST:PORT, file:PATH, postgresql://, mysql:// or mssql://)")
    db = sqlite_path(uri)
    if db is not None and db.exists():
        if db.is_dir():
            raise TrackingStoreError(f"tracking URI {uri}: {db} is a folder; give a database file, e.g. "
                                     f"sqlite:///{db / 'mlflow.db'}")
        if not db.is_file():
            raise TrackingStoreError(f"tracking URI {uri}: {db} is not a regular file")
        try:
            with open(db, "rb") as fh:
                head = fh.read(len(_SQLITE_MAGIC))
        except OSError as exc:
            raise TrackingStoreError(f"tracking URI {uri}: cannot read {db}: {exc.strerror or exc}") from None
        if head and head != _SQLITE_MAGIC:
            raise TrackingStoreError(f"tracking URI {uri}: {db} is not an SQLite database; give a new file name "
                                     "or an MLflow database")
    return uri


#: Store failures the user can fix (disk, permissions, a damaged database), as SQLite / the OS word them.
_STORE_FAULTS = ("database or disk is full", "no space left on device", "disk quota exceeded",
                 "attempt to write a readonly database", "read-only file system", "unable to open database file",
                 "file is not a database", "database disk image is malformed")


def store_fault(exc: BaseException) -> str | None:
    """The user-fixable store problem behind ``exc`` (anywhere in its cause chain), or None."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        text = str(cur).lower()
        for fault in _STORE_FAULTS:
            if fault in text:
                return fault
        if isinstance(cur, OSError) and cur.errno in (28, 122, 30):  # ENOSPC, EDQUOT, EROFS
            return cur.strerror or str(cur)
        cur = cur.__cause__ or cur.__context__
    return None


def default_tracking_uri(root: str | Path | None = None) -> str:
    root = Path(root or os.getcwd()) / "mlruns"
    return f"sqlite:///{root / 'mlflow.db'}"


def resolve_tracking_uri(tracking_uri: str | None = None) -> str:
    """The store a command uses: the explicit URI, else $MLFLOW_TRACKING_URI, else ./mlruns/mlflow.db."""
    return tracking_uri or os.environ.get("MLFLOW_TRACKING_URI") or default_tracking_uri()


def sqlite_path(uri: str) -> Path | None:
    """The database file of a ``sqlite:///`` URI (None for other stores)."""
    return Path(uri[len("sqlite:///"):]) if uri.startswith("sqlite:///") else None


@contextlib.contextmanager
def _file_lock(path: Path, timeout: float = LOCK_TIMEOUT_S) -> Iterator[None]:
    """An exclusive advisory lock on ``path`` (created if needed), held for the block."""
    import fcntl

    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise LockTimeout(f"{path} is locked by another process for more than {timeout:.0f} s") from None
                time.sleep(0.05)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _quiet_mlflow() -> None:
    """MLflow's INFO lines (table creation, input-example validation) and warnings are not for users;
    ``--verbose`` (pipelines.modelops) turns them back on."""
    import logging

    if os.environ.get("SCHEDCAST_VERBOSE") != "1":
        logging.getLogger("mlflow").setLevel(logging.ERROR)
        logging.getLogger("alembic").setLevel(logging.ERROR)


#: MLflow 3's experiment-kind tag and the value for classic model development: the UI then opens an
#: experiment on its runs (untagged, MLflow 3 may infer GenAI and open traces / "Detect Issues").
EXPERIMENT_KIND_TAG, EXPERIMENT_KIND = "mlflow.experimentKind", "custom_model_development"


#: MLflow's tag for an experiment's description (shown on its page in the UI).
DESCRIPTION_TAG = "mlflow.note.content"


def experiment_tags(name: str) -> dict[str, str]:
    """The tags a new schedcast experiment is created with: its kind for the UI and its description."""
    tags = {EXPERIMENT_KIND_TAG: EXPERIMENT_KIND}
    if name in EXPERIMENT_DESCRIPTIONS:
        tags[DESCRIPTION_TAG] = EXPERIMENT_DESCRIPTIONS[name]
    return tags


def mark_model_development(client, experiment_id: str, tags: dict | None = None, name: str | None = None) -> None:
    """Tag an experiment as model development unless it already carries an experiment kind, and give a
    schedcast experiment (``name``) its description unless it has one."""
    if EXPERIMENT_KIND_TAG not in (tags or {}):
        client.set_experiment_tag(experiment_id, EXPERIMENT_KIND_TAG, EXPERIMENT_KIND)
    if name in EXPERIMENT_DESCRIPTIONS and DESCRIPTION_TAG not in (tags or {}):
        client.set_experiment_tag(experiment_id, DESCRIPTION_TAG, EXPERIMENT_DESCRIPTIONS[name])


@contextlib.contextmanager
def store_errors(uri: str | None = None) -> Iterator[None]:
    """A user-fixable store failure in the block (full disk, read-only, not a database) as one-line
    TrackingStoreError; anything else passes unchanged."""
    try:
        yield
    except TrackingStoreError:
        raise
    except Exception as exc:  # noqa: BLE001 - MLflow / SQLAlchemy wrap these in their own types
        fault = store_fault(exc)
        if fault is None:
            raise
        if uri is None:
            import mlflow

            uri = mlflow.get_tracking_uri()
        raise TrackingStoreError(f"tracking store {uri}: {fault}") from None


def configure(tracking_uri: str | None = None) -> str:
    """Point MLflow at ``tracking_uri`` (or $MLFLOW_TRACKING_URI, or the local sqlite default) and make
    sure the experiment exists (artifacts next to the sqlite file for the local default). A new sqlite
    store is created under a file lock, so concurrent first commands do not race on its tables."""
    import warnings

    import mlflow

    _quiet_mlflow()
    uri = check_tracking_uri(resolve_tracking_uri(tracking_uri))
    db = sqlite_path(uri)
    mlflow.set_tracking_uri(uri)
    mlflow.set_registry_uri(uri)
    lock = _file_lock(db.with_name(db.name + ".lock")) if db is not None else contextlib.nullcontext()
    with lock, warnings.catch_warnings(), store_errors(uri):
        warnings.filterwarnings("ignore", module="sqlalchemy.*")
        warnings.filterwarnings("ignore", message=".*noload.*")
        exp = mlflow.get_experiment_by_name(EXPERIMENT)  # first connection: creates the tables
        if exp is None:
            location = (db.parent / "artifacts").resolve().as_uri() if db is not None else None
            mlflow.create_experiment(EXPERIMENT, artifact_location=location, tags=experiment_tags(EXPERIMENT))
        else:
            mark_model_development(mlflow.MlflowClient(), exp.experiment_id, exp.tags, EXPERIMENT)
        mlflow.MlflowClient().search_registered_models(max_results=1)  # the registry store, same lock
    mlflow.set_experiment(EXPERIMENT)
    return uri



def is_store_uri(uri: str) -> bool:
    """Whether ``uri`` is resolved in the configured tracking store (models:/..., runs:/...)."""
    return uri.startswith(("models:/", "runs:/"))


def trust_local_from_env() -> bool:
    return _TRUST[0] or os.environ.get(TRUST_ENV, "").strip().lower() in ("1", "true", "yes", "on")


# -- which stores are "configured" -------------------------------------------------------------------
#: Stores the user named for this process (``--tracking-uri``), on top of $MLFLOW_TRACKING_URI and the
#: ./mlruns default; and whether the user passed --trust-local-models (see :func:`trust_scope`).
_ALLOWED: set[str] = set()
_TRUST = [False]
#: Inside a command (a trust_scope), $MLFLOW_TRACKING_URI as it was when the command started: MLflow's
#: own set_tracking_uri writes that variable, so reading it later would trust whatever was set since.
_SCOPED = [False]


def _norm_store(uri: str) -> str:
    """A store URI in one spelling: sqlite / file paths resolved, trailing slashes dropped."""
    text = str(uri).strip()
    for scheme in ("sqlite:///", "file://"):
        if text.startswith(scheme):
            return scheme + str(Path(text[len(scheme):] or "/").resolve())
    if "://" not in text and text:
        return "file://" + str(Path(text).resolve())
    return text.rstrip("/")


def configured_stores() -> set[str]:
    """The stores the user configured: --tracking-uri of this command, $MLFLOW_TRACKING_URI, ./mlruns."""
    env = None if _SCOPED[0] else os.environ.get("MLFLOW_TRACKING_URI")
    return {_norm_store(u) for u in (*_ALLOWED, env, default_tracking_uri()) if u}


@contextlib.contextmanager
def trust_scope(tracking_uri: str | None = None, trust_local: bool = False) -> Iterator[None]:
    """For the block: ``tracking_uri`` counts as configured (the command's --tracking-uri) and
    ``trust_local`` trusts other stores and local models (--trust-local-models). A worker process that
    runs cells of several commands gets each command's settings, and they do not outlive it."""
    saved = (set(_ALLOWED), _TRUST[0], _SCOPED[0])
    if not _SCOPED[0] and os.environ.get("MLFLOW_TRACKING_URI"):
        _ALLOWED.add(os.environ["MLFLOW_TRACKING_URI"])
    if tracking_uri:
        _ALLOWED.add(tracking_uri)
    _TRUST[0] = _TRUST[0] or bool(trust_local)
    _SCOPED[0] = True
    try:
        yield
    finally:
        _ALLOWED.clear()
        _ALLOWED.update(saved[0])
        _TRUST[0], _SCOPED[0] = saved[1], saved[2]


def check_store(uri: str | None, what: str) -> None:
    """Refuse (UntrustedModelError, one line, exit 2) a tracking store the user did not configure:
    models in it are pickles, and a parameter or spec value that names a store elsewhere
    (``tracking_uri=sqlite:////elsewhere/evil.db``) would run whatever that store holds."""
    if not uri or trust_local_from_env() or _norm_store(uri) in configured_stores():
        return
    raise UntrustedModelError(
        f"refusing {what} {uri}: it is not the tracking store you configured (--tracking-uri, "
        f"$MLFLOW_TRACKING_URI or ./mlruns), and a model loaded from it runs its code; pass "
        f"--tracking-uri {uri}, or --trust-local-models / {TRUST_ENV}=1 if you trust it")
