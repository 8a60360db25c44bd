"""End to end: a real job (Docker, Prefect; oracle and nop, one task whose verifier writes no
reward) has report.html written by the job itself, filterable in Chromium, and exports through
``tbflow export`` to a directory Harbor's own code lists, with the invalid trials as exceptions."""

from __future__ import annotations

import re
from pathlib import Path

from headless_chromium import dump_dom
from task_factory import make_task
from harbor_check import export_by_cli, harbor_check



def test_real_job_report_html_and_harbor_export(run_job, tmp_path):
    tasks = tmp_path / "tasks"
    make_task(tasks, "ok", solve="touch /tmp/done\n", check="test -f /tmp/done")
    make_task(tasks, "noreward", test_sh="#!/bin/bash\nexit 0\n")
    result = run_job(tasks, harnesses=["oracle", "nop"], job_name="pub")
    statuses = sorted((r.spec.task_name, r.spec.harness, r.validity.status, r.validity.reward) for r in result.records)
    assert statuses == [("noreward", "nop", "invalid", None), ("noreward", "oracle", "invalid", None),
                        ("ok", "nop", "scored", 0.0), ("ok", "oracle", "scored", 1.0)]

    dom = dump_dom(Path(result.job_dir) / "report.html", "status=invalid")
    shown = [m for m in re.findall(r"<tr data-status=[^>]*>", dom) if "hidden" not in m]
    assert len(shown) == 2 and all('data-kind="verifier"' in m for m in shown)

    out = tmp_path / "export"
    res = export_by_cli(result.job_dir, out)
    assert "2 as exceptions" in res.stdout and "at least 5 scored trials per task" in res.stderr

    checked = harbor_check(out)
    listed = checked["viewer"]["pub"]  # what `harbor view` lists
    assert sorted(((v["reward"], v["error_type"]) for v in listed.values()), key=str) == sorted(
        [(None, "TbflowInvalidVerifier")] * 2 + [(0.0, None), (1.0, None)], key=str)
    seen = checked["jobs"]["pub"]
    by_name = {(t["task_name"], t["agent"]): t for t in seen["trials"].values()}
    assert by_name[("ok", "oracle")]["rewards"] == {"reward": 1.0}
    assert by_name[("ok", "nop")]["rewards"] == {"reward": 0.0}
    for harness in ("oracle", "nop"):
        invalid = by_name[("noreward", harness)]
        assert invalid["rewards"] is None and invalid["reward_valid"] is False
        assert invalid["exception_type"] == "TbflowInvalidVerifier" and invalid["exception_message"]
    assert (out / "pub" / "ok.oracle.1" / "verifier" / "test-stdout.txt").is_file()
