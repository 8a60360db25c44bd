"""``key_secrets`` (flows/job/model_keys.py): a Secret block may stand in only for a model key
variable, and a block that is not on the server refuses the run in one line naming the parameter
and the block, before anything is written. A block's key is the gateway's upstream key (over the
environment's) and is in its redaction list. Without Docker: the refusals come before any
container, and the real local Prefect server (``prefect_local``) holds the blocks."""

import pytest
from pydantic import ValidationError

from flows.job.job_config import JobConfig
from flows.job_flow import job_flow
from flows.job.job_plan import upstream_for
from tasks_lib.gateway.model_gateway import ModelGateway

CANARY = "sk-canary-from-a-secret-block-0123456789"


def test_a_block_for_a_variable_other_than_a_model_key_is_refused_naming_the_parameter():
    with pytest.raises(ValidationError) as err:
        JobConfig(dataset="examples/tasks", key_secrets={"AWS_SECRET_ACCESS_KEY": "aws"})
    (e,) = err.value.errors()
    assert e["loc"] == ("key_secrets",) and "AWS_SECRET_ACCESS_KEY" in e["msg"] and "OPENAI_API_KEY" in e["msg"]
    assert JobConfig(dataset="x", key_secrets={"GEMINI_API_KEY": "gemini-key"}).key_secrets == {
        "GEMINI_API_KEY": "gemini-key"}


def test_the_schema_refuses_other_variables_and_credentials_in_jobs_dir():
    """What the server checks before it creates a run (enforce_parameter_schema)."""
    import jsonschema
    from prefect.utilities.callables import parameter_schema

    schema = parameter_schema(job_flow).model_dump_for_openapi()
    valid = jsonschema.Draft202012Validator(schema)

    def errors(**params) -> list[str]:
        return [e.message for e in valid.iter_errors({"dataset": "x", **params})]

    assert errors(key_secrets={"OPENAI_API_KEY": "openai-key"}) == []
    assert errors(key_secrets={"PATH": "x"}) and errors(key_secrets={"OPENAI_API_KEY": "sk-Not_A_Block_Name"})
    assert errors(jobs_dir="s3://AKIAEXAMPLE:secret@bucket/jobs")
    assert errors(jobs_dir="https://user@host/jobs")
    for fine in ("jobs", "/mnt/tbflow/jobs", "s3://bucket/prefix@2026", "/home/u@corp/jobs"):
        assert errors(jobs_dir=fine) == [], fine


@pytest.mark.usefixtures("prefect_local")
def test_a_refused_flow_run_names_the_parameter_for_another_variable(tmp_path):
    state = job_flow(dataset="examples/tasks", jobs_dir=str(tmp_path / "jobs"), key_secrets={"HOME": "home"},
                     return_state=True)
    assert state.name == "Refused", state
    assert state.message.startswith("parameter key_secrets: 'HOME': not a model key variable"), state.message
    assert not (tmp_path / "jobs").exists()


@pytest.mark.usefixtures("prefect_local")
def test_a_missing_block_refuses_the_run_naming_parameter_and_block(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-key-would-have-served")
    state = job_flow(dataset="examples/tasks", harnesses=["tbflow-agent"], model="mock/mock-model",
                     jobs_dir=str(tmp_path / "jobs"), key_secrets={"OPENAI_API_KEY": "no-such-block"},
                     return_state=True)
    assert state.name == "Refused", state
    msg = state.message
    assert msg.startswith("parameter key_secrets: OPENAI_API_KEY: no Secret block named 'no-such-block'"), msg
    assert "\n" not in msg and "Traceback" not in msg
    assert not (tmp_path / "jobs").exists()


@pytest.mark.usefixtures("prefect_local")
def test_a_key_from_a_block_is_the_upstream_key_over_the_environment_and_redacted(tmp_path, monkeypatch):
    from prefect.blocks.system import Secret

    Secret(value=CANARY).save("fast-canary-key", overwrite=True)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-key-not-used")
    upstream = upstream_for(["openai-chat"], {"OPENAI_API_KEY": "fast-canary-key"})
    assert upstream.openai is not None and upstream.openai.auth_header() == ("Authorization", f"Bearer {CANARY}")
    assert upstream.secrets() == [CANARY]
    assert CANARY not in repr(upstream)
    gateway = ModelGateway(tmp_path / "gw.sock", upstream)
    assert CANARY not in gateway.redact(f"upstream said: bad key {CANARY}")
