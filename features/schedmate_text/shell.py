"""Shell side of a launch command: continuations, variables (${VAR:-default}, positional $1.., "$@"),
statements of a script."""
from __future__ import annotations

import re
import shlex



def _join_continuations(text: str) -> str:
    return re.sub(r"\\\r?\n", " ", text)


def _expand(s: str, env: dict[str, str], pos: list[str], keep_unset: bool = False) -> str:
    """Shell expansion of $VAR, ${VAR:-default}, $1.., "$@". `keep_unset`: a variable the text never
    sets keeps its name (a documented command's `$SQUAD_DIR/train.json` says SQuAD; "" says nothing)."""
    def repl(m: re.Match) -> str:
        name = m.group(1) or m.group(3) or m.group(4)
        default = m.group(2)
        if name.isdigit():
            i = int(name)
            return pos[i - 1] if 0 < i <= len(pos) else (default or "")
        if name == "@":
            return shlex.join(pos)
        val = env.get(name)
        if val in (None, "") and not default and keep_unset and name not in env:
            return name
        return val if val not in (None, "") else (default or "")
    s = re.sub(r'"\$(?:@|\{@\})"', lambda m: shlex.join(pos), s)  # "$@": each argument one word
    s = re.sub(r'"?\$\{@:(\d+)\}"?', lambda m: shlex.join(pos[int(m.group(1)) - 1:]), s)
    return re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*|\d+|@)(?::?-([^}]*))?\}|\$\{(\d+)\}|\$([A-Za-z_][A-Za-z0-9_]*|\d|@)",
                  repl, s)


_ASSIGN = re.compile(r"^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.S)
_LAUNCH_WORDS = ("python", "python3", "torchrun", "deepspeed", "accelerate", "srun", "mpirun", "bash", "sh")


def _shell_statements(text: str) -> list[str]:
    """Statements of a shell script: continuations joined, multi-line quoted values kept whole."""
    text = _join_continuations(text)
    out, buf, quote = [], "", None
    for line in text.splitlines():
        if quote is None and not buf and line.strip().startswith("#"):
            out.append(line.strip())
            continue
        buf = f"{buf}\n{line}" if buf else line
        for ch in line:
            if ch in "\"'" and (quote is None or quote == ch):
                quote = None if quote == ch else ch
        if quote is None:
            out.append(buf.strip())
            buf = ""
    if buf:
        out.append(buf.strip())
    return [s for s in out if s]


def _unquote(v: str) -> str:
    v = v.strip()
    if len(v) >= 2 and v[0] == v[-1] and v[0] in "\"'":
        return v[1:-1]
    return v


def _join_rel(base: str, path: str) -> str:
    """base/path with . and .. resolved, relative to the repository root ("" = the root)."""
    parts: list[str] = [] if path.startswith("/") else [p for p in base.split("/") if p and p != "."]
    for seg in path.split("/"):
        if seg in ("", "."):
            continue
        if seg == "..":
            if parts:
                parts.pop()
            continue
        parts.append(seg)
    return "/".join(parts)
