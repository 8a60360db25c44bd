"""Honest agents on the container runner's path (issue 38, item 3), one job: a pytest plug-in the
task asks for (its instruction names it, or its tests import it), installed with real pip and
autoloaded by the image's pytest, and pip installed by the agent that test.sh's ``pip show`` then
runs. Both were ``toolchain-changed`` before; both are the subject the task measures, not the
runner (``runner_loads.asked_names``, ``runner_roles._pip_as_a_subject``). The hostile twin of the
plug-in — the same forging wheel where the task does not ask for it — still fails the gate:
tests/test_pip_installed_plugin_with_a_matching_record_still_fails_the_gate.py.
"""

from __future__ import annotations

import pytest

from honest_agents import GATE, SOLVE, TEST_PY, pip_and_plugin_wheels, verifier_sh
from task_factory import make_task, record_of

DOCKERFILE = "FROM tbflow/base:bookworm\nCOPY wheels/ /opt/wheels/\nWORKDIR /app\n"
PLUGIN = "def pytest_report_header(config):\n    return 'timeout: honest'\n"
IMPORTS_IT = "import pytest_timeout  # the task's tests use the plug-in\n\n" + TEST_PY


def _task(root, name, instruction, test_files, test_sh, solve_extra):
    d = make_task(root, name, dockerfile=DOCKERFILE, instruction=instruction, test_sh=test_sh,
                  test_files=test_files)
    pip, whl = pip_and_plugin_wheels(d, PLUGIN)
    install = f"python3 /opt/wheels/{pip.name}/pip install -q --no-index --break-system-packages"
    (d / "solution" / "solve.sh").write_text("#!/bin/bash\n" + SOLVE + solve_extra.format(
        install=install, pip=f"/opt/wheels/{pip.name}", plugin=f"/opt/wheels/{whl.name}"))


@pytest.fixture(scope="module")
def judged(docker_ready, prefect_local, tmp_path_factory):
    from task_factory import run_job_flow

    root = tmp_path_factory.mktemp("asked")
    _task(root / "ds", "plugin-the-instruction-names", "Install the pytest-timeout plug-in, then write calc.py.\n",
          {"test_outputs.py": TEST_PY}, verifier_sh(), "{install} {plugin}\n")
    _task(root / "ds", "plugin-the-tests-import", "Write calc.py.\n", {"test_outputs.py": IMPORTS_IT}, verifier_sh(),
          "{install} {plugin}\n")
    _task(root / "ds", "pip-installed-then-test-sh-runs-pip-show", "Write calc.py.\n", {"test_outputs.py": TEST_PY},
          verifier_sh(before="pip show pip > /logs/verifier/pip-show.txt\n"), "{install} {pip}\n")
    return run_job_flow(root / "ds", root / "jobs", concurrency=3, env_retries=0)


@pytest.mark.docker
@pytest.mark.parametrize("name", ["plugin-the-instruction-names", "plugin-the-tests-import",
                                  "pip-installed-then-test-sh-runs-pip-show"])
def test_what_the_task_asks_for_passes_the_default_gate(judged, name):
    rec = record_of(judged, name)
    assert (rec.validity.status, rec.validity.reward) == ("scored", 1.0), (rec.validity, rec.flags)
    assert not {f.kind for f in rec.flags} & set(GATE), rec.flags
