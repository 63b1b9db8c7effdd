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

from models.schedmate.failures import Diagnosis

COMPONENTS = {
    "infrastructure": ("GPU", "NVLink", "network", "NCCL", "node", "storage"),
    "framework": ("memory", "dataloader", "model"),
    "script": ("import", "key", "type", "syntax", "file"),
}


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
