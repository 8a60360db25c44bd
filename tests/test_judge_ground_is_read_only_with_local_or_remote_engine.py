"""With a remote engine (``DOCKER_HOST`` over TCP or SSH) tbflow cannot bind-mount host dirs into a
trial container, so the judge's tools and ``/tests`` live in two volumes of a filler container,
filled through the engine (tasks_lib/container/judge/judge_mounts.py). That path must keep every
guarantee the local binds give: here it is forced on this (local) engine."""

from __future__ import annotations

import pytest

from container_events import JobContainerEvents
from task_factory import make_task, record_of

pytestmark = pytest.mark.docker

SOLVE = ("touch /tests/planted 2>>/logs/agent/attempt.log || echo refused >> /logs/agent/attempt.log\n"
         "touch /opt/tbflow/judge/planted 2>>/logs/agent/attempt.log || echo refused >> /logs/agent/attempt.log\n"
         "echo done > /app/done.txt\n")
TEST_SH = "#!/bin/bash\nls -A /tests > /logs/verifier/listing.txt\n[ -f /app/done.txt ] && echo 1 > /logs/verifier/reward.txt\n"


@pytest.mark.parametrize("remote", [True, False], ids=["remote-engine-filler", "local-engine-binds"])
def test_judge_tools_and_tests_are_read_only_to_the_agent_with_either_engine(run_job, docker_ready, tmp_path,
                                                                             monkeypatch, remote):
    import tasks_lib.container.judge.judge_mounts as judge_mounts

    if remote:
        monkeypatch.setattr(judge_mounts, "engine_is_local", lambda: False)  # this engine, treated as remote
    make_task(tmp_path / "ds", "remote", solve=SOLVE, test_sh=TEST_SH)
    with JobContainerEvents(docker_ready, job_dir=tmp_path / "jobs" / "job") as seen:
        result = run_job(tmp_path / "ds")
    assert [a.get("tbflow.role") for a in seen.created].count("filler") == (1 if remote else 0)
    rec = record_of(result, "remote")
    assert (rec.validity.status, rec.validity.reward) == ("scored", 1.0), rec.validity
    trial = tmp_path / "jobs" / "job" / "trials" / rec.trial_id
    assert (trial / "agent" / "attempt.log").read_text().count("Read-only file system") == 2
    assert (trial / "verifier" / "listing.txt").read_text().split() == ["test.sh"]


@pytest.mark.parametrize("flag", ["ST_NOSUID", "ST_NOEXEC"])
def test_tools_on_a_nosuid_or_noexec_file_system_are_not_bind_mounted(tmp_path, monkeypatch, flag):
    """A bind keeps its source's mount flags: a setuid judge there would not be root, or would not
    run at all, so the trial takes the filler's volumes instead."""
    import io
    import os
    import tarfile
    from types import SimpleNamespace

    import tasks_lib.container.judge.judge_mounts as judge_mounts

    tar = tmp_path / "tools-x.tar"
    with tarfile.open(tar, "w") as tf:
        info = tarfile.TarInfo("opt/tbflow/judge/tbflow-judge")
        info.size, info.mode = 4, 0o4111
        tf.addfile(info, io.BytesIO(b"\x7fELF"))
    real = os.statvfs
    judge_mounts._tools_host_dir.cache_clear()
    assert judge_mounts._tools_host_dir(str(tar)) == tmp_path / "tools-x" / "opt/tbflow/judge"
    judge_mounts._tools_host_dir.cache_clear()
    monkeypatch.setattr(judge_mounts.os, "statvfs", lambda p: SimpleNamespace(f_flag=real(p).f_flag | getattr(os, flag)))
    assert judge_mounts._tools_host_dir(str(tar)) is None
    judge_mounts._tools_host_dir.cache_clear()
