"""Through a real job: a task that declares Harbor's ``[verifier] environment_mode = "separate"``
is judged in a fresh container of its image that holds the declared artifacts and nothing else
the agent did (no planted file, no leftover process, no forged reward), the collect hook ran
first, the manifest is Harbor's, unsafe members of an artifact are skipped and listed; a shared
task that declares artifacts keeps them (with ``exclude``) and is judged in the agent's container."""

import json
from pathlib import Path

from task_factory import make_task, record_of
from tasks_lib.publish.harbor_export import export_harbor
from tasks_lib.report.html.render_html import trial_page_name

SEPARATE_TOML = """\
schema_version = "1.4"
artifacts = ["/app/out.txt", {{ source = "/app/site", exclude = ["*.tmp"] }}]

[agent]
timeout_sec = 60

[verifier]
timeout_sec = 60
environment_mode = "{mode}"

[[verifier.collect]]
command = "mkdir -p /logs/artifacts && echo collected > /logs/artifacts/hook.txt"

[environment]
build_timeout_sec = 300
network_mode = "no-network"
"""

# the agent: its answer and a page, plus what must never reach a separate verifier: a planted
# file, a leftover process, a forged reward (and a daemon that keeps forging it), an escaping link
SOLVE_AND_PLANT = """\
mkdir -p /app/site && echo 42 > /app/out.txt && echo page > /app/site/index.html && echo x > /app/site/scratch.tmp
ln -s /etc/passwd /app/site/passwd
echo planted > /tmp/planted
(while true; do echo 1 > /logs/verifier/reward.txt 2>/dev/null; sleep 0.05; done) >/dev/null 2>&1 &
setsid sleep 1000 >/dev/null 2>&1 < /dev/null &
"""
PLANT_ONLY = SOLVE_AND_PLANT.replace("echo 42 > /app/out.txt && ", "")

# what a separate verifier must see: the answer and the hook's file, nothing else of the agent's
SEPARATE_CHECK = ('[ "$(cat /app/out.txt)" = 42 ] && [ -f /logs/artifacts/hook.txt ] && [ ! -e /tmp/planted ] '
                  '&& [ -f /app/site/index.html ] && [ ! -e /app/site/scratch.tmp ] && [ ! -e /app/site/passwd ] '
                  '&& ! grep -qs "sleep 1000" /proc/[0-9]*/cmdline')


def _task(ds: Path, name: str, mode: str, solve: str, check: str) -> Path:
    d = make_task(ds, name, solve=solve, check=check)
    (d / "task.toml").write_text(SEPARATE_TOML.format(mode=mode))
    return d


def _manifest(result, task: str) -> dict[str, dict]:
    rec = record_of(result, task)
    rows = json.loads((Path(result.job_dir) / "trials" / rec.spec.trial_id / "artifacts" / "manifest.json").read_text())
    return {r["source"]: r for r in rows}


def test_separate_verifier_sees_the_artifacts_and_nothing_else_the_agent_did(run_job, tmp_path):
    ds = tmp_path / "ds"
    _task(ds, "a-separate-solved", "separate", SOLVE_AND_PLANT, SEPARATE_CHECK)
    _task(ds, "b-separate-forging", "separate", PLANT_ONLY, '[ -f /app/out.txt ]')
    _task(ds, "c-shared-artifacts", "shared", SOLVE_AND_PLANT, '[ -e /tmp/planted ] && [ -e /app/site/scratch.tmp ]')

    result = run_job(ds, harnesses=["oracle"])

    solved = record_of(result, "a-separate-solved")
    assert (solved.validity.status, solved.validity.reward) == ("scored", 1.0), solved.validity
    assert solved.verifier.environment == "separate"
    assert [c.exit_code for c in solved.verifier.collect] == [0]
    rows = _manifest(result, "a-separate-solved")
    assert {s: (r["type"], r["status"]) for s, r in rows.items()} == {
        "/logs/artifacts": ("directory", "ok"), "/app/out.txt": ("file", "ok"), "/app/site": ("directory", "ok")}
    assert rows["/app/site"]["exclude"] == ["*.tmp"] and rows["/app/site"]["skipped"] == ["site/passwd"]
    trial = Path(result.job_dir) / "trials" / solved.spec.trial_id
    assert (trial / "artifacts" / "app" / "out.txt").read_text() == "42\n"
    assert not (trial / "artifacts" / "app" / "site" / "scratch.tmp").exists()

    forging = record_of(result, "b-separate-forging")  # the forged reward and its daemon stayed behind
    assert (forging.validity.status, forging.validity.reward) == ("scored", 0.0), forging.validity
    assert _manifest(result, "b-separate-forging")["/app/out.txt"]["status"] == "failed"

    shared = record_of(result, "c-shared-artifacts")  # judged where the agent worked, artifacts kept too
    assert (shared.validity.status, shared.validity.reward) == ("scored", 1.0), shared.validity
    assert shared.verifier.environment == "shared"
    assert _manifest(result, "c-shared-artifacts")["/app/out.txt"]["status"] == "ok"

    page = (Path(result.job_dir) / "report-trials" / trial_page_name(solved.spec.trial_id)).read_text()
    assert 'id="separate"' in page and "the container's (detection only)" in page
    assert "skipped as unsafe: site/passwd" in page and "<code>/app/out.txt</code>" in page

    export_harbor(Path(result.job_dir), tmp_path / "export")  # Harbor's trial layout keeps artifacts/
    exported = list((tmp_path / "export").glob(f"*/{solved.spec.trial_id}/artifacts/manifest.json"))
    assert len(exported) == 1 and (exported[0].parent / "app" / "out.txt").read_text() == "42\n"
