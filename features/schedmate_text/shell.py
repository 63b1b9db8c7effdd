"""Shell side of a launch command: continuations, variables (${VAR:-default}, positional $1.., "$@"),
statements of a script."""
from __future__ import annotations

import re
import shlex



_BARE_LAUNCHER_THEN_SCRIPT = re.compile(
    r"(?m)^(\s*(?:python3?\s+-m\s+torch\.distributed\.(?:launch|run)|torchrun|accelerate\s+launch|deepspeed)"
    r"(?:\s+--?[\w.-]+(?:[= ](?!\S*\.py\b)[^\s-]\S*)?)*)[ \t]*\n(?=\s*\S+\.py\b)")


def _join_continuations(text: str) -> str:
    """Lines ending in a backslash joined with the next, except a comment line: the shell does not continue
    a comment (`# python train.py \\` above the live command is not part of it). A launcher line that names
    no script, followed by a line that starts with one, is one command whose backslash a document dropped
    (`torch.distributed.launch --nproc_per_node=8` / `train.py ...`): a launcher alone cannot run."""
    if "\n" in text:
        text = _BARE_LAUNCHER_THEN_SCRIPT.sub(r"\1 ", text)
    if "\\" not in text:
        return text
    out, buf = [], ""
    for line in text.split("\n"):
        if not buf and line.lstrip().startswith("#"):
            out.append(line)
            continue
        body = line[:-1] if line.endswith("\r") else line
        if body.endswith("\\"):
            buf += body[:-1] + " "
            continue
        out.append(buf + line)
        buf = ""
    if buf:
        out.append(buf)
    return "\n".join(out)


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
    # ${ARGS[@]} / ${ARGS[*]}: a bash array's words (stored as its words joined by spaces)
    s = re.sub(r'"?\$\{([A-Za-z_][A-Za-z0-9_]*)\[[@*]\]\}"?', lambda m: env.get(m.group(1), ""), s)
    s = re.sub(r'"?\$\{@:(\d+)\}"?', lambda m: shlex.join(pos[int(m.group(1)) - 1:]), s)
    for _ in range(3):  # a default that is itself a variable's (`${GPUS_PER_NODE:-${MAX_GPUS:-8}}`): inner first
        inner = re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*|\d+)(?::?-([^{}$]*))?\}(?=[^{]*\})", repl, s) if "${" in s else s
        if inner == s:
            break
        s = inner
    return re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*|\d+|@)(?::?-([^}]*))?\}|\$\{(\d+)\}|\$([A-Za-z_][A-Za-z0-9_]*|\d|@)",
                  repl, s)


def _arith(expr: str, env: dict[str, str], pos: list[str]) -> str | None:
    """Bash integer arithmetic (`let "N=GPUS/PER_NODE"`, `$((A*B))`): names and $-expansions read from the
    environment; + - * / % and parentheses only (bash's / truncates). None when a name is unset or not a
    number: an unknown, not a zero."""
    s = _expand(expr, env, pos)
    s = re.sub(r"[A-Za-z_][A-Za-z0-9_]*", lambda m: env.get(m.group(0), "?"), s)
    if not re.fullmatch(r"[\d\s+*/%()-]+", s) or "**" in s:
        return None
    s = s.replace("/", "//")
    try:
        return str(int(eval(compile(s, "<arith>", "eval"), {"__builtins__": {}}, {})))  # noqa: S307 - digits/operators only
    except (SyntaxError, ZeroDivisionError, ValueError, TypeError):
        return None


_ASSIGN = re.compile(r"^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.S)
_LAUNCH_WORDS = ("python", "python3", "torchrun", "deepspeed", "accelerate", "srun", "mpirun", "mpiexec", "bash", "sh",
                 "composer")
# inline commands: any other statement may launch (a console script); these never do
_NOT_LAUNCH = ("cd", "export", "mkdir", "curl", "wget", "pip", "pip3", "echo", "source", ".", "conda", "git", "rm",
               "cp", "mv", "ls", "cat", "tar", "unzip", "set", "module", "ulimit", "eval")


_ARRAY_OPEN = re.compile(r"^\s*(?:export\s+|declare\s+-a\s+|local\s+)?([A-Za-z_][A-Za-z0-9_]*)=\((.*)$")


def _strip_comment(line: str) -> str:
    """A line without its trailing `# comment` (outside quotes)."""
    quote = None
    for i, ch in enumerate(line):
        if ch in "\"'" and (quote is None or quote == ch):
            quote = None if quote == ch else ch
        elif ch == "#" and quote is None and (i == 0 or line[i - 1].isspace()):
            return line[:i]
    return line


def _shell_statements(text: str) -> list[str]:
    """Statements of a shell script: continuations joined, multi-line quoted values kept whole, a bash
    array written over several lines (`ARGS=(` ... `)`, comments inside dropped) as one statement
    `ARGS=(a b c)`."""
    text = _join_continuations(text)
    out, buf, quote = [], "", None
    array: list[str] | None = None
    for line in text.splitlines():
        if array is not None:  # inside ARGS=( ... )
            body = _strip_comment(line)
            if body.strip().startswith(")") or body.rstrip().endswith(")"):
                array.append(body.rstrip().rstrip(")"))
                out.append(" ".join(array).strip() + ")")
                array = None
            else:
                array.append(body.strip())
            continue
        m = _ARRAY_OPEN.match(line) if quote is None and not buf else None
        if m and not _strip_comment(m.group(2)).rstrip().endswith(")"):
            array = [f"{m.group(1)}=(" + _strip_comment(m.group(2)).strip()]
            continue
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
