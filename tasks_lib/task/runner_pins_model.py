"""The models ``read_runner_pins`` answers with, and the draft its steps fill in.

Kept apart from the reader and its steps so both can import them without a cycle.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict

_FROZEN = ConfigDict(frozen=True, extra="forbid")


class WheelPin(BaseModel):
    """One ``-w name==version`` of the uvx line, as written."""

    model_config = _FROZEN
    name: str
    version: str

    @property
    def spec(self) -> str:
        return f"{self.name}=={self.version}"


class RewardRule(BaseModel):
    """test.sh's last block: ``on_pass`` into ``path`` when the test command exits 0, else ``on_fail``."""

    model_config = _FROZEN
    path: str = "/logs/verifier/reward.txt"
    on_pass: str = "1"
    on_fail: str = "0"


class RunnerPins(BaseModel):
    """Everything the supplied runner must reproduce to run the tests as test.sh would.

    ``apt_packages`` and ``setup_commands`` are what test.sh does to the *container* besides
    fetching its runner (the tests may shell out to ``expect`` or read a copied file); they are
    unversioned apt names and literal argv lists. ``cwd`` is a ``cd`` before the test command
    (``None``: the container's working directory). ``checks_workdir``: test.sh exits 1, writing no
    reward, when that directory is ``/``.
    """

    model_config = _FROZEN
    python: str
    uv: str
    wheels: tuple[WheelPin, ...]
    pytest_args: tuple[str, ...]
    apt_packages: tuple[str, ...] = ()
    setup_commands: tuple[tuple[str, ...], ...] = ()
    cwd: str | None = None
    checks_workdir: bool = False
    reward: RewardRule = RewardRule()

    def wheel(self, name: str) -> WheelPin | None:
        return next((w for w in self.wheels if norm_name(w.name) == norm_name(name)), None)


class NotPinned(BaseModel):
    """Why the runner cannot be taken from test.sh; ``line`` is 1-based (``None``: the whole file)."""

    model_config = _FROZEN
    reason: str
    line: int | None = None
    text: str = ""

    def __str__(self) -> str:
        where = f"line {self.line}: " if self.line is not None else ""
        shown = f" ({self.text!r})" if self.text else ""
        return f"{where}{self.reason}{shown}"


@dataclass
class Draft:
    """What the statements seen so far established; steps fill it in, in script order."""

    apt: list[str] = field(default_factory=list)
    uv: str | None = None
    uv_on_path: bool = False
    checks_workdir: bool = False
    setup: list[tuple[str, ...]] = field(default_factory=list)
    cwd: str | None = None
    python: str | None = None
    wheels: list[WheelPin] = field(default_factory=list)
    pytest_args: tuple[str, ...] | None = None
    reward: RewardRule | None = None
    last_was_test: bool = False  # set by the test-command step, read by the reward step
    prev_was_test: bool = False


def norm_name(name: str) -> str:
    """PEP 503 normalised distribution name: ``Pytest_JSON.ctrf`` and ``pytest-json-ctrf`` are one."""
    return re.sub(r"[-_.]+", "-", name).lower()
