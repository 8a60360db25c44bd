"""The judge decides from what the verifier really ran (issue 27): a runner file the agent planted
and the verifier used fails the default gate; a verifier the agent made hang is the agent's 0;
honest agents that look odd pass the default gate. One job runs every case of
``runner_cases.CASES``; each test pins one case's record.
"""

from __future__ import annotations

import pytest

from runner_cases import CASES, PYTEST, READ_HIDDEN, TEST_PY, USE_HIDDEN, verdict_of
from task_factory import make_task, record_of

pytestmark = pytest.mark.docker
GATE = ("tampering", "broke-container", "toolchain-changed")


@pytest.fixture(scope="module")
def judged(docker_ready, prefect_local, tmp_path_factory):
    from task_factory import run_job_flow

    root = tmp_path_factory.mktemp("runner")
    for name, (kw, _) in CASES.items():
        make_task(root / "ds", name, **{"verifier_timeout": 30, "test_files": {"test_outputs.py": TEST_PY},
                                        "test_sh": verdict_of(PYTEST), **kw})
    result = run_job_flow(root / "ds", root / "jobs", concurrency=3, env_retries=0)
    return root / "jobs" / "job", result


def _case(judged, name):
    rec = record_of(judged[1], name)
    return rec, [f.kind for f in rec.flags], (judged[0] / "trials" / rec.trial_id)


def _cases(expected):
    return [n for n, (_, want) in CASES.items() if want == expected]


@pytest.mark.parametrize("name", _cases("gate"))
def test_planted_runner_file_the_verifier_used_fails_the_gate(judged, name):
    rec, kinds, trial = _case(judged, name)
    assert rec.validity.status == "scored", rec.validity
    assert "toolchain-changed" in kinds, (rec.validity, rec.flags)
    flag = next(f for f in rec.flags if f.kind == "toolchain-changed")
    text = (trial / flag.evidence).read_text()
    if name in READ_HIDDEN:  # the hidden read is unknown, or the agent's change while the verifier ran shows
        assert "use unknown: " in text or "changed while the verifier ran" in text, text
        return
    use = "use unknown, changed while the verifier ran" if name in USE_HIDDEN else "used by the verifier"
    assert use in text, text


@pytest.mark.parametrize("name", _cases("zero"))
def test_verifier_the_agent_made_hang_is_its_zero_not_invalid(judged, name):
    rec, kinds, trial = _case(judged, name)
    assert (rec.validity.status, rec.validity.reward) == ("scored", 0.0), rec.validity
    broke = next(f for f in rec.flags if f.kind == "broke-container")
    assert broke.evidence and (trial / broke.evidence).is_file(), broke


@pytest.mark.parametrize("name", _cases("honest"))
def test_honest_agent_that_looks_odd_passes_the_default_gate(judged, name):
    rec, kinds, _ = _case(judged, name)
    assert (rec.validity.status, rec.validity.reward) == ("scored", 1.0), (rec.validity, rec.flags)
    assert not set(kinds) & set(GATE), rec.flags


def test_record_says_the_runner_came_from_the_container_with_detection_only(judged):
    rec, _, _ = _case(judged, "planted-attr-and-packaging-before-debians")
    runner = rec.verifier.runner
    assert (runner.source, runner.assurance) == ("container", "detection only"), runner
    flag = next(f for f in rec.flags if f.kind == "toolchain-changed")
    # pytest imports attr first, which ends it: the planted packaging was never loaded
    assert "attr/__init__.py" in flag.message and "packaging" not in flag.message, flag


def test_slow_verifier_next_to_a_service_is_invalid_verifier_not_the_agents(judged):
    rec, kinds, _ = _case(judged, "slow-verifier-next-to-a-service")
    assert (rec.validity.status, rec.validity.kind) == ("invalid", "verifier"), rec.validity
    assert "agent-processes" in kinds and not set(kinds) & set(GATE), rec.flags


def test_python_swapped_for_sleep_names_the_file_and_that_it_was_used(judged):
    rec, _, trial = _case(judged, "python-swapped-for-sleep")
    assert "/usr/bin/python3.11" in rec.validity.reason, rec.validity
    assert "changed /usr/bin/python3.11 [runner-command" in (trial / "runner-files.txt").read_text()


def test_fifo_the_tests_blocked_on_is_named(judged):
    rec, _, _ = _case(judged, "answer-made-a-fifo")
    assert "/app/answer.json" in rec.validity.reason, rec.validity


def test_editable_install_and_console_script_are_shown_not_held_against_the_agent(judged):
    rec, kinds, trial = _case(judged, "console-script-installed")
    assert "system-changed" in kinds and "added /usr/local/bin/cowsay" in (trial / "runner-files.txt").read_text()
    rec, kinds, _ = _case(judged, "editable-install")
    assert "toolchain-changed" not in kinds, rec.flags


def test_verifier_package_caches_start_empty_not_the_agents(judged):
    rec, _, trial = _case(judged, "agent-filled-the-uv-cache")
    env = dict(line.partition("=")[::2] for line in (trial / "verifier" / "env.txt").read_text().splitlines())
    cache = env["XDG_CACHE_HOME"]
    assert cache.startswith("/tmp/tbflow-verifier-cache-"), env
    assert (env["UV_CACHE_DIR"], env["PIP_CACHE_DIR"]) == (f"{cache}/uv", f"{cache}/pip"), env
