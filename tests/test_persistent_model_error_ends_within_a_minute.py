"""A model that keeps failing (429, 500, 504) must end the trial within about a minute, invalid:
harness with the CLI's own error line in the reason — not run to the agent timeout retrying.
Before, pi retried with the SDK's retries inside its own (and opencode without any cap of ours).
The gateway saw only errors, so it is no witness of reaching the model either."""

import pytest

from cli_model import CLIS, SOLVE, pointed_at_mock, solvable_task
from mock_model import MockModel
from task_factory import record_of

#: far above "about a minute", so ending early is the CLI's retry cap, not the deadline
AGENT_TIMEOUT = 600
WITHIN_SEC = 90


@pytest.mark.docker
@pytest.mark.parametrize("status", [429, 500, 504])
def test_persistent_model_error_ends_trial_with_cli_error_line(run_job, tmp_path, monkeypatch, status):
    with pointed_at_mock(monkeypatch, MockModel(SOLVE), prefix=f"/status/{status}"):
        result = run_job(solvable_task(tmp_path / "ds", agent_timeout=AGENT_TIMEOUT), harnesses=CLIS,
                         model="mock/mock-model", concurrency=4)
    for cli in CLIS:
        rec = record_of(result, "make-done", cli)
        assert not rec.agent.timed_out and rec.agent.duration_sec < WITHIN_SEC, (cli, rec.agent.duration_sec)
        assert (rec.validity.status, rec.validity.kind) == ("invalid", "harness"), (cli, rec.validity)
        assert rec.agent.error_line and rec.agent.error_line in rec.validity.reason, (cli, rec.validity.reason)
        gw = rec.agent.gateway_usage
        assert gw.responses_with_usage == 0 and gw.errors.get(status, 0) >= 1, (cli, gw)
        assert f"HTTP {status}" in rec.validity.reason, (cli, rec.validity.reason)
