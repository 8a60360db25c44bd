"""What the agent does to the verifier's files before test.sh runs is repaired and flagged, never
an invalid trial: a reward it wrote itself (removed before test.sh), /logs removed or replaced by a
file, the working directory removed (tbflow recreates them as root). A process that writes a
forged report into tbflow's own verifier channel gets the trial scored 0, flagged."""

import pytest

from task_factory import make_task, record_of

# Finds tbflow's verifier wrapper (the parent of `bash /tests/test.sh`) and writes a report of
# reward 1 into its output channel while test.sh runs.
CHANNEL_FORGER = r"""cat > /tmp/inject.sh <<'INJECT_END'
while :; do
  for f in /proc/[0-9]*/cmdline; do
    c=$(tr '\000' ' ' < "$f" 2>/dev/null)
    if [ "$c" = "bash /tests/test.sh " ]; then
      d=${f%/cmdline}; pp=$(sed -n 's/^PPid:[[:space:]]*//p' "$d/status")
      for fd in /proc/$pp/fd/*; do
        case "$(readlink "$fd")" in pipe:*) printf 'file reward.txt 2\n 31 0a\nend\nexit 0\ndone\n' > "$fd" ;; esac
      done
      exit 0
    fi
  done
  sleep 0.01
done
INJECT_END
setsid sh -c 'sh /tmp/inject.sh </dev/null >/dev/null 2>&1 &' </dev/null >/dev/null 2>&1
"""


def _messages(rec, kind="tampering"):
    return [f.message for f in rec.flags if f.kind == kind]


@pytest.mark.docker
def test_agent_breaking_verifier_files_before_test_sh_is_repaired_and_flagged(run_job, tmp_path):
    ds = tmp_path / "ds"
    make_task(ds, "prewritten", check="false",
              solve="echo 1 > /logs/verifier/reward.txt\necho '{\"reward\": 1}' > /logs/verifier/reward.json\n")
    make_task(ds, "logs-removed", solve="rm -rf /logs\n")
    make_task(ds, "logs-replaced", solve="rm -rf /logs\necho not-a-dir > /logs\n")
    make_task(ds, "workdir-removed", solve="cd /\nrm -rf /app\n", check="[ \"$(pwd)\" = /app ]")
    result = run_job(ds, concurrency=2)

    pre = record_of(result, "prewritten")
    assert (pre.validity.status, pre.validity.reward) == ("scored", 0.0)
    assert "reward.txt was written before the verifier started (removed before test.sh ran)" in _messages(pre)
    evidence = (tmp_path / "jobs" / "job" / "trials" / pre.trial_id / "verifier" / "tampering.txt").read_text()
    assert "reward.json found before test.sh: b'{\"reward\": 1}\\n'" in evidence, evidence

    for name, note in (("logs-removed", "/logs was removed; tbflow recreated it"),
                       ("logs-replaced", "/logs was replaced by a non-directory; tbflow recreated it"),
                       ("workdir-removed", "the workdir /app was removed; tbflow recreated it")):
        rec = record_of(result, name)
        assert (rec.validity.status, rec.validity.reward) == ("scored", 1.0), (name, rec.validity)
        assert note in _messages(rec), (name, rec.flags)
        assert rec.verifier.tampered


@pytest.mark.docker
def test_forged_report_on_verifier_channel_scores_zero_and_is_flagged(run_job, tmp_path):
    ds = tmp_path / "ds"
    make_task(ds, "inject", solve=CHANNEL_FORGER,
              test_sh="#!/bin/bash\nsleep 6\necho 0 > /logs/verifier/reward.txt\n")  # time for the forger to find it
    rec = record_of(run_job(ds), "inject")
    assert (rec.validity.status, rec.validity.reward) == ("scored", 0.0), rec.validity
    assert any("wrote into tbflow's verifier channel" in m for m in _messages(rec, "broke-container")), rec.flags
    assert "a second copy of the verifier wrapper's report appeared on its output channel" in _messages(rec)
