"""The scripted mock model as the upstream of tbflow's gateway, for tests that run the real CLIs.

``pointed_at_mock(monkeypatch, MockModel(...))`` starts the mock and points the gateway's
upstreams (OpenAI, Anthropic, Gemini) at it (``prefix`` injects a fault: ``/status/500``, ``/hang``); ``solvable_task``
writes a task the mock's default command solves.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Iterator

from mock_model import MockModel
from task_factory import make_task

CLIS = ["codex", "opencode", "pi", "claude-code"]
#: the CLIs tbflow ships as declarative harness files (harnesses/declared/*.toml)
DECLARED_CLIS = ["qwen-code", "gemini-cli"]
SOLVE = "echo solved > /app/done.txt"


@contextlib.contextmanager
def pointed_at_mock(monkeypatch, mock: MockModel, prefix: str = "") -> Iterator[MockModel]:
    with mock:
        monkeypatch.setenv("TBFLOW_OPENAI_BASE_URL", f"{mock.base_url}{prefix}/v1")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-openai")
        monkeypatch.setenv("TBFLOW_ANTHROPIC_BASE_URL", f"{mock.base_url}{prefix}")
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
        monkeypatch.setenv("TBFLOW_GEMINI_BASE_URL", f"{mock.base_url}{prefix}")
        monkeypatch.setenv("GEMINI_API_KEY", "AIza-test-gemini")
        yield mock


def solvable_task(root: Path, name: str = "make-done", **kw) -> Path:
    """A task whose verifier gives reward 1 once /app/done.txt says ``solved``; returns the dataset dir.

    The agent timeout defaults to 240 s: a CLI's own start took up to 52 s on a loaded machine."""
    kw.setdefault("agent_timeout", 240)
    make_task(root, name, check="[ \"$(cat /app/done.txt)\" = solved ]",
              instruction="Create /app/done.txt containing the word solved.\n", **kw)
    return root
