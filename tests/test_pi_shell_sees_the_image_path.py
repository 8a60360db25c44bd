"""pi's shell tool prepended pi's own managed-binaries dir (/tmp/tbflow-pi/agent/bin) to the PATH
of every command the agent ran, so under pi the agent saw another PATH than the task image sets
(and than the oracle or codex see). The probe runs through pi's real bash tool, in the shared
happy job (tests/shared_cli_jobs.py), whose image sets ``ENV PATH``."""

from shared_cli_jobs import IMAGE_PATH


def test_pi_shell_tool_sees_exactly_the_image_path(happy_cli_job):
    rec = happy_cli_job.record("pi")
    assert rec.validity.status == "scored", rec.validity
    agent_dir = happy_cli_job.agent_dir("pi")
    assert f"PATH={IMAGE_PATH}" in (agent_dir / "probe.txt").read_text().splitlines()
    assert "/tmp/tbflow-pi" not in (agent_dir / "which.txt").read_text()
