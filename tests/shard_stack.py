"""A Prefect server on 127.0.0.1 with tbflow's deployments and a coordinator worker (queue
``default``), for the tests of jobs spread over shards; each test adds the trial workers it needs
(queue ``trials``), e.g. one with a fault injected. Everything is started in its own session and
stopped by ``close`` (only what this started)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from prefect_stack import ROOT, Api, clean_env, free_port, start_session, stop_session

VENV = ROOT / ".venv" / "bin"


class ShardStack:
    def __init__(self, tmp_path: Path) -> None:
        self.tmp = tmp_path
        port = free_port()
        self.env = clean_env(tmp_path / "prefect-home", PREFECT_API_URL=f"http://127.0.0.1:{port}/api",
                             PREFECT_SERVER_ANALYTICS_ENABLED="false", PATH=f"{VENV}:{os.environ['PATH']}")
        self.api = Api(f"http://127.0.0.1:{port}/api")
        self.procs = [start_session([str(VENV / "prefect"), "server", "start", "--host", "127.0.0.1", "--port",
                                     str(port)], self.env, tmp_path, tmp_path / "server.log")]
        for cmd in ("prefect server status --wait --timeout 300",
                    "prefect work-pool create tbflow --type process --overwrite",
                    "prefect --no-prompt deploy --all --prefect-file deployments/prefect.yaml"):
            res = self.sh(cmd)
            assert res.returncode == 0, f"{cmd}:\n{res.stdout}\n{res.stderr}"
        self.worker("coordinator", "default")

    def sh(self, cmd: str, timeout: float = 300) -> subprocess.CompletedProcess:
        return subprocess.run(["bash", "-c", cmd], env=self.env, cwd=ROOT, capture_output=True, text=True,
                              timeout=timeout)

    def worker(self, name: str, queue: str, prefix: list[str] | None = None, **env: str) -> None:
        """A worker of pool ``tbflow`` on ``queue`` (one flow run at a time), started under ``prefix``."""
        cmd = [str(VENV / "prefect"), "worker", "start", "--pool", "tbflow", "--work-queue", queue, "--limit", "1",
               "--name", name]
        self.procs.append(start_session((prefix or []) + cmd, {**self.env, **env}, ROOT, self.tmp / f"{name}.log"))

    def job_run(self) -> dict:
        (run,) = self.api.flow_runs(flows={"name": {"any_": ["tbflow-job"]}})
        return run

    def shard_runs(self) -> list[dict]:
        return self.api.flow_runs(flows={"name": {"any_": ["tbflow-trials"]}})

    def close(self) -> None:
        for proc in reversed(self.procs):
            stop_session(proc, grace=10)
