"""Following deployments/prefect.yaml's own commands crashed the run (`FileNotFoundError: ''`:
its pull step needed an undocumented TBFLOW_REPO). This runs exactly the documented lines, as a
new user would (fresh PREFECT_HOME, no PREFECT_* settings but the server's scheduler off: prefect_stack.clean_env), against a real server and worker on
127.0.0.1 (another free port), and checks the run completed with its results where the log says
they are, and the parameter checks of issue 10 (server-side schema, one-line refusals)."""

import re
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

from prefect_stack import ROOT, Api, clean_env, free_port, start_session, stop_session

PREFECT_YAML = ROOT / "deployments" / "prefect.yaml"


def documented_commands() -> list[str]:
    """The command block at the top of deployments/prefect.yaml (lines ``#   ...`` up to a ``#``)."""
    lines, started = [], False
    for line in PREFECT_YAML.read_text().splitlines():
        if line.startswith("#   "):
            started = True
            lines.append(line[4:].strip())
        elif started:
            break
    return lines


def test_deployments_doc_shows_the_same_commands():
    page = (ROOT / "docs" / "deployments.md").read_text()
    for cmd in documented_commands():
        assert cmd in page, f"docs/deployments.md does not show: {cmd}"


@pytest.mark.docker
def test_documented_commands_take_a_new_user_to_a_completed_run(docker_ready, tmp_path):
    cmds = documented_commands()
    assert cmds[-1].startswith("prefect deployment run") and "4200" in " ".join(cmds)
    port = free_port()
    script = "set -euo pipefail\n" + "\n".join(c.replace("4200", str(port)) for c in cmds) + "\n"
    env = clean_env(tmp_path / "prefect-home")
    before = set((ROOT / "jobs").iterdir()) if (ROOT / "jobs").is_dir() else set()
    proc = start_session(["bash", "-c", script], env, ROOT, tmp_path / "out.log")
    created: list[Path] = []
    try:
        try:
            rc = proc.wait(timeout=600)
        except subprocess.TimeoutExpired:
            rc = None
        out = (tmp_path / "out.log").read_text(errors="replace")
        created = sorted(set((ROOT / "jobs").iterdir()) - before) if (ROOT / "jobs").is_dir() else []
        assert rc == 0, f"documented commands failed (rc={rc}):\n{out[-6000:]}"
        assert "Completed" in out

        api = Api(f"http://127.0.0.1:{port}/api")
        (run,) = api.flow_runs()
        assert run["state"]["type"] == "COMPLETED", run["state"]
        assert {"tbflow", "job:" + created[0].name, "dataset:tasks", "harness:oracle"} <= set(run["tags"])
        assert len(created) == 1, created
        job_dir = created[0]
        assert (job_dir / "report.md").is_file() and len(list((job_dir / "trials").glob("*/trial.json"))) == 4
        logs = "\n".join(x["message"] for x in api.logs(run["id"]))
        assert f"{socket.gethostname()}:{job_dir}" in logs, logs[-3000:]
        assert f"| Location | `{socket.gethostname()}:{job_dir}` |" in (job_dir / "report.md").read_text()
        keys = {a["key"] for a in api.artifacts(run["id"])}
        slug = re.sub(r"[^a-z0-9]+", "-", job_dir.name.lower()).strip("-")
        assert {f"{slug}-report", f"{slug}-trials", f"{slug}-progress"} <= keys, keys

        _check_parameters_are_validated(api, env, port, tmp_path)
    finally:
        stop_session(proc)
        for d in created:
            shutil.rmtree(d, ignore_errors=True)


def _check_parameters_are_validated(api: Api, env: dict, port: int, tmp_path: Path) -> None:
    """Bad values are refused by the server (no run created); a missing dataset fails the run
    with one line and no traceback, before any container starts."""
    env = dict(env, PREFECT_API_URL=f"http://127.0.0.1:{port}/api")
    prefect = str(ROOT / ".venv" / "bin" / "prefect")

    def run(*params: str, watch: bool = False):
        cmd = [prefect, "deployment", "run", "tbflow-job/examples-oracle", *params] + (["--watch"] if watch else [])
        return subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)

    n_runs = len(api.flow_runs())
    for bad, words in ((["--param", 'harnesses=["gpt-agent"]'], "gpt-agent"),
                       (["--param", 'job_name="../escape"'], "job_name"),
                       (["--param", "concurrency=0"], "concurrency")):
        res = run(*bad)
        assert res.returncode != 0 and words in res.stdout + res.stderr, res.stdout + res.stderr
    assert len(api.flow_runs()) == n_runs, "the server created a run for invalid parameters"

    res = run("--param", f'dataset="{tmp_path}/no-such-dataset"', "--param", "concurrency=3", watch=True)
    assert res.returncode != 0
    (failed,) = [r for r in api.flow_runs() if r["parameters"].get("dataset", "").endswith("no-such-dataset")]
    assert failed["state"]["type"] == "FAILED"
    assert failed["parameters"]["concurrency"] == 3 and failed["parameters"]["harnesses"] == ["oracle"]
    msg = failed["state"]["message"]
    assert "no-such-dataset" in msg and "\n" not in msg and "Traceback" not in msg, msg
    logs = "\n".join(x["message"] for x in api.logs(failed["id"]))
    assert "Traceback" not in logs, logs
    from tasks_lib.container.docker_client import LABEL_FLOW_RUN, get_client

    assert not get_client().containers.list(all=True, filters={"label": f"{LABEL_FLOW_RUN}={failed['id']}"})
