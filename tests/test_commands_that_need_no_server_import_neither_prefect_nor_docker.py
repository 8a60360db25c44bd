"""``tbflow report``, ``diff``, ``harnesses`` and ``datasets list`` need no Prefect server and no
Docker engine, so they must not pay for importing Prefect (~2 s of CPU here) or the Docker SDK
(bench/RESULTS.md, "Start-up imports"). ``report`` used to import the Docker SDK for its orphan
check on every job; now only for a job whose lock file is left (a run died holding it, or one
runs). Each command runs in a fresh interpreter, as the ``tbflow`` entry point runs it, and
prints which of the two ended up in ``sys.modules``."""

import json
import subprocess
import sys

import pytest
from report_fixtures import make_job, make_trial, write_job_dir
from tbflow_process import ROOT

from tasks_lib.store.job_lock import LOCK_NAME

PROBE = """
import json, sys
sys.argv = ["tbflow", *json.loads(sys.argv[1])]
from flows.cli.main import main
try:
    main()
except SystemExit as exc:
    code = exc.code
else:
    code = 0
print(json.dumps({"code": code, "loaded": sorted({"prefect", "docker"} & set(sys.modules))}), file=sys.stderr)
"""


def _loaded(args: list[str]) -> dict:
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(args)], cwd=ROOT, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=120)
    return json.loads(done.stderr.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def two_jobs(tmp_path_factory):
    root = tmp_path_factory.mktemp("jobs")
    a = [make_trial("t1"), make_trial("t2", reward=0.0)]
    b = [make_trial("t1", harness="nop", reward=0.0), make_trial("t2", harness="nop")]
    (root / "registry.json").write_text("[]")  # a registry of its own: no network
    return (write_job_dir(root / "a", make_job(a, name="a"), a),
            write_job_dir(root / "b", make_job(b, job_id="job-2", name="b"), b), root / "registry.json")


@pytest.mark.parametrize("args", [["report", "{a}"], ["report", "{a}", "--format", "json"], ["diff", "{a}", "{b}"],
                                  ["harnesses"], ["datasets", "list", "--registry", "{r}"]], ids=" ".join)
def test_command_imports_neither_prefect_nor_docker(args, two_jobs):
    a, b, registry = two_jobs
    out = _loaded([arg.format(a=a, b=b, r=registry) for arg in args])
    assert out["code"] == 0, out
    assert out["loaded"] == [], f"tbflow {' '.join(args)} imported {out['loaded']}"


def test_report_of_a_job_a_run_died_holding_checks_for_its_containers(tmp_path):
    """The other side, and proof that the probe sees an import: with the job's lock file left
    behind, ``report`` asks Docker for the dead run's containers (the SDK is imported)."""
    trials = [make_trial("t1")]
    job_dir = write_job_dir(tmp_path, make_job(trials), trials)
    (job_dir / LOCK_NAME).write_text("{}")
    out = _loaded(["report", str(job_dir), "--no-write"])
    assert out["code"] == 0, out
    assert "docker" in out["loaded"], out
