"""pi's shell tool prepended pi's own managed-binaries dir (/tmp/tbflow-pi/agent/bin) to the PATH
of every command the agent ran, so under pi the agent saw another PATH than the task image sets
(and than the oracle or codex see). The probe runs through pi's real bash tool."""

import pytest

from cli_model import pointed_at_mock
from mock_model import MockModel
from task_factory import make_task, record_of

IMAGE_PATH = "/opt/task-tools/bin:/usr/local/bin:/usr/bin:/bin"
PROBE = "echo \"PATH=$PATH\" > /logs/agent/probe.txt; command -v fd rg > /logs/agent/which.txt; echo solved > /app/done.txt"


@pytest.mark.docker
def test_pi_shell_tool_sees_exactly_the_image_path(run_job, tmp_path, monkeypatch):
    ds = tmp_path / "ds"
    make_task(ds, "probe", check="[ -f /app/done.txt ]",
              dockerfile=f"FROM tbflow/base:bookworm\nENV PATH={IMAGE_PATH}\nWORKDIR /app\n",
              agent_timeout=240)  # pi's own start is slow on a loaded machine
    with pointed_at_mock(monkeypatch, MockModel(PROBE)):
        result = run_job(ds, harnesses=["pi"], model="mock/mock-model")
    rec = record_of(result, "probe", "pi")
    assert rec.validity.status == "scored", rec.validity
    agent_dir = tmp_path / "jobs" / "job" / "trials" / rec.trial_id / "agent"
    assert (agent_dir / "probe.txt").read_text().splitlines() == [f"PATH={IMAGE_PATH}"]
    assert "/tmp/tbflow-pi" not in (agent_dir / "which.txt").read_text()
