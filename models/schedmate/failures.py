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
from bisect import bisect_left
from collections import deque
from dataclasses import asdict, dataclass, field, replace
from typing import Iterable, Sequence

KINDS = ("infrastructure", "framework", "script")
INFRA_COMPONENTS = ("GPU", "NVLink", "network", "NCCL", "node", "storage")
#: components per kind (the LLM back-end's answers are validated against this table)
COMPONENTS = {
    "infrastructure": INFRA_COMPONENTS,
    "framework": ("memory", "host memory", "dataloader", "model", "library"),
    "script": ("import", "key", "type", "syntax", "file", "data", "environment", "config"),
}
UNKNOWN = "unknown"

from models.schedmate.loglines import (  # noqa: E402,F401  (the line rules; re-exported)
    _BENIGN, _BENIGN_HINT, _EXC, _EXC_LINE, _FAILURE, _FAILURE_KEYS, _FAILURE_LOW, _PREFIX, _TB_FRAME, ERROR_WORD,
    HEDGE, is_failure_line, strip_prefix,
)


_XID = re.compile(r"Xid \([^)]*\):\s*(\d+)")
#: Xid codes that usually mean the application faulted (NVIDIA's Xid catalogue): decided by context
APP_XIDS = frozenset({13, 31, 43, 45})

# (pattern, cause, kind, component); first match wins. Order matters: the specific software causes
# that share words with hardware or network failures ("CUDA error: device-side assert", "NCCL error:
# invalid usage", "No space left on device" under /dev/shm) come before the generic rules.
RULES: tuple[tuple[str, str, str, str], ...] = (
    # Windows' paging file (its virtual memory) exhausted while a process maps a library: host memory, in
    # English or as the localised system message (zh / de / fr / ja)
    (r"WinError 1455|paging file is too small|页面文件太小|頁面檔案太小|Auslagerungsdatei ist zu klein|"
     r"fichier de pagination est insuffisant|ページング ファイルが小さすぎ", "host_oom", "framework", "host memory"),
    (r"device-side assert(?!ions)|Assertion `[^`]*(?:t >= 0|n_classes|index|srcIndex|target)[^`]*` failed|"
     r"CUBLAS_STATUS_NOT_INITIALIZED.*(?:label|target)", "device_assert", "script", "data"),
    (r"no kernel image is available|is not compatible with the current PyTorch installation|"
     r"CUDA driver version is insufficient|NVIDIA driver on your system is too old|forward compatibility was attempted|"
     r"invalid value for --gpu-architecture|undefined symbol|"
     r"cannot open shared object file|GLIBC(?:XX)?_[\d.]+' not found|version `GLIBC|"
     r"(?:mmcv|mmengine|mmdet|transformers|torch|numpy|deepspeed)\S*\s*(?:==|>=|<=|version)[^\n]*"
     r"(?:incompatible|required|is not supported|please install)|"
     r"incompatible with this version|VersionConflict|requires \S+ version|"
     # a library's note that the name the script used is gone in the installed version
     r"was a deprecated alias|deprecated alias for|(?:has been|was) removed in (?:version |v)?\d|"
     r"(?:has been|was) removed in (?:NumPy|numpy|PyTorch|torch|transformers)", "environment", "script", "environment"),
    (r"Error while creating shared memory segment|include/shm\.h|/dev/shm/nccl-|nccl-shm-", "nccl_shm", "script",
     "environment"),
    (r"ncclInvalidUsage|invalid usage \(run with NCCL_DEBUG|ncclInvalidArgument|Duplicate GPU detected",
     "nccl_usage", "script", "config"),
    (r"Address already in use|EADDRINUSE|errno: 98|failed to listen on any local network address",
     "port_in_use", "script", "config"),
    (r"/dev/shm|shm_open|insufficient shared memory|shared memory \(shm\)|unable to (?:write to|allocate) "
     r"(?:file|shared memory)", "shm", "framework", "dataloader"),
    (r"DataLoader worker \(pid[^)]*\) is killed by signal: (?:Killed|Terminated)", "host_oom", "framework", "host memory"),
    (r"DataLoader worker \(pid[^)]*\) is killed|DataLoader worker .* (?:killed|exited unexpectedly)|"
     r"(?:segmentation fault|bus error) .*worker|worker.* (?:segmentation fault|bus error)", "dataloader_killed",
     "framework", "dataloader"),
    (r"oom[-_ ]?kill|Out of memory: Kill|Killed process \d+|Memory cgroup out of memory|signal 9\b|SIGKILL|"
     r"exitcode\s*:\s*-9\b|exit status -9|^\s*(?:Killed|已杀死|已殺死|Getötet|Processus arrêté|Matado)\s*$|host memory|cannot allocate memory|"
     # SIGKILL as a launcher reports it (a negative signal number, or 128 + 9), bash's job message, Python's and
     # numpy's own out-of-memory errors
     r"(?:error|exit|return) ?code:? -9\b|exit(?:ed with)? code:? 137\b|exit status 137\b|: \d+ Killed\s+\S|"
     r"^\s*(?:[\w.]+\.)?MemoryError\b|Unable to allocate [\d.]+ \w?i?B for an array|"
     r"DefaultCPUAllocator: can't allocate|std::bad_alloc", "host_oom", "framework", "host memory"),
    (r"Xid[^\n]*\b74\b|NVLink", "nvlink", "infrastructure", "NVLink"),
    (r"NVRM: Xid|fallen off the bus|ECC error|Uncorrected \(Fatal\)|Surprise Down|double bit error|\bDBE\b|GPU stopped processing|GSP|"
     r"uncorrectable ECC|ECC_UNCORRECTABLE|GPU is lost|unspecified launch failure|CUDA error: unknown error|"
     r"RmInitAdapter failed|rm_init_adapter failed|Cannot attach gpu|Unable to determine the device handle for GPU|"
     r"Driver/library version mismatch|Failed to initialize NVML|busy or unavailable|"
     r"CUDA_ERROR_(?:NO_DEVICE|ECC_UNCORRECTABLE|LAUNCH_FAILED)|"
     r"NVML_ERROR_(?:LIB_RM_VERSION_MISMATCH|GPU_IS_LOST|DRIVER_NOT_LOADED|RESET_REQUIRED|UNKNOWN)",
     "gpu_xid", "infrastructure", "GPU"),
    (r"NET/IB|NET/OFI\b.*(?:error|fail)|socketProgress\w*: Call to \w+ .*failed|ibv_|mlx5|InfiniBand|link is down|IB link|Connection (?:closed|reset) by peer|No route to host|"
     r"Network is unreachable|ncclRemoteError", "ib_error", "infrastructure", "network"),
    (r"illegal memory access|an illegal address|misaligned address", "illegal_memory_access", "framework", "model"),
    (r"Watchdog caught collective operation timeout|NCCL timeout|collective operation timeout|got stuck|"
     r"Heartbeat monitor timed out|ProcessGroupNCCL's watchdog", "nccl_timeout", "infrastructure", "NCCL"),
    (r"can't resolve|Name does not resolve|Name or service not known|Temporary failure in name resolution",
     "dns", "infrastructure", "network"),
    # a model or data hub that cannot be reached (the node has no route out): the network, as the log says;
    # a job set to run offline prints the same words (the thread, not the log, tells them apart)
    (r"couldn't connect to '?https?://|LocalEntryNotFoundError|Connection error, and we cannot find the requested files|"
     r"Max retries exceeded with url|Failed to establish a new connection|ConnectTimeoutError|ReadTimeoutError",
     "hub_unreachable", "infrastructure", "network"),
    (r"NODE FAILURE|NodeNotReady|lost heartbeat|node unreachable|node .* lost|host is down|waiting for clients|"
     r"clients joined|RendezvousTimeoutError|RendezvousClosedError|RendezvousConnectionError|"
     r"client socket has timed out|connection to the C10d store has failed", "node_lost",
     "infrastructure", "node"),
    (r"Errno 5\b|Input/output error|Stale file handle|Errno 116|No space left|Errno 28|file write failed|write error|"
     r"Disk quota exceeded|Read-only file system", "storage", "infrastructure", "storage"),
    (r"out of memory|OutOfMemoryError|CUBLAS_STATUS_ALLOC_FAILED", "cuda_oom", "framework", "memory"),
    (r"CUDNN_STATUS_|cuDNN error|CUBLAS_STATUS_|cublas\w*\(.*\) failed", "cuda_library", "framework", "library"),
    (r"\bnan\b[^\n]*\bloss\b|\bloss\b[^\n]*\b(?:nan|inf)\b|Loss became infinite|non-finite loss|FloatingPointError|"
     r"returned nan values|anomaly", "nan_loss", "framework", "model"),
    (r"DataLoader worker .* killed|killed by signal|bus error .* worker|Unexpected bus error", "dataloader_killed",
     "framework", "dataloader"),
    # the script's outputs and labels disagree in length (the threads trace it to the user's labels,
    # reshapes or collate): the user's data, not a faulty layer of the framework
    (r"Expected input batch_size \(\d+\) to match target batch_size", "label_mismatch", "script", "data"),
    # the data the job was pointed at holds nothing (a wrong path or file suffix): the user's data
    (r"num_samples should be a positive integer value, but got num_samples=0|Found 0 (?:images|files|samples)\b|"
     r"\b(?:dataset|training set) is empty\b", "empty_dataset", "script", "data"),
    (r"shapes cannot be multiplied|size mismatch|must match the size|Expected .* dimension|shape '\[|"
     r"Expected all tensors to be on the same device", "shape_error",
     "framework", "model"),
    (r"Error\(s\) in loading state_dict|Missing key\(s\) in state_dict|Unexpected key\(s\)", "state_dict", "script",
     "key"),
    (r"ModuleNotFoundError|ImportError|No module named", "import_error", "script", "import"),
    (r"\bKeyError\b", "key_error", "script", "key"),
    (r"\bIndexError\b.*(?:index out of range in self|target \d+ is out of bounds)", "device_assert", "script", "data"),
    (r"\bTypeError\b|\bAttributeError\b|\bNameError\b|\bValueError\b|\bIndexError\b|\bZeroDivisionError\b|"
     r"\bRecursionError\b|\bNotImplementedError\b|\bUnboundLocalError\b", "type_error", "script", "type"),
    (r"\bAssertionError\b", "assertion", "script", "config"),
    (r"SyntaxError|IndentationError|was never closed", "syntax_error", "script", "syntax"),
    (r"FileNotFoundError|Errno 2\b|No such file or directory|IsADirectoryError|PermissionError", "file_not_found",
     "script", "file"),
    (r"ProcessGroupNCCL|NCCL error|NCCL failure|DistBackendError|NCCL communicator|NCCL WARN|ncclInternalError|"
     r"ncclUnhandledCudaError|ncclSystemError|unhandled system error", "nccl_timeout", "infrastructure", "NCCL"),
    # the C library's heap checks (a double free, an invalid pointer freed) abort the process: like a bare
    # segfault, most often binaries built against another library version (the environment)
    (r"Attempt to free invalid pointer|free\(\): invalid|double free or corruption|munmap_chunk\(\)|"
     r"corrupted size vs\.? prev_size|malloc\(\): (?:memory corruption|corrupted)|stack smashing detected",
     "heap_corruption", "script", "environment"),
    # a bare segfault of the main process: most often binaries built for another CUDA / torch (the
    # environment); a worker's segfault is the dataloader's (rule above)
    (r"Segmentation fault|SIGSEGV|core dumped|Illegal instruction", "segfault", "script", "environment"),
    (r"CUDA error", "cuda_error", "framework", "model"),
)
_RULES = [(re.compile(p, re.I), c, k, comp) for p, c, k, comp in RULES]

# a collective that timed out while this job was still preparing data (no training step logged yet):
# one rank's preprocessing outran the timeout, a setting of the job, not a fault of the network
_PREP = re.compile(r"tokeniz|Running tokenizer|\bMap\b.*(?:%|examples)|Grouping texts|preprocess|Generating \w+ split|"
                   r"Loading checkpoint shards|Downloading|building (?:the )?(?:index|dataset)|caching|"
                   r"Filter\b.*examples", re.I)
_WAIT_TIMEOUT = re.compile(r"Watchdog caught collective operation timeout|collective operation timeout|NCCL timeout|"
                           r"Timed out|timeout", re.I)

# words too generic to count as lexical support for a prototype
_STOP = frozenset("error errors failed failure fatal exception the a an of to in on for and or with by at is was "
                  "from not no while this that process received raised".split())

# prototypes for lines no rule knows (embedding nearest neighbour, kept only with lexical support)
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


def _dedent(lines: list[str]) -> list[str]:
    """A log pasted as one indented block (every non-blank line starts with the same spaces) read as the
    log it is: the indentation is the paste's, not a traceback's frame indentation."""
    indents = [len(x) - len(x.lstrip(" ")) for x in lines if x.strip()]
    cut = min(indents) if indents else 0
    return [x[cut:] for x in lines] if cut else lines


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]{3,}", text.lower()) if w not in _STOP}


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
    """Rules first, then the nearest embedding prototype (hash embedder by default: no torch) — kept
    only when the line shares a content word with that prototype; otherwise the answer is "unknown"
    (a label without lexical support is a guess, and a wrong infrastructure label cordons a node)."""

    embedder: str = "hash"
    _proto: object = field(default=None, repr=False)

    def classify(self, line: str, context: Sequence[str] = (), before: Sequence[str] = ()) -> tuple[str, str, str, str]:
        """(cause, kind, component, how) of a root-cause line; `context` (the lines after it) breaks
        ties such as a generic CUDA error right after a driver Xid; `before` (the lines before it)
        tells a collective timeout during data preparation from one during training."""
        text = strip_prefix(line)
        xid = _XID.search(text)
        if xid and int(xid.group(1)) in APP_XIDS:
            # Xid 13/31/43/45 are usually the application's own fault (an illegal access in a kernel):
            # the lines after it decide; without a hint it stays a GPU problem
            for extra in context[:6]:
                if re.search(r"illegal memory access|illegal address|misaligned address", extra, re.I):
                    return "illegal_memory_access", "framework", "model", "rule (Xid + context)"
            return "gpu_xid", "infrastructure", "GPU", "rule (Xid)"
        for rx, cause, kind, comp in _RULES:
            if rx.search(text) or rx.search(line):
                if cause == "nccl_timeout" and before and self._preparing(before):
                    return "nccl_timeout_prep", "script", "config", "rule (timeout during data preparation)"
                if cause == "type_error" and _API_MISMATCH.search(text) and _in_library(before):
                    # a call into an installed package with an argument it does not know: the script was
                    # written for another version of that package
                    return "environment", "script", "environment", "rule (library call signature)"
                if cause in ("cuda_error", "segfault", "nccl_timeout", "type_error", "assertion"):
                    # a generic line: a more specific rule on the next lines (the `what():` of a
                    # c10::Error, a CUDA error's detail line) names the cause better
                    for extra in context[:6]:
                        for rx2, c2, k2, comp2 in _RULES[:_GENERIC_FROM]:
                            if rx2.search(strip_prefix(extra)):
                                return c2, k2, comp2, "rule (context)"
                return cause, kind, comp, "rule"
        for extra in context[:6]:
            for rx, cause, kind, comp in _RULES:
                if rx.search(strip_prefix(extra)):
                    return cause, kind, comp, "rule (context)"
        got = self._nearest(text)
        if got is not None:
            return (*got, "prototype")
        return UNKNOWN, UNKNOWN, UNKNOWN, "no rule and no prototype with lexical support"

    @staticmethod
    def _preparing(before: Sequence[str]) -> bool:
        from models.schedmate.tracker import parse_progress

        prep = False
        for x in before:
            if parse_progress(strip_prefix(x)) is not None and not _PREP.search(x):
                return False  # training had started: the timeout is not the data preparation's
            prep = prep or bool(_PREP.search(x))
        return prep

    def _nearest(self, line: str) -> tuple[str, str, str] | None:
        import numpy as np

        from models.schedmate.embed import get_embedder

        emb = get_embedder(self.embedder)
        if self._proto is None:
            names, texts = [], []
            for cause, (_, _, protos) in PROTOTYPES.items():
                for t in protos:
                    names.append(cause)
                    texts.append(t)
            self._proto = (names, texts, emb.encode(texts))
        names, texts, mat = self._proto
        q = emb.encode(re.sub(r"\d+", " ", line))
        sims = mat @ q
        words = _words(line)
        for i in np.argsort(-sims)[:3]:
            if words & _words(texts[int(i)]):
                cause = names[int(i)]
                kind, comp, _ = PROTOTYPES[cause]
                return cause, kind, comp
        return None


_API_MISMATCH = re.compile(r"got an unexpected keyword argument|takes \d+ positional arguments? but \d+ (?:were|was) given")
_FRAME_FILE = re.compile(r'File "([^"]+)", line \d+')


def _in_library(before: Sequence[str]) -> bool:
    """The traceback's innermost frame (the last `File "..."` line above the exception) is inside an installed
    package (site-packages / dist-packages), not the job's own code."""
    for x in reversed(before[-8:]):
        m = _FRAME_FILE.search(x)
        if m:
            return "site-packages" in m.group(1) or "dist-packages" in m.group(1)
    return False


# rules before this index are specific; from it on, generic ones a context line may refine
_GENERIC_FROM = next(i for i, r in enumerate(RULES) if r[1] == "illegal_memory_access") + 1


class _Memo:
    """is_failure_line per line index, each line judged once (the locator revisits lines)."""

    def __init__(self, lines: Sequence[str]) -> None:
        self.lines = lines
        self.flags = bytearray(len(lines))  # 0 unknown, 1 no, 2 yes

    def __call__(self, i: int) -> bool:
        f = self.flags[i]
        if f == 0:
            f = self.flags[i] = 2 if is_failure_line(self.lines[i]) else 1
        return f == 2


def _root_in(lines: Sequence[str], start: int, stop: int, fail=None) -> int | None:
    """Index of the first failure line in [start, stop); a traceback header or frame is followed to
    its exception line (the one that states the error; the header itself is never the answer)."""
    fail = fail or (lambda i: is_failure_line(lines[i]))
    for i in range(start, min(stop, len(lines))):
        if not fail(i):
            continue
        return _follow(lines, i)
    return None


def _follow(lines: Sequence[str], i: int, limit: int = 120) -> int:
    """From a failure line to the line that states the error: a traceback header (or a rank's copy
    of it) leads to its exception line, skipping frames and other ranks' interleaved lines; an
    indented continuation of a kernel message (NVRM: ...) goes back to the message's first line."""
    while i > 0 and lines[i][:1].isspace() and "NVRM:" in lines[i] and "NVRM:" in lines[i - 1]:
        i -= 1
    body = strip_prefix(lines[i])
    if "ChildFailedError" in body:
        return _elastic_root(lines, i)
    if (j := _react(lines, i, body)) != i:
        return j
    if _PYTEST_FAILED.match(body) and i + 1 < len(lines) and _EXC_LINE.match(strip_prefix(lines[i + 1])):
        return i + 1  # a test runner's summary line: the next line states the error
    if "Traceback (most recent call last)" not in body:
        if HEDGE.search(body):  # a line guessing at causes: the specific error stated soon after it
            j = next((j for j in range(i + 1, min(i + 6, len(lines))) if not HEDGE.search(lines[j]) and
                      (is_failure_line(lines[j]) or ERROR_WORD.search(lines[j]))), None)
            if j is not None:
                return j
        return _message(lines, i)
    fallback = None
    for j in range(i + 1, min(i + limit, len(lines))):
        b = strip_prefix(lines[j])
        if _EXC_LINE.match(b) and not _TB_FRAME.match(b):
            if "ChildFailedError" in b:  # torch-elastic's summary: its Root Cause block names the signal
                return _elastic_root(lines, j)
            return _message(lines, _react(lines, j, b))
        if fallback is None and not _TB_FRAME.match(b) and is_failure_line(lines[j]) and \
                "Traceback (most recent" not in b:
            fallback = j
    if fallback is not None:
        return fallback
    # a traceback cut before its exception line (pasted with "..."): the error a library printed just
    # before it ("Error CUDA driver version is insufficient ... at line 167 in file ops.cu") states it
    for j in range(i - 1, max(-1, i - 4), -1):
        b = strip_prefix(lines[j])
        if _PRINTED_ERROR.search(b) and not (_BENIGN_HINT.search(b) and _BENIGN.search(b)):
            return j
    return i


# a line a library prints to say what failed ("Error CUDA driver version is insufficient", "ERROR: ...")
_PRINTED_ERROR = re.compile(r"^\s*(?:Error|ERROR)\b|\berror\s*:", re.I)
# NCCL's error report names the failing call on the line after "Last error:" (a socket's recv, a network
# plugin's request): that line says what broke, the lines above only that NCCL failed
_LAST_ERROR = re.compile(r"^\s*Last error:\s*$")
# what follows an EMPTY "Last error:" block is no cause but the next report: the C++ trace PyTorch attaches
# ("Exception raised from ...", "C++ CapturedTraceback:", frames), a Python traceback, another rank's lines
_NOT_DETAIL = re.compile(r"^\s*(?:Exception raised from\b|C\+\+ CapturedTraceback|Traceback \(most recent|"
                         r"frame #\d|#\d+\s|File \")")


def _detail(lines: Sequence[str], j: int) -> int:
    """An error report whose cause is printed a few lines below it, under "Last error:": the line DIRECTLY
    after it, when that line belongs to the report (not empty, not the start of a stack trace); a blank
    line there means NCCL had no detail to give, and the report line stays the answer."""
    for k in range(j + 1, min(j + 5, len(lines))):
        if _LAST_ERROR.match(strip_prefix(lines[k])) or _LAST_ERROR.match(lines[k]):
            if k + 1 < len(lines):
                nxt = strip_prefix(lines[k + 1])
                bare = _PREFIX.fullmatch(lines[k + 1]) is not None  # "[rank3]: " and nothing else
                if nxt.strip() and not bare and not _NOT_DETAIL.match(nxt):
                    return k + 1
            return j
    return j


_PYTEST_FAILED = re.compile(r"^FAILED\s+\S+::")
# (line that reacts to a failure, the line it reacts to, how far ahead to look): torch-elastic's agent
# sends SIGTERM to the other ranks, then names the rank that failed and its exit code; the NCCL heartbeat
# monitor says the watchdog is stuck because the watchdog is busy with a collective that timed out;
# a C++ terminate prints the exception's message on its `what():` line
_CONSEQUENCES = (
    (re.compile(r"(?:Sending process|Closing process) \d+ (?:closing signal|via signal) SIGTERM"),
     re.compile(r"failed \(exitcode: -?\d+\) local_rank"), 40),
    (re.compile(r"watchdog got stuck|Heartbeat monitor timed out"), re.compile(r"Watchdog caught collective operation timeout"), 8),
    (re.compile(r"^terminate called after throwing an instance"), re.compile(r"^\s*what\(\):\s*\S"), 2),
    (re.compile(r"The following operation failed in the TorchScript interpreter"),
     re.compile(r"^\s*(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception)\b(?!.*TorchScript interpreter)"), 30),
)
# an exception line whose message is on the next line ("ImportError   (note: full exception trace ...)")
_NO_MESSAGE = re.compile(r"^(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception)\s*(?::\s*|\s+\(note:[^)]*\)\s*)?$")


def _react(lines: Sequence[str], i: int, body: str) -> int:
    """A reaction to the failure leads to the line it reacts to, when that follows soon; else i."""
    for rx, target, reach in _CONSEQUENCES:
        if rx.search(body):
            j = next((j for j in range(i + 1, min(i + reach, len(lines))) if target.search(lines[j])), None)
            if j is not None:
                return j
    return i


def _message(lines: Sequence[str], j: int) -> int:
    """The line that states the error: the exception line itself, or the next line when it has no message;
    an exception name whose message another process's output split off (`OSError  File "..."` and, a few
    lines on, `: [WinError 1455] ...`): the line that carries the message; an NCCL report's cause under
    "Last error:"."""
    body = strip_prefix(lines[j])
    if j + 1 < len(lines) and _NO_MESSAGE.match(body.strip()) and lines[j + 1].strip() \
            and "ChildFailedError" not in lines[j]:
        return j + 1
    if _SPLIT_EXC.match(body):
        k = next((k for k in range(j + 1, min(j + 7, len(lines))) if _MSG_REST.match(lines[k])), None)
        if k is not None:
            return k
    return _detail(lines, j)


# an exception name directly followed by another process's traceback frame (interleaved output)
_SPLIT_EXC = re.compile(r"^\s*(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception)\s+File \"")
# the rest of such a split exception line: its message, starting with ": "
_MSG_REST = re.compile(r"^\s*:\s+\S")
_ELASTIC_SIGNAL = re.compile(r"exitcode\s*:\s*-(\d+)|Signal (\d+) \(SIG\w+\) received")


def _elastic_root(lines: Sequence[str], i: int) -> int:
    """torch-elastic's ChildFailedError summary: when its Root Cause block says a rank died of a signal
    (exitcode -9: the host's OOM killer; -11: a segfault), that line is the cause this log holds; an
    exit code of 1 means the error is printed elsewhere, and the summary line stays the answer."""
    for j in range(i + 1, min(i + 30, len(lines))):
        m = _ELASTIC_SIGNAL.search(lines[j])
        if m and (m.group(1) or m.group(2)) not in ("15",):  # SIGTERM is the cascade, not the cause
            return j
    return i


# an episode of failure evidence is an error the job survived when training goes on after it: this
# many progress lines with no failure line in between, or this many quiet lines (streaming)
SURVIVED_PROGRESS = 6
SURVIVED_QUIET = 400


def _is_progress(line: str) -> bool:
    from models.schedmate.tracker import parse_progress

    return parse_progress(strip_prefix(line)) is not None


def _survived(lines: Sequence[str], root: int, quiet: int = SURVIVED_QUIET, fail=None) -> int | None:
    """Index after which the failure episode starting at `root` is over (training went on), or None
    when it lasts to the end of the log."""
    fail = fail or (lambda i: is_failure_line(lines[i]))
    last_fail, prog = root, 0
    for j in range(root + 1, len(lines)):
        x = lines[j]
        if fail(j):
            last_fail, prog = j, 0
        elif _is_progress(x):
            prog += 1
            if prog >= SURVIVED_PROGRESS:
                return j
        if j - last_fail >= quiet:
            return j
    return None


def _error_statement(line: str) -> bool:
    return bool(ERROR_WORD.search(line)) and not (_BENIGN_HINT.search(line) and _BENIGN.search(line))


#: a general error statement counts only where the log ends with it: this close to the end, no progress after
END_REACH = 60


def _ends_with(lines: Sequence[str], first: int, last: int) -> bool:
    """The log ends with the error statement at [first, last] (a transient error the job logged and
    went on after — a retried HTTP 502 — is not why it stopped)."""
    return len(lines) - 1 - last <= END_REACH and not any(_is_progress(x) for x in lines[first + 1:])


class FailureHandler:
    """diagnose(lines) -> Diagnosis: locate the root cause, classify it.

    chunk: lines per chunk (default: 1/64 of the log, at least 16); window: chunks in a failure-state
    probe (a probe holds evidence if any of its chunks does: bridges the quiet gap while other ranks
    still log normally); tail: lines the tail-only baseline reads; llm: an optional back-end."""

    def __init__(self, chunk: int | None = None, window: int = 3, tail: int = 500, embedder: str = "hash",
                 llm=None) -> None:
        self.chunk = chunk
        self.window = max(1, int(window))
        self.tail = int(tail)
        self.classifier = Classifier(embedder=embedder)
        self.llm = llm

    def _chunk_size(self, n: int) -> int:
        return self.chunk or max(16, -(-n // 64))

    def locate(self, lines: Sequence[str]) -> tuple[int | None, int]:
        """(root line index or None, chunks read) by binary search over chunks.

        Failure evidence the job survived (a handled exception, a retried upload) may sit in every
        chunk of a long log, which breaks the search's assumption that evidence, once it starts, lasts
        to the end. So a candidate episode is checked: when training goes on after it (progress lines
        with no failure between them, or a quiet stretch) the search resumes after it, until the
        episode that lasts to the end of the log — the final, fatal one."""
        n = len(lines)
        if n == 0:
            return None, 0
        size = self._chunk_size(n)
        n_chunks = -(-n // size)
        cache: dict[int, bool] = {}
        fail = _Memo(lines)

        def has(c: int) -> bool:
            if c not in cache:
                cache[c] = any(fail(i) for i in range(c * size, min(n, (c + 1) * size)))
            return cache[c]

        def state(c: int) -> bool:  # failure evidence in chunks [c, c + window)
            return any(has(j) for j in range(c, min(c + self.window, n_chunks)))

        last = n_chunks - 1
        if not state(max(0, last - self.window + 1)):
            return None, len(cache)
        pos = 0  # lines before pos belong to episodes the job survived
        quiet = max(self.window * size, 64)
        while True:
            start = pos // size
            # the first c in start..last with state(c) True (assumed monotone; last when none before it)
            lo = start + bisect_left(range(start, last), True, key=state)
            cands = [j for j in range(lo, min(lo + self.window, n_chunks)) if has(j)]
            if not cands:
                return None, len(cache)
            c = cands[0]
            while c > start and has(c - 1):
                c -= 1
            root = _root_in(lines, max(c * size, pos), n, fail)
            if root is None:
                return None, len(cache)
            end = _survived(lines, root, quiet=min(quiet, SURVIVED_QUIET), fail=fail)
            if end is None or not state(max(0, last - self.window + 1)) or end >= n - 1:
                return root, len(cache)
            nxt = _root_in(lines, end + 1, n, fail)
            if nxt is None:
                return root, len(cache)
            pos = end + 1

    def diagnose(self, lines: Sequence[str], tail_only: bool = False, method: str | None = None) -> Diagnosis:
        """Root cause and its type/component; Diagnosis(kind=None, ...) when no failure is found.

        method: "locator" (default: binary search over chunks), "tail" (only the last `tail` lines,
        the paper's baseline; same as tail_only=True) or "scan" (the first failure line of the whole
        log, read linearly)."""
        method = method or ("tail" if tail_only else "locator")
        if method not in ("locator", "tail", "scan"):
            raise ValueError(f"unknown method {method!r}; known: locator, tail, scan")
        lines = _dedent([str(x).rstrip("\n") for x in lines])
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
        if root is None and method != "tail":  # no rule's evidence: a line that states an error in general words
            hits = [i for i, x in enumerate(lines) if _error_statement(x)]
            last = hits[-1] if hits else None
            while len(hits) > 1 and hits[-1] - hits[-2] <= 20:  # the first line of the last cluster
                hits.pop()
            root = hits[-1] if hits and _ends_with(lines, hits[-1], last) else None
        if root is None:
            return Diagnosis(None, None, None, None, None, method, chunks, read, "no failure evidence found")
        return self._finish(lines, root, lines[root + 1:root + 7], lines[max(0, root - 200):root], method, chunks,
                            read, lines)

    def _finish(self, lines: Sequence[str], root: int, ctx: Sequence[str], before: Sequence[str], method: str,
                chunks: int, read: int, window_lines: Sequence[str] | None, offset: int = 0) -> Diagnosis:
        line = window_lines[root - offset]
        cause, kind, comp, how = self.classifier.classify(line, ctx, before)
        diag = Diagnosis(kind, comp, root, line, cause, method, chunks, read, how)
        if self.llm is not None and window_lines is not None:
            if method == "tail":
                lo, hi = max(0, len(window_lines) - self.tail), len(window_lines)
            else:
                lo, hi = max(0, root - offset - 20), min(len(window_lines), root - offset + 20)
            d2 = self.llm.refine(window_lines, lo, hi, replace(diag, line_index=root - offset))
            diag = replace(d2, line_index=(d2.line_index + offset) if d2.line_index is not None else None)
        return diag

    def diagnose_stream(self, lines: Iterable[str], method: str = "locator") -> Diagnosis:
        """diagnose() over an iterable of lines (a file read line by line) in bounded memory: one pass
        that keeps the current failure episode's first lines, the lines before it and the last `tail`
        lines — never the whole log. "locator" returns the first line of the final episode (evidence
        that training did not outlive); "scan" the first failure line; "tail" the first in the last
        `tail` lines."""
        if method not in ("locator", "tail", "scan"):
            raise ValueError(f"unknown method {method!r}; known: locator, tail, scan")
        keep_after, keep_before = 120, 200
        prev: deque[str] = deque(maxlen=keep_before)
        tail: deque[str] = deque(maxlen=max(self.tail, 1))
        ep: dict | None = None      # the current (or last) episode: start, before, first lines, closed
        last_fail = -1
        prog = 0
        n = 0
        ew: dict | None = None  # the last cluster of general error statements (when no rule's evidence is found)
        for n, raw in enumerate(lines, 1):
            line = str(raw).rstrip("\r\n")
            i = n - 1
            if method == "tail":
                tail.append(line)
                continue
            fail = is_failure_line(line)
            if fail:
                if ep is None or ep["closed"]:
                    ep = {"start": i, "before": list(prev), "buf": [], "closed": False}
                last_fail, prog = i, 0
            elif ep is not None and not ep["closed"]:
                if _is_progress(line):
                    prog += 1
                if prog >= SURVIVED_PROGRESS or i - last_fail >= SURVIVED_QUIET:
                    ep["closed"] = method != "scan"
            if _error_statement(line):
                if ew is None or i - ew["last"] > 20:
                    ew = {"start": i, "before": list(prev), "buf": [], "prog": False}
                ew["last"] = i
            elif ew is not None and not ew["prog"] and i > ew["start"] and _is_progress(line):
                ew["prog"] = True
            if ew is not None and len(ew["buf"]) < keep_after:
                ew["buf"].append(line)
            if ep is not None and len(ep["buf"]) < keep_after:
                ep["buf"].append(line)
            elif ep is not None and method == "scan" and len(ep["buf"]) >= keep_after:
                break
            prev.append(line)
        if method == "tail":
            buf = list(tail)
            off = n - len(buf)
            r = _root_in(buf, 0, len(buf))
            if r is None:
                return Diagnosis(None, None, None, None, None, method, 0, len(buf), "no failure evidence found")
            return self._finish(buf, off + r, buf[r + 1:r + 7], buf[max(0, r - 200):r], method, 0, len(buf), buf,
                                offset=off)
        size = self._chunk_size(max(n, 1))
        tail_from = max(0, -(-n // size) - self.window) * size  # the last `window` chunks, as locate() checks
        if ep is None or (method == "locator" and (ep["closed"] or last_fail < tail_from)):
            if ew is not None and not ew["prog"] and n - 1 - ew["last"] <= END_REACH:  # as diagnose()
                b = ew["buf"]
                return self._finish(b, ew["start"], b[1:7], ew["before"][-200:], method, 0, n, b, offset=ew["start"])
            return Diagnosis(None, None, None, None, None, method, 0, n, "no failure evidence found")
        # _follow sees the lines before the episode too, as in diagnose(): it may step back from the
        # first failure line (an indented continuation of a multi-line kernel message) to the message's start
        buf = ep["before"] + ep["buf"]
        off = ep["start"] - len(ep["before"])
        r = _follow(buf, len(ep["before"]))
        return self._finish(buf, off + r, buf[r + 1:r + 7], buf[max(0, r - 200):r], method, 0, n, buf, offset=off)
