"""Which lines of a job log are failure evidence: the line rules shared by the Failure Handler
(models.schedmate.failures) and the Metric Tracker (models.schedmate.tracker), kept in a leaf module so
that neither imports the other for them."""
from __future__ import annotations

import re


# What a launcher, a logger or a multi-rank wrapper puts before the text of a line: timestamps, glog
# headers, rank tags ("[rank3]:", "[default0]:", "3:", "[1,0]<stderr>:"), log levels and logger names.
# Stripped before a line is judged, so "[rank2]: 2024-... ERROR KeyError: 'x'" is an exception line.
_PREFIX = re.compile(
    r"^(?:\s*(?:"
    r"\[?\d{4}[-/]\d{2}[-/]\d{2}[ T_]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?\]?[:,]?"
    r"|\[?\d{2}:\d{2}:\d{2}(?:[.,]\d+)?\]?:?"
    r"|[IWEF]\d{4}\s+\d{2}:\d{2}:\d{2}\.\d+\s+\d+\s+\S+:\d+\]"
    r"|\[(?:rank|default|RANK|Rank)\s*\d+\]:?|rank\s?\d+:|\[\d+,\d+\]<std(?:out|err)>:|\d{1,5}:(?=\s)"
    r"|[\w.-]+-\d+:(?=\s)|[\w.-]+\s+\|"
    r"|\[?(?:INFO|WARNING|WARN|ERROR|CRITICAL|DEBUG|FATAL)\]?(?::[\w.]+:|\s*[-:|]|(?=\s))"
    r"|[-|:>]+(?=\s)|`+|\*{2,}|[\"']+(?=(?:[a-z_][\w]*\.)*[A-Z]\w*(?:Error|Exception)\b)"
    r")\s*)+")


def strip_prefix(line: str) -> str:
    """The text of a log line without its timestamp / rank / level prefixes (unchanged when it has none)."""
    m = _PREFIX.match(line)
    return line[m.end():] if m and m.end() < len(line) else line


_BENIGN = re.compile(
    r"error_rate|_err\b|top1_err|err_bound|UserWarning|warnings\.warn|\[W socket\.cpp|failed to bind|"
    r"retrying|retried .* \(transient|Exception ignored in|Warning: 0NCCL|DeprecationWarning|heartbeat ok|"
    r"^(?!.*NCCL WARN).*NCCL INFO|^(?!.*(?:error|fail)).*\bINFO\b.*checkpoint", re.I)

_FAILURE = re.compile(
    r"Traceback \(most recent call last\)|NVRM: Xid|NCCL WARN|Watchdog caught collective|\[E ProcessGroupNCCL|"
    r"CUDA error|out of memory|killed by signal|DUE TO NODE FAILURE|NodeNotReady|lost heartbeat|node unreachable|"
    r"link is down|Input/output error|Stale file handle|No space left|file write failed|ChildFailedError|"
    r"closing signal SIGTERM|terminate called|Segmentation fault|[Bb]us error|\bFAILED\b|exitcode|"
    r"Root Cause \(first observed|srun: error|slurmstepd: error|Killed\b|core dumped|[Ff]atal error|\bFATAL\b|"
    r"\bCRITICAL\b|kernel panic|failed to listen on any local network address|已杀死|已殺死|Getötet|Processus arrêté|"
    r"Illegal instruction|\b(?:error|exit|return) ?code:? -9\b")
# the same in lower case, searched in the lower-cased line (an inline (?i:) group makes the scan slow)
_FAILURE_LOW = re.compile(
    r"segmentation fault|undefined symbol|address already in use|oom[-_ ]?kill|signal 9\b|sigkill|sigsegv|got stuck|"
    r"loss (?:is|became) (?:nan|inf)|non-finite loss|device-side assert|no kernel image|cannot open shared object|"
    r"ncclinvalidusage|ncclsystemerror|ncclinternalerror|ncclunhandledcudaerror|cudnn_status_|cublas_status_|"
    r"heartbeat monitor timed out|assertion `[^`]*` failed|fallen off the bus|uncorrected \(fatal\)|"
    r"client socket has timed out|can't resolve|name does not resolve|name or service not known|"
    r"temporary failure in name resolution|uncorrectable ecc|ecc_uncorrectable|rminitadapter failed|"
    r"rm_init_adapter failed|cannot attach gpu|unable to determine the device handle for gpu|"
    r"driver/library version mismatch|failed to initialize nvml|busy or unavailable|cuda_error_\w+|nvml_error_\w+|"
    r"\bcheck failed\b|nccl error|nccl failure|unhandled system error|ncclremoteerror|"
    r"winerror 1455|paging file is too small|页面文件太小|頁面檔案太小|auslagerungsdatei ist zu klein|"
    r"attempt to free invalid pointer|free\(\): invalid|double free or corruption|stack smashing detected")
# a Python exception line: "torch.OutOfMemoryError: ...", "KeyError: 'x'" (case-sensitive, no backtracking)
_EXC = re.compile(r"^\s*(?:[a-z_][a-z0-9_]*\.)*[A-Z][A-Za-z0-9_]*(?:Error|Exception|Interrupt)\b")
# a glog/c10 warning-level line ("[W socket.cpp:401] ...", "W0301 12:00:00.1 ..."): a warning, not the failure
_WARN_LEVEL = re.compile(r"\s*(?:\[W[\s\d]|W\d{4}\s)")
# words a line uses when it lists causes it cannot tell apart ("There are some potential root causes. (1) ...")
HEDGE = re.compile(r"(?:some|several|potential|possible) (?:root )?causes\b", re.I)
# a generic error statement ("File.lua:210: write error: ...", "got completion with error") for logs
# whose failure no rule names
ERROR_WORD = re.compile(r"\b(?:error|fatal|failed|failure|exception)\s*:|\bwith (?:an? )?error\b|\berror \d+\b", re.I)
_BENIGN_HINT = re.compile(r"err|warn|retr|Exception ignored|NCCL INFO|heartbeat|INFO", re.I)


# a traceback's lines: header, frames, code, caret
_TB_FRAME = re.compile(r'^(?:\s*File "|\s{2,}\S|\s*[\^~]+\s*$|Traceback \(most recent|During handling of the above|'
                       r"The above exception was the direct cause|\s*$)")
_EXC_LINE = re.compile(r"^\s*(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception|Interrupt|Exit|Warning)\b")


# every _FAILURE alternative contains one of these (lower case): a cheap test before the regex
_FAILURE_KEYS = ("traceback", "xid", "nccl warn", "processgroupnccl", "ncclinvalid", "ncclsystem", "ncclinternal",
                 "ncclunhandled", "watchdog", "cuda error", "out of memory",
                 "killed", "node failure", "nodenotready", "lost heartbeat", "heartbeat monitor", "unreachable", "link is down",
                 "input/output", "stale file", "no space", "write failed", "childfailed", "sigterm", "terminate called",
                 "segmentation", "bus error", "failed", "exitcode", "root cause", "srun: error", "slurmstepd",
                 "core dumped", "fatal", "critical", "kernel panic", "undefined symbol", "already in use", "oom",
                 "signal 9", "sigkill", "sigsegv", "stuck", "loss is", "loss became", "non-finite", "device-side", "kernel image", "shared object",
                 "cudnn_status", "cublas_status", "failed to listen", "fallen off", "uncorrected", "client socket",
                 "resolve", "name or service", "ecc", "rminitadapter", "rm_init_adapter", "attach gpu", "device handle",
                 "version mismatch", "nvml", "unavailable", "cuda_error_", "已杀死", "已殺死", "getötet", "processus arrêté",
                 "check failed", "nccl error", "nccl failure", "system error", "ncclremote", "winerror 1455", "paging file",
                 "页面文件太小", "頁面檔案太小", "auslagerungsdatei", "invalid pointer", "free():", "double free", "stack smashing",
                 "illegal instruction", "code -9", "code: -9")


def is_failure_line(line: str) -> bool:
    """Failure evidence (an error, not a warning or a metric named 'error_rate')."""
    low = line.lower()
    for k in _FAILURE_KEYS:  # a plain loop: faster than any(<genexpr>) or one alternation regex here
        if k in low:
            hit = True
            break
    else:
        hit = False
    if not (hit and (_FAILURE.search(line) or _FAILURE_LOW.search(low))):
        if not (("Error" in line or "Exception" in line or "Interrupt" in line) and _EXC.match(strip_prefix(line))):
            return False
    if "failed to listen" in low or low.lstrip().startswith("raise "):
        # the fatal form of a bind warning (not its warning-level per-address lines); a `raise X(`
        # line is a traceback's source code, not evidence
        return "failed to listen" in low and not _WARN_LEVEL.match(line)
    return not (_BENIGN_HINT.search(line) and _BENIGN.search(line))
