"""Only environment failures are retried: a build that fails once is retried and scored; one
that always fails is invalid: environment after N+1 tries with every try's error; an agent
timeout is never retried."""

import uuid

from task_factory import first_build_fails, make_task, record_of

from flows.trial_flow import _retry_environment_only
from tasks_lib.errors import ImageBuildError


def test_build_failing_once_is_retried_and_scored(run_job, tmp_path, monkeypatch):
    ds = tmp_path / "ds"
    make_task(ds, "flaky", dockerfile=f"FROM tbflow/base:bookworm\nWORKDIR /app\nLABEL nonce={uuid.uuid4().hex}\n")
    calls = first_build_fails(monkeypatch, "flaky")  # injected fault: the daemon hiccups once
    rec = record_of(run_job(ds, env_retries=2), "flaky")
    assert len(calls) == 2
    assert (rec.validity.status, rec.validity.reward) == ("scored", 1.0)
    assert rec.env_retry_errors == ["build-image: docker build failed: injected hiccup"]


def test_build_always_failing_is_invalid_after_n_plus_1_tries(run_job, tmp_path):
    ds = tmp_path / "ds"
    make_task(ds, "broken", dockerfile="FROM tbflow/base:bookworm\nRUN echo always-broken && false\n")
    rec = record_of(run_job(ds, env_retries=1), "broken")
    assert rec.validity.status == "invalid" and rec.validity.kind == "environment"
    assert "after 2 tries" in rec.validity.reason
    assert len(rec.env_retry_errors) == 1 and "always-broken" in rec.env_retry_errors[0]


def test_agent_timeout_is_not_retried(run_job, tmp_path):
    ds = tmp_path / "ds"
    make_task(ds, "slow", solve="sleep 600\n", agent_timeout=1)
    rec = record_of(run_job(ds, env_retries=2), "slow")
    assert rec.agent.timed_out and rec.env_retry_errors == []
    assert rec.validity.status == "scored"


class _State:
    def __init__(self, exc):
        self.exc = exc

    def result(self, raise_on_failure=False):
        return self.exc


def test_retry_condition_accepts_only_environment_failures():
    assert _retry_environment_only(None, None, _State(ImageBuildError("build-image", "x")))
    assert not _retry_environment_only(None, None, _State(ValueError("bug")))
    assert not _retry_environment_only(None, None, _State(TimeoutError()))
