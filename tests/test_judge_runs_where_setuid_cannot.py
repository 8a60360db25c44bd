"""On an engine whose containers run with ``no-new-privileges`` the judge's setuid start cannot make
it root; tbflow then runs it as root (docs/judge.md, "Not guaranteed") and the trial is
judged as anywhere else, never scored 0 for tbflow's own limitation."""

from __future__ import annotations

import pytest

from task_factory import make_task, record_of

pytestmark = pytest.mark.docker


def test_no_new_privileges_engine_still_judges_the_trial(run_job, tmp_path, monkeypatch):
    import tasks_lib.container.sandbox as sandbox

    monkeypatch.setattr(sandbox, "extra_host_config", lambda: {"security_opt": ["no-new-privileges"]})
    make_task(tmp_path / "ds", "plain", check="[ -d /app ]")
    rec = record_of(run_job(tmp_path / "ds"), "plain")
    assert (rec.validity.status, rec.validity.reward) == ("scored", 1.0), rec.validity
    assert not [f for f in rec.flags if f.kind == "broke-container"], rec.flags
