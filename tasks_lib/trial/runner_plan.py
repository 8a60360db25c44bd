"""Which runner runs a task's tests: tbflow's supplied one, or test.sh verbatim (pure: no I/O).

Prevent, don't detect (docs/judge.md): when test.sh pins its runner fully (``read_runner_pins``:
uv, the Python, pytest and every ``-w`` wheel, then a 1/0 reward from pytest's exit status),
tbflow supplies that runner itself from a read-only mount and the judge starts it in place of
test.sh's prologue. Nothing the agent left in the container (libc and the loader's
configuration, sourced files, pip/uv settings, site-packages, bytecode, a /pytest.ini) can then
change what runs the tests, and the verifier downloads nothing.

The supplied runner is used only where it runs the tests *as test.sh would*; anything else keeps
test.sh verbatim with the reason recorded: packages test.sh installs into the container for the
tests to use (the supplied runner installs nothing there), setup commands, a Python other than
the one tbflow prepares, a task ``verifier.env`` that steers the interpreter (the judge removes
such variables from the runner's environment), or the user's switch.
"""

from __future__ import annotations

from pydantic import BaseModel

from tasks_lib.task.runner_pins_model import NotPinned, RunnerPins

MOUNT = "/opt/tbflow/runner"
#: the Pythons tbflow can supply (tasks_lib/container/supplied_runner)
PYTHONS = ("3.13",)
#: variables the judge removes from the runner's environment (judge/runner.c SCRUBBED)
SCRUBBED = ("LD_", "GLIBC_TUNABLES", "PYTHON", "PYTEST_", "OPENSSL_", "SSL_CERT_", "LOCPATH", "GCONV_PATH", "NLSPATH",
            "MALLOC_")
#: what test.sh installs only to fetch uv's installer; kept out when no test names it
PROLOGUE_ONLY = frozenset({"curl"})
#: pytest's configuration files in the order it looks for them in the rootdir (/tests)
PYTEST_CONFIGS = ("pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")


class RunnerPlan(BaseModel):
    """How the judge starts the supplied runner for one task."""

    python: str
    wheels: list[str]
    argv: list[str]
    cwd: str | None
    checks_workdir: bool
    reward_path: str
    on_pass: str
    on_fail: str


def _config_file(test_files: dict[str, str]) -> str:
    """``-c``: the tests' own pytest configuration (what pytest would find in /tests), else an
    empty one of the runner's: pytest must never look above /tests, where the agent writes."""
    for name in PYTEST_CONFIGS:
        if name in test_files:
            return f"/tests/{name}"
    return f"{MOUNT}/pytest.ini"


def _names_a_package(test_files: dict[str, str], package: str) -> bool:
    return any(package in text for name, text in test_files.items() if name != "test.sh")


def why_not_supplied(pins: RunnerPins | NotPinned, test_files: dict[str, str], verifier_env: dict[str, str],
                     verbatim: bool) -> str | None:
    """Why test.sh must run verbatim (the container's runner), or None when tbflow supplies it."""
    if verbatim:
        return "the job asked for test.sh verbatim (--verbatim-test-sh)"
    if isinstance(pins, NotPinned):
        return f"test.sh does not pin its runner: {pins}"
    if pins.python not in PYTHONS:
        return f"test.sh asks for Python {pins.python}; tbflow supplies {', '.join(PYTHONS)}"
    installs = [p for p in pins.apt_packages if p not in PROLOGUE_ONLY or _names_a_package(test_files, p)]
    if installs:
        return (f"test.sh installs {', '.join(installs)} into the container for the tests; the supplied runner "
                "installs nothing there")
    if pins.setup_commands:
        return "test.sh runs setup commands in the container before the tests"
    steering = sorted(k for k in verifier_env if k.startswith(SCRUBBED))
    if steering:
        return f"[verifier] env sets {', '.join(steering)}, which the judge keeps out of the supplied runner"
    return None


def plan_runner(pins: RunnerPins, test_files: dict[str, str]) -> RunnerPlan:
    """The command for pins ``why_not_supplied`` accepted; test files are relative names under tests/."""
    argv = [f"{MOUNT}/bin/python{pins.python}",
            "-I", "-S", "-B", "-X", "utf8", f"{MOUNT}/tbflow_pytest.py",
            "-c", _config_file(test_files), "--rootdir=/tests", "--confcutdir=/tests", "-p", "no:cacheprovider",
            *pins.pytest_args]
    return RunnerPlan(python=pins.python, wheels=[w.spec for w in pins.wheels], argv=argv, cwd=pins.cwd,
                      checks_workdir=pins.checks_workdir, reward_path=pins.reward.path,
                      on_pass=pins.reward.on_pass, on_fail=pins.reward.on_fail)
