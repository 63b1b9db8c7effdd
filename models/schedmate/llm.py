"""Optional LLM back-end for the Failure Handler, behind one interface.

`refine(lines, lo, hi, default) -> Diagnosis` shows the model the located window of the log (with line
numbers) and asks for the root-cause line and its type/component as JSON. The answer is validated
against a schema (pydantic; `ANSWER_SCHEMA` is its JSON schema): unknown type, a component that does
not belong to the type, a line outside the window, bad JSON or an HTTP failure -> the default
(rule-based) diagnosis is kept, with the reason in `note`.

Back-ends: `OpenAIBackend` (any OpenAI-compatible /v1/chat/completions endpoint: vLLM, llama.cpp,
...; urllib only, no SDK) and `RecordedBackend` (replays recorded answers; tests never call a network).
"""
from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import replace
from typing import Literal, Sequence

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from models.schedmate.failures import COMPONENTS, Diagnosis  # one component table for rules and LLM answers


class LLMAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore")
    line: int
    kind: Literal["infrastructure", "framework", "script"]
    component: str
    explanation: str = ""

    @model_validator(mode="after")
    def _component_fits(self) -> "LLMAnswer":
        if self.component not in COMPONENTS[self.kind]:
            raise ValueError(f"component {self.component!r} is not one of {COMPONENTS[self.kind]} for {self.kind}")
        return self


ANSWER_SCHEMA = LLMAnswer.model_json_schema()

SYSTEM = ("You diagnose failed GPU training jobs. Given numbered log lines, find the ROOT CAUSE: the first "
          "line that states the original error (not the cascade of NCCL watchdog timeouts, SIGTERMs or the "
          "torch-elastic summary that follow it). Answer only JSON: {\"line\": <number>, \"kind\": "
          "\"infrastructure\"|\"framework\"|\"script\", \"component\": one of " + json.dumps(COMPONENTS) +
          ", \"explanation\": \"...\"}")


def build_prompt(lines: Sequence[str], lo: int, hi: int) -> list[dict]:
    body = "\n".join(f"{i}: {lines[i]}" for i in range(lo, hi))
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": body}]


class LLMBackend:
    """Base: subclasses implement `complete(messages) -> str` (the model's text)."""

    name = "llm"

    def complete(self, messages: list[dict]) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def refine(self, lines: Sequence[str], lo: int, hi: int, default: Diagnosis) -> Diagnosis:
        try:
            text = self.complete(build_prompt(lines, lo, hi))
        except (OSError, urllib.error.URLError, TimeoutError, ValueError) as exc:
            return replace(default, note=f"llm unavailable ({type(exc).__name__}); rules kept")
        try:
            ans = LLMAnswer.model_validate(json.loads(_strip_fence(text)))
        except (json.JSONDecodeError, ValidationError, TypeError) as exc:
            return replace(default, note=f"llm answer invalid ({_short(exc)}); rules kept")
        if not lo <= ans.line < hi:
            return replace(default, note=f"llm answer invalid (line {ans.line} outside {lo}..{hi - 1}); rules kept")
        return Diagnosis(kind=ans.kind, component=ans.component, line_index=ans.line, line=lines[ans.line],
                         cause=default.cause if default.kind == ans.kind else None, method=default.method + "+llm",
                         chunks_read=default.chunks_read, lines_read=default.lines_read, note="llm")


def _strip_fence(text: str) -> str:
    t = text.strip()
    if t.startswith("```"):
        t = t.strip("`")
        t = t[4:] if t.lower().startswith("json") else t
    return t.strip()


def _short(exc: Exception) -> str:
    return " ".join(str(exc).split())[:160]


class OpenAIBackend(LLMBackend):
    """POST {endpoint}/chat/completions (OpenAI-compatible), temperature 0, JSON answers."""

    name = "openai"

    def __init__(self, endpoint: str, model: str = "default", timeout: float = 30.0, api_key: str | None = None) -> None:
        if not endpoint.startswith(("http://", "https://")):
            raise ValueError(f"LLM endpoint must be an http(s) URL, got {endpoint!r}")
        self.endpoint = endpoint.rstrip("/")
        self.model = model
        self.timeout = timeout
        self.api_key = api_key

    def complete(self, messages: list[dict]) -> str:
        url = self.endpoint + ("" if self.endpoint.endswith("/chat/completions") else "/chat/completions")
        body = json.dumps({"model": self.model, "messages": messages, "temperature": 0,
                           "response_format": {"type": "json_object"}}).encode()
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        req = urllib.request.Request(url, data=body, headers=headers, method="POST")
        with urllib.request.urlopen(req, timeout=self.timeout) as resp:
            payload = json.loads(resp.read().decode())
        try:
            return payload["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError) as exc:
            raise ValueError(f"not an OpenAI chat completion: {_short(exc)}") from None


class RecordedBackend(LLMBackend):
    """Replays recorded answers in order (or keyed by the first line of the window): for tests and
    for re-running a benchmark without the model."""

    name = "recorded"

    def __init__(self, answers: Sequence[str]) -> None:
        self.answers = list(answers)
        self.calls: list[list[dict]] = []

    def complete(self, messages: list[dict]) -> str:
        self.calls.append(messages)
        if not self.answers:
            raise ValueError("no recorded answer left")
        return self.answers.pop(0)


# ------------------------------------------------------------------------------------------------
# metadata extraction agent (optional): the static extractor's answer is the default


class MetadataAnswer(BaseModel):
    """What an LLM may say about a job; every field optional, each validated."""

    model_config = ConfigDict(extra="ignore")
    model: str | None = None
    task: str | None = None
    dataset: str | None = None
    iterations: int | None = None
    iteration_unit: Literal["epochs", "steps"] | None = None
    batch_size: int | None = None
    gpus: int | None = None
    nodes: int | None = None

    @model_validator(mode="after")
    def _positive(self) -> "MetadataAnswer":
        for name in ("iterations", "batch_size", "gpus", "nodes"):
            v = getattr(self, name)
            if v is not None and v < 1:
                raise ValueError(f"{name} must be >= 1, got {v}")
        if (self.iterations is None) != (self.iteration_unit is None):
            raise ValueError("iterations and iteration_unit go together")
        return self


METADATA_SCHEMA = MetadataAnswer.model_json_schema()
METADATA_SYSTEM = ("You read a GPU training job's launch command and repository files and say what it trains. "
                   "Answer only JSON with the keys model, task, dataset, iterations, iteration_unit (epochs|steps), "
                   "batch_size (per device), gpus (total), nodes; null for what you cannot tell. Ignore comments, "
                   "unused functions and configs the command does not select.")


class LLMExtractor:
    """Metadata from an LLM back-end, validated; `mode="fill"` (default) keeps every field the static
    extractor found and takes only the ones it missed, `mode="override"` prefers the LLM's. A bad or
    missing answer leaves the static metadata as it is (`sources["llm"]` says why)."""

    def __init__(self, backend: LLMBackend, mode: str = "fill", max_chars: int = 12000) -> None:
        if mode not in ("fill", "override"):
            raise ValueError(f"mode must be fill or override, got {mode!r}")
        self.backend, self.mode, self.max_chars = backend, mode, max_chars

    def prompt(self, command: str, files: dict[str, str], entry: str | None) -> list[dict]:
        order = sorted(files, key=lambda p: (p != entry, not p.endswith((".sh", ".yaml", ".yml", ".json")), p))
        body, used = [f"$ {command}"], len(command)
        for path in order:
            chunk = f"--- {path}\n{files[path]}"
            if used + len(chunk) > self.max_chars:
                continue
            body.append(chunk)
            used += len(chunk)
        return [{"role": "system", "content": METADATA_SYSTEM}, {"role": "user", "content": "\n".join(body)}]

    def extract(self, command: str, files: dict[str, str]):
        from dataclasses import replace as dc_replace

        from models.schedmate.extract import extract_metadata
        from models.schedmate.vocab import canonical_dataset, canonical_model

        static = extract_metadata(command, files)
        try:
            text = self.backend.complete(self.prompt(command, files, static.entry))
        except (OSError, urllib.error.URLError, TimeoutError, ValueError) as exc:
            static.sources["llm"] = f"unavailable ({type(exc).__name__}); static kept"
            return static
        try:
            ans = MetadataAnswer.model_validate(json.loads(_strip_fence(text)))
        except (json.JSONDecodeError, ValidationError, TypeError) as exc:
            static.sources["llm"] = f"invalid answer ({_short(exc)}); static kept"
            return static
        values = ans.model_dump()
        if values.get("model"):
            values["model"] = canonical_model(values["model"])
        if values.get("dataset"):
            values["dataset"] = canonical_dataset(values["dataset"]) or values["dataset"]
        changes, sources = {}, dict(static.sources)
        for name, v in values.items():
            if v is None:
                continue
            if self.mode == "override" or getattr(static, name) is None:
                changes[name] = v
                sources["iterations" if name == "iteration_unit" else name] = "llm"
        sources["llm"] = f"answered ({self.mode})"
        return dc_replace(static, **changes, sources=sources)
