"""How a ``tbflow run``/``resume`` ends, as one table (flows/cli/job_start.py): each failure that is the
input's or the machine's maps to one line naming its place and the exit code docs/running-jobs.md promises
("One owner per job", exit codes); anything else is a bug and is not swallowed."""

from __future__ import annotations

import errno

import pytest

from flows.cli.job_start import ExitCode, refusal_of
from flows.job.job_config import JobConfig
from tasks_lib.errors import DockerUnavailableError, InputError

CONFIG = JobConfig(dataset="examples/tasks", jobs_dir="some/jobs")


def test_exit_codes_are_the_documented_ones():
    assert [(c.name, int(c)) for c in ExitCode] == [("RAN", 0), ("FAILED", 1), ("REFUSED", 2), ("TBFLOW_ERROR", 3),
                                                    ("DISK_FULL", 4)]


@pytest.mark.parametrize("starting", [True, False], ids=["at-start", "during-run"])
def test_bad_input_and_a_missing_engine_exit_2_naming_the_place(starting):
    assert refusal_of(InputError("--jobs-dir", "is a file"), CONFIG, starting=starting) == (
        "--jobs-dir", "is a file", ExitCode.REFUSED)
    assert refusal_of(DockerUnavailableError("start dockerd"), CONFIG, starting=starting) == (
        "docker", "start dockerd", ExitCode.REFUSED)


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EDQUOT])
def test_full_disk_exits_4_naming_the_jobs_dir_and_resume(code):
    where, message, exit_code = refusal_of(OSError(code, "No space left on device"), CONFIG, starting=False)
    assert (where, exit_code) == ("disk full", ExitCode.DISK_FULL)
    assert "some/jobs" in message and "tbflow resume" in message and "No space left on device" in message


def test_prefect_server_failing_to_start_exits_1_only_while_starting():
    assert refusal_of(RuntimeError("server did not start"), CONFIG, starting=True) == (
        "prefect", "server did not start", ExitCode.FAILED)
    assert refusal_of(RuntimeError("a bug"), CONFIG, starting=False) is None


@pytest.mark.parametrize("exc", [OSError(errno.EACCES, "Permission denied"), ValueError("a bug"), KeyError("x")],
                         ids=["other-os-error", "value-error", "key-error"])
def test_other_failures_are_not_refusals(exc):
    assert refusal_of(exc, CONFIG, starting=True) is None
    assert refusal_of(exc, CONFIG, starting=False) is None
