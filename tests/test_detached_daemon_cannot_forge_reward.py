"""A process the agent leaves behind cannot change the recorded reward after test.sh exited.

The attack: a daemon that detached from the agent (double fork + setsid, so it survives by
design) waits for test.sh to finish and writes 1 into reward.txt and into any file tbflow might
keep in the container. The reward must stay the 0 test.sh wrote, the trial stays scored (the agent
cannot make its own trial invalid), and the tampering is flagged with evidence in trial.json,
results.json, report.md and junit.xml.
"""

import json
import xml.etree.ElementTree as ET

import pytest

from hostile_attacks import DONE_MARK, hold_download
from task_factory import make_task, record_of

# Waits until test.sh wrote its reward and exited (no process runs /tests/test.sh any more), then
# keeps rewriting the verdict's files for 30 s, touching DONE_MARK once it has. The test holds
# tbflow's download of /logs until that mark exists (``hold_download``): on a loaded machine (g2,
# two suites at once) the forger was scheduled only after the download, and tampering after the
# download changes nothing tbflow reads, so there was nothing to flag.
FORGER = r"""cat > /tmp/forger.sh <<'FORGER_END'
until [ -s /logs/verifier/reward.txt ]; do sleep 0.01; done
running() { for c in /proc/[0-9]*/cmdline; do case "$(tr '\0' ' ' < "$c" 2>/dev/null)" in *test.sh*) return 0;; esac; done; return 1; }
while running; do sleep 0.01; done
i=0
while [ $i -lt 3000 ]; do
  echo 1 > /logs/.forged && mv -f /logs/.forged /logs/verifier/reward.txt  # a rename: never seen half-written
  mkdir -p /logs/verifier/.tbflow-snapshot
  echo 1 > /logs/verifier/.tbflow-snapshot/reward.txt; echo 0 > /logs/verifier/.tbflow-snapshot/exit-code
  echo "all tests passed" >> /logs/verifier/test-stdout.txt
  touch /tmp/attack-struck
  sleep 0.01; i=$((i+1))
done
FORGER_END
"""
DETACHED = FORGER + "setsid sh -c 'sh /tmp/forger.sh </dev/null >/dev/null 2>&1 &' </dev/null >/dev/null 2>&1\n"
LEFTOVER = FORGER + "nohup sh /tmp/forger.sh </dev/null >/dev/null 2>&1 &\n"
# test.sh writes its reward last, so only a write after it exited can differ from it
TEST_SH = "#!/bin/bash\necho 'a test failed'\nsleep 1\necho 0 > /logs/verifier/reward.txt\n"


@pytest.mark.docker
@pytest.mark.parametrize("solve", [DETACHED, LEFTOVER], ids=["detached-daemon", "leftover-background-job"])
def test_reward_rewritten_after_test_sh_keeps_test_sh_reward_and_is_flagged(run_job, tmp_path, solve, monkeypatch):
    from tasks_lib.container.sandbox import Sandbox

    assert DONE_MARK == "/tmp/attack-struck"  # the forger's own line
    monkeypatch.setattr(Sandbox, "download_logs", hold_download(Sandbox.download_logs, ("forge",)))
    ds = tmp_path / "ds"
    make_task(ds, "forge", solve=solve, test_sh=TEST_SH)
    result = run_job(ds)
    rec = record_of(result, "forge")
    assert (rec.validity.status, rec.validity.reward) == ("scored", 0.0), rec.validity
    assert rec.verifier.tampered and rec.verifier.rewards == {"reward": 0.0}
    messages = [f.message for f in rec.flags if f.kind == "tampering"]
    assert "reward.txt changed after test.sh exited" in messages, messages
    assert "test-stdout.txt changed after test.sh exited" in messages, messages
    assert any("forger.sh" in p.command for p in rec.kill.left_running), rec.kill.left_running

    job = tmp_path / "jobs" / "job"
    trial = job / "trials" / rec.trial_id
    assert (trial / "verifier" / "reward.txt").read_text() == "0\n"  # what test.sh wrote
    assert (trial / "verifier" / "changed-after-test-sh" / "reward.txt").read_text() == "1\n"
    evidence = (trial / "verifier" / "tampering.txt").read_text()
    assert "b'0\\n'" in evidence and "b'1\\n'" in evidence, evidence

    results = json.loads((job / "results.json").read_text())
    assert results["summaries"][0]["flagged"] == 1 and results["summaries"][0]["invalid"] == 0
    flags = results["trials"][0]["record"]["flags"]
    assert {"kind": "tampering", "message": "reward.txt changed after test.sh exited",
            "evidence": "verifier/tampering.txt"} in flags
    report = (job / "report.md").read_text()
    assert "## Flagged trials (1)" in report and "reward.txt changed after test.sh exited" in report
    case = ET.parse(job / "junit.xml").getroot().find(".//testcase")
    props = [p.get("value") for p in case.iter("property") if p.get("name") == "tampering"]
    assert any(v.startswith("reward.txt changed after test.sh exited") for v in props), props
    assert case.find("failure") is not None  # scored 0: a failure, never an error
