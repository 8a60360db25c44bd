"""Every harness runs in the same task environment: the image's user, HOME, PATH, WORKDIR and
ENV plus [environment] env, whatever the harness (its own config variables aside). PATH is
compared exactly. Found by this test: codex's login shell reset PATH; pi prepended its own
tools dir. The probe runs in the shared happy job (tests/shared_cli_jobs.py): the oracle runs it
as its solution, each CLI through its own shell tool."""

import json

from shared_cli_jobs import HAPPY_HARNESSES, IMAGE_PATH


def test_probe_sees_the_same_environment_under_every_harness(happy_cli_job):
    seen = {}
    for h in HAPPY_HARNESSES:
        rec = happy_cli_job.record(h)
        assert rec.validity.status == "scored", (h, rec.validity)
        seen[h] = (happy_cli_job.agent_dir(h) / "probe.txt").read_text().splitlines()
    reference = seen["oracle"]
    assert reference[1] == "/app"
    assert "HOME=/root" in reference and "IMAGE_MARKER=from-image" in reference
    assert "TASK_MARKER=from-task-toml" in reference
    assert f"PATH={IMAGE_PATH}" in reference
    for lines in seen.values():
        assert lines == reference, json.dumps(seen, indent=1)
