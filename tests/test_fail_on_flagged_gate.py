"""``tbflow report --fail-on-flagged``: CI can refuse a job in which an agent reached for the judge."""

from __future__ import annotations

import pytest

from tasks_lib.errors import InputError
from tasks_lib.report.flag_gate import ALL_KINDS, DEFAULT_KINDS, check_flags, parse_kinds


class _Rec:
    def __init__(self, trial_id, *kinds):
        from tasks_lib.records.record_models import TrialFlag

        self.trial_id = trial_id
        self.flags = [TrialFlag(kind=k, message=k) for k in kinds]


def test_bare_flag_fails_on_tampering_breakage_and_toolchain_but_not_on_services():
    assert parse_kinds("any") == DEFAULT_KINDS and "agent-processes" not in DEFAULT_KINDS
    records = [_Rec("a.oracle.1", "agent-processes"), _Rec("b.oracle.1", "tampering", "broke-container")]
    gate = check_flags(DEFAULT_KINDS, records)
    assert gate.tripped and gate.message == "1 flagged trial (broke-container: 1, tampering: 1): b.oracle.1"
    assert not check_flags(DEFAULT_KINDS, [_Rec("a.oracle.1", "agent-processes")]).tripped
    assert check_flags(parse_kinds("all"), records).tripped and parse_kinds("all") == ALL_KINDS


def test_unknown_kind_names_the_flag():
    with pytest.raises(InputError, match="--fail-on-flagged.*not a flag kind"):
        parse_kinds("tampering,forgery")


def test_report_cli_exits_1_on_a_flagged_trial_and_0_on_services_only(tmp_path):
    import typer
    from report_fixtures import make_job, make_trial, write_job_dir
    from typer.testing import CliRunner

    from flows.cli.report_cli import register
    from tasks_lib.records.record_models import TrialFlag

    app = typer.Typer()
    register(app)
    forged = make_trial("forge").model_copy(update={"flags": [TrialFlag(kind="tampering", message="reward.txt changed")]})
    served = make_trial("serve").model_copy(update={"flags": [TrialFlag(kind="agent-processes", message="1 process")]})
    job_dir = write_job_dir(tmp_path, make_job([forged, served]), [forged, served])
    bare = CliRunner().invoke(app, ["report", str(job_dir), "--fail-on-flagged", "--no-write"])
    assert bare.exit_code == 1 and "FAIL: 1 flagged trial (tampering: 1): forge__oracle__1" in bare.output
    only = CliRunner().invoke(app, ["report", "--fail-on-flagged=agent-processes", str(job_dir), "--no-write"])
    assert only.exit_code == 1 and "serve__oracle__1" in only.output
    none = CliRunner().invoke(app, ["report", str(job_dir), "--fail-on-flagged=broke-container", "--no-write"])
    assert none.exit_code == 0 and "ok: no trial flagged broke-container" in none.output
    bad = CliRunner().invoke(app, ["report", str(job_dir), "--fail-on-flagged=forgery", "--no-write"])
    assert bad.exit_code == 2 and "--fail-on-flagged" in bad.output
