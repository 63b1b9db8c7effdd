"""SchedMate's Failure Handler: find the root cause of a failed job in its log and classify it.

Locator: the log is cut into chunks; a binary search finds the first chunk of the failure state (a
chunk window that holds failure evidence, where every later window does too, as a cascade of
tracebacks, NCCL watchdog timeouts, SIGTERMs and the torch-elastic summary follows a root cause to
the end of the log); evidence followed by a quiet window is an error the job survived, and the search
goes on after it; the root cause is the first error line there (a traceback's exception line, not
its header). Only O(log chunks) chunks are read, which is what makes an LLM back-end affordable.
The baseline reads only the tail of the log, as the paper's comparison does (Table 4).

Classifier: ordered rules on the root line (and the few lines after it) give the type
(infrastructure / framework / script) and the component (GPU, NVLink, network, NCCL, node, storage;
memory, dataloader, model; import, key, type, syntax, file); a line no rule knows goes to the nearest
embedding prototype. An optional LLM back-end (models.schedmate.llm) may answer instead; its answer
is validated and a bad one falls back to these rules.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Sequence

KINDS = ("infrastructure", "framework", "script")
INFRA_COMPONENTS = ("GPU", "NVLink", "network", "NCCL", "node", "storage")

_BENIGN = re.compile(
    r"error_rate|_err\b|top1_err|err_bound|UserWarning|warnings\.warn|\[W socket\.cpp|failed to bind|"
    r"retrying|retried .* \(transient|Exception ignored in|Warning: 0NCCL|DeprecationWarning|heartbeat ok|"
    r"NCCL INFO|\bINFO\b.*checkpoint", re.I)

_FAILURE = re.compile(
    r"Traceback \(most recent call last\)|NVRM: Xid|NCCL WARN|Watchdog caught collective|\[E ProcessGroupNCCL|"
    r"CUDA error|out of memory|killed by signal|DUE TO NODE FAILURE|NodeNotReady|lost heartbeat|node unreachable|"
    r"link is down|Input/output error|Stale file handle|No space left|file write failed|ChildFailedError|"
    r"closing signal SIGTERM|terminate called|Segmentation fault|[Bb]us error|\bFAILED\b|exitcode|"
    r"Root Cause \(first observed|srun: error|slurmstepd: error|Killed\b|core dumped|[Ff]atal error|\bFATAL\b|"
    r"\bCRITICAL\b|kernel panic")
# a Python exception line: "torch.OutOfMemoryError: ...", "[rank3]: KeyError: 'x'" (case-sensitive, no backtracking)
_EXC = re.compile(r"^\s*(?:\[rank\d+\]:\s*)?(?:[a-z_][a-z0-9_]*\.)*[A-Z][A-Za-z0-9_]*(?:Error|Exception|Interrupt)\b")
_BENIGN_HINT = re.compile(r"err|warn|retr|Exception ignored|NCCL INFO|heartbeat|INFO", re.I)


# a traceback's lines: header, frames, code, caret
_TB_FRAME = re.compile(r'^\s*(?:\[rank\d+\]:\s*)?(?:\s+File "|\s{2,}\S|\s*\^+\s*$|Traceback \(most recent)')
_EXC_LINE = re.compile(r"^\s*(?:\[rank\d+\]:\s*)?(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception|Interrupt|Exit)\b")


# every _FAILURE alternative contains one of these (lower case): a cheap test before the regex
_FAILURE_KEYS = ("traceback", "xid", "nccl warn", "watchdog", "processgroupnccl", "cuda error", "out of memory",
                 "killed", "node failure", "nodenotready", "heartbeat", "unreachable", "link is down",
                 "input/output", "stale file", "no space", "write failed", "childfailed", "sigterm", "terminate called",
                 "segmentation", "bus error", "failed", "exitcode", "root cause", "srun: error", "slurmstepd",
                 "core dumped", "fatal", "critical", "kernel panic")


def is_failure_line(line: str) -> bool:
    """Failure evidence (an error, not a warning or a metric named 'error_rate')."""
    if not _EXC.match(line):
        low = line.lower()
        if not any(k in low for k in _FAILURE_KEYS) or not _FAILURE.search(line):
            return False
    return not (_BENIGN_HINT.search(line) and _BENIGN.search(line))


_XID = re.compile(r"Xid \([^)]*\):\s*(\d+)")
#: Xid codes that usually mean the application faulted (NVIDIA's Xid catalogue): decided by context
APP_XIDS = frozenset({13, 31, 43, 45})

# (pattern, cause, kind, component); first match wins
RULES: tuple[tuple[str, str, str, str], ...] = (
    (r"Xid[^\n]*\b74\b|NVLink", "nvlink", "infrastructure", "NVLink"),
    (r"NVRM: Xid|fallen off the bus|ECC error|double bit error|\bDBE\b|GPU stopped processing|GSP", "gpu_xid",
     "infrastructure", "GPU"),
    (r"NET/IB|ibv_|mlx5|InfiniBand|link is down|IB link|Connection (?:closed|reset) by peer|No route to host|"
     r"Network is unreachable", "ib_error", "infrastructure", "network"),
    (r"illegal memory access|an illegal address|misaligned address", "illegal_memory_access", "framework", "model"),
    (r"Watchdog caught collective operation timeout|NCCL timeout|collective operation timeout", "nccl_timeout",
     "infrastructure", "NCCL"),
    (r"NODE FAILURE|NodeNotReady|lost heartbeat|node unreachable|node .* lost|host is down|waiting for clients|"
     r"clients joined|RendezvousTimeoutError|RendezvousClosedError", "node_lost",
     "infrastructure", "node"),
    (r"Errno 5\b|Input/output error|Stale file handle|Errno 116|No space left|Errno 28|file write failed|"
     r"Disk quota exceeded|Read-only file system", "storage", "infrastructure", "storage"),
    (r"out of memory|OutOfMemoryError", "cuda_oom", "framework", "memory"),
    (r"DataLoader worker .* killed|killed by signal|bus error .* worker|insufficient shared memory", "dataloader_killed",
     "framework", "dataloader"),
    (r"shapes cannot be multiplied|size mismatch|must match the size|Expected .* dimension|shape '\[|"
     r"batch_size \(\d+\) to match target", "shape_error",
     "framework", "model"),
    (r"ModuleNotFoundError|ImportError|No module named", "import_error", "script", "import"),
    (r"\bKeyError\b", "key_error", "script", "key"),
    (r"\bTypeError\b|\bAttributeError\b|\bNameError\b|\bValueError\b", "type_error", "script", "type"),
    (r"SyntaxError|IndentationError|was never closed", "syntax_error", "script", "syntax"),
    (r"FileNotFoundError|Errno 2\b|No such file or directory", "file_not_found", "script", "file"),
    (r"ProcessGroupNCCL|NCCL error|DistBackendError|NCCL communicator|NCCL WARN", "nccl_timeout", "infrastructure", "NCCL"),
    (r"CUDA error", "gpu_xid", "infrastructure", "GPU"),
)
_RULES = [(re.compile(p, re.I), c, k, comp) for p, c, k, comp in RULES]

# prototypes for lines no rule knows (embedding nearest neighbour)
PROTOTYPES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "gpu_xid": ("infrastructure", "GPU", ("GPU hardware fault detected by the driver", "the GPU stopped responding")),
    "nvlink": ("infrastructure", "NVLink", ("NVLink fabric error between GPUs",)),
    "ib_error": ("infrastructure", "network", ("network link down, RDMA completion error", "connection reset by peer")),
    "nccl_timeout": ("infrastructure", "NCCL", ("collective communication timed out", "all reduce hang timeout")),
    "node_lost": ("infrastructure", "node", ("node failure, host lost, job step cancelled", "process closing signal SIGTERM",
                                             "child process failed, exit code, signal received by PID")),
    "storage": ("infrastructure", "storage", ("filesystem input output error while writing checkpoint", "disk full")),
    "cuda_oom": ("framework", "memory", ("ran out of GPU memory while allocating a tensor",)),
    "dataloader_killed": ("framework", "dataloader", ("data loading worker process was killed",)),
    "shape_error": ("framework", "model", ("tensor shape mismatch in a layer",)),
    "import_error": ("script", "import", ("python package missing, cannot import module",)),
    "key_error": ("script", "key", ("missing key in a dictionary or batch",)),
    "type_error": ("script", "type", ("wrong argument type or unexpected keyword argument",)),
    "syntax_error": ("script", "syntax", ("invalid python syntax in the script",)),
    "file_not_found": ("script", "file", ("input file or path does not exist",)),
}


@dataclass(frozen=True)
class Diagnosis:
    kind: str | None          # infrastructure / framework / script (None: no failure found)
    component: str | None
    line_index: int | None    # index of the root-cause line in the log
    line: str | None
    cause: str | None = None
    method: str = "locator"   # locator / tail / llm
    chunks_read: int = 0
    lines_read: int = 0
    note: str = ""

    @property
    def infrastructure(self) -> bool:
        return self.kind == "infrastructure"

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class Classifier:
    """Rules first, then the nearest embedding prototype (hash embedder by default: no torch)."""

    embedder: str = "hash"
    _proto: object = field(default=None, repr=False)

    def classify(self, line: str, context: Sequence[str] = ()) -> tuple[str, str, str, str]:
        """(cause, kind, component, how) of a root-cause line; `context` (the lines after it) breaks
        ties such as a generic CUDA error right after a driver Xid."""
        text = line
        xid = _XID.search(line)
        if xid and int(xid.group(1)) in APP_XIDS:
            # Xid 13/31/43/45 are usually the application's own fault (an illegal access in a kernel):
            # the lines after it decide; without a hint it stays a GPU problem
            for extra in context[:6]:
                if re.search(r"illegal memory access|illegal address|misaligned address", extra, re.I):
                    return "illegal_memory_access", "framework", "model", "rule (Xid + context)"
            return "gpu_xid", "infrastructure", "GPU", "rule (Xid)"
        for rx, cause, kind, comp in _RULES:
            if rx.search(text):
                return cause, kind, comp, "rule"
        for extra in context[:6]:
            for rx, cause, kind, comp in _RULES:
                if rx.search(extra):
                    return cause, kind, comp, "rule (context)"
        return (*self._nearest(line), "prototype")

    def _nearest(self, line: str) -> tuple[str, str, str]:
        import numpy as np

        from models.schedmate.embed import get_embedder

        emb = get_embedder(self.embedder)
        if self._proto is None:
            names, texts = [], []
            for cause, (_, _, protos) in PROTOTYPES.items():
                for t in protos:
                    names.append(cause)
                    texts.append(t)
            self._proto = (names, emb.encode(texts))
        names, mat = self._proto
        q = emb.encode(re.sub(r"\d+", " ", line))
        cause = names[int(np.argmax(mat @ q))]
        kind, comp, _ = PROTOTYPES[cause]
        return cause, kind, comp


def _root_in(lines: Sequence[str], start: int, stop: int) -> int | None:
    """Index of the first failure line in [start, stop); a traceback header or frame is followed to
    its exception line (the one that states the error)."""
    for i in range(start, min(stop, len(lines))):
        if not is_failure_line(lines[i]):
            continue
        if "Traceback (most recent call last)" in lines[i]:
            for j in range(i + 1, min(i + 80, len(lines))):
                if _EXC_LINE.match(lines[j]) and not _TB_FRAME.match(lines[j]):
                    return j
                if not _TB_FRAME.match(lines[j]):
                    return j if is_failure_line(lines[j]) else i
            return i
        return i
    return None


class FailureHandler:
    """diagnose(lines) -> Diagnosis: locate the root cause, classify it.

    chunk: lines per chunk (default: 1/64 of the log, at least 16); window: chunks in a failure-state
    probe (a probe holds evidence if any of its chunks does: bridges the quiet gap while other ranks
    still log normally); tail: lines the tail-only baseline reads; llm: an optional back-end."""

    def __init__(self, chunk: int | None = None, window: int = 3, tail: int = 50, embedder: str = "hash",
                 llm=None) -> None:
        self.chunk = chunk
        self.window = max(1, int(window))
        self.tail = int(tail)
        self.classifier = Classifier(embedder=embedder)
        self.llm = llm

    def _chunk_size(self, n: int) -> int:
        return self.chunk or max(16, -(-n // 64))

    def locate(self, lines: Sequence[str]) -> tuple[int | None, int]:
        """(root line index or None, chunks read) by binary search over chunks."""
        n = len(lines)
        if n == 0:
            return None, 0
        size = self._chunk_size(n)
        n_chunks = -(-n // size)
        cache: dict[int, bool] = {}

        def has(c: int) -> bool:
            if c not in cache:
                cache[c] = any(is_failure_line(x) for x in lines[c * size:(c + 1) * size])
            return cache[c]

        def state(c: int) -> bool:  # failure evidence in chunks [c, c + window)
            return any(has(j) for j in range(c, min(c + self.window, n_chunks)))

        last = n_chunks - 1
        if not state(max(0, last - self.window + 1)):
            return None, len(cache)
        start = 0
        while True:
            lo, hi = start, last  # the first c >= start with state(c) True (assumed monotone)
            while lo < hi:
                mid = (lo + hi) // 2
                if state(mid):
                    hi = mid
                else:
                    lo = mid + 1
            # persistence check: a failure state lasts to the end of the log; evidence followed by a
            # quiet window is an error the job survived (a handled exception): search on after it
            after = lo + self.window
            if after <= last and not state(after):
                start = after + 1
                if start > last:
                    return None, len(cache)
                continue
            break
        # the window may start before the evidence: first chunk in it that has evidence, then walk
        # back over directly preceding chunks with evidence (the failure state may have started there)
        c = next(j for j in range(lo, min(lo + self.window, n_chunks)) if has(j))
        while c > 0 and has(c - 1):
            c -= 1
        root = _root_in(lines, c * size, n)
        return root, len(cache)

    def diagnose(self, lines: Sequence[str], tail_only: bool = False, method: str | None = None) -> Diagnosis:
        """Root cause and its type/component; Diagnosis(kind=None, ...) when no failure is found.

        method: "locator" (default: binary search over chunks), "tail" (only the last `tail` lines,
        the paper's baseline; same as tail_only=True) or "scan" (the first failure line of the whole
        log, read linearly)."""
        method = method or ("tail" if tail_only else "locator")
        if method not in ("locator", "tail", "scan"):
            raise ValueError(f"unknown method {method!r}; known: locator, tail, scan")
        lines = [str(x).rstrip("\n") for x in lines]
        if method == "tail":
            start = max(0, len(lines) - self.tail)
            root = _root_in(lines, start, len(lines))
            chunks, read = 0, len(lines) - start
        elif method == "scan":
            root = _root_in(lines, 0, len(lines))
            chunks, read = 0, (root + 1 if root is not None else len(lines))
        else:
            root, chunks = self.locate(lines)
            read = chunks * self._chunk_size(max(len(lines), 1))
        if root is None:
            return Diagnosis(None, None, None, None, None, method, chunks, read, "no failure evidence found")
        ctx = lines[root + 1:root + 7]
        cause, kind, comp, how = self.classifier.classify(lines[root], ctx)
        diag = Diagnosis(kind, comp, root, lines[root], cause, method, chunks, read, how)
        if self.llm is not None:
            lo, hi = (max(0, len(lines) - self.tail), len(lines)) if method == "tail" else \
                (max(0, root - 20), min(len(lines), root + 20))
            diag = self.llm.refine(lines, lo, hi, diag)
        return diag
