"""Choose and prepare the verifier's runner for a trial (the I/O around ``runner_plan``).

Called by build-image: the supplied runner is prepared on the host with the image (once per
pinned set, cached by content: ``tasks_lib/container/supplied_runner``) and mounted read-only
when the trial's container starts. Whatever keeps tbflow from supplying it (test.sh does not pin
its runner, a registry cannot be reached, a remote engine) leaves test.sh verbatim, with the
reason in the record: never an invalid trial.
"""

from __future__ import annotations

from pathlib import Path

from tasks_lib.container.judge.judge_mounts import binds_possible
from tasks_lib.container.supplied_runner.prepare import prepare_runner
from tasks_lib.errors import RunnerUnavailable
from tasks_lib.records.record_models import VerifierRunner
from tasks_lib.task.runner_pins import read_runner_pins
from tasks_lib.task.task_model import Task
from tasks_lib.trial.runner_plan import plan_runner, why_not_supplied

#: the most of a test file read to see which commands the tests name (a task's own files)
TEST_FILE_CAP = 1 << 20


def _test_files(tests_dir: Path) -> dict[str, str]:
    """Every file under tests/ by its relative name, as text (bounded; undecodable bytes replaced)."""
    files: dict[str, str] = {}
    for path in sorted(tests_dir.rglob("*")):
        if path.is_file() and not path.is_symlink():
            with path.open("rb") as fh:
                files[path.relative_to(tests_dir).as_posix()] = fh.read(TEST_FILE_CAP).decode("utf-8", "replace")
    return files


def container_runner(why: str) -> VerifierRunner:
    return VerifierRunner(source="container", why=why)


def choose_runner(task: Task, verbatim: bool) -> VerifierRunner:
    """The runner the trial's verifier will use, prepared when it is tbflow's."""
    files = _test_files(task.tests_dir)
    pins = read_runner_pins(files.get("test.sh", ""))
    why = why_not_supplied(pins, files, task.config.verifier.env, verbatim)
    if why is not None:
        return container_runner(why)
    if not binds_possible():
        return container_runner("the engine is not on this host (or tbflow is not root): the runner's read-only "
                                "mount needs a bind of a host directory")
    plan = plan_runner(pins, files)  # type: ignore[arg-type]  # why_not_supplied accepted RunnerPins
    try:
        prepared = prepare_runner(plan.python, plan.wheels)
    except RunnerUnavailable as exc:
        return container_runner(f"tbflow could not prepare the runner test.sh pins: {exc}")
    return VerifierRunner(source="tbflow", why=f"test.sh pins Python {plan.python} and {', '.join(plan.wheels)}",
                          python=prepared.python, digest=prepared.digest, lock=list(prepared.lock), argv=plan.argv,
                          cwd=plan.cwd, checks_workdir=plan.checks_workdir, reward_path=plan.reward_path,
                          on_pass=plan.on_pass, on_fail=plan.on_fail, host_dir=str(prepared.path))
