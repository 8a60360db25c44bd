"""An agent that floods its container's stdout (``yes > /proc/1/fd/1``) used to grow Docker's
json log on the host without limit (issue 29): outside the writable layer tbflow measures, so the
host's disk filled and every trial after it failed. Trial containers now have no container log at
all (tbflow never reads one): the flood leaves nothing on the host, the trial is scored on what
its verifier found, and the job goes on. An honest agent's output and files are unaffected."""

import pytest

import flows.trial_flow as trial_flow
from task_factory import make_task, record_of
from tasks_lib.container.docker_client import get_client

FLOOD = "timeout 3 sh -c 'yes > /proc/1/fd/1' || true\necho done > /app/flooded\n"
HONEST = "head -c 3000000 /dev/urandom > /app/data.bin\nfor i in $(seq 2000); do echo \"line $i\"; done\n" \
         "echo ok > /app/flooded\n"


@pytest.mark.docker
def test_stdout_flood_leaves_no_host_log_and_the_job_goes_on(run_job, tmp_path, monkeypatch):
    seen: dict[str, tuple[str, str, int]] = {}
    remove = trial_flow.remove_trial_container

    def inspect_then_remove(job_id: str, trial_id: str) -> None:
        """The container's log as the engine holds it, right before tbflow removes it."""
        from tasks_lib.container.container_removal import container_name

        try:
            info = get_client().api.inspect_container(container_name(job_id, trial_id))
        except Exception:  # noqa: BLE001 - gone already: nothing seen, and the asserts say so
            info = None
        if info is not None:
            path = info.get("LogPath") or ""
            size = _size(path)
            seen[trial_id] = (info["HostConfig"]["LogConfig"]["Type"], path, size)
        remove(job_id, trial_id)

    monkeypatch.setattr(trial_flow, "remove_trial_container", inspect_then_remove)
    ds = tmp_path / "ds"
    make_task(ds, "flood", solve=FLOOD, check="test -s /app/flooded")
    make_task(ds, "honest", solve=HONEST, check="test $(stat -c %s /app/data.bin) -eq 3000000 && test -s /app/flooded")
    result = run_job(ds, concurrency=2)

    for name in ("flood", "honest"):
        rec = record_of(result, name)
        assert (rec.validity.status, rec.validity.reward) == ("scored", 1.0), rec.validity
        driver, path, size = seen[rec.trial_id]
        assert driver == "none" and size == 0, (name, driver, path, size)


def _size(path: str) -> int:
    import os

    try:
        return os.stat(path).st_size if path else 0
    except OSError:
        return 0
