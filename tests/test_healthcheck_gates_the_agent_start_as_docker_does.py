"""``[environment.healthcheck]`` runs before the agent, with Docker HEALTHCHECK's semantics (as
Harbor runs it): pure rows of the decision, then a real job where one task's service comes up
late and its agent runs, and one whose healthcheck never passes is invalid: environment with the
check's log as evidence, its agent never started."""

import pytest

from task_factory import make_task, record_of
from tasks_lib.task.task_model import HealthcheckConfig
from tasks_lib.trial.healthcheck import Next, next_check

HC = HealthcheckConfig(command="true", interval_sec=2, start_period_sec=10, start_interval_sec=1, retries=3)


@pytest.mark.parametrize("ok, since, failures, expected", [
    (True, 0.0, 0, Next(passed=True)),
    (True, 99.0, 2, Next(passed=True)),
    (False, 0.0, 0, Next(wait_sec=1, failures=0)),  # in the start period: not counted
    (False, 9.9, 0, Next(wait_sec=1, failures=0)),
    (False, 10.0, 0, Next(wait_sec=2, failures=1)),  # the period's end is outside it
    (False, 11.0, 1, Next(wait_sec=2, failures=2)),
    (False, 12.0, 2, Next(failed=True, failures=3)),  # the third consecutive failure ends it
])
def test_failures_count_only_after_the_start_period_and_fail_at_retries(ok, since, failures, expected):
    assert next_check(HC, ok, since, failures) == expected


# the service the tests need starts with the container (its entrypoint) and takes a moment
LATE_SERVICE = """\
FROM tbflow/base:bookworm
WORKDIR /app
RUN printf '#!/bin/sh\\n(sleep 1; echo up > /tmp/ready) &\\nexec "$@"\\n' > /start.sh && chmod +x /start.sh
ENTRYPOINT ["/start.sh"]
"""


def _toml(command: str) -> str:
    return f"""\
version = "1.0"
[agent]
timeout_sec = 60
[verifier]
timeout_sec = 60
[environment]
build_timeout_sec = 300
allow_internet = false
[environment.healthcheck]
command = "{command}"
start_period_sec = 60
start_interval_sec = 0.2
interval_sec = 0
retries = 1
"""


def test_agent_starts_once_the_service_is_healthy_and_never_when_it_is_not(run_job, tmp_path):
    ds = tmp_path / "ds"
    ready = make_task(ds, "a-ready-late", dockerfile=LATE_SERVICE, solve="cp /tmp/ready /app/seen\n",
                      check="[ -s /app/seen ]")
    (ready / "task.toml").write_text(_toml("test -f /tmp/ready"))
    never = make_task(ds, "b-never-healthy", solve="touch /app/ran\n")
    (never / "task.toml").write_text(_toml("false").replace("start_period_sec = 60", "start_period_sec = 0"))

    result = run_job(ds, harnesses=["oracle"])

    ok = record_of(result, "a-ready-late")
    assert (ok.validity.status, ok.validity.reward) == ("scored", 1.0), ok.validity
    bad = record_of(result, "b-never-healthy")
    assert (bad.validity.status, bad.validity.kind) == ("invalid", "environment"), bad.validity
    assert "[environment.healthcheck] failed" in bad.validity.reason and bad.agent is None
    assert bad.validity.evidence == "healthcheck.log"
