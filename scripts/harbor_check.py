"""Load a Harbor export with Harbor's own code (run by scripts/harbor-check.sh in Harbor's venv).

Uses the viewer's ``JobScanner`` (what ``harbor view`` lists and opens) and then validates every
document strictly with Harbor's models, because the scanner only logs a parse failure; then asks
``harbor view``'s own API (its FastAPI app, in process: no port) for the jobs, each job's trials
and each trajectory, as the viewer's pages do. Prints a JSON summary; exit 1 names the first file
Harbor refuses or the first API call that fails.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from harbor.models.job.config import JobConfig
from harbor.models.job.result import JobResult
from harbor.models.trajectories import Trajectory
from harbor.models.trial.config import TrialConfig
from harbor.models.trial.result import TrialResult
from harbor.viewer.scanner import JobScanner
from harbor.viewer.server import create_app


def _load(model, path: Path):  # noqa: ANN001, ANN202 (any Harbor model)
    try:
        return model.model_validate_json(path.read_text(encoding="utf-8"))
    except Exception as exc:  # noqa: BLE001 (report which file, whatever the error)
        print(f"harbor-check: Harbor refuses {path}: {exc}", file=sys.stderr)
        raise SystemExit(1) from None


def check_job(scanner: JobScanner, root: Path, name: str) -> dict:
    _load(JobConfig, root / name / "config.json")
    job = _load(JobResult, root / name / "result.json")
    trials = {}
    for trial in scanner.list_trials(name):
        tdir = root / name / trial
        _load(TrialConfig, tdir / "config.json")
        result = _load(TrialResult, tdir / "result.json")
        trajectory = tdir / "agent" / "trajectory.json"
        steps = len(_load(Trajectory, trajectory).steps) if trajectory.is_file() else None
        exc = result.exception_info
        trials[trial] = {
            "task_name": result.task_name, "agent": result.agent_info.name,
            "rewards": result.verifier_result.rewards if result.verifier_result else None,
            "reward_valid": result.reward_valid,
            "exception_type": exc.exception_type if exc else None,
            "exception_message": exc.exception_message if exc else None,
            "metadata": result.agent_result.metadata if result.agent_result else None,
            "trajectory_steps": steps,
        }
    return {"n_total_trials": job.n_total_trials, "n_errored_trials": job.stats.n_errored_trials,
            "scanner_sees_config": scanner.get_job_config(name) is not None, "trials": trials}


def _get(client, url: str):  # noqa: ANN001, ANN202 (a TestClient; JSON)
    response = client.get(url)
    if response.status_code != 200:
        print(f"harbor-check: harbor view's API refuses {url}: {response.status_code} {response.text[:500]}",
              file=sys.stderr)
        raise SystemExit(1)
    return response.json()


def viewer(root: Path) -> dict:
    """What ``harbor view ROOT`` lists: jobs, then per job its trials (reward, error type) and,
    per trial with one, whether its trajectory is served."""
    from fastapi.testclient import TestClient

    client = TestClient(create_app(root))
    out: dict = {}
    for job in _get(client, "/api/jobs?page_size=100")["items"]:
        name = job["name"]
        trials = _get(client, f"/api/jobs/{name}/trials?page_size=100")["items"]
        out[name] = {t["name"]: {"reward": t["reward"], "error_type": t["error_type"],
                                 "trajectory": (root / name / t["name"] / "agent" / "trajectory.json").is_file()
                                 and bool(_get(client, f"/api/jobs/{name}/trials/{t['name']}/trajectory"))}
                     for t in trials}
    return out


def main(argv: list[str]) -> int:
    root = Path(argv[1])
    scanner = JobScanner(root)
    jobs = {name: check_job(scanner, root, name) for name in scanner.list_jobs()
            if (root / name / "config.json").is_file()}
    print(json.dumps({"jobs": jobs, "viewer": viewer(root)}, indent=2, sort_keys=True, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
