"""``build_timeout_sec`` is enforced: at the deadline the build is cancelled in the daemon (its
RUN step stops: the legacy builder's RUN container goes away, BuildKit's step process is gone),
and the trial is invalid: environment with the build log — not an
internal error, not a build that keeps running after tbflow gave up on it."""

import time
import uuid
from pathlib import Path

import pytest

from task_factory import make_task, record_of
from tasks_lib.container.docker_client import get_client


def _build_containers(marker: str) -> list:
    return [c for c in get_client().containers.list(all=True, ignore_removed=True)
            if marker in " ".join(c.attrs.get("Config", {}).get("Cmd") or [])]


def _build_processes(marker: str) -> list[str]:
    """Processes of this host running the step (BuildKit runs RUN steps as processes of the engine,
    not as containers the API lists; the engine runs on this host)."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            text = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # the process ended meanwhile
            continue
        if marker in text:
            found.append(f"{cmdline.parent.name}: {text}")
    return found


@pytest.mark.docker
def test_build_past_its_timeout_is_cancelled_and_invalid_environment(run_job, tmp_path, monkeypatch):
    import tasks_lib.trial.images as images

    monkeypatch.setattr(images, "extra_build_options", lambda: {"network_mode": "none"})  # tests run offline
    marker = f"tbflow-slow-build-{uuid.uuid4().hex[:8]}"
    ds = tmp_path / "ds"
    make_task(ds, "slow-build", build_timeout=4,
              dockerfile=f"FROM tbflow/base:bookworm\nRUN echo {marker} && sleep infinity\n")
    rec = record_of(run_job(ds, env_retries=2), "slow-build")
    assert (rec.validity.status, rec.validity.kind) == ("invalid", "environment"), rec.validity
    assert "image build timed out after 4 s" in rec.validity.reason
    assert rec.env_retry_errors == []  # a timed-out build is not retried
    log = (tmp_path / "jobs" / "job" / "trials" / rec.trial_id / rec.validity.evidence).read_text()
    assert marker in log and "image build timed out after 4 s" in log, log
    deadline = time.monotonic() + 20
    while (_build_containers(marker) or _build_processes(marker)) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _build_containers(marker) == [], "the build's RUN container still exists: the build was not cancelled"
    assert _build_processes(marker) == [], "the build's RUN step still runs: the build was not cancelled"
