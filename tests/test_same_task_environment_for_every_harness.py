"""Every harness runs in the same task environment: the image's user, HOME, PATH, WORKDIR and
ENV plus [environment] env, whatever the harness (its own config variables and tool dirs under
/tmp/tbflow-<harness> aside). Found by this test: codex's login shell reset PATH."""

import json

import pytest

from mock_model import MockModel
from task_factory import make_task, record_of

HARNESSES = ["oracle", "codex", "opencode", "pi", "claude-code"]
PROBE = ("{ id; pwd; echo \"HOME=$HOME\"; echo \"PATH=$PATH\"; echo \"IMAGE_MARKER=$IMAGE_MARKER\"; "
         "echo \"TASK_MARKER=$TASK_MARKER\"; } > /logs/agent/probe.txt; echo solved > /app/done.txt")


@pytest.fixture
def probe_model(monkeypatch):
    with MockModel(PROBE) as m:
        monkeypatch.setenv("TBFLOW_OPENAI_BASE_URL", f"{m.base_url}/v1")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-probe")
        monkeypatch.setenv("TBFLOW_ANTHROPIC_BASE_URL", m.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-probe")
        yield m


def test_probe_sees_the_same_environment_under_every_harness(run_job, tmp_path, probe_model):
    ds = tmp_path / "ds"
    make_task(ds, "probe", solve=PROBE + "\n", check="[ -f /app/done.txt ]",
              dockerfile="FROM tbflow/base:bookworm\nENV IMAGE_MARKER=from-image\n"
                         "ENV PATH=/opt/task-tools/bin:/usr/local/bin:/usr/bin:/bin\nWORKDIR /app\n",
              extra_toml='\n[environment.env]\nTASK_MARKER = "from-task-toml"\n')
    result = run_job(ds, harnesses=HARNESSES, model="mock/mock-model", concurrency=2)
    seen = {}
    for h in HARNESSES:
        rec = record_of(result, "probe", h)
        assert rec.validity.status == "scored", (h, rec.validity)
        seen[h] = (tmp_path / "jobs" / "job" / "trials" / rec.trial_id / "agent" / "probe.txt").read_text().splitlines()
    reference = seen["oracle"]
    assert reference[1] == "/app"
    assert "HOME=/root" in reference and "IMAGE_MARKER=from-image" in reference
    assert "TASK_MARKER=from-task-toml" in reference
    assert "PATH=/opt/task-tools/bin:/usr/local/bin:/usr/bin:/bin" in reference
    for lines in seen.values():
        assert [_task_owned(line) for line in lines] == reference, json.dumps(seen, indent=1)


def _task_owned(line: str) -> str:
    """Drop harness-owned PATH entries (pi prepends its own tools dir under /tmp/tbflow-pi)."""
    if not line.startswith("PATH="):
        return line
    keep = [p for p in line[5:].split(":") if not p.startswith(("/tmp/tbflow-", "/opt/tbflow/"))]
    return "PATH=" + ":".join(keep)
