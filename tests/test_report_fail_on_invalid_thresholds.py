"""--fail-on-invalid: every threshold form, its exit code and what it prints."""

import pytest
import typer
from report_fixtures import make_job, make_trial, write_job_dir
from typer.testing import CliRunner

from flows.cli.report_cli import normalize_optional_value, register
from tasks_lib.errors import InputError
from tasks_lib.report.invalid_gate import check, parse_threshold


@pytest.fixture(scope="module")
def app():
    app = typer.Typer()
    register(app)
    return app


@pytest.fixture
def job_dir(tmp_path):
    """40 trials, 12 invalid (30%)."""
    trials = [make_trial(f"t{i:02d}", "codex") for i in range(28)]
    trials += [make_trial(f"x{i:02d}", "codex", invalid="environment") for i in range(12)]
    return write_job_dir(tmp_path, make_job(trials), trials)


def run(app, *args):
    return CliRunner().invoke(app, ["report", *map(str, args)])


@pytest.mark.parametrize("args,code", [
    (["--fail-on-invalid"], 1),                      # bare: any invalid trial fails
    (["--fail-on-invalid=any"], 1),
    (["--fail-on-invalid=11"], 1),                   # more than 11
    (["--fail-on-invalid=12"], 0),                   # exactly 12 is not more than 12
    (["--fail-on-invalid", "12"], 0),                # separate value
    (["--fail-on-invalid=29.9%"], 1),
    (["--fail-on-invalid=30%"], 0),                  # exactly 30% is not more than 30%
    (["--fail-on-invalid", "50%"], 0),
    ([], 0),                                         # no gate
])
def test_exit_codes_per_threshold_form(app, job_dir, args, code):
    result = run(app, job_dir, *args)
    assert result.exit_code == code, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_gate_message_names_counts_and_threshold(app, job_dir):
    result = run(app, job_dir, "--fail-on-invalid=10%")
    assert result.exit_code == 1
    assert "12 invalid trials of 40 (30.0%) exceed --fail-on-invalid=10%" in result.stderr
    ok = run(app, job_dir, "--fail-on-invalid=12")
    assert "ok: 12 invalid trials of 40 (30.0%) are within --fail-on-invalid=12" in ok.stderr
    bare = run(app, "--fail-on-invalid", job_dir)  # bare flag before JOB_DIR does not swallow it
    assert bare.exit_code == 1
    assert "exceed --fail-on-invalid (any invalid trial fails)" in bare.stderr


@pytest.mark.parametrize("value", ["abc", "-3", "2.5", "150%", "10%%", "%"])
def test_bad_threshold_exits_2_naming_the_flag(app, job_dir, value):
    result = run(app, job_dir, f"--fail-on-invalid={value}")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: --fail-on-invalid: ")
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.output
    assert not (job_dir / "report.md").exists()  # bad input: nothing written


def test_missing_job_dir_exits_2_naming_the_path(app, tmp_path):
    result = run(app, tmp_path / "nope", "--fail-on-invalid")
    assert result.exit_code == 2
    assert result.stderr.strip() == f"error: {tmp_path / 'nope'}: not a tbflow job directory (no job.json)"


def test_empty_job_fails_the_gate(app, tmp_path):
    job_dir = write_job_dir(tmp_path, make_job([], harnesses=["oracle"]), [])
    result = run(app, job_dir, "--fail-on-invalid=100%")
    assert result.exit_code == 1 and "no trial was recorded" in result.stderr


def test_parse_and_check_units():
    assert parse_threshold("any").flag == "--fail-on-invalid"
    assert (parse_threshold("5").kind, parse_threshold("5").value) == ("count", 5)
    assert (parse_threshold("12.5%").kind, parse_threshold("12.5%").value) == ("percent", 12.5)
    with pytest.raises(InputError) as exc:
        parse_threshold("ten")
    assert exc.value.where == "--fail-on-invalid"
    assert check(parse_threshold("any"), 0, 10).tripped is False
    assert check(parse_threshold("any"), 1, 10).message == \
        "1 invalid trial of 10 (10.0%) exceeds --fail-on-invalid (any invalid trial fails)"
    assert check(parse_threshold("33.3%"), 1, 3).tripped is True


def test_normalize_optional_value():
    assert normalize_optional_value(["--fail-on-invalid", "jobs/x"]) == ["--fail-on-invalid=any", "jobs/x"]
    assert normalize_optional_value(["jobs/x", "--fail-on-invalid"]) == ["jobs/x", "--fail-on-invalid=any"]
    assert normalize_optional_value(["--fail-on-invalid", "10%", "j"]) == ["--fail-on-invalid=10%", "j"]
    assert normalize_optional_value(["--fail-on-invalid=3"]) == ["--fail-on-invalid=3"]
    assert normalize_optional_value(["--", "--fail-on-invalid"]) == ["--", "--fail-on-invalid"]


def test_tbflow_error_trials_trip_the_gate_like_invalid_ones(app, tmp_path):
    """A trial that ended in a tbflow bug (validity ``error``) was not judged: a CI gate that
    passed it would let a job of crashes through as clean."""
    from tasks_lib.records.record_models import Validity

    trials = [make_trial(f"t{i}", "oracle") for i in range(3)]
    trials[0] = trials[0].model_copy(update={"validity": Validity(status="error", reason="internal error")})
    job = write_job_dir(tmp_path, make_job(trials), trials)
    bare = run(app, job, "--fail-on-invalid")
    assert bare.exit_code == 1, bare.output
    assert "0 invalid trials + 1 tbflow error of 3 (33.3%) exceeds --fail-on-invalid" in bare.stderr
    assert run(app, job, "--fail-on-invalid=1").exit_code == 0
