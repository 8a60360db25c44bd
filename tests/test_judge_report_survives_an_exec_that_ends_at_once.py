"""Docker can drop the last output of an exec whose process exits right after writing it
(moby#27289). With two test suites running at once it dropped a launcher's report (``true`` as
the agent: "tbflow-launch did not start true: the judge wrote nothing", invalid: environment) and
a verifier's (exit 0, no report: scored 0 as "the agent broke its container", on a solved task).

So the judge and the launcher wait after their ``end`` record until the host has closed the
exec's stdin, which it does once it has read ``end`` (judge/judge.h); and a report that still
goes missing from a judge that ended with exit 0 is the environment's failure, never the agent's.
"""

from __future__ import annotations

import dataclasses
import socket
import time
import uuid

import pytest

from task_factory import make_task, record_of

pytestmark = pytest.mark.docker


@pytest.fixture
def sandbox(docker_ready, tmp_path):
    from tasks_lib.container.docker_client import LABEL_JOB_DIR
    from tasks_lib.container.sandbox import Sandbox
    from tasks_lib.task.task_loader import load_task

    task = load_task(make_task(tmp_path / "ds", "ack"))
    box = Sandbox.start("tbflow/base:bookworm", task.config.environment, uuid.uuid4().hex[:12], "ack.test.1",
                        labels={LABEL_JOB_DIR: str((tmp_path / "jobs").resolve())})
    try:
        yield box
    finally:
        box.remove()


def _start_unacked(container: str, argv: list[str], user: str):
    """An exec with stdin attached whose reader never acknowledges ``end`` by itself."""
    from tasks_lib.container.docker_client import get_client
    from tasks_lib.container.judge.judge_exec import StreamReader

    api = get_client().api
    exec_id = api.exec_create(container, argv, user=user, stdin=True, stdout=True, stderr=True)["Id"]
    reader = StreamReader(api.exec_start(exec_id, socket=True), "test-exec", ack_end=False)
    reader.start()
    return api, exec_id, reader


def _wait_for_end(reader) -> None:
    from tasks_lib.container.judge.judge_channel import parse_channel

    while not parse_channel(bytes(reader.out)).ended:
        assert reader.is_alive(), bytes(reader.out)
        reader.join(0.02)


def _ack_and_wait(api, exec_id, reader) -> int:
    reader._sock.shutdown(socket.SHUT_WR)
    while (info := api.exec_inspect(exec_id))["Running"] or info["ExitCode"] is None:
        time.sleep(0.05)
    reader.close()
    return info["ExitCode"]


def test_judge_stays_until_the_host_has_read_its_end_record(sandbox):
    from tasks_lib.container.judge.judge_tools import JUDGE, JUDGE_USER

    api, exec_id, reader = _start_unacked(sandbox.id, [JUDGE, "procs"], JUDGE_USER)
    _wait_for_end(reader)
    # its report is whole and it has nothing left to do, yet it waits for us (up to HOST_ACK_MS)
    assert api.exec_inspect(exec_id)["Running"] is True
    assert _ack_and_wait(api, exec_id, reader) == 0


def test_launcher_starts_the_agent_only_after_the_host_has_its_report(sandbox):
    from tasks_lib.container.judge.judge_tools import LAUNCH, TOOLS_BASH

    argv = [LAUNCH, "launch", "/tmp/out.txt", "", "--", TOOLS_BASH, "-c", "echo started > /tmp/mark"]
    api, exec_id, reader = _start_unacked(sandbox.id, argv, "root")
    _wait_for_end(reader)
    code, _ = sandbox.run_tool([TOOLS_BASH, "-c", "test -e /tmp/mark"], "test")
    assert code == 1, "the agent's command ran before the launcher's report was read"
    assert _ack_and_wait(api, exec_id, reader) == 0
    code, out = sandbox.run_tool([TOOLS_BASH, "-c", "read -r line < /tmp/mark; echo \"$line\""], "test")
    assert (code, out) == (0, "started\n")


def test_verifier_report_lost_in_transit_is_invalid_environment_and_retried(run_job, tmp_path, monkeypatch):
    from tasks_lib.container.judge.judge_channel import parse_channel
    from tasks_lib.trial import verifier_stage

    real = verifier_stage.run_judge
    lost: list[str] = []

    def drop_the_end_once(*args, **kwargs):
        run = real(*args, **kwargs)
        if not lost:  # Docker's race, injected: the exit code says 0, the last record never came
            lost.append("end")
            return dataclasses.replace(run, channel=parse_channel(run.stdout[:-len(b"end 0\n\n")]))
        return run

    monkeypatch.setattr(verifier_stage, "run_judge", drop_the_end_once)
    make_task(tmp_path / "ds", "solved")
    first = record_of(run_job(tmp_path / "ds", job_name="no-retry", env_retries=0), "solved")
    assert (first.validity.status, first.validity.kind) == ("invalid", "environment"), first.validity
    assert "report did not arrive whole" in first.validity.reason and not first.flags
    lost.clear()
    second = record_of(run_job(tmp_path / "ds", job_name="retried", env_retries=1), "solved")
    assert (second.validity.status, second.validity.reward) == ("scored", 1.0), second.validity
    assert len(second.env_retry_errors) == 1 and "report did not arrive whole" in second.env_retry_errors[0]
