"""A deployment's run refused with ``--model: codex need --model PROVIDER/MODEL``: flags its user
never typed (they set parameters). The flow's Refused message names parameters; the CLI still
names flags; flags of no job field are left alone."""

import pytest

from flows.job.job_config import in_parameter_terms
from flows.job_flow import job_flow


def test_flags_of_job_fields_become_parameter_names():
    assert in_parameter_terms("--model: codex need --model PROVIDER/MODEL") == (
        "parameter model: codex need parameter model PROVIDER/MODEL")
    assert in_parameter_terms("--jobs-dir: /x is a file") == "parameter jobs_dir: /x is a file"
    assert in_parameter_terms("--harness: cannot use harness 'x'") == "parameter harnesses: cannot use harness 'x'"
    assert in_parameter_terms("--job-name: exists; use --force-new") == (
        "parameter job_name: exists; use parameter force_new")


def test_flags_of_no_job_field_and_look_alikes_stay():
    assert in_parameter_terms("--output: not writable") == "--output: not writable"
    assert in_parameter_terms("a--model b") == "a--model b"
    assert in_parameter_terms("no flag here") == "no flag here"


@pytest.mark.usefixtures("prefect_local")
def test_a_refused_flow_run_names_the_parameter(tmp_path):
    state = job_flow(dataset="examples/tasks", harnesses=["codex"], jobs_dir=str(tmp_path / "jobs"), return_state=True)
    assert state.name == "Refused", state
    assert state.message.startswith("parameter model: "), state.message
    assert "--" not in state.message, state.message
    assert not (tmp_path / "jobs").exists()


@pytest.mark.usefixtures("prefect_local")
def test_a_value_the_server_did_not_check_is_one_refused_line(tmp_path):
    """The UI form with "Validate parameters" off let ``concurrency=0`` through to a multi-line
    ``Failed`` (Prefect's own parameter check, before the flow started)."""
    state = job_flow(dataset="examples/tasks", concurrency=0, jobs_dir=str(tmp_path / "jobs"), return_state=True)
    assert (state.type.value, state.name) == ("FAILED", "Refused"), state
    assert state.message == "parameter concurrency: Input should be greater than or equal to 1", state.message
    assert not (tmp_path / "jobs").exists()


@pytest.mark.usefixtures("prefect_local")
def test_a_job_name_template_that_does_not_render_names_the_parameter(tmp_path):
    state = job_flow(dataset="examples/tasks", job_name="x-{day}", jobs_dir=str(tmp_path / "jobs"), return_state=True)
    assert (state.type.value, state.name) == ("FAILED", "Refused"), state
    assert state.message.startswith("parameter job_name: 'x-{day}': unknown field {day}"), state.message
    assert not (tmp_path / "jobs").exists()
