"""Through a real job: a task that declares Harbor's ``network_mode = "no-network"`` (and not the
legacy ``allow_internet``) runs in a container with no network interface but loopback, as
declared; a key no schema knows is shown in the report, and a sibling task that asks for a
verifier environment of its own (not supported yet) is refused by that key and listed, never run
in another environment than declared."""

from pathlib import Path

from task_factory import make_task, record_of

NO_NETWORK_TOML = """\
schema_version = "1.4"
flavour = "spicy"

[agent]
timeout_sec = 60

[verifier]
timeout_sec = 60

[environment]
build_timeout_sec = 300
network_mode = "no-network"
"""


def test_no_network_task_sees_only_loopback_and_refusals_are_listed(run_job, tmp_path):
    ds = tmp_path / "ds"
    offline = make_task(ds, "a-offline", check='[ "$(ls /sys/class/net)" = lo ]')
    (offline / "task.toml").write_text(NO_NETWORK_TOML)
    separate = make_task(ds, "b-separate")
    (separate / "task.toml").write_text(NO_NETWORK_TOML + '\n[verifier.environment]\ndocker_image = "grader:1"\n')

    result = run_job(ds, harnesses=["oracle"])

    rec = record_of(result, "a-offline")
    assert (rec.validity.status, rec.validity.reward) == ("scored", 1.0), rec.validity
    assert [r.spec.task_name for r in result.records] == ["a-offline"]
    assert [(p.name, p.where.endswith("task.toml [verifier.environment]")) for p in result.task_problems] == [
        ("b-separate", True)]
    assert [(n.name, n.message.split(":")[0]) for n in result.task_notes] == [("a-offline", "flavour")]
    report = (Path(result.job_dir) / "report.md").read_text()
    assert "## Task keys tbflow does not know (1)" in report and "flavour" in report
    assert "## Tasks that could not be loaded (1)" in report and "verifier environment of its own" in report
