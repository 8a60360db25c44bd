"""What the agent leaves in /logs/verifier before the verifier is tampering with the verifier's
files (docs/judge.md: "a tree 5000 deep in /logs/verifier → set aside before test.sh; scored on its
reward; `tampering`"). The judge set the whole directory aside but reported only ``reward.*``
entries, so a deep tree or thousands of other entries were removed silently: no flag (issue 38).

Real Docker and the real judge. Each task is solved (test.sh writes 1); the agent's solve.sh
leaves something else in /logs/verifier. The trial is scored on test.sh's reward, never invalid,
and flagged ``tampering`` with the entries named (escaped) in ``verifier/tampering.txt``.
"""

from __future__ import annotations

import pytest

from task_factory import make_task, record_of

pytestmark = pytest.mark.docker

REWARD_1 = "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n"
TASKS = {
    "deep-200": "mkdir -p /logs/verifier/$(printf 'd/%.0s' $(seq 200))x\n",
    "many-entries": "cd /logs/verifier && for i in $(seq 3000); do : > f$i; done\n",
    "escape-name": "mkdir /logs/verifier/$'\\e]52;c;eA==\\a\\e[2J'\n",
    "nothing-left": "true\n",
}


@pytest.fixture(scope="module")
def judged(docker_ready, prefect_local, tmp_path_factory):
    from task_factory import run_job_flow

    root = tmp_path_factory.mktemp("logs-verifier-left")
    for name, solve in TASKS.items():
        make_task(root / "ds", name, solve=solve, test_sh=REWARD_1, verifier_timeout=60)
    return run_job_flow(root / "ds", root / "jobs", concurrency=4, env_retries=0), root / "jobs" / "job"


def _tampering(judged, name):
    result, job_dir = judged
    rec = record_of(result, name)
    assert (rec.validity.status, rec.validity.reward) == ("scored", 1.0), (name, rec.validity, rec.flags)
    assert "broke-container" not in [f.kind for f in rec.flags], rec.flags
    evidence = job_dir / "trials" / rec.trial_id / "verifier" / "tampering.txt"
    text = evidence.read_text(encoding="utf-8") if evidence.exists() else ""
    return [f.message for f in rec.flags if f.kind == "tampering"], text


def test_tree_200_deep_left_in_logs_verifier_is_flagged(judged):
    messages, text = _tampering(judged, "deep-200")
    assert any(m.startswith("/logs/verifier held 1 entry other than reward.* before the verifier started")
               for m in messages), messages
    assert "directory d" in text, text


def test_thousands_of_entries_left_in_logs_verifier_are_flagged_with_their_count(judged):
    messages, text = _tampering(judged, "many-entries")
    assert any(m.startswith("/logs/verifier held 3000 entries other than reward.*") for m in messages), messages
    assert "file f" in text, text


def test_entry_named_with_escape_bytes_is_flagged_and_shown_escaped(judged):
    messages, text = _tampering(judged, "escape-name")
    assert messages and "\x1b" not in text and "\x07" not in text
    assert "directory \\x1b]52;c;eA==\\x07\\x1b[2J" in text, text


def test_nothing_left_in_logs_verifier_is_not_flagged(judged):
    messages, _ = _tampering(judged, "nothing-left")
    assert messages == []
