"""The statements ``read_runner_pins`` understands, one small step each.

A step looks at the statement at ``lines[i]``: it returns 0 when the statement is not its kind, or
how many logical lines it consumed after recording what they establish in the ``Draft``. When the
statement *is* its kind but is not fully understood (an unknown flag, an unpinned wheel, a block
with an extra line), it raises ``StepError``, so the whole script is ``NotPinned``: a step never
guesses. Each accepted form is one seen in a TB 2.1 test.sh (the census in bench/RESULTS.md;
tests/fixtures/test_sh/ holds a synthetic script of each pattern) or an exact equivalent of one
(`. ` for `source`, a quoted `"$HOME/..."`, `apt` for `apt-get`).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from tasks_lib.task.runner_pins_model import Draft, RewardRule, WheelPin, norm_name
from tasks_lib.task.shell_lines import LogicalLine, words

Step = Callable[[Draft, list[LogicalLine], int], int]

_UV_INSTALL = re.compile(r"curl -LsSf https://astral\.sh/uv/(\d+\.\d+\.\d+)/install\.sh \| sh")
_UV_ENV = ("source $HOME/.local/bin/env", 'source "$HOME/.local/bin/env"', ". $HOME/.local/bin/env")
_WORKDIR_IF = 'if [ "$PWD" = "/" ]; then'
_REWARD_IF = "if [ $? -eq 0 ]; then"
_REWARD_ECHO = re.compile(r"echo ([0-9]) ?> ?(/logs/verifier/reward\.txt)")
_APT_PACKAGE = re.compile(r"[a-z0-9][a-z0-9+.-]*")
_APT_FLAGS = {"update": {"-y", "-q", "-qq"}, "install": {"-y", "-q", "-qq", "--no-install-recommends"}}
_PYTHON = re.compile(r"3\.\d{1,2}(\.\d{1,3})?")
_DIST_NAME = re.compile(r"[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?")
_VERSION = re.compile(r"\d+(\.\d+)*((a|b|rc)\d+)?(\.post\d+)?(\.dev\d+)?")
_ABS_PATH = re.compile(r"/[A-Za-z0-9_./+@%,:=-]*")
_RUNS_IMAGE_PYTHON = {"pip", "pip3", "python", "python3", "pytest", "py.test"}


class StepError(Exception):
    """The statement is of a step's kind but not fully understood; ``offset`` counts from ``i``."""

    def __init__(self, reason: str, offset: int = 0) -> None:
        super().__init__(reason)
        self.reason = reason
        self.offset = offset


def apt_step(draft: Draft, lines: list[LogicalLine], i: int) -> int:
    """``apt-get update`` / ``apt-get install -y PKG...``, optionally ``&&``-joined and with
    ``DEBIAN_FRONTEND=noninteractive`` in front; the packages are recorded, unversioned."""
    text = lines[i].text
    if not text.startswith(("apt-get ", "apt ", "DEBIAN_FRONTEND=")):
        return 0
    for part in _split_and(words(text)):
        if part[0] == "DEBIAN_FRONTEND=noninteractive":
            part = part[1:]
        if len(part) < 2 or part[0] not in ("apt-get", "apt") or part[1] not in _APT_FLAGS:
            raise StepError("an apt command other than 'update' or 'install'")
        flags = [w for w in part[2:] if w.startswith("-")]
        packages = [w for w in part[2:] if not w.startswith("-")]
        if unknown := set(flags) - _APT_FLAGS[part[1]]:
            raise StepError(f"apt flag(s) {sorted(unknown)} this reader does not know")
        if part[1] == "install" and ("-y" not in flags or not packages):
            raise StepError("'apt-get install' without -y or without packages")
        if part[1] == "update" and packages:
            raise StepError("'apt-get update' with arguments")
        if bad := [p for p in packages if not _APT_PACKAGE.fullmatch(p)]:
            raise StepError(f"apt package name(s) {bad} are not plain names")
        draft.apt.extend(p for p in packages if p not in draft.apt)
    return 1


def uv_install_step(draft: Draft, lines: list[LogicalLine], i: int) -> int:
    """The astral.sh installer of one exact uv version, piped to ``sh`` (the only pipe allowed)."""
    m = _UV_INSTALL.fullmatch(lines[i].text)
    if not m:
        if "astral.sh" in lines[i].text:
            raise StepError("a uv install line other than 'curl -LsSf https://astral.sh/uv/X.Y.Z/install.sh | sh'")
        return 0
    if draft.uv is not None and draft.uv != m.group(1):
        raise StepError("a second, different uv version")
    draft.uv = m.group(1)
    return 1


def uv_env_step(draft: Draft, lines: list[LogicalLine], i: int) -> int:
    """``source $HOME/.local/bin/env``: puts the installed uv's ``uvx`` first on PATH."""
    if lines[i].text not in _UV_ENV:
        return 0
    if draft.uv is None:
        raise StepError("sources uv's env file before any pinned uv is installed")
    draft.uv_on_path = True
    return 1


def workdir_check_step(draft: Draft, lines: list[LogicalLine], i: int) -> int:
    """The 4-line working-directory check: exit 1 (no reward) when ``$PWD`` is ``/``."""
    if lines[i].text != _WORKDIR_IF:
        return 0
    body = [line.text for line in lines[i + 1 : i + 4]]
    if len(body) != 3 or body[1:] != ["exit 1", "fi"] or not _is_plain_echo(body[0]):
        raise StepError("a working-directory check other than 'echo \"...\"; exit 1'", offset=1)
    if draft.cwd is not None:  # after 'cd /' it would always exit 1: not the container's workdir check
        raise StepError("a working-directory check after a 'cd'")
    draft.checks_workdir = True
    return 4


def cd_step(draft: Draft, lines: list[LogicalLine], i: int) -> int:
    """``cd /absolute/path`` before the test command: the runner's working directory."""
    if not lines[i].text.startswith("cd "):
        return 0
    argv = words(lines[i].text)
    if len(argv) != 2 or not _ABS_PATH.fullmatch(argv[1]) or "/.." in argv[1]:
        raise StepError("a 'cd' to anything but one literal absolute path")
    draft.cwd = argv[1]
    return 1


def cp_step(draft: Draft, lines: list[LogicalLine], i: int) -> int:
    """``cp /abs/src /abs/dst``: test.sh staging a file for the tests; kept as a setup command."""
    if not lines[i].text.startswith("cp "):
        return 0
    argv = words(lines[i].text)
    if len(argv) != 3 or not all(_ABS_PATH.fullmatch(a) and "/.." not in a for a in argv[1:]):
        raise StepError("a 'cp' other than one literal absolute file to one literal absolute path")
    draft.setup.append(tuple(argv))
    return 1


def uvx_step(draft: Draft, lines: list[LogicalLine], i: int) -> int:
    """``uvx -p X -w name==ver ... pytest ARGS``: the test command whose exit status is the reward."""
    if lines[i].text.split(" ", 1)[0] != "uvx":
        return 0
    argv = words(lines[i].text)
    if draft.pytest_args is not None:
        raise StepError("a second test command")
    if draft.uv is None:
        raise StepError("uvx runs whatever uv the image has: test.sh installs no pinned uv")
    if not draft.uv_on_path:
        raise StepError("uvx is not the installed one: uv's env file is never sourced")
    python, wheels, rest = _uvx_options(argv[1:])
    if not rest or rest[0] != "pytest" or "&&" in rest:
        raise StepError("uvx runs something other than one 'pytest' command")
    if not any(norm_name(w.name) == "pytest" for w in wheels):
        raise StepError("pytest itself is not pinned with '-w pytest==X'")
    draft.python, draft.wheels, draft.pytest_args = python, wheels, tuple(rest[1:])
    draft.last_was_test = True
    return 1


def _uvx_options(args: list[str]) -> tuple[str, list[WheelPin], list[str]]:
    python: str | None = None
    wheels: list[WheelPin] = []
    k = 0
    while k < len(args) and args[k].startswith("-"):
        option, value = args[k], args[k + 1] if k + 1 < len(args) else ""
        if option in ("-p", "--python"):
            if python is not None or not _PYTHON.fullmatch(value):
                raise StepError(f"uvx Python {value!r} is not one pinned 3.X version")
            python = value
        elif option in ("-w", "--with"):
            wheels.append(_wheel(value, wheels))
        else:
            raise StepError(f"uvx option {option!r} this reader does not know")
        k += 2
    if python is None:
        raise StepError("uvx has no '-p 3.X': it would run on whatever Python it finds")
    return python, wheels, args[k:]


def _wheel(spec: str, seen: list[WheelPin]) -> WheelPin:
    name, sep, version = spec.partition("==")
    if not sep or not _DIST_NAME.fullmatch(name) or not _VERSION.fullmatch(version):
        raise StepError(f"wheel {spec!r} is not one exact 'name==version'")
    if any(norm_name(w.name) == norm_name(name) for w in seen):
        raise StepError(f"wheel {name!r} is pinned twice")
    return WheelPin(name=name, version=version)


def reward_step(draft: Draft, lines: list[LogicalLine], i: int) -> int:
    """The 5-line block writing 1 or 0 to reward.txt from the test command's exit status."""
    if lines[i].text != _REWARD_IF:
        return 0
    if not draft.prev_was_test:
        raise StepError("the reward reads '$?' of something other than the test command")
    body = [line.text for line in lines[i + 1 : i + 5]]
    passed = _REWARD_ECHO.fullmatch(body[0]) if body else None
    failed = _REWARD_ECHO.fullmatch(body[2]) if len(body) == 4 else None
    if not (passed and failed and body[1] == "else" and body[3] == "fi") or passed[2] != failed[2]:
        raise StepError("a reward block other than 'echo 1 > reward.txt / else / echo 0 > reward.txt'", 1)
    draft.reward = RewardRule(path=passed[2], on_pass=passed[1], on_fail=failed[1])
    return 5


def runs_image_python_step(draft: Draft, lines: list[LogicalLine], i: int) -> int:
    """Refuse, with the reason the census counts, a test run on the image's own Python or pytest."""
    first = lines[i].text.split(" ", 1)[0]
    if first in _RUNS_IMAGE_PYTHON:
        raise StepError(f"'{first}' runs the image's own Python/pytest: the runner comes from the container")
    if first == "uv":
        raise StepError("'uv venv/pip/run' builds the runner inside the container from whatever Python it finds")
    if first == "set":
        raise StepError("a 'set' other than 'set -x' changes when the reward gets written")
    return 0


def _split_and(argv: list[str]) -> list[list[str]]:
    parts: list[list[str]] = [[]]
    for word in argv:
        if word == "&&":
            parts.append([])
        else:
            parts[-1].append(word)
    if any(not part for part in parts):
        raise StepError("an empty command around '&&'")
    return parts


def _is_plain_echo(text: str) -> bool:
    argv = words(text)
    return len(argv) >= 2 and argv[0] == "echo" and not argv[1].startswith("-")


STEPS: tuple[Step, ...] = (apt_step, uv_install_step, uv_env_step, workdir_check_step, cd_step, cp_step,
                           uvx_step, reward_step, runs_image_python_step)
